// Errors and headers as the official Node SDK (npm `resend`) sees them: non-2xx answers
// become `{ data: null, error: { statusCode, name, message } }`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Resend } from 'resend';
import { assertRateLimitHeaders, fails, ok, raw, uniqueDomain } from './helpers.mjs';

const resend = new Resend();

test('a wrong API key gets 403 invalid_api_key', async () => {
  const client = new Resend(`re_${randomBytes(16).toString('hex')}`);
  fails(await client.domains.list(), 403, 'invalid_api_key');
  fails(await client.apiKeys.list(), 403, 'invalid_api_key');
  fails(await client.domains.create({ name: uniqueDomain('wrong-key') }), 403, 'invalid_api_key');
});

test('a missing API key gets 401 missing_api_key', async () => {
  // The SDK always sends its key; a per-request header override blanks it.
  fails(await resend.domains.list({}, { headers: { Authorization: '' } }), 401, 'missing_api_key');
  // And without the SDK, no Authorization header at all:
  for (const path of ['/domains', '/api-keys']) {
    const response = await raw('GET', path, { key: null });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('content-type'), /^application\/json/);
    assert.equal(response.json.statusCode, 401);
    assert.equal(response.json.name, 'missing_api_key');
    assert.equal(typeof response.json.message, 'string');
  }
});

test('unknown ids get 404 not_found', async () => {
  const id = randomUUID();
  fails(await resend.domains.get(id), 404, 'not_found');
  fails(await resend.domains.update({ id, openTracking: true }), 404, 'not_found');
  fails(await resend.domains.verify(id), 404, 'not_found');
  fails(await resend.domains.remove(id), 404, 'not_found');
  fails(await resend.apiKeys.remove(id), 404, 'not_found');
});

test('domains.create without a name gets 422 missing_required_field', async () => {
  fails(await resend.domains.create({}), 422, 'missing_required_field');
  fails(await resend.domains.create({ name: '' }), 422, 'missing_required_field');
});

test('domains.create with an invalid name gets 422 validation_error', async () => {
  fails(await resend.domains.create({ name: 'not a domain' }), 422, 'validation_error');
  fails(await resend.domains.create({ name: 'localhost' }), 422, 'validation_error');
});

test('creating the same domain twice gets 422 validation_error', async () => {
  const name = uniqueDomain('twice');
  const first = ok(await resend.domains.create({ name }));
  const error = fails(await resend.domains.create({ name }), 422, 'validation_error');
  assert.ok(error.message.includes(name), error.message);
  // The first one is untouched.
  assert.equal(ok(await resend.domains.get(first.id)).name, name);
});

test('apiKeys.create without a name gets 422 missing_required_field', async () => {
  fails(await resend.apiKeys.create({}), 422, 'missing_required_field');
  fails(await resend.apiKeys.create({ name: '   ' }), 422, 'missing_required_field');
});

test('apiKeys.create with a domain but full_access gets 422 validation_error', async () => {
  const domain = ok(await resend.domains.create({ name: uniqueDomain('full-with-domain') }));
  fails(
    await resend.apiKeys.create({ name: 'node-full-with-domain', permission: 'full_access', domain_id: domain.id }),
    422,
    'validation_error',
  );
});

test('responses carry the RateLimit headers', async () => {
  const listed = await raw('GET', '/domains');
  assert.equal(listed.status, 200);
  assert.match(listed.headers.get('content-type'), /^application\/json/);
  assertRateLimitHeaders(listed.headers);
  assert.equal(listed.headers.get('ratelimit-policy'), '1000;w=1', 'the configured 1000/s');

  const missing = await raw('GET', `/domains/${randomUUID()}`);
  assert.equal(missing.status, 404);
  assertRateLimitHeaders(missing.headers);

  const created = await raw('POST', '/api-keys', { body: { name: 'node-headers' } });
  assert.equal(created.status, 201);
  assertRateLimitHeaders(created.headers);
  await raw('DELETE', `/api-keys/${created.json.id}`);

  // The SDK hands the headers back too.
  const result = await resend.domains.list();
  ok(result);
  assertRateLimitHeaders(result.headers);
  const failed = await resend.domains.get(randomUUID());
  fails(failed, 404, 'not_found');
  assertRateLimitHeaders(failed.headers);
});


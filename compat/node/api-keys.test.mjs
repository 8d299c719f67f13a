// API keys through the official Node SDK (npm `resend`): resend.apiKeys.create / list /
// remove, and clients made with the tokens they hand out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Resend } from 'resend';
import { TIMESTAMP, UUID, fails, ok, raw, uniqueDomain } from './helpers.mjs';

const resend = new Resend();

function keyName(label) {
  return `node-${label}-${randomBytes(4).toString('hex')}`;
}

test('apiKeys.create returns an id and a token that works at once', async () => {
  const name = keyName('create');
  const data = ok(await resend.apiKeys.create({ name }));
  assert.match(data.id, UUID);
  assert.equal(typeof data.token, 'string');
  assert.ok(data.token.startsWith('re_'), data.token);
  assert.ok(data.token.length >= 20, 'a token long enough to be secret');

  const client = new Resend(data.token);
  const list = ok(await client.domains.list());
  assert.equal(list.object, 'list');
  assert.ok(Array.isArray(list.data));
  ok(await resend.apiKeys.remove(data.id));
});

test('apiKeys.create answers 201 on the wire', async () => {
  const response = await raw('POST', '/api-keys', { body: { name: keyName('status') } });
  assert.equal(response.status, 201);
  assert.match(response.json.id, UUID);
  assert.ok(response.json.token.startsWith('re_'));
  ok(await resend.apiKeys.remove(response.json.id));
});

test('apiKeys.list shows keys without their tokens', async () => {
  const name = keyName('list');
  const created = ok(await resend.apiKeys.create({ name, permission: 'full_access' }));
  const list = ok(await resend.apiKeys.list());
  assert.equal(list.object, 'list');
  assert.equal(typeof list.has_more, 'boolean');
  const key = list.data.find((k) => k.id === created.id);
  assert.ok(key, 'the new key is listed');
  assert.equal(key.name, name);
  assert.match(key.created_at, TIMESTAMP);
  assert.ok(key.last_used_at === null || TIMESTAMP.test(key.last_used_at), String(key.last_used_at));
  assert.equal(key.permission, 'full_access');
  assert.equal(key.domain_id, null);
  assert.equal(key.token, undefined, 'tokens are shown once only');
  assert.ok(!JSON.stringify(list).includes(created.token), 'no token in the list');
  // The bootstrap key the suite runs with is listed too.
  assert.ok(list.data.length >= 2);
  ok(await resend.apiKeys.remove(created.id));
});

test('apiKeys.remove deletes the key and its token stops working', async () => {
  const created = ok(await resend.apiKeys.create({ name: keyName('remove') }));
  const client = new Resend(created.token);
  ok(await client.domains.list());

  const data = ok(await resend.apiKeys.remove(created.id));
  assert.deepEqual(data, { object: 'api_key', id: created.id, deleted: true });
  fails(await client.domains.list(), 403, 'invalid_api_key');
  fails(await resend.apiKeys.remove(created.id), 404, 'not_found');
  const list = ok(await resend.apiKeys.list());
  assert.ok(!list.data.some((k) => k.id === created.id));
});

test('a sending_access key is restricted from non-sending endpoints', async () => {
  const domain = ok(await resend.domains.create({ name: uniqueDomain('sending-key') }));
  const name = keyName('sending');
  const created = ok(await resend.apiKeys.create({ name, permission: 'sending_access', domain_id: domain.id }));
  assert.ok(created.token.startsWith('re_'));

  const listed = ok(await resend.apiKeys.list()).data.find((k) => k.id === created.id);
  assert.equal(listed.permission, 'sending_access');
  assert.equal(listed.domain_id, domain.id);

  const client = new Resend(created.token);
  fails(await client.domains.list(), 401, 'restricted_api_key');
  fails(await client.domains.get(domain.id), 401, 'restricted_api_key');
  fails(await client.apiKeys.list(), 401, 'restricted_api_key');
  ok(await resend.apiKeys.remove(created.id));
});

test('a sending_access key without a domain is also restricted', async () => {
  const created = ok(await resend.apiKeys.create({ name: keyName('sending-any'), permission: 'sending_access' }));
  const listed = ok(await resend.apiKeys.list()).data.find((k) => k.id === created.id);
  assert.equal(listed.permission, 'sending_access');
  assert.equal(listed.domain_id, null);
  fails(await new Resend(created.token).domains.list(), 401, 'restricted_api_key');
  ok(await resend.apiKeys.remove(created.id));
});

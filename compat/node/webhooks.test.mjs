// Webhooks through the official Node SDK (npm `resend`): resend.webhooks.create / get /
// list / update / remove. The suite's herald refuses private endpoints (the default), so
// endpoints are a public address literal, which needs no DNS. Listing runs in a team of
// its own (made with the suite's operator key), so other tests' webhooks never show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Resend } from 'resend';
import { TIMESTAMP, UUID, fails, ok, raw } from './helpers.mjs';

const resend = new Resend();

/** An endpoint no other test (Node or Python) uses. */
function uniqueEndpoint(label) {
  return `https://93.184.216.34/node-${label}-${randomBytes(5).toString('hex')}`;
}

/** A client for a new team of its own. */
async function teamClient(label) {
  const response = await raw('POST', '/teams', { body: { name: `node-${label}-${randomBytes(4).toString('hex')}` } });
  assert.equal(response.status, 201, response.text);
  return new Resend(response.json.api_key.token);
}

test('webhooks.create answers 201 with a whsec_ signing secret, and get shows it', async () => {
  const endpoint = uniqueEndpoint('create');
  const onWire = await raw('POST', '/webhooks', { body: { endpoint, events: ['email.sent'] } });
  assert.equal(onWire.status, 201, onWire.text);
  ok(await resend.webhooks.remove(onWire.json.id));

  const created = ok(await resend.webhooks.create({ endpoint, events: ['email.sent', 'email.bounced'] }));
  assert.deepEqual(Object.keys(created).sort(), ['id', 'object', 'signing_secret']);
  assert.equal(created.object, 'webhook');
  assert.match(created.id, UUID);
  assert.match(created.signing_secret, /^whsec_[A-Za-z0-9+/]+={0,2}$/);
  assert.equal(Buffer.from(created.signing_secret.slice('whsec_'.length), 'base64').length, 32);

  const webhook = ok(await resend.webhooks.get(created.id));
  assert.deepEqual(Object.keys(webhook).sort(), [
    'created_at',
    'endpoint',
    'events',
    'id',
    'object',
    'signing_secret',
    'status',
  ]);
  assert.equal(webhook.object, 'webhook');
  assert.equal(webhook.id, created.id);
  assert.equal(webhook.endpoint, endpoint);
  assert.deepEqual(webhook.events, ['email.sent', 'email.bounced']);
  assert.equal(webhook.status, 'enabled');
  assert.equal(webhook.signing_secret, created.signing_secret);
  assert.match(webhook.created_at, TIMESTAMP);
  ok(await resend.webhooks.remove(created.id));
});

test('webhooks.list pages newest first without secrets', async () => {
  const client = await teamClient('webhooks-list');
  const endpoints = [uniqueEndpoint('list-0'), uniqueEndpoint('list-1'), uniqueEndpoint('list-2')];
  const ids = [];
  for (const endpoint of endpoints) ids.push(ok(await client.webhooks.create({ endpoint, events: ['domain.created'] })).id);

  const all = ok(await client.webhooks.list());
  assert.equal(all.object, 'list');
  assert.equal(all.has_more, false);
  assert.deepEqual(all.data.map((w) => w.endpoint), [...endpoints].reverse());
  assert.deepEqual(Object.keys(all.data[0]).sort(), ['created_at', 'endpoint', 'events', 'id', 'status']);
  assert.deepEqual(all.data[0].events, ['domain.created']);

  const first = ok(await client.webhooks.list({ limit: 2 }));
  assert.equal(first.has_more, true);
  assert.deepEqual(first.data.map((w) => w.id), [ids[2], ids[1]]);
  const second = ok(await client.webhooks.list({ limit: 2, after: ids[1] }));
  assert.equal(second.has_more, false);
  assert.deepEqual(second.data.map((w) => w.id), [ids[0]]);
  const back = ok(await client.webhooks.list({ limit: 2, before: ids[0] }));
  assert.deepEqual(back.data.map((w) => w.id), [ids[2], ids[1]]);
  fails(await client.webhooks.list({ limit: 101 }), 422, 'validation_error');
});

test('webhooks.update changes endpoint, events and status; remove deletes', async () => {
  const created = ok(await resend.webhooks.create({ endpoint: uniqueEndpoint('update'), events: ['email.sent'] }));
  const disabled = ok(await resend.webhooks.update(created.id, { status: 'disabled' }));
  assert.deepEqual(disabled, { object: 'webhook', id: created.id });
  const endpoint = uniqueEndpoint('updated');
  ok(await resend.webhooks.update(created.id, { endpoint, events: ['email.delivered', 'email.opened'] }));
  const webhook = ok(await resend.webhooks.get(created.id));
  assert.equal(webhook.status, 'disabled');
  assert.equal(webhook.endpoint, endpoint);
  assert.deepEqual(webhook.events, ['email.delivered', 'email.opened']);
  assert.equal(webhook.signing_secret, created.signing_secret);
  fails(await resend.webhooks.update(created.id, { status: 'paused' }), 422, 'validation_error');

  const removed = ok(await resend.webhooks.remove(created.id));
  assert.deepEqual(removed, { object: 'webhook', id: created.id, deleted: true });
  fails(await resend.webhooks.get(created.id), 404, 'not_found');
  fails(await resend.webhooks.remove(created.id), 404, 'not_found');
  fails(await resend.webhooks.update(created.id, { status: 'enabled' }), 404, 'not_found');
});

test('webhook errors have Resend names', async () => {
  const endpoint = uniqueEndpoint('errors');
  fails(await resend.webhooks.create({ events: ['email.sent'] }), 422, 'missing_required_field');
  fails(await resend.webhooks.create({ endpoint }), 422, 'missing_required_field');
  fails(await resend.webhooks.create({ endpoint, events: [] }), 422, 'validation_error');
  fails(await resend.webhooks.create({ endpoint, events: ['email.exploded'] }), 422, 'validation_error');
  fails(await resend.webhooks.create({ endpoint: 'ftp://93.184.216.34/x', events: ['email.sent'] }), 422, 'validation_error');
  const loopback = fails(
    await resend.webhooks.create({ endpoint: 'http://127.0.0.1:3000/hook', events: ['email.sent'] }),
    422,
    'validation_error',
  );
  assert.match(loopback.message, /refused/);
  fails(await resend.webhooks.get('nope'), 422, 'invalid_parameter');
  fails(await resend.webhooks.get('4ef9a417-02e9-4d39-ad75-9611e0fcc33c'), 404, 'not_found');
});

test('webhooks belong to one team, and sending keys may not touch them', async () => {
  const created = ok(await resend.webhooks.create({ endpoint: uniqueEndpoint('team'), events: ['email.sent'] }));
  const other = await teamClient('webhooks-other');
  fails(await other.webhooks.get(created.id), 404, 'not_found');
  fails(await other.webhooks.update(created.id, { status: 'disabled' }), 404, 'not_found');
  fails(await other.webhooks.remove(created.id), 404, 'not_found');
  assert.deepEqual(ok(await other.webhooks.list()).data, []);

  const key = ok(await resend.apiKeys.create({ name: `node-sending-${randomBytes(4).toString('hex')}`, permission: 'sending_access' }));
  const sending = new Resend(key.token);
  fails(await sending.webhooks.list(), 401, 'restricted_api_key');
  fails(await sending.webhooks.get(created.id), 401, 'restricted_api_key');
  fails(await sending.webhooks.create({ endpoint: uniqueEndpoint('sending'), events: ['email.sent'] }), 401, 'restricted_api_key');
  ok(await resend.apiKeys.remove(key.id));
  assert.equal(ok(await resend.webhooks.get(created.id)).status, 'enabled');
  ok(await resend.webhooks.remove(created.id));
});

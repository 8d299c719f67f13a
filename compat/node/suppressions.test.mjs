// Suppressions through the official Node SDK (npm `resend`): resend.suppressions.add /
// list / get / remove and resend.suppressions.batch.add / remove. Listing runs in a team
// of its own (made with the suite's operator key), so other tests' entries never show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Resend } from 'resend';
import { TIMESTAMP, UUID, fails, ok, raw } from './helpers.mjs';

const resend = new Resend();

/** An address no other test (Node or Python) uses. */
function uniqueAddress(label) {
  return `node-${label}-${randomBytes(5).toString('hex')}@compat.herald.test`;
}

/** A client for a new team of its own. */
async function teamClient(label) {
  const response = await raw('POST', '/teams', { body: { name: `node-${label}-${randomBytes(4).toString('hex')}` } });
  assert.equal(response.status, 201, response.text);
  return new Resend(response.json.api_key.token);
}

test('suppressions.add, get by id and by address, remove', async () => {
  const email = uniqueAddress('single');
  const added = ok(await resend.suppressions.add({ email }));
  assert.equal(added.object, 'suppression');
  assert.match(added.id, UUID);
  assert.deepEqual(Object.keys(added).sort(), ['id', 'object']);

  const again = ok(await resend.suppressions.add({ email: email.toUpperCase() }));
  assert.equal(again.id, added.id, 'an address already suppressed keeps its id');

  const byId = ok(await resend.suppressions.get(added.id));
  assert.equal(byId.object, 'suppression');
  assert.equal(byId.id, added.id);
  assert.equal(byId.email, email);
  assert.equal(byId.origin, 'manual');
  assert.equal(byId.source_id, null);
  assert.match(byId.created_at, TIMESTAMP);
  // The SDK percent-encodes the address into the path.
  assert.deepEqual(ok(await resend.suppressions.get(email)), byId);

  const removed = ok(await resend.suppressions.remove(email));
  assert.deepEqual(removed, { object: 'suppression', id: added.id, deleted: true });
  fails(await resend.suppressions.get(added.id), 404, 'not_found');
  fails(await resend.suppressions.remove(added.id), 404, 'not_found');
});

test('suppressions.list pages newest first and filters by origin', async () => {
  const client = await teamClient('suppressions-list');
  const emails = [uniqueAddress('list-0'), uniqueAddress('list-1'), uniqueAddress('list-2')];
  for (const email of emails) ok(await client.suppressions.add({ email }));

  const first = ok(await client.suppressions.list({ limit: 2 }));
  assert.equal(first.object, 'list');
  assert.equal(first.has_more, true);
  assert.deepEqual(first.data.map((s) => s.email), [emails[2], emails[1]]);
  const entry = first.data[0];
  assert.deepEqual(Object.keys(entry).sort(), ['created_at', 'email', 'id', 'origin', 'source_id']);
  assert.equal(entry.origin, 'manual');

  const second = ok(await client.suppressions.list({ limit: 2, after: first.data[1].id }));
  assert.equal(second.has_more, false);
  assert.deepEqual(second.data.map((s) => s.email), [emails[0]]);
  const back = ok(await client.suppressions.list({ limit: 2, before: second.data[0].id }));
  assert.deepEqual(back.data.map((s) => s.email), [emails[2], emails[1]]);

  assert.equal(ok(await client.suppressions.list({ origin: 'manual' })).data.length, 3);
  assert.deepEqual(ok(await client.suppressions.list({ origin: 'bounce' })).data, []);
  fails(await client.suppressions.list({ limit: 101 }), 422, 'validation_error');
});

test('suppressions.batch.add and batch.remove', async () => {
  const [a, b] = [uniqueAddress('batch-a'), uniqueAddress('batch-b')];
  const existing = ok(await resend.suppressions.add({ email: b }));
  const added = ok(await resend.suppressions.batch.add({ emails: [a, b, a.toUpperCase()] }));
  assert.equal(added.data.length, 2, 'duplicates collapse');
  for (const entry of added.data) {
    assert.equal(entry.object, 'suppression');
    assert.match(entry.id, UUID);
  }
  assert.equal(added.data[1].id, existing.id);

  const byEmail = ok(await resend.suppressions.batch.remove({ emails: [a, uniqueAddress('never')] }));
  assert.deepEqual(byEmail.data, [{ object: 'suppression', id: added.data[0].id, deleted: true }]);
  const byId = ok(await resend.suppressions.batch.remove({ ids: [existing.id] }));
  assert.deepEqual(byId.data, [{ object: 'suppression', id: existing.id, deleted: true }]);
  fails(await resend.suppressions.get(b), 404, 'not_found');
});

test('suppression errors have Resend names', async () => {
  fails(await resend.suppressions.add({ email: 'not an address' }), 422, 'validation_error');
  fails(await resend.suppressions.add({}), 422, 'missing_required_field');
  fails(await resend.suppressions.get(uniqueAddress('missing')), 404, 'not_found');
  const tooMany = Array.from({ length: 101 }, (_, n) => `n${n}-${uniqueAddress('many')}`);
  fails(await resend.suppressions.batch.add({ emails: tooMany }), 422, 'validation_error');
  fails(await resend.suppressions.batch.remove({ ids: ['nope'] }), 422, 'validation_error');
});

test('suppressions belong to one team, and sending keys may not touch them', async () => {
  const email = uniqueAddress('team');
  const added = ok(await resend.suppressions.add({ email }));
  const other = await teamClient('suppressions-other');
  fails(await other.suppressions.get(added.id), 404, 'not_found');
  fails(await other.suppressions.get(email), 404, 'not_found');
  fails(await other.suppressions.remove(added.id), 404, 'not_found');

  const key = ok(await resend.apiKeys.create({ name: `node-sending-${randomBytes(4).toString('hex')}`, permission: 'sending_access' }));
  const sending = new Resend(key.token);
  fails(await sending.suppressions.list(), 401, 'restricted_api_key');
  fails(await sending.suppressions.add({ email }), 401, 'restricted_api_key');
  fails(await sending.suppressions.remove(email), 401, 'restricted_api_key');
  ok(await resend.apiKeys.remove(key.id));
  ok(await resend.suppressions.remove(added.id));
});

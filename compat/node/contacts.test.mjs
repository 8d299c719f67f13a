// Contacts through the official Node SDK (npm `resend`): resend.contacts.create / get (by
// id and by address) / list / update / remove. Runs in a team of its own (made with the
// suite's operator key), so listing sees only this test's contacts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Resend } from 'resend';
import { TIMESTAMP, UUID, fails, ok, raw } from './helpers.mjs';

/** A client for a new team of its own. */
async function teamClient() {
  const response = await raw('POST', '/teams', { body: { name: `node-contacts-${randomBytes(4).toString('hex')}` } });
  assert.equal(response.status, 201, response.text);
  return new Resend(response.json.api_key.token);
}

test('contacts.create, get by id and by address, list, update, remove', async () => {
  const resend = await teamClient();
  const email = `Node.${randomBytes(4).toString('hex')}@Compat.Herald.test`;
  const created = ok(await resend.contacts.create({ email, firstName: 'Ann', lastName: 'Lee' }));
  assert.deepEqual(Object.keys(created).sort(), ['id', 'object']);
  assert.equal(created.object, 'contact');
  assert.match(created.id, UUID);
  fails(await resend.contacts.create({ email: email.replace('Compat.Herald.test', 'compat.herald.test') }), 409, 'conflict');
  const second = ok(await resend.contacts.create({ email: `two.${email}`, unsubscribed: true }));

  const byId = ok(await resend.contacts.get(created.id));
  assert.equal(byId.object, 'contact');
  assert.equal(byId.id, created.id);
  assert.equal(byId.email, email, 'kept as written');
  assert.equal(byId.first_name, 'Ann');
  assert.equal(byId.last_name, 'Lee');
  assert.equal(byId.unsubscribed, false);
  assert.match(byId.created_at, TIMESTAMP);
  assert.deepEqual(byId.properties, {});
  assert.deepEqual(ok(await resend.contacts.get({ email })), byId);

  const listed = ok(await resend.contacts.list({ limit: 1 }));
  assert.equal(listed.object, 'list');
  assert.equal(listed.has_more, true);
  assert.equal(listed.data[0].id, second.id, 'newest first');
  assert.equal(listed.data[0].unsubscribed, true);
  const rest = ok(await resend.contacts.list({ limit: 1, after: second.id }));
  assert.equal(rest.data[0].id, created.id);
  assert.equal(rest.has_more, false);

  const updated = ok(await resend.contacts.update({ id: created.id, unsubscribed: true, firstName: 'Anna' }));
  assert.deepEqual(updated, { object: 'contact', id: created.id });
  const after = ok(await resend.contacts.get({ id: created.id }));
  assert.equal(after.first_name, 'Anna');
  assert.equal(after.unsubscribed, true);
  assert.equal(after.last_name, 'Lee', 'a field not sent is kept');

  const removed = ok(await resend.contacts.remove({ email }));
  assert.equal(removed.object, 'contact');
  assert.equal(removed.contact, email);
  assert.equal(removed.id, created.id);
  assert.equal(removed.deleted, true);
  fails(await resend.contacts.get(created.id), 404, 'not_found');
  fails(await resend.contacts.create({ firstName: 'Nobody' }), 422, 'missing_required_field');
});

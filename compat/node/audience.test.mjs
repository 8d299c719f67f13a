// A team's audience through the official Node SDK (npm `resend`): segments
// (resend.segments.*, a segment's contacts through contacts.list({ segmentId })), contacts
// with segments, topics and properties, the legacy contacts.create({ audienceId }), a
// contact's segments and topics (contacts.segments.*, contacts.topics.*), topics
// (resend.topics.*), contact properties (resend.contactProperties.*), imports
// (contacts.imports.*) and the topic webhook events. Every test runs in a team of its own
// (made with the suite's operator key): a contact's topics list every topic of its team, and
// the lists here must show only the test's own items.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Resend } from 'resend';
import { BASE_URL, TIMESTAMP, UUID, fails, ok, raw } from './helpers.mjs';

/** A short random suffix for names. */
function suffix() {
  return randomBytes(4).toString('hex');
}

/** An address no other test (Node, Python or Rust) uses. */
function uniqueAddress(label) {
  return `node-${label}-${randomBytes(5).toString('hex')}@compat.herald.test`;
}

/** A new team of its own: its first key (for raw requests) and an SDK client with it. */
async function team(label) {
  const response = await raw('POST', '/teams', { body: { name: `node-${label}-${suffix()}` } });
  assert.equal(response.status, 201, response.text);
  const key = response.json.api_key.token;
  return { key, resend: new Resend(key) };
}

/** `ids` sorted, to compare lists whose order the test does not fix. */
function sorted(ids) {
  return [...ids].sort();
}

/** The keys of a contact in a list (`GET /contacts`, a segment's contacts). */
const CONTACT_KEYS = ['created_at', 'email', 'first_name', 'id', 'last_name', 'unsubscribed'];

/** A CSV upload the way the SDK's callers make one. */
function csvFile(lines) {
  return new Blob([`${lines.join('\n')}\n`], { type: 'text/csv' });
}

/** Polls `contacts.imports.get` until the import is completed (imports run in the background). */
async function completedImport(resend, id) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const current = ok(await resend.contacts.imports.get(id));
    assert.ok(['queued', 'in_progress', 'completed'].includes(current.status), JSON.stringify(current));
    if (current.status === 'completed') return current;
    assert.ok(Date.now() < deadline, `import ${id} did not complete within 30 s: ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test('segments.create answers 201; get, list, update and remove', async () => {
  const { key, resend } = await team('segments');
  const wireName = `Wire ${suffix()}`;
  const onWire = await raw('POST', '/segments', { key, body: { name: wireName } });
  assert.equal(onWire.status, 201, onWire.text);
  assert.deepEqual(onWire.json, { object: 'segment', id: onWire.json.id, name: wireName });
  assert.match(onWire.json.id, UUID);

  const name = `Newsletter ${suffix()}`;
  const created = ok(await resend.segments.create({ name }));
  assert.deepEqual(created, { object: 'segment', id: created.id, name });
  assert.match(created.id, UUID);

  const segment = ok(await resend.segments.get(created.id));
  assert.deepEqual(Object.keys(segment).sort(), ['created_at', 'id', 'name', 'object']);
  assert.equal(segment.object, 'segment');
  assert.equal(segment.id, created.id);
  assert.equal(segment.name, name);
  assert.match(segment.created_at, TIMESTAMP);

  const listed = ok(await resend.segments.list());
  assert.equal(listed.object, 'list');
  assert.equal(listed.has_more, false);
  assert.deepEqual(listed.data.map((s) => s.id), [created.id, onWire.json.id], 'newest first');
  assert.deepEqual(listed.data[0], { id: created.id, name, created_at: segment.created_at });
  const first = ok(await resend.segments.list({ limit: 1 }));
  assert.equal(first.has_more, true);
  assert.deepEqual(first.data.map((s) => s.id), [created.id]);
  const second = ok(await resend.segments.list({ limit: 1, after: created.id }));
  assert.equal(second.has_more, false);
  assert.deepEqual(second.data.map((s) => s.id), [onWire.json.id]);
  const back = ok(await resend.segments.list({ limit: 1, before: onWire.json.id }));
  assert.deepEqual(back.data.map((s) => s.id), [created.id]);
  fails(await resend.segments.list({ limit: 101 }), 422, 'validation_error');

  const renamed = `Renamed ${suffix()}`;
  assert.deepEqual(ok(await resend.segments.update(created.id, { name: renamed })), { object: 'segment', id: created.id });
  const after = ok(await resend.segments.get(created.id));
  assert.equal(after.name, renamed);
  assert.equal(after.created_at, segment.created_at);

  assert.deepEqual(ok(await resend.segments.remove(created.id)), { object: 'segment', id: created.id, deleted: true });
  fails(await resend.segments.get(created.id), 404, 'not_found');
  assert.deepEqual(ok(await resend.segments.list()).data.map((s) => s.id), [onWire.json.id]);

  fails(await resend.segments.get(randomUUID()), 404, 'not_found');
  fails(await resend.segments.get('not-a-segment'), 422, 'invalid_parameter');
  fails(await resend.segments.create({}), 422, 'missing_required_field');
});

test('contacts.create with segments, topics and properties; get shows the properties typed', async () => {
  const { key, resend } = await team('contacts-audience');
  const vip = ok(await resend.segments.create({ name: 'VIP' }));
  const trial = ok(await resend.segments.create({ name: 'Trial' }));
  const news = ok(await resend.topics.create({ name: 'News', defaultSubscription: 'opt_out' }));
  ok(await resend.contactProperties.create({ key: 'plan', type: 'string', fallbackValue: 'free' }));
  ok(await resend.contactProperties.create({ key: 'seats', type: 'number' }));
  ok(await resend.contactProperties.create({ key: 'nickname', type: 'string' }));

  const email = uniqueAddress('full');
  const created = ok(
    await resend.contacts.create({
      email,
      firstName: 'Ada',
      segments: [{ id: vip.id }, { id: trial.id }],
      topics: [{ id: news.id, subscription: 'opt_in' }],
      properties: { seats: 3 },
    }),
  );
  assert.deepEqual(created, { object: 'contact', id: created.id });
  assert.match(created.id, UUID);
  const outsider = ok(await resend.contacts.create({ email: uniqueAddress('outsider') }));

  const contact = ok(await resend.contacts.get(created.id));
  assert.equal(contact.email, email);
  assert.equal(contact.first_name, 'Ada');
  assert.equal(contact.last_name, null);
  assert.equal(contact.unsubscribed, false);
  // Every defined property with a value, or its fallback; values always as strings.
  assert.deepEqual(contact.properties, {
    plan: { type: 'string', value: 'free' },
    seats: { type: 'number', value: '3' },
  });

  // The contact's segments, by id and by address.
  const memberships = ok(await resend.contacts.segments.list({ contactId: created.id }));
  assert.equal(memberships.object, 'list');
  assert.equal(memberships.has_more, false);
  assert.deepEqual(sorted(memberships.data.map((s) => s.id)), sorted([vip.id, trial.id]));
  const vipEntry = memberships.data.find((s) => s.id === vip.id);
  assert.deepEqual(Object.keys(vipEntry).sort(), ['created_at', 'id', 'name']);
  assert.equal(vipEntry.name, 'VIP');
  assert.match(vipEntry.created_at, TIMESTAMP);
  const byEmail = ok(await resend.contacts.segments.list({ email }));
  assert.deepEqual(sorted(byEmail.data.map((s) => s.id)), sorted([vip.id, trial.id]));

  // A segment's contacts: the SDK asks GET /segments/{id}/contacts; GET /contacts?segment_id= too.
  const inVip = ok(await resend.contacts.list({ segmentId: vip.id }));
  assert.equal(inVip.object, 'list');
  assert.equal(inVip.has_more, false);
  assert.deepEqual(inVip.data.map((c) => c.id), [created.id]);
  assert.deepEqual(Object.keys(inVip.data[0]).sort(), CONTACT_KEYS);
  assert.equal(inVip.data[0].email, email);
  const filtered = await raw('GET', `/contacts?segment_id=${trial.id}`, { key });
  assert.equal(filtered.status, 200, filtered.text);
  assert.deepEqual(filtered.json.data.map((c) => c.id), [created.id]);
  assert.deepEqual(sorted(ok(await resend.contacts.list()).data.map((c) => c.id)), sorted([created.id, outsider.id]));

  // Its topics: every topic of the team, with the contact's choice.
  const topics = ok(await resend.contacts.topics.list({ id: created.id }));
  assert.equal(topics.object, 'list');
  assert.equal(topics.has_more, false);
  assert.equal(topics.data.length, 1);
  assert.deepEqual(Object.keys(topics.data[0]).sort(), ['created_at', 'description', 'id', 'name', 'subscription']);
  assert.equal(topics.data[0].id, news.id);
  assert.equal(topics.data[0].name, 'News');
  assert.equal(topics.data[0].description, null);
  assert.equal(topics.data[0].subscription, 'opt_in');
  assert.match(topics.data[0].created_at, TIMESTAMP);

  // PATCH properties: a value replaces, null removes (the fallback shows again where there is one).
  const updated = ok(await resend.contacts.update({ id: created.id, properties: { plan: 'pro', seats: null, nickname: 'Countess' } }));
  assert.deepEqual(updated, { object: 'contact', id: created.id });
  assert.deepEqual(ok(await resend.contacts.get({ email })).properties, {
    plan: { type: 'string', value: 'pro' },
    nickname: { type: 'string', value: 'Countess' },
  });
  ok(await resend.contacts.update({ email, properties: { plan: null, seats: 12 } }));
  assert.deepEqual(ok(await resend.contacts.get(created.id)).properties, {
    plan: { type: 'string', value: 'free' },
    seats: { type: 'number', value: '12' },
    nickname: { type: 'string', value: 'Countess' },
  });
  fails(await resend.contacts.update({ id: created.id, properties: { unknown_key: 'x' } }), 422, 'validation_error');
  fails(await resend.contacts.update({ id: created.id, properties: { seats: 'lots' } }), 422, 'validation_error');

  // What is refused creates nothing.
  const refused = uniqueAddress('refused');
  fails(await resend.contacts.create({ email: refused, segments: [{ id: randomUUID() }] }), 404, 'not_found');
  fails(
    await resend.contacts.create({ email: refused, topics: [{ id: randomUUID(), subscription: 'opt_in' }] }),
    404,
    'not_found',
  );
  fails(await resend.contacts.create({ email: refused, properties: { unknown_key: 'x' } }), 422, 'validation_error');
  fails(await resend.contacts.create({ email: refused, properties: { seats: 'lots' } }), 422, 'validation_error');
  fails(await resend.contacts.get({ email: refused }), 404, 'not_found');
});

test('POST /contacts takes segments as id strings, and audience_id or segment_id', async () => {
  const { key, resend } = await team('contacts-segment-forms');
  const segment = ok(await resend.segments.create({ name: `Forms ${suffix()}` }));
  const post = async (body) => {
    const response = await raw('POST', '/contacts', { key, body });
    assert.equal(response.status, 201, response.text);
    assert.deepEqual(Object.keys(response.json).sort(), ['id', 'object']);
    return response.json.id;
  };
  const asStrings = await post({ email: uniqueAddress('strings'), segments: [segment.id] });
  const byAudience = await post({ email: uniqueAddress('audience'), audience_id: segment.id });
  const bySegment = await post({ email: uniqueAddress('segment'), segment_id: segment.id });
  // resend-rs always sends "audience_id", null when none is set.
  const withNull = await post({ email: uniqueAddress('null'), audience_id: null });

  const members = ok(await resend.contacts.list({ segmentId: segment.id }));
  assert.deepEqual(sorted(members.data.map((c) => c.id)), sorted([asStrings, byAudience, bySegment]));
  assert.deepEqual(ok(await resend.contacts.segments.list({ contactId: withNull })).data, []);
  const missing = await raw('POST', '/contacts', { key, body: { email: uniqueAddress('missing'), audience_id: randomUUID() } });
  assert.equal(missing.status, 404, missing.text);
  assert.equal(missing.json.name, 'not_found');
});

test('contacts.create({ audienceId }) and the other legacy audience paths', async () => {
  const { resend } = await team('contacts-legacy');
  // resend.audiences is resend.segments in this SDK.
  const audience = ok(await resend.audiences.create({ name: `Legacy ${suffix()}` }));
  assert.equal(audience.object, 'segment');

  const email = uniqueAddress('legacy');
  // POST /audiences/{id}/contacts
  const created = ok(await resend.contacts.create({ audienceId: audience.id, email, firstName: 'Lin', unsubscribed: false }));
  assert.deepEqual(created, { object: 'contact', id: created.id });
  assert.match(created.id, UUID);
  // GET /segments/{id}/contacts (the SDK turns audienceId into segmentId)
  assert.deepEqual(ok(await resend.contacts.list({ audienceId: audience.id })).data.map((c) => c.id), [created.id]);
  // GET /audiences/{id}/contacts/{id}, as GET /contacts/{id}
  const viaAudience = ok(await resend.contacts.get({ id: created.id, audienceId: audience.id }));
  assert.deepEqual(viaAudience, ok(await resend.contacts.get(created.id)));
  assert.equal(viaAudience.first_name, 'Lin');
  assert.deepEqual(ok(await resend.contacts.segments.list({ contactId: created.id })).data.map((s) => s.id), [audience.id]);
  // PATCH /audiences/{id}/contacts/{id}
  const updated = ok(await resend.contacts.update({ id: created.id, audienceId: audience.id, lastName: 'Wu', unsubscribed: true }));
  assert.deepEqual(updated, { object: 'contact', id: created.id });
  const after = ok(await resend.contacts.get({ email }));
  assert.equal(after.last_name, 'Wu');
  assert.equal(after.unsubscribed, true);
  assert.equal(after.first_name, 'Lin');

  // An address that is already a contact is found, and added to the audience.
  const existingEmail = uniqueAddress('existing');
  const existing = ok(await resend.contacts.create({ email: existingEmail, firstName: 'Kai' }));
  const again = ok(await resend.contacts.create({ audienceId: audience.id, email: existingEmail }));
  assert.equal(again.id, existing.id);
  assert.deepEqual(ok(await resend.contacts.segments.list({ email: existingEmail })).data.map((s) => s.id), [audience.id]);
  assert.deepEqual(
    sorted(ok(await resend.contacts.list({ segmentId: audience.id })).data.map((c) => c.id)),
    sorted([created.id, existing.id]),
  );

  // DELETE /audiences/{id}/contacts/{email}, as DELETE /contacts/{email}
  const removed = ok(await resend.contacts.remove({ email, audienceId: audience.id }));
  assert.deepEqual(removed, { object: 'contact', contact: email, id: created.id, deleted: true });
  fails(await resend.contacts.get(created.id), 404, 'not_found');
  fails(await resend.contacts.create({ audienceId: randomUUID(), email: uniqueAddress('nowhere') }), 404, 'not_found');
});

test('contacts.segments.add and remove', async () => {
  const { key, resend } = await team('contact-segments');
  const [a, b, c] = [
    ok(await resend.segments.create({ name: 'A' })),
    ok(await resend.segments.create({ name: 'B' })),
    ok(await resend.segments.create({ name: 'C' })),
  ];
  const email = uniqueAddress('member');
  const contact = ok(await resend.contacts.create({ email }));
  assert.deepEqual(ok(await resend.contacts.segments.list({ contactId: contact.id })).data, []);

  // The SDK posts no body (but a JSON Content-Type).
  const added = ok(await resend.contacts.segments.add({ contactId: contact.id, segmentId: a.id }));
  assert.deepEqual(added, { object: 'contact_segment', id: a.id, contact_id: contact.id, segment_id: a.id });
  const onWire = await raw('POST', `/contacts/${contact.id}/segments/${b.id}`, { key });
  assert.equal(onWire.status, 201, onWire.text);
  assert.deepEqual(onWire.json, { object: 'contact_segment', id: b.id, contact_id: contact.id, segment_id: b.id });
  const byEmail = ok(await resend.contacts.segments.add({ email, segmentId: c.id }));
  assert.deepEqual(byEmail, { object: 'contact_segment', id: c.id, contact_id: contact.id, segment_id: c.id });
  assert.deepEqual(sorted(ok(await resend.contacts.segments.list({ contactId: contact.id })).data.map((s) => s.id)), sorted([a.id, b.id, c.id]));
  assert.deepEqual(ok(await resend.contacts.list({ segmentId: b.id })).data.map((s) => s.id), [contact.id]);

  const removed = ok(await resend.contacts.segments.remove({ contactId: contact.id, segmentId: a.id }));
  assert.deepEqual(removed, { object: 'contact_segment', id: a.id, contact_id: contact.id, segment_id: a.id, deleted: true });
  const removedByEmail = ok(await resend.contacts.segments.remove({ email, segmentId: b.id }));
  assert.deepEqual(removedByEmail, { object: 'contact_segment', id: b.id, contact_id: contact.id, segment_id: b.id, deleted: true });
  assert.deepEqual(ok(await resend.contacts.segments.list({ email })).data.map((s) => s.id), [c.id]);
  assert.deepEqual(ok(await resend.contacts.list({ segmentId: a.id })).data, []);

  // A deleted segment leaves its contacts' lists.
  ok(await resend.segments.remove(c.id));
  assert.deepEqual(ok(await resend.contacts.segments.list({ contactId: contact.id })).data, []);

  fails(await resend.contacts.segments.add({ contactId: contact.id, segmentId: randomUUID() }), 404, 'not_found');
  fails(await resend.contacts.segments.add({ contactId: randomUUID(), segmentId: a.id }), 404, 'not_found');
  fails(await resend.contacts.segments.list({ email: uniqueAddress('nobody') }), 404, 'not_found');
});

test('contacts.topics.list shows every topic with its default; contacts.topics.update changes them', async () => {
  const { key, resend } = await team('contact-topics');
  const weekly = ok(await resend.topics.create({ name: 'Weekly', defaultSubscription: 'opt_in', description: 'Every Monday' }));
  const offers = ok(await resend.topics.create({ name: 'Offers', defaultSubscription: 'opt_out' }));
  const email = uniqueAddress('topics');
  const contact = ok(await resend.contacts.create({ email }));

  const subscriptions = async (options) => {
    const list = ok(await resend.contacts.topics.list(options));
    assert.equal(list.object, 'list');
    assert.equal(list.has_more, false);
    return Object.fromEntries(list.data.map((t) => [t.id, t]));
  };
  const before = await subscriptions({ id: contact.id });
  assert.deepEqual(sorted(Object.keys(before)), sorted([weekly.id, offers.id]));
  assert.equal(before[weekly.id].name, 'Weekly');
  assert.equal(before[weekly.id].description, 'Every Monday');
  assert.equal(before[weekly.id].subscription, 'opt_in', "the topic's default");
  assert.match(before[weekly.id].created_at, TIMESTAMP);
  assert.equal(before[offers.id].description, null);
  assert.equal(before[offers.id].subscription, 'opt_out', "the topic's default");

  // The SDK sends the bare array.
  const choices = [
    { id: weekly.id, subscription: 'opt_out' },
    { id: offers.id, subscription: 'opt_in' },
  ];
  const updated = ok(await resend.contacts.topics.update({ id: contact.id, topics: choices }));
  assert.deepEqual(Object.keys(updated).sort(), ['contact_id', 'id', 'object', 'topics']);
  assert.equal(updated.object, 'contact_topics');
  assert.equal(updated.id, contact.id);
  assert.equal(updated.contact_id, contact.id);
  const byId = (list) => [...list].sort((x, y) => (x.id < y.id ? -1 : 1));
  assert.deepEqual(byId(updated.topics), byId(choices));
  const after = await subscriptions({ email });
  assert.equal(after[weekly.id].subscription, 'opt_out');
  assert.equal(after[offers.id].subscription, 'opt_in');

  // The body wrapped in {"topics": [...]} is taken too.
  const wrapped = await raw('PATCH', `/contacts/${contact.id}/topics`, {
    key,
    body: { topics: [{ id: weekly.id, subscription: 'opt_in' }] },
  });
  assert.equal(wrapped.status, 200, wrapped.text);
  assert.equal(wrapped.json.object, 'contact_topics');
  assert.equal((await subscriptions({ id: contact.id }))[weekly.id].subscription, 'opt_in');
  assert.equal((await subscriptions({ id: contact.id }))[offers.id].subscription, 'opt_in', 'a topic not sent is kept');

  fails(
    await resend.contacts.topics.update({ id: contact.id, topics: [{ id: randomUUID(), subscription: 'opt_in' }] }),
    404,
    'not_found',
  );
  fails(
    await resend.contacts.topics.update({ id: contact.id, topics: [{ id: weekly.id, subscription: 'maybe' }] }),
    422,
    'validation_error',
  );
  fails(await resend.contacts.topics.list({ id: randomUUID() }), 404, 'not_found');
});

test('topics.create answers 201; get, list, update and remove', async () => {
  const { key, resend } = await team('topics');
  const onWire = await raw('POST', '/topics', {
    key,
    body: { name: 'Wire', default_subscription: 'opt_out', visibility: 'public' },
  });
  assert.equal(onWire.status, 201, onWire.text);
  assert.deepEqual(onWire.json, { object: 'topic', id: onWire.json.id });
  assert.match(onWire.json.id, UUID);

  const created = ok(await resend.topics.create({ name: 'Product', defaultSubscription: 'opt_in', description: 'Product news' }));
  assert.deepEqual(created, { object: 'topic', id: created.id });
  const topic = ok(await resend.topics.get(created.id));
  assert.deepEqual(topic, {
    object: 'topic',
    id: created.id,
    name: 'Product',
    description: 'Product news',
    default_subscription: 'opt_in',
    visibility: 'private',
    created_at: topic.created_at,
  });
  assert.match(topic.created_at, TIMESTAMP);
  const wire = ok(await resend.topics.get(onWire.json.id));
  assert.equal(wire.description, null);
  assert.equal(wire.visibility, 'public');
  assert.equal(wire.default_subscription, 'opt_out');

  const listed = ok(await resend.topics.list());
  assert.equal(listed.object, 'list');
  assert.equal(listed.has_more, false);
  assert.deepEqual(listed.data.map((t) => t.id), [created.id, onWire.json.id], 'newest first');
  const { object: _, ...inList } = topic;
  assert.deepEqual(listed.data[0], inList);

  // The SDK sends the whole payload, `id` included.
  const updated = ok(await resend.topics.update({ id: created.id, name: 'Products', description: 'All product news' }));
  assert.deepEqual(updated, { object: 'topic', id: created.id });
  const visible = await raw('PATCH', `/topics/${created.id}`, { key, body: { visibility: 'public' } });
  assert.equal(visible.status, 200, visible.text);
  assert.deepEqual(visible.json, { object: 'topic', id: created.id });
  const after = ok(await resend.topics.get(created.id));
  assert.equal(after.name, 'Products');
  assert.equal(after.description, 'All product news');
  assert.equal(after.visibility, 'public');
  assert.equal(after.default_subscription, 'opt_in');
  const flip = await raw('PATCH', `/topics/${created.id}`, { key, body: { default_subscription: 'opt_out' } });
  assert.equal(flip.status, 422, flip.text);
  assert.equal(flip.json.name, 'validation_error');
  assert.equal(ok(await resend.topics.get(created.id)).default_subscription, 'opt_in');

  assert.deepEqual(ok(await resend.topics.remove(created.id)), { object: 'topic', id: created.id, deleted: true });
  fails(await resend.topics.get(created.id), 404, 'not_found');
  assert.deepEqual(ok(await resend.topics.list()).data.map((t) => t.id), [onWire.json.id]);

  fails(await resend.topics.create({ name: 'No default' }), 422, 'missing_required_field');
  fails(await resend.topics.create({ defaultSubscription: 'opt_in' }), 422, 'missing_required_field');
  fails(await resend.topics.create({ name: 'Bad', defaultSubscription: 'sometimes' }), 422, 'validation_error');
  fails(await resend.topics.create({ name: 'Bad', defaultSubscription: 'opt_in', visibility: 'secret' }), 422, 'validation_error');
  fails(await resend.topics.get(randomUUID()), 404, 'not_found');
  fails(await resend.topics.get('not-a-topic'), 422, 'invalid_parameter');
});

test('contactProperties.create answers 201; get, list, update and remove', async () => {
  const { key, resend } = await team('contact-properties');
  const onWire = await raw('POST', '/contact-properties', { key, body: { key: 'wire_key', type: 'string' } });
  assert.equal(onWire.status, 201, onWire.text);
  assert.deepEqual(onWire.json, { object: 'contact_property', id: onWire.json.id });
  assert.match(onWire.json.id, UUID);

  const company = ok(await resend.contactProperties.create({ key: 'company', type: 'string', fallbackValue: 'Acme' }));
  assert.deepEqual(company, { object: 'contact_property', id: company.id });
  const score = ok(await resend.contactProperties.create({ key: 'score', type: 'number', fallbackValue: 0 }));

  // The SDK renames the answer's fields to camelCase.
  const got = ok(await resend.contactProperties.get(company.id));
  assert.deepEqual(got, {
    object: 'contact_property',
    id: company.id,
    key: 'company',
    createdAt: got.createdAt,
    type: 'string',
    fallbackValue: 'Acme',
  });
  assert.match(got.createdAt, TIMESTAMP);
  const scored = ok(await resend.contactProperties.get(score.id));
  assert.equal(scored.type, 'number');
  assert.equal(scored.fallbackValue, 0);
  const wireGet = await raw('GET', `/contact-properties/${onWire.json.id}`, { key });
  assert.equal(wireGet.status, 200, wireGet.text);
  assert.deepEqual(wireGet.json, {
    object: 'contact_property',
    id: onWire.json.id,
    key: 'wire_key',
    type: 'string',
    fallback_value: null,
    created_at: wireGet.json.created_at,
  });

  const listed = ok(await resend.contactProperties.list());
  assert.equal(listed.object, 'list');
  assert.equal(listed.has_more, false);
  assert.deepEqual(listed.data.map((p) => p.key), ['score', 'company', 'wire_key'], 'newest first');
  const wireList = await raw('GET', '/contact-properties?limit=1', { key });
  assert.equal(wireList.status, 200, wireList.text);
  assert.equal(wireList.json.has_more, true);
  assert.deepEqual(wireList.json.data, [
    { id: score.id, key: 'score', type: 'number', fallback_value: 0, created_at: scored.createdAt },
  ]);

  // The SDK sends only fallback_value.
  assert.deepEqual(ok(await resend.contactProperties.update({ id: company.id, fallbackValue: 'Initech' })), {
    object: 'contact_property',
    id: company.id,
  });
  assert.equal(ok(await resend.contactProperties.get(company.id)).fallbackValue, 'Initech');
  ok(await resend.contactProperties.update({ id: company.id, fallbackValue: null }));
  assert.equal(ok(await resend.contactProperties.get(company.id)).fallbackValue, null);
  for (const body of [{ key: 'renamed' }, { type: 'number' }, { fallback_value: 'not a number' }]) {
    const target = body.fallback_value === undefined ? company.id : score.id;
    const refused = await raw('PATCH', `/contact-properties/${target}`, { key, body });
    assert.equal(refused.status, 422, `${JSON.stringify(body)}: ${refused.text}`);
    assert.equal(refused.json.name, 'validation_error', JSON.stringify(body));
  }

  fails(await resend.contactProperties.create({ key: 'company', type: 'string' }), 409, 'conflict');
  fails(await resend.contactProperties.create({ key: 'has space', type: 'string' }), 422, 'validation_error');
  fails(await resend.contactProperties.create({ key: 'k'.repeat(51), type: 'string' }), 422, 'validation_error');
  fails(await resend.contactProperties.create({ key: 'count', type: 'number', fallbackValue: 'ten' }), 422, 'validation_error');
  fails(await resend.contactProperties.create({ key: 'flag', type: 'boolean' }), 422, 'validation_error');
  fails(await resend.contactProperties.create({ type: 'string' }), 422, 'missing_required_field');

  assert.deepEqual(ok(await resend.contactProperties.remove(company.id)), {
    object: 'contact_property',
    id: company.id,
    deleted: true,
  });
  fails(await resend.contactProperties.get(company.id), 404, 'not_found');
  fails(await resend.contactProperties.get(randomUUID()), 404, 'not_found');
  // A removed property is no longer a key contacts may have.
  fails(await resend.contacts.create({ email: uniqueAddress('removed-key'), properties: { company: 'Acme' } }), 422, 'validation_error');
});

test('contacts.imports.create with the default columns; poll get until completed, then list', async () => {
  const { key, resend } = await team('imports');
  const existingEmail = uniqueAddress('import-existing');
  const existing = ok(await resend.contacts.create({ email: existingEmail, firstName: 'Old' }));
  const [a, b] = [uniqueAddress('import-a'), uniqueAddress('import-b')];
  const file = csvFile([
    'email,first_name,last_name,unsubscribed',
    `${a},Ann,Lee,false`,
    'not-an-address,Bad,Row,false',
    `${b},Bo,Ek,true`,
    `${existingEmail},New,Name,false`,
  ]);
  const created = ok(await resend.contacts.imports.create({ file }));
  assert.deepEqual(created, { object: 'contact_import', id: created.id });
  assert.match(created.id, UUID);

  const done = await completedImport(resend, created.id);
  assert.equal(done.object, 'contact_import');
  assert.equal(done.id, created.id);
  assert.match(done.created_at, TIMESTAMP);
  assert.match(done.completed_at, TIMESTAMP);
  // on_conflict defaults to upsert: the existing address is updated.
  assert.deepEqual(done.counts, { total: 4, created: 2, updated: 1, skipped: 0, failed: 1 });
  assert.equal(done.errors_total, 1);
  assert.equal(done.errors.length, 1);
  assert.deepEqual(Object.keys(done.errors[0]).sort(), ['line', 'reason', 'row']);
  assert.equal(done.errors[0].line, 3, 'the bad row is the file\'s third line (the header is line 1)');
  assert.equal(done.errors[0].row, 2, 'and its second row (the first after the header is row 1)');
  assert.equal(typeof done.errors[0].reason, 'string');
  assert.ok(done.errors[0].reason.length > 0);

  const ann = ok(await resend.contacts.get({ email: a }));
  assert.equal(ann.first_name, 'Ann');
  assert.equal(ann.last_name, 'Lee');
  assert.equal(ann.unsubscribed, false);
  const bo = ok(await resend.contacts.get({ email: b }));
  assert.equal(bo.first_name, 'Bo');
  assert.equal(bo.unsubscribed, true);
  const updated = ok(await resend.contacts.get({ email: existingEmail }));
  assert.equal(updated.id, existing.id);
  assert.equal(updated.first_name, 'New');
  assert.equal(updated.last_name, 'Name');
  assert.equal(ok(await resend.contacts.list()).data.length, 3);

  const listed = ok(await resend.contacts.imports.list());
  assert.equal(listed.object, 'list');
  assert.equal(listed.has_more, false);
  assert.equal(listed.data.length, 1);
  assert.deepEqual(Object.keys(listed.data[0]).sort(), ['completed_at', 'counts', 'created_at', 'id', 'status']);
  assert.deepEqual(listed.data[0], {
    id: created.id,
    status: 'completed',
    created_at: done.created_at,
    completed_at: done.completed_at,
    counts: done.counts,
  });
  assert.deepEqual(ok(await resend.contacts.imports.list({ status: 'completed' })).data.map((i) => i.id), [created.id]);
  assert.deepEqual(ok(await resend.contacts.imports.list({ status: 'queued' })).data, []);
  const badStatus = await raw('GET', '/contacts/imports?status=paused', { key });
  assert.equal(badStatus.status, 422, badStatus.text);
  assert.equal(badStatus.json.name, 'validation_error');
  fails(await resend.contacts.imports.get(randomUUID()), 404, 'not_found');
});

test('contacts.imports.create with a column map, properties, segments, topics and on_conflict skip', async () => {
  const { key, resend } = await team('imports-mapped');
  const segment = ok(await resend.segments.create({ name: 'Imported' }));
  const topic = ok(await resend.topics.create({ name: 'Digest', defaultSubscription: 'opt_out' }));
  ok(await resend.contactProperties.create({ key: 'plan', type: 'string' }));
  ok(await resend.contactProperties.create({ key: 'seats', type: 'number' }));
  const existingEmail = uniqueAddress('mapped-existing');
  const existing = ok(await resend.contacts.create({ email: existingEmail, firstName: 'Old' }));
  const fresh = uniqueAddress('mapped-new');

  const created = ok(
    await resend.contacts.imports.create({
      file: csvFile(['E-mail,Given,Plan,Seats', `${fresh},Cy,pro,5`, `${existingEmail},Changed,basic,1`]),
      columnMap: {
        email: 'E-mail',
        firstName: 'Given',
        properties: { plan: { column: 'Plan', type: 'string' }, seats: { column: 'Seats', type: 'number' } },
      },
      onConflict: 'skip',
      segments: [{ id: segment.id }],
      topics: [{ id: topic.id, subscription: 'opt_in' }],
    }),
  );
  const done = await completedImport(resend, created.id);
  assert.deepEqual(done.counts, { total: 2, created: 1, updated: 0, skipped: 1, failed: 0 });
  assert.deepEqual(done.errors, []);
  assert.equal(done.errors_total, 0);

  const cy = ok(await resend.contacts.get({ email: fresh }));
  assert.equal(cy.first_name, 'Cy');
  assert.deepEqual(cy.properties, { plan: { type: 'string', value: 'pro' }, seats: { type: 'number', value: '5' } });
  assert.deepEqual(ok(await resend.contacts.segments.list({ contactId: cy.id })).data.map((s) => s.id), [segment.id]);
  const topics = ok(await resend.contacts.topics.list({ id: cy.id })).data;
  assert.deepEqual(topics.map((t) => [t.id, t.subscription]), [[topic.id, 'opt_in']]);
  const skipped = ok(await resend.contacts.get({ email: existingEmail }));
  assert.equal(skipped.id, existing.id);
  assert.equal(skipped.first_name, 'Old', 'a skipped row changes nothing');
  assert.deepEqual(skipped.properties, {});

  // The same upload without the SDK answers 201.
  const form = new FormData();
  form.append('file', csvFile(['email', uniqueAddress('raw-import')]), 'contacts.csv');
  const response = await fetch(`${BASE_URL}/contacts/imports`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'User-Agent': 'herald-compat' },
    body: form,
  });
  const text = await response.text();
  assert.equal(response.status, 201, text);
  const answer = JSON.parse(text);
  assert.deepEqual(answer, { object: 'contact_import', id: answer.id });
  assert.deepEqual((await completedImport(resend, answer.id)).counts, { total: 1, created: 1, updated: 0, skipped: 0, failed: 0 });
});

test('webhooks take the contact and topic events', async () => {
  const { resend } = await team('audience-webhooks');
  const endpoint = `https://93.184.216.34/node-audience-${randomBytes(5).toString('hex')}`;
  const events = ['contact.topics.updated', 'topic.created', 'topic.updated', 'topic.deleted'];
  const created = ok(await resend.webhooks.create({ endpoint, events }));
  assert.match(created.id, UUID);
  assert.deepEqual(ok(await resend.webhooks.get(created.id)).events, events);
  ok(await resend.webhooks.remove(created.id));
});

test('the audience belongs to one team, and sending keys may not touch it', async () => {
  const { resend } = await team('audience-owner');
  const segment = ok(await resend.segments.create({ name: 'Mine' }));
  const topic = ok(await resend.topics.create({ name: 'Mine', defaultSubscription: 'opt_in' }));
  const property = ok(await resend.contactProperties.create({ key: 'mine', type: 'string' }));
  const contact = ok(await resend.contacts.create({ email: uniqueAddress('owned') }));

  const { resend: other } = await team('audience-other');
  fails(await other.segments.get(segment.id), 404, 'not_found');
  fails(await other.topics.get(topic.id), 404, 'not_found');
  fails(await other.contactProperties.get(property.id), 404, 'not_found');
  fails(await other.contacts.segments.add({ contactId: contact.id, segmentId: segment.id }), 404, 'not_found');
  fails(await other.contacts.create({ email: uniqueAddress('other'), segments: [{ id: segment.id }] }), 404, 'not_found');
  assert.deepEqual(ok(await other.segments.list()).data, []);

  const apiKey = ok(await resend.apiKeys.create({ name: `node-sending-${suffix()}`, permission: 'sending_access' }));
  const sending = new Resend(apiKey.token);
  fails(await sending.segments.list(), 401, 'restricted_api_key');
  fails(await sending.segments.create({ name: 'Nope' }), 401, 'restricted_api_key');
  fails(await sending.topics.list(), 401, 'restricted_api_key');
  fails(await sending.contactProperties.list(), 401, 'restricted_api_key');
  fails(await sending.contacts.imports.list(), 401, 'restricted_api_key');
  fails(await sending.contacts.segments.list({ contactId: contact.id }), 401, 'restricted_api_key');
  fails(await sending.contacts.topics.list({ id: contact.id }), 401, 'restricted_api_key');
});

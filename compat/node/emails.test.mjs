// Emails through the official Node SDK (npm `resend`): resend.emails.send / get / list /
// update / cancel and resend.batch.send, from a domain the suite verifies without DNS.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Resend } from 'resend';
import { TIMESTAMP, UUID, fails, ok, parseTimestamp, raw, uniqueDomain, verifyWithoutDns } from './helpers.mjs';

const resend = new Resend();

/** The verified domain every test sends from, and its id. */
let domain;
let domainId;

before(async () => {
  domain = uniqueDomain('emails');
  domainId = ok(await resend.domains.create({ name: domain })).id;
  await verifyWithoutDns(domainId);
  assert.equal(ok(await resend.domains.get(domainId)).status, 'verified');
});

const from = () => `Compat Sender <hello@${domain}>`;

/** A subject no other test uses, to find an email again in lists. */
function subject(label) {
  return `node ${label} ${randomBytes(6).toString('hex')}`;
}

/** A minimal valid email. */
function email(label, extra = {}) {
  return { from: from(), to: 'someone@recipient.test', subject: subject(label), text: `Body of ${label}`, ...extra };
}

/** The emails with `subject` among the newest 100 of the team. */
async function listedWithSubject(wanted) {
  const list = ok(await resend.emails.list({ limit: 100 }));
  return list.data.filter((e) => e.subject === wanted);
}

test('emails.send accepts every field and emails.get returns them', async () => {
  const payload = {
    from: from(),
    to: ['alice@recipient.test', 'bob@recipient.test'],
    cc: 'carol@recipient.test',
    bcc: ['dave@recipient.test', 'erin@recipient.test'],
    replyTo: 'replies@recipient.test',
    subject: subject('every field'),
    html: '<p>Hello <strong>there</strong></p>',
    text: 'Hello there',
    headers: { 'X-Entity-Ref-ID': 'ref-123', 'List-Unsubscribe': '<mailto:unsubscribe@recipient.test>' },
    tags: [
      { name: 'category', value: 'welcome' },
      { name: 'user_id', value: 'u-42' },
    ],
  };
  const sent = ok(await resend.emails.send(payload));
  assert.deepEqual(Object.keys(sent), ['id']);
  assert.match(sent.id, UUID);

  const got = ok(await resend.emails.get(sent.id));
  assert.equal(got.object, 'email');
  assert.equal(got.id, sent.id);
  assert.equal(got.from, payload.from);
  assert.deepEqual(got.to, payload.to);
  assert.deepEqual(got.cc, ['carol@recipient.test']);
  assert.deepEqual(got.bcc, payload.bcc);
  assert.deepEqual(got.reply_to, ['replies@recipient.test']);
  assert.equal(got.subject, payload.subject);
  assert.equal(got.html, payload.html);
  assert.equal(got.text, payload.text);
  assert.deepEqual(got.tags, payload.tags);
  assert.equal(got.last_event, 'sent');
  assert.equal(got.scheduled_at, null);
  assert.equal(got.message_id, `<${sent.id}@mail.herald.test>`);
  assert.match(got.created_at, TIMESTAMP);
  const age = Date.now() - parseTimestamp(got.created_at).getTime();
  assert.ok(age >= -5_000 && age < 60_000, `created_at ${got.created_at} is now`);
});

test('emails.send takes `to` as one string; absent cc, bcc and reply_to read as null', async () => {
  const payload = email('one recipient', { to: 'single@recipient.test', html: '<p>only html</p>', text: undefined });
  const sent = ok(await resend.emails.send(payload));
  const got = ok(await resend.emails.get(sent.id));
  assert.deepEqual(got.to, ['single@recipient.test']);
  assert.equal(got.cc, null);
  assert.equal(got.bcc, null);
  assert.equal(got.reply_to, null);
  assert.equal(got.html, '<p>only html</p>');
  assert.equal(got.text, null);
  assert.equal(got.last_event, 'sent');
});

test('POST /emails answers 200 with only the id on the wire', async () => {
  const response = await raw('POST', '/emails', { body: email('wire') });
  assert.equal(response.status, 200, response.text);
  assert.match(response.headers.get('content-type'), /^application\/json/);
  assert.deepEqual(Object.keys(response.json), ['id']);
  assert.match(response.json.id, UUID);
});

test('attachments: Buffer, base64 string and inline (contentId) content are accepted', async () => {
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
    'base64',
  );
  const payload = email('attachments', {
    html: '<p>Logo: <img src="cid:logo-1" alt="logo"></p>',
    attachments: [
      // The SDK turns binary content into base64 before sending.
      { filename: 'buffer.txt', content: Buffer.from('hello from a Buffer\n') },
      { filename: 'uint8.bin', content: new Uint8Array([0, 1, 2, 253, 254, 255]) },
      { filename: 'base64.csv', content: Buffer.from('a,b\n1,2\n').toString('base64'), contentType: 'text/csv' },
      { filename: 'logo.png', content: png, contentType: 'image/png', contentId: 'logo-1' },
    ],
  });
  const sent = ok(await resend.emails.send(payload));
  assert.match(sent.id, UUID);
  const got = ok(await resend.emails.get(sent.id));
  assert.equal(got.subject, payload.subject);
  assert.equal(got.html, payload.html);
  assert.equal(got.last_event, 'sent');
});

test('an attachment without content or path gets 422 invalid_attachment', async () => {
  const payload = email('bad attachment', { attachments: [{ filename: 'empty.txt' }] });
  fails(await resend.emails.send(payload), 422, 'invalid_attachment');
});

test('the same Idempotency-Key and payload send once; another payload gets 409', async () => {
  const idempotencyKey = `node-${randomUUID()}`;
  const payload = email('idempotent');
  const first = ok(await resend.emails.send(payload, { idempotencyKey }));
  const second = ok(await resend.emails.send(payload, { idempotencyKey }));
  assert.equal(second.id, first.id, 'the replay answers the first id');
  assert.equal((await listedWithSubject(payload.subject)).length, 1, 'one email was sent');

  const other = { ...payload, subject: subject('idempotent other') };
  fails(await resend.emails.send(other, { idempotencyKey }), 409, 'invalid_idempotent_request');
  assert.equal((await listedWithSubject(other.subject)).length, 0, 'the other payload was not sent');

  // Another key sends again.
  const third = ok(await resend.emails.send(payload, { idempotencyKey: `node-${randomUUID()}` }));
  assert.notEqual(third.id, first.id);
});

test('batch.send sends every email and answers their ids in order', async () => {
  const emails = [email('batch 0'), email('batch 1', { to: ['x@recipient.test', 'y@recipient.test'] }), email('batch 2')];
  const result = ok(await resend.batch.send(emails));
  assert.ok(Array.isArray(result.data));
  assert.equal(result.data.length, 3);
  assert.equal(result.errors, undefined, 'strict mode lists no errors');
  const ids = result.data.map((d) => d.id);
  for (const id of ids) assert.match(id, UUID);
  assert.equal(new Set(ids).size, 3);
  for (const [i, id] of ids.entries()) {
    const got = ok(await resend.emails.get(id));
    assert.equal(got.subject, emails[i].subject);
    assert.equal(got.last_event, 'sent');
  }
  assert.deepEqual(ok(await resend.emails.get(ids[1])).to, ['x@recipient.test', 'y@recipient.test']);
});

test('batch.send in strict mode refuses the whole batch for one invalid email', async () => {
  const emails = [email('strict 0'), email('strict 1', { to: 'not-an-address' }), email('strict 2')];
  fails(await resend.batch.send(emails), 422, 'validation_error');
  fails(await resend.batch.send(emails, { batchValidation: 'strict' }), 422, 'validation_error');
  for (const e of emails) assert.equal((await listedWithSubject(e.subject)).length, 0, 'nothing was sent');
});

test("batch.send with batchValidation: 'permissive' sends the valid emails and lists the errors", async () => {
  const emails = [email('permissive 0'), email('permissive 1', { to: 'not-an-address' }), email('permissive 2')];
  const result = ok(await resend.batch.send(emails, { batchValidation: 'permissive' }));
  assert.equal(result.data.length, 2);
  for (const d of result.data) assert.match(d.id, UUID);
  assert.ok(Array.isArray(result.errors));
  assert.equal(result.errors.length, 1);
  assert.equal(result.errors[0].index, 1);
  assert.equal(typeof result.errors[0].message, 'string');
  assert.ok(result.errors[0].message.length > 0);
  assert.equal(ok(await resend.emails.get(result.data[0].id)).subject, emails[0].subject);
  assert.equal(ok(await resend.emails.get(result.data[1].id)).subject, emails[2].subject);
  assert.equal((await listedWithSubject(emails[1].subject)).length, 0);
});

test('batch.send honours an Idempotency-Key', async () => {
  const idempotencyKey = `node-batch-${randomUUID()}`;
  const emails = [email('batch idem 0'), email('batch idem 1')];
  const first = ok(await resend.batch.send(emails, { idempotencyKey }));
  const again = ok(await resend.batch.send(emails, { idempotencyKey }));
  assert.deepEqual(again.data, first.data);
  assert.equal((await listedWithSubject(emails[0].subject)).length, 1);
  fails(await resend.batch.send([emails[0]], { idempotencyKey }), 409, 'invalid_idempotent_request');
});

test('scheduledAt in natural language ("in 1 hour") schedules the email', async () => {
  // Resend documents natural-language times ("in 1 min", "tomorrow at 9am") besides ISO 8601.
  const sent = ok(await resend.emails.send(email('natural language', { scheduledAt: 'in 1 hour' })));
  const scheduled = ok(await resend.emails.get(sent.id));
  assert.equal(scheduled.last_event, 'scheduled');
  assert.notEqual(scheduled.scheduled_at, null);
  const inAnHour = parseTimestamp(scheduled.scheduled_at).getTime() - Date.now();
  assert.ok(Math.abs(inAnHour - 3_600_000) < 60_000, `scheduled_at ${scheduled.scheduled_at} is in an hour`);
  ok(await resend.emails.cancel(sent.id));
});

test('a scheduled email can be rescheduled and canceled', async () => {
  const at = new Date(Date.now() + 3_600_000);
  const sent = ok(await resend.emails.send(email('scheduled', { scheduledAt: at.toISOString() })));
  const scheduled = ok(await resend.emails.get(sent.id));
  assert.equal(scheduled.last_event, 'scheduled');
  assert.notEqual(scheduled.scheduled_at, null);
  assert.ok(Math.abs(parseTimestamp(scheduled.scheduled_at).getTime() - at.getTime()) < 1_000, scheduled.scheduled_at);

  const target = new Date(Date.now() + 2 * 3_600_000);
  const updated = ok(await resend.emails.update({ id: sent.id, scheduledAt: target.toISOString() }));
  assert.deepEqual({ object: updated.object, id: updated.id }, { object: 'email', id: sent.id });
  const moved = ok(await resend.emails.get(sent.id));
  assert.equal(moved.last_event, 'scheduled');
  assert.ok(Math.abs(parseTimestamp(moved.scheduled_at).getTime() - target.getTime()) < 1_000, moved.scheduled_at);

  const canceled = ok(await resend.emails.cancel(sent.id));
  assert.deepEqual({ object: canceled.object, id: canceled.id }, { object: 'email', id: sent.id });
  assert.equal(ok(await resend.emails.get(sent.id)).last_event, 'canceled');

  fails(await resend.emails.cancel(sent.id), 422, 'validation_error');
  fails(await resend.emails.update({ id: sent.id, scheduledAt: target.toISOString() }), 422, 'validation_error');
});

test('an email sent now cannot be canceled or rescheduled', async () => {
  const sent = ok(await resend.emails.send(email('not scheduled')));
  fails(await resend.emails.cancel(sent.id), 422, 'validation_error');
  const later = new Date(Date.now() + 3_600_000).toISOString();
  fails(await resend.emails.update({ id: sent.id, scheduledAt: later }), 422, 'validation_error');
  assert.equal(ok(await resend.emails.get(sent.id)).last_event, 'sent');
});

test('emails.list returns the list envelope, newest first, without bodies', async () => {
  const first = ok(await resend.emails.send(email('list a', { html: '<p>a</p>' })));
  const second = ok(await resend.emails.send(email('list b', { html: '<p>b</p>', cc: 'cc@recipient.test' })));
  const list = ok(await resend.emails.list());
  assert.equal(list.object, 'list');
  assert.equal(typeof list.has_more, 'boolean');
  assert.ok(Array.isArray(list.data));
  assert.ok(list.data.length <= 20, 'the default page holds at most 20');
  const ids = list.data.map((e) => e.id);
  const a = ids.indexOf(first.id);
  const b = ids.indexOf(second.id);
  assert.ok(a >= 0 && b >= 0, 'both new emails are listed');
  assert.ok(b < a, 'the newer email comes first');

  const item = list.data[b];
  const full = ok(await resend.emails.get(second.id));
  for (const field of ['id', 'to', 'from', 'created_at', 'subject', 'bcc', 'cc', 'reply_to', 'last_event', 'scheduled_at', 'message_id']) {
    assert.ok(field in item, `list item has ${field}`);
    assert.deepEqual(item[field], full[field], field);
  }
  for (const field of ['html', 'text', 'tags', 'object']) assert.equal(item[field], undefined, `list item has no ${field}`);

  const page = ok(await resend.emails.list({ limit: 1 }));
  assert.equal(page.data.length, 1);
  assert.equal(page.has_more, true);
  const next = ok(await resend.emails.list({ limit: 1, after: page.data[0].id }));
  assert.equal(next.data.length, 1);
  assert.notEqual(next.data[0].id, page.data[0].id);
});

test('emails.get of an unknown id gets 404 not_found', async () => {
  fails(await resend.emails.get(randomUUID()), 404, 'not_found');
  fails(await resend.emails.cancel(randomUUID()), 404, 'not_found');
});

test('sending from an unverified or unknown domain gets 403 validation_error', async () => {
  const unverified = uniqueDomain('unverified');
  ok(await resend.domains.create({ name: unverified }));
  const error = fails(await resend.emails.send(email('unverified', { from: `Someone <a@${unverified}>` })), 403, 'validation_error');
  assert.ok(error.message.includes(unverified), error.message);
  fails(await resend.emails.send(email('unknown', { from: `a@${uniqueDomain('unknown')}` })), 403, 'validation_error');
});

test('a missing subject gets 422 missing_required_field', async () => {
  const { subject: _, ...payload } = email('no subject');
  const error = fails(await resend.emails.send(payload), 422, 'missing_required_field');
  assert.match(error.message, /subject/);
  const { to: __, ...noTo } = email('no to');
  fails(await resend.emails.send(noTo), 422, 'missing_required_field');
});

test('a header value with CR or LF gets 422 validation_error', async () => {
  for (const value of ['a\r\nBcc: victim@recipient.test', 'line\nbreak', 'carriage\rreturn']) {
    const payload = email('header injection', { headers: { 'X-Custom': value } });
    const error = fails(await resend.emails.send(payload), 422, 'validation_error');
    assert.match(error.message, /headers/);
  }
});

test('a sending_access key sends from its domain but cannot read emails', async () => {
  const key = ok(
    await resend.apiKeys.create({
      name: `node-emails-sending-${randomBytes(4).toString('hex')}`,
      permission: 'sending_access',
      domain_id: domainId,
    }),
  );
  const client = new Resend(key.token);
  const sent = ok(await client.emails.send(email('sending key')));
  ok(await client.batch.send([email('sending key batch')]));
  fails(await client.emails.get(sent.id), 401, 'restricted_api_key');
  fails(await client.emails.list(), 401, 'restricted_api_key');
  assert.equal(ok(await resend.emails.get(sent.id)).subject.startsWith('node sending key'), true);
  ok(await resend.apiKeys.remove(key.id));
});

// Broadcasts through the official Node SDK (npm `resend`): resend.broadcasts.create, get,
// update, list, send (now and `scheduledAt`), cancel, duplicate, remove, recipients and
// clickedLinks. A draft's every field and herald's own `progress`; a scheduled broadcast
// `queued` until canceled; `send: true` to a segment expanded into one personalised email
// per subscribed contact (`GET /emails/{id}` shows each, tagged `broadcast_id`); the
// refusals with their statuses and names. Then, on the delivering herald (as
// react-sink.test.mjs), each contact's message read from the suite's SMTP sink: its own
// merge-tag values, the preview text and `List-Unsubscribe`.
//
// Everything runs in the operator's team: a broadcast's `from` must be on a verified domain
// even as a draft, and only the operator's key may mark one verified without DNS. Every
// segment, contact and topic is the test's own; lists are searched page by page.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import PostalMime from 'postal-mime';
import { Resend } from 'resend';

import { API_KEY, UUID, fails, ok, raw, uniqueDomain, verifyWithoutDns } from './helpers.mjs';

const DELIVERING = process.env.HERALD_DELIVERING_URL;
const SINK = process.env.HERALD_SINK_DIR;
const WAIT_MS = 30_000;
const SINK_SKIP = !(DELIVERING && SINK) && 'run by scripts/compat';

/** The suite's operator client. */
const resend = new Resend();
/** A new domain of `client`'s (the operator's) team, verified without DNS on `base`. */
async function verifiedDomain(client, base) {
  const name = uniqueDomain('broadcasts');
  const { id } = ok(await client.domains.create({ name }));
  if (base === undefined) {
    await verifyWithoutDns(id);
    return name;
  }
  const verified = await fetch(`${base}/domains/${id}/verify`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ skip_dns: true }),
  });
  assert.equal(verified.status, 200, await verified.text());
  return name;
}
let domain;
before(async () => {
  domain = await verifiedDomain(resend);
});
const from = () => `Compat News <news@${domain}>`;

const suffix = () => randomBytes(4).toString('hex');
/** An address no other test uses (lower case: a local part is compared as written). */
const address = (label) => `node-bc-${label}-${suffix()}@inbox.test`;
const escapeHtml = (text) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');

/** herald's `progress` of a broadcast that has not been sent. */
const DRAFT_PROGRESS = { status: 'draft', total: 0, sent: 0, unsubscribed: 0, suppressed: 0, failed: 0, canceled: 0, finished_at: null };

/** A broadcast timestamp as an instant (ISO 8601 `…Z`, or Resend's `… +00` style). */
function instant(text) {
  assert.match(text, /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00)$/);
  return new Date(text.replace(' ', 'T').replace(/\+00$/, 'Z')).getTime();
}
function assertRecent(text) {
  const age = Date.now() - instant(text);
  assert.ok(age > -5_000 && age < 60_000, `${text} is not now`);
}

/** A new segment of `client`'s team holding a new contact for each of `people`. */
async function segmentOf(client, people) {
  const segment = ok(await client.segments.create({ name: `Broadcast ${suffix()}` }));
  const ids = {};
  for (const person of people) {
    ids[person.email] = ok(await client.contacts.create({ ...person, segments: [{ id: segment.id }] })).id;
  }
  return { segmentId: segment.id, ids };
}

/** Polls `probe` until it returns something truthy (≤ 30 s). */
async function until(what, probe) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (value) return value;
    assert.ok(Date.now() < deadline, `${what} within ${WAIT_MS} ms`);
    await sleep(200);
  }
}

/** The broadcast once herald's worker has sent it (progress.status `sent`). */
const finished = (client, id) =>
  until(`broadcast ${id} sent`, async () => {
    const broadcast = ok(await client.broadcasts.get(id));
    assert.notEqual(broadcast.progress.status, 'canceled', JSON.stringify(broadcast.progress));
    return broadcast.progress.status === 'sent' && broadcast;
  });

/** The list item of broadcast `id`, searched page by page (the operator's team has many). */
async function listed(id) {
  for (let after; ; ) {
    const page = ok(await resend.broadcasts.list(after ? { limit: 100, after } : { limit: 100 }));
    assert.equal(page.object, 'list');
    const found = page.data.find((b) => b.id === id);
    if (found) return found;
    assert.ok(page.has_more && page.data.length > 0, `broadcast ${id} is not listed`);
    after = page.data.at(-1).id;
  }
}

test('a draft: create, get, update, list; scheduled, canceled, duplicated, removed', async () => {
  const { segmentId } = await segmentOf(resend, [{ email: address('draft') }]);
  const topicId = ok(await resend.topics.create({ name: `Broadcast ${suffix()}`, defaultSubscription: 'opt_in' })).id;
  const name = `Launch ${suffix()}`;
  const draft = {
    subject: 'Hello {{{FIRST_NAME|there}}}',
    html: '<p>Hi {{{FIRST_NAME|there}}}</p>',
    text: 'Hi {{{contact.first_name|there}}}',
  };
  const created = ok(
    await resend.broadcasts.create({ segmentId, from: from(), name, replyTo: 'reply@example.test', previewText: 'Out now', topicId, ...draft }),
  );
  assert.deepEqual(created, { object: 'broadcast', id: created.id });
  assert.match(created.id, UUID);
  const { id } = created;

  const { created_at: createdAt, ...got } = ok(await resend.broadcasts.get(id));
  assertRecent(createdAt);
  assert.deepEqual(got, {
    object: 'broadcast', id, name, audience_id: segmentId, segment_id: segmentId, from: from(), ...draft,
    reply_to: ['reply@example.test'], preview_text: 'Out now', status: 'draft', scheduled_at: null, sent_at: null,
    topic_id: topicId, progress: DRAFT_PROGRESS,
  });

  // The SDK ignores the status code: 201, raw. `audience_id` (deprecated) names the segment
  // too; without a name, the subject names the broadcast.
  const onWire = await raw('POST', '/broadcasts', { body: { audience_id: segmentId, from: from(), subject: 'Wire', text: 'Wire' } });
  assert.equal(onWire.status, 201, onWire.text);
  assert.deepEqual(onWire.json, { object: 'broadcast', id: onWire.json.id });
  const wire = ok(await resend.broadcasts.get(onWire.json.id));
  assert.deepEqual(
    [wire.segment_id, wire.name, wire.html, wire.reply_to, wire.preview_text, wire.topic_id],
    [segmentId, 'Wire', null, null, null, null],
  );

  const renamed = `${name} v2`;
  const replyTo = ['a@example.test', 'b@example.test'];
  const changes = { name: renamed, subject: 'Updated', html: '<p>New</p>', replyTo, previewText: 'Still out' };
  assert.deepEqual(ok(await resend.broadcasts.update(id, changes)), { object: 'broadcast', id });
  const updated = ok(await resend.broadcasts.get(id));
  assert.deepEqual(
    [updated.name, updated.subject, updated.html, updated.text, updated.reply_to, updated.preview_text, updated.topic_id],
    [renamed, 'Updated', '<p>New</p>', draft.text, replyTo, 'Still out', topicId],
  );

  const { created_at: listedAt, ...summary } = await listed(id);
  assert.equal(listedAt, createdAt);
  assert.deepEqual(summary, {
    id, name: renamed, audience_id: segmentId, segment_id: segmentId, status: 'draft', scheduled_at: null, sent_at: null,
    topic_id: topicId, progress: DRAFT_PROGRESS,
  });
  const one = ok(await resend.broadcasts.list({ limit: 1 }));
  assert.deepEqual([one.data.length, one.has_more], [1, true]);
  assert.deepEqual(ok(await resend.broadcasts.remove(wire.id)), { object: 'broadcast', id: wire.id, deleted: true });

  // Scheduled: Resend's `queued`, herald's `scheduled`; no longer a draft to change.
  assert.deepEqual(ok(await resend.broadcasts.send(id, { scheduledAt: 'in 1 hour' })), { object: 'broadcast', id });
  const scheduled = ok(await resend.broadcasts.get(id));
  assert.equal(scheduled.status, 'queued');
  assert.equal(scheduled.progress.status, 'scheduled');
  const ahead = instant(scheduled.scheduled_at) - Date.now();
  assert.ok(ahead > 3_540_000 && ahead < 3_660_000, scheduled.scheduled_at);
  assert.equal(scheduled.sent_at, null);
  assert.equal((await listed(id)).status, 'queued');
  fails(await resend.broadcasts.update(id, { name: 'Too late' }), 422, 'validation_error');
  fails(await resend.broadcasts.remove(id), 422, 'validation_error');
  fails(await resend.broadcasts.send(id), 422, 'validation_error');

  // Canceled before its time: no email was made. Resend's `status` has no "canceled": with
  // nothing sent it reads `draft`; herald's progress says `canceled`.
  assert.deepEqual(ok(await resend.broadcasts.cancel(id)), { object: 'broadcast', id, canceled: 0 });
  const canceled = ok(await resend.broadcasts.get(id));
  assert.equal(canceled.status, 'draft');
  assert.equal(canceled.progress.status, 'canceled');
  assert.equal(canceled.progress.canceled, 0);
  assertRecent(canceled.progress.finished_at);
  fails(await resend.broadcasts.cancel(id), 422, 'validation_error');
  fails(await resend.broadcasts.remove(id), 422, 'validation_error');
  fails(await resend.broadcasts.send(id), 422, 'validation_error');

  // A duplicate is a new draft with the same content, named "<name> (copy)".
  const copy = ok(await resend.broadcasts.duplicate(id));
  assert.deepEqual(copy, { object: 'broadcast', id: copy.id });
  assert.notEqual(copy.id, id);
  const dup = ok(await resend.broadcasts.get(copy.id));
  assert.equal(dup.name, `${renamed} (copy)`);
  assert.deepEqual([dup.status, dup.scheduled_at, dup.sent_at, dup.progress], ['draft', null, null, DRAFT_PROGRESS]);
  for (const field of ['segment_id', 'from', 'subject', 'html', 'text', 'reply_to', 'preview_text', 'topic_id']) {
    assert.deepEqual(dup[field], updated[field], field);
  }
  assert.deepEqual(ok(await resend.broadcasts.remove(copy.id)), { object: 'broadcast', id: copy.id, deleted: true });
  fails(await resend.broadcasts.get(copy.id), 404, 'not_found');
  fails(await resend.broadcasts.get(randomUUID()), 404, 'not_found');
  fails(await resend.broadcasts.get('not-a-broadcast'), 422, 'invalid_parameter');
});

test('send: true reaches the subscribed contacts, personalised; recipients and clickedLinks', async () => {
  const [ann, bo, cy] = [address('ann'), address('bo'), address('cy')];
  const { segmentId, ids } = await segmentOf(resend, [
    { email: ann, firstName: 'Ann & Co' },
    { email: bo },
    { email: cy, firstName: 'Cy', unsubscribed: true },
  ]);
  const personalised = { subject: 'Hi {{{FIRST_NAME|there}}}', html: '<p>Hi {{{FIRST_NAME|there}}}</p>' };
  const { id } = ok(await resend.broadcasts.create({ segmentId, from: from(), ...personalised, send: true }));

  const sent = await finished(resend, id);
  assert.equal(sent.status, 'sent');
  assertRecent(sent.sent_at);
  const { finished_at: finishedAt, ...progress } = sent.progress;
  assertRecent(finishedAt);
  assert.deepEqual(progress, { status: 'sent', total: 3, sent: 2, unsubscribed: 1, suppressed: 0, failed: 0, canceled: 0 });
  assert.equal((await listed(id)).status, 'sent');

  const recipients = ok(await resend.broadcasts.recipients(id, { type: 'sent' }));
  assert.equal(recipients.object, 'list');
  assert.equal(recipients.has_more, false);
  assert.deepEqual(recipients.data.map((r) => r.email).sort(), [ann, bo].sort());
  for (const [email, name] of [[ann, 'Ann & Co'], [bo, 'there']]) {
    const recipient = recipients.data.find((r) => r.email === email);
    assert.deepEqual(Object.keys(recipient).sort(), ['contact_id', 'email', 'email_id', 'id', 'last_event']);
    assert.deepEqual([recipient.id, recipient.contact_id, recipient.last_event], [ids[email], ids[email], 'sent']);
    assert.match(recipient.email_id, UUID);
    // One ordinary email per contact: the merge tags filled in (HTML-escaped in `html` only).
    const record = ok(await resend.emails.get(recipient.email_id));
    assert.deepEqual(record.to, [email]);
    assert.equal(record.subject, `Hi ${name}`);
    assert.equal(record.html, `<p>Hi ${escapeHtml(name)}</p>`);
    assert.deepEqual(record.tags, [{ name: 'broadcast_id', value: id }]);
  }
  const skipped = ok(await resend.broadcasts.recipients(id, { type: 'unsubscribed' }));
  assert.deepEqual(skipped.data, [{ id: ids[cy], contact_id: ids[cy], email: cy, email_id: null, last_event: null }]);
  assert.deepEqual(ok(await resend.broadcasts.recipients(id, { type: 'suppressed' })).data, []);
  const filtered = ok(await resend.broadcasts.recipients(id, { type: 'sent', email: ann.split('@')[0] }));
  assert.deepEqual(filtered.data.map((r) => r.email), [ann]);
  const first = ok(await resend.broadcasts.recipients(id, { type: 'sent', limit: 1 }));
  assert.deepEqual([first.data.length, first.has_more], [1, true]);
  const second = ok(await resend.broadcasts.recipients(id, { type: 'sent', limit: 1, after: first.data[0].id }));
  assert.equal(second.has_more, false);
  assert.deepEqual([first.data[0].email, second.data[0].email].sort(), [ann, bo].sort());
  assert.deepEqual(ok(await resend.broadcasts.clickedLinks(id)), { object: 'list', has_more: false, data: [] });

  fails(await resend.broadcasts.cancel(id), 422, 'validation_error');
  fails(await resend.broadcasts.remove(id), 422, 'validation_error');
  fails(await resend.broadcasts.update(id, { subject: 'Again' }), 422, 'validation_error');
});

test('refusals: unknown segment, unverified sender, unknown merge tag, empty segment, scheduledAt without send, missing fields', async () => {
  const { segmentId } = await segmentOf(resend, [{ email: address('refusals') }]);
  const empty = ok(await resend.segments.create({ name: `Empty ${suffix()}` })).id;
  const base = { segmentId, from: from(), subject: 'Hello', html: '<p>Hello</p>' };
  const refused = async (result, text, name = 'validation_error') => {
    const error = fails(await result, 422, name);
    assert.ok(error.message.includes(text), `${JSON.stringify(text)} not in ${error.message}`);
  };
  await refused(resend.broadcasts.create({ ...base, segmentId: randomUUID() }), 'segment');
  const unverified = uniqueDomain('unverified');
  ok(await resend.domains.create({ name: unverified }));
  await refused(resend.broadcasts.create({ ...base, from: `News <news@${unverified}>` }), 'not verified');
  await refused(resend.broadcasts.create({ ...base, from: `news@${uniqueDomain('nowhere')}` }), 'not verified');
  const tag = `{{{company_${suffix()}}}}`;
  await refused(resend.broadcasts.create({ ...base, html: `<p>Hi ${tag}</p>` }), tag);
  await refused(resend.broadcasts.create({ ...base, subject: `For ${tag}` }), tag);
  ok(await resend.broadcasts.create({ ...base, html: `<p>Hi ${tag.replace('}}}', '|friend}}}')}</p>` }));
  await refused(resend.broadcasts.create({ ...base, segmentId: empty, send: true }), 'no contacts');
  const draft = ok(await resend.broadcasts.create({ ...base, segmentId: empty }));
  await refused(resend.broadcasts.send(draft.id), 'no contacts');
  await refused(resend.broadcasts.create({ ...base, scheduledAt: 'in 1 hour' }), 'scheduled_at');
  await refused(resend.broadcasts.create({ ...base, send: true, scheduledAt: '2020-01-01T00:00:00Z' }), 'past');
  await refused(resend.broadcasts.create({ ...base, subject: undefined }), 'subject', 'missing_required_field');
  await refused(resend.broadcasts.create({ ...base, segmentId: undefined }), 'segment_id', 'missing_required_field');
  await refused(resend.broadcasts.create({ ...base, html: undefined }), 'html', 'missing_required_field');
  await refused(resend.broadcasts.update(draft.id, { from: `News <news@${unverified}>` }), 'not verified');
  await refused(resend.broadcasts.update(draft.id, { segmentId: randomUUID() }), 'segment');
  await refused(resend.broadcasts.update(draft.id, { text: `Hi ${tag}` }), tag);
  fails(await resend.broadcasts.cancel(draft.id), 422, 'validation_error');
  fails(await resend.broadcasts.recipients(randomUUID(), { type: 'sent' }), 404, 'not_found');
});

/** The message the sink received for `recipient`, parsed, once it has arrived. */
async function delivered(recipient) {
  return until(`a message for ${recipient} in the sink`, async () => {
    for (const name of await readdir(SINK)) {
      if (!name.endsWith('.json')) continue;
      const envelope = JSON.parse(await readFile(join(SINK, name), 'utf8'));
      if (envelope.rcpt_to.includes(recipient)) {
        return PostalMime.parse(await readFile(join(SINK, name.replace(/\.json$/, '.eml'))));
      }
    }
    return null;
  });
}

test('on a delivering herald each contact gets their own message, with List-Unsubscribe', { skip: SINK_SKIP }, async () => {
  const client = new Resend(API_KEY, { baseUrl: DELIVERING });
  const name = await verifiedDomain(client, DELIVERING);
  const [ann, bo] = [address('sink-ann'), address('sink-bo')];
  const { segmentId } = await segmentOf(client, [{ email: ann, firstName: 'Ann' }, { email: bo }]);
  const html = '<html><body><p>Hi {{{FIRST_NAME|there}}}</p><p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a></p></body></html>';
  const { id } = ok(
    await client.broadcasts.create({
      segmentId, from: `News <news@${name}>`, subject: 'News for {{{FIRST_NAME|you}}}', html,
      text: 'Hi {{{contact.first_name|friend}}}', previewText: 'This week', send: true,
    }),
  );
  await finished(client, id);

  for (const [to, first] of [[ann, 'Ann'], [bo, null]]) {
    const message = await delivered(to);
    assert.equal(message.subject, `News for ${first ?? 'you'}`);
    assert.ok(message.html.includes(`<p>Hi ${first ?? 'there'}</p>`), message.html);
    assert.match(message.html, /<body><div style="display:none[^"]*" aria-hidden="true">This week<\/div><p>Hi/);
    assert.equal(message.text.trim(), `Hi ${first ?? 'friend'}`);
    const header = message.headers.filter((h) => h.key === 'list-unsubscribe');
    assert.equal(header.length, 1, JSON.stringify(message.headers));
    const url = /^<([^<>\s]+)>$/.exec(header[0].value.trim())?.[1];
    assert.ok(url?.startsWith(`${DELIVERING}/unsubscribe/`), header[0].value);
    const hrefs = [...message.html.matchAll(/href="([^"]*)"/g)].map((m) => m[1].replaceAll('&amp;', '&'));
    assert.deepEqual(hrefs, [url], 'the body links the header URL');
  }
  const reached = await until('both recipients delivered', async () => {
    const page = ok(await client.broadcasts.recipients(id, { type: 'delivered' }));
    return page.data.length === 2 && page;
  });
  assert.deepEqual(reached.data.map((r) => r.email).sort(), [ann, bo].sort());
  assert.ok(reached.data.every((r) => r.last_event === 'delivered'), JSON.stringify(reached.data));
});

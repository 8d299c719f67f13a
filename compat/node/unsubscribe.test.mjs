// Topics and unsubscribing through the official Node SDK (npm `resend`): `topicId` on
// emails.send and batch.send (herald's `topic_id`), shown again by emails.get; an unknown
// topic or another team's refused; recipients who opted out of the topic
// (contacts.topics.update) or unsubscribed left out, and a send left with nobody refused.
// Then the link, followed into the mailbox as react-sink.test.mjs does (the delivering
// herald and the suite's SMTP sink): `List-Unsubscribe` (no `List-Unsubscribe-Post` on an
// http public_url), a GET that shows a page and changes nothing, RFC 8058's one-click POST
// (out of the topic, or unsubscribed from everything for a `{{{RESEND_UNSUBSCRIBE_URL}}}`
// email), and a forged token's 404. Sends run in the operator's team, the only one whose
// domains the suite can verify without DNS; every topic and address is the test's own.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

import PostalMime from 'postal-mime';
import { Resend } from 'resend';

import { API_KEY, fails, ok, raw, uniqueDomain, verifyWithoutDns } from './helpers.mjs';

const DELIVERING = process.env.HERALD_DELIVERING_URL;
const SINK = process.env.HERALD_SINK_DIR;
const WAIT_MS = 30_000;
const SINK_SKIP = !(DELIVERING && SINK) && 'run by scripts/compat';

const suffix = () => randomBytes(5).toString('hex');
/** An address no other test uses (lower case: a local part is compared as written). */
const address = (label) => `node-unsub-${label}-${suffix()}@inbox.test`;

/** A domain of the operator's team verified without DNS on `base`, and a `from` on it. */
async function sender(resend, base) {
  const name = uniqueDomain('unsub');
  const { id } = ok(await resend.domains.create({ name }));
  if (base === undefined) {
    await verifyWithoutDns(id);
  } else {
    const verified = await fetch(`${base}/domains/${id}/verify`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ skip_dns: true }),
    });
    assert.equal(verified.status, 200, await verified.text());
  }
  return `News <news@${name}>`;
}

/** A topic of the caller's team. */
async function topic(resend, defaultSubscription) {
  return ok(await resend.topics.create({ name: `Unsub ${suffix()}`, defaultSubscription })).id;
}

/** The contact's subscription to `topicId`, as contacts.topics.list shows it. */
async function subscription(resend, email, topicId) {
  const list = ok(await resend.contacts.topics.list({ email }));
  assert.equal(list.object, 'list');
  const found = list.data.find((t) => t.id === topicId);
  assert.ok(found, `topic ${topicId} missing from ${JSON.stringify(list.data)}`);
  return found.subscription;
}

/** Asserts an SDK result is the refusal of a send whose recipients all opted out. */
function refusedOptedOut(result) {
  const error = fails(result, 422, 'validation_error');
  assert.match(error.message, /opted out/, error.message);
}

/** The message the sink received for `recipient`, parsed, once it has arrived. */
async function delivered(recipient) {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    for (const name of await readdir(SINK)) {
      if (!name.endsWith('.json')) continue;
      const envelope = JSON.parse(await readFile(join(SINK, name), 'utf8'));
      if (envelope.rcpt_to.includes(recipient)) {
        return PostalMime.parse(await readFile(join(SINK, name.replace(/\.json$/, '.eml'))));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`nothing reached the sink for ${recipient} within ${WAIT_MS} ms`);
}

/** The URL in a delivered message's `List-Unsubscribe`, checked to be the delivering herald's. */
function unsubscribeUrl(message) {
  const header = (key) => message.headers.filter((h) => h.key === key);
  const found = header('list-unsubscribe');
  assert.equal(found.length, 1, JSON.stringify(message.headers));
  assert.deepEqual(header('list-unsubscribe-post'), [], 'no one-click header on an http public_url');
  const match = /^<([^<>\s]+)>$/.exec(found[0].value.trim());
  assert.ok(match, found[0].value);
  assert.ok(match[1].startsWith(`${DELIVERING}/unsubscribe/`), match[1]);
  return match[1];
}

/** RFC 8058's one-click POST. */
const oneClick = (url) =>
  fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });

/** A GET of the link: a page, no change; the forged link (an `x` more) a 404 either way. */
async function pageAndForgery(url) {
  const page = await fetch(url);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type'), /^text\/html/);
  assert.match(await page.text(), /<form[^>]*method="post"/);
  const forgedGet = await fetch(`${url}x`);
  assert.equal(forgedGet.status, 404);
  await forgedGet.arrayBuffer();
  const forgedPost = await oneClick(`${url}x`);
  assert.equal(forgedPost.status, 404);
  await forgedPost.arrayBuffer();
}

test('emails.send and batch.send with topicId; emails.get shows topic_id; unknown topics refused', async () => {
  const resend = new Resend();
  const from = await sender(resend);
  const topicId = await topic(resend, 'opt_in');
  const email = (extra = {}) => ({ from, to: address('to'), subject: 'Topic', html: '<p>News</p>', ...extra });

  const sent = ok(await resend.emails.send(email({ topicId })));
  assert.equal(ok(await resend.emails.get(sent.id)).topic_id, topicId);
  const plain = ok(await resend.emails.send(email()));
  assert.equal(ok(await resend.emails.get(plain.id)).topic_id ?? null, null);

  const batch = ok(await resend.batch.send([email({ topicId }), email({ topicId })]));
  assert.equal(batch.data.length, 2);
  for (const { id } of batch.data) assert.equal(ok(await resend.emails.get(id)).topic_id, topicId);

  // Another team's topic is no topic of this one.
  const team = await raw('POST', '/teams', { body: { name: `node-unsub-${suffix()}` } });
  assert.equal(team.status, 201, team.text);
  const foreign = await topic(new Resend(team.json.api_key.token), 'opt_in');
  for (const wrong of [randomUUID(), 'not-a-topic', foreign]) {
    const error = fails(await resend.emails.send(email({ topicId: wrong })), 422, 'validation_error');
    assert.match(error.message, /topic_id/, error.message);
  }
});

test('recipients who opted out of the topic or unsubscribed are left out; nobody left is a 422', async () => {
  const resend = new Resend();
  const from = await sender(resend);
  const topicId = await topic(resend, 'opt_in');
  const send = (to, id = topicId) => resend.emails.send({ from, to, subject: 'Topic', text: 'News', topicId: id });

  const out = address('out');
  const { id: outId } = ok(await resend.contacts.create({ email: out }));
  ok(await resend.contacts.topics.update({ id: outId, topics: [{ id: topicId, subscription: 'opt_out' }] }));
  assert.equal(await subscription(resend, out, topicId), 'opt_out');
  refusedOptedOut(await send(out));
  const gone = address('gone');
  ok(await resend.contacts.create({ email: gone, unsubscribed: true }));
  refusedOptedOut(await send([gone]));

  // A mix: the opted-out and the unsubscribed are dropped, a contact on the topic's default
  // and an address that is no contact (the topic is opt-in by default) receive it.
  const reader = address('reader');
  ok(await resend.contacts.create({ email: reader }));
  const stranger = address('stranger');
  const mixed = ok(await send([out, reader, gone, stranger]));
  const got = ok(await resend.emails.get(mixed.id));
  assert.deepEqual(got.to, [reader, stranger]);
  assert.equal(got.topic_id, topicId);

  // An opt-out topic reaches only the contacts who opted in.
  const optOut = await topic(resend, 'opt_out');
  refusedOptedOut(await send(stranger, optOut));
  refusedOptedOut(await send(reader, optOut));
  ok(await resend.contacts.topics.update({ email: reader, topics: [{ id: optOut, subscription: 'opt_in' }] }));
  const chosen = ok(await send([stranger, reader], optOut));
  assert.deepEqual(ok(await resend.emails.get(chosen.id)).to, [reader]);
});

test('a topic email carries List-Unsubscribe: GET shows a page, one-click opts out of the topic', { skip: SINK_SKIP }, async () => {
  const resend = new Resend(API_KEY, { baseUrl: DELIVERING });
  const from = await sender(resend, DELIVERING);
  const topicId = await topic(resend, 'opt_in');
  const reader = address('topic-link');
  ok(await resend.contacts.create({ email: reader }));
  const sent = ok(await resend.emails.send({ from, to: reader, subject: 'Weekly', html: '<p>News</p>', topicId }));
  assert.equal(ok(await resend.emails.get(sent.id)).topic_id, topicId);

  const url = unsubscribeUrl(await delivered(reader));
  await pageAndForgery(url);
  assert.equal(await subscription(resend, reader, topicId), 'opt_in', 'a GET changes nothing');

  const response = await oneClick(url);
  assert.equal(response.status, 200);
  assert.equal(await response.text(), '');
  assert.equal(await subscription(resend, reader, topicId), 'opt_out');
  assert.equal(ok(await resend.contacts.get({ email: reader })).unsubscribed, false, 'out of the topic only');
  refusedOptedOut(await resend.emails.send({ from, to: reader, subject: 'Weekly', text: 'Again', topicId }));
});

test('{{{RESEND_UNSUBSCRIBE_URL}}} without a topic: the body links the header URL; one-click unsubscribes', { skip: SINK_SKIP }, async () => {
  const resend = new Resend(API_KEY, { baseUrl: DELIVERING });
  const from = await sender(resend, DELIVERING);
  const html = '<p>Hello</p><p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a></p>';
  const contact = address('marker');
  ok(await resend.contacts.create({ email: contact }));
  const stranger = address('marker-new');

  for (const to of [contact, stranger]) {
    const sent = ok(await resend.emails.send({ from, to, subject: 'Hello', html }));
    const record = ok(await resend.emails.get(sent.id));
    assert.equal(record.topic_id ?? null, null);
    assert.ok(record.html.includes('{{{RESEND_UNSUBSCRIBE_URL}}}'), 'the record keeps the email as given');

    const message = await delivered(to);
    const url = unsubscribeUrl(message);
    const hrefs = [...message.html.matchAll(/href="([^"]*)"/g)].map((m) => m[1].replaceAll('&amp;', '&'));
    assert.deepEqual(hrefs, [url]);
    assert.ok(!message.html.includes('RESEND_UNSUBSCRIBE_URL'), message.html);

    await pageAndForgery(url);
    if (to === contact) {
      assert.equal(ok(await resend.contacts.get({ email: to })).unsubscribed, false, 'a GET changes nothing');
    } else {
      fails(await resend.contacts.get({ email: to }), 404, 'not_found');
    }

    const response = await oneClick(url);
    assert.equal(response.status, 200);
    assert.equal(await response.text(), '');
    // The contact is unsubscribed; an address that was no contact becomes one, unsubscribed.
    assert.equal(ok(await resend.contacts.get({ email: to })).unsubscribed, true);
  }
});

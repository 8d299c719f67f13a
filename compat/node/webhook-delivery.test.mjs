// Webhook requests as receivers see them, checked with independent code: the npm
// `standardwebhooks` package (the reference implementation of the scheme) and the Resend
// SDK's own `webhooks.verify`. A receiver on 127.0.0.2 fails the first try of each message
// with a 500; herald retries it with the same id (the suite's herald allows that address and
// retries after 1 s). Then the SDK's event log (`webhooks.events`), replay, and a
// secret rotation during which requests verify with the old and the new secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { Resend } from 'resend';
import { Webhook } from 'standardwebhooks';
import { ok, raw, uniqueDomain, verifyWithoutDns } from './helpers.mjs';

const resend = new Resend();

/** A receiver on loopback: records every request, answers 500 to the first of each id. */
async function receiver() {
  const requests = [];
  const seen = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.statusCode = seen.has(id) ? 200 : 500;
      seen.add(id);
      res.end(res.statusCode === 200 ? 'ok' : 'try again');
    });
  });
  server.listen(0, '127.0.0.2');
  await once(server, 'listening');
  return { server, requests, url: `http://127.0.0.2:${server.address().port}/hook` };
}

/** Waits until `count` requests have arrived, for at most 30 s. */
async function waitFor(requests, count) {
  const deadline = Date.now() + 30_000;
  while (requests.length < count) {
    assert.ok(Date.now() < deadline, `expected ${count} webhook requests within 30 s, got ${requests.length}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The Standard Webhooks headers of a request, as `standardwebhooks` takes them. */
function swHeaders(request) {
  const { headers } = request;
  return {
    'webhook-id': headers['webhook-id'],
    'webhook-timestamp': headers['webhook-timestamp'],
    'webhook-signature': headers['webhook-signature'],
  };
}

/** Verifies a request with the Resend SDK (Svix headers) and returns the payload. */
function sdkVerify(request, secret) {
  return resend.webhooks.verify({
    payload: request.body,
    headers: {
      id: request.headers['svix-id'],
      timestamp: request.headers['svix-timestamp'],
      signature: request.headers['svix-signature'],
    },
    webhookSecret: secret,
  });
}

test('webhook requests verify independently, retries keep their id, and the SDK reads the event log', async (t) => {
  const { server, requests, url } = await receiver();
  t.after(() => server.close());

  const domain = ok(await resend.domains.create({ name: uniqueDomain('hooks') }));
  await verifyWithoutDns(domain.id);
  const webhook = ok(await resend.webhooks.create({ endpoint: url, events: ['email.sent'] }));
  const secret = webhook.signing_secret;
  const sent = ok(
    await resend.emails.send({
      from: `Hooks <hooks@${domain.name}>`,
      to: 'someone@example.com',
      subject: 'webhook signatures',
      text: 'hello',
    }),
  );

  // The first try gets a 500, the retry a 200: the same message twice.
  await waitFor(requests, 2);
  const [first, retry] = requests;
  assert.equal(first.headers['webhook-id'], retry.headers['webhook-id'], 'a retry keeps the message id');
  assert.equal(first.body, retry.body, 'a retry sends the same body');
  for (const request of [first, retry]) {
    assert.equal(request.headers['svix-id'], request.headers['webhook-id']);
    assert.equal(request.headers['content-type'], 'application/json');
    const payload = new Webhook(secret).verify(request.body, swHeaders(request));
    assert.equal(payload.type, 'email.sent');
    assert.equal(payload.data.email_id, sent.id);
    assert.deepEqual(payload.data.to, ['someone@example.com']);
    assert.equal(sdkVerify(request, secret).data.email_id, sent.id);
  }
  assert.throws(() => new Webhook(secret).verify(`${first.body} `, swHeaders(first)), 'a changed body fails');
  const otherSecret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  assert.throws(() => new Webhook(otherSecret).verify(first.body, swHeaders(first)), 'another secret fails');

  // The event log through the SDK: one event, delivered on the second attempt.
  const eventId = first.headers['webhook-id'].replace(/^msg_/, '');
  // The 200 is recorded just after the receiver answers it.
  let events = ok(await resend.webhooks.events.list({ webhookId: webhook.id }));
  for (const deadline = Date.now() + 10_000; events.data[0]?.status !== 'success' && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    events = ok(await resend.webhooks.events.list({ webhookId: webhook.id }));
  }
  assert.equal(events.object, 'list');
  assert.equal(events.data.length, 1);
  assert.deepEqual(Object.keys(events.data[0]).sort(), ['created_at', 'id', 'status', 'type']);
  assert.equal(events.data[0].id, eventId);
  assert.equal(events.data[0].type, 'email.sent');
  assert.equal(events.data[0].status, 'success');
  const event = ok(await resend.webhooks.events.get({ webhookId: webhook.id, eventId }));
  assert.equal(event.object, 'webhook_event');
  assert.equal(event.next_attempt_at, null);
  assert.equal(event.payload.data.email_id, sent.id);
  const attempts = ok(await resend.webhooks.events.attempts.list({ webhookId: webhook.id, eventId }));
  assert.deepEqual(
    attempts.data.map((a) => [a.http_status_code, a.response]),
    [
      [200, 'ok'],
      [500, 'try again'],
    ],
    'attempts newest first',
  );
  const missing = await resend.webhooks.events.get({ webhookId: webhook.id, eventId: '00000000-0000-7000-8000-000000000000' });
  assert.equal(missing.error?.statusCode, 404);

  // Rotation: the new secret is answered once; until the overlap ends, requests carry a
  // signature by each secret, so receivers holding either one verify them.
  const rotated = ok(await resend.webhooks.rotateSigningSecret(webhook.id));
  assert.equal(rotated.object, 'webhook');
  assert.notEqual(rotated.signing_secret, secret);
  const replayed = ok(await resend.webhooks.events.replay({ webhookId: webhook.id, eventId }));
  assert.deepEqual(replayed, { object: 'webhook_event', id: eventId });
  await waitFor(requests, 3);
  const again = requests[2];
  assert.equal(again.headers['webhook-id'], first.headers['webhook-id'], 'a replay keeps the message id');
  assert.equal(again.headers['webhook-signature'].split(' ').length, 2);
  assert.equal(new Webhook(rotated.signing_secret).verify(again.body, swHeaders(again)).data.email_id, sent.id);
  assert.equal(new Webhook(secret).verify(again.body, swHeaders(again)).data.email_id, sent.id);
  assert.equal(sdkVerify(again, rotated.signing_secret).data.email_id, sent.id);
  const current = ok(await resend.webhooks.get(webhook.id));
  assert.equal(current.signing_secret, rotated.signing_secret);

  const response = await raw('GET', `/webhooks/${webhook.id}/events?limit=1`);
  assert.equal(response.status, 200, response.text);
});

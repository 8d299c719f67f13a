// Request logs through the official Node SDK (npm `resend`): resend.logs.list / get. The
// bodies come back as the JSON objects that were sent and answered (Resend's shape), with
// secrets redacted, never as strings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Resend } from 'resend';
import { UUID, ok } from './helpers.mjs';

const resend = new Resend();

/** Polls until `find` returns something: logs are written just after the answer. */
async function eventually(find) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = await find();
    if (found) return found;
    assert.ok(Date.now() < deadline, 'the request was never logged');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('logs.get answers request and response bodies as objects, secrets redacted', async () => {
  const name = `node-logs-${randomBytes(4).toString('hex')}`;
  const key = ok(await resend.apiKeys.create({ name }));
  // Other test files create keys at the same time: find this one's request by its body.
  const log = await eventually(async () => {
    const list = ok(await resend.logs.list({ limit: 100 }));
    const candidates = list.data.filter((l) => l.endpoint === '/api-keys' && l.method === 'POST');
    for (const candidate of candidates) {
      assert.match(candidate.id, UUID);
      const full = ok(await resend.logs.get(candidate.id));
      if (full.request_body?.name === name) return full;
    }
    return undefined;
  });
  assert.equal(log.object, 'log');
  assert.equal(log.response_status, 201);
  assert.equal(typeof log.request_body, 'object');
  assert.equal(typeof log.response_body, 'object');
  assert.equal(log.response_body.token, '<redacted>');
  assert.ok(!JSON.stringify(log).includes(key.token), 'the token never reaches the logs');
  ok(await resend.apiKeys.remove(key.id));
});

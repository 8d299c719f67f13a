// Shared by the Node SDK tests. The SDK reads RESEND_BASE_URL and RESEND_API_KEY from the
// environment itself (scripts/compat sets them); raw requests use the same values.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

export const BASE_URL = process.env.RESEND_BASE_URL;
export const API_KEY = process.env.RESEND_API_KEY;
if (!BASE_URL || !API_KEY) {
  throw new Error('RESEND_BASE_URL and RESEND_API_KEY must be set (run scripts/compat)');
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// Resend's resource timestamps: `2023-04-03 22:13:42.674981+00`.
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00$/;

/** A domain name no other test (Node or Python) uses. */
export function uniqueDomain(label) {
  return `node-${label}-${randomBytes(5).toString('hex')}.compat.herald.test`;
}

/** Asserts an SDK result is a success and returns its data. */
export function ok(result) {
  assert.equal(result.error, null, `expected success, got error ${JSON.stringify(result.error)}`);
  assert.notEqual(result.data, null);
  return result.data;
}

/** Asserts an SDK result is the given error and returns it. */
export function fails(result, statusCode, name) {
  assert.equal(result.data, null, `expected an error, got data ${JSON.stringify(result.data)}`);
  assert.ok(result.error, 'expected an error');
  assert.equal(result.error.statusCode, statusCode, JSON.stringify(result.error));
  assert.equal(result.error.name, name, JSON.stringify(result.error));
  assert.equal(typeof result.error.message, 'string');
  assert.ok(result.error.message.length > 0);
  return result.error;
}

/** A raw request to herald, bypassing the SDK. */
export async function raw(method, path, { key = API_KEY, body } = {}) {
  const headers = { 'User-Agent': 'herald-compat' };
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`${BASE_URL}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Asserts the four RateLimit headers are present and sensible (Headers or plain object). */
export function assertRateLimitHeaders(headers) {
  const get = (name) => (typeof headers.get === 'function' ? headers.get(name) : headers[name]);
  const limit = get('ratelimit-limit');
  const remaining = get('ratelimit-remaining');
  const reset = get('ratelimit-reset');
  const policy = get('ratelimit-policy');
  for (const [name, value] of Object.entries({ limit, remaining, reset, policy })) {
    assert.ok(value != null, `ratelimit-${name} header missing`);
  }
  assert.match(limit, /^\d+$/);
  assert.match(remaining, /^\d+$/);
  assert.match(reset, /^\d+$/);
  assert.ok(Number(limit) > 0);
  assert.ok(Number(remaining) <= Number(limit), `remaining ${remaining} > limit ${limit}`);
  assert.match(policy, /^\d+;w=\d+/);
  assert.equal(policy.split(';')[0], limit, `policy ${policy} disagrees with limit ${limit}`);
}

/**
 * Marks a domain verified without DNS: `POST /domains/{id}/verify` with
 * `{"skip_dns": true}`, which only the operator's key (the suite's) may send. The SDK's
 * `domains.verify()` sends no body, so this one goes raw.
 */
export async function verifyWithoutDns(id) {
  const response = await raw('POST', `/domains/${id}/verify`, { body: { skip_dns: true } });
  assert.equal(response.status, 200, response.text);
  assert.deepEqual(response.json, { object: 'domain', id });
}

/** Parses a Resend-style timestamp (`2026-11-22 09:00:00.123000+00`) into a Date. */
export function parseTimestamp(text) {
  assert.match(text, TIMESTAMP);
  return new Date(text.replace(' ', 'T').replace(/\+00$/, 'Z'));
}

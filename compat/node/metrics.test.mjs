// Email metrics through the official Node SDK (npm `resend`): resend.emails.metrics, which
// sends its options as `GET /emails/metrics` query parameters (arrays joined with commas).
// Counters are per team and sending domain. A team of its own (made with the suite's
// operator key) shows the unfiltered answer, all zero; the counting tests send in the
// operator's team (the only one whose domains the suite can verify without DNS), each from
// a domain of its own, and filter by `domainId` or `emailId`, so their totals are exact.
// The suite's herald delivers nothing, so only `sent` grows and the rates stay 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Resend } from 'resend';
import { fails, ok, raw, uniqueDomain, verifyWithoutDns } from './helpers.mjs';

const resend = new Resend();

/** Every metric, in Resend's order: what an answer lists when none is asked. */
const ALL = [
  'received', 'delivered', 'complained', 'suppressed', 'bounced', 'bounced_transient', 'bounced_permanent',
  'bounced_undetermined', 'opened', 'clicked', 'unsubscribed', 'delivery_delayed', 'failed', 'sent',
  'unique_opened', 'unique_clicked', 'delivery_rate', 'open_rate', 'click_rate', 'bounce_rate',
  'complaint_rate', 'unsubscribe_rate',
];
// RFC 3339 on a 15-minute edge, with the zone's offset.
const EDGE = /^\d{4}-\d{2}-\d{2}T\d{2}:(00|15|30|45):00[+-]\d{2}:\d{2}$/;
const DAY_MS = 86_400_000;

/** A new domain of the operator's team, verified without DNS, that has sent `n` emails. */
async function sendingDomain(label, n) {
  const name = uniqueDomain(`metrics-${label}`);
  const { id } = ok(await resend.domains.create({ name }));
  await verifyWithoutDns(id);
  const emails = [];
  for (let i = 0; i < n; i += 1) {
    const email = { from: `Metrics <hello@${name}>`, to: 'someone@recipient.test', subject: `node metrics ${i}`, text: 'Hi' };
    emails.push(ok(await resend.emails.send(email)).id);
  }
  return { id, name, emails };
}

/** The day before `date` (`2026-11-20`). */
function dayBefore(date) {
  return new Date(Date.parse(`${date}T00:00:00Z`) - DAY_MS).toISOString().slice(0, 10);
}

test("a new team's metrics: every metric in Resend's order, all 0, over the last 7 days in UTC", async () => {
  const created = await raw('POST', '/teams', { body: { name: `node-metrics-${randomBytes(4).toString('hex')}` } });
  assert.equal(created.status, 201, created.text);
  const before = Date.now();
  const answer = ok(await new Resend(created.json.api_key.token).emails.metrics());
  const after = Date.now();
  assert.equal(answer.object, 'metrics');
  assert.deepEqual(answer.metrics, ALL);
  assert.deepEqual(answer.dimensions, []);
  assert.equal(answer.granularity, 'daily');
  assert.equal(answer.timezone, 'UTC');
  assert.deepEqual(Object.keys(answer.totals).sort(), [...ALL].sort());
  for (const name of ALL) assert.equal(answer.totals[name], 0, name);
  assert.equal('data' in answer, false, 'no dimensions, no data');
  // Now rounded up to the next 15-minute edge; the start of the day 6 days before.
  for (const at of [answer.start_date, answer.end_date]) {
    assert.match(at, EDGE);
    assert.ok(at.endsWith('+00:00'), at);
  }
  const end = Date.parse(answer.end_date);
  assert.ok(end >= before - 1_000 && end <= after + 15 * 60_000, answer.end_date);
  const starts = [before, after].map((t) => `${new Date(t - 6 * DAY_MS).toISOString().slice(0, 10)}T00:00:00+00:00`);
  assert.ok(starts.includes(answer.start_date), `${answer.start_date} is one of ${starts}`);
});

test('sent counts emails sent now (batches too, not scheduled ones) per domain; rates stay 0', async () => {
  const domain = await sendingDomain('sent', 2);
  const from = `hello@${domain.name}`;
  ok(await resend.batch.send([{ from, to: 'a@recipient.test', subject: 'node metrics batch', text: 'Hi' }]));
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const scheduled = ok(
    await resend.emails.send({ from, to: 'b@recipient.test', subject: 'node metrics later', text: 'Hi', scheduledAt: later }),
  );
  const other = await sendingDomain('quiet', 0);

  const answer = ok(await resend.emails.metrics({ domainId: [domain.id], metrics: ['sent', 'delivery_rate'] }));
  assert.deepEqual(answer.metrics, ['sent', 'delivery_rate']);
  assert.deepEqual(answer.totals, { sent: 3, delivery_rate: 0 });
  assert.equal('data' in answer, false);
  // The metrics are answered in the order asked, each once.
  const asked = ok(await resend.emails.metrics({ domainId: [domain.id], metrics: ['bounce_rate', 'sent', 'bounce_rate'] }));
  assert.deepEqual(asked.metrics, ['bounce_rate', 'sent']);
  assert.deepEqual(asked.totals, { bounce_rate: 0, sent: 3 });
  // Another domain's filter shows nothing of these; both domains add up.
  assert.deepEqual(ok(await resend.emails.metrics({ domainId: [other.id], metrics: ['sent'] })).totals, { sent: 0 });
  assert.deepEqual(ok(await resend.emails.metrics({ domainId: [domain.id, other.id], metrics: ['sent'] })).totals, { sent: 3 });
  ok(await resend.emails.cancel(scheduled.id));
});

test("dimensions ['period']: a row for each day of the range in the time zone", async () => {
  const domain = await sendingDomain('period', 2);
  const answer = ok(
    await resend.emails.metrics({
      domainId: [domain.id],
      metrics: ['sent'],
      dimensions: ['period'],
      granularity: 'daily',
      timezone: 'America/New_York',
    }),
  );
  assert.equal(answer.timezone, 'America/New_York');
  assert.equal(answer.granularity, 'daily');
  assert.deepEqual(answer.dimensions, ['period']);
  assert.match(answer.start_date, /T00:00:00-0[45]:00$/);
  assert.match(answer.end_date, EDGE);
  assert.match(answer.end_date, /-0[45]:00$/);
  assert.equal(answer.data.length, 7, JSON.stringify(answer.data));
  assert.equal(answer.data[0].period, answer.start_date);
  for (const [i, row] of answer.data.entries()) {
    assert.deepEqual(Object.keys(row).sort(), ['period', 'sent']);
    assert.match(row.period, /^\d{4}-\d{2}-\d{2}T00:00:00-0[45]:00$/);
    if (i > 0) assert.equal(dayBefore(row.period.slice(0, 10)), answer.data[i - 1].period.slice(0, 10), 'consecutive days');
  }
  // The range ends (exclusive) at end_date: on a midnight, the row before it is the last.
  const endDate = answer.end_date.slice(0, 10);
  const endDay = answer.end_date.slice(11, 19) === '00:00:00' ? dayBefore(endDate) : endDate;
  assert.equal(answer.data.at(-1).period.slice(0, 10), endDay, 'the last row is the day the range ends in');
  assert.equal(answer.data.reduce((sum, row) => sum + row.sent, 0), 2);
  assert.equal(answer.totals.sent, 2);
});

test('explicit dates are rounded out to 15-minute edges; hourly periods', async () => {
  const { id } = await sendingDomain('hourly', 0);
  const answer = ok(
    await resend.emails.metrics({
      domainId: [id],
      startDate: '2025-01-10T08:07:00Z',
      endDate: '2025-01-10T10:01:00Z',
      granularity: 'hourly',
      dimensions: ['period'],
      metrics: ['sent'],
    }),
  );
  assert.equal(answer.start_date, '2025-01-10T08:00:00+00:00');
  assert.equal(answer.end_date, '2025-01-10T10:15:00+00:00');
  assert.deepEqual(answer.data, ['08', '09', '10'].map((h) => ({ period: `2025-01-10T${h}:00:00+00:00`, sent: 0 })));
  // A bare end date includes its day.
  const day = ok(await resend.emails.metrics({ domainId: [id], startDate: '2025-01-10', endDate: '2025-01-10', timezone: 'Europe/Paris' }));
  assert.equal(day.start_date, '2025-01-10T00:00:00+01:00');
  assert.equal(day.end_date, '2025-01-11T00:00:00+01:00');
});

test("dimensions ['domain'] and ['email']: a row per domain and per email named", async () => {
  const [a, b] = [await sendingDomain('by-domain-a', 2), await sendingDomain('by-domain-b', 1)];
  const byDomain = ok(
    await resend.emails.metrics({ domainId: [a.id, b.id], dimensions: ['domain'], metrics: ['sent', 'bounced'] }),
  );
  assert.deepEqual(byDomain.dimensions, ['domain']);
  const rows = [...byDomain.data].sort((x, y) => x.domain_name.localeCompare(y.domain_name));
  const want = [
    { domain_id: a.id, domain_name: a.name, sent: 2, bounced: 0 },
    { domain_id: b.id, domain_name: b.name, sent: 1, bounced: 0 },
  ].sort((x, y) => x.domain_name.localeCompare(y.domain_name));
  assert.deepEqual(rows, want);
  assert.deepEqual(byDomain.totals, { sent: 3, bounced: 0 });

  const [emailId] = a.emails;
  const byEmail = ok(
    await resend.emails.metrics({ emailId: [emailId], dimensions: ['email'], metrics: ['sent', 'delivered', 'opened'] }),
  );
  assert.deepEqual(byEmail.dimensions, ['email']);
  assert.deepEqual(byEmail.data, [{ email_id: emailId, sent: 1, delivered: 0, opened: 0 }]);
  assert.deepEqual(byEmail.totals, { sent: 1, delivered: 0, opened: 0 });
});

test('bad parameters get 422 validation_error naming the parameter', async () => {
  for (const [options, named] of [
    [{ timezone: 'Mars/Olympus' }, /timezone/],
    [{ granularity: 'yearly' }, /granularity/], // typed out in TypeScript, passed through at runtime
    [{ metrics: ['views'] }, /metrics/],
    [{ dimensions: ['country'] }, /dimensions/],
    [{ startDate: 'yesterday' }, /start_date/],
    [{ startDate: '2026-11-20', endDate: '2026-11-10' }, /start_date/],
    [{ dimensions: ['email'] }, /email_id/],
    [{ emailId: ['not-an-id'] }, /email_id/],
    [{ broadcastId: [randomUUID()] }, /broadcast_id/],
    [{ dimensions: ['broadcast'] }, /broadcast/],
  ]) {
    const error = fails(await resend.emails.metrics(options), 422, 'validation_error');
    assert.match(error.message, named, JSON.stringify(options));
  }
});

test("an unknown or another team's email gets 404; a sending_access key gets 401", async () => {
  fails(await resend.emails.metrics({ emailId: [randomUUID()], dimensions: ['email'] }), 404, 'not_found');
  const { emails } = await sendingDomain('foreign', 1);
  const team = await raw('POST', '/teams', { body: { name: `node-metrics-other-${randomBytes(4).toString('hex')}` } });
  assert.equal(team.status, 201, team.text);
  fails(await new Resend(team.json.api_key.token).emails.metrics({ emailId: emails }), 404, 'not_found');
  const name = `node-metrics-${randomBytes(4).toString('hex')}`;
  const key = ok(await resend.apiKeys.create({ name, permission: 'sending_access' }));
  fails(await new Resend(key.token).emails.metrics(), 401, 'restricted_api_key');
  ok(await resend.apiKeys.remove(key.id));
});

// Domains through the official Node SDK (npm `resend`): resend.domains.create / list / get /
// update / verify / remove, whose results are `{ data, error, headers }`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Resend } from 'resend';
import { TIMESTAMP, UUID, fails, ok, raw, uniqueDomain } from './helpers.mjs';

// Base URL and key come from RESEND_BASE_URL / RESEND_API_KEY, as a user would set them.
const resend = new Resend();

// `tracking_subdomain` is there only when the domain has one (the SDK's `tracking_subdomain?: string`).
const LIST_ITEM_FIELDS = ['capabilities', 'click_tracking', 'created_at', 'id', 'name', 'open_tracking', 'region', 'status'];

/**
 * Checks the records herald asks the owner to publish on `domain`, for return-path label
 * `returnPath`: only the record kinds the SDKs know in `records` (the Rust and .NET SDKs
 * decode them strictly), and the recommended DMARC record in `dmarc`.
 */
function assertRecords(domain, returnPath, status = 'not_started') {
  const records = domain.records;
  assert.ok(Array.isArray(records));
  assert.equal(records.length, 3, JSON.stringify(records));
  for (const r of records) {
    assert.equal(r.ttl, 'Auto');
    assert.equal(r.status, status);
  }
  const dkim = records.filter((r) => r.record === 'DKIM');
  assert.equal(dkim.length, 1);
  assert.equal(dkim[0].type, 'TXT');
  assert.equal(dkim[0].name, 'herald._domainkey');
  assert.ok(dkim[0].value.startsWith('v=DKIM1; k=rsa; p='), dkim[0].value);
  assert.ok(dkim[0].value.length > 'v=DKIM1; k=rsa; p='.length + 200, 'an RSA public key');

  const mx = records.find((r) => r.record === 'SPF' && r.type === 'MX');
  assert.ok(mx, 'SPF MX record');
  assert.equal(mx.name, returnPath);
  assert.equal(mx.value, 'mail.herald.test');
  assert.equal(mx.priority, 10);

  const spf = records.find((r) => r.record === 'SPF' && r.type === 'TXT');
  assert.ok(spf, 'SPF TXT record');
  assert.equal(spf.name, returnPath);
  assert.equal(spf.value, 'v=spf1 a:mail.herald.test ~all');

  assert.ok(!records.some((r) => r.name === '_dmarc'), 'no DMARC entry in records');
  const dmarc = domain.dmarc;
  assert.ok(dmarc, 'DMARC record');
  assert.equal(dmarc.name, '_dmarc');
  assert.equal(dmarc.type, 'TXT');
  assert.equal(dmarc.recommended, true);
  assert.match(dmarc.value, /^v=DMARC1;/);
}

async function createDomain(label, options = {}) {
  const name = uniqueDomain(label);
  const data = ok(await resend.domains.create({ name, ...options }));
  return { name, data };
}

test('domains.create returns the new domain with its DNS records', async () => {
  const { name, data } = await createDomain('create');
  assert.match(data.id, UUID);
  assert.equal(data.object, 'domain');
  assert.equal(data.name, name);
  assert.equal(data.status, 'not_started');
  assert.match(data.created_at, TIMESTAMP);
  assert.equal(data.region, 'us-east-1');
  assert.equal(data.open_tracking, false);
  assert.equal(data.click_tracking, false);
  assert.deepEqual(data.capabilities, { sending: 'enabled', receiving: 'disabled' });
  assertRecords(data, 'send');
});

test('domains.create passes region, customReturnPath, tracking and tls through', async () => {
  const { data } = await createDomain('options', {
    region: 'eu-west-1',
    customReturnPath: 'bounces',
    openTracking: true,
    clickTracking: true,
    tls: 'enforced',
  });
  assert.equal(data.region, 'eu-west-1');
  assert.equal(data.open_tracking, true);
  assert.equal(data.click_tracking, true);
  assertRecords(data, 'bounces');
  const got = ok(await resend.domains.get(data.id));
  assert.equal(got.tls, 'enforced');
  assert.equal(got.custom_return_path, 'bounces');
});

test('domains.create answers 201 on the wire', async () => {
  const name = uniqueDomain('status');
  const response = await raw('POST', '/domains', { body: { name } });
  assert.equal(response.status, 201);
  assert.match(response.headers.get('content-type'), /^application\/json/);
  assert.equal(response.json.name, name);
  ok(await resend.domains.remove(response.json.id));
});

test('domains.get returns the full domain', async () => {
  const { name, data: created } = await createDomain('get');
  const data = ok(await resend.domains.get(created.id));
  assert.equal(data.object, 'domain');
  assert.equal(data.id, created.id);
  assert.equal(data.name, name);
  assert.equal(data.status, 'not_started');
  assert.equal(data.created_at, created.created_at);
  assert.equal(data.region, 'us-east-1');
  assert.equal(data.open_tracking, false);
  assert.equal(data.click_tracking, false);
  assert.deepEqual(data.capabilities, { sending: 'enabled', receiving: 'disabled' });
  assertRecords(data, 'send');
  assert.deepEqual(data.records, created.records);
});

test('domains.list returns the list envelope, newest first', async () => {
  const first = await createDomain('list-a');
  const second = await createDomain('list-b');
  const list = ok(await resend.domains.list());
  assert.equal(list.object, 'list');
  assert.equal(list.has_more, false);
  assert.ok(Array.isArray(list.data));
  const ids = list.data.map((d) => d.id);
  const a = ids.indexOf(first.data.id);
  const b = ids.indexOf(second.data.id);
  assert.ok(a >= 0 && b >= 0, 'both new domains are listed');
  assert.ok(b < a, 'the newer domain comes first');
  const item = list.data[b];
  for (const field of LIST_ITEM_FIELDS) assert.ok(field in item, `list item has ${field}`);
  assert.ok(!('tracking_subdomain' in item), 'no tracking_subdomain without one');
  assert.equal(item.name, second.name);
  assert.equal(item.status, 'not_started');
  assert.equal(item.created_at, second.data.created_at);
  assert.equal(item.region, 'us-east-1');
  assert.equal(item.open_tracking, false);
  assert.equal(item.click_tracking, false);
  assert.deepEqual(item.capabilities, { sending: 'enabled', receiving: 'disabled' });
  assert.equal(item.records, undefined, 'list items carry no records');
});

test('domains.list paginates with limit and after', async () => {
  const created = [];
  for (const label of ['page-1', 'page-2', 'page-3']) created.push((await createDomain(label)).data.id);
  const page = ok(await resend.domains.list({ limit: 2 }));
  assert.equal(page.object, 'list');
  assert.equal(page.data.length, 2);
  assert.equal(page.has_more, true);

  // Walk the whole list; other test files may add domains meanwhile, so only check that
  // ours appear once each, newest first, and that pages chain through `after`.
  const seen = [...page.data.map((d) => d.id)];
  let last = page;
  let pages = 1;
  while (last.has_more) {
    const after = last.data[last.data.length - 1].id;
    last = ok(await resend.domains.list({ limit: 2, after }));
    assert.ok(last.data.length <= 2);
    assert.ok(!last.data.some((d) => d.id === after), 'the cursor item is not repeated');
    seen.push(...last.data.map((d) => d.id));
    pages += 1;
    assert.ok(pages < 1000, 'pagination terminates');
  }
  assert.equal(new Set(seen).size, seen.length, 'no domain appears twice');
  const positions = created.map((id) => seen.indexOf(id));
  assert.ok(positions.every((p) => p >= 0), 'every new domain is reached');
  assert.ok(positions[2] < positions[1] && positions[1] < positions[0], 'newest first across pages');

  // `after` the newest of ours continues with older domains, in list order, and reaches
  // the middle one within the page unless others were created in between.
  const next = ok(await resend.domains.list({ limit: 2, after: created[2] }));
  assert.equal(next.data.length, 2);
  const order = next.data.map((d) => seen.indexOf(d.id));
  assert.ok(order.every((p) => p > positions[2]), 'only domains older than the cursor');
  assert.ok(order[0] < order[1], 'in list order');
  assert.ok(order[0] <= positions[1], 'continues right after the cursor');
});

test('domains.update changes tracking and TLS', async () => {
  const { data: created } = await createDomain('update');
  const data = ok(
    await resend.domains.update({ id: created.id, openTracking: true, clickTracking: true, tls: 'enforced' }),
  );
  assert.deepEqual({ object: data.object, id: data.id }, { object: 'domain', id: created.id });
  const got = ok(await resend.domains.get(created.id));
  assert.equal(got.open_tracking, true);
  assert.equal(got.click_tracking, true);
  assert.equal(got.tls, 'enforced');

  // Fields left out stay as they are.
  ok(await resend.domains.update({ id: created.id, clickTracking: false }));
  const again = ok(await resend.domains.get(created.id));
  assert.equal(again.open_tracking, true);
  assert.equal(again.click_tracking, false);
  assert.equal(again.tls, 'enforced');

  const listed = ok(await resend.domains.list()).data.find((d) => d.id === created.id);
  assert.equal(listed.open_tracking, true);
  assert.equal(listed.click_tracking, false);
});

test('domains.verify starts verification', async () => {
  const { data: created } = await createDomain('verify');
  const data = ok(await resend.domains.verify(created.id));
  assert.deepEqual({ object: data.object, id: data.id }, { object: 'domain', id: created.id });
  const got = ok(await resend.domains.get(created.id));
  assert.equal(typeof got.status, 'string');
  assert.notEqual(got.status, 'not_started');
});

test('domains.remove deletes the domain', async () => {
  const { name, data: created } = await createDomain('remove');
  const data = ok(await resend.domains.remove(created.id));
  assert.deepEqual(data, { object: 'domain', id: created.id, deleted: true });
  fails(await resend.domains.get(created.id), 404, 'not_found');
  fails(await resend.domains.remove(created.id), 404, 'not_found');
  const list = ok(await resend.domains.list());
  assert.ok(!list.data.some((d) => d.id === created.id));
  // The name is free again.
  const again = ok(await resend.domains.create({ name }));
  assert.notEqual(again.id, created.id);
});

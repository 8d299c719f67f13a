<?php
// Domains through resend-php: $resend->domains->create / get / list / update / verify /
// remove. Answers are Resend\Domain resources (array and property access) and lists
// Resend\Collection; refusals throw Resend\Exceptions\ErrorException.

declare(strict_types=1);

const DOMAIN_CAPABILITIES = ['sending' => 'enabled', 'receiving' => 'disabled'];

/** The records herald asks the owner to publish, for return-path label $returnPath. */
function assert_domain_records(mixed $domain, string $returnPath): void
{
    $records = $domain['records'];
    check(is_array($records) && count($records) === 3, 'three records: ' . show($records));
    foreach ($records as $record) {
        eq('Auto', $record['ttl']);
        eq('not_started', $record['status']);
    }
    $dkim = array_values(array_filter($records, fn ($r) => $r['record'] === 'DKIM'));
    eq(1, count($dkim));
    eq('TXT', $dkim[0]['type']);
    eq('herald._domainkey', $dkim[0]['name']);
    check(str_starts_with($dkim[0]['value'], 'v=DKIM1; k=rsa; p='), $dkim[0]['value']);
    $mx = array_values(array_filter($records, fn ($r) => $r['record'] === 'SPF' && $r['type'] === 'MX'));
    eq(1, count($mx));
    eq($returnPath, $mx[0]['name']);
    eq('mail.herald.test', $mx[0]['value']);
    eq(10, $mx[0]['priority']);
    $spf = array_values(array_filter($records, fn ($r) => $r['record'] === 'SPF' && $r['type'] === 'TXT'));
    eq(1, count($spf));
    eq($returnPath, $spf[0]['name']);
    eq('v=spf1 a:mail.herald.test ~all', $spf[0]['value']);
    eq('_dmarc', $domain['dmarc']['name']);
    check(str_starts_with($domain['dmarc']['value'], 'v=DMARC1;'), 'a DMARC record');
}

test('create returns the domain with its records', function () {
    $name = unique_domain('create');
    $domain = client()->domains->create(['name' => $name]);
    check($domain instanceof Resend\Domain, 'a Resend\Domain');
    matches(UUID_RE, $domain['id']);
    eq($domain['id'], $domain->id, 'property access');
    eq('domain', $domain['object']);
    eq($name, $domain['name']);
    eq('not_started', $domain['status']);
    matches(TIMESTAMP_RE, $domain['created_at']);
    eq('us-east-1', $domain['region']);
    eq(false, $domain['open_tracking']);
    eq(false, $domain['click_tracking']);
    eq(DOMAIN_CAPABILITIES, $domain['capabilities']);
    assert_domain_records($domain, 'send');
});

test('create passes region, return path, tracking and tls through', function () {
    $domain = client()->domains->create([
        'name' => unique_domain('options'),
        'region' => 'eu-west-1',
        'custom_return_path' => 'bounces',
        'open_tracking' => true,
        'click_tracking' => true,
        'tls' => 'enforced',
    ]);
    eq('eu-west-1', $domain['region']);
    eq(true, $domain['open_tracking']);
    eq(true, $domain['click_tracking']);
    assert_domain_records($domain, 'bounces');
    $got = client()->domains->get($domain['id']);
    eq('enforced', $got['tls']);
    eq('bounces', $got['custom_return_path']);
    eq('eu-west-1', $got['region']);
    fails(fn () => client()->domains->create(['name' => unique_domain('region'), 'region' => 'mars-1']), 422, 'invalid_region');
});

test('create answers 201 on the wire', function () {
    $name = unique_domain('status');
    $response = raw('POST', '/domains', ['name' => $name]);
    eq(201, $response['status']);
    check(str_starts_with($response['headers']['content-type'], 'application/json'), 'JSON');
    eq($name, $response['json']['name']);
    client()->domains->remove($response['json']['id']);
});

test('get returns the full domain', function () {
    $name = unique_domain('get');
    $created = client()->domains->create(['name' => $name]);
    $domain = client()->domains->get($created['id']);
    eq('domain', $domain['object']);
    eq($created['id'], $domain['id']);
    eq($name, $domain['name']);
    eq('not_started', $domain['status']);
    eq($created['created_at'], $domain['created_at']);
    eq(DOMAIN_CAPABILITIES, $domain['capabilities']);
    assert_domain_records($domain, 'send');
    eq($created['records'], $domain['records']);
});

test('list pages newest first with limit and after', function () {
    $key = team_key('domains-list');
    $resend = client($key);
    $names = [unique_domain('list-a'), unique_domain('list-b'), unique_domain('list-c')];
    $created = array_map(fn ($n) => $resend->domains->create(['name' => $n]), $names);
    $listed = $resend->domains->list();
    check($listed instanceof Resend\Collection, 'a Resend\Collection');
    eq('list', $listed['object']);
    eq(false, $listed['has_more']);
    eq(array_reverse(ids($created)), ids($listed), 'newest first');
    $item = $listed['data'][0];
    check($item instanceof Resend\Domain, 'items are Resend\Domain');
    eq($names[2], $item['name']);
    eq('not_started', $item['status']);
    eq($created[2]['created_at'], $item['created_at']);
    eq('us-east-1', $item['region']);
    eq(DOMAIN_CAPABILITIES, $item['capabilities']);
    eq(null, $item['records'], 'no records in list items');
    $iterated = [];
    foreach ($listed as $domain) {
        $iterated[] = $domain['id'];
    }
    eq(ids($listed), $iterated, 'the collection iterates its data');

    $first = $resend->domains->list(['limit' => 2]);
    eq(true, $first['has_more']);
    eq([$created[2]['id'], $created[1]['id']], ids($first));
    $second = $resend->domains->list(['limit' => 2, 'after' => $created[1]['id']]);
    eq(false, $second['has_more']);
    eq([$created[0]['id']], ids($second));
    eq([$created[2]['id']], ids($resend->domains->list(['limit' => 2, 'before' => $created[1]['id']])));
    fails(fn () => $resend->domains->list(['limit' => 101]), 422, 'validation_error');
});

test('update changes tracking and tls', function () {
    $created = client()->domains->create(['name' => unique_domain('update')]);
    $updated = client()->domains->update($created['id'], ['open_tracking' => true, 'click_tracking' => true, 'tls' => 'enforced']);
    eq('domain', $updated['object']);
    eq($created['id'], $updated['id']);
    $got = client()->domains->get($created['id']);
    eq([true, true, 'enforced'], [$got['open_tracking'], $got['click_tracking'], $got['tls']]);
    client()->domains->update($created['id'], ['click_tracking' => false]);
    $again = client()->domains->get($created['id']);
    eq([true, false, 'enforced'], [$again['open_tracking'], $again['click_tracking'], $again['tls']]);
});

test('verify starts verification', function () {
    $created = client()->domains->create(['name' => unique_domain('verify')]);
    // The SDK posts `{}`: a DNS check starts in the background (it takes the suite's
    // herald ~15 s of timeouts to end; not waited for here).
    $verified = client()->domains->verify($created['id']);
    eq(['object' => 'domain', 'id' => $created['id']], $verified->toArray());
    $status = client()->domains->get($created['id'])['status'];
    check(in_array($status, ['pending', 'failed', 'verified', 'partially_verified', 'partially_failed'], true), "status $status after verify");
});

test('remove deletes the domain', function () {
    $name = unique_domain('remove');
    $created = client()->domains->create(['name' => $name]);
    $removed = client()->domains->remove($created['id']);
    eq(['object' => 'domain', 'id' => $created['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => client()->domains->get($created['id']), 404, 'not_found');
    fails(fn () => client()->domains->remove($created['id']), 404, 'not_found');
    $again = client()->domains->create(['name' => $name]);
    check($again['id'] !== $created['id'], 'a new id');
});

test('refusals have Resend names', function () {
    fails(fn () => client()->domains->create([]), 422, 'missing_required_field');
    fails(fn () => client()->domains->create(['name' => 'not a domain']), 422, 'validation_error');
    $name = unique_domain('twice');
    client()->domains->create(['name' => $name]);
    $error = fails(fn () => client()->domains->create(['name' => $name]), 422, 'validation_error');
    contains($name, $error->getMessage());
    foreach ([
        fn () => client()->domains->get(random_id()),
        fn () => client()->domains->update(random_id(), ['open_tracking' => true]),
        fn () => client()->domains->verify(random_id()),
        fn () => client()->domains->remove(random_id()),
    ] as $call) {
        fails($call, 404, 'not_found');
    }
    fails(fn () => client()->domains->get('not-a-domain'), 422, 'invalid_parameter');
});

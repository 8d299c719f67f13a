<?php
// Request logs ($resend->logs->list / get) and suppressions ($resend->suppressions->add /
// get / list / remove, $resend->suppressions->batch->add / remove) through resend-php,
// each in a team of its own so that lists show only the test's own entries.

declare(strict_types=1);

test('logs: list and get show the SDK requests, bodies as objects, secrets redacted', function () {
    $resend = client(team_key('logs'));
    $name = unique_name('logs');
    $created = $resend->apiKeys->create(['name' => $name]);
    fails(fn () => $resend->domains->get(random_id()), 404, 'not_found');
    // Logs are written just after the answer; other requests (the polls) may be logged too.
    $find = fn (Resend\Collection $listed, string $method, string $endpoint) => array_values(array_filter(
        $listed['data'],
        fn ($l) => $l['method'] === $method && $l['endpoint'] === $endpoint
    ));
    $listed = eventually(function () use ($resend, $find) {
        $listed = $resend->logs->list(['limit' => 100]);
        $logged404 = array_filter($listed['data'], fn ($l) => $l['response_status'] === 404);
        return $find($listed, 'POST', '/api-keys') !== [] && $logged404 !== [] ? $listed : null;
    }, 10, 'the requests logged');
    eq(['list', false], [$listed['object'], $listed['has_more']]);
    [$create] = $find($listed, 'POST', '/api-keys');
    $missing = array_values(array_filter($listed['data'], fn ($l) => $l['response_status'] === 404));
    eq(1, count($missing), 'the 404 is logged');
    check($listed['data'][0] instanceof Resend\Log, 'items are Resend\Log');
    eq(['api_key_id', 'created_at', 'duration_ms', 'endpoint', 'id', 'method', 'response_status', 'user_agent'], keys_of($create));
    eq([201, 'resend-php/1.10.0'], [$create['response_status'], $create['user_agent']]);
    eq('GET', $missing[0]['method']);
    check(str_starts_with($missing[0]['endpoint'], '/domains/'), $missing[0]['endpoint']);
    $order = ids($listed);
    check(array_search($missing[0]['id'], $order, true) < array_search($create['id'], $order, true), 'newest first');
    matches(UUID_RE, $create['id']);
    matches(TIMESTAMP_RE, $create['created_at']);
    check(is_int($create['duration_ms']), 'duration_ms');
    check(in_array($create['api_key_id'], ids($resend->apiKeys->list()), true), 'the key that made it');

    $log = $resend->logs->get($create['id']);
    eq('log', $log['object']);
    eq($create['id'], $log['id']);
    eq(['name' => $name], $log['request_body']);
    eq(['id' => $created['id'], 'token' => '<redacted>'], $log['response_body']);
    check(!str_contains(json_encode(to_plain($log)), $created['token']), 'the token never reaches the logs');
    $first = $resend->logs->list(['limit' => 1]);
    eq([1, true], [count($first['data']), $first['has_more']]);
    $next = $resend->logs->list(['limit' => 1, 'after' => $first['data'][0]['id']]);
    check($next['data'][0]['id'] !== $first['data'][0]['id'], 'the next page moves on');
    fails(fn () => $resend->logs->get(random_id()), 404, 'not_found');
});

test('suppressions: add, get by id and by address, remove', function () {
    $email = unique_address('single');
    $added = client()->suppressions->add(['email' => $email]);
    check($added instanceof Resend\Suppression, 'a Resend\Suppression');
    eq('suppression', $added['object']);
    matches(UUID_RE, $added['id']);
    eq($added['id'], client()->suppressions->add(['email' => strtoupper($email)])['id'], 'adding again answers the same id');
    $byId = client()->suppressions->get($added['id']);
    eq(['object' => 'suppression', 'id' => $added['id'], 'email' => $email, 'origin' => 'manual', 'source_id' => null,
        'created_at' => $byId['created_at']], $byId->toArray());
    assert_recent($byId['created_at']);
    // resend-php puts the address into the path as it is (`@` unencoded).
    eq($byId->toArray(), client()->suppressions->get($email)->toArray());
    $removed = client()->suppressions->remove($email);
    eq(['object' => 'suppression', 'id' => $added['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => client()->suppressions->get($added['id']), 404, 'not_found');
    fails(fn () => client()->suppressions->remove($email), 404, 'not_found');
});

test('suppressions: list pages newest first and filters by origin', function () {
    $resend = client(team_key('suppressions-list'));
    $emails = [unique_address('list-0'), unique_address('list-1'), unique_address('list-2')];
    foreach ($emails as $email) {
        $resend->suppressions->add(['email' => $email]);
    }
    $first = $resend->suppressions->list(['limit' => 2]);
    eq(['list', true], [$first['object'], $first['has_more']]);
    eq([$emails[2], $emails[1]], array_map(fn ($s) => $s['email'], $first['data']));
    eq(['created_at', 'email', 'id', 'origin', 'source_id'], keys_of($first['data'][0]));
    $second = $resend->suppressions->list(['limit' => 2, 'after' => $first['data'][1]['id']]);
    eq([false, [$emails[0]]], [$second['has_more'], array_map(fn ($s) => $s['email'], $second['data'])]);
    eq(3, count($resend->suppressions->list(['origin' => 'manual'])['data']));
    eq([], $resend->suppressions->list(['origin' => 'bounce'])['data']);
});

test('suppressions: batch add and remove', function () {
    [$a, $b] = [unique_address('batch-a'), unique_address('batch-b')];
    $existing = client()->suppressions->add(['email' => $b]);
    $added = client()->suppressions->batch->add(['emails' => [$a, $b, strtoupper($a)]]);
    check($added instanceof Resend\Collection, 'a Resend\Collection');
    eq(2, count($added['data']), 'duplicates collapse');
    foreach ($added['data'] as $entry) {
        eq('suppression', $entry['object']);
        matches(UUID_RE, $entry['id']);
    }
    eq($existing['id'], $added['data'][1]['id']);
    $byEmail = client()->suppressions->batch->remove(['emails' => [$a, unique_address('never')]]);
    eq([['object' => 'suppression', 'id' => $added['data'][0]['id'], 'deleted' => true]], to_plain($byEmail['data']));
    $byId = client()->suppressions->batch->remove(['ids' => [$existing['id']]]);
    eq([['object' => 'suppression', 'id' => $existing['id'], 'deleted' => true]], to_plain($byId['data']));
});

test('suppressions: refusals, teams and sending keys', function () {
    fails(fn () => client()->suppressions->add(['email' => 'not an address']), 422, 'validation_error');
    fails(fn () => client()->suppressions->add([]), 422, 'missing_required_field');
    $many = array_map(fn ($n) => unique_address("many-$n"), range(0, 100));
    fails(fn () => client()->suppressions->batch->add(['emails' => $many]), 422, 'validation_error');
    fails(fn () => client()->suppressions->get(unique_address('missing')), 404, 'not_found');
    $email = unique_address('team');
    $added = client()->suppressions->add(['email' => $email]);
    $other = client(team_key('suppressions-other'));
    fails(fn () => $other->suppressions->get($added['id']), 404, 'not_found');
    fails(fn () => $other->suppressions->get($email), 404, 'not_found');
    $key = client()->apiKeys->create(['name' => unique_name('sending'), 'permission' => 'sending_access']);
    fails(fn () => client($key['token'])->suppressions->list(), 401, 'restricted_api_key');
    fails(fn () => client($key['token'])->suppressions->add(['email' => $email]), 401, 'restricted_api_key');
    client()->apiKeys->remove($key['id']);
    client()->suppressions->remove($added['id']);
});

<?php
// API keys through resend-php: $resend->apiKeys->create / list / update / remove, and SDK
// clients made with the tokens they hand out.

declare(strict_types=1);

function find_key(Resend\Client $resend, string $id): ?Resend\ApiKey
{
    foreach ($resend->apiKeys->list()['data'] as $key) {
        if ($key['id'] === $id) {
            return $key;
        }
    }
    return null;
}

test('create returns an id and a token that works at once', function () {
    $created = client()->apiKeys->create(['name' => unique_name('create')]);
    check($created instanceof Resend\ApiKey, 'a Resend\ApiKey');
    eq(['id', 'token'], keys_of($created));
    matches(UUID_RE, $created['id']);
    matches('/^re_[A-Za-z0-9_]{17,}$/', $created['token']);
    $listed = client($created['token'])->domains->list();
    eq('list', $listed['object']);
    client()->apiKeys->remove($created['id']);
});

test('create answers 201 on the wire', function () {
    $response = raw('POST', '/api-keys', ['name' => unique_name('status')]);
    eq(201, $response['status'], $response['text']);
    matches(UUID_RE, $response['json']['id']);
    client()->apiKeys->remove($response['json']['id']);
});

test('list shows keys without their tokens, newest first, paged', function () {
    $resend = client(team_key('api-keys-list'));
    $names = [unique_name('list-a'), unique_name('list-b')];
    $a = $resend->apiKeys->create(['name' => $names[0], 'permission' => 'full_access']);
    $b = $resend->apiKeys->create(['name' => $names[1]]);
    $listed = $resend->apiKeys->list();
    eq('list', $listed['object']);
    eq(false, $listed['has_more']);
    eq(3, count($listed['data']), "the team's first key and the two new ones");
    eq([$b['id'], $a['id']], array_slice(ids($listed), 0, 2), 'newest first');
    $key = $listed['data'][1];
    eq(['created_at', 'domain_id', 'id', 'last_used_at', 'name', 'permission'], keys_of($key));
    eq($names[0], $key['name']);
    eq('full_access', $key['permission']);
    eq(null, $key['domain_id']);
    eq(null, $key['last_used_at']);
    matches(TIMESTAMP_RE, $key['created_at']);
    check(!str_contains(json_encode(to_plain($listed)), $a['token']), 'no token listed');
    $page = $resend->apiKeys->list(['limit' => 1]);
    eq([true, [$b['id']]], [$page['has_more'], ids($page)]);
    eq([$a['id']], ids($resend->apiKeys->list(['limit' => 1, 'after' => $b['id']])));
});

test('update renames a key', function () {
    $created = client()->apiKeys->create(['name' => unique_name('update')]);
    $renamed = unique_name('renamed');
    $updated = client()->apiKeys->update($created['id'], ['name' => $renamed]);
    eq('api_key', $updated['object']);
    eq($created['id'], $updated['id']);
    eq($renamed, find_key(client(), $created['id'])['name']);
    fails(fn () => client()->apiKeys->update(random_id(), ['name' => 'x']), 404, 'not_found');
    client()->apiKeys->remove($created['id']);
});

test('remove deletes the key and its token stops working', function () {
    $created = client()->apiKeys->create(['name' => unique_name('remove')]);
    client($created['token'])->domains->list();
    $removed = client()->apiKeys->remove($created['id']);
    eq(['object' => 'api_key', 'id' => $created['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => client($created['token'])->domains->list(), 403, 'invalid_api_key');
    fails(fn () => client()->apiKeys->remove($created['id']), 404, 'not_found');
    eq(null, find_key(client(), $created['id']));
});

test('a sending key bound to a domain is restricted to sending', function () {
    $domain = client()->domains->create(['name' => unique_domain('sending-key')]);
    $created = client()->apiKeys->create(['name' => unique_name('sending'), 'permission' => 'sending_access', 'domain_id' => $domain['id']]);
    matches('/^re_/', $created['token']);
    $listed = find_key(client(), $created['id']);
    eq(['sending_access', $domain['id']], [$listed['permission'], $listed['domain_id']]);
    $sending = client($created['token']);
    foreach ([
        fn () => $sending->domains->list(),
        fn () => $sending->domains->get($domain['id']),
        fn () => $sending->apiKeys->list(),
        fn () => $sending->apiKeys->create(['name' => 'nope']),
    ] as $call) {
        fails($call, 401, 'restricted_api_key');
    }
    $any = client()->apiKeys->create(['name' => unique_name('sending-any'), 'permission' => 'sending_access']);
    eq(null, find_key(client(), $any['id'])['domain_id']);
    fails(fn () => client($any['token'])->domains->list(), 401, 'restricted_api_key');
    client()->apiKeys->remove($created['id']);
    client()->apiKeys->remove($any['id']);
});

test('create refusals', function () {
    fails(fn () => client()->apiKeys->create([]), 422, 'missing_required_field');
    fails(fn () => client()->apiKeys->create(['name' => '   ']), 422, 'missing_required_field');
    fails(fn () => client()->apiKeys->create(['name' => unique_name('bad'), 'permission' => 'root']), 422, 'invalid_access');
    $domain = client()->domains->create(['name' => unique_domain('full-with-domain')]);
    fails(fn () => client()->apiKeys->create(['name' => unique_name('full'), 'permission' => 'full_access', 'domain_id' => $domain['id']]), 422, 'validation_error');
});

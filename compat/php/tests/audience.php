<?php
// Segments, the legacy audiences, topics and contact properties through resend-php, each
// test in a team of its own so lists show only its own: $resend->segments->create / get /
// list / remove (resend-php 1.10 has no segment update), $resend->audiences->create / get
// / list / remove (Resend's older name for segments, herald's `/audiences`),
// $resend->topics->create / get / list / update / remove and
// $resend->contactProperties->create / get / list / update / remove.

declare(strict_types=1);

test('segments: create, get, list, remove', function () {
    $key = team_key('segments');
    $resend = client($key);
    $wireName = 'Wire ' . token(4);
    $onWire = raw('POST', '/segments', ['name' => $wireName], $key);
    eq(201, $onWire['status'], $onWire['text']);
    $wire = $onWire['json'];

    $name = 'Newsletter ' . token(4);
    $created = $resend->segments->create(['name' => $name]);
    check($created instanceof Resend\Segment, 'a Resend\Segment');
    eq(['object' => 'segment', 'id' => $created['id'], 'name' => $name], $created->toArray());
    matches(UUID_RE, $created['id']);
    $segment = $resend->segments->get($created['id']);
    eq(['created_at', 'id', 'name', 'object'], keys_of($segment));
    eq(['segment', $created['id'], $name], [$segment['object'], $segment['id'], $segment['name']]);
    assert_recent($segment['created_at']);

    $listed = $resend->segments->list();
    eq(['list', false, [$created['id'], $wire['id']]], [$listed['object'], $listed['has_more'], ids($listed)]);
    eq(['id' => $created['id'], 'name' => $name, 'created_at' => $segment['created_at']], $listed['data'][0]->toArray());
    $first = $resend->segments->list(['limit' => 1]);
    eq([true, [$created['id']]], [$first['has_more'], ids($first)]);
    $second = $resend->segments->list(['limit' => 1, 'after' => $created['id']]);
    eq([false, [$wire['id']]], [$second['has_more'], ids($second)]);
    eq([$created['id']], ids($resend->segments->list(['limit' => 1, 'before' => $wire['id']])));
    fails(fn () => $resend->segments->list(['limit' => 101]), 422, 'validation_error');

    $removed = $resend->segments->remove($created['id']);
    eq(['object' => 'segment', 'id' => $created['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => $resend->segments->get($created['id']), 404, 'not_found');
    eq([$wire['id']], ids($resend->segments->list()));
    fails(fn () => $resend->segments->get(random_id()), 404, 'not_found');
    fails(fn () => $resend->segments->get('not-a-segment'), 422, 'invalid_parameter');
    fails(fn () => $resend->segments->create([]), 422, 'missing_required_field');
});

test('audiences (the older name): create, get, list, remove', function () {
    $resend = client(team_key('audiences'));
    $name = 'Audience ' . token(4);
    $created = $resend->audiences->create(['name' => $name]);
    check($created instanceof Resend\Audience, 'a Resend\Audience');
    eq($name, $created['name']);
    matches(UUID_RE, $created['id']);
    $audience = $resend->audiences->get($created['id']);
    eq([$created['id'], $name], [$audience['id'], $audience['name']]);
    matches(TIMESTAMP_RE, $audience['created_at']);
    eq($name, $resend->segments->get($created['id'])['name'], 'an audience is a segment');
    $listed = $resend->audiences->list();
    eq(['list', [$created['id']]], [$listed['object'], ids($listed)]);
    $removed = $resend->audiences->remove($created['id']);
    eq([$created['id'], true], [$removed['id'], $removed['deleted']]);
    fails(fn () => $resend->audiences->get($created['id']), 404, 'not_found');
});

test('topics: create, get, list, update, remove', function () {
    $key = team_key('topics');
    $resend = client($key);
    $onWire = raw('POST', '/topics', ['name' => 'Wire', 'default_subscription' => 'opt_out', 'visibility' => 'public'], $key);
    eq(201, $onWire['status'], $onWire['text']);
    $wire = $onWire['json'];
    eq(['object' => 'topic', 'id' => $wire['id']], $wire);

    $created = $resend->topics->create(['name' => 'Product', 'default_subscription' => 'opt_in', 'description' => 'Product news']);
    check($created instanceof Resend\Topic, 'a Resend\Topic');
    eq(['object' => 'topic', 'id' => $created['id']], $created->toArray());
    $topic = $resend->topics->get($created['id']);
    eq([
        'object' => 'topic',
        'id' => $created['id'],
        'name' => 'Product',
        'description' => 'Product news',
        'default_subscription' => 'opt_in',
        'visibility' => 'private',
        'created_at' => $topic['created_at'],
    ], $topic->toArray());
    assert_recent($topic['created_at']);
    $public = $resend->topics->get($wire['id']);
    eq([null, 'public', 'opt_out'], [$public['description'], $public['visibility'], $public['default_subscription']]);

    $listed = $resend->topics->list();
    eq(['list', false, [$created['id'], $wire['id']]], [$listed['object'], $listed['has_more'], ids($listed)]);
    $item = $topic->toArray();
    unset($item['object']);
    eq($item, $listed['data'][0]->toArray());
    $page = $resend->topics->list(['limit' => 1]);
    eq([true, [$created['id']]], [$page['has_more'], ids($page)]);

    $updated = $resend->topics->update($created['id'], ['name' => 'Products', 'description' => 'All product news']);
    eq(['object' => 'topic', 'id' => $created['id']], $updated->toArray());
    $resend->topics->update($created['id'], ['visibility' => 'public']);
    $after = $resend->topics->get($created['id']);
    eq(['Products', 'All product news', 'public', 'opt_in'], [$after['name'], $after['description'], $after['visibility'], $after['default_subscription']]);
    fails(fn () => $resend->topics->update($created['id'], ['default_subscription' => 'opt_out']), 422, 'validation_error');

    $removed = $resend->topics->remove($created['id']);
    eq(['object' => 'topic', 'id' => $created['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => $resend->topics->get($created['id']), 404, 'not_found');
    eq([$wire['id']], ids($resend->topics->list()));
    fails(fn () => $resend->topics->create(['name' => 'No default']), 422, 'missing_required_field');
    fails(fn () => $resend->topics->create(['default_subscription' => 'opt_in']), 422, 'missing_required_field');
    fails(fn () => $resend->topics->create(['name' => 'Bad', 'default_subscription' => 'sometimes']), 422, 'validation_error');
    fails(fn () => $resend->topics->create(['name' => 'Bad', 'default_subscription' => 'opt_in', 'visibility' => 'secret']), 422, 'validation_error');
    fails(fn () => $resend->topics->get('not-a-topic'), 422, 'invalid_parameter');
});

test('contact properties: create, get, list, update, remove', function () {
    $key = team_key('contact-properties');
    $resend = client($key);
    $company = $resend->contactProperties->create(['key' => 'company', 'type' => 'string', 'fallback_value' => 'Acme']);
    check($company instanceof Resend\ContactProperty, 'a Resend\ContactProperty');
    eq(['object' => 'contact_property', 'id' => $company['id']], $company->toArray());
    matches(UUID_RE, $company['id']);
    $score = $resend->contactProperties->create(['key' => 'score', 'type' => 'number', 'fallback_value' => 0]);
    $nickname = $resend->contactProperties->create(['key' => 'nickname', 'type' => 'string']);

    $got = $resend->contactProperties->get($company['id']);
    eq([
        'object' => 'contact_property',
        'id' => $company['id'],
        'key' => 'company',
        'type' => 'string',
        'fallback_value' => 'Acme',
        'created_at' => $got['created_at'],
    ], $got->toArray());
    matches(TIMESTAMP_RE, $got['created_at']);
    eq(['number', 0], [$resend->contactProperties->get($score['id'])['type'], $resend->contactProperties->get($score['id'])['fallback_value']]);
    eq(null, $resend->contactProperties->get($nickname['id'])['fallback_value']);

    $listed = $resend->contactProperties->list();
    eq(['list', false], [$listed['object'], $listed['has_more']]);
    eq(['nickname', 'score', 'company'], array_map(fn ($p) => $p['key'], $listed['data']), 'newest first');
    $item = $got->toArray();
    unset($item['object']);
    eq($item, $listed['data'][2]->toArray());
    $page = $resend->contactProperties->list(['limit' => 1, 'after' => $nickname['id']]);
    eq([true, ['score']], [$page['has_more'], array_map(fn ($p) => $p['key'], $page['data'])]);

    $updated = $resend->contactProperties->update($company['id'], ['fallback_value' => 'Initech']);
    eq(['object' => 'contact_property', 'id' => $company['id']], $updated->toArray());
    eq('Initech', $resend->contactProperties->get($company['id'])['fallback_value']);
    $resend->contactProperties->update($company['id'], ['fallback_value' => null]);
    eq(null, $resend->contactProperties->get($company['id'])['fallback_value']);
    fails(fn () => $resend->contactProperties->update($score['id'], ['fallback_value' => 'ten']), 422, 'validation_error');
    fails(fn () => $resend->contactProperties->update($company['id'], ['key' => 'renamed']), 422, 'validation_error');
    fails(fn () => $resend->contactProperties->update($company['id'], ['type' => 'number']), 422, 'validation_error');

    foreach ([
        ['key' => 'has space', 'type' => 'string'],
        ['key' => str_repeat('k', 51), 'type' => 'string'],
        ['key' => 'count', 'type' => 'number', 'fallback_value' => 'ten'],
        ['key' => 'flag', 'type' => 'boolean'],
    ] as $params) {
        fails(fn () => $resend->contactProperties->create($params), 422, 'validation_error');
    }
    fails(fn () => $resend->contactProperties->create(['type' => 'string']), 422, 'missing_required_field');

    $removed = $resend->contactProperties->remove($company['id']);
    eq(['object' => 'contact_property', 'id' => $company['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => $resend->contactProperties->get($company['id']), 404, 'not_found');
    fails(fn () => $resend->contacts->create(['email' => unique_address('removed-key'), 'properties' => ['company' => 'Acme']]), 422, 'validation_error');
});

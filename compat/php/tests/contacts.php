<?php
// Contacts through resend-php, each test in a team of its own (a contact's topics list
// every topic of its team, and lists then show only the test's own):
// $resend->contacts->create / get (by id and by address, which the SDK puts into the path
// as written) / list (all, and a segment's with `segment_id`) / update / remove;
// $resend->contacts->segments->add / list / remove; $resend->contacts->topics->get /
// update; $resend->contacts->imports->create (multipart) / get / list.

declare(strict_types=1);

const CONTACT_KEYS = ['created_at', 'email', 'first_name', 'id', 'last_name', 'unsubscribed'];

/** Polls the import until it is completed (imports run in the background). */
function completed_import(Resend\Client $resend, string $id): Resend\Contacts\Import
{
    return eventually(function () use ($resend, $id) {
        $current = $resend->contacts->imports->get($id);
        check(in_array($current['status'], ['queued', 'in_progress', 'completed'], true), show($current));
        return $current['status'] === 'completed' ? $current : null;
    }, 30, "import $id completing");
}

/** A CSV file as the stream resource the SDK uploads. */
function csv_file(string ...$lines): mixed
{
    $file = fopen('php://temp', 'w+');
    fwrite($file, implode("\n", $lines) . "\n");
    rewind($file);
    return $file;
}

test('create, get by id and by address, list, update, remove', function () {
    $resend = client(team_key('contacts'));
    $email = 'Php.' . token(4) . '@Compat.Herald.test';
    $created = $resend->contacts->create(['email' => $email, 'first_name' => 'Ann', 'last_name' => 'Lee']);
    check($created instanceof Resend\Contact, 'a Resend\Contact');
    eq(['object' => 'contact', 'id' => $created['id']], $created->toArray());
    matches(UUID_RE, $created['id']);
    $second = $resend->contacts->create(['email' => "two.$email", 'unsubscribed' => true]);

    $byId = $resend->contacts->get($created['id']);
    eq(['created_at', 'email', 'first_name', 'id', 'last_name', 'object', 'properties', 'unsubscribed'], keys_of($byId));
    eq(['contact', $email, 'Ann', 'Lee', false, []], [$byId['object'], $byId['email'], $byId['first_name'], $byId['last_name'], $byId['unsubscribed'], $byId['properties']]);
    assert_recent($byId['created_at']);
    eq($byId->toArray(), $resend->contacts->get($email)->toArray(), 'by address');
    $lowerDomain = explode('@', $email)[0] . '@' . strtolower(explode('@', $email)[1]);
    eq($created['id'], $resend->contacts->get($lowerDomain)['id'], 'the domain part without case');

    $listed = $resend->contacts->list();
    eq(['list', false, [$second['id'], $created['id']]], [$listed['object'], $listed['has_more'], ids($listed)]);
    eq(CONTACT_KEYS, keys_of($listed['data'][1]));
    eq(true, $listed['data'][0]['unsubscribed']);
    $page = $resend->contacts->list(['limit' => 1]);
    eq([true, [$second['id']]], [$page['has_more'], ids($page)]);
    eq([$created['id']], ids($resend->contacts->list(['limit' => 1, 'after' => $second['id']])));

    $updated = $resend->contacts->update($email, ['unsubscribed' => true, 'last_name' => null]);
    eq(['object' => 'contact', 'id' => $created['id']], $updated->toArray());
    $after = $resend->contacts->get($created['id']);
    eq([true, null, 'Ann'], [$after['unsubscribed'], $after['last_name'], $after['first_name']]);
    $resend->contacts->update($created['id'], ['first_name' => 'Anna']);
    eq('Anna', $resend->contacts->get($email)['first_name']);

    $removed = $resend->contacts->remove($email);
    eq(true, $removed['deleted']);
    eq('contact', $removed['object']);
    eq($created['id'], $removed['id']);
    fails(fn () => $resend->contacts->get($created['id']), 404, 'not_found');
    // As Resend answers: a contact that does not exist is deleted already.
    eq(['object' => 'contact', 'contact' => $email, 'id' => $email, 'deleted' => true], $resend->contacts->remove($email)->toArray());
    $removed = $resend->contacts->remove($second['id']);
    eq([true, $second['id']], [$removed['deleted'], $removed['id']]);
    eq([], $resend->contacts->list()['data']);

    fails(fn () => $resend->contacts->create([]), 422, 'missing_required_field');
    fails(fn () => $resend->contacts->create(['email' => 'not an address']), 422, 'validation_error');
});

test('contacts with segments, topics and properties', function () {
    $resend = client(team_key('contacts-audience'));
    $vip = $resend->segments->create(['name' => 'VIP']);
    $trial = $resend->segments->create(['name' => 'Trial']);
    $news = $resend->topics->create(['name' => 'News', 'default_subscription' => 'opt_out']);
    $resend->contactProperties->create(['key' => 'plan', 'type' => 'string', 'fallback_value' => 'free']);
    $resend->contactProperties->create(['key' => 'seats', 'type' => 'number']);
    $resend->contactProperties->create(['key' => 'nickname', 'type' => 'string']);

    $email = unique_address('full');
    $created = $resend->contacts->create([
        'email' => $email,
        'first_name' => 'Ada',
        'segments' => [['id' => $vip['id']], ['id' => $trial['id']]],
        'topics' => [['id' => $news['id'], 'subscription' => 'opt_in']],
        'properties' => ['seats' => 3],
    ]);
    eq(['object' => 'contact', 'id' => $created['id']], $created->toArray());
    $outsider = $resend->contacts->create(['email' => unique_address('outsider')]);

    $contact = $resend->contacts->get($created['id']);
    eq(['plan' => ['type' => 'string', 'value' => 'free'], 'seats' => ['type' => 'number', 'value' => '3']], $contact['properties'],
        'every property with a value, or its fallback; values as strings');

    $memberships = $resend->contacts->segments->list($created['id']);
    eq(['list', false], [$memberships['object'], $memberships['has_more']]);
    $got = ids($memberships);
    sort($got);
    $want = [$vip['id'], $trial['id']];
    sort($want);
    eq($want, $got);
    $vipEntry = array_values(array_filter($memberships['data'], fn ($s) => $s['id'] === $vip['id']))[0];
    check($vipEntry instanceof Resend\Segment, 'items are Resend\Segment');
    eq(['created_at', 'id', 'name'], keys_of($vipEntry));
    eq('VIP', $vipEntry['name']);
    $byEmail = ids($resend->contacts->segments->list($email));
    sort($byEmail);
    eq($want, $byEmail, 'by address');

    $inVip = $resend->contacts->list(['segment_id' => $vip['id']]);
    eq(['list', false, [$created['id']]], [$inVip['object'], $inVip['has_more'], ids($inVip)]);
    eq(CONTACT_KEYS, keys_of($inVip['data'][0]));
    $all = ids($resend->contacts->list());
    eq([$outsider['id'], $created['id']], $all);

    $topics = $resend->contacts->topics->get($created['id']);
    eq(['list', false], [$topics['object'], $topics['has_more']]);
    eq(1, count($topics['data']));
    $topic = $topics['data'][0];
    check($topic instanceof Resend\Contacts\Topic, 'items are Resend\Contacts\Topic');
    eq(['created_at', 'description', 'id', 'name', 'subscription'], keys_of($topic));
    eq([$news['id'], 'News', null, 'opt_in'], [$topic['id'], $topic['name'], $topic['description'], $topic['subscription']]);
    matches(TIMESTAMP_RE, $topic['created_at']);

    // PATCH properties: a value replaces, null removes.
    $updated = $resend->contacts->update($created['id'], ['properties' => ['plan' => 'pro', 'seats' => null, 'nickname' => 'Countess']]);
    eq(['object' => 'contact', 'id' => $created['id']], $updated->toArray());
    eq(['plan' => ['type' => 'string', 'value' => 'pro'], 'nickname' => ['type' => 'string', 'value' => 'Countess']],
        $resend->contacts->get($email)['properties']);
    foreach ([['unknown_key' => 'x'], ['seats' => 'lots']] as $properties) {
        fails(fn () => $resend->contacts->update($created['id'], ['properties' => $properties]), 422, 'validation_error');
    }
    $refused = unique_address('refused');
    fails(fn () => $resend->contacts->create(['email' => $refused, 'segments' => [['id' => random_id()]]]), 404, 'not_found');
    fails(fn () => $resend->contacts->create(['email' => $refused, 'topics' => [['id' => random_id(), 'subscription' => 'opt_in']]]), 404, 'not_found');
    fails(fn () => $resend->contacts->create(['email' => $refused, 'properties' => ['seats' => 'lots']]), 422, 'validation_error');
    fails(fn () => $resend->contacts->get($refused), 404, 'not_found');
});

test("a contact's segments: add, list, remove, by id and by address", function () {
    $resend = client(team_key('contact-segments'));
    [$a, $b, $c] = array_map(fn ($n) => $resend->segments->create(['name' => $n]), ['A', 'B', 'C']);
    $email = unique_address('member');
    $contact = $resend->contacts->create(['email' => $email]);
    eq([], $resend->contacts->segments->list($contact['id'])['data']);

    $added = $resend->contacts->segments->add($contact['id'], $a['id']);
    check($added instanceof Resend\Segment, 'a Resend\Segment');
    eq(['object' => 'contact_segment', 'id' => $a['id'], 'contact_id' => $contact['id'], 'segment_id' => $a['id']], $added->toArray());
    $byEmail = $resend->contacts->segments->add($email, $b['id']);
    eq(['object' => 'contact_segment', 'id' => $b['id'], 'contact_id' => $contact['id'], 'segment_id' => $b['id']], $byEmail->toArray());
    $resend->contacts->segments->add($contact['id'], $c['id']);
    $listed = ids($resend->contacts->segments->list($contact['id']));
    sort($listed);
    $want = [$a['id'], $b['id'], $c['id']];
    sort($want);
    eq($want, $listed);
    eq([$contact['id']], ids($resend->contacts->list(['segment_id' => $b['id']])));

    $removed = $resend->contacts->segments->remove($contact['id'], $a['id']);
    eq(['object' => 'contact_segment', 'id' => $a['id'], 'contact_id' => $contact['id'], 'segment_id' => $a['id'], 'deleted' => true], $removed->toArray());
    $removed = $resend->contacts->segments->remove($email, $b['id']);
    eq([$b['id'], true], [$removed['id'], $removed['deleted']]);
    eq([$c['id']], ids($resend->contacts->segments->list($email)));
    eq([], $resend->contacts->list(['segment_id' => $a['id']])['data']);
    $resend->segments->remove($c['id']);
    eq([], $resend->contacts->segments->list($contact['id'])['data'], 'a deleted segment leaves');
    fails(fn () => $resend->contacts->segments->add($contact['id'], random_id()), 404, 'not_found');
    fails(fn () => $resend->contacts->segments->add(random_id(), $a['id']), 404, 'not_found');
});

test("a contact's topics: list and update", function () {
    $resend = client(team_key('contact-topics'));
    $weekly = $resend->topics->create(['name' => 'Weekly', 'default_subscription' => 'opt_in', 'description' => 'Every Monday']);
    $offers = $resend->topics->create(['name' => 'Offers', 'default_subscription' => 'opt_out']);
    $email = unique_address('topics');
    $contact = $resend->contacts->create(['email' => $email]);
    $subscriptions = function (string $contact) use ($resend): array {
        $listed = $resend->contacts->topics->get($contact);
        eq(['list', false], [$listed['object'], $listed['has_more']]);
        $by = [];
        foreach ($listed['data'] as $topic) {
            $by[$topic['id']] = $topic->toArray();
        }
        return $by;
    };
    $before = $subscriptions($contact['id']);
    eq(2, count($before));
    eq(['Weekly', 'Every Monday', 'opt_in'], [$before[$weekly['id']]['name'], $before[$weekly['id']]['description'], $before[$weekly['id']]['subscription']], "the topic's default");
    eq([null, 'opt_out'], [$before[$offers['id']]['description'], $before[$offers['id']]['subscription']]);

    // The wrapped form, `{"topics": [...]}`.
    $choices = [['id' => $weekly['id'], 'subscription' => 'opt_out'], ['id' => $offers['id'], 'subscription' => 'opt_in']];
    $updated = $resend->contacts->topics->update($contact['id'], ['topics' => $choices]);
    check($updated instanceof Resend\Contact, 'a Resend\Contact');
    eq(['contact_id', 'id', 'object', 'topics'], keys_of($updated));
    eq(['contact_topics', $contact['id'], $contact['id']], [$updated['object'], $updated['id'], $updated['contact_id']]);
    $sorted = function (array $topics): array {
        usort($topics, fn ($x, $y) => strcmp($x['id'], $y['id']));
        return $topics;
    };
    eq($sorted($choices), $sorted($updated['topics']));
    $after = $subscriptions($email);
    eq(['opt_out', 'opt_in'], [$after[$weekly['id']]['subscription'], $after[$offers['id']]['subscription']]);

    // The bare array (a PHP list is sent as a JSON array), by address.
    $resend->contacts->topics->update($email, [['id' => $weekly['id'], 'subscription' => 'opt_in']]);
    $after = $subscriptions($contact['id']);
    eq(['opt_in', 'opt_in'], [$after[$weekly['id']]['subscription'], $after[$offers['id']]['subscription']], 'a topic not sent is kept');

    fails(fn () => $resend->contacts->topics->update($contact['id'], ['topics' => [['id' => random_id(), 'subscription' => 'opt_in']]]), 404, 'not_found');
    fails(fn () => $resend->contacts->topics->update($contact['id'], ['topics' => [['id' => $weekly['id'], 'subscription' => 'maybe']]]), 422, 'validation_error');
});

test('import with the default columns, polled and listed', function () {
    $resend = client(team_key('imports'));
    $existingEmail = unique_address('import-existing');
    $existing = $resend->contacts->create(['email' => $existingEmail, 'first_name' => 'Old']);
    [$a, $b] = [unique_address('import-a'), unique_address('import-b')];
    $created = $resend->contacts->imports->create(['file' => csv_file(
        'email,first_name,last_name,unsubscribed',
        "$a,Ann,Lee,false",
        'not-an-address,Bad,Row,false',
        "$b,Bo,Ek,true",
        "$existingEmail,New,Name,false",
    )]);
    check($created instanceof Resend\Contacts\Import, 'a Resend\Contacts\Import');
    eq(['object' => 'contact_import', 'id' => $created['id']], $created->toArray());
    matches(UUID_RE, $created['id']);

    $done = completed_import($resend, $created['id']);
    eq(['contact_import', $created['id']], [$done['object'], $done['id']]);
    matches(TIMESTAMP_RE, $done['created_at']);
    matches(TIMESTAMP_RE, $done['completed_at']);
    eq(['total' => 4, 'created' => 2, 'updated' => 1, 'skipped' => 0, 'failed' => 1], $done['counts'], 'on_conflict defaults to upsert');
    eq(1, $done['errors_total']);
    eq(['line', 'reason', 'row'], keys_of($done['errors'][0]));
    eq([3, 2], [$done['errors'][0]['line'], $done['errors'][0]['row']]);

    $ann = $resend->contacts->get($a);
    eq(['Ann', 'Lee', false], [$ann['first_name'], $ann['last_name'], $ann['unsubscribed']]);
    eq(['Bo', true], [$resend->contacts->get($b)['first_name'], $resend->contacts->get($b)['unsubscribed']]);
    $again = $resend->contacts->get($existingEmail);
    eq([$existing['id'], 'New', 'Name'], [$again['id'], $again['first_name'], $again['last_name']]);

    $listed = $resend->contacts->imports->list();
    eq(['list', false], [$listed['object'], $listed['has_more']]);
    eq([[
        'id' => $created['id'],
        'status' => 'completed',
        'created_at' => $done['created_at'],
        'completed_at' => $done['completed_at'],
        'counts' => $done['counts'],
    ]], to_plain($listed['data']));
    eq([$created['id']], ids($resend->contacts->imports->list(['status' => 'completed'])));
    eq([], $resend->contacts->imports->list(['status' => 'in_progress'])['data']);
    fails(fn () => $resend->contacts->imports->get(random_id()), 404, 'not_found');
});

test('import with a column map, segments, topics and on_conflict skip', function () {
    $resend = client(team_key('imports-mapped'));
    $segment = $resend->segments->create(['name' => 'Imported']);
    $topic = $resend->topics->create(['name' => 'Digest', 'default_subscription' => 'opt_out']);
    $resend->contactProperties->create(['key' => 'plan', 'type' => 'string']);
    $resend->contactProperties->create(['key' => 'seats', 'type' => 'number']);
    $existingEmail = unique_address('mapped-existing');
    $existing = $resend->contacts->create(['email' => $existingEmail, 'first_name' => 'Old']);
    $fresh = unique_address('mapped-new');
    // The SDK sends arrays as JSON text fields of the multipart body.
    $created = $resend->contacts->imports->create([
        'file' => csv_file('E-mail,Given,Plan,Seats', "$fresh,Cy,pro,5", "$existingEmail,Changed,basic,1"),
        'column_map' => [
            'email' => 'E-mail',
            'first_name' => 'Given',
            'properties' => ['plan' => ['column' => 'Plan', 'type' => 'string'], 'seats' => ['column' => 'Seats', 'type' => 'number']],
        ],
        'on_conflict' => 'skip',
        'segments' => [['id' => $segment['id']]],
        'topics' => [['id' => $topic['id'], 'subscription' => 'opt_in']],
    ]);
    $done = completed_import($resend, $created['id']);
    eq(['total' => 2, 'created' => 1, 'updated' => 0, 'skipped' => 1, 'failed' => 0], $done['counts']);
    eq([[], 0], [$done['errors'], $done['errors_total']]);
    $cy = $resend->contacts->get($fresh);
    eq('Cy', $cy['first_name']);
    eq(['plan' => ['type' => 'string', 'value' => 'pro'], 'seats' => ['type' => 'number', 'value' => '5']], $cy['properties']);
    eq([$segment['id']], ids($resend->contacts->segments->list($cy['id'])));
    eq([[$topic['id'], 'opt_in']], array_map(fn ($t) => [$t['id'], $t['subscription']], $resend->contacts->topics->get($cy['id'])['data']));
    $skipped = $resend->contacts->get($existingEmail);
    eq([$existing['id'], 'Old', []], [$skipped['id'], $skipped['first_name'], $skipped['properties']]);
});

test('the audience belongs to one team; sending keys are refused', function () {
    $owner = client(team_key('audience-owner'));
    $segment = $owner->segments->create(['name' => 'Mine']);
    $topic = $owner->topics->create(['name' => 'Mine', 'default_subscription' => 'opt_in']);
    $property = $owner->contactProperties->create(['key' => 'mine', 'type' => 'string']);
    $contact = $owner->contacts->create(['email' => unique_address('owned')]);
    $sending = client($owner->apiKeys->create(['name' => unique_name('sending'), 'permission' => 'sending_access'])['token']);
    $other = client(team_key('audience-other'));
    fails(fn () => $other->segments->get($segment['id']), 404, 'not_found');
    fails(fn () => $other->topics->get($topic['id']), 404, 'not_found');
    fails(fn () => $other->contactProperties->get($property['id']), 404, 'not_found');
    fails(fn () => $other->contacts->get($contact['id']), 404, 'not_found');
    fails(fn () => $other->contacts->segments->add($contact['id'], $segment['id']), 404, 'not_found');
    eq([], $other->segments->list()['data']);
    foreach ([
        fn () => $sending->contacts->list(),
        fn () => $sending->contacts->create(['email' => unique_address('nope')]),
        fn () => $sending->segments->list(),
        fn () => $sending->topics->list(),
        fn () => $sending->contactProperties->list(),
        fn () => $sending->contacts->imports->list(),
        fn () => $sending->contacts->segments->list($contact['id']),
        fn () => $sending->contacts->topics->get($contact['id']),
    ] as $call) {
        fails($call, 401, 'restricted_api_key');
    }
});

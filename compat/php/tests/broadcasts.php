<?php
// Broadcasts through resend-php: $resend->broadcasts->create / get / list / update / send
// (now and `scheduled_at`) / cancel / remove (resend-php 1.10 has no duplicate). In the
// operator's team: a broadcast's `from` must be on a verified domain even as a draft, and
// only the operator's key may verify one without DNS. Every segment and contact is the
// test's own; lists are searched page by page.

declare(strict_types=1);

const DRAFT_PROGRESS = ['status' => 'draft', 'total' => 0, 'sent' => 0, 'unsubscribed' => 0, 'suppressed' => 0,
    'failed' => 0, 'canceled' => 0, 'finished_at' => null];
// herald writes a broadcast's times in ISO 8601 (`…T…Z`); Resend's other resources `… +00`.
const BROADCAST_TIME_RE = '/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00)$/';

function broadcast_sender(): string
{
    static $sender = null;
    return $sender ??= 'Compat News <news@' . verified_domain('broadcasts')['name'] . '>';
}

function broadcast_instant(mixed $text): float
{
    matches(BROADCAST_TIME_RE, $text);
    return (float) (new DateTimeImmutable(str_replace(' ', 'T', preg_replace('/\+00$/', 'Z', $text))))->format('U.u');
}

function broadcast_recent(mixed $text): void
{
    $age = microtime(true) - broadcast_instant($text);
    check($age > -5 && $age < 60, "$text is not now");
}

/** A new segment holding a new contact for each of $people: its id and the contacts' ids. */
function segment_of(array ...$people): array
{
    $segment = client()->segments->create(['name' => 'Broadcast ' . token(4)]);
    $ids = [];
    foreach ($people as $person) {
        $ids[$person['email']] = client()->contacts->create(array_merge($person, ['segments' => [['id' => $segment['id']]]]))['id'];
    }
    return [$segment['id'], $ids];
}

function broadcast_listed(string $id): Resend\Broadcast
{
    $options = ['limit' => 100];
    while (true) {
        $page = client()->broadcasts->list($options);
        eq('list', $page['object']);
        foreach ($page['data'] as $item) {
            if ($item['id'] === $id) {
                return $item;
            }
        }
        check($page['has_more'] && $page['data'] !== [], "broadcast $id is not listed");
        $options = ['limit' => 100, 'after' => $page['data'][count($page['data']) - 1]['id']];
    }
}

function broadcast_address(string $label): string
{
    return "php-bc-$label-" . token() . '@inbox.test';
}

test('draft: create, get, update, list, schedule, cancel, remove', function () {
    [$segmentId] = segment_of(['email' => broadcast_address('draft')]);
    $topicId = client()->topics->create(['name' => 'Broadcast ' . token(4), 'default_subscription' => 'opt_in'])['id'];
    $name = 'Launch ' . token(4);
    $content = ['subject' => 'Hello {{{FIRST_NAME|there}}}', 'html' => '<p>Hi {{{FIRST_NAME|there}}}</p>', 'text' => 'Hi'];
    $created = client()->broadcasts->create(array_merge([
        'segment_id' => $segmentId, 'from' => broadcast_sender(), 'name' => $name, 'reply_to' => 'reply@example.test',
        'preview_text' => 'Out now', 'topic_id' => $topicId,
    ], $content));
    check($created instanceof Resend\Broadcast, 'a Resend\Broadcast');
    eq(['object' => 'broadcast', 'id' => $created['id']], $created->toArray());
    $id = $created['id'];

    $got = client()->broadcasts->get($id)->toArray();
    broadcast_recent($got['created_at']);
    unset($got['created_at']);
    eq(array_merge([
        'object' => 'broadcast', 'id' => $id, 'name' => $name, 'audience_id' => $segmentId, 'segment_id' => $segmentId,
        'from' => broadcast_sender(),
    ], $content, [
        'reply_to' => ['reply@example.test'], 'preview_text' => 'Out now', 'status' => 'draft', 'scheduled_at' => null,
        'sent_at' => null, 'topic_id' => $topicId, 'progress' => DRAFT_PROGRESS,
    ]), $got, 'every field');

    $changes = ['name' => "$name v2", 'subject' => 'Updated', 'html' => '<p>New</p>', 'reply_to' => ['a@example.test', 'b@example.test']];
    eq(['object' => 'broadcast', 'id' => $id], client()->broadcasts->update($id, $changes)->toArray());
    $updated = client()->broadcasts->get($id);
    foreach ($changes as $field => $value) {
        eq($value, $updated[$field], $field);
    }
    eq(['Hi', 'Out now', $topicId], [$updated['text'], $updated['preview_text'], $updated['topic_id']]);
    eq([
        'id' => $id, 'name' => "$name v2", 'audience_id' => $segmentId, 'segment_id' => $segmentId, 'status' => 'draft',
        'created_at' => $updated['created_at'], 'scheduled_at' => null, 'sent_at' => null, 'topic_id' => $topicId,
        'progress' => DRAFT_PROGRESS,
    ], broadcast_listed($id)->toArray());
    $other = client()->broadcasts->create(['segment_id' => $segmentId, 'from' => broadcast_sender(), 'subject' => 'Gone', 'text' => 'x']);
    $one = client()->broadcasts->list(['limit' => 1]);
    eq([[$other['id']], true], [ids($one), $one['has_more']], 'newest first');
    eq([$id], ids(client()->broadcasts->list(['limit' => 1, 'after' => $other['id']])));
    eq(['object' => 'broadcast', 'id' => $other['id'], 'deleted' => true], client()->broadcasts->remove($other['id'])->toArray());
    fails(fn () => client()->broadcasts->get($other['id']), 404, 'not_found');

    // Scheduled: Resend's `queued`, herald's progress `scheduled`; no longer a draft.
    eq(['object' => 'broadcast', 'id' => $id], client()->broadcasts->send($id, ['scheduled_at' => 'in 1 hour'])->toArray());
    $scheduled = client()->broadcasts->get($id);
    eq(['queued', 'scheduled', null], [$scheduled['status'], $scheduled['progress']['status'], $scheduled['sent_at']]);
    $ahead = broadcast_instant($scheduled['scheduled_at']) - microtime(true);
    check($ahead > 3540 && $ahead < 3660, "scheduled_at {$scheduled['scheduled_at']}");
    eq('queued', broadcast_listed($id)['status']);
    fails(fn () => client()->broadcasts->update($id, ['name' => 'Late']), 422, 'validation_error');
    fails(fn () => client()->broadcasts->remove($id), 422, 'validation_error');
    fails(fn () => client()->broadcasts->send($id, []), 422, 'validation_error');

    eq(['object' => 'broadcast', 'id' => $id, 'canceled' => 0], client()->broadcasts->cancel($id)->toArray());
    $canceled = client()->broadcasts->get($id);
    eq(['draft', 'canceled', 0], [$canceled['status'], $canceled['progress']['status'], $canceled['progress']['canceled']]);
    broadcast_recent($canceled['progress']['finished_at']);
    fails(fn () => client()->broadcasts->cancel($id), 422, 'validation_error');

    fails(fn () => client()->broadcasts->get('not-a-broadcast'), 422, 'invalid_parameter');
});

test('send now: one personalised email per contact, skipping the unsubscribed and suppressed', function () {
    $tier = 'tier_' . token(4);
    client()->contactProperties->create(['key' => $tier, 'type' => 'string']);
    [$ann, $bo, $cy, $dee] = array_map('broadcast_address', ['ann', 'bo', 'cy', 'dee']);
    client()->suppressions->add(['email' => $dee]);
    [$segmentId, $ids] = segment_of(
        ['email' => $ann, 'first_name' => 'Ann', 'properties' => [$tier => 'gold <vip>']],
        ['email' => $bo, 'properties' => [$tier => 'silver']],
        ['email' => $cy, 'unsubscribed' => true, 'properties' => [$tier => 'gold']],
        ['email' => $dee, 'properties' => [$tier => 'gold']],
    );
    $id = client()->broadcasts->create([
        'segment_id' => $segmentId, 'from' => broadcast_sender(), 'subject' => 'Hi {{{FIRST_NAME|there}}}',
        'html' => "<p>{{{contact.first_name|Friend}}} on {{{{$tier}}}}</p>", 'text' => "{{{EMAIL}}} on {{{contact.$tier}}}",
    ])['id'];
    eq(['object' => 'broadcast', 'id' => $id], client()->broadcasts->send($id, [])->toArray());

    $broadcast = eventually(function () use ($id) {
        $b = client()->broadcasts->get($id);
        check($b['progress']['status'] !== 'canceled', show($b['progress']));
        return $b['progress']['status'] === 'sent' ? $b : null;
    }, 30, "broadcast $id sent");
    eq('sent', $broadcast['status']);
    broadcast_recent($broadcast['sent_at']);
    $progress = $broadcast['progress'];
    broadcast_recent($progress['finished_at']);
    unset($progress['finished_at']);
    eq(['status' => 'sent', 'total' => 4, 'sent' => 2, 'unsubscribed' => 1, 'suppressed' => 1, 'failed' => 0, 'canceled' => 0], $progress);

    // The emails it sent, found by the tag herald gives them.
    $expected = [
        $ann => ['Hi Ann', '<p>Ann on gold &lt;vip&gt;</p>', "$ann on gold <vip>"],
        $bo => ['Hi there', '<p>Friend on silver</p>', "$bo on silver"],
    ];
    $found = [];
    foreach (client()->emails->list(['limit' => 100])['data'] as $item) {
        if (count($item['to']) === 1 && isset($expected[$item['to'][0]])) {
            $found[$item['to'][0]] = client()->emails->get($item['id']);
        }
    }
    eq(2, count($found), 'one email to each subscribed contact');
    foreach ($expected as $to => [$subject, $html, $text]) {
        eq([$subject, $html, $text], [$found[$to]['subject'], $found[$to]['html'], $found[$to]['text']], $to);
        eq([['name' => 'broadcast_id', 'value' => $id]], $found[$to]['tags']);
    }
    fails(fn () => client()->broadcasts->cancel($id), 422, 'validation_error');
    fails(fn () => client()->broadcasts->remove($id), 422, 'validation_error');
});

test('refusals', function () {
    [$segmentId] = segment_of(['email' => broadcast_address('refusals')]);
    $empty = client()->segments->create(['name' => 'Empty ' . token(4)])['id'];
    $base = ['segment_id' => $segmentId, 'from' => broadcast_sender(), 'subject' => 'Hello', 'html' => '<p>Hello</p>'];
    $unverified = unique_domain('unverified');
    client()->domains->create(['name' => $unverified]);
    $refused = function (array $params, string $text, string $name = 'validation_error') {
        contains($text, fails(fn () => client()->broadcasts->create($params), 422, $name)->getMessage());
    };
    $refused(array_merge($base, ['segment_id' => random_id()]), 'segment');
    $refused(array_merge($base, ['from' => "News <news@$unverified>"]), 'not verified');
    $refused(array_merge($base, ['segment_id' => $empty, 'send' => true]), 'no contacts');
    $refused(array_merge($base, ['scheduled_at' => 'in 1 hour']), 'scheduled_at');
    $without = fn (string $field) => array_diff_key($base, [$field => 1]);
    $refused($without('subject'), 'subject', 'missing_required_field');
    $refused($without('segment_id'), 'segment_id', 'missing_required_field');
    $draft = client()->broadcasts->create(array_merge($base, ['segment_id' => $empty]))['id'];
    contains('no contacts', fails(fn () => client()->broadcasts->send($draft, []), 422, 'validation_error')->getMessage());
    contains('not verified', fails(fn () => client()->broadcasts->update($draft, ['from' => "news@$unverified"]), 422, 'validation_error')->getMessage());
    fails(fn () => client()->broadcasts->cancel($draft), 422, 'validation_error');
    fails(fn () => client()->broadcasts->get(random_id()), 404, 'not_found');
    $key = client()->apiKeys->create(['name' => unique_name('broadcasts-sending'), 'permission' => 'sending_access']);
    fails(fn () => client($key['token'])->broadcasts->list(), 401, 'restricted_api_key');
    client()->apiKeys->remove($key['id']);
});

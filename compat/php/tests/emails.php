<?php
// Emails through resend-php: $resend->emails->send / create / get / list / update / cancel
// and $resend->batch->send (x-batch-validation `strict` by default, `permissive` when
// asked), with `idempotency_key` options, from a domain the suite verifies without DNS.

declare(strict_types=1);

function email_domain(): array
{
    static $domain = null;
    return $domain ??= verified_domain('emails');
}

function email_sender(): string
{
    return 'Compat Sender <hello@' . email_domain()['name'] . '>';
}

function email_subject(string $label): string
{
    return "php $label " . token(6);
}

/** A minimal valid email. */
function email_params(string $label, array $extra = []): array
{
    return array_merge([
        'from' => email_sender(),
        'to' => 'someone@recipient.test',
        'subject' => email_subject($label),
        'text' => "Body of $label",
    ], $extra);
}

/** The emails with $subject among the newest 100 of the operator's team. */
function emails_with_subject(string $subject): array
{
    $listed = client()->emails->list(['limit' => 100]);
    return array_values(array_filter($listed['data'], fn ($e) => $e['subject'] === $subject));
}

test('send with every field, get returns them', function () {
    $params = [
        'from' => email_sender(),
        'to' => ['alice@recipient.test', 'bob@recipient.test'],
        'cc' => 'carol@recipient.test',
        'bcc' => ['dave@recipient.test', 'erin@recipient.test'],
        'reply_to' => 'replies@recipient.test',
        'subject' => email_subject('every field'),
        'html' => '<p>Hello <strong>there</strong></p>',
        'text' => 'Hello there',
        'headers' => ['X-Entity-Ref-ID' => 'ref-123', 'List-Unsubscribe' => '<mailto:unsubscribe@recipient.test>'],
        'tags' => [['name' => 'category', 'value' => 'welcome'], ['name' => 'user_id', 'value' => 'u-42']],
    ];
    $sent = client()->emails->send($params);
    check($sent instanceof Resend\Email, 'a Resend\Email');
    eq(['id'], keys_of($sent), 'only the id');
    matches(UUID_RE, $sent->id);

    $got = client()->emails->get($sent['id']);
    eq('email', $got['object']);
    eq($sent['id'], $got['id']);
    eq($params['from'], $got['from']);
    eq($params['to'], $got['to']);
    eq(['carol@recipient.test'], $got['cc']);
    eq($params['bcc'], $got['bcc']);
    eq(['replies@recipient.test'], $got['reply_to']);
    eq($params['subject'], $got['subject']);
    eq($params['html'], $got['html']);
    eq($params['text'], $got['text']);
    eq($params['tags'], $got['tags']);
    eq('sent', $got['last_event']);
    eq(null, $got['scheduled_at']);
    eq("<{$sent['id']}@mail.herald.test>", $got['message_id']);
    assert_recent($got['created_at']);
});

test('create is send; to as one string; absent lists read as null', function () {
    $params = email_params('one recipient', ['to' => 'single@recipient.test', 'html' => '<p>only html</p>']);
    unset($params['text']);
    $sent = client()->emails->create($params);
    $got = client()->emails->get($sent['id']);
    eq(['single@recipient.test'], $got['to']);
    eq([null, null, null, null], [$got['cc'], $got['bcc'], $got['reply_to'], $got['text']]);
    eq('<p>only html</p>', $got['html']);
    eq('sent', $got['last_event']);
});

test('send answers 200 with only the id on the wire', function () {
    $response = raw('POST', '/emails', email_params('wire'));
    eq(200, $response['status'], $response['text']);
    eq(['id'], array_keys($response['json']));
});

test('attachments as base64, with content type and content id (inline)', function () {
    $png = base64_decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==');
    $params = email_params('attachments', [
        'html' => '<p>Logo: <img src="cid:logo-1" alt="logo"></p>',
        'attachments' => [
            ['filename' => 'hello.txt', 'content' => base64_encode("hello from PHP\n")],
            ['filename' => 'binary.bin', 'content' => base64_encode("\x00\x01\x02\xfd\xfe\xff")],
            ['filename' => 'data.csv', 'content' => base64_encode("a,b\n1,2\n"), 'content_type' => 'text/csv'],
            ['filename' => 'logo.png', 'content' => base64_encode($png), 'content_type' => 'image/png', 'content_id' => 'logo-1'],
        ],
    ]);
    $sent = client()->emails->send($params);
    matches(UUID_RE, $sent['id']);
    $got = client()->emails->get($sent['id']);
    eq($params['subject'], $got['subject']);
    eq($params['html'], $got['html']);
    eq('sent', $got['last_event']);
    fails(fn () => client()->emails->send(email_params('bad attachment', ['attachments' => [['filename' => 'empty.txt']]])), 422, 'invalid_attachment');
});

test('idempotency key: the same payload sends once, another payload gets 409', function () {
    $key = 'php-' . random_id();
    $params = email_params('idempotent');
    $first = client()->emails->send($params, ['idempotency_key' => $key]);
    $second = client()->emails->send($params, ['idempotency_key' => $key]);
    eq($first['id'], $second['id'], 'the replay answers the first id');
    eq(1, count(emails_with_subject($params['subject'])), 'one email was sent');
    $other = array_merge($params, ['subject' => email_subject('idempotent other')]);
    fails(fn () => client()->emails->send($other, ['idempotency_key' => $key]), 409, 'invalid_idempotent_request');
    eq([], emails_with_subject($other['subject']));
    check(client()->emails->send($params, ['idempotency_key' => 'php-' . random_id()])['id'] !== $first['id'], 'a new key sends again');
    fails(fn () => client()->emails->send($params, ['idempotency_key' => str_repeat('k', 257)]), 400, 'invalid_idempotency_key');
});

test('batch sends every email and answers the ids in order', function () {
    $emails = [
        email_params('batch 0'),
        email_params('batch 1', ['to' => ['x@recipient.test', 'y@recipient.test']]),
        email_params('batch 2'),
    ];
    $result = client()->batch->send($emails);
    check($result instanceof Resend\Collection, 'a Resend\Collection');
    eq(['data'], keys_of($result), 'strict mode lists no errors');
    eq(3, count($result['data']));
    $ids = ids($result);
    foreach ($ids as $id) {
        matches(UUID_RE, $id);
    }
    eq(3, count(array_unique($ids)));
    foreach ($emails as $i => $params) {
        $got = client()->emails->get($ids[$i]);
        eq($params['subject'], $got['subject']);
        eq('sent', $got['last_event']);
    }
    eq(['x@recipient.test', 'y@recipient.test'], client()->emails->get($ids[1])['to']);
    // `create` is the same call.
    eq(1, count(client()->batch->create([email_params('batch create')])['data']));
});

test('batch strict (the default) refuses the whole batch for one invalid email', function () {
    $emails = [email_params('strict 0'), email_params('strict 1', ['to' => 'not-an-address']), email_params('strict 2')];
    fails(fn () => client()->batch->send($emails), 422, 'validation_error');
    fails(fn () => client()->batch->send($emails, ['batch_validation' => 'strict']), 422, 'validation_error');
    fails(fn () => client()->batch->send([email_params('lenient')], ['batch_validation' => 'lenient']), 422, 'validation_error');
    foreach ($emails as $params) {
        eq([], emails_with_subject($params['subject']), 'nothing was sent');
    }
});

test('batch permissive sends the valid emails and lists the errors', function () {
    $emails = [email_params('permissive 0'), email_params('permissive 1', ['to' => 'not-an-address']), email_params('permissive 2')];
    $result = client()->batch->send($emails, ['batch_validation' => 'permissive']);
    eq(2, count($result['data']));
    eq(1, count($result['errors']));
    eq(1, $result['errors'][0]['index']);
    check(is_string($result['errors'][0]['message']) && $result['errors'][0]['message'] !== '', 'an error message');
    eq($emails[0]['subject'], client()->emails->get($result['data'][0]['id'])['subject']);
    eq($emails[2]['subject'], client()->emails->get($result['data'][1]['id'])['subject']);
    eq([], emails_with_subject($emails[1]['subject']));
});

test('batch honours an idempotency key', function () {
    $key = 'php-batch-' . random_id();
    $emails = [email_params('batch idem 0'), email_params('batch idem 1')];
    $first = client()->batch->send($emails, ['idempotency_key' => $key]);
    $again = client()->batch->send($emails, ['idempotency_key' => $key]);
    eq(ids($first), ids($again));
    eq(1, count(emails_with_subject($emails[0]['subject'])));
    fails(fn () => client()->batch->send([$emails[0]], ['idempotency_key' => $key]), 409, 'invalid_idempotent_request');
});

test('scheduled_at in natural language schedules the email', function () {
    $sent = client()->emails->send(email_params('natural language', ['scheduled_at' => 'in 1 hour']));
    $scheduled = client()->emails->get($sent['id']);
    eq('scheduled', $scheduled['last_event']);
    $ahead = parse_timestamp($scheduled['scheduled_at']) - microtime(true);
    check(abs($ahead - 3600) < 60, "scheduled_at {$scheduled['scheduled_at']} is in an hour");
    client()->emails->cancel($sent['id']);
});

test('a scheduled email can be rescheduled and canceled', function () {
    $at = microtime(true) + 3600;
    $sent = client()->emails->send(email_params('scheduled', ['scheduled_at' => iso($at)]));
    $scheduled = client()->emails->get($sent['id']);
    eq('scheduled', $scheduled['last_event']);
    check(abs(parse_timestamp($scheduled['scheduled_at']) - $at) < 1, "scheduled_at {$scheduled['scheduled_at']}");

    $target = microtime(true) + 7200;
    $updated = client()->emails->update($sent['id'], ['scheduled_at' => iso($target)]);
    eq(['object' => 'email', 'id' => $sent['id']], $updated->toArray());
    $moved = client()->emails->get($sent['id']);
    eq('scheduled', $moved['last_event']);
    check(abs(parse_timestamp($moved['scheduled_at']) - $target) < 1, "moved to {$moved['scheduled_at']}");

    $canceled = client()->emails->cancel($sent['id']);
    eq(['object' => 'email', 'id' => $sent['id']], $canceled->toArray());
    eq('canceled', client()->emails->get($sent['id'])['last_event']);
    fails(fn () => client()->emails->cancel($sent['id']), 422, 'validation_error');
    fails(fn () => client()->emails->update($sent['id'], ['scheduled_at' => iso($target)]), 422, 'validation_error');
});

test('an email sent now cannot be canceled or rescheduled', function () {
    $sent = client()->emails->send(email_params('not scheduled'));
    fails(fn () => client()->emails->cancel($sent['id']), 422, 'validation_error');
    fails(fn () => client()->emails->update($sent['id'], ['scheduled_at' => 'in 1 hour']), 422, 'validation_error');
    eq('sent', client()->emails->get($sent['id'])['last_event']);
});

test('list returns the envelope newest first without bodies, and pages', function () {
    $first = client()->emails->send(email_params('list a', ['html' => '<p>a</p>']));
    $second = client()->emails->send(email_params('list b', ['html' => '<p>b</p>', 'cc' => 'cc@recipient.test']));
    $listed = client()->emails->list();
    check($listed instanceof Resend\Collection, 'a Resend\Collection');
    eq('list', $listed['object']);
    check(is_bool($listed['has_more']), 'has_more');
    check(count($listed['data']) <= 20, 'the default page holds at most 20');
    $ids = ids($listed);
    check(in_array($first['id'], $ids, true) && in_array($second['id'], $ids, true), 'both listed');
    check(array_search($second['id'], $ids, true) < array_search($first['id'], $ids, true), 'the newer first');
    $item = $listed['data'][array_search($second['id'], $ids, true)];
    check($item instanceof Resend\Email, 'items are Resend\Email');
    $full = client()->emails->get($second['id']);
    foreach (['id', 'to', 'from', 'created_at', 'subject', 'bcc', 'cc', 'reply_to', 'last_event', 'scheduled_at', 'message_id'] as $field) {
        check(array_key_exists($field, $item->toArray()), "list item has $field");
        eq($full[$field], $item[$field], $field);
    }
    foreach (['html', 'text', 'tags', 'object'] as $field) {
        check(!array_key_exists($field, $item->toArray()), "list item has no $field");
    }
    $page = client()->emails->list(['limit' => 1]);
    eq(1, count($page['data']));
    eq(true, $page['has_more']);
    $next = client()->emails->list(['limit' => 1, 'after' => $page['data'][0]['id']]);
    eq(1, count($next['data']));
    check($next['data'][0]['id'] !== $page['data'][0]['id'], 'the next page moves on');
    $back = client()->emails->list(['limit' => 1, 'before' => $next['data'][0]['id']]);
    eq(ids($page), ids($back));
});

test('send refusals: unverified from 403, missing fields, header injection, not found', function () {
    $unverified = unique_domain('unverified');
    client()->domains->create(['name' => $unverified]);
    $error = fails(fn () => client()->emails->send(email_params('unverified', ['from' => "Someone <a@$unverified>"])), 403, 'validation_error');
    contains($unverified, $error->getMessage());
    fails(fn () => client()->emails->send(email_params('unknown', ['from' => 'a@' . unique_domain('unknown')])), 403, 'validation_error');
    $params = email_params('no subject');
    unset($params['subject']);
    contains('subject', fails(fn () => client()->emails->send($params), 422, 'missing_required_field')->getMessage());
    $params = email_params('no to');
    unset($params['to']);
    fails(fn () => client()->emails->send($params), 422, 'missing_required_field');
    foreach (["a\r\nBcc: victim@recipient.test", "line\nbreak"] as $value) {
        $error = fails(fn () => client()->emails->send(email_params('header injection', ['headers' => ['X-Custom' => $value]])), 422, 'validation_error');
        contains('headers', $error->getMessage());
    }
    fails(fn () => client()->emails->get(random_id()), 404, 'not_found');
    fails(fn () => client()->emails->cancel(random_id()), 404, 'not_found');
    fails(fn () => client()->emails->get('not-an-email'), 422, 'invalid_parameter');
});

test('a sending key sends from its domain but cannot read emails', function () {
    $created = client()->apiKeys->create(['name' => unique_name('emails-sending'), 'permission' => 'sending_access', 'domain_id' => email_domain()['id']]);
    $sending = client($created['token']);
    $sent = $sending->emails->send(email_params('sending key'));
    eq(1, count($sending->batch->send([email_params('sending key batch')])['data']));
    fails(fn () => $sending->emails->get($sent['id']), 401, 'restricted_api_key');
    fails(fn () => $sending->emails->list(), 401, 'restricted_api_key');
    check(str_starts_with(client()->emails->get($sent['id'])['subject'], 'php sending key'), 'sent');
    client()->apiKeys->remove($created['id']);
});

<?php
// Webhooks through resend-php: $resend->webhooks->create / get / list / update / remove,
// and $resend->webhooks->verify (Resend\WebhookSignature, which reads the `svix-*`
// headers) against real signed deliveries: a receiver of the suite's own (PHP's built-in
// server on 127.0.0.2, the one private address the suite's herald allows) fails each
// message's first try, and herald retries it. Other endpoints are a public address
// literal, which needs no DNS and is never reached (nothing is sent to them).

declare(strict_types=1);

use Resend\Exceptions\WebhookSignatureVerificationException;

function unique_endpoint(string $label): string
{
    return "https://93.184.216.34/php-$label-" . token();
}

test('create answers a signing secret and get shows the webhook', function () {
    $endpoint = unique_endpoint('create');
    $created = client()->webhooks->create(['endpoint' => $endpoint, 'events' => ['email.sent', 'email.bounced']]);
    check($created instanceof Resend\Webhook, 'a Resend\Webhook');
    eq(['id', 'object', 'signing_secret'], keys_of($created));
    eq('webhook', $created['object']);
    matches(UUID_RE, $created['id']);
    matches('/^whsec_[A-Za-z0-9+\/]+={0,2}$/', $created['signing_secret']);
    eq(32, strlen(base64_decode(substr($created['signing_secret'], 6))));

    $webhook = client()->webhooks->get($created['id']);
    eq(['created_at', 'endpoint', 'events', 'id', 'object', 'signing_secret', 'status'], keys_of($webhook));
    eq([$created['id'], $endpoint, ['email.sent', 'email.bounced'], 'enabled', $created['signing_secret']],
        [$webhook['id'], $webhook['endpoint'], $webhook['events'], $webhook['status'], $webhook['signing_secret']]);
    matches(TIMESTAMP_RE, $webhook['created_at']);
    client()->webhooks->remove($created['id']);
});

test('list pages newest first without secrets', function () {
    $resend = client(team_key('webhooks-list'));
    $endpoints = [unique_endpoint('list-0'), unique_endpoint('list-1'), unique_endpoint('list-2')];
    $ids = array_map(fn ($e) => $resend->webhooks->create(['endpoint' => $e, 'events' => ['domain.created']])['id'], $endpoints);
    $listed = $resend->webhooks->list();
    eq('list', $listed['object']);
    eq(false, $listed['has_more']);
    eq(array_reverse($endpoints), array_map(fn ($w) => $w['endpoint'], $listed['data']));
    eq(['created_at', 'endpoint', 'events', 'id', 'status'], keys_of($listed['data'][0]));
    $first = $resend->webhooks->list(['limit' => 2]);
    eq([true, [$ids[2], $ids[1]]], [$first['has_more'], ids($first)]);
    $second = $resend->webhooks->list(['limit' => 2, 'after' => $ids[1]]);
    eq([false, [$ids[0]]], [$second['has_more'], ids($second)]);
});

test('update changes endpoint, events and status; remove deletes', function () {
    $created = client()->webhooks->create(['endpoint' => unique_endpoint('update'), 'events' => ['email.sent']]);
    $updated = client()->webhooks->update($created['id'], ['status' => 'disabled']);
    eq(['object' => 'webhook', 'id' => $created['id']], $updated->toArray());
    $endpoint = unique_endpoint('updated');
    client()->webhooks->update($created['id'], ['endpoint' => $endpoint, 'events' => ['email.delivered', 'email.opened']]);
    $webhook = client()->webhooks->get($created['id']);
    eq(['disabled', $endpoint, ['email.delivered', 'email.opened'], $created['signing_secret']],
        [$webhook['status'], $webhook['endpoint'], $webhook['events'], $webhook['signing_secret']]);
    $removed = client()->webhooks->remove($created['id']);
    eq(['object' => 'webhook', 'id' => $created['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => client()->webhooks->get($created['id']), 404, 'not_found');
    fails(fn () => client()->webhooks->remove($created['id']), 404, 'not_found');
});

test('refusals have Resend names', function () {
    $endpoint = unique_endpoint('errors');
    fails(fn () => client()->webhooks->create(['endpoint' => $endpoint]), 422, 'missing_required_field');
    foreach ([[], ['email.exploded']] as $events) {
        fails(fn () => client()->webhooks->create(['endpoint' => $endpoint, 'events' => $events]), 422, 'validation_error');
    }
    contains('refused', fails(fn () => client()->webhooks->create(['endpoint' => 'http://169.254.169.254/latest', 'events' => ['email.sent']]), 422, 'validation_error')->getMessage());
    fails(fn () => client()->webhooks->get('nope'), 422, 'invalid_parameter');
});

test('webhooks belong to one team; sending keys are refused', function () {
    $created = client()->webhooks->create(['endpoint' => unique_endpoint('team'), 'events' => ['email.sent']]);
    $other = client(team_key('webhooks-other'));
    fails(fn () => $other->webhooks->get($created['id']), 404, 'not_found');
    eq([], $other->webhooks->list()['data']);
    $key = client()->apiKeys->create(['name' => unique_name('sending'), 'permission' => 'sending_access']);
    fails(fn () => client($key['token'])->webhooks->list(), 401, 'restricted_api_key');
    fails(fn () => client($key['token'])->webhooks->get($created['id']), 401, 'restricted_api_key');
    client()->apiKeys->remove($key['id']);
    client()->webhooks->remove($created['id']);
});

/** Starts the receiver; returns [endpoint URL, directory of requests, process]. */
function start_receiver(): array
{
    $dir = sys_get_temp_dir() . '/herald-php-hooks-' . token();
    mkdir($dir);
    $socket = stream_socket_server('tcp://127.0.0.2:0', $errno, $errstr);
    check($socket !== false, "cannot listen on 127.0.0.2: $errstr");
    $port = (int) substr(strrchr(stream_socket_get_name($socket, false), ':'), 1);
    fclose($socket);
    $process = proc_open(
        [PHP_BINARY, '-S', "127.0.0.2:$port", __DIR__ . '/../support/receiver.php'],
        [0 => ['file', '/dev/null', 'r'], 1 => ['file', "$dir.log", 'a'], 2 => ['file', "$dir.log", 'a']],
        $pipes,
        null,
        ['HERALD_HOOK_DIR' => $dir, 'PATH' => getenv('PATH')]
    );
    eventually(function () use ($port) {
        $s = @stream_socket_client("tcp://127.0.0.2:$port", $e, $m, 0.2);
        return $s === false ? null : (fclose($s) || true);
    }, 10, 'the receiver listening');
    return ["http://127.0.0.2:$port/hook", $dir, $process];
}

function stop_receiver(array $receiver): void
{
    [, $dir, $process] = $receiver;
    proc_terminate($process);
    proc_close($process);
    array_map('unlink', glob("$dir/*"));
    @rmdir($dir);
    @unlink("$dir.log");
}

test('signed deliveries verify with the SDK, retries keep their id', function () {
    $receiver = start_receiver();
    try {
        [$endpoint, $dir] = $receiver;
        $domain = verified_domain('hooks');
        $webhook = client()->webhooks->create(['endpoint' => $endpoint, 'events' => ['email.sent']]);
        $secret = $webhook['signing_secret'];
        $sent = client()->emails->send([
            'from' => "Hooks <hooks@{$domain['name']}>",
            'to' => ['someone@example.com'],
            'subject' => 'webhook signatures',
            'text' => 'hello',
        ]);
        // Other tests send from the operator's team meanwhile: this email's message is the
        // one whose payload names it; the receiver failed its first try, so there is a retry.
        [$first, $retry] = eventually(function () use ($dir, $sent) {
            $files = glob("$dir/*.json");
            sort($files, SORT_NATURAL);
            $mine = [];
            foreach ($files as $file) {
                $request = json_decode(file_get_contents($file), true);
                if ((json_decode($request['body'], true)['data']['email_id'] ?? null) === $sent['id']) {
                    $mine[] = $request;
                }
            }
            return count($mine) >= 2 ? $mine : null;
        }, 30, 'the email.sent message and its retry');
        eq($first['headers']['svix-id'], $retry['headers']['svix-id'], 'a retry keeps its id');
        eq($first['headers']['webhook-id'], $first['headers']['svix-id']);
        eq($first['body'], $retry['body']);
        foreach ([$first, $retry] as $request) {
            eq(true, client()->webhooks->verify($request['body'], $request['headers'], $secret));
            eq(true, Resend\WebhookSignature::verify($request['body'], $request['headers'], $secret));
            $payload = json_decode($request['body'], true);
            eq('email.sent', $payload['type']);
            eq($sent['id'], $payload['data']['email_id']);
        }
        $refused = function (string $body, array $headers, string $secret, string $why) {
            try {
                client()->webhooks->verify($body, $headers, $secret);
                fail("verified: $why");
            } catch (WebhookSignatureVerificationException) {
            }
        };
        $refused($first['body'] . ' ', $first['headers'], $secret, 'a changed body');
        $refused($first['body'], $first['headers'], 'whsec_' . base64_encode(str_repeat("\7", 32)), 'another secret');
        $old = array_merge($first['headers'], ['svix-timestamp' => (string) (time() - 3600)]);
        $refused($first['body'], $old, $secret, 'an hour-old timestamp');
        $bare = array_diff_key($first['headers'], ['svix-id' => 1, 'svix-timestamp' => 1, 'svix-signature' => 1]);
        $refused($first['body'], $bare, $secret, 'without the svix-* headers');
        client()->webhooks->remove($webhook['id']);
    } finally {
        stop_receiver($receiver);
    }
});

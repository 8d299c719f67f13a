<?php
// The suite's tiny test harness and the helpers every test file shares. The SDK reads
// RESEND_BASE_URL itself (Resend::client()); the key is passed to each client, the
// suite's operator key (RESEND_API_KEY) unless a test uses another.

declare(strict_types=1);

use Resend\Exceptions\ErrorException;

const UUID_RE = '/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/';
// Resend's resource timestamps: `2023-04-03 22:13:42.674981+00`.
const TIMESTAMP_RE = '/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00$/';

final class AssertionFailed extends Exception
{
}

final class Suite
{
    /** @var list<array{file: string, name: string, fn: callable}> */
    public static array $tests = [];
    public static string $file = '';
}

/** Registers a test; the runner runs them in the order their files register them. */
function test(string $name, callable $fn): void
{
    Suite::$tests[] = ['file' => Suite::$file, 'name' => $name, 'fn' => $fn];
}

function base_url(): string
{
    return rtrim((string) getenv('RESEND_BASE_URL'), '/');
}

function api_key(): string
{
    return (string) getenv('RESEND_API_KEY');
}

// ---------------------------------------------------------------------------------------
// Assertions

function show(mixed $value): string
{
    if ($value instanceof Resend\Contracts\Resource) {
        $value = to_plain($value);
    }
    $json = json_encode($value, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION);
    return $json === false ? var_export($value, true) : $json;
}

function fail(string $message): never
{
    throw new AssertionFailed($message);
}

function check(bool $condition, string $message = 'expected true'): void
{
    if (!$condition) {
        fail($message);
    }
}

/** $value with every associative array's keys sorted (lists keep their order). */
function canonical(mixed $value): mixed
{
    if ($value instanceof Resend\Contracts\Resource) {
        $value = $value->toArray();
    }
    if (!is_array($value)) {
        return $value;
    }
    $value = array_map('canonical', $value);
    if (!array_is_list($value)) {
        ksort($value);
    }
    return $value;
}

/**
 * Strict equality (`===`, so `1` is not `"1"`, `1` is not `1.0`, lists are compared in
 * order) of the two values, objects (JSON objects) compared without regard to key order.
 */
function eq(mixed $expected, mixed $actual, string $message = ''): void
{
    if (canonical($expected) !== canonical($actual)) {
        fail(($message !== '' ? "$message: " : '') . 'expected ' . show($expected) . ', got ' . show($actual));
    }
}

function matches(string $regex, mixed $actual, string $message = ''): void
{
    if (!is_string($actual) || preg_match($regex, $actual) !== 1) {
        fail(($message !== '' ? "$message: " : '') . show($actual) . " does not match $regex");
    }
}

function contains(string $needle, mixed $haystack, string $message = ''): void
{
    if (!is_string($haystack) || !str_contains($haystack, $needle)) {
        fail(($message !== '' ? "$message: " : '') . show($haystack) . ' does not contain ' . show($needle));
    }
}

/** The sorted keys of an array or an SDK resource. */
function keys_of(mixed $value): array
{
    $array = $value instanceof Resend\Contracts\Resource ? $value->toArray() : $value;
    $keys = array_keys($array);
    sort($keys);
    return $keys;
}

/** An SDK resource (or a collection of them) as plain nested arrays. */
function to_plain(mixed $value): mixed
{
    if ($value instanceof Resend\Contracts\Resource) {
        $value = $value->toArray();
    }
    if (is_array($value)) {
        return array_map('to_plain', $value);
    }
    return $value;
}

/** The ids of a list's items (a Collection or a plain array). */
function ids(mixed $items): array
{
    if ($items instanceof Resend\Collection) {
        $items = $items->data;
    }
    return array_map(fn ($item) => $item['id'], $items);
}

/**
 * Runs $call, which must throw the SDK's own Resend\Exceptions\ErrorException with the
 * given HTTP status (`getErrorCode()`), Resend error name (`getErrorType()`) and a
 * non-empty message (or exactly $message); returns the exception.
 */
function fails(callable $call, int $status, string $name, ?string $message = null): ErrorException
{
    try {
        $result = $call();
    } catch (ErrorException $error) {
        eq($status, $error->getErrorCode(), "status of " . $error->getMessage());
        eq($name, $error->getErrorType(), "name of " . $error->getMessage());
        check($error->getErrorMessage() !== '', 'the error has a message');
        eq($error->getMessage(), $error->getErrorMessage());
        if ($message !== null) {
            eq($message, $error->getErrorMessage(), 'message');
        }
        return $error;
    }
    fail("expected $status $name, the call returned " . show($result));
}

/** Polls $find (every 50 ms, up to $seconds) until it returns something other than null. */
function eventually(callable $find, float $seconds = 10.0, string $what = 'the condition'): mixed
{
    $deadline = microtime(true) + $seconds;
    while (true) {
        $found = $find();
        if ($found !== null && $found !== false) {
            return $found;
        }
        if (microtime(true) > $deadline) {
            fail("$what did not happen within {$seconds} s");
        }
        usleep(50_000);
    }
}

// ---------------------------------------------------------------------------------------
// Clients, names, raw requests

/** An SDK client for $key (the operator's by default), at RESEND_BASE_URL. */
function client(?string $key = null): Resend\Client
{
    return Resend::client($key ?? api_key());
}

function token(int $bytes = 5): string
{
    return bin2hex(random_bytes($bytes));
}

/** A domain name no other test (of any suite) uses. */
function unique_domain(string $label): string
{
    return "php-$label-" . token() . '.compat.herald.test';
}

/** An address no other test uses (lower case: a local part is compared as written). */
function unique_address(string $label): string
{
    return "php-$label-" . token() . '@compat.herald.test';
}

function unique_name(string $label): string
{
    return "php-$label-" . token(4);
}

function random_id(): string
{
    $b = random_bytes(16);
    $b[6] = chr((ord($b[6]) & 0x0f) | 0x40);
    $b[8] = chr((ord($b[8]) & 0x3f) | 0x80);
    return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
}

/**
 * A raw request to herald, bypassing the SDK: ['status', 'headers' (lower-case names),
 * 'text', 'json'].
 */
function raw(string $method, string $path, mixed $body = null, ?string $key = null, bool $noKey = false): array
{
    $headers = ['User-Agent: herald-compat'];
    if (!$noKey) {
        $headers[] = 'Authorization: Bearer ' . ($key ?? api_key());
    }
    $curl = curl_init(base_url() . $path);
    $options = [
        CURLOPT_CUSTOMREQUEST => $method,
        CURLOPT_RETURNTRANSFER => true,
        CURLOPT_HEADER => true,
        CURLOPT_TIMEOUT => 30,
    ];
    if ($body !== null) {
        $headers[] = 'Content-Type: application/json';
        $options[CURLOPT_POSTFIELDS] = is_string($body) ? $body : json_encode($body, JSON_THROW_ON_ERROR);
    }
    $options[CURLOPT_HTTPHEADER] = $headers;
    curl_setopt_array($curl, $options);
    $response = curl_exec($curl);
    if ($response === false) {
        fail("$method $path: " . curl_error($curl));
    }
    $status = curl_getinfo($curl, CURLINFO_RESPONSE_CODE);
    $headerSize = curl_getinfo($curl, CURLINFO_HEADER_SIZE);
    curl_close($curl);
    $head = substr($response, 0, $headerSize);
    $text = substr($response, $headerSize);
    $parsed = [];
    foreach (explode("\r\n", $head) as $line) {
        if (str_contains($line, ':')) {
            [$name, $value] = explode(':', $line, 2);
            $parsed[strtolower(trim($name))] = trim($value);
        }
    }
    $json = json_decode($text, true);
    return ['status' => $status, 'headers' => $parsed, 'text' => $text, 'json' => $json];
}

/** The first key of a new team of its own (`POST /teams` with the operator's key). */
function team_key(string $label): string
{
    $response = raw('POST', '/teams', ['name' => unique_name($label)]);
    eq(201, $response['status'], $response['text']);
    return $response['json']['api_key']['token'];
}

/**
 * Marks a domain verified without DNS: `POST /domains/{id}/verify` with
 * `{"skip_dns": true}`, which only the operator's key may send. The SDK's
 * `domains->verify()` sends `{}`, so this one goes raw.
 */
function verify_without_dns(string $id): void
{
    $response = raw('POST', "/domains/$id/verify", ['skip_dns' => true]);
    eq(200, $response['status'], $response['text']);
    eq(['object' => 'domain', 'id' => $id], $response['json']);
}

/** A new domain of the operator's team, verified without DNS: its name and id. */
function verified_domain(string $label): array
{
    $name = unique_domain($label);
    $created = client()->domains->create(['name' => $name]);
    verify_without_dns($created['id']);
    eq('verified', client()->domains->get($created['id'])['status']);
    return ['name' => $name, 'id' => $created['id']];
}

/** A Resend timestamp (`2026-11-22 09:00:00.123000+00`) as seconds since the epoch. */
function parse_timestamp(mixed $text): float
{
    matches(TIMESTAMP_RE, $text, 'timestamp');
    $date = DateTimeImmutable::createFromFormat('Y-m-d H:i:s.uP', preg_replace('/\+00$/', '+00:00', str_contains($text, '.') ? $text : str_replace('+00', '.0+00', $text)));
    check($date !== false, "unparsable timestamp $text");
    return (float) $date->format('U.u');
}

/** Asserts a timestamp lies within the last minute (or a few seconds ahead). */
function assert_recent(mixed $text): void
{
    $age = microtime(true) - parse_timestamp($text);
    check($age > -5 && $age < 60, "$text is not now");
}

/** An instant as ISO 8601 with milliseconds and `Z`. */
function iso(float $at): string
{
    return gmdate('Y-m-d\TH:i:s', (int) $at) . sprintf('.%03dZ', (int) (($at - floor($at)) * 1000));
}

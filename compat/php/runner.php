<?php
// The PHP suite's runner. `php runner.php [NAME...]` runs every tests/*.php (or those whose
// file name contains one of the NAMEs), each file in a process of its own, a few at a
// time, and prints each test's result and a summary; exits 1 when any test failed.
// `php runner.php --file tests/x.php` runs one file's tests in this process (what the
// parent starts for each file).

declare(strict_types=1);

require __DIR__ . '/bootstrap.php';
require __DIR__ . '/lib.php';

if (!getenv('RESEND_BASE_URL') || !getenv('RESEND_API_KEY')) {
    fwrite(STDERR, "RESEND_BASE_URL and RESEND_API_KEY must be set (compat/php/run test)\n");
    exit(2);
}

function run_file(string $file): int
{
    Suite::$file = basename($file);
    require $file;
    $failed = 0;
    foreach (Suite::$tests as $test) {
        $started = microtime(true);
        try {
            ($test['fn'])();
            printf("ok    %s: %s (%.2f s)\n", $test['file'], $test['name'], microtime(true) - $started);
        } catch (Throwable $e) {
            $failed++;
            printf("FAIL  %s: %s (%.2f s)\n", $test['file'], $test['name'], microtime(true) - $started);
            $where = where($e);
            printf("      %s: %s\n      at %s\n", get_class($e), str_replace("\n", "\n      ", $e->getMessage()), $where);
        }
        flush();
    }
    return $failed === 0 ? 0 : 1;
}

/** The innermost frame of the exception inside a test file (else where it was thrown). */
function where(Throwable $e): string
{
    $frames = array_merge([['file' => $e->getFile(), 'line' => $e->getLine()]], $e->getTrace());
    foreach ($frames as $frame) {
        if (isset($frame['file']) && str_contains($frame['file'], '/tests/')) {
            return basename($frame['file']) . ':' . $frame['line'];
        }
    }
    return basename($e->getFile()) . ':' . $e->getLine();
}

if (($argv[1] ?? '') === '--file') {
    exit(run_file($argv[2]));
}

$filters = array_slice($argv, 1);
$files = array_values(array_filter(glob(__DIR__ . '/tests/*.php'), function ($file) use ($filters) {
    if ($filters === []) {
        return true;
    }
    foreach ($filters as $filter) {
        if (str_contains(basename($file), $filter)) {
            return true;
        }
    }
    return false;
}));
if ($files === []) {
    fwrite(STDERR, "no test files match\n");
    exit(2);
}

$parallel = max(1, (int) (getenv('HERALD_PHP_JOBS') ?: 4));
$started = microtime(true);
$running = [];
$queue = $files;
$outputs = [];
$codes = [];
while ($queue !== [] || $running !== []) {
    while ($queue !== [] && count($running) < $parallel) {
        $file = array_shift($queue);
        $process = proc_open(
            [PHP_BINARY, __FILE__, '--file', $file],
            [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]],
            $pipes
        );
        stream_set_blocking($pipes[1], false);
        $running[$file] = [$process, $pipes[1]];
        $outputs[$file] = '';
    }
    $reads = array_map(fn ($r) => $r[1], array_values($running));
    $w = $x = null;
    if (stream_select($reads, $w, $x, 1) === false) {
        break;
    }
    foreach ($running as $file => [$process, $pipe]) {
        $chunk = stream_get_contents($pipe);
        if ($chunk !== false) {
            $outputs[$file] .= $chunk;
        }
        if (feof($pipe)) {
            fclose($pipe);
            $codes[$file] = proc_close($process);
            unset($running[$file]);
            echo $outputs[$file];
            if ($codes[$file] !== 0 && !str_contains($outputs[$file], 'FAIL')) {
                echo 'FAIL  ' . basename($file) . ": exited with status {$codes[$file]}\n";
            }
        }
    }
}

$passed = preg_match_all('/^ok    /m', implode('', $outputs));
$failedTests = preg_match_all('/^FAIL  /m', implode('', $outputs));
$failedFiles = array_keys(array_filter($codes, fn ($c) => $c !== 0));
printf(
    "\nresend-php %s against %s: %d passed, %d failed, %d files in %.1f s\n",
    Resend::VERSION,
    getenv('RESEND_BASE_URL'),
    $passed,
    $failedTests,
    count($files),
    microtime(true) - $started
);
if ($failedFiles !== []) {
    echo 'failed: ' . implode(', ', array_map('basename', $failedFiles)) . "\n";
    exit(1);
}
exit(0);

<?php
// Loads the official resend-php SDK from its sources (no composer): Debian's Guzzle, PSR-7
// and PSR-18 autoloaders from /usr/share/php, and a PSR-4 autoloader of our own for
// `Resend\` over the SDK's src/ (plus src/Resend.php, the global `Resend` class that
// composer's "files" autoload would load). $HERALD_PHP_SDK names the SDK folder (the run
// script sets it); a composer install's vendor/autoload.php is used when it has one.

declare(strict_types=1);

error_reporting(E_ALL);
// Warnings and notices fail the test that caused them (not those silenced with `@`).
set_error_handler(function (int $severity, string $message, string $file, int $line): bool {
    if (!(error_reporting() & $severity)) {
        return false;
    }
    throw new ErrorException($message, 0, $severity, $file, $line);
});

(function (): void {
    $sdk = getenv('HERALD_PHP_SDK') ?: '';
    if ($sdk === '' || !is_dir("$sdk/src")) {
        fwrite(STDERR, "HERALD_PHP_SDK must name the resend-php folder (run compat/php/run)\n");
        exit(2);
    }
    $vendor = getenv('HERALD_PHP_VENDOR') ?: '';
    if ($vendor !== '' && is_file("$vendor/autoload.php")) {
        // The registry fallback: composer's autoloader loads the SDK and its dependencies.
        require_once "$vendor/autoload.php";
        return;
    }
    set_include_path(get_include_path() . PATH_SEPARATOR . '/usr/share/php');
    require_once 'GuzzleHttp/autoload.php';
    require_once 'GuzzleHttp/Psr7/autoload.php';
    require_once 'GuzzleHttp/Promise/autoload.php';
    require_once 'Psr/Http/Client/autoload.php';
    require_once 'Psr/Http/Message/autoload.php';
    $src = realpath("$sdk/src");
    spl_autoload_register(function (string $class) use ($src): void {
        if (!str_starts_with($class, 'Resend\\')) {
            return;
        }
        $file = $src . '/' . str_replace('\\', '/', substr($class, strlen('Resend\\'))) . '.php';
        if (is_file($file)) {
            require_once $file;
        }
    });
    require_once "$src/Resend.php";
})();

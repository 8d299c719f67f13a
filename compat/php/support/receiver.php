<?php
// A webhook receiver for `php -S 127.0.0.2:PORT receiver.php`: writes each request (its
// headers, lower-cased, and its raw body) as a JSON file into $HERALD_HOOK_DIR, and
// answers 500 to the first request of each `webhook-id` (herald retries it), 200 after.
$dir = getenv('HERALD_HOOK_DIR');
$headers = array_change_key_case(getallheaders(), CASE_LOWER);
$body = file_get_contents('php://input');
$id = preg_replace('/[^A-Za-z0-9_]/', '', $headers['webhook-id'] ?? 'none');
$seen = glob("$dir/$id-*.json");
$n = count($seen);
file_put_contents("$dir/$id-$n.json.tmp", json_encode(['headers' => $headers, 'body' => $body, 'at' => microtime(true)]));
rename("$dir/$id-$n.json.tmp", "$dir/$id-$n.json");
http_response_code($n === 0 ? 500 : 200);
header('Content-Type: text/plain');
echo $n === 0 ? 'no' : 'ok';

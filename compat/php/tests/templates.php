<?php
// Templates through resend-php: $resend->templates->create / get (by id and by alias) /
// list / update / publish / duplicate / remove, and sends with `template` through
// $resend->emails->send and $resend->batch->send. Management runs in teams of their own;
// sends in the operator's team (the only one whose domains the suite can verify without
// DNS), checked through $resend->emails->get.

declare(strict_types=1);

const TEMPLATE_KEYS = ['alias', 'created_at', 'current_version_id', 'from', 'has_unpublished_versions', 'html', 'id', 'name',
    'object', 'published_at', 'reply_to', 'status', 'subject', 'text', 'updated_at', 'variables'];
const TEMPLATE_LIST_KEYS = ['alias', 'created_at', 'id', 'name', 'published_at', 'status', 'updated_at'];
const RECIPIENT = 'someone@recipient.test';

function unique_alias(string $label): string
{
    return "php-$label-" . token(4);
}

function variables_of(mixed $template): array
{
    return array_map(fn ($v) => [$v['key'], $v['type'], $v['fallback_value']], $template['variables']);
}

function template_domain(): string
{
    static $domain = null;
    return $domain ??= verified_domain('templates')['name'];
}

/** A published template of the operator's team: its id, alias and published version. */
function published_template(string $label, array $params): array
{
    $alias = unique_alias($label);
    $created = client()->templates->create(array_merge(['name' => "Php $label", 'alias' => $alias], $params));
    eq(['object' => 'template', 'id' => $created['id']], client()->templates->publish($created['id'])->toArray());
    $got = client()->templates->get($created['id']);
    eq('published', $got['status']);
    return ['id' => $created['id'], 'alias' => $alias, 'version' => $got['current_version_id']];
}

function escape_html(string $text): string
{
    return str_replace(['&', '<', '>', '"', "'"], ['&amp;', '&lt;', '&gt;', '&quot;', '&#39;'], $text);
}

test('create, get by id and alias, list, update, remove', function () {
    $key = team_key('templates');
    $resend = client($key);
    $onWire = raw('POST', '/templates', ['name' => 'Wire', 'html' => '<p>wire</p>'], $key);
    eq(201, $onWire['status'], $onWire['text']);
    $wire = $onWire['json'];

    $alias = unique_alias('welcome');
    $created = $resend->templates->create([
        'name' => 'Welcome',
        'alias' => $alias,
        'from' => 'Acme <hello@acme.test>',
        'subject' => 'Welcome, {{{NAME}}}!',
        'reply_to' => 'support@acme.test',
        'html' => '<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>',
        'text' => 'Hi {{{NAME}}}, {{{SEATS}}} seats',
        'variables' => [
            ['key' => 'NAME', 'type' => 'string', 'fallback_value' => 'there'],
            ['key' => 'SEATS', 'type' => 'number', 'fallback_value' => 1],
            ['key' => 'PLAN', 'type' => 'string'],
        ],
    ]);
    check($created instanceof Resend\Template, 'a Resend\Template');
    eq(['object' => 'template', 'id' => $created['id']], $created->toArray());
    matches(UUID_RE, $created['id']);

    $got = $resend->templates->get($created['id']);
    eq(TEMPLATE_KEYS, keys_of($got));
    eq(['template', $created['id'], 'Welcome', $alias], [$got['object'], $got['id'], $got['name'], $got['alias']]);
    eq(['Acme <hello@acme.test>', 'Welcome, {{{NAME}}}!', ['support@acme.test']], [$got['from'], $got['subject'], $got['reply_to']]);
    eq(['<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>', 'Hi {{{NAME}}}, {{{SEATS}}} seats'], [$got['html'], $got['text']]);
    eq(['draft', null, false], [$got['status'], $got['published_at'], $got['has_unpublished_versions']]);
    matches(UUID_RE, $got['current_version_id']);
    assert_recent($got['created_at']);
    eq($got['created_at'], $got['updated_at']);
    eq([['NAME', 'string', 'there'], ['SEATS', 'number', 1], ['PLAN', 'string', null]], variables_of($got));
    foreach ($got['variables'] as $variable) {
        eq(['created_at', 'fallback_value', 'id', 'key', 'type', 'updated_at'], keys_of($variable));
    }
    eq($got->toArray(), $resend->templates->get($alias)->toArray(), 'by alias');

    $listed = $resend->templates->list();
    eq(['list', false, [$created['id'], $wire['id']]], [$listed['object'], $listed['has_more'], ids($listed)]);
    eq(TEMPLATE_LIST_KEYS, keys_of($listed['data'][0]));
    eq(['id' => $created['id'], 'name' => 'Welcome', 'status' => 'draft', 'published_at' => null,
        'created_at' => $got['created_at'], 'updated_at' => $got['updated_at'], 'alias' => $alias], $listed['data'][0]->toArray());
    $first = $resend->templates->list(['limit' => 1]);
    eq([true, [$created['id']]], [$first['has_more'], ids($first)]);
    eq([$wire['id']], ids($resend->templates->list(['limit' => 1, 'after' => $created['id']])));
    eq([$created['id']], ids($resend->templates->list(['limit' => 1, 'before' => $wire['id']])));

    $newAlias = unique_alias('renamed');
    $updated = $resend->templates->update($created['id'], [
        'name' => 'Welcome aboard',
        'alias' => $newAlias,
        'reply_to' => ['a@acme.test', 'b@acme.test'],
        'variables' => [['key' => 'NAME', 'type' => 'string', 'fallback_value' => 'friend']],
    ]);
    eq(['object' => 'template', 'id' => $created['id']], $updated->toArray());
    $edited = $resend->templates->get($newAlias);
    eq(['Welcome aboard', $newAlias, ['a@acme.test', 'b@acme.test']], [$edited['name'], $edited['alias'], $edited['reply_to']]);
    eq([['NAME', 'string', 'friend']], variables_of($edited));
    eq($got['variables'][0]['id'], $edited['variables'][0]['id'], 'a kept key keeps its id');
    eq($got['current_version_id'], $edited['current_version_id'], 'a draft is edited in place');
    fails(fn () => $resend->templates->get($alias), 404, 'not_found');

    $removed = $resend->templates->remove($newAlias);
    eq(['object' => 'template', 'id' => $created['id'], 'deleted' => true], $removed->toArray());
    fails(fn () => $resend->templates->get($created['id']), 404, 'not_found');
    fails(fn () => $resend->templates->remove($created['id']), 404, 'not_found');
    eq([$wire['id']], ids($resend->templates->list()));
    fails(fn () => $resend->templates->update(random_id(), ['name' => 'x']), 404, 'not_found');
});

test('publish, versions and duplicate', function () {
    $resend = client(team_key('templates-versions'));
    $alias = unique_alias('receipt');
    $created = $resend->templates->create(['name' => 'Receipt', 'alias' => $alias, 'subject' => 'Receipt', 'html' => '<p>v1</p>']);
    eq(['object' => 'template', 'id' => $created['id']], $resend->templates->publish($alias)->toArray());
    $v1 = $resend->templates->get($created['id']);
    eq(['published', false], [$v1['status'], $v1['has_unpublished_versions']]);
    matches(TIMESTAMP_RE, $v1['published_at']);

    $resend->templates->update($alias, ['html' => '<p>v2</p>']);
    $drafted = $resend->templates->get($alias);
    eq(['published', true, '<p>v2</p>', $v1['published_at']], [$drafted['status'], $drafted['has_unpublished_versions'], $drafted['html'], $drafted['published_at']]);
    check($drafted['current_version_id'] !== $v1['current_version_id'], 'a new version');

    $resend->templates->publish($created['id']);
    $v2 = $resend->templates->get($created['id']);
    eq(['published', false, $drafted['current_version_id']], [$v2['status'], $v2['has_unpublished_versions'], $v2['current_version_id']]);
    check(parse_timestamp($v2['published_at']) >= parse_timestamp($v1['published_at']), 'published again');

    $copy = $resend->templates->duplicate($alias);
    eq(['object' => 'template', 'id' => $copy['id']], $copy->toArray());
    check($copy['id'] !== $created['id'], 'a new template');
    $duplicate = $resend->templates->get($copy['id']);
    eq(['Receipt (copy)', null, 'draft', null], [$duplicate['name'], $duplicate['alias'], $duplicate['status'], $duplicate['published_at']]);
    eq(['<p>v2</p>', 'Receipt'], [$duplicate['html'], $duplicate['subject']]);
    eq([$copy['id'], $created['id']], ids($resend->templates->list()));
    fails(fn () => $resend->templates->publish(random_id()), 404, 'not_found');
    fails(fn () => $resend->templates->duplicate('no-such-alias'), 404, 'not_found');
});

test('refused templates', function () {
    $resend = client(team_key('templates-refused'));
    fails(fn () => $resend->templates->create(['html' => '<p>x</p>']), 422, 'missing_required_field', 'Missing `name` field.');
    fails(fn () => $resend->templates->create(['name' => 'No html']), 422, 'missing_required_field', 'Missing `html` field.');
    fails(fn () => $resend->templates->create(['name' => 'Unclosed', 'html' => "<p>\n  Hi {{{NAME</p>"]), 422, 'validation_error',
        'Invalid `html` field: `{{{` is never closed by `}}}` at line 2, column 6');
    fails(fn () => $resend->templates->create(['name' => 'Reserved', 'html' => '<p>x</p>', 'variables' => [['key' => 'EMAIL', 'type' => 'string']]]),
        422, 'validation_error', 'Invalid `variables[0].key` field: EMAIL is reserved; herald fills it in');
    $many = array_map(fn ($i) => ['key' => "VAR_$i", 'type' => 'string'], range(0, 50));
    fails(fn () => $resend->templates->create(['name' => 'Too many', 'html' => '<p>x</p>', 'variables' => $many]),
        422, 'validation_error', 'Invalid `variables` field: at most 50 variables, got 51');
    $alias = unique_alias('taken');
    $resend->templates->create(['name' => 'Owner', 'alias' => $alias, 'html' => '<p>x</p>']);
    // HERALD-DIFF: an alias conflict is herald's `409 conflict`, a name resend-php does
    // not raise for (see errors.php): the SDK hands the error body back as the template.
    $same = $resend->templates->create(['name' => 'Same', 'alias' => strtoupper($alias), 'html' => '<p>x</p>']);
    eq([409, 'conflict', 'A template with the alias ' . strtoupper($alias) . ' already exists'], [$same['statusCode'], $same['name'], $same['message']]);
    eq(['Owner'], array_map(fn ($t) => $t['name'], $resend->templates->list()['data']), 'nothing refused was created');
});

test('send with a template: variables, fallbacks, escaping, what the template gives, versions', function () {
    $domain = template_domain();
    $template = published_template('receipt', [
        'from' => "{{{SHOP}}} <shop@$domain>",
        'subject' => 'Receipt for {{{NAME}}}',
        'reply_to' => ["support@$domain"],
        'html' => '<p title="{{{NAME}}}">Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.</p>',
        'text' => 'Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.',
        'variables' => [
            ['key' => 'SHOP', 'type' => 'string', 'fallback_value' => 'Compat Shop'],
            ['key' => 'NAME', 'type' => 'string'],
            ['key' => 'PRICE', 'type' => 'number'],
            ['key' => 'CITY', 'type' => 'string', 'fallback_value' => 'Paris'],
        ],
    ]);
    $name = "<b>\"Ann\" & 'Co'</b>";
    $sent = client()->emails->send(['to' => RECIPIENT, 'template' => ['id' => $template['id'], 'variables' => ['NAME' => $name, 'PRICE' => 499]]]);
    matches(UUID_RE, $sent['id']);
    $got = client()->emails->get($sent['id']);
    eq("Compat Shop <shop@$domain>", $got['from']);
    eq([RECIPIENT], $got['to']);
    eq("Receipt for $name", $got['subject'], 'not escaped in the subject');
    eq(["support@$domain"], $got['reply_to']);
    eq('<p title="' . escape_html($name) . '">Hi ' . escape_html($name) . ', you paid 499 for your order in Paris.</p>', $got['html']);
    eq("Hi $name, you paid 499 for your order in Paris.", $got['text']);
    eq(['id' => $template['id'], 'version_id' => $template['version']], $got['template']);

    // By alias; the send's own from wins, an empty subject counts as absent.
    $own = client()->emails->send([
        'from' => "Me <me@$domain>",
        'to' => RECIPIENT,
        'subject' => '',
        'template' => ['id' => $template['alias'], 'variables' => ['NAME' => 'Bo', 'PRICE' => 2.5, 'CITY' => 'Oslo', 'PRODUCT' => 'tea']],
    ]);
    $ownGot = client()->emails->get($own['id']);
    eq(["Me <me@$domain>", 'Receipt for Bo', '<p title="Bo">Hi Bo, you paid 2.5 for tea in Oslo.</p>'], [$ownGot['from'], $ownGot['subject'], $ownGot['html']]);

    // The published version keeps sending until the draft is published.
    client()->templates->update($template['id'], ['html' => '<p>v2 {{{NAME}}}</p>']);
    $draft = client()->templates->get($template['id'])['current_version_id'];
    $pinned = client()->emails->get(client()->emails->send(['to' => RECIPIENT, 'template' => ['id' => $template['id'], 'variables' => ['NAME' => 'Cy', 'PRICE' => 1]]])['id']);
    eq(['<p title="Cy">Hi Cy, you paid 1 for your order in Paris.</p>', $template['version']], [$pinned['html'], $pinned['template']['version_id']]);
    client()->templates->publish($template['alias']);
    $fresh = client()->emails->get(client()->emails->send(['to' => RECIPIENT, 'template' => ['id' => $template['id'], 'variables' => ['NAME' => 'Di', 'PRICE' => 1]]])['id']);
    eq(['<p>v2 Di</p>', $draft], [$fresh['html'], $fresh['template']['version_id']]);
});

test('batch send with templates, strict and permissive', function () {
    $domain = template_domain();
    $template = published_template('batch', [
        'from' => "Batch <batch@$domain>",
        'subject' => 'Batch {{{NAME}}}',
        'html' => '<p>Hi {{{NAME}}}</p>',
        'variables' => [['key' => 'NAME', 'type' => 'string']],
    ]);
    $names = ['Ann ' . token(3), 'Bo ' . token(3)];
    $result = client()->batch->send([
        ['to' => 'ann@recipient.test', 'template' => ['id' => $template['id'], 'variables' => ['NAME' => $names[0]]]],
        ['to' => 'bo@recipient.test', 'template' => ['id' => $template['alias'], 'variables' => ['NAME' => $names[1]]]],
    ]);
    eq(2, count($result['data']));
    foreach ($result['data'] as $i => $item) {
        $got = client()->emails->get($item['id']);
        eq(["Batch {$names[$i]}", "<p>Hi {$names[$i]}</p>", $template['version']], [$got['subject'], $got['html'], $got['template']['version_id']]);
    }
    $error = fails(fn () => client()->batch->send([
        ['to' => RECIPIENT, 'template' => ['id' => $template['id'], 'variables' => ['NAME' => 'Strict']]],
        ['to' => RECIPIENT, 'template' => ['id' => $template['id']]],
    ]), 422, 'validation_error');
    check(str_starts_with($error->getMessage(), 'emails[1]: Missing template variable `NAME`'), $error->getMessage());
    $permissive = client()->batch->send([
        ['to' => RECIPIENT, 'template' => ['id' => $template['id'], 'variables' => ['NAME' => 'Eve']]],
        ['to' => RECIPIENT, 'template' => ['id' => random_id()]],
    ], ['batch_validation' => 'permissive']);
    eq(1, count($permissive['data']));
    eq([['index' => 1, 'message' => 'Template not found']], $permissive['errors']);
});

test('refused template sends', function () {
    $domain = template_domain();
    $template = published_template('refusals', [
        'from' => "Refusals <r@$domain>",
        'subject' => 'Hello {{{NAME}}}',
        'html' => '<p>Hello {{{NAME}}}</p>',
        'variables' => [['key' => 'NAME', 'type' => 'string'], ['key' => 'SEATS', 'type' => 'number', 'fallback_value' => 1]],
    ]);
    $send = fn (array $extra) => fn () => client()->emails->send(array_merge(['to' => RECIPIENT, 'template' => ['id' => $template['id'], 'variables' => ['NAME' => 'Ann']]], $extra));
    contains('cannot be sent with `template`', fails($send(['html' => '<p>mine</p>']), 422, 'validation_error')->getMessage());
    contains('Missing template variable `NAME`', fails($send(['template' => ['id' => $template['id']]]), 422, 'validation_error')->getMessage());
    fails($send(['template' => ['id' => $template['id'], 'variables' => ['NAME' => 'Ann', 'SEATS' => 'many']]]), 422, 'validation_error',
        'Invalid `template.variables.SEATS` field: the template declares it a number');
    fails($send(['template' => ['id' => $template['id'], 'variables' => ['NAME' => "Ann\r\nBcc: victim@recipient.test"]]]), 422, 'validation_error',
        'Invalid `subject` field: must not contain CR, LF or NUL');
    fails($send(['template' => ['id' => random_id()]]), 404, 'not_found', 'Template not found');
    fails($send(['template' => ['variables' => ['NAME' => 'Ann']]]), 422, 'missing_required_field', 'Missing `template.id` field.');
    $draft = client()->templates->create(['name' => 'Php draft', 'from' => "d@$domain", 'subject' => 'Draft', 'html' => '<p>d</p>']);
    contains('not published', fails($send(['template' => ['id' => $draft['id']]]), 422, 'validation_error')->getMessage());

    $key = client()->apiKeys->create(['name' => unique_name('templates-sending'), 'permission' => 'sending_access']);
    $sending = client($key['token']);
    $sent = $sending->emails->send(['to' => RECIPIENT, 'template' => ['id' => $template['alias'], 'variables' => ['NAME' => 'Key']]]);
    fails(fn () => $sending->templates->list(), 401, 'restricted_api_key');
    fails(fn () => $sending->templates->get($template['id']), 401, 'restricted_api_key');
    eq('<p>Hello Key</p>', client()->emails->get($sent['id'])['html']);
    client()->apiKeys->remove($key['id']);
});

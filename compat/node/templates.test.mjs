// Templates through the official Node SDK (npm `resend`): resend.templates.create (and its
// chainable `.publish()`), get (by id and by alias), list, update, remove, publish and
// duplicate (and its chainable `.publish()`); resend.emails.send and resend.batch.send with
// `template` (variables, fallbacks, escaping, what the template gives and what the send
// overrides, version pinning); the refusals with their exact errors; and React emails,
// which the SDK renders to HTML on the client with @react-email/render (emails.send,
// batch.send and templates.create with `react`).
//
// The template management tests run in teams of their own (made with the suite's operator
// key), so that the lists show only their own templates. The send tests run in the
// operator's team: only the operator's key may mark a domain verified without DNS, and
// only for its own team's domains, so a team of its own has nothing verified to send from.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import React from 'react';
import { Body, Button, Container, Head, Heading, Html, Text } from '@react-email/components';
import { render } from '@react-email/render';
import { Resend } from 'resend';
import { TIMESTAMP, UUID, fails, ok, parseTimestamp, raw, uniqueDomain, verifyWithoutDns } from './helpers.mjs';

/** The suite's operator client: the send tests' team. */
const resend = new Resend();

/** The verified domain of the operator's team the send tests send from. */
let domain;

before(async () => {
  domain = uniqueDomain('templates');
  const created = ok(await resend.domains.create({ name: domain }));
  await verifyWithoutDns(created.id);
});

const from = () => `Compat Sender <hello@${domain}>`;
const RECIPIENT = 'someone@recipient.test';

/** A short random suffix for names and aliases. */
function suffix() {
  return randomBytes(4).toString('hex');
}

/** An alias no other test uses. */
function uniqueAlias(label) {
  return `node-${label}-${suffix()}`;
}

/** A new team of its own: its first key (for raw requests) and an SDK client with it. */
async function team(label) {
  const response = await raw('POST', '/teams', { body: { name: `node-${label}-${suffix()}` } });
  assert.equal(response.status, 201, response.text);
  const key = response.json.api_key.token;
  return { key, resend: new Resend(key) };
}

/** Asserts an SDK result is the given error, and that its message is `message` or matches it. */
function refused(result, statusCode, name, message) {
  const error = fails(result, statusCode, name);
  if (message instanceof RegExp) {
    assert.match(error.message, message);
  } else if (message !== undefined) {
    assert.equal(error.message, message);
  }
  return error;
}

/** What herald's HTML escaping makes of a value (`&`, `<`, `>`, `"` and `'`). */
function escapeHtml(text) {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** The keys of `GET /templates/{id}`. */
const TEMPLATE_KEYS = [
  'alias',
  'created_at',
  'current_version_id',
  'from',
  'has_unpublished_versions',
  'html',
  'id',
  'name',
  'object',
  'published_at',
  'reply_to',
  'status',
  'subject',
  'text',
  'updated_at',
  'variables',
];
/** The keys of a template in `GET /templates`. */
const LIST_KEYS = ['alias', 'created_at', 'id', 'name', 'published_at', 'status', 'updated_at'];
/** The keys of a template's variable. */
const VARIABLE_KEYS = ['created_at', 'fallback_value', 'id', 'key', 'type', 'updated_at'];

/** A variable as [key, type, fallback_value]. */
const variableShape = (v) => [v.key, v.type, v.fallback_value];

/** The emails with `subject` among the newest 100 of the operator's team. */
async function listedWithSubject(wanted) {
  const list = ok(await resend.emails.list({ limit: 100 }));
  return list.data.filter((e) => e.subject === wanted);
}

/** A published template in the operator's team; its id, alias and published version. */
async function publishedTemplate(label, payload) {
  const alias = uniqueAlias(label);
  const published = ok(await resend.templates.create({ name: `Node ${label}`, alias, ...payload }).publish());
  assert.deepEqual(published, { object: 'template', id: published.id });
  const got = ok(await resend.templates.get(published.id));
  assert.equal(got.status, 'published');
  return { id: published.id, alias, version: got.current_version_id };
}

test('templates.create answers 201; get by id and alias, list, update and remove', async () => {
  const { key, resend } = await team('templates');
  const onWire = await raw('POST', '/templates', { key, body: { name: 'Wire', html: '<p>wire</p>' } });
  assert.equal(onWire.status, 201, onWire.text);
  assert.deepEqual(onWire.json, { object: 'template', id: onWire.json.id });
  assert.match(onWire.json.id, UUID);

  const alias = uniqueAlias('welcome');
  const created = ok(
    await resend.templates.create({
      name: 'Welcome',
      alias,
      from: 'Acme <hello@acme.test>',
      subject: 'Welcome, {{{NAME}}}!',
      replyTo: ['support@acme.test', 'sales@acme.test'],
      html: '<p>Hi {{{NAME}}}, you have {{{SEATS}}} seats on {{{PLAN}}}.</p>',
      text: 'Hi {{{NAME}}}, you have {{{SEATS}}} seats on {{{PLAN}}}.',
      variables: [
        { key: 'NAME', type: 'string', fallbackValue: 'there' },
        { key: 'SEATS', type: 'number', fallbackValue: 1 },
        { key: 'PLAN', type: 'string' },
      ],
    }),
  );
  assert.deepEqual(created, { object: 'template', id: created.id });
  assert.match(created.id, UUID);

  const got = ok(await resend.templates.get(created.id));
  assert.deepEqual(Object.keys(got).sort(), TEMPLATE_KEYS);
  assert.equal(got.object, 'template');
  assert.equal(got.id, created.id);
  assert.equal(got.name, 'Welcome');
  assert.equal(got.alias, alias);
  assert.equal(got.from, 'Acme <hello@acme.test>');
  assert.equal(got.subject, 'Welcome, {{{NAME}}}!');
  assert.deepEqual(got.reply_to, ['support@acme.test', 'sales@acme.test']);
  assert.equal(got.html, '<p>Hi {{{NAME}}}, you have {{{SEATS}}} seats on {{{PLAN}}}.</p>');
  assert.equal(got.text, 'Hi {{{NAME}}}, you have {{{SEATS}}} seats on {{{PLAN}}}.');
  assert.equal(got.status, 'draft');
  assert.equal(got.published_at, null);
  assert.equal(got.has_unpublished_versions, false);
  assert.match(got.current_version_id, UUID);
  assert.notEqual(got.current_version_id, got.id);
  assert.match(got.created_at, TIMESTAMP);
  assert.equal(got.updated_at, got.created_at);
  assert.deepEqual(got.variables.map(variableShape), [
    ['NAME', 'string', 'there'],
    ['SEATS', 'number', 1],
    ['PLAN', 'string', null],
  ]);
  for (const variable of got.variables) {
    assert.deepEqual(Object.keys(variable).sort(), VARIABLE_KEYS);
    assert.match(variable.id, UUID);
    assert.match(variable.created_at, TIMESTAMP);
    assert.equal(variable.updated_at, variable.created_at);
  }
  // By alias, in any case.
  assert.deepEqual(ok(await resend.templates.get(alias)), got);
  assert.deepEqual(ok(await resend.templates.get(alias.toUpperCase())), got);

  // Without the optional fields: null, and reply_to null rather than [].
  const bare = ok(await resend.templates.get(onWire.json.id));
  assert.deepEqual(
    [bare.alias, bare.from, bare.subject, bare.reply_to, bare.text, bare.variables],
    [null, null, null, null, null, []],
  );
  // reply_to as one string.
  const single = ok(await resend.templates.create({ name: 'Single', html: '<p>x</p>', replyTo: 'one@acme.test' }));
  assert.deepEqual(ok(await resend.templates.get(single.id)).reply_to, ['one@acme.test']);

  const listed = ok(await resend.templates.list());
  assert.equal(listed.object, 'list');
  assert.equal(listed.has_more, false);
  assert.deepEqual(listed.data.map((t) => t.id), [single.id, created.id, onWire.json.id], 'newest first');
  assert.deepEqual(Object.keys(listed.data[1]).sort(), LIST_KEYS);
  assert.deepEqual(listed.data[1], {
    id: created.id,
    name: 'Welcome',
    status: 'draft',
    published_at: null,
    created_at: got.created_at,
    updated_at: got.updated_at,
    alias,
  });
  assert.equal(listed.data[2].alias, null);
  const first = ok(await resend.templates.list({ limit: 1 }));
  assert.equal(first.has_more, true);
  assert.deepEqual(first.data.map((t) => t.id), [single.id]);
  const next = ok(await resend.templates.list({ limit: 1, after: single.id }));
  assert.equal(next.has_more, true);
  assert.deepEqual(next.data.map((t) => t.id), [created.id]);
  const last = ok(await resend.templates.list({ limit: 2, after: created.id }));
  assert.equal(last.has_more, false);
  assert.deepEqual(last.data.map((t) => t.id), [onWire.json.id]);
  const back = ok(await resend.templates.list({ limit: 1, before: onWire.json.id }));
  assert.deepEqual(back.data.map((t) => t.id), [created.id]);
  fails(await resend.templates.list({ limit: 101 }), 422, 'validation_error');

  // A draft's edits change that draft: the same version, new content.
  const updated = ok(await resend.templates.update(created.id, { name: 'Welcome aboard', html: '<p>Hello {{{NAME}}}</p>' }));
  assert.deepEqual(updated, { object: 'template', id: created.id });
  const edited = ok(await resend.templates.get(alias));
  assert.equal(edited.name, 'Welcome aboard');
  assert.equal(edited.html, '<p>Hello {{{NAME}}}</p>');
  assert.equal(edited.text, got.text, 'what the update leaves out stays');
  assert.equal(edited.subject, got.subject);
  assert.deepEqual(edited.reply_to, got.reply_to);
  assert.deepEqual(edited.variables, got.variables);
  assert.equal(edited.status, 'draft');
  assert.equal(edited.current_version_id, got.current_version_id);
  assert.equal(edited.created_at, got.created_at);
  assert.ok(parseTimestamp(edited.updated_at) >= parseTimestamp(got.updated_at));

  // `variables` replaces them all; a kept key keeps its id.
  ok(
    await resend.templates.update(alias, {
      variables: [
        { key: 'NAME', type: 'string', fallbackValue: 'friend' },
        { key: 'CITY', type: 'string' },
      ],
    }),
  );
  const revariabled = ok(await resend.templates.get(created.id));
  assert.deepEqual(revariabled.variables.map(variableShape), [
    ['NAME', 'string', 'friend'],
    ['CITY', 'string', null],
  ]);
  assert.equal(revariabled.variables[0].id, got.variables[0].id);
  assert.equal(revariabled.variables[0].created_at, got.variables[0].created_at);
  assert.notEqual(revariabled.variables[1].id, got.variables[2].id);

  // Raw, `null` clears the optional fields; the SDK sends only what it is given.
  const cleared = await raw('PATCH', `/templates/${created.id}`, {
    key,
    body: { alias: null, from: null, subject: null, reply_to: null, text: null },
  });
  assert.equal(cleared.status, 200, cleared.text);
  assert.deepEqual(cleared.json, { object: 'template', id: created.id });
  const plain = ok(await resend.templates.get(created.id));
  assert.deepEqual(
    [plain.alias, plain.from, plain.subject, plain.reply_to, plain.text],
    [null, null, null, null, null],
  );
  assert.equal(plain.html, '<p>Hello {{{NAME}}}</p>');
  fails(await resend.templates.get(alias), 404, 'not_found');
  // The freed alias can be taken again, by an update.
  ok(await resend.templates.update(onWire.json.id, { alias }));
  assert.equal(ok(await resend.templates.get(alias)).id, onWire.json.id);

  assert.deepEqual(ok(await resend.templates.remove(created.id)), {
    object: 'template',
    id: created.id,
    deleted: true,
  });
  fails(await resend.templates.get(created.id), 404, 'not_found');
  fails(await resend.templates.remove(created.id), 404, 'not_found');
  // By alias too; then the alias is free for a new template.
  assert.deepEqual(ok(await resend.templates.remove(alias)), { object: 'template', id: onWire.json.id, deleted: true });
  fails(await resend.templates.get(onWire.json.id), 404, 'not_found');
  const reused = ok(await resend.templates.create({ name: 'Reused', alias, html: '<p>again</p>' }));
  assert.equal(ok(await resend.templates.get(alias)).id, reused.id);
  assert.deepEqual(ok(await resend.templates.list()).data.map((t) => t.id), [reused.id, single.id]);

  fails(await resend.templates.get(randomUUID()), 404, 'not_found');
  fails(await resend.templates.get('no-such-alias'), 404, 'not_found');
  fails(await resend.templates.update(randomUUID(), { name: 'Nothing' }), 404, 'not_found');
});

test('publishing, versions, and duplicate (with the chainable publish)', async () => {
  const { key, resend } = await team('templates-versions');
  const alias = uniqueAlias('receipt');
  // create().publish() publishes what it created and answers publish's answer.
  const published = ok(
    await resend.templates.create({ name: 'Receipt', alias, subject: 'Receipt', html: '<p>v1</p>' }).publish(),
  );
  assert.deepEqual(published, { object: 'template', id: published.id });
  const v1 = ok(await resend.templates.get(published.id));
  assert.equal(v1.status, 'published');
  assert.match(v1.published_at, TIMESTAMP);
  assert.equal(v1.has_unpublished_versions, false);
  assert.equal(v1.html, '<p>v1</p>');
  assert.match(v1.current_version_id, UUID);
  const [listedV1] = ok(await resend.templates.list()).data;
  assert.equal(listedV1.status, 'published');
  assert.equal(listedV1.published_at, v1.published_at);

  // A content edit of a published template makes a draft; the template stays published.
  ok(await resend.templates.update(alias, { html: '<p>v2</p>' }));
  const drafted = ok(await resend.templates.get(alias));
  assert.equal(drafted.status, 'published');
  assert.equal(drafted.has_unpublished_versions, true);
  assert.notEqual(drafted.current_version_id, v1.current_version_id);
  assert.match(drafted.current_version_id, UUID);
  assert.equal(drafted.html, '<p>v2</p>', 'the answer shows the draft');
  assert.equal(drafted.subject, 'Receipt', 'the draft starts from the published version');
  assert.equal(drafted.published_at, v1.published_at);
  // Further edits change that draft.
  ok(await resend.templates.update(published.id, { subject: 'Receipt v2' }));
  const redrafted = ok(await resend.templates.get(published.id));
  assert.equal(redrafted.current_version_id, drafted.current_version_id);
  assert.equal(redrafted.subject, 'Receipt v2');
  assert.equal(redrafted.html, '<p>v2</p>');
  // A rename is no content change.
  ok(await resend.templates.update(published.id, { name: 'Receipt (renamed)' }));
  const renamed = ok(await resend.templates.get(published.id));
  assert.equal(renamed.name, 'Receipt (renamed)');
  assert.equal(renamed.current_version_id, drafted.current_version_id);
  assert.equal(renamed.has_unpublished_versions, true);

  // Duplicating copies the current version (the draft) into a new draft template.
  const copy = ok(await resend.templates.duplicate(alias));
  assert.deepEqual(copy, { object: 'template', id: copy.id });
  assert.match(copy.id, UUID);
  assert.notEqual(copy.id, published.id);
  const duplicate = ok(await resend.templates.get(copy.id));
  assert.equal(duplicate.name, 'Receipt (renamed) (copy)');
  assert.equal(duplicate.alias, null);
  assert.equal(duplicate.status, 'draft');
  assert.equal(duplicate.published_at, null);
  assert.equal(duplicate.has_unpublished_versions, false);
  assert.equal(duplicate.html, '<p>v2</p>');
  assert.equal(duplicate.subject, 'Receipt v2');
  assert.notEqual(duplicate.current_version_id, renamed.current_version_id);

  // Publishing makes the draft the published version.
  assert.deepEqual(ok(await resend.templates.publish(alias)), { object: 'template', id: published.id });
  const v2 = ok(await resend.templates.get(published.id));
  assert.equal(v2.status, 'published');
  assert.equal(v2.has_unpublished_versions, false);
  assert.equal(v2.current_version_id, drafted.current_version_id);
  assert.equal(v2.html, '<p>v2</p>');
  assert.ok(parseTimestamp(v2.published_at) >= parseTimestamp(v1.published_at));
  // Publishing again with nothing new changes nothing.
  assert.deepEqual(ok(await resend.templates.publish(published.id)), { object: 'template', id: published.id });
  assert.deepEqual(ok(await resend.templates.get(published.id)), v2);
  // A rename of a published template without a draft makes none.
  ok(await resend.templates.update(published.id, { name: 'Receipt final' }));
  const final = ok(await resend.templates.get(published.id));
  assert.equal(final.has_unpublished_versions, false);
  assert.equal(final.current_version_id, v2.current_version_id);

  // duplicate().publish() publishes the copy.
  const published2 = ok(await resend.templates.duplicate(published.id).publish());
  assert.notEqual(published2.id, published.id);
  const copy2 = ok(await resend.templates.get(published2.id));
  assert.equal(copy2.name, 'Receipt final (copy)');
  assert.equal(copy2.status, 'published');
  assert.equal(copy2.alias, null);
  assert.deepEqual(
    ok(await resend.templates.list()).data.map((t) => t.id),
    [published2.id, copy.id, published.id],
    'copies are the newest',
  );

  // On the wire: publish and duplicate answer 200, and take no body.
  const onWire = await raw('POST', `/templates/${copy.id}/publish`, { key });
  assert.equal(onWire.status, 200, onWire.text);
  assert.deepEqual(onWire.json, { object: 'template', id: copy.id });
  const duplicated = await raw('POST', `/templates/${copy.id}/duplicate`, { key });
  assert.equal(duplicated.status, 200, duplicated.text);
  assert.deepEqual(duplicated.json, { object: 'template', id: duplicated.json.id });
  assert.match(duplicated.json.id, UUID);

  fails(await resend.templates.publish(randomUUID()), 404, 'not_found');
  fails(await resend.templates.duplicate('no-such-alias'), 404, 'not_found');
  // The chained publish passes a failed create's error on.
  fails(await resend.templates.create({ name: 'No html' }).publish(), 422, 'missing_required_field');
  fails(await resend.templates.duplicate(randomUUID()).publish(), 404, 'not_found');
});

test('refused templates: missing fields, unparsable merge tags with their position, reserved and invalid variables, aliases', async () => {
  const { resend } = await team('templates-refused');
  refused(await resend.templates.create({ html: '<p>x</p>' }), 422, 'missing_required_field', 'Missing `name` field.');
  refused(await resend.templates.create({ name: 'No html' }), 422, 'missing_required_field', 'Missing `html` field.');
  refused(await resend.templates.create({ name: 'Empty html', html: '' }), 422, 'missing_required_field', 'Missing `html` field.');

  refused(
    await resend.templates.create({ name: 'Unclosed', html: '<p>\n  Hi {{{NAME</p>' }),
    422,
    'validation_error',
    'Invalid `html` field: `{{{` is never closed by `}}}` at line 2, column 6',
  );
  refused(
    await resend.templates.create({ name: 'Nameless', html: '<p>x</p>', subject: 'Hi {{{ }}}' }),
    422,
    'validation_error',
    'Invalid `subject` field: a variable needs a name, as in {{{FIRST_NAME}}} at line 1, column 4',
  );
  refused(
    await resend.templates.create({ name: 'Bad name', html: '<p>ok</p>', text: 'line\n{{{first name}}}' }),
    422,
    'validation_error',
    /^Invalid `text` field: .*first name.* at line 2, column 1$/,
  );

  for (const reserved of ['FIRST_NAME', 'LAST_NAME', 'EMAIL', 'UNSUBSCRIBE_URL', 'RESEND_UNSUBSCRIBE_URL', 'contact', 'this']) {
    refused(
      await resend.templates.create({ name: 'Reserved', html: '<p>x</p>', variables: [{ key: reserved, type: 'string' }] }),
      422,
      'validation_error',
      `Invalid \`variables[0].key\` field: ${reserved} is reserved; herald fills it in`,
    );
  }
  refused(
    await resend.templates.create({
      name: 'Reserved',
      html: '<p>x</p>',
      variables: [{ key: 'OK', type: 'string' }, { key: 'contact.first_name', type: 'string' }],
    }),
    422,
    'validation_error',
    'Invalid `variables[1].key` field: contact.first_name is reserved; herald fills it in',
  );
  // Reserved names may be used without being declared.
  ok(await resend.templates.create({ name: 'Uses reserved', html: '<p>Hi {{{FIRST_NAME}}} {{{contact.last_name}}}</p>' }));

  const many = (n) => Array.from({ length: n }, (_, i) => ({ key: `VAR_${i}`, type: 'string' }));
  refused(
    await resend.templates.create({ name: 'Too many', html: '<p>x</p>', variables: many(51) }),
    422,
    'validation_error',
    'Invalid `variables` field: at most 50 variables, got 51',
  );
  const fifty = ok(await resend.templates.create({ name: 'Fifty', html: '<p>x</p>', variables: many(50) }));
  assert.equal(ok(await resend.templates.get(fifty.id)).variables.length, 50);

  refused(
    await resend.templates.create({ name: 'Typed', html: '<p>x</p>', variables: [{ key: 'SEATS', type: 'number', fallbackValue: 'many' }] }),
    422,
    'validation_error',
    /^Invalid `variables\[0\]\.fallback_value` field: the variable is a number/,
  );
  refused(
    await resend.templates.create({ name: 'Typed', html: '<p>x</p>', variables: [{ key: 'NAME', type: 'string', fallbackValue: 3 }] }),
    422,
    'validation_error',
    /^Invalid `variables\[0\]\.fallback_value` field: the variable is a string/,
  );
  refused(
    await resend.templates.create({ name: 'Typed', html: '<p>x</p>', variables: [{ key: 'FLAG', type: 'boolean' }] }),
    422,
    'validation_error',
    /variables\[0\]\.type/,
  );
  refused(
    await resend.templates.create({ name: 'Untyped', html: '<p>x</p>', variables: [{ key: 'NAME' }] }),
    422,
    'validation_error',
    'Invalid `variables[0]` field: missing `type` (string or number)',
  );
  refused(
    await resend.templates.create({
      name: 'Twice',
      html: '<p>x</p>',
      variables: [{ key: 'NAME', type: 'string' }, { key: 'NAME', type: 'number' }],
    }),
    422,
    'validation_error',
    'Invalid `variables[1].key` field: NAME is declared twice',
  );
  refused(
    await resend.templates.create({ name: 'Bad key', html: '<p>x</p>', variables: [{ key: 'has space', type: 'string' }] }),
    422,
    'validation_error',
    /^Invalid `variables\[0\]\.key` field: /,
  );
  refused(
    await resend.templates.create({ name: 'Bad from', html: '<p>x</p>', from: 'not an address' }),
    422,
    'validation_error',
    /^Invalid `from` field: /,
  );
  refused(
    await resend.templates.create({ name: 'Bad subject', html: '<p>x</p>', subject: 'two\r\nlines' }),
    422,
    'validation_error',
    'Invalid `subject` field: must not contain CR, LF or NUL',
  );

  const alias = uniqueAlias('taken');
  const owner = ok(await resend.templates.create({ name: 'Owner', alias, html: '<p>x</p>' }));
  refused(await resend.templates.create({ name: 'Same', alias, html: '<p>x</p>' }), 409, 'conflict', `A template with the alias ${alias} already exists`);
  refused(
    await resend.templates.create({ name: 'Same, shouted', alias: alias.toUpperCase(), html: '<p>x</p>' }),
    409,
    'conflict',
  );
  const other = ok(await resend.templates.create({ name: 'Other', html: '<p>x</p>' }));
  refused(await resend.templates.update(other.id, { alias }), 409, 'conflict');
  // A template may keep (or re-case) its own alias.
  ok(await resend.templates.update(owner.id, { alias: alias.toUpperCase() }));
  assert.equal(ok(await resend.templates.get(alias)).alias, alias.toUpperCase());
  refused(await resend.templates.create({ name: 'Bang', alias: 'no!bang', html: '<p>x</p>' }), 422, 'validation_error');
  refused(await resend.templates.create({ name: 'Uuid', alias: randomUUID(), html: '<p>x</p>' }), 422, 'validation_error');
  // The Go SDK always sends `name` and `html`, empty when unchanged: empty leaves them.
  ok(await resend.templates.update(other.id, { name: '', html: '' }));
  assert.equal(ok(await resend.templates.get(other.id)).name, 'Other');
  refused(await resend.templates.update(other.id, { html: '{{{' }), 422, 'validation_error', /at line 1, column 1$/);

  // What was refused was not created, and a refused update changed nothing.
  assert.deepEqual(
    ok(await resend.templates.list()).data.map((t) => t.name),
    ['Other', 'Owner', 'Fifty', 'Uses reserved'],
  );
  assert.equal(ok(await resend.templates.get(other.id)).html, '<p>x</p>');
  assert.equal(ok(await resend.templates.get(other.id)).alias, null);
});

test('emails.send with a template: variables, fallbacks, escaping, and from, subject and reply_to from the template', async () => {
  const template = await publishedTemplate('receipt', {
    from: `{{{SHOP}}} <shop@${domain}>`,
    subject: 'Receipt for {{{NAME}}}',
    replyTo: `support@${domain}`,
    html: '<p title="{{{NAME}}}">Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.</p>',
    text: 'Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.',
    variables: [
      { key: 'SHOP', type: 'string', fallbackValue: 'Compat Shop' },
      { key: 'NAME', type: 'string' },
      { key: 'PRICE', type: 'number' },
      { key: 'CITY', type: 'string', fallbackValue: 'Paris' },
    ],
  });

  // Values are escaped in html, not in subject or text; numbers print as JSON does.
  const name = `<b>"Ann" & 'Co'</b>`;
  const sent = ok(
    await resend.emails.send({ to: RECIPIENT, template: { id: template.id, variables: { NAME: name, PRICE: 499.5 } } }),
  );
  assert.deepEqual(Object.keys(sent), ['id']);
  assert.match(sent.id, UUID);
  const got = ok(await resend.emails.get(sent.id));
  assert.equal(got.from, `Compat Shop <shop@${domain}>`);
  assert.deepEqual(got.to, [RECIPIENT]);
  assert.equal(got.subject, `Receipt for ${name}`);
  assert.deepEqual(got.reply_to, [`support@${domain}`]);
  assert.equal(
    got.html,
    `<p title="${escapeHtml(name)}">Hi ${escapeHtml(name)}, you paid 499.5 for your order in Paris.</p>`,
  );
  assert.equal(got.text, `Hi ${name}, you paid 499.5 for your order in Paris.`);
  assert.deepEqual(got.template, { id: template.id, version_id: template.version });
  assert.equal(got.last_event, 'sent');

  // By alias (in any case); the send's own from, subject and reply_to win; given values
  // win over the declared and the inline fallbacks.
  const own = ok(
    await resend.emails.send({
      from: from(),
      to: RECIPIENT,
      subject: 'Own subject',
      replyTo: 'own@recipient.test',
      template: { id: template.alias.toUpperCase(), variables: { NAME: 'Bo', PRICE: 3, CITY: 'Oslo', PRODUCT: 'tea', SHOP: 'Unused' } },
    }),
  );
  const ownGot = ok(await resend.emails.get(own.id));
  assert.equal(ownGot.from, from());
  assert.equal(ownGot.subject, 'Own subject');
  assert.deepEqual(ownGot.reply_to, ['own@recipient.test']);
  assert.equal(ownGot.html, '<p title="Bo">Hi Bo, you paid 3 for tea in Oslo.</p>');
  assert.equal(ownGot.text, 'Hi Bo, you paid 3 for tea in Oslo.');
  assert.deepEqual(ownGot.template, { id: template.id, version_id: template.version });

  // An empty subject (as the Go SDK sends one) counts as absent.
  const empty = ok(
    await resend.emails.send({ from: '', to: RECIPIENT, subject: '', template: { id: template.alias, variables: { NAME: 'Cy', PRICE: 0 } } }),
  );
  const emptyGot = ok(await resend.emails.get(empty.id));
  assert.equal(emptyGot.subject, 'Receipt for Cy');
  assert.equal(emptyGot.from, `Compat Shop <shop@${domain}>`);

  // Reserved names take their values from `variables` in a transactional send.
  const greeting = await publishedTemplate('reserved', {
    html: '<p>Hi {{{FIRST_NAME}}} {{{LAST_NAME|}}}({{{EMAIL}}})</p>',
  });
  const reserved = ok(
    await resend.emails.send({
      from: from(),
      to: 'ann@recipient.test',
      subject: 'Reserved names',
      template: { id: greeting.id, variables: { FIRST_NAME: 'Ann', EMAIL: 'ann@recipient.test' } },
    }),
  );
  const reservedGot = ok(await resend.emails.get(reserved.id));
  assert.equal(reservedGot.html, '<p>Hi Ann (ann@recipient.test)</p>');
  assert.equal(reservedGot.text, null, 'a template without text sends html only');
  assert.deepEqual(reservedGot.template, { id: greeting.id, version_id: greeting.version });
});

test('a published template keeps sending until its draft is published; emails keep their version', async () => {
  const template = await publishedTemplate('pinned', {
    from: from(),
    subject: 'Pinned',
    html: '<p>v1 {{{X}}}</p>',
    variables: [{ key: 'X', type: 'string', fallbackValue: 'x' }],
  });
  ok(await resend.templates.update(template.id, { html: '<p>v2 {{{X}}}</p>' }));
  const draft = ok(await resend.templates.get(template.id));
  assert.equal(draft.has_unpublished_versions, true);
  assert.notEqual(draft.current_version_id, template.version);

  const first = ok(await resend.emails.send({ to: RECIPIENT, template: { id: template.id } }));
  const firstGot = ok(await resend.emails.get(first.id));
  assert.equal(firstGot.html, '<p>v1 x</p>', 'the published version sends, not the draft');
  assert.deepEqual(firstGot.template, { id: template.id, version_id: template.version });

  ok(await resend.templates.publish(template.alias));
  const second = ok(await resend.emails.send({ to: RECIPIENT, template: { id: template.alias, variables: { X: 'y' } } }));
  const secondGot = ok(await resend.emails.get(second.id));
  assert.equal(secondGot.html, '<p>v2 y</p>');
  assert.deepEqual(secondGot.template, { id: template.id, version_id: draft.current_version_id });

  // Deleting the template leaves the emails sent from it as they are.
  ok(await resend.templates.remove(template.id));
  const kept = ok(await resend.emails.get(first.id));
  assert.deepEqual([kept.subject, kept.html, kept.template], [firstGot.subject, firstGot.html, firstGot.template]);
  refused(
    await resend.emails.send({ to: RECIPIENT, template: { id: template.id } }),
    404,
    'not_found',
    'Template not found',
  );
});

test('batch.send with a template in each item; strict and permissive refusals', async () => {
  const template = await publishedTemplate('batch', {
    from: from(),
    subject: 'Batch {{{NAME}}}',
    html: '<p>Hi {{{NAME}}}</p>',
    variables: [{ key: 'NAME', type: 'string' }],
  });
  const names = [`Ann ${suffix()}`, `Bo ${suffix()}`];
  const result = ok(
    await resend.batch.send([
      { to: 'ann@recipient.test', template: { id: template.id, variables: { NAME: names[0] } } },
      { to: 'bo@recipient.test', template: { id: template.alias, variables: { NAME: names[1] } } },
      { from: from(), to: 'cy@recipient.test', subject: 'Plain in a template batch', text: 'plain' },
    ]),
  );
  assert.equal(result.data.length, 3);
  for (const [index, name] of names.entries()) {
    const got = ok(await resend.emails.get(result.data[index].id));
    assert.equal(got.subject, `Batch ${name}`);
    assert.equal(got.html, `<p>Hi ${name}</p>`);
    assert.equal(got.from, from());
    assert.deepEqual(got.template, { id: template.id, version_id: template.version });
  }
  const plain = ok(await resend.emails.get(result.data[2].id));
  assert.equal(plain.text, 'plain');
  assert.equal(plain.template, undefined, 'only template sends carry `template`');

  // Strict (the SDK's default): one item without its variable refuses the batch.
  const strictName = `Strict ${suffix()}`;
  const strict = refused(
    await resend.batch.send([
      { to: RECIPIENT, template: { id: template.id, variables: { NAME: strictName } } },
      { to: RECIPIENT, template: { id: template.id, variables: {} } },
    ]),
    422,
    'validation_error',
  );
  assert.ok(strict.message.startsWith('emails[1]: Missing template variable `NAME`'), strict.message);
  assert.deepEqual(await listedWithSubject(`Batch ${strictName}`), [], 'nothing was sent');

  // Permissive: the good ones are sent, the others listed by index.
  const draft = ok(await resend.templates.create({ name: 'Node batch draft', subject: 'Draft', from: from(), html: '<p>draft</p>' }));
  const permissiveName = `Permissive ${suffix()}`;
  const permissive = ok(
    await resend.batch.send(
      [
        { to: RECIPIENT, template: { id: template.id, variables: { NAME: permissiveName } } },
        { to: RECIPIENT, template: { id: randomUUID() } },
        { to: RECIPIENT, template: { id: draft.id } },
      ],
      { batchValidation: 'permissive' },
    ),
  );
  assert.equal(permissive.data.length, 1);
  assert.equal(ok(await resend.emails.get(permissive.data[0].id)).subject, `Batch ${permissiveName}`);
  assert.equal(permissive.errors.length, 2);
  assert.deepEqual(permissive.errors[0], { index: 1, message: 'Template not found' });
  assert.equal(permissive.errors[1].index, 2);
  assert.match(permissive.errors[1].message, /not published/);
});

test('template sends that are refused, with their errors', async () => {
  const template = await publishedTemplate('refusals', {
    from: from(),
    subject: 'Hello {{{NAME}}}',
    html: '<p>Hello {{{NAME}}}, {{{SEATS}}} seats</p>',
    variables: [
      { key: 'NAME', type: 'string' },
      { key: 'SEATS', type: 'number', fallbackValue: 1 },
    ],
  });
  const send = (extra) => resend.emails.send({ to: RECIPIENT, template: { id: template.id, variables: { NAME: 'Ann' } }, ...extra });

  for (const extra of [{ html: '<p>mine</p>' }, { text: 'mine' }]) {
    refused(await send(extra), 422, 'validation_error', /cannot be sent with `template`/);
  }
  refused(
    await send({ template: { id: template.id } }),
    422,
    'validation_error',
    /^Missing template variable `NAME` \(in the template's `subject`\)/,
  );
  refused(
    await send({ template: { id: template.id, variables: { NAME: 'Ann', SEATS: 'many' } } }),
    422,
    'validation_error',
    'Invalid `template.variables.SEATS` field: the template declares it a number',
  );
  refused(
    await send({ template: { id: template.id, variables: { NAME: 7 } } }),
    422,
    'validation_error',
    'Invalid `template.variables.NAME` field: the template declares it a string',
  );
  for (const value of [true, null, ['Ann'], { first: 'Ann' }]) {
    refused(
      await send({ template: { id: template.id, variables: { NAME: value } } }),
      422,
      'validation_error',
      'Invalid `template.variables.NAME` field: a string or a number',
    );
  }
  // No variable can put a line break into a header.
  refused(
    await send({ template: { id: template.id, variables: { NAME: 'Ann\r\nBcc: victim@recipient.test' } } }),
    422,
    'validation_error',
    'Invalid `subject` field: must not contain CR, LF or NUL',
  );
  refused(await send({ template: { id: randomUUID() } }), 404, 'not_found', 'Template not found');
  refused(await send({ template: { id: 'no-such-alias' } }), 404, 'not_found', 'Template not found');
  refused(await send({ template: {} }), 422, 'missing_required_field', 'Missing `template.id` field.');

  const draft = ok(await resend.templates.create({ name: 'Node draft', from: from(), subject: 'Draft', html: '<p>draft</p>' }));
  refused(await send({ template: { id: draft.id } }), 422, 'validation_error', /not published/);

  // What the template does not give, the send must.
  const bare = await publishedTemplate('bare', { html: '<p>bare</p>' });
  refused(
    await resend.emails.send({ from: from(), to: RECIPIENT, template: { id: bare.id } }),
    422,
    'missing_required_field',
    'Missing `subject` field.',
  );
  refused(
    await resend.emails.send({ to: RECIPIENT, subject: 'No sender', template: { id: bare.id } }),
    422,
    'missing_required_field',
    'Missing `from` field.',
  );
  // The template's sender must be a verified domain of the team, as any sender.
  const elsewhere = await publishedTemplate('unverified', {
    from: `someone@${uniqueDomain('unverified')}`,
    subject: 'Unverified',
    html: '<p>x</p>',
  });
  refused(await resend.emails.send({ to: RECIPIENT, template: { id: elsewhere.id } }), 403, 'validation_error');
  // The unsubscribe link is filled in at acceptance; it belongs in the body only.
  const unsubscribe = await publishedTemplate('unsubscribe', {
    from: from(),
    subject: 'Unsubscribe',
    html: '<p><a href="{{{UNSUBSCRIBE_URL}}}">Unsubscribe</a></p>',
  });
  const linked = await resend.emails.send({ to: RECIPIENT, template: { id: unsubscribe.id } });
  assert.equal(linked.error, null, JSON.stringify(linked.error));
  const inSubject = await publishedTemplate('unsubscribe-subject', {
    from: from(),
    subject: 'Leave at {{{RESEND_UNSUBSCRIBE_URL}}}',
    html: '<p>x</p>',
  });
  refused(
    await resend.emails.send({ to: RECIPIENT, template: { id: inSubject.id } }),
    422,
    'validation_error',
    /goes in `html` or `text` only/,
  );

  // On the wire.
  const onWire = await raw('POST', '/emails', {
    body: { to: RECIPIENT, template: { id: template.id, variables: { NAME: 'Wire' } } },
  });
  assert.equal(onWire.status, 200, onWire.text);
  assert.deepEqual(Object.keys(onWire.json), ['id']);
});

test('sending keys send with templates but cannot manage them', async () => {
  const template = await publishedTemplate('sending-key', { from: from(), subject: 'Key', html: '<p>key</p>' });
  const apiKey = ok(await resend.apiKeys.create({ name: `node-templates-sending-${suffix()}`, permission: 'sending_access' }));
  const sending = new Resend(apiKey.token);
  const sent = ok(await sending.emails.send({ to: RECIPIENT, template: { id: template.alias } }));
  assert.equal(ok(await resend.emails.get(sent.id)).html, '<p>key</p>');
  fails(await sending.templates.list(), 401, 'restricted_api_key');
  fails(await sending.templates.get(template.id), 401, 'restricted_api_key');
  fails(await sending.templates.create({ name: 'Nope', html: '<p>x</p>' }), 401, 'restricted_api_key');
  fails(await sending.templates.update(template.id, { name: 'Nope' }), 401, 'restricted_api_key');
  fails(await sending.templates.publish(template.id), 401, 'restricted_api_key');
  fails(await sending.templates.duplicate(template.id), 401, 'restricted_api_key');
  fails(await sending.templates.remove(template.id), 401, 'restricted_api_key');
  ok(await resend.apiKeys.remove(apiKey.id));

  // Templates belong to their team.
  const { resend: other } = await team('templates-other');
  fails(await other.templates.get(template.id), 404, 'not_found');
  fails(await other.templates.get(template.alias), 404, 'not_found');
  assert.deepEqual(ok(await other.templates.list()).data, []);
});

/** A React email written without JSX: the SDK renders it with @react-email/render. */
function Welcome({ name, plan, url }) {
  const h = React.createElement;
  return h(
    Html,
    { lang: 'en' },
    h(Head, null),
    h(
      Body,
      { style: { backgroundColor: '#ffffff' } },
      h(
        Container,
        null,
        h(Heading, { as: 'h1' }, `Welcome, ${name}!`),
        h(Text, null, `You are on the ${plan} plan.`),
        h(Button, { href: url }, 'Get started'),
      ),
    ),
  );
}

test('React emails: the SDK renders `react` to html for emails.send, batch.send (per-recipient props) and templates.create', async () => {
  const recipients = [
    { to: 'ann@recipient.test', props: { name: 'Ann & <Co>', plan: 'pro', url: 'https://example.test/start?u=ann&plan=pro' } },
    { to: 'bo@recipient.test', props: { name: 'Bo', plan: 'free', url: 'https://example.test/start?u=bo' } },
  ];
  const subject = `node react ${suffix()}`;
  const batch = ok(
    await resend.batch.send(
      recipients.map(({ to, props }) => ({ from: from(), to, subject, react: React.createElement(Welcome, props) })),
    ),
  );
  assert.equal(batch.data.length, 2);
  for (const [index, { to, props }] of recipients.entries()) {
    const got = ok(await resend.emails.get(batch.data[index].id));
    assert.deepEqual(got.to, [to]);
    assert.equal(got.subject, subject);
    // Exactly what @react-email/render makes of the element, with this recipient's props.
    const html = await render(React.createElement(Welcome, props));
    assert.equal(got.html, html);
    assert.ok(got.html.startsWith('<!DOCTYPE html PUBLIC'), got.html.slice(0, 80));
    assert.equal(got.text, null, 'the SDK sends no text part for react');
    assert.equal(got.template, undefined);
  }
  const [ann, bo] = await Promise.all(batch.data.map(({ id }) => resend.emails.get(id).then(ok)));
  assert.ok(ann.html.includes('Welcome, Ann &amp; &lt;Co&gt;!'), ann.html);
  assert.ok(ann.html.includes('href="https://example.test/start?u=ann&amp;plan=pro"'), ann.html);
  assert.ok(ann.html.includes('You are on the pro plan.'), ann.html);
  assert.ok(bo.html.includes('Welcome, Bo!'), bo.html);
  assert.ok(bo.html.includes('You are on the free plan.'), bo.html);
  assert.ok(!bo.html.includes('Ann'), bo.html);

  const single = ok(
    await resend.emails.send({ from: from(), to: RECIPIENT, subject, react: Welcome({ name: 'Cy', plan: 'team', url: 'https://example.test/cy' }) }),
  );
  assert.equal(
    ok(await resend.emails.get(single.id)).html,
    await render(Welcome({ name: 'Cy', plan: 'team', url: 'https://example.test/cy' })),
  );

  // A React template: the merge tags are text React leaves alone; herald fills them in
  // per send (escaped, since this is html).
  const element = React.createElement(Welcome, { name: '{{{NAME}}}', plan: '{{{PLAN|starter}}}', url: 'https://example.test/start' });
  const templateHtml = await render(element);
  assert.ok(templateHtml.includes('Welcome, {{{NAME}}}!'), templateHtml);
  const alias = uniqueAlias('react');
  const created = ok(
    await resend.templates
      .create({
        name: 'Node React welcome',
        alias,
        from: from(),
        subject: 'Welcome, {{{NAME}}}',
        react: element,
        variables: [{ key: 'NAME', type: 'string' }],
      })
      .publish(),
  );
  const stored = ok(await resend.templates.get(created.id));
  assert.equal(stored.html, templateHtml);
  assert.equal(stored.status, 'published');

  const people = [
    { to: 'ann@recipient.test', variables: { NAME: 'Ann & <Co>', PLAN: 'pro' } },
    { to: 'bo@recipient.test', variables: { NAME: 'Bo' } },
  ];
  const sends = ok(
    await resend.batch.send(people.map(({ to, variables }) => ({ to, template: { id: alias, variables } }))),
  );
  for (const [index, { to, variables }] of people.entries()) {
    const got = ok(await resend.emails.get(sends.data[index].id));
    assert.deepEqual(got.to, [to]);
    assert.equal(got.subject, `Welcome, ${variables.NAME}`);
    assert.equal(
      got.html,
      templateHtml
        .replaceAll('{{{NAME}}}', escapeHtml(variables.NAME))
        .replaceAll('{{{PLAN|starter}}}', escapeHtml(variables.PLAN ?? 'starter')),
    );
    assert.deepEqual(got.template, { id: created.id, version_id: stored.current_version_id });
  }
});

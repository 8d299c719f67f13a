// React emails followed into the message that reaches a mailbox: the Node SDK renders a
// `react` element to HTML on the client (@react-email/render), herald builds, signs and
// delivers it, and the suite's SMTP sink (compat/sink/smtp_sink.py, fed by the second,
// delivering herald that scripts/compat starts) receives it. Each recipient of a batch
// gets its own props; a template made from a React element gets each send's variables.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

import { Body, Button, Container, Head, Heading, Html, Text } from '@react-email/components';
import { render } from '@react-email/render';
import PostalMime from 'postal-mime';
import React from 'react';
import { Resend } from 'resend';

import { API_KEY, ok, uniqueDomain } from './helpers.mjs';

const DELIVERING = process.env.HERALD_DELIVERING_URL;
const SINK = process.env.HERALD_SINK_DIR;
const WAIT_MS = 30_000;

/** A React email written without JSX. */
function Welcome({ name, plan }) {
  const h = React.createElement;
  return h(
    Html,
    { lang: 'en' },
    h(Head, null),
    h(
      Body,
      null,
      h(
        Container,
        null,
        h(Heading, { as: 'h1' }, `Welcome, ${name}!`),
        h(Text, null, `You are on the ${plan} plan.`),
        h(Button, { href: 'https://example.test/start' }, 'Get started'),
      ),
    ),
  );
}

/** The message the sink received for `recipient`, parsed, once it has arrived. */
async function delivered(recipient) {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    for (const name of await readdir(SINK)) {
      if (!name.endsWith('.json')) continue;
      const envelope = JSON.parse(await readFile(join(SINK, name), 'utf8'));
      if (envelope.rcpt_to.includes(recipient)) {
        const raw = await readFile(join(SINK, name.replace(/\.json$/, '.eml')));
        return { envelope, message: await PostalMime.parse(raw) };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`nothing reached the sink for ${recipient} within ${WAIT_MS} ms`);
}

/** Lines as the message carries them: MIME ends lines with CRLF. */
const lines = (text) => text.replace(/\r\n/g, '\n').trimEnd();

const escapeHtml = (text) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');

test('React emails reach the mailbox as rendered, per recipient, and through a React template', { skip: !(DELIVERING && SINK) && 'run by scripts/compat' }, async () => {
  const resend = new Resend(API_KEY, { baseUrl: DELIVERING });
  const domain = uniqueDomain('react-sink');
  const created = ok(await resend.domains.create({ name: domain }));
  const verified = await fetch(`${DELIVERING}/domains/${created.id}/verify`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ skip_dns: true }),
  });
  assert.equal(verified.status, 200, await verified.text());
  const from = `Welcome <hello@${domain}>`;
  const suffix = domain.split('.')[0];

  // A batch: each recipient's own props, rendered by the SDK, reach that recipient.
  const people = [
    { to: `ann-${suffix}@inbox.test`, props: { name: 'Ann & <Co>', plan: 'pro' } },
    { to: `bo-${suffix}@inbox.test`, props: { name: 'Bo', plan: 'free' } },
  ];
  const batch = ok(
    await resend.batch.send(people.map(({ to, props }) => ({ from, to, subject: 'Welcome', react: React.createElement(Welcome, props) }))),
  );
  assert.equal(batch.data.length, 2);
  for (const { to, props } of people) {
    const { envelope, message } = await delivered(to);
    assert.deepEqual(envelope.rcpt_to, [to]);
    assert.equal(message.subject, 'Welcome');
    assert.equal(lines(message.html), lines(await render(React.createElement(Welcome, props))));
    assert.ok(message.text.includes(`You are on the ${props.plan} plan.`), message.text);
    assert.ok(message.headers.some((h) => h.key === 'dkim-signature'), 'signed on the way out');
  }
  const ann = (await delivered(people[0].to)).message;
  assert.ok(ann.html.includes('Welcome, Ann &amp; &lt;Co&gt;!'), ann.html);

  // A template made from a React element: herald fills its merge tags per send.
  const element = React.createElement(Welcome, { name: '{{{NAME}}}', plan: '{{{PLAN|starter}}}' });
  const template = ok(
    await resend.templates
      .create({ name: 'React welcome', from, subject: 'Hi {{{NAME}}}', react: element, variables: [{ key: 'NAME', type: 'string' }] })
      .publish(),
  );
  const html = await render(element);
  const sends = [
    { to: `cy-${suffix}@inbox.test`, variables: { NAME: 'Cy "the third"', PLAN: 'team' } },
    { to: `di-${suffix}@inbox.test`, variables: { NAME: 'Di' } },
  ];
  ok(await resend.batch.send(sends.map(({ to, variables }) => ({ to, template: { id: template.id, variables } }))));
  for (const { to, variables } of sends) {
    const { message } = await delivered(to);
    assert.equal(message.subject, `Hi ${variables.NAME}`);
    const expected = html
      .replaceAll('{{{NAME}}}', escapeHtml(variables.NAME))
      .replaceAll('{{{PLAN|starter}}}', escapeHtml(variables.PLAN ?? 'starter'));
    assert.equal(lines(message.html), lines(expected));
  }
});

// Issue 28's cross-site attacks, from real Chromium pages against a real
// tidingsd in no-tenant mode (the README's quick start): a page on another
// site tries to publish, to start a Lua watch and to drain the node, with
// the requests a browser sends without asking first (a form post, a
// no-cors fetch); a page reached through a name that resolves to loopback
// (DNS rebinding, made with Chromium's host resolver rules) tries the same
// as if it were the node's own. Nothing of it may land, and the node must
// stay up; an origin listed in allowed-origins and the node's own pages work.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { launchBrowser } from './support/browser.mjs';
import { call } from './support/http.mjs';
import { Tidingsd } from './support/tidingsd.mjs';

const dir = mkdtempSync(join(tmpdir(), 'tidings-e2e-xsite-'));
const config = join(dir, 'tidings.yaml');
writeFileSync(config, 'heartbeat-ms: 1000\n');

// The other site: one blank page, whatever the path. Reached as
// http://127.0.0.1:P (not allowed) and http://localhost:P (allowed).
const pages = createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html' });
  res.end('<!doctype html><title>elsewhere</title><body></body>');
});

let node;
let browser;
let pagesPort;

before(async () => {
  await new Promise((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagesPort = pages.address().port;
  node = await Tidingsd.start({
    config,
    dataDir: join(dir, 'data'),
    args: ['--allowed-origins', `http://localhost:${pagesPort}`],
  });
  browser = await launchBrowser(['--host-resolver-rules=MAP rebound.test 127.0.0.1']);
});

after(async () => {
  await browser?.close();
  await node?.stop();
  await new Promise((resolve) => pages.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

// What the page's own script gets back; a network error (a refused
// preflight, an opaque no-cors answer) is part of the result, not a throw.
async function attempt(page, fn, arg) {
  return page.evaluate(fn, arg);
}

async function storedEvents(stream) {
  const r = await call(node.base, 'GET', `/v1/streams/${stream}/events`);
  return r.status === 404 ? 0 : r.json.events.length;
}

describe('a page on another site', () => {
  test('cannot publish, start a watch or drain the node', async () => {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${pagesPort}/`);
    const target = node.base;
    const results = await attempt(
      page,
      async (base) => {
        const out = {};
        const noCors = async (path, body) => {
          try {
            await fetch(base + path, { method: 'POST', mode: 'no-cors', body });
            return 'sent';
          } catch (e) {
            return `error ${e.message}`;
          }
        };
        // text/plain and an untyped Blob: no preflight for either.
        out.publishText = await noCors('/v1/streams/csrf/events', JSON.stringify({ path: '/x', data: 1 }));
        out.publishBlob = await noCors('/v1/streams/csrf/events', new Blob([JSON.stringify({ path: '/y' })]));
        out.watch = await noCors(
          '/v1/watches',
          JSON.stringify({ name: 'evil', uri: 'stream://csrf', on_event: 'return event' }),
        );
        // A JSON fetch needs a preflight, which the node refuses.
        try {
          const r = await fetch(base + '/v1/streams/csrf/events', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ path: '/z' }),
          });
          out.json = `answered ${r.status}`;
        } catch (e) {
          out.json = 'refused';
        }
        // A form post (the oldest CSRF): drain, into a frame.
        await new Promise((resolve) => {
          const frame = document.createElement('iframe');
          frame.name = 'sink';
          frame.onload = resolve;
          document.body.appendChild(frame);
          const form = document.createElement('form');
          form.method = 'POST';
          form.action = base + '/admin/v1/drain';
          form.target = 'sink';
          const field = document.createElement('input');
          field.name = '{"x":"';
          field.value = '"}';
          form.appendChild(field);
          document.body.appendChild(form);
          form.submit();
        });
        return out;
      },
      target,
    );
    assert.equal(results.json, 'refused', JSON.stringify(results));
    await page.close();

    // The node is up and nothing landed.
    assert.equal((await call(node.base, 'GET', '/healthz')).status, 200);
    assert.equal(await storedEvents('csrf'), 0);
    const watches = await call(node.base, 'GET', '/v1/watches');
    assert.equal(watches.status, 200);
    assert.deepEqual(watches.json, []);
    assert.ok(!node.lines.some((l) => l.includes('"node.draining"')), 'the node began to drain');
  });

  test('reached by a rebound name, is refused though the browser sees one origin', async () => {
    const page = await browser.newPage();
    const rebound = `http://rebound.test:${node.port}`;
    const landing = await page.goto(`${rebound}/live/`);
    assert.equal(landing.status(), 403);
    const answers = await attempt(
      page,
      async () => {
        const post = await fetch('/v1/streams/rebound/events', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ path: '/r' }),
        });
        const read = await fetch('/v1/streams');
        return { post: post.status, read: read.status, error: (await read.json()).error };
      },
      undefined,
    );
    assert.equal(answers.post, 403);
    assert.equal(answers.read, 403);
    assert.match(answers.error, /not a name of this node/);
    assert.equal(await storedEvents('rebound'), 0);
    await page.close();
  });

  test('listed in allowed-origins may call the node and read the answer', async () => {
    const page = await browser.newPage();
    await page.goto(`http://localhost:${pagesPort}/`);
    const answer = await attempt(
      page,
      async (base) => {
        const r = await fetch(base + '/v1/streams/friendly/events', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ path: '/f', data: 1 }),
        });
        return { status: r.status, body: await r.json() };
      },
      node.base,
    );
    assert.equal(answer.status, 201, JSON.stringify(answer));
    assert.ok(answer.body.cursor || answer.body.cursors, JSON.stringify(answer.body));
    assert.equal(await storedEvents('friendly'), 1);
    await page.close();
  });
});

describe("the node's own page", () => {
  test('publishes from its own origin', async () => {
    const page = await browser.newPage();
    await page.goto(`${node.base}/live/`);
    const status = await attempt(
      page,
      async () =>
        (
          await fetch('/v1/streams/own/events', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ path: '/o' }),
          })
        ).status,
      undefined,
    );
    assert.equal(status, 201);
    assert.equal(await storedEvents('own'), 1);
    await page.close();
  });
});

// The library live view (/live/) in real Chromium against a real tidingsd:
// two browser contexts on one document, edits from the page, the HTTP API
// and an upstream file, a node restart, a resync past retention, expired
// and revoked tokens, and 1000 load-tool sessions beside the browsers.
// Timings are printed, never asserted (docs/performance.md has figures).

import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import { collectPageErrors, launchBrowser } from './support/browser.mjs';
import { call, eventually, publish } from './support/http.mjs';
import { LoadAudience } from './support/load_audience.mjs';
import { Tidingsd } from './support/tidingsd.mjs';
import { claims, mintHs256 } from './support/tokens.mjs';

const run = promisify(execFile);
const librarySecret = 'library-e2e-secret-0123456789abcdef-012345';
const opsSecret = 'ops-e2e-secret-0123456789abcdef-0123456789ab';
const readerGrants = { read: ['library', 'src:*'], write: ['library'] };
const retention = 40;
const artifacts = process.env.TIDINGS_E2E_ARTIFACTS || join(tmpdir(), 'tidings-e2e-artifacts');

const dir = mkdtempSync(join(tmpdir(), 'tidings-e2e-'));
const catalogDir = join(dir, 'catalog');
const catalogFile = join(catalogDir, 'catalog.json');
const catalogUri = `file://${catalogFile}`;
const config = join(dir, 'tidings.yaml');
const dataDir = join(dir, 'data');

const readerToken = (sub = 'reader', seconds = 3600) =>
  mintHs256(librarySecret, claims('library', sub, readerGrants, seconds), 'lib1');
const libraryAdmin = mintHs256(librarySecret, claims('library', 'librarian', { admin: true }), 'lib1');
const opsAdmin = mintHs256(opsSecret, claims('ops', 'operator', { admin: true, read: ['*'] }), 'ops1');

function writeCatalog(docs) {
  // Replaced by rename, the way editors save: the source sees one change.
  writeFileSync(`${catalogFile}.tmp`, JSON.stringify(docs, null, 2));
  renameSync(`${catalogFile}.tmp`, catalogFile);
}

function writeConfig() {
  writeFileSync(
    config,
    `max-connections-per-address: 4000
retention-events: ${retention}
heartbeat-ms: 1000
upstreams:
  files:
    roots: [${catalogDir}]
tenants:
  - id: library
    keys:
      - kid: lib1
        alg: HS256
        secret: ${librarySecret}
    limits:
      sse_sessions: 3000
      sse_sessions_per_subject: 2000
  - id: ops
    operator: true
    keys:
      - kid: ops1
        alg: HS256
        secret: ${opsSecret}
`,
  );
}

let node;
let browser;
const contexts = [];

async function startNode(port = 0) {
  node = await Tidingsd.start({ config, dataDir, port });
  return node;
}

// A page on the live view with `token`, the document `doc` open, and a
// marker that a reload would lose.
async function openPage(token, doc, { awaitLive = true } = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  contexts.push(context);
  const page = await context.newPage();
  const errors = collectPageErrors(page);
  const query = `?stream=library&catalog=${encodeURIComponent(catalogUri)}`;
  await page.goto(`${node.base}/live/${query}#token=${token}&doc=${doc}`);
  if (awaitLive) await awaitState(page, 'live');
  await page.evaluate(() => {
    window.__notReloaded = true;
  });
  return { context, page, errors };
}

async function awaitState(page, state, timeout = 15000) {
  await page.locator(`[data-testid=connection-state][data-state=${state}]`).waitFor({ timeout });
}

async function awaitBody(page, text, timeout = 10000) {
  await page.waitForFunction(
    (want) => document.querySelector('[data-testid=doc-body]')?.textContent === want,
    text,
    { timeout },
  );
}

// Cursors of the live changes the page listed, oldest first.
async function activityCursors(page) {
  return page.$$eval('[data-testid=activity] [data-cursor]', (items) =>
    items.map((i) => i.getAttribute('data-cursor')).reverse(),
  );
}

async function clientStats(page) {
  return page.evaluate(() => ({ ...window.tidingsLibrary.client.stats }));
}

function seqOf(cursor) {
  return Number(cursor.split(':')[1]);
}

before(async () => {
  mkdirSync(catalogDir, { recursive: true });
  mkdirSync(artifacts, { recursive: true });
  writeCatalog({ 'moby-dick': { title: 'Moby-Dick', body: 'Call me Ishmael.' } });
  writeConfig();
  await startNode();
  await publish(node.base, readerToken(), 'library', [
    { path: '/odyssey', type: 'MODIFIED', data: { title: 'The Odyssey', body: 'Sing to me of the man, Muse.', editor: 'setup' } },
    { path: '/walden', type: 'MODIFIED', data: { title: 'Walden', body: 'I went to the woods.', editor: 'setup' } },
  ]);
  browser = await launchBrowser();
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close().catch(() => {});
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('two browsers on one document', () => {
  let a;
  let b;
  before(async () => {
    a = await openPage(readerToken('alice'), 'library:/odyssey');
    b = await openPage(readerToken('bob'), 'library:/odyssey');
  });

  test('the page serves its files with a content security policy', async () => {
    const r = await call(node.base, 'GET', '/live/');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-security-policy'), /script-src 'self'/);
    const js = await call(node.base, 'GET', '/live/tidings.js');
    assert.match(js.headers.get('content-type'), /^text\/javascript/);
  });

  test('both show the open document from the stream history', async () => {
    for (const { page, errors } of [a, b]) {
      await awaitBody(page, 'Sing to me of the man, Muse.');
      assert.equal(await page.textContent('[data-testid=doc-title]'), 'The Odyssey');
      assert.equal(await page.locator('[data-doc="library:/walden"]').count(), 1);
      assert.equal(await page.locator('[data-doc="catalog:/moby-dick"]').count(), 1);
      assert.deepEqual(errors, [], 'the page loads and runs without errors or CSP violations');
    }
    await a.page.screenshot({ path: join(artifacts, 'live-view.png') });
  });

  test('each page holds one SSE connection for the library and the catalog', async () => {
    const r = await call(node.base, 'GET', '/admin/v1/sessions', { token: opsAdmin });
    assert.equal(r.status, 200, r.text);
    for (const subject of ['alice', 'bob']) {
      const mine = r.json.sessions.filter((s) => s.subject === subject);
      assert.equal(mine.length, 1, `${subject}: ${JSON.stringify(mine)}`);
      assert.equal(mine[0].streams.length, 2);
      assert.equal(mine[0].streams[0], 'library');
      assert.match(mine[0].streams[1], /^src:[0-9a-f]{16}$/);
    }
  });

  test('an edit in one browser appears in the other', async () => {
    const text = 'Tell me, O muse, of that ingenious hero.';
    await a.page.fill('[data-testid=edit-body]', text);
    const started = Date.now();
    await a.page.click('[data-testid=save]');
    await awaitBody(b.page, text);
    console.log(`edit in A shown in B after ${Date.now() - started} ms`);
    assert.match(await a.page.textContent('[data-testid=save-status]'), /saved at [0-9a-f]{16}:\d+/);
    await awaitBody(a.page, text);
    assert.equal(await b.page.textContent('[data-testid=doc-editor]'), await a.page.inputValue('[data-testid=editor-name]'));
  });

  test('a publish through the HTTP API appears in both', async () => {
    const text = 'Of the man of many ways, who was driven far.';
    const started = Date.now();
    const { cursor } = await publish(node.base, readerToken('api'), 'library', {
      path: '/odyssey', type: 'MODIFIED', data: { title: 'The Odyssey', body: text, editor: 'api' },
    });
    await Promise.all([awaitBody(a.page, text), awaitBody(b.page, text)]);
    console.log(`API publish shown in both after ${Date.now() - started} ms`);
    for (const { page } of [a, b]) assert.equal(await page.textContent('[data-testid=doc-cursor]'), cursor);
  });

  test('a publish with the tidings CLI appears in both', async () => {
    const text = 'Driven far journeys, after he had sacked the sacred citadel of Troy.';
    const event = { path: '/odyssey', type: 'MODIFIED', data: { title: 'The Odyssey', body: text, editor: 'cli' } };
    const { stdout } = await run(process.env.TIDINGS_CLI, [
      '--server', `127.0.0.1:${node.port}`, '--token', readerToken('cli'), 'publish', 'library', JSON.stringify(event),
    ]);
    const cursor = stdout.trim();
    await Promise.all([awaitBody(a.page, text), awaitBody(b.page, text)]);
    for (const { page } of [a, b]) {
      assert.equal(await page.textContent('[data-testid=doc-cursor]'), cursor);
      assert.equal(await page.textContent('[data-testid=doc-editor]'), 'cli');
    }
  });

  test('a change of the upstream file appears in both, beside 1000 load sessions on it', async () => {
    for (const { page } of [a, b]) await page.click('[data-doc="catalog:/moby-dick"]');
    for (const { page } of [a, b]) await awaitBody(page, 'Call me Ishmael.');
    const audience = await LoadAudience.start({
      port: node.port, uri: catalogUri, token: readerToken('audience'), sessions: 1000, holdEvents: 1,
    });
    try {
      // One upstream watcher for the catalog, however many sessions read it.
      const rows = await eventually(async () => {
        const r = await call(node.base, 'GET', '/admin/v1/watches', { token: opsAdmin });
        const mine = r.json?.watches?.filter((w) => w.uri === catalogUri);
        return mine?.length === 1 && mine[0].subscribers === 1002 ? mine : undefined;
      }, 20000, 'one watcher with 1002 subscribers');
      assert.equal(rows.length, 1);

      const text = 'Call me Ishmael. Some years ago, never mind how long precisely.';
      const started = Date.now();
      writeCatalog({ 'moby-dick': { title: 'Moby-Dick', body: text } });
      await Promise.all([awaitBody(a.page, text), awaitBody(b.page, text)]);
      console.log(`upstream file change shown in both after ${Date.now() - started} ms`);
      await eventually(async () => {
        const r = await call(node.base, 'GET', '/admin/v1/watches', { token: opsAdmin });
        const row = r.json?.watches?.find((w) => w.uri === catalogUri);
        return row && row.events >= 1 ? row : undefined;
      }, 10000, 'the watcher counted the change');
      const report = await audience.finished(30000);
      assert.equal(report.sessions, 1000);
      assert.ok(report.events_min >= 1, `every load session got the change: ${JSON.stringify(report)}`);
      assert.equal(report.out_of_order, 0);
    } finally {
      await audience.stop();
    }
    await a.page.screenshot({ path: join(artifacts, 'live-view-catalog.png'), fullPage: true });
  });

  test('after a node restart the pages catch up without reload and without duplicates', async () => {
    for (const { page } of [a, b]) await page.click('[data-doc="library:/odyssey"]');
    for (const { context } of [a, b]) await context.setOffline(true);
    const port = node.port;
    await node.stop();
    for (const { page } of [a, b]) await awaitState(page, 'reconnecting');
    await startNode(port);
    const bodies = ['First, while the pages were away.', 'Second.', 'Third, the current one.'];
    const acked = [];
    for (const body of bodies) {
      const { cursor } = await publish(node.base, readerToken('api'), 'library', {
        path: '/odyssey', type: 'MODIFIED', data: { title: 'The Odyssey', body, editor: 'api' },
      });
      acked.push(cursor);
    }
    // Still away: what they show next comes from catching up.
    for (const { page } of [a, b]) assert.notEqual(await page.textContent('[data-testid=doc-body]'), bodies.at(-1));
    for (const { context } of [a, b]) await context.setOffline(false);
    for (const { page, errors } of [a, b]) {
      await awaitBody(page, bodies.at(-1), 20000);
      await awaitState(page, 'live');
      assert.equal(await page.evaluate(() => window.__notReloaded), true, 'the page was not reloaded');
      const seen = await activityCursors(page);
      for (const c of acked) assert.equal(seen.filter((x) => x === c).length, 1, `${c} listed once in ${seen}`);
      assert.deepEqual(seen, [...new Set(seen)], 'no cursor listed twice');
      const seqs = seen.filter((c) => c.split(':')[0] === acked[0].split(':')[0]).map(seqOf);
      assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'listed in order');
      assert.equal((await clientStats(page)).duplicatesDropped ?? 0, 0);
      assert.deepEqual(errors.filter((e) => !/net::ERR_INTERNET_DISCONNECTED|ERR_CONNECTION_REFUSED|Failed to load resource/.test(e)), []);
    }
  });

  test('a node that stops answering is noticed by its missing heartbeats', async () => {
    // SIGSTOP: the connections stay open but nothing arrives, not even the
    // 1 s heartbeats; the page must see the stall by itself.
    const reasons = [];
    await a.page.exposeFunction('__recordStall', (state, reason) => reasons.push(`${state}:${reason}`));
    await a.page.evaluate(() => window.tidingsLibrary.client.onState((s, d) => window.__recordStall(s, d.reason)));
    process.kill(node.child.pid, 'SIGSTOP');
    try {
      for (const { page } of [a, b]) await awaitState(page, 'reconnecting', 15000);
    } catch (err) {
      // Seen once in a loaded full run: say what each page was doing.
      const states = [];
      for (const [name, { page }] of [['A', a], ['B', b]])
        states.push(`${name}: ${await page.getAttribute('[data-testid=connection-state]', 'data-state')} ` +
          JSON.stringify(await clientStats(page)));
      err.message += `\nstates: ${states.join('; ')}\nA's state changes: ${reasons}`;
      throw err;
    } finally {
      process.kill(node.child.pid, 'SIGCONT');
    }
    const text = 'After the stall.';
    await publish(node.base, readerToken('api'), 'library', {
      path: '/odyssey', type: 'MODIFIED', data: { title: 'The Odyssey', body: text, editor: 'api' },
    });
    for (const { page } of [a, b]) {
      await awaitBody(page, text, 20000);
      await awaitState(page, 'live');
    }
    assert.ok(reasons.some((r) => r.startsWith('reconnecting:') && /stall/.test(r)), `seen as a stall: ${reasons}`);
  });

  test('publishing past retention while a page is away resyncs it to the current document', async () => {
    const states = [];
    await a.page.exposeFunction('__recordState', (s) => states.push(s));
    await a.page.evaluate(() => window.tidingsLibrary.client.onState((s) => window.__recordState(s)));
    // Offline emulation keeps open connections, so a restart drops A's
    // session and offline keeps it from coming back until the end.
    await a.context.setOffline(true);
    const port = node.port;
    await node.stop();
    await awaitState(a.page, 'reconnecting', 15000);
    await startNode(port);
    let last;
    for (let i = 0; i < retention + 10; i++) {
      last = `Version ${i} of the Odyssey.`;
      await publish(node.base, readerToken('api'), 'library', {
        path: '/odyssey', type: 'MODIFIED', data: { title: 'The Odyssey', body: last, editor: 'api' },
      });
    }
    await a.context.setOffline(false);
    await awaitBody(a.page, last, 20000);
    await awaitState(a.page, 'live');
    assert.ok(states.includes('resyncing'), `went through resyncing: ${states}`);
    assert.equal(await a.page.evaluate(() => window.__notReloaded), true);
    // The documents whose last version is still retained are all listed.
    assert.ok(await a.page.locator('[data-doc="library:/odyssey"]').count());
  });
});

describe('on a phone-sized screen', () => {
  test('the page fits the width and lists the documents above the open one', async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
    contexts.push(context);
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    await page.goto(`${node.base}/live/?stream=library#token=${readerToken('phone')}&doc=library:/odyssey`);
    await awaitState(page, 'live');
    await page.locator('[data-testid=doc-title]').waitFor();
    const layout = await page.evaluate(() => ({
      scrollWidth: document.scrollingElement.scrollWidth,
      list: document.querySelector('[data-testid=doc-list]').getBoundingClientRect().toJSON(),
      title: document.querySelector('[data-testid=doc-title]').getBoundingClientRect().toJSON(),
    }));
    assert.ok(layout.scrollWidth <= 375, `no horizontal scrolling: ${layout.scrollWidth}px wide`);
    assert.ok(layout.list.bottom <= layout.title.top, `list above the document: ${JSON.stringify(layout)}`);
    assert.ok(layout.list.width > 300, 'the list takes the full width');
    await page.screenshot({ path: join(artifacts, 'live-view-phone.png'), fullPage: true });
    assert.deepEqual(errors, []);
  });
});

describe('tokens that end', () => {
  test('an expired token shows unauthorized', async () => {
    // Live for a few seconds, then refused; a slow start that finds it
    // expired already must show the same.
    const { page } = await openPage(readerToken('brief', 5), 'library:/odyssey', { awaitLive: false });
    await awaitState(page, 'unauthorized', 20000);
    assert.match(await page.textContent('[data-testid=connection-detail]'), /expired/);
    await page.screenshot({ path: join(artifacts, 'live-view-unauthorized.png') });
  });

  test('a revoked token shows unauthorized', async () => {
    const claimsOf = claims('library', 'revoked-reader', readerGrants);
    const token = mintHs256(librarySecret, claimsOf, 'lib1');
    const { page } = await openPage(token, 'library:/odyssey');
    const r = await call(node.base, 'POST', '/admin/v1/tokens/revoke', { token: libraryAdmin, body: { jti: claimsOf.jti } });
    assert.equal(r.status, 200, r.text);
    await awaitState(page, 'unauthorized', 15000);
    assert.match(await page.textContent('[data-testid=connection-detail]'), /revoked/);
  });
});

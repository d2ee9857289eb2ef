// Unit tests of the browser client web/live/tidings.js, run by Node's own
// test runner (node --test); no npm dependencies.
//
// The client talks to support/fake_broker.mjs through its injectable fetch
// and EventSource, and waits on support/fake_clock.mjs: no test sleeps, time
// moves only when a test advances it. Subscribers write down what they are
// handed ('reset', 'replay 3 /a', 'event 4 /b'; the number is the event's
// seq in its stream), so an assertion compares exactly what was delivered.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Tidings, ZERO_CURSOR } from '../../web/live/tidings.js';
import { FakeBroker, seqOf } from './support/fake_broker.mjs';
import { FakeClock } from './support/fake_clock.mjs';

const MIN_MS = 100;
const MAX_MS = 2000;
const GRACE_MS = 500;

// A fake clock (installed for this test only), a fake broker, and a factory
// of clients wired to them. Clients are stopped when the test ends, even
// when it failed halfway.
function harness(t) {
  const clock = new FakeClock().install();
  const broker = new FakeBroker();
  const clients = [];
  t.after(() => {
    for (const live of clients) live.stop();
    clock.uninstall();
  });
  const client = (options = {}) => {
    const live = new Tidings({
      fetch: broker.fetch,
      EventSource: broker.EventSource,
      reconnectMinMs: MIN_MS,
      reconnectMaxMs: MAX_MS,
      stallGraceMs: GRACE_MS,
      ...options,
    });
    const states = [];
    live.onState((state, detail) => states.push({ state, ...detail }));
    clients.push(live);
    return { live, states };
  };
  return { clock, broker, client };
}

function subscriber() {
  const log = [];
  return {
    log,
    handler: (event, info) => log.push(`${info.replay ? 'replay' : 'event'} ${seqOf(event.cursor)} ${event.path}`),
    reset: () => log.push('reset'),
  };
}

// A resource subscriber also keeps the resource's value, folded from the
// snapshot and the change events, as an application would.
function resourceSubscriber() {
  const s = { log: [], value: null, snapshotInfo: null };
  s.snapshot = (value, info) => {
    s.log.push('snapshot');
    s.value = structuredClone(value);
    s.snapshotInfo = info;
  };
  s.handler = (event, info) => {
    s.log.push(`${info.replay ? 'replay' : 'event'} ${seqOf(event.cursor)} ${event.type} ${event.path}`);
    if (event.type === 'DELETED') delete s.value[event.data.key];
    else s.value[event.data.key] = event.data.new;
  };
  return s;
}

// The seqs a subscriber holds now: what it was handed since its last reset.
function heldSeqs(log) {
  return log.slice(log.lastIndexOf('reset') + 1).map((line) => Number(line.split(' ')[1]));
}

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const sinceOf = (connection) => connection.params.get('since');
const stateNames = (states) => states.map((s) => s.state);

// ---- connecting and delivering -------------------------------------------

test('first start replays the paged history once, then the live events held back meanwhile', async (t) => {
  const { clock, broker, client } = harness(t);
  for (let i = 1; i <= 7; i++) broker.publish('library', `/doc${i}`);
  // Two events go live while the history pages are being read.
  let pages = 0;
  broker.historyGate = () => {
    pages++;
    if (pages <= 2) broker.publish('library', `/live${pages}`);
  };
  const { live, states } = client({ token: 'T1' });
  const lib = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();

  assert.deepEqual(lib.log, [
    'reset',
    ...range(1, 7).map((i) => `replay ${i} /doc${i}`),
    'event 8 /live1',
    'event 9 /live2',
  ]);
  assert.equal(broker.connections.length, 1);
  const sse = broker.lastConnection.params;
  assert.deepEqual(sse.getAll('stream'), ['library']);
  assert.equal(sse.get('since'), null, 'a first start has no cursors to resume from');
  assert.equal(sse.get('access_token'), 'T1');
  // Pages of three up to the head hello named (seq 7); the live events are
  // the connection's part, not read twice.
  assert.deepEqual(
    broker.historyRequests('library').map((u) => u.searchParams.get('since')),
    [null, broker.cursor('library', 3), broker.cursor('library', 6)],
  );
  assert.ok(broker.requests.filter((r) => r.method === 'GET').every((r) => r.headers.Authorization === 'Bearer T1'));
  assert.deepEqual(stateNames(states), ['connecting', 'syncing', 'live']);
  assert.deepEqual(live.cursors(), { library: broker.cursor('library', 9) });
  assert.deepEqual(live.stats, { events: 9, duplicatesDropped: 0 });
});

test('events the history already delivered are dropped when the connection repeats them, and counted', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.publish('library', '/b');
  broker.manual = true;
  const { live } = client();
  const lib = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();

  const es = broker.lastConnection;
  const cursor = (seq) => broker.cursor('library', seq);
  const frame = (seq, path) => ({ stream: 'library', cursor: cursor(seq), path, type: 'MODIFIED', time: 0, data: {} });
  es.open();
  es.emit('hello', { streams: { library: cursor(1) }, heartbeat_ms: 20000 });
  // Before the history answers, the connection sends seq 1 (which the
  // history will deliver too) and seq 2.
  es.emit('message', frame(1, '/a'), cursor(1));
  es.emit('message', frame(2, '/b'), cursor(2));
  await clock.settle();
  assert.equal(live.state, 'live');
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a', 'event 2 /b']);
  assert.deepEqual(live.stats, { events: 2, duplicatesDropped: 1 });

  es.emit('message', frame(2, '/b'), cursor(2));
  es.emit('message', frame(1, '/a'), cursor(2));
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a', 'event 2 /b']);
  assert.deepEqual(live.stats, { events: 2, duplicatesDropped: 3 });
  assert.deepEqual(live.cursors(), { library: cursor(2) });
});

test('ids and heartbeats move cursors past events the prefix filtered out', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a/1');
  broker.publish('other', '/x/1');
  const { live } = client();
  live.on('library', '/a/', () => {});
  live.on('other', '/', () => {});
  live.start();
  await clock.settle();
  assert.ok(broker.lastConnection.url.includes('stream=library%3A%2Fa%2F'), broker.lastConnection.url);

  // Filtered out by the server: nothing is sent, the session moves on.
  broker.publish('library', '/b/1');
  assert.equal(live.cursors().library, broker.cursor('library', 1));
  // An event of the other stream carries the session's position in both.
  broker.publish('other', '/x/2');
  assert.deepEqual(live.cursors(), { library: broker.cursor('library', 2), other: broker.cursor('other', 2) });

  broker.publish('library', '/b/2');
  broker.lastConnection.heartbeat();
  assert.equal(live.cursors().library, broker.cursor('library', 3));
});

// ---- reconnecting ----------------------------------------------------------

test('a lost connection resumes with the since= cursor vector after a backoff delay, without a reset', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.publish('other', '/x');
  const { live, states } = client();
  const lib = subscriber();
  const oth = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.on('other', '/', oth.handler, { reset: oth.reset });
  live.start();
  await clock.settle();
  assert.equal(live.state, 'live');

  broker.lastConnection.fail();
  await clock.settle();
  const wait = states.at(-1);
  assert.equal(wait.state, 'reconnecting');
  assert.equal(wait.reason, 'connection lost');
  assert.ok(wait.retryInMs >= MIN_MS && wait.retryInMs <= MIN_MS * 1.5, `first delay ${wait.retryInMs}`);
  const seen = states.length;

  broker.publish('library', '/b');
  broker.publish('other', '/y');
  broker.publish('library', '/c');
  await clock.advance(wait.retryInMs - 1);
  assert.equal(broker.connections.length, 1, 'waits out the delay');
  await clock.advance(1);
  assert.equal(broker.connections.length, 2);

  assert.equal(sinceOf(broker.lastConnection), `${broker.cursor('library', 1)},${broker.cursor('other', 1)}`);
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a', 'event 2 /b', 'event 3 /c']);
  assert.deepEqual(oth.log, ['reset', 'replay 1 /x', 'event 2 /y']);
  assert.deepEqual(stateNames(states.slice(seen)), ['live'], 'a resumed connection does not sync');
  assert.equal(broker.historyRequests('library').length, 1, 'no history read on resume');
  assert.equal(broker.historyRequests('other').length, 1, 'no history read on resume');
});

test('reconnect delays double per failed attempt up to reconnectMaxMs, and start over after a hello', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.sseStatus = 503;
  const { live, states } = client();
  live.on('library', '/', () => {});
  live.start();
  await clock.settle();

  const delays = [];
  for (let i = 0; i < 6; i++) {
    const wait = states.at(-1);
    assert.equal(wait.state, 'reconnecting');
    assert.equal(wait.status, 503);
    delays.push(wait.retryInMs);
    await clock.advance(wait.retryInMs);
  }
  assert.equal(broker.connections.length, 7);
  // Each wait is its base up to half again longer at random, the base
  // doubling from reconnectMinMs; capped at reconnectMaxMs.
  [100, 200, 400, 800, 1600, 3200].forEach((base, i) => {
    const lo = Math.min(base, MAX_MS);
    const hi = Math.min(base * 1.5, MAX_MS);
    assert.ok(delays[i] >= lo && delays[i] <= hi, `delay ${i} is ${delays[i]}, not in [${lo}, ${hi}]`);
  });
  assert.equal(delays[5], MAX_MS);

  broker.sseStatus = 200;
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(live.state, 'live');
  broker.lastConnection.fail();
  await clock.settle();
  assert.ok(states.at(-1).retryInMs <= MIN_MS * 1.5, `after a hello: ${states.at(-1).retryInMs}`);
});

test('cursor_too_old at connect resets and replays that stream; the other catches up through history', async (t) => {
  const { clock, broker, client } = harness(t);
  for (let i = 0; i < 4; i++) broker.publish('library', `/l${i}`);
  broker.publish('other', '/o0');
  const { live, states } = client();
  const lib = subscriber();
  const oth = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.on('other', '/', oth.handler, { reset: oth.reset });
  live.start();
  await clock.settle();
  broker.lastConnection.fail();
  await clock.settle();
  const seen = states.length - 1;

  // While away: library grows to seq 10 and retention drops seq 1..6, so
  // the client's library cursor (seq 4) cannot be resumed.
  for (let i = 4; i < 10; i++) broker.publish('library', `/l${i}`);
  broker.publish('other', '/o1');
  broker.publish('other', '/o2');
  broker.trim('library', 7);
  await clock.advance(1000);

  assert.equal(broker.connections.length, 3);
  assert.equal(sinceOf(broker.connections[1]), `${broker.cursor('library', 4)},${broker.cursor('other', 1)}`);
  assert.equal(sinceOf(broker.connections[2]), null, 'a forgotten cursor means the hello path');
  assert.deepEqual(stateNames(states.slice(seen)), ['reconnecting', 'resyncing', 'syncing', 'live']);
  const resync = states.find((s) => s.state === 'resyncing');
  assert.equal(resync.reason, 'cursor_too_old');
  assert.equal(resync.stream, 'library');
  assert.equal(resync.head, broker.cursor('library', 10));

  assert.deepEqual(lib.log, [
    'reset',
    ...range(1, 4).map((i) => `replay ${i} /l${i - 1}`),
    'reset',
    ...range(7, 10).map((i) => `replay ${i} /l${i - 1}`),
  ]);
  assert.deepEqual(oth.log, ['reset', 'replay 1 /o0', 'event 2 /o1', 'event 3 /o2']);
  assert.deepEqual(
    broker.historyRequests('other').map((u) => u.searchParams.get('since')),
    [null, broker.cursor('other', 1)],
  );
  assert.deepEqual(live.cursors(), { library: broker.cursor('library', 10), other: broker.cursor('other', 3) });
});

test('a 410 during history catch-up falls back to a reset and full replay of that stream', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.publish('other', '/x');
  const { live } = client();
  const lib = subscriber();
  const oth = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();
  broker.lastConnection.fail();
  await clock.settle();

  broker.publish('library', '/b');
  broker.publish('library', '/c');
  broker.trim('library', 3);
  // A new subscription sends the next connection through hello, where the
  // library, with a cursor, catches up through history.
  live.on('other', '/', oth.handler, { reset: oth.reset });
  await clock.advance(0);

  assert.equal(live.state, 'live');
  assert.equal(sinceOf(broker.lastConnection), null);
  assert.deepEqual(
    broker.historyRequests('library').map((u) => u.searchParams.get('since')),
    [null, broker.cursor('library', 1), null],
    'catch-up from seq 1 (410), then a replay from the start',
  );
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a', 'reset', 'replay 3 /c']);
  assert.deepEqual(oth.log, ['reset', 'replay 1 /x']);
  assert.deepEqual(live.cursors(), { library: broker.cursor('library', 3), other: broker.cursor('other', 1) });
});

test('slow_consumer resumes from the cursor the resync names, without a reset', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a/1');
  const { live, states } = client();
  const lib = subscriber();
  live.on('library', '/a/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();

  // Filtered out by the session: the client does not hear of seq 2 and 3,
  // only the resync's cursor says the session is past them.
  broker.publish('library', '/b/1');
  broker.publish('library', '/b/2');
  const es = broker.lastConnection;
  es.terminal('resync', { stream: 'library', reason: 'slow_consumer', head: broker.head('library'), cursor: es.id });
  await clock.settle();
  assert.equal(live.state, 'reconnecting');
  assert.equal(states.at(-1).reason, 'slow_consumer');
  assert.deepEqual(live.cursors(), { library: broker.cursor('library', 3) });

  broker.publish('library', '/a/2');
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(broker.connections.length, 2);
  assert.equal(sinceOf(broker.lastConnection), broker.cursor('library', 3));
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a/1', 'event 4 /a/2']);
  assert.ok(!stateNames(states).includes('resyncing'));
  assert.equal(broker.historyRequests('library').length, 1);
});

// ---- auth and errors ---------------------------------------------------------

test("an unauthorized event ends the session as 'unauthorized', with no retry", async (t) => {
  const { clock, broker, client } = harness(t);
  const { live, states } = client({ token: () => 'tok' });
  live.on('library', '/', () => {});
  live.start();
  await clock.settle();
  assert.equal(live.state, 'live');

  broker.lastConnection.terminal('unauthorized', { reason: 'token expired' });
  await clock.settle();
  assert.deepEqual(states.at(-1), { state: 'unauthorized', reason: 'token expired' });
  assert.ok(broker.lastConnection.closed);
  await clock.advance(60000);
  assert.equal(broker.connections.length, 1, 'no reconnect');
  assert.equal(clock.pendingTimers, 0);
});

for (const [status, expected] of [
  [401, 'unauthorized'],
  [403, 'unauthorized'],
  [400, 'error'],
]) {
  test(`a connection refused with ${status} is probed and ends as '${expected}', with no retry`, async (t) => {
    const { clock, broker, client } = harness(t);
    broker.sseStatus = status;
    const { live, states } = client({ token: () => 'tok' });
    live.on('library', '/', () => {});
    live.start();
    await clock.settle();

    assert.deepEqual(states.at(-1), { state: expected, reason: `refused with ${status}`, status });
    // The probe asked the connection's own URL, with the token, and was
    // then cut off rather than left open.
    const probe = broker.requests.at(-1);
    assert.equal(probe.url, broker.connections[0].url);
    assert.equal(probe.headers.Authorization, 'Bearer tok');
    assert.ok(probe.signal.aborted);

    await clock.advance(60000);
    assert.equal(broker.connections.length, 1, 'no retry');
    assert.equal(live.state, expected);
    assert.equal(clock.pendingTimers, 0);
  });
}

for (const [failure, breakIt, reason] of [
  ['a 503', (broker) => (broker.sseStatus = 503), 'refused with 503'],
  ['a network error', (broker) => (broker.sseNetworkDown = true), 'network error'],
]) {
  test(`a connection that fails with ${failure} is retried`, async (t) => {
    const { clock, broker, client } = harness(t);
    broker.publish('library', '/a');
    breakIt(broker);
    const { live, states } = client();
    const lib = subscriber();
    live.on('library', '/', lib.handler, { reset: lib.reset });
    live.start();
    await clock.settle();
    assert.equal(states.at(-1).state, 'reconnecting');
    assert.equal(states.at(-1).reason, reason);

    broker.sseStatus = 200;
    broker.sseNetworkDown = false;
    await clock.advance(states.at(-1).retryInMs);
    assert.equal(broker.connections.length, 2);
    assert.equal(live.state, 'live');
    assert.deepEqual(lib.log, ['reset', 'replay 1 /a']);
  });
}

test('a probe that never answers counts as a network error after its timeout', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.sseStatus = 503;
  broker.sseProbeHangs = true;
  const { live, states } = client();
  live.on('library', '/', () => {});
  live.start();
  await clock.settle();
  assert.equal(live.state, 'connecting');

  await clock.advance(9999);
  assert.equal(live.state, 'connecting');
  await clock.advance(1);
  assert.equal(states.at(-1).state, 'reconnecting');
  assert.equal(states.at(-1).reason, 'network error');
  assert.ok(broker.requests.at(-1).signal.aborted);

  broker.sseStatus = 200;
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(live.state, 'live');
});

test('history refused with 503 during the sync is retried from the start', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.historyStatus = 503;
  const { live, states } = client();
  const lib = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();
  assert.equal(states.at(-1).state, 'reconnecting');
  assert.equal(states.at(-1).status, 503);
  assert.equal(states.at(-1).reason, 'history refused with 503');

  broker.historyStatus = null;
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(live.state, 'live');
  assert.deepEqual(lib.log, ['reset', 'reset', 'replay 1 /a']);
});

test("history refused with 403 during the sync ends as 'unauthorized'", async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.historyStatus = 403;
  const { live, states } = client();
  live.on('library', '/', () => {});
  live.start();
  await clock.settle();
  assert.deepEqual(states.at(-1), { state: 'unauthorized', reason: 'history refused with 403', status: 403 });
  await clock.advance(60000);
  assert.equal(broker.connections.length, 1);
});

// ---- the server going away -----------------------------------------------------

test('closing with a reconnect_url moves the client, and its publishes, to that node', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  const { live, states } = client({ base: 'http://node-a:8080/', reconnectOrigins: ['http://node-b:8080'] });
  const lib = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();
  assert.ok(broker.lastConnection.url.startsWith('http://node-a:8080/v1/sse?'), broker.lastConnection.url);

  broker.lastConnection.terminal('closing', { reason: 'shutdown', reconnect_url: 'http://node-b:8080/' });
  await clock.settle();
  const wait = states.at(-1);
  assert.equal(wait.state, 'reconnecting');
  assert.equal(wait.reason, 'shutdown');
  assert.equal(wait.reconnectUrl, 'http://node-b:8080/');

  broker.publish('library', '/b');
  await clock.advance(wait.retryInMs);
  assert.equal(broker.connections.length, 2);
  assert.ok(broker.lastConnection.url.startsWith('http://node-b:8080/v1/sse?'), broker.lastConnection.url);
  assert.equal(sinceOf(broker.lastConnection), broker.cursor('library', 1));
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a', 'event 2 /b']);

  await live.publish('library', { path: '/c', type: 'ADDED', data: {} });
  assert.equal(broker.requests.at(-1).url, 'http://node-b:8080/v1/streams/library/events');
});

test('a reconnect_url to an origin not trusted, or not http(s), is ignored: the token stays home', async (t) => {
  for (const url of ['http://attacker.example/', 'javascript:alert(1)', 'file:///etc/passwd', 'not a url']) {
    const { clock, broker, client } = harness(t);
    const { live, states } = client({ base: 'http://node-a:8080', token: 'SECRET' });
    live.on('library', '/', () => {});
    live.start();
    await clock.settle();
    broker.lastConnection.terminal('closing', { reason: 'shutdown', reconnect_url: url });
    await clock.settle();
    assert.equal(states.at(-1).reconnectUrl, undefined, url);
    await clock.advance(states.at(-1).retryInMs);
    assert.ok(broker.lastConnection.url.startsWith('http://node-a:8080/v1/sse?'), `${url}: ${broker.lastConnection.url}`);
    live.stop();
    clock.uninstall();
  }
});

test('a node the client was sent to that does not answer gives way to the home node', async (t) => {
  const { clock, broker, client } = harness(t);
  // node-b is down: its connections fail at once and its probe gets no answer.
  const hosts = [];
  class SomeNodesDown {
    constructor(url) {
      hosts.push(new URL(url).host);
      if (!url.includes('node-b')) return new broker.EventSource(url);
      this.listeners = [];
      queueMicrotask(() => this.listeners.forEach((fn) => fn({ type: 'error' })));
    }
    addEventListener(type, fn) {
      if (type === 'error') this.listeners.push(fn);
    }
    close() {}
  }
  const fetchSome = (url, init) =>
    String(url).includes('node-b') ? Promise.reject(new TypeError('Failed to fetch')) : broker.fetch(url, init);
  const { live, states } = client({
    base: 'http://node-a:8080', reconnectOrigins: ['http://node-b:8080'], EventSource: SomeNodesDown, fetch: fetchSome,
  });
  live.on('library', '/', () => {});
  live.start();
  await clock.settle();
  broker.lastConnection.terminal('closing', { reason: 'shutdown', reconnect_url: 'http://node-b:8080' });
  await clock.settle();
  for (let i = 0; i < 4 && live.state !== 'live'; i++) await clock.advance(states.at(-1).retryInMs);
  assert.deepEqual(hosts.slice(0, 3), ['node-a:8080', 'node-b:8080', 'node-b:8080']);
  assert.equal(hosts.at(-1), 'node-a:8080', hosts.join(' '));
  assert.equal(live.state, 'live');
});

test('closing without a reconnect_url reconnects to the same node and resumes', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  const { live, states } = client({ base: 'http://node-a:8080' });
  const lib = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();

  broker.lastConnection.terminal('closing', { reason: 'shutdown' });
  await clock.settle();
  assert.deepEqual(states.at(-1), {
    state: 'reconnecting',
    reason: 'shutdown',
    reconnectUrl: undefined,
    retryInMs: states.at(-1).retryInMs,
  });
  broker.publish('library', '/b');
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(broker.connections.length, 2);
  assert.ok(broker.lastConnection.url.startsWith('http://node-a:8080/v1/sse?'), broker.lastConnection.url);
  assert.equal(sinceOf(broker.lastConnection), broker.cursor('library', 1));
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a', 'event 2 /b']);
});

test('a connection silent for two heartbeats plus the grace is replaced, resuming', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.heartbeatMs = 1000;
  broker.publish('library', '/a');
  const { live, states } = client();
  const lib = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();

  for (let i = 0; i < 5; i++) {
    await clock.advance(1000);
    broker.lastConnection.heartbeat();
  }
  assert.equal(broker.connections.length, 1, 'heartbeats keep it');

  // Alive as far as TCP knows, but nothing comes through any more.
  const stalled = broker.lastConnection;
  stalled.frozen = true;
  broker.publish('library', '/b');
  await clock.advance(2 * 1000 + GRACE_MS - 1);
  assert.equal(live.state, 'live');
  await clock.advance(1);
  assert.equal(states.at(-1).state, 'reconnecting');
  assert.equal(states.at(-1).reason, 'stalled');
  assert.ok(stalled.closed);

  await clock.advance(states.at(-1).retryInMs);
  assert.equal(broker.connections.length, 2);
  assert.equal(sinceOf(broker.lastConnection), broker.cursor('library', 1));
  assert.equal(live.state, 'live');
  assert.deepEqual(lib.log, ['reset', 'replay 1 /a', 'event 2 /b']);
});

test('a connection that opens but never says hello is replaced after two default heartbeats', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.manual = true;
  const { live, states } = client();
  live.on('library', '/', () => {});
  live.start();
  await clock.settle();
  const silent = broker.lastConnection;
  silent.open();
  await clock.advance(2 * 20000 + GRACE_MS - 1);
  assert.equal(broker.connections.length, 1);
  assert.ok(!silent.closed);
  await clock.advance(1);
  assert.equal(states.at(-1).state, 'reconnecting');
  assert.equal(states.at(-1).reason, 'stalled');
  assert.ok(silent.closed);
});

// ---- what is subscribed ---------------------------------------------------------

test('a uri subscription gets a snapshot, learns its src name from hello, and a resync brings a new snapshot', async (t) => {
  const { clock, broker, client } = harness(t);
  const uri = 'file:///srv/catalog.json';
  const src = broker.addSource(uri, { a: 'A', b: 'B' });
  // An integer-like stream name: JSON.parse lists it first among hello's keys.
  broker.publish('123', '/n');
  broker.publish('library', '/x');
  const { live, states } = client();
  const cat = resourceSubscriber();
  const lib = subscriber();
  const num = subscriber();
  live.onResource(uri, cat.handler, { snapshot: cat.snapshot });
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.on('123', '/', num.handler, { reset: num.reset });
  assert.deepEqual(live.cursors(), {}, 'nothing known before a hello');
  live.start();
  await clock.settle();

  const sse = broker.lastConnection.params;
  assert.deepEqual(sse.getAll('stream'), ['library', '123']);
  assert.deepEqual(sse.getAll('uri'), [uri]);
  assert.deepEqual(cat.snapshotInfo, { stream: src, cursor: broker.cursor(src, 2) });
  assert.deepEqual(cat.value, { a: 'A', b: 'B' });
  assert.deepEqual(live.cursors(), {
    library: broker.cursor('library', 1),
    123: broker.cursor('123', 1),
    [src]: broker.cursor(src, 2),
  });

  broker.changeSource(uri, 'c', 'C');
  broker.changeSource(uri, 'a', undefined);
  assert.deepEqual(cat.log, ['snapshot', 'event 3 ADDED /c', 'event 4 DELETED /a']);
  assert.deepEqual(cat.value, { b: 'B', c: 'C' });

  // A lost connection resumes the resource like any stream: no snapshot.
  broker.lastConnection.fail();
  await clock.settle();
  broker.changeSource(uri, 'd', 'D');
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(
    sinceOf(broker.lastConnection),
    [broker.cursor('library', 1), broker.cursor('123', 1), broker.cursor(src, 4)].join(','),
  );
  assert.deepEqual(cat.log, ['snapshot', 'event 3 ADDED /c', 'event 4 DELETED /a', 'event 5 ADDED /d']);

  // The source's stream cannot be resumed any more: a new snapshot; the
  // other streams only catch up.
  broker.lastConnection.fail();
  await clock.settle();
  broker.changeSource(uri, 'e', 'E');
  broker.changeSource(uri, 'f', 'F');
  broker.trim(src, 7);
  broker.publish('library', '/y');
  await clock.advance(1000);
  assert.equal(live.state, 'live');
  const resync = states.find((s) => s.state === 'resyncing');
  assert.equal(resync.stream, src);
  assert.equal(resync.reason, 'cursor_too_old');
  assert.equal(cat.log.filter((line) => line === 'snapshot').length, 2);
  assert.equal(cat.log.at(-1), 'snapshot');
  assert.deepEqual(cat.snapshotInfo, { stream: src, cursor: broker.cursor(src, 7) });
  assert.deepEqual(cat.value, { b: 'B', c: 'C', d: 'D', e: 'E', f: 'F' });
  assert.deepEqual(lib.log, ['reset', 'replay 1 /x', 'event 2 /y']);
  assert.deepEqual(num.log, ['reset', 'replay 1 /n']);

  broker.changeSource(uri, 'b', 'B2');
  assert.equal(cat.log.at(-1), 'event 8 MODIFIED /b');
  assert.equal(cat.value.b, 'B2');
});

test('two uri subscriptions are told apart by their order in hello', async (t) => {
  const { clock, broker, client } = harness(t);
  const one = broker.addSource('file:///srv/one.json', { k: 1 });
  const two = broker.addSource('file:///srv/two.json', { k: 2 });
  const { live } = client();
  const r1 = resourceSubscriber();
  const r2 = resourceSubscriber();
  live.onResource('file:///srv/one.json', r1.handler, { snapshot: r1.snapshot });
  live.onResource('file:///srv/two.json', r2.handler, { snapshot: r2.snapshot });
  live.start();
  await clock.settle();

  assert.deepEqual(broker.lastConnection.params.getAll('uri'), ['file:///srv/one.json', 'file:///srv/two.json']);
  assert.deepEqual(r1.snapshotInfo, { stream: one, cursor: broker.cursor(one, 1) });
  assert.deepEqual(r2.snapshotInfo, { stream: two, cursor: broker.cursor(two, 1) });
  broker.changeSource('file:///srv/one.json', 'x', 'X');
  broker.changeSource('file:///srv/two.json', 'y', 'Y');
  assert.deepEqual(r1.log, ['snapshot', 'event 2 ADDED /x']);
  assert.deepEqual(r2.log, ['snapshot', 'event 2 ADDED /y']);
  assert.deepEqual(r1.value, { k: 1, x: 'X' });
  assert.deepEqual(r2.value, { k: 2, y: 'Y' });
});

test('a subscriber added while live gets its own history; the others are not reset', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a/1');
  broker.publish('library', '/b/1');
  broker.publish('library', '/a/2');
  const { live } = client();
  const a = subscriber();
  const b = subscriber();
  live.on('library', '/a/', a.handler, { reset: a.reset });
  live.start();
  await clock.settle();
  assert.deepEqual(a.log, ['reset', 'replay 1 /a/1', 'replay 3 /a/2']);

  broker.publish('library', '/b/2'); // filtered out by the /a/ connection
  live.on('library', '/b/', b.handler, { reset: b.reset });
  await clock.advance(0);

  assert.equal(broker.connections.length, 2);
  const sse = broker.lastConnection.params;
  assert.deepEqual(sse.getAll('stream'), ['library'], 'the wire prefix widens to cover both');
  assert.equal(sse.get('since'), null);
  // b's history up to a's cursor (seq 3) under its prefix, then everyone
  // catches up from seq 3 together.
  assert.deepEqual(
    broker.historyRequests('library').map((u) => [u.searchParams.get('since'), u.searchParams.get('prefix')]),
    [
      [null, '/a/'],
      [null, '/b/'],
      [broker.cursor('library', 3), null],
    ],
  );
  assert.deepEqual(b.log, ['reset', 'replay 2 /b/1', 'event 4 /b/2']);
  assert.deepEqual(a.log, ['reset', 'replay 1 /a/1', 'replay 3 /a/2']);

  broker.publish('library', '/a/3');
  broker.publish('library', '/b/3');
  assert.deepEqual(a.log, ['reset', 'replay 1 /a/1', 'replay 3 /a/2', 'event 5 /a/3']);
  assert.deepEqual(b.log, ['reset', 'replay 2 /b/1', 'event 4 /b/2', 'event 6 /b/3']);
});

test('a second subscriber to the same stream gets its history; the first does not see it again', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.publish('library', '/b');
  const { live } = client();
  const first = subscriber();
  const second = subscriber();
  live.on('library', '/', first.handler, { reset: first.reset });
  live.start();
  await clock.settle();

  live.on('library', '/', second.handler, { reset: second.reset });
  await clock.advance(0);
  assert.equal(broker.connections.length, 2, 'same wire stream, but its history only comes through hello');
  assert.deepEqual(second.log, ['reset', 'replay 1 /a', 'replay 2 /b']);
  assert.deepEqual(first.log, ['reset', 'replay 1 /a', 'replay 2 /b']);

  broker.publish('library', '/c');
  assert.deepEqual(first.log.at(-1), 'event 3 /c');
  assert.deepEqual(second.log.at(-1), 'event 3 /c');
  assert.deepEqual(live.stats, { events: 3, duplicatesDropped: 0 });
});

test('removing a subscriber narrows the wire prefix and resumes without a reset', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a/1');
  broker.publish('library', '/b/1');
  const { live } = client();
  const a = subscriber();
  const b = subscriber();
  live.on('library', '/a/', a.handler, { reset: a.reset });
  const offB = live.on('library', '/b/', b.handler, { reset: b.reset });
  live.start();
  await clock.settle();
  assert.deepEqual(broker.lastConnection.params.getAll('stream'), ['library']);

  offB();
  await clock.advance(0);
  assert.equal(broker.connections.length, 2);
  assert.deepEqual(broker.lastConnection.params.getAll('stream'), ['library:/a/']);
  assert.equal(sinceOf(broker.lastConnection), broker.cursor('library', 2));
  assert.equal(live.state, 'live');

  broker.publish('library', '/a/2');
  broker.publish('library', '/b/2');
  assert.deepEqual(a.log, ['reset', 'replay 1 /a/1', 'event 3 /a/2']);
  assert.deepEqual(b.log, ['reset', 'replay 2 /b/1']);
  assert.equal(broker.historyRequests('library').length, 1);
});

test('a stream that does not exist yet gets the zero cursor, then moves to the epoch it is created with', async (t) => {
  const { clock, broker, client } = harness(t);
  const { live, states } = client();
  const r = subscriber();
  live.on('fresh', '/a/', r.handler, { reset: r.reset });
  live.start();
  await clock.settle();
  assert.equal(live.state, 'live');
  assert.deepEqual(live.cursors(), { fresh: ZERO_CURSOR });
  assert.deepEqual(r.log, ['reset']);
  assert.equal(broker.historyRequests('fresh').length, 0, 'nothing to read below a zero head');

  // Created with an event the prefix filters out: only the heartbeat says
  // where the session is, in the new epoch.
  broker.publish('fresh', '/b/0');
  broker.lastConnection.heartbeat();
  assert.deepEqual(live.cursors(), { fresh: broker.cursor('fresh', 1) });

  broker.lastConnection.fail();
  await clock.settle();
  broker.publish('fresh', '/a/1');
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(sinceOf(broker.lastConnection), broker.cursor('fresh', 1));
  assert.deepEqual(r.log, ['reset', 'event 2 /a/1']);
  broker.publish('fresh', '/a/2');
  assert.deepEqual(r.log, ['reset', 'event 2 /a/1', 'event 3 /a/2']);
  assert.deepEqual(live.cursors(), { fresh: broker.cursor('fresh', 3) });
});

test('a stream created while away is read from its start when its zero cursor is caught up through history', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('other', '/x');
  const { live } = client();
  const r = subscriber();
  live.on('fresh', '/', r.handler, { reset: r.reset });
  live.start();
  await clock.settle();
  broker.lastConnection.fail();
  await clock.settle();

  broker.publish('fresh', '/one');
  broker.publish('fresh', '/two');
  // Through hello, so the zero cursor is caught up through history.
  live.on('other', '/', () => {});
  await clock.advance(0);

  assert.equal(live.state, 'live');
  assert.deepEqual(
    broker.historyRequests('fresh').map((u) => u.searchParams.get('since')),
    [ZERO_CURSOR],
  );
  assert.deepEqual(r.log, ['reset', 'event 1 /one', 'event 2 /two']);
  assert.deepEqual(live.cursors().fresh, broker.cursor('fresh', 2));
});

test('a history 404 for a stream hello said had events is retried, the cursor left alone', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.manual = true;
  const { live } = client();
  const r = subscriber();
  live.on('ghost', '/', r.handler, { reset: r.reset });
  live.start();
  await clock.settle();
  const es = broker.lastConnection;
  es.open();
  es.emit('hello', { streams: { ghost: 'deadbeefdeadbeef:3' }, heartbeat_ms: 20000 });
  await clock.settle();

  assert.equal(broker.historyRequests('ghost').length, 1);
  assert.equal(live.state, 'reconnecting');
  assert.deepEqual(r.log, ['reset']);
  assert.deepEqual(live.cursors(), {}, 'no cursor claims events never delivered');
});

test('a history reply cut short is retried, never taken for the end of the stream', async (t) => {
  const { clock, broker, client } = harness(t);
  for (let i = 0; i < 5; i++) broker.publish('library', `/d${i}`);
  const realFetch = broker.fetch;
  let cut = true;
  const { live, states } = client({
    fetch: async (url, init) => {
      const res = await realFetch(url, init);
      if (!cut || !String(url).includes('/events?')) return res;
      cut = false;
      return { ok: true, status: 200, json: async () => { throw new TypeError('network error'); } };
    },
  });
  const lib = subscriber();
  live.on('library', '/', lib.handler, { reset: lib.reset });
  live.start();
  await clock.settle();
  assert.equal(states.at(-1).state, 'reconnecting');
  assert.match(states.at(-1).reason, /could not be read/);
  assert.deepEqual(lib.log, ['reset']);
  await clock.advance(states.at(-1).retryInMs);
  assert.equal(live.state, 'live');
  assert.deepEqual(lib.log, ['reset', 'reset', 'replay 1 /d0', 'replay 2 /d1', 'replay 3 /d2', 'replay 4 /d3', 'replay 5 /d4']);
});

test('a failing sync after hello keeps backing off instead of starting over', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.historyStatus = 503;
  const { live, states } = client();
  live.on('library', '/', () => {});
  live.start();
  await clock.settle();
  const waits = [];
  for (let i = 0; i < 4; i++) {
    waits.push(states.at(-1).retryInMs);
    await clock.advance(states.at(-1).retryInMs);
  }
  assert.ok(waits[3] >= MIN_MS * 8, `doubling: ${waits}`);
});

// ---- stop, publish, instances -------------------------------------------------

test('stop() leaves no timer armed: while live, while waiting to reconnect, during a probe', async (t) => {
  const { clock, broker, client } = harness(t);
  const { live } = client();
  live.on('library', '/', () => {});

  live.start();
  await clock.settle();
  assert.equal(live.state, 'live');
  assert.ok(clock.pendingTimers > 0, 'the stall timer is armed');
  live.stop();
  assert.equal(live.state, 'stopped');
  assert.equal(clock.pendingTimers, 0);
  assert.ok(broker.lastConnection.closed);

  live.start();
  await clock.settle();
  broker.lastConnection.fail();
  await clock.settle();
  assert.equal(live.state, 'reconnecting');
  live.stop();
  assert.equal(clock.pendingTimers, 0);

  broker.sseStatus = 503;
  broker.sseProbeHangs = true;
  live.start();
  await clock.settle();
  const probe = broker.requests.at(-1);
  assert.ok(probe.url.includes('/v1/sse?') && !probe.signal.aborted, 'a probe is in flight');
  live.stop();
  await clock.settle();
  assert.equal(clock.pendingTimers, 0);
  assert.ok(probe.signal.aborted);

  const connections = broker.connections.length;
  await clock.advance(60000);
  assert.equal(broker.connections.length, connections);
  assert.equal(live.state, 'stopped');
});

test('publish sends the token and Idempotency-Key and returns the cursor, or cursors for an array', async (t) => {
  const { broker, client } = harness(t);
  broker.publish('library', '/old');
  const { live } = client({ token: async () => 'P' });

  const cursor = await live.publish('library', { path: '/a', type: 'ADDED', data: { n: 1 } }, { idempotencyKey: 'k-1' });
  assert.equal(cursor, broker.cursor('library', 2));
  const req = broker.requests.at(-1);
  assert.equal(req.method, 'POST');
  assert.equal(req.url, '/v1/streams/library/events');
  assert.deepEqual(req.headers, { 'Content-Type': 'application/json', Authorization: 'Bearer P', 'Idempotency-Key': 'k-1' });
  assert.deepEqual(JSON.parse(req.body), { path: '/a', type: 'ADDED', data: { n: 1 } });

  const cursors = await live.publish('library', [{ path: '/b' }, { path: '/c' }]);
  assert.deepEqual(cursors, [broker.cursor('library', 3), broker.cursor('library', 4)]);
  assert.deepEqual(
    broker.streams.get('library').events.map((e) => e.path),
    ['/old', '/a', '/b', '/c'],
  );
});

test('a refused publish throws an Error carrying .status and the server message', async (t) => {
  const { broker, client } = harness(t);
  broker.publishStatus = 429;
  const { live } = client();
  await assert.rejects(live.publish('library', { path: '/a' }), (err) => {
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'TidingsHttpError');
    assert.equal(err.status, 429);
    assert.equal(err.message, 'publish refused with 429');
    assert.deepEqual(err.body, { error: 'publish refused with 429' });
    return true;
  });
  assert.equal(broker.streams.size, 0, 'nothing was published');
});

test('two instances keep their own connections, cursors and states', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/a');
  broker.publish('other', '/x');
  const x = client({ token: 'x' });
  const y = client({ token: 'y' });
  const xl = subscriber();
  const yl = subscriber();
  x.live.on('library', '/', xl.handler, { reset: xl.reset });
  y.live.on('library', '/', yl.handler, { reset: yl.reset });
  y.live.on('other', '/', () => {});
  x.live.start();
  y.live.start();
  await clock.settle();
  const [xConn, yConn] = broker.connections;
  assert.equal(xConn.params.get('access_token'), 'x');
  assert.deepEqual(yConn.params.getAll('stream'), ['library', 'other']);
  assert.deepEqual(Object.keys(x.live.cursors()), ['library']);

  xConn.fail();
  await clock.settle();
  assert.equal(x.live.state, 'reconnecting');
  assert.equal(y.live.state, 'live');
  assert.ok(!yConn.closed);

  broker.publish('library', '/b');
  assert.deepEqual(yl.log, ['reset', 'replay 1 /a', 'event 2 /b']);
  assert.deepEqual(xl.log, ['reset', 'replay 1 /a'], 'x is away');
  await clock.advance(x.states.at(-1).retryInMs);
  assert.deepEqual(xl.log, ['reset', 'replay 1 /a', 'event 2 /b']);

  x.live.stop();
  broker.publish('library', '/c');
  assert.deepEqual(yl.log, ['reset', 'replay 1 /a', 'event 2 /b', 'event 3 /c']);
  assert.deepEqual(xl.log, ['reset', 'replay 1 /a', 'event 2 /b']);
  assert.equal(x.live.state, 'stopped');
  assert.equal(y.live.state, 'live');
  assert.deepEqual(x.live.stats, { events: 2, duplicatesDropped: 0 });
  assert.deepEqual(y.live.stats, { events: 4, duplicatesDropped: 0 });
  assert.deepEqual(stateNames(y.states), ['connecting', 'syncing', 'live']);
});

// ---- a subscriber that changes subscriptions from inside its handler ------------
//
// A handler that calls on(), an unsubscribe or setToken() while its stream's
// history is being delivered closes the connection in the middle of that
// history. The rest of it must still arrive on the next connection.

test('a subscribe from inside a handler during the replay does not lose the rest of the history', async (t) => {
  const { clock, broker, client } = harness(t);
  for (let i = 1; i <= 7; i++) broker.publish('library', `/doc${i}`);
  broker.publish('other', '/x');
  const { live } = client();
  const lib = subscriber();
  const oth = subscriber();
  let subscribed = false;
  live.on(
    'library',
    '/',
    (event, info) => {
      lib.handler(event, info);
      if (seqOf(event.cursor) === 2 && !subscribed) {
        subscribed = true;
        live.on('other', '/', oth.handler, { reset: oth.reset });
      }
    },
    { reset: lib.reset },
  );
  live.start();
  await clock.settle();
  await clock.advance(0); // the reconnect the subscribe asked for

  assert.equal(live.state, 'live');
  assert.deepEqual(oth.log, ['reset', 'replay 1 /x']);
  assert.deepEqual(heldSeqs(lib.log), range(1, 7), `library subscriber saw: ${lib.log.join(', ')}`);
  assert.equal(live.cursors().library, broker.cursor('library', 7));
});

test('a subscribe from inside a handler during the catch-up does not lose the rest of the history', async (t) => {
  const { clock, broker, client } = harness(t);
  broker.publish('library', '/doc1');
  broker.publish('other', '/x');
  broker.publish('third', '/t');
  const { live, states } = client();
  const lib = subscriber();
  let subscribed = false;
  live.on(
    'library',
    '/',
    (event, info) => {
      lib.handler(event, info);
      if (seqOf(event.cursor) === 3 && !subscribed) {
        subscribed = true;
        live.on('third', '/', () => {});
      }
    },
    { reset: lib.reset },
  );
  live.start();
  await clock.settle();
  broker.lastConnection.fail();
  await clock.settle();
  for (let i = 2; i <= 7; i++) broker.publish('library', `/doc${i}`);
  // Through hello, so the library catches up from seq 1 through history.
  live.on('other', '/', () => {});
  await clock.advance(0);

  assert.equal(live.state, 'live', stateNames(states).join(' '));
  assert.deepEqual(heldSeqs(lib.log), range(1, 7), `library subscriber saw: ${lib.log.join(', ')}`);
  assert.equal(live.cursors().library, broker.cursor('library', 7));
});

test('a subscriber added while live gets its whole history even if its handler subscribes mid-replay', async (t) => {
  const { clock, broker, client } = harness(t);
  for (const path of ['/a/1', '/b/1', '/b/2', '/b/3', '/a/2']) broker.publish('library', path);
  broker.publish('other', '/x');
  const { live } = client();
  live.on('library', '/a/', () => {});
  live.start();
  await clock.settle();

  const b = subscriber();
  let subscribed = false;
  live.on(
    'library',
    '/b/',
    (event, info) => {
      b.handler(event, info);
      if (!subscribed) {
        subscribed = true;
        live.on('other', '/', () => {});
      }
    },
    { reset: b.reset },
  );
  await clock.advance(0);

  assert.equal(live.state, 'live');
  assert.deepEqual(heldSeqs(b.log), [2, 3, 4], `/b/ subscriber saw: ${b.log.join(', ')}`);
});

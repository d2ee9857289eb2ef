// Tidings browser client: one Server-Sent Events connection per instance
// carries every subscription, and the instance keeps each stream's cursor so
// that any reconnect resumes where the subscriber left off, without a gap
// and without a duplicate. ES module, no dependencies, no build step.
//
//   import { Tidings } from '/live/tidings.js';
//   const live = new Tidings({ token: () => sessionStorage.getItem('jwt') });
//   live.on('library', '/', (event, info) => apply(event), { reset: () => clear() });
//   live.onState((state, detail) => showBadge(state, detail));
//   live.start();
//
// Protocol: docs/api.md ("History", "Server-Sent Events", "Auth", "Publish").

/** The cursor of a stream that did not exist yet: "before anything". */
const ZERO_CURSOR = '0000000000000000:0';
const ZERO_EPOCH = '0000000000000000';
const HISTORY_PAGE = 1000;
const DEFAULT_HEARTBEAT_MS = 20000;
// How long a failed connection's probe may take before we call it a network
// error; the probe only needs the status line.
const PROBE_TIMEOUT_MS = 10000;

const CURSOR_RE = /^([0-9a-f]{16}):(0|[1-9][0-9]*)$/;

function parseCursor(text) {
  const m = typeof text === 'string' ? CURSOR_RE.exec(text) : null;
  return m ? { epoch: m[1], seq: Number(m[2]) } : null;
}

// Cursors of one stream only compare within an epoch: a new epoch is a new log.
function atOrBefore(a, b) {
  const x = parseCursor(a);
  const y = parseCursor(b);
  return !!x && !!y && x.epoch === y.epoch && x.seq <= y.seq;
}

// Whether position `a` (reported by the server) moves us past `b`. A stream
// that did not exist (ZERO_CURSOR) is moved past by any cursor of a real
// epoch: the server adopts the new epoch the same way.
function isAhead(a, b) {
  const x = parseCursor(a);
  const y = parseCursor(b);
  if (!x || !y) return false;
  if (x.epoch === y.epoch) return x.seq > y.seq;
  return y.epoch === ZERO_EPOCH && y.seq === 0;
}

// The wire prefix must let through every subscriber's events. Cutting back
// to a '/' boundary keeps it a path the operator could have granted, rather
// than an arbitrary string like "/docs/a" shared by "/docs/a1" and "/docs/a2".
function widestPrefix(prefixes) {
  let common = prefixes[0];
  for (const p of prefixes) while (!p.startsWith(common)) common = common.slice(0, -1);
  if (prefixes.includes(common)) return common;
  return common.slice(0, common.lastIndexOf('/') + 1) || '/';
}

function httpError(status, body, fallback) {
  const message = body && typeof body.error === 'string' ? body.error : fallback;
  return Object.assign(new Error(message), { name: 'TidingsHttpError', status, body });
}

// An error answer's body, for its message: anything unreadable is no message.
async function readErrorJson(res) {
  try {
    return await res.json();
  } catch {
    return null;
  }
}

// A success answer's body must be read whole: a reply cut short or not JSON
// throws (the caller reconnects) rather than passing for "nothing there".
async function readJson(res, what) {
  try {
    return await res.json();
  } catch (err) {
    throw Object.assign(new Error(`${what}: the reply could not be read (${err.name})`), { status: 0 });
  }
}

// The token rides in the EventSource URL; never let it into a message.
function redact(text) {
  return String(text).replace(/access_token=[^&\s]*/g, 'access_token=…');
}

// A subscriber that throws must not break delivery to the others or the
// cursor bookkeeping; the error still reaches the console / window.onerror.
function report(err) {
  if (typeof globalThis.reportError === 'function') globalThis.reportError(err);
  else setTimeout(() => { throw err; });
}

function isAbort(err) {
  return err && err.name === 'AbortError';
}

/**
 * @typedef {{stream: string, cursor: string, path: string, type: string, time: number, data: any}} TidingsEvent
 * @typedef {'connecting'|'syncing'|'live'|'reconnecting'|'resyncing'|'unauthorized'|'error'|'stopped'} TidingsState
 */

export class Tidings {
  /** @type {{events: number, duplicatesDropped: number}} */
  stats = { events: 0, duplicatesDropped: 0 };

  #base;
  #homeBase;
  #reconnectOrigins;
  #token;
  #minMs;
  #maxMs;
  #graceMs;
  #fetch;
  #EventSource;

  #subs = new Set();
  /** Wire streams in connection order: stream= entries, then uri= entries. */
  #entries = [];
  #stateListeners = new Set();
  /** @type {TidingsState} */
  #state = 'stopped';
  #running = false;
  #conn = null;
  #timer = null;
  #attempt = 0;
  // Bumped whenever the connection's future changes hands (close, schedule,
  // stop), so a late async continuation can tell it no longer matters.
  #generation = 0;
  #probeAbort = null;

  /**
   * @param {{base?: string, token?: string | null | (() => string | null | undefined | Promise<string | null | undefined>),
   *          reconnectMinMs?: number, reconnectMaxMs?: number, stallGraceMs?: number,
   *          reconnectOrigins?: string[],
   *          fetch?: typeof fetch, EventSource?: typeof EventSource}} [options]
   */
  constructor(options = {}) {
    this.#base = String(options.base ?? '').replace(/\/+$/, '');
    this.#homeBase = this.#base;
    this.#reconnectOrigins = [...(options.reconnectOrigins ?? [])];
    this.#token = options.token ?? null;
    this.#minMs = options.reconnectMinMs ?? 250;
    this.#maxMs = options.reconnectMaxMs ?? 10000;
    this.#graceMs = options.stallGraceMs ?? 1000;
    // Called through a closure: window.fetch throws "Illegal invocation" when
    // called as a method of another object.
    this.#fetch = options.fetch ?? ((...args) => globalThis.fetch(...args));
    this.#EventSource = options.EventSource ?? globalThis.EventSource;
  }

  /** @returns {TidingsState} */
  get state() {
    return this.#state;
  }

  /**
   * Subscribe to a stream's events whose path starts with `prefix`.
   * `reset()` means "drop your state": the stream's retained history follows
   * as replayed events (info.replay = true), then live events.
   * @returns {() => void} unsubscribe
   */
  on(stream, prefix, handler, options = {}) {
    if (typeof prefix === 'function') {
      options = handler ?? {};
      handler = prefix;
      prefix = '/';
    }
    if (typeof stream !== 'string' || stream === '') throw new TypeError('stream must be a non-empty string');
    if (typeof prefix !== 'string' || !prefix.startsWith('/')) throw new TypeError("prefix must start with '/'");
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    return this.#add({ kind: 'stream', stream, prefix, handler, reset: options.reset, fresh: true });
  }

  /**
   * Subscribe to an upstream resource: `snapshot(value)` replaces the
   * subscriber's state with the resource's current content, then its change
   * events follow.
   * @returns {() => void} unsubscribe
   */
  onResource(uri, handler, options = {}) {
    if (typeof uri !== 'string' || uri === '') throw new TypeError('uri must be a non-empty string');
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    return this.#add({ kind: 'uri', uri, handler, snapshot: options.snapshot, fresh: true });
  }

  /** @returns {() => void} */
  onState(listener) {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Use this token from now on; an open connection is reopened with it. */
  setToken(token) {
    this.#token = token ?? null;
    if (this.#running) this.#reconnect('reconnecting', { reason: 'new token' }, 0);
  }

  start() {
    if (this.#running) return;
    this.#running = true;
    this.#attempt = 0;
    this.#setState('connecting');
    this.#connect();
  }

  stop() {
    this.#halt('stopped');
  }

  /** @returns {Record<string, string>} each wire stream's cursor, by stream name */
  cursors() {
    const out = /** @type {Record<string, string>} */ ({});
    for (const e of this.#entries) if (e.name && e.cursor) out[e.name] = e.cursor;
    return out;
  }

  /**
   * Append one event (returns its cursor) or an array of events (returns
   * their cursors). Throws an Error carrying `.status` on an HTTP error.
   * @param {string} stream
   * @param {object | object[]} events {path, type, data}
   * @param {{idempotencyKey?: string, signal?: AbortSignal}} [options]
   * @returns {Promise<string | string[]>}
   */
  async publish(stream, events, { idempotencyKey, signal } = {}) {
    const headers = { 'Content-Type': 'application/json', ...(await this.#authHeaders()) };
    if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
    const res = await this.#fetch(`${this.#base}/v1/streams/${encodeURIComponent(stream)}/events`, {
      method: 'POST',
      headers,
      body: JSON.stringify(events),
      signal,
    });
    if (!res.ok) throw httpError(res.status, await readErrorJson(res), `publish failed: HTTP ${res.status}`);
    // Stored, but the reply was lost: the caller must not take it for a
    // refusal (retrying with the same idempotencyKey is safe).
    const body = await readJson(res, 'published');
    return Array.isArray(events) ? body.cursors : body.cursor;
  }

  // ---- subscriptions and wire streams ------------------------------------

  #add(sub) {
    this.#subs.add(sub);
    this.#rewire();
    return () => {
      if (this.#subs.delete(sub)) this.#rewire();
    };
  }

  // One wire stream per stream name (with the widest prefix its subscribers
  // need) and one per resource URI. Entries that stay are the same objects,
  // so an open connection keeps updating the cursors everyone reads.
  #rewire() {
    const signature = (list) => list.map((e) => `${e.key} ${e.prefix}`).join('\n');
    const before = signature(this.#entries);
    const old = new Map(this.#entries.map((e) => [e.key, e]));
    const next = new Map();
    for (const sub of this.#subs) {
      const key = sub.kind === 'stream' ? `stream ${sub.stream}` : `uri ${sub.uri}`;
      let e = next.get(key);
      if (!e) {
        e = old.get(key) ?? {
          key,
          kind: sub.kind,
          name: sub.kind === 'stream' ? sub.stream : null, // a uri's src name is learned from hello
          uri: sub.uri,
          prefix: '/',
          cursor: null, // unknown: synced on the next hello
          subs: [],
          syncing: false,
          buffer: [],
        };
        e.subs = [];
        next.set(key, e);
      }
      e.subs.push(sub);
    }
    // The server reads stream= entries first, then uri= ones (stable sort).
    const entries = [...next.values()].sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'stream' ? -1 : 1));
    for (const e of entries) if (e.kind === 'stream') e.prefix = widestPrefix(e.subs.map((s) => s.prefix));
    const changed = signature(entries) !== before;
    this.#entries = entries;
    // A new subscriber needs its history, which only the hello path provides.
    if (this.#running && (changed || entries.some((e) => e.subs.some((s) => s.fresh)))) {
      this.#reconnect('reconnecting', { reason: 'subscriptions changed' }, 0);
    }
  }

  // ---- connection lifecycle ---------------------------------------------

  #setState(state, detail = {}) {
    this.#state = state;
    if (typeof detail.reason === 'string') detail = { ...detail, reason: redact(detail.reason) };
    for (const listener of this.#stateListeners) {
      try {
        listener(state, detail);
      } catch (err) {
        report(err);
      }
    }
  }

  async #currentToken() {
    const t = typeof this.#token === 'function' ? await this.#token() : this.#token;
    return t || null;
  }

  async #authHeaders() {
    const token = await this.#currentToken();
    return token ? { Authorization: `Bearer ${token}` } : {};
  }

  #closeConn() {
    this.#generation++;
    this.#probeAbort?.abort();
    this.#probeAbort = null;
    const conn = this.#conn;
    this.#conn = null;
    if (!conn) return;
    conn.closed = true;
    conn.es?.close();
    conn.abort.abort();
    clearTimeout(conn.stallTimer);
    // Live events held back during a sync were never delivered; the cursors
    // say what was, and the next connection resumes from there.
    for (const e of conn.entries) {
      e.syncing = false;
      e.buffer = [];
    }
  }

  // reconnect_url as a base, when it is http(s) and its origin is the home
  // base's or one listed in options.reconnectOrigins; otherwise null.
  #trustedBase(url) {
    if (typeof url !== 'string' || url === '') return null;
    try {
      const here = globalThis.location?.href ?? 'http://localhost/';
      const home = new URL(this.#homeBase || '/', here).origin;
      const next = new URL(url, here);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') return null;
      if (next.origin !== home && !this.#reconnectOrigins.includes(next.origin)) return null;
      return url.replace(/\/+$/, '');
    } catch {
      return null;
    }
  }

  #halt(state, detail) {
    this.#running = false;
    this.#closeConn();
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#setState(state, detail);
  }

  // Every reconnect goes through here: close what is open, wait, connect again.
  #reconnect(state, detail, delay) {
    this.#closeConn();
    clearTimeout(this.#timer);
    if (delay === undefined) {
      // Doubling from min to max, each wait up to half again longer at
      // random, so a restarted node is not hit by every client at once.
      const base = this.#minMs * 2 ** Math.min(this.#attempt, 30);
      this.#attempt++;
      // A node we were sent to that does not answer: back to the one we
      // were given.
      if (this.#base !== this.#homeBase && this.#attempt >= 3) this.#base = this.#homeBase;
      delay = Math.round(Math.min(this.#maxMs, base * (1 + Math.random() / 2)));
    }
    this.#setState(state, { ...detail, retryInMs: delay });
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#connect();
    }, delay);
  }

  async #connect() {
    if (!this.#running) return;
    this.#closeConn();
    if (this.#entries.length === 0) {
      // Nothing to watch: up to date by definition; a subscription reconnects.
      this.#setState('live', {});
      return;
    }
    const generation = this.#generation;
    let token;
    try {
      token = await this.#currentToken();
    } catch (err) {
      if (generation === this.#generation) this.#halt('unauthorized', { reason: `token: ${err.message}` });
      return;
    }
    if (generation !== this.#generation || !this.#running) return;

    const entries = this.#entries;
    const params = new URLSearchParams();
    for (const e of entries) if (e.kind === 'stream') params.append('stream', e.prefix === '/' ? e.name : `${e.name}:${e.prefix}`);
    for (const e of entries) if (e.kind === 'uri') params.append('uri', e.uri);
    // With every cursor known the server resumes losslessly; otherwise every
    // stream starts "now" and the hello path fills in the history.
    const resumed = entries.every((e) => e.cursor !== null) && !entries.some((e) => e.subs.some((s) => s.fresh));
    if (resumed) params.set('since', entries.map((e) => e.cursor).join(','));
    // EventSource cannot send headers; the broker reads the token from here.
    if (token) params.set('access_token', token);
    const url = `${this.#base}/v1/sse?${params}`;

    const conn = {
      es: null,
      entries,
      byName: new Map(entries.filter((e) => e.name).map((e) => [e.name, e])),
      resumed,
      opened: false,
      url,
      token,
      abort: new AbortController(),
      closed: false,
      lastSeen: 0,
      stallMs: 0,
      stallTimer: null,
    };
    this.#conn = conn;
    let es;
    try {
      es = new this.#EventSource(url);
    } catch (err) {
      this.#halt('error', { reason: `cannot open the event stream: ${err.name}` });
      return;
    }
    conn.es = es;
    // Until a hello names the heartbeat, a connection that opens and then
    // says nothing is judged by the default one.
    conn.lastSeen = Date.now();
    conn.stallMs = 2 * DEFAULT_HEARTBEAT_MS + this.#graceMs;
    this.#armStall(conn, conn.stallMs);
    const on = (type, fn) =>
      es.addEventListener(type, (msg) => {
        if (conn.closed) return;
        conn.lastSeen = Date.now();
        try {
          fn(conn, msg.data === undefined ? null : JSON.parse(msg.data), msg);
        } catch (err) {
          // A frame we cannot read leaves the cursors in doubt: start over
          // from what was delivered.
          this.#reconnect('reconnecting', { reason: `bad frame: ${err.message}` });
        }
      });
    es.addEventListener('open', () => {
      conn.opened = true;
    });
    es.addEventListener('error', () => this.#onError(conn));
    on('hello', (c, data) => this.#onHello(c, data));
    on('message', (c, data, msg) => this.#onEvent(c, data, msg.lastEventId));
    on('heartbeat', (c, data) => this.#advance(c, data?.cursor));
    on('resync', (c, data) => this.#onResync(c, data));
    on('unauthorized', (c, data) => this.#halt('unauthorized', { reason: data?.reason ?? 'unauthorized' }));
    on('closing', (c, data) => {
      // A node that drains may name another to go to (cluster); the token
      // goes along, so only to an origin the app trusts.
      const next = this.#trustedBase(data?.reconnect_url);
      if (next) this.#base = next;
      this.#reconnect('reconnecting', { reason: data?.reason ?? 'closing', reconnectUrl: next ? data.reconnect_url : undefined });
    });
  }

  // EventSource reports failures without a status and would retry on its
  // own, forever, even on a 401. So we close it and ask the same URL with
  // fetch what went wrong.
  async #onError(conn) {
    if (conn.closed) return;
    const opened = conn.opened;
    this.#closeConn();
    if (opened) {
      this.#reconnect('reconnecting', { reason: 'connection lost' });
      return;
    }
    const generation = this.#generation;
    const { status, error } = await this.#probe(conn.url, conn.token);
    if (generation !== this.#generation || !this.#running) return;
    if (status === 401 || status === 403) this.#halt('unauthorized', { reason: error ?? `HTTP ${status}`, status });
    else if (status >= 400 && status < 500 && status !== 429) this.#halt('error', { reason: error ?? `HTTP ${status}`, status });
    else this.#reconnect('reconnecting', { reason: status ? error ?? `HTTP ${status}` : 'network error', status });
  }

  async #probe(url, token) {
    const abort = new AbortController();
    this.#probeAbort = abort; // whatever happens next (stop, reconnect) ends it
    const timer = setTimeout(() => abort.abort(), PROBE_TIMEOUT_MS);
    try {
      const res = await this.#fetch(url, {
        headers: token ? { Authorization: `Bearer ${token}` } : {},
        signal: abort.signal,
        cache: 'no-store',
      });
      // A 200 is an event stream that would never end: status only.
      const body = res.ok ? null : await readErrorJson(res);
      return { status: res.status, error: typeof body?.error === 'string' ? body.error : undefined };
    } catch {
      return { status: 0 };
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  }

  #armStall(conn, delay) {
    clearTimeout(conn.stallTimer);
    conn.stallTimer = setTimeout(() => {
      if (conn.closed) return;
      const idle = Date.now() - conn.lastSeen;
      // One timer re-armed for the remainder, rather than one per frame.
      if (idle < conn.stallMs) this.#armStall(conn, conn.stallMs - idle);
      else this.#reconnect('reconnecting', { reason: 'stalled' });
    }, delay);
  }

  // ---- frames -------------------------------------------------------------

  #onHello(conn, hello) {
    const heartbeat = Number(hello?.heartbeat_ms) || DEFAULT_HEARTBEAT_MS;
    // A heartbeat may be missed once (a busy server, a slow proxy) before we
    // call the connection dead.
    conn.stallMs = 2 * heartbeat + this.#graceMs;
    this.#armStall(conn, conn.stallMs);

    // JSON objects list integer-like keys first, so stream= names are found
    // by name, and the src:<hash> names of uri= entries are the remaining
    // keys, which keep their (uri) order because they are never integer-like.
    const heads = hello?.streams ?? {};
    const streamNames = new Set(conn.entries.filter((e) => e.kind === 'stream').map((e) => e.name));
    const srcNames = Object.keys(heads).filter((k) => !streamNames.has(k));
    const uriEntries = conn.entries.filter((e) => e.kind === 'uri');
    if (srcNames.length !== uriEntries.length) {
      this.#halt('error', { reason: 'hello does not match the streams asked for' });
      return;
    }
    uriEntries.forEach((e, i) => {
      e.name = srcNames[i];
    });
    conn.byName = new Map(conn.entries.map((e) => [e.name, e]));

    if (conn.resumed) {
      this.#becameLive();
      return;
    }
    this.#setState('syncing', {});
    // Synchronously, before any await: live events arriving from now on are
    // held back until their stream's history is in.
    for (const e of conn.entries) {
      e.syncing = true;
      e.buffer = [];
    }
    Promise.all(conn.entries.map((e) => this.#sync(conn, e, heads[e.name] ?? ZERO_CURSOR))).then(
      () => {
        if (!conn.closed) this.#becameLive();
      },
      (err) => this.#syncFailed(conn, err),
    );
  }

  // Backoff starts over only here: a hello followed by a failing sync must
  // keep backing off, or a broken read would be retried several times a
  // second by every open page.
  #becameLive() {
    this.#attempt = 0;
    this.#setState('live', {});
  }

  #onEvent(conn, event, id) {
    const e = conn.byName.get(event?.stream);
    if (!e) return;
    if (e.syncing) e.buffer.push(event);
    else this.#accept(e, event, false);
    // After the event itself, or its own cursor would mark it as seen.
    if (id) this.#advance(conn, id);
  }

  // Ids and heartbeats carry the session's position in every stream, past
  // events the prefix filtered out: resuming from there skips rescanning them.
  #advance(conn, vector) {
    if (typeof vector !== 'string') return;
    const parts = vector.split(',');
    if (parts.length !== conn.entries.length) return;
    conn.entries.forEach((e, i) => {
      // A stream still syncing has not delivered up to the server's position.
      if (!e.syncing && e.cursor !== null && isAhead(parts[i], e.cursor)) e.cursor = parts[i];
    });
  }

  #onResync(conn, resync) {
    if (resync?.reason === 'slow_consumer') {
      // We fell behind, nothing was lost: resume from the last delivered event.
      if (resync.cursor) this.#advance(conn, resync.cursor);
      this.#reconnect('reconnecting', { reason: 'slow_consumer', stream: resync.stream });
      return;
    }
    // The stream's cursor cannot be resumed: forget it, and the hello path
    // resets and replays that stream (the others only catch up).
    const e = conn.byName.get(resync?.stream);
    if (e) e.cursor = null;
    else for (const x of conn.entries) x.cursor = null;
    this.#reconnect('resyncing', { reason: resync?.reason ?? 'resync', stream: resync?.stream, head: resync?.head });
  }

  #syncFailed(conn, err) {
    if (conn.closed || isAbort(err)) return;
    const status = err?.status;
    const reason = err?.message ?? String(err);
    // 404: the stream or resource went away between hello and the read;
    // the next hello says what there is now.
    if (status === 401 || status === 403) this.#halt('unauthorized', { reason, status });
    else if (status >= 400 && status < 500 && status !== 429 && status !== 404) this.#halt('error', { reason, status });
    else this.#reconnect('reconnecting', { reason, status });
  }

  // ---- the hello path: bring one wire stream up to the head hello named ---

  async #sync(conn, e, head) {
    const fresh = e.subs.filter((s) => s.fresh);
    if (e.kind === 'uri') {
      if (e.cursor === null || fresh.length > 0) await this.#snapshot(conn, e, head);
      else await this.#orElse(this.#catchUp(conn, e, head), () => this.#snapshot(conn, e, head));
    } else if (e.cursor === null || fresh.length === e.subs.length) {
      await this.#replay(conn, e, head);
    } else {
      await this.#orElse(
        (async () => {
          // Subscribers added since: their own history up to where the
          // others are, then everyone catches up together.
          if (fresh.length > 0) await this.#replayFresh(conn, e, fresh);
          await this.#catchUp(conn, e, head);
        })(),
        () => this.#replay(conn, e, head),
      );
    }
    if (conn.closed) return;
    // Live events that came in meanwhile; any the history already delivered
    // are dropped as duplicates.
    const held = e.buffer;
    e.buffer = [];
    e.syncing = false;
    for (const event of held) this.#accept(e, event, false);
  }

  // 410 Gone: the cursor cannot be resumed from history either.
  async #orElse(attempt, fallback) {
    try {
      await attempt;
    } catch (err) {
      if (err?.status !== 410) throw err;
      await fallback();
    }
  }

  // Every subscriber drops its state, then the retained history is replayed.
  async #replay(conn, e, head) {
    for (const sub of e.subs) {
      sub.fresh = false;
      this.#call(sub.reset);
    }
    e.cursor = null;
    // A replay is refused only when retention trims while it reads; the next
    // attempt starts from the new first event.
    for (let tries = 1; ; tries++) {
      try {
        await this.#readHistory(conn, e.name, null, e.prefix, head, (event) => this.#accept(e, event, true));
        break;
      } catch (err) {
        if (err?.status !== 410 || tries >= 3) throw err;
      }
    }
    if (conn.closed) return;
    if (e.cursor === null || isAhead(head, e.cursor)) e.cursor = head;
  }

  async #replayFresh(conn, e, fresh) {
    for (const sub of fresh) this.#call(sub.reset);
    await this.#readHistory(conn, e.name, null, widestPrefix(fresh.map((s) => s.prefix)), e.cursor, (event) =>
      this.#dispatch(fresh, event, { replay: true }),
    );
    // Only now: one that failed halfway must start over with a reset.
    if (conn.closed) return;
    for (const sub of fresh) sub.fresh = false;
  }

  async #catchUp(conn, e, head) {
    if (e.cursor === head) return;
    await this.#readHistory(conn, e.name, e.cursor, e.prefix, head, (event) => this.#accept(e, event, false));
    if (conn.closed) return;
    if (isAhead(head, e.cursor)) e.cursor = head;
  }

  // The resource's content now replaces the subscribers' state; its change
  // events after `head` follow. The read may already include some of them:
  // state diffs (ADDED/MODIFIED/DELETED of a key) apply again harmlessly.
  async #snapshot(conn, e, head) {
    const value = await this.#getJson(conn, `/v1/resources/read?uri=${encodeURIComponent(e.uri)}`);
    if (conn.closed) return;
    for (const sub of e.subs) {
      sub.fresh = false;
      this.#call(sub.snapshot, value, { stream: e.name, cursor: head });
    }
    e.cursor = head;
  }

  // Pages through (since, until], handing each event to `deliver`. `next` is
  // the last event scanned, so a prefix that matches nothing still advances.
  async #readHistory(conn, name, since, prefix, until, deliver) {
    const end = parseCursor(until);
    if (!end || end.seq === 0) return; // nothing existed at `until`
    let after = since;
    for (;;) {
      const q = new URLSearchParams({ limit: String(HISTORY_PAGE) });
      if (after) q.set('since', after);
      if (prefix !== '/') q.set('prefix', prefix);
      // A 404 throws too: hello named events up to `until`, so the stream
      // existed; whatever happened to it, the next hello tells.
      const page = await this.#getJson(conn, `/v1/streams/${encodeURIComponent(name)}/events?${q}`);
      if (conn.closed) return;
      for (const event of page?.events ?? []) {
        if (!atOrBefore(event.cursor, until)) {
          // Past `until` is the live connection's part; another epoch means
          // the log was replaced under us.
          if (parseCursor(event.cursor)?.epoch === end.epoch) return;
          throw new Error(`${name}: its log changed epoch while being read`);
        }
        deliver({ stream: name, ...event });
        if (conn.closed) return;
      }
      const next = parseCursor(page?.next);
      if (next && next.epoch === end.epoch && next.seq >= end.seq) return;
      // Stopping short of `until` would let the caller move the cursor over
      // events never delivered: never do that quietly.
      if (!next || next.epoch !== end.epoch || page.next === after) {
        throw new Error(`${name}: history stopped at ${page?.next} before ${until}`);
      }
      after = page.next;
    }
  }

  async #getJson(conn, path) {
    const res = await this.#fetch(this.#base + path, {
      headers: conn.token ? { Authorization: `Bearer ${conn.token}` } : {},
      signal: conn.abort.signal,
    });
    const what = path.split('?')[0];
    if (!res.ok) throw httpError(res.status, await readErrorJson(res), `${what}: HTTP ${res.status}`);
    return readJson(res, what);
  }

  // ---- delivery -------------------------------------------------------------

  // The one place an event becomes "delivered": never twice, in cursor order.
  #accept(e, event, replay) {
    if (e.cursor !== null && atOrBefore(event.cursor, e.cursor)) {
      this.stats.duplicatesDropped++;
      return;
    }
    e.cursor = event.cursor;
    this.stats.events++;
    // Fresh subscribers have not had their history yet; they get it first.
    this.#dispatch(
      e.subs.filter((s) => !s.fresh),
      event,
      { replay },
    );
  }

  #dispatch(subs, event, info) {
    for (const sub of subs) {
      if (!this.#subs.has(sub)) continue; // unsubscribed by an earlier handler
      if (sub.kind === 'stream' && !String(event.path).startsWith(sub.prefix)) continue;
      this.#call(sub.handler, event, info);
    }
  }

  #call(fn, ...args) {
    if (typeof fn !== 'function') return;
    try {
      fn(...args);
    } catch (err) {
      report(err);
    }
  }
}

export { ZERO_CURSOR };

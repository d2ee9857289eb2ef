// An in-memory stand-in for one Tidings node, as far as web/live/tidings.js
// can see it: the history, resource-read and publish routes (through a fake
// fetch) and SSE sessions (through a fake EventSource class).
//
// The SSE side follows relay/sse_session.cpp and actors/hub.cpp, because the
// client's cursor bookkeeping is only right if it agrees with the server on
// the details: hello names every stream's head; a session without `since`
// starts at those heads; a resume that is refused gets its `resync` right
// after the connection opens, without a hello; an event's id (and a
// heartbeat's cursor) is the session's position in *every* stream, moved
// past events its prefix filtered out; a zero cursor means "before anything"
// and adopts the stream's epoch once it exists. The history route follows
// broker/streams_handler.cpp in the same way (`next` is the last event
// scanned, matched or not; 410 with a reason; zero cursor = from the start).
//
// Pages are tiny (pageCap) so that a handful of events already makes the
// client page through history.

export const ZERO_CURSOR = '0000000000000000:0';
const ZERO_EPOCH = '0000000000000000';

// One counter for all brokers: every stream gets an epoch no other stream in
// the test run has, so a cursor that leaked from one stream or broker into
// another would be refused as another epoch instead of passing by accident.
let epochCounter = 0xabc0;
const hex16 = (n) => n.toString(16).padStart(16, '0');

const abortError = () => Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });

function response(status, body) {
  return { ok: status >= 200 && status < 300, status, json: async () => structuredClone(body) };
}

export function seqOf(cursor) {
  return Number(String(cursor).split(':')[1]);
}

export class FakeBroker {
  /** name -> { epoch, first, events: [{ seq, path, type, time, data }] } */
  streams = new Map();
  /** uri -> { name: 'src:<hash>', value } */
  sources = new Map();
  /** Every fetch the client made: { url, method, headers, body, signal }. */
  requests = [];
  /** Every EventSource the client opened, oldest first. */
  connections = [];
  /** Sessions past their hello, which receive what is published. */
  sessions = new Set();

  // ---- knobs a test turns --------------------------------------------------

  /** Largest history page, to exercise paging with few events. */
  pageCap = 3;
  heartbeatMs = 20000;
  /** Sessions neither start nor deliver on their own: the test emits frames. */
  manual = false;
  /** Refuse new SSE connections with this status (the probe sees it too). */
  sseStatus = 200;
  /** New SSE connections (and their probe) fail as a network error. */
  sseNetworkDown = false;
  /** The probe of a failed SSE connection never answers (until aborted). */
  sseProbeHangs = false;
  /** Answer history GETs with this status. */
  historyStatus = null;
  /** Answer publishes with this status. */
  publishStatus = null;
  /** Awaited before each history GET is answered, with its URL. */
  historyGate = null;

  constructor() {
    this.EventSource = makeEventSource(this);
  }

  get lastConnection() {
    return this.connections.at(-1);
  }

  // ---- the data --------------------------------------------------------------

  stream(name) {
    let s = this.streams.get(name);
    if (!s) {
      s = { epoch: hex16(++epochCounter), first: 1, events: [] };
      this.streams.set(name, s);
    }
    return s;
  }

  epoch(name) {
    const s = this.streams.get(name);
    if (!s) throw new Error(`no stream ${name} in the fake broker`);
    return s.epoch;
  }

  cursor(name, seq) {
    return `${this.epoch(name)}:${seq}`;
  }

  /** The head cursor, or the zero cursor for a stream that does not exist. */
  head(name) {
    const s = this.streams.get(name);
    if (!s) return ZERO_CURSOR;
    return `${s.epoch}:${s.events.at(-1)?.seq ?? s.first - 1}`;
  }

  /** Appends one event and hands it to every live session; returns its cursor. */
  publish(name, path, type = 'MODIFIED', data = {}) {
    const s = this.stream(name);
    const seq = (s.events.at(-1)?.seq ?? s.first - 1) + 1;
    const event = { seq, path, type, time: Date.now(), data };
    s.events.push(event);
    for (const session of this.sessions) session.deliver(name, s, event);
    return `${s.epoch}:${seq}`;
  }

  /** Retention: drops every event before seq `first`. */
  trim(name, first) {
    const s = this.stream(name);
    s.events = s.events.filter((e) => e.seq >= first);
    s.first = first;
  }

  /** An upstream resource; its source stream holds one ADDED event per key. */
  addSource(uri, value) {
    const name = `src:${hex16(++epochCounter)}`;
    this.sources.set(uri, { name, value: structuredClone(value) });
    this.stream(name);
    for (const [key, v] of Object.entries(value)) this.publish(name, `/${key}`, 'ADDED', { key, new: v });
    return name;
  }

  /** Changes one key of a resource (undefined deletes it), as its source would. */
  changeSource(uri, key, v) {
    const src = this.sources.get(uri);
    const had = key in src.value;
    if (v === undefined) {
      delete src.value[key];
      return this.publish(src.name, `/${key}`, 'DELETED', { key, new: null });
    }
    src.value[key] = v;
    return this.publish(src.name, `/${key}`, had ? 'MODIFIED' : 'ADDED', { key, new: v });
  }

  // ---- the requests ----------------------------------------------------------

  /** The history GETs made for `name`, as URL objects. */
  historyRequests(name) {
    return this.requests
      .filter((r) => r.method === 'GET')
      .map((r) => new URL(r.url, 'http://fake.invalid'))
      .filter((u) => u.pathname === `/v1/streams/${encodeURIComponent(name)}/events`);
  }

  /** Why an SSE request for `url` is refused before the stream starts, if it is. */
  sseRefusal(url) {
    if (this.sseStatus !== 200) return { status: this.sseStatus, error: `refused with ${this.sseStatus}` };
    const u = new URL(url, 'http://fake.invalid');
    for (const uri of u.searchParams.getAll('uri'))
      if (!this.sources.has(uri)) return { status: 400, error: `no upstream serves ${uri}` };
    return null;
  }

  fetch = async (url, init = {}) => {
    const method = init.method ?? 'GET';
    this.requests.push({ url, method, headers: init.headers ?? {}, body: init.body, signal: init.signal });
    if (init.signal?.aborted) throw abortError();
    const u = new URL(url, 'http://fake.invalid');

    if (u.pathname === '/v1/sse') return this.#sseProbe(url, init.signal);

    if (u.pathname === '/v1/resources/read') {
      const src = this.sources.get(u.searchParams.get('uri'));
      return src ? response(200, src.value) : response(404, { error: 'no upstream serves that uri' });
    }

    const m = /^\/v1\/streams\/([^/]+)\/events$/.exec(u.pathname);
    if (m && method === 'POST') return this.#publishRoute(decodeURIComponent(m[1]), JSON.parse(init.body));
    if (m && method === 'GET') {
      if (this.historyGate) await this.historyGate(u);
      if (init.signal?.aborted) throw abortError();
      return this.#history(decodeURIComponent(m[1]), u.searchParams);
    }
    return response(404, { error: `no route ${u.pathname}` });
  };

  // The client asks the SSE URL again with fetch only to learn why the
  // EventSource failed; a 200 would be an endless stream, so no body.
  async #sseProbe(url, signal) {
    if (this.sseProbeHangs) {
      return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(abortError())));
    }
    if (this.sseNetworkDown) throw new TypeError('fetch failed');
    const refusal = this.sseRefusal(url);
    return refusal ? response(refusal.status, { error: refusal.error }) : response(200, null);
  }

  #publishRoute(name, body) {
    if (this.publishStatus) return response(this.publishStatus, { error: `publish refused with ${this.publishStatus}` });
    if (Array.isArray(body)) return response(201, { cursors: body.map((e) => this.publish(name, e.path, e.type, e.data)) });
    return response(201, { cursor: this.publish(name, body.path, body.type, body.data) });
  }

  #history(name, q) {
    if (this.historyStatus) return response(this.historyStatus, { error: `history refused with ${this.historyStatus}` });
    const s = this.streams.get(name);
    if (!s) return response(404, { error: `no stream named '${name}'` });
    const headSeq = s.events.at(-1)?.seq ?? s.first - 1;
    const head = `${s.epoch}:${headSeq}`;
    let after = s.first - 1;
    const since = q.get('since');
    if (since && since !== ZERO_CURSOR) {
      const [epoch, seq] = [since.split(':')[0], seqOf(since)];
      if (epoch !== s.epoch) return response(410, { error: 'another epoch', reason: 'epoch_changed', head });
      if (seq < s.first - 1) return response(410, { error: 'too old', reason: 'cursor_too_old', head });
      if (seq > headSeq) return response(410, { error: 'ahead', reason: 'cursor_ahead', head });
      after = seq;
    }
    const limit = Math.min(Number(q.get('limit') ?? 100), this.pageCap);
    const prefix = q.get('prefix') ?? '';
    const events = [];
    let next = after;
    for (const e of s.events) {
      if (e.seq <= after) continue;
      next = e.seq;
      if (!e.path.startsWith(prefix)) continue;
      events.push({ cursor: `${s.epoch}:${e.seq}`, path: e.path, type: e.type, time: e.time, data: e.data });
      if (events.length === limit) break;
    }
    return response(200, { stream: name, head, first: `${s.epoch}:${s.first}`, events, next: `${s.epoch}:${next}` });
  }
}

// The EventSource class handed to the client. An instance is one SSE
// session; the test reaches it through broker.connections to make the
// network fail, send heartbeats, or (in manual mode) emit every frame.
function makeEventSource(broker) {
  return class FakeEventSource {
    closed = false;
    /** A frozen session is alive but silent: the stall detector's case. */
    frozen = false;
    /** [{ name, prefix, position }], stream= entries first, then uri= ones. */
    subs = [];
    #listeners = new Map();

    constructor(url) {
      this.url = url;
      broker.connections.push(this);
      // A real EventSource connects asynchronously, after the constructor
      // has returned and the listeners are attached.
      queueMicrotask(() => this.#begin());
    }

    addEventListener(type, fn) {
      if (!this.#listeners.has(type)) this.#listeners.set(type, []);
      this.#listeners.get(type).push(fn);
    }

    close() {
      this.closed = true;
      broker.sessions.delete(this);
    }

    get params() {
      return new URL(this.url, 'http://fake.invalid').searchParams;
    }

    /** The id of the session's next frame: its position in every stream. */
    get id() {
      return this.subs.map((s) => s.position).join(',');
    }

    // ---- frames (manual mode uses these directly) ------------------------

    emitRaw(type, data, lastEventId = '') {
      if (this.closed || this.frozen) return;
      for (const fn of this.#listeners.get(type) ?? []) fn({ type, data, lastEventId });
    }

    emit(type, data, id = '') {
      this.emitRaw(type, data === undefined ? undefined : JSON.stringify(data), id);
    }

    open() {
      this.emit('open');
    }

    /** The connection ends or cannot be made: EventSource says only 'error'. */
    fail() {
      if (this.closed) return;
      for (const fn of this.#listeners.get('error') ?? []) fn({ type: 'error' });
    }

    heartbeat() {
      this.emit('heartbeat', { cursor: this.id });
    }

    /** A terminal frame (resync, unauthorized, closing), then the server hangs up. */
    terminal(type, data) {
      this.emit(type, data);
      this.fail();
    }

    // ---- the server's side ---------------------------------------------

    #begin() {
      if (this.closed) return;
      if (broker.sseNetworkDown || broker.sseRefusal(this.url)) return this.fail();
      if (broker.manual) return;
      this.open();
      const params = this.params;
      this.subs = params.getAll('stream').map((spec) => {
        const at = spec.indexOf(':/');
        return at < 0 ? { name: spec, prefix: '' } : { name: spec.slice(0, at), prefix: spec.slice(at + 1) };
      });
      for (const uri of params.getAll('uri')) this.subs.push({ name: broker.sources.get(uri).name, prefix: '' });

      const since = params.get('since')?.split(',') ?? null;
      for (const [i, sub] of this.subs.entries()) {
        const head = broker.head(sub.name);
        if (!since) {
          sub.position = head;
          continue;
        }
        const refused = this.#resumeRefusal(sub.name, since[i]);
        if (refused) return this.terminal('resync', { stream: sub.name, reason: refused, head });
        sub.position = since[i];
      }

      // Written by hand rather than with JSON.stringify of an object: the
      // server writes the keys in subscription order, and the client must
      // cope with JSON.parse moving integer-like names ("123") to the front.
      const heads = this.subs.map((s) => `${JSON.stringify(s.name)}:${JSON.stringify(broker.head(s.name))}`);
      this.emitRaw('hello', `{"streams":{${heads.join(',')}},"heartbeat_ms":${broker.heartbeatMs}}`);
      broker.sessions.add(this);
      // A resumed session first sends what it missed.
      for (const sub of this.subs) {
        const s = broker.streams.get(sub.name);
        if (s) for (const event of s.events) this.deliver(sub.name, s, event);
      }
    }

    // actors/hub.cpp's checks of a resume position.
    #resumeRefusal(name, cursor) {
      const s = broker.streams.get(name);
      const [epoch, seq] = [cursor.split(':')[0], seqOf(cursor)];
      if (epoch === ZERO_EPOCH) return seq === 0 ? null : 'unknown_stream';
      if (!s) return 'unknown_stream';
      if (epoch !== s.epoch) return 'epoch_changed';
      const headSeq = s.events.at(-1)?.seq ?? s.first - 1;
      if (seq < s.first - 1) return 'cursor_too_old';
      if (seq > headSeq) return 'cursor_ahead';
      return null;
    }

    // sse_session::accept_frame: the position moves past every event, the
    // prefix only decides whether it is sent.
    deliver(name, stream, event) {
      if (broker.manual || this.closed || this.frozen) return;
      for (const sub of this.subs) {
        if (sub.name !== name) continue;
        let [epoch, seq] = [sub.position.split(':')[0], seqOf(sub.position)];
        if (epoch === ZERO_EPOCH) epoch = stream.epoch; // the stream was created since
        if (event.seq <= seq) continue;
        sub.position = `${epoch}:${event.seq}`;
        if (!event.path.startsWith(sub.prefix)) continue;
        const { path, type, time, data } = event;
        this.emit('message', { stream: name, cursor: `${stream.epoch}:${event.seq}`, path, type, time, data }, this.id);
      }
    }
  };
}

// Type declarations for tidings.js (the Tidings browser client).

/** "<16 lowercase hex epoch>:<seq>"; "0000000000000000:0" before anything on a stream that does not exist yet. */
export type Cursor = string;

export declare const ZERO_CURSOR: '0000000000000000:0';

/** One event of a stream, as SSE and history deliver it. */
export interface TidingsEvent<D = any> {
  stream: string;
  cursor: Cursor;
  path: string;
  type: string;
  /** Milliseconds since the Unix epoch, when the broker stored it. */
  time: number;
  data: D;
}

export interface DeliveryInfo {
  /** True for events replayed from history after reset() (the stream's retained events, from the first). */
  replay: boolean;
}

export interface SnapshotInfo {
  /** The resource's source stream ("src:<16 hex>"). */
  stream: string;
  /** The source stream's cursor the snapshot was taken at; its events after it follow. */
  cursor: Cursor;
}

export type TidingsState =
  | 'connecting'
  | 'syncing'
  | 'live'
  | 'reconnecting'
  | 'resyncing'
  | 'unauthorized'
  | 'error'
  | 'stopped';

/** What goes with a state change; which fields are present depends on the state. */
export interface StateDetail {
  /** Why: a resync reason, an unauthorized reason, the broker's {"error"} message, "stalled", ... */
  reason?: string;
  /** HTTP status, when an HTTP answer caused the change. */
  status?: number;
  /** The stream a resync named. */
  stream?: string;
  /** The head a resync named. */
  head?: Cursor;
  /** 'reconnecting' / 'resyncing': the wait before the next attempt. */
  retryInMs?: number;
  /** 'closing' with a cluster redirect: the node reconnected to. */
  reconnectUrl?: string;
}

export type TokenSource = string | null | undefined | (() => string | null | undefined | Promise<string | null | undefined>);

export interface TidingsOptions {
  /** Broker base URL without the trailing slash; '' (default) for the page's own origin. */
  base?: string;
  /** A JWT, or a function returning one (called before each connection and request). */
  token?: TokenSource;
  /** First reconnect wait (default 250 ms); doubles per failure, each wait up to half again longer at random. */
  reconnectMinMs?: number;
  /** Longest reconnect wait (default 10000 ms); no wait is longer. */
  reconnectMaxMs?: number;
  /** Slack on top of two missed heartbeats before the connection counts as stalled (default 1000 ms). */
  stallGraceMs?: number;
  /**
   * Origins (e.g. "https://node2.example:8443") a draining node may send the
   * client to with closing's reconnect_url, besides base's own. The token
   * goes along, so only list nodes you trust; others are ignored.
   */
  reconnectOrigins?: string[];
  /** For tests or other runtimes. */
  fetch?: typeof fetch;
  /** For tests or other runtimes. */
  EventSource?: { new (url: string): EventSource };
}

export interface StreamHandlers {
  /** Drop your state: the stream's retained history is replayed next (info.replay = true). */
  reset?: () => void;
}

export interface ResourceHandlers<V = any> {
  /** Replace your state with the resource's current content; its change events follow. */
  snapshot?: (value: V, info: SnapshotInfo) => void;
}

export interface PublishEvent {
  path?: string;
  type?: string;
  data?: unknown;
}

export interface PublishOptions {
  /** Sent as Idempotency-Key: a retry with the same key appends nothing. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** An HTTP error answer of the broker: message from its {"error"}. */
export interface TidingsHttpError extends Error {
  status: number;
  body: unknown;
}

export declare class Tidings {
  constructor(options?: TidingsOptions);

  /** Events delivered (each once) and duplicates dropped. */
  readonly stats: { events: number; duplicatesDropped: number };

  readonly state: TidingsState;

  /**
   * Subscribe to the events of `stream` whose path starts with `prefix` (default '/').
   * Returns a function that unsubscribes.
   */
  on<D = any>(
    stream: string,
    prefix: string,
    handler: (event: TidingsEvent<D>, info: DeliveryInfo) => void,
    handlers?: StreamHandlers,
  ): () => void;
  on<D = any>(
    stream: string,
    handler: (event: TidingsEvent<D>, info: DeliveryInfo) => void,
    handlers?: StreamHandlers,
  ): () => void;

  /** Subscribe to an upstream resource: a snapshot of its content, then its change events. */
  onResource<V = any, D = any>(
    uri: string,
    handler: (event: TidingsEvent<D>, info: DeliveryInfo) => void,
    handlers?: ResourceHandlers<V>,
  ): () => void;

  /** Called on every state change (not with the current state). Returns a function that unsubscribes. */
  onState(listener: (state: TidingsState, detail: StateDetail) => void): () => void;

  /** Use this token from now on; an open connection is reopened with it. */
  setToken(token: TokenSource): void;

  /** Connect (again, after stop / unauthorized / error), resuming from the cursors held. */
  start(): void;

  /** Close the connection and clear every timer; the cursors are kept for the next start(). */
  stop(): void;

  /** Each wire stream's cursor, by stream name (uri subscriptions under their "src:<hash>" name once known). */
  cursors(): Record<string, Cursor>;

  /** Append one event; resolves to its cursor. Rejects with a TidingsHttpError. */
  publish(stream: string, event: PublishEvent, options?: PublishOptions): Promise<Cursor>;
  /** Append 1..1000 events; resolves to their cursors, in order. Rejects with a TidingsHttpError. */
  publish(stream: string, events: PublishEvent[], options?: PublishOptions): Promise<Cursor[]>;
}

// Tidings' test server for MCP 2026-07-28 (no published server speaks it
// yet), on the official v2 SDK. Usage: node v2-server.mjs stdio|http
//
// Resources:
//   tidings-test://state   application/json, {"counter":N}
//   tidings-test://events  application/vnd.asyncai.events+json,
//                          {"events":[{"seq":N,"type":"BUMPED",...}]} (last 100)
//   tidings-test://extra   text/plain, listed only between add_extra and remove_extra
// Tools:
//   bump      counter+1, one BUMPED event, notifications/resources/updated for both
//   add_extra, remove_extra   list or unlist tidings-test://extra, with
//             notifications/resources/list_changed
//   received  what this server observed (JSON list), so tests can check that
//             Tidings cancelled a subscription: stdio records every inbound
//             message's method (and requestId of notifications/cancelled);
//             http records listen streams opening and closing.
// http mode listens on 127.0.0.1 on a free port and prints
// "TIDINGS_URL <url>" and every observation as "TIDINGS_EVENT <json>" on
// stdout. SIGTERM ends open subscriptions gracefully (resultType complete).
import { createServer } from 'node:http';
import { createMcpHandler, InMemoryServerEventBus, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';

const mode = process.argv[2] ?? 'stdio';
const STATE_URI = 'tidings-test://state';
const EVENTS_URI = 'tidings-test://events';
const EVENTS_MIME = 'application/vnd.asyncai.events+json';
const EXTRA_URI = 'tidings-test://extra';

const state = { counter: 0 };
const events = [];
let seq = 0;
const received = [];
let notifyUpdated = () => {};
let notifyListChanged = () => {};
let extraListed = false;
// Per instance: the registered extra resource, to remove it again.
const extraHandles = new Map();

function registerExtra(server) {
  const handle = server.registerResource(
    'extra',
    EXTRA_URI,
    { description: 'Listed between add_extra and remove_extra.', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'extra' }] }),
  );
  extraHandles.set(server, handle);
}

// Lists or unlists the extra resource on every live instance (each sends
// list_changed where it is connected), then tells the HTTP bus.
function setExtra(listed) {
  if (extraListed === listed) return;
  extraListed = listed;
  for (const server of instances) {
    if (listed) registerExtra(server);
    else extraHandles.get(server)?.remove();
    if (!listed) extraHandles.delete(server);
  }
  notifyListChanged();
}

function record(entry) {
  received.push(entry);
  // stdout carries MCP messages on stdio, so observations go to stderr there.
  const line = `TIDINGS_EVENT ${JSON.stringify(entry)}\n`;
  (mode === 'http' ? process.stdout : process.stderr).write(line);
}

// One instance per stdio connection (plus a discarded probe instance), or
// per HTTP request: the state above is shared by all of them.
const instances = new Set();
function factory() {
  const server = new McpServer(
    { name: 'tidings-test-v2', version: '1.0.0' },
    { capabilities: { resources: { subscribe: true, listChanged: true }, tools: {} } },
  );
  server.registerResource(
    'state',
    STATE_URI,
    {
      description: 'The counter.\nExample: await watch_start(name="counter", uri="tidings-test://state")',
      mimeType: 'application/json',
    },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(state) }] }),
  );
  server.registerResource(
    'events',
    EVENTS_URI,
    { description: 'Counter events, newest last.', mimeType: EVENTS_MIME },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: EVENTS_MIME, text: JSON.stringify({ events }) }] }),
  );
  server.registerTool('bump', { description: 'Increments the counter.' }, async () => {
    state.counter += 1;
    seq += 1;
    events.push({ seq, type: 'BUMPED', object: { counter: state.counter } });
    if (events.length > 100) events.shift();
    notifyUpdated(STATE_URI);
    notifyUpdated(EVENTS_URI);
    return { content: [{ type: 'text', text: `counter=${state.counter}` }] };
  });
  if (extraListed) registerExtra(server);
  server.registerTool('add_extra', { description: 'Lists tidings-test://extra.' }, async () => {
    setExtra(true);
    return { content: [{ type: 'text', text: 'listed' }] };
  });
  server.registerTool('remove_extra', { description: 'Unlists tidings-test://extra.' }, async () => {
    setExtra(false);
    return { content: [{ type: 'text', text: 'unlisted' }] };
  });
  server.registerTool('received', { description: 'What this server observed.' }, async () => ({
    content: [{ type: 'text', text: JSON.stringify(received) }],
  }));
  instances.add(server);
  return server;
}

if (mode === 'stdio') {
  // Observe inbound messages next to the SDK's own reader.
  let buffer = '';
  process.stdin.on('data', (chunk) => {
    buffer += chunk.toString('utf8');
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        const m = JSON.parse(line);
        const entry = { method: m.method ?? 'response', id: m.id };
        if (m.method === 'notifications/cancelled') entry.requestId = m.params?.requestId;
        record(entry);
      } catch {
        record({ malformed: line.length });
      }
    }
  });
  // The pinned instance's change notifications are routed onto the open
  // subscriptions/listen streams by the SDK's stdio entry.
  notifyUpdated = (uri) => {
    for (const s of instances) s.server.sendResourceUpdated({ uri }).catch(() => {});
  };
  const handle = serveStdio(factory);
  process.on('SIGTERM', async () => {
    await handle.close();
    process.exit(0);
  });
} else if (mode === 'http') {
  const bus = new InMemoryServerEventBus();
  const recordingBus = {
    publish: (event) => bus.publish(event),
    subscribe: (listener) => {
      record({ event: 'listen-open' });
      const unsubscribe = bus.subscribe(listener);
      let closed = false;
      return () => {
        if (!closed) record({ event: 'listen-closed' });
        closed = true;
        unsubscribe();
      };
    },
  };
  const handler = createMcpHandler(factory, { bus: recordingBus });
  notifyUpdated = (uri) => handler.notify.resourceUpdated(uri);
  notifyListChanged = () => handler.notify.resourcesChanged();
  const node = toNodeHandler(handler);
  const http = createServer((req, res) => node(req, res));
  http.listen(0, '127.0.0.1', () => {
    console.log(`TIDINGS_URL http://127.0.0.1:${http.address().port}/mcp`);
  });
  process.on('SIGTERM', async () => {
    await handler.close();
    http.close();
    process.exit(0);
  });
} else {
  console.error('usage: node v2-server.mjs stdio|http');
  process.exit(2);
}

// A legacy (2025-11-25, initialize-based) stdio server whose resource list
// changes, on the v1 SDK that server-everything pins (package-lock.json).
// Usage: node legacy-server.mjs
//
// Resources: tidings-test://state (always), tidings-test://extra (listed
// only between add_extra and remove_extra). Tools add_extra and
// remove_extra change the listing; the SDK sends
// notifications/resources/list_changed unsolicited, as legacy servers do.
// resources/subscribe and resources/unsubscribe are accepted for any URI.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new McpServer(
  { name: 'tidings-test-legacy', version: '1.0.0' },
  { capabilities: { resources: { subscribe: true, listChanged: true }, tools: {} } },
);
server.registerResource('state', 'tidings-test://state', { mimeType: 'application/json' }, async (uri) => ({
  contents: [{ uri: uri.href, mimeType: 'application/json', text: '{"counter":0}' }],
}));
let extra = null;
server.registerTool('add_extra', { description: 'Lists tidings-test://extra.' }, async () => {
  extra ??= server.registerResource('extra', 'tidings-test://extra', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'extra' }],
  }));
  return { content: [{ type: 'text', text: 'listed' }] };
});
server.registerTool('remove_extra', { description: 'Unlists tidings-test://extra.' }, async () => {
  extra?.remove();
  extra = null;
  return { content: [{ type: 'text', text: 'unlisted' }] };
});
server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
server.server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));

await server.connect(new StdioServerTransport());
process.on('SIGTERM', async () => {
  await server.close();
  process.exit(0);
});

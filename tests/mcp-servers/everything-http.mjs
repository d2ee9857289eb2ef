// Runs @modelcontextprotocol/server-everything's Streamable HTTP transport
// (a legacy 2025-11-25 server) bound to loopback on a free port, for the
// connector tests. The package listens on PORT on every interface; this
// wrapper redirects its listen() to 127.0.0.1:0 and prints the URL it got as
// "TIDINGS_URL <url>" on stdout, where the test waits for it.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callback = args.find((a) => typeof a === 'function');
  this.once('listening', () => {
    const { port } = this.address();
    console.log(`TIDINGS_URL http://127.0.0.1:${port}/mcp`);
  });
  return listen.call(this, { port: 0, host: '127.0.0.1' }, callback);
};

await import('@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js');

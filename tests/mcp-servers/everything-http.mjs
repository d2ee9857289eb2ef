// Runs @modelcontextprotocol/server-everything's Streamable HTTP transport
// (a legacy 2025-11-25 server) bound to loopback on a free port, for the
// connector tests. The package listens on PORT on every interface; this
// wrapper redirects its listen() to 127.0.0.1:0 and prints the URL it got as
// "TIDINGS_URL <url>" on stdout, where the test waits for it.
//
// With TIDINGS_TLS_CERT and TIDINGS_TLS_KEY (PEM files) it serves HTTPS
// instead, as remote MCP servers do (issue 24): the package's Express app
// is handed to node's https server, and the URL names localhost, the name
// the test's certificate is for.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

const cert = process.env.TIDINGS_TLS_CERT;
const key = process.env.TIDINGS_TLS_KEY;
const tls = Boolean(cert && key);
if (tls) {
  const options = { cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
  http.createServer = (...args) => https.createServer(options, ...args);
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callback = args.find((a) => typeof a === 'function');
  this.once('listening', () => {
    const { port } = this.address();
    console.log(tls ? `TIDINGS_URL https://localhost:${port}/mcp` : `TIDINGS_URL http://127.0.0.1:${port}/mcp`);
  });
  return listen.call(this, { port: 0, host: '127.0.0.1' }, callback);
};

await import('@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js');

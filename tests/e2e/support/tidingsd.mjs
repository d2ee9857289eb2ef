// Starts the real tidingsd for browser tests: a config file, a data
// directory, a loopback port (0 picks one; a restart passes the same one so
// pages open on that origin can reconnect). stderr is kept for diagnostics
// and watched for log lines; stop() ends the process and is safe to repeat.

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const binary = process.env.TIDINGSD;

export class Tidingsd {
  static async start({ config, dataDir, port = 0, args = [], timeoutMs = 30000 }) {
    if (!binary) throw new Error('TIDINGSD must name the tidingsd binary (set by tests/e2e/CMakeLists.txt)');
    const node = new Tidingsd();
    const argv = ['--config', config, '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`, ...args];
    node.child = spawn(binary, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    node.exited = new Promise((resolve) => node.child.once('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: node.child.stderr }).on('line', (line) => node.#take(line));
    const listening = await node.awaitLog('"node.listening"', timeoutMs).catch((e) => {
      node.child.kill('SIGKILL');
      throw new Error(`tidingsd did not start: ${e.message}\n${node.log()}`);
    });
    const address = /"address":"127\.0\.0\.1:(\d+)"/.exec(listening);
    if (!address) throw new Error(`no address in ${listening}`);
    node.port = Number(address[1]);
    node.base = `http://127.0.0.1:${node.port}`;
    return node;
  }

  lines = [];
  #waiters = [];

  #take(line) {
    this.lines.push(line);
    const met = this.#waiters.filter((w) => line.includes(w.needle));
    this.#waiters = this.#waiters.filter((w) => !met.includes(w));
    for (const w of met) w.resolve(line);
  }

  // Resolves with the first stderr line (already seen or coming) containing `needle`.
  awaitLog(needle, timeoutMs) {
    const seen = this.lines.find((l) => l.includes(needle));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = { needle, resolve: (line) => (clearTimeout(timer), resolve(line)) };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== w);
        reject(new Error(`no log line with ${needle} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.push(w);
    });
  }

  log() {
    return this.lines.join('\n');
  }

  // SIGTERM (the node drains: sessions get `closing`), SIGKILL after a deadline.
  async stop(timeoutMs = 15000) {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }
}

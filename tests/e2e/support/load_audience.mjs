// tidings-load holding N SSE sessions on an upstream resource beside the
// browsers (`--scenario idle --hold-s`): ready once it prints "ready:", and
// its report (events per session, order) comes when the hold ends: when
// every session has had `holdEvents` events (finished()), or stop().

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export class LoadAudience {
  static async start({ port, uri, token, sessions, holdEvents, holdS = 600, timeoutMs = 120000 }) {
    const binary = process.env.TIDINGS_LOAD;
    if (!binary) throw new Error('TIDINGS_LOAD must name the tidings-load binary');
    const a = new LoadAudience();
    const args = ['--server', `127.0.0.1:${port}`, '--scenario', 'idle', '--sessions', String(sessions),
                  '--uri', uri, '--token', token, '--hold-s', String(holdS), '--timeout-s', String(Math.ceil(timeoutMs / 1000)),
                  ...(holdEvents ? ['--hold-events', String(holdEvents)] : [])];
    a.child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    a.stdout = [];
    a.stderr = '';
    a.child.stderr.on('data', (d) => (a.stderr += d));
    a.exited = new Promise((resolve) => a.child.once('exit', (code, signal) => resolve({ code, signal })));
    const ready = new Promise((resolve, reject) => {
      createInterface({ input: a.child.stdout }).on('line', (line) => {
        a.stdout.push(line);
        if (line.startsWith('ready:')) resolve();
      });
      a.exited.then(({ code }) => reject(new Error(`tidings-load exited (${code}) before ready: ${a.stderr}`)));
    });
    await ready;
    return a;
  }

  // The report once every session had its `holdEvents` events; after
  // `timeoutMs` the hold is ended and the report shows who fell short.
  async finished(timeoutMs) {
    const timer = setTimeout(() => this.child.kill('SIGTERM'), timeoutMs);
    try {
      return await this.#report();
    } finally {
      clearTimeout(timer);
    }
  }

  // Ends the hold (SIGTERM) and returns the JSON report line.
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    return this.#report();
  }

  async #report() {
    const { code } = await this.exited;
    const last = this.stdout.filter((l) => l.startsWith('{')).pop();
    if (code !== 0 || !last) throw new Error(`tidings-load failed (${code}): ${this.stderr}\n${this.stdout.join('\n')}`);
    return JSON.parse(last);
  }
}

// A manual clock for tests of web/live/tidings.js.
//
// tidings.js reads time only through the globals setTimeout, clearTimeout and
// Date.now (its options inject fetch and EventSource, not timers), so the
// clock has to stand in for those globals. It does so only between install()
// and uninstall(), i.e. for the duration of one test: the test runner itself
// keeps real timers, and a test that fails with a client still running leaves
// nothing behind that could fire later.
//
// Nothing here waits on wall-clock time. Backoff delays, heartbeat stalls and
// probe timeouts of many seconds pass in microseconds by advance()-ing.

// The globals can be borrowed by one clock at a time; a second install
// (tests run concurrently, or a test that forgot to uninstall) would leave
// timers on a clock nobody advances.
let installed = null;

export class FakeClock {
  /** Milliseconds, as Date.now() reports them while installed. */
  now = 1_000_000;

  #timers = new Map(); // id -> { at, fn }
  #nextId = 1;
  #real = null;

  install() {
    if (installed) throw new Error('another FakeClock is installed: run these tests one at a time');
    installed = this;
    this.#real = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout, dateNow: Date.now };
    globalThis.setTimeout = (fn, ms = 0, ...args) => {
      const id = this.#nextId++;
      this.#timers.set(id, { at: this.now + Math.max(0, Number(ms) || 0), fn: () => fn(...args) });
      return id;
    };
    globalThis.clearTimeout = (id) => {
      this.#timers.delete(id);
    };
    Date.now = () => this.now;
    return this;
  }

  uninstall() {
    if (installed !== this) return;
    installed = null;
    globalThis.setTimeout = this.#real.setTimeout;
    globalThis.clearTimeout = this.#real.clearTimeout;
    Date.now = this.#real.dateNow;
    this.#real = null;
    this.#timers.clear();
  }

  /** How many timers are armed: a stopped client must leave none. */
  get pendingTimers() {
    return this.#timers.size;
  }

  /**
   * Lets every pending promise chain run to its end. The fakes answer
   * through promises and microtasks only, so a few turns of the (real)
   * event loop are enough; more turns only cost microseconds.
   */
  async settle() {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  }

  /**
   * Moves time forward by `ms`, firing due timers one at a time in order of
   * due time (ties in the order they were set, as real timers do) and
   * settling after each, so a timer that arms another timer inside the
   * window sees that one fire too.
   */
  async advance(ms) {
    const target = this.now + ms;
    for (;;) {
      let next = null;
      for (const [id, t] of this.#timers) if (t.at <= target && (!next || t.at < next[1].at)) next = [id, t];
      if (!next) break;
      this.#timers.delete(next[0]);
      this.now = next[1].at;
      next[1].fn();
      await this.settle();
    }
    this.now = target;
    await this.settle();
  }
}

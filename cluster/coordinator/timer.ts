/**
 * The group coordinator's clock and keyed timers (session expiry, rebalance
 * and sync deadlines, the initial rebalance delay, offset expiry). One key
 * holds at most one task: scheduling a key again replaces its task, as in
 * Kafka's coordinator timer.
 *
 * The system timer's timeouts are unref'd, so they never keep a process
 * alive, and `cancelAll` clears every one of them when the broker stops.
 * The manual timer runs nothing on its own: tests move it with `advance`.
 */

export interface GroupTimer {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `task` once, `delayMs` from now, replacing any task under `key`. */
  schedule(key: string, delayMs: number, task: () => void): void;
  cancel(key: string): void;
  isScheduled(key: string): boolean;
  /** Cancels every task; later schedules are ignored. */
  cancelAll(): void;
}

const MAX_TIMEOUT_MS = 2147483647;

export class SystemGroupTimer implements GroupTimer {
  private readonly tasks = new Map<string, NodeJS.Timeout>();
  private closed = false;

  now(): number {
    return Date.now();
  }

  schedule(key: string, delayMs: number, task: () => void): void {
    if (this.closed) return;
    this.cancel(key);
    const handle = setTimeout(
      () => {
        if (this.tasks.get(key) !== handle) return;
        this.tasks.delete(key);
        task();
      },
      Math.min(Math.max(0, delayMs), MAX_TIMEOUT_MS),
    );
    handle.unref();
    this.tasks.set(key, handle);
  }

  cancel(key: string): void {
    const handle = this.tasks.get(key);
    if (handle === undefined) return;
    clearTimeout(handle);
    this.tasks.delete(key);
  }

  isScheduled(key: string): boolean {
    return this.tasks.has(key);
  }

  cancelAll(): void {
    this.closed = true;
    for (const handle of this.tasks.values()) clearTimeout(handle);
    this.tasks.clear();
  }

  /** Tasks waiting, for tests. */
  get size(): number {
    return this.tasks.size;
  }
}

interface ManualTask {
  readonly deadline: number;
  readonly seq: number;
  readonly task: () => void;
}

/**
 * A timer driven by the test: `advance(ms)` moves the clock and runs, in
 * deadline order, every task due by then, including tasks those tasks
 * schedule within the window.
 *
 * Example: schedule('a', 100, f); advance(99) runs nothing; advance(1) runs f.
 */
export class ManualGroupTimer implements GroupTimer {
  private time: number;
  private seq = 0;
  private readonly tasks = new Map<string, ManualTask>();
  private closed = false;

  constructor(start = 1_700_000_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  schedule(key: string, delayMs: number, task: () => void): void {
    if (this.closed) return;
    this.tasks.set(key, { deadline: this.time + Math.max(0, delayMs), seq: this.seq++, task });
  }

  cancel(key: string): void {
    this.tasks.delete(key);
  }

  isScheduled(key: string): boolean {
    return this.tasks.has(key);
  }

  cancelAll(): void {
    this.closed = true;
    this.tasks.clear();
  }

  /** Deadline of a key's task, or undefined. */
  deadlineOf(key: string): number | undefined {
    return this.tasks.get(key)?.deadline;
  }

  get keys(): string[] {
    return [...this.tasks.keys()];
  }

  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      let next: [string, ManualTask] | undefined;
      for (const entry of this.tasks) {
        const t = entry[1];
        if (t.deadline > until) continue;
        if (!next || t.deadline < next[1].deadline || (t.deadline === next[1].deadline && t.seq < next[1].seq)) next = entry;
      }
      if (!next) break;
      this.tasks.delete(next[0]);
      this.time = Math.max(this.time, next[1].deadline);
      next[1].task();
    }
    this.time = until;
  }
}

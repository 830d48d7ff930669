/**
 * A cluster of gregor broker processes on a real etcd, for the end-to-end
 * tests of several brokers and the cluster benchmark: each broker keeps its
 * data directory across restarts (and, when asked, its port, as it would on
 * a machine of its own), and close() stops everything and removes the
 * directories. The process helpers are compat-tests/lib's, found from the
 * repository root, so this runs from src/ (vitest) and from dist/ alike.
 *
 * Example:
 *   const c = await TestCluster.start([1, 2, 3], ['broker.session.timeout.ms=2000']);
 *   await c.kill(1); await c.start(1); ... await c.close();
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface TestBroker {
  bootstrap: string;
  host: string;
  port: number;
  pid: number;
  stop(): Promise<number>;
  output(): string;
}

interface Etcd {
  endpoint: string;
  clientPort: number;
  dataDir: string;
  pid: number;
  stop(signal?: string, opts?: { keepData?: boolean }): Promise<void>;
}

/** compat-tests/lib/<name>, from the first folder above this file that has it. */
async function lib<T>(name: string): Promise<T> {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4 && !existsSync(join(dir, 'compat-tests', 'lib', name)); i++) dir = resolve(dir, '..');
  return (await import(pathToFileURL(join(dir, 'compat-tests', 'lib', name)).href)) as T;
}

const { etcdBinary, startEtcd } = await lib<{
  etcdBinary(): string | null;
  startEtcd(o?: { dataDir?: string; clientPort?: number; ownDataDir?: boolean }): Promise<Etcd>;
}>('etcd.mjs');
const { startGregor } = await lib<{ startGregor(o: { dataDir: string; args: string[]; logDirs?: number }): Promise<TestBroker> }>('gregor.mjs');
const { freePort } = await lib<{ freePort(): Promise<number> }>('free-port.mjs');

/** Whether etcd is installed here (the cluster tests skip without it, except under CI). */
export const hasEtcd: boolean = etcdBinary() !== null;

export class TestCluster {
  readonly running = new Map<number, TestBroker>();
  private readonly dirs = new Map<number, string>();
  private readonly ports = new Map<number, number>();
  private readonly paused = new Set<number>();
  private etcdPaused = false;
  private readonly strangers: TestBroker[] = [];
  private readonly strangerDirs: string[] = [];

  private constructor(
    private etcd: Etcd,
    /** `--override` values every broker gets. */
    private readonly overrides: readonly string[],
    private readonly fixedPorts: boolean,
    /** Log directories per broker: `d1`, `d2`, ... in its data directory when above 1. */
    private readonly logDirs: number,
  ) {}

  /** etcd, then the brokers `ids` at once. `fixedPorts`: a broker started again listens on its first port. */
  static async start(ids: readonly number[], overrides: readonly string[], opts: { fixedPorts?: boolean; logDirs?: number } = {}): Promise<TestCluster> {
    const c = new TestCluster(await startEtcd(), overrides, opts.fixedPorts ?? false, opts.logDirs ?? 1);
    // Every start settles before a failure is reported, so that close() stops all that came up.
    const started = await Promise.allSettled(ids.map((id) => c.start(id)));
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) {
      await c.close();
      throw failed.reason;
    }
    return c;
  }

  /** Starts broker `nodeId` (again: on its data directory, and its port when fixed). */
  async start(nodeId: number): Promise<TestBroker> {
    let dir = this.dirs.get(nodeId);
    if (!dir) this.dirs.set(nodeId, (dir = mkdtempSync(join(tmpdir(), `gregor-cluster-${nodeId}-`))));
    const args = ['--broker-id', String(nodeId), '--metadata', `etcd://${this.etcd.endpoint}`];
    if (this.fixedPorts) args.push('--listen', `127.0.0.1:${await this.port(nodeId)}`);
    for (const o of this.overrides) args.push('--override', o);
    const g = await startGregor({ dataDir: dir, args, logDirs: this.logDirs });
    this.running.set(nodeId, g);
    return g;
  }

  /** The port broker `nodeId` listens on, known before it starts (with `fixedPorts`). */
  async port(nodeId: number): Promise<number> {
    let port = this.ports.get(nodeId);
    if (port === undefined) this.ports.set(nodeId, (port = await freePort()));
    return port;
  }

  /**
   * Another broker process under node id `nodeId`, on a data directory of
   * its own, as a second machine given the same node.id by mistake would be;
   * not counted among the running brokers, stopped by close(). `port`: the
   * port it listens on (any free one when absent).
   */
  async startStranger(nodeId: number, port?: number): Promise<TestBroker> {
    const dir = mkdtempSync(join(tmpdir(), `gregor-stranger-${nodeId}-`));
    this.strangerDirs.push(dir);
    const args = ['--broker-id', String(nodeId), '--metadata', `etcd://${this.etcd.endpoint}`];
    if (port !== undefined) args.push('--listen', `127.0.0.1:${port}`);
    for (const o of this.overrides) args.push('--override', o);
    const g = await startGregor({ dataDir: dir, args });
    this.strangers.push(g);
    return g;
  }

  /** SIGKILL, and waits for the exit. */
  async kill(nodeId: number): Promise<void> {
    const g = this.running.get(nodeId)!;
    process.kill(g.pid, 'SIGKILL');
    await g.stop();
    this.running.delete(nodeId);
    this.paused.delete(nodeId);
  }

  /** SIGTERM, and waits for the exit: how long it took, the exit code and what the broker logged. */
  async stop(nodeId: number): Promise<{ ms: number; code: number; output: string }> {
    const g = this.running.get(nodeId)!;
    if (this.paused.delete(nodeId)) process.kill(g.pid, 'SIGCONT');
    const t0 = Date.now();
    const code = await g.stop();
    this.running.delete(nodeId);
    return { ms: Date.now() - t0, code, output: g.output() };
  }

  /** SIGSTOP (`paused` true) or SIGCONT: a broker that stops answering without going away. */
  pause(nodeId: number, paused: boolean): void {
    process.kill(this.running.get(nodeId)!.pid, paused ? 'SIGSTOP' : 'SIGCONT');
    if (paused) this.paused.add(nodeId);
    else this.paused.delete(nodeId);
  }

  /** etcd dies (SIGKILL); its data stays for etcdStart(). */
  async etcdKill(): Promise<void> {
    await this.etcd.stop('SIGKILL', { keepData: true });
  }

  /** etcd again on its data and its address, as after a crash and restart. */
  async etcdStart(): Promise<void> {
    this.etcd = await startEtcd({ dataDir: this.etcd.dataDir, clientPort: this.etcd.clientPort, ownDataDir: true });
  }

  /** SIGSTOP (`paused` true) or SIGCONT to etcd: a metadata store that takes connections and answers nothing. */
  etcdPause(paused: boolean): void {
    process.kill(this.etcd.pid, paused ? 'SIGSTOP' : 'SIGCONT');
    this.etcdPaused = paused;
  }

  /** SIGSTOP or SIGCONT to every running broker at once. */
  pauseAll(paused: boolean): void {
    for (const id of this.running.keys()) this.pause(id, paused);
  }

  /** The address of a running broker. */
  any(): string {
    return this.anyBroker().bootstrap;
  }

  anyBroker(): TestBroker {
    const first = [...this.running.values()][0];
    if (!first) throw new Error('no broker is running');
    return first;
  }

  bootstraps(): string[] {
    return [...this.running.values()].map((g) => g.bootstrap);
  }

  dir(nodeId: number): string {
    return this.dirs.get(nodeId)!;
  }

  /** Stops every broker (a paused one, and a paused etcd, resumed first), then etcd, and removes the data directories. */
  async close(): Promise<void> {
    if (this.etcdPaused) this.etcdPause(false);
    for (const id of this.paused) if (this.running.has(id)) process.kill(this.running.get(id)!.pid, 'SIGCONT');
    await Promise.all([...this.running.values(), ...this.strangers].map((g) => g.stop()));
    this.running.clear();
    for (const d of this.strangerDirs) rmSync(d, { recursive: true, force: true });
    await this.etcd.stop();
    for (const d of this.dirs.values()) rmSync(d, { recursive: true, force: true });
  }
}

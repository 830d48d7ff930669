/**
 * Raw Kafka frames over a plain socket, for tests that talk to a running broker
 * without a client library.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { startBroker, type Broker } from './index.js';

/** ApiVersions v0 request frame: size, api key 18, version 0, correlation id, null client id, empty body. */
export function apiVersionsV0Request(correlationId: number): Buffer {
  const b = Buffer.alloc(4 + 10);
  b.writeInt32BE(10, 0);
  b.writeInt16BE(18, 4);
  b.writeInt16BE(0, 6);
  b.writeInt32BE(correlationId, 8);
  b.writeInt16BE(-1, 12);
  return b;
}

/** Metadata v0 request frame asking for the given topics (v0 may auto-create them). */
export function metadataV0Request(correlationId: number, topics: readonly string[]): Buffer {
  const names = topics.map((t) => Buffer.from(t, 'utf8'));
  const bodySize = 4 + names.reduce((n, t) => n + 2 + t.length, 0);
  const b = Buffer.alloc(4 + 10 + bodySize);
  let at = b.writeInt32BE(10 + bodySize, 0);
  at = b.writeInt16BE(3, at);
  at = b.writeInt16BE(0, at);
  at = b.writeInt32BE(correlationId, at);
  at = b.writeInt16BE(-1, at);
  at = b.writeInt32BE(names.length, at);
  for (const n of names) {
    at = b.writeInt16BE(n.length, at);
    at += n.copy(b, at);
  }
  return b;
}

/** Correlation id of a response frame body (the bytes after the size prefix). */
export function correlationIdOf(body: Buffer): number {
  return body.readInt32BE(0);
}

export interface ApiVersionsV0Response {
  correlationId: number;
  errorCode: number;
  apiKeys: { apiKey: number; minVersion: number; maxVersion: number }[];
}

export function parseApiVersionsV0Response(body: Buffer): ApiVersionsV0Response {
  const correlationId = body.readInt32BE(0);
  const errorCode = body.readInt16BE(4);
  const count = body.readInt32BE(6);
  const apiKeys = [];
  for (let i = 0, at = 10; i < count; i++, at += 6) {
    apiKeys.push({ apiKey: body.readInt16BE(at), minVersion: body.readInt16BE(at + 2), maxVersion: body.readInt16BE(at + 4) });
  }
  return { correlationId, errorCode, apiKeys };
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A socket that splits what it receives into response frames. `events` records
 * frames and the end of the stream in arrival order.
 */
export class FrameClient {
  readonly frames: Buffer[] = [];
  readonly events: string[] = [];
  /** Resolves when the socket has closed, for whatever reason. */
  readonly closed: Promise<void>;
  isClosed = false;
  private pending = Buffer.alloc(0);
  private taken = 0;
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.pending = Buffer.concat([this.pending, chunk]);
      while (this.pending.length >= 4 && this.pending.length >= 4 + this.pending.readInt32BE(0)) {
        const size = this.pending.readInt32BE(0);
        const body = this.pending.subarray(4, 4 + size);
        this.pending = this.pending.subarray(4 + size);
        this.frames.push(body);
        this.events.push(`frame ${correlationIdOf(body)}`);
      }
      this.wake();
    });
    // A reset from the peer shows up as an error; the close that follows is what tests wait for.
    socket.on('error', () => {});
    this.closed = new Promise((resolve) => {
      socket.once('close', () => {
        this.isClosed = true;
        this.events.push('closed');
        this.wake();
        resolve();
      });
    });
  }

  static connect(port: number, host = '127.0.0.1', timeoutMs = 5000): Promise<FrameClient> {
    return withTimeout(
      new Promise<FrameClient>((resolve, reject) => {
        const socket = createConnection({ host, port });
        socket.once('error', reject);
        socket.once('connect', () => {
          socket.off('error', reject);
          resolve(new FrameClient(socket));
        });
      }),
      timeoutMs,
      `a connection to ${host}:${port}`,
    );
  }

  send(frame: Buffer): void {
    this.socket.write(frame);
  }

  /** The next response frame body not yet taken; rejects if the socket closes first. */
  async nextFrame(timeoutMs = 5000): Promise<Buffer> {
    const until = Date.now() + timeoutMs;
    while (this.taken >= this.frames.length) {
      if (this.isClosed) throw new Error(`connection closed after ${this.frames.length} frame(s)`);
      const left = until - Date.now();
      if (left <= 0) throw new Error(`no response frame within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.frames[this.taken++]!;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Resolves with the error code of a connection attempt that fails; rejects if it succeeds. */
export function connectError(port: number, host = '127.0.0.1', timeoutMs = 5000): Promise<string | undefined> {
  return withTimeout(
    new Promise<string | undefined>((resolve, reject) => {
      const socket = createConnection({ host, port });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code));
      socket.once('connect', () => {
        socket.destroy();
        reject(new Error(`connected to ${host}:${port}, expected a refusal`));
      });
    }),
    timeoutMs,
    `a connection attempt to ${host}:${port}`,
  );
}

/** The system interpreter: Debian's Kafka clients (python3-kafka, python3-confluent-kafka) import only there. */
export const SYSTEM_PYTHON = '/usr/bin/python3';

/** Runs a Python snippet with SYSTEM_PYTHON and `args` as sys.argv[1:]; resolves with its exit code and output, never rejects. */
export function runPython(script: string, args: readonly string[], timeoutMs = 30_000): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(SYSTEM_PYTHON, ['-c', script, ...args], { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, out: stdout, err: stderr });
    });
  });
}

/** Polls `check` every 50 ms until it holds; rejects after `ms`, naming `what`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  await withTimeout(
    (async () => {
      while (!(await check())) await new Promise((r) => setTimeout(r, 50));
    })(),
    ms,
    what,
  );
}

/** Settings that make groups quick to form in tests: a small __consumer_offsets and no initial rebalance delay. */
export const QUICK_GROUP_CONFIG: Readonly<Record<string, string>> = {
  'offsets.topic.num.partitions': '5',
  'offsets.topic.replication.factor': '1',
  'group.initial.rebalance.delay.ms': '0',
};

/** Silent in-process brokers on 127.0.0.1:0, each on a temp data dir; stopAll stops them and removes the dirs. */
export class TempBrokers {
  private readonly running: { broker: Broker; dir: string }[] = [];

  constructor(
    private readonly prefix: string,
    private readonly config: Readonly<Record<string, string>> = {},
  ) {}

  async start(): Promise<Broker> {
    const dir = mkdtempSync(join(tmpdir(), this.prefix));
    try {
      const broker = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir, ...this.config }, { log: pino({ level: 'silent' }) });
      this.running.push({ broker, dir });
      return broker;
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  async stopAll(): Promise<void> {
    const all = this.running.splice(0);
    await Promise.all(all.map((r) => r.broker.stop()));
    for (const r of all) rmSync(r.dir, { recursive: true, force: true });
  }
}

const root = fileURLToPath(new URL('..', import.meta.url));
const bundle = join(root, 'dist', 'gregor.cjs');

/**
 * Why dist/gregor.cjs cannot be what a process test runs: missing, or older
 * than a source file bundled into it. Broker processes run the bundle, not
 * these sources, so a stale bundle would test yesterday's broker.
 */
export function bundleProblem(): string | null {
  if (!existsSync(bundle)) return 'dist/gregor.cjs is missing: run `npm run build` before this test';
  const built = statSync(bundle).mtimeMs;
  const newer: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = join(dir, e.name);
      if (e.isDirectory()) {
        if (rel !== join('wire', 'gen') && rel !== join('wire', 'golden')) walk(rel);
      } else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && e.name !== 'test-utils.ts' && statSync(join(root, rel)).mtimeMs > built) {
        newer.push(rel);
      }
    }
  };
  for (const dir of ['src', 'api', 'cluster', 'storage', 'wire']) walk(dir);
  return newer.length > 0 ? `dist/gregor.cjs is older than ${newer.slice(0, 3).join(', ')}${newer.length > 3 ? ', ...' : ''}: run \`npm run build\`` : null;
}

const PROCESS_READY_MS = 10_000;
const PROCESS_STOP_MS = 10_000;

/**
 * A `bin/gregor start` process on 127.0.0.1 (a free port) with `overrides`
 * as --override key=value pairs, and its output. GREGOR_* variables of the
 * test's environment are not passed on.
 */
export class BrokerProcess {
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;
  private out = '';
  private err = '';

  constructor(dataDir: string, overrides: Readonly<Record<string, string>> = {}) {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GREGOR_')) env[k] = v;
    const args = Object.entries(overrides).flatMap(([k, v]) => ['--override', `${k}=${v}`]);
    this.child = spawn(process.execPath, [join(root, 'bin', 'gregor'), 'start', '--listen', '127.0.0.1:0', '--data-dir', dataDir, ...args], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.setEncoding('utf8').on('data', (t: string) => (this.out += t));
    this.child.stderr!.setEncoding('utf8').on('data', (t: string) => (this.err += t));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The bootstrap address (127.0.0.1:port) from the ready line. */
  async ready(): Promise<string> {
    const deadline = Date.now() + PROCESS_READY_MS;
    for (;;) {
      const m = /"msg":"gregor ready"/.test(this.out) ? /"listen":"(127\.0\.0\.1:\d+)"/.exec(this.out) : null;
      if (m) return m[1]!;
      if (!this.running) throw new Error(`gregor exited before it was ready:\n${this.output()}`);
      if (Date.now() > deadline) throw new Error(`gregor not ready within ${PROCESS_READY_MS} ms:\n${this.output()}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Sends `signal` and waits for the exit; the exit code, null when a signal ended it. */
  async stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null> {
    if (this.running) this.child.kill(signal);
    return withTimeout(this.exited, PROCESS_STOP_MS, `gregor to exit on ${signal}`);
  }

  /** From the "logs loaded" line: how many partition logs were opened, and how many of them needed recovery. */
  loaded(): { logs: number; recovered: number } | null {
    const line = this.out.split('\n').find((l) => l.includes('"msg":"logs loaded"'));
    if (!line) return null;
    const { logs, recovered } = JSON.parse(line) as { logs: number; recovered: number };
    return { logs, recovered };
  }

  /** The last 4000 characters of stdout and stderr. */
  output(): string {
    return `${this.out}\n${this.err}`.slice(-4000);
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FrameClient, apiVersionsV0Request, parseApiVersionsV0Response, withTimeout } from './test-utils.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'bin', 'gregor');
const builtCli = join(root, 'dist', 'gregor.cjs');

const READY_MS = 10_000;
const EXIT_MS = 10_000;

type LogLine = { msg: string; [field: string]: unknown };

/** A `bin/gregor` process with its output collected: stdout as JSON log lines, stderr as text. */
class Gregor {
  readonly lines: LogLine[] = [];
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private changed: (() => void)[] = [];

  constructor(args: readonly string[], env: Record<string, string> = {}) {
    const cleanEnv: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GREGOR_')) cleanEnv[k] = v;
    this.child = spawn(process.execPath, [bin, ...args], { cwd: root, env: { ...cleanEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let partial = '';
    this.child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      this.stdout += text;
      partial += text;
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        if (line.startsWith('{')) this.lines.push(JSON.parse(line) as LogLine);
      }
      this.notify();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      this.stderr += text;
    });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.notify();
        resolve({ code, signal });
      });
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first log line with this message; fails if the process exits or time runs out first. */
  async line(msg: string, ms = READY_MS): Promise<LogLine> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.lines.find((l) => l.msg === msg);
      if (found) return found;
      if (!this.running) throw new Error(`gregor exited before logging "${msg}"; stderr: ${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`gregor did not log "${msg}" within ${ms} ms; stdout: ${this.stdout}; stderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.changed.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  ready(): Promise<LogLine> {
    return this.line('gregor ready');
  }

  exit(ms = EXIT_MS): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return withTimeout(this.exited, ms, 'gregor to exit');
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  /** Ends the process whatever state it is in; used after each test. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  private notify(): void {
    const waiters = this.changed;
    this.changed = [];
    for (const w of waiters) w();
  }
}

const processes: Gregor[] = [];
const dirs: string[] = [];
const servers: Server[] = [];

function gregor(args: readonly string[], env?: Record<string, string>): Gregor {
  const g = new Gregor(args, env);
  processes.push(g);
  return g;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gregor-cli-'));
  dirs.push(dir);
  return dir;
}

function portOf(hostPort: unknown): number {
  const m = /^127\.0\.0\.1:(\d+)$/.exec(String(hostPort));
  if (!m) throw new Error(`not a 127.0.0.1 address: ${String(hostPort)}`);
  return Number(m[1]);
}

/** A running broker on a fresh port and the given data directory; returns its ready line. */
async function startOn(dataDir: string, ...more: string[]): Promise<{ g: Gregor; ready: LogLine }> {
  const g = gregor(['start', '--listen', '127.0.0.1:0', '--data-dir', dataDir, ...more]);
  return { g, ready: await g.ready() };
}

async function stop(g: Gregor): Promise<void> {
  g.signal('SIGTERM');
  expect(await g.exit()).toEqual({ code: 0, signal: null });
}

/** The process must fail on its own: non-zero exit, never ready, stderr naming the problem. */
async function expectRefusal(g: Gregor, ...stderrParts: string[]): Promise<void> {
  const { code } = await g.exit();
  expect(code).not.toBe(0);
  expect(code).not.toBeNull();
  expect(g.stdout).not.toContain('gregor ready');
  for (const part of stderrParts) expect(g.stderr).toContain(part);
}

beforeAll(() => {
  if (!existsSync(builtCli)) throw new Error(`${builtCli} is missing: run \`npm run build\` before these tests`);
});

afterEach(async () => {
  await Promise.all(processes.splice(0).map((g) => g.kill()));
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('gregor start', () => {
  it('logs a ready line with the real port and the data directory, and serves on that port', async () => {
    const dataDir = tempDir();
    const { g, ready } = await startOn(dataDir);
    const port = portOf(ready.listen);
    expect(port).toBeGreaterThan(0);
    expect(ready.dataDir).toBe(dataDir);
    expect(ready.advertise).toBe(ready.listen);
    expect(ready.nodeId).toBe(1);
    expect(ready.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);

    const c = await FrameClient.connect(port);
    try {
      c.send(apiVersionsV0Request(42));
      const res = parseApiVersionsV0Response(await c.nextFrame());
      expect(res.correlationId).toBe(42);
      expect(res.errorCode).toBe(0);
    } finally {
      c.destroy();
    }
    await stop(g);
  });

  it.each<NodeJS.Signals>(['SIGTERM', 'SIGINT'])('on %s shuts down, logs "stopped" and exits 0', async (sig) => {
    const { g, ready } = await startOn(tempDir());
    expect(portOf(ready.listen)).toBeGreaterThan(0);
    g.signal(sig);
    expect(await g.exit()).toEqual({ code: 0, signal: null });
    const msgs = g.lines.map((l) => l.msg);
    expect(msgs.indexOf('shutting down')).toBeGreaterThan(msgs.indexOf('gregor ready'));
    expect(msgs.indexOf('stopped')).toBeGreaterThan(msgs.indexOf('shutting down'));
    expect(g.lines.find((l) => l.msg === 'shutting down')).toMatchObject({ signal: sig });
    expect(g.stderr).toBe('');
  });
});

describe('gregor start refuses to start', () => {
  it.each<[string, string[], string[]]>([
    ['an unknown flag', ['--nope'], ['unknown option', '--nope']],
    ['a flag without its value', ['--data-dir'], ['--data-dir needs a value']],
    ['an unknown config key', ['--override', 'no.such.key=1'], ['unknown config key', 'no.such.key']],
    ['a bad value', ['--override', 'num.partitions=abc'], ['num.partitions=abc', 'whole number']],
    ['a bad --listen', ['--listen', 'nohost'], ['--listen needs HOST:PORT']],
    ['a non-numeric --broker-id', ['--broker-id', 'one'], ['--broker-id', '"one"']],
  ])('on %s', async (_, args, stderrParts) => {
    const dataDir = tempDir();
    const g = gregor(['start', '--listen', '127.0.0.1:0', '--data-dir', dataDir, ...args]);
    await expectRefusal(g, ...stderrParts);
    expect(existsSync(join(dataDir, 'meta.properties'))).toBe(false);
  });

  it('on a port in use, and leaves the data directory free for the next broker', async () => {
    const taken = createServer();
    servers.push(taken);
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as { port: number }).port;
    const dataDir = tempDir();

    const g = gregor(['start', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir]);
    await expectRefusal(g, `127.0.0.1:${port}`, 'already in use');
    expect(existsSync(join(dataDir, '.lock'))).toBe(false);
    expect(existsSync(join(dataDir, 'meta.properties'))).toBe(false);

    const { g: next, ready } = await startOn(dataDir);
    expect(ready.dataDir).toBe(dataDir);
    await stop(next);
  });

  it('on a data directory another broker is using', async () => {
    const dataDir = tempDir();
    const { g: first, ready } = await startOn(dataDir);
    const second = gregor(['start', '--listen', '127.0.0.1:0', '--data-dir', dataDir]);
    await expectRefusal(second, dataDir, 'in use');

    // The first broker is unaffected.
    const c = await FrameClient.connect(portOf(ready.listen));
    try {
      c.send(apiVersionsV0Request(1));
      expect(parseApiVersionsV0Response(await c.nextFrame()).correlationId).toBe(1);
    } finally {
      c.destroy();
    }
    await stop(first);
  });

  it('on a data directory created for another broker id, and leaves it usable by its own', async () => {
    const dataDir = tempDir();
    const { g: first } = await startOn(dataDir, '--broker-id', '1');
    await stop(first);

    const other = gregor(['start', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--broker-id', '2']);
    await expectRefusal(other, dataDir, 'node.id 1', 'node.id 2');
    expect(existsSync(join(dataDir, '.lock'))).toBe(false);

    const { g: again, ready } = await startOn(dataDir, '--broker-id', '1');
    expect(ready.nodeId).toBe(1);
    await stop(again);
  });
});

describe('gregor start with several log directories', () => {
  /** A log that cannot be opened: its segment file is a directory. */
  const brokenLogIn = (dir: string) => mkdirSync(join(dir, 'orders-0', '00000000000000000000.log'), { recursive: true });

  it('starts without a directory other than the first that it cannot use, and refuses when it is the first', async () => {
    const [d1, d2] = [tempDir(), tempDir()];
    brokenLogIn(d2);
    const { g, ready } = await startOn(`${d1},${d2}`);
    expect(ready.dataDir).toBe(d1);
    await stop(g);

    const [e1, e2] = [tempDir(), tempDir()];
    brokenLogIn(e1);
    const refused = gregor(['start', '--listen', '127.0.0.1:0', '--data-dir', `${e1},${e2}`]);
    await expectRefusal(refused, e1, 'first of log.dirs');
  });
});

describe('gregor start configuration', () => {
  it('reads --config FILE', async () => {
    const dir = tempDir();
    const file = join(dir, 'server.properties');
    writeFileSync(file, `# test broker\nnode.id=7\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=${join(dir, 'data')}\n`);
    const g = gregor(['start', '--config', file]);
    const ready = await g.ready();
    expect(ready.nodeId).toBe(7);
    expect(ready.dataDir).toBe(join(dir, 'data'));
    expect(portOf(ready.listen)).toBeGreaterThan(0);
    await stop(g);
  });

  it('lets the environment override the file and flags override both', async () => {
    const dir = tempDir();
    const file = join(dir, 'server.properties');
    writeFileSync(file, `node.id=7\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=${join(dir, 'from-file')}\n`);

    const fromEnv = gregor(['start', '--config', file], { GREGOR_NODE_ID: '8', GREGOR_LOG_DIRS: join(dir, 'from-env') });
    expect(await fromEnv.ready()).toMatchObject({ nodeId: 8, dataDir: join(dir, 'from-env') });
    await stop(fromEnv);

    const fromFlags = gregor(['start', '--config', file, '--broker-id', '9', '--data-dir', join(dir, 'from-flags')], { GREGOR_NODE_ID: '8' });
    expect(await fromFlags.ready()).toMatchObject({ nodeId: 9, dataDir: join(dir, 'from-flags') });
    await stop(fromFlags);
  });

  it('names the config file when a key in it is unknown', async () => {
    const dir = tempDir();
    const file = join(dir, 'server.properties');
    writeFileSync(file, 'num.partition=3\n');
    await expectRefusal(gregor(['start', '--config', file, '--listen', '127.0.0.1:0', '--data-dir', dir]), 'num.partition', file);
  });

  it('refuses a config file that does not exist', async () => {
    const missing = join(tempDir(), 'nope.properties');
    await expectRefusal(gregor(['start', '--config', missing, '--listen', '127.0.0.1:0', '--data-dir', tempDir()]), missing);
  });
});

describe('gregor restart', () => {
  it('keeps the cluster id of its data directory', async () => {
    const dataDir = tempDir();
    const { g: first, ready: a } = await startOn(dataDir);
    await stop(first);
    const { g: second, ready: b } = await startOn(dataDir);
    expect(b.clusterId).toBe(a.clusterId);
    await stop(second);

    const { g: elsewhere, ready: c } = await startOn(tempDir());
    expect(c.clusterId).not.toBe(a.clusterId);
    await stop(elsewhere);
  });
});

describe('the built bundle', () => {
  it('loads with the code cache the build wrote beside it, which V8 accepts', async () => {
    // A child process, as bin/gregor runs: the test runner's own flags must not decide.
    const probe = `const { loadBundle } = require(${JSON.stringify(join(root, 'bin', 'load-bundle.cjs'))});
const { exports, script } = loadBundle();
console.log(JSON.stringify({ rejected: script.cachedDataRejected ?? null, main: typeof exports.main }));`;
    const { execFileSync } = await import('node:child_process');
    const out = JSON.parse(execFileSync(process.execPath, ['-e', probe], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } }).trim()) as { rejected: boolean | null; main: string };
    expect(out).toEqual({ rejected: false, main: 'function' });
  });
});

/**
 * Start-up and idle-memory benchmark of the broker process.
 *
 *   npm run build && node dist/bench/startup.js [--runs N]
 *
 * Each run starts `node bin/gregor start` on a fresh temporary data directory and
 * a free loopback port, and measures:
 *   - spawn -> answer: wall-clock time, taken by this process, from spawning the
 *     broker to the first correct ApiVersions v0 answer on its port;
 *   - startupMs: the figure the broker itself logs in its "gregor ready" line;
 *   - idle RSS: VmRSS from /proc/<pid>/status, 1 s after the answer, no connections;
 *   - RSS after load: VmRSS once 100 connections (10 at a time) have each done
 *     ApiVersions v0 + Metadata v12 and closed.
 * The same run measures a floor for comparison: a `node -e` TCP server that answers
 * those requests with the very bytes the broker sent, timed the same way, and
 * franz-go's kfake (a Go binary, no data directory) the same way. One untimed
 * warm-up of each comes first. Goals are reported, never enforced.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { arch, cpus, platform, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { KFAKE_INSTALL, kfakePath, repoRoot, rssMb, startKafka, startKfake } from './brokers.js';
import type { BenchModule, BenchRow } from './report.js';

const GOAL_READY_MS = 100;
const GOAL_IDLE_RSS_MB = 60;
const LOAD_CONNECTIONS = 100;
const LOAD_CONCURRENCY = 10;
const IDLE_WAIT_MS = 1000;
const ANSWER_LIMIT_MS = 15000;

// ---------------------------------------------------------------- process bookkeeping

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

function cleanup(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  tempDirs.clear();
}

process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}


// ---------------------------------------------------------------- wire bytes

function frame(body: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

function header(apiKey: number, version: number, correlationId: number, clientId: string): Buffer {
  const b = Buffer.alloc(10 + Buffer.byteLength(clientId));
  b.writeInt16BE(apiKey, 0);
  b.writeInt16BE(version, 2);
  b.writeInt32BE(correlationId, 4);
  b.writeInt16BE(Buffer.byteLength(clientId), 8);
  b.write(clientId, 10);
  return b;
}

/** ApiVersions v0: request header v1 and an empty body. */
const apiVersionsV0 = (corr: number): Buffer => frame(header(18, 0, corr, 'bench'));

/** Metadata v12 for all topics: header v2 (empty tags), null topics, two false flags, empty tags. */
const metadataV12 = (corr: number): Buffer => frame(Buffer.concat([header(3, 12, corr, 'bench'), Buffer.from([0, 0, 0, 0, 0])]));

/** Returns why `res` (without size prefix) is not a good ApiVersions v0 answer, or null. */
function apiVersionsProblem(res: Buffer, corr: number): string | null {
  if (res.length < 10) return `${res.length}-byte response`;
  if (res.readInt32BE(0) !== corr) return `correlation id ${res.readInt32BE(0)}, sent ${corr}`;
  if (res.readInt16BE(4) !== 0) return `error code ${res.readInt16BE(4)}`;
  const count = res.readInt32BE(6);
  if (count <= 0 || res.length !== 10 + 6 * count) return `api_keys count ${count} in ${res.length} bytes`;
  return null;
}

function metadataProblem(res: Buffer, corr: number): string | null {
  if (res.length < 5) return `${res.length}-byte response`;
  if (res.readInt32BE(0) !== corr) return `correlation id ${res.readInt32BE(0)}, sent ${corr}`;
  return null;
}

// ---------------------------------------------------------------- client side

interface Exchange {
  answers: Buffer[];
  /** performance.now() when the last answer was complete. */
  answeredAt: number;
}

/** One connection: sends each frame, waits for its answer, then closes and waits for the close. */
function exchange(port: number, frames: readonly Buffer[], timeoutMs: number): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true });
    const answers: Buffer[] = [];
    let answeredAt = 0;
    let pending = Buffer.alloc(0);
    let settled = false;
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const finish = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        socket.destroy();
        reject(err);
      } else resolve({ answers, answeredAt });
    };
    socket.on('error', (err) => finish(err));
    socket.on('connect', () => socket.write(frames[0]!));
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const size = pending.readInt32BE(0);
        answers.push(pending.subarray(4, 4 + size));
        pending = pending.subarray(4 + size);
        if (answers.length < frames.length) socket.write(frames[answers.length]!);
        else {
          answeredAt = performance.now();
          socket.end();
        }
      }
    });
    socket.on('close', () => {
      if (answers.length === frames.length) finish(null);
      else finish(new Error(`connection closed after ${answers.length} of ${frames.length} answers`));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let nextCorr = 1;

/** Polls the port until it answers ApiVersions v0 correctly; returns that answer and when it came. */
async function firstAnswer(port: number, proc: ChildProcess | null, t0: number, what: string): Promise<{ at: number; res: Buffer }> {
  for (;;) {
    if (proc && (proc.exitCode !== null || proc.signalCode !== null)) throw new Error(`${what} exited (${proc.exitCode ?? proc.signalCode}) before answering`);
    if (performance.now() - t0 > ANSWER_LIMIT_MS) throw new Error(`${what} did not answer within ${ANSWER_LIMIT_MS} ms`);
    const corr = nextCorr++;
    try {
      const { answers, answeredAt } = await exchange(port, [apiVersionsV0(corr)], 2000);
      const problem = apiVersionsProblem(answers[0]!, corr);
      if (problem) throw new Error(`${what} answered ApiVersions v0 wrongly: ${problem}`);
      return { at: answeredAt, res: answers[0]! };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ECONNREFUSED' && code !== 'ECONNRESET') throw err;
      await sleep(1);
    }
  }
}

/** LOAD_CONNECTIONS connections, LOAD_CONCURRENCY at a time, each ApiVersions v0 + Metadata v12. */
async function load(port: number, what: string): Promise<Buffer> {
  let left = LOAD_CONNECTIONS;
  let metadataAnswer: Buffer = Buffer.alloc(0);
  const worker = async (): Promise<void> => {
    while (left-- > 0) {
      const c1 = nextCorr++;
      const c2 = nextCorr++;
      const { answers } = await exchange(port, [apiVersionsV0(c1), metadataV12(c2)], 5000);
      const problem = apiVersionsProblem(answers[0]!, c1) ?? metadataProblem(answers[1]!, c2);
      if (problem) throw new Error(`${what} answered wrongly under load: ${problem}`);
      metadataAnswer = answers[1]!;
    }
  };
  await Promise.all(Array.from({ length: LOAD_CONCURRENCY }, worker));
  return metadataAnswer;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function stop(proc: ChildProcess): Promise<number | string | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode ?? proc.signalCode;
  const exited = new Promise<number | string | null>((r) => proc.once('exit', (code, signal) => r(code ?? signal)));
  proc.kill('SIGTERM');
  const timeout = sleep(5000).then(() => 'timeout' as const);
  const result = await Promise.race([exited, timeout]);
  if (result === 'timeout') {
    proc.kill('SIGKILL');
    await exited;
    return 'killed after 5 s';
  }
  children.delete(proc);
  return result;
}

// ---------------------------------------------------------------- the two subjects

interface Sample {
  answerMs: number;
  startupMs: number;
  idleRssMb: number;
  loadedRssMb: number;
}

/** Environment without GREGOR_* variables, which the broker reads as configuration. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GREGOR_')));
}

async function runGregor(root: string): Promise<{ sample: Sample; apiVersionsBody: Buffer; metadataBody: Buffer }> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-bench-'));
  tempDirs.add(dataDir);
  const t0 = performance.now();
  const proc = spawn(process.execPath, [join(root, 'bin', 'gregor'), 'start', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: cleanEnv(),
  });
  children.add(proc);
  try {
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    let out = '';
    const ready = new Promise<number>((resolve) => {
      proc.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        let nl: number;
        while ((nl = out.indexOf('\n')) >= 0) {
          const line = out.slice(0, nl);
          out = out.slice(nl + 1);
          try {
            const parsed = JSON.parse(line) as { msg?: string; startupMs?: number };
            if (parsed.msg === 'gregor ready') resolve(Number(parsed.startupMs));
          } catch {
            // not a log line
          }
        }
      });
    });
    const first = await firstAnswer(port, proc, t0, 'gregor').catch((err: Error) => {
      throw new Error(`${err.message}${stderr ? `; stderr: ${stderr.trim()}` : ''}`);
    });
    const startupMs = await Promise.race([ready, sleep(5000).then(() => NaN)]);
    await sleep(IDLE_WAIT_MS);
    const idleRssMb = rssMb(proc.pid!);
    const metadata = await load(port, 'gregor');
    const loadedRssMb = rssMb(proc.pid!);
    const exit = await stop(proc);
    if (exit !== 0) console.error(`warning: gregor exited with ${exit} on SIGTERM${stderr ? `; stderr: ${stderr.trim()}` : ''}`);
    return {
      sample: { answerMs: first.at - t0, startupMs, idleRssMb, loadedRssMb },
      apiVersionsBody: first.res.subarray(4),
      metadataBody: metadata.subarray(4),
    };
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    children.delete(proc);
    rmSync(dataDir, { recursive: true, force: true });
    tempDirs.delete(dataDir);
  }
}

/**
 * Node's floor: a TCP server that frames requests and answers ApiVersions and
 * Metadata with the broker's own response bytes, the correlation id patched in.
 */
const FLOOR_SCRIPT = `
const net = require('node:net');
const port = Number(process.argv[1]);
const canned = { 18: Buffer.from(process.argv[2], 'hex'), 3: Buffer.from(process.argv[3], 'hex') };
net.createServer({ noDelay: true }, (s) => {
  let buf = Buffer.alloc(0);
  s.on('error', () => {});
  s.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 8 && buf.length >= 4 + buf.readInt32BE(0)) {
      const size = buf.readInt32BE(0);
      const body = canned[buf.readInt16BE(4)];
      const corr = buf.readInt32BE(8);
      buf = buf.subarray(4 + size);
      if (!body) return void s.destroy();
      const out = Buffer.alloc(8 + body.length);
      out.writeInt32BE(4 + body.length, 0);
      out.writeInt32BE(corr, 4);
      body.copy(out, 8);
      s.write(out);
    }
  });
}).listen(port, '127.0.0.1');
`;

async function runFloor(apiVersionsBody: Buffer, metadataBody: Buffer): Promise<Sample> {
  const port = await freePort();
  const t0 = performance.now();
  const proc = spawn(process.execPath, ['-e', FLOOR_SCRIPT, String(port), apiVersionsBody.toString('hex'), metadataBody.toString('hex')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(proc);
  try {
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const first = await firstAnswer(port, proc, t0, 'node -e server').catch((err: Error) => {
      throw new Error(`${err.message}${stderr ? `; stderr: ${stderr.trim()}` : ''}`);
    });
    await sleep(IDLE_WAIT_MS);
    const idleRssMb = rssMb(proc.pid!);
    await load(port, 'node -e server');
    const loadedRssMb = rssMb(proc.pid!);
    await stop(proc);
    return { answerMs: first.at - t0, startupMs: NaN, idleRssMb, loadedRssMb };
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    children.delete(proc);
  }
}

/** franz-go's kfake, a Go binary: spawn to its first ApiVersions answer, then the same RSS figures. */
async function runKfake(): Promise<Sample> {
  const t0 = performance.now();
  const k = await startKfake();
  if (!k) throw new Error(KFAKE_INSTALL);
  try {
    const first = await firstAnswer(k.port, null, t0, 'kfake');
    await sleep(IDLE_WAIT_MS);
    const idleRssMb = rssMb(k.pid);
    await load(k.port, 'kfake');
    return { answerMs: first.at - t0, startupMs: NaN, idleRssMb, loadedRssMb: rssMb(k.pid) };
  } finally {
    await k.stop();
  }
}

// ---------------------------------------------------------------- report

function stats(values: readonly number[]): { min: number; median: number; max: number } {
  const v = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return { min: NaN, median: NaN, max: NaN };
  const mid = v.length >> 1;
  return { min: v[0]!, median: v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2, max: v[v.length - 1]! };
}

const fmt = (n: number, digits = 1): string => (Number.isNaN(n) ? 'n/a' : n.toFixed(digits));

function parseRuns(argv: readonly string[]): number {
  let runs = 10;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--runs' || arg.startsWith('--runs=')) {
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (value === undefined || !/^\d+$/.test(value) || Number(value) < 1) throw new Error(`--runs needs a whole number of at least 1, not "${value ?? ''}"`);
      runs = Number(value);
    } else if (arg === '--help' || arg === '-h') {
      console.log('usage: node dist/bench/startup.js [--runs N]   (default 10)');
      process.exit(0);
    } else throw new Error(`unknown argument "${arg}"; usage: node dist/bench/startup.js [--runs N]`);
  }
  return runs;
}

/** The repository root, once dist/ is known to be built. */
function builtRoot(): string {
  const root = repoRoot();
  if (!existsSync(join(root, 'dist', 'gregor.cjs'))) throw new Error('dist/ is not built; run `npm run build` first');
  return root;
}

/**
 * One untimed warm-up of each subject (it also records the broker's answers,
 * which the floor server replays), then `runs` runs of the broker and the
 * floor, alternating so that both see the same machine load.
 */
async function measure(root: string, runs: number, onRun?: (i: number) => void): Promise<{ gregor: Sample[]; floor: Sample[] }> {
  const warm = await runGregor(root);
  await runFloor(warm.apiVersionsBody, warm.metadataBody);
  const gregor: Sample[] = [];
  const floor: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    gregor.push((await runGregor(root)).sample);
    floor.push(await runFloor(warm.apiVersionsBody, warm.metadataBody));
    onRun?.(i);
  }
  return { gregor, floor };
}

/** Start-up and idle memory as BenchRows: medians over 3 runs (quick) or 10 (full), gregor beside the node floor and, when asked, Kafka. */
export const run: BenchModule = async (opts) => {
  try {
    const runs = opts.quick ? 3 : 10;
    const { gregor, floor } = await measure(builtRoot(), runs);
    const med = (xs: Sample[], f: (s: Sample) => number): number => stats(xs.map(f)).median;
    const note = `median of ${runs} runs`;
    const rows: BenchRow[] = [];
    const add = (scenario: string, subject: string, value: number, unit: string, rowNote = note): void => {
      rows.push({ module: 'startup', scenario, subject, value, unit, better: 'lower', note: rowNote });
    };
    add('process start to first answer', 'gregor', med(gregor, (s) => s.answerMs), 'ms');
    add('process start to first answer', 'node -e floor', med(floor, (s) => s.answerMs), 'ms');
    add('idle RSS', 'gregor', med(gregor, (s) => s.idleRssMb), 'MB');
    add('idle RSS', 'node -e floor', med(floor, (s) => s.idleRssMb), 'MB');
    add(`RSS after ${LOAD_CONNECTIONS} connections`, 'gregor', med(gregor, (s) => s.loadedRssMb), 'MB');
    add(`RSS after ${LOAD_CONNECTIONS} connections`, 'node -e floor', med(floor, (s) => s.loadedRssMb), 'MB');
    if (opts.kfake !== false) {
      if (kfakePath() === null) {
        opts.log(`kfake: ${KFAKE_INSTALL}`);
        add('process start to first answer', 'kfake', NaN, 'ms', `MISSING: ${KFAKE_INSTALL}`);
      } else {
        await runKfake(); // untimed warm-up, as for the others
        const kfake: Sample[] = [];
        for (let i = 0; i < runs; i++) kfake.push(await runKfake());
        add('process start to first answer', 'kfake', med(kfake, (s) => s.answerMs), 'ms');
        add('idle RSS', 'kfake', med(kfake, (s) => s.idleRssMb), 'MB');
        add(`RSS after ${LOAD_CONNECTIONS} connections`, 'kfake', med(kfake, (s) => s.loadedRssMb), 'MB');
      }
    }
    if (opts.kafka) {
      const t0 = performance.now();
      const kafka = await startKafka();
      const readyMs = performance.now() - t0;
      try {
        await new Promise((r) => setTimeout(r, IDLE_WAIT_MS));
        const kafkaNote = 'one run; from spawning the storage formatter to the first ApiVersions answer';
        add('process start to first answer', kafka.name, readyMs, 'ms', kafkaNote);
        if (kafka.pid !== null) add('idle RSS', kafka.name, rssMb(kafka.pid), 'MB', 'one run; the JVM');
      } finally {
        await kafka.stop();
      }
    }
    return rows;
  } finally {
    cleanup();
  }
};

async function main(): Promise<void> {
  const runs = parseRuns(process.argv.slice(2));
  const root = builtRoot();
  const cpu = cpus();
  console.log(`gregor start-up benchmark: ${runs} runs (after one untimed warm-up of each subject)`);
  console.log(`node ${process.version}, ${platform()} ${arch()}, ${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown'}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory`);
  const { gregor, floor } = await measure(root, runs, (i) => {
    if (process.stderr.isTTY) process.stderr.write(`run ${i + 1}/${runs} done\r`);
  });
  if (process.stderr.isTTY) process.stderr.write('\n');

  const rows: [string, number[], number][] = [
    ['gregor spawn -> answer (ms)', gregor.map((s) => s.answerMs), 0],
    ['gregor startupMs, self-reported', gregor.map((s) => s.startupMs), 0],
    ['gregor idle RSS (MB)', gregor.map((s) => s.idleRssMb), 1],
    [`gregor RSS after ${LOAD_CONNECTIONS} conns (MB)`, gregor.map((s) => s.loadedRssMb), 1],
    ['node -e floor spawn -> answer (ms)', floor.map((s) => s.answerMs), 0],
    ['node -e floor idle RSS (MB)', floor.map((s) => s.idleRssMb), 1],
    [`node -e floor RSS after ${LOAD_CONNECTIONS} conns (MB)`, floor.map((s) => s.loadedRssMb), 1],
  ];
  const width = Math.max(...rows.map((r) => r[0].length));
  console.log('');
  console.log(`${'figure'.padEnd(width)}  ${'min'.padStart(7)}  ${'median'.padStart(7)}  ${'max'.padStart(7)}`);
  for (const [label, values, digits] of rows) {
    const s = stats(values);
    console.log(`${label.padEnd(width)}  ${fmt(s.min, digits).padStart(7)}  ${fmt(s.median, digits).padStart(7)}  ${fmt(s.max, digits).padStart(7)}`);
  }

  const med = (xs: Sample[], f: (s: Sample) => number): number => stats(xs.map(f)).median;
  const ratio = (f: (s: Sample) => number): string => `${fmt(med(gregor, f) / med(floor, f), 2)}x`;
  console.log('');
  console.log(`gregor / node floor, medians: spawn -> answer ${ratio((s) => s.answerMs)}, idle RSS ${ratio((s) => s.idleRssMb)}, RSS after load ${ratio((s) => s.loadedRssMb)}`);
  const answer = med(gregor, (s) => s.answerMs);
  const idle = med(gregor, (s) => s.idleRssMb);
  const verdict = (ok: boolean): string => (ok ? 'meets the goal' : 'MISSES the goal');
  console.log(`goal: ready in ${GOAL_READY_MS} ms or less: median spawn -> answer ${fmt(answer, 0)} ms ${verdict(answer <= GOAL_READY_MS)}`);
  console.log(`goal: idle RSS ${GOAL_IDLE_RSS_MB} MB or less: median idle RSS ${fmt(idle)} MB ${verdict(idle <= GOAL_IDLE_RSS_MB)}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main().then(
  () => cleanup(),
  (err: unknown) => {
    cleanup();
    console.error(`bench/startup: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);

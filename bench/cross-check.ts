/**
 * Cross-check: throughput figures from load generators that are not ours,
 * so that the other benchmarks' figures do not rest on cluster/kafka-connection.ts
 * alone. Each tool is run against gregor and (with --full) against the
 * reference Apache Kafka broker, on a fresh broker per subject, each tool on
 * its own topic of one partition made beforehand.
 *
 *   node dist/bench/cross-check.js [--quick | --full] [--no-kafka]
 *
 * Tools:
 *   - kcat (librdkafka): `kcat -P -X acks=1 -X linger.ms=5` reading N lines of
 *     100 B on its standard input from a file made before the clock starts
 *     (a file named as an argument would be sent as one message), then `kcat -C -e -o
 *     beginning -q`, its output's lines counted; wall time of each process,
 *     start-up included. The consume runs twice: with librdkafka's defaults, and
 *     with `queued.min.messages=1000000`. With the default (100,000), a broker
 *     that answers faster than kcat writes its output fills librdkafka's local
 *     queue, and librdkafka then waits a fixed second before it fetches again
 *     (confluentinc/librdkafka#2879), so the default figure measures that pause
 *     as much as the broker. Quick mode: 200,000 records, gregor only; full:
 *     1,000,000.
 *   - Kafka's own ProducerPerformance and ConsumerPerformance
 *     (org.apache.kafka.tools, resolved by bench/kafka-tools/run install),
 *     full mode only because every JVM start costs about a second: the figures
 *     are the tools' own summary lines (records/s, MB/s, average and maximum
 *     latency; for the consumer nMsg.sec and fetch.nMsg.sec, the latter
 *     without the time to join the group).
 * A tool that is missing gives a row with value NaN and a note saying how to
 * install it; the other tools still run.
 *
 * Example: `const rows = await run({ quick: false, kafka: true, log: console.log })`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startGregor, startKafka, type RunningBroker } from './brokers.js';
import { type BenchModule, type BenchOptions, type BenchRow, runStandalone } from './report.js';
import { createTopics, loadNote, waitForLeaders } from './scale.js';
import { WireConnection } from '../cluster/inter-broker/kafka-connection.js';

const MODULE = 'cross-check';
const RECORD_BYTES = 100;
const KCAT_QUICK = 200_000;
const KCAT_FULL = 1_000_000;
const PERF_RECORDS = 1_000_000;
const KCAT_TIMEOUT_MS = 120_000;
const JVM_TIMEOUT_MS = 300_000;
const KCAT_INSTALL = 'kcat missing: install it with `apt-get install -y kcat` (compat-tests/kcat/run install)';

interface Finished {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly ms: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Newlines seen on stdout (counted even when stdout is not kept). */
  readonly lines: number;
  readonly timedOut: boolean;
}

/**
 * Runs a command, timing it from spawn to exit; kills it (SIGKILL, by its
 * pid) after `timeoutMs`. With `keepStdout` false only the lines are counted.
 */
function runTimed(cmd: string, args: readonly string[], timeoutMs: number, keepStdout: boolean, stdinFile?: string): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const stdin = stdinFile === undefined ? 'ignore' : openSync(stdinFile, 'r');
    const start = process.hrtime.bigint();
    let child: ChildProcess;
    try {
      child = spawn(cmd, args, { stdio: [stdin, 'pipe', 'pipe'], cwd: repoRoot() });
    } finally {
      // The child has its own copy of the descriptor now.
      if (typeof stdin === 'number') closeSync(stdin);
    }
    let stdout = '';
    let stderr = '';
    let lines = 0;
    let timedOut = false;
    const { stdout: out, stderr: err } = child;
    if (!out || !err) {
      child.kill('SIGKILL');
      reject(new Error(`${cmd}: no pipes to read its output from`));
      return;
    }
    out.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      if (keepStdout && stdout.length < 1 << 20) stdout += chunk.toString('utf8');
    });
    err.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-8192);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, ms: Number(process.hrtime.bigint() - start) / 1e6, stdout, stderr, lines, timedOut });
    });
  });
}

function failure(f: Finished, what: string): string | null {
  if (f.timedOut) return `${what} killed after ${f.ms.toFixed(0)} ms`;
  if (f.code !== 0) return `${what} exited ${f.code ?? f.signal}: ${lastLines(f.stderr, 3)}`;
  return null;
}

function lastLines(text: string, n: number): string {
  return text.trim().split('\n').slice(-n).join(' | ');
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function kcatPath(): string | null {
  for (const dir of (process.env['PATH'] ?? '/usr/bin').split(':')) {
    if (dir && existsSync(join(dir, 'kcat'))) return join(dir, 'kcat');
  }
  return null;
}

async function kafkaToolsReady(): Promise<string | null> {
  const script = join(repoRoot(), 'bench', 'kafka-tools', 'run');
  try {
    const f = await runTimed('bash', [script, 'check'], 60_000, true);
    return f.code === 0 ? null : f.stdout.trim() || lastLines(f.stderr, 2);
  } catch (err) {
    return messageOf(err);
  }
}

async function makeTopic(broker: RunningBroker, topic: string): Promise<void> {
  const conn = await WireConnection.open(broker.host, broker.port);
  try {
    const failed = await createTopics(conn, [topic], 1);
    if (failed.length > 0) throw new Error(`CreateTopics ${topic} on ${broker.name}: ${failed.join('; ')}`);
    await waitForLeaders(conn, [topic], 1);
  } finally {
    conn.close();
  }
}

// ---------------------------------------------------------------- kcat

async function kcatRows(kcat: string, broker: RunningBroker, records: number, file: string, opts: BenchOptions): Promise<BenchRow[]> {
  const topic = 'xc-kcat';
  await makeTopic(broker, topic);
  const label = `${records.toLocaleString('en-US')} x ${RECORD_BYTES} B, 1 partition`;
  const base = { module: MODULE, subject: broker.name, unit: 'records/s', better: 'higher' as const };

  opts.log(`cross-check: ${broker.name}: kcat producing ${records} records`);
  const produce = await runTimed(kcat, ['-P', '-b', broker.bootstrap, '-t', topic, '-p', '0', '-X', 'acks=1', '-X', 'linger.ms=5'], KCAT_TIMEOUT_MS, false, file);
  const produceFailed = failure(produce, 'kcat -P');
  const produceLoad = loadNote();
  opts.log(`cross-check: ${broker.name}: kcat consuming`);
  const consume = await runTimed(kcat, ['-C', '-b', broker.bootstrap, '-t', topic, '-e', '-o', 'beginning', '-q'], KCAT_TIMEOUT_MS, false);
  const consumeLoad = loadNote();
  opts.log(`cross-check: ${broker.name}: kcat consuming with queued.min.messages=1000000`);
  const bigQueue = await runTimed(kcat, ['-C', '-b', broker.bootstrap, '-t', topic, '-e', '-o', 'beginning', '-q', '-X', 'queued.min.messages=1000000'], KCAT_TIMEOUT_MS, false);
  const deliveryErrors = (produce.stderr.match(/Delivery failed|ERROR/gi) ?? []).length;
  const consumeRow = (scenario: string, run: Finished, load: string): BenchRow => {
    const failed = failure(run, 'kcat -C');
    const count = run.lines === records ? `all ${records} read back` : `read back ${run.lines} of ${records} records`;
    return {
      ...base,
      scenario,
      value: failed || run.lines !== records ? NaN : records / (run.ms / 1000),
      note: failed ?? `${(run.ms / 1000).toFixed(2)} s wall incl. kcat start; ${count}; ${load} after`,
    };
  };
  const countNote = consume.lines === records ? `all ${records} read back` : `read back ${consume.lines} of ${records} records`;

  return [
    {
      ...base,
      scenario: `kcat -P acks=1 linger.ms=5, ${label}`,
      value: produceFailed ? NaN : records / (produce.ms / 1000),
      note: produceFailed ?? `${(produce.ms / 1000).toFixed(2)} s wall incl. kcat start; ${deliveryErrors === 0 ? 'no delivery errors' : `${deliveryErrors} error lines on stderr`}; ${countNote}; ${produceLoad} after`,
    },
    consumeRow(`kcat -C -e -o beginning, ${label}`, consume, consumeLoad),
    consumeRow(`kcat -C -e -o beginning queued.min.messages=1000000, ${label}`, bigQueue, loadNote()),
  ];
}

// ---------------------------------------------------------------- ProducerPerformance / ConsumerPerformance

/** Figures of ProducerPerformance's closing summary line. */
export interface ProducerSummary {
  records: number;
  recordsPerSec: number;
  mbPerSec: number;
  avgLatencyMs: number;
  maxLatencyMs: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Reads the last summary line ProducerPerformance prints, e.g. "1000000 records
 * sent, 401284.1 records/sec (38.27 MB/sec), 412.30 ms avg latency, 706.00 ms
 * max latency, 420 ms 50th, 650 ms 95th, 690 ms 99th, 702 ms 99.9th."; null
 * when there is none.
 */
export function parseProducerSummary(stdout: string): ProducerSummary | null {
  const re = /(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th/g;
  let last: RegExpExecArray | null = null;
  for (let m = re.exec(stdout); m !== null; m = re.exec(stdout)) last = m;
  if (!last) return null;
  const n = last.slice(1).map(Number);
  return { records: n[0]!, recordsPerSec: n[1]!, mbPerSec: n[2]!, avgLatencyMs: n[3]!, maxLatencyMs: n[4]!, p50Ms: n[5]!, p99Ms: n[6]! };
}

/**
 * ConsumerPerformance's result as column name -> text: it prints a header
 * line of comma-separated names (start.time, end.time, data.consumed.in.MB,
 * MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, ...) and one
 * line of values under it. Null when the header is not found.
 */
export function parseConsumerSummary(stdout: string): Map<string, string> | null {
  const lines = stdout.split('\n').map((l) => l.trim());
  const at = lines.findIndex((l) => l.startsWith('start.time'));
  if (at < 0 || at + 1 >= lines.length) return null;
  const names = lines[at]!.split(',').map((s) => s.trim());
  const values = lines[at + 1]!.split(',').map((s) => s.trim());
  if (values.length !== names.length) return null;
  return new Map(names.map((n, i) => [n, values[i]!]));
}

async function perfRows(broker: RunningBroker, opts: BenchOptions): Promise<BenchRow[]> {
  const topic = 'xc-perf';
  await makeTopic(broker, topic);
  const script = join(repoRoot(), 'bench', 'kafka-tools', 'run');
  const label = `${PERF_RECORDS.toLocaleString('en-US')} x ${RECORD_BYTES} B, 1 partition`;
  const base = { module: MODULE, subject: broker.name };
  const rows: BenchRow[] = [];

  opts.log(`cross-check: ${broker.name}: ProducerPerformance, ${PERF_RECORDS} records`);
  const produce = await runTimed(
    'bash',
    [script, 'tool', 'org.apache.kafka.tools.ProducerPerformance', '--topic', topic, '--num-records', String(PERF_RECORDS), '--record-size', String(RECORD_BYTES), '--throughput', '-1', '--command-property', `bootstrap.servers=${broker.bootstrap}`, 'acks=1'],
    JVM_TIMEOUT_MS,
    true,
  );
  const produceLoad = loadNote();
  const p = parseProducerSummary(produce.stdout);
  const pFailed = failure(produce, 'ProducerPerformance') ?? (p ? null : `no summary line: ${lastLines(produce.stdout + produce.stderr, 3)}`);
  const pScenario = (what: string): string => `ProducerPerformance acks=1, ${label}: ${what}`;
  const pNote = p ? `${(produce.ms / 1000).toFixed(1)} s wall incl. JVM start; ${p.records} records sent, ${p.mbPerSec} MB/s; client defaults (linger.ms=5, batch.size=16384); JVM client and broker share the cores, ${produceLoad} after` : undefined;
  rows.push(
    { ...base, scenario: pScenario('throughput'), value: p?.recordsPerSec ?? NaN, unit: 'records/s', better: 'higher', note: pFailed ?? pNote },
    { ...base, scenario: pScenario('avg latency'), value: p?.avgLatencyMs ?? NaN, unit: 'ms', better: 'lower', note: p ? `p50 ${p.p50Ms} ms, p99 ${p.p99Ms} ms (send to ack, queueing in the client included)` : (pFailed ?? '') },
    { ...base, scenario: pScenario('max latency'), value: p?.maxLatencyMs ?? NaN, unit: 'ms', better: 'lower' },
  );

  opts.log(`cross-check: ${broker.name}: ConsumerPerformance, ${PERF_RECORDS} records`);
  const consume = await runTimed(
    'bash',
    [script, 'tool', 'org.apache.kafka.tools.ConsumerPerformance', '--bootstrap-server', broker.bootstrap, '--topic', topic, '--num-records', String(PERF_RECORDS), '--timeout', '60000'],
    JVM_TIMEOUT_MS,
    true,
  );
  const consumeLoad = loadNote();
  const c = parseConsumerSummary(consume.stdout);
  const num = (k: string): number => Number(c?.get(k) ?? NaN);
  const consumed = num('data.consumed.in.nMsg');
  const cFailed =
    failure(consume, 'ConsumerPerformance') ??
    (c ? (consumed < PERF_RECORDS ? `consumed only ${consumed} of ${PERF_RECORDS}` : null) : `no summary: ${lastLines(consume.stdout + consume.stderr, 3)}`);
  const cScenario = (what: string): string => `ConsumerPerformance, ${label}: ${what}`;
  rows.push(
    {
      ...base,
      scenario: cScenario('nMsg.sec'),
      value: cFailed ? NaN : num('nMsg.sec'),
      unit: 'records/s',
      better: 'higher',
      note: cFailed ?? `${consumed} records, ${num('MB.sec')} MB/s; includes joining the group (rebalance.time.ms ${num('rebalance.time.ms')}); ${(consume.ms / 1000).toFixed(1)} s wall incl. JVM start; ${consumeLoad} after`,
    },
    {
      ...base,
      scenario: cScenario('fetch.nMsg.sec'),
      value: cFailed ? NaN : num('fetch.nMsg.sec'),
      unit: 'records/s',
      better: 'higher',
      note: cFailed ?? `fetching only (fetch.time.ms ${num('fetch.time.ms')}), ${num('fetch.MB.sec')} MB/s`,
    },
  );
  return rows;
}

// ---------------------------------------------------------------- module

function missingRows(scenario: string, subjects: readonly string[], note: string): BenchRow[] {
  return subjects.map((subject) => ({ module: MODULE, scenario, subject, value: NaN, unit: 'records/s', better: 'higher' as const, note }));
}

export const run: BenchModule = async (opts) => {
  const records = opts.quick ? KCAT_QUICK : KCAT_FULL;
  const subjects: ('gregor' | 'kafka')[] = opts.kafka && !opts.quick ? ['gregor', 'kafka'] : ['gregor'];
  const subjectNames = subjects.map((s) => (s === 'gregor' ? 'gregor' : 'kafka'));
  const rows: BenchRow[] = [];

  const kcat = kcatPath();
  if (!kcat) {
    opts.log(`cross-check: !!! ${KCAT_INSTALL.toUpperCase()} !!!`);
    rows.push(...missingRows('kcat -P / -C', subjectNames, `MISSING: ${KCAT_INSTALL}`));
  }
  let toolsMissing: string | null = null;
  if (!opts.quick) {
    toolsMissing = await kafkaToolsReady();
    if (toolsMissing) {
      opts.log(`cross-check: !!! KAFKA-TOOLS MISSING: ${toolsMissing} !!!`);
      rows.push(...missingRows('ProducerPerformance / ConsumerPerformance', subjectNames, `MISSING: ${toolsMissing}; install with bench/kafka-tools/run install`));
    }
  }

  const dir = mkdtempSync(join(tmpdir(), 'gregor-xc-'));
  try {
    const file = join(dir, 'records.txt');
    if (kcat) {
      // N lines of exactly 100 bytes (the newline is the delimiter, not part of the record).
      const line = Buffer.from(`${'0123456789'.repeat(RECORD_BYTES / 10)}\n`);
      writeFileSync(file, Buffer.concat(Array.from({ length: records }, () => line)));
    }
    for (const s of subjects) {
      const broker = s === 'gregor' ? await startGregor() : await startKafka();
      try {
        if (kcat) rows.push(...(await kcatRows(kcat, broker, records, file, opts)));
        if (!opts.quick && !toolsMissing) rows.push(...(await perfRows(broker, opts)));
      } finally {
        await broker.stop().catch((err: unknown) => opts.log(`cross-check: stopping ${broker.name} failed: ${messageOf(err)}`));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
};

runStandalone('cross-check', import.meta.url, run);

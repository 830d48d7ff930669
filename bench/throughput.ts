/**
 * Produce and consume throughput: gregor, the reference Apache Kafka broker,
 * franz-go's kfake and the null sink under the very same load from bench/load.ts, with a plain
 * sequential file write and raw loopback TCP of the same bytes as baselines.
 *
 *   node dist/bench/throughput.js [--quick | --full] [--no-kafka] [--no-kfake] [--baselines]
 *       [--connections N] [--depth N] [--acks 1|0|-1] [--rate R] [--seconds S]
 *       [--record-size B] [--partitions N] [--batch-records N] [--bootstrap 127.0.0.1:PORT]
 *
 * Each subject runs alone (the previous one is stopped first). Per scenario a
 * fresh topic is created with CreateTopics, then Produce requests (one batch of
 * about 16 KiB for one partition each, round-robin) run for a warm-up and a
 * measured window; the consume scenario of the same shape then reads that
 * topic from offset 0 to what was acknowledged, in passes until enough time
 * has gone by. Before each produce scenario the dirty pages of earlier ones are
 * written back (`sync`), so that no scenario is throttled by the writeback of
 * the one before. `--bootstrap` drives an already running broker (subject
 * 'external') instead, e.g. one started under `node --cpu-prof`.
 *
 * `--record-size` and `--partitions` replace the mode's shapes by that one
 * (produce, then consume); `--batch-records` sets the records per batch
 * (default: about 16 KiB's worth, as the Java producer's batch.size).
 *
 * Quick (default): produce 100 B x 1 and x 8 partitions, consume 100 B x 8.
 * Full: produce and consume 100 B and 1 KB on 1, 8 and 64 partitions, and the
 * baselines.
 *
 * Example: const rows = await run({ quick: true, kafka: false, log: console.error });
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import { KFAKE_INSTALL, startGregor, startKafka, startKfake, type RunningBroker } from './brokers.js';
import { awaitWritable, benchBatch, consumeLoad, createTopic, describeErrors, produceLoad, recordsPerBatchFor, PRODUCE_VERSION, type ConsumeResult, type LoadSettings, type ProduceResult } from './load.js';
import { startNullSink } from './null-sink.js';
import { formatTable, type BenchModule, type BenchOptions, type BenchRow } from './report.js';
import { api, frame } from '../cluster/inter-broker/kafka-connection.js';
import { ZERO_UUID } from '../wire/uuid.js';

const MODULE = 'throughput';

interface Shape {
  readonly recordSize: number;
  readonly partitions: number;
  readonly consume: boolean;
}

interface Mode {
  readonly shapes: readonly Shape[];
  readonly warmupMs: number;
  readonly produceMs: number;
  /** Consume passes go on until this much time has been measured (at most MAX_PASSES). */
  readonly consumeMs: number;
  readonly baselines: boolean;
  readonly baselineMs: number;
  /** Untimed produce and consume on a topic of its own when a subject starts (JIT warm-up, for the JVM above all). */
  readonly subjectWarmupMs: number;
}

const MAX_PASSES = 20;

const QUICK: Mode = {
  shapes: [
    { recordSize: 100, partitions: 1, consume: false },
    { recordSize: 100, partitions: 8, consume: true },
  ],
  warmupMs: 300,
  produceMs: 1500,
  consumeMs: 800,
  baselines: false,
  baselineMs: 800,
  subjectWarmupMs: 600,
};

const FULL: Mode = {
  shapes: [100, 1024].flatMap((recordSize) => [1, 8, 64].map((partitions) => ({ recordSize, partitions, consume: true }))),
  warmupMs: 1000,
  produceMs: 6000,
  consumeMs: 3000,
  baselines: true,
  baselineMs: 3000,
  subjectWarmupMs: 3000,
};

/** Extra knobs of a standalone run; `run` uses the defaults. */
interface Tuning {
  readonly connections: number;
  readonly depth: number;
  readonly acks: number;
  readonly targetRate: number;
  readonly produceMs: number | null;
  readonly baselines: boolean | null;
  readonly bootstrap: string | null;
  /** Records per batch instead of about 16 KiB's worth. */
  readonly recordsPerBatch: number | null;
  /** One shape of the caller's instead of the mode's (--record-size, --partitions). */
  readonly recordSize: number | null;
  readonly partitions: number | null;
}

const DEFAULT_TUNING: Tuning = { connections: 4, depth: 8, acks: 1, targetRate: 0, produceMs: null, baselines: null, bootstrap: null, recordsPerBatch: null, recordSize: null, partitions: null };

/** The mode's shapes, or the one the caller asked for with --record-size and --partitions (produce and consume). */
function withShape(mode: Mode, t: Tuning): Mode {
  if (t.recordSize === null && t.partitions === null) return mode;
  return { ...mode, shapes: [{ recordSize: t.recordSize ?? 100, partitions: t.partitions ?? 1, consume: true }] };
}

function batchRecords(t: Tuning, recordSize: number): number {
  return t.recordsPerBatch ?? recordsPerBatchFor(recordSize);
}

const PARTITION_MAX_BYTES = 4 * 1024 * 1024;
const FETCH_MAX_BYTES = 32 * 1024 * 1024;

function sizeLabel(n: number): string {
  return n >= 1024 && n % 1024 === 0 ? `${n / 1024} KB` : `${n} B`;
}

function produceScenario(acks: number, s: Shape): string {
  return `produce acks=${acks} ${sizeLabel(s.recordSize)} x ${s.partitions} partition${s.partitions === 1 ? '' : 's'}`;
}

function consumeScenario(s: Shape): string {
  return `consume ${sizeLabel(s.recordSize)} x ${s.partitions} partition${s.partitions === 1 ? '' : 's'}`;
}

function settingsFor(t: Tuning, recordSize: number): LoadSettings {
  return { connections: t.connections, depth: t.depth, recordSize, recordsPerBatch: batchRecords(t, recordSize), acks: t.acks, targetRate: t.targetRate };
}

function rates(scenario: string, subject: string, recordsPerSec: number, mbPerSec: number, note: string): BenchRow[] {
  return [
    { module: MODULE, scenario, subject, value: recordsPerSec, unit: 'records/s', better: 'higher', note },
    { module: MODULE, scenario: `${scenario} (MB/s)`, subject, value: mbPerSec, unit: 'MB/s', better: 'higher', note },
  ];
}

function produceNote(p: ProduceResult): string {
  const parts = [`${p.requests.toLocaleString('en-US')} requests in ${(p.elapsedMs / 1000).toFixed(1)} s`];
  const errs = describeErrors(p.errors);
  parts.push(errs ? `errors: ${errs}` : 'no errors');
  if (p.throttled > 0) parts.push(`throttled x${p.throttled}`);
  if (p.failures.length > 0) parts.push(`FAILED: ${p.failures[0]}`);
  return parts.join('; ');
}

function consumeNote(results: readonly ConsumeResult[], produced: number): string {
  const errors = new Map<string, number>();
  let throttled = 0;
  const failures: string[] = [];
  for (const c of results) {
    for (const [k, v] of c.errors) errors.set(k, (errors.get(k) ?? 0) + v);
    throttled += c.throttled;
    failures.push(...c.failures);
  }
  const whole = results.filter((c) => !c.cut);
  const parts = [`${whole.length} whole pass${whole.length === 1 ? '' : 'es'}${results.length > whole.length ? ' + 1 cut short' : ''} over ${produced.toLocaleString('en-US')} records`];
  const odd = whole.find((c) => c.records !== produced);
  if (odd) parts.push(`a pass read ${odd.records.toLocaleString('en-US')}`);
  const errs = describeErrors(errors);
  parts.push(errs ? `errors: ${errs}` : 'no errors');
  if (throttled > 0) parts.push(`throttled x${throttled}`);
  if (failures.length > 0) parts.push(`FAILED: ${failures[0]}`);
  return parts.join('; ');
}

let topicSerial = 0;

/** Every shape of `mode` against one running broker (or the null sink). */
async function measureSubject(b: RunningBroker, subject: string, mode: Mode, t: Tuning, log: (line: string) => void): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  log(`  ${subject}: load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} before its scenarios`);
  if (mode.subjectWarmupMs > 0) {
    const topic = `bench-tp-${process.pid}-${++topicSerial}-warmup`;
    await createTopic(b.host, b.port, topic, 8);
    const ready = await awaitWritable(b.host, b.port, topic, 8, 100);
    const w = await produceLoad(b.host, b.port, { ...settingsFor(t, 100), topic, partitions: 8, warmupMs: 0, durationMs: mode.subjectWarmupMs });
    const targets = w.ackedPerPartition.map((n, i) => n + ready.acked[i]!);
    const c = await consumeLoad(b.host, b.port, { topic, targets, connections: t.connections, partitionMaxBytes: PARTITION_MAX_BYTES, maxBytes: FETCH_MAX_BYTES, stallMs: 5000, maxMs: mode.subjectWarmupMs });
    log(`  ${subject}: untimed warm-up: produce 100 B x 8 ${Math.round(w.recordsPerSec).toLocaleString('en-US')} records/s (${produceNote(w)}), consume ${Math.round(c.recordsPerSec).toLocaleString('en-US')} records/s (${consumeNote([c], targets.reduce((a, n) => a + n, 0))})`);
  }
  for (const shape of mode.shapes) {
    const topic = `bench-tp-${process.pid}-${++topicSerial}-${shape.recordSize}x${shape.partitions}`;
    await createTopic(b.host, b.port, topic, shape.partitions);
    const ready = await awaitWritable(b.host, b.port, topic, shape.partitions, shape.recordSize);
    const settings = settingsFor(t, shape.recordSize);
    log(`  ${subject}: ${settleWriteback()}`);
    const p = await produceLoad(b.host, b.port, { ...settings, topic, partitions: shape.partitions, warmupMs: mode.warmupMs, durationMs: t.produceMs ?? mode.produceMs });
    const pScenario = produceScenario(t.acks, shape);
    const refused = describeErrors(ready.refusals);
    const pNote = produceNote(p) + (refused ? `; before the load, one-record probes refused: ${refused}` : '');
    log(`  ${subject}: ${pScenario}: ${Math.round(p.recordsPerSec).toLocaleString('en-US')} records/s, ${p.mbPerSec.toFixed(1)} MB/s (${pNote})`);
    rows.push(...rates(pScenario, subject, p.recordsPerSec, p.mbPerSec, pNote));
    if (!shape.consume) continue;
    const targets = p.ackedPerPartition.map((n, i) => n + ready.acked[i]!);
    const produced = targets.reduce((a, n) => a + n, 0);
    if (produced === 0) {
      rows.push(...rates(consumeScenario(shape), subject, 0, 0, 'nothing was produced to consume'));
      continue;
    }
    const passes: ConsumeResult[] = [];
    let elapsed = 0;
    for (let i = 0; i < MAX_PASSES && elapsed < mode.consumeMs; i++) {
      const c = await consumeLoad(b.host, b.port, {
        topic,
        targets,
        connections: t.connections,
        partitionMaxBytes: PARTITION_MAX_BYTES,
        maxBytes: FETCH_MAX_BYTES,
        stallMs: 5000,
        maxMs: Math.max(200, mode.consumeMs - elapsed),
      });
      passes.push(c);
      elapsed += c.elapsedMs;
      if (c.failures.length > 0) break;
    }
    const records = passes.reduce((a, c) => a + c.records, 0);
    const bytes = passes.reduce((a, c) => a + c.bytes, 0);
    const cScenario = consumeScenario(shape);
    const note = consumeNote(passes, produced);
    const rps = (records / elapsed) * 1000;
    const mbps = bytes / 1e6 / (elapsed / 1000);
    log(`  ${subject}: ${cScenario}: ${Math.round(rps).toLocaleString('en-US')} records/s, ${mbps.toFixed(1)} MB/s (${note})`);
    rows.push(...rates(cScenario, subject, rps, mbps, note));
  }
  return rows;
}

/**
 * Writes back the dirty pages earlier scenarios left (the `sync` command) before a
 * produce scenario: a produce run of a few gigabytes leaves the kernel writing
 * back for seconds after it, and that writeback throttled the writes of
 * whichever scenario came next, whoever the subject. Returns a line for the log.
 */
function settleWriteback(): string {
  const t0 = performance.now();
  execFileSync('sync');
  return `dirty pages written back before the scenario (sync: ${Math.round(performance.now() - t0)} ms)`;
}

/** fs.writeSync of the generator's batch, one call per batch, into a fresh temporary file. */
function plainWrite(recordSize: number, recordsPerBatch: number, ms: number): { recordsPerSec: number; mbPerSec: number; note: string } {
  const batch = benchBatch(recordSize, recordsPerBatch);
  const dir = mkdtempSync(join(tmpdir(), 'gregor-bench-tp-'));
  const fd = openSync(join(dir, 'plain.log'), 'w');
  try {
    const limit = 4 * 1024 * 1024 * 1024;
    let written = 0;
    let batches = 0;
    const start = performance.now();
    let now = start;
    while (now - start < ms && written < limit) {
      for (let i = 0; i < 64; i++) {
        written += writeSync(fd, batch, 0, batch.length, written);
        batches++;
      }
      now = performance.now();
    }
    const s = (now - start) / 1000;
    return {
      recordsPerSec: (batches * recordsPerBatch) / s,
      mbPerSec: written / 1e6 / s,
      note: `${(written / 1e6).toFixed(0)} MB in ${s.toFixed(1)} s, one writeSync per ${batch.length} B batch, no fsync`,
    };
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One socket pumping the generator's Produce frames to the null sink's discard port (another process). */
async function loopbackTcp(port: number, recordSize: number, recordsPerBatch: number, ms: number): Promise<{ recordsPerSec: number; mbPerSec: number; note: string }> {
  const batch = benchBatch(recordSize, recordsPerBatch);
  const body: ProduceRequest = { transactionalId: null, acks: 1, timeoutMs: 30_000, topicData: [{ name: 'loopback', topicId: ZERO_UUID, partitionData: [{ index: 0, records: batch }] }] };
  const one = frame(api('Produce'), PRODUCE_VERSION, body).bytes;
  const chunk = Buffer.concat(Array.from({ length: 32 }, () => one));
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const answer: Buffer[] = [];
    let start = 0;
    let sent = 0;
    socket.once('connect', () => {
      start = performance.now();
      const pump = (): void => {
        for (let i = 0; i < 1000; i++) {
          if (performance.now() - start >= ms) {
            socket.end();
            return;
          }
          sent += chunk.length;
          if (!socket.write(chunk)) {
            socket.once('drain', pump);
            return;
          }
        }
        setImmediate(pump);
      };
      pump();
    });
    socket.on('data', (d: Buffer) => answer.push(d));
    socket.once('error', reject);
    socket.once('close', () => {
      const s = (performance.now() - start) / 1000;
      const all = Buffer.concat(answer);
      if (all.length < 8) return reject(new Error('the discard sink gave no count'));
      const received = Number(all.readBigUInt64BE(0));
      resolve({
        recordsPerSec: ((received / one.length) * recordsPerBatch) / s,
        mbPerSec: ((received / one.length) * batch.length) / 1e6 / s,
        note: `${(received / 1e6).toFixed(0)} MB of Produce frames received of ${(sent / 1e6).toFixed(0)} MB sent in ${s.toFixed(1)} s; MB/s counts batch bytes`,
      });
    });
  });
}

async function measure(opts: BenchOptions, t: Tuning): Promise<BenchRow[]> {
  const mode = withShape(opts.quick ? QUICK : FULL, t);
  const log = opts.log;
  const rows: BenchRow[] = [];
  const sizes = [...new Set(mode.shapes.map((s) => s.recordSize))];
  log(
    `throughput: generator settings for every subject: ${t.connections} connections x ${t.depth} in flight, acks=${t.acks}, ` +
      sizes.map((s) => `${sizeLabel(s)} records ${batchRecords(t, s)} per batch (${benchBatch(s, batchRecords(t, s)).length} B)`).join(', ') +
      `, no compression, Produce v${PRODUCE_VERSION} one partition per request round-robin, ` +
      `target rate ${t.targetRate > 0 ? `${t.targetRate} records/s` : 'none'}, warm-up ${mode.warmupMs} ms + ${t.produceMs ?? mode.produceMs} ms measured; ` +
      `Fetch v12 ${PARTITION_MAX_BYTES / 1048576} MiB per partition, ${FETCH_MAX_BYTES / 1048576} MiB per request, partitions split over up to ${t.connections} connections; ` +
      `${cpus().length} cores shared by generator and broker`,
  );

  if (t.bootstrap) {
    const i = t.bootstrap.lastIndexOf(':');
    const external: RunningBroker = { name: 'external', bootstrap: t.bootstrap, host: t.bootstrap.slice(0, i), port: Number(t.bootstrap.slice(i + 1)), pid: null, stop: async () => undefined };
    return measureSubject(external, 'external', mode, t, log);
  }

  const baselines = t.baselines ?? mode.baselines;
  const sink = await startNullSink();
  try {
    rows.push(...(await measureSubject(sink.broker, 'null sink', mode, t, log)));
    if (baselines) {
      for (const size of sizes) {
        log(`  plain write: ${settleWriteback()}`);
        const w = plainWrite(size, batchRecords(t, size), mode.baselineMs);
        const l = await loopbackTcp(sink.discardPort, size, batchRecords(t, size), mode.baselineMs);
        log(`  baselines ${sizeLabel(size)}: plain write ${Math.round(w.recordsPerSec).toLocaleString('en-US')} records/s; loopback tcp ${Math.round(l.recordsPerSec).toLocaleString('en-US')} records/s`);
        for (const shape of mode.shapes.filter((s) => s.recordSize === size)) {
          rows.push(...rates(produceScenario(t.acks, shape), 'plain write', w.recordsPerSec, w.mbPerSec, w.note));
          rows.push(...rates(produceScenario(t.acks, shape), 'loopback tcp', l.recordsPerSec, l.mbPerSec, l.note));
          if (shape.consume) rows.push(...rates(consumeScenario(shape), 'loopback tcp', l.recordsPerSec, l.mbPerSec, l.note));
        }
      }
    }
  } finally {
    await sink.broker.stop();
  }

  const gregor = await startGregor();
  try {
    rows.push(...(await measureSubject(gregor, 'gregor', mode, t, log)));
  } finally {
    await gregor.stop();
  }

  if (opts.kafka) {
    const kafka = await startKafka();
    try {
      rows.push(...(await measureSubject(kafka, kafka.name, mode, t, log)));
    } finally {
      await kafka.stop();
    }
  }

  if (opts.kfake !== false) rows.push(...(await measureKfake(mode, t, log)));

  // Group each scenario's rows: gregor first, then Kafka, kfake, the null sink and the baselines.
  const order = (s: string): number => (s === 'gregor' ? 0 : s.startsWith('kafka') ? 1 : s === 'kfake' ? 2 : s === 'null sink' ? 3 : 4);
  const scenarios = [...new Set(rows.map((r) => r.scenario))];
  return scenarios.flatMap((sc) => rows.filter((r) => r.scenario === sc).sort((a, b) => order(a.subject) - order(b.subject)));
}

/**
 * franz-go's kfake under the same shapes. It keeps every record in memory,
 * so each shape gets a fresh kfake process (a full run produces tens of
 * gigabytes); the untimed warm-up runs before the first shape only.
 */
async function measureKfake(mode: Mode, t: Tuning, log: (line: string) => void): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const [i, shape] of mode.shapes.entries()) {
    const kfake = await startKfake();
    if (!kfake) {
      log(`  kfake: ${KFAKE_INSTALL}`);
      for (const sh of mode.shapes) {
        rows.push(...rates(produceScenario(t.acks, sh), 'kfake', NaN, NaN, `MISSING: ${KFAKE_INSTALL}`));
        if (sh.consume) rows.push(...rates(consumeScenario(sh), 'kfake', NaN, NaN, `MISSING: ${KFAKE_INSTALL}`));
      }
      return rows;
    }
    try {
      const one: Mode = { ...mode, shapes: [shape], subjectWarmupMs: i === 0 ? mode.subjectWarmupMs : 0 };
      rows.push(...(await measureSubject(kfake, 'kfake', one, t, log)).map((r) => ({ ...r, note: `${r.note}; a fresh kfake process for this shape` })));
    } finally {
      await kfake.stop();
    }
  }
  return rows;
}

export const run: BenchModule = (opts) => measure(opts, DEFAULT_TUNING);

function parseArgs(argv: readonly string[]): { opts: BenchOptions; tuning: Tuning } {
  let quick = true;
  let kafka = true;
  let kfake = true;
  const t = { ...DEFAULT_TUNING } as { -readonly [K in keyof Tuning]: Tuning[K] };
  const num = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min) throw new Error(`${name} needs a number of at least ${min}, not "${v ?? ''}"`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') quick = true;
    else if (a === '--full') quick = false;
    else if (a === '--no-kafka') kafka = false;
    else if (a === '--no-kfake') kfake = false;
    else if (a === '--baselines') t.baselines = true;
    else if (a === '--connections') t.connections = Math.floor(num(a, argv[++i], 1));
    else if (a === '--depth') t.depth = Math.floor(num(a, argv[++i], 1));
    else if (a === '--rate') t.targetRate = num(a, argv[++i], 0);
    else if (a === '--seconds') t.produceMs = num(a, argv[++i], 0.1) * 1000;
    else if (a === '--record-size') t.recordSize = Math.floor(num(a, argv[++i], 1));
    else if (a === '--partitions') t.partitions = Math.floor(num(a, argv[++i], 1));
    else if (a === '--batch-records') t.recordsPerBatch = Math.floor(num(a, argv[++i], 1));
    else if (a === '--acks') {
      const v = argv[++i];
      if (v !== '1' && v !== '0' && v !== '-1') throw new Error(`--acks takes 1, 0 or -1, not "${v ?? ''}"`);
      t.acks = Number(v);
    } else if (a === '--bootstrap') {
      const v = argv[++i] ?? '';
      if (!/^(127\.0\.0\.1|localhost):\d+$/.test(v)) throw new Error(`--bootstrap takes 127.0.0.1:PORT (a broker on this machine; benchmarks stay on loopback), not "${v}"`);
      t.bootstrap = v;
    } else throw new Error(`unknown argument "${a}"; usage: node dist/bench/throughput.js [--quick | --full] [--no-kafka] [--no-kfake] [--baselines] [--connections N] [--depth N] [--acks 1|0|-1] [--rate R] [--seconds S] [--record-size B] [--partitions N] [--batch-records N] [--bootstrap 127.0.0.1:PORT]`);
  }
  return { opts: { quick, kafka, kfake, log: (line) => console.error(line) }, tuning: t };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
  const started = performance.now();
  measure(parsed.opts, parsed.tuning).then(
    (rows) => {
      console.log(formatTable(rows));
      console.log(`\nwall clock ${((performance.now() - started) / 1000).toFixed(1)} s (${parsed.opts.quick ? 'quick' : 'full'})`);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

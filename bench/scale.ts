/**
 * Scale benchmark: many connections and many partitions on one broker,
 * gregor and (with --full) the reference Apache Kafka broker and franz-go's
 * kfake under the same load, each on a fresh broker per scenario.
 *
 *   node dist/bench/scale.js [--quick | --full] [--no-kafka] [--no-kfake]
 *
 * Scenarios:
 *   - slow connections: N connections (5,000 full, 1,000 quick, capped by the
 *     open-file limit of this process) each send one Produce (acks=1, one
 *     record of 100 B) every 1-2 s for a fixed time. Figures: errors (failed
 *     connects, failed requests and error codes in answers), p50 and p99
 *     produce latency, time to open all connections, broker RSS before the
 *     connections and while they are all held.
 *   - many partitions: T topics of 100 partitions (10,000 full, 1,000 quick)
 *     made with CreateTopics, 10 topics a request, all requests in flight at
 *     once. Figures: time until every CreateTopics is answered, time until a
 *     Metadata request shows a leader for every partition, time to produce
 *     one batch (10 records of 100 B) to every partition (one Produce a topic,
 *     spread over 4 connections, all in flight), median time of a Metadata v12
 *     for all topics, broker RSS after all that.
 * RSS is VmRSS from /proc/<pid>/status (Linux only, else NaN).
 *
 * Example: `const rows = await run({ quick: true, kafka: false, log: console.log })`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import type { CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import type { ProduceResponse } from '../wire/messages/produce-response.js';
import { codecFor } from '../wire/codec.js';
import { Reader } from '../wire/reader.js';
import { buildBatch } from '../wire/record-batch.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { kfakePath, KFAKE_INSTALL, rssMb, startGregor, startKafka, startKfake, type RunningBroker } from './brokers.js';
import { type BenchModule, type BenchOptions, type BenchRow, runStandalone } from './report.js';
import { WireConnection, api, frame, type Frame } from '../cluster/inter-broker/kafka-connection.js';

const MODULE = 'scale';
const RECORD_BYTES = 100;
const PARTITIONS_PER_TOPIC = 100;
const TOPICS_PER_CREATE = 10;
const PRODUCE_CONNECTIONS = 4;
const METADATA_RUNS = 5;
/** Descriptors this process keeps for itself beyond its broker connections. */
const FD_RESERVE = 200;
/** Below the default listen backlog of both brokers (Kafka's socket.listen.backlog.size is 50). */
const CONNECT_AT_ONCE = 32;
const DRAIN_TIMEOUT_MS = 30_000;
const READY_TIMEOUT_MS = 120_000;

interface Sizes {
  connections: number;
  /** How long the connections keep producing. */
  produceMs: number;
  topics: number;
}

const QUICK: Sizes = { connections: 1000, produceMs: 5000, topics: 10 };
const FULL: Sizes = { connections: 5000, produceMs: 10_000, topics: 100 };

// ---------------------------------------------------------------- helpers shared with cross-check.ts

/** The 1-minute load average, for notes: other work on the machine skews every figure. */
export function loadNote(): string {
  return `load avg ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores`;
}

/** Open file descriptors of a process; NaN when /proc cannot tell. */
export function openFiles(pid: number | null): number {
  if (pid === null) return NaN;
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/** The soft open-file limit of this process (what `ulimit -n` says), from /proc; null when unknown. */
export function openFileLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!m) return null;
    return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
  } catch {
    return null;
  }
}

/** Nearest-rank percentile of sorted values; NaN for none. Example: percentile([1, 2, 3, 4], 0.5) === 2. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function elapsedMs(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Creates topics of `partitions` partitions each (replication factor 1),
 * `perRequest` topics a CreateTopics request, all requests in flight on one
 * connection. Resolves with the topics that failed and their error codes.
 * Example: await createTopics(conn, ['a', 'b'], 8) resolves [] when both were made.
 */
export async function createTopics(conn: WireConnection, names: readonly string[], partitions: number, perRequest = TOPICS_PER_CREATE): Promise<string[]> {
  const requests: Promise<CreateTopicsResponse>[] = [];
  for (let i = 0; i < names.length; i += perRequest) {
    const topics = names.slice(i, i + perRequest).map((name) => ({ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }));
    requests.push(conn.request<CreateTopicsResponse>(api('CreateTopics'), 7, { topics, timeoutMs: 60_000, validateOnly: false }));
  }
  const failed: string[] = [];
  for (const res of await Promise.all(requests)) {
    for (const t of res.topics) if (t.errorCode !== 0) failed.push(`${t.name}: error ${t.errorCode}${t.errorMessage ? ` (${t.errorMessage})` : ''}`);
  }
  return failed;
}

/**
 * Polls Metadata v12 for `names` until every one has `partitions` partitions
 * with a leader; resolves with the milliseconds it took, or rejects after `timeoutMs`.
 */
export async function waitForLeaders(conn: WireConnection, names: readonly string[], partitions: number, timeoutMs = READY_TIMEOUT_MS): Promise<number> {
  const start = process.hrtime.bigint();
  const body = { topics: names.map((name) => ({ topicId: ZERO_UUID, name })), allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
  for (;;) {
    const md = await conn.request<MetadataResponse>(api('Metadata'), 12, body);
    const ready = md.topics.filter((t) => t.errorCode === 0 && t.partitions.length === partitions && t.partitions.every((p) => p.errorCode === 0 && p.leaderId >= 0));
    if (ready.length === names.length) return elapsedMs(start);
    if (elapsedMs(start) > timeoutMs) throw new Error(`only ${ready.length} of ${names.length} topics have leaders after ${timeoutMs} ms`);
    await sleep(50);
  }
}

const produceDecoder = codecFor<ProduceResponse>(api('Produce').response, 9);

/** Error codes in a Produce answer, one per partition that failed. */
export function produceErrors(body: Buffer): number[] {
  const r = new Reader(body);
  const res = produceDecoder.decode(r);
  if (r.error) return [-1];
  const errors: number[] = [];
  for (const t of res.responses) for (const p of t.partitionResponses) if (p.errorCode !== 0) errors.push(p.errorCode);
  return errors;
}

/** A Produce v9 (acks=1) of one batch of `records` records of 100 B to each listed partition of `topic`. */
function produceFrame(topic: string, partitions: readonly number[], records: number): Frame {
  const value = Buffer.alloc(RECORD_BYTES, 'x');
  const batch = buildBatch({ records: Array.from({ length: records }, () => ({ value })) });
  const body: ProduceRequest = { transactionalId: null, acks: 1, timeoutMs: 30_000, topicData: [{ name: topic, topicId: ZERO_UUID, partitionData: partitions.map((index) => ({ index, records: batch })) }] };
  return frame(api('Produce'), 9, body);
}

/** Codes a client retries after: the partition's leader is not (yet) known or not (yet) this broker. */
const RETRIABLE = new Set([3, 5, 6]);

/** Error codes in a Produce answer by partition, for the partitions that failed. */
function produceErrorsByPartition(body: Buffer): Map<string, number> {
  const r = new Reader(body);
  const res = produceDecoder.decode(r);
  const failed = new Map<string, number>();
  if (r.error) return new Map([['?', -1]]);
  for (const t of res.responses) for (const p of t.partitionResponses) if (p.errorCode !== 0) failed.set(`${t.name}\u0000${p.index}`, p.errorCode);
  return failed;
}

interface ProduceAll {
  /** From the first send until every partition accepted a batch (or gave up). */
  readonly ms: number;
  /** Partitions whose first Produce was answered with a retriable error. */
  readonly retried: number;
  /** Retriable codes seen, with counts. */
  readonly retriableCodes: Map<number, number>;
  /** Non-retriable failures (and partitions still failing at the deadline), with counts. */
  readonly errors: Map<string, number>;
}

/**
 * Produces one batch of `records` records to every partition of every topic
 * (one Produce a topic, round robin over `conns`, all in flight), then, as a
 * client would, sends again to the partitions answered with a retriable code
 * (leader not known yet) every 100 ms until they accept or `timeoutMs` passes.
 */
async function produceToAll(conns: readonly WireConnection[], topics: readonly string[], partitions: number, records: number, timeoutMs = READY_TIMEOUT_MS): Promise<ProduceAll> {
  const start = process.hrtime.bigint();
  const retriableCodes = new Map<number, number>();
  const errors = new Map<string, number>();
  const add = <K>(m: Map<K, number>, k: K): void => {
    m.set(k, (m.get(k) ?? 0) + 1);
  };
  let pending = new Map(topics.map((t) => [t, Array.from({ length: partitions }, (_, i) => i)]));
  let retried = 0;
  for (let round = 0; pending.size > 0; round++) {
    if (round > 0) {
      if (elapsedMs(start) > timeoutMs) {
        for (const ps of pending.values()) for (let k = 0; k < ps.length; k++) add(errors, 'partition still refusing at the deadline');
        break;
      }
      await sleep(100);
    }
    const sends = [...pending].map(([topic, ps], i) => conns[i % conns.length]!.sendFrame(produceFrame(topic, ps, records)));
    const answers = await Promise.allSettled(sends);
    const next = new Map<string, number[]>();
    for (const a of answers) {
      if (a.status === 'rejected') {
        add(errors, messageOf(a.reason));
        continue;
      }
      for (const [key, code] of produceErrorsByPartition(a.value)) {
        const [topic, index] = key.split('\u0000') as [string, string];
        if (!RETRIABLE.has(code)) {
          add(errors, `error code ${code}`);
          continue;
        }
        if (round === 0) retried++;
        add(retriableCodes, code);
        next.set(topic, [...(next.get(topic) ?? []), Number(index)]);
      }
    }
    pending = next;
  }
  return { ms: elapsedMs(start), retried, retriableCodes, errors };
}

function countsNote<K>(m: Map<K, number>): string {
  return [...m].map(([k, v]) => `${v}x ${String(k)}`).join(', ');
}

function heapNote(broker: RunningBroker): string {
  return broker.name.startsWith('kafka') ? '; JVM started with -Xms512m -Xmx1g (compat harness)' : '';
}

type Subject = 'gregor' | 'kafka' | 'kfake';

async function withBroker<T>(name: Subject, opts: BenchOptions, body: (b: RunningBroker) => Promise<T>): Promise<T> {
  const broker = name === 'gregor' ? await startGregor() : name === 'kafka' ? await startKafka() : await startKfake();
  if (!broker) throw new Error(KFAKE_INSTALL);
  try {
    return await body(broker);
  } finally {
    await broker.stop().catch((err: unknown) => opts.log(`scale: stopping ${broker.name} failed: ${messageOf(err)}`));
  }
}

// ---------------------------------------------------------------- slow connections

async function slowConnections(broker: RunningBroker, count: number, produceMs: number, capNote: string, opts: BenchOptions): Promise<BenchRow[]> {
  const topic = 'scale-conns';
  const partitions = 16;
  const errors = new Map<string, number>();
  const countError = (what: string): void => {
    errors.set(what, (errors.get(what) ?? 0) + 1);
  };

  const pid = broker.pid;
  const admin = await WireConnection.open(broker.host, broker.port);
  const conns: WireConnection[] = [];
  try {
    const failed = await createTopics(admin, [topic], partitions);
    if (failed.length > 0) throw new Error(`CreateTopics failed: ${failed.join('; ')}`);
    await waitForLeaders(admin, [topic], partitions);
    // One produce to every partition first, so that leadership and the first segment are settled.
    const warm = await produceToAll([admin], [topic], partitions, 1);
    if (warm.errors.size > 0) throw new Error(`warm-up produce failed: ${countsNote(warm.errors)}`);
    await sleep(500);
    const rssBefore = rssMb(pid);
    const filesBefore = openFiles(pid);

    opts.log(`scale: ${broker.name}: opening ${count} connections`);
    const connectStart = process.hrtime.bigint();
    const connectTimes: number[] = [];
    for (let i = 0; i < count; i += CONNECT_AT_ONCE) {
      const batch = await Promise.allSettled(
        Array.from({ length: Math.min(CONNECT_AT_ONCE, count - i) }, async () => {
          const t = process.hrtime.bigint();
          const c = await WireConnection.open(broker.host, broker.port, 10_000);
          connectTimes.push(elapsedMs(t));
          return c;
        }),
      );
      for (const r of batch) {
        if (r.status === 'fulfilled') conns.push(r.value);
        else countError(`connect: ${messageOf(r.reason)}`);
      }
    }
    const connectMs = elapsedMs(connectStart);

    // Each connection produces with its own frame (sendFrame rewrites the bytes of the frame it sends).
    const frames = conns.map((_, i) => produceFrame(topic, [i % partitions], 1));
    const latencies: number[] = [];
    const inFlight = new Set<Promise<void>>();
    let sent = 0;
    const timers = new Set<NodeJS.Timeout>();
    const stopAt = Date.now() + produceMs;
    opts.log(`scale: ${broker.name}: ${conns.length} connections producing every 1-2 s for ${produceMs / 1000} s`);
    const sendOne = (i: number): void => {
      const start = process.hrtime.bigint();
      sent++;
      const p = conns[i]!.sendFrame(frames[i]!).then(
        (answer) => {
          latencies.push(elapsedMs(start));
          for (const code of produceErrors(answer)) countError(`produce error code ${code}`);
        },
        (err: unknown) => countError(`produce: ${messageOf(err)}`),
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    const schedule = (i: number, delayMs: number): void => {
      if (Date.now() + delayMs >= stopAt) return;
      const t = setTimeout(() => {
        timers.delete(t);
        sendOne(i);
        schedule(i, 1000 + Math.random() * 1000);
      }, delayMs);
      timers.add(t);
    };
    for (let i = 0; i < conns.length; i++) schedule(i, Math.random() * 1500);
    const loadStart = loadNote();
    await sleep(produceMs);
    const loadEnd = loadNote();
    for (const t of timers) clearTimeout(t);
    timers.clear();
    const drainStart = Date.now();
    while (inFlight.size > 0 && Date.now() - drainStart < DRAIN_TIMEOUT_MS) await Promise.race([sleep(100), ...inFlight]);
    if (inFlight.size > 0) for (let k = 0; k < inFlight.size; k++) countError('produce unanswered after the run');
    const rssHeld = rssMb(pid);
    const filesHeld = openFiles(pid);

    const sorted = latencies.sort((a, b) => a - b);
    const connectSorted = connectTimes.sort((a, b) => a - b);
    const errorCount = [...errors.values()].reduce((a, b) => a + b, 0);
    const errorNote = errorCount === 0 ? 'no errors' : [...errors].map(([k, v]) => `${v}x ${k}`).join('; ');
    const scenario = (what: string): string => `${count} conns, 1 produce/1-2 s each: ${what}`;
    const base = { module: MODULE, subject: broker.name };
    const counts = `${sent} produces sent, ${latencies.length} answered in ${produceMs / 1000} s`;
    const rows: BenchRow[] = [
      { ...base, scenario: scenario('errors'), value: errorCount, unit: 'errors', better: 'lower', note: `${errorNote}; ${counts}${capNote}` },
      { ...base, scenario: scenario('produce p50'), value: percentile(sorted, 0.5), unit: 'ms', better: 'lower', note: counts },
      { ...base, scenario: scenario('produce p99'), value: percentile(sorted, 0.99), unit: 'ms', better: 'lower', note: `p99.9 ${percentile(sorted, 0.999).toFixed(1)} ms, max ${(sorted[sorted.length - 1] ?? NaN).toFixed(1)} ms; generator and broker share the cores (${loadStart} at start, ${loadEnd.replace('load avg ', '')} at end)` },
      { ...base, scenario: scenario('open all'), value: connectMs, unit: 'ms', better: 'lower', note: `${CONNECT_AT_ONCE} connects in flight at a time; one connect p50 ${percentile(connectSorted, 0.5).toFixed(1)} ms, p99 ${percentile(connectSorted, 0.99).toFixed(1)} ms, max ${(connectSorted[connectSorted.length - 1] ?? NaN).toFixed(1)} ms` },
      { ...base, scenario: scenario('broker RSS before'), value: rssBefore, unit: 'MB', better: 'lower', note: `${filesBefore} open files${heapNote(broker)}` },
      { ...base, scenario: scenario('broker RSS, all held'), value: rssHeld, unit: 'MB', better: 'lower', note: `+${(rssHeld - rssBefore).toFixed(1)} MB (${(((rssHeld - rssBefore) * 1e3) / Math.max(1, conns.length)).toFixed(1)} kB a connection); ${filesHeld} open files` },
    ];
    return rows;
  } finally {
    for (const c of conns) c.close();
    admin.close();
  }
}

// ---------------------------------------------------------------- many partitions

async function manyPartitions(broker: RunningBroker, topicCount: number, opts: BenchOptions): Promise<BenchRow[]> {
  const total = topicCount * PARTITIONS_PER_TOPIC;
  const names = Array.from({ length: topicCount }, (_, i) => `scale-p-${String(i).padStart(3, '0')}`);
  const pid = broker.pid;
  const admin = await WireConnection.open(broker.host, broker.port);
  const producers: WireConnection[] = [];
  try {
    const rssStart = rssMb(pid);
    opts.log(`scale: ${broker.name}: creating ${topicCount} topics x ${PARTITIONS_PER_TOPIC} partitions`);
    const createStart = process.hrtime.bigint();
    const failed = await createTopics(admin, names, PARTITIONS_PER_TOPIC);
    const createMs = elapsedMs(createStart);
    const leadersMs = createMs + (await waitForLeaders(admin, names, PARTITIONS_PER_TOPIC));
    const load = loadNote();
    const rssCreated = rssMb(pid);

    for (let i = 0; i < PRODUCE_CONNECTIONS; i++) producers.push(await WireConnection.open(broker.host, broker.port));
    opts.log(`scale: ${broker.name}: producing one batch to each of ${total} partitions`);
    const produced = await produceToAll(producers, names, PARTITIONS_PER_TOPIC, 10);

    opts.log(`scale: ${broker.name}: Metadata v12 for all topics x ${METADATA_RUNS}`);
    const allTopics = { topics: null, allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
    const metadataMs: number[] = [];
    let seenPartitions = 0;
    for (let i = 0; i < METADATA_RUNS; i++) {
      const start = process.hrtime.bigint();
      const md = await admin.request<MetadataResponse>(api('Metadata'), 12, allTopics);
      metadataMs.push(elapsedMs(start));
      seenPartitions = md.topics.filter((t) => t.name?.startsWith('scale-p-')).reduce((n, t) => n + t.partitions.length, 0);
    }
    await sleep(500);
    const rssEnd = rssMb(pid);
    const files = openFiles(pid);

    const scenario = (what: string): string => `${total.toLocaleString('en-US')} partitions (${topicCount} topics x ${PARTITIONS_PER_TOPIC}): ${what}`;
    const base = { module: MODULE, subject: broker.name };
    const produceNote = [
      produced.errors.size === 0 ? 'no errors' : `ERRORS: ${countsNote(produced.errors)}`,
      produced.retried === 0 ? 'none retried' : `${produced.retried} partitions first answered a retriable code (${countsNote(produced.retriableCodes)}) and were sent again every 100 ms until accepted`,
    ].join('; ');
    return [
      { ...base, scenario: scenario('CreateTopics answered'), value: createMs, unit: 'ms', better: 'lower', note: `${Math.ceil(topicCount / TOPICS_PER_CREATE)} requests of ${TOPICS_PER_CREATE} topics, pipelined; ${failed.length === 0 ? 'no errors' : `${failed.length} failed: ${failed.slice(0, 3).join('; ')}`}; ${load} after` },
      { ...base, scenario: scenario('create -> leaders in metadata'), value: leadersMs, unit: 'ms', better: 'lower' },
      { ...base, scenario: scenario('produce 1 batch to each'), value: produced.ms, unit: 'ms', better: 'lower', note: `${topicCount} Produce requests over ${PRODUCE_CONNECTIONS} conns, 10 x 100 B a batch; ${produceNote}` },
      { ...base, scenario: scenario('Metadata v12 all topics'), value: median(metadataMs), unit: 'ms', better: 'lower', note: `median of ${METADATA_RUNS}, first ${metadataMs[0]!.toFixed(1)} ms; ${seenPartitions} partitions listed` },
      { ...base, scenario: scenario('broker RSS after'), value: rssEnd, unit: 'MB', better: 'lower', note: `${rssStart.toFixed(1)} MB before create, ${rssCreated.toFixed(1)} MB after; ${files} open files${heapNote(broker)}` },
    ];
  } finally {
    for (const c of producers) c.close();
    admin.close();
  }
}

// ---------------------------------------------------------------- module

export const run: BenchModule = async (opts) => {
  const sizes = opts.quick ? QUICK : FULL;
  const subjects: Subject[] = ['gregor'];
  if (opts.kafka && !opts.quick) subjects.push('kafka');
  if (opts.kfake !== false && !opts.quick) {
    if (kfakePath()) subjects.push('kfake');
    else opts.log(`scale: kfake left out: ${KFAKE_INSTALL}`);
  }
  const limit = openFileLimit();
  let connections = sizes.connections;
  let capNote = '';
  if (limit !== null && limit - FD_RESERVE < connections) {
    connections = Math.max(1, limit - FD_RESERVE);
    capNote = `; capped from ${sizes.connections} by this process's open-file limit (ulimit -n ${limit})`;
    opts.log(`scale: WARNING: ulimit -n is ${limit}; using ${connections} connections instead of ${sizes.connections}`);
  }
  const rows: BenchRow[] = [];
  for (const s of subjects) rows.push(...(await withBroker(s, opts, (b) => slowConnections(b, connections, sizes.produceMs, capNote, opts))));
  for (const s of subjects) rows.push(...(await withBroker(s, opts, (b) => manyPartitions(b, sizes.topics, opts))));
  return rows;
};

runStandalone('scale', import.meta.url, run);

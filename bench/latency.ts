/**
 * Latency benchmark: end-to-end latency at fixed produce rates, and fetch
 * latency as the log grows, for gregor and (with Kafka) the reference Apache
 * Kafka broker under the very same load, one broker at a time; franz-go's
 * kfake too, end to end only (it keeps its log in memory).
 *
 *   node dist/bench/latency.js [--quick | --full] [--no-kafka] [--no-kfake]
 *
 * End to end: one connection produces (Produce v9, acks=1, requests
 * pipelined as a client with linger.ms=1 would send them) one batch every
 * millisecond holding rate/1000 records of 100 B; the batch's first record
 * value carries the time of its send (process.hrtime.bigint, in ns). A
 * second connection long-polls Fetch v12 (max wait 500 ms, min bytes 1) and
 * takes, for every batch it receives, the time of arrival of the answer
 * minus that send time. Producer and consumer share one process and one
 * clock. Send times follow a fixed schedule computed from the start (no
 * accumulated timer error); when the sender is late, the lag is reported.
 * The first seconds of each run (2, or 3 with --full) are a warm-up and are not
 * counted: a freshly started JVM needs them.
 *
 * Fetch latency: one partition is filled through Produce (batches of 1,000
 * records of 100 B, 8 requests in flight) to 10 MB and then on to 10 GB
 * (--quick: 100 MB); at each size, 1 MiB Fetch requests at random earlier
 * offsets are timed from send to the whole answer read (20 untimed first).
 *
 * Example: `node dist/bench/latency.js --quick --no-kafka` prints, among
 * others, "latency  e2e p99 @ 50k rec/s  gregor  1,234  µs".
 */
import { statfsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { codecFor } from '../wire/codec.js';
import { Reader } from '../wire/reader.js';
import type { MessageDecl } from '../wire/schema.js';
import { ErrorCode } from '../wire/errors.js';
import type { CreateTopicsRequest } from '../wire/messages/create-topics-request.js';
import type { CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import type { FetchRequest } from '../wire/messages/fetch-request.js';
import type { FetchResponse } from '../wire/messages/fetch-response.js';
import type { MetadataRequest } from '../wire/messages/metadata-request.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import type { ProduceResponse } from '../wire/messages/produce-response.js';
import { BASE_OFFSET, BATCH_LENGTH, LAST_OFFSET_DELTA, LOG_OVERHEAD, RECORD_COUNT, buildBatch, writeBatchCrc } from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { KFAKE_INSTALL, startGregor, startKafka, startKfake, type RunningBroker } from './brokers.js';
import { Histogram } from './histogram.js';
import { type BenchModule, type BenchOptions, type BenchRow, runStandalone } from './report.js';
import { WireConnection, api, frame, type Frame } from '../cluster/inter-broker/kafka-connection.js';

const MODULE = 'latency';
const MB = 1e6;
const MiB = 1 << 20;
const GB = 1e9;
const PRODUCE_VERSION = 9;
const FETCH_VERSION = 12;
const METADATA_VERSION = 12;
const CREATE_TOPICS_VERSION = 7;
const RECORD_BYTES = 100;
/** The producer's linger: one batch per this many nanoseconds. */
const TICK_NS = 1_000_000n;
const LONG_POLL_MS = 500;
/** A send later than this behind its schedule counts as the generator falling behind. */
const LATE_NS = 5_000_000n;
/** Marks a probe record value; the send time (int64 ns) and batch number (int32) follow it. */
const TAG = 0x4c415450; // 'LATP'
/** Fill: records per batch and requests in flight. */
const FILL_RECORDS = 1000;
const FILL_IN_FLIGHT = 8;
const FETCH_WARMUP = 20;
/** The 10 GB step needs this much free space in the temporary directory. */
const BIG_LOG_FREE = 25 * GB;

interface Plan {
  rates: number[];
  seconds: number;
  warmupSeconds: number;
  fetchSizes: number[];
  fetchSamples: number;
  /** Whether Kafka's log is filled for the fetch-latency part too. */
  kafkaFetch: boolean;
}

function plan(opts: BenchOptions): Plan {
  if (opts.quick) return { rates: [50_000], seconds: 5, warmupSeconds: 2, fetchSizes: [10 * MB, 100 * MB], fetchSamples: 200, kafkaFetch: false };
  return { rates: [10_000, 50_000, 200_000], seconds: 10, warmupSeconds: 3, fetchSizes: [10 * MB, 10 * GB], fetchSamples: 200, kafkaFetch: true };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const now = (): bigint => process.hrtime.bigint();

function rateLabel(rate: number): string {
  return rate >= 1000 ? `${rate / 1000}k` : String(rate);
}

function sizeLabel(bytes: number): string {
  return bytes >= GB ? `${bytes / GB} GB` : `${bytes / MB} MB`;
}

// ---------------------------------------------------------------- topics

async function createTopic(conn: WireConnection, name: string, log: (l: string) => void): Promise<void> {
  const createTopics = api('CreateTopics');
  const body: CreateTopicsRequest = {
    topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 30_000,
    validateOnly: false,
  };
  const res = await conn.request<CreateTopicsResponse>(createTopics, CREATE_TOPICS_VERSION, body);
  const code = res.topics[0]?.errorCode ?? -1;
  if (code !== ErrorCode.NONE && code !== ErrorCode.TOPIC_ALREADY_EXISTS) throw new Error(`CreateTopics ${name}: error ${code} ${res.topics[0]?.errorMessage ?? ''}`);
  // Wait until the partition has a leader (Kafka publishes it shortly after answering).
  const metadata = api('Metadata');
  for (let i = 0; i < 300; i++) {
    const md = await conn.request<MetadataResponse, MetadataRequest>(metadata, METADATA_VERSION, {
      topics: [{ topicId: ZERO_UUID, name }],
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
    const p = md.topics[0]?.partitions[0];
    if (md.topics[0]?.errorCode === ErrorCode.NONE && p && p.errorCode === ErrorCode.NONE && p.leaderId >= 0) return;
    await sleep(20);
  }
  log(`topic ${name}: no leader after 6 s`);
  throw new Error(`topic ${name} has no leader`);
}

// ---------------------------------------------------------------- produce frames

/** A Produce frame holding one batch, with where the batch and its first record's value sit. */
interface ProduceFrame {
  readonly frame: Frame;
  readonly batchAt: number;
  readonly batchSize: number;
  /** Offset of the probe tag from the start of the batch. */
  readonly tagInBatch: number;
  busy: boolean;
}

function produceFrame(topic: string, records: number, valueBytes: number): ProduceFrame {
  const value = Buffer.alloc(valueBytes, 0x61);
  value.writeUInt32BE(TAG, 0);
  value.writeUInt32BE(0x0badf00d, 16); // makes the first value unique within the batch
  const filler = Buffer.alloc(valueBytes, 0x62);
  const batch = buildBatch({
    records: Array.from({ length: records }, (_, i) => ({ value: i === 0 ? value : filler })),
    baseTimestamp: BigInt(Date.now()),
  });
  const body: ProduceRequest = {
    transactionalId: null,
    acks: 1,
    timeoutMs: 30_000,
    topicData: [{ name: topic, topicId: ZERO_UUID, partitionData: [{ index: 0, records: batch }] }],
  };
  const f = frame(api('Produce'), PRODUCE_VERSION, body);
  const batchAt = f.bytes.indexOf(batch);
  const tagInBatch = batch.indexOf(value);
  if (batchAt < 0 || tagInBatch < 0) throw new Error('cannot find the batch in its Produce frame');
  return { frame: f, batchAt, batchSize: batch.length, tagInBatch, busy: false };
}

/** Produce frames reused once their answer is in (the socket may still hold a frame until then). */
class FramePool {
  private readonly frames: ProduceFrame[] = [];
  constructor(private readonly make: () => ProduceFrame) {}

  take(): ProduceFrame {
    const free = this.frames.find((f) => !f.busy);
    const f = free ?? this.make();
    if (!free) this.frames.push(f);
    f.busy = true;
    return f;
  }

  get size(): number {
    return this.frames.length;
  }
}

function decodeAnswer<T>(decl: MessageDecl, version: number, raw: Buffer): T {
  const r = new Reader(raw);
  const decoded = codecFor<T>(decl, version).decode(r);
  if (r.error) throw new Error(`undecodable answer: ${r.error}`);
  return decoded;
}

/** The first error code in a Produce answer, or 0. */
function produceError(raw: Buffer): number {
  const res = decodeAnswer<ProduceResponse>(api('Produce').response, PRODUCE_VERSION, raw);
  for (const t of res.responses) for (const p of t.partitionResponses) if (p.errorCode !== ErrorCode.NONE) return p.errorCode;
  return ErrorCode.NONE;
}

// ---------------------------------------------------------------- fetch

function fetchFrame(topic: string, offset: bigint, maxWaitMs: number, maxBytes: number): Frame {
  const decl = api('Fetch');
  const body: FetchRequest = {
    ...codecFor<FetchRequest>(decl.request, FETCH_VERSION).defaults(),
    clusterId: null,
    replicaId: -1,
    maxWaitMs,
    minBytes: 1,
    maxBytes,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic,
        topicId: ZERO_UUID,
        partitions: [
          {
            partition: 0,
            currentLeaderEpoch: -1,
            fetchOffset: offset,
            lastFetchedEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: maxBytes,
            replicaDirectoryId: ZERO_UUID,
            highWatermark: 9223372036854775807n,
          },
        ],
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  };
  return frame(decl, FETCH_VERSION, body);
}

interface Fetched {
  readonly errorCode: number;
  readonly records: Buffer;
  readonly highWatermark: bigint;
}

function decodeFetch(raw: Buffer): Fetched {
  const res = decodeAnswer<FetchResponse>(api('Fetch').response, FETCH_VERSION, raw);
  const p = res.responses[0]?.partitions[0];
  if (res.errorCode !== ErrorCode.NONE || !p) return { errorCode: res.errorCode || -1, records: Buffer.alloc(0), highWatermark: -1n };
  return { errorCode: p.errorCode, records: p.records ?? Buffer.alloc(0), highWatermark: p.highWatermark };
}

/** Whole batches in `records`, as [start, size] pairs; a truncated last batch is left out. */
function batchesIn(records: Buffer): [number, number][] {
  const out: [number, number][] = [];
  let at = 0;
  while (at + LOG_OVERHEAD <= records.length) {
    const size = LOG_OVERHEAD + records.readInt32BE(at + BATCH_LENGTH);
    if (size <= LOG_OVERHEAD || at + size > records.length) break;
    out.push([at, size]);
    at += size;
  }
  return out;
}

// ---------------------------------------------------------------- end to end

interface EndToEnd {
  readonly rate: number;
  readonly recordsPerBatch: number;
  /** now - send time per batch received, µs (warm-up batches left out). */
  readonly latency: Histogram;
  /** How late each send was against its schedule, µs. */
  readonly lag: Histogram;
  readonly late: number;
  readonly sentRecords: number;
  readonly receivedRecords: number;
  readonly achievedRate: number;
  readonly produceErrors: number;
  readonly fetchErrors: number;
  readonly badBatches: number;
  readonly maxInFlight: number;
  readonly firstError: string;
  /** The 1-minute load average at the end of the run (other processes share the cores). */
  readonly load: number;
}

async function endToEnd(b: RunningBroker, rate: number, p: Plan, log: (l: string) => void): Promise<EndToEnd> {
  const topic = `latency-e2e-${rateLabel(rate)}`;
  const recordsPerBatch = Math.max(1, Math.round(rate / 1000));
  const totalTicks = (p.warmupSeconds + p.seconds) * 1000;
  const warmupTicks = p.warmupSeconds * 1000;
  const producer = await WireConnection.open(b.host, b.port);
  const consumer = await WireConnection.open(b.host, b.port);
  const latency = new Histogram();
  const lag = new Histogram();
  let late = 0;
  let produceErrors = 0;
  let fetchErrors = 0;
  let badBatches = 0;
  let firstError = '';
  let receivedRecords = 0;
  let sentRecords = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const noteError = (msg: string): void => {
    if (!firstError) firstError = msg;
  };
  try {
    await createTopic(producer, topic, log);
    const pool = new FramePool(() => produceFrame(topic, recordsPerBatch, RECORD_BYTES));
    // A few frames built before the clock starts; every one has the probe value at the same place.
    const ready = Array.from({ length: 8 }, () => pool.take());
    for (const f of ready) f.busy = false;
    const tagInBatch = ready[0]!.tagInBatch;
    let producing = true;

    // Consumer: one long poll at a time, from the next offset on.
    const consume = (async () => {
      let next = 0n;
      let deadline = Infinity;
      for (let polls = 0; polls < 10_000_000; polls++) {
        if (!producing) {
          if (receivedRecords >= sentRecords) break;
          if (deadline === Infinity) deadline = performance.now() + 5000;
          if (performance.now() > deadline) break;
        }
        let raw: Buffer;
        try {
          raw = await consumer.sendFrame(fetchFrame(topic, next, LONG_POLL_MS, MiB));
        } catch (err) {
          fetchErrors++;
          noteError(`fetch: ${(err as Error).message}`);
          break;
        }
        const arrived = now();
        const f = decodeFetch(raw);
        if (f.errorCode !== ErrorCode.NONE) {
          fetchErrors++;
          noteError(`fetch error ${f.errorCode}`);
          await sleep(10);
          continue;
        }
        for (const [at, size] of batchesIn(f.records)) {
          const count = f.records.readInt32BE(at + RECORD_COUNT);
          receivedRecords += count;
          next = f.records.readBigInt64BE(at + BASE_OFFSET) + BigInt(f.records.readInt32BE(at + LAST_OFFSET_DELTA)) + 1n;
          const tagAt = at + tagInBatch;
          if (tagAt + 16 > at + size || f.records.readUInt32BE(tagAt) !== TAG) {
            badBatches++;
            continue;
          }
          const sentAt = f.records.readBigInt64BE(tagAt + 4);
          const tick = f.records.readInt32BE(tagAt + 12);
          if (tick >= warmupTicks) latency.record(Number(arrived - sentAt) / 1000);
        }
      }
    })();

    // Producer: batch k is due at start + k ms, whatever the timers did before.
    const sends: Promise<void>[] = [];
    const start = now() + 10_000_000n;
    let firstMeasured = 0n;
    let lastSend = 0n;
    let k = 0;
    while (k < totalTicks) {
      const t = now();
      while (k < totalTicks && start + BigInt(k) * TICK_NS <= t) {
        const due = start + BigInt(k) * TICK_NS;
        const pf = pool.take();
        const buf = pf.frame.bytes;
        const tagAt = pf.batchAt + pf.tagInBatch;
        const sentAt = now();
        buf.writeBigInt64BE(sentAt, tagAt + 4);
        buf.writeInt32BE(k, tagAt + 12);
        writeBatchCrc(buf, pf.batchAt, pf.batchSize);
        if (k >= warmupTicks) {
          if (k === warmupTicks) firstMeasured = sentAt;
          lag.record(Number(sentAt - due) / 1000);
          if (sentAt - due > LATE_NS) late++;
        }
        sentRecords += recordsPerBatch;
        lastSend = sentAt;
        inFlight++;
        if (inFlight > maxInFlight) maxInFlight = inFlight;
        sends.push(
          producer.sendFrame(pf.frame).then(
            (raw) => {
              inFlight--;
              pf.busy = false;
              const code = produceError(raw);
              if (code !== ErrorCode.NONE) {
                produceErrors++;
                noteError(`produce error ${code}`);
              }
            },
            (err: Error) => {
              inFlight--;
              pf.busy = false;
              produceErrors++;
              noteError(`produce: ${err.message}`);
            },
          ),
        );
        k++;
      }
      if (k >= totalTicks) break;
      const waitNs = start + BigInt(k) * TICK_NS - now();
      // setTimeout wakes a little late, never early; the schedule above absorbs it.
      if (waitNs > 0n) await sleep(Number(waitNs) / 1e6);
      else await new Promise((r) => setImmediate(r));
    }
    await Promise.all(sends);
    producing = false;
    await consume;
    const measuredRecords = (totalTicks - warmupTicks) * recordsPerBatch;
    const seconds = Number(lastSend - firstMeasured) / 1e9 + Number(TICK_NS) / 1e9;
    return {
      rate,
      recordsPerBatch,
      latency,
      lag,
      late,
      sentRecords,
      receivedRecords,
      achievedRate: measuredRecords / seconds,
      produceErrors,
      fetchErrors,
      badBatches,
      maxInFlight,
      firstError,
      load: loadavg()[0] ?? 0,
    };
  } finally {
    producer.close();
    consumer.close();
  }
}

function endToEndRows(subject: string, r: EndToEnd, seconds: number): BenchRow[] {
  const label = `${rateLabel(r.rate)} rec/s`;
  const errors = r.produceErrors + r.fetchErrors + r.badBatches;
  const lost = r.sentRecords - r.receivedRecords;
  const note =
    `achieved ${Math.round(r.achievedRate).toLocaleString('en-US')} rec/s over ${seconds} s, ` +
    `${r.latency.count} batches of ${r.recordsPerBatch} x ${RECORD_BYTES} B; ` +
    `send lag p99 ${Math.round(r.lag.percentile(99))} µs max ${Math.round(r.lag.max)} µs, ${r.late} sends >5 ms late; ` +
    `max ${r.maxInFlight} produce in flight; load avg ${r.load.toFixed(1)}; ` +
    (errors === 0 && lost === 0 ? 'no errors' : `errors: ${r.produceErrors} produce, ${r.fetchErrors} fetch, ${r.badBatches} bad batches, ${lost} records not consumed${r.firstError ? ` (${r.firstError})` : ''}`);
  const row = (what: string, value: number, n?: string): BenchRow => ({
    module: MODULE,
    scenario: `e2e ${what} @ ${label}`,
    subject,
    value,
    unit: 'µs',
    better: 'lower',
    ...(n ? { note: n } : {}),
  });
  return [
    row('p50', r.latency.percentile(50), note),
    row('p99', r.latency.percentile(99), r.rate === 50_000 ? 'goal: <= 5,000 µs and <= Kafka' : undefined),
    row('p999', r.latency.percentile(99.9)),
    row('max', r.latency.max),
  ];
}

// ---------------------------------------------------------------- fetch latency vs log size

interface FetchAtSize {
  readonly size: number;
  readonly skipped: string;
  readonly latency: Histogram;
  readonly errors: number;
  readonly fillMBps: number;
  readonly logRecords: bigint;
  readonly firstError: string;
}

/** Sends fill batches, FILL_IN_FLIGHT at a time, until `target` bytes of batches are acknowledged. */
async function fill(conn: WireConnection, pool: FramePool, state: { bytes: number; records: bigint }, target: number): Promise<void> {
  let inFlight = 0;
  let sentBytes = state.bytes;
  let failed: Error | null = null;
  await new Promise<void>((resolve) => {
    const pump = (): void => {
      while (!failed && inFlight < FILL_IN_FLIGHT && sentBytes < target) {
        const pf = pool.take();
        sentBytes += pf.batchSize;
        inFlight++;
        conn.sendFrame(pf.frame).then(
          (raw) => {
            inFlight--;
            pf.busy = false;
            const code = produceError(raw);
            if (code !== ErrorCode.NONE) failed ??= new Error(`fill: produce error ${code}`);
            else {
              state.bytes += pf.batchSize;
              state.records += BigInt(FILL_RECORDS);
            }
            pump();
          },
          (err: Error) => {
            inFlight--;
            pf.busy = false;
            failed ??= err;
            pump();
          },
        );
      }
      if (inFlight === 0) resolve();
    };
    pump();
  });
  if (failed) throw failed;
}

async function fetchLatency(b: RunningBroker, p: Plan, log: (l: string) => void): Promise<FetchAtSize[]> {
  const topic = 'latency-fetch';
  const conn = await WireConnection.open(b.host, b.port);
  const out: FetchAtSize[] = [];
  try {
    await createTopic(conn, topic, log);
    const pool = new FramePool(() => produceFrame(topic, FILL_RECORDS, RECORD_BYTES));
    const state = { bytes: 0, records: 0n };
    const random = seededRandom(20240607);
    for (const size of p.fetchSizes) {
      const latency = new Histogram();
      if (size > 1 * GB) {
        const free = statfsSync(tmpdir());
        const freeBytes = free.bavail * free.bsize;
        if (freeBytes < BIG_LOG_FREE) {
          const skipped = `skipped: ${(freeBytes / GB).toFixed(1)} GB free in ${tmpdir()}, needs ${BIG_LOG_FREE / GB} GB`;
          log(`${b.name}: fetch latency at ${sizeLabel(size)} ${skipped}`);
          out.push({ size, skipped, latency, errors: 0, fillMBps: 0, logRecords: state.records, firstError: '' });
          continue;
        }
      }
      log(`${b.name}: filling the log to ${sizeLabel(size)}`);
      const before = state.bytes;
      const t0 = performance.now();
      await fill(conn, pool, state, size);
      const fillMBps = (state.bytes - before) / MB / ((performance.now() - t0) / 1000);
      let errors = 0;
      let firstError = '';
      for (let i = 0; i < FETCH_WARMUP + p.fetchSamples; i++) {
        const offset = BigInt(Math.floor(random() * Number(state.records)));
        const f = fetchFrame(topic, offset, LONG_POLL_MS, MiB);
        const t = now();
        const raw = await conn.sendFrame(f);
        const us = Number(now() - t) / 1000;
        const got = decodeFetch(raw);
        const batches = batchesIn(got.records);
        const first = batches[0];
        let ok = got.errorCode === ErrorCode.NONE && first !== undefined;
        if (ok && first) {
          const base = got.records.readBigInt64BE(first[0] + BASE_OFFSET);
          const last = base + BigInt(got.records.readInt32BE(first[0] + LAST_OFFSET_DELTA));
          ok = base <= offset && offset <= last;
        }
        if (!ok) {
          errors++;
          if (!firstError) firstError = got.errorCode !== ErrorCode.NONE ? `fetch error ${got.errorCode}` : `offset ${offset}: answer does not start at its batch`;
        }
        if (i >= FETCH_WARMUP) latency.record(us);
      }
      out.push({ size, skipped: '', latency, errors, fillMBps, logRecords: state.records, firstError });
    }
  } finally {
    conn.close();
  }
  return out;
}

function fetchRows(subject: string, results: FetchAtSize[]): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const r of results) {
    if (r.skipped) continue;
    const base = { module: MODULE, subject, unit: 'µs', better: 'lower' as const };
    const note =
      `${r.latency.count} fetches of 1 MiB at random offsets of ${r.logRecords.toLocaleString('en-US')} records, ` +
      `filled at ${Math.round(r.fillMBps)} MB/s; ` +
      (r.errors === 0 ? 'no errors' : `${r.errors} errors (${r.firstError})`);
    rows.push({ ...base, scenario: `fetch 1 MiB p50 @ ${sizeLabel(r.size)} log`, value: r.latency.percentile(50), note });
    rows.push({ ...base, scenario: `fetch 1 MiB p99 @ ${sizeLabel(r.size)} log`, value: r.latency.percentile(99) });
  }
  const small = results[0];
  const large = results[results.length - 1];
  if (small && large && small !== large) {
    const label = `fetch p50 ${sizeLabel(large.size)}/${sizeLabel(small.size)}`;
    if (large.skipped) {
      rows.push({ module: MODULE, scenario: label, subject, value: NaN, unit: 'x', better: 'lower', note: large.skipped });
    } else {
      const ratio = large.latency.percentile(50) / small.latency.percentile(50);
      const p99 = large.latency.percentile(99) / small.latency.percentile(99);
      rows.push({ module: MODULE, scenario: label, subject, value: ratio, unit: 'x', better: 'lower', note: `p99 ratio ${p99.toFixed(2)}; goal (10 GB vs 10 MB): <= 1.2` });
    }
  }
  return rows;
}

// ---------------------------------------------------------------- the module

async function measure(b: RunningBroker, p: Plan, withFetch: boolean, log: (l: string) => void): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const rate of p.rates) {
    log(`${b.name}: end-to-end latency at ${rate.toLocaleString('en-US')} records/s for ${p.seconds} s (+${p.warmupSeconds} s warm-up)`);
    rows.push(...endToEndRows(b.name, await endToEnd(b, rate, p, log), p.seconds));
  }
  if (withFetch) rows.push(...fetchRows(b.name, await fetchLatency(b, p, log)));
  return rows;
}

export const run: BenchModule = async (opts) => {
  const p = plan(opts);
  const rows: BenchRow[] = [];
  const gregor = await startGregor();
  try {
    rows.push(...(await measure(gregor, p, true, opts.log)));
  } finally {
    await gregor.stop();
  }
  if (opts.kafka) {
    const kafka = await startKafka();
    try {
      rows.push(...(await measure(kafka, p, p.kafkaFetch, opts.log)));
    } finally {
      await kafka.stop();
    }
  }
  if (opts.kfake !== false) {
    // End to end only: kfake holds its log in memory, so a 10 GB fill is not for it.
    const kfake = await startKfake();
    if (!kfake) {
      opts.log(`kfake: ${KFAKE_INSTALL}`);
      rows.push({ module: MODULE, scenario: 'e2e latency', subject: 'kfake', value: NaN, unit: 'µs', better: 'lower', note: `MISSING: ${KFAKE_INSTALL}` });
    } else {
      try {
        rows.push(...(await measure(kfake, p, false, opts.log)));
      } finally {
        await kfake.stop();
      }
    }
  }
  return rows;
};

// ---------------------------------------------------------------- alone

runStandalone('latency', import.meta.url, run);

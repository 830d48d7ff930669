/**
 * The throughput benchmark's load generator: raw Produce requests carrying
 * pre-encoded RecordBatch v2 bodies, and a consumer that reads what was
 * produced with Fetch, counting records from batch headers only.
 *
 * The produce side encodes one Produce v9 frame (cluster/kafka-connection.ts `frame`)
 * per in-flight slot and reuses it: only the correlation id and the partition
 * index are written into the frame before each send, and a slot's frame is not
 * touched again until the answer to its last send has arrived (or, with acks=0,
 * until the socket has taken its bytes), so a frame still queued in a socket is
 * never modified. Answers are decoded and every partition error code counted.
 *
 * The consume side splits the partitions over its connections; each connection
 * asks for all of its partitions in one Fetch v12 request, then for the next
 * offsets once the answer is in. Records are counted from the record count of
 * each batch header (byte 57), never decoded.
 *
 * Example:
 *   await createTopic('127.0.0.1', 9092, 't', 8);
 *   const p = await produceLoad('127.0.0.1', 9092, { ...DEFAULT_LOAD, topic: 't', partitions: 8, recordSize: 100, durationMs: 5000 });
 *   const c = await consumeLoad('127.0.0.1', 9092, { topic: 't', targets: p.ackedPerPartition, connections: 4 });
 *   // p.recordsPerSec, c.recordsPerSec, p.errors
 */
import { codecFor } from '../wire/codec.js';
import { errorName } from '../wire/errors.js';
import type { CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import type { FetchRequest } from '../wire/messages/fetch-request.js';
import type { FetchResponse } from '../wire/messages/fetch-response.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import type { ProduceResponse } from '../wire/messages/produce-response.js';
import { Reader, ZERO_UUID } from '../wire/reader.js';
import { BATCH_LENGTH, BASE_OFFSET, LAST_OFFSET_DELTA, LOG_OVERHEAD, RECORD_COUNT, BATCH_HEADER_SIZE, buildBatch } from '../wire/record-batch.js';
import { LoadConnection, api, frame, WireConnection } from '../cluster/inter-broker/kafka-connection.js';

export const PRODUCE_VERSION = 9;
export const FETCH_VERSION = 12;

/** The generator's settings; the same for every subject of a run. */
export interface LoadSettings {
  /** Connections the produce side opens (the consume side opens at most this many). */
  readonly connections: number;
  /** Produce requests in flight on each connection. */
  readonly depth: number;
  /** Value bytes per record (keys are null). */
  readonly recordSize: number;
  readonly recordsPerBatch: number;
  /** 1, 0 or -1. */
  readonly acks: number;
  /** Records per second for all connections together; 0 for as fast as answers come. */
  readonly targetRate: number;
}

/** Batches of about 16 KiB, as the Java producer's default batch.size. Example: recordsPerBatchFor(100) === 163. */
export function recordsPerBatchFor(recordSize: number): number {
  return Math.max(1, Math.floor(16384 / recordSize));
}

/** One RecordBatch v2 of `count` records of `size` value bytes, no key, no compression. */
export function benchBatch(size: number, count: number): Buffer {
  const value = Buffer.alloc(size);
  for (let i = 0; i < size; i++) value[i] = 97 + ((i * 7919) % 26);
  return buildBatch({ records: Array.from({ length: count }, () => ({ key: null, value })) });
}

// ---------------------------------------------------------------- connection


// ---------------------------------------------------------------- topics

/**
 * Creates `topic` with `partitions` partitions (replication factor 1) and waits
 * until Metadata names a leader for each. Throws on any error but an existing topic.
 */
export async function createTopic(host: string, port: number, topic: string, partitions: number, timeoutMs = 30_000): Promise<void> {
  const c = await WireConnection.open(host, port);
  try {
    const res = await c.request<CreateTopicsResponse>(api('CreateTopics'), 7, {
      topics: [{ name: topic, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    const t = res.topics[0];
    if (!t || (t.errorCode !== 0 && t.errorCode !== 36)) throw new Error(`CreateTopics ${topic}: ${t ? errorName(t.errorCode) : 'no answer'} ${t?.errorMessage ?? ''}`);
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const md = await c.request<MetadataResponse>(api('Metadata'), 12, {
        topics: [{ topicId: ZERO_UUID, name: topic }],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false,
      });
      const mt = md.topics.find((x) => x.name === topic);
      if (mt && mt.errorCode === 0 && mt.partitions.length === partitions && mt.partitions.every((p) => p.errorCode === 0 && p.leaderId >= 0)) return;
      await new Promise((r) => setTimeout(r, Math.min(200, 10 * (attempt + 1))));
    }
    throw new Error(`topic ${topic} has no leader for all ${partitions} partitions after ${timeoutMs} ms`);
  } finally {
    c.close();
  }
}

/**
 * Produces one record to each partition until every partition accepts it (a
 * broker can list a leader in Metadata before the partition takes writes).
 * Returns the records written per partition and the refusals seen on the way.
 */
export async function awaitWritable(host: string, port: number, topic: string, partitions: number, recordSize: number, timeoutMs = 30_000): Promise<{ acked: number[]; refusals: Map<string, number> }> {
  const produceApi = api('Produce');
  const decode = codecFor<ProduceResponse>(produceApi.response, PRODUCE_VERSION);
  const batch = benchBatch(recordSize, 1);
  const acked = new Array<number>(partitions).fill(0);
  const refusals = new Map<string, number>();
  const c = await WireConnection.open(host, port);
  try {
    let open = Array.from({ length: partitions }, (_, i) => i);
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 0; open.length > 0; attempt++) {
      if (Date.now() > deadline) throw new Error(`partitions ${open.join(',')} of ${topic} still refuse writes after ${timeoutMs} ms: ${describeErrors(refusals)}`);
      const f = frame<ProduceRequest>(produceApi, PRODUCE_VERSION, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 30_000,
        topicData: [{ name: topic, topicId: ZERO_UUID, partitionData: open.map((index) => ({ index, records: batch })) }],
      });
      const r = new Reader(await c.sendFrame(f));
      const res = decode.decode(r);
      if (r.error) throw new Error(`undecodable Produce answer: ${r.error}`);
      for (const t of res.responses) {
        for (const p of t.partitionResponses) {
          if (p.errorCode === 0) acked[p.index]! += 1;
          else refusals.set(errorName(p.errorCode), (refusals.get(errorName(p.errorCode)) ?? 0) + 1);
        }
      }
      open = open.filter((i) => acked[i] === 0);
      if (open.length > 0) await new Promise((res) => setTimeout(res, Math.min(200, 20 * (attempt + 1))));
    }
    return { acked, refusals };
  } finally {
    c.close();
  }
}

// ---------------------------------------------------------------- produce

/** What a produce or consume load measured. */
export interface LoadResult {
  /** Records acknowledged (produce: in the measured window, after the warm-up) or read. */
  readonly records: number;
  /** Batch bytes (records included, request framing not) those records took. */
  readonly bytes: number;
  readonly requests: number;
  readonly elapsedMs: number;
  readonly recordsPerSec: number;
  readonly mbPerSec: number;
  /** Error code name -> partitions answered with it (produce: warm-up included). */
  readonly errors: ReadonlyMap<string, number>;
  /** Answers with throttleTimeMs > 0. */
  readonly throttled: number;
  /** Requests that failed at the connection level (closed, undecodable). */
  readonly failures: readonly string[];
}

export interface ProduceResult extends LoadResult {
  /** Records acknowledged per partition, warm-up included: what a consumer will find. */
  readonly ackedPerPartition: readonly number[];
}

export interface ProduceOptions extends LoadSettings {
  readonly topic: string;
  readonly partitions: number;
  readonly warmupMs: number;
  readonly durationMs: number;
}

/** Finds where `base` and `other` differ: the 4 bytes of the partition index. */
function partitionIndexAt(base: Buffer, other: Buffer): number {
  for (let i = 0; i < base.length; i++) if (base[i] !== other[i]) return i;
  throw new Error('cannot locate the partition index in the Produce frame');
}

/**
 * Sends Produce requests, one batch for one partition each, round-robin over
 * the partitions, from `connections` x `depth` slots, for warmupMs + durationMs;
 * counts what is acknowledged after the warm-up.
 */
export async function produceLoad(host: string, port: number, o: ProduceOptions): Promise<ProduceResult> {
  const batch = benchBatch(o.recordSize, o.recordsPerBatch);
  const produceApi = api('Produce');
  const body = (index: number): ProduceRequest => ({
    transactionalId: null,
    acks: o.acks,
    timeoutMs: 30_000,
    topicData: [{ name: o.topic, topicId: ZERO_UUID, partitionData: [{ index, records: batch }] }],
  });
  const template = frame(produceApi, PRODUCE_VERSION, body(0)).bytes;
  const indexAt = partitionIndexAt(template, frame(produceApi, PRODUCE_VERSION, body(0x5a5a5a5a)).bytes);
  const decodeAnswer = codecFor<ProduceResponse>(produceApi.response, PRODUCE_VERSION);
  const noResponse = o.acks === 0;

  const conns: LoadConnection[] = [];
  try {
    for (let i = 0; i < o.connections; i++) conns.push(await LoadConnection.open(host, port));
    const errors = new Map<string, number>();
    const failures: string[] = [];
    const ackedPerPartition = new Array<number>(o.partitions).fill(0);
    let throttled = 0;
    let nextPartition = 0;
    let sentRecords = 0;
    let windowRecords = 0;
    let windowRequests = 0;
    const start = performance.now();
    const windowStart = start + o.warmupMs;
    const stopAt = windowStart + o.durationMs;
    let lastAnswerAt = windowStart;

    const slot = (conn: LoadConnection): Promise<void> =>
      new Promise((resolve) => {
        const bytes = Buffer.from(template);
        const step = (): void => {
          const now = performance.now();
          if (now >= stopAt || failures.length > 0) return resolve();
          if (o.targetRate > 0) {
            const due = start + (sentRecords / o.targetRate) * 1000;
            if (due > now + 1) {
              setTimeout(step, Math.min(due - now, 50));
              return;
            }
          }
          const partition = nextPartition;
          nextPartition = (nextPartition + 1) % o.partitions;
          bytes.writeInt32BE(partition, indexAt);
          sentRecords += o.recordsPerBatch;
          conn.send(bytes, true, noResponse, (answer, err) => {
            const at = performance.now();
            if (err) {
              failures.push(err.message);
              return resolve();
            }
            let ok = true;
            if (answer) {
              const r = new Reader(answer);
              const res = decodeAnswer.decode(r);
              if (r.error) {
                failures.push(`undecodable Produce answer: ${r.error}`);
                return resolve();
              }
              if (res.throttleTimeMs > 0) throttled++;
              for (const t of res.responses) {
                for (const p of t.partitionResponses) {
                  if (p.errorCode !== 0) {
                    ok = false;
                    const name = errorName(p.errorCode);
                    errors.set(name, (errors.get(name) ?? 0) + 1);
                  }
                }
              }
            }
            if (ok) {
              ackedPerPartition[partition]! += o.recordsPerBatch;
              if (at >= windowStart) {
                windowRecords += o.recordsPerBatch;
                windowRequests++;
                lastAnswerAt = at;
              }
            }
            // Continue on a fresh stack so that answers arriving in one chunk do not recurse.
            if (noResponse) setImmediate(step);
            else step();
          });
        };
        step();
      });

    await Promise.all(conns.flatMap((c) => Array.from({ length: o.depth }, () => slot(c))));
    const elapsedMs = Math.max(1, lastAnswerAt - windowStart);
    const bytes = windowRequests * batch.length;
    return {
      records: windowRecords,
      bytes,
      requests: windowRequests,
      elapsedMs,
      recordsPerSec: (windowRecords / elapsedMs) * 1000,
      mbPerSec: bytes / 1e6 / (elapsedMs / 1000),
      errors,
      throttled,
      ackedPerPartition,
      failures,
    };
  } finally {
    for (const c of conns) c.close();
  }
}

// ---------------------------------------------------------------- consume

export interface ConsumeOptions {
  readonly topic: string;
  /** Records to read from each partition, from offset 0. */
  readonly targets: readonly number[];
  readonly connections: number;
  /** partitionMaxBytes of each partition in a request. */
  readonly partitionMaxBytes: number;
  /** maxBytes of a request. */
  readonly maxBytes: number;
  /** Give up when no records came for this long. */
  readonly stallMs: number;
  /** Stop (with the pass unfinished) after this long; 0 for no limit. */
  readonly maxMs?: number;
}

export interface ConsumeResult extends LoadResult {
  /** Whether maxMs ended the pass before every target was read. */
  readonly cut: boolean;
}

interface PartitionCursor {
  readonly partition: number;
  readonly target: number;
  offset: bigint;
  count: number;
}

/**
 * Reads every partition from offset 0 until `targets[p]` records came (or a
 * stall), with Fetch v12 requests for all of a connection's partitions at once.
 */
export async function consumeLoad(host: string, port: number, o: ConsumeOptions): Promise<ConsumeResult> {
  const fetchApi = api('Fetch');
  const decode = codecFor<FetchResponse>(fetchApi.response, FETCH_VERSION);
  const cursors: PartitionCursor[] = o.targets.map((target, partition) => ({ partition, target, offset: 0n, count: 0 }));
  const groups: PartitionCursor[][] = Array.from({ length: Math.max(1, Math.min(o.connections, cursors.length)) }, () => []);
  cursors.forEach((c, i) => groups[i % groups.length]!.push(c));
  const conns: LoadConnection[] = [];
  const errors = new Map<string, number>();
  const failures: string[] = [];
  let records = 0;
  let bytes = 0;
  let requests = 0;
  let throttled = 0;
  let cut = false;
  try {
    for (let i = 0; i < groups.length; i++) conns.push(await LoadConnection.open(host, port));
    const start = performance.now();
    let lastRecordAt = start;

    const run = (conn: LoadConnection, group: PartitionCursor[]): Promise<void> =>
      new Promise((resolve) => {
        const step = (): void => {
          const open = group.filter((c) => c.count < c.target);
          if (open.length === 0 || failures.length > 0) return resolve();
          if (o.maxMs && performance.now() - start >= o.maxMs) {
            cut = true;
            return resolve();
          }
          if (performance.now() - lastRecordAt > o.stallMs) {
            failures.push(`no records for ${o.stallMs} ms with ${open.length} partitions unfinished`);
            return resolve();
          }
          const req: FetchRequest = {
            clusterId: null,
            replicaId: -1,
            replicaState: { replicaId: -1, replicaEpoch: -1n },
            maxWaitMs: 100,
            minBytes: 1,
            maxBytes: o.maxBytes,
            isolationLevel: 0,
            sessionId: 0,
            sessionEpoch: -1,
            topics: [
              {
                topic: o.topic,
                topicId: ZERO_UUID,
                partitions: open.map((c) => ({
                  partition: c.partition,
                  currentLeaderEpoch: -1,
                  fetchOffset: c.offset,
                  lastFetchedEpoch: -1,
                  logStartOffset: -1n,
                  partitionMaxBytes: o.partitionMaxBytes,
                  replicaDirectoryId: ZERO_UUID,
                  highWatermark: 9223372036854775807n,
                })),
              },
            ],
            forgottenTopicsData: [],
            rackId: '',
          };
          requests++;
          conn.send(frame(fetchApi, FETCH_VERSION, req).bytes, true, false, (answer, err) => {
            if (err || !answer) {
              failures.push(err?.message ?? 'no answer');
              return resolve();
            }
            const r = new Reader(answer);
            const res = decode.decode(r);
            if (r.error) {
              failures.push(`undecodable Fetch answer: ${r.error}`);
              return resolve();
            }
            if (res.throttleTimeMs > 0) throttled++;
            if (res.errorCode !== 0) errors.set(errorName(res.errorCode), (errors.get(errorName(res.errorCode)) ?? 0) + 1);
            for (const t of res.responses) {
              for (const p of t.partitions) {
                const cur = cursors[p.partitionIndex];
                if (p.errorCode !== 0 || !cur) {
                  const name = cur ? errorName(p.errorCode) : `unasked partition ${p.partitionIndex}`;
                  errors.set(name, (errors.get(name) ?? 0) + 1);
                  continue;
                }
                const recs = p.records;
                if (!recs) continue;
                let at = 0;
                let got = 0;
                while (recs.length - at >= BATCH_HEADER_SIZE) {
                  const size = LOG_OVERHEAD + recs.readInt32BE(at + BATCH_LENGTH);
                  if (recs.length - at < size) break;
                  got += recs.readInt32BE(at + RECORD_COUNT);
                  cur.offset = recs.readBigInt64BE(at + BASE_OFFSET) + BigInt(recs.readInt32BE(at + LAST_OFFSET_DELTA)) + 1n;
                  bytes += size;
                  at += size;
                }
                if (got > 0) {
                  cur.count += got;
                  records += got;
                  lastRecordAt = performance.now();
                }
              }
            }
            step();
          });
        };
        step();
      });

    await Promise.all(groups.map((g, i) => run(conns[i]!, g)));
    const elapsedMs = Math.max(1, lastRecordAt - start);
    return {
      records,
      bytes,
      requests,
      elapsedMs,
      recordsPerSec: (records / elapsedMs) * 1000,
      mbPerSec: bytes / 1e6 / (elapsedMs / 1000),
      errors,
      throttled,
      failures,
      cut,
    };
  } finally {
    for (const c of conns) c.close();
  }
}

/** "NOT_LEADER_OR_FOLLOWER x3, ..." or '' for no errors. */
export function describeErrors(errors: ReadonlyMap<string, number>): string {
  return [...errors].map(([name, n]) => `${name} x${n}`).join(', ');
}

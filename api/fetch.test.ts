import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { buildBatch, Compression } from '../wire/record-batch.js';
import { parseMessageSet } from '../wire/legacy-message-set.js';
import { FetchRequest, type FetchRequest as FetchRequestT } from '../wire/messages/fetch-request.js';
import { FetchResponse, type FetchResponse as FetchResponseT, type PartitionData } from '../wire/messages/fetch-response.js';
import { fetch, fetchSessionsOf } from './fetch.js';
import { ctxFor, testServices, type TestServices, type TestSettings } from './test-services.js';
import { seededRandom } from '../wire/seeded-random.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(settings: TestSettings = {}): Promise<TestServices> {
  const s = testServices(settings);
  open.push(s);
  await s.metadata.createTopic({ name: 'orders', numPartitions: 3, replicationFactor: 1 });
  return s;
}

function batch(n: number, tag = 'v', compression = Compression.None): Buffer {
  return buildBatch({ compression, records: Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `${tag}${i}`, timestamp: 1000n + BigInt(i) })) });
}

/** Appends batches to a partition the way Produce does; returns their sizes. */
function produce(s: TestServices, partition: number, ...batches: Buffer[]): number[] {
  return batches.map((b) => {
    const size = b.length;
    const r = s.replicas.appendRecords('orders', partition, Buffer.from(b), -1);
    expect(r.errorCode).toBe(ErrorCode.NONE);
    return size;
  });
}

interface Part {
  partition: number;
  fetchOffset: bigint;
  partitionMaxBytes?: number;
  currentLeaderEpoch?: number;
}

function request(topics: { topic?: string; topicId?: string; partitions: Part[] }[], opts: Partial<FetchRequestT> = {}): FetchRequestT {
  return {
    clusterId: null,
    replicaId: -1,
    replicaState: { replicaId: -1, replicaEpoch: -1n },
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 0x7fffffff,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: topics.map((t) => ({
      topic: t.topic ?? 'orders',
      topicId: t.topicId ?? ZERO_UUID,
      partitions: t.partitions.map((p) => ({
        partition: p.partition,
        currentLeaderEpoch: p.currentLeaderEpoch ?? -1,
        fetchOffset: p.fetchOffset,
        lastFetchedEpoch: -1,
        logStartOffset: -1n,
        partitionMaxBytes: p.partitionMaxBytes ?? 1 << 20,
        replicaDirectoryId: ZERO_UUID,
        highWatermark: 9223372036854775807n,
      })),
    })),
    forgottenTopicsData: [],
    rackId: '',
    ...opts,
  };
}

/** Sends the request through the codec, the handler and back, as a client would see it. */
async function send(s: TestServices, version: number, req: FetchRequestT): Promise<FetchResponseT> {
  const decoded = decode<FetchRequestT>(FetchRequest, version, encode(FetchRequest, version, req));
  if (!decoded.ok) throw new Error(decoded.error);
  const res = await fetch.handle(decoded.value, ctxFor(s, version));
  const back = decode<FetchResponseT>(FetchResponse, version, encode(FetchResponse, version, res as FetchResponseT));
  if (!back.ok) throw new Error(back.error);
  return back.value;
}

function only(res: FetchResponseT, partition = 0): PartitionData {
  const p = res.responses.flatMap((t) => t.partitions).find((x) => x.partitionIndex === partition);
  if (!p) throw new Error(`partition ${partition} missing from ${JSON.stringify(res.responses.map((t) => t.partitions.map((x) => x.partitionIndex)))}`);
  return p;
}

/** Base offsets of the v2 batches in a record set. */
function baseOffsets(records: Buffer | null): bigint[] {
  const out: bigint[] = [];
  for (let at = 0; records && at + 12 <= records.length; at += 12 + records.readInt32BE(at + 8)) out.push(records.readBigInt64BE(at));
  return out;
}

/** Bytes of the whole magic 0/1 entries at the start of a message set. */
function wholeEntries(set: Buffer): number {
  let at = 0;
  while (at + 12 <= set.length && at + 12 + set.readInt32BE(at + 8) <= set.length) at += 12 + set.readInt32BE(at + 8);
  return at;
}

describe('Fetch reads', () => {
  it('returns whole batches from the one holding the fetch offset, with the partition offsets', async () => {
    const s = await services();
    produce(s, 0, batch(3), batch(2), batch(4));
    const res = await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 4n }] }]));
    const p = only(res);
    expect(p).toMatchObject({ errorCode: 0, highWatermark: 9n, lastStableOffset: 9n, logStartOffset: 0n, preferredReadReplica: -1, abortedTransactions: null });
    expect(baseOffsets(p.records)).toEqual([3n, 5n]);
    expect(res.sessionId).toBe(0);
    expect(res.errorCode).toBe(0);
  });

  it('refuses clients older than Fetch v10 on a topic whose compression.type is zstd, as Kafka does', async () => {
    const s = testServices({}, undefined, { followTopicConfigs: true });
    open.push(s);
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1, configs: { 'compression.type': 'zstd' } });
    produce(s, 0, batch(3));
    expect(only(await send(s, 9, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }]))).errorCode).toBe(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
    const v10 = only(await send(s, 10, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }])));
    expect(v10.errorCode).toBe(ErrorCode.NONE);
    expect(baseOffsets(v10.records)).toEqual([0n]);
  });

  it('answers aborted_transactions null for read_uncommitted and [] for read_committed', async () => {
    const s = await services();
    produce(s, 0, batch(1));
    const uncommitted = only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { isolationLevel: 0 })));
    const committed = only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { isolationLevel: 1 })));
    expect(uncommitted.abortedTransactions).toBeNull();
    expect(committed.abortedTransactions).toEqual([]);
    expect(committed.lastStableOffset).toBe(1n);
  });

  it('stops read_committed at an open transaction and lists aborted transactions once they end', async () => {
    const s = await services();
    // Timestamps of now, as the marker's, so that segment.ms does not roll the segment before it.
    const now = BigInt(Date.now());
    const plain = (): Buffer => buildBatch({ records: [{ value: 'p', timestamp: now }] });
    const txn = buildBatch({ producerId: 7n, producerEpoch: 0, baseSequence: 0, transactional: true, records: [{ value: 'a0', timestamp: now }, { value: 'a1', timestamp: now }] });
    produce(s, 0, plain()); // 0
    produce(s, 0, txn); // 1..2, producer 7's transaction, still open
    produce(s, 0, plain()); // 3
    const read = async (isolationLevel: number) => only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { isolationLevel })));
    let committed = await read(1);
    expect([committed.highWatermark, committed.lastStableOffset]).toEqual([4n, 1n]);
    expect(baseOffsets(committed.records)).toEqual([0n]);
    expect(committed.abortedTransactions).toEqual([]);
    expect(baseOffsets((await read(0)).records)).toEqual([0n, 1n, 3n]);

    const [marker] = await s.replicas.writeMarkers({ producerId: 7n, producerEpoch: 0, coordinatorEpoch: 0, commit: false, partitions: [{ topic: 'orders', partition: 0 }] });
    expect(marker!.errorCode).toBe(ErrorCode.NONE); // the ABORT marker at 4
    committed = await read(1);
    expect([committed.highWatermark, committed.lastStableOffset]).toEqual([5n, 5n]);
    expect(baseOffsets(committed.records)).toEqual([0n, 1n, 3n, 4n]);
    expect(committed.abortedTransactions).toEqual([{ producerId: 7n, firstOffset: 1n }]);
    // The transaction spans 1..4 (its marker): a fetch from 3 is told of it, one from past the marker is not.
    const from = async (fetchOffset: bigint) => only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset }] }], { isolationLevel: 1 })));
    expect((await from(3n)).abortedTransactions).toEqual([{ producerId: 7n, firstOffset: 1n }]);
    produce(s, 0, plain()); // 5
    const later = await from(5n);
    expect(baseOffsets(later.records)).toEqual([5n]);
    expect(later.abortedTransactions).toEqual([]);
  });

  it('tells a read_committed fetch of one segment of an aborted transaction whose marker is in the next', async () => {
    const s = await services();
    const now = BigInt(Date.now());
    const plain = (): Buffer => buildBatch({ records: [{ value: 'p', timestamp: now }] });
    produce(s, 0, buildBatch({ producerId: 7n, producerEpoch: 0, baseSequence: 0, transactional: true, records: [{ value: 'a', timestamp: now }] })); // 0
    s.replicas.logFor('orders', 0)!.roll(); // segment 1 from offset 1
    produce(s, 0, plain()); // 1
    await s.replicas.writeMarkers({ producerId: 7n, producerEpoch: 0, coordinatorEpoch: 0, commit: false, partitions: [{ topic: 'orders', partition: 0 }] }); // 2
    s.replicas.logFor('orders', 0)!.roll(); // segment 2 from offset 3
    produce(s, 0, buildBatch({ producerId: 8n, producerEpoch: 0, baseSequence: 0, transactional: true, records: [{ value: 'b', timestamp: now }] })); // 3
    await s.replicas.writeMarkers({ producerId: 8n, producerEpoch: 0, coordinatorEpoch: 0, commit: false, partitions: [{ topic: 'orders', partition: 0 }] }); // 4
    const from = async (fetchOffset: bigint) => only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset }] }], { isolationLevel: 1 })));
    const first = await from(0n);
    expect(baseOffsets(first.records)).toEqual([0n]);
    expect(first.abortedTransactions).toEqual([{ producerId: 7n, firstOffset: 0n }]);
    // A read stays within its segment: producer 8's transaction, in the next one, is for the read after.
    const second = await from(1n);
    expect(baseOffsets(second.records)).toEqual([1n, 2n]);
    expect(second.abortedTransactions).toEqual([{ producerId: 7n, firstOffset: 0n }]);
    expect((await from(3n)).abortedTransactions).toEqual([{ producerId: 8n, firstOffset: 3n }]);
  });

  it('applies KIP-74: the first batch goes out whole past both limits, later partitions stop at them', async () => {
    const s = await services();
    const [a] = produce(s, 0, batch(5), batch(5));
    produce(s, 1, batch(2));
    const tiny = request([{ partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 10 }, { partition: 1, fetchOffset: 0n }] }], { maxBytes: 10 });
    const res = await send(s, 11, tiny);
    expect(baseOffsets(only(res, 0).records)).toEqual([0n]);
    expect(only(res, 0).records!.length).toBe(a);
    expect(only(res, 1).records!.length).toBe(0);
    // Partition limit between one and two batches: one batch; the rest of max_bytes serves partition 1.
    const mid = request([{ partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: a! + 10 }, { partition: 1, fetchOffset: 0n }] }]);
    const res2 = await send(s, 11, mid);
    expect(baseOffsets(only(res2, 0).records)).toEqual([0n]);
    expect(baseOffsets(only(res2, 1).records)).toEqual([0n]);
    // The response-wide limit is shared: after partition 0 took one batch nothing is left for partition 1.
    const shared = request([{ partitions: [{ partition: 0, fetchOffset: 0n }, { partition: 1, fetchOffset: 0n }] }], { maxBytes: a! + 5 });
    const res3 = await send(s, 11, shared);
    expect(baseOffsets(only(res3, 0).records)).toEqual([0n]);
    expect(only(res3, 1).records!.length).toBe(0);
    // fetch.max.bytes caps what the request asks for.
    const capped = await services({ config: { 'fetch.max.bytes': a! + 5 } });
    produce(capped, 0, batch(5), batch(5));
    expect(baseOffsets(only(await send(capped, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }]))).records)).toEqual([0n]);
  });

  it('keeps the limits hard before v3: a first batch over them is not returned', async () => {
    const s = await services();
    const [a] = produce(s, 0, batch(5));
    const p = only(await send(s, 2, request([{ partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: a! - 1 }] }])));
    expect(p.errorCode).toBe(0);
    expect(p.records!.length).toBe(0);
  });

  it('answers OFFSET_OUT_OF_RANGE below the log start and above the log end, and nothing at the log end', async () => {
    const s = await services();
    produce(s, 0, batch(3), batch(3));
    const at = async (fetchOffset: bigint) => only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset }] }])));
    expect(await at(6n)).toMatchObject({ errorCode: 0, highWatermark: 6n });
    expect((await at(6n)).records!.length).toBe(0);
    expect(await at(7n)).toMatchObject({ errorCode: ErrorCode.OFFSET_OUT_OF_RANGE, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n });
    expect((await at(7n)).records!.length).toBe(0);
    s.replicas.logFor('orders', 0)!.deleteRecordsBefore(3n);
    expect((await at(2n)).errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
    expect(await at(3n)).toMatchObject({ errorCode: 0, logStartOffset: 3n });
  });

  it('reports unknown topics and partitions, and leader epochs out of step', async () => {
    const s = await services();
    const res = await send(
      s,
      11,
      request([
        { topic: 'nope', partitions: [{ partition: 0, fetchOffset: 0n }] },
        { partitions: [{ partition: 7, fetchOffset: 0n }, { partition: 0, fetchOffset: 0n, currentLeaderEpoch: 3 }] },
      ]),
    );
    const all = res.responses.flatMap((t) => t.partitions.map((p) => [t.topic, p.partitionIndex, p.errorCode, p.highWatermark]));
    // Partitions read from the log come first, then those refused before reading, as in Kafka.
    expect(all).toEqual([
      ['orders', 0, ErrorCode.UNKNOWN_LEADER_EPOCH, -1n],
      ['nope', 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n],
      ['orders', 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n],
    ]);
  });

  it('names topics by id from v13: the id comes back, an unknown id is UNKNOWN_TOPIC_ID', async () => {
    const s = await services();
    produce(s, 0, batch(2));
    const id = s.metadata.image().topics.get('orders')!.topicId;
    const res = await send(
      s,
      13,
      request([
        { topicId: id, partitions: [{ partition: 0, fetchOffset: 0n }] },
        { topicId: 'AAAAAAAAAAAAAAAAAAAAAg', partitions: [{ partition: 0, fetchOffset: 0n }] },
      ]),
    );
    expect(res.responses.map((t) => [t.topicId, t.partitions[0]!.errorCode])).toEqual([
      [id, 0],
      ['AAAAAAAAAAAAAAAAAAAAAg', ErrorCode.UNKNOWN_TOPIC_ID],
    ]);
    expect(baseOffsets(res.responses[0]!.partitions[0]!.records)).toEqual([0n]);
  });

  it('down-converts for v0-v3: magic 0 for v0-v1, magic 1 for v2-v3, from the fetch offset', async () => {
    const s = await services();
    produce(s, 0, batch(3, 'a'), batch(2, 'b', Compression.Gzip));
    for (const [version, magic] of [[0, 0], [1, 0], [2, 1], [3, 1]] as const) {
      const p = only(await send(s, version, request([{ partitions: [{ partition: 0, fetchOffset: 1n }] }])));
      // Like a consumer, drop the partial message (Kafka's overflow filler) at the end.
      const parsed = parseMessageSet(p.records!.subarray(0, wholeEntries(p.records!)));
      if (!parsed.ok) throw new Error(parsed.error);
      expect(parsed.messages.map((m) => m.value?.toString())).toEqual(['a1', 'a2', 'b0', 'b1']);
      expect(parsed.messages.every((m) => m.magic === magic)).toBe(true);
    }
  });

  it('refuses to down-convert zstd with UNSUPPORTED_COMPRESSION_TYPE', async () => {
    const s = await services();
    produce(s, 0, batch(2, 'z', Compression.Zstd));
    const p = only(await send(s, 3, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }])));
    expect(p.errorCode).toBe(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
    expect(p.records).toBeNull();
    expect(only(await send(s, 10, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }]))).errorCode).toBe(0);
  });

  it('encodes an answer at every version 0-17', async () => {
    const s = await services();
    produce(s, 0, batch(2));
    const id = s.metadata.image().topics.get('orders')!.topicId;
    for (let v = 0; v <= 17; v++) {
      const res = await send(s, v, request([{ topicId: id, partitions: [{ partition: 0, fetchOffset: 0n }] }], { isolationLevel: 1 }));
      expect(only(res).errorCode, `v${v}`).toBe(0);
      expect(only(res).records!.length, `v${v}`).toBeGreaterThan(0);
    }
  });

  it('fails the whole request as Kafka does when it cannot be served', async () => {
    const s = await services();
    const req = request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { sessionId: 7 });
    const v12 = fetch.errorResponse(req, ErrorCode.UNKNOWN_SERVER_ERROR, ctxFor(s, 12));
    expect(v12).toMatchObject({ errorCode: -1, sessionId: 7 });
    expect(v12.responses[0]!.partitions[0]).toMatchObject({ errorCode: -1, highWatermark: -1n, records: null });
    expect(fetch.errorResponse(req, ErrorCode.UNKNOWN_SERVER_ERROR, ctxFor(s, 13)).responses).toEqual([]);
    // A session id no cache shard owns: Kafka's lookup fails, and so does this one.
    await expect(send(s, 12, request([], { sessionId: 2147483647, sessionEpoch: 3 }))).rejects.toThrow(/no cache shard/);
    await expect(send(s, 12, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { isolationLevel: 5 }))).rejects.toThrow(/isolation/);
  });
});

describe('Fetch long poll', () => {
  function activeTimeouts(): number {
    return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  }

  it('waits for min_bytes and wakes on the append that brings them, leaving no timer behind', async () => {
    const s = await services();
    produce(s, 0, batch(2));
    const timersBefore = activeTimeouts();
    const pending = send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 2n }] }], { maxWaitMs: 60_000, minBytes: 1 }));
    await new Promise((r) => setImmediate(r));
    expect(s.replicas.parkedFetches).toBe(1);
    // The event loop is free: another request is answered meanwhile.
    expect(only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }]))).errorCode).toBe(0);
    produce(s, 0, batch(3));
    const p = only(await pending);
    expect(baseOffsets(p.records)).toEqual([2n]);
    expect(p.highWatermark).toBe(5n);
    expect(s.replicas.parkedFetches).toBe(0);
    expect(activeTimeouts()).toBe(timersBefore);
  });

  it('keeps waiting while fewer than min_bytes arrived', async () => {
    const s = await services();
    const [small] = [batch(1).length];
    const pending = send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { maxWaitMs: 60_000, minBytes: small * 2 + 1 }));
    let done = false;
    void pending.then(() => (done = true));
    produce(s, 0, batch(1));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    produce(s, 0, batch(1), batch(1));
    expect(baseOffsets(only(await pending).records)).toEqual([0n, 1n, 2n]);
  });

  it('answers at max_wait_ms with what there is', async () => {
    const s = await services();
    const started = Date.now();
    const p = only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { maxWaitMs: 40, minBytes: 1 })));
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    expect(p.errorCode).toBe(0);
    expect(p.records!.length).toBe(0);
    expect(s.replicas.parkedFetches).toBe(0);
  });

  it('answers at once when a partition errs, or when nothing can be read', async () => {
    const s = await services();
    const started = Date.now();
    const res = await send(
      s,
      11,
      request([{ partitions: [{ partition: 0, fetchOffset: 0n }, { partition: 1, fetchOffset: 99n }] }], { maxWaitMs: 60_000, minBytes: 1 }),
    );
    expect(only(res, 1).errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
    const unknownOnly = await send(s, 11, request([{ topic: 'nope', partitions: [{ partition: 0, fetchOffset: 0n }] }], { maxWaitMs: 60_000, minBytes: 1 }));
    expect(only(unknownOnly).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('ends at shutdown', async () => {
    const s = await services();
    const pending = send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { maxWaitMs: 60_000, minBytes: 1 }));
    await new Promise((r) => setImmediate(r));
    s.replicas.releaseFetchWaiters();
    expect(only(await pending).errorCode).toBe(0);
    // Later fetches do not park any more.
    expect(only(await send(s, 11, request([{ partitions: [{ partition: 0, fetchOffset: 0n }] }], { maxWaitMs: 60_000, minBytes: 1 }))).errorCode).toBe(0);
  });
});

describe('Fetch sessions (KIP-227)', () => {
  const both = [{ partition: 0, fetchOffset: 0n }, { partition: 1, fetchOffset: 0n }];

  it('creates a session on a full fetch and leaves unchanged partitions out of incremental answers', async () => {
    const s = await services();
    produce(s, 0, batch(2));
    const full = await send(s, 12, request([{ partitions: both }], { sessionId: 0, sessionEpoch: 0 }));
    expect(full.sessionId).not.toBe(0);
    expect(full.responses[0]!.partitions.map((p) => p.partitionIndex)).toEqual([0, 1]);
    const id = full.sessionId;
    // The fetcher moves partition 0 to offset 2: nothing changed since, so nothing comes back.
    const inc1 = await send(s, 12, request([{ partitions: [{ partition: 0, fetchOffset: 2n }] }], { sessionId: id, sessionEpoch: 1 }));
    expect(inc1).toMatchObject({ errorCode: 0, sessionId: id, responses: [] });
    produce(s, 1, batch(3));
    const inc2 = await send(s, 12, request([], { sessionId: id, sessionEpoch: 2 }));
    expect(inc2.responses.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, p.highWatermark]))).toEqual([[1, 3n]]);
    expect(baseOffsets(inc2.responses[0]!.partitions[0]!.records)).toEqual([0n]);
    // A wrong epoch, an unknown session.
    expect(await send(s, 12, request([], { sessionId: id, sessionEpoch: 2 }))).toMatchObject({ errorCode: ErrorCode.INVALID_FETCH_SESSION_EPOCH, sessionId: 0, responses: [] });
    expect((await send(s, 12, request([], { sessionId: id === 5 ? 6 : 5, sessionEpoch: 1 }))).errorCode).toBe(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
    // Switching between names and ids within a session.
    expect((await send(s, 13, request([], { sessionId: id, sessionEpoch: 3 }))).errorCode).toBe(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR);
  });

  it('forgets topics, closes a session left empty, and closes one named by a full fetch', async () => {
    const s = await services();
    const cache = fetchSessionsOf(s);
    const full = await send(s, 12, request([{ partitions: both }], { sessionEpoch: 0 }));
    const id = full.sessionId;
    const forget1 = await send(s, 12, request([], { sessionId: id, sessionEpoch: 1, forgottenTopicsData: [{ topic: 'orders', topicId: ZERO_UUID, partitions: [1] }] }));
    expect(forget1.sessionId).toBe(id);
    expect(cache.get(id)!.size).toBe(1);
    const forgetAll = await send(s, 12, request([], { sessionId: id, sessionEpoch: 2, forgottenTopicsData: [{ topic: 'orders', topicId: ZERO_UUID, partitions: [0] }] }));
    expect(forgetAll.sessionId).toBe(0);
    expect(cache.get(id)).toBeUndefined();
    const again = await send(s, 12, request([{ partitions: both }], { sessionEpoch: 0 }));
    const closed = await send(s, 12, request([{ partitions: both }], { sessionId: again.sessionId, sessionEpoch: -1 }));
    expect(closed.sessionId).toBe(0);
    expect(cache.get(again.sessionId)).toBeUndefined();
    expect(closed.responses[0]!.partitions.length).toBe(2);
  });

  it('creates no session when the cache has no slots, and none for epoch -1', async () => {
    const s = await services({ config: { 'max.incremental.fetch.session.cache.slots': 7 } });
    expect((await send(s, 12, request([{ partitions: both }], { sessionEpoch: 0 }))).sessionId).toBe(0);
    const t = await services();
    expect((await send(t, 12, request([{ partitions: both }], { sessionEpoch: -1 }))).sessionId).toBe(0);
  });

  it('keeps a session by topic id across requests (v13+)', async () => {
    const s = await services();
    const id = s.metadata.image().topics.get('orders')!.topicId;
    const full = await send(s, 13, request([{ topicId: id, partitions: both }], { sessionEpoch: 0 }));
    produce(s, 0, batch(1));
    const inc = await send(s, 13, request([], { sessionId: full.sessionId, sessionEpoch: 1 }));
    expect(inc.responses.map((t) => [t.topicId, t.partitions.map((p) => p.partitionIndex)])).toEqual([[id, [0]]]);
  });
});

describe('Fetch with hostile field values', () => {
  it('answers every request, at every version, with an encodable response or a request-wide error', async () => {
    const s = await services();
    produce(s, 0, batch(3), batch(2, 'g', Compression.Gzip));
    const id = s.metadata.image().topics.get('orders')!.topicId;
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 100000);
    const rand = seededRandom(seed);
    const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
    const pick = <T,>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
    for (let round = 0; round < 300; round++) {
      const v = int(0, 17);
      const parts = Array.from({ length: int(0, 4) }, () => ({
        partition: pick([0, 1, 2, 3, -1, 2147483647]),
        fetchOffset: pick([0n, 1n, 3n, 5n, 6n, -1n, -9223372036854775808n, 9223372036854775807n]),
        partitionMaxBytes: pick([0, 1, 100, 1 << 20, -1, -2147483648, 2147483647]),
        currentLeaderEpoch: pick([-1, 0, 1, -5, 2147483647]),
      }));
      const req = request([{ topic: pick(['orders', '', 'nope']), topicId: pick([id, ZERO_UUID, 'AAAAAAAAAAAAAAAAAAAAAg']), partitions: parts }], {
        maxWaitMs: pick([0, -1, -2147483648]),
        minBytes: pick([0, 1, -1, 2147483647]),
        maxBytes: pick([0, 1, 100, -1, 2147483647]),
        isolationLevel: pick([0, 1]),
        sessionId: pick([0, 0, 1, -1, 123456789, -268435455]),
        sessionEpoch: pick([-1, 0, 0, 1, 2, -7, 2147483647]),
        forgottenTopicsData: rand() < 0.2 ? [{ topic: 'orders', topicId: id, partitions: [0, 5] }] : [],
      });
      const where = `seed ${seed} round ${round} v${v}`;
      try {
        const res = await send(s, v, req);
        for (const p of res.responses.flatMap((t) => t.partitions)) expect(typeof p.errorCode, where).toBe('number');
      } catch (err) {
        // Only the failures Kafka itself has for the whole request.
        expect((err as Error).message, where).toMatch(/no cache shard/);
      }
    }
  });
});

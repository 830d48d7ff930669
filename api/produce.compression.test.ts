/**
 * Produce with a topic's compression.type and min.insync.replicas, read back
 * through Fetch as a client sees it. The broker keeps each topic's logs on the
 * LogConfig its configs give (followTopicConfigs), so a change applies to the
 * next Produce.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { ATTRIBUTES, COMPRESSION_MASK, Compression, buildBatch, decodeRecords, readBatchHeader, type BuildRecord } from '../wire/record-batch.js';
import type { FetchRequest as FetchRequestT } from '../wire/messages/fetch-request.js';
import { FetchResponse, type FetchResponse as FetchResponseT } from '../wire/messages/fetch-response.js';
import type { CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import type { PartitionProduceResponse } from '../wire/messages/produce-response.js';
import { createTopics } from './create-topics.js';
import { fetch } from './fetch.js';
import { NO_RESPONSE } from './handler.js';
import { produce } from './produce.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(): TestServices {
  const s = testServices({}, undefined, { followTopicConfigs: true });
  open.push(s);
  return s;
}

const now = BigInt(Date.now());
const RECORDS: BuildRecord[] = [
  { key: 'k0', value: 'v0', timestamp: now + 5n, headers: [{ key: 'h', value: Buffer.from('x') }] },
  { key: null, value: 'v1', timestamp: now + 1n },
  { key: 'k2', value: null, timestamp: now + 3n, headers: [{ key: 'a', value: null }, { key: 'b', value: Buffer.from('y') }] },
];

const gzipBatch = (baseSequence = 0): Buffer =>
  buildBatch({ records: RECORDS, baseTimestamp: now - 10n, compression: Compression.Gzip, producerId: 4242n, producerEpoch: 0, baseSequence });

async function send(s: TestServices, topic: string, records: Buffer, acks = -1): Promise<PartitionProduceResponse> {
  const req: ProduceRequest = { transactionalId: null, acks, timeoutMs: 1000, topicData: [{ name: topic, topicId: ZERO_UUID, partitionData: [{ index: 0, records }] }] };
  const res = await produce.handle(req, ctxFor(s, 9));
  if (res === NO_RESPONSE) throw new Error('no response');
  return res.responses[0]!.partitionResponses[0]!;
}

/** The stored batches of partition 0 from `offset`, as Fetch v12 returns them to a consumer. */
async function fetched(s: TestServices, topic: string, offset = 0n): Promise<Buffer[]> {
  const req: FetchRequestT = {
    clusterId: null,
    replicaId: -1,
    replicaState: { replicaId: -1, replicaEpoch: -1n },
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 0x7fffffff,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, topicId: ZERO_UUID, partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: offset, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1 << 20, replicaDirectoryId: ZERO_UUID, highWatermark: 9223372036854775807n }] }],
    forgottenTopicsData: [],
    rackId: '',
  };
  const res = await fetch.handle(req, ctxFor(s, 12));
  const back = decode<FetchResponseT>(FetchResponse, 12, encode(FetchResponse, 12, res as FetchResponseT));
  if (!back.ok) throw new Error(back.error);
  const p = back.value.responses[0]!.partitions[0]!;
  expect(p.errorCode).toBe(ErrorCode.NONE);
  const out: Buffer[] = [];
  const records = p.records ?? Buffer.alloc(0);
  for (let at = 0; at + 12 <= records.length; at += 12 + records.readInt32BE(at + 8)) out.push(records.subarray(at, at + 12 + records.readInt32BE(at + 8)));
  return out;
}

/** Each record of a batch with its absolute offset and timestamp. */
function contents(batch: Buffer): { offset: bigint; key: string | null; value: string | null; timestamp: bigint; headers: [string, string | null][] }[] {
  const decoded = decodeRecords(batch);
  if (!decoded.ok) throw new Error(decoded.error);
  const h = readBatchHeader(batch);
  return decoded.records.map((r) => ({
    offset: h.baseOffset + BigInt(r.offsetDelta),
    key: r.key?.toString() ?? null,
    value: r.value?.toString() ?? null,
    timestamp: h.baseTimestamp + r.timestampDelta,
    headers: r.headers.map((x) => [x.key, x.value?.toString() ?? null] as [string, string | null]),
  }));
}

const codecOf = (batch: Buffer): number => batch.readInt16BE(ATTRIBUTES) & COMPRESSION_MASK;

/** What the records sent look like once stored from `baseOffset`. */
const expected = (baseOffset: bigint) =>
  RECORDS.map((r, i) => ({
    offset: baseOffset + BigInt(i),
    key: (r.key as string | null) ?? null,
    value: (r.value as string | null) ?? null,
    timestamp: r.timestamp!,
    headers: (r.headers ?? []).map((h) => [h.key, h.value?.toString() ?? null]),
  }));

describe('Produce: compression.type', () => {
  it('stores a gzip batch sent to an lz4 topic as lz4, and Fetch returns the same records', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'lz4', numPartitions: 1, replicationFactor: 1, configs: { 'compression.type': 'lz4' } });
    expect(await send(s, 'lz4', gzipBatch(0))).toMatchObject({ errorCode: 0, baseOffset: 0n });
    expect(await send(s, 'lz4', gzipBatch(3))).toMatchObject({ errorCode: 0, baseOffset: 3n });
    const batches = await fetched(s, 'lz4');
    expect(batches.map(codecOf)).toEqual([Compression.Lz4, Compression.Lz4]);
    expect(batches.map((b) => contents(b))).toEqual([expected(0n), expected(3n)]);
    expect(batches.map((b) => readBatchHeader(b))).toMatchObject([
      { baseOffset: 0n, producerId: 4242n, producerEpoch: 0, baseSequence: 0, baseTimestamp: now + 5n, maxTimestamp: now + 5n, recordCount: 3 },
      { baseOffset: 3n, producerId: 4242n, producerEpoch: 0, baseSequence: 3, baseTimestamp: now + 5n, maxTimestamp: now + 5n, recordCount: 3 },
    ]);
  });

  it('stores an uncompressed topic\'s batches uncompressed', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'plain', numPartitions: 1, replicationFactor: 1, configs: { 'compression.type': 'uncompressed' } });
    for (const compression of [Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd, Compression.None]) {
      expect((await send(s, 'plain', buildBatch({ records: RECORDS, compression }))).errorCode).toBe(0);
    }
    const batches = await fetched(s, 'plain');
    expect(batches.map(codecOf)).toEqual([0, 0, 0, 0, 0]);
    expect(batches.map((b) => contents(b))).toEqual([0n, 3n, 6n, 9n, 12n].map(expected));
  });

  it('applies a change of the topic\'s compression.type, or of the broker-wide default, to the next produce', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'changing', numPartitions: 1, replicationFactor: 1 });
    await s.metadata.createTopic({ name: 'pinned', numPartitions: 1, replicationFactor: 1, configs: { 'compression.type': 'snappy' } });
    await send(s, 'changing', gzipBatch());
    await s.metadata.alterTopicConfigs('changing', { 'compression.type': 'lz4' });
    await send(s, 'changing', gzipBatch(3));
    await s.metadata.alterTopicConfigs('changing', {});
    await s.metadata.alterBrokerConfigs(null, { 'compression.type': 'zstd' });
    await send(s, 'changing', gzipBatch(6));
    await send(s, 'pinned', gzipBatch());
    await s.metadata.alterBrokerConfigs(null, {});
    await send(s, 'changing', gzipBatch(9));
    expect((await fetched(s, 'changing')).map(codecOf)).toEqual([Compression.Gzip, Compression.Lz4, Compression.Zstd, Compression.Gzip]);
    // A topic's own compression.type wins over the broker's.
    expect((await fetched(s, 'pinned')).map(codecOf)).toEqual([Compression.Snappy]);
  });

  it('accepts the level configs in their ranges, refuses others, and compresses with the level', async () => {
    const s = services();
    const configs = (c: Record<string, string>) => Object.entries(c).map(([name, value]) => ({ name, value }));
    const res = (await createTopics.handle(
      {
        topics: [
          { name: 'gzip1', numPartitions: 1, replicationFactor: 1, assignments: [], configs: configs({ 'compression.type': 'gzip', 'compression.gzip.level': '1' }) },
          { name: 'gzip9', numPartitions: 1, replicationFactor: 1, assignments: [], configs: configs({ 'compression.type': 'gzip', 'compression.gzip.level': '9' }) },
          { name: 'levels', numPartitions: 1, replicationFactor: 1, assignments: [], configs: configs({ 'compression.lz4.level': '17', 'compression.zstd.level': '-131072' }) },
          { name: 'bad-gzip', numPartitions: 1, replicationFactor: 1, assignments: [], configs: configs({ 'compression.gzip.level': '0' }) },
          { name: 'bad-zstd', numPartitions: 1, replicationFactor: 1, assignments: [], configs: configs({ 'compression.zstd.level': '23' }) },
        ],
        timeoutMs: 1000,
        validateOnly: false,
      },
      ctxFor(s, 7),
    )) as CreateTopicsResponse;
    expect(res.topics.map((t) => [t.name, t.errorCode, t.errorMessage])).toEqual([
      ['gzip1', 0, null],
      ['gzip9', 0, null],
      ['levels', 0, null],
      ['bad-gzip', ErrorCode.INVALID_CONFIG, 'Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1'],
      ['bad-zstd', ErrorCode.INVALID_CONFIG, 'Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22'],
    ]);
    const text = buildBatch({ records: Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, value: `${i} ${'some words repeat here '.repeat(10)} ${i * 7919}`, timestamp: now })) });
    await send(s, 'gzip1', Buffer.from(text));
    await send(s, 'gzip9', Buffer.from(text));
    const [[one], [nine]] = [await fetched(s, 'gzip1'), await fetched(s, 'gzip9')];
    expect([codecOf(one!), codecOf(nine!)]).toEqual([Compression.Gzip, Compression.Gzip]);
    expect(nine!.length).toBeLessThan(one!.length);
    expect(contents(one!)).toEqual(contents(nine!));
  });
});

describe('Produce: min.insync.replicas', () => {
  it('appends acks=-1 on this one broker even with min.insync.replicas=2, as Kafka 4.4.0 does on one node', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'mi2', numPartitions: 1, replicationFactor: 1, configs: { 'min.insync.replicas': '2' } });
    expect(s.replicas.logFor('mi2', 0)!.config.minInSyncReplicas).toBe(2);
    expect(await send(s, 'mi2', gzipBatch(), -1)).toMatchObject({ errorCode: 0, baseOffset: 0n, errorMessage: null });
    expect(await send(s, 'mi2', gzipBatch(3), 1)).toMatchObject({ errorCode: 0, baseOffset: 3n });
  });
});

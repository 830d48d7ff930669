import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import type { ListOffsetsPartition, ListOffsetsRequest } from '../wire/messages/list-offsets-request.js';
import { ListOffsetsResponse as ListOffsetsResponseDecl, type ListOffsetsResponse } from '../wire/messages/list-offsets-response.js';
import { FaultyFs } from '../storage/fs.js';
import { listOffsets, targetUnsupported } from './list-offsets.js';
import { metadata } from './metadata.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(...args: Parameters<typeof testServices>): TestServices {
  const s = testServices(...args);
  open.push(s);
  return s;
}

/** Closes the broker's services and starts them again on the same directory. */
async function restart(s: TestServices): Promise<TestServices> {
  open.splice(open.indexOf(s), 1);
  await s.close();
  return services({}, s.dataDir);
}

const EARLIEST = -2n;
const LATEST = -1n;
const MAX_TIMESTAMP = -3n;
const EARLIEST_LOCAL = -4n;
const LATEST_TIERED = -5n;

/** Timestamps of the worked example, as in the run against Kafka 4.4.0 they were checked on. */
const T = 1_700_000_000_000n;

function part(partitionIndex: number, timestamp: bigint, currentLeaderEpoch = -1): ListOffsetsPartition {
  return { partitionIndex, currentLeaderEpoch, timestamp, maxNumOffsets: 1 };
}

function req(topics: { name: string; partitions: ListOffsetsPartition[] }[], opts: Partial<ListOffsetsRequest> = {}): ListOffsetsRequest {
  return { replicaId: -1, isolationLevel: 0, topics, timeoutMs: 1000, ...opts };
}

async function send(s: TestServices, version: number, request: ListOffsetsRequest): Promise<ListOffsetsResponse> {
  return (await listOffsets.handle(request, ctxFor(s, version))) as ListOffsetsResponse;
}

/** [errorCode, timestamp, offset, leaderEpoch] of the one partition asked about. */
async function one(s: TestServices, version: number, topic: string, p: ListOffsetsPartition, opts: Partial<ListOffsetsRequest> = {}) {
  const res = await send(s, version, req([{ name: topic, partitions: [p] }], opts));
  const r = res.topics[0]!.partitions[0]!;
  return [r.errorCode, r.timestamp, r.offset, r.leaderEpoch];
}

function produce(s: TestServices, topic: string, partition: number, timestamps: bigint[]): void {
  const r = s.replicas.appendRecords(topic, partition, buildBatch({ records: timestamps.map((timestamp) => ({ value: 'v', timestamp })) }), -1);
  expect(r.errorCode).toBe(ErrorCode.NONE);
}

async function withTopic(s: TestServices, name = 't1', numPartitions = 2): Promise<void> {
  await s.metadata.createTopic({ name, numPartitions, replicationFactor: 1 });
}

describe('ListOffsets worked examples (answers checked against Kafka 4.4.0)', () => {
  it('on an empty log', async () => {
    const s = services();
    await withTopic(s);
    // The broker took leadership at epoch 0 with the log empty, so epoch 0 starts at 0.
    expect(await one(s, 9, 't1', part(0, LATEST))).toEqual([0, -1n, 0n, 0]);
    expect(await one(s, 9, 't1', part(0, EARLIEST))).toEqual([0, -1n, 0n, 0]);
    expect(await one(s, 9, 't1', part(0, MAX_TIMESTAMP))).toEqual([0, -1n, -1n, -1]);
    expect(await one(s, 9, 't1', part(0, EARLIEST_LOCAL))).toEqual([0, -1n, 0n, 0]);
    expect(await one(s, 9, 't1', part(0, LATEST_TIERED))).toEqual([0, -1n, -1n, -1]);
    expect(await one(s, 9, 't1', part(0, 0n))).toEqual([0, -1n, -1n, -1]);
    expect(await one(s, 9, 't1', part(0, 1000n))).toEqual([0, -1n, -1n, -1]);
  });

  it('after three batches: each kind of target', async () => {
    const s = services();
    await withTopic(s);
    produce(s, 't1', 0, [T + 100n, T + 300n, T + 200n]); // 0..2
    produce(s, 't1', 0, [T + 50n, T + 300n]); // 3..4
    produce(s, 't1', 0, [T + 500n]); // 5
    const cases: [bigint, unknown[]][] = [
      [LATEST, [0, -1n, 6n, 0]],
      [EARLIEST, [0, -1n, 0n, 0]],
      [MAX_TIMESTAMP, [0, T + 500n, 5n, 0]],
      [EARLIEST_LOCAL, [0, -1n, 0n, 0]],
      [LATEST_TIERED, [0, -1n, -1n, -1]],
      [0n, [0, T + 100n, 0n, 0]],
      [T + 150n, [0, T + 300n, 1n, 0]],
      [T + 300n, [0, T + 300n, 1n, 0]],
      [T + 301n, [0, T + 500n, 5n, 0]],
      [T + 500n, [0, T + 500n, 5n, 0]],
      [T + 501n, [0, -1n, -1n, -1]],
    ];
    for (const [target, expected] of cases) expect([target, await one(s, 9, 't1', part(0, target))]).toEqual([target, expected]);
  });

  it('after DeleteRecords moved the log start', async () => {
    const s = services();
    await withTopic(s, 't2', 1);
    const n = 1_000_000_000_000n;
    produce(s, 't2', 0, [n + 10n, n + 1000n, n + 20n]); // 0..2
    produce(s, 't2', 0, [n + 5n, n + 6n]); // 3..4
    produce(s, 't2', 0, [n + 1000n]); // 5
    expect(s.replicas.deleteRecords('t2', 0, 2n)).toEqual({ errorCode: 0, lowWatermark: 2n });
    expect(await one(s, 9, 't2', part(0, EARLIEST))).toEqual([0, -1n, 2n, 0]);
    expect(await one(s, 9, 't2', part(0, EARLIEST_LOCAL))).toEqual([0, -1n, 2n, 0]);
    // Kafka does not look at the log start for the largest timestamp...
    expect(await one(s, 9, 't2', part(0, MAX_TIMESTAMP))).toEqual([0, n + 1000n, 1n, 0]);
    // ...but does for a time: the first record from the log start on.
    expect(await one(s, 9, 't2', part(0, n))).toEqual([0, n + 20n, 2n, 0]);
    expect(await one(s, 9, 't2', part(0, n + 1000n))).toEqual([0, n + 1000n, 5n, 0]);
    expect(s.logs.get('t2', 0)!.leaderEpochs.entries).toEqual([{ epoch: 0, startOffset: 2n }]);
  });

  it('answers the first record of a LogAppendTime batch for the largest timestamp', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 't3', numPartitions: 1, replicationFactor: 1, configs: { 'message.timestamp.type': 'LogAppendTime' } });
    s.logs.updateConfig('t3', { ...s.logs.configFor('t3'), messageTimestampType: 'LogAppendTime' });
    produce(s, 't3', 0, [10n, 1000n, 20n]);
    const [errorCode, timestamp, offset, epoch] = await one(s, 9, 't3', part(0, MAX_TIMESTAMP));
    expect([errorCode, offset, epoch]).toEqual([0, 0n, 0]);
    expect(timestamp).toBeGreaterThan(1000n);
  });
});

describe('ListOffsets versions', () => {
  it('serves v1-v11, as Kafka 4.4 advertises', () => {
    expect([listOffsets.minVersion, listOffsets.maxVersion]).toEqual([1, 11]);
  });

  it.each([
    [-1n, 1, false],
    [-2n, 1, false],
    [-3n, 6, true],
    [-3n, 7, false],
    [-4n, 7, true],
    [-4n, 8, false],
    [-5n, 8, true],
    [-5n, 9, false],
    [-6n, 10, true],
    [-6n, 11, false],
    [-7n, 10, true],
    [-7n, 11, true],
    [0n, 1, false],
  ])('target %i at v%i unsupported: %s', (target, version, unsupported) => {
    expect(targetUnsupported(target, version)).toBe(unsupported);
  });

  it('answers a target the version does not know with UNSUPPORTED_VERSION for that partition only', async () => {
    const s = services();
    await withTopic(s);
    const res = await send(s, 6, req([{ name: 't1', partitions: [part(0, MAX_TIMESTAMP), part(1, LATEST)] }]));
    expect(res.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.offset])).toEqual([
      [0, ErrorCode.UNSUPPORTED_VERSION, -1n],
      [1, 0, 0n],
    ]);
    // Checked before the topic: an unknown one still gets UNSUPPORTED_VERSION.
    expect(await one(s, 9, 'nope', part(0, -7n))).toEqual([ErrorCode.UNSUPPORTED_VERSION, -1n, -1n, -1]);
  });

  it('carries the leader epoch from v4 only', async () => {
    const s = services();
    await withTopic(s);
    produce(s, 't1', 0, [T]);
    for (const [version, epoch] of [
      [3, -1],
      [4, 0],
      [6, 0],
    ] as const) {
      const res = await send(s, version, req([{ name: 't1', partitions: [part(0, LATEST)] }]));
      const back = decode<ListOffsetsResponse>(ListOffsetsResponseDecl, version, encode(ListOffsetsResponseDecl, version, res));
      expect(back.ok && back.value.topics[0]!.partitions[0]).toMatchObject({ offset: 1n, leaderEpoch: epoch });
    }
  });
});

describe('ListOffsets request shape', () => {
  it('answers a partition asked twice once, with INVALID_REQUEST, and each topic once', async () => {
    const s = services();
    await withTopic(s);
    const res = await send(
      s,
      9,
      req([
        { name: 't1', partitions: [part(0, LATEST)] },
        { name: 'zz', partitions: [part(0, LATEST)] },
        { name: 't1', partitions: [part(0, EARLIEST), part(1, LATEST)] },
      ]),
    );
    expect(res.topics.map((t) => [t.name, t.partitions.map((p) => [p.partitionIndex, p.errorCode, p.offset])])).toEqual([
      ['t1', [[0, ErrorCode.INVALID_REQUEST, -1n], [1, 0, 0n]]],
      ['zz', [[0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n]]],
    ]);
  });

  it('reports unknown topics and partitions', async () => {
    const s = services();
    await withTopic(s);
    expect(await one(s, 9, 't1', part(7, LATEST))).toEqual([ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n, -1n, -1]);
    expect(await one(s, 9, 'nope', part(0, LATEST))).toEqual([ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n, -1n, -1]);
    // ListOffsets never creates a topic.
    expect(s.metadata.image().topics.has('nope')).toBe(false);
  });

  it('fails the request on an isolation level Kafka does not know', async () => {
    const s = services();
    await withTopic(s);
    expect(await one(s, 9, 't1', part(0, LATEST), { isolationLevel: 2 })).toEqual([ErrorCode.UNKNOWN_SERVER_ERROR, -1n, -1n, -1]);
  });
});

describe('ListOffsets replica ids and isolation', () => {
  it('lets a consumer see up to the high watermark, a follower or the debug id up to the log end', async () => {
    const s = services();
    await withTopic(s);
    produce(s, 't1', 0, [T + 1n, T + 2n]); // 0..1, committed
    // Written but not yet committed: appended below the replica manager, which would move the high watermark.
    const log = s.logs.get('t1', 0)!;
    expect(log.append(buildBatch({ records: [{ value: 'late', timestamp: T + 9n }] }), 0).ok).toBe(true);
    expect([log.highWatermark, log.logEndOffset]).toEqual([2n, 3n]);
    expect(await one(s, 9, 't1', part(0, LATEST))).toEqual([0, -1n, 2n, 0]);
    expect(await one(s, 9, 't1', part(0, LATEST), { isolationLevel: 1 })).toEqual([0, -1n, 2n, 0]);
    expect(await one(s, 9, 't1', part(0, LATEST), { replicaId: -2 })).toEqual([0, -1n, 3n, 0]);
    expect(await one(s, 9, 't1', part(0, LATEST), { replicaId: 5 })).toEqual([0, -1n, 3n, 0]);
    // A record past what the reader may see is withheld, as if there were none.
    expect(await one(s, 9, 't1', part(0, T + 5n))).toEqual([0, -1n, -1n, -1]);
    expect(await one(s, 9, 't1', part(0, MAX_TIMESTAMP))).toEqual([0, -1n, -1n, -1]);
    expect(await one(s, 9, 't1', part(0, T + 5n), { replicaId: -2 })).toEqual([0, T + 9n, 2n, 0]);
    expect(await one(s, 9, 't1', part(0, MAX_TIMESTAMP), { replicaId: 1 })).toEqual([0, T + 9n, 2n, 0]);
  });

  it('answers LATEST under read_committed with the last stable offset while a transaction is open', async () => {
    const s = services();
    await withTopic(s);
    produce(s, 't1', 0, [T + 1n]); // 0
    const txn = buildBatch({ producerId: 9n, producerEpoch: 0, baseSequence: 0, transactional: true, records: [{ value: 't', timestamp: T + 2n }] });
    expect(s.replicas.appendRecords('t1', 0, txn, -1).errorCode).toBe(ErrorCode.NONE); // 1, open
    produce(s, 't1', 0, [T + 3n]); // 2
    expect(await one(s, 9, 't1', part(0, LATEST))).toEqual([0, -1n, 3n, 0]);
    expect(await one(s, 9, 't1', part(0, LATEST), { isolationLevel: 1 })).toEqual([0, -1n, 1n, 0]);
    await s.replicas.writeMarkers({ producerId: 9n, producerEpoch: 0, coordinatorEpoch: 0, commit: true, partitions: [{ topic: 't1', partition: 0 }] });
    expect(await one(s, 9, 't1', part(0, LATEST), { isolationLevel: 1 })).toEqual([0, -1n, 4n, 0]);
  });

  it('answers KAFKA_STORAGE_ERROR for a log that went offline', async () => {
    const fs = new FaultyFs();
    const s = services({}, undefined, { fs });
    await withTopic(s);
    fs.failNextWrite('EIO', (path) => path.includes('t1-0') && path.endsWith('.log'));
    expect(s.replicas.appendRecords('t1', 0, buildBatch({ records: [{ value: 'x' }] }), -1).errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    expect(await one(s, 9, 't1', part(0, LATEST))).toEqual([ErrorCode.KAFKA_STORAGE_ERROR, -1n, -1n, -1]);
    expect(await one(s, 9, 't1', part(1, LATEST))).toEqual([0, -1n, 0n, 0]);
  });
});

describe('ListOffsets across a restart', () => {
  it('sees the leader epoch grow by two, as on a restarted single-node Kafka, and fences the old one', async () => {
    let s = services();
    await withTopic(s);
    produce(s, 't1', 0, [T + 1n, T + 2n, T + 3n]);
    s = await restart(s);
    const md = (await metadata.handle({ topics: [{ name: 't1', topicId: 'AAAAAAAAAAAAAAAAAAAAAA' }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false }, ctxFor(s, 12))) as MetadataResponse;
    expect(md.topics[0]!.partitions.map((p) => [p.partitionIndex, p.leaderEpoch])).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(await one(s, 9, 't1', part(0, LATEST))).toEqual([0, -1n, 3n, 2]);
    expect(await one(s, 9, 't1', part(0, LATEST, 2))).toEqual([0, -1n, 3n, 2]);
    expect(await one(s, 9, 't1', part(0, LATEST, 0))).toEqual([ErrorCode.FENCED_LEADER_EPOCH, -1n, -1n, -1]);
    expect(await one(s, 9, 't1', part(0, LATEST, 3))).toEqual([ErrorCode.UNKNOWN_LEADER_EPOCH, -1n, -1n, -1]);
    // The records keep the epoch they were written in; the empty partition starts at the new one.
    expect(await one(s, 9, 't1', part(0, EARLIEST))).toEqual([0, -1n, 0n, 0]);
    expect(await one(s, 9, 't1', part(0, T + 2n))).toEqual([0, T + 2n, 1n, 0]);
    expect(await one(s, 9, 't1', part(1, EARLIEST))).toEqual([0, -1n, 0n, 2]);
    produce(s, 't1', 0, [T + 4n]);
    expect(await one(s, 9, 't1', part(0, T + 4n))).toEqual([0, T + 4n, 3n, 2]);
  });
});

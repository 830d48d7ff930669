import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import type { ListOffsetsPartition, ListOffsetsRequest } from '../wire/messages/list-offsets-request.js';
import { ListOffsetsRequest as ListOffsetsRequestDecl } from '../wire/messages/list-offsets-request.js';
import { ListOffsetsResponse as ListOffsetsResponseDecl, type ListOffsetsResponse } from '../wire/messages/list-offsets-response.js';
import { FaultyFs } from '../storage/fs.js';
import { listOffsets, targetUnsupported } from './list-offsets.js';
import { metadata } from './metadata.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import { callAt, ctxFor, testServices, type TestServices } from './test-services.js';

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
  it('serves v0-v11: Kafka 4.4 advertises v1-v11, Kafka 3.x served v0 too', () => {
    expect([listOffsets.minVersion, listOffsets.maxVersion]).toEqual([0, 11]);
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

  it('answers KAFKA_STORAGE_ERROR for a log that went offline; a partition in another log directory goes on', async () => {
    const fs = new FaultyFs();
    // Partition 0 in the first directory, 1 in the second.
    const s = services({}, undefined, { fs, moreLogDirs: [mkdtempSync(joinPath(tmpdir(), 'gregor-second-dir-'))] });
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

describe('ListOffsets v0 (old_style_offsets, as Kafka 3.x answered it)', () => {
  /**
   * Partition 0 of t1: segment 0 (offsets 0..9) last written at T+1000,
   * segment 10 (10..14) at T+2000, all committed; the clock then at T+3000.
   */
  async function segmented() {
    const clock = { now: Number(T) + 1000 };
    const s = services({}, undefined, { now: () => clock.now });
    await withTopic(s);
    produce(s, 't1', 0, Array.from({ length: 10 }, () => T)); // 0..9
    s.logs.get('t1', 0)!.roll();
    clock.now = Number(T) + 2000;
    produce(s, 't1', 0, Array.from({ length: 5 }, () => T)); // 10..14
    clock.now = Number(T) + 3000;
    return { s, clock };
  }

  function v0(partitionIndex: number, timestamp: bigint, maxNumOffsets: number): ListOffsetsPartition {
    return { partitionIndex, currentLeaderEpoch: -1, timestamp, maxNumOffsets };
  }

  /** [errorCode, oldStyleOffsets] of each partition asked, as a v0 client reads the answer. */
  async function askV0(s: TestServices, topics: { name: string; partitions: ListOffsetsPartition[] }[], replicaId = -1) {
    const res = await callAt(listOffsets, 0, req(topics, { replicaId }), s);
    return res.topics.map((t) => [t.name, t.partitions.map((p) => [p.partitionIndex, p.errorCode, p.oldStyleOffsets])]);
  }

  async function offsetsV0(s: TestServices, p: ListOffsetsPartition, replicaId = -1) {
    const [[, [[, errorCode, offsets]]]] = (await askV0(s, [{ name: 't1', partitions: [p] }], replicaId)) as [string, [number, number, bigint[]][]][];
    return [errorCode, offsets];
  }

  it('lists segment bases and the log end, newest first, by when the segments were last written', async () => {
    const { s } = await segmented();
    const cases: [bigint, number, unknown[]][] = [
      [LATEST, 10, [0, [15n, 10n, 0n]]],
      [LATEST, 2, [0, [15n, 10n]]],
      [LATEST, 1, [0, [15n]]],
      [LATEST, 0, [0, []]],
      [EARLIEST, 10, [0, [0n]]],
      [T + 3000n, 10, [0, [15n, 10n, 0n]]],
      [T + 2500n, 10, [0, [10n, 0n]]],
      [T + 2500n, 1, [0, [10n]]],
      [T + 1999n, 10, [0, [0n]]],
      [T + 999n, 10, [0, []]],
      // Records' timestamps (all T) play no part; nor do the targets v1 and later know.
      [T, 10, [0, []]],
      [MAX_TIMESTAMP, 10, [0, []]],
    ];
    for (const [target, max, want] of cases) expect([target, max, await offsetsV0(s, v0(0, target, max))]).toEqual([target, max, want]);
    // The other partition: one empty segment, made when the topic was.
    expect(await offsetsV0(s, v0(1, LATEST, 5))).toEqual([0, [0n]]);
    expect(await offsetsV0(s, v0(1, EARLIEST, 5))).toEqual([0, [0n]]);
  });

  it('answers from the log start once DeleteRecords moved it', async () => {
    const { s } = await segmented();
    expect(s.replicas.deleteRecords('t1', 0, 4n)).toEqual({ errorCode: 0, lowWatermark: 4n });
    expect(await offsetsV0(s, v0(0, EARLIEST, 10))).toEqual([0, [4n]]);
    expect(await offsetsV0(s, v0(0, LATEST, 10))).toEqual([0, [15n, 10n, 4n]]);
  });

  it('caps what a consumer sees at the high watermark; a follower or the debug id sees the log end', async () => {
    const { s, clock } = await segmented();
    const log = s.logs.get('t1', 0)!;
    log.roll(); // segment 15, made at T+3000
    clock.now = Number(T) + 4000;
    // Written but not yet committed: appended below the replica manager, which would move the high watermark.
    expect(log.append(buildBatch({ records: [{ value: 'a', timestamp: T }, { value: 'b', timestamp: T }] }), 0).ok).toBe(true); // 15..16
    expect([log.highWatermark, log.logEndOffset]).toEqual([15n, 17n]);
    // Offsets above the high watermark give way to it, put first; like Kafka, it then shows twice, being segment 15's base.
    expect(await offsetsV0(s, v0(0, LATEST, 10))).toEqual([0, [15n, 15n, 10n, 0n]]);
    expect(await offsetsV0(s, v0(0, LATEST, 1))).toEqual([0, [15n]]);
    expect(await offsetsV0(s, v0(0, T + 3500n, 10))).toEqual([0, [10n, 0n]]);
    for (const replicaId of [-2, 1]) {
      expect(await offsetsV0(s, v0(0, LATEST, 10), replicaId)).toEqual([0, [17n, 15n, 10n, 0n]]);
      expect(await offsetsV0(s, v0(0, LATEST, 1), replicaId)).toEqual([0, [17n]]);
    }
  });

  it('answers each partition as asked, repeats included, with errors per partition as from v1', async () => {
    const fs = new FaultyFs();
    const s = services({}, undefined, { fs });
    await withTopic(s);
    await withTopic(s, 't2', 1);
    fs.failNextWrite('EIO', (path) => path.includes('t2-0') && path.endsWith('.log'));
    expect(s.replicas.appendRecords('t2', 0, buildBatch({ records: [{ value: 'x' }] }), -1).errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    produce(s, 't1', 0, [T]);
    expect(
      await askV0(s, [
        { name: 't1', partitions: [v0(0, LATEST, 5), v0(7, LATEST, 5), v0(0, EARLIEST, 5)] },
        { name: 'nope', partitions: [v0(0, LATEST, 5)] },
        { name: 't2', partitions: [v0(0, LATEST, 5)] },
        { name: 't1', partitions: [v0(1, LATEST, -1)] },
      ]),
    ).toEqual([
      ['t1', [[0, 0, [1n, 0n]], [7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []], [0, 0, [0n]]]],
      ['nope', [[0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []]]],
      ['t2', [[0, ErrorCode.KAFKA_STORAGE_ERROR, []]]],
      // A negative max_num_offsets: Kafka 3.x fails while sizing its answer.
      ['t1', [[1, ErrorCode.UNKNOWN_SERVER_ERROR, []]]],
    ]);
    expect(s.metadata.image().topics.has('nope')).toBe(false);
  });

  it('reads and writes the v0 layout of the October 2024 definitions', () => {
    const request = req([{ name: 't', partitions: [v0(2, LATEST, 3)] }]);
    const requestHex = ['ffffffff', '00000001', '000174', '00000001', '00000002', 'ffffffffffffffff', '00000003'].join('');
    expect(encode(ListOffsetsRequestDecl, 0, request).toString('hex')).toBe(requestHex);
    const back = decode<ListOffsetsRequest>(ListOffsetsRequestDecl, 0, Buffer.from(requestHex, 'hex'));
    expect(back.ok && back.value.topics).toEqual(request.topics);
    const response: ListOffsetsResponse = {
      throttleTimeMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 2, errorCode: 0, oldStyleOffsets: [15n, 10n], timestamp: -1n, offset: -1n, leaderEpoch: -1 }] }],
    };
    // No throttle time, timestamp, offset or leader epoch: the offsets as an int32-counted array of int64.
    const responseHex = ['00000001', '000174', '00000001', '00000002', '0000', '00000002', '000000000000000f', '000000000000000a'].join('');
    expect(encode(ListOffsetsResponseDecl, 0, response).toString('hex')).toBe(responseHex);
    expect(decode<ListOffsetsResponse>(ListOffsetsResponseDecl, 0, Buffer.from(responseHex, 'hex'))).toEqual({ ok: true, value: response });
  });
});

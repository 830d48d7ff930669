import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/reader.js';
import type { DescribeTopicPartitionsRequest } from '../wire/messages/describe-topic-partitions-request.js';
import { buildImage, type MetadataStore, type TopicImage } from '../cluster/metadata/metadata-image.js';
import { featureLevel } from '../cluster/metadata/features.js';
import { describeTopicPartitions } from './describe-topic-partitions.js';
import { metadata } from './metadata.js';
import { callAt, testServices, type TestServices, type TestSettings } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** Every operation a topic allows (Metadata's answer without an authorizer). */
const TOPIC_OPS = 3576;

/** Services whose store holds `topics` (name -> partition count), each with one replica on broker 1. */
async function services(topics: Record<string, number> = {}, settings: TestSettings = {}): Promise<TestServices> {
  const s = testServices(settings);
  open.push(s);
  for (const [name, numPartitions] of Object.entries(topics)) await s.metadata.createTopic({ name, numPartitions, replicationFactor: 1 });
  return s;
}

function ask(s: TestServices, names: string[], responsePartitionLimit = 2000, cursor: DescribeTopicPartitionsRequest['cursor'] = null, listener?: string) {
  return callAt(describeTopicPartitions, 0, { topics: names.map((name) => ({ name })), responsePartitionLimit, cursor }, s, listener ? { listener } : {});
}

/** [name, errorCode, partition indexes] of each topic answered, and the next cursor. */
async function pageOf(s: TestServices, names: string[], limit = 2000, cursor: DescribeTopicPartitionsRequest['cursor'] = null) {
  const r = await ask(s, names, limit, cursor);
  return { topics: r.topics.map((t) => [t.name, t.errorCode, t.partitions.map((p) => p.partitionIndex)]), nextCursor: r.nextCursor };
}

const healthy = (partitionIndex: number) => ({
  errorCode: ErrorCode.NONE,
  partitionIndex,
  leaderId: 1,
  leaderEpoch: 0,
  replicaNodes: [1],
  isrNodes: [1],
  eligibleLeaderReplicas: [],
  lastKnownElr: [],
  offlineReplicas: [],
});

describe('DescribeTopicPartitions', () => {
  it('describes a topic\'s partitions as Metadata does, with its topic id and every topic operation', async () => {
    const s = await services({ orders: 3 });
    const md = await callAt(metadata, 12, { topics: [{ name: 'orders', topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: true }, s);
    expect(await ask(s, ['orders'])).toEqual({
      throttleTimeMs: 0,
      topics: [
        {
          errorCode: ErrorCode.NONE,
          name: 'orders',
          topicId: md.topics[0]!.topicId,
          isInternal: false,
          partitions: [healthy(0), healthy(1), healthy(2)],
          topicAuthorizedOperations: md.topics[0]!.topicAuthorizedOperations,
        },
      ],
      nextCursor: null,
    });
    expect(md.topics[0]!.topicId).not.toBe(ZERO_UUID);
    expect(md.topics[0]!.topicAuthorizedOperations).toBe(TOPIC_OPS);
  });

  it('answers empty eligible-leader lists, as Kafka does at eligible.leader.replicas.version 0', async () => {
    expect(featureLevel('eligible.leader.replicas.version')).toBe(0);
    const s = await services({ t: 1 });
    const p = (await ask(s, ['t'])).topics[0]!.partitions[0]!;
    expect([p.eligibleLeaderReplicas, p.lastKnownElr]).toEqual([[], []]);
  });

  it('answers topics in name order and each once; a missing or illegal name gets its error and the zero id, and is not created', async () => {
    const s = await services({ b: 1, a: 1 });
    expect(await pageOf(s, ['b', 'zz', 'a', 'b', 'bad name', '..', 'x'.repeat(250), 'a-missing'])).toEqual({
      topics: [
        ['..', ErrorCode.INVALID_TOPIC_EXCEPTION, []],
        ['a', ErrorCode.NONE, [0]],
        ['a-missing', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []],
        ['b', ErrorCode.NONE, [0]],
        ['bad name', ErrorCode.INVALID_TOPIC_EXCEPTION, []],
        ['x'.repeat(250), ErrorCode.INVALID_TOPIC_EXCEPTION, []],
        ['zz', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []],
      ],
      nextCursor: null,
    });
    const missing = (await ask(s, ['zz'])).topics[0]!;
    expect(missing).toEqual({ errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name: 'zz', topicId: ZERO_UUID, isInternal: false, partitions: [], topicAuthorizedOperations: TOPIC_OPS });
    expect(s.metadata.image().topics.has('zz')).toBe(false);
  });

  it('calls a topic internal by its name, whether it exists or not', async () => {
    const s = await services({ __consumer_offsets: 2, plain: 1 });
    const r = await ask(s, ['__consumer_offsets', '__transaction_state', '__share_group_state', 'plain']);
    expect(r.topics.map((t) => [t.name, t.errorCode, t.isInternal])).toEqual([
      ['__consumer_offsets', ErrorCode.NONE, true],
      ['__share_group_state', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, true],
      ['__transaction_state', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, true],
      ['plain', ErrorCode.NONE, false],
    ]);
  });

  it('describes every topic, internal ones too, in name order when none is named', async () => {
    const s = await services({ zeta: 1, alpha: 2, __consumer_offsets: 1 });
    expect(await pageOf(s, [])).toEqual({
      topics: [
        ['__consumer_offsets', ErrorCode.NONE, [0]],
        ['alpha', ErrorCode.NONE, [0, 1]],
        ['zeta', ErrorCode.NONE, [0]],
      ],
      nextCursor: null,
    });
  });

  it('pages a topic: the cursor names the first partition left out, and the next page starts there', async () => {
    const s = await services({ t: 3 });
    const first = await ask(s, ['t'], 2);
    expect(first.topics[0]!.partitions).toEqual([healthy(0), healthy(1)]);
    expect(first.nextCursor).toEqual({ topicName: 't', partitionIndex: 2 });
    const second = await ask(s, ['t'], 2, first.nextCursor);
    expect(second.topics[0]!.partitions).toEqual([healthy(2)]);
    expect(second.nextCursor).toBeNull();
  });

  it('pages across topics: a limit used up at the end of a topic points the cursor at the next topic\'s partition 0', async () => {
    const s = await services({ a: 2, b: 3 });
    expect(await pageOf(s, ['b', 'a'], 2)).toEqual({ topics: [['a', 0, [0, 1]]], nextCursor: { topicName: 'b', partitionIndex: 0 } });
    expect(await pageOf(s, ['a', 'b'], 3)).toEqual({ topics: [['a', 0, [0, 1]], ['b', 0, [0]]], nextCursor: { topicName: 'b', partitionIndex: 1 } });
    // The next topic named need not exist: the cursor points at it all the same.
    expect(await pageOf(s, ['a', 'nope'], 2)).toEqual({ topics: [['a', 0, [0, 1]]], nextCursor: { topicName: 'nope', partitionIndex: 0 } });
    // Nothing after: no cursor.
    expect(await pageOf(s, ['a'], 2)).toEqual({ topics: [['a', 0, [0, 1]]], nextCursor: null });
    // A missing topic takes no room.
    expect(await pageOf(s, ['a-missing', 'b'], 1)).toEqual({
      topics: [['a-missing', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []], ['b', 0, [0]]],
      nextCursor: { topicName: 'b', partitionIndex: 1 },
    });
  });

  it('skips the names before the cursor\'s topic and starts that topic at the cursor\'s partition', async () => {
    const s = await services({ a: 2, b: 3 });
    expect(await pageOf(s, ['a', 'b'], 10, { topicName: 'b', partitionIndex: 1 })).toEqual({ topics: [['b', 0, [1, 2]]], nextCursor: null });
    // A partition past the end gives the topic with no partitions, and the next topics follow.
    expect(await pageOf(s, ['a', 'b'], 10, { topicName: 'a', partitionIndex: 2 })).toEqual({ topics: [['a', 0, []], ['b', 0, [0, 1, 2]]], nextCursor: null });
    // With every topic asked for, the cursor's topic need not exist.
    expect(await pageOf(s, [], 1, { topicName: 'aa', partitionIndex: 5 })).toEqual({ topics: [['b', 0, [0]]], nextCursor: { topicName: 'b', partitionIndex: 1 } });
    expect(await pageOf(s, [], 1, { topicName: 'b', partitionIndex: 1 })).toEqual({ topics: [['b', 0, [1]]], nextCursor: { topicName: 'b', partitionIndex: 2 } });
  });

  it('describes at least one partition whatever the limit asked, and at most max.request.partition.size.limit', async () => {
    const s = await services({ a: 2, b: 3 });
    for (const limit of [0, -5]) {
      expect(await pageOf(s, ['a', 'b'], limit)).toEqual({ topics: [['a', 0, [0]]], nextCursor: { topicName: 'a', partitionIndex: 1 } });
    }
    expect(await pageOf(s, ['a'], 2147483647)).toEqual({ topics: [['a', 0, [0, 1]]], nextCursor: null });
    const capped = await services({ a: 2, b: 3 }, { config: { 'max.request.partition.size.limit': 3 } });
    expect(await pageOf(capped, ['a', 'b'], 2000)).toEqual({ topics: [['a', 0, [0, 1]], ['b', 0, [0]]], nextCursor: { topicName: 'b', partitionIndex: 1 } });
  });

  it('wraps a start partition near 2^31 as Kafka\'s 32-bit arithmetic does: no partition and a negative next index', async () => {
    const s = await services({ b: 3 });
    expect(await pageOf(s, ['b'], 10, { topicName: 'b', partitionIndex: 2147483647 })).toEqual({
      topics: [['b', 0, []]],
      nextCursor: { topicName: 'b', partitionIndex: -2147483639 },
    });
  });

  it('refuses a cursor whose topic is not named, or whose partition is negative, with INVALID_REQUEST for every topic named', async () => {
    const s = await services({ a: 2, b: 3 });
    const refused = (names: string[]) => names.map((name) => ({ errorCode: ErrorCode.INVALID_REQUEST, name, topicId: ZERO_UUID, isInternal: false, partitions: [], topicAuthorizedOperations: -2147483648 }));
    expect(await ask(s, ['b', 'a', 'b'], 10, { topicName: 'c', partitionIndex: 0 })).toEqual({ throttleTimeMs: 0, topics: refused(['b', 'a', 'b']), nextCursor: null });
    expect((await ask(s, ['b'], 10, { topicName: 'b', partitionIndex: -1 })).topics).toEqual(refused(['b']));
    expect((await ask(s, [], 10, { topicName: 'b', partitionIndex: -1 })).topics).toEqual([]);
  });

  it('fails the whole request on the topic "" without a cursor, as Kafka 4.4 does; with a cursor naming it, "" is an illegal name', async () => {
    const s = await services({ b: 1 });
    expect((await ask(s, ['', 'b'])).topics.map((t) => [t.name, t.errorCode, t.partitions.length, t.topicAuthorizedOperations])).toEqual([
      ['', ErrorCode.UNKNOWN_SERVER_ERROR, 0, -2147483648],
      ['b', ErrorCode.UNKNOWN_SERVER_ERROR, 0, -2147483648],
    ]);
    expect(await pageOf(s, ['', 'b'], 10, { topicName: '', partitionIndex: 0 })).toEqual({ topics: [['', ErrorCode.INVALID_TOPIC_EXCEPTION, []], ['b', 0, [0]]], nextCursor: null });
    // A cursor past "" leaves it out.
    expect(await pageOf(s, ['', 'b'], 10, { topicName: 'b', partitionIndex: 0 })).toEqual({ topics: [['b', 0, [0]]], nextCursor: null });
  });

  describe('in a cluster', () => {
    const broker = (nodeId: number, listeners: string[]) => ({ nodeId, rack: null, endpoints: listeners.map((listener, i) => ({ listener, host: `b${nodeId}`, port: 9092 + i })) });
    const topic: TopicImage = {
      name: 'spread',
      topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
      internal: false,
      configs: {},
      partitions: [
        { partition: 0, leader: 2, leaderEpoch: 4, replicas: [2, 1, 3], isr: [2, 1], offlineReplicas: [3] },
        // Its leader, broker 3, is gone: no leader to name.
        { partition: 1, leader: 3, leaderEpoch: 7, replicas: [3, 1], isr: [3], offlineReplicas: [3] },
      ],
    };

    /** Brokers 1 (PLAINTEXT and INTERNAL) and 2 (PLAINTEXT only); broker 3 is gone. */
    function clusterServices(): TestServices {
      const s = testServices();
      open.push(s);
      const image = buildImage('c', 1, [broker(1, ['PLAINTEXT', 'INTERNAL']), broker(2, ['PLAINTEXT'])], [topic]);
      return { ...s, metadata: { ...s.metadata, image: () => image } as MetadataStore };
    }

    it('names the replicas on brokers that are gone as offline, and no leader where the leader is gone', async () => {
      const r = await ask(clusterServices(), ['spread']);
      expect(r.topics[0]!.partitions.map((p) => [p.errorCode, p.leaderId, p.leaderEpoch, p.replicaNodes, p.isrNodes, p.offlineReplicas])).toEqual([
        [ErrorCode.NONE, 2, 4, [2, 1, 3], [2, 1], [3]],
        [ErrorCode.NONE, -1, 7, [3, 1], [3], [3]],
      ]);
    });

    it('counts a broker without the client\'s listener as offline, and not as a leader', async () => {
      const r = await ask(clusterServices(), ['spread'], 2000, null, 'INTERNAL');
      expect(r.topics[0]!.partitions.map((p) => [p.leaderId, p.offlineReplicas])).toEqual([
        [-1, [2, 3]],
        [-1, [3]],
      ]);
    });
  });
});

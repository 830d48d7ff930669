import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildBatch } from '../../wire/record-batch.js';
import { ErrorCode } from '../../wire/errors.js';
import { buildImage, type MetadataImage } from '../metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC, partitionFor } from '../coordinator/partition-for.js';
import { deserializeRecord, serializeRecord, type CoordinatorRecord } from './group-records.js';
import { assign } from './consumer-group.js';
import type { ConsumerGroupHeartbeatParams } from './group-coordinator.js';
import { consumerJoin as join, consumerBeat as beat, assignedPartitions as parts, FakeMetadataStore, MemoryOffsetsStore, harness, type Harness } from './group-test-support.js';

const T = 'AAAAAAAAAAAAAAAAAAAAAg';

/** __consumer_offsets (4 partitions) and topic t with `partitions` partitions, all led here. */
class TopicMetadata extends FakeMetadataStore {
  constructor(partitions = 6) {
    super(TopicMetadata.imageOf(partitions));
  }
  static imageOf(partitions: number): MetadataImage {
    const parts = (n: number) => Array.from({ length: n }, (_, partition) => ({ partition, leader: 1, leaderEpoch: 0, replicas: [1], isr: [1], offlineReplicas: [] }));
    return buildImage('cluster', 1, [{ nodeId: 1, rack: null, endpoints: [] }], [
      { name: GROUP_METADATA_TOPIC, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: true, configs: {}, partitions: parts(4) },
      { name: 't', topicId: T, internal: false, configs: {}, partitions: parts(partitions) },
    ]);
  }
  grow(partitions: number): void {
    this.publish(TopicMetadata.imageOf(partitions));
  }
}

function setup(config: Parameters<typeof harness>[0] = {}): Harness & { topics: TopicMetadata } {
  const topics = new TopicMetadata();
  const h = harness(config, { metadata: topics as never, store: new MemoryOffsetsStore() });
  return { ...h, topics };
}


describe('consumer groups (KIP-848): ConsumerGroupHeartbeat', () => {
  it('runs Kafka 4.4\'s worked example: join, a second member, revoke before assign, a leave', () => {
    const h = setup();
    const c = h.coordinator;
    const a1 = c.consumerGroupHeartbeat(join('A'));
    expect([a1.errorCode, a1.memberEpoch, a1.heartbeatIntervalMs, parts(a1)]).toEqual([0, 2, 5000, [0, 1, 2, 3, 4, 5]]);
    expect(c.consumerGroup('g')!.state).toBe('Stable');
    h.timer.advance(1500);
    const b1 = c.consumerGroupHeartbeat(join('B'));
    // t-3..5 are still A's: B gets the new epoch and nothing yet.
    expect([b1.memberEpoch, parts(b1)]).toEqual([3, []]);
    expect(c.consumerGroup('g')!.state).toBe('Reconciling');
    const a2 = c.consumerGroupHeartbeat(beat('A', 2));
    expect([a2.memberEpoch, parts(a2)]).toEqual([2, [0, 1, 2]]);
    // Still listing what it must give up: no change.
    expect(parts(c.consumerGroupHeartbeat(beat('A', 2, [0, 1, 2, 3, 4, 5])))).toBeNull();
    expect(parts(c.consumerGroupHeartbeat(beat('B', 3, [])))).toBeNull();
    const a3 = c.consumerGroupHeartbeat(beat('A', 2, [0, 1, 2]));
    expect([a3.memberEpoch, parts(a3)]).toEqual([3, null]);
    const b2 = c.consumerGroupHeartbeat(beat('B', 3, []));
    expect([b2.memberEpoch, parts(b2)]).toEqual([3, [3, 4, 5]]);
    expect(c.consumerGroup('g')!.state).toBe('Stable');
    const left = c.consumerGroupHeartbeat(beat('A', -1));
    expect([left.errorCode, left.memberId, left.memberEpoch]).toEqual([0, 'A', -1]);
    h.timer.advance(1000);
    const b3 = c.consumerGroupHeartbeat(beat('B', 3, [3, 4, 5]));
    expect([b3.memberEpoch, parts(b3)]).toEqual([4, [0, 1, 2, 3, 4, 5]]);
    expect(c.consumerGroupHeartbeat(beat('A', 3)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(c.consumerGroupHeartbeat(beat('B', 4, [0, 1, 2, 3, 4, 5, 6].slice(0, 6))).errorCode).toBe(0);
    c.consumerGroupHeartbeat(beat('B', -1));
    expect(c.consumerGroup('g')).toMatchObject({ state: 'Empty', groupEpoch: 5, assignmentEpoch: 5 });
  });

  it('answers Kafka\'s errors for bad requests, unknown members and fenced epochs', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0 });
    const c = h.coordinator;
    const fail = (p: ConsumerGroupHeartbeatParams) => {
      const r = c.consumerGroupHeartbeat(p);
      return [r.errorCode, r.errorMessage];
    };
    expect(fail(join(''))).toEqual([ErrorCode.INVALID_REQUEST, "MemberId can't be empty."]);
    expect(fail(join('A', { rebalanceTimeoutMs: -1 }))).toEqual([ErrorCode.INVALID_REQUEST, 'RebalanceTimeoutMs must be provided in first request.']);
    expect(fail(join('A', { topicPartitions: null }))).toEqual([ErrorCode.INVALID_REQUEST, 'TopicPartitions must be empty when (re-)joining.']);
    expect(fail(join('A', { subscribedTopicNames: null }))).toEqual([ErrorCode.INVALID_REQUEST, 'Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.']);
    expect(fail(join('A', { serverAssignor: 'sticky' }))[0]).toBe(ErrorCode.UNSUPPORTED_ASSIGNOR);
    expect(fail(join('A', { subscribedTopicRegex: '(' }))[0]).toBe(ErrorCode.INVALID_REGULAR_EXPRESSION);
    expect(fail(beat('A', 3))).toEqual([ErrorCode.GROUP_ID_NOT_FOUND, 'Consumer group g not found.']);
    // v0: the coordinator names a member that joins without an id.
    const v0 = c.consumerGroupHeartbeat(join('', { version: 0 }));
    expect(v0.errorCode).toBe(0);
    expect(v0.memberId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(c.consumerGroupHeartbeat(join('A')).memberEpoch).toBe(3);
    expect(fail(beat('B', 3))).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, 'Member B is not a member of group g.']);
    expect(fail(beat('A', 9))[0]).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
    // The first member leaves: A moves on to epoch 4 with every partition.
    c.consumerGroupHeartbeat(beat(v0.memberId!, -1));
    expect(c.consumerGroupHeartbeat(beat('A', 3, [])).memberEpoch).toBe(4);
    // A member that lost that answer may come back with its previous epoch, listing only partitions it was given;
    // any other older epoch is fenced.
    expect(c.consumerGroupHeartbeat(beat('A', 3, [0, 1])).errorCode).toBe(0);
    expect(fail(beat('A', 2, []))[0]).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
    expect(fail(beat('A', 3, null))[0]).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
  });

  it('keeps its groups across a coordinator restart, epochs and assignments included', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(join('A'));
    c.consumerGroupHeartbeat(join('B'));
    c.consumerGroupHeartbeat(beat('A', 2, [0, 1, 2, 3, 4, 5]));
    c.consumerGroupHeartbeat(beat('A', 2, [0, 1, 2]));
    c.consumerGroupHeartbeat(beat('B', 3, []));
    const before = c.describeConsumerGroup('g');
    const again = h.restart();
    const after = again.coordinator.describeConsumerGroup('g');
    expect(after).toEqual(before);
    expect(after).toMatchObject({ groupState: 'Stable', groupEpoch: 3, assignmentEpoch: 3 });
    expect(after.members.map((m) => [m.memberId, m.memberEpoch, m.assignment[0]?.partitions])).toEqual([
      ['A', 3, [0, 1, 2]],
      ['B', 3, [3, 4, 5]],
    ]);
    expect(again.coordinator.consumerGroupHeartbeat(beat('B', 3, [3, 4, 5]))).toMatchObject({ errorCode: 0, memberEpoch: 3, assignment: null });
  });

  it('gives the members it loads a fresh session: one that heartbeats stays at its epoch, a silent one is fenced', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0, consumerSessionTimeoutMs: 45_000 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(join('A'));
    c.consumerGroupHeartbeat(join('B'));
    c.consumerGroupHeartbeat(beat('A', 2, [0, 1, 2]));
    c.consumerGroupHeartbeat(beat('B', 3, []));
    expect(c.consumerGroup('g')!.state).toBe('Stable');
    // Most of both sessions gone before the restart; the coordinator that loads the group starts them again
    // (the clock goes on across the restart: A's old session would have run out 5 s after it).
    h.timer.advance(40_000);
    const loaded: [Record<string, unknown>, string][] = [];
    const again = h.restart({ info: (obj: object, msg: string) => loaded.push([obj as Record<string, unknown>, msg]), warn: () => {} });
    const c2 = again.coordinator;
    expect(loaded.filter(([, msg]) => msg === 'loaded group coordinator state').map(([obj]) => [obj.groups, obj.consumerGroups])).toEqual([[1, 1]]);
    again.timer.advance(30_000);
    expect(c2.consumerGroupHeartbeat(beat('A', 3, [0, 1, 2]))).toMatchObject({ errorCode: 0, memberEpoch: 3, assignment: null });
    again.timer.advance(15_001);
    // B said nothing for a whole session after the load: fenced, and A gets its partitions.
    expect([...c2.consumerGroup('g')!.members.keys()]).toEqual(['A']);
    const a = c2.consumerGroupHeartbeat(beat('A', 3, [0, 1, 2]));
    expect([a.errorCode, a.memberEpoch, parts(a)]).toEqual([0, 4, [0, 1, 2, 3, 4, 5]]);
    expect(c2.consumerGroupHeartbeat(beat('B', 3, [3, 4, 5])).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('fences a member whose session expires and one that does not revoke within its rebalance timeout', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0, consumerSessionTimeoutMs: 45_000 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(join('A', { rebalanceTimeoutMs: 10_000 }));
    c.consumerGroupHeartbeat(join('B'));
    // A must give up t-3..5 and says nothing for 10 s: out, and B gets everything.
    expect(c.consumerGroupHeartbeat(beat('A', 2)).errorCode).toBe(0);
    h.timer.advance(10_001);
    expect(c.consumerGroup('g')!.members.has('A')).toBe(false);
    expect(parts(c.consumerGroupHeartbeat(beat('B', 3, [])))).toEqual([0, 1, 2, 3, 4, 5]);
    h.timer.advance(45_001);
    expect(c.consumerGroup('g')!.state).toBe('Empty');
  });

  it('raises the group epoch when the assignor most members name changes, not for a member joining with no subscription', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(join('A'));
    expect(c.consumerGroupHeartbeat(join('B', { subscribedTopicNames: [] })).memberEpoch).toBe(2);
    expect(c.consumerGroup('g')!.groupEpoch).toBe(2);
    const r = c.consumerGroupHeartbeat(join('A', { memberEpoch: 2, rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: null, serverAssignor: 'range' }));
    expect([r.errorCode, r.memberEpoch, c.consumerGroup('g')!.groupEpoch]).toEqual([0, 3, 3]);
    expect(c.describeConsumerGroup('g').assignorName).toBe('range');
  });

  it('raises the group epoch when a subscribed topic gets partitions, and assigns them', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(join('A'));
    h.topics.grow(8);
    const r = c.consumerGroupHeartbeat(beat('A', 2, [0, 1, 2, 3, 4, 5]));
    expect([r.memberEpoch, parts(r)]).toEqual([3, [0, 1, 2, 3, 4, 5, 6, 7]]);
  });

  it('checks commits of a consumer group against member epochs, and lists and deletes it as a consumer group', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(join('A'));
    const commit = (memberId: string, epoch: number, v9 = true) =>
      c.commitOffsets({
        groupId: 'g',
        generationId: epoch,
        memberId,
        groupInstanceId: null,
        retentionTimeMs: -1n,
        groupIdNotFoundKnown: v9,
        topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
      })[0]!.partitions[0]!.errorCode;
    expect(commit('A', 2)).toBe(0);
    expect(commit('A', 3)).toBe(ErrorCode.STALE_MEMBER_EPOCH);
    expect(commit('Z', 2)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(commit('A', 2, false)).toBe(ErrorCode.UNSUPPORTED_VERSION);
    expect(c.fetchOffsets('g', [{ name: 't', partitionIndexes: [0] }]).topics[0]!.partitions[0]!.committedOffset).toBe(5n);
    expect(c.listGroups([], ['consumer'])).toEqual([{ groupId: 'g', protocolType: 'consumer', groupState: 'Stable', groupType: 'consumer' }]);
    expect(c.listGroups([], ['classic'])).toEqual([]);
    expect(c.describeGroup('g')).toMatchObject({ errorCode: 0, groupState: 'Dead', consumerGroup: true });
    expect(c.deleteGroup('g')).toBe(ErrorCode.NON_EMPTY_GROUP);
    c.consumerGroupHeartbeat(beat('A', -1));
    expect(c.deleteGroup('g')).toBe(ErrorCode.NONE);
    expect(c.describeConsumerGroup('g')).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group g not found.' });
    expect(h.restart().coordinator.describeConsumerGroup('g').errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});

describe('consumer groups (KIP-848): offset expiry', () => {
  it('keeps offsets of subscribed topics, expires the others from their commit, and deletes an empty group left without offsets', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0, offsetsRetentionMs: 60_000, consumerSessionTimeoutMs: 600_000 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(join('A'));
    const commit = (topic: string) =>
      c.commitOffsets({
        groupId: 'g',
        generationId: 2,
        memberId: 'A',
        groupInstanceId: null,
        retentionTimeMs: -1n,
        groupIdNotFoundKnown: true,
        topics: [{ name: topic, partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
      })[0]!.partitions[0]!.errorCode;
    expect([commit('t'), commit('gone')]).toEqual([0, 0]);
    h.timer.advance(61_000);
    c.expireOffsets();
    const offsetOf = (topic: string) => c.fetchOffsets('g', [{ name: topic, partitionIndexes: [0] }]).topics[0]!.partitions[0]!.committedOffset;
    // A subscribes to t: its offset stays; the other topic's expired.
    expect([offsetOf('t'), offsetOf('gone')]).toEqual([5n, -1n]);
    c.consumerGroupHeartbeat(beat('A', -1));
    c.expireOffsets();
    expect(offsetOf('t')).toBe(-1n);
    expect(c.describeConsumerGroup('g').errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(h.restart().coordinator.describeConsumerGroup('g').errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});

describe('consumer groups (KIP-848): static members and regular expressions', () => {
  it('keeps a static member\'s partitions over a temporary leave, for the member that takes its instance id, without a new group epoch', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0 });
    const c = h.coordinator;
    expect(parts(c.consumerGroupHeartbeat(join('A1', { instanceId: 'i-a' })))).toEqual([0, 1, 2, 3, 4, 5]);
    const left = c.consumerGroupHeartbeat(join('A1', { memberEpoch: -2, instanceId: 'i-a', rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: null }));
    expect([left.errorCode, left.memberId, left.memberEpoch]).toEqual([0, 'A1', -2]);
    expect(c.consumerGroup('g')).toMatchObject({ groupEpoch: 2, state: 'Reconciling' });
    // Another process takes the instance id over while its holder is away: it gets the partitions at once.
    const back = c.consumerGroupHeartbeat(join('A2', { instanceId: 'i-a' }));
    expect([back.errorCode, back.memberEpoch, parts(back)]).toEqual([0, 2, [0, 1, 2, 3, 4, 5]]);
    expect(c.consumerGroup('g')).toMatchObject({ groupEpoch: 2, state: 'Stable' });
    expect([...c.consumerGroup('g')!.members.keys()]).toEqual(['A2']);
    expect(c.consumerGroupHeartbeat(join('A3', { instanceId: 'i-a' })).errorCode).toBe(ErrorCode.UNRELEASED_INSTANCE_ID);
    expect(c.consumerGroupHeartbeat(join('A1', { memberEpoch: 2, instanceId: 'i-a', rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: null })).errorCode).toBe(
      ErrorCode.FENCED_INSTANCE_ID,
    );
  });

  it('assigns the topics a regular expression matches, whole names only, and a topic created later at the next heartbeat', () => {
    const h = setup({ consumerAssignmentIntervalMs: 0 });
    const c = h.coordinator;
    const r = c.consumerGroupHeartbeat(join('A', { subscribedTopicNames: null, subscribedTopicRegex: 't' }));
    expect([r.errorCode, parts(r)]).toEqual([0, [0, 1, 2, 3, 4, 5]]);
    expect(c.describeConsumerGroup('g').members[0]).toMatchObject({ subscribedTopicNames: [], subscribedTopicRegex: 't' });
    // A regular expression matching no topic yet: nothing, and no internal topic.
    const other = c.consumerGroupHeartbeat(join('B', { groupId: 'g2', subscribedTopicNames: null, subscribedTopicRegex: '__.*|x.*' }));
    expect(parts(other)).toEqual([]);
    h.topics.grow(7);
    expect(parts(c.consumerGroupHeartbeat(beat('A', 2, [0, 1, 2, 3, 4, 5])))).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });
});

describe('consumer group assignors', () => {
  const member = (memberId: string, previous: [string, number[]][] = [], topics = [T]) => ({ memberId, instanceId: null, topics, previous: new Map(previous.map(([t, ps]) => [t, new Set(ps)])) });
  const flat = (a: Map<string, Map<string, Set<number>>>) => Object.fromEntries([...a].map(([m, t]) => [m, [...(t.get(T) ?? [])].sort((x, y) => x - y)]));

  it('range cuts each topic into contiguous ranges, the first members one more', () => {
    expect(flat(assign('range', [member('b'), member('a'), member('c')], () => 7))).toEqual({ a: [0, 1, 2], b: [3, 4], c: [5, 6] });
  });

  it('uniform keeps what each member had up to its quota and fills the rest', () => {
    expect(flat(assign('uniform', [member('a', [[T, [0, 1, 2, 3, 4, 5]]]), member('b')], () => 6))).toEqual({ a: [0, 1, 2], b: [3, 4, 5] });
    expect(flat(assign('uniform', [member('a', [[T, [3, 4]]]), member('b', [[T, [0, 1, 2]]]), member('c')], () => 6))).toEqual({ a: [3, 4], b: [0, 1], c: [2, 5] });
  });
});

describe('consumer group records written by Apache Kafka 4.4.0 (wire/golden/kafka-consumer-group-records)', () => {
  const golden = JSON.parse(readFileSync(resolve(import.meta.dirname, '..', '..', 'wire', 'golden', 'kafka-consumer-group-records', 'records.json'), 'utf8')) as {
    group: string;
    topic: string;
    topicId: string;
    records: { type: number; key: string; value: string | null }[];
  };
  const bytes = (hex: string | null) => (hex === null ? null : Buffer.from(hex, 'hex'));

  it('decode as consumer group records and encode back to the same bytes', () => {
    for (const r of golden.records) {
      const decoded = deserializeRecord(bytes(r.key), bytes(r.value));
      expect(decoded.kind, `type ${r.type}`).toBe('consumer');
      const again = serializeRecord(decoded as CoordinatorRecord);
      expect([again.key.toString('hex'), again.value?.toString('hex') ?? null]).toEqual([r.key, r.value]);
    }
  });

  it('load into the group Kafka left: a static member away (-2) with its two partitions, the other gone, a new target not yet computed', () => {
    const image = buildImage('cluster', 1, [{ nodeId: 1, rack: null, endpoints: [] }], [
      ...TopicMetadata.imageOf(6).topics.values(),
      { name: golden.topic, topicId: golden.topicId, internal: false, configs: {}, partitions: [0, 1, 2, 3].map((partition) => ({ partition, leader: 1, leaderEpoch: 0, replicas: [1], isr: [1], offlineReplicas: [] })) },
    ]);
    const store = new MemoryOffsetsStore();
    store.append(partitionFor(golden.group, 4), buildBatch({ records: golden.records.map((r) => ({ key: bytes(r.key), value: bytes(r.value), timestamp: 1n })) }));
    const h = harness({}, { store, metadata: new FakeMetadataStore(image) as never });
    const g = h.coordinator.describeConsumerGroup(golden.group);
    // member-b's leave raised the group epoch to 4; the target stays at 3 until a member heartbeats.
    expect(g).toMatchObject({ errorCode: 0, groupState: 'Assigning', groupEpoch: 4, assignmentEpoch: 3 });
    expect(g.members.map((m) => [m.memberId, m.instanceId, m.rackId, m.memberEpoch, m.assignment.map((t) => [t.topicName, t.partitions])])).toEqual([
      ['member-a', 'instance-a', 'rack-1', -2, [[golden.topic, [0, 1]]]],
    ]);
    // Its session starts afresh on load: it is removed once that runs out, as Kafka removes it.
    h.timer.advance(45_001);
    expect(h.coordinator.describeConsumerGroup(golden.group)).toMatchObject({ groupState: 'Empty', groupEpoch: 5, assignmentEpoch: 5, members: [] });
  });
});

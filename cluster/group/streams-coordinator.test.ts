import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { buildImage, type MetadataImage, type TopicImage } from '../metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC } from '../coordinator/partition-for.js';
import { deserializeRecord, serializeRecord, type CoordinatorRecord } from './group-records.js';
import { FakeMetadataStore, MemoryOffsetsStore, consumerJoin, harness, joinParams, type Harness } from './group-test-support.js';
import { DEFAULT_STREAMS_GROUPS_CONFIG, type StreamsGroupHeartbeatParams, type StreamsGroupHeartbeatResult } from './streams-coordinator.js';
import type { Topology } from './streams-group.js';
import { StreamsStatus } from './streams-group.js';

const REPARTITION = 'app-words-repartition';
const CHANGELOG = 'app-counts-changelog';

/** __consumer_offsets (4 partitions) and named topics, all led here; topics come and go through `set`. */
class TopicsMetadata extends FakeMetadataStore {
  private topics = new Map<string, number>();
  constructor(topics: Record<string, number>) {
    super(TopicsMetadata.imageOf(new Map(Object.entries(topics))));
    this.topics = new Map(Object.entries(topics));
  }
  static imageOf(topics: ReadonlyMap<string, number>): MetadataImage {
    const parts = (n: number) => Array.from({ length: n }, (_, partition) => ({ partition, leader: 1, leaderEpoch: 0, replicas: [1], isr: [1], offlineReplicas: [] }));
    const images: TopicImage[] = [{ name: GROUP_METADATA_TOPIC, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: true, configs: {}, partitions: parts(4) }];
    for (const [name, n] of topics) images.push({ name, topicId: `id-${name}`, internal: false, configs: {}, partitions: parts(n) });
    return buildImage('cluster', 1, [{ nodeId: 1, rack: null, endpoints: [] }], images);
  }
  set(name: string, partitions: number): void {
    this.topics.set(name, partitions);
    this.publish(TopicsMetadata.imageOf(this.topics));
  }
}

/** A word count: subtopology 0 reads `in` and writes the repartition topic, 1 reads it and keeps a store. */
const topology = (epoch = 0): Topology => ({
  epoch,
  subtopologies: [
    { subtopologyId: '0', sourceTopics: ['in'], sourceTopicRegex: [], stateChangelogTopics: [], repartitionSinkTopics: [REPARTITION], repartitionSourceTopics: [], copartitionGroups: [] },
    {
      subtopologyId: '1',
      sourceTopics: [REPARTITION],
      sourceTopicRegex: [],
      stateChangelogTopics: [{ name: CHANGELOG, partitions: 0, replicationFactor: 0, topicConfigs: [{ key: 'cleanup.policy', value: 'compact' }] }],
      repartitionSinkTopics: [],
      repartitionSourceTopics: [{ name: REPARTITION, partitions: 0, replicationFactor: 0, topicConfigs: [{ key: 'cleanup.policy', value: 'delete' }] }],
      copartitionGroups: [],
    },
  ],
});

const join = (memberId: string, over: Partial<StreamsGroupHeartbeatParams> = {}): StreamsGroupHeartbeatParams => ({
  version: 1,
  groupId: 'app',
  memberId,
  memberEpoch: 0,
  endpointInformationEpoch: 0,
  instanceId: null,
  rackId: null,
  rebalanceTimeoutMs: 30000,
  topology: topology(),
  activeTasks: [],
  standbyTasks: [],
  warmupTasks: [],
  processId: `process-${memberId}`,
  userEndpoint: null,
  clientTags: [],
  shutdownApplication: false,
  clientId: 'c',
  clientHost: '/127.0.0.1',
  ...over,
});

type Tasks = Record<string, number[]>;
const taskIds = (t: Tasks) => Object.entries(t).map(([subtopologyId, partitions]) => ({ subtopologyId, partitions }));
const beat = (memberId: string, memberEpoch: number, active: Tasks | null = null, over: Partial<StreamsGroupHeartbeatParams> = {}): StreamsGroupHeartbeatParams => ({
  ...join(memberId),
  memberEpoch,
  rebalanceTimeoutMs: -1,
  topology: null,
  activeTasks: active === null ? null : taskIds(active),
  standbyTasks: active === null ? null : [],
  warmupTasks: active === null ? null : [],
  processId: null,
  clientTags: null,
  ...over,
});
const active = (r: StreamsGroupHeartbeatResult): string[] | null =>
  r.activeTasks === null ? null : r.activeTasks.flatMap((t) => t.partitions.map((p) => `${t.subtopologyId}_${p}`));
const statuses = (r: StreamsGroupHeartbeatResult): number[] => (r.status ?? []).map((s) => s.statusCode);

function setup(delayMs = 0, topics: Record<string, number> = { in: 2 }): Harness & { topics: TopicsMetadata } {
  const metadata = new TopicsMetadata(topics);
  const h = harness({ streams: { ...DEFAULT_STREAMS_GROUPS_CONFIG, initialRebalanceDelayMs: delayMs } }, { metadata: metadata as never, store: new MemoryOffsetsStore() });
  return { ...h, topics: metadata };
}

/** A group whose internal topics exist and whose one member A holds every task at epoch 2. */
function running(delayMs = 0): Harness & { topics: TopicsMetadata } {
  const h = setup(delayMs);
  h.coordinator.streams.heartbeat(join('A'));
  h.topics.set(REPARTITION, 2);
  h.topics.set(CHANGELOG, 2);
  return h;
}

describe('streams groups (KIP-1071): StreamsGroupHeartbeat', () => {
  it('asks for the missing internal topics with the partitions and configs the topology implies', () => {
    const h = setup();
    const r = h.coordinator.streams.heartbeat(join('A'));
    expect([r.errorCode, r.memberId, r.memberEpoch, r.heartbeatIntervalMs, active(r)]).toEqual([0, 'A', 1, 5000, []]);
    expect(statuses(r)).toEqual([StreamsStatus.MISSING_INTERNAL_TOPICS]);
    expect(r.internalTopicsToCreate).toEqual([
      { name: REPARTITION, numPartitions: 2, replicationFactor: 0, configs: { 'cleanup.policy': 'delete' } },
      { name: CHANGELOG, numPartitions: 2, replicationFactor: 0, configs: { 'cleanup.policy': 'compact' } },
    ]);
    expect(h.coordinator.streams.describe('app').groupState).toBe('NotReady');
  });

  it('assigns every task once the internal topics exist, and moves half to a second process through revocation', () => {
    const h = running();
    const s = h.coordinator.streams;
    const a1 = s.heartbeat(beat('A', 1, {}));
    expect([a1.memberEpoch, active(a1), a1.status]).toEqual([2, ['0_0', '0_1', '1_0', '1_1'], null]);
    expect(s.describe('app').groupState).toBe('Stable');
    const b1 = s.heartbeat(join('B'));
    // B's tasks are still A's: B is at the new epoch without them.
    expect([b1.memberEpoch, active(b1)]).toEqual([3, []]);
    expect(s.describe('app').groupState).toBe('Reconciling');
    const a2 = s.heartbeat(beat('A', 2, { '0': [0, 1], '1': [0, 1] }));
    expect(a2.memberEpoch).toBe(2);
    const kept = active(a2)!;
    expect(kept).toHaveLength(2);
    // Still owning what it must give up: it stays at its epoch.
    expect(s.heartbeat(beat('A', 2, { '0': [0, 1], '1': [0, 1] })).memberEpoch).toBe(2);
    const ownedKept: Tasks = {};
    for (const t of kept) (ownedKept[t[0]!] ??= []).push(Number(t[2]));
    expect(s.heartbeat(beat('A', 2, ownedKept)).memberEpoch).toBe(3);
    const b2 = s.heartbeat(beat('B', 3, {}));
    expect(b2.memberEpoch).toBe(3);
    expect([...kept, ...active(b2)!].sort()).toEqual(['0_0', '0_1', '1_0', '1_1']);
    expect(s.describe('app').groupState).toBe('Stable');
  });

  it('answers Kafka\'s errors: unknown group and member, fenced epochs, a different topology, invalid requests', async () => {
    const h = running();
    const s = h.coordinator.streams;
    s.heartbeat(beat('A', 1, {}));
    const code = (p: StreamsGroupHeartbeatParams) => {
      const r = s.heartbeat(p);
      return [r.errorCode, r.errorMessage];
    };
    expect(code(beat('X', 2, {}, { groupId: 'nope' }))).toEqual([ErrorCode.GROUP_ID_NOT_FOUND, 'Streams group nope not found.']);
    expect(code(beat('X', 2, {}))).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, 'Member X is not a member of group app.']);
    expect(code(beat('A', 7, {}))[0]).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
    // Its previous epoch is accepted while it owns nothing beyond its assignment, not an older one.
    expect(code(beat('A', 1, { '0': [0] }))[0]).toBe(ErrorCode.NONE);
    expect(code(beat('A', 0, null, { memberEpoch: 5 }))[0]).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
    const other = topology();
    other.subtopologies[0]!.sourceTopics = ['other'];
    expect(code(join('B', { topology: other }))).toEqual([ErrorCode.INVALID_REQUEST, 'Topology updates are not supported yet.']);
    expect(code(join(''))).toEqual([ErrorCode.INVALID_REQUEST, "MemberId can't be empty."]);
    expect(code(join('B', { rebalanceTimeoutMs: -1 }))).toEqual([ErrorCode.INVALID_REQUEST, 'RebalanceTimeoutMs must be provided in first request.']);
    expect(code(join('B', { activeTasks: taskIds({ '0': [0] }) }))).toEqual([ErrorCode.INVALID_REQUEST, 'ActiveTasks must be empty when (re-)joining.']);
    expect(code(join('B', { topology: null }))).toEqual([ErrorCode.INVALID_REQUEST, 'Topology must be non-null when (re-)joining.']);
    expect(code(beat('A', 2, {}, { topology: topology() }))).toEqual([ErrorCode.INVALID_REQUEST, 'Topology can only be provided when (re-)joining.']);
    expect(code(beat('A', -3, {}))).toEqual([ErrorCode.INVALID_REQUEST, 'MemberEpoch is -3, but must be greater than or equal to -2.']);
    expect(code(beat('A', 2, { '0': [0] }, { standbyTasks: null }))).toEqual([ErrorCode.INVALID_REQUEST, 'If one task-type is non-null, all must be non-null.']);
    const sized = topology();
    sized.subtopologies[1]!.stateChangelogTopics[0]!.partitions = 3;
    expect(code(join('B', { topology: sized }))[0]).toBe(ErrorCode.STREAMS_INVALID_TOPOLOGY);
    // Neither a consumer group heartbeat nor a classic join can take over a streams group's id.
    expect(h.coordinator.consumerGroupHeartbeat(consumerJoin('C', { groupId: 'app' })).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect((await h.coordinator.joinGroup(joinParams({ groupId: 'app' }))).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  it('tells a member of missing source topics and of a stale topology', () => {
    const h = setup(0, {});
    const r = h.coordinator.streams.heartbeat(join('A'));
    expect([r.errorCode, statuses(r)]).toEqual([0, [StreamsStatus.MISSING_SOURCE_TOPICS]]);
    expect(r.status![0]!.statusDetail).toContain('in');
    const h2 = setup();
    h2.coordinator.streams.heartbeat(join('A', { topology: topology(1) }));
    // A member with an older topology joins with the group's, and is told so.
    const stale = h2.coordinator.streams.heartbeat(join('C', { topology: topology(0) }));
    expect([stale.errorCode, statuses(stale)]).toEqual([0, [StreamsStatus.STALE_TOPOLOGY, StreamsStatus.MISSING_INTERNAL_TOPICS]]);
    expect(stale.status![0]!.statusDetail).toBe("The member's topology epoch 0 is behind the group's topology epoch 1.");
    // A newer topology than the group's is a topology update, which Kafka 4.4 refuses.
    expect(h2.coordinator.streams.heartbeat(join('D', { topology: topology(2) })).errorCode).toBe(ErrorCode.INVALID_REQUEST);
  });

  it('delays the first assignment of a new group by group.streams.initial.rebalance.delay.ms', () => {
    const h = running(3000);
    const s = h.coordinator.streams;
    const a1 = s.heartbeat(beat('A', 1, {}));
    // Still nothing (so no task list in the answer), and the status says why.
    expect([active(a1), statuses(a1)]).toEqual([null, [StreamsStatus.ASSIGNMENT_DELAYED]]);
    h.timer.advance(3000);
    const a2 = s.heartbeat(beat('A', a1.memberEpoch, {}));
    expect([a2.errorCode, active(a2), a2.status]).toEqual([0, ['0_0', '0_1', '1_0', '1_1'], null]);
    expect(a2.memberEpoch).toBeGreaterThan(a1.memberEpoch);
  });

  it('removes a member that leaves (-1) or is not heard from within the session timeout, and gives its tasks to the rest', () => {
    const h = running();
    const s = h.coordinator.streams;
    s.heartbeat(beat('A', 1, {}));
    const b = s.heartbeat(join('B'));
    const left = s.heartbeat(beat('B', -1, null));
    expect([left.errorCode, left.memberEpoch]).toEqual([0, -1]);
    expect(s.describe('app').members.map((m) => m.memberId)).toEqual(['A']);
    expect(s.heartbeat(beat('B', b.memberEpoch, {})).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    s.heartbeat(join('C'));
    h.timer.advance(44_000);
    s.heartbeat(beat('A', s.group('app')!.members.get('A')!.memberEpoch, null));
    h.timer.advance(2_000);
    // C said nothing for 46 s: gone; A heartbeated 2 s ago: kept.
    expect(s.describe('app').members.map((m) => m.memberId)).toEqual(['A']);
  });

  it('gives members with an endpoint the partitions each endpoint serves', () => {
    const h = running();
    const s = h.coordinator.streams;
    const r = s.heartbeat(beat('A', 1, {}, { userEndpoint: { host: 'h', port: 9 } }));
    expect(r.endpointInformationEpoch).toBeGreaterThan(0);
    expect(r.partitionsByUserEndpoint).toEqual([
      {
        userEndpoint: { host: 'h', port: 9 },
        activePartitions: [
          { topic: REPARTITION, partitions: [0, 1] },
          { topic: 'in', partitions: [0, 1] },
        ],
        standbyPartitions: [],
      },
    ]);
    // Already seen: not sent again.
    expect(s.heartbeat(beat('A', 2, null, { endpointInformationEpoch: r.endpointInformationEpoch })).partitionsByUserEndpoint).toBeNull();
  });

  it('keeps the group, its members and their tasks across a coordinator restart', () => {
    const h = running();
    const a = h.coordinator.streams.heartbeat(beat('A', 1, {}));
    const again = h.restart();
    const s = again.coordinator.streams;
    const d = s.describe('app');
    expect([d.errorCode, d.groupState, d.groupEpoch, d.assignmentEpoch]).toEqual([0, 'Stable', 2, 2]);
    expect(d.members.map((m) => [m.memberId, m.memberEpoch, m.processId, m.assignment.activeTasks])).toEqual([
      ['A', 2, 'process-A', [{ subtopologyId: '0', partitions: [0, 1] }, { subtopologyId: '1', partitions: [0, 1] }]],
    ]);
    expect(d.topology!.subtopologies!.map((st) => st.subtopologyId)).toEqual(['0', '1']);
    const r = s.heartbeat(beat('A', a.memberEpoch, { '0': [0, 1], '1': [0, 1] }));
    expect([r.errorCode, r.memberEpoch, r.activeTasks]).toEqual([0, 2, null]);
  });

  it('lists, describes and deletes a streams group as Kafka does, and checks its members\' offset commits', () => {
    const h = running();
    const c = h.coordinator;
    c.streams.heartbeat(beat('A', 1, {}));
    expect(c.listGroups([], ['streams'])).toEqual([{ groupId: 'app', protocolType: 'streams', groupState: 'Stable', groupType: 'streams' }]);
    expect(c.listGroups([], ['consumer'])).toEqual([]);
    expect(c.describeGroup('app').groupState).toBe('Dead');
    expect(c.streams.describe('nope').errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    const commit = (memberId: string, generationId: number, v9 = true) =>
      c.commitOffsets({
        groupId: 'app',
        generationId,
        memberId,
        groupInstanceId: null,
        retentionTimeMs: -1n,
        groupIdNotFoundKnown: v9,
        topics: [{ name: 'in', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
      })[0]!.partitions[0]!.errorCode;
    expect(commit('A', 2)).toBe(ErrorCode.NONE);
    expect(commit('A', 3)).toBe(ErrorCode.STALE_MEMBER_EPOCH);
    // Epoch 1 is older than the epoch task 0_0 was assigned at (2).
    expect(commit('A', 1)).toBe(ErrorCode.STALE_MEMBER_EPOCH);
    expect(commit('X', 2)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(commit('A', 2, false)).toBe(ErrorCode.UNSUPPORTED_VERSION);
    expect(c.fetchOffsets('app', [{ name: 'in', partitionIndexes: [0] }], false, { memberId: 'A', memberEpoch: 1 }).errorCode).toBe(ErrorCode.STALE_MEMBER_EPOCH);
    expect(c.fetchOffsets('app', [{ name: 'in', partitionIndexes: [0] }], false, { memberId: 'A', memberEpoch: 2 }).topics[0]!.partitions[0]!.committedOffset).toBe(5n);
    expect(c.deleteGroup('app')).toBe(ErrorCode.NON_EMPTY_GROUP);
    expect(c.deleteOffsets('app', [{ name: 'in', partitions: [0] }]).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC);
    c.streams.heartbeat(beat('A', -1, null));
    expect(c.deleteGroup('app')).toBe(ErrorCode.NONE);
    expect(c.streams.describe('app').errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    // Deleted for good: a restart does not bring it or its offsets back.
    const again = h.restart();
    expect([again.coordinator.streams.describe('app').errorCode, again.coordinator.listGroups([], [])]).toEqual([ErrorCode.GROUP_ID_NOT_FOUND, []]);
  });
});

describe('streams group records', () => {
  it('round-trip through Kafka\'s layouts, tombstones included', () => {
    const records: CoordinatorRecord[] = [
      { kind: 'streams', type: 17, groupId: 'g', value: { epoch: 3, metadataHash: -5n, validatedTopologyEpoch: 0, lastAssignmentConfigs: [{ key: 'num.standby.replicas', value: '0' }], storedDescriptionTopologyEpoch: -1, failedDescriptionTopologyEpoch: -1 } },
      { kind: 'streams', type: 19, groupId: 'g', memberId: 'm', value: { instanceId: null, rackId: 'r', clientId: 'c', clientHost: '/h', rebalanceTimeoutMs: 300000, topologyEpoch: 0, processId: 'p', userEndpoint: { host: 'h', port: 1 }, clientTags: [{ key: 'k', value: 'v' }] } },
      { kind: 'streams', type: 20, groupId: 'g', value: { assignmentEpoch: 3, assignmentTimestamp: 17n } },
      { kind: 'streams', type: 21, groupId: 'g', memberId: 'm', value: { activeTasks: [{ subtopologyId: '0', partitions: [0, 1] }], standbyTasks: [], warmupTasks: [] } },
      {
        kind: 'streams',
        type: 22,
        groupId: 'g',
        memberId: 'm',
        value: {
          memberEpoch: 3,
          previousMemberEpoch: 2,
          state: 1,
          activeTasks: [{ subtopologyId: '0', partitions: [0], assignmentEpochs: [3] }],
          standbyTasks: [],
          warmupTasks: [],
          activeTasksPendingRevocation: [{ subtopologyId: '0', partitions: [1], assignmentEpochs: [2] }],
          standbyTasksPendingRevocation: [],
          warmupTasksPendingRevocation: [],
        },
      },
      { kind: 'streams', type: 23, groupId: 'g', value: topology(4) },
      { kind: 'streams', type: 22, groupId: 'g', memberId: 'm', value: null },
    ];
    for (const r of records) {
      const { key, value } = serializeRecord(r);
      expect(key.readInt16BE(0)).toBe(r.kind === 'streams' ? r.type : -1);
      expect(deserializeRecord(key, value)).toEqual(r);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { encode } from '../../wire/codec.js';
import { ConsumerProtocolSubscription } from '../../wire/messages/consumer-protocol-subscription.js';
import { buildImage, type MetadataImage } from '../metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC } from '../coordinator/partition-for.js';
import { readAssignment, writeAssignment } from './consumer-protocol.js';
import { recordsIn, type CoordinatorRecord } from './group-records.js';
import type { GroupCoordinator, GroupCoordinatorConfig, JoinGroupResult } from './group-coordinator.js';
import { consumerJoin as cgJoin, consumerBeat as cgBeat, assignedPartitions as parts, FakeMetadataStore, MemoryOffsetsStore, harness, joinParams, type Harness } from './group-test-support.js';

const T = 'AAAAAAAAAAAAAAAAAAAAAg';
const ALL = [0, 1, 2, 3, 4, 5];

/** __consumer_offsets (4 partitions) and topic t (6 partitions), all led here. */
class TopicMetadata extends FakeMetadataStore {
  constructor() {
    super(TopicMetadata.imageOf());
  }
  static imageOf(): MetadataImage {
    const parts = (n: number) => Array.from({ length: n }, (_, partition) => ({ partition, leader: 1, leaderEpoch: 0, replicas: [1], isr: [1], offlineReplicas: [] }));
    return buildImage('cluster', 1, [{ nodeId: 1, rack: null, endpoints: [] }], [
      { name: GROUP_METADATA_TOPIC, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: true, configs: {}, partitions: parts(4) },
      { name: 't', topicId: T, internal: false, configs: {}, partitions: parts(6) },
    ]);
  }
}

function setup(config: Partial<GroupCoordinatorConfig> = {}): Harness {
  return harness({ consumerAssignmentIntervalMs: 0, ...config }, { metadata: new TopicMetadata() as never, store: new MemoryOffsetsStore() });
}

/** A ConsumerProtocol subscription (version 1) to t, listing the partitions of t the member owns. */
const sub = (owned: readonly number[] = []): Buffer =>
  Buffer.concat([Buffer.from([0, 1]), encode(ConsumerProtocolSubscription, 1, { topics: ['t'], userData: null, ownedPartitions: owned.length > 0 ? [{ topic: 't', partitions: [...owned] }] : [], generationId: -1, rackId: null })]);

const protocols = (owned: readonly number[] = []) => [{ name: 'cooperative-sticky', metadata: sub(owned) }];

/** The partitions of t in a SyncGroup answer's ConsumerProtocol assignment. */
function partitionsOf(assignment: Buffer): number[] {
  const a = readAssignment(assignment);
  expect(a).not.toBeNull();
  return (a!.assignedPartitions.find((x) => x.topic === 't')?.partitions ?? []).slice().sort((x, y) => x - y);
}


/**
 * Every partition of t is held (owned, or still to revoke) by one member at
 * most; the holders by partition.
 */
function checkSingleOwners(c: GroupCoordinator): Map<number, string> {
  const holders = new Map<number, string>();
  for (const m of c.consumerGroup('g')!.members.values()) {
    for (const src of [m.assigned, m.pendingRevocation]) {
      for (const p of src.get(T)?.keys() ?? []) {
        expect(holders.get(p), `t-${p} held by ${holders.get(p)} and ${m.memberId}`).toBeUndefined();
        holders.set(p, m.memberId);
      }
    }
  }
  return holders;
}

/** A classic group of two members (protocol type consumer, cooperative-sticky) through its first rebalance: A has t-0..2, B t-3..5. */
async function classicGroupOfTwo(h: Harness, sessionTimeoutMs = 10_000): Promise<{ a: string; b: string; generation: number }> {
  const c = h.coordinator;
  const ja = c.joinGroup(joinParams({ requireKnownMemberId: false, protocols: protocols(), sessionTimeoutMs, clientId: 'A' }));
  const jb = c.joinGroup(joinParams({ requireKnownMemberId: false, protocols: protocols(), sessionTimeoutMs, clientId: 'B' }));
  h.timer.advance(6000);
  const [ra, rb] = await Promise.all([ja, jb]);
  expect([ra.errorCode, rb.errorCode]).toEqual([0, 0]);
  const a = ra.memberId;
  const b = rb.memberId;
  const leader = ra.leader;
  const sync = (memberId: string) =>
    c.syncGroup({
      groupId: 'g',
      generationId: ra.generationId,
      memberId,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocolName: 'cooperative-sticky',
      assignments:
        memberId === leader
          ? [
              { memberId: a, assignment: writeAssignment(1, new Map([['t', [0, 1, 2]]])) },
              { memberId: b, assignment: writeAssignment(1, new Map([['t', [3, 4, 5]]])) },
            ]
          : [],
    });
  const follower = leader === a ? b : a;
  const sf = sync(follower);
  const sl = sync(leader);
  await Promise.all([sf, sl]);
  expect(c.groupState('g')).toBe('Stable');
  return { a, b, generation: ra.generationId };
}

/** A classic member's JoinGroup into a consumer group, which answers at once. */
async function classicJoin(c: GroupCoordinator, memberId: string, owned: readonly number[], over: Parameters<typeof joinParams>[0] = {}): Promise<JoinGroupResult> {
  return c.joinGroup(joinParams({ memberId, requireKnownMemberId: false, protocols: protocols(owned), ...over }));
}

async function classicSync(c: GroupCoordinator, memberId: string, generationId: number, protocolName: string | null = 'cooperative-sticky') {
  return c.syncGroup({ groupId: 'g', generationId, memberId, groupInstanceId: null, protocolType: protocolName === null ? null : 'consumer', protocolName, assignments: [] });
}

/**
 * What a cooperative classic consumer does when told to rebalance: join
 * listing what it owns, sync, and keep what the assignment gives it; again
 * while the coordinator still asks. Returns the partitions it ends with
 * and its generation.
 */
async function classicRebalance(c: GroupCoordinator, memberId: string, owned: number[]): Promise<{ owned: number[]; generation: number }> {
  for (let round = 0; round < 5; round++) {
    const j = await classicJoin(c, memberId, owned);
    expect(j.errorCode).toBe(0);
    const s = await classicSync(c, memberId, j.generationId);
    expect(s.errorCode).toBe(0);
    owned = partitionsOf(s.assignment);
    checkSingleOwners(c);
    if (c.heartbeat({ groupId: 'g', generationId: j.generationId, memberId, groupInstanceId: null }) === ErrorCode.NONE) return { owned, generation: j.generationId };
  }
  throw new Error(`member ${memberId} kept being asked to rebalance`);
}

/** The coordinator records of the last batch written to g's partition. */
function lastBatch(h: Harness): CoordinatorRecord[] {
  const all: CoordinatorRecord[][] = [];
  for (const batches of h.store.partitions.values()) {
    for (const batch of batches) {
      const records: CoordinatorRecord[] = [];
      for (const { record } of recordsIn(batch, () => {})) if (record.kind !== 'skipped') records.push(record);
      all.push(records);
    }
  }
  return all.at(-1) ?? [];
}

const shape = (r: CoordinatorRecord): string => {
  if (r.kind === 'group') return `group${r.value === null ? '-tombstone' : ''}`;
  if (r.kind === 'offset') return 'offset';
  return `${r.type}${r.value === null ? '-tombstone' : ''}`;
};

describe('online upgrade of a classic group (KIP-848 migration)', () => {
  it('turns a live classic group into a consumer group; classic members keep their partitions until they revoke them', async () => {
    const h = setup();
    const c = h.coordinator;
    const { a, b, generation } = await classicGroupOfTwo(h);

    const r = c.consumerGroupHeartbeat(cgJoin('C'));
    expect(r.errorCode).toBe(0);
    expect(c.group('g')).toBeUndefined();
    const g = c.consumerGroup('g')!;
    // The group epoch goes on from the classic generation; C's subscription raises it once.
    expect([g.groupEpoch, r.memberEpoch, parts(r)]).toEqual([generation + 1, generation + 1, []]);
    expect(g.members.get(a)).toMatchObject({ memberEpoch: generation, classic: { sessionTimeoutMs: 10_000 } });
    expect(g.members.get(a)!.classic!.protocols.map((p) => p.name)).toEqual(['cooperative-sticky']);
    expect([...g.members.get(a)!.assigned.get(T)!.keys()]).toEqual([0, 1, 2]);
    expect([...g.members.get(b)!.assigned.get(T)!.keys()]).toEqual([3, 4, 5]);
    checkSingleOwners(c);
    // Kafka's conversion records, then those of C's join, in one batch.
    expect(lastBatch(h).map(shape).slice(0, 10)).toEqual(['group-tombstone', '5', '5', '3', '7', '7', '6', '8', '8', '5']);

    // Told to rebalance, each classic member gives up what the new target takes from it, then C gets it.
    expect(c.heartbeat({ groupId: 'g', generationId: generation, memberId: a, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const ra = await classicRebalance(c, a, [0, 1, 2]);
    const rb = await classicRebalance(c, b, [3, 4, 5]);
    expect(ra.owned.length + rb.owned.length).toBe(4);
    const rc = c.consumerGroupHeartbeat(cgBeat('C', generation + 1, []));
    expect(rc.memberEpoch).toBe(generation + 1);
    const cOwned = parts(rc)!;
    expect([...ra.owned, ...rb.owned, ...cOwned].sort()).toEqual(ALL);
    expect([ra.owned.length, rb.owned.length, cOwned.length]).toEqual([2, 2, 2]);
    expect(c.consumerGroupHeartbeat(cgBeat('C', generation + 1, cOwned)).errorCode).toBe(0);
    expect(c.consumerGroup('g')!.state).toBe('Stable');

    // Classic commits carry the member epoch as their generation.
    const commit = (generationId: number) =>
      c.commitOffsets({ groupId: 'g', generationId, memberId: a, groupInstanceId: null, retentionTimeMs: -1n, groupIdNotFoundKnown: false, topics: [{ name: 't', partitions: [{ partitionIndex: ra.owned[0]!, committedOffset: 5n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }] })[0]!.partitions[0]!.errorCode;
    expect(commit(ra.generation)).toBe(ErrorCode.NONE);
    expect(commit(ra.generation + 1)).toBe(ErrorCode.ILLEGAL_GENERATION);

    // Described as Kafka describes a mixed group.
    const d = c.describeConsumerGroup('g');
    expect(d.members.map((m) => [m.memberId, m.memberType]).sort()).toEqual([[a, 0], [b, 0], ['C', 1]].sort());
    expect(c.listGroups([], [])).toEqual([{ groupId: 'g', protocolType: 'consumer', groupState: 'Stable', groupType: 'consumer' }]);
    expect(c.describeGroup('g')).toMatchObject({ consumerGroup: true, groupState: 'Dead' });
  });

  it('answers a classic join parked in a rebalance REBALANCE_IN_PROGRESS when the group is upgraded', async () => {
    const h = setup();
    const c = h.coordinator;
    const { a, generation } = await classicGroupOfTwo(h);
    // A rejoins: the group rebalances and A's join waits for B.
    const parked = classicJoin(c, a, [0, 1, 2]);
    expect(c.groupState('g')).toBe('PreparingRebalance');
    expect(c.consumerGroupHeartbeat(cgJoin('C')).errorCode).toBe(0);
    expect((await parked).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    // Its next join is served by the consumer group.
    const j = await classicJoin(c, a, [0, 1, 2]);
    expect(j.errorCode).toBe(0);
    expect(j.generationId).toBe(generation);
    checkSingleOwners(c);
  });

  it('refuses to upgrade what Kafka refuses, with GROUP_ID_NOT_FOUND', async () => {
    // A group of another protocol type.
    let h = setup();
    let c = h.coordinator;
    const j = c.joinGroup(joinParams({ requireKnownMemberId: false, protocolType: 'connect', protocols: [{ name: 'default', metadata: Buffer.from('x') }] }));
    h.timer.advance(3000);
    expect((await j).errorCode).toBe(0);
    expect(c.consumerGroupHeartbeat(cgJoin('C')).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(c.groupState('g')).toBe('CompletingRebalance');

    // More members than group.consumer.max.size.
    h = setup({ consumerMaxSize: 1 });
    c = h.coordinator;
    await classicGroupOfTwo(h);
    expect(c.consumerGroupHeartbeat(cgJoin('C')).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(c.groupState('g')).toBe('Stable');

    // An assignment with user data from a client-side assignor.
    h = setup();
    c = h.coordinator;
    const ja = c.joinGroup(joinParams({ requireKnownMemberId: false, protocols: protocols() }));
    h.timer.advance(3000);
    const ra = await ja;
    const withUserData = Buffer.concat([writeAssignment(1, new Map([['t', ALL]])).subarray(0, -4), Buffer.from([0, 0, 0, 1, 9])]);
    expect(partitionsOf(withUserData)).toEqual(ALL);
    const s = await c.syncGroup({ groupId: 'g', generationId: ra.generationId, memberId: ra.memberId, groupInstanceId: null, protocolType: 'consumer', protocolName: 'cooperative-sticky', assignments: [{ memberId: ra.memberId, assignment: withUserData }] });
    expect(s.errorCode).toBe(0);
    expect(c.consumerGroupHeartbeat(cgJoin('C')).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(c.consumerGroup('g')).toBeUndefined();
    // A member epoch other than 0 never upgrades.
    expect(c.consumerGroupHeartbeat(cgBeat('C', 1)).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});

describe('classic members inside a consumer group', () => {
  it('serves JoinGroup, SyncGroup, Heartbeat and LeaveGroup from the server-side assignment', async () => {
    const h = setup();
    const c = h.coordinator;
    const c0 = c.consumerGroupHeartbeat(cgJoin('C'));
    expect(parts(c0)).toEqual(ALL);
    const e = c0.memberEpoch;
    // v4+: a first join gets a member id to come back with.
    const first = await c.joinGroup(joinParams({ protocols: protocols() }));
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const d = first.memberId;
    expect(d).not.toBe('');
    const j = await classicJoin(c, d, []);
    expect(j).toMatchObject({ errorCode: 0, generationId: e + 1, protocolType: 'consumer', protocolName: 'cooperative-sticky', leader: '', members: [] });
    // D's share is still C's: nothing yet, and its heartbeat is fine until C released it.
    expect(partitionsOf((await classicSync(c, d, e + 1)).assignment)).toEqual([]);
    expect(c.heartbeat({ groupId: 'g', generationId: e + 1, memberId: d, groupInstanceId: null })).toBe(ErrorCode.NONE);
    const rc = c.consumerGroupHeartbeat(cgBeat('C', e, ALL));
    expect(rc.memberEpoch).toBe(e);
    const kept = parts(rc)!;
    expect(kept).toHaveLength(3);
    expect(c.consumerGroupHeartbeat(cgBeat('C', e, kept)).memberEpoch).toBe(e + 1);
    // Released: D is told to rejoin, and gets the rest.
    expect(c.heartbeat({ groupId: 'g', generationId: e + 1, memberId: d, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const j2 = await classicJoin(c, d, []);
    const mine = partitionsOf((await classicSync(c, d, j2.generationId)).assignment);
    expect([...kept, ...mine].sort()).toEqual(ALL);
    checkSingleOwners(c);
    expect(c.heartbeat({ groupId: 'g', generationId: j2.generationId, memberId: d, groupInstanceId: null })).toBe(ErrorCode.NONE);

    // Kafka's errors.
    expect(c.heartbeat({ groupId: 'g', generationId: 99, memberId: d, groupInstanceId: null })).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(c.heartbeat({ groupId: 'g', generationId: e + 1, memberId: 'C', groupInstanceId: null })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await classicSync(c, d, 99)).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect((await classicSync(c, d, j2.generationId, 'range')).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await c.joinGroup(joinParams({ memberId: 'E', requireKnownMemberId: false, protocols: [{ name: 'range', metadata: sub() }] }))).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await c.joinGroup(joinParams({ memberId: 'E', requireKnownMemberId: false, protocols: [{ name: 'cooperative-sticky', metadata: Buffer.from([0]) }] }))).errorCode).toBe(
      ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    );

    // LeaveGroup: D goes, and C takes everything back.
    const left = c.leaveGroup('g', [{ memberId: d, groupInstanceId: null }, { memberId: 'nobody', groupInstanceId: null }]);
    expect(left.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]);
    expect([...c.consumerGroup('g')!.members.keys()]).toEqual(['C']);
    expect(parts(c.consumerGroupHeartbeat(cgBeat('C', e + 1, kept)))).toEqual(ALL);
  });

  it('fences a classic member by its own session timeout, and one that does not sync or rejoin within its rebalance timeout', async () => {
    const h = setup({ consumerSessionTimeoutMs: 45_000 });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(cgJoin('C'));
    const j = await classicJoin(c, 'D', [], { sessionTimeoutMs: 6000, rebalanceTimeoutMs: 20_000 });
    await classicSync(c, 'D', j.generationId);
    h.timer.advance(5000);
    expect(c.heartbeat({ groupId: 'g', generationId: j.generationId, memberId: 'D', groupInstanceId: null })).toBe(ErrorCode.NONE);
    h.timer.advance(5000);
    c.consumerGroupHeartbeat(cgBeat('C', j.generationId));
    expect(c.consumerGroup('g')!.members.has('D')).toBe(true);
    h.timer.advance(1001);
    expect(c.consumerGroup('g')!.members.has('D')).toBe(false);

    // Joined, but never synced within the rebalance timeout.
    const j2 = await classicJoin(c, 'E', [], { sessionTimeoutMs: 30_000, rebalanceTimeoutMs: 5000 });
    expect(j2.errorCode).toBe(0);
    h.timer.advance(5001);
    expect(c.consumerGroup('g')!.members.has('E')).toBe(false);
  });

  it('lets a restarted static classic member take its instance\'s place, fencing the old member id', async () => {
    const h = setup();
    const c = h.coordinator;
    c.consumerGroupHeartbeat(cgJoin('C'));
    const s1 = await c.joinGroup(joinParams({ groupInstanceId: 'i1', protocols: protocols() }));
    expect(s1.errorCode).toBe(0);
    const old = s1.memberId;
    const s2 = await c.joinGroup(joinParams({ groupInstanceId: 'i1', protocols: protocols() }));
    expect(s2.errorCode).toBe(0);
    expect(s2.memberId).not.toBe(old);
    const g = c.consumerGroup('g')!;
    expect([...g.members.keys()].sort()).toEqual(['C', s2.memberId].sort());
    expect(c.heartbeat({ groupId: 'g', generationId: s2.generationId, memberId: old, groupInstanceId: 'i1' })).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect((await classicJoin(c, old, [], { groupInstanceId: 'i1' })).errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    // Removed by its instance id alone.
    expect(c.leaveGroup('g', [{ memberId: '', groupInstanceId: 'i1' }]).members[0]!.errorCode).toBe(ErrorCode.NONE);
    expect([...g.members.keys()]).toEqual(['C']);
  });
});

describe('online downgrade of a consumer group', () => {
  async function mixedGroup(h: Harness): Promise<{ d: string; generation: number }> {
    const c = h.coordinator;
    const e = c.consumerGroupHeartbeat(cgJoin('C')).memberEpoch;
    const j = await classicJoin(c, 'D', []);
    await classicSync(c, 'D', j.generationId);
    const kept = parts(c.consumerGroupHeartbeat(cgBeat('C', e, ALL)))!;
    c.consumerGroupHeartbeat(cgBeat('C', e, kept));
    const r = await classicRebalance(c, 'D', []);
    expect(r.owned).toHaveLength(3);
    return { d: 'D', generation: r.generation };
  }

  it('becomes a classic group when its last consumer-protocol member leaves, and rebalances its classic members', async () => {
    const h = setup();
    const c = h.coordinator;
    const { d } = await mixedGroup(h);
    const epochBefore = c.consumerGroup('g')!.groupEpoch;
    const gone = c.consumerGroupHeartbeat({ ...cgBeat('C', -1) });
    expect([gone.errorCode, gone.memberEpoch]).toEqual([0, -1]);
    expect(c.consumerGroup('g')).toBeUndefined();
    const g = c.group('g')!;
    expect([g.state, g.generationId, g.protocolType, g.protocolName]).toEqual(['PreparingRebalance', epochBefore, 'consumer', 'cooperative-sticky']);
    // D's target is what the classic group stores as its assignment.
    expect(partitionsOf(g.members.get(d)!.assignment)).toHaveLength(3);
    expect(lastBatch(h).map(shape)).toEqual(['8-tombstone', '8-tombstone', '7-tombstone', '7-tombstone', '6-tombstone', '5-tombstone', '5-tombstone', '4-tombstone', '3-tombstone', 'group']);
    // D hears it must rejoin, rejoins alone, leads and assigns itself everything.
    expect(c.heartbeat({ groupId: 'g', generationId: epochBefore, memberId: d, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const j = await classicJoin(c, d, [0, 1, 2]);
    expect([j.errorCode, j.generationId, j.leader]).toEqual([0, epochBefore + 1, d]);
    const s = await c.syncGroup({ groupId: 'g', generationId: j.generationId, memberId: d, groupInstanceId: null, protocolType: 'consumer', protocolName: 'cooperative-sticky', assignments: [{ memberId: d, assignment: writeAssignment(1, new Map([['t', ALL]])) }] });
    expect(partitionsOf(s.assignment)).toEqual(ALL);
    expect(c.groupState('g')).toBe('Stable');
  });

  it('downgrades when the last consumer-protocol member is fenced by its session timeout', async () => {
    const h = setup({ consumerSessionTimeoutMs: 45_000 });
    const c = h.coordinator;
    const { d, generation } = await mixedGroup(h);
    for (let i = 0; i < 4; i++) {
      h.timer.advance(9000);
      expect(c.heartbeat({ groupId: 'g', generationId: generation, memberId: d, groupInstanceId: null })).toBe(ErrorCode.NONE);
    }
    expect(c.consumerGroup('g')!.members.size).toBe(2);
    h.timer.advance(9001);
    expect(c.consumerGroup('g')).toBeUndefined();
    expect(c.groupState('g')).toBe('PreparingRebalance');
  });
});

describe('group.consumer.migration.policy', () => {
  async function tryUpgrade(policy: GroupCoordinatorConfig['consumerMigrationPolicy']): Promise<number> {
    const h = setup({ consumerMigrationPolicy: policy });
    await classicGroupOfTwo(h);
    return h.coordinator.consumerGroupHeartbeat(cgJoin('C')).errorCode;
  }

  async function tryClassicJoinAndDowngrade(policy: GroupCoordinatorConfig['consumerMigrationPolicy']): Promise<{ join: number; after: string }> {
    const h = setup({ consumerMigrationPolicy: policy });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(cgJoin('C'));
    const j = await classicJoin(c, 'D', []);
    if (j.errorCode !== 0) return { join: j.errorCode, after: 'consumer' };
    c.consumerGroupHeartbeat(cgBeat('C', -1));
    return { join: 0, after: c.consumerGroup('g') ? 'consumer' : (c.groupState('g') ?? 'none') };
  }

  it('allows each conversion only where the policy says, answering as Kafka does otherwise', async () => {
    expect(await tryUpgrade('disabled')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(await tryUpgrade('downgrade')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(await tryUpgrade('upgrade')).toBe(ErrorCode.NONE);
    expect(await tryUpgrade('bidirectional')).toBe(ErrorCode.NONE);
    expect(await tryClassicJoinAndDowngrade('disabled')).toEqual({ join: ErrorCode.INCONSISTENT_GROUP_PROTOCOL, after: 'consumer' });
    // Classic members may be in a consumer group unless migration is disabled; only downgrade and bidirectional convert back.
    expect(await tryClassicJoinAndDowngrade('upgrade')).toEqual({ join: 0, after: 'consumer' });
    expect(await tryClassicJoinAndDowngrade('downgrade')).toEqual({ join: 0, after: 'PreparingRebalance' });
    expect(await tryClassicJoinAndDowngrade('bidirectional')).toEqual({ join: 0, after: 'PreparingRebalance' });
  });

  it('still converts an empty group whatever the policy', async () => {
    const h = setup({ consumerMigrationPolicy: 'disabled' });
    const c = h.coordinator;
    c.consumerGroupHeartbeat(cgJoin('C'));
    c.consumerGroupHeartbeat(cgBeat('C', -1));
    const j = c.joinGroup(joinParams({ requireKnownMemberId: false, protocols: protocols() }));
    h.timer.advance(3000);
    expect((await j).errorCode).toBe(0);
    expect(c.consumerGroup('g')).toBeUndefined();
  });
});

describe('a mixed group across a coordinator restart', () => {
  it('is rebuilt from its records: classic members keep their metadata, session timeouts and epochs', async () => {
    const h = setup({ consumerSessionTimeoutMs: 45_000 });
    const c = h.coordinator;
    const { a, b, generation } = await classicGroupOfTwo(h, 8000);
    c.consumerGroupHeartbeat(cgJoin('C'));
    const before = c.describeConsumerGroup('g');
    const again = h.restart();
    const c2 = again.coordinator;
    expect(c2.describeConsumerGroup('g')).toEqual(before);
    expect(c2.group('g')).toBeUndefined();
    const g = c2.consumerGroup('g')!;
    expect(g.members.get(a)!.classic).toMatchObject({ sessionTimeoutMs: 8000 });
    expect(g.members.get(a)!.classic!.protocols[0]!.metadata).toEqual(sub());
    // The classic members go on where they were: told to rebalance, then served by the consumer group.
    expect(c2.heartbeat({ groupId: 'g', generationId: generation, memberId: a, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const ra = await classicRebalance(c2, a, [0, 1, 2]);
    expect(ra.owned).toHaveLength(2);
    // B says nothing: its classic session (8 s), not the consumer one, ends it; A heartbeats and stays.
    again.timer.advance(5000);
    expect(c2.heartbeat({ groupId: 'g', generationId: ra.generation, memberId: a, groupInstanceId: null })).toBe(ErrorCode.NONE);
    expect(c2.consumerGroupHeartbeat(cgBeat('C', generation + 1)).errorCode).toBe(ErrorCode.NONE);
    again.timer.advance(3001);
    expect(c2.consumerGroup('g')!.members.has(b)).toBe(false);
    expect(c2.consumerGroup('g')!.members.has(a)).toBe(true);
    expect(c2.consumerGroup('g')!.members.has('C')).toBe(true);
  });

  it('comes back as a classic group after a downgrade', async () => {
    const h = setup();
    const c = h.coordinator;
    c.consumerGroupHeartbeat(cgJoin('C'));
    const j = await classicJoin(c, 'D', []);
    await classicSync(c, 'D', j.generationId);
    c.consumerGroupHeartbeat(cgBeat('C', -1));
    const epoch = c.group('g')!.generationId;
    const c2 = h.restart().coordinator;
    expect(c2.consumerGroup('g')).toBeUndefined();
    expect([c2.groupState('g'), c2.group('g')!.generationId, [...c2.group('g')!.members.keys()]]).toEqual(['Stable', epoch, ['D']]);
    expect(c2.heartbeat({ groupId: 'g', generationId: epoch, memberId: 'D', groupInstanceId: null })).toBe(ErrorCode.NONE);
  });
});

describe('online downgrade when a static member is replaced by a classic member', () => {
  /**
   * A consumer group of S, a static member (instance i1) of the consumer
   * protocol, and D, a classic member, each with half of t, both at the
   * group epoch; `others` more consumer-protocol members join first.
   */
  async function staticMixedGroup(h: Harness, others: readonly string[] = []): Promise<{ epoch: number; sOwned: number[]; dOwned: number[] }> {
    const c = h.coordinator;
    const beatS = (epoch: number, owned: number[]) => c.consumerGroupHeartbeat({ ...cgBeat('S', epoch, owned), instanceId: 'i1' });
    expect(c.consumerGroupHeartbeat(cgJoin('S', { instanceId: 'i1' })).errorCode).toBe(0);
    for (const o of others) c.consumerGroupHeartbeat(cgJoin(o));
    const j = await classicJoin(c, 'D', []);
    expect(j.errorCode).toBe(0);
    // S gives up what the others get, and is then at the group epoch.
    for (let round = 0; round < 4; round++) {
      const g = c.consumerGroup('g')!;
      const s = g.members.get('S')!;
      const r = beatS(s.memberEpoch, [...(s.assigned.get(T)?.keys() ?? [])]);
      expect(r.errorCode).toBe(0);
      for (const o of others) {
        const m = c.consumerGroup('g')!.members.get(o)!;
        c.consumerGroupHeartbeat(cgBeat(o, m.memberEpoch, [...(m.assigned.get(T)?.keys() ?? [])]));
      }
    }
    const r = await classicRebalance(c, 'D', []);
    const g = c.consumerGroup('g')!;
    expect(g.members.get('S')!.memberEpoch).toBe(g.groupEpoch);
    expect(r.generation).toBe(g.groupEpoch);
    expect(g.assignmentEpoch).toBe(g.groupEpoch);
    checkSingleOwners(c);
    return { epoch: g.groupEpoch, sOwned: [...g.members.get('S')!.assigned.get(T)!.keys()].sort(), dOwned: r.owned };
  }

  const restartedAsClassic = (c: GroupCoordinator, over: Parameters<typeof joinParams>[0] = {}) => c.joinGroup(joinParams({ groupInstanceId: 'i1', protocols: protocols(), clientId: 'S2', ...over }));

  for (const policy of ['bidirectional', 'downgrade'] as const) {
    it(`becomes a classic group at the join when the replaced member was its last of the consumer protocol (${policy})`, async () => {
      const h = setup({ consumerMigrationPolicy: policy });
      const c = h.coordinator;
      const { epoch, sOwned, dOwned } = await staticMixedGroup(h);
      expect([sOwned.length, dOwned.length]).toEqual([3, 3]);

      const j = await restartedAsClassic(c);
      expect(j).toMatchObject({ errorCode: 0, generationId: epoch, protocolType: 'consumer', protocolName: 'cooperative-sticky', leader: '', members: [] });
      const s2 = j.memberId;
      expect(s2).not.toBe('');
      expect(s2).not.toBe('S');
      expect(c.consumerGroup('g')).toBeUndefined();
      const g = c.group('g')!;
      expect([g.state, g.generationId, g.protocolType, g.protocolName]).toEqual(['Stable', epoch, 'consumer', 'cooperative-sticky']);
      expect([...g.members.keys()].sort()).toEqual(['D', s2].sort());
      expect(g.members.get(s2)).toMatchObject({ groupInstanceId: 'i1', clientId: 'S2', sessionTimeoutMs: 10_000 });
      // Each keeps its target: the newcomer S's.
      expect(partitionsOf(g.members.get(s2)!.assignment)).toEqual(sOwned);
      expect(partitionsOf(g.members.get('D')!.assignment)).toEqual(dOwned);
      // The replacement's records, then Kafka's downgrade records naming the new member instead of S, in one batch.
      expect(lastBatch(h).map(shape)).toEqual([
        '8-tombstone', '7-tombstone', '5-tombstone', '5', '7', '8',
        '8-tombstone', '8-tombstone', '7-tombstone', '7-tombstone', '6-tombstone', '5-tombstone', '5-tombstone', '4-tombstone', '3-tombstone', 'group',
      ]);
      const tombstoned = lastBatch(h).filter((r) => r.kind === 'consumer' && r.value === null && 'memberId' in r).map((r) => (r as { memberId: string }).memberId);
      expect(new Set(tombstoned.slice(3))).toEqual(new Set(['D', s2]));

      // The newcomer syncs in the classic group and gets S's partitions; D goes on undisturbed.
      const s = await c.syncGroup({ groupId: 'g', generationId: j.generationId, memberId: s2, groupInstanceId: 'i1', protocolType: 'consumer', protocolName: 'cooperative-sticky', assignments: [] });
      expect(s.errorCode).toBe(0);
      expect(partitionsOf(s.assignment)).toEqual(sOwned);
      expect(c.heartbeat({ groupId: 'g', generationId: epoch, memberId: 'D', groupInstanceId: null })).toBe(ErrorCode.NONE);
      expect(c.heartbeat({ groupId: 'g', generationId: epoch, memberId: s2, groupInstanceId: 'i1' })).toBe(ErrorCode.NONE);
      // The old member id is fenced, as in any classic group.
      expect(c.heartbeat({ groupId: 'g', generationId: epoch, memberId: 'S', groupInstanceId: 'i1' })).toBe(ErrorCode.FENCED_INSTANCE_ID);
      // Sessions are the classic group's now.
      h.timer.advance(10_001);
      expect(c.group('g')!.members.size).toBe(0);
    });
  }

  it('starts a rebalance of the new classic group when the join leaves the assignment stale', async () => {
    const h = setup();
    const c = h.coordinator;
    const { epoch } = await staticMixedGroup(h);
    // The newcomer subscribes to more than S did: the group epoch would rise past the assignment.
    const more = [{ name: 'cooperative-sticky', metadata: Buffer.concat([Buffer.from([0, 1]), encode(ConsumerProtocolSubscription, 1, { topics: ['t', 'u'], userData: null, ownedPartitions: [], generationId: -1, rackId: null })]) }];
    const j = await restartedAsClassic(c, { protocols: more });
    expect([j.errorCode, j.generationId, j.leader]).toEqual([0, 0, '']);
    expect(c.consumerGroup('g')).toBeUndefined();
    const g = c.group('g')!;
    expect([g.state, g.generationId]).toEqual(['PreparingRebalance', epoch]);
    expect(lastBatch(h).map(shape).slice(0, 7)).toEqual(['8-tombstone', '7-tombstone', '5-tombstone', '5', '3', '7', '8']);
    // Its sync is refused; both members rejoin and the classic group goes on at the next generation.
    const s = await c.syncGroup({ groupId: 'g', generationId: j.generationId, memberId: j.memberId, groupInstanceId: 'i1', protocolType: 'consumer', protocolName: 'cooperative-sticky', assignments: [] });
    expect(s.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(c.heartbeat({ groupId: 'g', generationId: epoch, memberId: 'D', groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const rejoinS = c.joinGroup(joinParams({ memberId: j.memberId, groupInstanceId: 'i1', protocols: more }));
    const rejoinD = classicJoin(c, 'D', []);
    const [rs, rd] = await Promise.all([rejoinS, rejoinD]);
    expect([rs.errorCode, rd.errorCode, rs.generationId, rd.generationId]).toEqual([0, 0, epoch + 1, epoch + 1]);
    expect(c.groupState('g')).toBe('CompletingRebalance');
  });

  for (const policy of ['upgrade', 'disabled'] as const) {
    it(`stays a consumer group when the policy does not allow downgrades (${policy})`, async () => {
      const h = setup({ consumerMigrationPolicy: 'upgrade' });
      await staticMixedGroup(h);
      let c = h.coordinator;
      if (policy === 'disabled') {
        // The mixed group was made under upgrade; the broker restarts with migration disabled.
        h.coordinator.shutdown();
        c = harness({ consumerAssignmentIntervalMs: 0, consumerMigrationPolicy: 'disabled' }, { store: h.store, metadata: h.metadata, now: h.timer.now() }).coordinator;
      }
      const j = await restartedAsClassic(c);
      if (policy === 'disabled') {
        expect(j.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
        expect([...c.consumerGroup('g')!.members.keys()].sort()).toEqual(['D', 'S']);
        return;
      }
      expect(j.errorCode).toBe(0);
      expect(c.group('g')).toBeUndefined();
      const g = c.consumerGroup('g')!;
      expect([...g.members.keys()].sort()).toEqual(['D', j.memberId].sort());
      expect(g.members.get(j.memberId)!.classic).not.toBeNull();
    });
  }

  it('stays a consumer group while another member of the consumer protocol remains', async () => {
    const h = setup();
    const c = h.coordinator;
    await staticMixedGroup(h, ['C']);
    const j = await restartedAsClassic(c);
    expect(j.errorCode).toBe(0);
    expect(c.group('g')).toBeUndefined();
    const g = c.consumerGroup('g')!;
    expect([...g.members.keys()].sort()).toEqual(['C', 'D', j.memberId].sort());
    // C leaving now leaves classic members only: that downgrades, as before.
    c.consumerGroupHeartbeat(cgBeat('C', -1));
    expect(c.consumerGroup('g')).toBeUndefined();
    expect([...c.group('g')!.members.keys()].sort()).toEqual(['D', j.memberId].sort());
  });

  it('does not downgrade when the replaced static member was itself classic', async () => {
    const h = setup();
    const c = h.coordinator;
    c.consumerGroupHeartbeat(cgJoin('C'));
    const first = await restartedAsClassic(c);
    expect(first.errorCode).toBe(0);
    c.consumerGroupHeartbeat(cgBeat('C', -1));
    // Downgraded by C's leave; a consumer group again once a consumer-protocol member joins.
    expect(c.group('g')).toBeDefined();
    expect(c.consumerGroupHeartbeat(cgJoin('E')).errorCode).toBe(0);
    const again = await restartedAsClassic(c);
    expect(again.errorCode).toBe(0);
    expect(c.consumerGroup('g')).toBeDefined();
  });

  it('comes back after a restart as the classic group the join made', async () => {
    const h = setup();
    const c = h.coordinator;
    const { epoch, sOwned } = await staticMixedGroup(h);
    const j = await restartedAsClassic(c);
    const s2 = j.memberId;
    const again = h.restart();
    const c2 = again.coordinator;
    expect(c2.consumerGroup('g')).toBeUndefined();
    const g = c2.group('g')!;
    expect([g.state, g.generationId, g.protocolName, [...g.members.keys()].sort()]).toEqual(['Stable', epoch, 'cooperative-sticky', ['D', s2].sort()]);
    expect(g.members.get(s2)!.groupInstanceId).toBe('i1');
    expect(partitionsOf(g.members.get(s2)!.assignment)).toEqual(sOwned);
    const s = await c2.syncGroup({ groupId: 'g', generationId: epoch, memberId: s2, groupInstanceId: 'i1', protocolType: 'consumer', protocolName: 'cooperative-sticky', assignments: [] });
    expect(partitionsOf(s.assignment)).toEqual(sOwned);
    expect(c2.heartbeat({ groupId: 'g', generationId: epoch, memberId: 'D', groupInstanceId: null })).toBe(ErrorCode.NONE);
  });
});

describe('a consumer-protocol member taking over a classic static member', () => {
  it('replaces the classic holder of its instance id at once, as a restarted static member upgrading its client does', async () => {
    const h = setup();
    const c = h.coordinator;
    c.consumerGroupHeartbeat(cgJoin('C'));
    const s1 = await c.joinGroup(joinParams({ groupInstanceId: 'i1', protocols: protocols() }));
    expect(s1.errorCode).toBe(0);
    const old = s1.memberId;
    // The instance restarts with the consumer protocol: no UNRELEASED_INSTANCE_ID, the classic member is replaced.
    const r = c.consumerGroupHeartbeat(cgJoin('S', { instanceId: 'i1' }));
    expect(r.errorCode).toBe(0);
    const g = c.consumerGroup('g')!;
    expect([...g.members.keys()].sort()).toEqual(['C', 'S']);
    expect(g.members.get('S')!.classic).toBeNull();
    expect(c.heartbeat({ groupId: 'g', generationId: s1.generationId, memberId: old, groupInstanceId: 'i1' })).toBe(ErrorCode.FENCED_INSTANCE_ID);
    // The replaced member's session timer is gone with it.
    h.timer.advance(10_001);
    expect([...c.consumerGroup('g')!.members.keys()].sort()).toEqual(['C', 'S']);
    // A consumer-protocol holder still keeps its instance id from another consumer-protocol member.
    expect(c.consumerGroupHeartbeat(cgJoin('S2', { instanceId: 'i1' })).errorCode).toBe(ErrorCode.UNRELEASED_INSTANCE_ID);
  });
});

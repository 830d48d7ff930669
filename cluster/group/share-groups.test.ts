import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { ZERO_UUID } from '../../wire/uuid.js';
import { deserializeRecord, recordsIn, serializeRecord, type CoordinatorRecord } from './group-records.js';
import { MemoryOffsetsStore, consumerJoin, harness, joinParams, silentLog, type Harness } from './group-test-support.js';
import { FakePersister, ShareTopicsMetadata, TOPIC_IDS, flush, shareAssigned, shareBeat, shareJoin } from './share-test-support.js';
import { GroupCoordinator, type GroupCoordinatorConfig } from './group-coordinator.js';
import type { ShareGroupHeartbeatParams } from './share-groups.js';
import { partitionFor } from '../coordinator/partition-for.js';

const T = TOPIC_IDS['t']!;

interface Setup extends Harness {
  readonly persister: FakePersister;
  readonly topics: ShareTopicsMetadata;
}

function setup(config: Partial<GroupCoordinatorConfig> = {}, topics: Record<string, number> = { t: 3 }): Setup {
  const persister = new FakePersister();
  const metadata = new ShareTopicsMetadata(topics);
  const h = harness(config, { metadata: metadata as never, store: new MemoryOffsetsStore(), persister });
  return { ...h, persister, topics: metadata };
}

/** Joins `memberId`, lets t's share state be initialized, and heartbeats again: the member's epoch and partitions. */
async function joinAndInitialize(s: Setup, memberId: string, over: Partial<ShareGroupHeartbeatParams> = {}): Promise<{ epoch: number; assigned: string[] | null }> {
  const first = s.coordinator.shares.heartbeat(shareJoin(memberId, over));
  expect(first.errorCode).toBe(ErrorCode.NONE);
  await flush();
  // The member's next heartbeat comes after group.share.assignment.interval.ms (1 s), as a client's would (5 s).
  s.timer.advance(1000);
  const next = s.coordinator.shares.heartbeat(shareBeat(memberId, first.memberEpoch));
  return { epoch: next.memberEpoch, assigned: shareAssigned(next) };
}

/** The share records of group g written to its partition, as "type" or "type-" for tombstones. */
function shareRecordTypes(s: Setup): string[] {
  const out: string[] = [];
  for (const chunk of s.store.read(partitionFor('g', 4))) {
    for (const { record } of recordsIn(chunk, () => {})) if (record.kind === 'share') out.push(`${record.type}${record.value === null ? '-' : ''}`);
  }
  return out;
}

describe('share groups (KIP-932): ShareGroupHeartbeat', () => {
  it('joins, initializes the share state of the subscribed partitions, then assigns them at the next heartbeat', async () => {
    const s = setup();
    const shares = s.coordinator.shares;
    const first = shares.heartbeat(shareJoin('A'));
    // Nothing is initialized yet: epoch 2, an empty assignment, and t's partitions asked for at the group epoch from -1.
    expect([first.errorCode, first.memberId, first.memberEpoch, first.heartbeatIntervalMs, shareAssigned(first)]).toEqual([0, 'A', 2, 5000, []]);
    expect(s.persister.ops('initialize')).toEqual(['t-0@2:-1', 't-1@2:-1', 't-2@2:-1']);
    expect([...shares.group('g')!.statePartitions!.initializing.keys()]).toEqual([T]);
    await flush();
    const sp = shares.group('g')!.statePartitions!;
    expect([sp.initializing.size, [...sp.initialized.get(T)!.partitions].sort()]).toEqual([0, [0, 1, 2]]);
    s.timer.advance(1000);
    const second = shares.heartbeat(shareBeat('A', 2));
    expect([second.memberEpoch, shareAssigned(second)]).toEqual([3, ['t-0', 't-1', 't-2']]);
    // Nothing changed since: no assignment in the answer, and no more initialization.
    const third = shares.heartbeat(shareBeat('A', 3));
    expect([third.memberEpoch, third.assignment]).toEqual([3, null]);
    expect(s.persister.ops('initialize')).toHaveLength(3);
    expect(shares.group('g')).toMatchObject({ state: 'Stable', groupEpoch: 3, assignmentEpoch: 3 });
  });

  it('shares partitions among more members than partitions, and rebalances at each member\'s next heartbeat', async () => {
    const s = setup({ shareAssignmentIntervalMs: 0 }, { t: 2 });
    const shares = s.coordinator.shares;
    expect(await joinAndInitialize(s, 'A')).toEqual({ epoch: 3, assigned: ['t-0', 't-1'] });
    const b = shares.heartbeat(shareJoin('B'));
    expect([b.memberEpoch, shareAssigned(b)?.length]).toEqual([4, 1]);
    const c = shares.heartbeat(shareJoin('C'));
    expect(c.memberEpoch).toBe(5);
    expect(shares.heartbeat(shareBeat('A', 3)).memberEpoch).toBe(5);
    expect(shares.heartbeat(shareBeat('B', 4)).memberEpoch).toBe(5);
    const held = ['A', 'B', 'C'].map((id) => [...(shares.group('g')!.members.get(id)!.assigned.get(T) ?? [])]);
    // Three members, two partitions: each partition to two members, counts 2, 1, 1 in member id order.
    expect(held.map((x) => x.length)).toEqual([2, 1, 1]);
    expect([0, 1].map((p) => held.filter((x) => x.includes(p)).length)).toEqual([2, 2]);
  });

  it('answers Kafka\'s errors for bad requests, unknown members and fenced epochs', async () => {
    const s = setup();
    const shares = s.coordinator.shares;
    const fail = (p: ShareGroupHeartbeatParams) => {
      const r = shares.heartbeat(p);
      return [r.errorCode, r.errorMessage];
    };
    expect(fail(shareJoin(''))).toEqual([ErrorCode.INVALID_REQUEST, 'Invalid member id in the request.']);
    expect(fail(shareJoin('x'.repeat(37)))).toEqual([ErrorCode.INVALID_REQUEST, 'Invalid member id in the request.']);
    expect(fail(shareJoin('  '))).toEqual([ErrorCode.INVALID_REQUEST, "MemberId can't be empty."]);
    expect(fail(shareJoin('A', { groupId: ' ' }))).toEqual([ErrorCode.INVALID_REQUEST, "GroupId can't be empty."]);
    expect(fail(shareJoin('A', { rackId: '' }))).toEqual([ErrorCode.INVALID_REQUEST, "RackId can't be empty."]);
    expect(fail(shareJoin('A', { subscribedTopicNames: [] }))).toEqual([ErrorCode.INVALID_REQUEST, 'SubscribedTopicNames must be set in first request.']);
    expect(fail(shareJoin('A', { subscribedTopicNames: null }))).toEqual([ErrorCode.INVALID_REQUEST, 'SubscribedTopicNames must be set in first request.']);
    expect(fail(shareJoin('A', { memberEpoch: -2 }))).toEqual([ErrorCode.INVALID_REQUEST, 'MemberEpoch is invalid.']);
    expect(fail(shareBeat('A', 1))).toEqual([ErrorCode.GROUP_ID_NOT_FOUND, 'Share group g not found.']);
    expect(fail(shareBeat('A', -1))).toEqual([ErrorCode.GROUP_ID_NOT_FOUND, 'Group g not found.']);
    const { epoch } = await joinAndInitialize(s, 'A');
    expect(epoch).toBe(3);
    expect(fail(shareBeat('B', 3))).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, 'Member B is not a member of group g.']);
    expect(fail(shareBeat('B', -1))).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, 'Member B is not a member of group g.']);
    expect(fail(shareBeat('A', 4))).toEqual([
      ErrorCode.FENCED_MEMBER_EPOCH,
      'The share group member has a greater member epoch (4) than the one known by the group coordinator (3). The member must abandon all its partitions and rejoin.',
    ]);
    expect(fail(shareBeat('A', 1))).toEqual([
      ErrorCode.FENCED_MEMBER_EPOCH,
      'The share group member has a smaller member epoch (1) than the one known by the group coordinator (3), and it does not match the previous member epoch (2). The member must abandon all its partitions and rejoin.',
    ]);
    // The previous epoch is taken back (its answer may have been lost).
    expect(shares.heartbeat(shareBeat('A', 2))).toMatchObject({ errorCode: 0, memberEpoch: 3 });
  });

  it('leaves with epoch -1, after which the others get the partitions, and the group ends Empty', async () => {
    const s = setup({ shareAssignmentIntervalMs: 0 }, { t: 4 });
    const shares = s.coordinator.shares;
    await joinAndInitialize(s, 'A');
    shares.heartbeat(shareJoin('B'));
    const a = shares.heartbeat(shareBeat('A', 3));
    expect(shareAssigned(a)).toHaveLength(2);
    const left = shares.heartbeat(shareBeat('B', -1));
    expect([left.errorCode, left.memberId, left.memberEpoch, left.heartbeatIntervalMs]).toEqual([0, 'B', -1, 0]);
    // B's leave raised the epoch to 5: A's next heartbeat gets the target computed at it.
    const a2 = shares.heartbeat(shareBeat('A', 4));
    expect([a2.memberEpoch, shareAssigned(a2)]).toEqual([5, ['t-0', 't-1', 't-2', 't-3']]);
    shares.heartbeat(shareBeat('A', -1));
    expect(shares.group('g')).toMatchObject({ state: 'Empty', groupEpoch: 6, assignmentEpoch: 6 });
    expect(shares.group('g')!.target.size).toBe(0);
  });

  it('removes a member whose session expires (group.share.session.timeout.ms)', async () => {
    const s = setup({ shareSessionTimeoutMs: 10_000 });
    const shares = s.coordinator.shares;
    await joinAndInitialize(s, 'A');
    s.timer.advance(9_000);
    shares.heartbeat(shareBeat('A', 3));
    s.timer.advance(9_000);
    expect(shares.group('g')!.members.has('A')).toBe(true);
    s.timer.advance(1_001);
    expect(shares.group('g')!.members.size).toBe(0);
    expect(shares.heartbeat(shareBeat('A', 3)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('answers GROUP_MAX_SIZE_REACHED past group.share.max.size', () => {
    const s = setup({ shareMaxSize: 2 });
    const shares = s.coordinator.shares;
    expect(shares.heartbeat(shareJoin('A')).errorCode).toBe(0);
    expect(shares.heartbeat(shareJoin('B')).errorCode).toBe(0);
    expect(shares.heartbeat(shareJoin('C'))).toMatchObject({
      errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED,
      errorMessage: 'The share group has reached its maximum capacity of 2 members.',
    });
    // A member already in the group goes on.
    expect(shares.heartbeat(shareJoin('A')).errorCode).toBe(0);
  });

  it('keeps one group per id: share, classic and consumer groups do not take each other\'s ids', async () => {
    const s = setup();
    const c = s.coordinator;
    // A classic group (offsets only) and a consumer group own their ids.
    expect(c.commitOffsets({ groupId: 'classic', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1n, groupIdNotFoundKnown: true, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: '' }] }] })[0]!.partitions[0]!.errorCode).toBe(0);
    expect(c.shares.heartbeat(shareJoin('A', { groupId: 'classic' }))).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group classic is not a share group.' });
    expect(c.consumerGroupHeartbeat(consumerJoin('C', { groupId: 'consumer' })).errorCode).toBe(0);
    expect(c.shares.heartbeat(shareJoin('A', { groupId: 'consumer' }))).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group consumer is not a share group.' });
    // A share group's id cannot be used by the other protocols.
    expect(c.shares.heartbeat(shareJoin('A')).errorCode).toBe(0);
    expect(c.consumerGroupHeartbeat(consumerJoin('C'))).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group g is not a consumer group.' });
    expect(await c.joinGroup(joinParams())).toMatchObject({ errorCode: ErrorCode.INCONSISTENT_GROUP_PROTOCOL, memberId: '' });
    const commit = c.commitOffsets({ groupId: 'g', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1n, groupIdNotFoundKnown: true, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: '' }] }] });
    expect(commit[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    // OffsetFetch answers a share group as one without commits (Kafka fails all its partitions to -1, without error).
    expect(c.fetchOffsets('g', [{ name: 't', partitionIndexes: [0] }])).toEqual({ errorCode: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 }] }] });
    expect(c.describeGroup('g')).toMatchObject({ errorCode: 0, groupState: 'Dead', consumerGroup: true });
    expect(c.describeConsumerGroup('g')).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group g is not a consumer group.' });
  });

  it('is unavailable without a persister, as Kafka answers with share groups off', () => {
    const h = harness({}, { metadata: new ShareTopicsMetadata({ t: 1 }) as never });
    expect(h.coordinator.shares.enabled).toBe(false);
    expect(h.coordinator.shares.heartbeat(shareJoin('A')).errorCode).toBe(ErrorCode.UNSUPPORTED_VERSION);
  });

  it('asks again for partitions whose initialization failed, and for a topic\'s new partitions from offset 0', async () => {
    const s = setup({ shareAssignmentIntervalMs: 0 });
    const shares = s.coordinator.shares;
    s.persister.failures.initialize.push(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const first = shares.heartbeat(shareJoin('A'));
    await flush();
    // One partition failed: none is recorded as initialized, and none is still initializing.
    const sp = shares.group('g')!.statePartitions!;
    expect([sp.initializing.size, sp.initialized.size]).toEqual([0, 0]);
    const again = shares.heartbeat(shareBeat('A', first.memberEpoch));
    expect(shareAssigned(again)).toBeNull();
    await flush();
    expect(s.persister.ops('initialize').slice(3)).toEqual(['t-0@2:-1', 't-1@2:-1', 't-2@2:-1']);
    expect(shareAssigned(shares.heartbeat(shareBeat('A', 2)))).toEqual(['t-0', 't-1', 't-2']);
    // t grows: its new partition starts at offset 0, the next heartbeat after its initialization assigns it.
    s.topics.setTopics({ t: 4 });
    const grown = shares.heartbeat(shareBeat('A', 3));
    expect(s.persister.ops('initialize').slice(6)).toEqual([`t-3@${shares.group('g')!.groupEpoch}:0`]);
    await flush();
    expect(shareAssigned(shares.heartbeat(shareBeat('A', grown.memberEpoch)))).toEqual(['t-0', 't-1', 't-2', 't-3']);
  });

  it('forgets the share state of a deleted topic, and its members lose its partitions at their next heartbeat', async () => {
    const s = setup({ shareAssignmentIntervalMs: 0 }, { t: 2, u: 1 });
    const shares = s.coordinator.shares;
    const { epoch, assigned } = await joinAndInitialize(s, 'A', { subscribedTopicNames: ['t', 'u'] });
    expect(assigned).toEqual(['t-0', 't-1', 'u-0']);
    s.topics.setTopics({ t: 2 });
    expect([...shares.group('g')!.statePartitions!.initialized.keys()]).toEqual([T]);
    const next = shares.heartbeat(shareBeat('A', epoch));
    expect([next.memberEpoch, shareAssigned(next)]).toEqual([epoch + 1, ['t-0', 't-1']]);
    // Settled: later heartbeats change nothing.
    expect(shares.heartbeat(shareBeat('A', epoch + 1))).toMatchObject({ memberEpoch: epoch + 1, assignment: null });
    expect(s.restart().coordinator.shares.group('g')!.statePartitions!.initialized.has(TOPIC_IDS['u']!)).toBe(false);
  });

  it('does not ask twice for partitions still initializing within group.share.initialize.retry.interval.ms', async () => {
    const s = setup();
    const shares = s.coordinator.shares;
    s.persister.hold();
    shares.heartbeat(shareJoin('A'));
    shares.heartbeat(shareJoin('B'));
    expect(s.persister.ops('initialize')).toHaveLength(3);
    s.timer.advance(30_000);
    shares.heartbeat(shareBeat('A', 2));
    expect(s.persister.ops('initialize')).toHaveLength(6);
    s.persister.release();
    await flush();
    expect([...shares.group('g')!.statePartitions!.initialized.get(T)!.partitions].sort()).toEqual([0, 1, 2]);
  });

  it('writes Kafka\'s ShareGroup* records and a restarted coordinator serves the group as it was', async () => {
    const s = setup({ shareAssignmentIntervalMs: 0 }, { t: 2, u: 1 });
    const shares = s.coordinator.shares;
    await joinAndInitialize(s, 'A', { rackId: 'r1', subscribedTopicNames: ['t', 'u'] });
    const b = shares.heartbeat(shareJoin('B'));
    await flush();
    const before = shares.describe('g');
    expect(shareRecordTypes(s)).toEqual(['10', '11', '13', '12', '14', '15', '15', '11', '13', '12', '14', '10', '11', '13', '13', '12', '14']);
    const r = s.restart();
    const after = r.coordinator.shares.describe('g');
    expect(after).toEqual(before);
    const g = r.coordinator.shares.group('g')!;
    expect([...g.statePartitions!.initialized.keys()].sort()).toEqual([T, TOPIC_IDS['u']].sort());
    // Members go on with their epochs, and get a fresh session.
    expect(r.coordinator.shares.heartbeat(shareBeat('B', b.memberEpoch)).errorCode).toBe(0);
    r.timer.advance(45_001);
    expect(r.coordinator.shares.group('g')!.members.size).toBe(0);
  });

  it('fails over: the broker that leads the group\'s partition next serves the group from its records', async () => {
    const s = setup();
    const { epoch } = await joinAndInitialize(s, 'A');
    s.topics.moveLeaders(2);
    // The old coordinator let go of the group and its sessions.
    expect(s.coordinator.shares.group('g')).toBeUndefined();
    expect(s.coordinator.shares.heartbeat(shareBeat('A', epoch)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(s.timer.keys.filter((k) => k.startsWith('share-session'))).toEqual([]);
    const next = new GroupCoordinator(2, s.topics, s.store, silentLog, { timer: s.timer, persister: s.persister }).start();
    expect(next.shares.describe('g')).toMatchObject({ errorCode: 0, groupState: 'Stable', groupEpoch: epoch, members: [{ memberId: 'A', memberEpoch: epoch }] });
    expect(next.shares.heartbeat(shareBeat('A', epoch))).toMatchObject({ errorCode: 0, memberEpoch: epoch, assignment: null });
    next.shutdown();
  });

  it('round-trips every share record type through Kafka\'s layouts', () => {
    const records: CoordinatorRecord[] = [
      { kind: 'share', type: 10, groupId: 'g', memberId: 'm', value: { rackId: null, clientId: 'c', clientHost: '/h', subscribedTopicNames: ['t'] } },
      { kind: 'share', type: 11, groupId: 'g', value: { epoch: 3, metadataHash: -5n } },
      { kind: 'share', type: 12, groupId: 'g', value: { assignmentEpoch: 3, assignmentTimestamp: 12n } },
      { kind: 'share', type: 13, groupId: 'g', memberId: 'm', value: { topicPartitions: [{ topicId: T, partitions: [0, 2] }] } },
      { kind: 'share', type: 14, groupId: 'g', memberId: 'm', value: { memberEpoch: 3, previousMemberEpoch: 2, state: 0, assignedPartitions: [{ topicId: T, partitions: [1] }] } },
      {
        kind: 'share',
        type: 15,
        groupId: 'g',
        value: { initializingTopics: [{ topicId: T, topicName: 't', partitions: [3] }], initializedTopics: [{ topicId: T, topicName: 't', partitions: [0] }], deletingTopics: [{ topicId: ZERO_UUID, topicName: 'x' }] },
      },
      { kind: 'share', type: 15, groupId: 'g', value: null },
    ];
    for (const r of records) {
      const { key, value } = serializeRecord(r);
      expect(key.readInt16BE(0)).toBe(r.kind === 'share' ? r.type : -1);
      if (value) expect(value.readInt16BE(0)).toBe(0);
      expect(deserializeRecord(key, value)).toEqual(r);
    }
  });
});

describe('share groups: describe, list, delete', () => {
  it('describes a share group as ShareGroupDescribe answers it', async () => {
    const s = setup();
    const shares = s.coordinator.shares;
    await joinAndInitialize(s, 'A', { rackId: 'rack-1' });
    expect(shares.describe('g')).toEqual({
      errorCode: 0,
      errorMessage: null,
      groupId: 'g',
      groupState: 'Stable',
      groupEpoch: 3,
      assignmentEpoch: 3,
      assignorName: 'simple',
      members: [
        { memberId: 'A', rackId: 'rack-1', memberEpoch: 3, clientId: 'client-A', clientHost: '/127.0.0.1', subscribedTopicNames: ['t'], assignment: [{ topicId: T, topicName: 't', partitions: [0, 1, 2] }] },
      ],
    });
    expect(shares.describe('nope')).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group nope not found.' });
    expect(shares.describe('')).toMatchObject({ errorCode: ErrorCode.INVALID_GROUP_ID });
  });

  it('lists share groups with type "share" and their state', async () => {
    const s = setup();
    const c = s.coordinator;
    c.shares.heartbeat(shareJoin('A'));
    c.consumerGroupHeartbeat(consumerJoin('C', { groupId: 'consumer' }));
    expect(c.listGroups([], ['share'])).toEqual([{ groupId: 'g', protocolType: 'share', groupState: 'Stable', groupType: 'share' }]);
    expect(c.listGroups(['empty'], ['share'])).toEqual([]);
    expect(c.listGroups([], []).map((g) => g.groupType).sort()).toEqual(['consumer', 'share']);
    c.shares.heartbeat(shareBeat('A', -1));
    expect(c.listGroups(['Empty'], [])).toEqual([{ groupId: 'g', protocolType: 'share', groupState: 'Empty', groupType: 'share' }]);
  });

  it('deletes only an empty share group, deleting its share-partition state first, and it stays deleted after a restart', async () => {
    const s = setup();
    const shares = s.coordinator.shares;
    const { epoch } = await joinAndInitialize(s, 'A');
    expect(await shares.deleteGroup('g')).toBe(ErrorCode.NON_EMPTY_GROUP);
    shares.heartbeat(shareBeat('A', epoch));
    shares.heartbeat(shareBeat('A', -1));
    s.persister.failures.delete.push(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    // A failed state deletion leaves the group, its topics recorded as deleting.
    expect(await shares.deleteGroup('g')).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    expect([...shares.group('g')!.statePartitions!.deleting.keys()]).toEqual([T]);
    expect(await shares.deleteGroup('g')).toBe(ErrorCode.NONE);
    expect(s.persister.ops('delete')).toEqual(['t-0', 't-1', 't-2', 't-0', 't-1', 't-2']);
    expect(shares.group('g')).toBeUndefined();
    expect(await shares.deleteGroup('g')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(shareRecordTypes(s).slice(-3)).toEqual(['12-', '15-', '11-']);
    expect(s.restart().coordinator.shares.group('g')).toBeUndefined();
  });
});

describe('share groups: offsets', () => {
  const noLatest = async () => ({ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, offset: -1n });

  it('describes start offsets and lag (latest - start - delivered for good) from the persister\'s summary', async () => {
    const s = setup();
    const shares = s.coordinator.shares;
    await joinAndInitialize(s, 'A');
    s.persister.setSummary({ groupId: 'g', topicId: T, partition: 0 }, 10n, 3, 4);
    // t-1 keeps -1: initialized, no start offset yet (its summary's leader epoch is answered as it is).
    const latest = async (_t: string, p: number) => ({ errorCode: 0, offset: p === 0 ? 20n : 0n });
    const d = await shares.describeOffsets('g', [{ topicName: 't', partitions: [0, 1] }, { topicName: 'gone', partitions: [5] }], latest);
    expect(d).toEqual({
      groupId: 'g',
      errorCode: 0,
      errorMessage: null,
      topics: [
        {
          topicName: 't',
          topicId: T,
          partitions: [
            { partitionIndex: 0, startOffset: 10n, leaderEpoch: 4, lag: 7n, errorCode: 0, errorMessage: null },
            { partitionIndex: 1, startOffset: -1n, leaderEpoch: -1, lag: -1n, errorCode: 0, errorMessage: null },
          ],
        },
        { topicName: 'gone', topicId: ZERO_UUID, partitions: [{ partitionIndex: 5, startOffset: -1n, leaderEpoch: 0, lag: -1n, errorCode: 0, errorMessage: null }] },
      ],
    });
    // Null topics: every initialized partition.
    const everything = await shares.describeOffsets('g', null, noLatest);
    expect(everything.topics.map((t) => [t.topicName, t.partitions.map((p) => p.partitionIndex)])).toEqual([['t', [0, 1, 2]]]);
    expect(everything.topics[0]!.partitions[0]).toMatchObject({ startOffset: 0n, lag: -1n, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER });
  });

  it('alters start offsets of an empty group only, initializing the state again at the group epoch', async () => {
    const s = setup({}, { t: 2 });
    const shares = s.coordinator.shares;
    const { epoch } = await joinAndInitialize(s, 'A');
    const busy = await shares.alterOffsets('g', [{ topicName: 't', partitions: [{ partitionIndex: 0, startOffset: 5n }] }]);
    expect([busy.errorCode, busy.errorMessage]).toEqual([ErrorCode.NON_EMPTY_GROUP, 'The group is not empty.']);
    shares.heartbeat(shareBeat('A', epoch));
    shares.heartbeat(shareBeat('A', -1));
    const groupEpoch = shares.group('g')!.groupEpoch;
    const r = await shares.alterOffsets('g', [
      { topicName: 't', partitions: [{ partitionIndex: 1, startOffset: 42n }, { partitionIndex: 7, startOffset: 1n }] },
      { topicName: 'nope', partitions: [{ partitionIndex: 0, startOffset: 1n }] },
    ]);
    expect(r).toEqual({
      errorCode: 0,
      errorMessage: null,
      topics: [
        {
          topicName: 't',
          topicId: T,
          partitions: [
            { partitionIndex: 1, errorCode: 0, errorMessage: null },
            { partitionIndex: 7, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'This server does not host this topic-partition.' },
          ],
        },
        { topicName: 'nope', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'This server does not host this topic-partition.' }] },
      ],
    });
    expect(s.persister.ops('initialize').at(-1)).toBe(`t-1@${groupEpoch}:42`);
    expect(s.persister.entry({ groupId: 'g', topicId: T, partition: 1 })?.startOffset).toBe(42n);
    // A group that does not exist yet is created, empty, with its partitions initialized.
    const fresh = await shares.alterOffsets('h', [{ topicName: 't', partitions: [{ partitionIndex: 0, startOffset: 3n }] }]);
    expect(fresh.errorCode).toBe(0);
    expect(shares.describe('h')).toMatchObject({ errorCode: 0, groupState: 'Empty', groupEpoch: 1 });
    expect([...shares.group('h')!.statePartitions!.initialized.get(T)!.partitions]).toEqual([0]);
    // A persister failure is that partition's error.
    s.persister.failures.initialize.push(ErrorCode.FENCED_STATE_EPOCH);
    const failed = await shares.alterOffsets('h', [{ topicName: 't', partitions: [{ partitionIndex: 0, startOffset: 9n }] }]);
    expect(failed.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.FENCED_STATE_EPOCH);
    s.coordinator.consumerGroupHeartbeat(consumerJoin('C', { groupId: 'consumer' }));
    expect(await shares.alterOffsets('consumer', [])).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group consumer is not a share group.' });
  });

  it('deletes whole topics\' state of an empty group, and answers topics without state', async () => {
    const s = setup({}, { t: 2, u: 1 });
    const shares = s.coordinator.shares;
    const { epoch } = await joinAndInitialize(s, 'A');
    expect(await shares.deleteOffsets('g', ['t'])).toMatchObject({ errorCode: ErrorCode.NON_EMPTY_GROUP, errorMessage: 'The group is not empty.' });
    shares.heartbeat(shareBeat('A', epoch));
    shares.heartbeat(shareBeat('A', -1));
    const r = await shares.deleteOffsets('g', ['t', 'u', 'nope']);
    expect(r).toEqual({
      errorCode: 0,
      errorMessage: null,
      topics: [
        { topicName: 't', topicId: T, errorCode: 0, errorMessage: null },
        { topicName: 'u', topicId: ZERO_UUID, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'There is no offset information to delete.' },
        { topicName: 'nope', topicId: ZERO_UUID, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'This server does not host this topic-partition.' },
      ],
    });
    expect(s.persister.ops('delete')).toEqual(['t-0', 't-1']);
    const sp = shares.group('g')!.statePartitions!;
    expect([sp.initialized.size, sp.deleting.size]).toEqual([0, 0]);
    expect(await shares.deleteOffsets('nope', ['t'])).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group nope not found.' });
  });
});

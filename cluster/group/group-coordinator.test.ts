import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { MemoryOffsetsStore, harness, joinParams, settled, subscription, type Harness } from './group-test-support.js';
import type { JoinGroupResult } from './group-coordinator.js';
import { recordsIn } from './group-records.js';

const A1 = Buffer.from('assignment-1');
const A2 = Buffer.from('assignment-2');

/** A dynamic member joined through MEMBER_ID_REQUIRED; resolves with its join answer once the join phase completes. */
async function joinNew(h: Harness, over: Parameters<typeof joinParams>[0] = {}): Promise<{ memberId: string; join: Promise<JoinGroupResult> }> {
  const first = await h.coordinator.joinGroup(joinParams(over));
  expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  return { memberId: first.memberId, join: h.coordinator.joinGroup(joinParams({ ...over, memberId: first.memberId })) };
}

/** Two members through their first rebalance to Stable; returns their ids and the generation. */
async function stableGroupOfTwo(h: Harness): Promise<{ leader: string; follower: string; generation: number }> {
  const a = await joinNew(h);
  const b = await joinNew(h);
  // The second member extends the initial delay once.
  h.timer.advance(6000);
  const [ja, jb] = await Promise.all([a.join, b.join]);
  expect(ja.errorCode).toBe(0);
  expect(jb.errorCode).toBe(0);
  const leader = ja.leader;
  const follower = leader === a.memberId ? b.memberId : a.memberId;
  const syncF = h.coordinator.syncGroup({ groupId: 'g', generationId: ja.generationId, memberId: follower, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] });
  const syncL = h.coordinator.syncGroup({
    groupId: 'g',
    generationId: ja.generationId,
    memberId: leader,
    groupInstanceId: null,
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: [
      { memberId: leader, assignment: A1 },
      { memberId: follower, assignment: A2 },
    ],
  });
  expect((await syncL).assignment).toEqual(A1);
  expect((await syncF).assignment).toEqual(A2);
  expect(h.coordinator.groupState('g')).toBe('Stable');
  return { leader, follower, generation: ja.generationId };
}

describe('JoinGroup and SyncGroup', () => {
  it('asks a first v4+ join for a member id, completes the first rebalance after the initial delay, and hands out the assignment', async () => {
    const h = harness();
    const { memberId, join } = await joinNew(h);
    expect(memberId).toMatch(/^client-[0-9a-f-]{36}$/);
    expect(h.coordinator.groupState('g')).toBe('PreparingRebalance');
    h.timer.advance(2999);
    expect((await settled(join)).done).toBe(false);
    h.timer.advance(1);
    const answer = await join;
    expect(answer).toMatchObject({ errorCode: 0, generationId: 1, protocolType: 'consumer', protocolName: 'range', leader: memberId, memberId });
    expect(answer.members).toEqual([{ memberId, groupInstanceId: null, metadata: subscription(['t']) }]);
    expect(h.coordinator.groupState('g')).toBe('CompletingRebalance');
    const sync = await h.coordinator.syncGroup({ groupId: 'g', generationId: 1, memberId, groupInstanceId: null, protocolType: 'consumer', protocolName: 'range', assignments: [{ memberId, assignment: A1 }] });
    expect(sync).toEqual({ errorCode: 0, protocolType: 'consumer', protocolName: 'range', assignment: A1 });
    expect(h.coordinator.groupState('g')).toBe('Stable');
  });

  it('hands out the assignment only once every in-sync replica has it, and on a failure rebalances', async () => {
    // A store whose appends are replicated when the test says.
    class Replicated extends MemoryOffsetsStore {
      private resolveNext: ((code: number) => void)[] = [];
      replicated(): Promise<number> {
        return new Promise((resolve) => this.resolveNext.push(resolve));
      }
      settle(code: number): void {
        for (const r of this.resolveNext.splice(0)) r(code);
      }
    }
    const store = new Replicated();
    const h = harness({ initialRebalanceDelayMs: 0 }, { store });
    const { memberId, join } = await joinNew(h);
    h.timer.advance(0);
    await join;
    const params = { groupId: 'g', generationId: 1, memberId, groupInstanceId: null, protocolType: 'consumer', protocolName: 'range', assignments: [{ memberId, assignment: A1 }] };
    const sync = h.coordinator.syncGroup(params);
    expect((await settled(sync)).done).toBe(false);
    expect(h.coordinator.groupState('g')).toBe('CompletingRebalance');
    store.settle(ErrorCode.NONE);
    expect(await sync).toEqual({ errorCode: 0, protocolType: 'consumer', protocolName: 'range', assignment: A1 });
    expect(h.coordinator.groupState('g')).toBe('Stable');

    // A new rebalance whose assignment the replicas do not take in time: the member is told, and the group rebalances.
    const rejoin = h.coordinator.joinGroup(joinParams({ memberId }));
    h.timer.advance(0);
    const g2 = await rejoin;
    const failing = h.coordinator.syncGroup({ ...params, generationId: g2.generationId });
    store.settle(ErrorCode.REQUEST_TIMED_OUT);
    expect((await failing).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(h.coordinator.groupState('g')).toBe('PreparingRebalance');
  });

  it('lets joins before v4 in without a member id round trip', async () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    const join = h.coordinator.joinGroup(joinParams({ requireKnownMemberId: false }));
    h.timer.advance(0);
    const answer = await join;
    expect(answer.errorCode).toBe(0);
    expect(answer.memberId).toMatch(/^client-/);
    expect(answer.leader).toBe(answer.memberId);
  });

  it('extends the initial delay while members keep arriving, then gives every member the same generation', async () => {
    const h = harness({ initialRebalanceDelayMs: 1000 });
    const a = await joinNew(h);
    h.timer.advance(900);
    const b = await joinNew(h);
    h.timer.advance(100);
    expect((await settled(a.join)).done).toBe(false);
    h.timer.advance(1000);
    const [ja, jb] = await Promise.all([a.join, b.join]);
    expect(ja.generationId).toBe(1);
    expect(jb.generationId).toBe(1);
    expect(ja.leader).toBe(jb.leader);
    // Only the leader receives the members' metadata.
    const leaderAnswer = ja.leader === a.memberId ? ja : jb;
    const followerAnswer = ja.leader === a.memberId ? jb : ja;
    expect(leaderAnswer.members.map((m) => m.memberId).sort()).toEqual([a.memberId, b.memberId].sort());
    expect(followerAnswer.members).toEqual([]);
  });

  it('picks the protocol every member supports that most members prefer', async () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    const meta = subscription(['t']);
    const prefs = [
      ['range', 'roundrobin'],
      ['roundrobin', 'range'],
      ['roundrobin', 'range', 'sticky'],
    ];
    const joins = [];
    for (const names of prefs) joins.push((await joinNew(h, { protocols: names.map((name) => ({ name, metadata: meta })) })).join);
    h.timer.advance(0);
    for (const j of await Promise.all(joins)) expect(j.protocolName).toBe('roundrobin');
  });

  it('answers INCONSISTENT_GROUP_PROTOCOL to a member sharing no protocol, or another protocol type, with the group', async () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    const a = await joinNew(h, { protocols: [{ name: 'range', metadata: subscription(['t']) }, { name: 'roundrobin', metadata: subscription(['t']) }] });
    h.timer.advance(0);
    await a.join;
    const kafkajs = await h.coordinator.joinGroup(joinParams({ protocols: [{ name: 'RoundRobinAssigner', metadata: subscription(['t']) }] }));
    expect(kafkajs).toMatchObject({ errorCode: ErrorCode.INCONSISTENT_GROUP_PROTOCOL, memberId: '' });
    const connect = await h.coordinator.joinGroup(joinParams({ protocolType: 'connect' }));
    expect(connect.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const none = await h.coordinator.joinGroup(joinParams({ groupId: 'other', protocolType: '' }));
    expect(none.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  it('checks the group id and the session timeout range', async () => {
    const h = harness();
    expect((await h.coordinator.joinGroup(joinParams({ groupId: '' }))).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
    expect((await h.coordinator.joinGroup(joinParams({ sessionTimeoutMs: 5999 }))).errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    expect((await h.coordinator.joinGroup(joinParams({ sessionTimeoutMs: 1800001 }))).errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    expect((await h.coordinator.joinGroup(joinParams({ memberId: 'stranger' }))).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('answers NOT_COORDINATOR while __consumer_offsets does not exist or another broker leads the partition', async () => {
    const h = harness({}, { partitions: 0 });
    h.metadata.set(null);
    expect((await h.coordinator.joinGroup(joinParams())).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    h.metadata.set(4, 2);
    expect((await h.coordinator.joinGroup(joinParams())).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(h.coordinator.heartbeat({ groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null })).toBe(ErrorCode.NOT_COORDINATOR);
    h.metadata.set(4, 1);
    expect((await h.coordinator.joinGroup(joinParams())).errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  });

  it('fences stale generations and unknown members in SyncGroup and Heartbeat', async () => {
    const h = harness();
    const { leader, generation } = await stableGroupOfTwo(h);
    const hb = (generationId: number, memberId: string) => h.coordinator.heartbeat({ groupId: 'g', generationId, memberId, groupInstanceId: null });
    expect(hb(generation, leader)).toBe(ErrorCode.NONE);
    expect(hb(generation - 1, leader)).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(hb(generation, 'nobody')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(h.coordinator.heartbeat({ groupId: 'nope', generationId: 1, memberId: leader, groupInstanceId: null })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    const stale = await h.coordinator.syncGroup({ groupId: 'g', generationId: generation + 1, memberId: leader, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] });
    expect(stale.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    const wrongProtocol = await h.coordinator.syncGroup({ groupId: 'g', generationId: generation, memberId: leader, groupInstanceId: null, protocolType: 'consumer', protocolName: 'roundrobin', assignments: [] });
    expect(wrongProtocol.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    // A stable group answers a repeated SyncGroup with the member's assignment.
    const again = await h.coordinator.syncGroup({ groupId: 'g', generationId: generation, memberId: leader, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] });
    expect(again.assignment).toEqual(A1);
  });

  it('rebalances when a member leaves: the others are told REBALANCE_IN_PROGRESS, rejoin, and get the next generation', async () => {
    const h = harness();
    const { leader, follower, generation } = await stableGroupOfTwo(h);
    const left = h.coordinator.leaveGroup('g', [{ memberId: follower, groupInstanceId: null }]);
    expect(left).toEqual({ errorCode: 0, members: [{ memberId: follower, groupInstanceId: null, errorCode: 0 }] });
    expect(h.coordinator.groupState('g')).toBe('PreparingRebalance');
    expect(h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: leader, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const rejoin = await h.coordinator.joinGroup(joinParams({ memberId: leader }));
    expect(rejoin).toMatchObject({ errorCode: 0, generationId: generation + 1, leader });
    expect(rejoin.members.map((m) => m.memberId)).toEqual([leader]);
    // A member that left is unknown from then on.
    expect(h.coordinator.leaveGroup('g', [{ memberId: follower, groupInstanceId: null }]).members[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('becomes Empty when the last member leaves, and persists that', async () => {
    const h = harness();
    const { leader, follower } = await stableGroupOfTwo(h);
    h.coordinator.leaveGroup('g', [
      { memberId: leader, groupInstanceId: null },
      { memberId: follower, groupInstanceId: null },
    ]);
    expect(h.coordinator.groupState('g')).toBe('Empty');
    const last = [...recordsIn(h.store.partitions.get(partitionOfG(h))!.at(-1)!, () => {})].at(-1)!.record;
    expect(last).toMatchObject({ kind: 'group', key: { group: 'g' }, value: { generation: 2, protocol: null, leader: null, members: [] } });
  });

  it('expires a silent member after its session timeout and rebalances the rest', async () => {
    const h = harness();
    const { leader, follower, generation } = await stableGroupOfTwo(h);
    for (let i = 0; i < 3; i++) {
      h.timer.advance(3000);
      expect(h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: leader, groupInstanceId: null })).toBe(ErrorCode.NONE);
    }
    h.timer.advance(3000);
    // 12 s without a heartbeat from the follower (session 10 s): it is gone.
    expect(h.coordinator.group('g')!.members.has(follower)).toBe(false);
    expect(h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: leader, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const rejoin = await h.coordinator.joinGroup(joinParams({ memberId: leader }));
    expect(rejoin.generationId).toBe(generation + 1);
  });

  it('drops members that do not rejoin within the rebalance timeout', async () => {
    const h = harness({}, {});
    const { leader, follower, generation } = await stableGroupOfTwo(h);
    const rejoin = h.coordinator.joinGroup(joinParams({ memberId: leader, protocols: [{ name: 'range', metadata: subscription(['t', 'u']) }] }));
    expect(h.coordinator.groupState('g')).toBe('PreparingRebalance');
    // The follower keeps heartbeating (told REBALANCE_IN_PROGRESS) but never rejoins.
    for (let i = 0; i < 9; i++) {
      h.timer.advance(3000);
      h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: follower, groupInstanceId: null });
    }
    expect((await settled(rejoin)).done).toBe(false);
    h.timer.advance(3000);
    const answer = await rejoin;
    expect(answer).toMatchObject({ errorCode: 0, generationId: generation + 1 });
    expect(answer.members.map((m) => m.memberId)).toEqual([leader]);
    expect(h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: follower, groupInstanceId: null })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('removes members that never send SyncGroup and rebalances', async () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    const a = await joinNew(h);
    const b = await joinNew(h);
    h.timer.advance(0);
    const ja = await a.join;
    await b.join;
    const leaderSync = h.coordinator.syncGroup({ groupId: 'g', generationId: 1, memberId: ja.leader, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] });
    await leaderSync;
    expect(h.coordinator.groupState('g')).toBe('Stable');
    const other = ja.leader === a.memberId ? b.memberId : a.memberId;
    for (let i = 0; i < 10; i++) {
      h.timer.advance(3000);
      h.coordinator.heartbeat({ groupId: 'g', generationId: 1, memberId: ja.leader, groupInstanceId: null });
    }
    expect(h.coordinator.group('g')!.members.has(other)).toBe(false);
    expect(h.coordinator.groupState('g')).toBe('PreparingRebalance');
  });

  it('refuses members past group.max.size with GROUP_MAX_SIZE_REACHED', async () => {
    const h = harness({ maxSize: 1, initialRebalanceDelayMs: 0 });
    const a = await joinNew(h);
    expect(await h.coordinator.joinGroup(joinParams())).toMatchObject({ errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED, memberId: '' });
    h.timer.advance(0);
    expect((await a.join).errorCode).toBe(0);
  });

  it('answers a parked join that the same member sent again, rather than leaving it hanging', async () => {
    const h = harness();
    const { leader, follower } = await stableGroupOfTwo(h);
    const first = h.coordinator.joinGroup(joinParams({ memberId: leader }));
    const retry = h.coordinator.joinGroup(joinParams({ memberId: leader }));
    expect((await first).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const followerJoin = h.coordinator.joinGroup(joinParams({ memberId: follower }));
    const [r, f] = await Promise.all([retry, followerJoin]);
    expect(r).toMatchObject({ errorCode: 0, generationId: 2 });
    expect(f).toMatchObject({ errorCode: 0, generationId: 2 });
  });

  it('answers parked requests NOT_COORDINATOR and stops every timer on shutdown', async () => {
    const h = harness();
    const a = await joinNew(h);
    h.coordinator.shutdown();
    expect((await a.join).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(h.timer.keys).toEqual([]);
    expect((await h.coordinator.joinGroup(joinParams())).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });
});

describe('static membership', () => {
  async function stableStatic(h: Harness): Promise<{ a: string; b: string; generation: number }> {
    const ja = h.coordinator.joinGroup(joinParams({ groupInstanceId: 'a' }));
    const jb = h.coordinator.joinGroup(joinParams({ groupInstanceId: 'b' }));
    h.timer.advance(6000);
    const [ra, rb] = await Promise.all([ja, jb]);
    expect(ra.memberId).toMatch(/^a-/);
    const leader = ra.leader;
    const follower = leader === ra.memberId ? rb.memberId : ra.memberId;
    const sf = h.coordinator.syncGroup({ groupId: 'g', generationId: 1, memberId: follower, groupInstanceId: follower === ra.memberId ? 'a' : 'b', protocolType: null, protocolName: null, assignments: [] });
    await h.coordinator.syncGroup({
      groupId: 'g',
      generationId: 1,
      memberId: leader,
      groupInstanceId: leader === ra.memberId ? 'a' : 'b',
      protocolType: null,
      protocolName: null,
      assignments: [
        { memberId: ra.memberId, assignment: A1 },
        { memberId: rb.memberId, assignment: A2 },
      ],
    });
    await sf;
    return { a: ra.memberId, b: rb.memberId, generation: 1 };
  }

  it('lets a restarted static member take its place without a rebalance, and fences the old incarnation', async () => {
    const h = harness();
    const { a, b, generation } = await stableStatic(h);
    const restarted = await h.coordinator.joinGroup(joinParams({ groupInstanceId: 'b' }));
    expect(restarted.errorCode).toBe(0);
    expect(restarted.memberId).not.toBe(b);
    expect(restarted.generationId).toBe(generation);
    expect(h.coordinator.groupState('g')).toBe('Stable');
    const sync = await h.coordinator.syncGroup({ groupId: 'g', generationId: generation, memberId: restarted.memberId, groupInstanceId: 'b', protocolType: null, protocolName: null, assignments: [] });
    expect(sync.assignment).toEqual(A2);
    expect(h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: b, groupInstanceId: 'b' })).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: a, groupInstanceId: 'a' })).toBe(ErrorCode.NONE);
  });

  it('keeps a static member through its parked rejoin and removes it by instance id on LeaveGroup', async () => {
    const h = harness();
    const { a } = await stableStatic(h);
    const left = h.coordinator.leaveGroup('g', [{ memberId: '', groupInstanceId: 'a' }]);
    expect(left.members).toEqual([{ memberId: '', groupInstanceId: 'a', errorCode: 0 }]);
    expect(h.coordinator.group('g')!.members.has(a)).toBe(false);
    expect(h.coordinator.leaveGroup('g', [{ memberId: '', groupInstanceId: 'zzz' }]).members[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });
});

describe('offsets', () => {
  const commit = (h: Harness, over: Partial<Parameters<Harness['coordinator']['commitOffsets']>[0]> = {}) =>
    h.coordinator.commitOffsets({
      groupId: 'g',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      groupIdNotFoundKnown: true,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 3, commitTimestamp: -1n, committedMetadata: 'meta' }] }],
      ...over,
    });

  it('takes simple commits into a group without members and fetches them back', () => {
    const h = harness();
    expect(commit(h)).toEqual([{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 0 }] }]);
    expect(h.coordinator.groupState('g')).toBe('Empty');
    expect(h.coordinator.fetchOffsets('g', [{ name: 't', partitionIndexes: [0, 1] }])).toEqual({
      errorCode: 0,
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 3, metadata: 'meta', errorCode: 0 },
            { partitionIndex: 1, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 },
          ],
        },
      ],
    });
    expect(h.coordinator.fetchOffsets('g', null).topics).toEqual([{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 3, metadata: 'meta', errorCode: 0 }] }]);
    expect(h.coordinator.fetchOffsets('unknown', [{ name: 't', partitionIndexes: [0] }]).topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
  });

  it('checks group commits against generation and member', async () => {
    const h = harness();
    const { leader, generation } = await stableGroupOfTwo(h);
    expect(commit(h, { generationId: generation, memberId: leader })[0]!.partitions[0]!.errorCode).toBe(0);
    expect(commit(h, { generationId: generation - 1, memberId: leader })[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(commit(h, { generationId: generation, memberId: 'nobody' })[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    // OffsetCommit v0 (no generation, no member) is refused by a group with members.
    expect(commit(h)[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(commit(h, { groupId: 'missing', generationId: 4, memberId: 'x', groupIdNotFoundKnown: true })[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(commit(h, { groupId: 'missing', generationId: 4, memberId: 'x', groupIdNotFoundKnown: false })[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  it('answers REBALANCE_IN_PROGRESS to a commit while the assignment is awaited', async () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    const a = await joinNew(h);
    h.timer.advance(0);
    const ja = await a.join;
    expect(commit(h, { generationId: ja.generationId, memberId: a.memberId })[0]!.partitions[0]!.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  it('refuses metadata longer than offset.metadata.max.bytes, per partition', () => {
    const h = harness({ offsetMetadataMaxBytes: 3 });
    const r = commit(h, {
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: 'abcd' },
            { partitionIndex: 1, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null },
          ],
        },
      ],
    });
    expect(r[0]!.partitions).toEqual([
      { partitionIndex: 0, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE },
      { partitionIndex: 1, errorCode: 0 },
    ]);
  });

  it('acknowledges nothing when the append fails', () => {
    const h = harness();
    h.store.failures.push(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(commit(h)[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(h.coordinator.fetchOffsets('g', [{ name: 't', partitionIndexes: [0] }]).topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
    expect(h.coordinator.groupState('g')).toBeUndefined();
  });

  it('deletes offsets of topics the group does not subscribe to', async () => {
    const h = harness();
    commit(h, {
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: '' }] },
        { name: 'u', partitions: [{ partitionIndex: 0, committedOffset: 2n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: '' }] },
      ],
    });
    expect(h.coordinator.deleteOffsets('g', [{ name: 'u', partitions: [0] }])).toEqual({ errorCode: 0, topics: [{ name: 'u', partitions: [{ partitionIndex: 0, errorCode: 0 }] }] });
    expect(h.coordinator.fetchOffsets('g', null).topics.map((t) => t.name)).toEqual(['t']);
    expect(h.coordinator.deleteOffsets('nope', [{ name: 'u', partitions: [0] }]).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    await stableGroupOfTwo(h);
    // The members subscribe to t.
    expect(h.coordinator.deleteOffsets('g', [{ name: 't', partitions: [0] }]).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC);
  });

  it('expires the offsets of an empty group after offsets.retention.minutes, and the group with them', () => {
    const h = harness({ offsetsRetentionMs: 60_000, offsetsRetentionCheckIntervalMs: 10_000 });
    commit(h);
    h.timer.advance(50_000);
    expect(h.coordinator.fetchOffsets('g', null).topics).toHaveLength(1);
    h.timer.advance(10_000);
    expect(h.coordinator.fetchOffsets('g', null).topics).toEqual([]);
    expect(h.coordinator.groupState('g')).toBeUndefined();
    // The expiry is persisted: a reload does not bring them back.
    const again = h.restart();
    expect(again.coordinator.fetchOffsets('g', null).topics).toEqual([]);
  });

  it('keeps the offsets of a group with members', async () => {
    const h = harness({ offsetsRetentionMs: 60_000, offsetsRetentionCheckIntervalMs: 10_000 });
    const { leader, generation } = await stableGroupOfTwo(h);
    commit(h, { generationId: generation, memberId: leader });
    for (let i = 0; i < 30; i++) {
      h.timer.advance(3000);
      for (const m of h.coordinator.group('g')!.members.keys()) h.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: m, groupInstanceId: null });
    }
    expect(h.coordinator.fetchOffsets('g', null).topics).toHaveLength(1);
  });
});

describe('deleted topics', () => {
  it('drops the committed offsets of a deleted topic from every group, durably', () => {
    const h = harness();
    h.metadata.set(4, 1, ['t', 'u']);
    for (const groupId of ['g1', 'g2']) {
      h.coordinator.commitOffsets({
        groupId,
        generationId: -1,
        memberId: '',
        groupInstanceId: null,
        retentionTimeMs: -1n,
        groupIdNotFoundKnown: true,
        topics: ['t', 'u'].map((name) => ({ name, partitions: [{ partitionIndex: 0, committedOffset: 3n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] })),
      });
    }
    h.metadata.set(4, 1, ['u']);
    for (const groupId of ['g1', 'g2']) expect(h.coordinator.fetchOffsets(groupId, null).topics.map((t) => t.name)).toEqual(['u']);
    const again = h.restart();
    expect(again.coordinator.fetchOffsets('g1', null).topics.map((t) => t.name)).toEqual(['u']);
  });
});

describe('administration', () => {
  it('lists groups with their state, filtered by state and type', async () => {
    const h = harness();
    await stableGroupOfTwo(h);
    h.coordinator.commitOffsets({
      groupId: 'simple',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      groupIdNotFoundKnown: true,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
    });
    const all = h.coordinator.listGroups([], []);
    expect(all.sort((x, y) => x.groupId.localeCompare(y.groupId))).toEqual([
      { groupId: 'g', protocolType: 'consumer', groupState: 'Stable', groupType: 'classic' },
      { groupId: 'simple', protocolType: '', groupState: 'Empty', groupType: 'classic' },
    ]);
    expect(h.coordinator.listGroups(['stable'], []).map((g) => g.groupId)).toEqual(['g']);
    expect(h.coordinator.listGroups([], ['consumer'])).toEqual([]);
    expect(h.coordinator.listGroups([], ['Classic'])).toHaveLength(2);
  });

  it('describes a stable group with members, hosts, metadata and assignments; an unknown one as Dead', async () => {
    const h = harness();
    const { leader, follower } = await stableGroupOfTwo(h);
    const d = h.coordinator.describeGroup('g');
    expect(d).toMatchObject({ errorCode: 0, groupId: 'g', groupState: 'Stable', protocolType: 'consumer', protocolData: 'range' });
    const byId = new Map(d.members.map((m) => [m.memberId, m]));
    expect(byId.get(leader)).toEqual({ memberId: leader, groupInstanceId: null, clientId: 'client', clientHost: '/127.0.0.1', memberMetadata: subscription(['t']), memberAssignment: A1 });
    expect(byId.get(follower)!.memberAssignment).toEqual(A2);
    expect(h.coordinator.describeGroup('nope')).toEqual({ errorCode: 0, groupId: 'nope', groupState: 'Dead', protocolType: '', protocolData: '', members: [] });
  });

  it('deletes only empty groups, with their offsets', async () => {
    const h = harness();
    const { leader, follower, generation } = await stableGroupOfTwo(h);
    h.coordinator.commitOffsets({
      groupId: 'g',
      generationId: generation,
      memberId: leader,
      groupInstanceId: null,
      retentionTimeMs: -1n,
      groupIdNotFoundKnown: true,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
    });
    expect(h.coordinator.deleteGroup('g')).toBe(ErrorCode.NON_EMPTY_GROUP);
    expect(h.coordinator.deleteGroup('nope')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    h.coordinator.leaveGroup('g', [
      { memberId: leader, groupInstanceId: null },
      { memberId: follower, groupInstanceId: null },
    ]);
    expect(h.coordinator.deleteGroup('g')).toBe(ErrorCode.NONE);
    expect(h.coordinator.groupState('g')).toBeUndefined();
    expect(h.coordinator.fetchOffsets('g', null).topics).toEqual([]);
    const again = h.restart();
    expect(again.coordinator.groupState('g')).toBeUndefined();
    expect(again.coordinator.fetchOffsets('g', null).topics).toEqual([]);
  });
});

describe('persistence', () => {
  it('rebuilds groups, members, assignments and offsets from __consumer_offsets', async () => {
    const h = harness();
    const { leader, follower, generation } = await stableGroupOfTwo(h);
    h.coordinator.commitOffsets({
      groupId: 'g',
      generationId: generation,
      memberId: leader,
      groupInstanceId: null,
      retentionTimeMs: -1n,
      groupIdNotFoundKnown: true,
      topics: [{ name: 't', partitions: [{ partitionIndex: 2, committedOffset: 77n, committedLeaderEpoch: 1, commitTimestamp: -1n, committedMetadata: 'x' }] }],
    });
    const r = h.restart();
    expect(r.coordinator.groupState('g')).toBe('Stable');
    const d = r.coordinator.describeGroup('g');
    expect(d.protocolData).toBe('range');
    expect(new Map(d.members.map((m) => [m.memberId, m.memberAssignment]))).toEqual(
      new Map([
        [leader, A1],
        [follower, A2],
      ]),
    );
    expect(r.coordinator.group('g')!.generationId).toBe(generation);
    expect(r.coordinator.fetchOffsets('g', [{ name: 't', partitionIndexes: [2] }]).topics[0]!.partitions[0]).toEqual({
      partitionIndex: 2,
      committedOffset: 77n,
      committedLeaderEpoch: 1,
      metadata: 'x',
      errorCode: 0,
    });
    // The members' sessions run again after the load: silent members leave.
    r.timer.advance(5000);
    expect(r.coordinator.heartbeat({ groupId: 'g', generationId: generation, memberId: leader, groupInstanceId: null })).toBe(ErrorCode.NONE);
    r.timer.advance(5000);
    expect(r.coordinator.groupState('g')).toBe('PreparingRebalance');
  });

  it('loads and unloads groups as leadership of their partition comes and goes', async () => {
    const h = harness();
    h.coordinator.commitOffsets({
      groupId: 'g',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      groupIdNotFoundKnown: true,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
    });
    h.metadata.set(4, 2);
    expect(h.coordinator.loadedPartitions).toEqual([]);
    expect(h.coordinator.fetchOffsets('g', null).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    h.metadata.set(4, 1);
    expect(h.coordinator.loadedPartitions).toEqual([0, 1, 2, 3]);
    expect(h.coordinator.fetchOffsets('g', null).topics[0]!.partitions[0]!.committedOffset).toBe(5n);
  });
});

function partitionOfG(h: Harness): number {
  return [...h.store.partitions.keys()][0]!;
}

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { FakePersister, flush } from '../cluster/group/share-test-support.js';
import { shareGroupHeartbeat } from './share-group-heartbeat.js';
import { shareGroupDescribe } from './share-group-describe.js';
import { describeShareGroupOffsets } from './describe-share-group-offsets.js';
import { alterShareGroupOffsets } from './alter-share-group-offsets.js';
import { deleteShareGroupOffsets } from './delete-share-group-offsets.js';
import { listGroups } from './list-groups.js';
import { describeGroups } from './describe-groups.js';
import { deleteGroups } from './delete-groups.js';
import { groupServices, type GroupServices } from './group-test-support.js';
import { callAt } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** Services with share groups, or without them (`null`: no persister). */
async function services(persister: FakePersister | null = new FakePersister()): Promise<GroupServices & { persister: FakePersister | null; t: string }> {
  const s = await groupServices({}, undefined, persister);
  open.push(s);
  return Object.assign(s, { persister, t: s.metadata.image().topics.get('t')!.topicId });
}

const join = (memberId: string, over: Record<string, unknown> = {}) => ({ groupId: 'g', memberId, memberEpoch: 0, rackId: null, subscribedTopicNames: ['t'], ...over });
const beat = (memberId: string, memberEpoch: number) => ({ groupId: 'g', memberId, memberEpoch, rackId: null, subscribedTopicNames: null });

describe('ShareGroupHeartbeat (v1)', () => {
  it('joins with a client-chosen member id, then gets the partitions once their share state is initialized', async () => {
    const s = await services();
    const first = await callAt(shareGroupHeartbeat, 1, join('member-1'), s, { clientId: 'share-client' });
    expect(first).toEqual({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, memberId: 'member-1', memberEpoch: 2, heartbeatIntervalMs: 5000, assignment: { topicPartitions: [] } });
    expect(s.persister!.calls.map((c) => [c.op, c.key.topicId, c.key.partition, c.stateEpoch, c.startOffset])).toEqual([0, 1, 2].map((p) => ['initialize', s.t, p, 2, -1n]));
    await flush();
    s.timer.advance(5000);
    const second = await callAt(shareGroupHeartbeat, 1, beat('member-1', 2), s);
    expect([second.memberEpoch, second.assignment]).toEqual([3, { topicPartitions: [{ topicId: s.t, partitions: [0, 1, 2] }] }]);
    const again = await callAt(shareGroupHeartbeat, 1, beat('member-1', 3), s);
    expect([again.errorCode, again.assignment]).toEqual([0, null]);
    const left = await callAt(shareGroupHeartbeat, 1, beat('member-1', -1), s);
    expect([left.errorCode, left.memberId, left.memberEpoch]).toEqual([0, 'member-1', -1]);
  });

  it('answers Kafka\'s errors: bad requests, unknown members, fenced epochs', async () => {
    const s = await services();
    expect(await callAt(shareGroupHeartbeat, 1, join(''), s)).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Invalid member id in the request.' });
    expect(await callAt(shareGroupHeartbeat, 1, join('m', { subscribedTopicNames: [] }), s)).toMatchObject({
      errorCode: ErrorCode.INVALID_REQUEST,
      errorMessage: 'SubscribedTopicNames must be set in first request.',
    });
    expect(await callAt(shareGroupHeartbeat, 1, beat('m', 4), s)).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, memberId: null });
    await callAt(shareGroupHeartbeat, 1, join('m'), s);
    expect((await callAt(shareGroupHeartbeat, 1, beat('x', 2), s)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await callAt(shareGroupHeartbeat, 1, beat('m', 9), s)).errorCode).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
  });

  it('tells members the heartbeat interval set by the group config (kafka-configs --entity-type groups)', async () => {
    const s = await services();
    await s.metadata.alterGroupConfigs('g', { 'share.heartbeat.interval.ms': '7000' });
    expect((await callAt(shareGroupHeartbeat, 1, join('m'), s)).heartbeatIntervalMs).toBe(7000);
    await s.metadata.alterGroupConfigs('g', {});
    expect((await callAt(shareGroupHeartbeat, 1, beat('m', 2), s)).heartbeatIntervalMs).toBe(5000);
  });

  it('answers every share API UNSUPPORTED_VERSION without a persister, as Kafka does with share groups off', async () => {
    const s = await services(null);
    expect((await callAt(shareGroupHeartbeat, 1, join('m'), s)).errorCode).toBe(ErrorCode.UNSUPPORTED_VERSION);
    expect((await callAt(shareGroupDescribe, 1, { groupIds: ['g'], includeAuthorizedOperations: false }, s)).groups.map((g) => g.errorCode)).toEqual([ErrorCode.UNSUPPORTED_VERSION]);
    expect((await callAt(describeShareGroupOffsets, 1, { groups: [{ groupId: 'g', topics: null }] }, s)).groups.map((g) => g.errorCode)).toEqual([ErrorCode.UNSUPPORTED_VERSION]);
    expect(await callAt(alterShareGroupOffsets, 0, { groupId: 'g', topics: [] }, s)).toMatchObject({ errorCode: ErrorCode.UNSUPPORTED_VERSION, errorMessage: 'The version of API is not supported.' });
    expect(await callAt(deleteShareGroupOffsets, 0, { groupId: 'g', topics: [] }, s)).toMatchObject({ errorCode: ErrorCode.UNSUPPORTED_VERSION, errorMessage: 'The version of API is not supported.' });
  });
});

describe('ShareGroupDescribe (v1), ListGroups, DescribeGroups, DeleteGroups on share groups', () => {
  it('describes, lists and deletes a share group as Kafka 4.4 answers for it', async () => {
    const s = await services();
    await callAt(shareGroupHeartbeat, 1, join('m', { rackId: 'r' }), s, { clientId: 'share-client' });
    await flush();
    s.timer.advance(5000);
    await callAt(shareGroupHeartbeat, 1, beat('m', 2), s, { clientId: 'share-client' });
    const described = await callAt(shareGroupDescribe, 1, { groupIds: ['g', 'other'], includeAuthorizedOperations: true }, s);
    expect(described.groups[0]).toEqual({
      errorCode: 0,
      errorMessage: null,
      groupId: 'g',
      groupState: 'Stable',
      groupEpoch: 3,
      assignmentEpoch: 3,
      assignorName: 'simple',
      members: [
        { memberId: 'm', rackId: 'r', memberEpoch: 3, clientId: 'share-client', clientHost: '/127.0.0.1', subscribedTopicNames: ['t'], assignment: { topicPartitions: [{ topicId: s.t, topicName: 't', partitions: [0, 1, 2] }] } },
      ],
      // READ, DELETE and DESCRIBE.
      authorizedOperations: (1 << 3) | (1 << 6) | (1 << 8),
    });
    expect(described.groups[1]).toMatchObject({ groupId: 'other', errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group other not found.', authorizedOperations: -2147483648 });
    const listed = await callAt(listGroups, 5, { statesFilter: [], typesFilter: ['share'] }, s);
    expect(listed.groups).toEqual([{ groupId: 'g', protocolType: 'share', groupState: 'Stable', groupType: 'share' }]);
    const classic = await callAt(describeGroups, 6, { groups: ['g'], includeAuthorizedOperations: false }, s);
    expect(classic.groups[0]).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group g is not a classic group.', groupState: 'Dead' });
    expect((await callAt(deleteGroups, 2, { groupsNames: ['g'] }, s)).results).toEqual([{ groupId: 'g', errorCode: ErrorCode.NON_EMPTY_GROUP, errorMessage: null }]);
    await callAt(shareGroupHeartbeat, 1, beat('m', -1), s);
    expect((await callAt(deleteGroups, 2, { groupsNames: ['g'] }, s)).results).toEqual([{ groupId: 'g', errorCode: 0, errorMessage: null }]);
    expect(s.persister!.calls.filter((c) => c.op === 'delete').map((c) => c.key.partition)).toEqual([0, 1, 2]);
    expect((await callAt(shareGroupDescribe, 1, { groupIds: ['g'], includeAuthorizedOperations: false }, s)).groups[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});

describe('DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets', () => {
  it('alters the start offsets of an empty group, describes them with the lag at v1, and deletes them', async () => {
    const s = await services();
    const altered = await callAt(alterShareGroupOffsets, 0, { groupId: 'g', topics: [{ topicName: 't', partitions: [{ partitionIndex: 0, startOffset: 0n }] }] }, s);
    expect(altered).toEqual({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, responses: [{ topicName: 't', topicId: s.t, partitions: [{ partitionIndex: 0, errorCode: 0, errorMessage: null }] }] });
    s.persister!.setSummary({ groupId: 'g', topicId: s.t, partition: 0 }, 0n, 0, 0);
    const v1 = await callAt(describeShareGroupOffsets, 1, { groups: [{ groupId: 'g', topics: null }] }, s);
    // Nothing was produced: the high watermark is 0, so is the lag.
    expect(v1.groups).toEqual([
      { groupId: 'g', errorCode: 0, errorMessage: null, topics: [{ topicName: 't', topicId: s.t, partitions: [{ partitionIndex: 0, startOffset: 0n, leaderEpoch: 0, lag: 0n, errorCode: 0, errorMessage: null }] }] },
    ]);
    const v0 = await callAt(describeShareGroupOffsets, 0, { groups: [{ groupId: 'g', topics: [{ topicName: 'nope', partitions: [1] }] }] }, s);
    expect(v0.groups[0]!.topics).toEqual([{ topicName: 'nope', topicId: ZERO_UUID, partitions: [{ partitionIndex: 1, startOffset: -1n, leaderEpoch: 0, lag: -1n, errorCode: 0, errorMessage: null }] }]);
    const deleted = await callAt(deleteShareGroupOffsets, 0, { groupId: 'g', topics: [{ topicName: 't' }] }, s);
    expect(deleted).toEqual({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, responses: [{ topicName: 't', topicId: s.t, errorCode: 0, errorMessage: null }] });
    // A group with members cannot have its offsets altered.
    await callAt(shareGroupHeartbeat, 1, join('m'), s);
    expect(await callAt(alterShareGroupOffsets, 0, { groupId: 'g', topics: [{ topicName: 't', partitions: [{ partitionIndex: 0, startOffset: 5n }] }] }, s)).toMatchObject({
      errorCode: ErrorCode.NON_EMPTY_GROUP,
      responses: [],
    });
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { deleteGroups } from './delete-groups.js';
import { leaveGroup } from './leave-group.js';
import { offsetCommit } from './offset-commit.js';
import { offsetFetch } from './offset-fetch.js';
import { groupServices, joinAlone, type GroupServices } from './group-test-support.js';
import { callAt } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('DeleteGroups', () => {
  it('deletes empty groups with their offsets, and refuses groups with members or unknown ones', async () => {
    const s = await groupServices();
    open.push(s);
    const { join } = await joinAlone(s, 5);
    await callAt(
      offsetCommit,
      8,
      {
        groupId: 'g',
        generationIdOrMemberEpoch: 1,
        memberId: join.memberId,
        groupInstanceId: null,
        retentionTimeMs: -1n,
        topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 9n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
      },
      s,
    );
    for (const v of [0, 1, 2]) {
      const r = await callAt(deleteGroups, v, { groupsNames: ['g', 'nope'] }, s);
      expect(r.results).toEqual([
        { groupId: 'g', errorCode: ErrorCode.NON_EMPTY_GROUP, errorMessage: null },
        { groupId: 'nope', errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: null },
      ]);
    }
    await callAt(leaveGroup, 1, { groupId: 'g', memberId: join.memberId, members: [] }, s);
    expect((await callAt(deleteGroups, 2, { groupsNames: ['g'] }, s)).results).toEqual([{ groupId: 'g', errorCode: 0, errorMessage: null }]);
    expect(s.groups.groupState('g')).toBeUndefined();
    const fetched = await callAt(offsetFetch, 2, { groupId: 'g', topics: null, groups: [], requireStable: false }, s);
    expect(fetched.topics).toEqual([]);
    // The deletion is in __consumer_offsets: it holds after a restart.
    open.splice(open.indexOf(s), 1);
    await s.close();
    const again = await groupServices({}, s.dataDir);
    open.push(again);
    expect(again.groups.groupState('g')).toBeUndefined();
    expect((await callAt(offsetFetch, 2, { groupId: 'g', topics: null, groups: [], requireStable: false }, again)).topics).toEqual([]);
  });
});

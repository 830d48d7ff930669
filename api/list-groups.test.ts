import { afterEach, describe, expect, it } from 'vitest';
import { ZERO_UUID } from '../wire/uuid.js';
import { listGroups } from './list-groups.js';
import { offsetCommit } from './offset-commit.js';
import { groupServices, joinAlone, type GroupServices } from './group-test-support.js';
import { callAt } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('ListGroups', () => {
  it('lists the groups with protocol type, state (v4+) and type (v5+), filtered from v4', async () => {
    const s = await groupServices();
    open.push(s);
    await joinAlone(s, 5, { groupId: 'live' });
    await callAt(
      offsetCommit,
      2,
      {
        groupId: 'simple',
        generationIdOrMemberEpoch: -1,
        memberId: '',
        groupInstanceId: null,
        retentionTimeMs: -1n,
        topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
      },
      s,
    );
    const sorted = <T extends { groupId: string }>(xs: T[]): T[] => [...xs].sort((a, b) => a.groupId.localeCompare(b.groupId));
    const v0 = await callAt(listGroups, 0, { statesFilter: [], typesFilter: [] }, s);
    expect(sorted(v0.groups)).toEqual([
      { groupId: 'live', protocolType: 'consumer', groupState: '', groupType: '' },
      { groupId: 'simple', protocolType: '', groupState: '', groupType: '' },
    ]);
    const v5 = await callAt(listGroups, 5, { statesFilter: [], typesFilter: [] }, s);
    expect(sorted(v5.groups)).toEqual([
      { groupId: 'live', protocolType: 'consumer', groupState: 'Stable', groupType: 'classic' },
      { groupId: 'simple', protocolType: '', groupState: 'Empty', groupType: 'classic' },
    ]);
    expect((await callAt(listGroups, 4, { statesFilter: ['Empty'], typesFilter: [] }, s)).groups.map((g) => g.groupId)).toEqual(['simple']);
    expect((await callAt(listGroups, 5, { statesFilter: [], typesFilter: ['consumer'] }, s)).groups).toEqual([]);
    // Filters a version does not carry are not applied.
    expect((await callAt(listGroups, 3, { statesFilter: ['Empty'], typesFilter: [] }, s)).groups).toHaveLength(2);
  });
});

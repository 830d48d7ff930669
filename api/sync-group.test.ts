import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { syncGroup } from './sync-group.js';
import { joinGroup } from './join-group.js';
import { groupServices, joinAlone, joinRequest, type GroupServices } from './group-test-support.js';
import { callAt } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(): Promise<GroupServices> {
  const s = await groupServices();
  open.push(s);
  return s;
}

const sync = (memberId: string, generationId: number, over: Partial<Parameters<typeof syncGroup.handle>[0]> = {}) => ({
  groupId: 'g',
  generationId,
  memberId,
  groupInstanceId: null,
  protocolType: 'consumer',
  protocolName: 'range',
  assignments: [],
  ...over,
});

describe('SyncGroup', () => {
  it('hands each member its part of the leader\'s assignment, at every version', async () => {
    const s = await services();
    for (let v = 0; v <= 5; v++) {
      const groupId = `g${v}`;
      const { join, sync: answer } = await joinAlone(s, Math.min(9, v + 4), { groupId }, Buffer.from(`assignment ${v}`));
      expect(answer).toMatchObject({ errorCode: 0, assignment: Buffer.from(`assignment ${v}`) });
      const again = await callAt(syncGroup, v, sync(join.memberId, join.generationId, { groupId }), s);
      expect(again.assignment).toEqual(Buffer.from(`assignment ${v}`));
      // protocol type and name are in the answer from v5.
      expect([again.protocolType, again.protocolName]).toEqual(v >= 5 ? ['consumer', 'range'] : [null, null]);
    }
  });

  it('parks a follower until the leader\'s assignment is stored', async () => {
    const s = await services();
    const a = await callAt(joinGroup, 5, joinRequest(), s);
    const b = await callAt(joinGroup, 5, joinRequest(), s);
    const ja = callAt(joinGroup, 5, joinRequest({ memberId: a.memberId }), s);
    const jb = callAt(joinGroup, 5, joinRequest({ memberId: b.memberId }), s);
    s.timer.advance(0);
    const [ra, rb] = await Promise.all([ja, jb]);
    const leader = ra.leader === ra.memberId ? ra : rb;
    const follower = leader === ra ? rb : ra;
    const followerSync = callAt(syncGroup, 3, sync(follower.memberId, follower.generationId), s);
    const appends = s.replicas.logFor('__consumer_offsets', 0);
    expect(appends).toBeDefined();
    const leaderSync = await callAt(
      syncGroup,
      3,
      sync(leader.memberId, leader.generationId, {
        assignments: [
          { memberId: leader.memberId, assignment: Buffer.from('L') },
          { memberId: follower.memberId, assignment: Buffer.from('F') },
        ],
      }),
      s,
    );
    expect(leaderSync.assignment).toEqual(Buffer.from('L'));
    expect((await followerSync).assignment).toEqual(Buffer.from('F'));
  });

  it('requires protocol type and name from v5, and fences unknown members and stale generations', async () => {
    const s = await services();
    const { join } = await joinAlone(s, 5);
    expect((await callAt(syncGroup, 5, sync(join.memberId, 1, { protocolType: null }), s)).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await callAt(syncGroup, 5, sync(join.memberId, 1, { protocolName: 'roundrobin' }), s)).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await callAt(syncGroup, 3, sync(join.memberId, 2), s)).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect((await callAt(syncGroup, 3, sync('nobody', 1), s)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await callAt(syncGroup, 3, sync(join.memberId, 1, { groupId: 'nope' }), s)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });
});

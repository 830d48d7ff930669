import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { heartbeat } from './heartbeat.js';
import { leaveGroup } from './leave-group.js';
import { groupServices, joinAlone, joinTogether, type GroupServices } from './group-test-support.js';
import { callAt } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('Heartbeat', () => {
  it('keeps a member alive at every version and tells it when to rejoin', async () => {
    const s = await groupServices();
    open.push(s);
    const { join } = await joinAlone(s, 5);
    const hb = (v: number, generationId: number, memberId = join.memberId, groupInstanceId: string | null = null) =>
      callAt(heartbeat, v, { groupId: 'g', generationId, memberId, groupInstanceId }, s);
    for (let v = 0; v <= 4; v++) {
      s.timer.advance(5000);
      expect(await hb(v, 1)).toEqual({ throttleTimeMs: 0, errorCode: 0 });
    }
    expect((await hb(3, 0)).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect((await hb(3, 1, 'nobody')).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await hb(3, 1, join.memberId, 'not-static')).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await callAt(heartbeat, 4, { groupId: '', generationId: 1, memberId: 'm', groupInstanceId: null }, s)).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
    // Its session ends 10 s after the last heartbeat.
    s.timer.advance(10_000);
    expect((await hb(3, 1)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(s.groups.groupState('g')).toBe('Empty');
  });

  it('answers REBALANCE_IN_PROGRESS while the group rebalances', async () => {
    const s = await groupServices();
    open.push(s);
    const [a, b] = await joinTogether(s, 5, [{}, {}]);
    expect(a!.generationId).toBe(1);
    expect((await callAt(heartbeat, 3, { groupId: 'g', generationId: 0, memberId: a!.memberId, groupInstanceId: null }, s)).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    await callAt(leaveGroup, 3, { groupId: 'g', memberId: '', members: [{ memberId: b!.memberId, groupInstanceId: null, reason: null }] }, s);
    expect(s.groups.groupState('g')).toBe('PreparingRebalance');
    expect((await callAt(heartbeat, 3, { groupId: 'g', generationId: 1, memberId: a!.memberId, groupInstanceId: null }, s)).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });
});

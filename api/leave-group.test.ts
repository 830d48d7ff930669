import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { leaveGroup } from './leave-group.js';
import { groupServices, joinAlone, joinTogether, type GroupServices } from './group-test-support.js';
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

describe('LeaveGroup', () => {
  it('takes one member before v3 and answers with its error', async () => {
    const s = await services();
    for (let v = 0; v <= 2; v++) {
      const groupId = `g${v}`;
      const { join } = await joinAlone(s, 5, { groupId });
      expect(await callAt(leaveGroup, v, { groupId, memberId: join.memberId, members: [] }, s)).toEqual({ throttleTimeMs: 0, errorCode: 0, members: [] });
      expect(s.groups.groupState(groupId)).toBe('Empty');
      expect((await callAt(leaveGroup, v, { groupId, memberId: join.memberId, members: [] }, s)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    }
  });

  it('takes several members from v3, each answered on its own, static ones by instance id alone', async () => {
    const s = await services();
    const [dynamic, stat] = await joinTogether(s, 5, [{}, { groupInstanceId: 'static-1' }]);
    for (const v of [3, 4, 5]) {
      const r = await callAt(
        leaveGroup,
        v,
        {
          groupId: 'g',
          memberId: '',
          members: [
            { memberId: 'nobody', groupInstanceId: null, reason: 'test' },
            { memberId: '', groupInstanceId: 'static-1', reason: null },
          ],
        },
        s,
      );
      if (v === 3) {
        expect(r).toEqual({
          throttleTimeMs: 0,
          errorCode: 0,
          members: [
            { memberId: 'nobody', groupInstanceId: null, errorCode: ErrorCode.UNKNOWN_MEMBER_ID },
            { memberId: '', groupInstanceId: 'static-1', errorCode: 0 },
          ],
        });
      }
    }
    expect(s.groups.group('g')!.members.has(stat!.memberId)).toBe(false);
    expect(s.groups.group('g')!.members.has(dynamic!.memberId)).toBe(true);
  });

  it('answers every member UNKNOWN_MEMBER_ID for a group it does not know', async () => {
    const s = await services();
    const r = await callAt(leaveGroup, 4, { groupId: 'nope', memberId: '', members: [{ memberId: 'm', groupInstanceId: null, reason: null }] }, s);
    expect(r).toEqual({ throttleTimeMs: 0, errorCode: 0, members: [{ memberId: 'm', groupInstanceId: null, errorCode: ErrorCode.UNKNOWN_MEMBER_ID }] });
  });
});

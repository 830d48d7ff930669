import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { joinGroup, javaClientHost } from './join-group.js';
import { groupServices, joinAlone, joinRequest, type GroupServices } from './group-test-support.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(...args: Parameters<typeof groupServices>): Promise<GroupServices> {
  const s = await groupServices(...args);
  open.push(s);
  return s;
}

describe('JoinGroup', () => {
  it('serves every version from 0 to 9, asking for a member id from v4', async () => {
    const s = await services();
    for (let v = 0; v <= 9; v++) {
      const groupId = `g${v}`;
      if (v >= 4) {
        const first = await callAt(joinGroup, v, joinRequest({ groupId: `${groupId}-first` }), s);
        expect(first).toMatchObject({ errorCode: ErrorCode.MEMBER_ID_REQUIRED, generationId: -1, leader: '' });
        expect(first.memberId).toMatch(/^test-[0-9a-f-]{36}$/);
      }
      const { join, sync } = await joinAlone(s, v, { groupId });
      expect(join).toMatchObject({ errorCode: 0, generationId: 1, protocolName: 'range', leader: join.memberId });
      // protocol_type is in the answer from v7.
      expect(join.protocolType).toBe(v >= 7 ? 'consumer' : null);
      expect(join.members.map((m) => m.memberId)).toEqual([join.memberId]);
      expect(sync).toMatchObject({ errorCode: 0, assignment: Buffer.from('a') });
      expect(s.groups.groupState(groupId)).toBe('Stable');
    }
  });

  it('uses the session timeout as the rebalance timeout at v0', async () => {
    const s = await services();
    await joinAlone(s, 0, { sessionTimeoutMs: 7000, rebalanceTimeoutMs: 99_999 });
    const member = [...s.groups.group('g')!.members.values()][0]!;
    expect(member.rebalanceTimeoutMs).toBe(7000);
  });

  it('records the client id and host as Kafka does', async () => {
    const s = await services();
    const { join } = await joinAlone(s, 5);
    const member = s.groups.group('g')!.members.get(join.memberId)!;
    expect(member.clientId).toBe('test');
    expect(member.clientHost).toBe('/127.0.0.1');
  });

  it('encodes errors at every version, with an empty protocol name before v7', async () => {
    const s = await services();
    for (let v = 0; v <= 9; v++) {
      const r = await callAt(joinGroup, v, joinRequest({ sessionTimeoutMs: 1 }), s);
      expect(r).toMatchObject({ errorCode: ErrorCode.INVALID_SESSION_TIMEOUT, protocolName: v >= 7 ? null : '' });
    }
    expect((await callAt(joinGroup, 5, joinRequest({ groupId: '' }), s)).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  it('answers NOT_COORDINATOR before __consumer_offsets exists', async () => {
    const s = testServices();
    open.push(s);
    expect((await callAt(joinGroup, 5, joinRequest(), s)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
  });

  it('gives a static member (v5) an id made from its instance id, and tells a replaced leader to skip the assignment at v9', async () => {
    const s = await services();
    const { join } = await joinAlone(s, 9, { groupInstanceId: 'instance-1' });
    expect(join.memberId).toMatch(/^instance-1-/);
    const again = await callAt(joinGroup, 9, joinRequest({ groupInstanceId: 'instance-1' }), s);
    expect(again).toMatchObject({ errorCode: 0, generationId: 1, skipAssignment: true, leader: again.memberId });
    expect(again.memberId).not.toBe(join.memberId);
    expect(again.members.map((m) => [m.memberId, m.groupInstanceId])).toEqual([[again.memberId, 'instance-1']]);
    expect(s.groups.groupState('g')).toBe('Stable');
  });
});

describe('javaClientHost', () => {
  it.each([
    ['127.0.0.1', '/127.0.0.1'],
    ['::ffff:10.0.0.7', '/10.0.0.7'],
    ['::1', '/0:0:0:0:0:0:0:1'],
    ['fe80::1:abcd', '/fe80:0:0:0:0:0:1:abcd'],
    ['2001:db8:0:0:0:0:0:ff', '/2001:db8:0:0:0:0:0:ff'],
    ['', ''],
  ])('%s -> %s', (address, expected) => {
    expect(javaClientHost(address)).toBe(expected);
  });
});

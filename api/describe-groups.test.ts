import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { describeGroups, GROUP_OPERATIONS } from './describe-groups.js';
import { groupServices, joinAlone, subscription, type GroupServices } from './group-test-support.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('DescribeGroups', () => {
  it('describes members, client ids and hosts, metadata and assignments at every version', async () => {
    const s: GroupServices = await groupServices();
    open.push(s);
    const { join } = await joinAlone(s, 5, { groupInstanceId: 'i-1' }, Buffer.from('assigned'));
    expect(GROUP_OPERATIONS).toBe(328);
    for (let v = 0; v <= 5; v++) {
      const r = await callAt(describeGroups, v, { groups: ['g', 'unknown'], includeAuthorizedOperations: true }, s);
      expect(r.groups[0]).toEqual({
        errorCode: 0,
        errorMessage: null,
        groupId: 'g',
        groupState: 'Stable',
        protocolType: 'consumer',
        protocolData: 'range',
        members: [
          {
            memberId: join.memberId,
            groupInstanceId: v >= 4 ? 'i-1' : null,
            clientId: 'test',
            clientHost: '/127.0.0.1',
            memberMetadata: subscription(['t']),
            memberAssignment: Buffer.from('assigned'),
          },
        ],
        authorizedOperations: v >= 3 ? 328 : -2147483648,
      });
      expect(r.groups[1]).toMatchObject({ errorCode: 0, groupId: 'unknown', groupState: 'Dead', protocolType: '', protocolData: '', members: [] });
    }
    expect((await callAt(describeGroups, 3, { groups: ['g'], includeAuthorizedOperations: false }, s)).groups[0]!.authorizedOperations).toBe(-2147483648);
  });

  it('answers NOT_COORDINATOR for groups of partitions this broker does not lead', async () => {
    const s = testServices();
    open.push(s);
    const r = await callAt(describeGroups, 5, { groups: ['g'], includeAuthorizedOperations: false }, s);
    expect(r.groups).toEqual([{ errorCode: ErrorCode.NOT_COORDINATOR, errorMessage: null, groupId: 'g', groupState: '', protocolType: '', protocolData: '', members: [], authorizedOperations: -2147483648 }]);
  });
});

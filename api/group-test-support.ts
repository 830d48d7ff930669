/**
 * What the group API tests share: services with __consumer_offsets made and
 * a manual group timer, and the requests a consumer sends to join a group
 * and get its assignment.
 */
import { subscription } from '../cluster/group/group-test-support.js';
import { ManualGroupTimer } from '../cluster/coordinator/timer.js';
import type { Persister } from '../cluster/share/persister.js';
import { ErrorCode } from '../wire/errors.js';
import type { JoinGroupRequest } from '../wire/messages/join-group-request.js';
import type { JoinGroupResponse } from '../wire/messages/join-group-response.js';
import type { SyncGroupResponse } from '../wire/messages/sync-group-response.js';
import type { TestSettings } from './test-services.js';
import { findCoordinator } from './find-coordinator.js';
import { joinGroup } from './join-group.js';
import { syncGroup } from './sync-group.js';
import { callAt, ctxFor, testServices, type TestServices } from './test-services.js';

export { subscription };

export interface GroupServices extends TestServices {
  readonly timer: ManualGroupTimer;
}

/** Services with a 3-partition __consumer_offsets already made and a topic `t` of 3 partitions; share groups with `persister`. */
export async function groupServices(settings: TestSettings = {}, dir?: string, persister?: Persister | null): Promise<GroupServices> {
  const timer = new ManualGroupTimer();
  const s = testServices(
    { ...settings, config: { 'offsets.topic.num.partitions': 3, 'offsets.topic.replication.factor': 1, 'group.initial.rebalance.delay.ms': 0, ...settings.config } },
    dir,
    { groupTimer: timer, ...(persister !== undefined ? { persister } : {}) },
  );
  await findCoordinator.handle({ key: 'g', keyType: 0, coordinatorKeys: [] }, ctxFor(s, 1));
  if (!s.metadata.image().topics.has('t')) await s.metadata.createTopic({ name: 't', numPartitions: 3, replicationFactor: 1 });
  return Object.assign(s, { timer });
}

export function joinRequest(over: Partial<JoinGroupRequest> = {}): JoinGroupRequest {
  return {
    groupId: 'g',
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 30_000,
    memberId: '',
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: subscription(['t']) }],
    reason: null,
    ...over,
  };
}

/**
 * One consumer joining at `version` (through MEMBER_ID_REQUIRED from v4) as
 * the group's only member and syncing with `assignment`: its answers.
 */
export async function joinAlone(
  s: GroupServices,
  version: number,
  over: Partial<JoinGroupRequest> = {},
  assignment = Buffer.from('a'),
): Promise<{ join: JoinGroupResponse; sync: SyncGroupResponse }> {
  let req = joinRequest(over);
  if (version >= 4 && req.memberId === '' && req.groupInstanceId === null) {
    const first = await callAt(joinGroup, version, req, s);
    if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) throw new Error(`expected MEMBER_ID_REQUIRED, got ${first.errorCode}`);
    req = { ...req, memberId: first.memberId };
  }
  const pending = callAt(joinGroup, version, req, s);
  await Promise.resolve();
  s.timer.advance(0);
  const join = await pending;
  const syncVersion = Math.min(version, 5);
  const sync = await callAt(
    syncGroup,
    syncVersion,
    {
      groupId: req.groupId,
      generationId: join.generationId,
      memberId: join.memberId,
      groupInstanceId: req.groupInstanceId,
      protocolType: 'consumer',
      protocolName: join.protocolName,
      assignments: join.leader === join.memberId ? [{ memberId: join.memberId, assignment }] : [],
    },
    s,
  );
  return { join, sync };
}

/**
 * Several consumers joining one new group together at `version` (v4+) and
 * syncing; the leader gives member i the assignment "i". Their join answers, in order.
 */
export async function joinTogether(s: GroupServices, version: number, overs: Partial<JoinGroupRequest>[]): Promise<JoinGroupResponse[]> {
  const reqs: JoinGroupRequest[] = [];
  for (const over of overs) {
    let req = joinRequest(over);
    if (req.groupInstanceId === null) {
      const first = await callAt(joinGroup, version, req, s);
      req = { ...req, memberId: first.memberId };
    }
    reqs.push(req);
  }
  const pending = reqs.map((req) => callAt(joinGroup, version, req, s));
  s.timer.advance(0);
  const joins = await Promise.all(pending);
  const leader = joins.find((j) => j.leader === j.memberId)!;
  const syncs = joins.map((j, i) =>
    callAt(
      syncGroup,
      Math.min(version, 5),
      {
        groupId: reqs[i]!.groupId,
        generationId: j.generationId,
        memberId: j.memberId,
        groupInstanceId: reqs[i]!.groupInstanceId,
        protocolType: 'consumer',
        protocolName: j.protocolName,
        assignments: j === leader ? joins.map((x, k) => ({ memberId: x.memberId, assignment: Buffer.from(String(k)) })) : [],
      },
      s,
    ),
  );
  await Promise.all(syncs);
  return joins;
}

/**
 * The share groups (KIP-932) of the partitions of __consumer_offsets this
 * broker leads, as Kafka 4.4's GroupMetadataManager and
 * GroupCoordinatorService serve them: ShareGroupHeartbeat, ShareGroupDescribe,
 * the share side of ListGroups, DescribeGroups and DeleteGroups, and the
 * share-group offset APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets,
 * DeleteShareGroupOffsets), which read and change the share-partition state
 * through the Persister (cluster/share/persister.ts).
 *
 * The group coordinator (group-coordinator.ts) owns the partitions: it says
 * which partition coordinates a group id, appends records, and hands every
 * share record it loads to `replay`. A change is computed as records,
 * appended, and applied by replaying them, so that what a restart loads is
 * what was served.
 *
 * Share-partition state initialization, as Kafka does it: when a heartbeat
 * finds subscribed partitions whose state is neither initialized nor being
 * initialized (or whose initialization is older than
 * group.share.initialize.retry.interval.ms), it records them as
 * initializing and, after its answer, asks the persister to initialize them
 * at the group epoch, from offset -1 (the share partition then applies
 * share.auto.offset.reset) for a topic new to the group, or 0 for new
 * partitions of a topic it has. Once every one succeeded they are recorded
 * as initialized (on any failure they are taken off the initializing list and
 * a later heartbeat asks again); the next heartbeat then sees initialized
 * partitions the target does not cover, raises the group epoch and assigns
 * them. So a new group's members get their partitions at their second
 * heartbeat.
 */
import { DEFAULT_CONFIG } from '../metadata/broker-config-registry.js';
import { ErrorCode } from '../../wire/errors.js';
import { ZERO_UUID } from '../../wire/uuid.js';
import type { MetadataImage, MetadataStore } from '../metadata/metadata-image.js';
import type { GroupTimer } from '../coordinator/timer.js';
import type { Persister, SharePartitionKey } from '../share/persister.js';
import type { TargetAssignment } from './consumer-group.js';
import type { CoordinatorRecord, ShareGroupRecord } from './group-records.js';
import { SIMPLE_ASSIGNOR, simpleAssign } from './share-assignor.js';
import {
  EMPTY_STATE_PARTITIONS,
  ShareGroup,
  combineInitTopics,
  newShareMember,
  replayShareRecord,
  sameAssignment,
  sameMemberMetadata,
  shareCurrentAssignmentRecord,
  shareEpochRecord,
  shareGroupTombstones,
  shareMemberRecord,
  shareMemberTombstones,
  shareTargetMemberRecord,
  shareTargetMetadataRecord,
  statePartitionsRecord,
  type InitTopic,
  type ShareMember,
  type StatePartitions,
} from './share-group.js';

/** The broker-level settings of share groups, by their Kafka config names. */
export interface ShareGroupsConfig {
  /** group.share.session.timeout.ms */
  readonly shareSessionTimeoutMs: number;
  /** group.share.heartbeat.interval.ms */
  readonly shareHeartbeatIntervalMs: number;
  /** group.share.max.size */
  readonly shareMaxSize: number;
  /** group.share.assignment.interval.ms */
  readonly shareAssignmentIntervalMs: number;
  /** group.share.initialize.retry.interval.ms (never below offsets.commit.timeout.ms) */
  readonly shareInitializeRetryIntervalMs: number;
}

/** Kafka 4.4's defaults. */
export const DEFAULT_SHARE_GROUPS_CONFIG: ShareGroupsConfig = {
  shareSessionTimeoutMs: DEFAULT_CONFIG.int('group.share.session.timeout.ms'),
  shareHeartbeatIntervalMs: DEFAULT_CONFIG.int('group.share.heartbeat.interval.ms'),
  shareMaxSize: DEFAULT_CONFIG.int('group.share.max.size'),
  shareAssignmentIntervalMs: DEFAULT_CONFIG.int('group.share.assignment.interval.ms'),
  shareInitializeRetryIntervalMs: 30000,
};

/** The settings one group runs with: the broker's, unless the group's own configs override them. */
export interface ShareGroupSettings {
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly assignmentIntervalMs: number;
}

/** What the group coordinator gives the share groups. */
export interface ShareGroupsHost {
  /** The partition of __consumer_offsets coordinating `groupId` on this broker, or the error to answer. */
  partitionOf(groupId: string): { partition: number } | { errorCode: number };
  /** Whether the id names a classic or consumer group (a group id names one group of one type). */
  otherGroupType(groupId: string): 'classic' | 'consumer' | 'streams' | null;
  /** Appends records to the partition as one batch: NONE, or the error to answer. */
  append(partition: number, records: readonly CoordinatorRecord[]): number;
  /** offsets.commit.timeout.ms, the floor of the initialize retry interval. */
  readonly offsetCommitTimeoutMs: number;
}

export interface ShareGroupsLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ShareGroupHeartbeatParams {
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly rackId: string | null;
  readonly subscribedTopicNames: readonly string[] | null;
  readonly clientId: string;
  readonly clientHost: string;
}

export interface ShareGroupHeartbeatResult {
  errorCode: number;
  errorMessage: string | null;
  memberId: string | null;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  /** The partitions the member is assigned now, when it has to be told; null for no change. */
  assignment: { topicId: string; partitions: number[] }[] | null;
}

export interface DescribedShareGroup {
  errorCode: number;
  errorMessage: string | null;
  groupId: string;
  groupState: string;
  groupEpoch: number;
  assignmentEpoch: number;
  assignorName: string;
  members: {
    memberId: string;
    rackId: string | null;
    memberEpoch: number;
    clientId: string;
    clientHost: string;
    subscribedTopicNames: string[];
    assignment: { topicId: string; topicName: string; partitions: number[] }[];
  }[];
}

export interface ShareOffsetPartition {
  partitionIndex: number;
  startOffset: bigint;
  leaderEpoch: number;
  lag: bigint;
  errorCode: number;
  errorMessage: string | null;
}

export interface DescribedShareGroupOffsets {
  groupId: string;
  errorCode: number;
  errorMessage: string | null;
  topics: { topicName: string; topicId: string; partitions: ShareOffsetPartition[] }[];
}

export interface AlteredShareGroupOffsets {
  errorCode: number;
  errorMessage: string | null;
  topics: { topicName: string; topicId: string; partitions: { partitionIndex: number; errorCode: number; errorMessage: string | null }[] }[];
}

export interface DeletedShareGroupOffsets {
  errorCode: number;
  errorMessage: string | null;
  topics: { topicName: string; topicId: string; errorCode: number; errorMessage: string | null }[];
}

/** The latest offset (high watermark) of a partition, for the lag; an error when it cannot be had. */
export type LatestOffset = (topic: string, partition: number) => Promise<{ errorCode: number; offset: bigint }>;

const LEAVE_EPOCH = -1;
/** KafkaApis accepts member ids of 1 to 36 characters (a UUID's string). */
const MAX_MEMBER_ID_LENGTH = 36;

const UNKNOWN_TOPIC_MESSAGE = 'This server does not host this topic-partition.';
const NON_EMPTY_GROUP_MESSAGE = 'The group is not empty.';

const sessionKey = (groupId: string, memberId: string): string => `share-session\u0000${groupId}\u0000${memberId}`;

export function heartbeatFailure(errorCode: number, errorMessage: string | null): ShareGroupHeartbeatResult {
  return { errorCode, errorMessage, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null };
}

export function undescribedShareGroup(groupId: string, errorCode: number, errorMessage: string | null): DescribedShareGroup {
  return { errorCode, errorMessage, groupId, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] };
}

/** A hash of the subscribed topics as they exist (id, name, partition count; FNV-1a 64): a change raises the group epoch. */
function topicsHash(image: MetadataImage, names: Iterable<string>): bigint {
  const present = [...new Set(names)].filter((n) => image.topics.has(n)).sort();
  if (present.length === 0) return 0n;
  let h = 0xcbf29ce484222325n;
  const mask = (1n << 64n) - 1n;
  for (const name of present) {
    const t = image.topics.get(name)!;
    for (const ch of Buffer.from(`${t.topicId}\u0000${name}\u0000${t.partitions.length};`)) {
      h ^= BigInt(ch);
      h = (h * 0x100000001b3n) & mask;
    }
  }
  return BigInt.asIntN(64, h);
}

function topicIdsOf(image: MetadataImage, names: Iterable<string>): string[] {
  const ids: string[] = [];
  for (const n of names) {
    const t = image.topics.get(n);
    if (t) ids.push(t.topicId);
  }
  return ids.sort();
}

function filterTopics(a: TargetAssignment, topicIds: ReadonlySet<string>): TargetAssignment {
  return new Map([...a].filter(([t]) => topicIds.has(t)).map(([t, ps]) => [t, new Set(ps)]));
}

function listAssignment(a: TargetAssignment): { topicId: string; partitions: number[] }[] {
  return [...a].map(([topicId, ps]) => ({ topicId, partitions: [...ps].sort((x, y) => x - y) }));
}

export class ShareGroups {
  /** The share groups of each loaded partition. */
  private readonly partitions = new Map<number, Map<string, ShareGroup>>();

  constructor(
    private readonly host: ShareGroupsHost,
    private readonly metadata: MetadataStore,
    private readonly timer: GroupTimer,
    private readonly log: ShareGroupsLogger,
    readonly config: ShareGroupsConfig,
    /** Absent: share groups are not available (the APIs answer as Kafka does with share groups off). */
    readonly persister: Persister | undefined,
    /** A group's own configs (share.session.timeout.ms, ...), when group configs exist. */
    private readonly groupConfigs: (groupId: string) => Partial<ShareGroupSettings> = () => ({}),
  ) {}

  /** Whether share groups are served: KafkaApis answers UNSUPPORTED_VERSION otherwise. */
  get enabled(): boolean {
    return this.persister !== undefined;
  }

  /** The settings `groupId` runs with. */
  settings(groupId: string): ShareGroupSettings {
    const own = this.groupConfigs(groupId);
    return {
      sessionTimeoutMs: own.sessionTimeoutMs ?? this.config.shareSessionTimeoutMs,
      heartbeatIntervalMs: own.heartbeatIntervalMs ?? this.config.shareHeartbeatIntervalMs,
      assignmentIntervalMs: own.assignmentIntervalMs ?? this.config.shareAssignmentIntervalMs,
    };
  }

  /** A share group this broker coordinates, for tests and tools. */
  group(groupId: string): ShareGroup | undefined {
    const at = this.host.partitionOf(groupId);
    return 'partition' in at ? this.partitions.get(at.partition)?.get(groupId) : undefined;
  }

  /** Whether `groupId` is a share group this broker coordinates. */
  has(groupId: string): boolean {
    return this.group(groupId) !== undefined;
  }

  /** Whether `groupId` is a share group of `partition` (also while the partition is loading). */
  hasIn(partition: number, groupId: string): boolean {
    return this.partitions.get(partition)?.has(groupId) === true;
  }

  // ---- loading ---------------------------------------------------------------------------

  /** Starts loading a partition: its share groups start from nothing. */
  beginLoad(partition: number): void {
    this.unload(partition);
    this.partitions.set(partition, new Map());
  }

  /** One record read back from the partition, in offset order. */
  replay(partition: number, r: ShareGroupRecord): void {
    let groups = this.partitions.get(partition);
    if (!groups) this.partitions.set(partition, (groups = new Map()));
    replayShareRecord(groups, r, this.timer.now());
  }

  /** The partition is loaded: its members get a fresh session. */
  finishLoad(partition: number): number {
    const groups = this.partitions.get(partition);
    if (!groups) return 0;
    for (const g of groups.values()) for (const id of g.members.keys()) this.scheduleSession(partition, g.groupId, id);
    return groups.size;
  }

  unload(partition: number): void {
    const groups = this.partitions.get(partition);
    if (!groups) return;
    this.partitions.delete(partition);
    for (const g of groups.values()) for (const id of g.members.keys()) this.timer.cancel(sessionKey(g.groupId, id));
  }

  /** Drops a group of another type's id replaced by records read back later (a group id names one group). */
  forget(partition: number, groupId: string): void {
    const g = this.partitions.get(partition)?.get(groupId);
    if (!g) return;
    for (const id of g.members.keys()) this.timer.cancel(sessionKey(groupId, id));
    this.partitions.get(partition)!.delete(groupId);
  }

  /**
   * Topics deleted from the cluster leave the share-partition state records
   * of every group that has them (Kafka's maybeCleanupShareGroupState): a
   * topic created again under the name is a new topic, initialized anew.
   */
  onTopicsDeleted(topicIds: ReadonlySet<string>): void {
    const without = <V>(m: ReadonlyMap<string, V>) => new Map([...m].filter(([id]) => !topicIds.has(id)));
    for (const [partition, groups] of this.partitions) {
      const records: ShareGroupRecord[] = [];
      for (const g of groups.values()) {
        const s = g.statePartitions;
        if (!s || ![...s.initializing.keys(), ...s.initialized.keys(), ...s.deleting.keys()].some((id) => topicIds.has(id))) continue;
        records.push(statePartitionsRecord(g.groupId, { initializing: without(s.initializing), initialized: without(s.initialized), deleting: without(s.deleting) }));
      }
      if (records.length === 0) continue;
      const error = this.host.append(partition, records);
      if (error !== ErrorCode.NONE) {
        this.log.warn({ partition, error }, 'cannot record the share-partition state of deleted topics as gone');
        continue;
      }
      const now = this.timer.now();
      for (const r of records) replayShareRecord(groups, r, now);
    }
  }

  // ---- ShareGroupHeartbeat ---------------------------------------------------------------

  /** Kafka's checks of the request (KafkaApis, then GroupCoordinatorService), with its messages. */
  private heartbeatRequestProblem(p: ShareGroupHeartbeatParams): ShareGroupHeartbeatResult | null {
    const invalid = (message: string) => heartbeatFailure(ErrorCode.INVALID_REQUEST, message);
    if (p.memberId.length === 0 || p.memberId.length > MAX_MEMBER_ID_LENGTH) return invalid('Invalid member id in the request.');
    if (p.memberId.trim() === '') return invalid("MemberId can't be empty.");
    if (p.groupId.trim() === '') return invalid("GroupId can't be empty.");
    if (p.rackId !== null && p.rackId.trim() === '') return invalid("RackId can't be empty.");
    if (p.memberEpoch === 0) {
      if (p.subscribedTopicNames === null || p.subscribedTopicNames.length === 0) return invalid('SubscribedTopicNames must be set in first request.');
    } else if (p.memberEpoch < LEAVE_EPOCH) {
      return invalid('MemberEpoch is invalid.');
    }
    return null;
  }

  private groupsOf(groupId: string): { partition: number; groups: Map<string, ShareGroup> } | { errorCode: number } {
    const at = this.host.partitionOf(groupId);
    if ('errorCode' in at) return at;
    let groups = this.partitions.get(at.partition);
    if (!groups) this.partitions.set(at.partition, (groups = new Map()));
    return { partition: at.partition, groups };
  }

  /** The share group of `groupId`, or why there is none (Kafka's GroupIdNotFoundException messages). */
  private existing(groups: Map<string, ShareGroup>, groupId: string): ShareGroup | string {
    if (this.host.otherGroupType(groupId) !== null) return `Group ${groupId} is not a share group.`;
    return groups.get(groupId) ?? `Group ${groupId} not found.`;
  }

  /**
   * ShareGroupHeartbeat: joins (epoch 0, with the subscription), heartbeats
   * (the member's epoch; the subscription only when it changed) or leaves
   * (-1). Every change is written to the group's partition as one batch
   * before it takes effect. The answer carries the member's epoch, the
   * heartbeat interval and, on a join, with a subscription, or when it
   * changed, the partitions assigned to the member.
   *
   * Example: a member joining a new group with topic t (3 partitions) ->
   * epoch 2 and no partitions (t's share state is being initialized); once
   * initialized, its next heartbeat -> epoch 3 with t-0..2; a second member
   * joining -> epoch 4 with its part, and the first gets the rest at its next
   * heartbeat.
   */
  heartbeat(p: ShareGroupHeartbeatParams): ShareGroupHeartbeatResult {
    if (!this.enabled) return heartbeatFailure(ErrorCode.UNSUPPORTED_VERSION, null);
    const problem = this.heartbeatRequestProblem(p);
    if (problem) return problem;
    const at = this.groupsOf(p.groupId);
    if ('errorCode' in at) return heartbeatFailure(at.errorCode, null);
    if (p.memberEpoch === LEAVE_EPOCH) return this.leave(at.partition, at.groups, p);
    const { partition, groups } = at;
    const now = this.timer.now();
    if (this.host.otherGroupType(p.groupId) !== null) return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${p.groupId} is not a share group.`);
    let group = groups.get(p.groupId);
    if (!group) {
      if (p.memberEpoch !== 0) return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, `Share group ${p.groupId} not found.`);
      group = new ShareGroup(p.groupId);
    }
    if (group.members.size >= this.config.shareMaxSize && !group.members.has(p.memberId)) {
      return heartbeatFailure(ErrorCode.GROUP_MAX_SIZE_REACHED, `The share group has reached its maximum capacity of ${this.config.shareMaxSize} members.`);
    }
    let member = group.members.get(p.memberId);
    if (!member) {
      if (p.memberEpoch !== 0) return heartbeatFailure(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${p.memberId} is not a member of group ${p.groupId}.`);
      member = newShareMember(p.memberId);
    }
    const fenced = epochFencing(member, p.memberEpoch);
    if (fenced) return fenced;

    const settings = this.settings(p.groupId);
    const image = this.metadata.image();
    const updated: ShareMember = {
      ...member,
      rackId: p.rackId ?? member.rackId,
      subscribedTopicNames: p.subscribedTopicNames === null ? member.subscribedTopicNames : [...new Set(p.subscribedTopicNames)].sort(),
      clientId: p.clientId,
      clientHost: p.clientHost,
    };
    const isNew = !group.members.has(p.memberId);
    const records: ShareGroupRecord[] = [];
    let bump = false;
    if (isNew || !sameMemberMetadata(member, updated)) {
      records.push(shareMemberRecord(p.groupId, updated));
      if (isNew || member.subscribedTopicNames.join('\u0000') !== updated.subscribedTopicNames.join('\u0000')) bump = true;
    }
    if (group.assignmentEpoch >= group.groupEpoch) bump ||= initializedAssignmentPending(image, group);
    const members = new Map(group.members);
    members.set(p.memberId, updated);
    const subscribed = new Set<string>();
    for (const m of members.values()) for (const t of m.subscribedTopicNames) subscribed.add(t);
    const hash = topicsHash(image, subscribed);
    if (hash !== group.metadataHash) bump = true;
    let groupEpoch = group.groupEpoch;
    if (bump) {
      groupEpoch++;
      records.push(shareEpochRecord(p.groupId, groupEpoch, hash));
    }

    // The target assignment, computed again when the group epoch moved past it (no more often than the interval allows).
    let assignmentEpoch = group.assignmentEpoch;
    let memberTarget: TargetAssignment = group.target.get(p.memberId) ?? new Map();
    const interval = settings.assignmentIntervalMs;
    if (assignmentEpoch < groupEpoch && (group.assignmentTimestamp === 0 || interval === 0 || now >= group.assignmentTimestamp + interval)) {
      const initialized = group.statePartitions?.initialized ?? new Map<string, InitTopic>();
      const computed = simpleAssign(
        [...members.values()]
          .sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
          .map((m) => ({ memberId: m.memberId, topics: topicIdsOf(image, m.subscribedTopicNames), previous: group!.target.get(m.memberId) ?? new Map() })),
        (topicId) => image.topicsById.get(topicId)?.partitions.length ?? 0,
        (topicId, partition) => initialized.get(topicId)?.partitions.has(partition) === true,
      );
      for (const [id, t] of computed) {
        const before = group.target.get(id);
        if (!before || !sameAssignment(before, t)) records.push(shareTargetMemberRecord(p.groupId, id, t));
      }
      assignmentEpoch = groupEpoch;
      records.push(shareTargetMetadataRecord(p.groupId, assignmentEpoch, now));
      memberTarget = computed.get(p.memberId) ?? new Map();
    }

    // The member moves to its target at once: share groups revoke nothing.
    let reconciled = updated;
    if (bump || updated.memberEpoch !== assignmentEpoch) {
      const assigned = filterTopics(memberTarget, new Set(topicIdsOf(image, updated.subscribedTopicNames)));
      if (updated.memberEpoch !== assignmentEpoch) {
        reconciled = { ...updated, state: 0, assigned, previousMemberEpoch: updated.memberEpoch, memberEpoch: assignmentEpoch };
      } else reconciled = { ...updated, assigned };
    }
    if (reconciled.memberEpoch !== member.memberEpoch || reconciled.previousMemberEpoch !== member.previousMemberEpoch || reconciled.state !== member.state || !sameAssignment(reconciled.assigned, member.assigned) || isNew) {
      records.push(shareCurrentAssignmentRecord(p.groupId, reconciled));
    }

    // Subscribed partitions without share state yet are recorded as initializing, and initialized after the answer.
    const toInitialize = this.partitionsToInitialize(image, group, subscribed, now);
    let initialize: { topics: Map<string, InitTopic>; known: Set<string> } | null = null;
    if (toInitialize.size > 0) {
      const current = group.statePartitions ?? EMPTY_STATE_PARTITIONS;
      const known = new Set([...current.initialized.keys(), ...current.initializing.keys()]);
      const deleting = new Map(current.deleting);
      for (const id of toInitialize.keys()) deleting.delete(id);
      records.push(statePartitionsRecord(p.groupId, { initializing: combineInitTopics(current.initializing, toInitialize), initialized: current.initialized, deleting }));
      initialize = { topics: toInitialize, known };
    }

    if (records.length > 0) {
      const error = this.host.append(partition, records);
      if (error !== ErrorCode.NONE) return heartbeatFailure(error, null);
      for (const r of records) replayShareRecord(groups, r, now);
    }
    this.scheduleSession(partition, p.groupId, p.memberId);
    if (isNew) this.log.info({ group: p.groupId, member: p.memberId, epoch: reconciled.memberEpoch }, 'share group member joined');
    if (initialize) void this.initializeState(partition, p.groupId, groupEpoch, initialize.topics, initialize.known);
    const sendAssignment = p.memberEpoch === 0 || p.subscribedTopicNames !== null || !sameAssignment(member.assigned, reconciled.assigned);
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId: p.memberId,
      memberEpoch: reconciled.memberEpoch,
      heartbeatIntervalMs: settings.heartbeatIntervalMs,
      assignment: sendAssignment ? listAssignment(reconciled.assigned) : null,
    };
  }

  /**
   * The subscribed partitions whose share state the group neither has nor
   * asked for within the retry interval, by topic id (Kafka's
   * subscribedTopicsChangeMap).
   */
  private partitionsToInitialize(image: MetadataImage, group: ShareGroup, subscribed: ReadonlySet<string>, now: number): Map<string, InitTopic> {
    const out = new Map<string, InitTopic>();
    if (subscribed.size === 0) return out;
    const retry = Math.max(this.config.shareInitializeRetryIntervalMs, this.host.offsetCommitTimeoutMs);
    const current = group.statePartitions ?? EMPTY_STATE_PARTITIONS;
    const recent = new Map([...current.initializing].filter(([, v]) => now - v.timestamp < retry));
    const have = combineInitTopics(current.initialized, recent);
    for (const name of [...subscribed].sort()) {
      const t = image.topics.get(name);
      if (!t) continue;
      const already = have.get(t.topicId)?.partitions ?? new Set<number>();
      const missing = t.partitions.map((p) => p.partition).filter((p) => !already.has(p)).sort((a, b) => a - b);
      if (missing.length > 0) out.set(t.topicId, { name, partitions: new Set(missing), timestamp: now });
    }
    return out;
  }

  /**
   * Asks the persister to initialize `topics` at `stateEpoch` (start offset
   * -1 for a topic new to the group, 0 for new partitions of a known one),
   * then records them as initialized, or, when any failed, takes them off
   * the initializing list.
   */
  private async initializeState(partition: number, groupId: string, stateEpoch: number, topics: ReadonlyMap<string, InitTopic>, known: ReadonlySet<string>): Promise<void> {
    const persister = this.persister!;
    const calls: Promise<number>[] = [];
    for (const [topicId, t] of topics) {
      const startOffset = known.has(topicId) ? 0n : -1n;
      for (const p of t.partitions) {
        const key: SharePartitionKey = { groupId, topicId, partition: p };
        calls.push(persister.initialize(key, stateEpoch, startOffset).then((r) => r.errorCode, () => ErrorCode.UNKNOWN_SERVER_ERROR));
      }
    }
    const codes = await Promise.all(calls);
    const failed = codes.find((c) => c !== ErrorCode.NONE);
    const groups = this.partitions.get(partition);
    const group = groups?.get(groupId);
    if (!groups || !group) return;
    const current = group.statePartitions ?? EMPTY_STATE_PARTITIONS;
    const initializing = new Map<string, InitTopic>();
    for (const [id, v] of current.initializing) {
      const left = new Set([...v.partitions].filter((p) => !topics.get(id)?.partitions.has(p)));
      if (left.size > 0) initializing.set(id, { ...v, partitions: left });
    }
    const next: StatePartitions =
      failed === undefined
        ? { initializing, initialized: combineInitTopics(current.initialized, this.named(topics)), deleting: current.deleting }
        : { initializing, initialized: current.initialized, deleting: current.deleting };
    if (failed !== undefined) this.log.warn({ group: groupId, error: failed }, 'share-partition state initialization failed; a later heartbeat asks again');
    const record = statePartitionsRecord(groupId, next);
    const error = this.host.append(partition, [record]);
    if (error !== ErrorCode.NONE) {
      this.log.warn({ group: groupId, error }, 'cannot record the share-partition state initialization');
      return;
    }
    replayShareRecord(groups, record, this.timer.now());
  }

  /** The topics with their current names. */
  private named(topics: ReadonlyMap<string, InitTopic>): Map<string, InitTopic> {
    const image = this.metadata.image();
    return new Map([...topics].map(([id, v]) => [id, { ...v, name: image.topicsById.get(id)?.name ?? v.name }]));
  }

  /** Epoch -1: the member leaves; the others get its partitions at their next heartbeat. */
  private leave(partition: number, groups: Map<string, ShareGroup>, p: ShareGroupHeartbeatParams): ShareGroupHeartbeatResult {
    const group = this.existing(groups, p.groupId);
    if (typeof group === 'string') return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, group);
    if (!group.members.has(p.memberId)) return heartbeatFailure(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${p.memberId} is not a member of group ${p.groupId}.`);
    const error = this.fence(partition, groups, group, p.memberId, 'left');
    if (error !== ErrorCode.NONE) return heartbeatFailure(error, null);
    return { errorCode: ErrorCode.NONE, errorMessage: null, memberId: p.memberId, memberEpoch: LEAVE_EPOCH, heartbeatIntervalMs: 0, assignment: null };
  }

  /** Removes a member: its records get tombstones and the group epoch rises. The error code of the write. */
  private fence(partition: number, groups: Map<string, ShareGroup>, group: ShareGroup, memberId: string, why: string): number {
    const records: ShareGroupRecord[] = shareMemberTombstones(group.groupId, memberId);
    const remaining = [...group.members.values()].filter((m) => m.memberId !== memberId);
    const hash = topicsHash(
      this.metadata.image(),
      remaining.flatMap((m) => m.subscribedTopicNames),
    );
    const groupEpoch = group.groupEpoch + 1;
    records.push(shareEpochRecord(group.groupId, groupEpoch, hash));
    if (remaining.length === 0) records.push(shareTargetMetadataRecord(group.groupId, groupEpoch, 0));
    const error = this.host.append(partition, records);
    if (error !== ErrorCode.NONE) return error;
    const now = this.timer.now();
    for (const r of records) replayShareRecord(groups, r, now);
    this.timer.cancel(sessionKey(group.groupId, memberId));
    this.log.info({ group: group.groupId, member: memberId, why, groupEpoch }, 'share group member removed');
    return ErrorCode.NONE;
  }

  private scheduleSession(partition: number, groupId: string, memberId: string): void {
    this.timer.schedule(sessionKey(groupId, memberId), this.settings(groupId).sessionTimeoutMs, () => {
      const groups = this.partitions.get(partition);
      const g = groups?.get(groupId);
      if (!groups || !g || !g.members.has(memberId)) return;
      const error = this.fence(partition, groups, g, memberId, 'session timed out');
      // Not written: try again later rather than keep a member nobody hears from.
      if (error !== ErrorCode.NONE) this.scheduleSession(partition, groupId, memberId);
    });
  }

  // ---- describe, list, delete ------------------------------------------------------------

  /** ShareGroupDescribe for one group. */
  describe(groupId: string): DescribedShareGroup {
    if (groupId === '') return undescribedShareGroup(groupId, ErrorCode.INVALID_GROUP_ID, null);
    const at = this.groupsOf(groupId);
    if ('errorCode' in at) return undescribedShareGroup(groupId, at.errorCode, null);
    const group = this.existing(at.groups, groupId);
    if (typeof group === 'string') return undescribedShareGroup(groupId, ErrorCode.GROUP_ID_NOT_FOUND, group);
    const image = this.metadata.image();
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      groupId,
      groupState: group.state,
      groupEpoch: group.groupEpoch,
      assignmentEpoch: group.assignmentEpoch,
      assignorName: SIMPLE_ASSIGNOR,
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        rackId: m.rackId,
        memberEpoch: m.memberEpoch,
        clientId: m.clientId,
        clientHost: m.clientHost,
        subscribedTopicNames: [...m.subscribedTopicNames],
        assignment: [...m.assigned].flatMap(([topicId, ps]) => {
          const t = image.topicsById.get(topicId);
          return t ? [{ topicId, topicName: t.name, partitions: [...ps].sort((a, b) => a - b) }] : [];
        }),
      })),
    };
  }

  /** The share groups of the loaded partitions, for ListGroups. */
  *listed(): Generator<{ groupId: string; state: string }> {
    for (const groups of this.partitions.values()) for (const g of groups.values()) yield { groupId: g.groupId, state: g.state };
  }

  /**
   * DeleteGroups for a share group: only an empty one goes. Its topics'
   * share-partition state is first recorded as deleting and deleted through
   * the persister; then the group's tombstones are written. NONE, or the
   * error to answer for it.
   */
  async deleteGroup(groupId: string): Promise<number> {
    const at = this.groupsOf(groupId);
    if ('errorCode' in at) return at.errorCode;
    const group = at.groups.get(groupId);
    if (!group) return ErrorCode.GROUP_ID_NOT_FOUND;
    if (group.members.size > 0) return ErrorCode.NON_EMPTY_GROUP;
    if (group.statePartitions !== null) {
      const image = this.metadata.image();
      const s = group.statePartitions;
      const candidates = combineInitTopics(s.initialized, s.initializing);
      // Topics still being deleted from an earlier attempt are deleted again, whole.
      for (const [id] of s.deleting) {
        const t = image.topicsById.get(id);
        if (t) candidates.set(id, { name: t.name, partitions: new Set([...(candidates.get(id)?.partitions ?? []), ...t.partitions.map((x) => x.partition)]), timestamp: -1 });
      }
      const record = statePartitionsRecord(groupId, { initializing: new Map(), initialized: new Map(), deleting: new Map([...candidates].map(([id, v]) => [id, v.name])) });
      const error = this.host.append(at.partition, [record]);
      if (error !== ErrorCode.NONE) return error;
      replayShareRecord(at.groups, record, this.timer.now());
      const failed = await this.deleteState(groupId, [...candidates].map(([topicId, v]) => ({ topicId, partitions: [...v.partitions] })));
      const stillFailed = failed.find((f) => f.errorCode !== ErrorCode.NONE);
      if (stillFailed) return stillFailed.errorCode;
    }
    const now = this.groupsOf(groupId);
    if ('errorCode' in now) return now.errorCode;
    const current = now.groups.get(groupId);
    if (!current) return ErrorCode.GROUP_ID_NOT_FOUND;
    if (current.members.size > 0) return ErrorCode.NON_EMPTY_GROUP;
    const records = shareGroupTombstones(groupId);
    const error = this.host.append(now.partition, records);
    if (error !== ErrorCode.NONE) return error;
    for (const r of records) replayShareRecord(now.groups, r, this.timer.now());
    this.log.info({ group: groupId }, 'deleted share group');
    return ErrorCode.NONE;
  }

  /** Deletes the share-partition state of each topic's partitions: the first error of each topic (NONE when all went). */
  private async deleteState(groupId: string, topics: readonly { topicId: string; partitions: readonly number[] }[]): Promise<{ topicId: string; errorCode: number }[]> {
    const persister = this.persister!;
    return Promise.all(
      topics.map(async (t) => {
        const codes = await Promise.all(
          t.partitions.map((partition) => persister.delete({ groupId, topicId: t.topicId, partition }).then((r) => r.errorCode, () => ErrorCode.UNKNOWN_SERVER_ERROR)),
        );
        return { topicId: t.topicId, errorCode: codes.find((c) => c !== ErrorCode.NONE) ?? ErrorCode.NONE };
      }),
    );
  }

  // ---- offsets -------------------------------------------------------------------------------

  /**
   * DescribeShareGroupOffsets for one group: each partition's share-partition
   * start offset and leader epoch from the persister's summary, and its lag:
   * the latest offset minus the start offset minus the records after it
   * already delivered for good. A partition without state (or whose summary
   * failed) has start offset -1 and lag -1, without error, as Kafka answers;
   * an unknown topic's partitions have start offset -1. `topics` null: every
   * partition whose state the group initialized.
   */
  async describeOffsets(groupId: string, topics: readonly { topicName: string; partitions: readonly number[] }[] | null, latestOffset: LatestOffset): Promise<DescribedShareGroupOffsets> {
    const out: DescribedShareGroupOffsets = { groupId, errorCode: ErrorCode.NONE, errorMessage: null, topics: [] };
    const at = this.groupsOf(groupId);
    if ('errorCode' in at) return { ...out, errorCode: at.errorCode };
    const image = this.metadata.image();
    const wanted: { topicName: string; topicId: string; partitions: number[] }[] = [];
    const unknown: DescribedShareGroupOffsets['topics'] = [];
    if (topics === null) {
      const initialized = at.groups.get(groupId)?.statePartitions?.initialized ?? new Map<string, InitTopic>();
      for (const [topicId, v] of initialized) {
        const t = image.topicsById.get(topicId);
        if (t) wanted.push({ topicName: t.name, topicId, partitions: [...v.partitions].sort((a, b) => a - b) });
      }
    } else {
      for (const t of topics) {
        const meta = image.topics.get(t.topicName);
        if (meta) wanted.push({ topicName: t.topicName, topicId: meta.topicId, partitions: [...t.partitions] });
        else {
          unknown.push({
            topicName: t.topicName,
            topicId: ZERO_UUID,
            partitions: t.partitions.map((p) => ({ partitionIndex: p, startOffset: -1n, leaderEpoch: 0, lag: -1n, errorCode: ErrorCode.NONE, errorMessage: null })),
          });
        }
      }
    }
    const persister = this.persister!;
    for (const t of wanted) {
      const partitions = await Promise.all(
        t.partitions.map(async (p): Promise<ShareOffsetPartition> => {
          const s = await persister.readSummary({ groupId, topicId: t.topicId, partition: p }, -1).catch(() => null);
          if (s === null || s.errorCode !== ErrorCode.NONE || s.startOffset === -1n || s.deliveryCompleteCount === -1) {
            const ok = s !== null && s.errorCode === ErrorCode.NONE;
            return { partitionIndex: p, startOffset: ok ? s.startOffset : -1n, leaderEpoch: ok ? s.leaderEpoch : 0, lag: -1n, errorCode: ErrorCode.NONE, errorMessage: null };
          }
          const latest = await latestOffset(t.topicName, p).catch(() => ({ errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, offset: -1n }));
          if (latest.errorCode !== ErrorCode.NONE) {
            return { partitionIndex: p, startOffset: 0n, leaderEpoch: 0, lag: -1n, errorCode: latest.errorCode, errorMessage: null };
          }
          return { partitionIndex: p, startOffset: s.startOffset, leaderEpoch: s.leaderEpoch, lag: latest.offset - s.startOffset - BigInt(s.deliveryCompleteCount), errorCode: ErrorCode.NONE, errorMessage: null };
        }),
      );
      out.topics.push({ topicName: t.topicName, topicId: t.topicId, partitions });
    }
    out.topics.push(...unknown);
    return out;
  }

  /**
   * AlterShareGroupOffsets: sets the start offset of share partitions of an
   * empty share group (a group that does not exist yet is created), by
   * initializing their state again at the group epoch; an unknown topic or
   * partition is UNKNOWN_TOPIC_OR_PARTITION. The partitions are recorded as
   * initializing, then initialized once the persister took them all.
   */
  async alterOffsets(groupId: string, topics: readonly { topicName: string; partitions: readonly { partitionIndex: number; startOffset: bigint }[] }[]): Promise<AlteredShareGroupOffsets> {
    const failure = (errorCode: number, errorMessage: string | null): AlteredShareGroupOffsets => ({ errorCode, errorMessage, topics: [] });
    if (groupId === '') return failure(ErrorCode.INVALID_GROUP_ID, 'The configured groupId is invalid.');
    const at = this.groupsOf(groupId);
    if ('errorCode' in at) return failure(at.errorCode, null);
    if (this.host.otherGroupType(groupId) !== null) return failure(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} is not a share group.`);
    const group = at.groups.get(groupId) ?? new ShareGroup(groupId);
    if (group.members.size > 0) return failure(ErrorCode.NON_EMPTY_GROUP, NON_EMPTY_GROUP_MESSAGE);
    const image = this.metadata.image();
    const now = this.timer.now();
    const out: AlteredShareGroupOffsets = { errorCode: ErrorCode.NONE, errorMessage: null, topics: [] };
    const initializing = new Map<string, InitTopic>();
    const offsets: { key: SharePartitionKey; startOffset: bigint; answer: { partitionIndex: number; errorCode: number; errorMessage: string | null } }[] = [];
    for (const t of topics) {
      const meta = image.topics.get(t.topicName);
      if (!meta) {
        out.topics.push({
          topicName: t.topicName,
          topicId: ZERO_UUID,
          partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: UNKNOWN_TOPIC_MESSAGE })),
        });
        continue;
      }
      const answers: { partitionIndex: number; errorCode: number; errorMessage: string | null }[] = [];
      const valid = new Set<number>();
      for (const p of t.partitions) {
        if (p.partitionIndex >= 0 && p.partitionIndex < meta.partitions.length) {
          const answer = { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE, errorMessage: null as string | null };
          answers.push(answer);
          valid.add(p.partitionIndex);
          offsets.push({ key: { groupId, topicId: meta.topicId, partition: p.partitionIndex }, startOffset: p.startOffset, answer });
        } else answers.push({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: UNKNOWN_TOPIC_MESSAGE });
      }
      initializing.set(meta.topicId, { name: t.topicName, partitions: valid, timestamp: now });
      out.topics.push({ topicName: t.topicName, topicId: meta.topicId, partitions: answers });
    }
    if (initializing.size > 0) {
      const current = group.statePartitions ?? EMPTY_STATE_PARTITIONS;
      const deleting = new Map(current.deleting);
      for (const id of initializing.keys()) deleting.delete(id);
      const record = statePartitionsRecord(groupId, { initializing: combineInitTopics(current.initializing, initializing), initialized: current.initialized, deleting });
      const error = this.host.append(at.partition, [record]);
      if (error !== ErrorCode.NONE) return failure(error, null);
      replayShareRecord(at.groups, record, now);
    }
    if (offsets.length === 0) return out;
    const stateEpoch = at.groups.get(groupId)!.groupEpoch;
    const persister = this.persister!;
    const results = await Promise.all(
      offsets.map((o) => persister.initialize(o.key, stateEpoch, o.startOffset).catch(() => ({ errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: null }))),
    );
    let allOk = true;
    results.forEach((r, i) => {
      if (r.errorCode !== ErrorCode.NONE) {
        allOk = false;
        offsets[i]!.answer.errorCode = r.errorCode;
        offsets[i]!.answer.errorMessage = r.errorMessage;
      }
    });
    if (allOk) {
      const groups = this.partitions.get(at.partition);
      const g = groups?.get(groupId);
      if (groups && g) {
        const current = g.statePartitions ?? EMPTY_STATE_PARTITIONS;
        const left = new Map<string, InitTopic>();
        for (const [id, v] of current.initializing) {
          const rest = new Set([...v.partitions].filter((p) => !initializing.get(id)?.partitions.has(p)));
          if (rest.size > 0) left.set(id, { ...v, partitions: rest });
        }
        const record = statePartitionsRecord(groupId, { initializing: left, initialized: combineInitTopics(current.initialized, this.named(initializing)), deleting: current.deleting });
        if (this.host.append(at.partition, [record]) === ErrorCode.NONE) replayShareRecord(groups, record, this.timer.now());
      }
    }
    return out;
  }

  /**
   * DeleteShareGroupOffsets: forgets the share-partition state of whole
   * topics of an empty share group. Each topic whose state is initialized
   * (or still being deleted) is recorded as deleting, deleted through the
   * persister, and then dropped from the record; a topic without state is
   * UNKNOWN_TOPIC_OR_PARTITION.
   */
  async deleteOffsets(groupId: string, topicNames: readonly string[]): Promise<DeletedShareGroupOffsets> {
    const failure = (errorCode: number, errorMessage: string | null): DeletedShareGroupOffsets => ({ errorCode, errorMessage, topics: [] });
    if (groupId === '') return failure(ErrorCode.INVALID_GROUP_ID, 'The configured groupId is invalid.');
    const at = this.groupsOf(groupId);
    if ('errorCode' in at) return failure(at.errorCode, null);
    const group = this.existing(at.groups, groupId);
    if (typeof group === 'string') return failure(ErrorCode.GROUP_ID_NOT_FOUND, group);
    if (group.members.size > 0) return failure(ErrorCode.NON_EMPTY_GROUP, NON_EMPTY_GROUP_MESSAGE);
    const image = this.metadata.image();
    const errors: DeletedShareGroupOffsets['topics'] = [];
    const toDelete: { topicId: string; topicName: string; partitions: number[] }[] = [];
    const current = group.statePartitions;
    if (current === null) return { errorCode: ErrorCode.NONE, errorMessage: null, topics: [] };
    const initialized = new Map(current.initialized);
    const deleting = new Map(current.deleting);
    for (const name of topicNames) {
      const meta = image.topics.get(name);
      if (!meta) {
        errors.push({ topicName: name, topicId: ZERO_UUID, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: UNKNOWN_TOPIC_MESSAGE });
        continue;
      }
      const init = initialized.get(meta.topicId);
      if (init) {
        toDelete.push({ topicId: meta.topicId, topicName: name, partitions: [...init.partitions] });
        initialized.delete(meta.topicId);
        deleting.set(meta.topicId, name);
      } else if (deleting.has(meta.topicId)) {
        toDelete.push({ topicId: meta.topicId, topicName: name, partitions: meta.partitions.map((p) => p.partition) });
      } else {
        errors.push({ topicName: name, topicId: ZERO_UUID, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'There is no offset information to delete.' });
      }
    }
    const record = statePartitionsRecord(groupId, { initializing: current.initializing, initialized, deleting });
    const error = this.host.append(at.partition, [record]);
    if (error !== ErrorCode.NONE) return failure(error, null);
    replayShareRecord(at.groups, record, this.timer.now());
    if (toDelete.length === 0) return { errorCode: ErrorCode.NONE, errorMessage: null, topics: errors };
    const results = await this.deleteState(groupId, toDelete);
    const done: DeletedShareGroupOffsets['topics'] = [];
    results.forEach((r, i) => {
      const t = toDelete[i]!;
      if (r.errorCode === ErrorCode.NONE) done.push({ topicName: t.topicName, topicId: t.topicId, errorCode: ErrorCode.NONE, errorMessage: null });
      else errors.push({ topicName: t.topicName, topicId: t.topicId, errorCode: r.errorCode, errorMessage: null });
    });
    if (done.length > 0) {
      const groups = this.partitions.get(at.partition);
      const g = groups?.get(groupId);
      if (groups && g?.statePartitions) {
        const left = new Map(g.statePartitions.deleting);
        for (const d of done) left.delete(d.topicId);
        const next = statePartitionsRecord(groupId, { ...g.statePartitions, deleting: left });
        const e = this.host.append(at.partition, [next]);
        if (e !== ErrorCode.NONE) return failure(e, null);
        replayShareRecord(groups, next, this.timer.now());
      }
    }
    return { errorCode: ErrorCode.NONE, errorMessage: null, topics: [...done, ...errors] };
  }
}

/** FENCED_MEMBER_EPOCH for an epoch the member is not at (its previous epoch is taken back, an answer may have been lost). */
function epochFencing(m: ShareMember, epoch: number): ShareGroupHeartbeatResult | null {
  if (epoch === 0) return null;
  if (epoch > m.memberEpoch) {
    return heartbeatFailure(
      ErrorCode.FENCED_MEMBER_EPOCH,
      `The share group member has a greater member epoch (${epoch}) than the one known by the group coordinator (${m.memberEpoch}). The member must abandon all its partitions and rejoin.`,
    );
  }
  if (epoch < m.memberEpoch && epoch !== m.previousMemberEpoch) {
    return heartbeatFailure(
      ErrorCode.FENCED_MEMBER_EPOCH,
      `The share group member has a smaller member epoch (${epoch}) than the one known by the group coordinator (${m.memberEpoch}), and it does not match the previous member epoch (${m.previousMemberEpoch}). The member must abandon all its partitions and rejoin.`,
    );
  }
  return null;
}

/**
 * Whether initialized partitions of subscribed topics are not in the target
 * assignment yet (or it holds some no longer initialized): then the group
 * epoch rises so that the target is computed again.
 */
function initializedAssignmentPending(image: MetadataImage, group: ShareGroup): boolean {
  if (group.members.size === 0) return false;
  const initialized = group.statePartitions?.initialized;
  if (!initialized || initialized.size === 0) return false;
  const subscribed = group.subscribedTopicNames();
  if (subscribed.size === 0) return false;
  const assigned = new Map<string, Set<number>>();
  for (const t of group.target.values()) for (const [id, ps] of t) for (const p of ps) (assigned.get(id) ?? assigned.set(id, new Set()).get(id)!).add(p);
  for (const [id, v] of initialized) {
    // A topic gone from the cluster cannot be assigned (its record is cleaned up when the deletion is seen).
    if (!subscribed.has(v.name) || !image.topicsById.has(id)) continue;
    const have = assigned.get(id);
    if (!have || have.size !== v.partitions.size || [...v.partitions].some((p) => !have.has(p))) return true;
  }
  return false;
}

/**
 * The group coordinator of the classic protocol, as Kafka 4.0's
 * GroupMetadataManager and OffsetMetadataManager run it: membership
 * (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed offsets
 * (OffsetCommit, OffsetFetch, OffsetDelete) and administration (ListGroups,
 * DescribeGroups, DeleteGroups).
 *
 * A group belongs to one partition of __consumer_offsets (see
 * coordinator/partition-for.ts); this broker coordinates the groups of the partitions
 * it leads, each kept in a shard loaded from that partition's log when the
 * leadership arrives and dropped when it goes. Requests for any other group
 * answer NOT_COORDINATOR.
 *
 * Durability: every change Kafka persists is appended to the group's
 * partition as records in Kafka's layouts (group-records.ts) and takes
 * effect, and is acknowledged, only once the append has succeeded: offset
 * commits and deletions, a group's metadata when its assignment is set
 * (SyncGroup from the leader), when it becomes empty, when it is created,
 * when a static member is replaced, and tombstones when a group is deleted
 * or its offsets expire. Loading replays those records in offset order; a
 * tombstone deletes what its key names.
 *
 * Everything here is synchronous except the wait of a parked JoinGroup or
 * SyncGroup, so no two operations interleave: the appends (through
 * OffsetsTopicStore) complete before the call returns. Timers (sessions,
 * rebalance and sync deadlines, the initial rebalance delay, offset expiry)
 * come from an injectable GroupTimer; the system one is unref'd, and
 * `shutdown` cancels every timer and answers every parked request.
 *
 * Transactional offset commits (TxnOffsetCommit) are written as a
 * transactional batch of the producer and stay pending, invisible to
 * OffsetFetch, until the transaction's marker lands in the same partition:
 * `completeTransaction` then moves them to the committed offsets (COMMIT)
 * or drops them (ABORT), as Kafka's OffsetMetadataManager does. A pending
 * commit replaces a committed offset only if it was written after it, so
 * that a mix of plain and transactional commits ends on the latest one;
 * record offsets are the log's, from the loader or from the append.
 *
 * Consumer groups of the KIP-848 protocol (ConsumerGroupHeartbeat) live
 * beside the classic ones, and a group with members may move between the two
 * (group.consumer.migration.policy): a classic group becomes a consumer group
 * when a consumer-protocol member joins it, its members staying as classic
 * members served from the server-side assignment through JoinGroup,
 * SyncGroup, Heartbeat and LeaveGroup; a consumer group left with classic
 * members only becomes a classic group again, as does one whose last
 * consumer-protocol member was static and is replaced by a classic JoinGroup
 * of its instance id.
 */
import { DEFAULT_CONFIG } from '../metadata/broker-config-registry.js';
import { ErrorCode } from '../../wire/errors.js';
import type { MetadataImage, MetadataStore } from '../metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC, partitionFor } from '../coordinator/partition-for.js';
import { appendErrorToResponseError, type OffsetsTopicStore } from '../coordinator/state-log-store.js';
import { SystemGroupTimer, type GroupTimer } from '../coordinator/timer.js';
import { ZERO_UUID, randomUuid } from '../../wire/uuid.js';
import {
  ConsumerGroup,
  MemberState,
  assign,
  copyMember,
  newMember,
  reconcile,
  sameAssigned,
  sameTarget,
  type Assigned,
  type AssignorName,
  type ClassicMemberMetadata,
  type ConsumerMember,
  type MemberStateId,
  type Owned,
  type TargetAssignment,
} from './consumer-group.js';
import { protocolVersion, readAssignment, readSubscription, writeAssignment } from './consumer-protocol.js';
import {
  groupMetadataRecord,
  batchesIn,
  offsetCommitRecord,
  recordsBatch,
  type ConsumerGroupRecord,
  type CoordinatorRecord,
  type TransactionalProducer,
  type GroupMetadataValueData,
  type OffsetCommitValueData,
} from './group-records.js';
import {
  ClassicGroup,
  GroupMember,
  Waiter,
  joinError,
  syncError,
  type GroupState,
  type JoinGroupResult,
  type Protocol,
  type SyncGroupResult,
} from './group-classic.js';
import { DEFAULT_SHARE_GROUPS_CONFIG, ShareGroups, type ShareGroupsConfig } from './share-groups.js';
import type { Persister } from '../share/persister.js';

import { DEFAULT_STREAMS_GROUPS_CONFIG, StreamsCoordinator, type StreamsGroupsConfig } from './streams-coordinator.js';
import type { StreamsGroup } from './streams-group.js';

export { type GroupState, type JoinGroupResult, type SyncGroupResult, type Protocol } from './group-classic.js';

const EMPTY = Buffer.alloc(0);

/** The coordinator's settings, by their Kafka config names in the comments. */
export interface GroupCoordinatorConfig extends ShareGroupsConfig {
  /** group.initial.rebalance.delay.ms */
  readonly initialRebalanceDelayMs: number;
  /** group.min.session.timeout.ms */
  readonly minSessionTimeoutMs: number;
  /** group.max.session.timeout.ms */
  readonly maxSessionTimeoutMs: number;
  /** group.max.size */
  readonly maxSize: number;
  /** offsets.retention.minutes, in milliseconds */
  readonly offsetsRetentionMs: number;
  /** offsets.retention.check.interval.ms */
  readonly offsetsRetentionCheckIntervalMs: number;
  /** offset.metadata.max.bytes */
  readonly offsetMetadataMaxBytes: number;
  /** How long a new member's parked JoinGroup may wait (Kafka's fixed 5 minutes). */
  readonly newMemberJoinTimeoutMs: number;
  /** offsets.commit.timeout.ms: how long an answer waits for its records to reach every in-sync replica */
  readonly offsetCommitTimeoutMs: number;
  /** group.consumer.session.timeout.ms: a consumer-protocol member not heard from this long is fenced */
  readonly consumerSessionTimeoutMs: number;
  /** group.consumer.heartbeat.interval.ms: what each ConsumerGroupHeartbeat answer tells the member */
  readonly consumerHeartbeatIntervalMs: number;
  /** group.consumer.max.size */
  readonly consumerMaxSize: number;
  /** group.consumer.assignors: the server-side assignors members may name; the first is the default */
  readonly consumerAssignors: readonly AssignorName[];
  /** group.consumer.assignment.interval.ms: the least time between two target assignments of a group */
  readonly consumerAssignmentIntervalMs: number;
  /** group.consumer.migration.policy: which online conversions between the classic and the consumer protocol a group with members may make */
  readonly consumerMigrationPolicy: ConsumerMigrationPolicy;
  /** group.streams.*: the settings of streams groups (KIP-1071) */
  readonly streams: StreamsGroupsConfig;
}

/** group.consumer.migration.policy's values (Kafka's ConsumerGroupMigrationPolicy). */
export type ConsumerMigrationPolicy = 'disabled' | 'upgrade' | 'downgrade' | 'bidirectional';

/** The defaults of the broker config (Kafka 4.4's). */
export const DEFAULT_GROUP_COORDINATOR_CONFIG: GroupCoordinatorConfig = {
  initialRebalanceDelayMs: DEFAULT_CONFIG.int('group.initial.rebalance.delay.ms'),
  minSessionTimeoutMs: DEFAULT_CONFIG.int('group.min.session.timeout.ms'),
  maxSessionTimeoutMs: DEFAULT_CONFIG.int('group.max.session.timeout.ms'),
  maxSize: DEFAULT_CONFIG.int('group.max.size'),
  offsetsRetentionMs: DEFAULT_CONFIG.int('offsets.retention.minutes') * 60_000,
  offsetsRetentionCheckIntervalMs: DEFAULT_CONFIG.int('offsets.retention.check.interval.ms'),
  offsetMetadataMaxBytes: DEFAULT_CONFIG.int('offset.metadata.max.bytes'),
  newMemberJoinTimeoutMs: 5 * 60_000,
  offsetCommitTimeoutMs: DEFAULT_CONFIG.int('offsets.commit.timeout.ms'),
  consumerSessionTimeoutMs: DEFAULT_CONFIG.int('group.consumer.session.timeout.ms'),
  consumerHeartbeatIntervalMs: DEFAULT_CONFIG.int('group.consumer.heartbeat.interval.ms'),
  consumerMaxSize: DEFAULT_CONFIG.int('group.consumer.max.size'),
  consumerAssignors: DEFAULT_CONFIG.list('group.consumer.assignors') as ('uniform' | 'range')[],
  consumerAssignmentIntervalMs: DEFAULT_CONFIG.int('group.consumer.assignment.interval.ms'),
  consumerMigrationPolicy: DEFAULT_CONFIG.value('group.consumer.migration.policy') as ConsumerMigrationPolicy,
  ...DEFAULT_SHARE_GROUPS_CONFIG,
  streams: DEFAULT_STREAMS_GROUPS_CONFIG,
};

export interface GroupCoordinatorLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface CommittedOffset {
  readonly offset: bigint;
  /** -1 when the commit carried none. */
  readonly leaderEpoch: number;
  readonly metadata: string;
  readonly commitTimestampMs: number;
  /** Set only by OffsetCommit v2-v4 with a retention time. */
  readonly expireTimestampMs: number | null;
}

export interface JoinGroupParams {
  readonly groupId: string;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly protocolType: string;
  readonly protocols: readonly Protocol[];
  readonly clientId: string;
  readonly clientHost: string;
  /** JoinGroup v4+: a first join gets MEMBER_ID_REQUIRED and its member id (KIP-394). */
  readonly requireKnownMemberId: boolean;
  /** JoinGroup v9+: a replaced static leader may be told to skip the assignment. */
  readonly supportsSkippingAssignment: boolean;
}

export interface SyncGroupParams {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly protocolType: string | null;
  readonly protocolName: string | null;
  readonly assignments: readonly { readonly memberId: string; readonly assignment: Buffer }[];
}

export interface HeartbeatParams {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
}

export interface LeaveGroupResult {
  errorCode: number;
  members: { memberId: string; groupInstanceId: string | null; errorCode: number }[];
}

export interface OffsetCommitParams {
  readonly groupId: string;
  /** -1 for commits from outside the group's membership. */
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  /** -1 for the broker's retention (every version but v2-v4). */
  readonly retentionTimeMs: bigint;
  /** OffsetCommit v9+: an unknown group is GROUP_ID_NOT_FOUND, before that ILLEGAL_GENERATION. */
  readonly groupIdNotFoundKnown: boolean;
  readonly topics: readonly {
    readonly name: string;
    readonly partitions: readonly {
      readonly partitionIndex: number;
      readonly committedOffset: bigint;
      readonly committedLeaderEpoch: number;
      /** -1 for now (every version but v1). */
      readonly commitTimestamp: bigint;
      readonly committedMetadata: string | null;
    }[];
  }[];
}

export interface TxnOffsetCommitParams {
  readonly transactionalId: string;
  readonly groupId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** -1 before TxnOffsetCommit v3, and for producers outside the group's membership. */
  readonly generationId: number;
  /** '' before v3. */
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  /** TxnOffsetCommit v6+ may answer STALE_MEMBER_EPOCH; older versions get ILLEGAL_GENERATION. */
  readonly staleMemberEpochKnown?: boolean;
  readonly topics: readonly {
    readonly name: string;
    readonly partitions: readonly {
      readonly partitionIndex: number;
      readonly committedOffset: bigint;
      /** -1 when the commit carries none (before v2). */
      readonly committedLeaderEpoch: number;
      readonly committedMetadata: string | null;
    }[];
  }[];
}

export interface TopicPartitionErrors {
  name: string;
  partitions: { partitionIndex: number; errorCode: number }[];
}

export interface FetchedOffset {
  partitionIndex: number;
  committedOffset: bigint;
  committedLeaderEpoch: number;
  metadata: string;
  errorCode: number;
}

export interface OffsetFetchResult {
  /** The group's error; the partitions then carry it too. */
  errorCode: number;
  topics: { name: string; partitions: FetchedOffset[] }[];
}

export interface OffsetDeleteResult {
  errorCode: number;
  topics: TopicPartitionErrors[];
}

export interface ListedGroup {
  groupId: string;
  protocolType: string;
  groupState: string;
  groupType: string;
}

export interface DescribedGroup {
  errorCode: number;
  groupId: string;
  /** Set when the id names a consumer group (KIP-848) or a share group (KIP-932), which DescribeGroups does not describe. */
  consumerGroup?: boolean;
  groupState: string;
  protocolType: string;
  protocolData: string;
  members: {
    memberId: string;
    groupInstanceId: string | null;
    clientId: string;
    clientHost: string;
    memberMetadata: Buffer;
    memberAssignment: Buffer;
  }[];
}

/** A committed or pending offset with the log offset of the record that wrote it. */
interface OffsetEntry extends CommittedOffset {
  readonly recordOffset: bigint;
}

/** Offsets by topic, then partition. */
type GroupOffsets = Map<string, Map<number, OffsetEntry>>;

/** Offsets by group, then topic, then partition. */
class OffsetTable {
  readonly byGroup = new Map<string, GroupOffsets>();

  get(groupId: string, topic: string, partition: number): OffsetEntry | undefined {
    return this.byGroup.get(groupId)?.get(topic)?.get(partition);
  }

  set(groupId: string, topic: string, partition: number, o: OffsetEntry): void {
    let byTopic = this.byGroup.get(groupId);
    if (!byTopic) this.byGroup.set(groupId, (byTopic = new Map()));
    let byPartition = byTopic.get(topic);
    if (!byPartition) byTopic.set(topic, (byPartition = new Map()));
    byPartition.set(partition, o);
  }

  remove(groupId: string, topic: string, partition: number): void {
    const byTopic = this.byGroup.get(groupId);
    const byPartition = byTopic?.get(topic);
    if (!byTopic || !byPartition) return;
    byPartition.delete(partition);
    if (byPartition.size === 0) byTopic.delete(topic);
    if (byTopic.size === 0) this.byGroup.delete(groupId);
  }

  *entries(): Generator<{ groupId: string; topic: string; partition: number; offset: OffsetEntry }> {
    for (const [groupId, byTopic] of this.byGroup) {
      for (const [topic, byPartition] of byTopic) {
        for (const [partition, offset] of byPartition) yield { groupId, topic, partition, offset };
      }
    }
  }
}

/**
 * The groups and offsets of one partition of __consumer_offsets: the
 * committed offsets, and the pending ones of open transactions by producer
 * id (with, by group, the producers that have some pending).
 */
class Shard {
  readonly groups = new Map<string, ClassicGroup>();
  /** Groups of the consumer protocol (KIP-848); a group id is in one of the two maps at most. */
  readonly consumerGroups = new Map<string, ConsumerGroup>();
  /** Streams groups (KIP-1071, streams-coordinator.ts); a group id is in one of the three maps at most. */
  readonly streamsGroups = new Map<string, StreamsGroup>();
  private readonly committed = new OffsetTable();
  private readonly pending = new Map<bigint, OffsetTable>();
  private readonly openTransactions = new Map<string, Set<bigint>>();

  constructor(readonly partition: number) {}

  /** The group's committed offsets. */
  offsetsOf(groupId: string): GroupOffsets | undefined {
    return this.committed.byGroup.get(groupId);
  }

  offsetOf(groupId: string, topic: string, partition: number): OffsetEntry | undefined {
    return this.committed.get(groupId, topic, partition);
  }

  setOffset(groupId: string, topic: string, partition: number, o: OffsetEntry): void {
    this.committed.set(groupId, topic, partition, o);
  }

  /** What a tombstone does: the committed offset goes, and so does every pending one of that partition. */
  removeOffset(groupId: string, topic: string, partition: number): void {
    this.committed.remove(groupId, topic, partition);
    for (const producerId of [...(this.openTransactions.get(groupId) ?? [])]) {
      this.pending.get(producerId)?.remove(groupId, topic, partition);
      this.forgetIfDone(producerId, groupId);
    }
  }

  /** Every committed offset, across groups. */
  committedEntries(): Generator<{ groupId: string; topic: string; partition: number; offset: OffsetEntry }> {
    return this.committed.entries();
  }

  setPending(producerId: bigint, groupId: string, topic: string, partition: number, o: OffsetEntry): void {
    let table = this.pending.get(producerId);
    if (!table) this.pending.set(producerId, (table = new OffsetTable()));
    table.set(groupId, topic, partition, o);
    let producers = this.openTransactions.get(groupId);
    if (!producers) this.openTransactions.set(groupId, (producers = new Set()));
    producers.add(producerId);
  }

  hasPendingOffset(groupId: string, topic: string, partition: number): boolean {
    for (const producerId of this.openTransactions.get(groupId) ?? []) {
      if (this.pending.get(producerId)?.get(groupId, topic, partition)) return true;
    }
    return false;
  }

  hasOpenTransactions(groupId: string): boolean {
    return this.openTransactions.has(groupId);
  }

  /** The partitions of a group with a pending offset, each once. */
  pendingPartitionsOf(groupId: string): { topic: string; partition: number }[] {
    const seen = new Map<string, { topic: string; partition: number }>();
    for (const producerId of this.openTransactions.get(groupId) ?? []) {
      for (const [topic, byPartition] of this.pending.get(producerId)?.byGroup.get(groupId) ?? []) {
        for (const partition of byPartition.keys()) seen.set(`${partition}:${topic}`, { topic, partition });
      }
    }
    return [...seen.values()];
  }

  /** Every pending offset, across producers and groups. */
  *pendingEntries(): Generator<{ groupId: string; topic: string; partition: number; offset: OffsetEntry }> {
    for (const table of this.pending.values()) yield* table.entries();
  }

  /**
   * The end of a producer's transaction: on commit its pending offsets
   * become the committed ones, except where the committed offset was
   * written later; on abort they go. How many were pending and how many
   * were committed; null when the producer had none here.
   */
  completeTransaction(producerId: bigint, commit: boolean): { pending: number; committed: number } | null {
    const table = this.pending.get(producerId);
    if (!table) return null;
    this.pending.delete(producerId);
    let pending = 0;
    let committed = 0;
    for (const { groupId, topic, partition, offset } of table.entries()) {
      pending++;
      if (commit) {
        const existing = this.committed.get(groupId, topic, partition);
        if (!existing || offset.recordOffset > existing.recordOffset) {
          this.committed.set(groupId, topic, partition, offset);
          committed++;
        }
      }
    }
    for (const groupId of table.byGroup.keys()) this.forgetIfDone(producerId, groupId);
    return { pending, committed };
  }

  /** Drops a deleted group's offsets, committed and pending. */
  dropOffsetsOf(groupId: string): void {
    this.committed.byGroup.delete(groupId);
    for (const producerId of this.openTransactions.get(groupId) ?? []) this.pending.get(producerId)?.byGroup.delete(groupId);
    for (const producerId of [...(this.openTransactions.get(groupId) ?? [])]) this.forgetIfDone(producerId, groupId);
  }

  private forgetIfDone(producerId: bigint, groupId: string): void {
    const table = this.pending.get(producerId);
    if (table && table.byGroup.has(groupId)) return;
    const producers = this.openTransactions.get(groupId);
    producers?.delete(producerId);
    if (producers?.size === 0) this.openTransactions.delete(groupId);
    if (table && table.byGroup.size === 0) this.pending.delete(producerId);
  }
}

const heartbeatKey = (groupId: string, memberId: string): string => `heartbeat\u0000${groupId}\u0000${memberId}`;
const consumerSessionKey = (groupId: string, memberId: string): string => `consumer-session\u0000${groupId}\u0000${memberId}`;
const rebalanceKey = (groupId: string, memberId: string): string => `consumer-rebalance\u0000${groupId}\u0000${memberId}`;
/** A classic member of a consumer group told to rejoin, and one that joined, have their rebalance timeout to (re)join and to sync. */
const classicJoinKey = (groupId: string, memberId: string): string => `consumer-classic-join\u0000${groupId}\u0000${memberId}`;
const classicSyncKey = (groupId: string, memberId: string): string => `consumer-classic-sync\u0000${groupId}\u0000${memberId}`;

/** A member's change to its consumer group, computed before its records are written (see planMemberChange). */
interface MemberPlan {
  readonly isNew: boolean;
  readonly subscriptionChanged: boolean;
  readonly groupEpoch: number;
  readonly hash: bigint;
  readonly assignmentEpoch: number;
  readonly assignmentTimestamp: number;
  readonly target: Map<string, TargetAssignment>;
  readonly reconciled: ConsumerMember;
  /**
   * Only for a change planned as a downgrade: the group epoch is ahead of
   * the assignment epoch, so no target was computed and the member was not
   * reconciled (the classic group the downgrade makes rebalances instead).
   */
  readonly staleAssignment: boolean;
}

/** ConsumerGroupHeartbeat's member epochs that leave: for good (-1), or for a while, a static member (-2). */
const LEAVE_EPOCH = -1;
const STATIC_LEAVE_EPOCH = -2;

export interface ConsumerGroupHeartbeatParams {
  readonly version: number;
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly instanceId: string | null;
  readonly rackId: string | null;
  readonly rebalanceTimeoutMs: number;
  readonly subscribedTopicNames: readonly string[] | null;
  readonly subscribedTopicRegex: string | null;
  readonly serverAssignor: string | null;
  readonly topicPartitions: readonly { readonly topicId: string; readonly partitions: readonly number[] }[] | null;
  readonly clientId: string;
  readonly clientHost: string;
}

export interface ConsumerGroupHeartbeatResult {
  errorCode: number;
  errorMessage: string | null;
  memberId: string | null;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  /** The partitions the member may own now, when it has to be told; null for no change. */
  assignment: { topicId: string; partitions: number[] }[] | null;
}

export interface DescribedConsumerGroup {
  errorCode: number;
  errorMessage: string | null;
  groupId: string;
  groupState: string;
  groupEpoch: number;
  assignmentEpoch: number;
  assignorName: string;
  members: {
    memberId: string;
    instanceId: string | null;
    rackId: string | null;
    memberEpoch: number;
    clientId: string;
    clientHost: string;
    subscribedTopicNames: string[];
    subscribedTopicRegex: string;
    assignment: { topicId: string; topicName: string; partitions: number[] }[];
    targetAssignment: { topicId: string; topicName: string; partitions: number[] }[];
    /** ConsumerGroupDescribe v1's member type: 0 for a member of the classic protocol, 1 for one of the consumer protocol. */
    memberType: number;
  }[];
}

/** A consumer group answered with an error, without state: empty fields, as Kafka leaves them. */
export function undescribedConsumerGroup(groupId: string, errorCode: number, errorMessage: string | null): DescribedConsumerGroup {
  return { errorCode, errorMessage, groupId, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] };
}

function heartbeatFailure(errorCode: number, errorMessage: string | null): ConsumerGroupHeartbeatResult {
  return { errorCode, errorMessage, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null };
}

/** A subscription's regular expression, matched against whole topic names; null when it does not compile. */
function compileRegex(source: string): RegExp | null {
  try {
    return new RegExp(`^(?:${source})$`, 'u');
  } catch {
    return null;
  }
}

/** The ids of the existing topics a member subscribes to, by name or by its regular expression (internal topics left out). */
function subscribedTopicIds(image: MetadataImage, m: ConsumerMember): string[] {
  const ids = new Set<string>();
  for (const name of m.subscribedTopicNames) {
    const t = image.topics.get(name);
    if (t) ids.add(t.topicId);
  }
  if (m.subscribedTopicRegex !== '') {
    const re = compileRegex(m.subscribedTopicRegex);
    if (re) for (const t of image.topics.values()) if (!t.internal && re.test(t.name)) ids.add(t.topicId);
  }
  return [...ids].sort();
}

/**
 * What the members subscribe to, as the topics exist now: each subscribed
 * topic's id, name and partition count, hashed (FNV-1a, 64 bits). A change
 * (a topic created, deleted or given partitions) raises the group epoch.
 */
function subscriptionHash(image: MetadataImage, members: Iterable<ConsumerMember>): bigint {
  const ids = new Set<string>();
  for (const m of members) for (const id of subscribedTopicIds(image, m)) ids.add(id);
  if (ids.size === 0) return 0n;
  let h = 0xcbf29ce484222325n;
  const mask = (1n << 64n) - 1n;
  for (const id of [...ids].sort()) {
    const t = image.topicsById.get(id)!;
    for (const ch of Buffer.from(`${id}\u0000${t.name}\u0000${t.partitions.length};`)) {
      h ^= BigInt(ch);
      h = (h * 0x100000001b3n) & mask;
    }
  }
  return BigInt.asIntN(64, h);
}

function memberMetadataChanged(a: ConsumerMember, b: ConsumerMember): boolean {
  return (
    a.instanceId !== b.instanceId ||
    a.rackId !== b.rackId ||
    a.clientId !== b.clientId ||
    a.clientHost !== b.clientHost ||
    a.rebalanceTimeoutMs !== b.rebalanceTimeoutMs ||
    a.serverAssignor !== b.serverAssignor ||
    !sameClassicMetadata(a.classic, b.classic)
  );
}

function sameClassicMetadata(a: ClassicMemberMetadata | null, b: ClassicMemberMetadata | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.sessionTimeoutMs === b.sessionTimeoutMs &&
    a.protocols.length === b.protocols.length &&
    a.protocols.every((p, i) => p.name === b.protocols[i]!.name && p.metadata.equals(b.protocols[i]!.metadata))
  );
}

function memberMetadataRecord(groupId: string, m: ConsumerMember): CoordinatorRecord {
  return {
    kind: 'consumer',
    type: 5,
    groupId,
    memberId: m.memberId,
    value: {
      instanceId: m.instanceId,
      rackId: m.rackId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: m.subscribedTopicNames,
      subscribedTopicRegex: m.subscribedTopicRegex,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      serverAssignor: m.serverAssignor,
      classicMemberMetadata:
        m.classic === null ? null : { sessionTimeoutMs: m.classic.sessionTimeoutMs, supportedProtocols: m.classic.protocols.map((x) => ({ name: x.name, metadata: x.metadata })) },
    },
  };
}

function targetMemberRecord(groupId: string, memberId: string, t: TargetAssignment): CoordinatorRecord {
  return {
    kind: 'consumer',
    type: 7,
    groupId,
    memberId,
    value: { topicPartitions: [...t].map(([topicId, ps]) => ({ topicId, partitions: [...ps].sort((a, b) => a - b) })) },
  };
}

function currentAssignmentRecord(groupId: string, m: ConsumerMember): CoordinatorRecord {
  const list = (a: Assigned) =>
    [...a].map(([topicId, ps]) => {
      const sorted = [...ps].sort((x, y) => x[0] - y[0]);
      return { topicId, partitions: sorted.map(([p]) => p), assignmentEpochs: sorted.map(([, e]) => e) };
    });
  return {
    kind: 'consumer',
    type: 8,
    groupId,
    memberId: m.memberId,
    value: {
      memberEpoch: m.memberEpoch,
      previousMemberEpoch: m.previousMemberEpoch,
      state: m.state,
      assignedPartitions: list(m.assigned),
      partitionsPendingRevocation: list(m.pendingRevocation),
    },
  };
}

/** What removing a member writes, in Kafka's order: its current assignment, its target, its metadata. */
function memberTombstones(groupId: string, memberId: string): CoordinatorRecord[] {
  return [
    { kind: 'consumer', type: 8, groupId, memberId, value: null },
    { kind: 'consumer', type: 7, groupId, memberId, value: null },
    { kind: 'consumer', type: 5, groupId, memberId, value: null },
  ];
}
const joinKey = (groupId: string): string => `join\u0000${groupId}`;
const syncKey = (groupId: string): string => `sync\u0000${groupId}`;
const EXPIRE_OFFSETS_KEY = 'expire-offsets';

/** A group's own integer config `name` (the GROUP config resource), as `{ [field]: value }`, or nothing. */
export function ownInt<K extends string>(own: ReadonlyMap<string, string>, name: string, field: K): { [P in K]?: number } {
  const v = own.get(name)?.trim();
  return v !== undefined && /^[+-]?\d+$/.test(v) ? ({ [field]: Number(v) } as { [P in K]?: number }) : {};
}

export class GroupCoordinator {
  readonly config: GroupCoordinatorConfig;
  readonly timer: GroupTimer;
  private readonly shards = new Map<number, Shard>();
  /** Partitions of __consumer_offsets in the current image; 0 before it exists. */
  private numPartitions = 0;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;
  /** Topic ids of the last image seen, to tell which topics a new one deleted. */
  private topicIds = new Map<string, string>();
  /** The share groups (KIP-932) of the partitions loaded here; unavailable without a persister. */
  readonly shares: ShareGroups;
  /** Streams groups (KIP-1071), on this coordinator's shards and log. */
  readonly streams: StreamsCoordinator;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly store: OffsetsTopicStore,
    private readonly log: GroupCoordinatorLogger,
    opts: { config?: Partial<GroupCoordinatorConfig>; timer?: GroupTimer; persister?: Persister } = {},
  ) {
    this.config = { ...DEFAULT_GROUP_COORDINATOR_CONFIG, ...opts.config };
    this.timer = opts.timer ?? new SystemGroupTimer();
    this.shares = new ShareGroups(
      {
        partitionOf: (groupId) => {
          if (this.stopped) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE };
          const shard = this.shardOf(groupId);
          return shard ? { partition: shard.partition } : { errorCode: ErrorCode.NOT_COORDINATOR };
        },
        otherGroupType: (groupId) => {
          const shard = this.shardOf(groupId);
          if (shard?.consumerGroups.has(groupId)) return 'consumer';
          if (shard?.streamsGroups.has(groupId)) return 'streams';
          const classic = shard?.groups.get(groupId);
          return classic && !classic.is('Dead') ? 'classic' : null;
        },
        append: (partition, records) => {
          const shard = this.shards.get(partition);
          if (!shard) return ErrorCode.NOT_COORDINATOR;
          const error = this.append(shard, records);
          return error === ErrorCode.NONE ? error : appendErrorToResponseError(error);
        },
        offsetCommitTimeoutMs: this.config.offsetCommitTimeoutMs,
      },
      metadata,
      this.timer,
      log,
      this.config,
      opts.persister,
      (groupId) => {
        const own = metadata.groupConfigOverrides(groupId);
        return {
          ...ownInt(own, 'share.session.timeout.ms', 'sessionTimeoutMs'),
          ...ownInt(own, 'share.heartbeat.interval.ms', 'heartbeatIntervalMs'),
          ...ownInt(own, 'share.assignment.interval.ms', 'assignmentIntervalMs'),
        };
      },
    );
    this.streams = new StreamsCoordinator(
      {
        metadata: this.metadata,
        timer: this.timer,
        log: this.log,
        stopped: () => this.stopped,
        shardOf: (groupId) => this.shardOf(groupId),
        isLoaded: (shard) => this.shards.get(shard.partition) === shard,
        otherGroup: (shard, groupId) => {
          const s = shard as Shard;
          if (s.consumerGroups.has(groupId) || this.shares.has(groupId)) return 'other';
          const classic = s.groups.get(groupId);
          if (!classic || classic.is('Dead')) return 'none';
          return classic.numMembers === 0 ? 'empty-classic' : 'other';
        },
        replaceEmptyClassic: (shard, groupId) => ({ records: [groupMetadataRecord(groupId, null)], apply: () => this.dropGroup(shard as Shard, groupId) }),
        append: (shard, records) => {
          const error = this.append(shard as Shard, records as CoordinatorRecord[]);
          return error === ErrorCode.NONE ? error : appendErrorToResponseError(error);
        },
      },
      this.config.streams,
    );
  }

  /**
   * Loads the partitions this broker leads in the current image and follows
   * the image from then on; starts the periodic offset expiry.
   */
  start(): this {
    if (this.unsubscribe || this.stopped) return this;
    this.applyImage(this.metadata.image());
    this.unsubscribe = this.metadata.subscribe((image) => this.applyImage(image));
    this.scheduleOffsetExpiry();
    return this;
  }

  /**
   * Stops coordinating: every parked JoinGroup and SyncGroup is answered
   * NOT_COORDINATOR (the client finds the coordinator again), every timer
   * is cancelled, and later requests answer COORDINATOR_NOT_AVAILABLE.
   */
  shutdown(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    for (const partition of [...this.shards.keys()]) this.unload(partition);
    this.timer.cancelAll();
  }

  /** Partitions of __consumer_offsets loaded here, for tests and metrics. */
  get loadedPartitions(): number[] {
    return [...this.shards.keys()].sort((a, b) => a - b);
  }

  /** A group's state, for tests; undefined when this broker does not know the group. */
  groupState(groupId: string): GroupState | undefined {
    return this.shardOf(groupId)?.groups.get(groupId)?.state;
  }

  /** The group itself, for tests. */
  group(groupId: string): ClassicGroup | undefined {
    return this.shardOf(groupId)?.groups.get(groupId);
  }

  // ---- membership ----------------------------------------------------------------------------

  /**
   * JoinGroup. Resolves when the join phase completes for this member (at
   * once for errors and MEMBER_ID_REQUIRED; after the rebalance for a
   * parked join).
   */
  joinGroup(p: JoinGroupParams): Promise<JoinGroupResult> {
    const pre = this.groupRequestError(p.groupId);
    if (pre !== ErrorCode.NONE) return Promise.resolve(joinError(pre, p.memberId));
    if (p.sessionTimeoutMs < this.config.minSessionTimeoutMs || p.sessionTimeoutMs > this.config.maxSessionTimeoutMs) {
      return Promise.resolve(joinError(ErrorCode.INVALID_SESSION_TIMEOUT, p.memberId));
    }
    const shard = this.shardOf(p.groupId);
    if (!shard) return Promise.resolve(joinError(ErrorCode.NOT_COORDINATOR, p.memberId));
    // A share group's id cannot be joined with the classic protocol.
    if (this.shares.has(p.groupId)) return Promise.resolve(joinError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ''));
    const waiter = new Waiter<JoinGroupResult>();
    this.join(shard, p, waiter);
    return waiter.promise;
  }

  private join(shard: Shard, p: JoinGroupParams, waiter: Waiter<JoinGroupResult>): void {
    const isUnknownMember = p.memberId === '';
    if (shard.streamsGroups.has(p.groupId)) {
      // A streams group's id is not a classic group's, as Kafka answers a JoinGroup for it.
      waiter.complete(joinError(ErrorCode.GROUP_ID_NOT_FOUND, p.memberId));
      return;
    }
    const consumerGroup = shard.consumerGroups.get(p.groupId);
    if (consumerGroup) {
      // A consumer group with members takes the classic member as one of its own (see classicJoinToConsumerGroup);
      // an empty one becomes a classic group, as Kafka converts an empty group whatever its migration policy.
      if (consumerGroup.members.size > 0) {
        this.classicJoinToConsumerGroup(shard, consumerGroup, p, waiter);
        return;
      }
      const records: CoordinatorRecord[] = [];
      for (const memberId of consumerGroup.target.keys()) records.push({ kind: 'consumer', type: 7, groupId: p.groupId, memberId, value: null });
      records.push({ kind: 'consumer', type: 6, groupId: p.groupId, value: null }, { kind: 'consumer', type: 3, groupId: p.groupId, value: null });
      const error = this.append(shard, records);
      if (error !== ErrorCode.NONE) {
        waiter.complete(joinError(appendErrorToResponseError(error), p.memberId));
        return;
      }
      shard.consumerGroups.delete(p.groupId);
    }
    let group = shard.groups.get(p.groupId);
    if (!group) {
      // A group is created only by a member without an id; one naming itself has lost its group.
      if (!isUnknownMember) {
        waiter.complete(joinError(ErrorCode.UNKNOWN_MEMBER_ID, p.memberId));
        return;
      }
      group = new ClassicGroup(p.groupId, { state: 'Empty', now: this.timer.now() });
      const error = this.append(shard, [groupMetadataRecord(p.groupId, this.emptyGroupValue(group))]);
      if (error !== ErrorCode.NONE) {
        waiter.complete(joinError(appendErrorToResponseError(error), ''));
        return;
      }
      shard.groups.set(p.groupId, group);
    }
    if (!this.acceptJoiningMember(group, p.memberId)) {
      group.remove(p.memberId);
      waiter.complete(joinError(ErrorCode.GROUP_MAX_SIZE_REACHED, ''));
    } else if (isUnknownMember) {
      this.joinNewMember(shard, group, p, waiter);
    } else {
      this.joinExistingMember(shard, group, p, waiter);
    }
  }

  /** group.max.size: members already in the rebalance stay; new ones come in while there is room. */
  private acceptJoiningMember(group: ClassicGroup, memberId: string): boolean {
    switch (group.state) {
      case 'Empty':
      case 'Dead':
        return true;
      case 'PreparingRebalance':
        return group.members.get(memberId)?.isAwaitingJoin === true || group.numAwaitingJoin < this.config.maxSize;
      case 'CompletingRebalance':
      case 'Stable':
        return group.members.has(memberId) || group.numMembers < this.config.maxSize;
    }
  }

  private joinNewMember(shard: Shard, group: ClassicGroup, p: JoinGroupParams, waiter: Waiter<JoinGroupResult>): void {
    if (group.is('Dead')) {
      waiter.complete(joinError(ErrorCode.COORDINATOR_NOT_AVAILABLE, ''));
      return;
    }
    if (!group.supportsProtocols(p.protocolType, p.protocols)) {
      waiter.complete(joinError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ''));
      return;
    }
    const newMemberId = group.generateMemberId(p.clientId, p.groupInstanceId);
    if (p.groupInstanceId !== null) {
      const existing = group.staticMembers.get(p.groupInstanceId);
      if (existing !== undefined) {
        this.log.info({ group: group.groupId, groupInstanceId: p.groupInstanceId, oldMemberId: existing, newMemberId }, 'static member rejoins; replacing its previous member id');
        this.updateStaticMemberThenRebalanceOrCompleteJoin(shard, group, p, existing, newMemberId, waiter);
      } else {
        this.addMemberThenRebalanceOrCompleteJoin(shard, group, p, newMemberId, waiter);
      }
      return;
    }
    if (p.requireKnownMemberId) {
      // The member must come back with this id; until it does it is pending, and expires with its session.
      group.addPendingMember(newMemberId);
      this.timer.schedule(heartbeatKey(group.groupId, newMemberId), p.sessionTimeoutMs, () => this.expireHeartbeat(shard, group.groupId, newMemberId));
      waiter.complete(joinError(ErrorCode.MEMBER_ID_REQUIRED, newMemberId));
      return;
    }
    this.addMemberThenRebalanceOrCompleteJoin(shard, group, p, newMemberId, waiter);
  }

  private joinExistingMember(shard: Shard, group: ClassicGroup, p: JoinGroupParams, waiter: Waiter<JoinGroupResult>): void {
    const { memberId } = p;
    if (group.is('Dead')) {
      waiter.complete(joinError(ErrorCode.COORDINATOR_NOT_AVAILABLE, memberId));
      return;
    }
    if (!group.supportsProtocols(p.protocolType, p.protocols)) {
      waiter.complete(joinError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, memberId));
      return;
    }
    if (group.pendingJoinMembers.has(memberId)) {
      // Pending ids are handed only to dynamic members.
      if (p.groupInstanceId !== null) {
        waiter.complete(joinError(ErrorCode.UNKNOWN_SERVER_ERROR, memberId));
        return;
      }
      this.addMemberThenRebalanceOrCompleteJoin(shard, group, p, memberId, waiter);
      return;
    }
    const error = group.memberError(memberId, p.groupInstanceId);
    if (error !== ErrorCode.NONE) {
      waiter.complete(joinError(error, memberId));
      return;
    }
    const member = group.members.get(memberId)!;
    switch (group.state) {
      case 'PreparingRebalance':
        this.updateMemberThenRebalanceOrCompleteJoin(shard, group, member, p, waiter);
        return;
      case 'CompletingRebalance':
        // The same metadata again: the member lost its JoinGroup answer; send it again.
        if (member.matches(p.protocols)) waiter.complete(this.currentJoinResult(group, memberId, group.isLeader(memberId)));
        else this.updateMemberThenRebalanceOrCompleteJoin(shard, group, member, p, waiter);
        return;
      case 'Stable':
        // The leader rejoining asks for a rebalance (its view of the topics may have changed); a follower only when its metadata did.
        if (group.isLeader(memberId) || !member.matches(p.protocols)) this.updateMemberThenRebalanceOrCompleteJoin(shard, group, member, p, waiter);
        else waiter.complete(this.currentJoinResult(group, memberId, false));
        return;
      default:
        this.log.warn({ group: group.groupId, memberId, state: group.state }, 'rejoining member found its group in an unexpected state');
        waiter.complete(joinError(ErrorCode.UNKNOWN_MEMBER_ID, memberId));
    }
  }

  private currentJoinResult(group: ClassicGroup, memberId: string, withMembers: boolean): JoinGroupResult {
    return {
      errorCode: ErrorCode.NONE,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? '',
      skipAssignment: false,
      memberId,
      members: withMembers ? group.joinedMembers() : [],
    };
  }

  private updateMemberThenRebalanceOrCompleteJoin(shard: Shard, group: ClassicGroup, member: GroupMember, p: JoinGroupParams, waiter: Waiter<JoinGroupResult>): void {
    group.updateMember(member, p.protocols, p.rebalanceTimeoutMs, p.sessionTimeoutMs, waiter);
    this.maybePrepareRebalanceOrCompleteJoin(shard, group);
  }

  private addMemberThenRebalanceOrCompleteJoin(shard: Shard, group: ClassicGroup, p: JoinGroupParams, memberId: string, waiter: Waiter<JoinGroupResult>): void {
    const member = new GroupMember(memberId, p.groupInstanceId, p.clientId, p.clientHost, p.rebalanceTimeoutMs, p.sessionTimeoutMs, p.protocolType, p.protocols);
    member.isNew = true;
    if (group.is('PreparingRebalance') && group.previousState === 'Empty') group.newMemberAdded = true;
    group.add(member, waiter);
    // A new member's parked join cannot heartbeat, and a client that gave up would leave it here for good: it expires.
    this.rescheduleHeartbeat(shard, group, member, this.config.newMemberJoinTimeoutMs);
    this.maybePrepareRebalanceOrCompleteJoin(shard, group);
  }

  private updateStaticMemberThenRebalanceOrCompleteJoin(
    shard: Shard,
    group: ClassicGroup,
    p: JoinGroupParams,
    oldMemberId: string,
    newMemberId: string,
    waiter: Waiter<JoinGroupResult>,
  ): void {
    const instanceId = p.groupInstanceId!;
    const currentLeader = group.leaderId;
    this.timer.cancel(heartbeatKey(group.groupId, oldMemberId));
    const member = group.replaceStaticMember(instanceId, oldMemberId, newMemberId);
    this.rescheduleHeartbeat(shard, group, member);
    const old = { protocols: member.protocols, rebalanceTimeoutMs: member.rebalanceTimeoutMs, sessionTimeoutMs: member.sessionTimeoutMs };
    group.updateMember(member, p.protocols, p.rebalanceTimeoutMs, p.sessionTimeoutMs, waiter);

    if (group.is('Stable')) {
      if ((group.protocolName ?? '') !== group.selectProtocol()) {
        this.maybePrepareRebalanceOrCompleteJoin(shard, group);
        return;
      }
      // The group's protocol stays: the member takes its old place and assignment, and the others carry on.
      const error = this.append(shard, [groupMetadataRecord(group.groupId, this.groupValue(group, group.assignments()))]);
      if (error !== ErrorCode.NONE) {
        this.log.warn({ group: group.groupId, groupInstanceId: instanceId, error }, 'cannot persist the replaced static member; reverting to its previous member id');
        group.updateMember(member, old.protocols, old.rebalanceTimeoutMs, old.sessionTimeoutMs, null);
        this.timer.cancel(heartbeatKey(group.groupId, newMemberId));
        const restored = group.replaceStaticMember(instanceId, newMemberId, oldMemberId);
        this.rescheduleHeartbeat(shard, group, restored);
        waiter.complete({
          errorCode: appendErrorToResponseError(error),
          generationId: group.generationId,
          protocolType: group.protocolType,
          protocolName: group.protocolName,
          leader: currentLeader ?? '',
          skipAssignment: false,
          memberId: '',
          members: [],
        });
        return;
      }
      if (p.supportsSkippingAssignment) {
        const isLeader = group.isLeader(newMemberId);
        group.completeJoin(member, { ...this.currentJoinResult(group, newMemberId, isLeader), skipAssignment: isLeader });
      } else {
        // The leader named is the one before the replacement, so a replaced leader does not assign again.
        group.completeJoin(member, { ...this.currentJoinResult(group, newMemberId, false), leader: currentLeader ?? '' });
      }
      return;
    }
    if (group.is('CompletingRebalance')) {
      // The leader may already be assigning for the old member id: start over.
      this.prepareRebalance(shard, group);
      return;
    }
    this.maybeCompleteJoinPhase(shard, group);
  }

  private maybePrepareRebalanceOrCompleteJoin(shard: Shard, group: ClassicGroup): void {
    if (group.canRebalance) this.prepareRebalance(shard, group);
    else this.maybeCompleteJoinPhase(shard, group);
  }

  private prepareRebalance(shard: Shard, group: ClassicGroup): void {
    if (group.is('CompletingRebalance')) this.resetAndPropagateAssignmentWithError(shard, group, ErrorCode.REBALANCE_IN_PROGRESS);
    this.removeSyncExpiration(group);
    const isInitialRebalance = group.is('Empty');
    if (isInitialRebalance) {
      // A new group waits a little for more members before its first generation.
      const delayMs = this.config.initialRebalanceDelayMs;
      const remainingMs = Math.max(group.rebalanceTimeoutMs - delayMs, 0);
      this.timer.schedule(joinKey(group.groupId), delayMs, () => this.tryCompleteInitialRebalance(shard, group.groupId, delayMs, remainingMs));
    }
    group.transitionTo('PreparingRebalance', this.timer.now());
    this.log.info({ group: group.groupId, generation: group.generationId }, 'preparing to rebalance group');
    if (!isInitialRebalance) this.maybeCompleteJoinElseSchedule(shard, group);
  }

  private maybeCompleteJoinElseSchedule(shard: Shard, group: ClassicGroup): void {
    if (group.hasAllMembersJoined) this.completeJoin(shard, group);
    else this.timer.schedule(joinKey(group.groupId), group.rebalanceTimeoutMs, () => this.completeJoinOf(shard, group.groupId));
  }

  private tryCompleteInitialRebalance(shard: Shard, groupId: string, delayMs: number, remainingMs: number): void {
    const group = shard.groups.get(groupId);
    if (!group) return;
    if (group.newMemberAdded && remainingMs !== 0) {
      group.newMemberAdded = false;
      const newDelayMs = Math.min(this.config.initialRebalanceDelayMs, remainingMs);
      const newRemainingMs = Math.max(remainingMs - delayMs, 0);
      this.timer.schedule(joinKey(groupId), newDelayMs, () => this.tryCompleteInitialRebalance(shard, groupId, newDelayMs, newRemainingMs));
    } else {
      this.completeJoin(shard, group);
    }
  }

  /** Completes the join phase now unless this is a new group's first rebalance (which its delay timer completes). */
  private maybeCompleteJoinPhase(shard: Shard, group: ClassicGroup): void {
    if (!group.is('PreparingRebalance') || group.previousState === 'Empty' || !group.hasAllMembersJoined) return;
    this.completeJoin(shard, group);
  }

  private completeJoinOf(shard: Shard, groupId: string): void {
    const group = shard.groups.get(groupId);
    if (group) this.completeJoin(shard, group);
  }

  /**
   * Ends the join phase: dynamic members that did not rejoin are dropped,
   * the next generation starts, and every joined member gets its answer
   * (the leader with everyone's metadata). A group left without members
   * becomes Empty, and that is persisted.
   */
  private completeJoin(shard: Shard, group: ClassicGroup): void {
    this.timer.cancel(joinKey(group.groupId));
    for (const m of group.notYetRejoinedMembers()) {
      if (m.isStatic) continue;
      group.remove(m.memberId);
      this.timer.cancel(heartbeatKey(group.groupId, m.memberId));
    }
    if (group.is('Dead')) return;
    if (!group.maybeElectNewJoinedLeader() && group.numMembers > 0) {
      // Only static members remain and none rejoined: wait again, until their sessions end.
      this.log.warn({ group: group.groupId }, 'no member rejoined; waiting another rebalance timeout');
      this.timer.schedule(joinKey(group.groupId), group.rebalanceTimeoutMs, () => this.completeJoinOf(shard, group.groupId));
      return;
    }
    const now = this.timer.now();
    group.initNextGeneration(now);
    if (group.is('Empty')) {
      this.log.info({ group: group.groupId, generation: group.generationId }, 'group is now empty');
      const error = this.append(shard, [groupMetadataRecord(group.groupId, this.groupValue(group, new Map()))]);
      // Nothing to answer: with no members, the previous generation coming back after a crash only times out.
      if (error !== ErrorCode.NONE) this.log.warn({ group: group.groupId, error }, 'cannot persist the empty group');
      return;
    }
    this.log.info({ group: group.groupId, generation: group.generationId, members: group.numMembers, protocol: group.protocolName }, 'group completed its join phase');
    for (const member of group.members.values()) {
      group.completeJoin(member, this.currentJoinResult(group, member.memberId, group.isLeader(member.memberId)));
      this.rescheduleHeartbeat(shard, group, member);
      member.isNew = false;
      group.pendingSyncMembers.add(member.memberId);
    }
    const generationId = group.generationId;
    this.timer.schedule(syncKey(group.groupId), group.rebalanceTimeoutMs, () => this.expirePendingSync(shard, group.groupId, generationId));
  }

  private expirePendingSync(shard: Shard, groupId: string, generationId: number): void {
    const group = shard.groups.get(groupId);
    if (!group || group.generationId !== generationId) return;
    if (!group.is('CompletingRebalance') && !group.is('Stable')) return;
    if (group.pendingSyncMembers.size === 0) return;
    const missing = [...group.pendingSyncMembers];
    for (const memberId of missing) {
      group.remove(memberId);
      this.timer.cancel(heartbeatKey(groupId, memberId));
    }
    this.log.info({ group: groupId, members: missing }, 'removing members that sent no SyncGroup within the rebalance timeout');
    this.prepareRebalance(shard, group);
  }

  private removeSyncExpiration(group: ClassicGroup): void {
    group.pendingSyncMembers.clear();
    this.timer.cancel(syncKey(group.groupId));
  }

  private rescheduleHeartbeat(shard: Shard, group: ClassicGroup, member: GroupMember, timeoutMs = member.sessionTimeoutMs): void {
    const { groupId } = group;
    const { memberId } = member;
    this.timer.schedule(heartbeatKey(groupId, memberId), timeoutMs, () => this.expireHeartbeat(shard, groupId, memberId));
  }

  /** A member's session ran out: it leaves, unless it is parked in a join or sync of this rebalance. */
  private expireHeartbeat(shard: Shard, groupId: string, memberId: string): void {
    const group = shard.groups.get(groupId);
    if (!group || group.is('Dead')) return;
    if (group.pendingJoinMembers.has(memberId)) {
      group.remove(memberId);
      if (group.is('PreparingRebalance') && group.hasAllMembersJoined) this.completeJoin(shard, group);
      return;
    }
    const member = group.members.get(memberId);
    if (!member || member.hasSatisfiedHeartbeat) return;
    this.log.info({ group: groupId, memberId }, 'member session expired; removing it from the group');
    this.removeMemberAndUpdateGroup(shard, group, member);
  }

  private removeMemberAndUpdateGroup(shard: Shard, group: ClassicGroup, member: GroupMember): void {
    // A new member may time out with its join still parked: it is answered so that it may join again.
    group.completeJoin(member, joinError(ErrorCode.UNKNOWN_MEMBER_ID, ''));
    this.removeFromGroup(group, member.memberId);
    if (group.is('Stable') || group.is('CompletingRebalance')) this.maybePrepareRebalanceOrCompleteJoin(shard, group);
    else if (group.is('PreparingRebalance') && group.hasAllMembersJoined) this.completeJoin(shard, group);
  }

  /** Removes a member; a SyncGroup it still has parked is answered rather than left hanging. */
  private removeFromGroup(group: ClassicGroup, memberId: string): void {
    const member = group.members.get(memberId);
    if (member) group.completeSync(member, syncError(ErrorCode.UNKNOWN_MEMBER_ID));
    group.remove(memberId);
  }

  private propagateAssignment(shard: Shard, group: ClassicGroup, errorCode: number): void {
    const ok = errorCode === ErrorCode.NONE;
    for (const member of group.members.values()) {
      const answered = group.completeSync(member, {
        errorCode,
        protocolType: ok ? group.protocolType : null,
        protocolName: ok ? group.protocolName : null,
        assignment: member.assignment,
      });
      // Sessions restart once the assignment is out: an expiry while it was awaited was ignored.
      if (answered) this.rescheduleHeartbeat(shard, group, member);
    }
  }

  private resetAndPropagateAssignmentWithError(shard: Shard, group: ClassicGroup, errorCode: number): void {
    for (const m of group.members.values()) m.assignment = EMPTY;
    this.propagateAssignment(shard, group, errorCode);
  }

  /** SyncGroup. Resolves when this member's assignment is known (or with an error). */
  syncGroup(p: SyncGroupParams): Promise<SyncGroupResult> {
    const pre = this.groupRequestError(p.groupId);
    if (pre !== ErrorCode.NONE) return Promise.resolve(syncError(pre));
    const shard = this.shardOf(p.groupId);
    if (!shard) return Promise.resolve(syncError(ErrorCode.NOT_COORDINATOR));
    const consumerGroup = shard.consumerGroups.get(p.groupId);
    if (consumerGroup) return Promise.resolve(this.classicSyncToConsumerGroup(shard, consumerGroup, p));
    const group = shard.groups.get(p.groupId);
    if (!group || group.is('Empty')) return Promise.resolve(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
    const error = this.syncGroupError(group, p);
    if (error !== ErrorCode.NONE) return Promise.resolve(syncError(error));
    const member = group.members.get(p.memberId)!;
    switch (group.state) {
      case 'PreparingRebalance':
        return Promise.resolve(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
      case 'CompletingRebalance': {
        const waiter = new Waiter<SyncGroupResult>();
        // As with joins, a SyncGroup sent again replaces the parked one, which is answered.
        member.syncWaiter?.complete(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
        member.syncWaiter = waiter;
        this.removePendingSyncMember(group, p.memberId);
        if (group.isLeader(p.memberId)) this.completeSync(shard, group, p);
        return waiter.promise;
      }
      case 'Stable':
        this.removePendingSyncMember(group, p.memberId);
        return Promise.resolve({ errorCode: ErrorCode.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: member.assignment });
      default:
        return Promise.resolve(syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
    }
  }

  /**
   * The leader's assignment arrived: persist it, and once every in-sync
   * replica of the group's partition has it, hand every member its part (as
   * Kafka does in its append callback). When it cannot be written or
   * replicated, every member gets the error and the group rebalances.
   */
  private completeSync(shard: Shard, group: ClassicGroup, p: SyncGroupParams): void {
    const assignment = new Map<string, Buffer>();
    for (const a of p.assignments) assignment.set(a.memberId, a.assignment);
    const missing = [...group.members.keys()].filter((id) => !assignment.has(id));
    for (const id of missing) assignment.set(id, EMPTY);
    if (missing.length > 0) this.log.warn({ group: group.groupId, generation: group.generationId, members: missing }, 'setting empty assignments for members the leader left out');
    this.log.info({ group: group.groupId, generation: group.generationId, leader: p.memberId, members: group.numMembers }, 'assignment received from the group leader');
    const error = this.append(shard, [groupMetadataRecord(group.groupId, this.groupValue(group, assignment))]);
    const generation = group.generationId;
    const stored = (code: number): void => {
      // The group may have moved on meanwhile (a member left, a new rebalance, the partition went elsewhere).
      if (this.shardOf(group.groupId) !== shard || shard.groups.get(group.groupId) !== group || group.generationId !== generation || !group.is('CompletingRebalance')) return;
      if (code !== ErrorCode.NONE) {
        this.resetAndPropagateAssignmentWithError(shard, group, appendErrorToResponseError(code));
        this.maybePrepareRebalanceOrCompleteJoin(shard, group);
        return;
      }
      for (const m of group.members.values()) m.assignment = assignment.get(m.memberId) ?? EMPTY;
      this.propagateAssignment(shard, group, ErrorCode.NONE);
      group.transitionTo('Stable', this.timer.now());
    };
    if (error !== ErrorCode.NONE || !this.store.replicated) {
      stored(error);
      return;
    }
    void this.store
      .replicated(shard.partition, this.config.offsetCommitTimeoutMs)
      .then(stored)
      .catch((err: unknown) => this.log.warn({ group: group.groupId, err }, 'could not hand out the assignment after it was replicated'));
  }

  private syncGroupError(group: ClassicGroup, p: SyncGroupParams): number {
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const error = group.memberError(p.memberId, p.groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    if (p.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    if ((p.protocolType !== null && p.protocolType !== group.protocolType) || (p.protocolName !== null && p.protocolName !== group.protocolName)) {
      return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
    }
    return ErrorCode.NONE;
  }

  private removePendingSyncMember(group: ClassicGroup, memberId: string): void {
    group.pendingSyncMembers.delete(memberId);
    if (!(group.is('CompletingRebalance') || group.is('Stable')) || group.pendingSyncMembers.size === 0) this.timer.cancel(syncKey(group.groupId));
  }

  /** Heartbeat: the error code. A live member's session restarts. */
  heartbeat(p: HeartbeatParams): number {
    const pre = this.groupRequestError(p.groupId);
    if (pre !== ErrorCode.NONE) return pre;
    const shard = this.shardOf(p.groupId);
    if (!shard) return ErrorCode.NOT_COORDINATOR;
    const consumerGroup = shard.consumerGroups.get(p.groupId);
    if (consumerGroup) return this.classicHeartbeatToConsumerGroup(shard, consumerGroup, p);
    const group = shard.groups.get(p.groupId);
    if (!group) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const error = group.memberError(p.memberId, p.groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    if (p.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    const member = group.members.get(p.memberId)!;
    switch (group.state) {
      case 'PreparingRebalance':
        this.rescheduleHeartbeat(shard, group, member);
        return ErrorCode.REBALANCE_IN_PROGRESS;
      case 'CompletingRebalance':
      case 'Stable':
        // Members may heartbeat as soon as they have their JoinGroup answer.
        this.rescheduleHeartbeat(shard, group, member);
        return ErrorCode.NONE;
      default:
        return ErrorCode.UNKNOWN_MEMBER_ID;
    }
  }

  /**
   * LeaveGroup for each member named (by member id, or by group instance id
   * alone, which removes a static member administratively).
   */
  leaveGroup(groupId: string, members: readonly { memberId: string; groupInstanceId: string | null }[]): LeaveGroupResult {
    const pre = this.groupRequestError(groupId);
    if (pre !== ErrorCode.NONE) return { errorCode: pre, members: [] };
    const shard = this.shardOf(groupId);
    if (!shard) return { errorCode: ErrorCode.NOT_COORDINATOR, members: [] };
    const consumerGroup = shard.consumerGroups.get(groupId);
    if (consumerGroup) return this.classicLeaveToConsumerGroup(shard, consumerGroup, members);
    const group = shard.groups.get(groupId);
    if (!group) return { errorCode: ErrorCode.NONE, members: members.map((m) => ({ ...m, errorCode: ErrorCode.UNKNOWN_MEMBER_ID })) };
    if (group.is('Dead')) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] };
    const answers: LeaveGroupResult['members'] = [];
    for (const m of members) {
      let errorCode: number = ErrorCode.NONE;
      if (m.memberId === '') {
        const staticId = m.groupInstanceId !== null ? group.staticMembers.get(m.groupInstanceId) : undefined;
        if (staticId !== undefined) this.removeCurrentMember(group, staticId);
        else errorCode = ErrorCode.UNKNOWN_MEMBER_ID;
      } else if (group.pendingJoinMembers.has(m.memberId)) {
        group.remove(m.memberId);
        this.timer.cancel(heartbeatKey(groupId, m.memberId));
      } else {
        errorCode = group.memberError(m.memberId, m.groupInstanceId);
        if (errorCode === ErrorCode.NONE) this.removeCurrentMember(group, m.memberId);
      }
      if (errorCode === ErrorCode.NONE) this.log.info({ group: groupId, memberId: m.memberId, groupInstanceId: m.groupInstanceId }, 'member left the group');
      answers.push({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, errorCode });
    }
    if (answers.some((a) => a.errorCode === ErrorCode.NONE)) {
      if (group.is('Stable') || group.is('CompletingRebalance')) this.maybePrepareRebalanceOrCompleteJoin(shard, group);
      else if (group.is('PreparingRebalance')) this.maybeCompleteJoinPhase(shard, group);
    }
    return { errorCode: ErrorCode.NONE, members: answers };
  }

  private removeCurrentMember(group: ClassicGroup, memberId: string): void {
    const member = group.members.get(memberId)!;
    this.timer.cancel(heartbeatKey(group.groupId, memberId));
    group.completeJoin(member, joinError(ErrorCode.UNKNOWN_MEMBER_ID, ''));
    this.removeFromGroup(group, memberId);
  }

  // ---- offsets --------------------------------------------------------------------------------

  /**
   * OffsetCommit for partitions the caller has checked exist. Every
   * partition gets the group's error when the commit is refused as a whole.
   * The offsets count at once (OffsetFetch, expiry, deletions); the caller
   * answers only after replicated() (see api/offset-commit.ts).
   */
  commitOffsets(p: OffsetCommitParams): TopicPartitionErrors[] {
    const all = (errorCode: number): TopicPartitionErrors[] =>
      p.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((x) => ({ partitionIndex: x.partitionIndex, errorCode })) }));
    if (this.stopped) return all(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const shard = this.shardOf(p.groupId);
    if (!shard) return all(ErrorCode.NOT_COORDINATOR);
    if (this.shares.has(p.groupId)) return all(ErrorCode.GROUP_ID_NOT_FOUND);
    const now = this.timer.now();
    const consumerGroup = shard.consumerGroups.get(p.groupId);
    if (consumerGroup) {
      const error = this.consumerCommitError(consumerGroup, { memberId: p.memberId, generationId: p.generationId, v9: p.groupIdNotFoundKnown, topics: p.topics });
      if (error !== ErrorCode.NONE) return all(error);
      return this.writeCommits(shard, p, now);
    }
    const streamsGroup = shard.streamsGroups.get(p.groupId);
    if (streamsGroup) {
      const error = this.streams.commitError(streamsGroup, { memberId: p.memberId, generationId: p.generationId, v9: p.groupIdNotFoundKnown, topics: p.topics });
      if (error !== ErrorCode.NONE) return all(error);
      return this.writeCommits(shard, p, now);
    }
    let group = shard.groups.get(p.groupId);
    let created = false;
    if (!group) {
      if (p.generationId >= 0) return all(p.groupIdNotFoundKnown ? ErrorCode.GROUP_ID_NOT_FOUND : ErrorCode.ILLEGAL_GENERATION);
      // Commits from outside any membership (admin tools, assign()) get a "simple" group: empty, without a protocol.
      group = new ClassicGroup(p.groupId, { state: 'Empty', now });
      created = true;
    }
    const error = this.commitError(group, p);
    if (error !== ErrorCode.NONE) return all(error);
    // A commit keeps a member's session alive while the group is stable or rebalancing.
    const member = group.members.get(p.memberId);
    if (member && (group.is('Stable') || group.is('PreparingRebalance'))) this.rescheduleHeartbeat(shard, group, member);
    const answers = this.writeCommits(shard, p, now);
    if (created && answers.some((t) => t.partitions.some((x) => x.errorCode === ErrorCode.NONE))) shard.groups.set(p.groupId, group);
    return answers;
  }

  /** Writes the commits of `p` and applies them once written; OFFSET_METADATA_TOO_LARGE for metadata too long. */
  private writeCommits(shard: Shard, p: OffsetCommitParams, now: number): TopicPartitionErrors[] {
    const all = (errorCode: number): TopicPartitionErrors[] =>
      p.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((x) => ({ partitionIndex: x.partitionIndex, errorCode })) }));
    const expireTimestampMs = p.retentionTimeMs === -1n ? null : now + Number(p.retentionTimeMs);
    const records: CoordinatorRecord[] = [];
    const commits: { topic: string; partition: number; offset: CommittedOffset }[] = [];
    const answers: TopicPartitionErrors[] = p.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((x) => {
        const metadata = x.committedMetadata ?? '';
        if (metadata.length > this.config.offsetMetadataMaxBytes) return { partitionIndex: x.partitionIndex, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE };
        const offset: CommittedOffset = {
          offset: x.committedOffset,
          leaderEpoch: x.committedLeaderEpoch,
          metadata,
          commitTimestampMs: x.commitTimestamp === -1n ? now : Number(x.commitTimestamp),
          expireTimestampMs,
        };
        commits.push({ topic: t.name, partition: x.partitionIndex, offset });
        records.push(offsetCommitRecord(p.groupId, t.name, x.partitionIndex, offsetValue(offset)));
        return { partitionIndex: x.partitionIndex, errorCode: ErrorCode.NONE };
      }),
    }));
    let baseOffset = -1n;
    if (records.length > 0) {
      const appended = this.appendAt(shard, records);
      if (appended.errorCode !== ErrorCode.NONE) return all(appendErrorToResponseError(appended.errorCode));
      baseOffset = appended.baseOffset;
    }
    commits.forEach((c, i) => shard.setOffset(p.groupId, c.topic, c.partition, { ...c.offset, recordOffset: baseOffset + BigInt(i) }));
    return answers;
  }

  /**
   * TxnOffsetCommit for partitions the caller has checked exist: the
   * offsets are written as a transactional batch of the producer and stay
   * pending until `completeTransaction`. Every partition gets the error
   * when the commit is refused as a whole (an append refused because the
   * producer's epoch is old answers INVALID_PRODUCER_EPOCH, as Kafka 4.0's
   * coordinator passes it through).
   *
   * Example: commitTransactionalOffsets({ transactionalId: 'tx', groupId: 'g',
   * producerId: 7n, producerEpoch: 0, generationId: -1, memberId: '',
   * groupInstanceId: null, topics: [{ name: 't', partitions: [{
   * partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1,
   * committedMetadata: null }] }] }) -> [{ name: 't', partitions: [{
   * partitionIndex: 0, errorCode: 0 }] }], and t-0 stays at its previous
   * commit for OffsetFetch until the transaction commits.
   */
  commitTransactionalOffsets(p: TxnOffsetCommitParams): TopicPartitionErrors[] {
    const all = (errorCode: number): TopicPartitionErrors[] =>
      p.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((x) => ({ partitionIndex: x.partitionIndex, errorCode })) }));
    const pre = this.groupRequestError(p.groupId);
    if (pre !== ErrorCode.NONE) return all(pre);
    const shard = this.shardOf(p.groupId);
    if (!shard) return all(ErrorCode.NOT_COORDINATOR);
    const now = this.timer.now();
    const consumerGroup = shard.consumerGroups.get(p.groupId);
    let group = shard.groups.get(p.groupId);
    let created = false;
    if (consumerGroup) {
      // A producer that is no member (no member id, epoch -1) commits unchecked; a member is checked as for OffsetCommit.
      const producerOnly = p.memberId === '' && p.generationId < 0 && p.groupInstanceId === null;
      const error = producerOnly ? ErrorCode.NONE : this.consumerCommitError(consumerGroup, { memberId: p.memberId, generationId: p.generationId, v9: true, topics: p.topics });
      if (error !== ErrorCode.NONE) return all(error === ErrorCode.STALE_MEMBER_EPOCH && !p.staleMemberEpochKnown ? ErrorCode.ILLEGAL_GENERATION : error);
    } else if (shard.streamsGroups.has(p.groupId)) {
      const producerOnly = p.memberId === '' && p.generationId < 0 && p.groupInstanceId === null;
      const error = producerOnly ? ErrorCode.NONE : this.streams.commitError(shard.streamsGroups.get(p.groupId)!, { memberId: p.memberId, generationId: p.generationId, v9: true, topics: p.topics });
      if (error !== ErrorCode.NONE) return all(error === ErrorCode.STALE_MEMBER_EPOCH && !p.staleMemberEpochKnown ? ErrorCode.ILLEGAL_GENERATION : error);
    } else {
      if (!group) {
        if (p.generationId >= 0) return all(ErrorCode.ILLEGAL_GENERATION);
        group = new ClassicGroup(p.groupId, { state: 'Empty', now });
        created = true;
      }
      const error = txnCommitError(group, p);
      if (error !== ErrorCode.NONE) return all(error);
    }

    const records: CoordinatorRecord[] = [];
    const commits: { topic: string; partition: number; offset: CommittedOffset }[] = [];
    const answers: TopicPartitionErrors[] = p.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((x) => {
        const metadata = x.committedMetadata ?? '';
        if (metadata.length > this.config.offsetMetadataMaxBytes) return { partitionIndex: x.partitionIndex, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE };
        const offset: CommittedOffset = { offset: x.committedOffset, leaderEpoch: x.committedLeaderEpoch, metadata, commitTimestampMs: now, expireTimestampMs: null };
        commits.push({ topic: t.name, partition: x.partitionIndex, offset });
        records.push(offsetCommitRecord(p.groupId, t.name, x.partitionIndex, offsetValue(offset)));
        return { partitionIndex: x.partitionIndex, errorCode: ErrorCode.NONE };
      }),
    }));
    let baseOffset = -1n;
    if (records.length > 0) {
      const appended = this.appendAt(shard, records, { producerId: p.producerId, producerEpoch: p.producerEpoch });
      if (appended.errorCode !== ErrorCode.NONE) return all(appendErrorToResponseError(appended.errorCode));
      baseOffset = appended.baseOffset;
    }
    if (created && group) shard.groups.set(p.groupId, group);
    commits.forEach((c, i) => shard.setPending(p.producerId, p.groupId, c.topic, c.partition, { ...c.offset, recordOffset: baseOffset + BigInt(i) }));
    return answers;
  }

  /**
   * A COMMIT or ABORT marker of `producerId` was appended to partition
   * `offsetsPartition` of __consumer_offsets: on commit the producer's
   * pending offsets there become committed (each unless the committed one
   * was written after it); on abort they are dropped. A partition this
   * broker does not coordinate is ignored.
   *
   * Example: after commitTransactionalOffsets with producer 7 put g's t-0 at
   * 5 (pending), completeTransaction(partitionFor('g', 50), 7n, true) ->
   * fetchOffsets('g', [{ name: 't', partitionIndexes: [0] }]) answers 5.
   */
  completeTransaction(offsetsPartition: number, producerId: bigint, commit: boolean): void {
    const shard = this.shards.get(offsetsPartition);
    if (!shard) return;
    const done = shard.completeTransaction(producerId, commit);
    if (done) this.log.info({ partition: offsetsPartition, producerId: String(producerId), commit, ...done }, 'completed transactional offset commits');
  }

  /** Kafka's ClassicGroup.validateOffsetCommit, for commits outside a transaction. */
  private commitError(group: ClassicGroup, p: OffsetCommitParams): number {
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    // Generation -1 on an empty group: an admin client or a consumer without group management.
    if (p.generationId < 0 && group.is('Empty')) return ErrorCode.NONE;
    if (p.generationId >= 0 || p.memberId !== '' || p.groupInstanceId !== null) {
      const error = group.memberError(p.memberId, p.groupInstanceId);
      if (error !== ErrorCode.NONE) return error;
      if (p.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    } else if (!group.is('Empty')) {
      // No member and no generation (OffsetCommit v0): only an empty group takes it.
      return ErrorCode.UNKNOWN_MEMBER_ID;
    }
    // The member has its JoinGroup answer but the group has no assignment yet.
    if (group.is('CompletingRebalance')) return ErrorCode.REBALANCE_IN_PROGRESS;
    return ErrorCode.NONE;
  }

  /**
   * OffsetFetch for one group: the named partitions (-1 and no error for
   * those without a commit, and for every partition of a group this
   * coordinator does not know), or with `topics` null every committed one.
   * Pending transactional offsets are never answered; with `requireStable`
   * (OffsetFetch v7+) a partition that has one answers
   * UNSTABLE_OFFSET_COMMIT instead of its committed offset, so that the
   * client asks again once the transaction is over.
   */
  fetchOffsets(
    groupId: string,
    topics: readonly { name: string; partitionIndexes: readonly number[] }[] | null,
    requireStable = false,
    member: { memberId: string | null; memberEpoch: number } | null = null,
  ): OffsetFetchResult {
    const failed = (errorCode: number): OffsetFetchResult => ({
      errorCode,
      topics: (topics ?? []).map((t) => ({ name: t.name, partitions: t.partitionIndexes.map((i) => noOffset(i, errorCode)) })),
    });
    if (this.stopped) return failed(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const shard = this.shardOf(groupId);
    if (!shard) return failed(ErrorCode.NOT_COORDINATOR);
    const group = shard.groups.get(groupId);
    const consumerGroup = shard.consumerGroups.get(groupId);
    // OffsetFetch v9+ from a member of a consumer group (KIP-848): it must be one, at its current epoch.
    if (consumerGroup && member && (member.memberId !== null || member.memberEpoch >= 0)) {
      const m = member.memberId === null ? undefined : consumerGroup.members.get(member.memberId);
      if (!m) return failed(ErrorCode.UNKNOWN_MEMBER_ID);
      if (m.memberEpoch !== member.memberEpoch) return failed(ErrorCode.STALE_MEMBER_EPOCH);
    }
    const streamsGroup = shard.streamsGroups.get(groupId);
    if (streamsGroup && member && (member.memberId !== null || member.memberEpoch >= 0)) {
      const error = this.streams.fetchError(streamsGroup, member.memberId, member.memberEpoch);
      if (error !== ErrorCode.NONE) return failed(error);
    }
    const known = (group !== undefined && !group.is('Dead')) || consumerGroup !== undefined || streamsGroup !== undefined;
    const offsets = known ? shard.offsetsOf(groupId) : undefined;
    const unstable = (topic: string, i: number): boolean => known && requireStable && shard.hasPendingOffset(groupId, topic, i);
    if (topics === null) {
      return {
        errorCode: ErrorCode.NONE,
        topics: [...(offsets ?? new Map<string, Map<number, CommittedOffset>>())].map(([name, byPartition]) => ({
          name,
          partitions: [...byPartition].map(([i, o]) => (unstable(name, i) ? noOffset(i, ErrorCode.UNSTABLE_OFFSET_COMMIT) : fetched(i, o))),
        })),
      };
    }
    return {
      errorCode: ErrorCode.NONE,
      topics: topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((i) => {
          if (unstable(t.name, i)) return noOffset(i, ErrorCode.UNSTABLE_OFFSET_COMMIT);
          const o = offsets?.get(t.name)?.get(i);
          return o ? fetched(i, o) : noOffset(i, ErrorCode.NONE);
        }),
      })),
    };
  }

  /**
   * OffsetDelete: removes committed offsets of topics the group does not
   * subscribe to; a partition's pending transactional offsets go with it
   * (a tombstone is written when either exists).
   */
  deleteOffsets(groupId: string, topics: readonly { name: string; partitions: readonly number[] }[]): OffsetDeleteResult {
    const pre = this.groupRequestError(groupId);
    if (pre !== ErrorCode.NONE) return { errorCode: pre, topics: [] };
    const shard = this.shardOf(groupId);
    if (!shard) return { errorCode: ErrorCode.NOT_COORDINATOR, topics: [] };
    const consumerGroup = shard.consumerGroups.get(groupId);
    const group = shard.groups.get(groupId);
    let subscribed: (topic: string) => boolean;
    if (consumerGroup) {
      const image = this.metadata.image();
      const ids = new Set([...consumerGroup.members.values()].flatMap((m) => subscribedTopicIds(image, m)));
      subscribed = (topic) => {
        const id = image.topics.get(topic)?.topicId;
        return id !== undefined && ids.has(id);
      };
    } else if (shard.streamsGroups.has(groupId)) {
      const streamsGroup = shard.streamsGroups.get(groupId)!;
      subscribed = (topic) => this.streams.readsTopic(streamsGroup, topic);
    } else {
      if (!group || group.is('Dead')) return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] };
      if (!group.is('Empty') && !group.usesConsumerProtocol) return { errorCode: ErrorCode.NON_EMPTY_GROUP, topics: [] };
      subscribed = (topic) => group.isSubscribedToTopic(topic);
    }
    const records: CoordinatorRecord[] = [];
    const removed: { topic: string; partition: number }[] = [];
    const answers = topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((partitionIndex) => {
        if (subscribed(t.name)) return { partitionIndex, errorCode: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC };
        if (shard.offsetOf(groupId, t.name, partitionIndex) || shard.hasPendingOffset(groupId, t.name, partitionIndex)) {
          records.push(offsetCommitRecord(groupId, t.name, partitionIndex, null));
          removed.push({ topic: t.name, partition: partitionIndex });
        }
        return { partitionIndex, errorCode: ErrorCode.NONE };
      }),
    }));
    if (records.length > 0) {
      const error = this.append(shard, records);
      if (error !== ErrorCode.NONE) return { errorCode: appendErrorToResponseError(error), topics: [] };
    }
    for (const r of removed) shard.removeOffset(groupId, r.topic, r.partition);
    return { errorCode: ErrorCode.NONE, topics: answers };
  }

  /**
   * Expires offsets as Kafka does: an empty group's offsets once
   * offsets.retention.minutes have passed since it became empty (or since
   * the commit, for groups loaded without that time, and for simple groups);
   * a stable consumer group's offsets of topics it no longer subscribes to,
   * counted from the commit; a commit's own expire timestamp when it has
   * one. An offset with a pending transactional commit of its partition
   * stays until the transaction ends. An empty group left without offsets
   * is deleted, unless a transaction of it is still open.
   */
  expireOffsets(): void {
    const now = this.timer.now();
    for (const shard of this.shards.values()) {
      const records: CoordinatorRecord[] = [];
      const expired: { groupId: string; topic: string; partition: number }[] = [];
      const deleted: string[] = [];
      for (const [groupId, group] of shard.groups) {
        const offsets = shard.offsetsOf(groupId);
        let allExpired = true;
        const base = this.expirationBase(group);
        if (offsets && base === null) allExpired = false;
        else if (offsets && base !== null) {
          for (const [topic, byPartition] of offsets) {
            if (group.isSubscribedToTopic(topic)) {
              allExpired = false;
              continue;
            }
            for (const [partition, o] of byPartition) {
              const gone = o.expireTimestampMs !== null ? now >= o.expireTimestampMs : now - base(o) >= this.config.offsetsRetentionMs;
              if (gone && !shard.hasPendingOffset(groupId, topic, partition)) {
                records.push(offsetCommitRecord(groupId, topic, partition, null));
                expired.push({ groupId, topic, partition });
              } else allExpired = false;
            }
          }
        }
        if (allExpired && group.is('Empty') && !shard.hasOpenTransactions(groupId)) {
          records.push(groupMetadataRecord(groupId, null));
          deleted.push(groupId);
        }
      }
      // Consumer groups (KIP-848): offsets of topics no member subscribes to expire counted from their commit;
      // an empty group left without offsets is deleted.
      const image = this.metadata.image();
      const deletedConsumer: string[] = [];
      for (const [groupId, group] of shard.consumerGroups) {
        const subscribed = new Set([...group.members.values()].flatMap((m) => subscribedTopicIds(image, m)));
        let allExpired = true;
        for (const [topic, byPartition] of shard.offsetsOf(groupId) ?? []) {
          const id = image.topics.get(topic)?.topicId;
          if (id !== undefined && subscribed.has(id)) {
            allExpired = false;
            continue;
          }
          for (const [partition, o] of byPartition) {
            const gone = o.expireTimestampMs !== null ? now >= o.expireTimestampMs : now - o.commitTimestampMs >= this.config.offsetsRetentionMs;
            if (gone && !shard.hasPendingOffset(groupId, topic, partition)) {
              records.push(offsetCommitRecord(groupId, topic, partition, null));
              expired.push({ groupId, topic, partition });
            } else allExpired = false;
          }
        }
        if (allExpired && group.members.size === 0 && !shard.hasOpenTransactions(groupId)) {
          for (const memberId of group.target.keys()) records.push({ kind: 'consumer', type: 7, groupId, memberId, value: null });
          records.push({ kind: 'consumer', type: 6, groupId, value: null }, { kind: 'consumer', type: 3, groupId, value: null });
          deletedConsumer.push(groupId);
        }
      }
      if (records.length === 0) continue;
      const error = this.append(shard, records);
      if (error !== ErrorCode.NONE) {
        this.log.warn({ partition: shard.partition, error }, 'cannot persist expired offsets; will try again');
        continue;
      }
      for (const e of expired) shard.removeOffset(e.groupId, e.topic, e.partition);
      for (const groupId of deleted) this.dropGroup(shard, groupId);
      for (const groupId of deletedConsumer) shard.consumerGroups.delete(groupId);
      if (expired.length > 0 || deleted.length > 0 || deletedConsumer.length > 0) {
        this.log.info({ partition: shard.partition, offsets: expired.length, groups: deleted.length + deletedConsumer.length }, 'expired offsets and removed groups');
      }
    }
  }

  /** What an offset's age counts from, or null when none of the group's offsets may expire now. */
  private expirationBase(group: ClassicGroup): ((o: CommittedOffset) => number) | null {
    if (group.protocolType === null) return (o) => o.commitTimestampMs;
    if (group.is('Empty')) {
      const since = group.stateTimestamp;
      return (o) => since ?? o.commitTimestampMs;
    }
    if (group.usesConsumerProtocol && group.subscribedTopics !== null && group.is('Stable')) return (o) => o.commitTimestampMs;
    return null;
  }

  private scheduleOffsetExpiry(): void {
    this.timer.schedule(EXPIRE_OFFSETS_KEY, this.config.offsetsRetentionCheckIntervalMs, () => {
      try {
        this.expireOffsets();
      } catch (err) {
        this.log.warn({ err }, 'offset expiry failed');
      }
      this.scheduleOffsetExpiry();
    });
  }

  // ---- administration ------------------------------------------------------------------------

  /**
   * ListGroups: the groups this broker coordinates, filtered by state
   * (case-insensitive) and type when the filters are not empty.
   */
  listGroups(statesFilter: readonly string[], typesFilter: readonly string[]): ListedGroup[] {
    const states = new Set(statesFilter.map((s) => s.trim().toLowerCase()));
    const types = new Set(typesFilter.map((t) => t.trim().toLowerCase()));
    const out: ListedGroup[] = [];
    for (const shard of this.shards.values()) {
      for (const group of shard.groups.values()) {
        if (group.is('Dead')) continue;
        if (states.size > 0 && !states.has(group.state.toLowerCase())) continue;
        if (types.size > 0 && !types.has('classic')) continue;
        out.push({ groupId: group.groupId, protocolType: group.protocolType ?? '', groupState: group.state, groupType: 'classic' });
      }
      for (const group of shard.consumerGroups.values()) {
        if (states.size > 0 && !states.has(group.state.toLowerCase())) continue;
        if (types.size > 0 && !types.has('consumer')) continue;
        out.push({ groupId: group.groupId, protocolType: 'consumer', groupState: group.state, groupType: 'consumer' });
      }
      for (const group of shard.streamsGroups.values()) {
        const state = group.state;
        if (states.size > 0 && !states.has(state.toLowerCase())) continue;
        if (types.size > 0 && !types.has('streams')) continue;
        out.push({ groupId: group.groupId, protocolType: 'streams', groupState: state, groupType: 'streams' });
      }
    }
    for (const g of this.shares.listed()) {
      if (states.size > 0 && !states.has(g.state.toLowerCase())) continue;
      if (types.size > 0 && !types.has('share')) continue;
      out.push({ groupId: g.groupId, protocolType: 'share', groupState: g.state, groupType: 'share' });
    }
    return out;
  }

  /** DescribeGroups for one group: a group this broker does not know is described as Dead, without error. */
  describeGroup(groupId: string): DescribedGroup {
    const described = (errorCode: number, groupState = ''): DescribedGroup => ({ errorCode, groupId, groupState, protocolType: '', protocolData: '', members: [] });
    if (this.stopped) return described(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const shard = this.shardOf(groupId);
    if (!shard) return described(ErrorCode.NOT_COORDINATOR);
    // A consumer group is no classic group: Dead, which DescribeGroups v6 answers GROUP_ID_NOT_FOUND.
    if (shard.consumerGroups.has(groupId) || shard.streamsGroups.has(groupId) || this.shares.has(groupId)) return { ...described(ErrorCode.NONE, 'Dead'), consumerGroup: true };
    const group = shard.groups.get(groupId);
    if (!group || group.is('Dead')) return described(ErrorCode.NONE, 'Dead');
    const stable = group.is('Stable') && group.protocolName !== null;
    return {
      errorCode: ErrorCode.NONE,
      groupId,
      groupState: group.state,
      protocolType: group.protocolType ?? '',
      protocolData: stable ? group.protocolName! : '',
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        memberMetadata: stable ? m.metadata(group.protocolName!) : EMPTY,
        memberAssignment: m.assignment,
      })),
    };
  }

  /**
   * DeleteGroups for one group: only an empty group goes, with its offsets,
   * pending transactional ones included (one tombstone per partition).
   */
  deleteGroup(groupId: string): number {
    if (this.stopped) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const shard = this.shardOf(groupId);
    if (!shard) return ErrorCode.NOT_COORDINATOR;
    const consumerGroup = shard.consumerGroups.get(groupId);
    const streamsGroup = shard.streamsGroups.get(groupId);
    const group = shard.groups.get(groupId);
    if (consumerGroup) {
      if (consumerGroup.members.size > 0) return ErrorCode.NON_EMPTY_GROUP;
    } else if (streamsGroup) {
      if (streamsGroup.members.size > 0) return ErrorCode.NON_EMPTY_GROUP;
    } else {
      if (!group || group.is('Dead')) return ErrorCode.GROUP_ID_NOT_FOUND;
      if (!group.is('Empty')) return ErrorCode.NON_EMPTY_GROUP;
    }
    const records: CoordinatorRecord[] = [];
    for (const [topic, byPartition] of shard.offsetsOf(groupId) ?? []) {
      for (const partition of byPartition.keys()) records.push(offsetCommitRecord(groupId, topic, partition, null));
    }
    for (const { topic, partition } of shard.pendingPartitionsOf(groupId)) {
      if (!shard.offsetOf(groupId, topic, partition)) records.push(offsetCommitRecord(groupId, topic, partition, null));
    }
    if (consumerGroup) {
      for (const memberId of consumerGroup.target.keys()) records.push({ kind: 'consumer', type: 7, groupId, memberId, value: null });
      records.push({ kind: 'consumer', type: 6, groupId, value: null }, { kind: 'consumer', type: 3, groupId, value: null });
    } else if (streamsGroup) records.push(...this.streams.deletionRecords(streamsGroup));
    else records.push(groupMetadataRecord(groupId, null));
    const error = this.append(shard, records);
    if (error !== ErrorCode.NONE) return appendErrorToResponseError(error);
    shard.dropOffsetsOf(groupId);
    shard.consumerGroups.delete(groupId);
    shard.streamsGroups.delete(groupId);
    this.dropGroup(shard, groupId);
    this.log.info({ group: groupId }, 'deleted group');
    return ErrorCode.NONE;
  }

  // ---- consumer groups (KIP-848) ------------------------------------------------------------

  /** A consumer group, for tests and tools; undefined when this broker does not coordinate one of that id. */
  consumerGroup(groupId: string): ConsumerGroup | undefined {
    return this.shardOf(groupId)?.consumerGroups.get(groupId);
  }

  /**
   * ConsumerGroupHeartbeat (see api/consumer-group-heartbeat.ts): joins,
   * heartbeats or leaves. Every change it makes (member metadata, group
   * epoch, target assignment, the member's reconciled assignment) is written
   * to the group's partition as one batch before it takes effect. The answer
   * carries the member's epoch, the heartbeat interval and, when it changed
   * (or on a join, or a full request), the partitions the member may own now.
   *
   * Example: a first member of a new group joining with epoch 0 and topic t
   * (6 partitions) -> epoch 2 with t-0..5; a second member joining later
   * -> epoch 3 and nothing until the first has revoked half; the first's next
   * heartbeat -> epoch 2 with t-0..2 to keep; once it reports only those ->
   * epoch 3; then the second's heartbeat -> t-3..5.
   */
  consumerGroupHeartbeat(p: ConsumerGroupHeartbeatParams): ConsumerGroupHeartbeatResult {
    if (this.stopped) return heartbeatFailure(ErrorCode.COORDINATOR_NOT_AVAILABLE, null);
    const problem = this.heartbeatRequestProblem(p);
    if (problem) return problem;
    const shard = this.shardOf(p.groupId);
    if (!shard) return heartbeatFailure(ErrorCode.NOT_COORDINATOR, null);
    if (this.shares.has(p.groupId) || shard.streamsGroups.has(p.groupId)) return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${p.groupId} is not a consumer group.`);
    if (p.memberEpoch === LEAVE_EPOCH || p.memberEpoch === STATIC_LEAVE_EPOCH) return this.consumerLeave(shard, p);
    const now = this.timer.now();
    const records: CoordinatorRecord[] = [];
    // A classic group of the same id: an empty one (offsets only, or no members) becomes a consumer group.
    const classic = shard.groups.get(p.groupId);
    let dropClassic = false;
    let upgraded = false;
    let group = shard.consumerGroups.get(p.groupId);
    if (classic && !classic.is('Dead')) {
      if (p.memberEpoch !== 0) return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${p.groupId} is not a consumer group.`);
      if (classic.numMembers > 0) {
        // A classic group with members becomes a consumer group with them (online upgrade), when allowed.
        const conversion = this.convertToConsumerGroup(classic);
        if (typeof conversion === 'string') return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, conversion);
        group = conversion.group;
        records.push(...conversion.records);
        upgraded = true;
      } else records.push(groupMetadataRecord(p.groupId, null));
      dropClassic = true;
    }
    const created = !group || upgraded;
    if (!group) {
      if (p.memberEpoch !== 0) return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, `Consumer group ${p.groupId} not found.`);
      group = new ConsumerGroup(p.groupId);
    }
    const staticHolder = p.instanceId !== null ? group.memberByInstanceId(p.instanceId) : undefined;
    if (!staticHolder && !group.members.has(p.memberId) && group.members.size >= this.config.consumerMaxSize) {
      return heartbeatFailure(ErrorCode.GROUP_MAX_SIZE_REACHED, `The consumer group has reached its maximum capacity of ${this.config.consumerMaxSize} members.`);
    }
    const memberId = p.memberId === '' ? randomUuid() : p.memberId;
    // The member as the group knows it, or a new one; a static member rejoining after a temporary leave takes over.
    let old: ConsumerMember;
    let replaced: ConsumerMember | null = null;
    if (p.instanceId !== null) {
      if (p.memberEpoch === 0) {
        if (!staticHolder) old = group.members.get(memberId) ?? newMember(memberId);
        else if (staticHolder.memberId === memberId) old = staticHolder;
        else if (staticHolder.memberEpoch === STATIC_LEAVE_EPOCH || staticHolder.classic !== null) {
          // Taken over when its holder left for a while, or is a classic member (whose instance restarted with
          // the consumer protocol: a classic member never releases its instance id with epoch -2).
          replaced = staticHolder;
          old = { ...copyMember(staticHolder), memberId, memberEpoch: 0, previousMemberEpoch: 0, pendingRevocation: new Map(), state: MemberState.STABLE };
          old.assigned = new Map([...old.assigned].map(([t, ps]) => [t, new Map([...ps.keys()].map((k) => [k, 0]))]));
        } else {
          return heartbeatFailure(
            ErrorCode.UNRELEASED_INSTANCE_ID,
            `Static member ${memberId} with instance id ${p.instanceId} cannot join the group because the instance id is owned by ${staticHolder.memberId} member.`,
          );
        }
      } else {
        if (!staticHolder) return heartbeatFailure(ErrorCode.UNKNOWN_MEMBER_ID, `Instance id ${p.instanceId} is unknown.`);
        if (staticHolder.memberId !== memberId) {
          return heartbeatFailure(ErrorCode.FENCED_INSTANCE_ID, `Static member ${memberId} with instance id ${p.instanceId} was fenced by member ${staticHolder.memberId}.`);
        }
        old = staticHolder;
      }
    } else {
      const known = group.members.get(memberId);
      if (!known) {
        if (p.memberEpoch !== 0) return heartbeatFailure(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${memberId} is not a member of group ${p.groupId}.`);
        old = newMember(memberId);
      } else old = known;
    }
    const fenced = this.epochFencing(old, p);
    if (fenced) return fenced;

    const updated = copyMember(old);
    if (p.instanceId !== null) updated.instanceId = p.instanceId;
    if (p.rackId !== null) updated.rackId = p.rackId;
    if (p.serverAssignor !== null) updated.serverAssignor = p.serverAssignor;
    if (p.subscribedTopicNames !== null) updated.subscribedTopicNames = [...new Set(p.subscribedTopicNames)].sort();
    if (p.subscribedTopicRegex !== null) updated.subscribedTopicRegex = p.subscribedTopicRegex;
    if (p.rebalanceTimeoutMs !== -1) updated.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
    updated.clientId = p.clientId;
    updated.clientHost = p.clientHost;
    // A member heartbeating with the consumer protocol is one of it from now on.
    updated.classic = null;
    const owned = p.topicPartitions === null ? null : new Map(p.topicPartitions.map((t) => [t.topicId, new Set(t.partitions)]));
    const plan = this.planMemberChange(group, old, updated, replaced, owned, records, now);
    if (records.length > 0) {
      const error = this.append(shard, records);
      if (error !== ErrorCode.NONE) return heartbeatFailure(appendErrorToResponseError(error), null);
    }
    if (upgraded) this.finishUpgrade(shard, classic!, group);
    else if (dropClassic) this.dropGroup(shard, p.groupId);
    if (created) shard.consumerGroups.set(p.groupId, group);
    this.applyMemberPlan(group, plan, replaced);
    const reconciled = plan.reconciled;
    this.scheduleConsumerSession(shard, group, memberId);
    this.updateRebalanceTimer(shard, group, reconciled, old);
    if (plan.isNew) this.log.info({ group: p.groupId, member: memberId, epoch: reconciled.memberEpoch }, 'consumer group member joined');
    const full = p.rebalanceTimeoutMs !== -1 && (p.subscribedTopicNames !== null || p.subscribedTopicRegex !== null) && p.topicPartitions !== null;
    const sendAssignment = p.memberEpoch === 0 || full || !sameAssigned(reconciled.assigned, old.assigned);
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId,
      memberEpoch: reconciled.memberEpoch,
      heartbeatIntervalMs: this.config.consumerHeartbeatIntervalMs,
      assignment: sendAssignment ? [...reconciled.assigned].map(([topicId, ps]) => ({ topicId, partitions: [...ps.keys()].sort((a, b) => a - b) })) : null,
    };
  }

  /**
   * What a member's change (`old` -> `updated`) does to its group, computed
   * on copies and added to `records` (nothing applied): the member's
   * metadata when it changed, a new group epoch when its subscription, the
   * preferred assignor or the subscribed topics changed, a new target
   * assignment when one is due, and the member reconciled towards its
   * target given what it says it owns. `replaced` is a static member whose
   * instance id the member takes over. With `downgrading` (the group becomes
   * a classic group right after), no new target is computed: when the group
   * epoch is ahead of the assignment epoch the member stays as it is, else
   * it is reconciled towards its current target.
   */
  private planMemberChange(
    group: ConsumerGroup,
    old: ConsumerMember,
    updated: ConsumerMember,
    replaced: ConsumerMember | null,
    owned: Owned,
    records: CoordinatorRecord[],
    now: number,
    downgrading = false,
  ): MemberPlan {
    const groupId = group.groupId;
    const memberId = updated.memberId;
    const isNew = !group.members.has(memberId);
    // Compared with what the member subscribed to before (nothing, for a new one; the old member's subscription,
    // for a static member taking over its instance id).
    const subscriptionChanged =
      old.subscribedTopicNames.join('\u0000') !== updated.subscribedTopicNames.join('\u0000') || old.subscribedTopicRegex !== updated.subscribedTopicRegex;
    if (replaced) records.push(...memberTombstones(groupId, replaced.memberId));
    if (isNew || subscriptionChanged || memberMetadataChanged(old, updated)) records.push(memberMetadataRecord(groupId, updated));

    // The group as it would be with this member's change: epoch, metadata hash, target assignment.
    const image = this.metadata.image();
    const members = new Map(group.members);
    if (replaced) members.delete(replaced.memberId);
    members.set(memberId, updated);
    const hash = subscriptionHash(image, members.values());
    // The assignor most members name decides the target: a change of it is a new assignment too.
    const assignorChanged = this.preferredAssignor(group.members.values()) !== this.preferredAssignor(members.values());
    let groupEpoch = group.groupEpoch;
    if (subscriptionChanged || assignorChanged || hash !== group.metadataHash) {
      groupEpoch++;
      records.push({ kind: 'consumer', type: 3, groupId, value: { epoch: groupEpoch, metadataHash: hash } });
    }
    let assignmentEpoch = group.assignmentEpoch;
    let assignmentTimestamp = group.assignmentTimestamp;
    let target = new Map(group.target);
    if (replaced) {
      const moved = target.get(replaced.memberId);
      target.delete(replaced.memberId);
      if (moved) {
        target.set(memberId, moved);
        records.push(targetMemberRecord(groupId, memberId, moved));
      }
    }
    const staleAssignment = downgrading && assignmentEpoch < groupEpoch;
    if (staleAssignment) {
      if (isNew) records.push(currentAssignmentRecord(groupId, updated));
      return { isNew, subscriptionChanged, groupEpoch, hash, assignmentEpoch, assignmentTimestamp, target, reconciled: updated, staleAssignment };
    }
    const interval = this.config.consumerAssignmentIntervalMs;
    if (assignmentEpoch < groupEpoch && (assignmentTimestamp === 0 || interval === 0 || now >= assignmentTimestamp + interval)) {
      const assignor = this.preferredAssignor(members.values());
      const computed = assign(
        assignor,
        [...members.values()].map((m) => ({ memberId: m.memberId, instanceId: m.instanceId, topics: subscribedTopicIds(image, m), previous: target.get(m.memberId) ?? new Map() })),
        (topicId) => image.topicsById.get(topicId)?.partitions.length ?? 0,
      );
      for (const [id, t] of computed) if (!sameTarget(t, target.get(id))) records.push(targetMemberRecord(groupId, id, t));
      target = computed;
      assignmentEpoch = groupEpoch;
      assignmentTimestamp = now;
      records.push({ kind: 'consumer', type: 6, groupId, value: { assignmentEpoch, assignmentTimestamp: BigInt(now) } });
    }
    const view = new ConsumerGroup(groupId);
    for (const [id, m] of members) if (id !== memberId) view.members.set(id, m);
    const reconciled = reconcile(view, updated, assignmentEpoch, target.get(memberId) ?? new Map(), owned, new Set(subscribedTopicIds(image, updated)), subscriptionChanged);
    const assignmentChanged =
      isNew ||
      reconciled.memberEpoch !== old.memberEpoch ||
      reconciled.previousMemberEpoch !== old.previousMemberEpoch ||
      reconciled.state !== old.state ||
      !sameAssigned(reconciled.assigned, old.assigned) ||
      !sameAssigned(reconciled.pendingRevocation, old.pendingRevocation);
    if (assignmentChanged) records.push(currentAssignmentRecord(groupId, reconciled));
    return { isNew, subscriptionChanged, groupEpoch, hash, assignmentEpoch, assignmentTimestamp, target, reconciled, staleAssignment: false };
  }

  /** Applies a plan whose records were written. */
  private applyMemberPlan(group: ConsumerGroup, plan: MemberPlan, replaced: ConsumerMember | null): void {
    if (replaced) {
      group.members.delete(replaced.memberId);
      this.cancelConsumerMemberTimers(group.groupId, replaced.memberId);
    }
    group.groupEpoch = plan.groupEpoch;
    group.metadataHash = plan.hash;
    group.assignmentEpoch = plan.assignmentEpoch;
    group.assignmentTimestamp = plan.assignmentTimestamp;
    group.target.clear();
    for (const [id, t] of plan.target) group.target.set(id, t);
    group.members.set(plan.reconciled.memberId, plan.reconciled);
  }

  private get upgradeAllowed(): boolean {
    return this.config.consumerMigrationPolicy === 'upgrade' || this.config.consumerMigrationPolicy === 'bidirectional';
  }

  private get downgradeAllowed(): boolean {
    return this.config.consumerMigrationPolicy === 'downgrade' || this.config.consumerMigrationPolicy === 'bidirectional';
  }

  /**
   * The consumer group a classic group with members becomes (online
   * upgrade, Kafka's ConsumerGroup.fromClassicGroup), with the records that
   * make it so: the classic group's tombstone, each member's metadata, the
   * group epoch, each member's target, the assignment epoch and each
   * member's current assignment. The group epoch, assignment epoch and every
   * member's epoch are the classic generation; each member keeps its
   * classic assignment as its current and target one, and its session
   * timeout and protocols as classic metadata. A message saying why when
   * the group cannot be upgraded (GROUP_ID_NOT_FOUND).
   */
  private convertToConsumerGroup(classic: ClassicGroup): { group: ConsumerGroup; records: CoordinatorRecord[] } | string {
    const groupId = classic.groupId;
    const refused = (why: string) => {
      this.log.info({ group: groupId, why }, 'classic group not upgraded to a consumer group');
      return `Classic group ${groupId} cannot become a consumer group: ${why}.`;
    };
    if (!this.upgradeAllowed) return refused(`group.consumer.migration.policy (${this.config.consumerMigrationPolicy}) does not allow upgrades`);
    if (!classic.usesConsumerProtocol) return refused('its members do not use the consumer protocol type');
    if (classic.numMembers > this.config.consumerMaxSize) return refused(`it has more members than group.consumer.max.size (${this.config.consumerMaxSize})`);
    if (classic.protocolName === null) return refused('its members have no agreed protocol yet');
    const image = this.metadata.image();
    const epoch = classic.generationId;
    const group = new ConsumerGroup(groupId);
    group.groupEpoch = epoch;
    group.assignmentEpoch = epoch;
    group.assignmentTimestamp = 0;
    for (const cm of classic.members.values()) {
      const assigned: Assigned = new Map();
      const target: TargetAssignment = new Map();
      if (cm.assignment.length > 0) {
        const a = readAssignment(cm.assignment);
        if (!a) return refused(`the assignment of member ${cm.memberId} is no ConsumerProtocol assignment`);
        if (a.userData !== null && a.userData.length > 0) return refused(`member ${cm.memberId} has user data from a client-side assignor, which the consumer protocol would drop`);
        for (const tp of a.assignedPartitions) {
          const topic = image.topics.get(tp.topic);
          if (!topic || tp.partitions.length === 0) continue;
          const ps = assigned.get(topic.topicId) ?? new Map<number, number>();
          const ts = target.get(topic.topicId) ?? new Set<number>();
          for (const partition of tp.partitions) {
            ps.set(partition, epoch);
            ts.add(partition);
          }
          assigned.set(topic.topicId, ps);
          target.set(topic.topicId, ts);
        }
      }
      const sub = readSubscription(cm.metadata(classic.protocolName));
      if (!sub) return refused(`the subscription of member ${cm.memberId} is no ConsumerProtocol subscription`);
      group.members.set(cm.memberId, {
        ...newMember(cm.memberId),
        instanceId: cm.groupInstanceId,
        rackId: sub.rackId,
        clientId: cm.clientId,
        clientHost: cm.clientHost,
        subscribedTopicNames: [...new Set(sub.topics)].sort(),
        rebalanceTimeoutMs: cm.rebalanceTimeoutMs,
        memberEpoch: epoch,
        previousMemberEpoch: epoch,
        assigned,
        classic: { sessionTimeoutMs: cm.sessionTimeoutMs, protocols: cm.protocols.map((x) => ({ name: x.name, metadata: x.metadata })) },
      });
      group.target.set(cm.memberId, target);
    }
    group.metadataHash = subscriptionHash(image, group.members.values());
    const records: CoordinatorRecord[] = [groupMetadataRecord(groupId, null)];
    for (const m of group.members.values()) records.push(memberMetadataRecord(groupId, m));
    records.push({ kind: 'consumer', type: 3, groupId, value: { epoch, metadataHash: group.metadataHash } });
    for (const [id, t] of group.target) records.push(targetMemberRecord(groupId, id, t));
    records.push({ kind: 'consumer', type: 6, groupId, value: { assignmentEpoch: epoch, assignmentTimestamp: 0n } });
    for (const m of group.members.values()) records.push(currentAssignmentRecord(groupId, m));
    return { group, records };
  }

  /** The upgrade's records are written: parked classic requests are told to rejoin, and the members' sessions go on in the consumer group. */
  private finishUpgrade(shard: Shard, classic: ClassicGroup, group: ConsumerGroup): void {
    for (const member of classic.members.values()) {
      classic.completeJoin(member, joinError(ErrorCode.REBALANCE_IN_PROGRESS, member.memberId));
      classic.completeSync(member, syncError(ErrorCode.REBALANCE_IN_PROGRESS));
    }
    this.dropGroup(shard, classic.groupId);
    shard.consumerGroups.set(group.groupId, group);
    for (const id of group.members.keys()) this.scheduleConsumerSession(shard, group, id);
    this.log.info({ group: group.groupId, members: group.members.size, epoch: group.groupEpoch }, 'converted the classic group to a consumer group');
  }

  /**
   * Whether removing `gone` leaves a group of classic members only that may
   * become a classic group again (online downgrade).
   */
  private downgradeOnRemoval(group: ConsumerGroup, gone: ReadonlySet<string>): boolean {
    const remaining = [...group.members.values()].filter((m) => !gone.has(m.memberId));
    if (remaining.length === 0 || remaining.some((m) => m.classic === null)) return false;
    if (!this.downgradeAllowed) {
      this.log.info({ group: group.groupId, policy: this.config.consumerMigrationPolicy }, 'consumer group of classic members only not downgraded: the migration policy does not allow it');
      return false;
    }
    if (remaining.length > this.config.maxSize) {
      this.log.info({ group: group.groupId }, 'consumer group of classic members only not downgraded: more members than group.max.size');
      return false;
    }
    return true;
  }

  /**
   * Whether a classic JoinGroup taking over the instance id of `holder`, a
   * static member of the consumer protocol, leaves a group of classic
   * members only that may become a classic group at once (Kafka's online
   * downgrade on a replaced static member).
   */
  private downgradeOnReplacement(group: ConsumerGroup, holder: ConsumerMember): boolean {
    if (holder.classic !== null || group.numClassicMembers !== group.members.size - 1) return false;
    if (!this.downgradeAllowed) {
      this.log.info({ group: group.groupId, policy: this.config.consumerMigrationPolicy }, 'consumer group of classic members only not downgraded: the migration policy does not allow it');
      return false;
    }
    if (group.members.size > this.config.maxSize) {
      this.log.info({ group: group.groupId }, 'consumer group of classic members only not downgraded: more members than group.max.size');
      return false;
    }
    return true;
  }

  /**
   * Turns a consumer group whose members left are all classic into a
   * classic group (online downgrade, Kafka's ClassicGroup.fromConsumerGroup):
   * the consumer group's records get tombstones and the classic group is
   * written Stable at the group epoch, each member with its target
   * assignment as a ConsumerProtocol assignment; then a rebalance starts
   * unless `change.rebalance` is false.
   *
   * `change.joining` is a classic member taking over the instance id of
   * `replacing` (a JoinGroup whose member records, in `change.before`, are
   * written first in the same batch): it is in the classic group in place
   * of the member it replaces, with that member's target, and the tombstones
   * name it instead of the replaced member, whose own records `before`
   * already removed. The error code of the write.
   */
  private convertToClassicGroup(
    shard: Shard,
    group: ConsumerGroup,
    gone: ReadonlySet<string>,
    why: string,
    change: { joining?: { member: ConsumerMember; replacing: ConsumerMember }; before?: readonly CoordinatorRecord[]; rebalance?: boolean } = {},
  ): number {
    const groupId = group.groupId;
    const now = this.timer.now();
    const joining = change.joining;
    const classic = new ClassicGroup(groupId, { state: 'Stable', now, generationId: group.groupEpoch, protocolType: 'consumer' });
    const addMember = (m: ConsumerMember): void => {
      const protocols = m.classic!.protocols.map((x) => ({ name: x.name, metadata: x.metadata }));
      classic.add(new GroupMember(m.memberId, m.instanceId, m.clientId, m.clientHost, m.rebalanceTimeoutMs, m.classic!.sessionTimeoutMs, 'consumer', protocols), null);
    };
    for (const m of group.members.values()) {
      if (gone.has(m.memberId) || m.classic === null) continue;
      if (joining && m.instanceId === joining.member.instanceId) continue;
      addMember(m);
    }
    if (joining) addMember(joining.member);
    classic.protocolName = classic.selectProtocol();
    classic.subscribedTopics = classic.computeSubscribedTopics();
    const image = this.metadata.image();
    for (const member of classic.members.values()) {
      const targetOf = joining && member.memberId === joining.member.memberId ? joining.replacing.memberId : member.memberId;
      const byName = new Map<string, number[]>();
      for (const [topicId, ps] of group.target.get(targetOf) ?? new Map<string, Set<number>>()) {
        const topic = image.topicsById.get(topicId);
        if (topic) byName.set(topic.name, [...ps]);
      }
      member.assignment = writeAssignment(protocolVersion(member.metadata(classic.protocolName)) ?? 0, byName);
    }
    // The consumer group's member ids, the replaced member's standing for the one that took its place.
    const ids = [...group.members.keys()].map((id) => (joining && id === joining.replacing.memberId ? joining.member.memberId : id));
    const records: CoordinatorRecord[] = [...(change.before ?? [])];
    for (const id of ids) records.push({ kind: 'consumer', type: 8, groupId, memberId: id, value: null });
    for (const id of ids) records.push({ kind: 'consumer', type: 7, groupId, memberId: id, value: null });
    records.push({ kind: 'consumer', type: 6, groupId, value: null });
    for (const id of ids) records.push({ kind: 'consumer', type: 5, groupId, memberId: id, value: null });
    records.push({ kind: 'consumer', type: 4, groupId, value: null }, { kind: 'consumer', type: 3, groupId, value: null });
    records.push(groupMetadataRecord(groupId, this.groupValue(classic, classic.assignments())));
    const error = this.append(shard, records);
    if (error !== ErrorCode.NONE) return appendErrorToResponseError(error);
    for (const id of new Set([...group.members.keys(), ...ids])) this.cancelConsumerMemberTimers(groupId, id);
    shard.consumerGroups.delete(groupId);
    shard.groups.set(groupId, classic);
    for (const member of classic.members.values()) this.rescheduleHeartbeat(shard, classic, member);
    this.log.info({ group: groupId, members: classic.numMembers, generation: classic.generationId, why }, 'converted the consumer group to a classic group');
    if (change.rebalance ?? true) this.prepareRebalance(shard, classic);
    return ErrorCode.NONE;
  }

  // ---- classic members of consumer groups (online migration) -------------------------------

  /**
   * JoinGroup from a classic member of a consumer group (Kafka's
   * classicGroupJoinToConsumerGroup): the member joins (or updates) the
   * group like a ConsumerGroupHeartbeat would, its ConsumerProtocol
   * subscription standing for its subscribed topics and the partitions it
   * says it owns; it is reconciled towards its share of the server-side
   * target and answered at once with its member epoch as the generation and
   * no leader (it is told its partitions by SyncGroup). It then has its
   * rebalance timeout to sync, and its session timeout between heartbeats.
   *
   * When the member takes over the instance id of a static member of the
   * consumer protocol and every other member is classic, the group becomes a
   * classic group in the same write (if the migration policy allows
   * downgrades and the group fits group.max.size): the member is in it with
   * the replaced member's target, Stable at the group epoch, or rebalancing
   * when its join raised the group epoch past the assignment; the answer is
   * the same as above.
   */
  private classicJoinToConsumerGroup(shard: Shard, group: ConsumerGroup, p: JoinGroupParams, waiter: Waiter<JoinGroupResult>): void {
    const fail = (errorCode: number, memberId = p.memberId): void => void waiter.complete(joinError(errorCode, memberId));
    if (this.config.consumerMigrationPolicy === 'disabled') return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const isUnknown = p.memberId === '';
    const memberId = isUnknown ? randomUuid() : p.memberId;
    const staticHolder = p.groupInstanceId !== null ? group.memberByInstanceId(p.groupInstanceId) : undefined;
    if (!staticHolder && group.members.size >= this.config.consumerMaxSize && (isUnknown || !group.members.has(memberId))) return fail(ErrorCode.GROUP_MAX_SIZE_REACHED);
    if (!group.supportsClassicProtocols(p.protocolType, p.protocols.map((x) => x.name))) return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    if (p.requireKnownMemberId && isUnknown && p.groupInstanceId === null) return fail(ErrorCode.MEMBER_ID_REQUIRED, memberId);
    let old: ConsumerMember;
    let replaced: ConsumerMember | null = null;
    if (p.groupInstanceId === null) old = group.members.get(memberId) ?? newMember(memberId);
    else if (isUnknown) {
      if (!staticHolder) old = newMember(memberId);
      else {
        // A restarted static member takes its instance's place, partitions and all, under a new member id.
        replaced = staticHolder;
        old = { ...copyMember(staticHolder), memberId, memberEpoch: 0, previousMemberEpoch: 0 };
      }
    } else {
      if (!staticHolder) return fail(ErrorCode.UNKNOWN_MEMBER_ID);
      if (staticHolder.memberId !== memberId) return fail(ErrorCode.FENCED_INSTANCE_ID);
      old = staticHolder;
    }
    const sub = p.protocols.length > 0 ? readSubscription(p.protocols[0]!.metadata) : null;
    if (!sub) return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const image = this.metadata.image();
    const updated = copyMember(old);
    if (p.groupInstanceId !== null) updated.instanceId = p.groupInstanceId;
    if (sub.rackId !== null) updated.rackId = sub.rackId;
    if (p.rebalanceTimeoutMs !== -1) updated.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
    updated.subscribedTopicNames = [...new Set(sub.topics)].sort();
    updated.subscribedTopicRegex = '';
    updated.clientId = p.clientId;
    updated.clientHost = p.clientHost;
    updated.classic = { sessionTimeoutMs: p.sessionTimeoutMs, protocols: p.protocols.map((x) => ({ name: x.name, metadata: x.metadata })) };
    const owned = new Map<string, Set<number>>();
    for (const tp of sub.ownedPartitions) {
      const topic = image.topics.get(tp.topic);
      if (!topic) continue;
      const ps = owned.get(topic.topicId) ?? new Set<number>();
      for (const x of tp.partitions) ps.add(x);
      owned.set(topic.topicId, ps);
    }
    const records: CoordinatorRecord[] = [];
    // A static member of the consumer protocol replaced by this classic join, the others being classic already:
    // the group becomes a classic group now, with this member in it.
    const downgrade = staticHolder !== undefined && this.downgradeOnReplacement(group, staticHolder);
    const plan = this.planMemberChange(group, old, updated, replaced, owned, records, this.timer.now(), downgrade);
    if (downgrade) {
      const joined = plan.reconciled;
      const why = plan.staleAssignment ? 'static member replaced by a classic member, with a stale assignment' : 'static member replaced by a classic member';
      const error = this.convertToClassicGroup(shard, group, new Set(), why, {
        joining: { member: joined, replacing: staticHolder! },
        before: records,
        rebalance: plan.staleAssignment,
      });
      if (error !== ErrorCode.NONE) return fail(error);
      waiter.complete(classicJoinAnswer(joined.memberEpoch, updated.classic.protocols[0]!.name, memberId));
      return;
    }
    if (records.length > 0) {
      const error = this.append(shard, records);
      if (error !== ErrorCode.NONE) return fail(appendErrorToResponseError(error));
    }
    this.applyMemberPlan(group, plan, replaced);
    const reconciled = plan.reconciled;
    const groupId = group.groupId;
    this.timer.cancel(classicJoinKey(groupId, memberId));
    this.timer.cancel(rebalanceKey(groupId, memberId));
    this.scheduleConsumerSession(shard, group, memberId);
    this.timer.schedule(classicSyncKey(groupId, memberId), p.rebalanceTimeoutMs, () => this.fenceLater(shard, groupId, memberId, 'did not sync within its rebalance timeout'));
    if (plan.isNew) this.log.info({ group: groupId, member: memberId, epoch: reconciled.memberEpoch }, 'classic member joined the consumer group');
    waiter.complete(classicJoinAnswer(reconciled.memberEpoch, updated.classic.protocols[0]!.name, memberId));
  }

  /** A timer's fencing of a member of a consumer group, if it is still there. */
  private fenceLater(shard: Shard, groupId: string, memberId: string, why: string): void {
    const g = shard.consumerGroups.get(groupId);
    if (!g || this.shards.get(shard.partition) !== shard || !g.members.has(memberId)) return;
    this.fenceConsumerMembers(shard, g, [memberId], why);
  }

  /** A classic member told to rejoin has its rebalance timeout to do so, counted from the first time it is told. */
  private scheduleClassicJoinTimeout(shard: Shard, group: ConsumerGroup, m: ConsumerMember): void {
    const key = classicJoinKey(group.groupId, m.memberId);
    if (this.timer.isScheduled(key)) return;
    const groupId = group.groupId;
    this.timer.schedule(key, m.rebalanceTimeoutMs, () => this.fenceLater(shard, groupId, m.memberId, 'did not rejoin within its rebalance timeout'));
  }

  /** The member a classic request names (by instance id for a static one), or the error to answer. */
  private classicMemberOf(group: ConsumerGroup, memberId: string, instanceId: string | null): ConsumerMember | number {
    let m: ConsumerMember | undefined;
    if (instanceId === null) m = group.members.get(memberId);
    else {
      m = group.memberByInstanceId(instanceId);
      if (m && m.memberId !== memberId) return ErrorCode.FENCED_INSTANCE_ID;
    }
    if (!m || m.classic === null) return ErrorCode.UNKNOWN_MEMBER_ID;
    return m;
  }

  /**
   * SyncGroup from a classic member of a consumer group (Kafka's
   * classicGroupSyncToConsumerGroup): the partitions the member may own now,
   * as a ConsumerProtocol assignment of its subscription's version;
   * REBALANCE_IN_PROGRESS when a newer target awaits it and it has nothing
   * to revoke first (it must join again).
   */
  private classicSyncToConsumerGroup(shard: Shard, group: ConsumerGroup, p: SyncGroupParams): SyncGroupResult {
    const found = this.classicMemberOf(group, p.memberId, p.groupInstanceId);
    if (typeof found === 'number') return syncError(found);
    const m = found;
    if (p.generationId !== m.memberEpoch) return syncError(ErrorCode.ILLEGAL_GENERATION);
    const protocol = m.classic!.protocols[0]!;
    if ((p.protocolType !== null && p.protocolType !== 'consumer') || (p.protocolName !== null && p.protocolName !== protocol.name)) {
      return syncError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    }
    if (group.assignmentEpoch > m.memberEpoch && m.state !== MemberState.UNREVOKED_PARTITIONS) {
      this.scheduleClassicJoinTimeout(shard, group, m);
      return syncError(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    this.timer.cancel(classicSyncKey(group.groupId, m.memberId));
    this.scheduleConsumerSession(shard, group, m.memberId);
    const image = this.metadata.image();
    const byName = new Map<string, number[]>();
    for (const [topicId, ps] of m.assigned) {
      const topic = image.topicsById.get(topicId);
      if (topic) byName.set(topic.name, [...ps.keys()]);
    }
    return { errorCode: ErrorCode.NONE, protocolType: p.protocolType, protocolName: p.protocolName, assignment: writeAssignment(protocolVersion(protocol.metadata) ?? 0, byName) };
  }

  /**
   * Heartbeat from a classic member of a consumer group (Kafka's
   * classicGroupHeartbeatToConsumerGroup): its session restarts;
   * REBALANCE_IN_PROGRESS when it must join again, to revoke partitions,
   * to move to a newer target, or to take partitions others released.
   */
  private classicHeartbeatToConsumerGroup(shard: Shard, group: ConsumerGroup, p: HeartbeatParams): number {
    const found = this.classicMemberOf(group, p.memberId, p.groupInstanceId);
    if (typeof found === 'number') return found;
    const m = found;
    if (p.generationId !== m.memberEpoch) return ErrorCode.ILLEGAL_GENERATION;
    this.scheduleConsumerSession(shard, group, m.memberId);
    const mustRejoin =
      m.memberEpoch < group.assignmentEpoch ||
      m.state === MemberState.UNREVOKED_PARTITIONS ||
      (m.state === MemberState.UNRELEASED_PARTITIONS && !group.waitingOnUnreleasedPartition(m));
    if (!mustRejoin) return ErrorCode.NONE;
    this.scheduleClassicJoinTimeout(shard, group, m);
    return ErrorCode.REBALANCE_IN_PROGRESS;
  }

  /**
   * LeaveGroup naming members of a consumer group (Kafka's
   * classicGroupLeaveToConsumerGroup), of either protocol: each one known
   * leaves, all in one write; a static member may be named by its instance
   * id alone.
   */
  private classicLeaveToConsumerGroup(shard: Shard, group: ConsumerGroup, members: readonly { memberId: string; groupInstanceId: string | null }[]): LeaveGroupResult {
    const answers: LeaveGroupResult['members'] = [];
    const leaving: string[] = [];
    for (const x of members) {
      let errorCode: number = ErrorCode.NONE;
      let m: ConsumerMember | undefined;
      if (x.groupInstanceId === null) m = group.members.get(x.memberId);
      else {
        m = group.memberByInstanceId(x.groupInstanceId);
        if (m && x.memberId !== '' && m.memberId !== x.memberId) errorCode = ErrorCode.FENCED_INSTANCE_ID;
      }
      if (!m) errorCode = ErrorCode.UNKNOWN_MEMBER_ID;
      if (errorCode === ErrorCode.NONE) {
        leaving.push(m!.memberId);
        this.log.info({ group: group.groupId, memberId: m!.memberId, groupInstanceId: x.groupInstanceId }, 'member left the consumer group (LeaveGroup)');
      }
      answers.push({ memberId: x.memberId, groupInstanceId: x.groupInstanceId, errorCode });
    }
    const error = this.fenceConsumerMembers(shard, group, leaving, 'left');
    if (error !== ErrorCode.NONE) return { errorCode: error, members: [] };
    return { errorCode: ErrorCode.NONE, members: answers };
  }

  /** Kafka's request checks, in its order (ConsumerGroupHeartbeatRequest validation). */
  private heartbeatRequestProblem(p: ConsumerGroupHeartbeatParams): ConsumerGroupHeartbeatResult | null {
    const invalid = (message: string) => heartbeatFailure(ErrorCode.INVALID_REQUEST, message);
    if (p.memberId.trim() === '' && (p.version >= 1 || p.memberEpoch > 0 || p.memberEpoch === LEAVE_EPOCH)) return invalid("MemberId can't be empty.");
    if (p.groupId.trim() === '') return invalid("GroupId can't be empty.");
    if (p.instanceId !== null && p.instanceId.trim() === '') return invalid("InstanceId can't be empty.");
    if (p.rackId !== null && p.rackId.trim() === '') return invalid("RackId can't be empty.");
    if (p.memberEpoch === 0) {
      if (p.rebalanceTimeoutMs === -1) return invalid('RebalanceTimeoutMs must be provided in first request.');
      if (p.topicPartitions === null || p.topicPartitions.length > 0) return invalid('TopicPartitions must be empty when (re-)joining.');
      if (p.subscribedTopicNames === null && p.subscribedTopicRegex === null) {
        return invalid('Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.');
      }
    } else if (p.memberEpoch === STATIC_LEAVE_EPOCH) {
      if (p.instanceId === null) return invalid("InstanceId can't be null.");
    } else if (p.memberEpoch < STATIC_LEAVE_EPOCH) {
      return invalid('MemberEpoch is invalid.');
    }
    if (p.serverAssignor !== null && !(this.config.consumerAssignors as readonly string[]).includes(p.serverAssignor)) {
      return heartbeatFailure(ErrorCode.UNSUPPORTED_ASSIGNOR, `ServerAssignor ${p.serverAssignor} is not supported. Supported assignors: ${this.config.consumerAssignors.join(', ')}.`);
    }
    if (p.subscribedTopicRegex !== null && p.subscribedTopicRegex !== '' && compileRegex(p.subscribedTopicRegex) === null) {
      return heartbeatFailure(ErrorCode.INVALID_REGULAR_EXPRESSION, `SubscribedTopicRegex \`${p.subscribedTopicRegex}\` is not a valid regular expression.`);
    }
    return null;
  }

  /** FENCED_MEMBER_EPOCH for an epoch the member is not at (a lost answer's previous epoch is taken back). */
  private epochFencing(m: ConsumerMember, p: ConsumerGroupHeartbeatParams): ConsumerGroupHeartbeatResult | null {
    if (p.memberEpoch === 0) return null;
    if (p.memberEpoch > m.memberEpoch) {
      return heartbeatFailure(
        ErrorCode.FENCED_MEMBER_EPOCH,
        `The consumer group member has a greater member epoch (${p.memberEpoch}) than the one known by the group coordinator (${m.memberEpoch}). The member must abandon all its partitions and rejoin.`,
      );
    }
    if (p.memberEpoch < m.memberEpoch) {
      const ownsOnlyAssigned =
        p.topicPartitions !== null && p.topicPartitions.every((t) => t.partitions.every((x) => m.assigned.get(t.topicId)?.has(x) === true));
      if (p.memberEpoch !== m.previousMemberEpoch || !ownsOnlyAssigned) {
        return heartbeatFailure(
          ErrorCode.FENCED_MEMBER_EPOCH,
          `The consumer group member has a smaller member epoch (${p.memberEpoch}) than the one known by the group coordinator (${m.memberEpoch}). The member must abandon all its partitions and rejoin.`,
        );
      }
    }
    return null;
  }

  /** The assignor most members name, else the first configured. */
  private preferredAssignor(members: Iterable<ConsumerMember>): AssignorName {
    const counts = new Map<string, number>();
    for (const m of members) if (m.serverAssignor !== null) counts.set(m.serverAssignor, (counts.get(m.serverAssignor) ?? 0) + 1);
    let best: string | null = null;
    for (const [name, n] of counts) if (best === null || n > counts.get(best)!) best = name;
    const configured = this.config.consumerAssignors;
    return (best !== null && (configured as readonly string[]).includes(best) ? best : configured[0]!) as AssignorName;
  }

  /** Epoch -1 (leave) or -2 (a static member's temporary leave). */
  private consumerLeave(shard: Shard, p: ConsumerGroupHeartbeatParams): ConsumerGroupHeartbeatResult {
    const group = shard.consumerGroups.get(p.groupId);
    if (!group) return heartbeatFailure(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${p.groupId} not found.`);
    let member: ConsumerMember | undefined;
    if (p.instanceId === null) {
      member = group.members.get(p.memberId);
      if (!member) return heartbeatFailure(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${p.memberId} is not a member of group ${p.groupId}.`);
    } else {
      member = group.memberByInstanceId(p.instanceId);
      if (!member) return heartbeatFailure(ErrorCode.UNKNOWN_MEMBER_ID, `Instance id ${p.instanceId} is unknown.`);
      if (member.memberId !== p.memberId) {
        return heartbeatFailure(ErrorCode.FENCED_INSTANCE_ID, `Static member ${p.memberId} with instance id ${p.instanceId} was fenced by member ${member.memberId}.`);
      }
      if (p.memberEpoch === STATIC_LEAVE_EPOCH) {
        // Kept, with its partitions, until its session times out or it rejoins.
        const left: ConsumerMember = {
          ...copyMember(member),
          memberEpoch: STATIC_LEAVE_EPOCH,
          pendingRevocation: new Map(),
          assigned: new Map([...member.assigned].map(([t, ps]) => [t, new Map([...ps.keys()].map((k) => [k, 0]))])),
        };
        const error = this.append(shard, [currentAssignmentRecord(p.groupId, left)]);
        if (error !== ErrorCode.NONE) return heartbeatFailure(appendErrorToResponseError(error), null);
        group.members.set(member.memberId, left);
        this.timer.cancel(rebalanceKey(p.groupId, member.memberId));
        return { errorCode: ErrorCode.NONE, errorMessage: null, memberId: member.memberId, memberEpoch: STATIC_LEAVE_EPOCH, heartbeatIntervalMs: 0, assignment: null };
      }
    }
    const error = this.fenceConsumerMembers(shard, group, [member.memberId], 'left');
    if (error !== ErrorCode.NONE) return heartbeatFailure(error, null);
    return { errorCode: ErrorCode.NONE, errorMessage: null, memberId: p.memberId, memberEpoch: LEAVE_EPOCH, heartbeatIntervalMs: 0, assignment: null };
  }

  /**
   * Removes members (a leave, an expired session or rebalance timeout): their
   * records get tombstones and the group epoch rises, so that the others are
   * given the partitions at their next heartbeat. The error code of the write.
   */
  private fenceConsumerMembers(shard: Shard, group: ConsumerGroup, memberIds: readonly string[], why: string): number {
    const gone = new Set(memberIds.filter((id) => group.members.has(id)));
    if (gone.size === 0) return ErrorCode.NONE;
    if (this.downgradeOnRemoval(group, gone)) return this.convertToClassicGroup(shard, group, gone, why);
    const records: CoordinatorRecord[] = [];
    for (const id of gone) records.push(...memberTombstones(group.groupId, id));
    const remaining = [...group.members.values()].filter((m) => !gone.has(m.memberId));
    const hash = subscriptionHash(this.metadata.image(), remaining);
    const groupEpoch = group.groupEpoch + 1;
    records.push({ kind: 'consumer', type: 3, groupId: group.groupId, value: { epoch: groupEpoch, metadataHash: hash } });
    const empty = remaining.length === 0;
    if (empty) records.push({ kind: 'consumer', type: 6, groupId: group.groupId, value: { assignmentEpoch: groupEpoch, assignmentTimestamp: 0n } });
    const error = this.append(shard, records);
    if (error !== ErrorCode.NONE) return appendErrorToResponseError(error);
    for (const id of gone) {
      group.members.delete(id);
      group.target.delete(id);
      this.cancelConsumerMemberTimers(group.groupId, id);
    }
    group.groupEpoch = groupEpoch;
    group.metadataHash = hash;
    if (empty) {
      group.assignmentEpoch = groupEpoch;
      group.assignmentTimestamp = 0;
    }
    this.log.info({ group: group.groupId, members: [...gone], why, groupEpoch }, 'consumer group members removed');
    return ErrorCode.NONE;
  }

  private scheduleConsumerSession(shard: Shard, group: ConsumerGroup, memberId: string): void {
    const groupId = group.groupId;
    const timeoutMs = group.members.get(memberId)?.classic?.sessionTimeoutMs ?? this.config.consumerSessionTimeoutMs;
    this.timer.schedule(consumerSessionKey(groupId, memberId), timeoutMs, () => {
      const g = shard.consumerGroups.get(groupId);
      if (!g || this.shards.get(shard.partition) !== shard || !g.members.has(memberId)) return;
      const error = this.fenceConsumerMembers(shard, g, [memberId], 'session timed out');
      // Not written: try again later rather than keep a member nobody hears from.
      if (error !== ErrorCode.NONE) this.scheduleConsumerSession(shard, g, memberId);
    });
  }

  /** A member that must revoke partitions has its rebalance timeout to do so, or it is fenced. */
  private updateRebalanceTimer(shard: Shard, group: ConsumerGroup, now: ConsumerMember, before: ConsumerMember): void {
    const key = rebalanceKey(group.groupId, now.memberId);
    // Classic members have their join and sync deadlines instead (see classicJoinToConsumerGroup).
    if (now.state !== MemberState.UNREVOKED_PARTITIONS || now.classic !== null) {
      this.timer.cancel(key);
      return;
    }
    if (before.state === MemberState.UNREVOKED_PARTITIONS && before.memberEpoch === now.memberEpoch && this.timer.isScheduled(key)) return;
    const epoch = now.memberEpoch;
    const groupId = group.groupId;
    const timeout = now.rebalanceTimeoutMs > 0 ? now.rebalanceTimeoutMs : this.config.consumerSessionTimeoutMs;
    this.timer.schedule(key, timeout, () => {
      const g = shard.consumerGroups.get(groupId);
      const m = g?.members.get(now.memberId);
      if (!g || !m || this.shards.get(shard.partition) !== shard) return;
      if (m.memberEpoch === epoch && m.state === MemberState.UNREVOKED_PARTITIONS) this.fenceConsumerMembers(shard, g, [m.memberId], 'did not revoke its partitions within its rebalance timeout');
    });
  }

  private cancelConsumerMemberTimers(groupId: string, memberId: string): void {
    this.timer.cancel(consumerSessionKey(groupId, memberId));
    this.timer.cancel(rebalanceKey(groupId, memberId));
    this.timer.cancel(classicJoinKey(groupId, memberId));
    this.timer.cancel(classicSyncKey(groupId, memberId));
  }

  /** ConsumerGroupDescribe for one group. */
  describeConsumerGroup(groupId: string): DescribedConsumerGroup {
    const failed = (errorCode: number, errorMessage: string | null) => undescribedConsumerGroup(groupId, errorCode, errorMessage);
    if (this.stopped) return failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, null);
    if (groupId === '') return failed(ErrorCode.INVALID_GROUP_ID, null);
    const shard = this.shardOf(groupId);
    if (!shard) return failed(ErrorCode.NOT_COORDINATOR, null);
    const group = shard.consumerGroups.get(groupId);
    if (!group) {
      const classic = shard.groups.get(groupId);
      if ((classic && !classic.is('Dead')) || this.shares.has(groupId)) return failed(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} is not a consumer group.`);
      return failed(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} not found.`);
    }
    const image = this.metadata.image();
    const named = (a: ReadonlyMap<string, ReadonlyMap<number, number> | ReadonlySet<number>>) => {
      const out: { topicId: string; topicName: string; partitions: number[] }[] = [];
      for (const [topicId, ps] of a) {
        const topic = image.topicsById.get(topicId);
        if (!topic) continue;
        const list = ps instanceof Map ? [...ps.keys()] : [...(ps as ReadonlySet<number>)];
        out.push({ topicId, topicName: topic.name, partitions: list.sort((x, y) => x - y) });
      }
      return out;
    };
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      groupId,
      groupState: group.state,
      groupEpoch: group.groupEpoch,
      assignmentEpoch: group.assignmentEpoch,
      assignorName: this.preferredAssignor(group.members.values()),
      members: [...group.members.values()].map((m) => {
        const now = new Map<string, Set<number>>();
        for (const src of [m.assigned, m.pendingRevocation]) for (const [t, ps] of src) for (const p of ps.keys()) (now.get(t) ?? now.set(t, new Set()).get(t)!).add(p);
        return {
          memberId: m.memberId,
          instanceId: m.instanceId,
          rackId: m.rackId,
          memberEpoch: m.memberEpoch,
          clientId: m.clientId,
          clientHost: m.clientHost,
          subscribedTopicNames: m.subscribedTopicNames,
          subscribedTopicRegex: m.subscribedTopicRegex,
          assignment: named(now),
          targetAssignment: named(group.target.get(m.memberId) ?? new Map()),
          memberType: m.classic === null ? 1 : 0,
        };
      }),
    };
  }

  /** Kafka's ConsumerGroup.validateOffsetCommit, for a commit to a consumer group. */
  private consumerCommitError(group: ConsumerGroup, p: { memberId: string; generationId: number; v9: boolean; topics: readonly { name: string; partitions: readonly { partitionIndex: number }[] }[] }): number {
    if (p.generationId < 0 && group.members.size === 0) return ErrorCode.NONE;
    const member = group.members.get(p.memberId);
    if (!member) return ErrorCode.UNKNOWN_MEMBER_ID;
    // A classic member commits with any version, its generation being its member epoch; what is stale for a
    // member of the consumer protocol is an illegal generation for it.
    if (!p.v9 && member.classic === null) return ErrorCode.UNSUPPORTED_VERSION;
    const stale = member.classic === null ? ErrorCode.STALE_MEMBER_EPOCH : ErrorCode.ILLEGAL_GENERATION;
    if (p.generationId === member.memberEpoch) return ErrorCode.NONE;
    if (p.generationId > member.memberEpoch) return stale;
    // An older epoch may commit the partitions it was given at or before that epoch.
    const image = this.metadata.image();
    for (const t of p.topics) {
      const topicId = image.topics.get(t.name)?.topicId;
      for (const x of t.partitions) {
        const epoch = topicId === undefined ? undefined : (member.assigned.get(topicId)?.get(x.partitionIndex) ?? member.pendingRevocation.get(topicId)?.get(x.partitionIndex));
        if (epoch === undefined || p.generationId < epoch) return stale;
      }
    }
    return ErrorCode.NONE;
  }

  /** Applies one consumer group record read back from the log. */
  private replayConsumer(shard: Shard, r: ConsumerGroupRecord): void {
    let group = shard.consumerGroups.get(r.groupId);
    if (!group) {
      if (r.value === null) return;
      group = new ConsumerGroup(r.groupId);
      shard.consumerGroups.set(r.groupId, group);
      // A consumer group replaces a classic group of the same id that only held offsets.
      shard.groups.delete(r.groupId);
    }
    switch (r.type) {
      case 4:
        return;
      case 3:
        if (r.value === null) {
          shard.consumerGroups.delete(r.groupId);
          return;
        }
        group.groupEpoch = r.value.epoch;
        group.metadataHash = r.value.metadataHash;
        return;
      case 6:
        group.assignmentEpoch = r.value === null ? -1 : r.value.assignmentEpoch;
        group.assignmentTimestamp = r.value === null ? 0 : Number(r.value.assignmentTimestamp);
        return;
      case 7:
        if (r.value === null) group.target.delete(r.memberId);
        else group.target.set(r.memberId, new Map(r.value.topicPartitions.map((t) => [t.topicId, new Set(t.partitions)])));
        return;
      case 5: {
        if (r.value === null) {
          group.members.delete(r.memberId);
          return;
        }
        const m = group.members.get(r.memberId) ?? newMember(r.memberId);
        const v = r.value;
        Object.assign(m, {
          instanceId: v.instanceId,
          rackId: v.rackId,
          clientId: v.clientId,
          clientHost: v.clientHost,
          subscribedTopicNames: [...v.subscribedTopicNames],
          subscribedTopicRegex: v.subscribedTopicRegex ?? '',
          rebalanceTimeoutMs: v.rebalanceTimeoutMs,
          serverAssignor: v.serverAssignor,
          classic:
            v.classicMemberMetadata === null
              ? null
              : { sessionTimeoutMs: v.classicMemberMetadata.sessionTimeoutMs, protocols: v.classicMemberMetadata.supportedProtocols.map((x) => ({ name: x.name, metadata: x.metadata })) },
        });
        group.members.set(r.memberId, m);
        return;
      }
      case 8: {
        const m = group.members.get(r.memberId) ?? newMember(r.memberId);
        if (r.value === null) {
          m.memberEpoch = LEAVE_EPOCH;
          m.assigned = new Map();
          m.pendingRevocation = new Map();
        } else {
          const v = r.value;
          const withEpochs = (list: typeof v.assignedPartitions): Assigned =>
            new Map(
              list.map((t) => {
                const epochs = t.assignmentEpochs !== null && t.assignmentEpochs.length === t.partitions.length ? t.assignmentEpochs : null;
                return [t.topicId, new Map(t.partitions.map((p, i) => [p, epochs ? epochs[i]! : Math.max(v.memberEpoch, 0)]))];
              }),
            );
          m.memberEpoch = v.memberEpoch;
          m.previousMemberEpoch = v.previousMemberEpoch;
          m.state = (v.state === MemberState.UNREVOKED_PARTITIONS || v.state === MemberState.UNRELEASED_PARTITIONS ? v.state : MemberState.STABLE) as MemberStateId;
          m.assigned = withEpochs(v.assignedPartitions);
          m.pendingRevocation = withEpochs(v.partitionsPendingRevocation);
        }
        group.members.set(r.memberId, m);
        return;
      }
    }
  }

  // ---- partitions, persistence ---------------------------------------------------------------

  private groupRequestError(groupId: string): number {
    if (this.stopped) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (groupId === '') return ErrorCode.INVALID_GROUP_ID;
    return ErrorCode.NONE;
  }

  /**
   * Waits until what the group's partition of __consumer_offsets holds now
   * is on every in-sync replica, as Kafka's coordinator answers only then:
   * NONE, or the error to answer instead (COORDINATOR_NOT_AVAILABLE when the
   * replicas do not follow in offsets.commit.timeout.ms, NOT_COORDINATOR when
   * leadership moved). A handler calls it after the coordinator wrote the
   * request's records and before it answers.
   */
  async replicated(groupId: string): Promise<number> {
    if (this.numPartitions === 0 || !this.store.replicated) return ErrorCode.NONE;
    const code = await this.store.replicated(partitionFor(groupId, this.numPartitions), this.config.offsetCommitTimeoutMs);
    return code === ErrorCode.NONE ? code : appendErrorToResponseError(code);
  }

  private shardOf(groupId: string): Shard | undefined {
    if (this.numPartitions === 0) return undefined;
    return this.shards.get(partitionFor(groupId, this.numPartitions));
  }

  private applyImage(image: MetadataImage): void {
    if (this.stopped) return;
    const topic = image.topics.get(GROUP_METADATA_TOPIC);
    const led = new Set<number>();
    for (const p of topic?.partitions ?? []) if (p.leader === this.nodeId) led.add(p.partition);
    for (const partition of [...this.shards.keys()]) if (!led.has(partition)) this.unload(partition);
    this.numPartitions = topic?.partitions.length ?? 0;
    for (const partition of led) if (!this.shards.has(partition)) this.load(partition);
    const deletedTopics = [...this.topicIds].filter(([name, id]) => image.topics.get(name)?.topicId !== id);
    const deleted = deletedTopics.map(([name]) => name);
    this.topicIds = new Map([...image.topics.values()].map((t) => [t.name, t.topicId]));
    if (deleted.length > 0) this.deleteOffsetsOfTopics(new Set(deleted));
    if (deletedTopics.length > 0) this.shares.onTopicsDeleted(new Set(deletedTopics.map(([, id]) => id)));
  }

  /**
   * A deleted topic's committed offsets go with it, in every group, as
   * Kafka's coordinator drops them when the topic's partitions are deleted
   * (a topic created again under the name starts without commits); pending
   * transactional ones too.
   */
  private deleteOffsetsOfTopics(topics: ReadonlySet<string>): void {
    for (const shard of this.shards.values()) {
      const records: CoordinatorRecord[] = [];
      const removed = new Map<string, { groupId: string; topic: string; partition: number }>();
      for (const { groupId, topic, partition } of [...shard.committedEntries(), ...shard.pendingEntries()]) {
        if (!topics.has(topic)) continue;
        const key = JSON.stringify([groupId, topic, partition]);
        if (removed.has(key)) continue;
        records.push(offsetCommitRecord(groupId, topic, partition, null));
        removed.set(key, { groupId, topic, partition });
      }
      if (records.length === 0) continue;
      const error = this.append(shard, records);
      if (error !== ErrorCode.NONE) {
        this.log.warn({ partition: shard.partition, topics: [...topics], error }, 'cannot persist the removal of offsets of deleted topics');
        continue;
      }
      for (const r of removed.values()) shard.removeOffset(r.groupId, r.topic, r.partition);
    }
  }

  /**
   * Replays a partition's records into a new shard, then starts the
   * sessions of the members it holds. Offset commits of a transactional
   * batch wait, by producer, for that producer's marker; a transaction
   * without its marker yet stays pending.
   */
  private load(partition: number): void {
    const shard = new Shard(partition);
    this.shares.beginLoad(partition);
    const now = this.timer.now();
    let records = 0;
    try {
      for (const chunk of this.store.read(partition)) {
        for (const batch of batchesIn(chunk, (baseOffset, error) => this.log.warn({ partition, baseOffset, error }, 'skipping an unreadable batch of __consumer_offsets'))) {
          if (batch.kind === 'control') {
            if (batch.commit !== null) shard.completeTransaction(batch.producerId, batch.commit);
            continue;
          }
          const producerId = batch.transactional ? batch.producerId : null;
          for (const { offset, record } of batch.records) {
            records++;
            if (record.kind === 'skipped') {
              this.log.warn({ partition, offset: String(offset), reason: record.reason }, 'skipping a record of __consumer_offsets');
              continue;
            }
            this.replay(shard, record, offset, producerId, now);
          }
        }
      }
    } catch (err) {
      this.log.warn({ partition, err }, 'cannot read __consumer_offsets; its groups are not loaded');
      return;
    }
    this.shards.set(partition, shard);
    const shareGroups = this.shares.finishLoad(partition);
    for (const group of shard.groups.values()) {
      for (const member of group.members.values()) this.rescheduleHeartbeat(shard, group, member);
      if (group.numMembers > this.config.maxSize) this.prepareRebalance(shard, group);
    }
    this.streams.onLoaded(shard);
    // Consumer group members get a fresh session, and those revoking a fresh rebalance timeout.
    for (const group of shard.consumerGroups.values()) {
      for (const member of group.members.values()) {
        this.scheduleConsumerSession(shard, group, member.memberId);
        this.updateRebalanceTimer(shard, group, member, { ...member, state: MemberState.STABLE });
      }
    }
    if (records > 0) {
      const offsets = [...shard.committedEntries()].length;
      const pending = [...shard.pendingEntries()].length;
      // groups counts both kinds; consumerGroups those of the consumer protocol (KIP-848).
      const consumerGroups = shard.consumerGroups.size;
      const streamsGroups = shard.streamsGroups.size;
      this.log.info({ partition, records, groups: shard.groups.size + consumerGroups + shareGroups + streamsGroups, consumerGroups, shareGroups, streamsGroups, offsets, pending }, 'loaded group coordinator state');
    }
  }

  /** Applies one record read back at `recordOffset`; `producerId` is that of its transactional batch, else null. */
  private replay(shard: Shard, r: CoordinatorRecord, recordOffset: bigint, producerId: bigint | null, now: number): void {
    if (r.kind === 'share') {
      // A share group's records replace a group of another type under the same id, and the other way round.
      if (r.value !== null) {
        shard.groups.delete(r.groupId);
        shard.consumerGroups.delete(r.groupId);
      }
      this.shares.replay(shard.partition, r);
      return;
    }
    if (r.kind === 'consumer') {
      if (r.value !== null) this.shares.forget(shard.partition, r.groupId);
      this.replayConsumer(shard, r);
      return;
    }
    if (r.kind === 'streams') {
      // A streams group replaces a classic group of the same id that only held offsets.
      if (r.value !== null) shard.groups.delete(r.groupId);
      this.streams.replay(shard, r);
      return;
    }
    if (r.kind === 'offset') {
      const { group: groupId, topic, partition } = r.key;
      if (r.value === null) {
        shard.removeOffset(groupId, topic, partition);
        return;
      }
      if (!shard.groups.has(groupId) && !shard.consumerGroups.has(groupId) && !shard.streamsGroups.has(groupId) && !this.shares.hasIn(shard.partition, groupId)) {
        shard.groups.set(groupId, new ClassicGroup(groupId, { state: 'Empty', now }));
      }
      const v = r.value;
      const entry: OffsetEntry = {
        offset: v.offset,
        leaderEpoch: v.leaderEpoch,
        metadata: v.metadata,
        commitTimestampMs: Number(v.commitTimestamp),
        expireTimestampMs: v.expireTimestamp === -1n ? null : Number(v.expireTimestamp),
        recordOffset,
      };
      if (producerId === null) shard.setOffset(groupId, topic, partition, entry);
      else shard.setPending(producerId, groupId, topic, partition, entry);
      return;
    }
    const groupId = r.key.group;
    if (r.value === null) {
      shard.groups.delete(groupId);
      return;
    }
    shard.consumerGroups.delete(groupId);
    this.shares.forget(shard.partition, groupId);
    shard.groups.set(groupId, groupFromValue(groupId, r.value));
  }

  /**
   * Drops a partition's groups: parked requests are answered
   * NOT_COORDINATOR (their clients look for the new coordinator) and the
   * groups' timers are cancelled.
   */
  private unload(partition: number): void {
    const shard = this.shards.get(partition);
    this.shares.unload(partition);
    if (!shard) return;
    this.shards.delete(partition);
    for (const group of shard.groups.values()) {
      for (const member of group.members.values()) {
        group.completeJoin(member, joinError(ErrorCode.NOT_COORDINATOR, member.memberId));
        group.completeSync(member, syncError(ErrorCode.NOT_COORDINATOR));
      }
      this.cancelGroupTimers(group);
      group.state = 'Dead';
    }
    for (const group of shard.consumerGroups.values()) for (const id of group.members.keys()) this.cancelConsumerMemberTimers(group.groupId, id);
    this.streams.onUnloaded(shard);
  }

  private dropGroup(shard: Shard, groupId: string): void {
    const group = shard.groups.get(groupId);
    if (!group) return;
    shard.groups.delete(groupId);
    this.cancelGroupTimers(group);
    group.transitionTo('Dead', this.timer.now());
  }

  private cancelGroupTimers(group: ClassicGroup): void {
    this.timer.cancel(joinKey(group.groupId));
    this.timer.cancel(syncKey(group.groupId));
    for (const id of group.members.keys()) this.timer.cancel(heartbeatKey(group.groupId, id));
    for (const id of group.pendingJoinMembers) this.timer.cancel(heartbeatKey(group.groupId, id));
  }

  private append(shard: Shard, records: readonly CoordinatorRecord[]): number {
    return this.appendAt(shard, records).errorCode;
  }

  /**
   * Appends `records` as one batch (a transactional one of `producer` when
   * given): the error code, and the log offset of the first record once
   * written.
   */
  private appendAt(shard: Shard, records: readonly CoordinatorRecord[], producer?: TransactionalProducer): { errorCode: number; baseOffset: bigint } {
    try {
      return this.store.append(shard.partition, recordsBatch(records, this.timer.now(), producer));
    } catch (err) {
      this.log.warn({ partition: shard.partition, err }, 'cannot append to __consumer_offsets');
      return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, baseOffset: -1n };
    }
  }

  private emptyGroupValue(group: ClassicGroup): GroupMetadataValueData {
    return { protocolType: '', generation: 0, protocol: null, leader: null, currentStateTimestamp: BigInt(group.stateTimestamp ?? -1), members: [] };
  }

  /** The group as a GroupMetadataValue, each member with its subscription for the chosen protocol and `assignment`'s part. */
  private groupValue(group: ClassicGroup, assignment: ReadonlyMap<string, Buffer>): GroupMetadataValueData {
    return {
      protocolType: group.protocolType ?? '',
      generation: group.generationId,
      protocol: group.protocolName,
      leader: group.leaderId,
      currentStateTimestamp: BigInt(group.stateTimestamp ?? -1),
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        rebalanceTimeout: m.rebalanceTimeoutMs,
        sessionTimeout: m.sessionTimeoutMs,
        subscription: m.metadata(group.protocolName!),
        assignment: assignment.get(m.memberId) ?? EMPTY,
      })),
    };
  }
}

/** A group as its GroupMetadataValue describes it: Stable with its members, or Empty. */
/**
 * The JoinGroup answer of a classic member of a consumer group: its member
 * epoch as the generation, no leader and no member list (the broker assigns;
 * SyncGroup brings the assignment).
 */
function classicJoinAnswer(memberEpoch: number, protocolName: string, memberId: string): JoinGroupResult {
  return { errorCode: ErrorCode.NONE, generationId: memberEpoch, protocolType: 'consumer', protocolName, leader: '', skipAssignment: false, memberId, members: [] };
}

function groupFromValue(groupId: string, v: GroupMetadataValueData): ClassicGroup {
  const group = new ClassicGroup(groupId, {
    state: v.members.length === 0 ? 'Empty' : 'Stable',
    now: v.currentStateTimestamp === -1n ? null : Number(v.currentStateTimestamp),
    generationId: v.generation,
    protocolType: v.protocolType === '' ? null : v.protocolType,
    protocolName: v.protocol,
    leaderId: v.leader,
  });
  for (const m of v.members) {
    const member = new GroupMember(
      m.memberId,
      m.groupInstanceId,
      m.clientId,
      m.clientHost,
      m.rebalanceTimeout === -1 ? m.sessionTimeout : m.rebalanceTimeout,
      m.sessionTimeout,
      v.protocolType,
      [{ name: v.protocol ?? '', metadata: m.subscription }],
    );
    member.assignment = m.assignment;
    group.add(member, null);
  }
  group.subscribedTopics = group.computeSubscribedTopics();
  return group;
}

/**
 * Kafka's ClassicGroup.validateOffsetCommit for transactional commits: as
 * for plain ones, except that a request without member and generation
 * (TxnOffsetCommit v0-v2) is taken whatever the group's state, and a group
 * awaiting its assignment takes it too.
 */
function txnCommitError(group: ClassicGroup, p: TxnOffsetCommitParams): number {
  if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  if (p.generationId < 0 && group.is('Empty')) return ErrorCode.NONE;
  if (p.generationId >= 0 || p.memberId !== '' || p.groupInstanceId !== null) {
    const error = group.memberError(p.memberId, p.groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    if (p.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
  }
  return ErrorCode.NONE;
}

function offsetValue(o: CommittedOffset): OffsetCommitValueData {
  return {
    offset: o.offset,
    leaderEpoch: o.leaderEpoch,
    metadata: o.metadata,
    commitTimestamp: BigInt(o.commitTimestampMs),
    expireTimestamp: o.expireTimestampMs === null ? -1n : BigInt(o.expireTimestampMs),
    topicId: ZERO_UUID,
  };
}

function fetched(partitionIndex: number, o: CommittedOffset): FetchedOffset {
  return { partitionIndex, committedOffset: o.offset, committedLeaderEpoch: o.leaderEpoch, metadata: o.metadata, errorCode: ErrorCode.NONE };
}

function noOffset(partitionIndex: number, errorCode: number): FetchedOffset {
  return { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode };
}

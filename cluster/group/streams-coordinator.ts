/**
 * The streams groups (KIP-1071) of the group coordinator, as Kafka 4.4's
 * GroupMetadataManager runs them: StreamsGroupHeartbeat (join with epoch 0
 * and the topology, heartbeat, leave with -1 or -2), StreamsGroupDescribe,
 * and the checks offset commits and fetches of a streams group's members
 * pass. The group coordinator (group-coordinator.ts) owns the shards and
 * the log; it hands each streams group operation its shard, and the records
 * this file builds are appended through it before any change takes effect.
 *
 * A heartbeat, in order: the member is created or updated (its metadata
 * written when it changed, the group epoch bumped); the topology is set by
 * the first member and must be the same for every later one; the topology
 * is checked against the topics that exist (missing internal topics are
 * returned for the caller to create, with status MISSING_INTERNAL_TOPICS);
 * a new target assignment is computed by the sticky assignor when the group
 * epoch is ahead of the assignment epoch; and the member is reconciled
 * towards its target. Members not heard from within the session timeout,
 * and members that do not give up tasks within their rebalance timeout,
 * are fenced.
 *
 * Not done as Kafka does: warm-up tasks (Kafka 4.4 assigns up to
 * group.streams.num.warmup.replicas of them when a stateful task moves to
 * a client whose state lags; here tasks move at once), static membership
 * (an instance id is kept as metadata only), the assignment interval
 * (group.streams.assignment.interval.ms; here every epoch bump assigns at
 * once), source topic regular expressions (Kafka 4.4 refuses them too) and
 * the topology description of KIP-1331.
 */
import { DEFAULT_CONFIG } from '../metadata/broker-config-registry.js';
import { ErrorCode } from '../../wire/errors.js';
import type { MetadataImage, MetadataStore } from '../metadata/metadata-image.js';
import type { GroupTimer } from '../coordinator/timer.js';
import { assignTasks, type AssignorMember } from './streams-assignor.js';
import {
  EMPTY_TASKS,
  StreamsGroup,
  StreamsMemberState,
  StreamsStatus,
  activeAsTaskSet,
  configureTopology,
  copyStreamsMember,
  currentAssignmentRecord,
  groupTombstones,
  memberMetadataRecord,
  memberTombstones,
  newStreamsMember,
  reconcileStreamsMember,
  replayStreamsRecord,
  sameTaskSet,
  sameTasks,
  subtopologiesReading,
  targetMemberRecord,
  taskList,
  taskSetOf,
  topologyMetadataHash,
  type InternalTopicToCreate,
  type StreamsMember,
  type StreamsStatusEntry,
  type TaskSet,
  type TasksTuple,
  type Topology,
} from './streams-group.js';
import type { StreamsGroupRecord } from './streams-records.js';

const LEAVE_EPOCH = -1;
const STATIC_LEAVE_EPOCH = -2;
/** The only task assignor gregor has, under Kafka's name for it. */
export const STREAMS_ASSIGNOR_NAME = 'sticky';

/** Broker-level settings of streams groups (group.streams.*). */
export interface StreamsGroupsConfig {
  /** group.streams.session.timeout.ms */
  readonly sessionTimeoutMs: number;
  /** group.streams.heartbeat.interval.ms */
  readonly heartbeatIntervalMs: number;
  /** group.streams.num.standby.replicas */
  readonly numStandbyReplicas: number;
  /** group.streams.initial.rebalance.delay.ms */
  readonly initialRebalanceDelayMs: number;
  /** group.streams.max.size */
  readonly maxSize: number;
  /** group.streams.task.offset.interval.ms */
  readonly taskOffsetIntervalMs: number;
  /** group.streams.acceptable.recovery.lag */
  readonly acceptableRecoveryLag: number;
}

/** Kafka 4.4's defaults. */
export const DEFAULT_STREAMS_GROUPS_CONFIG: StreamsGroupsConfig = {
  sessionTimeoutMs: DEFAULT_CONFIG.int('group.streams.session.timeout.ms'),
  heartbeatIntervalMs: DEFAULT_CONFIG.int('group.streams.heartbeat.interval.ms'),
  numStandbyReplicas: DEFAULT_CONFIG.int('group.streams.num.standby.replicas'),
  initialRebalanceDelayMs: DEFAULT_CONFIG.int('group.streams.initial.rebalance.delay.ms'),
  maxSize: DEFAULT_CONFIG.int('group.streams.max.size'),
  taskOffsetIntervalMs: 60000,
  acceptableRecoveryLag: 10000,
};

/** The settings that hold for one group: the broker's, until per-group configs (streams.*) override them. */
export interface StreamsGroupSettings {
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly numStandbyReplicas: number;
}

/** The part of a shard of __consumer_offsets that streams groups live in. */
export interface StreamsShard {
  readonly partition: number;
  readonly streamsGroups: Map<string, StreamsGroup>;
}

/** What the group coordinator lends this file. */
export interface StreamsCoordinatorHost {
  readonly metadata: MetadataStore;
  readonly timer: GroupTimer;
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  stopped(): boolean;
  shardOf(groupId: string): StreamsShard | undefined;
  /** Whether `shard` is still loaded (a timer may fire after its partition moved). */
  isLoaded(shard: StreamsShard): boolean;
  /**
   * A group of another kind holding `groupId`: 'none', 'empty-classic' (one
   * without members, which a streams group replaces) or 'other'.
   */
  otherGroup(shard: StreamsShard, groupId: string): 'none' | 'empty-classic' | 'other';
  /** The tombstone that deletes the empty classic group `groupId`, and what to do once it is written. */
  replaceEmptyClassic(shard: StreamsShard, groupId: string): { records: StreamsGroupRecord[] | object[]; apply: () => void };
  /** Appends records as one batch: the error code to answer. */
  append(shard: StreamsShard, records: readonly object[]): number;
}

export interface StreamsGroupHeartbeatParams {
  readonly version: number;
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly endpointInformationEpoch: number;
  readonly instanceId: string | null;
  readonly rackId: string | null;
  readonly rebalanceTimeoutMs: number;
  readonly topology: Topology | null;
  readonly activeTasks: readonly { subtopologyId: string; partitions: readonly number[] }[] | null;
  readonly standbyTasks: readonly { subtopologyId: string; partitions: readonly number[] }[] | null;
  readonly warmupTasks: readonly { subtopologyId: string; partitions: readonly number[] }[] | null;
  readonly processId: string | null;
  readonly userEndpoint: { host: string; port: number } | null;
  readonly clientTags: readonly { key: string; value: string }[] | null;
  readonly shutdownApplication: boolean;
  readonly clientId: string;
  readonly clientHost: string;
}

export interface EndpointToPartitions {
  readonly userEndpoint: { host: string; port: number };
  readonly activePartitions: { topic: string; partitions: number[] }[];
  readonly standbyPartitions: { topic: string; partitions: number[] }[];
}

export interface StreamsGroupHeartbeatResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly heartbeatIntervalMs: number;
  readonly acceptableRecoveryLag: number;
  readonly taskOffsetIntervalMs: number;
  readonly status: StreamsStatusEntry[] | null;
  readonly activeTasks: { subtopologyId: string; partitions: number[] }[] | null;
  readonly standbyTasks: { subtopologyId: string; partitions: number[] }[] | null;
  readonly warmupTasks: { subtopologyId: string; partitions: number[] }[] | null;
  readonly endpointInformationEpoch: number;
  readonly partitionsByUserEndpoint: EndpointToPartitions[] | null;
  /** Internal topics the caller creates (Kafka's broker does so after the coordinator answers). */
  readonly internalTopicsToCreate: readonly InternalTopicToCreate[];
}

export interface DescribedStreamsGroup {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly groupId: string;
  readonly groupState: string;
  readonly groupEpoch: number;
  readonly assignmentEpoch: number;
  readonly topology: {
    epoch: number;
    subtopologies:
      | {
          subtopologyId: string;
          sourceTopics: string[];
          repartitionSinkTopics: string[];
          stateChangelogTopics: { name: string; partitions: number; replicationFactor: number; topicConfigs: { key: string; value: string }[] }[];
          repartitionSourceTopics: { name: string; partitions: number; replicationFactor: number; topicConfigs: { key: string; value: string }[] }[];
        }[]
      | null;
  } | null;
  readonly members: {
    memberId: string;
    memberEpoch: number;
    instanceId: string | null;
    rackId: string | null;
    clientId: string;
    clientHost: string;
    topologyEpoch: number;
    processId: string;
    userEndpoint: { host: string; port: number } | null;
    clientTags: { key: string; value: string }[];
    taskOffsets: never[];
    taskEndOffsets: never[];
    assignment: TaskLists;
    targetAssignment: TaskLists;
    isClassic: boolean;
  }[];
  readonly assignorName: string | null;
}

interface TaskLists {
  activeTasks: { subtopologyId: string; partitions: number[] }[];
  standbyTasks: { subtopologyId: string; partitions: number[] }[];
  warmupTasks: { subtopologyId: string; partitions: number[] }[];
}

function failure(errorCode: number, errorMessage: string | null, memberId = ''): StreamsGroupHeartbeatResult {
  return {
    errorCode,
    errorMessage,
    memberId,
    memberEpoch: 0,
    heartbeatIntervalMs: 0,
    acceptableRecoveryLag: 0,
    taskOffsetIntervalMs: 0,
    status: null,
    activeTasks: null,
    standbyTasks: null,
    warmupTasks: null,
    endpointInformationEpoch: 0,
    partitionsByUserEndpoint: null,
    internalTopicsToCreate: [],
  };
}

export function undescribedStreamsGroup(groupId: string, errorCode: number, errorMessage: string | null): DescribedStreamsGroup {
  return { errorCode, errorMessage, groupId, groupState: '', groupEpoch: -1, assignmentEpoch: -1, topology: null, members: [], assignorName: null };
}

const sessionKey = (groupId: string, memberId: string): string => `streams-session:${groupId}:${memberId}`;
const rebalanceKey = (groupId: string, memberId: string): string => `streams-rebalance:${groupId}:${memberId}`;
const initialRebalanceKey = (groupId: string): string => `streams-initial-rebalance:${groupId}`;

/** The request problems Kafka's GroupCoordinatorService answers INVALID_REQUEST or STREAMS_INVALID_TOPOLOGY for. */
export function streamsHeartbeatRequestProblem(p: StreamsGroupHeartbeatParams): { errorCode: number; message: string } | null {
  const invalid = (message: string) => ({ errorCode: ErrorCode.INVALID_REQUEST, message });
  if (p.memberId === '') return invalid("MemberId can't be empty.");
  if (p.groupId === '') return invalid("GroupId can't be empty.");
  if (p.instanceId === '') return invalid("InstanceId can't be empty.");
  if (p.rackId === '') return invalid("RackId can't be empty.");
  if (p.memberEpoch === 0) {
    if (p.rebalanceTimeoutMs === -1) return invalid('RebalanceTimeoutMs must be provided in first request.');
    if (p.activeTasks === null || p.activeTasks.length > 0) return invalid('ActiveTasks must be empty when (re-)joining.');
    if (p.standbyTasks === null || p.standbyTasks.length > 0) return invalid('StandbyTasks must be empty when (re-)joining.');
    if (p.warmupTasks === null || p.warmupTasks.length > 0) return invalid('WarmupTasks must be empty when (re-)joining.');
    if (p.topology === null) return invalid('Topology must be non-null when (re-)joining.');
    for (const st of p.topology.subtopologies) {
      for (const t of st.stateChangelogTopics) {
        if (t.partitions !== 0) {
          return { errorCode: ErrorCode.STREAMS_INVALID_TOPOLOGY, message: `Changelog topic ${t.name} must have an undefined partition count, but it is set to ${t.partitions}.` };
        }
      }
    }
  } else if (p.memberEpoch === STATIC_LEAVE_EPOCH) {
    if (p.instanceId === null) return invalid("InstanceId can't be null.");
  } else if (p.memberEpoch < STATIC_LEAVE_EPOCH) {
    return invalid(`MemberEpoch is ${p.memberEpoch}, but must be greater than or equal to -2.`);
  }
  if (p.activeTasks !== null || p.standbyTasks !== null || p.warmupTasks !== null) {
    if (p.activeTasks === null || p.standbyTasks === null || p.warmupTasks === null) return invalid('If one task-type is non-null, all must be non-null.');
  }
  if (p.memberEpoch !== 0 && p.topology !== null) return invalid('Topology can only be provided when (re-)joining.');
  for (const st of p.topology?.subtopologies ?? []) {
    if (st.sourceTopicRegex.length > 0) return invalid('Regular expressions for source topics are not supported yet.');
  }
  return null;
}

/** Two topologies are the same when their epochs and subtopologies (in any order) are. */
function sameTopology(a: Topology, b: Topology): boolean {
  if (a.epoch !== b.epoch) return false;
  const norm = (t: Topology): string =>
    JSON.stringify(
      [...t.subtopologies]
        .sort((x, y) => (x.subtopologyId < y.subtopologyId ? -1 : 1))
        .map((s) => ({
          ...s,
          sourceTopics: [...s.sourceTopics].sort(),
          repartitionSinkTopics: [...s.repartitionSinkTopics].sort(),
          stateChangelogTopics: [...s.stateChangelogTopics].sort((x, y) => (x.name < y.name ? -1 : 1)),
          repartitionSourceTopics: [...s.repartitionSourceTopics].sort((x, y) => (x.name < y.name ? -1 : 1)),
        })),
    );
  return norm(a) === norm(b);
}

function topologyOf(t: Topology): Topology {
  return {
    epoch: t.epoch,
    subtopologies: t.subtopologies.map((s) => ({
      subtopologyId: s.subtopologyId,
      sourceTopics: [...s.sourceTopics],
      sourceTopicRegex: [...s.sourceTopicRegex],
      stateChangelogTopics: s.stateChangelogTopics.map((x) => ({ ...x, topicConfigs: x.topicConfigs.map((c) => ({ ...c })) })),
      repartitionSinkTopics: [...s.repartitionSinkTopics],
      repartitionSourceTopics: s.repartitionSourceTopics.map((x) => ({ ...x, topicConfigs: x.topicConfigs.map((c) => ({ ...c })) })),
      copartitionGroups: s.copartitionGroups.map((g) => ({ ...g })),
    })),
  };
}

function metadataChanged(a: StreamsMember, b: StreamsMember): boolean {
  return (
    a.instanceId !== b.instanceId ||
    a.rackId !== b.rackId ||
    a.clientId !== b.clientId ||
    a.clientHost !== b.clientHost ||
    a.rebalanceTimeoutMs !== b.rebalanceTimeoutMs ||
    a.topologyEpoch !== b.topologyEpoch ||
    a.processId !== b.processId ||
    JSON.stringify(a.userEndpoint) !== JSON.stringify(b.userEndpoint) ||
    JSON.stringify([...a.clientTags].sort((x, y) => (x.key < y.key ? -1 : 1))) !== JSON.stringify([...b.clientTags].sort((x, y) => (x.key < y.key ? -1 : 1)))
  );
}

/** The member's metadata changes that call for a new assignment (Kafka: a new member, its process, rack or tags). */
function assignmentRelevantChange(a: StreamsMember, b: StreamsMember): boolean {
  return a.processId !== b.processId || a.rackId !== b.rackId || JSON.stringify(a.clientTags) !== JSON.stringify(b.clientTags) || a.topologyEpoch !== b.topologyEpoch;
}

export class StreamsCoordinator {
  constructor(
    private readonly host: StreamsCoordinatorHost,
    readonly config: StreamsGroupsConfig = DEFAULT_STREAMS_GROUPS_CONFIG,
  ) {}

  /** The settings of `groupId`: its own group configs over the broker's. */
  settingsOf(groupId: string): StreamsGroupSettings {
    const own = this.host.metadata.groupConfigOverrides(groupId);
    const int = (name: string, fallback: number): number => {
      const v = own.get(name)?.trim();
      return v !== undefined && /^[+-]?\d+$/.test(v) ? Number(v) : fallback;
    };
    return {
      sessionTimeoutMs: int('streams.session.timeout.ms', this.config.sessionTimeoutMs),
      heartbeatIntervalMs: int('streams.heartbeat.interval.ms', this.config.heartbeatIntervalMs),
      numStandbyReplicas: int('streams.num.standby.replicas', this.config.numStandbyReplicas),
    };
  }

  group(groupId: string): StreamsGroup | undefined {
    return this.host.shardOf(groupId)?.streamsGroups.get(groupId);
  }

  /**
   * StreamsGroupHeartbeat (see api/streams-group-heartbeat.ts).
   *
   * Example: the first member of a new group joining with epoch 0 and a
   * topology reading topic `in` (4 partitions), whose internal topics
   * exist -> epoch 1, and (after group.streams.initial.rebalance.delay.ms)
   * epoch 2 with tasks 0_0..0_3; a second member of another process joining
   * -> epoch 3 and nothing until the first has revoked two tasks.
   */
  heartbeat(p: StreamsGroupHeartbeatParams): StreamsGroupHeartbeatResult {
    if (this.host.stopped()) return failure(ErrorCode.COORDINATOR_NOT_AVAILABLE, null);
    const problem = streamsHeartbeatRequestProblem(p);
    if (problem) return failure(problem.errorCode, problem.message);
    const shard = this.host.shardOf(p.groupId);
    if (!shard) return failure(ErrorCode.NOT_COORDINATOR, null);
    if (p.memberEpoch === LEAVE_EPOCH || p.memberEpoch === STATIC_LEAVE_EPOCH) return this.leave(shard, p);

    const now = this.host.timer.now();
    const image = this.host.metadata.image();
    const records: object[] = [];
    const status: StreamsStatusEntry[] = [];
    const joining = p.memberEpoch === 0;
    let group = shard.streamsGroups.get(p.groupId);
    let afterWrite: (() => void) | null = null;
    const created = !group;
    if (!group) {
      const other = this.host.otherGroup(shard, p.groupId);
      if (!joining) return failure(ErrorCode.GROUP_ID_NOT_FOUND, other === 'none' ? `Streams group ${p.groupId} not found.` : `Group ${p.groupId} is not a streams group.`);
      if (other === 'other') return failure(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${p.groupId} is not a streams group.`);
      if (other === 'empty-classic') {
        const r = this.host.replaceEmptyClassic(shard, p.groupId);
        records.push(...r.records);
        afterWrite = r.apply;
      }
      group = new StreamsGroup(p.groupId);
    }
    if (joining && !group.members.has(p.memberId) && group.members.size >= this.config.maxSize) {
      return failure(ErrorCode.GROUP_MAX_SIZE_REACHED, `The streams group has reached its maximum capacity of ${this.config.maxSize} members.`);
    }

    // The member, as the group knows it or new.
    const known = group.members.get(p.memberId);
    let old: StreamsMember;
    if (!known) {
      if (!joining) return failure(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${p.memberId} is not a member of group ${p.groupId}.`);
      old = newStreamsMember(p.memberId);
    } else {
      old = known;
      if (!joining) {
        const fenced = this.epochProblem(old, p);
        if (fenced) return failure(ErrorCode.FENCED_MEMBER_EPOCH, fenced);
      }
    }
    const updated = copyStreamsMember(old);
    if (p.instanceId !== null) updated.instanceId = p.instanceId;
    if (p.rackId !== null) updated.rackId = p.rackId;
    if (p.rebalanceTimeoutMs !== -1) updated.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
    if (p.topology !== null) updated.topologyEpoch = p.topology.epoch;
    updated.clientId = p.clientId;
    updated.clientHost = p.clientHost;
    if (p.processId !== null) updated.processId = p.processId;
    if (p.clientTags !== null) updated.clientTags = p.clientTags.map((t) => ({ key: t.key, value: t.value }));
    if (p.userEndpoint !== null) updated.userEndpoint = { host: p.userEndpoint.host, port: p.userEndpoint.port };
    let bump = false;
    if (!known || metadataChanged(old, updated)) {
      records.push(memberMetadataRecord(p.groupId, updated));
      if (!known || assignmentRelevantChange(old, updated)) bump = true;
    }

    // The topology: set by the first member, the same for every later one.
    let topology = group.topology;
    let topologyInitialized = false;
    if (p.topology !== null) {
      if (topology === null) {
        topology = topologyOf(p.topology);
        records.push({ kind: 'streams', type: 23, groupId: p.groupId, value: topology } satisfies StreamsGroupRecord);
        topologyInitialized = true;
      } else if (topology.epoch > p.topology.epoch) {
        // A member with an older topology keeps the group's; it is told it is stale below.
      } else if (!sameTopology(topology, p.topology)) {
        return failure(ErrorCode.INVALID_REQUEST, 'Topology updates are not supported yet.');
      }
    }
    if (topology === null) return failure(ErrorCode.INVALID_REQUEST, 'The topology is null and the group topology is also null.');
    if (updated.topologyEpoch < topology.epoch) {
      status.push({
        statusCode: StreamsStatus.STALE_TOPOLOGY,
        statusDetail: `The member's topology epoch ${updated.topologyEpoch} is behind the group's topology epoch ${topology.epoch}.`,
      });
    }

    // The topology against the topics that exist now.
    const hash = topologyMetadataHash(topology, image);
    let configured = group.configured;
    if (topologyInitialized || configured === null || hash !== group.metadataHash) {
      if (hash !== group.metadataHash) bump = true;
      configured = configureTopology(topology, image);
    }
    let validatedTopologyEpoch = -1;
    if (configured.subtopologies !== null) {
      validatedTopologyEpoch = topology.epoch;
      for (const list of [p.activeTasks, p.standbyTasks, p.warmupTasks]) {
        for (const t of list ?? []) {
          const st = configured.subtopologies.get(t.subtopologyId);
          if (!st) return failure(ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH, `Subtopology ${t.subtopologyId} does not exist in the topology.`);
          for (const partition of t.partitions) {
            if (partition < 0 || partition >= st.numberOfTasks) {
              return failure(ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH, `Task ${t.subtopologyId}-${partition} does not exist in the topology.`);
            }
          }
        }
      }
    }
    if (validatedTopologyEpoch !== group.validatedTopologyEpoch) bump = true;
    const settings = this.settingsOf(p.groupId);
    const assignmentConfigs = [{ key: 'num.standby.replicas', value: String(settings.numStandbyReplicas) }];
    if (!bump && JSON.stringify(assignmentConfigs) !== JSON.stringify(group.lastAssignmentConfigs ?? [])) bump = true;

    let groupEpoch = group.groupEpoch;
    let delayStarts = false;
    if (bump) {
      groupEpoch += 1;
      records.push({
        kind: 'streams',
        type: 17,
        groupId: p.groupId,
        value: { epoch: groupEpoch, metadataHash: hash, validatedTopologyEpoch, lastAssignmentConfigs: assignmentConfigs, storedDescriptionTopologyEpoch: -1, failedDescriptionTopologyEpoch: -1 },
      } satisfies StreamsGroupRecord);
      // The first member of an empty group waits a while for others before tasks are assigned.
      if (group.members.size === 0 && this.config.initialRebalanceDelayMs > 0) delayStarts = true;
    }

    // The target assignment, when the group epoch moved past it.
    const delayed = delayStarts || group.initialDelayUntil > now;
    let targetEpoch = group.assignmentEpoch;
    let targets = new Map(group.target);
    if (groupEpoch > group.assignmentEpoch) {
      const members = new Map(group.members);
      members.set(updated.memberId, updated);
      targets = delayed ? new Map([...members.keys()].map((id) => [id, EMPTY_TASKS])) : this.computeTargets(members, configured, settings.numStandbyReplicas);
      for (const [id, t] of targets) if (!sameTasks(t, group.target.get(id) ?? EMPTY_TASKS)) records.push(targetMemberRecord(p.groupId, id, t));
      records.push({ kind: 'streams', type: 20, groupId: p.groupId, value: { assignmentEpoch: groupEpoch, assignmentTimestamp: BigInt(now) } } satisfies StreamsGroupRecord);
      targetEpoch = groupEpoch;
    }
    if (delayed) {
      status.push({ statusCode: StreamsStatus.ASSIGNMENT_DELAYED, statusDetail: 'The assignment is delayed until more members of a new group join (group.streams.initial.rebalance.delay.ms).' });
    }

    // The member reconciled towards its target, given the tasks it says it owns.
    const target = targets.get(updated.memberId) ?? EMPTY_TASKS;
    const ownedActive = taskSetOf(p.activeTasks ?? null);
    const reconciled = reconcileStreamsMember(group, updated, targetEpoch, target, ownedActive);
    const assignmentChanged =
      reconciled.memberEpoch !== old.memberEpoch ||
      reconciled.previousMemberEpoch !== old.previousMemberEpoch ||
      reconciled.state !== old.state ||
      !sameTaskSet(activeAsTaskSet(reconciled.active), activeAsTaskSet(old.active)) ||
      !sameTaskSet(activeAsTaskSet(reconciled.activePendingRevocation), activeAsTaskSet(old.activePendingRevocation)) ||
      !sameTaskSet(reconciled.standby, old.standby) ||
      !sameTaskSet(reconciled.warmup, old.warmup);
    if (!known || assignmentChanged) records.push(currentAssignmentRecord(p.groupId, reconciled));

    if (records.length > 0) {
      const error = this.host.append(shard, records);
      if (error !== ErrorCode.NONE) return failure(error, null);
    }
    // Written: apply.
    afterWrite?.();
    if (created) shard.streamsGroups.set(p.groupId, group);
    group.topology = topology;
    group.configured = configured;
    group.metadataHash = hash;
    group.validatedTopologyEpoch = validatedTopologyEpoch;
    group.lastAssignmentConfigs = assignmentConfigs;
    if (bump) group.groupEpoch = groupEpoch;
    if (targetEpoch !== group.assignmentEpoch) {
      group.assignmentEpoch = targetEpoch;
      group.assignmentTimestamp = BigInt(now);
      group.target.clear();
      for (const [id, t] of targets) group.target.set(id, t);
    }
    group.members.set(reconciled.memberId, reconciled);
    if (delayStarts) this.startInitialDelay(shard, group, now);
    this.scheduleSession(shard, group, reconciled.memberId);
    this.updateRebalanceTimer(shard, group, reconciled, old);
    if (p.shutdownApplication) group.shutdownRequestMemberId = reconciled.memberId;
    if (!known) this.host.log.info({ group: p.groupId, member: p.memberId, epoch: reconciled.memberEpoch }, 'streams group member joined');

    const tasksChanged =
      joining ||
      !sameTaskSet(activeAsTaskSet(reconciled.active), activeAsTaskSet(old.active)) ||
      !sameTaskSet(reconciled.standby, old.standby) ||
      !sameTaskSet(reconciled.warmup, old.warmup);
    if (tasksChanged && reconciled.userEndpoint !== null) group.endpointInformationEpoch++;
    if (configured.status !== null) status.push(configured.status);
    if (group.shutdownRequestMemberId !== null) {
      status.push({
        statusCode: StreamsStatus.SHUTDOWN_APPLICATION,
        statusDetail: `Streams group member ${group.shutdownRequestMemberId} encountered a fatal error and requested a shutdown for the entire application.`,
      });
    }
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId: reconciled.memberId,
      memberEpoch: reconciled.memberEpoch,
      heartbeatIntervalMs: settings.heartbeatIntervalMs,
      acceptableRecoveryLag: this.config.acceptableRecoveryLag,
      taskOffsetIntervalMs: this.config.taskOffsetIntervalMs,
      status: status.length > 0 ? status : null,
      activeTasks: tasksChanged ? taskList(activeAsTaskSet(reconciled.active)) : null,
      standbyTasks: tasksChanged ? taskList(reconciled.standby) : null,
      warmupTasks: tasksChanged ? taskList(reconciled.warmup) : null,
      endpointInformationEpoch: group.endpointInformationEpoch,
      partitionsByUserEndpoint: group.endpointInformationEpoch !== p.endpointInformationEpoch ? this.endpointsOf(group, image) : null,
      internalTopicsToCreate: configured.internalTopicsToCreate,
    };
  }

  /** Kafka's check of a heartbeat's epoch against the member's: null when it may go on, else why it is fenced. */
  private epochProblem(m: StreamsMember, p: StreamsGroupHeartbeatParams): string | null {
    if (p.memberEpoch > m.memberEpoch) {
      return `The streams group member has a greater member epoch (${p.memberEpoch}) than the one known by the group coordinator (${m.memberEpoch}). The member must abandon all its partitions and rejoin.`;
    }
    if (p.memberEpoch < m.memberEpoch) {
      // The answer that moved it to its epoch may have been lost: its previous epoch is accepted if it owns nothing it should not.
      const within = (owned: TaskSet | null, held: TaskSet): boolean => {
        if (owned === null) return false;
        for (const [s, ps] of owned) for (const x of ps) if (!held.get(s)?.has(x)) return false;
        return true;
      };
      const ok =
        p.memberEpoch === m.previousMemberEpoch &&
        within(taskSetOf(p.activeTasks), activeAsTaskSet(m.active)) &&
        within(taskSetOf(p.standbyTasks), m.standby) &&
        within(taskSetOf(p.warmupTasks), m.warmup);
      if (!ok) {
        return `The streams group member has a smaller member epoch (${p.memberEpoch}) than the one known by the group coordinator (${m.memberEpoch}). The member must abandon all its partitions and rejoin.`;
      }
    }
    return null;
  }

  private computeTargets(members: ReadonlyMap<string, StreamsMember>, configured: { subtopologies: ReadonlyMap<string, { numberOfTasks: number; stateChangelogTopics: readonly unknown[] }> | null }, numStandby: number): Map<string, TasksTuple> {
    if (configured.subtopologies === null) return new Map([...members.keys()].map((id) => [id, EMPTY_TASKS]));
    const input: AssignorMember[] = [...members.values()].map((m) => {
      const active = activeAsTaskSet(m.active);
      for (const [s, ps] of m.activePendingRevocation) for (const x of ps.keys()) {
        if (!active.has(s)) active.set(s, new Set());
        active.get(s)!.add(x);
      }
      return { memberId: m.memberId, processId: m.processId, active, standby: m.standby };
    });
    const subtopologies = [...configured.subtopologies].map(([subtopologyId, st]) => ({ subtopologyId, numberOfTasks: st.numberOfTasks, stateful: st.stateChangelogTopics.length > 0 }));
    return assignTasks(input, subtopologies, numStandby);
  }

  /** The first assignment of a new group, computed once the initial rebalance delay is over, at a new group epoch. */
  private startInitialDelay(shard: StreamsShard, group: StreamsGroup, now: number): void {
    group.initialDelayUntil = now + this.config.initialRebalanceDelayMs;
    const groupId = group.groupId;
    this.host.timer.schedule(initialRebalanceKey(groupId), this.config.initialRebalanceDelayMs, () => {
      const g = shard.streamsGroups.get(groupId);
      if (!g || !this.host.isLoaded(shard)) return;
      g.initialDelayUntil = 0;
      if (g.members.size > 0) this.reassign(shard, g, 'initial rebalance delay over');
    });
  }

  /** Bumps the group epoch and computes a new target assignment for the members there are. */
  private reassign(shard: StreamsShard, group: StreamsGroup, why: string): number {
    const image = this.host.metadata.image();
    const now = this.host.timer.now();
    const hash = group.topology === null ? 0n : topologyMetadataHash(group.topology, image);
    const configured = group.topology === null ? null : configureTopology(group.topology, image);
    const validated = configured?.subtopologies ? group.topology!.epoch : -1;
    const epoch = group.groupEpoch + 1;
    const records: object[] = [
      {
        kind: 'streams',
        type: 17,
        groupId: group.groupId,
        value: {
          epoch,
          metadataHash: hash,
          validatedTopologyEpoch: validated,
          lastAssignmentConfigs: group.lastAssignmentConfigs,
          storedDescriptionTopologyEpoch: -1,
          failedDescriptionTopologyEpoch: -1,
        },
      } satisfies StreamsGroupRecord,
    ];
    const targets = configured ? this.computeTargets(group.members, configured, this.settingsOf(group.groupId).numStandbyReplicas) : new Map<string, TasksTuple>();
    for (const [id, t] of targets) if (!sameTasks(t, group.target.get(id) ?? EMPTY_TASKS)) records.push(targetMemberRecord(group.groupId, id, t));
    records.push({ kind: 'streams', type: 20, groupId: group.groupId, value: { assignmentEpoch: epoch, assignmentTimestamp: BigInt(now) } } satisfies StreamsGroupRecord);
    const error = this.host.append(shard, records);
    if (error !== ErrorCode.NONE) {
      this.host.log.warn({ group: group.groupId, error, why }, 'cannot write a new streams group assignment');
      return error;
    }
    group.groupEpoch = epoch;
    group.metadataHash = hash;
    group.configured = configured;
    group.validatedTopologyEpoch = validated;
    group.assignmentEpoch = epoch;
    group.assignmentTimestamp = BigInt(now);
    group.target.clear();
    for (const [id, t] of targets) group.target.set(id, t);
    this.host.log.info({ group: group.groupId, groupEpoch: epoch, why }, 'streams group assignment computed');
    return ErrorCode.NONE;
  }

  private leave(shard: StreamsShard, p: StreamsGroupHeartbeatParams): StreamsGroupHeartbeatResult {
    const group = shard.streamsGroups.get(p.groupId);
    if (!group) {
      const other = this.host.otherGroup(shard, p.groupId);
      return failure(ErrorCode.GROUP_ID_NOT_FOUND, other === 'none' ? `Streams group ${p.groupId} not found.` : `Group ${p.groupId} is not a streams group.`);
    }
    const member = group.members.get(p.memberId);
    if (!member) return failure(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${p.memberId} is not a member of group ${p.groupId}.`);
    const error = this.fence(shard, group, [p.memberId], 'left');
    if (error !== ErrorCode.NONE) return failure(error, null);
    return { ...failure(ErrorCode.NONE, null, p.memberId), memberEpoch: p.memberEpoch };
  }

  /**
   * Removes members (a leave, an expired session or rebalance timeout):
   * their records get tombstones and the group epoch rises, so that the
   * others are given their tasks. The error code of the write.
   */
  fence(shard: StreamsShard, group: StreamsGroup, memberIds: readonly string[], why: string): number {
    const gone = memberIds.filter((id) => group.members.has(id));
    if (gone.length === 0) return ErrorCode.NONE;
    const records: object[] = [];
    for (const id of gone) records.push(...memberTombstones(group.groupId, id));
    const epoch = group.groupEpoch + 1;
    records.push({
      kind: 'streams',
      type: 17,
      groupId: group.groupId,
      value: {
        epoch,
        metadataHash: group.metadataHash,
        validatedTopologyEpoch: group.validatedTopologyEpoch,
        lastAssignmentConfigs: group.lastAssignmentConfigs,
        storedDescriptionTopologyEpoch: -1,
        failedDescriptionTopologyEpoch: -1,
      },
    } satisfies StreamsGroupRecord);
    const error = this.host.append(shard, records);
    if (error !== ErrorCode.NONE) return error;
    for (const id of gone) {
      group.members.delete(id);
      group.target.delete(id);
      this.cancelMemberTimers(group.groupId, id);
      if (group.shutdownRequestMemberId === id) group.shutdownRequestMemberId = null;
    }
    group.groupEpoch = epoch;
    if (group.members.size === 0) group.shutdownRequestMemberId = null;
    this.host.log.info({ group: group.groupId, members: gone, why, groupEpoch: epoch }, 'streams group members removed');
    return ErrorCode.NONE;
  }

  private scheduleSession(shard: StreamsShard, group: StreamsGroup, memberId: string): void {
    const groupId = group.groupId;
    this.host.timer.schedule(sessionKey(groupId, memberId), this.settingsOf(groupId).sessionTimeoutMs, () => {
      const g = shard.streamsGroups.get(groupId);
      if (!g || !this.host.isLoaded(shard) || !g.members.has(memberId)) return;
      // Not written: try again later rather than keep a member nobody hears from.
      if (this.fence(shard, g, [memberId], 'session timed out') !== ErrorCode.NONE) this.scheduleSession(shard, g, memberId);
    });
  }

  /** A member that must give up active tasks has its rebalance timeout to do so, or it is fenced. */
  private updateRebalanceTimer(shard: StreamsShard, group: StreamsGroup, now: StreamsMember, before: StreamsMember): void {
    const key = rebalanceKey(group.groupId, now.memberId);
    if (now.state !== StreamsMemberState.UNREVOKED_TASKS) {
      this.host.timer.cancel(key);
      return;
    }
    if (before.state === StreamsMemberState.UNREVOKED_TASKS && before.memberEpoch === now.memberEpoch && this.host.timer.isScheduled(key)) return;
    const epoch = now.memberEpoch;
    const groupId = group.groupId;
    const timeout = now.rebalanceTimeoutMs > 0 ? now.rebalanceTimeoutMs : this.settingsOf(groupId).sessionTimeoutMs;
    this.host.timer.schedule(key, timeout, () => {
      const g = shard.streamsGroups.get(groupId);
      const m = g?.members.get(now.memberId);
      if (!g || !m || !this.host.isLoaded(shard)) return;
      if (m.memberEpoch === epoch && m.state === StreamsMemberState.UNREVOKED_TASKS) this.fence(shard, g, [m.memberId], 'did not revoke its tasks within its rebalance timeout');
    });
  }

  cancelMemberTimers(groupId: string, memberId: string): void {
    this.host.timer.cancel(sessionKey(groupId, memberId));
    this.host.timer.cancel(rebalanceKey(groupId, memberId));
  }

  /** The partitions each member with an endpoint serves, for interactive queries. */
  private endpointsOf(group: StreamsGroup, image: MetadataImage): EndpointToPartitions[] {
    const out: EndpointToPartitions[] = [];
    const configured = group.configured;
    const partitionsOf = (tasks: TaskSet): { topic: string; partitions: number[] }[] => {
      const byTopic = new Map<string, Set<number>>();
      for (const [s, ps] of tasks) {
        const st = configured?.subtopologies?.get(s);
        if (!st) continue;
        for (const topic of st.sourceTopics) {
          const n = image.topics.get(topic)?.partitions.length ?? 0;
          for (const x of ps) {
            if (x >= n) continue;
            if (!byTopic.has(topic)) byTopic.set(topic, new Set());
            byTopic.get(topic)!.add(x);
          }
        }
      }
      return [...byTopic].sort(([a], [b]) => (a < b ? -1 : 1)).map(([topic, ps]) => ({ topic, partitions: [...ps].sort((a, b) => a - b) }));
    };
    for (const m of group.members.values()) {
      if (m.userEndpoint === null) continue;
      const standby = new Map([...m.standby].map(([s, ps]) => [s, new Set(ps)]));
      for (const [s, ps] of m.warmup) for (const x of ps) {
        if (!standby.has(s)) standby.set(s, new Set());
        standby.get(s)!.add(x);
      }
      out.push({ userEndpoint: { ...m.userEndpoint }, activePartitions: partitionsOf(activeAsTaskSet(m.active)), standbyPartitions: partitionsOf(standby) });
    }
    return out;
  }

  /** StreamsGroupDescribe for one group. */
  describe(groupId: string): DescribedStreamsGroup {
    const failed = (errorCode: number, message: string | null) => undescribedStreamsGroup(groupId, errorCode, message);
    if (this.host.stopped()) return failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, null);
    if (groupId === '') return failed(ErrorCode.INVALID_GROUP_ID, null);
    const shard = this.host.shardOf(groupId);
    if (!shard) return failed(ErrorCode.NOT_COORDINATOR, null);
    const group = shard.streamsGroups.get(groupId);
    if (!group) {
      return failed(ErrorCode.GROUP_ID_NOT_FOUND, this.host.otherGroup(shard, groupId) === 'none' ? `Group ${groupId} not found.` : `Group ${groupId} is not a streams group.`);
    }
    const image = this.host.metadata.image();
    if (group.topology !== null && (group.configured === null || group.configured.topologyEpoch !== group.topology.epoch)) {
      group.configured = configureTopology(group.topology, image);
    }
    const lists = (t: TasksTuple): TaskLists => ({ activeTasks: taskList(t.active), standbyTasks: taskList(t.standby), warmupTasks: taskList(t.warmup) });
    const sub = group.configured?.subtopologies ?? null;
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      groupId,
      groupState: group.state,
      groupEpoch: group.groupEpoch,
      assignmentEpoch: group.assignmentEpoch,
      topology:
        group.topology === null
          ? null
          : {
              epoch: group.topology.epoch,
              subtopologies:
                sub === null
                  ? null
                  : [...sub]
                      .sort(([a], [b]) => (a < b ? -1 : 1))
                      .map(([subtopologyId, st]) => ({
                        subtopologyId,
                        sourceTopics: [...st.sourceTopics].sort(),
                        repartitionSinkTopics: [...st.repartitionSinkTopics].sort(),
                        stateChangelogTopics: st.stateChangelogTopics.map((t) => ({ ...t, topicConfigs: [...t.topicConfigs] })),
                        repartitionSourceTopics: st.repartitionSourceTopics.map((t) => ({ ...t, topicConfigs: [...t.topicConfigs] })),
                      })),
            },
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        memberEpoch: m.memberEpoch,
        instanceId: m.instanceId,
        rackId: m.rackId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        topologyEpoch: m.topologyEpoch,
        processId: m.processId,
        userEndpoint: m.userEndpoint,
        clientTags: m.clientTags,
        taskOffsets: [],
        taskEndOffsets: [],
        assignment: lists({ active: activeAsTaskSet(m.active), standby: m.standby, warmup: m.warmup }),
        targetAssignment: lists(group.target.get(m.memberId) ?? EMPTY_TASKS),
        isClassic: false,
      })),
      assignorName: STREAMS_ASSIGNOR_NAME,
    };
  }

  /**
   * Kafka's StreamsGroup.validateOffsetCommit: NONE, or the error for a
   * commit by `memberId` at `memberEpoch`. An admin commit (epoch below 0)
   * passes on an empty group; a member commits at its epoch, or at an older
   * one for the partitions of active tasks it was given at or before it.
   */
  commitError(group: StreamsGroup, p: { memberId: string; generationId: number; v9: boolean; topics: readonly { name: string; partitions: readonly { partitionIndex: number }[] }[] }): number {
    if (p.generationId < 0 && group.members.size === 0) return ErrorCode.NONE;
    const member = group.members.get(p.memberId);
    if (!member) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (!p.v9) return ErrorCode.UNSUPPORTED_VERSION;
    if (p.generationId === member.memberEpoch) return ErrorCode.NONE;
    if (p.generationId > member.memberEpoch) return ErrorCode.STALE_MEMBER_EPOCH;
    for (const t of p.topics) {
      const subtopologies = subtopologiesReading(group.configured, t.name);
      for (const x of t.partitions) {
        let epoch: number | undefined;
        for (const s of subtopologies) epoch ??= member.active.get(s)?.get(x.partitionIndex) ?? member.activePendingRevocation.get(s)?.get(x.partitionIndex);
        if (epoch === undefined || p.generationId < epoch) return ErrorCode.STALE_MEMBER_EPOCH;
      }
    }
    return ErrorCode.NONE;
  }

  /** Whether the group's members read `topic` (OffsetDelete answers GROUP_SUBSCRIBED_TO_TOPIC for it); an empty group reads nothing. */
  readsTopic(group: StreamsGroup, topic: string): boolean {
    if (group.members.size === 0 || group.topology === null) return false;
    group.configured ??= configureTopology(group.topology, this.host.metadata.image());
    return subtopologiesReading(group.configured, topic).length > 0;
  }

  /** Kafka's StreamsGroup.validateOffsetFetch for a member's OffsetFetch (v9+). */
  fetchError(group: StreamsGroup, memberId: string | null, memberEpoch: number): number {
    const m = memberId === null ? undefined : group.members.get(memberId);
    if (!m) return ErrorCode.UNKNOWN_MEMBER_ID;
    return m.memberEpoch === memberEpoch ? ErrorCode.NONE : ErrorCode.STALE_MEMBER_EPOCH;
  }

  /** The records that delete an empty streams group (its offsets are the caller's). */
  deletionRecords(group: StreamsGroup): StreamsGroupRecord[] {
    return groupTombstones(group);
  }

  /** Applies a record read back from the log. */
  replay(shard: StreamsShard, r: StreamsGroupRecord): void {
    let group = shard.streamsGroups.get(r.groupId);
    if (!group) {
      if (r.value === null) return;
      group = new StreamsGroup(r.groupId);
      shard.streamsGroups.set(r.groupId, group);
    }
    if (!replayStreamsRecord(group, r)) shard.streamsGroups.delete(r.groupId);
  }

  /** After a load: members get a fresh session, and those revoking a fresh rebalance timeout. */
  onLoaded(shard: StreamsShard): void {
    for (const group of shard.streamsGroups.values()) {
      for (const m of group.members.values()) {
        this.scheduleSession(shard, group, m.memberId);
        this.updateRebalanceTimer(shard, group, m, { ...m, state: StreamsMemberState.STABLE });
      }
    }
  }

  onUnloaded(shard: StreamsShard): void {
    for (const group of shard.streamsGroups.values()) {
      this.host.timer.cancel(initialRebalanceKey(group.groupId));
      for (const id of group.members.keys()) this.cancelMemberTimers(group.groupId, id);
    }
  }
}

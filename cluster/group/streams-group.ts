/**
 * A streams group (KIP-1071), as Kafka 4.4's group coordinator keeps one:
 * Kafka Streams clients (one member per stream thread, grouped by process)
 * send their topology, the broker checks it against the topics that exist,
 * creates the internal (repartition and changelog) topics it needs, and
 * assigns the topology's tasks (subtopology id, partition) to members.
 *
 * Epochs work as for consumer groups (consumer-group.ts): the group epoch
 * rises with every change of membership, topology or topic metadata; the
 * assignment epoch is the group epoch the target assignment was computed at;
 * a member's epoch is the assignment epoch it has caught up with. A member
 * gives up (revokes) active tasks the target takes from it before it moves
 * to the new epoch, and receives an active task only once no other process
 * still holds it. Each active task remembers the epoch it was assigned at,
 * which judges offset commits made with an older member epoch.
 *
 * Nothing here touches the log: the coordinator (streams-coordinator.ts)
 * computes a change on copies, writes its records, then applies it.
 */
import type { MetadataImage } from '../metadata/metadata-image.js';
import type { TaskSet } from './streams-assignor.js';
import type {
  StreamsGroupCurrentMemberAssignmentValueData,
  StreamsGroupMemberMetadataValueData,
  StreamsGroupRecord,
  StreamsGroupTargetAssignmentMemberValueData,
  StreamsGroupTopologyValueData,
} from './streams-records.js';

export type { TaskSet };
/** subtopology id -> partition -> the epoch the active task was assigned at. */
export type ActiveTasks = Map<string, Map<number, number>>;

export interface TasksTuple {
  readonly active: TaskSet;
  readonly standby: TaskSet;
  readonly warmup: TaskSet;
}

export const EMPTY_TASKS: TasksTuple = { active: new Map(), standby: new Map(), warmup: new Map() };

/** A member's reconciliation state, as StreamsGroupCurrentMemberAssignmentValue stores it. */
export const StreamsMemberState = { STABLE: 0, UNREVOKED_TASKS: 1, UNRELEASED_TASKS: 2 } as const;
export type StreamsMemberStateId = (typeof StreamsMemberState)[keyof typeof StreamsMemberState];

/** The status codes of a StreamsGroupHeartbeat answer. */
export const StreamsStatus = {
  STALE_TOPOLOGY: 0,
  MISSING_SOURCE_TOPICS: 1,
  INCORRECTLY_PARTITIONED_TOPICS: 2,
  MISSING_INTERNAL_TOPICS: 3,
  SHUTDOWN_APPLICATION: 4,
  ASSIGNMENT_DELAYED: 5,
} as const;

export interface StreamsStatusEntry {
  readonly statusCode: number;
  readonly statusDetail: string;
}

export type Topology = StreamsGroupTopologyValueData;

export interface StreamsMember {
  readonly memberId: string;
  instanceId: string | null;
  rackId: string | null;
  clientId: string;
  clientHost: string;
  rebalanceTimeoutMs: number;
  topologyEpoch: number;
  processId: string;
  userEndpoint: { host: string; port: number } | null;
  clientTags: { key: string; value: string }[];
  memberEpoch: number;
  previousMemberEpoch: number;
  state: StreamsMemberStateId;
  active: ActiveTasks;
  standby: TaskSet;
  warmup: TaskSet;
  /** Active tasks the target took from it, still to revoke. */
  activePendingRevocation: ActiveTasks;
}

export function newStreamsMember(memberId: string): StreamsMember {
  return {
    memberId,
    instanceId: null,
    rackId: null,
    clientId: '',
    clientHost: '',
    rebalanceTimeoutMs: -1,
    topologyEpoch: -1,
    processId: '',
    userEndpoint: null,
    clientTags: [],
    memberEpoch: 0,
    previousMemberEpoch: -1,
    state: StreamsMemberState.STABLE,
    active: new Map(),
    standby: new Map(),
    warmup: new Map(),
    activePendingRevocation: new Map(),
  };
}

export function copyTaskSet(t: TaskSet): TaskSet {
  return new Map([...t].map(([s, ps]) => [s, new Set(ps)]));
}

export function copyActive(t: ActiveTasks): ActiveTasks {
  return new Map([...t].map(([s, ps]) => [s, new Map(ps)]));
}

export function copyStreamsMember(m: StreamsMember): StreamsMember {
  return {
    ...m,
    clientTags: m.clientTags.map((t) => ({ ...t })),
    userEndpoint: m.userEndpoint ? { ...m.userEndpoint } : null,
    active: copyActive(m.active),
    standby: copyTaskSet(m.standby),
    warmup: copyTaskSet(m.warmup),
    activePendingRevocation: copyActive(m.activePendingRevocation),
  };
}

/** One subtopology with its topics resolved and its number of tasks known. */
export interface ConfiguredSubtopology {
  readonly numberOfTasks: number;
  /** Every topic it reads: source topics, topics its regular expressions match, repartition source topics. */
  readonly sourceTopics: readonly string[];
  readonly repartitionSourceTopics: readonly { name: string; partitions: number; replicationFactor: number; topicConfigs: { key: string; value: string }[] }[];
  readonly stateChangelogTopics: readonly { name: string; partitions: number; replicationFactor: number; topicConfigs: { key: string; value: string }[] }[];
  readonly repartitionSinkTopics: readonly string[];
}

/** An internal topic to create, with what the topology asks for it. */
export interface InternalTopicToCreate {
  readonly name: string;
  readonly numPartitions: number;
  /** 0 or less: the broker's default. */
  readonly replicationFactor: number;
  readonly configs: Readonly<Record<string, string>>;
}

/**
 * The topology checked against the topics that exist: ready (subtopologies
 * set) when every source topic exists, every internal topic exists with the
 * partition count the topology needs, and copartitioned topics agree;
 * otherwise a status tells what is wrong, and the internal topics still
 * missing are to be created.
 */
export interface ConfiguredTopology {
  readonly topologyEpoch: number;
  readonly subtopologies: ReadonlyMap<string, ConfiguredSubtopology> | null;
  readonly status: StreamsStatusEntry | null;
  readonly internalTopicsToCreate: readonly InternalTopicToCreate[];
}

export type StreamsGroupState = 'Empty' | 'NotReady' | 'Assigning' | 'Reconciling' | 'Stable';

export class StreamsGroup {
  groupEpoch = 0;
  metadataHash = 0n;
  validatedTopologyEpoch = -1;
  lastAssignmentConfigs: { key: string; value: string }[] | null = null;
  assignmentEpoch = 0;
  assignmentTimestamp = 0n;
  topology: Topology | null = null;
  /** Computed from the topology and the metadata, never stored. */
  configured: ConfiguredTopology | null = null;
  readonly members = new Map<string, StreamsMember>();
  readonly target = new Map<string, TasksTuple>();
  /** Rises (in memory only) whenever a member with an endpoint gets a new assignment. */
  endpointInformationEpoch = 0;
  shutdownRequestMemberId: string | null = null;
  /** Until when (ms) the first assignment of a new group waits for more members; 0 when it does not wait. */
  initialDelayUntil = 0;

  constructor(readonly groupId: string) {}

  get state(): StreamsGroupState {
    if (this.members.size === 0) return 'Empty';
    if (this.topology === null || this.configured === null || this.configured.subtopologies === null) return 'NotReady';
    if (this.groupEpoch !== this.assignmentEpoch) return 'Assigning';
    for (const m of this.members.values()) if (m.state !== StreamsMemberState.STABLE || m.memberEpoch !== this.assignmentEpoch) return 'Reconciling';
    return 'Stable';
  }

  /** The process holding active task s-p (assigned or still revoking), other than member `except`'s; undefined when none. */
  activeOwnerProcess(s: string, p: number, except: string): string | undefined {
    for (const m of this.members.values()) {
      if (m.memberId === except) continue;
      if (m.active.get(s)?.has(p) || m.activePendingRevocation.get(s)?.has(p)) return m.processId;
    }
    return undefined;
  }
}

// ---- topology configuration ---------------------------------------------------------------------

const cfg = (kvs: readonly { key: string; value: string }[]): Record<string, string> => Object.fromEntries(kvs.map((kv) => [kv.key, kv.value]));

/**
 * Checks `topology` against the topics of `image`, as Kafka's
 * InternalTopicManager.configureTopics does: source topics must exist,
 * repartition topics without a partition count take the largest partition
 * count of the topics feeding the subtopologies that write them,
 * copartitioned topics must agree, changelog topics have one partition per
 * task, and internal topics that do not exist yet are to be created.
 */
export function configureTopology(topology: Topology, image: MetadataImage): ConfiguredTopology {
  const notReady = (status: StreamsStatusEntry, toCreate: InternalTopicToCreate[] = []): ConfiguredTopology => ({
    topologyEpoch: topology.epoch,
    subtopologies: null,
    status,
    internalTopicsToCreate: toCreate,
  });
  const repartition = new Map<string, { partitions: number; replicationFactor: number; topicConfigs: { key: string; value: string }[] }>();
  for (const st of topology.subtopologies) for (const t of st.repartitionSourceTopics) repartition.set(t.name, { ...t });

  // Source topics and regular expressions, resolved against what exists.
  const missing: string[] = [];
  const external = new Map<string, string[]>();
  for (const st of topology.subtopologies) {
    const names: string[] = [];
    for (const name of st.sourceTopics) {
      if (repartition.has(name)) continue;
      if (image.topics.has(name)) names.push(name);
      else missing.push(name);
    }
    for (const source of st.sourceTopicRegex) {
      let re: RegExp;
      try {
        re = new RegExp(`^(?:${source})$`);
      } catch {
        continue;
      }
      for (const name of image.topics.keys()) if (!name.startsWith('__') && re.test(name) && !names.includes(name)) names.push(name);
    }
    external.set(st.subtopologyId, names);
  }
  if (missing.length > 0) {
    return notReady({ statusCode: StreamsStatus.MISSING_SOURCE_TOPICS, statusDetail: `Source topics ${[...new Set(missing)].sort().join(', ')} are missing.` });
  }
  const partitionsOf = (name: string): number => image.topics.get(name)?.partitions.length ?? 0;

  // Repartition topics without a count: the most partitions among the sources of the subtopologies writing them.
  const counts = new Map<string, number>();
  for (const [name, t] of repartition) if (t.partitions > 0) counts.set(name, t.partitions);
  for (let round = 0; round <= repartition.size; round++) {
    let changed = false;
    for (const st of topology.subtopologies) {
      let max = 0;
      for (const n of external.get(st.subtopologyId)!) max = Math.max(max, partitionsOf(n));
      for (const t of st.repartitionSourceTopics) max = Math.max(max, counts.get(t.name) ?? 0);
      if (max === 0) continue;
      for (const sink of st.repartitionSinkTopics) {
        if (!repartition.has(sink) || repartition.get(sink)!.partitions > 0) continue;
        if ((counts.get(sink) ?? 0) < max) {
          counts.set(sink, max);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }

  // Copartition groups: external topics must agree; repartition topics follow them.
  for (const st of topology.subtopologies) {
    for (const g of st.copartitionGroups) {
      const ext = g.sourceTopics.map((i) => st.sourceTopics[i]).filter((n): n is string => n !== undefined && !repartition.has(n));
      const rep = g.repartitionSourceTopics.map((i) => st.repartitionSourceTopics[i]?.name).filter((n): n is string => n !== undefined);
      const extCounts = new Set(ext.map(partitionsOf));
      if (extCounts.size > 1) {
        return notReady({
          statusCode: StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS,
          statusDetail: `Following topics do not have the same number of partitions: [${ext.sort().join(', ')}]`,
        });
      }
      const target = extCounts.size === 1 ? [...extCounts][0]! : Math.max(0, ...rep.map((n) => counts.get(n) ?? 0));
      for (const n of rep) if (repartition.get(n)!.partitions <= 0 && target > 0) counts.set(n, target);
    }
  }
  const unknown = [...repartition.keys()].filter((n) => !counts.has(n));
  if (unknown.length > 0) {
    return notReady({ statusCode: StreamsStatus.MISSING_SOURCE_TOPICS, statusDetail: `Cannot find the number of partitions of repartition topics ${unknown.sort().join(', ')}.` });
  }

  const subtopologies = new Map<string, ConfiguredSubtopology>();
  const toCreate: InternalTopicToCreate[] = [];
  const wrong: string[] = [];
  const need = (name: string, partitions: number, replicationFactor: number, configs: { key: string; value: string }[]): void => {
    const existing = image.topics.get(name);
    if (!existing) {
      if (!toCreate.some((t) => t.name === name)) toCreate.push({ name, numPartitions: partitions, replicationFactor, configs: cfg(configs) });
    } else if (existing.partitions.length !== partitions) wrong.push(name);
  };
  for (const st of topology.subtopologies) {
    let tasks = 0;
    for (const n of external.get(st.subtopologyId)!) tasks = Math.max(tasks, partitionsOf(n));
    for (const t of st.repartitionSourceTopics) tasks = Math.max(tasks, counts.get(t.name)!);
    const repartitionSources = st.repartitionSourceTopics.map((t) => ({ ...t, partitions: counts.get(t.name)! }));
    const changelogs = st.stateChangelogTopics.map((t) => ({ ...t, partitions: tasks }));
    for (const t of repartitionSources) need(t.name, t.partitions, t.replicationFactor, t.topicConfigs);
    for (const t of changelogs) need(t.name, t.partitions, t.replicationFactor, t.topicConfigs);
    subtopologies.set(st.subtopologyId, {
      numberOfTasks: tasks,
      sourceTopics: [...external.get(st.subtopologyId)!, ...st.repartitionSourceTopics.map((t) => t.name)],
      repartitionSourceTopics: repartitionSources,
      stateChangelogTopics: changelogs,
      repartitionSinkTopics: st.repartitionSinkTopics,
    });
  }
  if (wrong.length > 0) {
    return notReady({
      statusCode: StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS,
      statusDetail: `Existing internal topics have invalid number of partitions: [${wrong.sort().join(', ')}]`,
    });
  }
  if (toCreate.length > 0) {
    return notReady(
      { statusCode: StreamsStatus.MISSING_INTERNAL_TOPICS, statusDetail: `Internal topics are missing: [${toCreate.map((t) => t.name).sort().join(', ')}]` },
      toCreate,
    );
  }
  return { topologyEpoch: topology.epoch, subtopologies, status: null, internalTopicsToCreate: [] };
}

/**
 * What the group's topics look like, as one number: it changes when a topic
 * the topology names (or its expressions match) appears, goes, is recreated
 * or grows, which is when the topology must be checked again.
 */
export function topologyMetadataHash(topology: Topology | null, image: MetadataImage): bigint {
  if (topology === null) return 0n;
  const names = new Set<string>();
  const regexes: RegExp[] = [];
  for (const st of topology.subtopologies) {
    for (const n of st.sourceTopics) names.add(n);
    for (const t of st.repartitionSourceTopics) names.add(t.name);
    for (const t of st.stateChangelogTopics) names.add(t.name);
    for (const source of st.sourceTopicRegex) {
      try {
        regexes.push(new RegExp(`^(?:${source})$`));
      } catch {
        // An expression that does not compile matches nothing.
      }
    }
  }
  for (const name of image.topics.keys()) if (!name.startsWith('__') && regexes.some((re) => re.test(name))) names.add(name);
  let h = 0xcbf29ce484222325n;
  const mix = (s: string): void => {
    for (const b of Buffer.from(s, 'utf8')) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  };
  for (const name of [...names].sort()) {
    const t = image.topics.get(name);
    if (!t) continue;
    mix(`${name}\u0000${t.topicId}\u0000${t.partitions.length}\u0001`);
  }
  return BigInt.asIntN(64, h);
}

/** The task a member's commit to `topic`-`partition` belongs to, per subtopology reading that topic. */
export function subtopologiesReading(configured: ConfiguredTopology | null, topic: string): string[] {
  const out: string[] = [];
  for (const [id, st] of configured?.subtopologies ?? []) if (st.sourceTopics.includes(topic)) out.push(id);
  return out;
}

// ---- reconciliation -----------------------------------------------------------------------------

/**
 * Moves `m` towards its target as Kafka's streams CurrentAssignmentBuilder
 * does, given the active tasks it reports owning (null: not reported).
 *
 * - A member with active tasks to give up stays at its epoch, keeping only
 *   the target's tasks it holds, until it reports none of them (UNREVOKED_TASKS).
 * - Otherwise it moves to the target epoch; active tasks another process
 *   still holds are held back until released (UNRELEASED_TASKS), as are
 *   standby and warm-up tasks active in the member's own process elsewhere.
 * - A member that has all its target is STABLE.
 */
export function reconcileStreamsMember(
  group: StreamsGroup,
  m: StreamsMember,
  targetEpoch: number,
  target: TasksTuple,
  ownedActive: TaskSet | null,
): StreamsMember {
  if (m.state === StreamsMemberState.UNREVOKED_TASKS) {
    if (ownedActive === null) return m;
    for (const [s, ps] of m.activePendingRevocation) for (const p of ps.keys()) if (ownedActive.get(s)?.has(p)) return m;
    return computeNext(group, { ...m, activePendingRevocation: new Map() }, targetEpoch, target);
  }
  if (m.state === StreamsMemberState.STABLE && m.memberEpoch === targetEpoch) return m;
  return computeNext(group, m, targetEpoch, target);
}

function computeNext(group: StreamsGroup, m: StreamsMember, targetEpoch: number, target: TasksTuple): StreamsMember {
  const keptActive: ActiveTasks = new Map();
  const revoke: ActiveTasks = new Map();
  for (const [s, ps] of m.active) {
    for (const [p, epoch] of ps) {
      const into = target.active.get(s)?.has(p) ? keptActive : revoke;
      if (!into.has(s)) into.set(s, new Map());
      into.get(s)!.set(p, epoch);
    }
  }
  const keepOnly = (held: TaskSet, wanted: TaskSet): TaskSet => {
    const out: TaskSet = new Map();
    for (const [s, ps] of held) for (const p of ps) if (wanted.get(s)?.has(p)) addTask(out, s, p);
    return out;
  };
  if (revoke.size > 0) {
    return {
      ...m,
      state: StreamsMemberState.UNREVOKED_TASKS,
      active: keptActive,
      standby: keepOnly(m.standby, target.standby),
      warmup: keepOnly(m.warmup, target.warmup),
      activePendingRevocation: revoke,
    };
  }
  let unreleased = false;
  const active: ActiveTasks = keptActive;
  for (const [s, ps] of target.active) {
    for (const p of ps) {
      if (active.get(s)?.has(p)) continue;
      const owner = group.activeOwnerProcess(s, p, m.memberId);
      if (owner !== undefined && owner !== m.processId) {
        unreleased = true;
        continue;
      }
      if (!active.has(s)) active.set(s, new Map());
      active.get(s)!.set(p, targetEpoch);
    }
  }
  const others = (wanted: TaskSet): TaskSet => {
    const out: TaskSet = new Map();
    for (const [s, ps] of wanted) {
      for (const p of ps) {
        if (group.activeOwnerProcess(s, p, m.memberId) === m.processId) {
          unreleased = true;
          continue;
        }
        addTask(out, s, p);
      }
    }
    return out;
  };
  const standby = others(target.standby);
  const warmup = others(target.warmup);
  return {
    ...m,
    state: unreleased ? StreamsMemberState.UNRELEASED_TASKS : StreamsMemberState.STABLE,
    previousMemberEpoch: m.memberEpoch === targetEpoch ? m.previousMemberEpoch : m.memberEpoch,
    memberEpoch: targetEpoch,
    active,
    standby,
    warmup,
    activePendingRevocation: new Map(),
  };
}

export function addTask(set: TaskSet, s: string, p: number): void {
  let ps = set.get(s);
  if (!ps) set.set(s, (ps = new Set()));
  ps.add(p);
}

export function taskSetOf(list: readonly { subtopologyId: string; partitions: readonly number[] }[] | null): TaskSet | null {
  if (list === null) return null;
  const out: TaskSet = new Map();
  for (const t of list) for (const p of t.partitions) addTask(out, t.subtopologyId, p);
  return out;
}

export function sameTaskSet(a: TaskSet, b: TaskSet): boolean {
  const size = (t: TaskSet): number => [...t.values()].reduce((n, ps) => n + ps.size, 0);
  if (size(a) !== size(b)) return false;
  for (const [s, ps] of a) for (const p of ps) if (!b.get(s)?.has(p)) return false;
  return true;
}

export function activeAsTaskSet(a: ActiveTasks): TaskSet {
  return new Map([...a].map(([s, ps]) => [s, new Set(ps.keys())]));
}

export function sameTasks(a: TasksTuple, b: TasksTuple): boolean {
  return sameTaskSet(a.active, b.active) && sameTaskSet(a.standby, b.standby) && sameTaskSet(a.warmup, b.warmup);
}

/** Task lists sorted by subtopology id then partition, as records and answers carry them. */
export function taskList(t: TaskSet): { subtopologyId: string; partitions: number[] }[] {
  return [...t]
    .filter(([, ps]) => ps.size > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([subtopologyId, ps]) => ({ subtopologyId, partitions: [...ps].sort((x, y) => x - y) }));
}

function activeList(t: ActiveTasks): { subtopologyId: string; partitions: number[]; assignmentEpochs: number[] | null }[] {
  return [...t]
    .filter(([, ps]) => ps.size > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([subtopologyId, ps]) => {
      const entries = [...ps].sort(([x], [y]) => x - y);
      return { subtopologyId, partitions: entries.map(([p]) => p), assignmentEpochs: entries.map(([, e]) => e) };
    });
}

// ---- records ------------------------------------------------------------------------------------

export function memberMetadataRecord(groupId: string, m: StreamsMember): StreamsGroupRecord {
  const value: StreamsGroupMemberMetadataValueData = {
    instanceId: m.instanceId,
    rackId: m.rackId,
    clientId: m.clientId,
    clientHost: m.clientHost,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
    topologyEpoch: m.topologyEpoch,
    processId: m.processId,
    userEndpoint: m.userEndpoint,
    clientTags: [...m.clientTags].sort((a, b) => (a.key < b.key ? -1 : 1)),
  };
  return { kind: 'streams', type: 19, groupId, memberId: m.memberId, value };
}

export function currentAssignmentRecord(groupId: string, m: StreamsMember): StreamsGroupRecord {
  const plain = (t: TaskSet) => taskList(t).map((x) => ({ ...x, assignmentEpochs: null }));
  const value: StreamsGroupCurrentMemberAssignmentValueData = {
    memberEpoch: m.memberEpoch,
    previousMemberEpoch: m.previousMemberEpoch,
    state: m.state,
    activeTasks: activeList(m.active),
    standbyTasks: plain(m.standby),
    warmupTasks: plain(m.warmup),
    activeTasksPendingRevocation: activeList(m.activePendingRevocation),
    standbyTasksPendingRevocation: [],
    warmupTasksPendingRevocation: [],
  };
  return { kind: 'streams', type: 22, groupId, memberId: m.memberId, value };
}

export function targetMemberRecord(groupId: string, memberId: string, t: TasksTuple): StreamsGroupRecord {
  const value: StreamsGroupTargetAssignmentMemberValueData = { activeTasks: taskList(t.active), standbyTasks: taskList(t.standby), warmupTasks: taskList(t.warmup) };
  return { kind: 'streams', type: 21, groupId, memberId, value };
}

export function memberTombstones(groupId: string, memberId: string): StreamsGroupRecord[] {
  return [
    { kind: 'streams', type: 22, groupId, memberId, value: null },
    { kind: 'streams', type: 21, groupId, memberId, value: null },
    { kind: 'streams', type: 19, groupId, memberId, value: null },
  ];
}

/** Every tombstone that deletes the group, members first. */
export function groupTombstones(group: StreamsGroup): StreamsGroupRecord[] {
  const out: StreamsGroupRecord[] = [];
  for (const id of new Set([...group.members.keys(), ...group.target.keys()])) out.push(...memberTombstones(group.groupId, id));
  out.push(
    { kind: 'streams', type: 20, groupId: group.groupId, value: null },
    { kind: 'streams', type: 23, groupId: group.groupId, value: null },
    { kind: 'streams', type: 17, groupId: group.groupId, value: null },
  );
  return out;
}

function activeFromRecord(list: readonly { subtopologyId: string; partitions: number[]; assignmentEpochs: number[] | null }[], fallbackEpoch: number): ActiveTasks {
  const out: ActiveTasks = new Map();
  for (const t of list) out.set(t.subtopologyId, new Map(t.partitions.map((p, i) => [p, t.assignmentEpochs?.[i] ?? fallbackEpoch])));
  return out;
}

/**
 * Applies one record read back from the log to `group` (created by the
 * caller on the first record of a group). Returns false when the record
 * deletes the group itself.
 */
export function replayStreamsRecord(group: StreamsGroup, r: StreamsGroupRecord): boolean {
  switch (r.type) {
    case 17:
      if (r.value === null) return false;
      group.groupEpoch = r.value.epoch;
      group.metadataHash = r.value.metadataHash;
      group.validatedTopologyEpoch = r.value.validatedTopologyEpoch;
      group.lastAssignmentConfigs = r.value.lastAssignmentConfigs;
      group.configured = null;
      return true;
    case 23:
      group.topology = r.value;
      group.configured = null;
      return true;
    case 20:
      if (r.value === null) return true;
      group.assignmentEpoch = r.value.assignmentEpoch;
      group.assignmentTimestamp = r.value.assignmentTimestamp;
      return true;
    case 21:
      if (r.value === null) group.target.delete(r.memberId);
      else {
        group.target.set(r.memberId, {
          active: taskSetOf(r.value.activeTasks)!,
          standby: taskSetOf(r.value.standbyTasks)!,
          warmup: taskSetOf(r.value.warmupTasks)!,
        });
      }
      return true;
    case 19: {
      if (r.value === null) {
        group.members.delete(r.memberId);
        return true;
      }
      const m = group.members.get(r.memberId) ?? newStreamsMember(r.memberId);
      const v = r.value;
      Object.assign(m, {
        instanceId: v.instanceId,
        rackId: v.rackId,
        clientId: v.clientId,
        clientHost: v.clientHost,
        rebalanceTimeoutMs: v.rebalanceTimeoutMs,
        topologyEpoch: v.topologyEpoch,
        processId: v.processId,
        userEndpoint: v.userEndpoint,
        clientTags: v.clientTags,
      });
      group.members.set(r.memberId, m);
      return true;
    }
    case 22: {
      const m = group.members.get(r.memberId);
      if (r.value === null) {
        // The member's metadata tombstone removes it; its assignment goes with it.
        if (m) Object.assign(m, { active: new Map(), standby: new Map(), warmup: new Map(), activePendingRevocation: new Map() });
        return true;
      }
      const target = m ?? newStreamsMember(r.memberId);
      const v = r.value;
      Object.assign(target, {
        memberEpoch: v.memberEpoch,
        previousMemberEpoch: v.previousMemberEpoch,
        state: v.state as StreamsMemberStateId,
        active: activeFromRecord(v.activeTasks, v.memberEpoch),
        standby: taskSetOf(v.standbyTasks)!,
        warmup: taskSetOf(v.warmupTasks)!,
        activePendingRevocation: activeFromRecord(v.activeTasksPendingRevocation, v.memberEpoch),
      });
      if (!m) group.members.set(r.memberId, target);
      return true;
    }
  }
}

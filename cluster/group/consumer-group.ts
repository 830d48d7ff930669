/**
 * A consumer group of the consumer rebalance protocol (KIP-848), as Kafka
 * 4.4's group coordinator keeps one: the broker computes the assignment and
 * each member reconciles towards its share of it, heartbeat by heartbeat.
 *
 * Three epochs order the group's history. The group epoch rises with every
 * change of membership or of what the members subscribe to (a new group
 * starts at 1, so its first member gets epoch 2). The assignment epoch is the
 * group epoch the target assignment was computed at. A member's epoch is the
 * assignment epoch it has caught up with: it moves to a new target only once
 * it gave up (revoked) what the target takes from it, and it receives a
 * partition only once no other member still owns it. Each partition a member
 * holds remembers the epoch it was assigned at (offset commits with an older
 * member epoch are judged by it).
 *
 * Nothing here touches the log: the coordinator (group-coordinator.ts)
 * computes a change on copies, writes its records, and then applies it.
 */

/** topic id -> partition -> the epoch the partition was assigned at. */
export type Assigned = Map<string, Map<number, number>>;
/** topic id -> partitions. */
export type TargetAssignment = Map<string, Set<number>>;

/** A member's reconciliation state, as ConsumerGroupCurrentMemberAssignmentValue stores it. */
export const MemberState = {
  STABLE: 0,
  UNREVOKED_PARTITIONS: 1,
  UNRELEASED_PARTITIONS: 2,
} as const;
export type MemberStateId = (typeof MemberState)[keyof typeof MemberState];

/**
 * What a member that speaks the classic protocol (JoinGroup, SyncGroup,
 * Heartbeat) inside a consumer group keeps of its classic membership, as
 * ConsumerGroupMemberMetadataValue.classicMemberMetadata stores it: its
 * session timeout and the protocols (assignor names with their
 * ConsumerProtocol subscriptions) of its last JoinGroup, most preferred first.
 */
export interface ClassicMemberMetadata {
  readonly sessionTimeoutMs: number;
  readonly protocols: readonly { readonly name: string; readonly metadata: Buffer }[];
}

export interface ConsumerMember {
  readonly memberId: string;
  instanceId: string | null;
  rackId: string | null;
  clientId: string;
  clientHost: string;
  subscribedTopicNames: string[];
  /** "" when the member subscribes to no regular expression. */
  subscribedTopicRegex: string;
  rebalanceTimeoutMs: number;
  serverAssignor: string | null;
  memberEpoch: number;
  previousMemberEpoch: number;
  state: MemberStateId;
  assigned: Assigned;
  pendingRevocation: Assigned;
  /** Set for a member of the classic protocol (online migration); null for one of the consumer protocol. */
  classic: ClassicMemberMetadata | null;
}

export type ConsumerGroupState = 'Empty' | 'Assigning' | 'Reconciling' | 'Stable';

export class ConsumerGroup {
  groupEpoch = 1;
  assignmentEpoch = 1;
  /** When the target assignment was last computed (ms); 0 for never. */
  assignmentTimestamp = 0;
  metadataHash = 0n;
  readonly members = new Map<string, ConsumerMember>();
  /** Each member's share of the target assignment. */
  readonly target = new Map<string, TargetAssignment>();

  constructor(readonly groupId: string) {}

  get state(): ConsumerGroupState {
    if (this.members.size === 0) return 'Empty';
    if (this.groupEpoch > this.assignmentEpoch) return 'Assigning';
    for (const m of this.members.values()) if (m.state !== MemberState.STABLE || m.memberEpoch !== this.assignmentEpoch) return 'Reconciling';
    return 'Stable';
  }

  memberByInstanceId(instanceId: string): ConsumerMember | undefined {
    for (const m of this.members.values()) if (m.instanceId === instanceId) return m;
    return undefined;
  }

  get numClassicMembers(): number {
    let n = 0;
    for (const m of this.members.values()) if (m.classic !== null) n++;
    return n;
  }

  /**
   * Whether a classic member offering `protocols` of `protocolType` may be
   * in the group: the consumer protocol type, and (unless the group is
   * empty) at least one protocol every classic member already supports.
   */
  supportsClassicProtocols(protocolType: string, protocols: readonly string[]): boolean {
    if (protocolType !== 'consumer') return false;
    if (this.members.size === 0) return protocols.length > 0;
    const classic = [...this.members.values()].filter((m) => m.classic !== null);
    return protocols.some((name) => classic.every((m) => m.classic!.protocols.some((p) => p.name === name)));
  }

  /** Whether `m`, waiting for partitions of its target, still waits for one another member holds. */
  waitingOnUnreleasedPartition(m: ConsumerMember): boolean {
    if (m.state !== MemberState.UNRELEASED_PARTITIONS) return false;
    for (const [topicId, ps] of this.target.get(m.memberId) ?? new Map<string, Set<number>>()) {
      for (const p of ps) if (!m.assigned.get(topicId)?.has(p) && this.ownerEpoch(topicId, p, m.memberId) !== -1) return true;
    }
    return false;
  }

  /** The epoch of the member holding `topicId`-`partition` (assigned or still to revoke) other than `except`, or -1. */
  ownerEpoch(topicId: string, partition: number, except: string): number {
    for (const m of this.members.values()) {
      if (m.memberId === except) continue;
      if (m.assigned.get(topicId)?.has(partition) || m.pendingRevocation.get(topicId)?.has(partition)) return m.memberEpoch;
    }
    return -1;
  }
}

export function copyAssigned(a: Assigned): Assigned {
  return new Map([...a].map(([t, ps]) => [t, new Map(ps)]));
}

export function copyMember(m: ConsumerMember): ConsumerMember {
  return { ...m, subscribedTopicNames: [...m.subscribedTopicNames], assigned: copyAssigned(m.assigned), pendingRevocation: copyAssigned(m.pendingRevocation) };
}

export function newMember(memberId: string): ConsumerMember {
  return {
    memberId,
    instanceId: null,
    rackId: null,
    clientId: '',
    clientHost: '',
    subscribedTopicNames: [],
    subscribedTopicRegex: '',
    rebalanceTimeoutMs: -1,
    serverAssignor: null,
    memberEpoch: 0,
    previousMemberEpoch: -1,
    state: MemberState.STABLE,
    assigned: new Map(),
    pendingRevocation: new Map(),
    classic: null,
  };
}

/** Whether two assignments hold the same partitions at the same assignment epochs. */
export function sameAssigned(a: Assigned, b: Assigned): boolean {
  const size = (x: Assigned) => [...x.values()].reduce((n, ps) => n + ps.size, 0);
  if (size(a) !== size(b)) return false;
  for (const [t, ps] of a) for (const [p, e] of ps) if (b.get(t)?.get(p) !== e) return false;
  return true;
}

export function sameTarget(a: TargetAssignment | undefined, b: TargetAssignment | undefined): boolean {
  const flat = (x: TargetAssignment | undefined) => [...(x ?? new Map<string, Set<number>>())].flatMap(([t, ps]) => [...ps].map((p) => `${t}:${p}`)).sort().join(',');
  return flat(a) === flat(b);
}

/** A member's view of what it owns, from its heartbeat's topic_partitions; null (not sent) counts as owning everything. */
export type Owned = ReadonlyMap<string, ReadonlySet<number>> | null;

function owns(owned: Owned, topicId: string, partition: number): boolean {
  return owned === null || owned.get(topicId)?.has(partition) === true;
}

function ownsAnyOf(owned: Owned, a: Assigned): boolean {
  for (const [t, ps] of a) for (const p of ps.keys()) if (owns(owned, t, p)) return true;
  return false;
}

/**
 * Moves a member towards `target` at `targetEpoch` (Kafka's
 * CurrentAssignmentBuilder): partitions it keeps keep their assignment
 * epoch; those the target takes away wait in pending revocation until the
 * member's heartbeat no longer lists them (UNREVOKED_PARTITIONS, epoch
 * unchanged); new partitions come at `targetEpoch`, except those another
 * member still owns (UNRELEASED_PARTITIONS until they are released).
 * Topics the member no longer subscribes to are revoked too.
 *
 * Returns the member as it becomes (a copy; `m` is not changed).
 *
 * Example: a member at epoch 2 with t-0..5 and a target of t-0..2 at epoch 3
 * -> UNREVOKED_PARTITIONS, epoch 2, assigned t-0..2, pending t-3..5; once
 * its heartbeat lists only t-0..2 -> STABLE at epoch 3.
 */
export function reconcile(
  group: ConsumerGroup,
  m: ConsumerMember,
  targetEpoch: number,
  target: TargetAssignment,
  owned: Owned,
  subscribed: ReadonlySet<string>,
  subscriptionChanged: boolean,
): ConsumerMember {
  if (!subscriptionChanged && m.state === MemberState.STABLE && m.memberEpoch === targetEpoch) return m;
  const next = (epoch: number): ConsumerMember => computeNext(group, m, epoch, targetEpoch, target, owned, subscribed);
  switch (m.state) {
    case MemberState.STABLE:
      if (m.memberEpoch !== targetEpoch) return next(m.memberEpoch);
      return subscriptionChanged ? dropUnsubscribed(m, owned, subscribed) : m;
    case MemberState.UNREVOKED_PARTITIONS:
      if (ownsAnyOf(owned, m.pendingRevocation)) return subscriptionChanged ? dropUnsubscribed(m, owned, subscribed) : m;
      return next(m.memberEpoch);
    default:
      return next(m.memberEpoch);
  }
}

function computeNext(
  group: ConsumerGroup,
  m: ConsumerMember,
  _epoch: number,
  targetEpoch: number,
  target: TargetAssignment,
  owned: Owned,
  subscribed: ReadonlySet<string>,
): ConsumerMember {
  const keep: Assigned = new Map();
  const revoke: Assigned = new Map();
  const add: Assigned = new Map();
  let unreleased = false;
  const topics = new Set([...target.keys(), ...m.assigned.keys()]);
  for (const topicId of topics) {
    const wanted = subscribed.has(topicId) ? (target.get(topicId) ?? new Set<number>()) : new Set<number>();
    const has = m.assigned.get(topicId) ?? new Map<number, number>();
    for (const [p, e] of has) {
      if (wanted.has(p)) put(keep, topicId, p, e);
      else put(revoke, topicId, p, e);
    }
    for (const p of wanted) {
      if (has.has(p)) continue;
      const ownedElsewhere = group.ownerEpoch(topicId, p, m.memberId) !== -1;
      const pendingHere = m.pendingRevocation.get(topicId)?.has(p) === true;
      if (ownedElsewhere && !pendingHere) {
        unreleased = true;
        continue;
      }
      put(add, topicId, p, targetEpoch);
    }
  }
  if (revoke.size > 0 && ownsAnyOf(owned, revoke)) {
    return { ...m, state: MemberState.UNREVOKED_PARTITIONS, previousMemberEpoch: m.memberEpoch, assigned: keep, pendingRevocation: revoke };
  }
  const assigned = copyAssigned(keep);
  for (const [t, ps] of add) for (const [p, e] of ps) put(assigned, t, p, e);
  return {
    ...m,
    state: unreleased ? MemberState.UNRELEASED_PARTITIONS : MemberState.STABLE,
    previousMemberEpoch: m.memberEpoch,
    memberEpoch: targetEpoch,
    assigned,
    pendingRevocation: new Map(),
  };
}

function dropUnsubscribed(m: ConsumerMember, owned: Owned, subscribed: ReadonlySet<string>): ConsumerMember {
  const keep: Assigned = new Map();
  const revoke: Assigned = copyAssigned(m.pendingRevocation);
  for (const [t, ps] of m.assigned) {
    for (const [p, e] of ps) put(subscribed.has(t) ? keep : revoke, t, p, e);
  }
  if (revoke.size === 0) return m;
  if (ownsAnyOf(owned, revoke)) return { ...m, state: MemberState.UNREVOKED_PARTITIONS, previousMemberEpoch: m.memberEpoch, assigned: keep, pendingRevocation: revoke };
  return { ...m, previousMemberEpoch: m.memberEpoch, assigned: keep, pendingRevocation: new Map() };
}

function put(a: Assigned, topicId: string, partition: number, epoch: number): void {
  let ps = a.get(topicId);
  if (!ps) a.set(topicId, (ps = new Map()));
  ps.set(partition, epoch);
}

// ---- assignors -----------------------------------------------------------------------------

export interface AssignorMember {
  readonly memberId: string;
  readonly instanceId: string | null;
  /** Topic ids the member subscribes to that exist. */
  readonly topics: readonly string[];
  /** Its share of the current target. */
  readonly previous: TargetAssignment;
}

/** The server-side assignors Kafka 4.4 ships (group.consumer.assignors; the first is the default). */
export const ASSIGNORS = ['uniform', 'range'] as const;
export type AssignorName = (typeof ASSIGNORS)[number];

/**
 * The target assignment: each member's partitions of the topics it
 * subscribes to, every partition of a subscribed topic to exactly one
 * member. `partitionCount` gives each topic id's partitions.
 */
export function assign(name: AssignorName, members: readonly AssignorMember[], partitionCount: (topicId: string) => number): Map<string, TargetAssignment> {
  const out = new Map<string, TargetAssignment>(members.map((m) => [m.memberId, new Map()]));
  if (members.length === 0) return out;
  const first = [...members[0]!.topics].sort().join(',');
  const homogeneous = members.every((m) => [...m.topics].sort().join(',') === first);
  if (name === 'uniform' && homogeneous) return uniformHomogeneous(members, partitionCount, out);
  return range(members, partitionCount, out);
}

/**
 * Range: members ordered (static members by instance id first, then by
 * member id); each topic cut into contiguous ranges among its subscribers,
 * the first (partitions % subscribers) getting one more.
 */
function range(members: readonly AssignorMember[], partitionCount: (topicId: string) => number, out: Map<string, TargetAssignment>): Map<string, TargetAssignment> {
  const sorted = [...members].sort((a, b) => {
    if ((a.instanceId === null) !== (b.instanceId === null)) return a.instanceId === null ? 1 : -1;
    const ka = a.instanceId ?? a.memberId;
    const kb = b.instanceId ?? b.memberId;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const topics = [...new Set(sorted.flatMap((m) => m.topics))];
  for (const topicId of topics) {
    const subscribers = sorted.filter((m) => m.topics.includes(topicId));
    const n = partitionCount(topicId);
    const min = Math.floor(n / subscribers.length);
    const extra = n % subscribers.length;
    let next = 0;
    subscribers.forEach((m, i) => {
      const count = min + (i < extra ? 1 : 0);
      const ps = new Set<number>();
      for (let k = 0; k < count; k++) ps.add(next++);
      if (ps.size > 0) out.get(m.memberId)!.set(topicId, ps);
    });
  }
  return out;
}

/**
 * Uniform, every member subscribing to the same topics: each member's quota
 * is total / members (the first total % members of them one more); a member
 * keeps what it had up to its quota, and what is left over or new fills the
 * members below their quota. A member that cannot fill a quota with one
 * more gives that one back while enough later members can take it, so the
 * extra partitions go to members that already hold them.
 */
function uniformHomogeneous(members: readonly AssignorMember[], partitionCount: (topicId: string) => number, out: Map<string, TargetAssignment>): Map<string, TargetAssignment> {
  const topics = [...members[0]!.topics].sort();
  const subscribed = new Set(topics);
  const total = topics.reduce((n, t) => n + partitionCount(t), 0);
  const held = new Set<string>();
  for (const m of members) for (const [t, ps] of m.previous) if (subscribed.has(t)) for (const p of ps) if (p < partitionCount(t)) held.add(`${t}\u0000${p}`);
  const unassigned: [string, number][] = [];
  for (const t of topics) for (let p = 0; p < partitionCount(t); p++) if (!held.has(`${t}\u0000${p}`)) unassigned.push([t, p]);
  const minQuota = Math.floor(total / members.length);
  let extras = total % members.length;
  const unfilled: [string, number][] = [];
  members.forEach((m, idx) => {
    let quota = minQuota;
    let tookExtra = false;
    if (extras > 0) {
      quota++;
      tookExtra = true;
    }
    const mine = out.get(m.memberId)!;
    for (const [t, ps] of m.previous) {
      if (!subscribed.has(t)) continue;
      const valid = [...ps].filter((p) => p < partitionCount(t)).sort((a, b) => a - b);
      const kept = valid.slice(0, quota);
      for (const p of valid.slice(quota)) unassigned.push([t, p]);
      quota -= kept.length;
      if (kept.length > 0) mine.set(t, new Set(kept));
    }
    if (quota > 0 && tookExtra && members.length - idx > extras) {
      quota--;
      tookExtra = false;
    }
    if (quota > 0) unfilled.push([m.memberId, quota]);
    if (tookExtra) extras--;
  });
  let at = 0;
  for (const [memberId, quota] of unfilled) {
    const mine = out.get(memberId)!;
    for (let k = 0; k < quota && at < unassigned.length; k++, at++) {
      const [t, p] = unassigned[at]!;
      let ps = mine.get(t);
      if (!ps) mine.set(t, (ps = new Set()));
      ps.add(p);
    }
  }
  // Whatever is left (a quota the give-back left short) goes round the members, fewest first.
  for (; at < unassigned.length; at++) {
    const [t, p] = unassigned[at]!;
    let least = members[0]!.memberId;
    let leastCount = Infinity;
    for (const m of members) {
      const c = [...out.get(m.memberId)!.values()].reduce((n, ps) => n + ps.size, 0);
      if (c < leastCount) {
        least = m.memberId;
        leastCount = c;
      }
    }
    const mine = out.get(least)!;
    let ps = mine.get(t);
    if (!ps) mine.set(t, (ps = new Set()));
    ps.add(p);
  }
  return out;
}

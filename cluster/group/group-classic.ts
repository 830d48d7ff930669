/**
 * A group of the classic protocol (JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup) and its members: the bookkeeping Kafka's ClassicGroup keeps,
 * without the decisions, which live in GroupCoordinator.
 *
 * States, as Kafka names them:
 *   Empty               no members; offsets may still be kept (also the state
 *                       of a "simple" group that only commits offsets)
 *   PreparingRebalance  members are (re)joining; joins park until all have
 *   CompletingRebalance the join phase is over; the leader's SyncGroup with
 *                       the assignment is awaited
 *   Stable              every member has its assignment
 *   Dead                the group is being removed (deleted, or its partition
 *                       unloaded); nothing more happens to it
 * Transitions are checked against VALID_PREVIOUS_STATES; any other is a bug.
 */
import { crypto } from '../../wire/builtins.js';
import { ErrorCode } from '../../wire/errors.js';
import { subscribedTopicsOf } from './group-records.js';

export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

export const VALID_PREVIOUS_STATES: Readonly<Record<GroupState, readonly GroupState[]>> = {
  Empty: ['PreparingRebalance'],
  PreparingRebalance: ['Stable', 'CompletingRebalance', 'Empty'],
  CompletingRebalance: ['PreparingRebalance'],
  Stable: ['CompletingRebalance'],
  Dead: ['Stable', 'PreparingRebalance', 'CompletingRebalance', 'Empty', 'Dead'],
};

export const CONSUMER_PROTOCOL_TYPE = 'consumer';

const EMPTY = Buffer.alloc(0);

export interface Protocol {
  readonly name: string;
  readonly metadata: Buffer;
}

export interface JoinGroupResult {
  errorCode: number;
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  leader: string;
  skipAssignment: boolean;
  memberId: string;
  members: { memberId: string; groupInstanceId: string | null; metadata: Buffer }[];
}

export interface SyncGroupResult {
  errorCode: number;
  protocolType: string | null;
  protocolName: string | null;
  assignment: Buffer;
}

/** A JoinGroup answer carrying only an error, as Kafka builds one. */
export function joinError(errorCode: number, memberId: string): JoinGroupResult {
  return { errorCode, generationId: -1, protocolType: null, protocolName: null, leader: '', skipAssignment: false, memberId, members: [] };
}

export function syncError(errorCode: number): SyncGroupResult {
  return { errorCode, protocolType: null, protocolName: null, assignment: EMPTY };
}

/** A parked request's answer, completed at most once. */
export class Waiter<T> {
  readonly promise: Promise<T>;
  private resolveFn!: (value: T) => void;
  done = false;

  constructor() {
    this.promise = new Promise<T>((resolve) => {
      this.resolveFn = resolve;
    });
  }

  complete(value: T): boolean {
    if (this.done) return false;
    this.done = true;
    this.resolveFn(value);
    return true;
  }
}

export class GroupMember {
  assignment: Buffer = EMPTY;
  joinWaiter: Waiter<JoinGroupResult> | null = null;
  syncWaiter: Waiter<SyncGroupResult> | null = null;
  /** Joined in the rebalance now in progress; such a member's session may expire even while its join is parked. */
  isNew = false;

  constructor(
    readonly memberId: string,
    readonly groupInstanceId: string | null,
    readonly clientId: string,
    readonly clientHost: string,
    public rebalanceTimeoutMs: number,
    public sessionTimeoutMs: number,
    readonly protocolType: string,
    public protocols: readonly Protocol[],
  ) {}

  get isStatic(): boolean {
    return this.groupInstanceId !== null;
  }

  get isAwaitingJoin(): boolean {
    return this.joinWaiter !== null;
  }

  get isAwaitingSync(): boolean {
    return this.syncWaiter !== null;
  }

  /** A member parked in a join or a sync is alive as far as its session goes, unless it is new. */
  get hasSatisfiedHeartbeat(): boolean {
    return !this.isNew && (this.isAwaitingJoin || this.isAwaitingSync);
  }

  metadata(protocolName: string): Buffer {
    const p = this.protocols.find((x) => x.name === protocolName);
    if (!p) throw new Error(`member ${this.memberId} does not support protocol ${protocolName}`);
    return p.metadata;
  }

  /** Same protocols, in the same order, with the same metadata. */
  matches(protocols: readonly Protocol[]): boolean {
    return protocols.length === this.protocols.length && protocols.every((p, i) => p.name === this.protocols[i]!.name && p.metadata.equals(this.protocols[i]!.metadata));
  }

  /** The member's most preferred protocol among `candidates`. */
  vote(candidates: ReadonlySet<string>): string {
    const p = this.protocols.find((x) => candidates.has(x.name));
    if (!p) throw new Error(`member ${this.memberId} supports none of the candidate protocols`);
    return p.name;
  }
}

export class ClassicGroup {
  state: GroupState;
  previousState: GroupState = 'Dead';
  /** When the group entered its state; null for groups loaded from records that carry none. */
  stateTimestamp: number | null;
  protocolType: string | null;
  protocolName: string | null;
  generationId: number;
  leaderId: string | null;
  readonly members = new Map<string, GroupMember>();
  /** group.instance.id -> member id. */
  readonly staticMembers = new Map<string, string>();
  /** Member ids handed out with MEMBER_ID_REQUIRED, not yet joined with them. */
  readonly pendingJoinMembers = new Set<string>();
  readonly pendingSyncMembers = new Set<string>();
  /** Protocol name -> members supporting it. */
  private readonly supportedProtocols = new Map<string, number>();
  private awaitingJoin = 0;
  /** A member joined during the initial rebalance, which then waits once more. */
  newMemberAdded = false;
  /** The topics the members subscribe to, when the group uses the consumer protocol and that could be read. */
  subscribedTopics: Set<string> | null = null;

  constructor(
    readonly groupId: string,
    initial: { state: GroupState; now: number | null; generationId?: number; protocolType?: string | null; protocolName?: string | null; leaderId?: string | null },
  ) {
    this.state = initial.state;
    this.stateTimestamp = initial.now;
    this.generationId = initial.generationId ?? 0;
    this.protocolType = initial.protocolType ?? null;
    this.protocolName = initial.protocolName ?? null;
    this.leaderId = initial.leaderId ?? null;
  }

  is(state: GroupState): boolean {
    return this.state === state;
  }

  get numMembers(): number {
    return this.members.size;
  }

  get numAwaitingJoin(): number {
    return this.awaitingJoin;
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId;
  }

  get canRebalance(): boolean {
    return VALID_PREVIOUS_STATES.PreparingRebalance.includes(this.state);
  }

  transitionTo(state: GroupState, now: number): void {
    if (!VALID_PREVIOUS_STATES[state].includes(this.state)) {
      throw new Error(`group ${this.groupId} cannot go from ${this.state} to ${state}`);
    }
    this.previousState = this.state;
    this.state = state;
    this.stateTimestamp = now;
  }

  add(member: GroupMember, waiter: Waiter<JoinGroupResult> | null): void {
    if (member.groupInstanceId !== null) {
      if (this.staticMembers.has(member.groupInstanceId)) throw new Error(`static member ${member.groupInstanceId} is already in group ${this.groupId}`);
      this.staticMembers.set(member.groupInstanceId, member.memberId);
    }
    if (this.members.size === 0) this.protocolType = member.protocolType;
    if (this.leaderId === null) this.leaderId = member.memberId;
    this.members.set(member.memberId, member);
    this.countProtocols(member, 1);
    member.joinWaiter = waiter;
    if (waiter) this.awaitingJoin++;
    this.pendingJoinMembers.delete(member.memberId);
  }

  remove(memberId: string): void {
    const removed = this.members.get(memberId);
    if (removed) {
      this.members.delete(memberId);
      this.countProtocols(removed, -1);
      if (removed.isAwaitingJoin) this.awaitingJoin--;
      if (removed.groupInstanceId !== null) this.staticMembers.delete(removed.groupInstanceId);
    }
    if (this.isLeader(memberId)) this.leaderId = this.members.keys().next().value ?? null;
    this.pendingJoinMembers.delete(memberId);
    this.pendingSyncMembers.delete(memberId);
  }

  /**
   * Keeps the leader if it rejoined, else makes the first member that did
   * the leader. False when no member rejoined (or there are none).
   */
  maybeElectNewJoinedLeader(): boolean {
    if (this.leaderId === null) return false;
    const leader = this.members.get(this.leaderId);
    if (leader?.isAwaitingJoin) return true;
    for (const m of this.members.values()) {
      if (m.isAwaitingJoin) {
        this.leaderId = m.memberId;
        return true;
      }
    }
    return false;
  }

  /**
   * A restarted static member takes the place of its previous incarnation:
   * same protocols, timeouts and assignment under a new member id. Whatever
   * the old one had parked is answered FENCED_INSTANCE_ID.
   */
  replaceStaticMember(groupInstanceId: string, oldMemberId: string, newMemberId: string): GroupMember {
    const old = this.members.get(oldMemberId);
    if (!old) throw new Error(`cannot replace unknown member ${oldMemberId}`);
    this.members.delete(oldMemberId);
    this.completeJoin(old, joinError(ErrorCode.FENCED_INSTANCE_ID, oldMemberId));
    this.completeSync(old, syncError(ErrorCode.FENCED_INSTANCE_ID));
    const fresh = new GroupMember(newMemberId, old.groupInstanceId, old.clientId, old.clientHost, old.rebalanceTimeoutMs, old.sessionTimeoutMs, old.protocolType, old.protocols);
    fresh.assignment = old.assignment;
    this.members.set(newMemberId, fresh);
    if (this.isLeader(oldMemberId)) this.leaderId = newMemberId;
    this.staticMembers.set(groupInstanceId, newMemberId);
    return fresh;
  }

  addPendingMember(memberId: string): void {
    if (this.members.has(memberId)) throw new Error(`${memberId} is already a member of ${this.groupId}`);
    this.pendingJoinMembers.add(memberId);
  }

  /** Every member, and no member handed an id, has a join parked. */
  get hasAllMembersJoined(): boolean {
    return this.members.size === this.awaitingJoin && this.pendingJoinMembers.size === 0;
  }

  notYetRejoinedMembers(): GroupMember[] {
    return [...this.members.values()].filter((m) => !m.isAwaitingJoin);
  }

  /** The largest rebalance timeout of the members. */
  get rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  /** Kafka's member id form: the group instance id or the client id, a dash, a random UUID. */
  generateMemberId(clientId: string, groupInstanceId: string | null): string {
    return `${groupInstanceId ?? clientId}-${crypto().randomUUID()}`;
  }

  /**
   * The error a request naming this member gets, or NONE: a static member is
   * known by its instance id and must still have this member id (else
   * FENCED_INSTANCE_ID); any member must be in the group (else
   * UNKNOWN_MEMBER_ID).
   */
  memberError(memberId: string, groupInstanceId: string | null): number {
    if (groupInstanceId !== null) {
      const existing = this.staticMembers.get(groupInstanceId);
      if (existing === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
      if (existing !== memberId) return ErrorCode.FENCED_INSTANCE_ID;
    }
    return this.members.has(memberId) ? ErrorCode.NONE : ErrorCode.UNKNOWN_MEMBER_ID;
  }

  /**
   * Whether a member offering `protocols` of `protocolType` may be in the
   * group: any non-empty offer when the group is empty, else the group's
   * protocol type and at least one protocol every current member supports.
   */
  supportsProtocols(protocolType: string, protocols: readonly Protocol[]): boolean {
    if (this.is('Empty')) return protocolType !== '' && protocols.length > 0;
    return this.protocolType === protocolType && protocols.some((p) => (this.supportedProtocols.get(p.name) ?? 0) === this.members.size);
  }

  /** The protocol supported by every member that most members prefer. */
  selectProtocol(): string {
    if (this.members.size === 0) throw new Error(`cannot select a protocol for empty group ${this.groupId}`);
    const candidates = new Set<string>();
    for (const [name, count] of this.supportedProtocols) if (count === this.members.size) candidates.add(name);
    const votes = new Map<string, number>();
    for (const m of this.members.values()) {
      const v = m.vote(candidates);
      votes.set(v, (votes.get(v) ?? 0) + 1);
    }
    let best: string | null = null;
    let bestVotes = -1;
    for (const [name, n] of votes) {
      if (n > bestVotes) {
        best = name;
        bestVotes = n;
      }
    }
    return best!;
  }

  updateMember(member: GroupMember, protocols: readonly Protocol[], rebalanceTimeoutMs: number, sessionTimeoutMs: number, waiter: Waiter<JoinGroupResult> | null): void {
    this.countProtocols(member, -1);
    member.protocols = protocols;
    this.countProtocols(member, 1);
    member.rebalanceTimeoutMs = rebalanceTimeoutMs;
    member.sessionTimeoutMs = sessionTimeoutMs;
    if (waiter && !member.isAwaitingJoin) this.awaitingJoin++;
    else if (!waiter && member.isAwaitingJoin) this.awaitingJoin--;
    // A join sent again while the first is parked (a client that timed out and retried) replaces it;
    // the first is answered rather than left holding its connection.
    if (waiter && member.joinWaiter && member.joinWaiter !== waiter) member.joinWaiter.complete(joinError(ErrorCode.REBALANCE_IN_PROGRESS, member.memberId));
    member.joinWaiter = waiter;
  }

  completeJoin(member: GroupMember, result: JoinGroupResult): boolean {
    const w = member.joinWaiter;
    if (!w) return false;
    member.joinWaiter = null;
    this.awaitingJoin--;
    w.complete(result);
    return true;
  }

  completeSync(member: GroupMember, result: SyncGroupResult): boolean {
    const w = member.syncWaiter;
    if (!w) return false;
    member.syncWaiter = null;
    w.complete(result);
    return true;
  }

  initNextGeneration(now: number): void {
    this.generationId++;
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol();
      this.subscribedTopics = this.computeSubscribedTopics();
      this.transitionTo('CompletingRebalance', now);
    } else {
      this.protocolName = null;
      this.subscribedTopics = this.computeSubscribedTopics();
      this.transitionTo('Empty', now);
    }
    this.pendingSyncMembers.clear();
  }

  /** The members as the leader's JoinGroup answer lists them, with their metadata for the chosen protocol. */
  joinedMembers(): JoinGroupResult['members'] {
    return [...this.members.values()].map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: m.metadata(this.protocolName!) }));
  }

  /** Member id -> assignment. */
  assignments(): Map<string, Buffer> {
    return new Map([...this.members.values()].map((m) => [m.memberId, m.assignment]));
  }

  get usesConsumerProtocol(): boolean {
    return this.protocolType === CONSUMER_PROTOCOL_TYPE;
  }

  /**
   * As Kafka decides it: the subscribed topics when known; otherwise a
   * consumer-protocol group counts as subscribed to everything, any other
   * group to nothing.
   */
  isSubscribedToTopic(topic: string): boolean {
    return this.subscribedTopics ? this.subscribedTopics.has(topic) : this.usesConsumerProtocol;
  }

  computeSubscribedTopics(): Set<string> | null {
    if (!this.usesConsumerProtocol) return null;
    if (this.members.size === 0) return new Set();
    if (this.protocolName === null) return null;
    const all = new Set<string>();
    for (const m of this.members.values()) {
      const topics = subscribedTopicsOf(m.metadata(this.protocolName));
      if (!topics) return null;
      for (const t of topics) all.add(t);
    }
    return all;
  }

  private countProtocols(member: GroupMember, delta: number): void {
    for (const p of member.protocols) this.supportedProtocols.set(p.name, (this.supportedProtocols.get(p.name) ?? 0) + delta);
  }
}

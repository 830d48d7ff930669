/**
 * One partition as this broker holds it, beside its log, as Kafka's
 * Partition: when this broker leads it, what it knows of each follower, the
 * ISR change it has asked for, and the requests waiting on the partition
 * (acks=-1 appends, parked fetches, transactional batches being verified).
 * The ReplicaManager owns one per partition it hosts and drives it from the
 * metadata image and the partition's log; this class holds no log and does
 * no I/O, so its rules are tested on their own.
 *
 * The high watermark rule (Kafka's Partition.maybeIncrementLeaderHW): as
 * leader, the high watermark is the least log end offset among the replicas
 * of the maximal ISR, which is the ISR the image shows together with the
 * replicas an ISR change still in flight (or not yet shown) would add, the
 * leader's own log end counting for itself. It only moves forward. So an
 * offset below it is on every replica that may be elected leader next,
 * including one whose joining the store has taken but this broker has not
 * seen yet; that is what makes an acks=-1 answer safe.
 */
import type { PartitionState } from '../metadata/metadata-image.js';

/** What a leader knows of one follower, as Kafka's Replica keeps it. */
export interface FollowerState {
  /** The follower's log end, from its last fetch offset; -1n before its first fetch under this leader epoch. */
  leo: bigint;
  /** The last time the follower had everything the leader had. */
  lastCaughtUpMs: number;
  /** The leader's log end and the time at the follower's previous fetch. */
  lastFetchLeaderLeo: bigint;
  lastFetchMs: number;
}

/** An acks=-1 append waiting for the high watermark to reach `requiredOffset`. */
export interface ReplicationWaiter {
  readonly requiredOffset: bigint;
  readonly finish: (errorCode: number) => void;
}

/** A long-polling fetch parked on one or more partitions. */
export interface FetchWaiter {
  readonly tryComplete: () => boolean;
  finish(outcome: 'satisfied' | 'timeout' | 'shutdown'): void;
}

/** A transactional batch's verification with its coordinator, under way (see ReplicaManager.startTransactionVerification). */
export interface VerificationGuard {
  readonly producerId: bigint;
  /** The epoch of the batch being verified. */
  readonly producerEpoch: number;
  /** Verified the transactions v2 way (the coordinator adds the partition). */
  readonly transactionV2: boolean;
}

/** The ISR change asked of the metadata store and not yet shown by the image. */
interface PendingIsr {
  readonly isr: readonly number[];
  readonly leaderEpoch: number;
  inFlight: boolean;
}

/** The first wait before a failed ISR change is asked again, and the longest. */
export const ISR_RETRY_BACKOFF_MS = 100;
export const ISR_RETRY_BACKOFF_MAX_MS = 5_000;

export class Partition {
  /** As leader, what this broker knows of each follower; empty otherwise. */
  private readonly followers = new Map<number, FollowerState>();
  /** The leader epoch the follower states were made for; null when this broker does not lead. */
  private ledAtEpoch: number | null = null;
  private pendingIsr: PendingIsr | null = null;
  /** Not before this time is a failed ISR change asked again, and how long the next failure waits. */
  private isrRetryAtMs = 0;
  private isrBackoffMs = 0;
  readonly replicationWaiters = new Set<ReplicationWaiter>();
  readonly fetchWaiters = new Set<FetchWaiter>();
  private readonly verifications = new Map<bigint, VerificationGuard>();

  constructor(
    readonly topic: string,
    readonly index: number,
  ) {}

  // ---- leadership ---------------------------------------------------------------------------

  /**
   * This broker leads the partition at `state.leaderEpoch`. At a new
   * epoch, what was known of followers is forgotten and the ISR members
   * count as caught up now (Kafka's makeLeader); true then.
   */
  makeLeader(state: PartitionState, nodeId: number, now: number): boolean {
    if (this.ledAtEpoch === state.leaderEpoch) return false;
    this.ledAtEpoch = state.leaderEpoch;
    this.followers.clear();
    for (const r of state.replicas) {
      if (r !== nodeId) this.followers.set(r, { leo: -1n, lastCaughtUpMs: state.isr.includes(r) ? now : 0, lastFetchLeaderLeo: -1n, lastFetchMs: now });
    }
    return true;
  }

  /** This broker no longer leads the partition: follower states and the pending ISR change go. */
  resign(): void {
    this.ledAtEpoch = null;
    this.followers.clear();
    this.pendingIsr = null;
    this.isrRetryAtMs = 0;
    this.isrBackoffMs = 0;
  }

  get isLeader(): boolean {
    return this.ledAtEpoch !== null;
  }

  // ---- followers ----------------------------------------------------------------------------

  follower(replicaId: number): FollowerState | undefined {
    return this.followers.get(replicaId);
  }

  /**
   * A follower fetched from `fetchOffset` (its log end) while the leader's
   * log ended at `leaderLeo` (Kafka's updateFollowerFetchState): it is
   * caught up when it has everything the leader had then, or at its
   * previous fetch.
   *
   * Example: leader at 10, a fetch from 10 -> caught up now; then the leader
   * at 15 and a fetch from 10 -> still caught up as of the previous fetch.
   */
  updateFollowerFetchState(replicaId: number, fetchOffset: bigint, leaderLeo: bigint, now: number): void {
    let st = this.followers.get(replicaId);
    if (!st) this.followers.set(replicaId, (st = { leo: -1n, lastCaughtUpMs: 0, lastFetchLeaderLeo: -1n, lastFetchMs: now }));
    if (fetchOffset >= leaderLeo) st.lastCaughtUpMs = now;
    else if (st.lastFetchLeaderLeo >= 0n && fetchOffset >= st.lastFetchLeaderLeo) st.lastCaughtUpMs = Math.max(st.lastCaughtUpMs, st.lastFetchMs);
    st.lastFetchLeaderLeo = leaderLeo;
    st.lastFetchMs = now;
    st.leo = fetchOffset;
  }

  /** ISR followers that have not caught up for `lagMaxMs` (Kafka's getOutOfSyncReplicas). */
  laggingReplicas(state: PartitionState, nodeId: number, now: number, lagMaxMs: number): number[] {
    return state.isr.filter((r) => r !== nodeId && now - (this.followers.get(r)?.lastCaughtUpMs ?? 0) > lagMaxMs);
  }

  // ---- the ISR and the high watermark -----------------------------------------------------

  /**
   * The high watermark the leader may move to (see the file comment): the
   * least log end among the maximal ISR, `logEndOffset` for itself.
   *
   * Example: ISR [1, 2] with follower 2 at 7, leader 1 at 10 -> 7n; with 3
   * being added and at 5 -> 5n.
   */
  highWatermarkCandidate(state: PartitionState, nodeId: number, logEndOffset: bigint): bigint {
    let hw = logEndOffset;
    const count = (r: number): void => {
      if (r === nodeId) return;
      const leo = this.followers.get(r)?.leo ?? -1n;
      if (leo < hw) hw = leo;
    };
    for (const r of state.isr) count(r);
    if (this.pendingIsr && this.pendingIsr.leaderEpoch === state.leaderEpoch) for (const r of this.pendingIsr.isr) count(r);
    return hw;
  }

  /** Whether the high watermark needs more than the leader's own log end: other ISR members, a pending change, or waiters. */
  get needsFollowers(): boolean {
    return this.pendingIsr !== null || this.replicationWaiters.size > 0;
  }

  /**
   * Starts an ISR change to `isr` (made from the image's ISR in `state`),
   * unless one is in flight or a failed one is still backing off; the
   * proposal is the union with a pending one of the same epoch, so nothing
   * proposed earlier and maybe written drops out of the maximal ISR. Returns
   * the ISR to ask the store for, or null.
   */
  beginIsrChange(state: PartitionState, isr: readonly number[], now: number): readonly number[] | null {
    if (this.pendingIsr?.inFlight || now < this.isrRetryAtMs) return null;
    const proposed = this.pendingIsr && this.pendingIsr.leaderEpoch === state.leaderEpoch ? [...new Set([...this.pendingIsr.isr, ...isr])] : [...isr];
    this.pendingIsr = { isr: proposed, leaderEpoch: state.leaderEpoch, inFlight: true };
    return proposed;
  }

  /**
   * The store answered the change begun last. A failure that was not a
   * conflict (the store could not be reached) holds the next change back
   * for a while, doubling up to ISR_RETRY_BACKOFF_MAX_MS, so that an outage
   * is not met with one request per fetch.
   */
  endIsrChange(outcome: 'done' | 'conflict' | 'unavailable', now: number): void {
    if (this.pendingIsr) this.pendingIsr.inFlight = false;
    if (outcome === 'unavailable') {
      this.isrBackoffMs = this.isrBackoffMs === 0 ? ISR_RETRY_BACKOFF_MS : Math.min(this.isrBackoffMs * 2, ISR_RETRY_BACKOFF_MAX_MS);
      this.isrRetryAtMs = now + this.isrBackoffMs;
    } else {
      this.isrBackoffMs = 0;
      this.isrRetryAtMs = 0;
    }
  }

  /** Forgets a settled ISR proposal once the image shows it, or shows another leader or epoch. */
  settlePendingIsr(state: PartitionState | undefined, nodeId: number): void {
    const pending = this.pendingIsr;
    if (!pending || pending.inFlight) return;
    if (!state || state.leader !== nodeId || state.leaderEpoch !== pending.leaderEpoch || pending.isr.every((r) => state.isr.includes(r))) this.pendingIsr = null;
  }

  /** The replicas an ISR change being asked for would add or keep; null when none is pending. */
  get pendingIsrMembers(): readonly number[] | null {
    return this.pendingIsr?.isr ?? null;
  }

  // ---- transaction verification -----------------------------------------------------------

  startVerification(producerId: bigint, producerEpoch = -1, transactionV2 = false): VerificationGuard {
    const guard: VerificationGuard = { producerId, producerEpoch, transactionV2 };
    this.verifications.set(producerId, guard);
    return guard;
  }

  /** True (and the guard spent) when no marker voided `guard` since it was made. */
  claimVerification(guard: VerificationGuard): boolean {
    if (this.verifications.get(guard.producerId) !== guard) return false;
    this.verifications.delete(guard.producerId);
    return true;
  }

  abandonVerification(guard: VerificationGuard): void {
    if (this.verifications.get(guard.producerId) === guard) this.verifications.delete(guard.producerId);
  }

  /**
   * A transaction marker of `producerId` landed: a verification under way was
   * for the transaction it ended, unless both are of transactions v2 and the
   * verification is at the marker's epoch: that is the next transaction's,
   * added to it by the coordinator before the marker of the previous one came.
   */
  voidVerification(producerId: bigint, markerEpoch = -1, transactionVersion = 0): void {
    const guard = this.verifications.get(producerId);
    if (guard && guard.transactionV2 && transactionVersion >= 2 && guard.producerEpoch === markerEpoch) return;
    this.verifications.delete(producerId);
  }

  /** Whether nothing but the partition's log is left to keep: no leadership, waiter or verification. */
  get idle(): boolean {
    return this.ledAtEpoch === null && this.replicationWaiters.size === 0 && this.fetchWaiters.size === 0 && this.verifications.size === 0;
  }
}

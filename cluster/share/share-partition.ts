/**
 * One share partition (KIP-932) on the leader of its topic partition: which
 * records of the log a share group has delivered, to whom, how often, and
 * which it is done with.
 *
 * Every offset from the share-partition start offset on is in one state:
 * AVAILABLE (to be delivered; offsets never tracked are available with a
 * delivery count of 0), ACQUIRED (delivered to one member, under a lock that
 * expires), ACKNOWLEDGED (accepted by a consumer) or ARCHIVED (rejected, a
 * gap, or released or expired once too often). The start offset moves past
 * every acknowledged or archived offset at its front, so the state kept is
 * only what is in flight.
 *
 * Acquisition is bounded by the maximum number of in-flight records
 * (group.share.partition.max.record.locks): no offset at or past
 * start offset + that limit is acquired.
 *
 * The state machine is synchronous; the caller serializes operations (see
 * `exclusive`) and persists what `acknowledge` and `expireLocks` return.
 */
import { ErrorCode } from '../../wire/errors.js';
import { DeliveryState, type StateBatch } from './persister.js';
import { normalize } from './state-batches.js';

export const AcknowledgeType = { GAP: 0, ACCEPT: 1, RELEASE: 2, REJECT: 3, RENEW: 4 } as const;

export type RecordState = 'available' | 'acquired' | 'acknowledged' | 'archived';

interface InFlight {
  state: RecordState;
  deliveryCount: number;
  memberId: string | null;
  /** When the acquisition lock expires (ms since the epoch); 0 unless acquired. */
  lockUntil: number;
}

export interface AcquiredRange {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly deliveryCount: number;
}

/** A stored batch as the share partition needs it: the offsets it covers. */
export interface BatchBounds {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
}

export interface AcknowledgementBatch {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly acknowledgeTypes: readonly number[];
}

export interface SharePartitionLimits {
  readonly lockDurationMs: number;
  readonly deliveryCountLimit: number;
  readonly maxInFlightRecords: number;
}

/** A change to persist: the state batches that changed and where the partition now starts. */
export interface StateChange {
  readonly startOffset: bigint;
  readonly stateBatches: StateBatch[];
  readonly deliveryCompleteCount: number;
  /** Undoes the change in memory, when persisting it failed. */
  readonly rollback: () => void;
}

const AVAILABLE_NEVER_DELIVERED: Readonly<InFlight> = Object.freeze({ state: 'available', deliveryCount: 0, memberId: null, lockUntil: 0 });

export class SharePartition {
  private readonly records = new Map<bigint, InFlight>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly stateEpoch: number,
    private start: bigint,
    stateBatches: readonly StateBatch[],
    readonly leaderEpoch: number,
  ) {
    for (const b of stateBatches) {
      if (b.lastOffset < start) continue;
      const state: RecordState = b.deliveryState === DeliveryState.ACKNOWLEDGED ? 'acknowledged' : b.deliveryState === DeliveryState.ARCHIVED ? 'archived' : 'available';
      for (let o = b.firstOffset < start ? start : b.firstOffset; o <= b.lastOffset; o++) {
        this.records.set(o, { state, deliveryCount: b.deliveryCount, memberId: null, lockUntil: 0 });
      }
    }
    this.advanceStart();
  }

  /** The share-partition start offset: every offset before it is done with. */
  get startOffset(): bigint {
    return this.start;
  }

  /** Runs `op` after every operation queued before it. */
  exclusive<T>(op: () => Promise<T> | T): Promise<T> {
    const run = this.queue.then(op, op);
    this.queue = run.catch(() => undefined);
    return run;
  }

  stateOf(offset: bigint): { state: RecordState; deliveryCount: number; memberId: string | null } {
    return this.records.get(offset) ?? AVAILABLE_NEVER_DELIVERED;
  }

  /**
   * The first offset a fetch should read from: the first available one at
   * or after the start offset; null when everything the in-flight limit
   * allows is taken.
   */
  nextFetchOffset(limits: SharePartitionLimits): bigint | null {
    const limit = this.start + BigInt(limits.maxInFlightRecords);
    for (let o = this.start; o < limit; o++) {
      const r = this.records.get(o);
      if (!r || r.state === 'available') return o;
    }
    return null;
  }

  /** Whether any record could be acquired now below `end` (the high watermark). */
  hasAvailable(end: bigint, limits: SharePartitionLimits): boolean {
    const next = this.nextFetchOffset(limits);
    return next !== null && next < end;
  }

  /**
   * Acquires available records of `batches` (whole stored batches, in
   * offset order, as read from the log) for `memberId`: at most `maxRecords`,
   * except that a batch once started is taken whole when `wholeBatches`
   * (the batch-optimized mode). Returns the acquired ranges, with the
   * delivery count each record now has.
   */
  acquire(memberId: string, batches: readonly BatchBounds[], maxRecords: number, wholeBatches: boolean, limits: SharePartitionLimits, now: number): AcquiredRange[] {
    const limit = this.start + BigInt(limits.maxInFlightRecords);
    const out: AcquiredRange[] = [];
    let count = 0;
    outer: for (const b of batches) {
      let startedHere = false;
      for (let o = b.baseOffset < this.start ? this.start : b.baseOffset; o <= b.lastOffset; o++) {
        if (o >= limit) break outer;
        if (count >= maxRecords && !(wholeBatches && startedHere)) break outer;
        const r = this.records.get(o);
        if (r && r.state !== 'available') continue;
        const deliveryCount = (r?.deliveryCount ?? 0) + 1;
        this.records.set(o, { state: 'acquired', deliveryCount, memberId, lockUntil: now + limits.lockDurationMs });
        count++;
        startedHere = true;
        const last = out[out.length - 1];
        if (last && last.lastOffset + 1n === o && last.deliveryCount === deliveryCount) out[out.length - 1] = { ...last, lastOffset: o };
        else out.push({ firstOffset: o, lastOffset: o, deliveryCount });
      }
    }
    return out;
  }

  /**
   * Applies one member's acknowledgements, all or nothing: INVALID_REQUEST
   * for a malformed batch, INVALID_RECORD_STATE when an offset is not
   * acquired by this member. On success, what to persist (null when
   * nothing persisted changed, e.g. only renewals).
   */
  acknowledge(memberId: string, batches: readonly AcknowledgementBatch[], limits: SharePartitionLimits, now: number): { errorCode: number; errorMessage: string | null; change: StateChange | null } {
    for (const b of batches) {
      const span = b.lastOffset - b.firstOffset + 1n;
      if (span <= 0n) return invalid(ErrorCode.INVALID_REQUEST, `acknowledgement batch ${b.firstOffset}-${b.lastOffset} is empty`);
      if (b.acknowledgeTypes.length !== 1 && BigInt(b.acknowledgeTypes.length) !== span) {
        return invalid(ErrorCode.INVALID_REQUEST, `acknowledgement batch ${b.firstOffset}-${b.lastOffset} has ${b.acknowledgeTypes.length} types`);
      }
      for (const t of b.acknowledgeTypes) if (t < AcknowledgeType.GAP || t > AcknowledgeType.RENEW) return invalid(ErrorCode.INVALID_REQUEST, `unknown acknowledge type ${t}`);
      // Offsets before the start offset are done with: acknowledging them again changes nothing.
      if (b.lastOffset < this.start) continue;
      if (b.firstOffset > this.lastTracked()) return invalid(ErrorCode.INVALID_REQUEST, 'Batch record not found. The first offset in request is past acquired records.');
      for (let o = b.firstOffset < this.start ? this.start : b.firstOffset; o <= b.lastOffset; o++) {
        const r = this.records.get(o);
        if (!r || r.state !== 'acquired') return invalid(ErrorCode.INVALID_RECORD_STATE, 'The offset cannot be acknowledged. The offset is not acquired.');
        if (r.memberId !== memberId) return invalid(ErrorCode.INVALID_RECORD_STATE, 'Member is not the owner of batch record');
      }
    }
    const before = new Map<bigint, InFlight>();
    let persisted = false;
    for (const b of batches) {
      for (let o = b.firstOffset, i = 0; o <= b.lastOffset; o++, i++) {
        if (o < this.start) continue;
        const type = b.acknowledgeTypes.length === 1 ? b.acknowledgeTypes[0]! : b.acknowledgeTypes[i]!;
        const r = this.records.get(o)!;
        if (!before.has(o)) before.set(o, { ...r });
        if (type === AcknowledgeType.RENEW) {
          r.lockUntil = now + limits.lockDurationMs;
          continue;
        }
        persisted = true;
        if (type === AcknowledgeType.ACCEPT) this.settle(r, 'acknowledged');
        else if (type === AcknowledgeType.RELEASE) this.settle(r, r.deliveryCount >= limits.deliveryCountLimit ? 'archived' : 'available');
        else this.settle(r, 'archived');
      }
    }
    if (!persisted) return { errorCode: ErrorCode.NONE, errorMessage: null, change: null };
    return { errorCode: ErrorCode.NONE, errorMessage: null, change: this.changeOf(before) };
  }

  /** Releases every lock that expired by `now`: the record is available again, or archived at the delivery limit. */
  expireLocks(limits: SharePartitionLimits, now: number): StateChange | null {
    const before = new Map<bigint, InFlight>();
    for (const [o, r] of this.records) {
      if (r.state !== 'acquired' || r.lockUntil > now) continue;
      before.set(o, { ...r });
      this.settle(r, r.deliveryCount >= limits.deliveryCountLimit ? 'archived' : 'available');
    }
    return before.size === 0 ? null : this.changeOf(before);
  }

  /** Releases what `memberId` holds (it left the group or closed its session). */
  releaseMember(memberId: string, limits: SharePartitionLimits): StateChange | null {
    const before = new Map<bigint, InFlight>();
    for (const [o, r] of this.records) {
      if (r.state !== 'acquired' || r.memberId !== memberId) continue;
      before.set(o, { ...r });
      this.settle(r, r.deliveryCount >= limits.deliveryCountLimit ? 'archived' : 'available');
    }
    return before.size === 0 ? null : this.changeOf(before);
  }

  /** The last offset ever tracked (acquired or persisted), or start - 1 when none is. */
  private lastTracked(): bigint {
    let last = this.start - 1n;
    for (const o of this.records.keys()) if (o > last) last = o;
    return last;
  }

  /** The earliest lock expiry, or null when nothing is acquired. */
  nextLockExpiry(): number | null {
    let next: number | null = null;
    for (const r of this.records.values()) if (r.state === 'acquired' && (next === null || r.lockUntil < next)) next = r.lockUntil;
    return next;
  }

  /** Records from the start offset on already acknowledged or archived. */
  get deliveryCompleteCount(): number {
    let n = 0;
    for (const r of this.records.values()) if (r.state === 'acknowledged' || r.state === 'archived') n++;
    return n;
  }

  /** Offsets in flight (tracked after the start offset), for tests. */
  get inFlightCount(): number {
    return this.records.size;
  }

  private settle(r: InFlight, state: RecordState): void {
    r.state = state;
    r.memberId = null;
    r.lockUntil = 0;
  }

  /** Moves the start offset past the acknowledged and archived offsets at the front. */
  private advanceStart(): void {
    for (;;) {
      const r = this.records.get(this.start);
      if (!r || (r.state !== 'acknowledged' && r.state !== 'archived')) return;
      this.records.delete(this.start);
      this.start++;
    }
  }

  private changeOf(before: Map<bigint, InFlight>): StateChange {
    const oldStart = this.start;
    const changed = [...before.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const after = changed.map((o) => ({ o, r: { ...this.records.get(o)! } }));
    this.advanceStart();
    const removed: [bigint, InFlight][] = [];
    for (let o = oldStart; o < this.start; o++) removed.push([o, after.find((a) => a.o === o)?.r ?? { state: 'acknowledged', deliveryCount: 0, memberId: null, lockUntil: 0 }]);
    const stateBatches = normalize(
      after
        .filter(({ o }) => o >= this.start)
        .map(({ o, r }) => ({ firstOffset: o, lastOffset: o, deliveryState: persistedState(r.state), deliveryCount: r.deliveryCount })),
      this.start,
    );
    const newStart = this.start;
    return {
      startOffset: this.start,
      stateBatches,
      deliveryCompleteCount: this.deliveryCompleteCount,
      rollback: () => {
        // Undone only while nothing else moved the partition since.
        if (this.start !== newStart) return;
        for (const [o, r] of removed) this.records.set(o, r);
        this.start = oldStart;
        for (const [o, r] of before) this.records.set(o, r);
      },
    };
  }
}

function persistedState(s: RecordState): number {
  switch (s) {
    case 'acknowledged':
      return DeliveryState.ACKNOWLEDGED;
    case 'archived':
      return DeliveryState.ARCHIVED;
    default:
      return DeliveryState.AVAILABLE;
  }
}

function invalid(errorCode: number, errorMessage: string): { errorCode: number; errorMessage: string; change: null } {
  return { errorCode, errorMessage, change: null };
}

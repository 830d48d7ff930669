/**
 * The share partitions this broker leads and the share sessions of the
 * members fetching from them (KIP-932): ShareFetch and ShareAcknowledge.
 *
 * A share session belongs to one member of one share group. Epoch 0 opens
 * it (replacing one the member had), each later request carries the epoch
 * the last answer implied (1, 2, ...) and may add partitions or forget
 * some, -1 closes it after its acknowledgements, releasing whatever the
 * member still holds. A share partition is loaded from its persisted state
 * on first use and kept while sessions fetch from it; what acknowledgements
 * and expired locks change is persisted before it is answered.
 */
import { ErrorCode } from '../../wire/errors.js';
import { LAST_OFFSET_DELTA, wholeBatches } from '../../wire/record-batch.js';
import type { MetadataStore, PartitionState, TopicImage } from '../metadata/metadata-image.js';
import type { ReplicaManager } from '../replication/replica-manager.js';
import { SpecialTimestamp } from '../replication/replica-manager.js';
import { readRanges } from '../../storage/segment.js';
import type { Persister, SharePartitionKey } from './persister.js';
import { SharePartition, type AcknowledgementBatch, type AcquiredRange, type SharePartitionLimits, type StateChange } from './share-partition.js';

/** What a share group's configs say about its partitions (group configs over the broker's defaults). */
export interface ShareGroupSettings extends SharePartitionLimits {
  /** 'earliest', 'latest' or 'by_duration:<ISO-8601 duration>'. */
  readonly autoOffsetReset: string;
  readonly isolationLevel: 'read_uncommitted' | 'read_committed';
}

export interface ShareLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

export const FINAL_EPOCH = -1;
export const INITIAL_EPOCH = 0;

export interface PartitionRef {
  readonly topicId: string;
  readonly partition: number;
}

export interface AckRequestPartition extends PartitionRef {
  readonly batches: readonly AcknowledgementBatch[];
}

export interface ShareFetchParams {
  readonly groupId: string | null;
  readonly memberId: string | null;
  readonly shareSessionEpoch: number;
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly maxRecords: number;
  /** The batch-optimized mode: a batch once started is acquired whole. */
  readonly wholeBatches: boolean;
  /** Partitions to add to the session (or the whole list, at epoch 0). */
  readonly fetch: readonly PartitionRef[];
  readonly acknowledgements: readonly AckRequestPartition[];
  readonly forget: readonly PartitionRef[];
  /** Registers what to do when the client's connection closes: its session ends and what it holds is released. */
  readonly onConnectionClose?: (cb: () => void) => void;
}

export interface PartitionResult extends PartitionRef {
  errorCode: number;
  errorMessage: string | null;
  acknowledgeErrorCode: number;
  acknowledgeErrorMessage: string | null;
  leaderId: number;
  leaderEpoch: number;
  records: Buffer | null;
  acquired: AcquiredRange[];
}

export interface ShareFetchResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly acquisitionLockTimeoutMs: number;
  readonly partitions: PartitionResult[];
}

export interface ShareAcknowledgeParams {
  readonly groupId: string | null;
  readonly memberId: string | null;
  readonly shareSessionEpoch: number;
  readonly acknowledgements: readonly AckRequestPartition[];
}

interface ShareSession {
  readonly groupId: string;
  readonly memberId: string;
  /** The epoch the next request must carry. */
  epoch: number;
  readonly partitions: Map<string, PartitionRef>;
  lastUsed: number;
}

interface Loaded {
  readonly sp: SharePartition;
  readonly key: SharePartitionKey;
  readonly topic: string;
  timer: NodeJS.Timeout | null;
}

/** Sessions unused for this long are closed, as if the member had left. */
const SESSION_IDLE_MS = 60_000;
const SWEEP_INTERVAL_MS = 5_000;
const EMPTY = Buffer.alloc(0);

function refKey(r: PartitionRef): string {
  return `${r.topicId}:${r.partition}`;
}

function spKey(groupId: string, r: PartitionRef): string {
  return `${groupId}\u0000${r.topicId}\u0000${r.partition}`;
}

function nextEpoch(e: number): number {
  return e >= 2147483647 ? 1 : e + 1;
}

export class ShareManager {
  private readonly partitions = new Map<string, Promise<Loaded | { errorCode: number; errorMessage: string }>>();
  private readonly sessions = new Map<string, ShareSession>();
  private sweeper: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly replicas: ReplicaManager,
    private readonly persister: Persister,
    private readonly settings: (groupId: string) => ShareGroupSettings,
    private readonly log: ShareLogger,
  ) {}

  start(): this {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    return this;
  }

  shutdown(): void {
    this.stopped = true;
    if (this.sweeper) clearInterval(this.sweeper);
    for (const p of this.partitions.values()) {
      void p.then((l) => {
        if ('sp' in l && l.timer) clearTimeout(l.timer);
      });
    }
    this.partitions.clear();
    this.sessions.clear();
  }

  /** Open share sessions, for tests. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  async fetch(p: ShareFetchParams): Promise<ShareFetchResult> {
    const groupId = p.groupId ?? '';
    const memberId = p.memberId ?? '';
    const lockMs = p.groupId === null ? 0 : this.settings(groupId).lockDurationMs;
    const fail = (errorCode: number, errorMessage: string | null): ShareFetchResult => ({ errorCode, errorMessage, acquisitionLockTimeoutMs: lockMs, partitions: [] });
    const invalid = invalidIds(p.groupId, p.memberId);
    if (invalid) return fail(ErrorCode.INVALID_REQUEST, invalid);
    const sKey = `${groupId}\u0000${memberId}`;
    const now = Date.now();
    let session = this.sessions.get(sKey);
    const results = new Map<string, PartitionResult>();
    let full = false;
    if (p.shareSessionEpoch === INITIAL_EPOCH) {
      if (p.acknowledgements.some((a) => a.batches.length > 0)) return fail(ErrorCode.INVALID_REQUEST, 'Acknowledge data present on initial share session request');
      if (session) await this.closeSession(session, false);
      const created: ShareSession = { groupId, memberId, epoch: 1, partitions: new Map(), lastUsed: now };
      session = created;
      this.sessions.set(sKey, created);
      p.onConnectionClose?.(() => {
        if (this.sessions.get(sKey) === created) void this.closeSession(created, true);
      });
      full = true;
    } else {
      if (!session) return fail(ErrorCode.SHARE_SESSION_NOT_FOUND, 'The share session was not found.');
      if (p.shareSessionEpoch !== FINAL_EPOCH && p.shareSessionEpoch !== session.epoch) {
        return fail(ErrorCode.INVALID_SHARE_SESSION_EPOCH, `The share session epoch ${p.shareSessionEpoch} is not the expected ${session.epoch}.`);
      }
      if (p.shareSessionEpoch === FINAL_EPOCH && p.fetch.some((f) => !p.acknowledgements.some((a) => a.topicId === f.topicId && a.partition === f.partition))) {
        return fail(ErrorCode.INVALID_REQUEST, 'A share session closing with epoch -1 cannot fetch.');
      }
      session.lastUsed = now;
      if (p.shareSessionEpoch !== FINAL_EPOCH) session.epoch = nextEpoch(session.epoch);
    }
    if (p.shareSessionEpoch !== FINAL_EPOCH) {
      for (const f of p.forget) session.partitions.delete(refKey(f));
      for (const f of p.fetch) session.partitions.set(refKey(f), { topicId: f.topicId, partition: f.partition });
    }

    // Acknowledgements first: what they release may be fetched again below.
    for (const a of p.acknowledgements) {
      if (a.batches.length === 0) continue;
      const r = this.resultFor(results, a);
      const ack = await this.acknowledgePartition(groupId, memberId, a);
      r.acknowledgeErrorCode = ack.errorCode;
      r.acknowledgeErrorMessage = ack.errorMessage;
    }
    if (p.shareSessionEpoch === FINAL_EPOCH) {
      await this.closeSession(session, true);
      return { errorCode: ErrorCode.NONE, errorMessage: null, acquisitionLockTimeoutMs: lockMs, partitions: [...results.values()] };
    }

    const targets = [...session.partitions.values()];
    const deadline = Date.now() + Math.max(0, p.maxWaitMs);
    let acquiredAny = false;
    for (let round = 0; ; round++) {
      let budget = p.maxRecords > 0 ? p.maxRecords : 500;
      let bytesLeft = p.maxBytes > 0 ? p.maxBytes : 2147483647;
      for (const t of targets) {
        if (budget <= 0 || bytesLeft <= 0) break;
        const r = this.resultFor(results, t);
        if (r.errorCode !== ErrorCode.NONE || r.acquired.length > 0) continue;
        await this.fetchPartition(groupId, memberId, t, r, budget, bytesLeft, p.wholeBatches);
        const n = r.acquired.reduce((s, a) => s + Number(a.lastOffset - a.firstOffset + 1n), 0);
        budget -= n;
        bytesLeft -= r.records?.length ?? 0;
        if (n > 0) acquiredAny = true;
      }
      const anyError = [...results.values()].some((r) => r.errorCode !== ErrorCode.NONE || r.acknowledgeErrorCode !== ErrorCode.NONE);
      const left = deadline - Date.now();
      if (acquiredAny || anyError || left <= 0 || targets.length === 0 || this.stopped || round >= 1000) break;
      const wait = await this.waitForRecords(groupId, targets, left);
      if (wait === 'shutdown') break;
    }
    const out = [...results.values()].filter((r) => full || r.errorCode !== ErrorCode.NONE || r.acknowledgeErrorCode !== ErrorCode.NONE || r.acquired.length > 0 || p.acknowledgements.some((a) => a.topicId === r.topicId && a.partition === r.partition && a.batches.length > 0));
    if (full) for (const t of targets) if (!results.has(refKey(t))) out.push(this.resultFor(results, t));
    for (const r of out) if (r.records === null) r.records = EMPTY;
    return { errorCode: ErrorCode.NONE, errorMessage: null, acquisitionLockTimeoutMs: lockMs, partitions: out };
  }

  async acknowledge(p: ShareAcknowledgeParams): Promise<ShareFetchResult> {
    const groupId = p.groupId ?? '';
    const memberId = p.memberId ?? '';
    const lockMs = p.groupId === null ? 0 : this.settings(groupId).lockDurationMs;
    const fail = (errorCode: number, errorMessage: string | null): ShareFetchResult => ({ errorCode, errorMessage, acquisitionLockTimeoutMs: lockMs, partitions: [] });
    const invalid = invalidIds(p.groupId, p.memberId);
    if (invalid) return fail(ErrorCode.INVALID_REQUEST, invalid);
    if (p.shareSessionEpoch === INITIAL_EPOCH) return fail(ErrorCode.INVALID_SHARE_SESSION_EPOCH, 'A share session is not opened by ShareAcknowledge.');
    const session = this.sessions.get(`${groupId}\u0000${memberId}`);
    if (!session) return fail(ErrorCode.SHARE_SESSION_NOT_FOUND, 'The share session was not found.');
    if (p.shareSessionEpoch !== FINAL_EPOCH && p.shareSessionEpoch !== session.epoch) {
      return fail(ErrorCode.INVALID_SHARE_SESSION_EPOCH, `The share session epoch ${p.shareSessionEpoch} is not the expected ${session.epoch}.`);
    }
    session.lastUsed = Date.now();
    if (p.shareSessionEpoch !== FINAL_EPOCH) session.epoch = nextEpoch(session.epoch);
    const results = new Map<string, PartitionResult>();
    for (const a of p.acknowledgements) {
      const r = this.resultFor(results, a);
      const ack = await this.acknowledgePartition(groupId, memberId, a);
      r.errorCode = ack.errorCode;
      r.errorMessage = ack.errorMessage;
    }
    if (p.shareSessionEpoch === FINAL_EPOCH) await this.closeSession(session, true);
    return { errorCode: ErrorCode.NONE, errorMessage: null, acquisitionLockTimeoutMs: lockMs, partitions: [...results.values()] };
  }

  /**
   * Forgets the cached state of a group's share partitions (all of them, or
   * one topic's) so the next fetch reads it again: after its offsets were
   * altered or deleted.
   */
  invalidate(groupId: string, topicId?: string): void {
    for (const [k, p] of this.partitions) {
      const [g, t] = k.split('\u0000');
      if (g !== groupId || (topicId !== undefined && t !== topicId)) continue;
      this.partitions.delete(k);
      void p.then((l) => {
        if ('sp' in l && l.timer) clearTimeout(l.timer);
      });
    }
  }

  // ---- internals ----------------------------------------------------------------------------

  private resultFor(results: Map<string, PartitionResult>, ref: PartitionRef): PartitionResult {
    let r = results.get(refKey(ref));
    if (!r) {
      const state = this.partitionState(ref);
      r = {
        topicId: ref.topicId,
        partition: ref.partition,
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        acknowledgeErrorCode: ErrorCode.NONE,
        acknowledgeErrorMessage: null,
        leaderId: state?.leader ?? -1,
        leaderEpoch: state?.leaderEpoch ?? -1,
        records: null,
        acquired: [],
      };
      results.set(refKey(ref), r);
    }
    return r;
  }

  private partitionState(ref: PartitionRef): PartitionState | undefined {
    return this.metadata.image().topicsById.get(ref.topicId)?.partitions.find((p) => p.partition === ref.partition);
  }

  /** The partition's topic and state when this broker leads it, else the error to answer. */
  private leadership(ref: PartitionRef): { topic: TopicImage; state: PartitionState } | { errorCode: number; errorMessage: string } {
    const topic = this.metadata.image().topicsById.get(ref.topicId);
    if (!topic) return { errorCode: ErrorCode.UNKNOWN_TOPIC_ID, errorMessage: 'This server does not host this topic ID.' };
    const state = topic.partitions.find((p) => p.partition === ref.partition);
    if (!state) return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'This server does not host this topic-partition.' };
    if (state.leader !== this.nodeId) return { errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, errorMessage: 'This server is not the leader for that topic-partition.' };
    return { topic, state };
  }

  /** The loaded share partition, loading it when needed; reloaded after a change of leader epoch. */
  private async sharePartition(groupId: string, ref: PartitionRef): Promise<Loaded | { errorCode: number; errorMessage: string }> {
    const lead = this.leadership(ref);
    if ('errorCode' in lead) return lead;
    const k = spKey(groupId, ref);
    const cached = this.partitions.get(k);
    if (cached) {
      const l = await cached;
      if ('sp' in l && l.sp.leaderEpoch === lead.state.leaderEpoch) return l;
      if (this.partitions.get(k) === cached) this.partitions.delete(k);
      if ('sp' in l && l.timer) clearTimeout(l.timer);
    }
    const loading = this.load(groupId, ref, lead.topic.name, lead.state.leaderEpoch);
    this.partitions.set(k, loading);
    const l = await loading;
    if ('sp' in l) this.settledPartitions.set(loading, l.sp);
    // A failed load is tried again by the next request.
    if (!('sp' in l) && this.partitions.get(k) === loading) this.partitions.delete(k);
    return l;
  }

  private async load(groupId: string, ref: PartitionRef, topic: string, leaderEpoch: number): Promise<Loaded | { errorCode: number; errorMessage: string }> {
    const key: SharePartitionKey = { groupId, topicId: ref.topicId, partition: ref.partition };
    const read = await this.persister.read(key, leaderEpoch);
    let stateEpoch = 0;
    let startOffset = -1n;
    let batches = read.stateBatches;
    if (read.errorCode === ErrorCode.NONE) {
      stateEpoch = read.stateEpoch;
      startOffset = read.startOffset;
    } else if (read.errorCode !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
      return { errorCode: read.errorCode, errorMessage: read.errorMessage ?? 'cannot read the share-partition state' };
    } else {
      batches = [];
    }
    const log = this.replicas.logFor(topic, ref.partition);
    if (!log) return { errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, errorMessage: 'This server is not the leader for that topic-partition.' };
    let initialized = false;
    if (startOffset < 0n) {
      const resolved = this.resetOffset(groupId, topic, ref.partition);
      if (typeof resolved === 'object') return resolved;
      startOffset = resolved;
      initialized = true;
    } else if (startOffset < log.logStartOffset) {
      // Records deleted under the share partition (retention, DeleteRecords) are no longer to be delivered.
      startOffset = log.logStartOffset;
      initialized = true;
    }
    if (initialized || read.errorCode !== ErrorCode.NONE) {
      const w = await this.persister.write(key, { stateEpoch, leaderEpoch, startOffset, deliveryCompleteCount: 0, stateBatches: [] });
      if (w.errorCode !== ErrorCode.NONE) return { errorCode: w.errorCode, errorMessage: w.errorMessage ?? 'cannot write the share-partition state' };
    }
    const sp = new SharePartition(stateEpoch, startOffset, batches, leaderEpoch);
    this.log.debug?.({ groupId, topic, partition: ref.partition, startOffset: String(sp.startOffset) }, 'share partition loaded');
    return { sp, key, topic, timer: null };
  }

  /** Where a share partition without a start offset begins, by share.auto.offset.reset. */
  private resetOffset(groupId: string, topic: string, partition: number): bigint | { errorCode: number; errorMessage: string } {
    const policy = this.settings(groupId).autoOffsetReset;
    let timestamp: bigint = SpecialTimestamp.LATEST;
    if (policy === 'earliest') timestamp = SpecialTimestamp.EARLIEST;
    else if (policy.startsWith('by_duration:')) {
      const ms = isoDurationMs(policy.slice('by_duration:'.length));
      timestamp = ms === null ? SpecialTimestamp.LATEST : BigInt(Date.now() - ms);
    }
    const r = this.replicas.fetchOffsetForTimestamp(topic, partition, timestamp, 'highWatermark', -1, true);
    if (r.errorCode !== ErrorCode.NONE) return { errorCode: r.errorCode, errorMessage: 'cannot find where the share partition starts' };
    if (r.offset >= 0n) return r.offset;
    // No record at or after that time: start at the end.
    const end = this.replicas.fetchOffsetForTimestamp(topic, partition, SpecialTimestamp.LATEST, 'highWatermark', -1, true);
    return end.errorCode === ErrorCode.NONE ? end.offset : { errorCode: end.errorCode, errorMessage: 'cannot find where the share partition starts' };
  }

  private async fetchPartition(groupId: string, memberId: string, ref: PartitionRef, r: PartitionResult, maxRecords: number, maxBytes: number, whole: boolean): Promise<void> {
    const l = await this.sharePartition(groupId, ref);
    if (!('sp' in l)) {
      r.errorCode = l.errorCode;
      r.errorMessage = l.errorMessage;
      return;
    }
    const settings = this.settings(groupId);
    await l.sp.exclusive(async () => {
      const from = l.sp.nextFetchOffset(settings);
      if (from === null) return;
      const isolation = settings.isolationLevel === 'read_committed' ? 'txnCommitted' : 'highWatermark';
      const read = this.replicas.readForFetch(l.topic, ref.partition, { fetchOffset: from, maxBytes, currentLeaderEpoch: -1, minOneMessage: true }, isolation, true);
      if (read.errorCode !== ErrorCode.NONE) {
        // An offset deleted under the share partition: move on to the log start next time.
        if (read.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) this.partitions.delete(spKey(groupId, ref));
        else {
          r.errorCode = read.errorCode;
          r.errorMessage = null;
        }
        return;
      }
      if (read.size === 0) return;
      const bytes = readRanges(read.records);
      const bounds: { baseOffset: bigint; lastOffset: bigint; at: number; size: number }[] = [];
      let at = 0;
      for (const b of wholeBatches(bytes)) {
        const baseOffset = b.readBigInt64BE(0);
        bounds.push({ baseOffset, lastOffset: baseOffset + BigInt(b.readInt32BE(LAST_OFFSET_DELTA)), at, size: b.length });
        at += b.length;
      }
      const acquired = l.sp.acquire(memberId, bounds, maxRecords, whole, settings, Date.now());
      if (acquired.length === 0) return;
      r.acquired = acquired;
      // Only the batches holding acquired records go out.
      const first = acquired[0]!.firstOffset;
      const last = acquired[acquired.length - 1]!.lastOffset;
      const kept = bounds.filter((b) => b.lastOffset >= first && b.baseOffset <= last);
      r.records = kept.length === bounds.length ? bytes : Buffer.concat(kept.map((b) => bytes.subarray(b.at, b.at + b.size)));
      this.scheduleExpiry(groupId, ref, l);
    });
  }

  private async acknowledgePartition(groupId: string, memberId: string, a: AckRequestPartition): Promise<{ errorCode: number; errorMessage: string | null }> {
    const l = await this.sharePartition(groupId, a);
    if (!('sp' in l)) return l;
    const settings = this.settings(groupId);
    return l.sp.exclusive(async () => {
      const r = l.sp.acknowledge(memberId, a.batches, settings, Date.now());
      if (r.errorCode !== ErrorCode.NONE || r.change === null) return { errorCode: r.errorCode, errorMessage: r.errorMessage };
      const w = await this.persist(groupId, l, r.change);
      if (w.errorCode === ErrorCode.NONE) this.replicas.wakeFetches(l.topic, a.partition);
      return w;
    });
  }

  /** Persists a change; undoes it when that fails, and drops a partition whose state was fenced. */
  private async persist(groupId: string, l: Loaded, change: StateChange): Promise<{ errorCode: number; errorMessage: string | null }> {
    const w = await this.persister.write(l.key, {
      stateEpoch: l.sp.stateEpoch,
      leaderEpoch: l.sp.leaderEpoch,
      startOffset: change.startOffset,
      deliveryCompleteCount: change.deliveryCompleteCount,
      stateBatches: change.stateBatches,
    });
    if (w.errorCode === ErrorCode.NONE) return { errorCode: ErrorCode.NONE, errorMessage: null };
    change.rollback();
    this.log.warn({ groupId, topic: l.topic, partition: l.key.partition, error: w.errorCode, message: w.errorMessage }, 'cannot persist share-partition state');
    if (w.errorCode === ErrorCode.FENCED_STATE_EPOCH || w.errorCode === ErrorCode.FENCED_LEADER_EPOCH) this.invalidateOne(groupId, l);
    return { errorCode: w.errorCode, errorMessage: w.errorMessage };
  }

  private invalidateOne(groupId: string, l: Loaded): void {
    const k = spKey(groupId, l.key);
    void this.partitions.get(k)?.then((cur) => {
      if (cur === l && this.partitions.get(k)) this.partitions.delete(k);
    });
    if (l.timer) clearTimeout(l.timer);
  }

  /** Arms the partition's timer for its earliest acquisition lock. */
  private scheduleExpiry(groupId: string, ref: PartitionRef, l: Loaded): void {
    if (this.stopped) return;
    if (l.timer) clearTimeout(l.timer);
    l.timer = null;
    const next = l.sp.nextLockExpiry();
    if (next === null) return;
    l.timer = setTimeout(() => {
      l.timer = null;
      void l.sp.exclusive(async () => {
        const change = l.sp.expireLocks(this.settings(groupId), Date.now());
        if (change) {
          const w = await this.persist(groupId, l, change);
          if (w.errorCode === ErrorCode.NONE) this.replicas.wakeFetches(l.topic, ref.partition);
        }
        this.scheduleExpiry(groupId, ref, l);
      });
    }, Math.max(0, next - Date.now()) + 1);
    l.timer.unref();
  }

  /** Parks until a record of `targets` may be acquirable (new data, or a release), or `maxWaitMs` passes. */
  private waitForRecords(groupId: string, targets: readonly PartitionRef[], maxWaitMs: number): Promise<string> {
    const settings = this.settings(groupId);
    const parts: { topic: string; partition: number; ref: PartitionRef }[] = [];
    for (const t of targets) {
      const topic = this.metadata.image().topicsById.get(t.topicId);
      if (topic) parts.push({ topic: topic.name, partition: t.partition, ref: t });
    }
    const started = Date.now();
    let first = true;
    return this.replicas.awaitFetchable(
      parts.map(({ topic, partition }) => ({ topic, partition })),
      () => {
        // Checked now (nothing new, or the fetch would have had it) and after each append or release.
        if (first) {
          first = false;
          return false;
        }
        if (Date.now() - started >= maxWaitMs) return true;
        return parts.some(({ topic, partition, ref }) => {
          const log = this.replicas.logFor(topic, partition);
          if (!log) return true;
          const cached = this.peek(groupId, ref);
          const end = settings.isolationLevel === 'read_committed' ? log.lastStableOffset : log.highWatermark;
          return cached === null ? true : cached.hasAvailable(end, settings);
        });
      },
      maxWaitMs,
    );
  }

  /** The share partition if it is loaded and settled (no load in progress), else null. */
  private peek(groupId: string, ref: PartitionRef): SharePartition | null {
    const p = this.partitions.get(spKey(groupId, ref));
    if (!p) return null;
    const settled = this.settledPartitions.get(p);
    return settled ?? null;
  }

  private readonly settledPartitions = new WeakMap<Promise<unknown>, SharePartition>();

  /** Closes a session: with `release`, what its member still holds becomes available again. */
  private async closeSession(session: ShareSession, release: boolean): Promise<void> {
    const sKey = `${session.groupId}\u0000${session.memberId}`;
    if (this.sessions.get(sKey) === session) this.sessions.delete(sKey);
    if (!release) return;
    const settings = this.settings(session.groupId);
    for (const ref of session.partitions.values()) {
      const p = this.partitions.get(spKey(session.groupId, ref));
      if (!p) continue;
      const l = await p;
      if (!('sp' in l)) continue;
      await l.sp.exclusive(async () => {
        const change = l.sp.releaseMember(session.memberId, settings);
        if (change && (await this.persist(session.groupId, l, change)).errorCode === ErrorCode.NONE) this.replicas.wakeFetches(l.topic, ref.partition);
        this.scheduleExpiry(session.groupId, ref, l);
      });
    }
    this.evictUnused();
  }

  /** Closes sessions nobody used for a while, then drops share partitions no session fetches and nothing holds. */
  private sweep(): void {
    const now = Date.now();
    for (const s of [...this.sessions.values()]) {
      if (now - s.lastUsed > SESSION_IDLE_MS) void this.closeSession(s, true);
    }
    this.evictUnused();
  }

  private evictUnused(): void {
    const used = new Set<string>();
    for (const s of this.sessions.values()) for (const ref of s.partitions.values()) used.add(spKey(s.groupId, ref));
    for (const [k, p] of this.partitions) {
      if (used.has(k)) continue;
      void p.then((l) => {
        if (!('sp' in l) || l.sp.nextLockExpiry() !== null) return;
        if (this.partitions.get(k) === p && !this.isUsed(k)) {
          this.partitions.delete(k);
          if (l.timer) clearTimeout(l.timer);
        }
      });
    }
  }

  private isUsed(k: string): boolean {
    for (const s of this.sessions.values()) for (const ref of s.partitions.values()) if (spKey(s.groupId, ref) === k) return true;
    return false;
  }
}

/** Kafka's checks of a share request's ids: a group id (possibly empty) and a member id of 1 to 36 characters. */
function invalidIds(groupId: string | null, memberId: string | null): string | null {
  if (groupId === null) return 'Invalid group id in the request.';
  if (memberId === null || memberId.length === 0 || memberId.length > 36) return 'Invalid member id in the request.';
  return null;
}

/** Milliseconds of an ISO-8601 duration such as PT1H30M or P1DT2H; null when unreadable. */
export function isoDurationMs(s: string): number | null {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(s);
  if (!m || s === 'P' || s.endsWith('T')) return null;
  const [, d, h, min, sec] = m;
  return (Number(d ?? 0) * 86400 + Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(sec ?? 0)) * 1000;
}

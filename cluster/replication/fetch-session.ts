/**
 * Incremental fetch sessions (KIP-227), the broker side: a bounded cache of
 * sessions and the four kinds of fetch context a request gets, as Kafka's
 * FetchManager hands them out.
 *
 * A session remembers, per partition, what the fetcher last asked for (offset,
 * byte limit, epochs) and what it was last told (high watermark, log start
 * offset). An incremental request names only the partitions whose request
 * changed, and its response carries only the partitions with something new:
 * records, a moved high watermark or log start offset, or an error.
 *
 * Session epochs: a full request (epoch 0, or -1 for "no session") drops the
 * session it names; epoch 0 then gets a new session whose next expected epoch
 * is 1. Each incremental request must carry the session's current epoch, which
 * then advances (after 2^31 - 1 it wraps to 1).
 *
 * The cache is split into 8 shards, each owning a range of session ids and a
 * slice of max.incremental.fetch.session.cache.slots, and new sessions go to
 * the shards in turn; a full shard makes room only by evicting, in this order
 * of preference: a session unused for more than two minutes, else the cheapest
 * session the newcomer outranks (a follower's session outranks a consumer's, a
 * larger one a smaller one), and a session younger than two minutes only ever
 * gives way to a follower's. Everything runs on the event loop, so nothing here
 * needs a lock.
 */
import { crypto } from '../../wire/builtins.js';
import { ErrorCode } from '../../wire/errors.js';
import { ZERO_UUID } from '../../wire/uuid.js';

/** Sessions of this many shards; Kafka's broker uses 8. */
export const FETCH_SESSION_CACHE_SHARDS = 8;
/** A session unused this long may be evicted by anyone. */
export const MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000;
export const INVALID_SESSION_ID = 0;
export const INITIAL_EPOCH = 0;
export const FINAL_EPOCH = -1;
const INT32_MAX = 2147483647;

/** The epoch that follows `epoch`: -1 stays -1, and after the largest int32 comes 1. */
export function nextEpoch(epoch: number): number {
  if (epoch < 0) return FINAL_EPOCH;
  return epoch === INT32_MAX ? 1 : epoch + 1;
}

/**
 * A partition as a fetch names it. With topic ids (Fetch v13+) the id is what
 * identifies it and the name is null until the id is known; before v13 the id
 * is the zero id and the name identifies it.
 */
export interface FetchPartitionKey {
  readonly topicId: string;
  readonly topic: string | null;
  readonly partition: number;
}

/** What a fetcher asks of one partition. Epochs of -1 mean "none given". */
export interface FetchPartitionData {
  readonly fetchOffset: bigint;
  readonly logStartOffset: bigint;
  readonly maxBytes: number;
  readonly currentLeaderEpoch: number;
  readonly lastFetchedEpoch: number;
}

/** The parts of a partition's answer that decide whether an incremental response must carry it. */
export interface FetchPartitionOutcome {
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly logStartOffset: bigint;
  readonly recordsSize: number;
  readonly preferredReadReplica: number;
  readonly divergingEpoch: boolean;
}

/** A map key for a partition: by id when it has one, else by name. */
export function partitionKey(k: FetchPartitionKey): string {
  return k.topicId !== ZERO_UUID ? `${k.partition}#${k.topicId}` : `${k.partition}:${k.topic ?? ''}`;
}

class CachedPartition implements FetchPartitionData {
  /** -1 until an answer was sent, and again after an error, so that the next answer goes out. */
  highWatermark = -1n;
  localLogStartOffset = -1n;
  fetchOffset: bigint;
  logStartOffset: bigint;
  maxBytes: number;
  currentLeaderEpoch: number;
  lastFetchedEpoch: number;

  constructor(
    readonly topicId: string,
    public topic: string | null,
    readonly partition: number,
    data: FetchPartitionData,
  ) {
    this.fetchOffset = data.fetchOffset;
    this.logStartOffset = data.logStartOffset;
    this.maxBytes = data.maxBytes;
    this.currentLeaderEpoch = data.currentLeaderEpoch;
    this.lastFetchedEpoch = data.lastFetchedEpoch;
  }

  get key(): FetchPartitionKey {
    return { topicId: this.topicId, topic: this.topic, partition: this.partition };
  }

  updateRequest(data: FetchPartitionData): void {
    this.fetchOffset = data.fetchOffset;
    this.logStartOffset = data.logStartOffset;
    this.maxBytes = data.maxBytes;
    this.currentLeaderEpoch = data.currentLeaderEpoch;
    this.lastFetchedEpoch = data.lastFetchedEpoch;
  }

  /** Whether the answer must be sent; with `update`, remembers it as sent. */
  mustRespond(out: FetchPartitionOutcome, update: boolean): boolean {
    let must = out.recordsSize > 0;
    if (this.highWatermark !== out.highWatermark) {
      must = true;
      if (update) this.highWatermark = out.highWatermark;
    }
    if (this.localLogStartOffset !== out.logStartOffset) {
      must = true;
      if (update) this.localLogStartOffset = out.logStartOffset;
    }
    if (out.preferredReadReplica !== -1) must = true;
    if (out.errorCode !== ErrorCode.NONE) {
      must = true;
      if (update) this.highWatermark = -1n;
    }
    if (out.divergingEpoch) must = true;
    return must;
  }
}

export class FetchSession {
  /** Size when last filed in the cache's eviction order; -1 while not in the cache. */
  cachedSize = -1;
  lastUsedMs: number;

  constructor(
    readonly id: number,
    readonly privileged: boolean,
    /** In the order partitions are fetched; a partition that returned records moves to the end. */
    readonly partitions: Map<string, CachedPartition>,
    readonly usesTopicIds: boolean,
    readonly creationMs: number,
    public epoch: number,
  ) {
    this.lastUsedMs = creationMs;
  }

  get size(): number {
    return this.partitions.size;
  }

  /** Applies an incremental request: new partitions join at the end, known ones take the new request, forgotten ones go. */
  update(fetchData: ReadonlyMap<string, FetchRequestPartition>, toForget: readonly FetchPartitionKey[]): void {
    for (const [key, { key: k, data }] of fetchData) {
      const cached = this.partitions.get(key);
      if (cached) cached.updateRequest(data);
      else this.partitions.set(key, new CachedPartition(k.topicId, k.topic, k.partition, data));
    }
    for (const k of toForget) this.partitions.delete(partitionKey(k));
  }
}

/** One partition of a request, keyed in request order by partitionKey. */
export interface FetchRequestPartition {
  readonly key: FetchPartitionKey;
  readonly data: FetchPartitionData;
}

/** One partition's answer, in the order the response lists them. */
export interface FetchResponsePartition<T extends FetchPartitionOutcome = FetchPartitionOutcome> {
  readonly key: FetchPartitionKey;
  readonly outcome: T;
}

export interface FetchContextResponse<T extends FetchPartitionOutcome> {
  readonly errorCode: number;
  readonly sessionId: number;
  readonly partitions: FetchResponsePartition<T>[];
}

/** What one fetch request reads and how its answer is trimmed to the session. */
export interface FetchContext {
  readonly kind: 'error' | 'sessionless' | 'full' | 'incremental';
  /** The partitions to read, in order, with what is asked of each. */
  partitions(): FetchRequestPartition[];
  /** The fetch offset the context holds for a partition. */
  fetchOffset(key: FetchPartitionKey): bigint | undefined;
  /** Files the answers in the session (if any) and returns what the response carries. */
  updateAndGenerateResponse<T extends FetchPartitionOutcome>(updates: FetchResponsePartition<T>[]): FetchContextResponse<T>;
}

class SessionErrorContext implements FetchContext {
  readonly kind = 'error';
  constructor(readonly errorCode: number) {}
  partitions(): FetchRequestPartition[] {
    return [];
  }
  fetchOffset(): bigint | undefined {
    return undefined;
  }
  updateAndGenerateResponse<T extends FetchPartitionOutcome>(): FetchContextResponse<T> {
    return { errorCode: this.errorCode, sessionId: INVALID_SESSION_ID, partitions: [] };
  }
}

class SessionlessContext implements FetchContext {
  readonly kind: 'sessionless' | 'full' = 'sessionless';
  constructor(protected readonly fetchData: ReadonlyMap<string, FetchRequestPartition>) {}
  partitions(): FetchRequestPartition[] {
    return [...this.fetchData.values()];
  }
  fetchOffset(key: FetchPartitionKey): bigint | undefined {
    return this.fetchData.get(partitionKey(key))?.data.fetchOffset;
  }
  updateAndGenerateResponse<T extends FetchPartitionOutcome>(updates: FetchResponsePartition<T>[]): FetchContextResponse<T> {
    return { errorCode: ErrorCode.NONE, sessionId: INVALID_SESSION_ID, partitions: updates };
  }
}

class FullContext extends SessionlessContext {
  override readonly kind = 'full';
  constructor(
    fetchData: ReadonlyMap<string, FetchRequestPartition>,
    private readonly cache: FetchSessionCache,
    private readonly usesTopicIds: boolean,
    private readonly privileged: boolean,
  ) {
    super(fetchData);
  }
  override updateAndGenerateResponse<T extends FetchPartitionOutcome>(updates: FetchResponsePartition<T>[]): FetchContextResponse<T> {
    const sessionId = this.cache.maybeCreateSession(this.privileged, updates.length, this.usesTopicIds, () => {
      const partitions = new Map<string, CachedPartition>();
      for (const { key, outcome } of updates) {
        const k = partitionKey(key);
        const req = this.fetchData.get(k);
        if (!req) continue;
        const cached = new CachedPartition(key.topicId, key.topic, key.partition, req.data);
        cached.highWatermark = outcome.highWatermark;
        cached.localLogStartOffset = outcome.logStartOffset;
        partitions.set(k, cached);
      }
      return partitions;
    });
    return { errorCode: ErrorCode.NONE, sessionId, partitions: updates };
  }
}

class IncrementalContext implements FetchContext {
  readonly kind = 'incremental';
  constructor(
    private readonly session: FetchSession,
    private readonly requestEpoch: number,
    private readonly topicName: (topicId: string) => string | undefined,
  ) {}

  partitions(): FetchRequestPartition[] {
    const out: FetchRequestPartition[] = [];
    for (const p of this.session.partitions.values()) {
      // A topic id unknown when the partition joined may be known by now.
      if (this.session.usesTopicIds && p.topic === null) p.topic = this.topicName(p.topicId) ?? null;
      out.push({ key: p.key, data: { ...p } });
    }
    return out;
  }

  fetchOffset(key: FetchPartitionKey): bigint | undefined {
    return this.session.partitions.get(partitionKey(key))?.fetchOffset;
  }

  updateAndGenerateResponse<T extends FetchPartitionOutcome>(updates: FetchResponsePartition<T>[]): FetchContextResponse<T> {
    // Another request on the same session may have moved the epoch while this one waited.
    if (this.session.epoch !== nextEpoch(this.requestEpoch)) {
      return { errorCode: ErrorCode.INVALID_FETCH_SESSION_EPOCH, sessionId: this.session.id, partitions: [] };
    }
    const kept: FetchResponsePartition<T>[] = [];
    for (const u of updates) {
      const k = partitionKey(u.key);
      const cached = this.session.partitions.get(k);
      if (!cached || !cached.mustRespond(u.outcome, true)) continue;
      kept.push(u);
      if (u.outcome.recordsSize > 0) {
        // Partitions that returned data go to the back, so that the others get their turn at the byte limits.
        this.session.partitions.delete(k);
        this.session.partitions.set(k, cached);
      }
    }
    return { errorCode: ErrorCode.NONE, sessionId: this.session.id, partitions: kept };
  }
}

/** One slice of the cache, owning the session ids in [max(1, n * range), (n + 1) * range). */
class FetchSessionCacheShard {
  readonly sessions = new Map<number, FetchSession>();

  constructor(
    readonly maxEntries: number,
    readonly evictionMs: number,
    readonly sessionIdRange: number,
    readonly shardNum: number,
    private readonly now: () => number,
  ) {}

  newSessionId(): number {
    const low = Math.max(1, this.shardNum * this.sessionIdRange);
    const high = (this.shardNum + 1) * this.sessionIdRange;
    for (;;) {
      const id = crypto().randomInt(low, high);
      if (!this.sessions.has(id) && id !== INVALID_SESSION_ID) return id;
    }
  }

  maybeCreateSession(privileged: boolean, size: number, usesTopicIds: boolean, create: () => Map<string, CachedPartition>): number {
    const now = this.now();
    if (this.sessions.size >= this.maxEntries && !this.tryEvict(privileged, size, now)) return INVALID_SESSION_ID;
    const session = new FetchSession(this.newSessionId(), privileged, create(), usesTopicIds, now, nextEpoch(INITIAL_EPOCH));
    this.sessions.set(session.id, session);
    this.touch(session, now);
    return session.id;
  }

  /**
   * Makes room for a newcomer: the least recently used session if it is stale,
   * else the lowest-ranked session the newcomer may evict, if the newcomer
   * ranks at least as high.
   */
  private tryEvict(privileged: boolean, size: number, now: number): boolean {
    let oldest: FetchSession | undefined;
    for (const s of this.sessions.values()) {
      if (!oldest || s.lastUsedMs < oldest.lastUsedMs || (s.lastUsedMs === oldest.lastUsedMs && s.id < oldest.id)) oldest = s;
    }
    if (!oldest) return false;
    if (now - oldest.lastUsedMs > this.evictionMs) {
      this.remove(oldest.id);
      return true;
    }
    let weakest: FetchSession | undefined;
    for (const s of this.sessions.values()) {
      if (!this.evictableBy(s, privileged)) continue;
      if (!weakest || compareEvictable(s.privileged, s.cachedSize, s.id, weakest.privileged, weakest.cachedSize, weakest.id) < 0) weakest = s;
    }
    // The newcomer's key carries id 0, so on equal rank and size it sorts first and evicts nothing.
    if (!weakest || compareEvictable(privileged, size, 0, weakest.privileged, weakest.cachedSize, weakest.id) < 0) return false;
    this.remove(weakest.id);
    return true;
  }

  /**
   * Kafka files a session as evictable when it is touched: by a follower's
   * newcomer if it is a consumer's or was older than evictionMs at that
   * moment, by anyone if it was older than evictionMs then.
   */
  private evictableBy(s: FetchSession, privileged: boolean): boolean {
    const agedAtTouch = s.lastUsedMs - s.creationMs > this.evictionMs;
    return privileged ? !s.privileged || agedAtTouch : agedAtTouch;
  }

  remove(sessionId: number): FetchSession | undefined {
    const s = this.sessions.get(sessionId);
    if (!s) return undefined;
    this.sessions.delete(sessionId);
    s.cachedSize = -1;
    return s;
  }

  touch(session: FetchSession, now: number): void {
    session.lastUsedMs = now;
    session.cachedSize = session.size;
  }
}

/** Kafka's order of eviction candidates: consumers' before followers', then smaller first, then by id. */
function compareEvictable(aPriv: boolean, aSize: number, aId: number, bPriv: boolean, bSize: number, bId: number): number {
  if (aPriv !== bPriv) return aPriv ? 1 : -1;
  if (aSize !== bSize) return aSize < bSize ? -1 : 1;
  return aId - bId;
}

export interface FetchSessionCacheOptions {
  /** max.incremental.fetch.session.cache.slots, shared out evenly (rounding down) over the shards. */
  readonly maxSlots: number;
  readonly evictionMs?: number;
  readonly now?: () => number;
}

/**
 * The broker's fetch sessions.
 *
 * Example: with 1000 slots, newContext(12, 0, 0, false, <2 partitions>, [], f)
 * is a full context; its updateAndGenerateResponse(<2 answers>) returns a new
 * session id S. newContext(12, S, 1, ...) is then incremental, S at epoch 2;
 * newContext(12, S, 1, ...) again gets INVALID_FETCH_SESSION_EPOCH, and
 * newContext(12, 12345, 1, ...) FETCH_SESSION_ID_NOT_FOUND.
 */
export class FetchSessionCache {
  private readonly shards: FetchSessionCacheShard[];
  private counter = 0;
  private readonly now: () => number;

  constructor(opts: FetchSessionCacheOptions) {
    this.now = opts.now ?? Date.now;
    const range = Math.floor(INT32_MAX / FETCH_SESSION_CACHE_SHARDS);
    const perShard = Math.floor(Math.max(0, opts.maxSlots) / FETCH_SESSION_CACHE_SHARDS);
    const evictionMs = opts.evictionMs ?? MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS;
    this.shards = Array.from({ length: FETCH_SESSION_CACHE_SHARDS }, (_, n) => new FetchSessionCacheShard(perShard, evictionMs, range, n, this.now));
  }

  /** Sessions in the cache. */
  get size(): number {
    return this.shards.reduce((n, s) => n + s.sessions.size, 0);
  }

  get(sessionId: number): FetchSession | undefined {
    return this.shardOf(sessionId).sessions.get(sessionId);
  }

  /**
   * The shard that owns a session id. Kafka divides the id by the range and
   * indexes its shard list with the quotient, so an id no shard owns (the
   * few just below 2^31, or below -range) makes the request fail as a whole:
   * this throws and the handler answers UNKNOWN_SERVER_ERROR, as Kafka does.
   */
  private shardOf(sessionId: number): FetchSessionCacheShard {
    const shard = this.shards[Math.trunc(sessionId / this.shards[0]!.sessionIdRange)];
    if (!shard) throw new RangeError(`fetch session id ${sessionId} belongs to no cache shard`);
    return shard;
  }

  /** Called by a full context: a new session in the next shard, or INVALID_SESSION_ID when there is no room. */
  maybeCreateSession(privileged: boolean, size: number, usesTopicIds: boolean, create: () => Map<string, CachedPartition>): number {
    const shard = this.shards[this.counter++ % this.shards.length]!;
    if (this.counter >= INT32_MAX) this.counter = 0;
    return shard.maybeCreateSession(privileged, size, usesTopicIds, create);
  }

  /**
   * The context for one request, from its session id and epoch (Kafka's
   * FetchManager.newContext). `fetchData` is in request order; names of
   * topics known by id come from `topicName`.
   */
  newContext(
    version: number,
    sessionId: number,
    epoch: number,
    privileged: boolean,
    fetchData: ReadonlyMap<string, FetchRequestPartition>,
    toForget: readonly FetchPartitionKey[],
    topicName: (topicId: string) => string | undefined,
  ): FetchContext {
    if (epoch === INITIAL_EPOCH || epoch === FINAL_EPOCH) {
      // A full request closes the session it names.
      if (sessionId !== INVALID_SESSION_ID) this.shardOf(sessionId).remove(sessionId);
      return epoch === FINAL_EPOCH ? new SessionlessContext(fetchData) : new FullContext(fetchData, this, version >= 13, privileged);
    }
    const shard = this.shardOf(sessionId);
    const session = shard.sessions.get(sessionId);
    if (!session) return new SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
    if (session.epoch !== epoch) return new SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH);
    if (session.usesTopicIds !== version >= 13) return new SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR);
    session.update(fetchData, toForget);
    if (session.size === 0) {
      shard.remove(session.id);
      return new SessionlessContext(fetchData);
    }
    shard.touch(session, this.now());
    session.epoch = nextEpoch(session.epoch);
    return new IncrementalContext(session, epoch, topicName);
  }
}

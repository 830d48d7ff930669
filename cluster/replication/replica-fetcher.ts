/**
 * Followers copying their leaders, as Kafka's replica fetchers do: for every
 * partition this broker is a replica of but does not lead, it fetches from
 * the leader with the Fetch API (its node id as replica id, from its log end)
 * and appends what comes, offsets and bytes as the leader wrote them, so that
 * the replicas' logs are the same bytes. One fetch loop per leader broker,
 * over one connection, for all the partitions that broker leads; the set
 * follows the metadata image.
 *
 * The leader learns from each fetch's offset what the follower has (see
 * ReplicaManager.recordFollowerFetch): a follower that catches up joins the
 * ISR, one that stops catching up leaves it. Before fetching a partition at a
 * new leader epoch, the follower first cuts off what the leader does not have
 * (OffsetForLeaderEpoch), so that after a failover the replicas are the same
 * bytes again.
 */
import { ErrorCode } from '../../wire/errors.js';
import type { FetchRequest } from '../../wire/messages/fetch-request.js';
import type { FetchResponse } from '../../wire/messages/fetch-response.js';
import type { ListOffsetsRequest } from '../../wire/messages/list-offsets-request.js';
import type { OffsetForLeaderEpochRequest } from '../../wire/messages/offset-for-leader-epoch-request.js';
import type { OffsetForLeaderEpochResponse } from '../../wire/messages/offset-for-leader-epoch-response.js';
import type { ListOffsetsResponse } from '../../wire/messages/list-offsets-response.js';
import { BASE_OFFSET, BATCH_LENGTH, LAST_OFFSET_DELTA, LOG_OVERHEAD, MAGIC, MAGIC_V2, MAX_TIMESTAMP, MIN_BATCH_LENGTH, batchCrcValid } from '../../wire/record-batch.js';
import { WireConnection, api } from '../inter-broker/kafka-connection.js';
import { endpointFor, type MetadataImage, type MetadataStore } from '../metadata/metadata-image.js';
import type { FollowerBatch, ReplicaManager } from './replica-manager.js';

/** Fetch v18's high_watermark when the follower reports none (Kafka's default, the largest int64). */
const NO_HIGH_WATERMARK = 9223372036854775807n;

/** The little of a logger the fetchers need; a pino logger fits. */
export interface FetcherLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface ReplicaFetcherOptions {
  /** The listener name this broker's own connections to leaders use (its first listener). */
  readonly listener: string;
  /** replica.fetch.wait.max.ms: how long the leader may hold a fetch with nothing new. */
  readonly maxWaitMs?: number;
  /** replica.fetch.max.bytes: bytes per partition per fetch. */
  readonly partitionMaxBytes?: number;
  /** replica.fetch.backoff.ms: the pause after a failed fetch. */
  readonly backoffMs?: number;
}

const FETCH_VERSION = 12;
const LIST_OFFSETS_VERSION = 7;
const OFFSET_FOR_LEADER_EPOCH_VERSION = 4;
/** The pause when a partition waits for news of a leadership to reach this broker or the leader. */
const LEADERSHIP_RETRY_MS = 50;
const LEADERSHIP_ERRORS: ReadonlySet<number> = new Set([ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH]);
const EARLIEST = -2n;
const LATEST = -1n;
const RESPONSE_MAX_BYTES = 10 * 1024 * 1024;
/** replica.fetch.max.bytes: Kafka's default. The first batch of a partition comes whole even when larger. */
const PARTITION_MAX_BYTES = 1024 * 1024;
/** How long beyond its long-poll a request to the leader may go unanswered before the connection is dropped (Kafka's replica.socket.timeout.ms). */
const REQUEST_TIMEOUT_MS = 30_000;
const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

interface Followed {
  readonly topic: string;
  readonly partition: number;
  readonly leaderEpoch: number;
}

/**
 * The whole v2 batches at the front of fetched `records` (a fetch may end in
 * a cut batch, which is left out), up to the first whose CRC does not match:
 * that one and what follows are not taken.
 */
export function followerBatches(records: Buffer): { batches: FollowerBatch[]; corrupt: boolean } {
  const batches: FollowerBatch[] = [];
  let at = 0;
  while (at + LOG_OVERHEAD + MIN_BATCH_LENGTH <= records.length) {
    const size = LOG_OVERHEAD + records.readInt32BE(at + BATCH_LENGTH);
    if (size < LOG_OVERHEAD + MIN_BATCH_LENGTH) return { batches, corrupt: true };
    if (at + size > records.length) break;
    if (records[at + MAGIC] !== MAGIC_V2 || !batchCrcValid(records, at, size)) return { batches, corrupt: true };
    const baseOffset = records.readBigInt64BE(at + BASE_OFFSET);
    batches.push({
      baseOffset,
      lastOffset: baseOffset + BigInt(records.readInt32BE(at + LAST_OFFSET_DELTA)),
      maxTimestamp: records.readBigInt64BE(at + MAX_TIMESTAMP),
      position: at,
      size,
    });
    at += size;
  }
  return { batches, corrupt: false };
}

/** The fetch loops of this broker, one per leader it follows. */
export class ReplicaFetchers {
  private readonly loops = new Map<number, LeaderFetchLoop>();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly replicas: ReplicaManager,
    private readonly log: FetcherLogger,
    private readonly opts: ReplicaFetcherOptions,
  ) {}

  start(): this {
    this.apply(this.metadata.image());
    this.unsubscribe = this.metadata.subscribe((image) => this.apply(image));
    return this;
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    const loops = [...this.loops.values()];
    this.loops.clear();
    await Promise.all(loops.map((l) => l.stop()));
  }

  private apply(image: MetadataImage): void {
    const wanted = new Map<number, Map<string, Followed>>();
    for (const t of image.topics.values()) {
      for (const p of t.partitions) {
        if (!p.replicas.includes(this.nodeId) || p.leader === this.nodeId || p.leader < 0 || !image.brokers.has(p.leader)) continue;
        let set = wanted.get(p.leader);
        if (!set) wanted.set(p.leader, (set = new Map()));
        set.set(followedKey(t.name, p.partition), { topic: t.name, partition: p.partition, leaderEpoch: p.leaderEpoch });
      }
    }
    for (const [leader, loop] of this.loops) {
      const endpoint = image.brokers.get(leader) && endpointFor(image.brokers.get(leader)!, this.opts.listener);
      if (!wanted.has(leader) || !endpoint || endpoint.host !== loop.host || endpoint.port !== loop.port) {
        this.loops.delete(leader);
        void loop.stop();
      }
    }
    for (const [leader, partitions] of wanted) {
      let loop = this.loops.get(leader);
      if (!loop) {
        const endpoint = endpointFor(image.brokers.get(leader)!, this.opts.listener);
        if (!endpoint) {
          this.log.warn({ leader, listener: this.opts.listener }, 'the leader has no endpoint for this listener; cannot follow its partitions');
          continue;
        }
        loop = new LeaderFetchLoop(this.nodeId, leader, endpoint.host, endpoint.port, this.replicas, this.log, this.opts);
        this.loops.set(leader, loop);
        loop.start();
      }
      loop.partitions = partitions;
    }
  }
}

class LeaderFetchLoop {
  partitions = new Map<string, Followed>();
  private stopped = false;
  private running: Promise<void> | null = null;
  private conn: WireConnection | null = null;
  private wake: (() => void) | null = null;
  /** Rotates where each fetch starts, so that no partition always comes last (and gets what room is left). */
  private rotation = 0;
  /** The leader epoch at which each partition's log was last matched to the leader's; fetching starts only after. */
  private readonly truncatedAt = new Map<string, number>();

  constructor(
    private readonly nodeId: number,
    private readonly leader: number,
    readonly host: string,
    readonly port: number,
    private readonly replicas: ReplicaManager,
    private readonly log: FetcherLogger,
    private readonly opts: ReplicaFetcherOptions,
  ) {}

  start(): void {
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.conn?.close();
    this.wake?.();
    await this.running;
  }

  private async run(): Promise<void> {
    const backoffMs = this.opts.backoffMs ?? 1000;
    let failures = 0;
    try {
      while (!this.stopped) {
        try {
          const outcome = await this.fetchOnce();
          failures = 0;
          // Leadership news travels through etcd to both brokers at about the same time: asked again shortly.
          if (outcome !== 'progress' && !this.stopped) await this.pause(outcome === 'soon' ? LEADERSHIP_RETRY_MS : backoffMs);
        } catch (err) {
          this.conn?.close();
          this.conn = null;
          if (this.stopped) return;
          if (failures++ === 0) this.log.warn({ leader: this.leader, err: (err as Error).message }, 'fetching from the leader failed; trying again');
          await this.pause(backoffMs);
        }
      }
    } finally {
      this.conn?.close();
      this.conn = null;
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  /** The open connection to the leader, opened when needed; none once stopped. */
  private async connection(): Promise<WireConnection> {
    if (this.conn) return this.conn;
    const conn = await WireConnection.open(this.host, this.port);
    if (this.stopped) {
      conn.close();
      throw new Error('stopped');
    }
    this.conn = conn;
    return conn;
  }

  /** `request` on the leader's connection, which is closed (failing the request) when no answer comes in time. */
  private async ask<Res, Req>(name: string, version: number, body: Req, timeoutMs: number): Promise<Res> {
    const conn = await this.connection();
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        conn.request<Res, Req>(api(name), version, body),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            conn.close();
            reject(new Error(`no answer from the leader within ${timeoutMs} ms`));
          }, timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One fetch of every followed partition: 'progress' when every partition
   * was answered without error (the leader long-polls, so an empty answer
   * took its time); 'soon' when some partition waits for this broker or the
   * leader to learn of a new leadership (a short pause); 'backoff' when
   * there was nothing to ask or an error to wait out.
   */
  private async fetchOnce(): Promise<'progress' | 'soon' | 'backoff'> {
    const maxWaitMs = this.opts.maxWaitMs ?? 500;
    await this.truncateNewlyFollowed();
    const all = [...this.partitions.values()].filter((f) => this.truncatedAt.get(followedKey(f.topic, f.partition)) === f.leaderEpoch);
    const waitingForLeadership = all.length < this.partitions.size;
    const asked = new Map<string, Followed>();
    const topics = new Map<string, FetchRequest['topics'][number]>();
    for (let i = 0; i < all.length; i++) {
      const f = all[(i + this.rotation) % all.length]!;
      const pos = this.replicas.followerPosition(f.topic, f.partition);
      if (!pos) continue;
      asked.set(followedKey(f.topic, f.partition), f);
      let t = topics.get(f.topic);
      if (!t) topics.set(f.topic, (t = { topic: f.topic, topicId: ZERO_UUID, partitions: [] }));
      t.partitions.push({
        partition: f.partition,
        currentLeaderEpoch: f.leaderEpoch,
        fetchOffset: pos.logEndOffset,
        lastFetchedEpoch: -1,
        logStartOffset: pos.logStartOffset,
        partitionMaxBytes: this.opts.partitionMaxBytes ?? PARTITION_MAX_BYTES,
        replicaDirectoryId: ZERO_UUID,
        highWatermark: NO_HIGH_WATERMARK,
      });
    }
    this.rotation++;
    if (asked.size === 0) return waitingForLeadership ? 'soon' : 'backoff';
    const res = await this.ask<FetchResponse, FetchRequest>(
      'Fetch',
      FETCH_VERSION,
      {
        clusterId: null,
        replicaId: this.nodeId,
        replicaState: { replicaId: this.nodeId, replicaEpoch: -1n },
        maxWaitMs,
        minBytes: 1,
        maxBytes: RESPONSE_MAX_BYTES,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [...topics.values()],
        forgottenTopicsData: [],
        rackId: '',
      },
      maxWaitMs + REQUEST_TIMEOUT_MS,
    );
    if (this.stopped) return 'progress';
    if (res.errorCode !== ErrorCode.NONE) throw new Error(`fetch refused with error ${res.errorCode}`);
    let clean = true;
    let leadershipLag = false;
    const outOfRange: Followed[] = [];
    for (const t of res.responses) {
      for (const p of t.partitions) {
        const key = followedKey(t.topic, p.partitionIndex);
        const f = asked.get(key);
        // Only what was asked, and only while it is still followed at the epoch it was asked at.
        if (!f || this.partitions.get(key)?.leaderEpoch !== f.leaderEpoch) continue;
        if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
          outOfRange.push(f);
          clean = false;
          continue;
        }
        // NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH: the next image says who leads.
        if (p.errorCode !== ErrorCode.NONE) {
          if (LEADERSHIP_ERRORS.has(p.errorCode)) leadershipLag = true;
          else clean = false;
          continue;
        }
        const records = p.records ?? Buffer.alloc(0);
        const { batches, corrupt } = followerBatches(records);
        const r = this.replicas.appendAsFollower(t.topic, p.partitionIndex, batches, records, p.highWatermark, p.logStartOffset);
        if (corrupt || r.errorCode !== ErrorCode.NONE) {
          this.log.warn({ topic: t.topic, partition: p.partitionIndex, leader: this.leader, errorCode: corrupt ? ErrorCode.CORRUPT_MESSAGE : r.errorCode }, 'could not take what the leader sent; fetching it again');
          clean = false;
        }
      }
    }
    if (outOfRange.length > 0) await this.resetOutOfRange(outOfRange);
    if (!clean) return 'backoff';
    return leadershipLag || waitingForLeadership ? 'soon' : 'progress';
  }

  /**
   * Before a partition is fetched at a leader epoch, what this log has that
   * the leader does not (written while it led, never replicated) is cut off:
   * OffsetForLeaderEpoch for this log's latest epoch says where the leader's
   * copy of it ends, as Kafka's follower asks.
   */
  private async truncateNewlyFollowed(): Promise<void> {
    const pending: (Followed & { epoch: number })[] = [];
    for (const f of this.partitions.values()) {
      const key = followedKey(f.topic, f.partition);
      if (this.truncatedAt.get(key) === f.leaderEpoch) continue;
      const epoch = this.replicas.followerLatestEpoch(f.topic, f.partition);
      if (epoch === null) this.truncatedAt.set(key, f.leaderEpoch);
      else pending.push({ ...f, epoch });
    }
    if (pending.length === 0) return;
    const byTopic = new Map<string, OffsetForLeaderEpochRequest['topics'][number]>();
    for (const f of pending) {
      let t = byTopic.get(f.topic);
      if (!t) byTopic.set(f.topic, (t = { topic: f.topic, partitions: [] }));
      t.partitions.push({ partition: f.partition, currentLeaderEpoch: f.leaderEpoch, leaderEpoch: f.epoch });
    }
    const res = await this.ask<OffsetForLeaderEpochResponse, OffsetForLeaderEpochRequest>(
      'OffsetForLeaderEpoch',
      OFFSET_FOR_LEADER_EPOCH_VERSION,
      { replicaId: this.nodeId, topics: [...byTopic.values()] },
      REQUEST_TIMEOUT_MS,
    );
    for (const t of res.topics) {
      for (const p of t.partitions) {
        const key = followedKey(t.topic, p.partition);
        const f = pending.find((x) => x.topic === t.topic && x.partition === p.partition);
        // An error (a leader not there yet): asked again before the next fetch.
        if (!f || p.errorCode !== ErrorCode.NONE || this.partitions.get(key)?.leaderEpoch !== f.leaderEpoch) continue;
        // Not done when the leader's answer was about an epoch this log lacks: asked again, about an older one of ours.
        if (this.replicas.truncateFollowerToLeader(t.topic, p.partition, p.leaderEpoch, p.endOffset, f.epoch)?.done) this.truncatedAt.set(key, f.leaderEpoch);
      }
    }
  }

  /** Asks the leader where its log starts and ends (ListOffsets, as a replica) and moves each out-of-range follower into that range. */
  private async resetOutOfRange(partitions: readonly Followed[]): Promise<void> {
    const ends = async (timestamp: bigint): Promise<Map<string, bigint>> => {
      const byTopic = new Map<string, ListOffsetsRequest['topics'][number]>();
      for (const f of partitions) {
        let t = byTopic.get(f.topic);
        if (!t) byTopic.set(f.topic, (t = { name: f.topic, partitions: [] }));
        t.partitions.push({ partitionIndex: f.partition, currentLeaderEpoch: f.leaderEpoch, timestamp, maxNumOffsets: 1 });
      }
      const res = await this.ask<ListOffsetsResponse, ListOffsetsRequest>(
        'ListOffsets',
        LIST_OFFSETS_VERSION,
        { replicaId: this.nodeId, isolationLevel: 0, topics: [...byTopic.values()], timeoutMs: REQUEST_TIMEOUT_MS },
        REQUEST_TIMEOUT_MS,
      );
      const out = new Map<string, bigint>();
      for (const t of res.topics) for (const p of t.partitions) if (p.errorCode === ErrorCode.NONE) out.set(followedKey(t.name, p.partitionIndex), p.offset);
      return out;
    };
    const [earliest, latest] = [await ends(EARLIEST), await ends(LATEST)];
    for (const f of partitions) {
      const key = followedKey(f.topic, f.partition);
      const start = earliest.get(key);
      const end = latest.get(key);
      if (start === undefined || end === undefined) continue;
      this.log.info({ topic: f.topic, partition: f.partition, leader: this.leader, leaderLogStartOffset: start, leaderLogEndOffset: end }, 'follower out of the leader\'s range; starting over within it');
      this.replicas.resetFollower(f.topic, f.partition, start, end);
    }
  }
}

const followedKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

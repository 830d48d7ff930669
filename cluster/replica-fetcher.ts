/**
 * Followers copying their leaders, as Kafka's replica fetchers do: for every
 * partition this broker is a replica of but does not lead, it fetches from
 * the leader with the Fetch API (its node id as replica id, from its log end)
 * and appends what comes, offsets and bytes as the leader wrote them, so that
 * the replicas' logs are the same bytes. One fetch loop per leader broker,
 * over one connection, for all the partitions that broker leads; the set
 * follows the metadata image.
 *
 * Followers do not join the ISR yet: the leader does not track them, so an
 * acknowledgement never waits for them and a failover never elects them.
 */
import { ErrorCode } from '../wire/errors.js';
import type { FetchRequest } from '../wire/messages/fetch-request.js';
import type { FetchResponse } from '../wire/messages/fetch-response.js';
import { BASE_OFFSET, BATCH_LENGTH, LAST_OFFSET_DELTA, LOG_OVERHEAD, MAGIC, MAGIC_V2, MAX_TIMESTAMP, MIN_BATCH_LENGTH, batchCrcValid } from '../wire/record-batch.js';
import { WireConnection, api } from './kafka-connection.js';
import { endpointFor, type MetadataImage, type MetadataStore } from './metadata-image.js';
import type { FollowerBatch, ReplicaManager } from './replica-manager.js';

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
const FETCH_API = api('Fetch');
const RESPONSE_MAX_BYTES = 10 * 1024 * 1024;
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

  /** Partitions followed, by leader; for tests. */
  followed(): Map<number, string[]> {
    return new Map([...this.loops].map(([leader, l]) => [leader, [...l.partitions.keys()].sort()]));
  }

  private apply(image: MetadataImage): void {
    const wanted = new Map<number, Map<string, Followed>>();
    for (const t of image.topics.values()) {
      for (const p of t.partitions) {
        if (!p.replicas.includes(this.nodeId) || p.leader === this.nodeId || p.leader < 0 || !image.brokers.has(p.leader)) continue;
        let set = wanted.get(p.leader);
        if (!set) wanted.set(p.leader, (set = new Map()));
        set.set(`${t.name}\u0000${p.partition}`, { topic: t.name, partition: p.partition, leaderEpoch: p.leaderEpoch });
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
    while (!this.stopped) {
      try {
        const progressed = await this.fetchOnce();
        failures = 0;
        if (!progressed) await this.pause(backoffMs);
      } catch (err) {
        this.conn?.close();
        this.conn = null;
        if (this.stopped) return;
        if (failures++ === 0) this.log.warn({ leader: this.leader, err: (err as Error).message }, 'fetching from the leader failed; trying again');
        await this.pause(backoffMs);
      }
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

  /** One fetch of every followed partition; false when there was nothing to ask (or only errors to wait out). */
  private async fetchOnce(): Promise<boolean> {
    const asked: Followed[] = [];
    const topics = new Map<string, FetchRequest['topics'][number]>();
    for (const f of this.partitions.values()) {
      const pos = this.replicas.followerPosition(f.topic, f.partition);
      if (!pos) continue;
      asked.push(f);
      let t = topics.get(f.topic);
      if (!t) topics.set(f.topic, (t = { topic: f.topic, topicId: ZERO_UUID, partitions: [] }));
      t.partitions.push({
        partition: f.partition,
        currentLeaderEpoch: f.leaderEpoch,
        fetchOffset: pos.logEndOffset,
        lastFetchedEpoch: -1,
        logStartOffset: pos.logStartOffset,
        partitionMaxBytes: this.opts.partitionMaxBytes ?? 1024 * 1024,
        replicaDirectoryId: ZERO_UUID,
      });
    }
    if (asked.length === 0) return false;
    this.conn ??= await WireConnection.open(this.host, this.port);
    const res = await this.conn.request<FetchResponse, FetchRequest>(FETCH_API, FETCH_VERSION, {
      clusterId: null,
      replicaId: this.nodeId,
      replicaState: { replicaId: this.nodeId, replicaEpoch: -1n },
      maxWaitMs: this.opts.maxWaitMs ?? 500,
      minBytes: 1,
      maxBytes: RESPONSE_MAX_BYTES,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [...topics.values()],
      forgottenTopicsData: [],
      rackId: '',
    });
    if (this.stopped) return true;
    if (res.errorCode !== ErrorCode.NONE) throw new Error(`fetch refused with error ${res.errorCode}`);
    let ok = false;
    for (const t of res.responses) {
      for (const p of t.partitions) {
        if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
          this.replicas.resetFollower(t.topic, p.partitionIndex, p.logStartOffset, p.highWatermark);
          ok = true;
          continue;
        }
        // NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH: the next image says who leads.
        if (p.errorCode !== ErrorCode.NONE) continue;
        ok = true;
        const records = p.records ?? Buffer.alloc(0);
        const { batches, corrupt } = followerBatches(records);
        const r = this.replicas.appendAsFollower(t.topic, p.partitionIndex, batches, records, p.highWatermark);
        if (corrupt || r.errorCode !== ErrorCode.NONE) {
          this.log.warn({ topic: t.topic, partition: p.partitionIndex, leader: this.leader, errorCode: corrupt ? ErrorCode.CORRUPT_MESSAGE : r.errorCode }, 'could not take what the leader sent; fetching it again');
          ok = false;
        }
      }
    }
    return ok;
  }
}

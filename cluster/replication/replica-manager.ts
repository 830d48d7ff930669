/**
 * The partitions this broker holds and the way into their logs. Handlers reach
 * storage only through here: it maps (topic, partition) to a partition log,
 * checks leadership against the current metadata image, appends, and moves the
 * high watermark.
 *
 * With the local metadata store the broker leads every partition and the ISR is
 * itself, so an append is committed as soon as it is written: the high
 * watermark follows the log end at once, and acks=1 and acks=-1 both answer
 * right after the append (min.insync.replicas never refuses a partition whose
 * every replica is in the ISR: see appendRecords).
 */
import { ErrorCode } from '../../wire/errors.js';
import { diskSpace } from '../../storage/disk-space.js';
import type { LogManager } from '../../storage/log-manager.js';
import { type ActiveProducer, appendInfoFor, CorruptRecordError, type FileRange, type PartitionLog, StorageError } from '../../storage/log.js';
import { ConcurrentChangeError, UnknownTopicError, type MetadataImage, type MetadataStore, type PartitionState } from '../metadata/metadata-image.js';
import { Partition, type FetchWaiter, type ReplicationWaiter, type VerificationGuard } from './partition.js';

export type { VerificationGuard };
import { INTERNAL_TOPICS } from '../metadata/topic-names.js';
import { GROUP_METADATA_TOPIC } from '../coordinator/partition-for.js';

/** The little of a logger the manager needs; a pino logger fits. */
export interface ReplicaLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** replica.lag.time.max.ms: Kafka's default. */
export const DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000;

/** How long a transaction marker waits for the in-sync replicas (Kafka's request.timeout.ms default). */
const MARKER_REPLICATION_TIMEOUT_MS = 30_000;

/** A whole batch fetched from a leader: its offsets and where it sits in the fetched bytes. */
export interface FollowerBatch {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
  readonly position: number;
  readonly size: number;
}

/** One partition's answer to an append, in the shape of a Produce partition response. */
export interface PartitionAppendResult {
  errorCode: number;
  /** First offset assigned; -1n on error. */
  baseOffset: bigint;
  /** The broker time stamped on the batches on a LogAppendTime topic, else -1n. */
  logAppendTimeMs: bigint;
  /** -1n when the partition's log is not known. */
  logStartOffset: bigint;
  recordErrors: { batchIndex: number; message: string }[];
  errorMessage: string | null;
  /** After a successful append not yet on every ISR member: the high watermark at which it will be (see waitForReplication). */
  replicatedAt?: bigint;
}

export function appendError(errorCode: number, errorMessage: string | null = null, logStartOffset = -1n): PartitionAppendResult {
  return { errorCode, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset, recordErrors: [], errorMessage };
}

/** One partition's answer to DeleteRecords: its new log start offset, or -1n with the error. */
export interface DeleteRecordsResult {
  errorCode: number;
  lowWatermark: bigint;
}

/** What DescribeLogDirs reports of one log directory. */
export interface LogDirDescription {
  /** Absolute path of the directory. */
  readonly logDir: string;
  /** Why the directory is offline; null while it is online. */
  readonly failure: string | null;
  readonly partitions: readonly { readonly topic: string; readonly partition: number; readonly sizeBytes: number; readonly isFuture: boolean; readonly offsetLag: bigint }[];
  /** Of the file system holding the directory; -1n when it cannot be asked. */
  readonly totalBytes: bigint;
  readonly usableBytes: bigint;
}

/**
 * How far a fetch may read: a follower to the log end, a read_uncommitted
 * consumer to the high watermark, a read_committed one to the last stable offset.
 */
export type FetchIsolation = 'logEnd' | 'highWatermark' | 'txnCommitted';

/** What one partition of a fetch asks to read. */
export interface PartitionRead {
  readonly fetchOffset: bigint;
  /** The partition's share of the response: min(partition_max_bytes, what the response has left). */
  readonly maxBytes: number;
  /** -1 when the fetcher gave none (before Fetch v9). */
  readonly currentLeaderEpoch: number;
  /** Return the first batch even when it is larger than maxBytes (KIP-74). */
  readonly minOneMessage: boolean;
}

/** An aborted transaction overlapping a read_committed read. */
export interface AbortedTransaction {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
}

/**
 * One partition's read, in the shape of a Fetch partition response. On error
 * the offsets are -1n and there are no records.
 */
export interface LogReadResult {
  errorCode: number;
  /** Whole batches, valid until the log next changes shape: copy them before yielding. */
  records: FileRange[];
  size: number;
  highWatermark: bigint;
  lastStableOffset: bigint;
  logStartOffset: bigint;
  /**
   * null unless the read was read_committed; then the aborted transactions
   * overlapping the returned range (up to the last stable offset), which the
   * client uses to drop aborted records.
   */
  abortedTransactions: AbortedTransaction[] | null;
}

export function readError(errorCode: number): LogReadResult {
  return { errorCode, records: [], size: 0, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, abortedTransactions: null };
}

/** Why a parked fetch resumed. */
export type FetchWaitOutcome = 'satisfied' | 'timeout' | 'shutdown';

/** ListOffsets targets that are not times (Kafka's ListOffsetsRequest constants). */
export const SpecialTimestamp = {
  LATEST: -1n,
  EARLIEST: -2n,
  MAX_TIMESTAMP: -3n,
  EARLIEST_LOCAL: -4n,
  LATEST_TIERED: -5n,
  EARLIEST_PENDING_UPLOAD: -6n,
} as const;

/**
 * One partition's answer to ListOffsets, in the shape of its partition
 * response: -1 for each of timestamp, offset and leaderEpoch that there is
 * none of (always all three on error).
 */
export interface OffsetForTimestampResult {
  errorCode: number;
  timestamp: bigint;
  offset: bigint;
  leaderEpoch: number;
}

/** One partition's answer to OffsetForLeaderEpoch; -1 and -1n where Kafka answers UNDEFINED or on error. */
export interface EpochEndOffsetResult {
  errorCode: number;
  leaderEpoch: number;
  endOffset: bigint;
}

const NOTHING_FOUND = { timestamp: -1n, offset: -1n, leaderEpoch: -1 } as const;

function offsetError(errorCode: number): OffsetForTimestampResult {
  return { errorCode, ...NOTHING_FOUND };
}

function partitionKey(topic: string, partition: number): string {
  return `${partition}:${topic}`;
}

/** How often, at most, failed ISR changes are reported while they go on failing. */
const ISR_FAILURE_REPORT_INTERVAL_MS = 10_000;

export class ReplicaManager {
  private unsubscribe: (() => void) | null = null;
  /**
   * The state of each partition beside its log (see partition.ts): as leader,
   * its followers and ISR change; the requests waiting on it. By
   * partitionKey; kept while the partition is hosted or something waits on it.
   */
  private readonly partitions = new Map<string, Partition>();
  private fetchWaitersClosed = false;
  /** Told of every transaction marker written to a partition of __consumer_offsets (see writeMarkers). */
  onOffsetsTxnMarker: ((partition: number, producerId: bigint, commit: boolean) => void) | null = null;
  /**
   * The topic id behind the logs of each topic this broker holds, by name: a
   * topic deleted and created again under its name comes back with a new id,
   * and the logs of the old one must not serve it.
   */
  private readonly hostedTopicIds = new Map<string, string>();
  /**
   * `topicId:partition` of every replica this broker held when it started
   * (the first image): their logs should be on disk, so none is created empty
   * while a log directory is offline (see LogManager.getOrCreateMany).
   */
  private hostedAtStart: Set<string> | null = null;
  /** The replicas last reported to the metadata store as unable to serve (`topicId:partition`), sorted. */
  private reportedOffline = '';
  private replicationClosed = false;
  /** ISR changes the metadata store did not take since the last report of them. */
  private isrFailures = { count: 0, reportedAtMs: 0, last: '' };
  private isrTimer: NodeJS.Timeout | null = null;
  private readonly replicaLagTimeMaxMs: number;
  private readonly now: () => number;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly logs: LogManager,
    private readonly log: ReplicaLogger,
    opts: { replicaLagTimeMaxMs?: number; now?: () => number } = {},
  ) {
    this.replicaLagTimeMaxMs = opts.replicaLagTimeMaxMs ?? DEFAULT_REPLICA_LAG_TIME_MAX_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Creates the logs of every partition this broker holds in the current
   * image, and from then on of every partition that a new image adds.
   * Example: after start() on a data directory whose metadata lists topic
   * 'orders' with 2 partitions, logFor('orders', 1) is a log.
   */
  start(): this {
    if (this.unsubscribe) return this;
    this.removeStrayLogs(this.metadata.image());
    this.applyImage(this.metadata.image());
    this.unsubscribe = this.metadata.subscribe((image) => this.applyImage(image));
    // Kafka checks for lagging followers at half replica.lag.time.max.ms.
    this.isrTimer = setInterval(() => this.shrinkIsrs(), Math.max(10, this.replicaLagTimeMaxMs / 2));
    this.isrTimer.unref();
    return this;
  }

  /** Stops following the metadata; the log manager is closed by its owner. */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.isrTimer) clearInterval(this.isrTimer);
    this.isrTimer = null;
    this.releaseFetchWaiters();
    this.releaseReplicationWaiters();
  }

  /** The log of a partition this broker has opened, or undefined. */
  logFor(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(topic, partition);
  }

  /**
   * Appends `records` (one Produce partition's bytes) to the partition's log as
   * its leader. Never throws: every problem is the partition's error code.
   * `acks` is checked by the caller (-1, 0 or 1). `origin` 'coordinator' is
   * for the group and transaction coordinators' own records, which storage
   * checks as Kafka checks AppendOrigin.COORDINATOR (no sequence numbers).
   *
   * With acks=-1 the ISR must hold at least min.insync.replicas replicas, or
   * all of them when the partition has fewer replicas than that (Kafka's
   * Partition.effectiveMinIsr, so min.insync.replicas=2 on a partition with
   * one replica appends as usual, as Kafka 4.0 does); otherwise nothing is
   * appended and the answer is NOT_ENOUGH_REPLICAS with the log start
   * offset and no message, as Kafka answers it. acks=0 and 1 never wait for
   * the ISR. Past that check every accepted value is satisfied once the
   * append returns (a wider ISR's wait for followers is not built yet).
   *
   * Example: appendRecords('orders', 0, <batch of 3 records>, -1) on a new log
   * -> { errorCode: 0, baseOffset: 0n, logStartOffset: 0n, ... }, and the high
   * watermark becomes 3n. With replicas [1, 2, 3], ISR [1] and
   * min.insync.replicas 2: acks -1 -> NOT_ENOUGH_REPLICAS, acks 1 -> appended.
   */
  appendRecords(
    topic: string,
    partition: number,
    records: Buffer,
    acks: number,
    origin: 'client' | 'coordinator' = 'client',
    verificationGuard: VerificationGuard | null = null,
  ): PartitionAppendResult {
    if (verificationGuard !== null && !this.claimTransactionVerification(topic, partition, verificationGuard)) {
      return appendError(ErrorCode.INVALID_TXN_STATE, 'The transaction ended while this partition was being verified with its coordinator; the producer must abort it.');
    }
    const state = this.partitionState(topic, partition);
    if (!state) return appendError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    if (state.leader !== this.nodeId) return appendError(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    // A stopping broker waits for no follower any more (releaseReplicationWaiters): an acks=-1 batch that
    // followers would have to copy could only be answered with an error while it stays in the log, so
    // none is written. With the ISR this broker alone, nothing waits: it is written and answered.
    if (acks === -1 && this.replicationClosed && this.needsFollowers(topic, partition, state)) return appendError(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    let log: PartitionLog;
    try {
      log = this.openLog(topic, partition);
    } catch (err) {
      this.log.warn({ topic, partition, err }, 'cannot open partition log');
      return appendError(ErrorCode.KAFKA_STORAGE_ERROR, (err as Error).message);
    }
    // An offline log answers KAFKA_STORAGE_ERROR from the append below, before any ISR question.
    if (acks === -1 && !log.isOffline) {
      const minIsr = Math.min(log.config.minInSyncReplicas, state.replicas.length);
      if (state.isr.length < minIsr) {
        this.log.warn(
          { topic, partition, isr: state.isr, minInSyncReplicas: minIsr },
          `The size of the current ISR ${state.isr.length} is insufficient to satisfy the min.isr requirement of ${minIsr}`,
        );
        return appendError(ErrorCode.NOT_ENOUGH_REPLICAS, null, log.logStartOffset);
      }
    }
    try {
      // `records` is a view into the request frame, which nothing reads after the handler.
      const result = log.append(records, state.leaderEpoch, true, origin);
      if (!result.ok) {
        return {
          errorCode: result.errorCode,
          baseOffset: -1n,
          logAppendTimeMs: -1n,
          logStartOffset: result.logStartOffset,
          recordErrors: result.recordErrors,
          errorMessage: result.message,
        };
      }
      // Committed once every ISR member has it: at once when the ISR is this broker alone.
      if (!this.maybeAdvanceHighWatermark(topic, partition, { state, log })) this.wakeFetches(topic, partition);
      const appended: PartitionAppendResult = {
        errorCode: ErrorCode.NONE,
        baseOffset: result.firstOffset,
        logAppendTimeMs: result.logAppendTime,
        logStartOffset: result.logStartOffset,
        recordErrors: [],
        errorMessage: null,
      };
      if (log.highWatermark < log.logEndOffset) appended.replicatedAt = log.logEndOffset;
      return appended;
    } catch (err) {
      if (err instanceof StorageError) {
        return appendError(ErrorCode.KAFKA_STORAGE_ERROR, err.message, log.logStartOffset);
      }
      throw err;
    }
  }

  /**
   * Writes one transaction marker (COMMIT or ABORT control batch) to each of
   * `partitions` as their leader, as Kafka's WriteTxnMarkers does on the
   * partition leader: the marker closes the producer's transaction there,
   * moves the last stable offset, and on an abort records the transaction in
   * the aborted-transaction index. Resolves one error code per partition,
   * once the marker is on every in-sync replica (as acks=all); never throws. After a marker lands in a partition of __consumer_offsets,
   * `onOffsetsTxnMarker` learns of it, so the group coordinator can make the
   * transaction's offsets visible or drop them.
   *
   * Example: writeMarkers({ producerId: 7n, producerEpoch: 0, coordinatorEpoch:
   * 1, commit: true, partitions: [{ topic: 'orders', partition: 0 }] }) ->
   * [{ topic: 'orders', partition: 0, errorCode: 0 }], and read_committed
   * fetches of orders-0 then read past producer 7's records.
   */
  async writeMarkers(req: {
    producerId: bigint;
    producerEpoch: number;
    coordinatorEpoch: number;
    commit: boolean;
    /** 2 for a transaction of transactions v2 (its marker carries the bumped epoch); 0 when absent. */
    transactionVersion?: number;
    partitions: readonly { topic: string; partition: number }[];
  }): Promise<{ topic: string; partition: number; errorCode: number }[]> {
    // As acks=all: a marker counts once every in-sync replica has it.
    return Promise.all(
      req.partitions.map(async ({ topic, partition }) => {
        let errorCode = this.writeMarker(topic, partition, req);
        if (errorCode === ErrorCode.NONE) {
          const log = this.logs.get(topic, partition);
          errorCode = log ? await this.waitForReplication(topic, partition, log.logEndOffset, MARKER_REPLICATION_TIMEOUT_MS) : ErrorCode.NOT_LEADER_OR_FOLLOWER;
        }
        return { topic, partition, errorCode };
      }),
    );
  }

  private writeMarker(
    topic: string,
    partition: number,
    m: { producerId: bigint; producerEpoch: number; coordinatorEpoch: number; commit: boolean; transactionVersion?: number },
  ): number {
    // A verification under way was for the transaction this marker ends: its batch must not open another.
    // Under transactions v2 the next transaction's first batch, at the marker's (bumped) epoch, may have been
    // verified before the marker came: that verification stands.
    this.partitionIfAny(topic, partition)?.voidVerification(m.producerId, m.producerEpoch, m.transactionVersion ?? 0);
    const state = this.partitionState(topic, partition);
    if (!state) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    if (state.leader !== this.nodeId) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    // As an acks=-1 append on a stopping broker: nothing is written that could not be waited for.
    if (this.replicationClosed && this.needsFollowers(topic, partition, state)) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    let log: PartitionLog;
    try {
      log = this.openLog(topic, partition);
    } catch (err) {
      this.log.warn({ topic, partition, err }, 'cannot open partition log');
      return ErrorCode.KAFKA_STORAGE_ERROR;
    }
    // As an acks=all append: refused before anything is written when too few replicas are in sync.
    if (state.isr.length < Math.min(log.config.minInSyncReplicas, state.replicas.length)) return ErrorCode.NOT_ENOUGH_REPLICAS;
    try {
      const result = log.appendControlMarker(m, state.leaderEpoch);
      if (!result.ok) return result.errorCode;
    } catch (err) {
      if (err instanceof StorageError) return ErrorCode.KAFKA_STORAGE_ERROR;
      throw err;
    }
    if (!this.maybeAdvanceHighWatermark(topic, partition)) this.wakeFetches(topic, partition);
    if (topic === GROUP_METADATA_TOPIC) this.onOffsetsTxnMarker?.(partition, m.producerId, m.commit);
    return ErrorCode.NONE;
  }

  /**
   * Starts verifying, with the transaction's coordinator, that a
   * transactional batch of `producerId` may go to the partition (KIP-890):
   * null when the partition's log already has that producer's transaction
   * open at `producerEpoch` (an earlier batch was verified), else a guard to
   * hand to appendRecords once verified. A transaction marker for the
   * producer written in between voids the guard, so a batch verified
   * against a transaction that has since ended never opens a new one
   * (Kafka's VerificationGuard). One guard per partition and producer: a
   * newer verification replaces an older one.
   *
   * Example: startTransactionVerification('orders', 0, 7n, 0) -> guard g;
   * appendRecords('orders', 0, batch, -1, 'client', g) appends; had a
   * marker of producer 7 come first, it answers INVALID_TXN_STATE.
   */
  startTransactionVerification(topic: string, partition: number, producerId: bigint, producerEpoch: number, transactionV2 = false): VerificationGuard | null {
    const log = this.logs.get(topic, partition);
    if (log && !log.isOffline && log.hasOngoingTransaction(producerId, producerEpoch)) return null;
    return this.partitionFor(topic, partition).startVerification(producerId, producerEpoch, transactionV2);
  }

  /**
   * Ends a verification that succeeded: true when no marker voided `guard`
   * meanwhile, so the batch may be appended now (in the same turn of the
   * event loop); false when it must be refused.
   */
  claimTransactionVerification(topic: string, partition: number, guard: VerificationGuard): boolean {
    return this.partitionIfAny(topic, partition)?.claimVerification(guard) ?? false;
  }

  /** Forgets a guard whose verification failed (its batch is not appended). */
  abandonTransactionVerification(topic: string, partition: number, guard: VerificationGuard): void {
    const p = this.partitionIfAny(topic, partition);
    p?.abandonVerification(guard);
    if (p) this.forgetIfIdle(p);
  }

  /**
   * The producers with state in one partition, for DescribeProducers, as its
   * leader: the partition's error code, or the list. Never throws.
   */
  describeProducers(topic: string, partition: number): { errorCode: number; producers: ActiveProducer[] } {
    const state = this.partitionState(topic, partition);
    if (!state) return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, producers: [] };
    if (state.leader !== this.nodeId) return { errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, producers: [] };
    const log = this.logs.get(topic, partition);
    if (!log || log.isOffline) return { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, producers: [] };
    return { errorCode: ErrorCode.NONE, producers: log.activeProducers() };
  }

  /**
   * DeleteRecords on one partition as its leader: moves the log start offset
   * up to `offset` (-1n: the high watermark), never past the high watermark.
   * Never throws. Internal topics refuse it, and so do topics whose
   * cleanup.policy lacks `delete`, as in Kafka.
   *
   * Example: a log of 10 records, high watermark 10n: deleteRecords('t', 0, 3n)
   * -> { errorCode: 0, lowWatermark: 3n }; then deleteRecords('t', 0, 2n) ->
   * lowWatermark 3n (never backwards); deleteRecords('t', 0, 11n) -> errorCode
   * OFFSET_OUT_OF_RANGE, lowWatermark -1n.
   */
  deleteRecords(topic: string, partition: number, offset: bigint): DeleteRecordsResult {
    const fail = (errorCode: number): DeleteRecordsResult => ({ errorCode, lowWatermark: -1n });
    const state = this.partitionState(topic, partition);
    if (!state) return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    if (INTERNAL_TOPICS.has(topic)) return fail(ErrorCode.INVALID_TOPIC_EXCEPTION);
    if (state.leader !== this.nodeId) return fail(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    let log: PartitionLog;
    try {
      log = this.openLog(topic, partition);
    } catch (err) {
      this.log.warn({ topic, partition, err }, 'cannot open partition log');
      return fail(ErrorCode.KAFKA_STORAGE_ERROR);
    }
    if (!log.config.cleanupPolicy.includes('delete')) return fail(ErrorCode.POLICY_VIOLATION);
    const target = offset === -1n ? log.highWatermark : offset;
    if (target < 0n) return fail(ErrorCode.OFFSET_OUT_OF_RANGE);
    try {
      const result = log.deleteRecordsBefore(target);
      return result.ok ? { errorCode: ErrorCode.NONE, lowWatermark: result.lowWatermark } : fail(result.errorCode);
    } catch (err) {
      if (err instanceof StorageError) return fail(ErrorCode.KAFKA_STORAGE_ERROR);
      throw err;
    }
  }

  /**
   * Every log directory with the logs in it, for DescribeLogDirs: each
   * partition's size, a future log (a move under way) marked with how far it
   * is behind, the file system's total and usable bytes (-1n when they cannot
   * be asked); an offline directory with its failure and nothing else.
   * Example: [{ logDir: '/d1', failure: null, partitions: [{ topic: 'orders',
   * partition: 0, sizeBytes: 720, isFuture: false, offsetLag: 0n }], totalBytes: ..., usableBytes: ... }].
   */
  describeLogDirs(): LogDirDescription[] {
    return this.logs.describeDirs().map((d) => {
      const space = d.failure === null ? diskSpace(d.path) : null;
      return {
        logDir: d.path,
        failure: d.failure,
        partitions: d.logs.map((l) => ({ topic: l.topic, partition: l.partition, sizeBytes: l.size, isFuture: l.isFuture, offsetLag: l.offsetLag })),
        totalBytes: space?.totalBytes ?? -1n,
        usableBytes: space?.usableBytes ?? -1n,
      };
    });
  }

  /**
   * AlterReplicaLogDirs for one partition, with the error code Kafka's
   * ReplicaManager answers: INVALID_TOPIC_EXCEPTION for a name too long to
   * make the future directory's name; LOG_DIR_NOT_FOUND when `path` is not
   * (the absolute path of) one of log.dirs; KAFKA_STORAGE_ERROR when that
   * directory, the partition's own directory or (to start a move) any
   * directory is offline; UNKNOWN_TOPIC_OR_PARTITION for a partition the
   * metadata does not have; REPLICA_NOT_AVAILABLE for one with no log on this
   * broker (the directory is remembered for when it gets one); NONE when the
   * move started, is under way, or the log already is there.
   */
  alterReplicaLogDir(topic: string, partition: number, path: string): number {
    // `<topic>-<partition>.<32 hex>-future` must fit a file name.
    if (`${topic}-${partition}`.length + 1 + 32 + '-future'.length > 255) return ErrorCode.INVALID_TOPIC_EXCEPTION;
    const dir = this.logs.logDirs().find((d) => d.path === path);
    if (!dir) return ErrorCode.LOG_DIR_NOT_FOUND;
    if (dir.failure !== null) return ErrorCode.KAFKA_STORAGE_ERROR;
    const hosted = this.logs.get(topic, partition) !== undefined;
    if (!hosted && !this.partitionState(topic, partition)) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    let outcome;
    try {
      outcome = this.logs.moveLog(topic, partition, path);
    } catch (err) {
      if (err instanceof StorageError) return ErrorCode.KAFKA_STORAGE_ERROR;
      throw err;
    }
    switch (outcome) {
      case 'unknown-dir':
        return ErrorCode.LOG_DIR_NOT_FOUND;
      case 'offline-dir':
      case 'offline-log':
        return ErrorCode.KAFKA_STORAGE_ERROR;
      case 'preferred':
        return ErrorCode.REPLICA_NOT_AVAILABLE;
      default:
        return ErrorCode.NONE;
    }
  }

  /**
   * Reads one partition for a fetch, as Kafka's ReplicaManager.readFromLog
   * reads one partition. Never throws: every problem is the partition's error
   * code. Offsets are taken before the read, so an append racing it can only
   * make the answer conservative.
   *
   * Errors, in Kafka's order: UNKNOWN_TOPIC_OR_PARTITION (not in the
   * metadata), NOT_LEADER_OR_FOLLOWER (not a replica here, or not the leader
   * when `fetchOnlyLeader`), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (the
   * fetcher's leader epoch is older / newer than ours), KAFKA_STORAGE_ERROR (the
   * log cannot be opened or is offline), OFFSET_OUT_OF_RANGE (below the log
   * start or above the log end), UNKNOWN_SERVER_ERROR (a negative byte limit
   * where there is data, which Kafka's segment read refuses).
   *
   * Example: batches 0..2 (100 bytes) and 3..5 (100 bytes), high watermark 6:
   * readForFetch('t', 0, { fetchOffset: 1n, maxBytes: 150, currentLeaderEpoch:
   * -1, minOneMessage: true }, 'highWatermark', true) -> errorCode 0, one range
   * of 100 bytes, highWatermark 6n; with fetchOffset 6n no records; with 7n
   * OFFSET_OUT_OF_RANGE and every offset -1n.
   */
  readForFetch(topic: string, partition: number, read: PartitionRead, isolation: FetchIsolation, fetchOnlyLeader: boolean): LogReadResult {
    const state = this.partitionState(topic, partition);
    if (!state) return readError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    if (!state.replicas.includes(this.nodeId)) return readError(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    if (read.currentLeaderEpoch >= 0) {
      if (state.leaderEpoch > read.currentLeaderEpoch) return readError(ErrorCode.FENCED_LEADER_EPOCH);
      if (state.leaderEpoch < read.currentLeaderEpoch) return readError(ErrorCode.UNKNOWN_LEADER_EPOCH);
    }
    if (fetchOnlyLeader && state.leader !== this.nodeId) return readError(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    let log: PartitionLog;
    try {
      log = this.openLog(topic, partition);
    } catch (err) {
      this.log.warn({ topic, partition, err }, 'cannot open partition log');
      return readError(ErrorCode.KAFKA_STORAGE_ERROR);
    }
    if (log.isOffline) return readError(ErrorCode.KAFKA_STORAGE_ERROR);
    const highWatermark = log.highWatermark;
    const lastStableOffset = log.lastStableOffset;
    const logStartOffset = log.logStartOffset;
    const maxOffset = isolation === 'logEnd' ? undefined : isolation === 'highWatermark' ? highWatermark : lastStableOffset;
    const { fetchOffset } = read;
    if (read.maxBytes < 0 && fetchOffset >= logStartOffset && fetchOffset < (maxOffset ?? log.logEndOffset)) {
      return readError(ErrorCode.UNKNOWN_SERVER_ERROR);
    }
    try {
      const r = log.read(fetchOffset, Math.max(0, read.maxBytes), { minOneMessage: read.minOneMessage, ...(maxOffset === undefined ? {} : { maxOffset }) });
      if (!r.ok) return readError(r.errorCode);
      // The read stays within one segment: aborted transactions past its end concern later reads.
      let abortedTransactions: AbortedTransaction[] | null = null;
      if (isolation === 'txnCommitted') {
        const segmentEnd = log.segmentEndOffset(fetchOffset);
        abortedTransactions = r.records.length === 0 ? [] : log.collectAbortedTransactions(fetchOffset, segmentEnd < lastStableOffset ? segmentEnd : lastStableOffset);
      }
      return {
        errorCode: ErrorCode.NONE,
        records: r.records,
        size: r.size,
        highWatermark,
        lastStableOffset,
        logStartOffset,
        abortedTransactions,
      };
    } catch (err) {
      this.log.warn({ topic, partition, err }, 'cannot read partition log');
      return readError(ErrorCode.KAFKA_STORAGE_ERROR);
    }
  }

  /**
   * Whether a parked fetch of this partition should stop waiting (Kafka's
   * DelayedFetch.tryComplete for one partition): 'complete' when the partition
   * went wrong (no longer led here, fenced, offline) or when the fetch offset
   * and the readable end lie in different segments, else the bytes of whole
   * batches readable from the fetch offset, at most `maxBytes`.
   *
   * Example: a fetch parked at offset 6 (the high watermark) of a log to
   * which a 100-byte batch 6..8 was just appended: fetchableBytes('t', 0, 6n,
   * 1 << 20, -1, 'highWatermark', true) -> 100.
   */
  fetchableBytes(
    topic: string,
    partition: number,
    fetchOffset: bigint,
    maxBytes: number,
    currentLeaderEpoch: number,
    isolation: FetchIsolation,
    fetchOnlyLeader: boolean,
  ): number | 'complete' {
    const state = this.partitionState(topic, partition);
    if (!state || !state.replicas.includes(this.nodeId)) return 'complete';
    if (currentLeaderEpoch >= 0 && state.leaderEpoch !== currentLeaderEpoch) return 'complete';
    if (fetchOnlyLeader && state.leader !== this.nodeId) return 'complete';
    const log = this.logs.get(topic, partition);
    if (!log || log.isOffline) return 'complete';
    const end = isolation === 'logEnd' ? log.logEndOffset : isolation === 'highWatermark' ? log.highWatermark : log.lastStableOffset;
    if (fetchOffset >= end || fetchOffset < log.logStartOffset) return 0;
    // Readable data beyond the fetch offset's segment: a read would stop at that segment's end, so answer now.
    const bases = log.segmentBaseOffsets();
    if (segmentOf(bases, fetchOffset) !== segmentOf(bases, end - 1n)) return 'complete';
    try {
      const r = log.read(fetchOffset, Math.max(0, maxBytes), { maxOffset: end, minOneMessage: true });
      return r.ok ? Math.min(r.size, Math.max(0, maxBytes)) : 0;
    } catch {
      return 'complete';
    }
  }

  /**
   * Parks a fetch until `tryComplete` says it has enough, `maxWaitMs` passes,
   * or the broker shuts down. `tryComplete` runs once now and then after every
   * append to one of `partitions`; it must be cheap and must not throw (a
   * throw counts as complete). Nothing polls: the only timer is the one for
   * maxWaitMs, cleared when the wait ends.
   *
   * Example: awaitFetchable([{ topic: 't', partition: 0 }], () => bytes() >= 1,
   * 500) resolves 'satisfied' right after an append to t-0 that makes bytes()
   * 1 or more, else 'timeout' after 500 ms.
   */
  awaitFetchable(partitions: readonly { topic: string; partition: number }[], tryComplete: () => boolean, maxWaitMs: number): Promise<FetchWaitOutcome> {
    if (this.fetchWaitersClosed) return Promise.resolve('shutdown');
    if (safeTry(tryComplete)) return Promise.resolve('satisfied');
    if (maxWaitMs <= 0) return Promise.resolve('timeout');
    return new Promise((resolve) => {
      const parts = [...new Set(partitions.map((p) => this.partitionFor(p.topic, p.partition)))];
      let done = false;
      const waiter: FetchWaiter = {
        tryComplete,
        finish: (outcome) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          for (const p of parts) {
            p.fetchWaiters.delete(waiter);
            this.forgetIfIdle(p);
          }
          resolve(outcome);
        },
      };
      const timer = setTimeout(() => waiter.finish('timeout'), Math.min(maxWaitMs, 2147483647));
      for (const p of parts) p.fetchWaiters.add(waiter);
    });
  }

  /**
   * A follower's fetch reached this broker, its leader: the fetch offset is
   * the follower's log end, as in Kafka's updateFollowerFetchState. The
   * follower is caught up when it has everything the leader had then, or at
   * its previous fetch; one caught up to the high watermark (and into this
   * leader epoch) joins the ISR; the high watermark then moves to what every
   * ISR member has. A fetch from a non-replica, or to a non-leader, changes
   * nothing.
   */
  recordFollowerFetch(topic: string, partition: number, replicaId: number, fetchOffset: bigint, currentLeaderEpoch: number): void {
    const state = this.partitionState(topic, partition);
    if (!state || state.leader !== this.nodeId || replicaId === this.nodeId || !state.replicas.includes(replicaId)) return;
    // Only a fetch this leader answers counts: at its epoch, within its log (Kafka updates after a good read).
    if (currentLeaderEpoch !== state.leaderEpoch) return;
    const log = this.logs.get(topic, partition);
    if (!log || log.isOffline || fetchOffset > log.logEndOffset || fetchOffset < log.logStartOffset) return;
    const p = this.partitionFor(topic, partition);
    p.updateFollowerFetchState(replicaId, fetchOffset, log.logEndOffset, this.now());
    if (!state.isr.includes(replicaId) && this.metadata.image().brokers.has(replicaId)) {
      const epochStart = log.leaderEpochs.epochEntry(state.leaderEpoch)?.startOffset ?? 0n;
      if (fetchOffset >= log.highWatermark && fetchOffset >= epochStart) this.proposeIsr(p, state, [...state.isr, replicaId], 'caught up');
    }
    this.maybeAdvanceHighWatermark(topic, partition);
  }

  /** Answers every acks=-1 append still waiting (NOT_LEADER_OR_FOLLOWER), and every later one at once: the broker is stopping. */
  releaseReplicationWaiters(): void {
    this.replicationClosed = true;
    for (const p of [...this.partitions.values()]) this.finishReplicationWaiters(p, () => ErrorCode.NOT_LEADER_OR_FOLLOWER);
  }

  /**
   * Resolves with the error code of an acks=-1 append once the high
   * watermark reaches `requiredOffset` (the append's replicatedAt): NONE, or
   * NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
   * min.insync.replicas meanwhile (as Kafka's DelayedProduce checks it);
   * NOT_LEADER_OR_FOLLOWER when leadership moves first; REQUEST_TIMED_OUT
   * after `timeoutMs`.
   */
  waitForReplication(topic: string, partition: number, requiredOffset: bigint, timeoutMs: number): Promise<number> {
    if (this.replicationClosed) return Promise.resolve(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const verdict = this.replicationVerdict(topic, partition, requiredOffset);
    if (verdict !== null) return Promise.resolve(verdict);
    const p = this.partitionFor(topic, partition);
    return new Promise((resolve) => {
      const timer = setTimeout(() => w.finish(ErrorCode.REQUEST_TIMED_OUT), Math.max(0, timeoutMs));
      const w: ReplicationWaiter = {
        requiredOffset,
        finish: (code) => {
          clearTimeout(timer);
          p.replicationWaiters.delete(w);
          this.forgetIfIdle(p);
          resolve(code);
        },
      };
      p.replicationWaiters.add(w);
    });
  }

  /** The answer for an acks=-1 append now, or null while it must wait. */
  private replicationVerdict(topic: string, partition: number, requiredOffset: bigint): number | null {
    const state = this.partitionState(topic, partition);
    if (!state || state.leader !== this.nodeId) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    const log = this.logs.get(topic, partition);
    if (!log) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    if (log.highWatermark < requiredOffset) return null;
    const minIsr = Math.min(log.config.minInSyncReplicas, state.replicas.length);
    return state.isr.length < minIsr ? ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND : ErrorCode.NONE;
  }

  private finishReplicationWaiters(p: Partition, verdict: (w: ReplicationWaiter) => number | null): void {
    for (const w of [...p.replicationWaiters]) {
      const code = verdict(w);
      if (code !== null) w.finish(code);
    }
  }

  /**
   * As leader: moves the high watermark to the least log end among the ISR
   * and any members being added to it (this broker's own included), never
   * back, and answers what waited for it. True when it woke the partition's
   * parked fetches.
   */
  private maybeAdvanceHighWatermark(topic: string, partition: number, known?: { state: PartitionState; log: PartitionLog }): boolean {
    const state = known?.state ?? this.partitionState(topic, partition);
    if (!state || state.leader !== this.nodeId) return false;
    const log = known?.log ?? this.logs.get(topic, partition);
    if (!log || log.isOffline) return false;
    const p = this.partitionIfAny(topic, partition);
    let hw = log.logEndOffset;
    // The usual case of a broker on its own: the ISR is this broker, nothing pending, nobody waiting.
    if (state.isr.length > 1 || p?.needsFollowers) {
      if (!p) return false;
      hw = p.highWatermarkCandidate(state, this.nodeId, hw);
    }
    let woke = false;
    if (hw > log.highWatermark) {
      try {
        log.updateHighWatermark(hw);
      } catch (err) {
        if (!(err instanceof StorageError)) throw err;
        return false;
      }
      this.wakeFetches(topic, partition);
      woke = true;
    }
    if (p && p.replicationWaiters.size > 0) this.finishReplicationWaiters(p, (w) => this.replicationVerdict(topic, partition, w.requiredOffset));
    return woke;
  }

  /**
   * Asks the metadata store for a new ISR of a partition this broker leads,
   * made from the ISR it has now; one change at a time per partition (see
   * Partition.beginIsrChange). The proposal counts for the high watermark
   * until the image shows it or the leader epoch moves, also when the
   * store's answer was lost (the write may have landed). One the store did
   * not take is asked again at the next chance after a backoff; one it
   * refused because the partition changed meanwhile, at the next chance,
   * from the new state.
   */
  private proposeIsr(p: Partition, state: PartitionState, isr: number[], why: string): void {
    const alter = this.metadata.alterPartitionIsr?.bind(this.metadata);
    if (!alter) return;
    const proposed = p.beginIsrChange(state, isr, this.now());
    if (!proposed) return;
    const { topic, index: partition } = p;
    this.log.info({ topic, partition, leaderEpoch: state.leaderEpoch, isr: state.isr, newIsr: proposed, why }, 'changing the ISR');
    alter(topic, partition, state.leaderEpoch, state.isr, proposed)
      .then(
        () => p.endIsrChange('done', this.now()),
        (err: unknown) => {
          // Another change won (the controller dropped a dead replica, a newer epoch): decided again from the new state.
          if (err instanceof ConcurrentChangeError || err instanceof UnknownTopicError) {
            p.endIsrChange('conflict', this.now());
            this.log.info({ topic, partition, reason: (err as Error).message }, 'the partition changed while its ISR was being changed; deciding again from its new state');
            return;
          }
          p.endIsrChange('unavailable', this.now());
          this.reportIsrFailure(`${topic}-${partition}: ${(err as Error).message}`);
        },
      )
      .finally(() => {
        p.settlePendingIsr(this.partitionState(topic, partition), this.nodeId);
        this.maybeAdvanceHighWatermark(topic, partition);
      });
  }

  /** Counts an ISR change the metadata store did not take, and says so at most once per interval while they go on. */
  private reportIsrFailure(what: string): void {
    const f = this.isrFailures;
    f.count++;
    f.last = what;
    const now = this.now();
    if (now - f.reportedAtMs < ISR_FAILURE_REPORT_INTERVAL_MS) return;
    this.log.warn({ failed: f.count, last: f.last }, 'the metadata store did not take ISR changes; they are asked again with a backoff: check that etcd is reachable');
    this.isrFailures = { count: 0, reportedAtMs: now, last: '' };
  }

  /** Followers in the ISR that have not caught up for replica.lag.time.max.ms leave it (Kafka's maybeShrinkIsr). */
  private shrinkIsrs(): void {
    const now = this.now();
    for (const t of this.metadata.image().topics.values()) {
      for (const state of t.partitions) {
        if (state.leader !== this.nodeId || state.isr.length <= 1) continue;
        const p = this.partitionIfAny(t.name, state.partition);
        if (!p) continue;
        const lagging = p.laggingReplicas(state, this.nodeId, now, this.replicaLagTimeMaxMs);
        if (lagging.length > 0) this.proposeIsr(p, state, state.isr.filter((r) => !lagging.includes(r)), `no catch-up for ${this.replicaLagTimeMaxMs} ms by ${lagging.join(',')}`);
      }
    }
  }

  /**
   * Where a partition this broker follows stands: the fetch position (log
   * end) and log start to send its leader. Null when this broker is not a
   * follower of it (no replica, the leader, or its log cannot open).
   */
  followerPosition(topic: string, partition: number): { logEndOffset: bigint; logStartOffset: bigint } | null {
    const state = this.partitionState(topic, partition);
    if (!state || state.leader === this.nodeId || !state.replicas.includes(this.nodeId)) return null;
    const log = this.logs.get(topic, partition);
    if (!log || log.isOffline) return null;
    return { logEndOffset: log.logEndOffset, logStartOffset: log.logStartOffset };
  }

  /**
   * Appends batches fetched from the partition's leader, as a follower does
   * (Kafka's appendRecordsToFollowerOrFutureReplica): `batches` are whole v2
   * batches with the leader's offsets, starting at or below this log's end
   * (those below it are already here and skipped); each batch's CRC is
   * checked and the first bad one ends the append. The high watermark then
   * follows the leader's, never past this log's end, and the log start
   * follows the leader's (DeleteRecords and retention on the leader),
   * never past this log's high watermark. Returns the new log end, or the
   * error that stopped it.
   */
  appendAsFollower(
    topic: string,
    partition: number,
    batches: readonly FollowerBatch[],
    records: Buffer,
    leaderHighWatermark: bigint,
    leaderLogStartOffset = -1n,
  ): { errorCode: number; logEndOffset: bigint } {
    const state = this.partitionState(topic, partition);
    if (!state || state.leader === this.nodeId || !state.replicas.includes(this.nodeId)) return { errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, logEndOffset: -1n };
    const log = this.logs.get(topic, partition);
    if (!log) return { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, logEndOffset: -1n };
    const hwBefore = log.highWatermark;
    try {
      const fresh = batches.filter((b) => b.lastOffset >= log.logEndOffset);
      const first = fresh[0];
      if (first && first.baseOffset < log.logEndOffset) {
        // A batch across this log's end: only an empty log (just reset to the leader's log start,
        // which may fall inside a batch) may take it, by starting at the batch, as Kafka's follower does.
        if (log.logEndOffset !== log.logStartOffset) return { errorCode: ErrorCode.CORRUPT_MESSAGE, logEndOffset: log.logEndOffset };
        log.truncateFullyAndStartAt(first.baseOffset);
      }
      if (first) {
        const last = fresh[fresh.length - 1]!;
        log.appendValidated(records.subarray(first.position, last.position + last.size), appendInfoFor(fresh));
      }
      const hw = leaderHighWatermark < log.logEndOffset ? leaderHighWatermark : log.logEndOffset;
      if (hw > log.highWatermark) log.updateHighWatermark(hw);
      // As Kafka's follower: records the leader no longer has go here too.
      if (leaderLogStartOffset > log.logStartOffset && leaderLogStartOffset <= log.highWatermark) log.deleteRecordsBefore(leaderLogStartOffset);
      if (first || log.highWatermark > hwBefore) this.wakeFetches(topic, partition);
      return { errorCode: ErrorCode.NONE, logEndOffset: log.logEndOffset };
    } catch (err) {
      if (err instanceof StorageError) return { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, logEndOffset: -1n };
      if (err instanceof RangeError) return { errorCode: ErrorCode.CORRUPT_MESSAGE, logEndOffset: log.logEndOffset };
      throw err;
    }
  }

  /** The latest leader epoch in a followed partition's log, or null for a log without any (nothing to truncate). */
  followerLatestEpoch(topic: string, partition: number): number | null {
    if (this.followerPosition(topic, partition) === null) return null;
    return this.logs.get(topic, partition)?.leaderEpochs.latestEntry()?.epoch ?? null;
  }

  /**
   * Cuts off what a follower has that its leader does not, from the leader's
   * answer to OffsetForLeaderEpoch for the follower's latest epoch (Kafka's
   * getOffsetTruncationState): to where the leader says that epoch ended, or,
   * when the leader knows only an older epoch, to where that epoch ends
   * here if sooner; to the high watermark when the leader knows none of
   * it. Returns the new log end, or null when this broker does not follow
   * the partition.
   */
  truncateFollowerToLeader(topic: string, partition: number, leaderEpoch: number, leaderEndOffset: bigint, requestedEpoch: number): { done: boolean } | null {
    if (this.followerPosition(topic, partition) === null) return null;
    const log = this.logs.get(topic, partition)!;
    let to: bigint;
    // Done once the answer is about an epoch this log has too; else the next question is about an older epoch of ours.
    let done = true;
    if (leaderEpoch < 0 || leaderEndOffset < 0n) to = log.highWatermark;
    else if (leaderEpoch < requestedEpoch) {
      const here = log.endOffsetForEpoch(leaderEpoch);
      const end = here?.endOffset ?? log.logEndOffset;
      to = end < leaderEndOffset ? end : leaderEndOffset;
      done = here?.epoch === leaderEpoch;
    } else to = leaderEndOffset;
    if (to < log.logEndOffset) {
      this.log.info({ topic, partition, from: log.logEndOffset, to, leaderEpoch }, 'truncating what the leader does not have');
      try {
        log.truncateTo(to);
      } catch (err) {
        if (!(err instanceof StorageError)) throw err;
        this.log.warn({ topic, partition, err }, 'cannot truncate the follower log');
        return { done: false };
      }
      this.wakeFetches(topic, partition);
    }
    return { done };
  }

  /**
   * A follower whose fetch position is out of the leader's range starts
   * over, given the leader's first and next offsets (ListOffsets EARLIEST
   * and LATEST): from the leader's log start when it fell behind it
   * (everything here is dropped), or at the leader's log end when it is
   * ahead (what the leader does not have is cut off). Negative offsets
   * (no answer) change nothing.
   */
  resetFollower(topic: string, partition: number, leaderLogStartOffset: bigint, leaderLogEndOffset: bigint): void {
    const log = this.logs.get(topic, partition);
    if (!log || this.followerPosition(topic, partition) === null || leaderLogStartOffset < 0n || leaderLogEndOffset < leaderLogStartOffset) return;
    try {
      if (log.logEndOffset < leaderLogStartOffset) log.truncateFullyAndStartAt(leaderLogStartOffset);
      else if (log.logEndOffset > leaderLogEndOffset) log.truncateTo(leaderLogEndOffset);
    } catch (err) {
      if (!(err instanceof StorageError)) throw err;
      this.log.warn({ topic, partition, err }, 'cannot reset the follower log');
    }
    this.wakeFetches(topic, partition);
  }

  /**
   * Gives every fetch parked on this partition a chance to complete; called
   * after an append and whenever the high watermark or last stable offset of
   * the partition moves.
   */
  wakeFetches(topic: string, partition: number): void {
    const p = this.partitionIfAny(topic, partition);
    if (!p || p.fetchWaiters.size === 0) return;
    for (const w of [...p.fetchWaiters]) if (safeTry(w.tryComplete)) w.finish('satisfied');
  }

  /** Parked fetches, for tests and metrics. */
  get parkedFetches(): number {
    const all = new Set<FetchWaiter>();
    for (const p of this.partitions.values()) for (const w of p.fetchWaiters) all.add(w);
    return all.size;
  }

  /**
   * Answers every parked fetch now and every later one at once: the broker is
   * shutting down, and waiting out max_wait_ms would only hold up the drain.
   */
  releaseFetchWaiters(): void {
    this.fetchWaitersClosed = true;
    const all = new Set<FetchWaiter>();
    for (const p of this.partitions.values()) for (const w of p.fetchWaiters) all.add(w);
    for (const w of all) w.finish('shutdown');
  }

  /**
   * ListOffsets for one partition, as Kafka's Partition.fetchOffsetForTimestamp
   * answers it. Never throws.
   *
   * `isolation` is the client's (a consumer sends replica id -1); followers
   * and debug tools read to the log end ('logEnd'). Only the debug replica id
   * (-2) may ask a replica that is not the leader (`fetchOnlyFromLeader`
   * false). `currentLeaderEpoch` -1 means the client knows none.
   *
   * Targets: LATEST (-1) is the isolation's end (high watermark, last stable
   * offset, or log end) with the current leader epoch; EARLIEST (-2) and
   * EARLIEST_LOCAL (-4, no tiered storage here) the log start offset, with
   * the first cached epoch when it starts at or before it; LATEST_TIERED (-5)
   * and EARLIEST_PENDING_UPLOAD (-6) offset -1 with epoch -1 (nothing is tiered); MAX_TIMESTAMP (-3) the
   * record with the largest timestamp; a time, the first record at or after
   * it. For those last two an answer at or past the isolation's end is
   * withheld: offset and timestamp -1, as when nothing matches. A client
   * asking while the high watermark lags the start of the current epoch gets
   * OFFSET_NOT_AVAILABLE for LATEST and for withheld answers.
   *
   * Errors, in Kafka's order: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
   * (not a replica here), KAFKA_STORAGE_ERROR (log missing or offline),
   * FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER (not
   * the leader), then CORRUPT_MESSAGE when the batch to answer from does not
   * decode.
   *
   * Example: records at offsets 0..2 with timestamps 100, 300, 200, epoch 0,
   * high watermark 3: fetchOffsetForTimestamp('t', 0, 150n, 'highWatermark',
   * -1, true) -> { errorCode: 0, offset: 1n, timestamp: 300n, leaderEpoch: 0 };
   * with -3n the same; with 301n -> offset -1n, timestamp -1n; with -1n ->
   * offset 3n, timestamp -1n and the partition's leader epoch.
   */
  fetchOffsetForTimestamp(
    topic: string,
    partition: number,
    timestamp: bigint,
    isolation: FetchIsolation,
    currentLeaderEpoch: number,
    fetchOnlyFromLeader: boolean,
  ): OffsetForTimestampResult {
    const local = this.localLogWithEpoch(topic, partition, currentLeaderEpoch, fetchOnlyFromLeader);
    if (typeof local === 'number') return offsetError(local);
    const { log, state } = local;
    try {
      const lastFetchable = isolation === 'logEnd' ? log.logEndOffset : isolation === 'highWatermark' ? log.highWatermark : log.lastStableOffset;
      // Right after an election the leader's high watermark may lag the start of its epoch: clients wait.
      const epochStart = log.leaderEpochs.epochEntry(state.leaderEpoch)?.startOffset;
      const offsetsError = isolation !== 'logEnd' && epochStart !== undefined && epochStart > log.highWatermark;
      if (timestamp === SpecialTimestamp.LATEST) {
        if (offsetsError) return offsetError(ErrorCode.OFFSET_NOT_AVAILABLE);
        return { errorCode: ErrorCode.NONE, timestamp: -1n, offset: lastFetchable, leaderEpoch: state.leaderEpoch };
      }
      if (timestamp === SpecialTimestamp.EARLIEST || timestamp === SpecialTimestamp.EARLIEST_LOCAL) {
        const earliest = log.leaderEpochs.earliestEntry();
        const leaderEpoch = earliest !== undefined && earliest.startOffset <= log.logStartOffset ? earliest.epoch : -1;
        return { errorCode: ErrorCode.NONE, timestamp: -1n, offset: log.logStartOffset, leaderEpoch };
      }
      let found: { offset: bigint; timestamp: bigint; leaderEpoch: number } | null;
      if (timestamp === SpecialTimestamp.LATEST_TIERED || timestamp === SpecialTimestamp.EARLIEST_PENDING_UPLOAD) found = { ...NOTHING_FOUND };
      else if (timestamp === SpecialTimestamp.MAX_TIMESTAMP) found = log.offsetForMaxTimestamp();
      else {
        const hit = log.offsetForTimestamp(timestamp);
        found = hit && { offset: hit.offset, timestamp: hit.timestamp, leaderEpoch: log.batchLeaderEpochAt(hit.offset) };
      }
      if (found === null || found.offset >= lastFetchable) {
        return offsetsError ? offsetError(ErrorCode.OFFSET_NOT_AVAILABLE) : { errorCode: ErrorCode.NONE, ...NOTHING_FOUND };
      }
      return { errorCode: ErrorCode.NONE, ...found };
    } catch (err) {
      if (err instanceof CorruptRecordError) return offsetError(ErrorCode.CORRUPT_MESSAGE);
      if (err instanceof StorageError) return offsetError(ErrorCode.KAFKA_STORAGE_ERROR);
      this.log.warn({ topic, partition, err }, 'ListOffsets failed');
      return offsetError(ErrorCode.UNKNOWN_SERVER_ERROR);
    }
  }

  /**
   * ListOffsets v0 for one partition, as Kafka 3.x's
   * Partition.legacyFetchOffsetsForTimestamp answers it: the log's
   * candidates for `timestamp` (see PartitionLog.legacyOffsetsBefore), at
   * most `maxNumOffsets` of them, newest first. For a consumer
   * (`isFromConsumer`, replica id -1) the offsets above the high watermark
   * give way to the high watermark itself, put first, so that none is past
   * what the consumer may read; like Kafka, the high watermark then appears
   * twice when it is also a segment base. Never throws.
   *
   * Errors, as for fetchOffsetForTimestamp but with no leader epoch to check
   * (v0 carries none): UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
   * KAFKA_STORAGE_ERROR; and UNKNOWN_SERVER_ERROR for a negative
   * `maxNumOffsets`, which Kafka 3.x fails on while sizing its answer.
   *
   * Example: segments based at 0 and 10, offsets 0..14, the high watermark
   * at 12: legacyOffsetsForTimestamp('t', 0, -1n, 5, false, true) ->
   * { errorCode: 0, offsets: [15n, 10n, 0n] }; as a consumer (true) ->
   * [12n, 10n, 0n]; with -2n -> [0n] either way.
   */
  legacyOffsetsForTimestamp(
    topic: string,
    partition: number,
    timestamp: bigint,
    maxNumOffsets: number,
    isFromConsumer: boolean,
    fetchOnlyFromLeader: boolean,
  ): { errorCode: number; offsets: bigint[] } {
    const local = this.localLogWithEpoch(topic, partition, -1, fetchOnlyFromLeader);
    if (typeof local === 'number') return { errorCode: local, offsets: [] };
    if (maxNumOffsets < 0) return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, offsets: [] };
    const { log } = local;
    const offsets = log.legacyOffsetsBefore(timestamp, maxNumOffsets);
    if (!isFromConsumer) return { errorCode: ErrorCode.NONE, offsets };
    const hw = log.highWatermark;
    if (!offsets.some((o) => o > hw)) return { errorCode: ErrorCode.NONE, offsets };
    return { errorCode: ErrorCode.NONE, offsets: [hw, ...offsets.filter((o) => o <= hw)] };
  }

  /**
   * OffsetForLeaderEpoch for one partition, as Kafka's
   * Partition.lastOffsetForLeaderEpoch answers it, always as the leader: the
   * largest epoch at most `leaderEpoch` this log knows and the offset where it
   * ended (the log end for the current one), or -1 and -1n where Kafka
   * answers UNDEFINED (an epoch above every known one, or -1). Never throws.
   * Errors as for fetchOffsetForTimestamp.
   *
   * Example: a log written in epoch 0 up to offset 8, then led at epoch 2 and
   * written up to 12: lastOffsetForLeaderEpoch('t', 0, -1, 0) -> { errorCode:
   * 0, leaderEpoch: 0, endOffset: 8n }; (..., 1) the same; (..., 2) -> (2, 12n);
   * (..., 3) -> (-1, -1n).
   */
  lastOffsetForLeaderEpoch(topic: string, partition: number, currentLeaderEpoch: number, leaderEpoch: number): EpochEndOffsetResult {
    const local = this.localLogWithEpoch(topic, partition, currentLeaderEpoch, true);
    if (typeof local === 'number') return { errorCode: local, leaderEpoch: -1, endOffset: -1n };
    const found = local.log.endOffsetForEpoch(leaderEpoch);
    return { errorCode: ErrorCode.NONE, leaderEpoch: found?.epoch ?? -1, endOffset: found?.endOffset ?? -1n };
  }

  /**
   * The log of a partition hosted here, checked as Kafka's
   * Partition.localLogWithEpochOrThrow checks it, or the error code.
   */
  private localLogWithEpoch(
    topic: string,
    partition: number,
    currentLeaderEpoch: number,
    requireLeader: boolean,
  ): { log: PartitionLog; state: PartitionState } | number {
    const state = this.partitionState(topic, partition);
    if (!state) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    if (!state.replicas.includes(this.nodeId)) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    const log = this.logs.get(topic, partition);
    if (!log || log.isOffline) return ErrorCode.KAFKA_STORAGE_ERROR;
    if (currentLeaderEpoch !== -1) {
      if (currentLeaderEpoch < state.leaderEpoch) return ErrorCode.FENCED_LEADER_EPOCH;
      if (currentLeaderEpoch > state.leaderEpoch) return ErrorCode.UNKNOWN_LEADER_EPOCH;
    }
    if (requireLeader && state.leader !== this.nodeId) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    return { log, state };
  }

  /** The partition's log, created when missing unless it should already exist (see hostedAtStart). */
  private openLog(topic: string, partition: number): PartitionLog {
    return this.logs.get(topic, partition) ?? this.logs.getOrCreate(topic, partition, undefined, this.isNewReplica(topic, partition));
  }

  private isNewReplica(topic: string, partition: number): boolean {
    const topicId = this.metadata.image().topics.get(topic)?.topicId;
    return topicId === undefined || this.hostedAtStart === null || !this.hostedAtStart.has(`${topicId}:${partition}`);
  }

  /**
   * A log directory went offline (LogManager's onDirFailure): the replicas in
   * it can no longer serve. In a cluster the metadata store is told, so that
   * the controller moves their leadership and takes them out of the ISR, as
   * Kafka's controller does for a broker's offline directory.
   */
  onLogDirFailure(): void {
    this.reportOfflineReplicas(this.metadata.image());
  }

  /** Tells the metadata store which of this broker's replicas have no usable log, when that changed. */
  private reportOfflineReplicas(image: MetadataImage): void {
    if (!this.metadata.reportOfflineReplicas) return;
    const offline: string[] = [];
    for (const t of image.topics.values()) {
      for (const p of t.partitions) {
        if (!p.replicas.includes(this.nodeId)) continue;
        const log = this.logs.get(t.name, p.partition);
        if (!log || log.isOffline) offline.push(`${t.topicId}:${p.partition}`);
      }
    }
    offline.sort();
    const key = offline.join(',');
    if (key === this.reportedOffline) return;
    this.reportedOffline = key;
    if (offline.length > 0) this.log.warn({ replicas: offline.length }, 'replicas without a usable log reported offline: their leadership moves to other in-sync replicas');
    this.metadata.reportOfflineReplicas(offline).catch((err: unknown) => {
      this.reportedOffline = '';
      this.log.warn({ err: (err as Error).message }, 'cannot report offline replicas to the metadata store; trying again at the next change');
    });
  }

  private partitionState(topic: string, partition: number): PartitionState | undefined {
    const t = this.metadata.image().topics.get(topic);
    if (!t) return undefined;
    const p = t.partitions[partition];
    return p?.partition === partition ? p : t.partitions.find((x) => x.partition === partition);
  }

  /**
   * Follows a new image: first deletes the logs of every topic it no longer
   * lists (or lists under a new id: deleted and created again), then opens,
   * creating when missing, the log of every partition that lists this broker
   * as a replica.
   */
  private applyImage(image: MetadataImage): void {
    for (const [name, topicId] of [...this.hostedTopicIds]) {
      if (image.topics.get(name)?.topicId === topicId) continue;
      this.hostedTopicIds.delete(name);
      this.deleteLogs((topic) => topic === name, 'topic deleted');
    }
    // A reassignment that took this broker's replica away (KIP-455): its copy goes, as Kafka's StopReplica with delete.
    this.deleteLogs((topic, partition) => {
      const p = image.topics.get(topic)?.partitions[partition];
      return p !== undefined && !p.replicas.includes(this.nodeId);
    }, 'replica moved to other brokers');
    if (this.hostedAtStart === null) {
      this.hostedAtStart = new Set();
      for (const t of image.topics.values()) for (const p of t.partitions) if (p.replicas.includes(this.nodeId)) this.hostedAtStart.add(`${t.topicId}:${p.partition}`);
    }
    // New logs are created together: one sync of the data directory for all of them.
    const missing: { topic: string; partition: number; isNew: boolean }[] = [];
    for (const t of image.topics.values()) {
      if (t.partitions.some((p) => p.replicas.includes(this.nodeId))) this.hostedTopicIds.set(t.name, t.topicId);
      for (const p of t.partitions) {
        if (p.replicas.includes(this.nodeId) && !this.logs.get(t.name, p.partition)) {
          missing.push({ topic: t.name, partition: p.partition, isNew: !this.hostedAtStart.has(`${t.topicId}:${p.partition}`) });
        }
      }
    }
    if (missing.length > 0) {
      let results: (PartitionLog | Error)[];
      try {
        results = this.logs.getOrCreateMany(missing);
      } catch (err) {
        results = missing.map(() => err as Error);
      }
      // Such a partition answers KAFKA_STORAGE_ERROR until a later append manages to open it.
      const failed = results.flatMap((r, i) => (r instanceof Error ? [{ ...missing[i]!, err: r }] : []));
      if (failed.length > 0) {
        const first = failed[0]!;
        this.log.warn({ topic: first.topic, partition: first.partition, err: first.err, failedPartitions: failed.length }, 'cannot create partition logs');
      }
    }
    const led = new Set<Partition>();
    for (const t of image.topics.values()) {
      for (const p of t.partitions) {
        if (!p.replicas.includes(this.nodeId) || p.leader !== this.nodeId) continue;
        const log = this.logs.get(t.name, p.partition);
        if (!log) continue;
        led.add(this.becomeLeader(t.name, p, log));
      }
    }
    for (const p of [...this.partitions.values()]) {
      if (led.has(p)) continue;
      p.resign();
      this.finishReplicationWaiters(p, () => ErrorCode.NOT_LEADER_OR_FOLLOWER);
      this.forgetIfIdle(p);
    }
    this.reportOfflineReplicas(image);
  }

  /**
   * What leading a partition at a new leader epoch does to its log, as in
   * Kafka's Partition.makeLeader: the epoch starts at the log end, so that
   * where the previous epoch ended is known before any data of the new one
   * (OffsetForLeaderEpoch, ListOffsets), and with the ISR this broker alone
   * the high watermark moves to the log end (after an unclean restart it may
   * have been checkpointed lower). Called for every image; a log already at
   * that epoch or a later one is left alone.
   */
  private becomeLeader(topic: string, p: PartitionState, log: PartitionLog): Partition {
    const part = this.partitionFor(topic, p.partition);
    if (log.isOffline) return part;
    part.makeLeader(p, this.nodeId, this.now());
    const latest = log.leaderEpochs.latestEntry();
    try {
      if (latest === undefined || latest.epoch < p.leaderEpoch) log.maybeAssignEpochStartOffset(p.leaderEpoch, log.logEndOffset);
    } catch (err) {
      this.log.warn({ topic, partition: p.partition, err }, 'cannot record the leader epoch; the log is offline');
      return part;
    }
    part.settlePendingIsr(p, this.nodeId);
    this.maybeAdvanceHighWatermark(topic, p.partition);
    return part;
  }

  /** Whether a write to a partition this broker leads is committed only once followers have it. */
  private needsFollowers(topic: string, partition: number, state: PartitionState): boolean {
    return state.isr.some((r) => r !== this.nodeId) || (this.partitionIfAny(topic, partition)?.needsFollowers ?? false);
  }

  /** The partition's state object, made when there is none. */
  private partitionFor(topic: string, partition: number): Partition {
    const key = partitionKey(topic, partition);
    let p = this.partitions.get(key);
    if (!p) this.partitions.set(key, (p = new Partition(topic, partition)));
    return p;
  }

  private partitionIfAny(topic: string, partition: number): Partition | undefined {
    return this.partitions.get(partitionKey(topic, partition));
  }

  /** Drops the state object of a partition nothing needs any more: not led here, nothing waiting on it. */
  private forgetIfIdle(p: Partition): void {
    if (p.idle && this.partitions.get(partitionKey(p.topic, p.index)) === p) this.partitions.delete(partitionKey(p.topic, p.index));
  }

  /**
   * Deletes, at start, the logs the image gives no reason to keep: of topics
   * it does not list, or partitions that are not this broker's (Kafka's stray
   * replicas). They are what a deletion interrupted by a crash leaves behind
   * (the metadata was written, the directories not yet renamed); kept, they
   * would come back as the data of a new topic of the same name. The image
   * must be complete by then, as the local store's is from its constructor.
   */
  private removeStrayLogs(image: MetadataImage): void {
    this.deleteLogs((topic, partition) => {
      const p = image.topics.get(topic)?.partitions.find((x) => x.partition === partition);
      return !p || !p.replicas.includes(this.nodeId);
    }, 'stray log: its partition is not in the metadata');
  }

  /**
   * Closes and deletes (through the log manager: renamed at once, removed
   * after file.delete.delay.ms) every log `which` selects, and wakes the
   * fetches parked on it. A log that cannot be renamed stays where it is and
   * is logged; the restart after finds it stray and tries again.
   */
  private deleteLogs(which: (topic: string, partition: number) => boolean, reason: string): void {
    for (const { topic, partition } of this.logs.all()) {
      if (!which(topic, partition)) continue;
      try {
        this.logs.delete(topic, partition);
        this.log.info({ topic, partition, reason }, 'deleted partition log');
      } catch (err) {
        this.log.warn({ topic, partition, reason, err }, 'cannot delete partition log');
      }
      // A fetch parked on the partition answers now (it is gone) rather than at max_wait_ms.
      this.wakeFetches(topic, partition);
    }
  }
}

function safeTry(f: () => boolean): boolean {
  try {
    return f();
  } catch {
    return true;
  }
}

/** Index of the segment (by sorted base offsets) holding `offset`. */
function segmentOf(bases: readonly bigint[], offset: bigint): number {
  let i = 0;
  while (i + 1 < bases.length && bases[i + 1]! <= offset) i++;
  return i;
}

/**
 * The partitions this broker holds and the way into their logs. Handlers reach
 * storage only through here: it maps (topic, partition) to a partition log,
 * checks leadership against the current metadata image, appends, and moves the
 * high watermark.
 *
 * With the local metadata store the broker leads every partition and the ISR is
 * itself, so an append is committed as soon as it is written: the high
 * watermark follows the log end at once, and acks=1 and acks=-1 both answer
 * right after the append.
 */
import { ErrorCode } from '../wire/errors.js';
import type { LogManager } from '../storage/log-manager.js';
import { type PartitionLog, StorageError } from '../storage/log.js';
import type { MetadataImage, MetadataStore, PartitionState } from './metadata-image.js';

/** The little of a logger the manager needs; a pino logger fits. */
export interface ReplicaLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
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
}

export function appendError(errorCode: number, errorMessage: string | null = null, logStartOffset = -1n): PartitionAppendResult {
  return { errorCode, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset, recordErrors: [], errorMessage };
}

export class ReplicaManager {
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly logs: LogManager,
    private readonly log: ReplicaLogger,
  ) {}

  /**
   * Creates the logs of every partition this broker holds in the current
   * image, and from then on of every partition that a new image adds.
   * Example: after start() on a data directory whose metadata lists topic
   * 'orders' with 2 partitions, logFor('orders', 1) is a log.
   */
  start(): this {
    if (this.unsubscribe) return this;
    this.applyImage(this.metadata.image());
    this.unsubscribe = this.metadata.subscribe((image) => this.applyImage(image));
    return this;
  }

  /** Stops following the metadata; the log manager is closed by its owner. */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /** The log of a partition this broker has opened, or undefined. */
  logFor(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(topic, partition);
  }

  /**
   * Appends `records` (one Produce partition's bytes) to the partition's log as
   * its leader. Never throws: every problem is the partition's error code.
   * `acks` is checked by the caller; with this broker as the whole ISR every
   * accepted value is satisfied once the append returns.
   *
   * Example: appendRecords('orders', 0, <batch of 3 records>, -1) on a new log
   * -> { errorCode: 0, baseOffset: 0n, logStartOffset: 0n, ... }, and the high
   * watermark becomes 3n.
   */
  appendRecords(topic: string, partition: number, records: Buffer, acks: number): PartitionAppendResult {
    const state = this.partitionState(topic, partition);
    if (!state) return appendError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    if (state.leader !== this.nodeId) return appendError(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    let log: PartitionLog;
    try {
      log = this.logs.getOrCreate(topic, partition);
    } catch (err) {
      this.log.warn({ topic, partition, err }, 'cannot open partition log');
      return appendError(ErrorCode.KAFKA_STORAGE_ERROR, (err as Error).message);
    }
    try {
      // `records` is a view into the request frame, which nothing reads after the handler.
      const result = log.append(records, state.leaderEpoch, true);
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
      // The ISR is this broker alone: what is written is committed.
      log.updateHighWatermark(log.logEndOffset);
      return {
        errorCode: ErrorCode.NONE,
        baseOffset: result.firstOffset,
        logAppendTimeMs: result.logAppendTime,
        logStartOffset: result.logStartOffset,
        recordErrors: [],
        errorMessage: null,
      };
    } catch (err) {
      if (err instanceof StorageError) {
        return appendError(ErrorCode.KAFKA_STORAGE_ERROR, err.message, log.logStartOffset);
      }
      throw err;
    }
  }

  private partitionState(topic: string, partition: number): PartitionState | undefined {
    const t = this.metadata.image().topics.get(topic);
    if (!t) return undefined;
    const p = t.partitions[partition];
    return p?.partition === partition ? p : t.partitions.find((x) => x.partition === partition);
  }

  /** Opens (creating when missing) the log of every partition that lists this broker as a replica. */
  private applyImage(image: MetadataImage): void {
    for (const t of image.topics.values()) {
      for (const p of t.partitions) {
        if (!p.replicas.includes(this.nodeId) || this.logs.get(t.name, p.partition)) continue;
        try {
          this.logs.getOrCreate(t.name, p.partition);
        } catch (err) {
          // The partition answers KAFKA_STORAGE_ERROR until a later append manages to open it.
          this.log.warn({ topic: t.name, partition: p.partition, err }, 'cannot create partition log');
        }
      }
    }
  }
}

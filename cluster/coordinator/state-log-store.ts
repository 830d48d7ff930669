/**
 * A coordinator's partitions of its internal topic (__consumer_offsets for
 * the group coordinator, __transaction_state for the transaction
 * coordinator), reached through the replica manager like any partition:
 * appends as their leader with acks=all and the coordinator origin, waits
 * for the in-sync replicas to have them, reads from the log start to the log
 * end for loading.
 */
import { ErrorCode } from '../../wire/errors.js';
import { LAST_OFFSET_DELTA, wholeBatches } from '../../wire/record-batch.js';
import { GROUP_METADATA_TOPIC } from './partition-for.js';
import type { ReplicaManager } from '../replication/replica-manager.js';

/** A coordinator's way to its partitions of its internal topic. */
export interface OffsetsTopicStore {
  /**
   * Appends one batch as the partition's leader, waiting as acks=all does:
   * the error code, NONE once written, and the offset its first record got
   * (-1n on error).
   */
  append(partition: number, batch: Buffer): { errorCode: number; baseOffset: bigint };
  /** The partition's stored batches from its log start to its end, in chunks of whole batches. */
  read(partition: number): Iterable<Buffer>;
  /**
   * Resolves once everything the partition's log holds now is on every
   * in-sync replica: NONE, or the append error of an acks=all produce that
   * could not get there (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
   * REQUEST_TIMED_OUT after `timeoutMs`). A store without replicas has none.
   */
  replicated?(partition: number, timeoutMs: number): Promise<number>;
}

/**
 * The error a coordinator append failure becomes for the client, as
 * Kafka's coordinator maps it: a missing or under-replicated partition
 * means retry later, a lost leadership means find the coordinator again.
 */
export function appendErrorToResponseError(code: number): number {
  switch (code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case ErrorCode.REQUEST_TIMED_OUT:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
    case ErrorCode.KAFKA_STORAGE_ERROR:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.MESSAGE_TOO_LARGE:
    case ErrorCode.RECORD_LIST_TOO_LARGE:
    case ErrorCode.INVALID_FETCH_SIZE:
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    default:
      return code;
  }
}

/** How much of a partition one read brings in while loading. */
const LOAD_CHUNK_BYTES = 5 * 1024 * 1024;

/**
 * Example: replicaOffsetsStore(replicas) serves the group coordinator;
 * replicaOffsetsStore(replicas, '__transaction_state') the transaction
 * coordinator.
 */
export function replicaOffsetsStore(replicas: ReplicaManager, topic: string = GROUP_METADATA_TOPIC): OffsetsTopicStore {
  return {
    append(partition, batch) {
      const r = replicas.appendRecords(topic, partition, batch, -1, 'coordinator');
      return { errorCode: r.errorCode, baseOffset: r.baseOffset };
    },
    replicated(partition, timeoutMs) {
      const log = replicas.logFor(topic, partition);
      if (!log) return Promise.resolve(ErrorCode.NOT_LEADER_OR_FOLLOWER);
      return replicas.waitForReplication(topic, partition, log.logEndOffset, timeoutMs);
    },
    *read(partition) {
      const log = replicas.logFor(topic, partition);
      if (!log) return;
      const end = log.logEndOffset;
      let offset = log.logStartOffset;
      while (offset < end) {
        // Looked up again each time: the loader may yield between chunks, and a config change or a
        // move to another log directory replaces the partition's log object (same offsets).
        const current = replicas.logFor(topic, partition);
        if (!current) return;
        const chunk = current.readBuffer(offset, LOAD_CHUNK_BYTES, { maxOffset: end });
        if (!chunk || chunk.length === 0) return;
        const next = nextOffsetAfter(chunk);
        if (next === null || next <= offset) return;
        yield chunk;
        offset = next;
      }
    },
  };
}

/** The offset after the last whole batch in `chunk`, or null when it holds none. */
function nextOffsetAfter(chunk: Buffer): bigint | null {
  let next: bigint | null = null;
  for (const batch of wholeBatches(chunk)) next = batch.readBigInt64BE(0) + BigInt(batch.readInt32BE(LAST_OFFSET_DELTA)) + 1n;
  return next;
}

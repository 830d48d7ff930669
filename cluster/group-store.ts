/**
 * A coordinator's partitions of its internal topic (__consumer_offsets for
 * the group coordinator, __transaction_state for the transaction
 * coordinator), reached through the replica manager like any partition:
 * appends as their leader with acks=all and the coordinator origin, waits
 * for the in-sync replicas to have them, reads from the log start to the log
 * end for loading.
 */
import { ErrorCode } from '../wire/errors.js';
import { LAST_OFFSET_DELTA, wholeBatches } from '../wire/record-batch.js';
import { GROUP_METADATA_TOPIC } from './group-partition.js';
import type { OffsetsTopicStore } from './group-coordinator.js';
import type { ReplicaManager } from './replica-manager.js';

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
        const chunk = log.readBuffer(offset, LOAD_CHUNK_BYTES, { maxOffset: end });
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

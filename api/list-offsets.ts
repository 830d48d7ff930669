/**
 * ListOffsets (key 2), versions 0-11. Kafka 4 serves v1 and up (KIP-896
 * removed v0); gregor serves v0 as Kafka 3.x did (KafkaApis'
 * handleListOffsetRequestV0).
 *
 * v0 asks, per partition, a target and max_num_offsets, and is answered
 * with a list of offsets (old_style_offsets), newest first: the base
 * offsets of the segments last modified at or before the target, and the
 * log end when the active segment holds data and the target is now or
 * later; LATEST (-1) lists from the log end, EARLIEST (-2) gives the log
 * start alone (see ReplicaManager.legacyOffsetsForTimestamp). A consumer
 * (replica id -1) gets the high watermark in place of the offsets above it.
 * Records' timestamps play no part. Partitions are answered as asked,
 * repeats included; per partition UNKNOWN_TOPIC_OR_PARTITION,
 * NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR, as from v1.
 *
 * v1 answers one offset and its record's timestamp: the first record at or
 * after the target time. v2 adds isolation_level (read_committed answers
 * LATEST with the last stable offset); v4 current_leader_epoch (fencing)
 * and the answer's leader_epoch; v5 OFFSET_NOT_AVAILABLE, which older
 * versions get as LEADER_NOT_AVAILABLE; v6 is flexible; v7 MAX_TIMESTAMP
 * (-3); v8 EARLIEST_LOCAL (-4); v9 LATEST_TIERED (-5); v10 timeout_ms,
 * which bounds only lookups in tiered storage and is ignored here; v11
 * EARLIEST_PENDING_UPLOAD (-6, KIP-1023: nothing is tiered here, so offset
 * -1 as Kafka answers without tiered storage).
 *
 * From v1, a negative target that is none of those, or one the request's
 * version does not know yet, is UNSUPPORTED_VERSION for its partition. A
 * partition named more than once anywhere in the request is INVALID_REQUEST
 * and answered once. Each topic is answered once, its partitions in the
 * order first asked (Kafka's order is that of a hash map; clients match by
 * name and index). Per partition, see ReplicaManager.fetchOffsetForTimestamp:
 * a consumer (replica id -1) reads up to its isolation level's end, a
 * follower or the debug id (-2) up to the log end, and only the debug id
 * may ask a non-leader.
 */
import { ListOffsetsRequest } from '../wire/messages/list-offsets-request.js';
import { ListOffsetsResponse, type ListOffsetsPartitionResponse, type ListOffsetsTopicResponse } from '../wire/messages/list-offsets-response.js';
import { ErrorCode } from '../wire/errors.js';
import { type FetchIsolation, type ReplicaManager, SpecialTimestamp } from '../cluster/replication/replica-manager.js';
import { defineHandler } from './handler.js';

const CONSUMER_REPLICA_ID = -1;
const DEBUGGING_REPLICA_ID = -2;
const READ_UNCOMMITTED = 0;
const READ_COMMITTED = 1;

/** The first version that knows each special target. */
const MIN_VERSION_OF_TARGET = new Map<bigint, number>([
  [SpecialTimestamp.LATEST, 1],
  [SpecialTimestamp.EARLIEST, 1],
  [SpecialTimestamp.MAX_TIMESTAMP, 7],
  [SpecialTimestamp.EARLIEST_LOCAL, 8],
  [SpecialTimestamp.LATEST_TIERED, 9],
  [SpecialTimestamp.EARLIEST_PENDING_UPLOAD, 11],
]);

/** Kafka's ReplicaManager.isListOffsetsTimestampUnsupported. Example: (-3n, 6) -> true; (-3n, 7) -> false; (-7n, 10) -> true. */
export function targetUnsupported(timestamp: bigint, version: number): boolean {
  if (timestamp >= 0n) return false;
  const min = MIN_VERSION_OF_TARGET.get(timestamp);
  return min === undefined || version < min;
}

function partitionError(partitionIndex: number, errorCode: number): ListOffsetsPartitionResponse {
  return { partitionIndex, errorCode, oldStyleOffsets: [], timestamp: -1n, offset: -1n, leaderEpoch: -1 };
}

/** The request's partitions by topic, each once, in first-asked order, with how often each was asked. */
function distinctPartitions(req: ListOffsetsRequest): Map<string, Map<number, { timestamp: bigint; currentLeaderEpoch: number; count: number }>> {
  const out = new Map<string, Map<number, { timestamp: bigint; currentLeaderEpoch: number; count: number }>>();
  for (const t of req.topics) {
    let parts = out.get(t.name);
    if (!parts) out.set(t.name, (parts = new Map()));
    for (const p of t.partitions) {
      const seen = parts.get(p.partitionIndex);
      if (seen) seen.count++;
      else parts.set(p.partitionIndex, { timestamp: p.timestamp, currentLeaderEpoch: p.currentLeaderEpoch, count: 1 });
    }
  }
  return out;
}

export const listOffsets = defineHandler<ListOffsetsRequest, ListOffsetsResponse>({
  apiKey: 2,
  name: 'ListOffsets',
  request: ListOffsetsRequest,
  response: ListOffsetsResponse,
  minVersion: 0,
  maxVersion: 11,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    if (v === 0) return handleV0(req, ctx.services.replicas);
    // Kafka fails the whole request on an isolation level it does not know.
    if (req.isolationLevel !== READ_UNCOMMITTED && req.isolationLevel !== READ_COMMITTED) {
      return errorBody(req, ErrorCode.UNKNOWN_SERVER_ERROR);
    }
    const { replicas } = ctx.services;
    const isolation: FetchIsolation =
      req.replicaId !== CONSUMER_REPLICA_ID ? 'logEnd' : req.isolationLevel === READ_COMMITTED ? 'txnCommitted' : 'highWatermark';
    const fetchOnlyFromLeader = req.replicaId !== DEBUGGING_REPLICA_ID;
    const topics: ListOffsetsTopicResponse[] = [];
    for (const [name, parts] of distinctPartitions(req)) {
      const partitions: ListOffsetsPartitionResponse[] = [];
      topics.push({ name, partitions });
      for (const [index, p] of parts) {
        if (p.count > 1) {
          partitions.push(partitionError(index, ErrorCode.INVALID_REQUEST));
          continue;
        }
        if (targetUnsupported(p.timestamp, v)) {
          partitions.push(partitionError(index, ErrorCode.UNSUPPORTED_VERSION));
          continue;
        }
        const r = replicas.fetchOffsetForTimestamp(name, index, p.timestamp, isolation, p.currentLeaderEpoch, fetchOnlyFromLeader);
        if (r.errorCode !== ErrorCode.NONE) {
          partitions.push(partitionError(index, r.errorCode === ErrorCode.OFFSET_NOT_AVAILABLE && v < 5 ? ErrorCode.LEADER_NOT_AVAILABLE : r.errorCode));
          continue;
        }
        partitions.push({ partitionIndex: index, errorCode: ErrorCode.NONE, oldStyleOffsets: [], timestamp: r.timestamp, offset: r.offset, leaderEpoch: r.leaderEpoch });
      }
    }
    return { throttleTimeMs: 0, topics };
  },
  errorResponse: (req, errorCode) => errorBody(req, errorCode),
});

/** v0: each partition as asked, with its list of offsets. */
function handleV0(req: ListOffsetsRequest, replicas: ReplicaManager): ListOffsetsResponse {
  const isFromConsumer = req.replicaId === CONSUMER_REPLICA_ID;
  const fetchOnlyFromLeader = req.replicaId !== DEBUGGING_REPLICA_ID;
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p): ListOffsetsPartitionResponse => {
        const r = replicas.legacyOffsetsForTimestamp(t.name, p.partitionIndex, p.timestamp, p.maxNumOffsets, isFromConsumer, fetchOnlyFromLeader);
        return { ...partitionError(p.partitionIndex, r.errorCode), oldStyleOffsets: r.offsets };
      }),
    })),
  };
}

/** Every partition of the request with `errorCode`, laid out as asked (Kafka's getErrorResponse). */
function errorBody(req: ListOffsetsRequest, errorCode: number): ListOffsetsResponse {
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => partitionError(p.partitionIndex, errorCode)) })),
  };
}

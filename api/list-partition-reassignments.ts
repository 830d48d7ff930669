/**
 * ListPartitionReassignments (key 46), version 0 (KIP-455).
 *
 * The partitions being moved, with their replicas (the target, then those
 * leaving), the replicas being added and those being removed: of the topics
 * and partitions named, or of every topic when topics is null. Partitions
 * not being moved, unknown ones included, are left out, as Kafka does.
 * timeout_ms <= 0 refuses the request with REQUEST_TIMED_OUT.
 */
import { ErrorCode } from '../wire/errors.js';
import { ListPartitionReassignmentsRequest } from '../wire/messages/list-partition-reassignments-request.js';
import { ListPartitionReassignmentsResponse, type OngoingTopicReassignment } from '../wire/messages/list-partition-reassignments-response.js';
import { defineHandler } from './handler.js';

export const listPartitionReassignments = defineHandler<ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse>({
  apiKey: 46,
  name: 'ListPartitionReassignments',
  request: ListPartitionReassignmentsRequest,
  response: ListPartitionReassignmentsResponse,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    if (req.timeoutMs <= 0) return errorBody(ErrorCode.REQUEST_TIMED_OUT);
    const image = ctx.services.metadata.image();
    const wanted = req.topics === null ? [...image.topics.values()].map((t) => ({ name: t.name, partitionIndexes: t.partitions.map((p) => p.partition) })) : req.topics;
    const topics: OngoingTopicReassignment[] = [];
    for (const w of wanted) {
      const t = image.topics.get(w.name);
      if (!t) continue;
      const partitions = [...new Set(w.partitionIndexes)]
        .map((i) => t.partitions[i])
        .filter((p) => p?.addingReplicas !== undefined)
        .map((p) => ({ partitionIndex: p!.partition, replicas: [...p!.replicas], addingReplicas: [...p!.addingReplicas!], removingReplicas: [...(p!.removingReplicas ?? [])] }));
      if (partitions.length > 0) topics.push({ name: w.name, partitions });
    }
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, topics };
  },
  errorResponse: (_req, errorCode) => errorBody(errorCode),
});

function errorBody(errorCode: number): ListPartitionReassignmentsResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage: null, topics: [] };
}

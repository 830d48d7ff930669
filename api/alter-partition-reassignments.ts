/**
 * AlterPartitionReassignments (key 45), versions 0-1 (KIP-455).
 * v1 adds allow_replication_factor_change (KIP-1083; true unless asked): when
 * false, a target with another number of replicas than the partition has is
 * INVALID_REPLICATION_FACTOR, and the answer echoes the flag.
 *
 * Each partition starts moving to its target replicas, or (replicas null)
 * its reassignment in progress is cancelled. The new replicas fetch from the
 * leader; once all of them are in the ISR, the controller drops the replicas
 * that are not in the target (and moves the leadership if its leader is one
 * of them). Per partition: NONE once the move is recorded,
 * INVALID_REPLICA_ASSIGNMENT (an empty or repeated list, or an unregistered
 * broker), NO_REASSIGNMENT_IN_PROGRESS (a cancel with nothing to cancel) or
 * UNKNOWN_TOPIC_OR_PARTITION. timeout_ms <= 0 refuses the whole request with
 * REQUEST_TIMED_OUT.
 *
 * A broker of its own has nowhere to move a replica: any target but itself
 * is INVALID_REPLICA_ASSIGNMENT, and its own node id changes nothing.
 */
import { ErrorCode } from '../wire/errors.js';
import { AlterPartitionReassignmentsRequest } from '../wire/messages/alter-partition-reassignments-request.js';
import { AlterPartitionReassignmentsResponse, type ReassignableTopicResponse } from '../wire/messages/alter-partition-reassignments-response.js';
import type { MetadataImage, PartitionChangeResult } from '../cluster/metadata/metadata-image.js';
import { defineHandler } from './handler.js';

export const alterPartitionReassignments = defineHandler<AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse>({
  apiKey: 45,
  name: 'AlterPartitionReassignments',
  request: AlterPartitionReassignmentsRequest,
  response: AlterPartitionReassignmentsResponse,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    if (req.timeoutMs <= 0) return errorBody(req, ErrorCode.REQUEST_TIMED_OUT);
    const store = ctx.services.metadata;
    const all = req.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, replicas: p.replicas })));
    const image = store.image();
    const refused: PartitionChangeResult[] = [];
    const changes = all.filter((c) => {
      const current = image.topics.get(c.topic)?.partitions[c.partition]?.replicas.length;
      if (req.allowReplicationFactorChange || c.replicas === null || current === undefined || c.replicas.length === current) return true;
      refused.push({
        topic: c.topic,
        partition: c.partition,
        errorCode: ErrorCode.INVALID_REPLICATION_FACTOR,
        message: `The replication factor would change from ${current} to ${c.replicas.length}, which this request does not allow (allowReplicationFactorChange is false).`,
      });
      return false;
    });
    const done = changes.length === 0 ? [] : store.alterPartitionReassignments ? await store.alterPartitionReassignments(changes) : alone(image, ctx.services.settings.nodeId, changes);
    const order = new Map(all.map((c, i) => [`${c.topic}\u0000${c.partition}`, i]));
    const results = [...done, ...refused].sort((a, b) => order.get(`${a.topic}\u0000${a.partition}`)! - order.get(`${b.topic}\u0000${b.partition}`)!);
    return { throttleTimeMs: 0, allowReplicationFactorChange: req.allowReplicationFactorChange, errorCode: ErrorCode.NONE, errorMessage: null, responses: group(results) };
  },
  errorResponse: (req, errorCode) => errorBody(req, errorCode),
});

function errorBody(req: AlterPartitionReassignmentsRequest, errorCode: number): AlterPartitionReassignmentsResponse {
  return {
    throttleTimeMs: 0,
    allowReplicationFactorChange: req.allowReplicationFactorChange,
    errorCode,
    errorMessage: null,
    responses: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode, errorMessage: null })) })),
  };
}

function alone(image: MetadataImage, nodeId: number, changes: readonly { topic: string; partition: number; replicas: readonly number[] | null }[]): PartitionChangeResult[] {
  return changes.map(({ topic, partition, replicas }) => {
    const answer = (errorCode: number, message: string | null = null): PartitionChangeResult => ({ topic, partition, errorCode, message });
    if (!image.topics.get(topic)?.partitions[partition]) return answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    if (replicas === null) return answer(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, 'No reassignment is in progress for this partition.');
    if (replicas.length === 1 && replicas[0] === nodeId) return answer(ErrorCode.NONE);
    return answer(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `This broker (${nodeId}) is the only one; replicas [${replicas.join(', ')}] cannot be placed.`);
  });
}

function group(results: readonly PartitionChangeResult[]): ReassignableTopicResponse[] {
  const byTopic = new Map<string, ReassignableTopicResponse>();
  for (const r of results) {
    let t = byTopic.get(r.topic);
    if (!t) byTopic.set(r.topic, (t = { name: r.topic, partitions: [] }));
    t.partitions.push({ partitionIndex: r.partition, errorCode: r.errorCode, errorMessage: r.message });
  }
  return [...byTopic.values()];
}

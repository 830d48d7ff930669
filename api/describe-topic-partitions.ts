/**
 * DescribeTopicPartitions (key 75), version 0 (KIP-966): Metadata's description
 * of topics and their partitions, paged, as Kafka 4.4.0 answers it.
 *
 * - Topics are answered in name order, each once. An empty list means every topic
 *   (internal ones too); a named topic that does not exist is answered
 *   UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name),
 *   with the zero id, and nothing is ever created.
 * - Paging: one answer describes at most min(ResponsePartitionLimit,
 *   max.request.partition.size.limit) partitions, and at least one whatever the
 *   request asks. When a topic's partitions do not all fit, NextCursor names it
 *   and its first partition left out, and the answer ends there; when the limit
 *   is used up exactly at the end of a topic and more topics follow, NextCursor
 *   names the next one at partition 0 (whether it exists or not). The client
 *   sends the cursor back as Cursor: topics named before its topic are skipped,
 *   and its topic starts at its partition (a partition past the end gives the
 *   topic with no partitions). A cursor whose topic is not among those named, or
 *   whose partition is negative, makes the request invalid (INVALID_REQUEST for
 *   every topic named, in request order).
 * - Partitions carry no error (no leader is leaderId -1), their replicas and ISR
 *   as assigned, and the replicas on brokers that are gone or cannot be reached
 *   on the client's listener as offline. EligibleLeaderReplicas and LastKnownElr
 *   are empty lists: gregor runs eligible.leader.replicas.version 0 (see
 *   cluster/metadata/features.ts), where Kafka keeps no ELR and answers [].
 * - IsInternal goes by the name, as in Kafka (so `__share_group_state` counts).
 * - No authorizer: every topic is described, and TopicAuthorizedOperations holds
 *   every operation a topic allows, also for a topic that does not exist.
 */
import { DescribeTopicPartitionsRequest } from '../wire/messages/describe-topic-partitions-request.js';
import {
  DescribeTopicPartitionsResponse,
  type Cursor,
  type DescribeTopicPartitionsResponsePartition,
  type DescribeTopicPartitionsResponseTopic,
} from '../wire/messages/describe-topic-partitions-response.js';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/reader.js';
import { endpointFor, type MetadataImage, type PartitionState, type TopicImage } from '../cluster/metadata/metadata-image.js';
import { isInternalTopicName, topicNameProblem } from '../cluster/metadata/topic-names.js';
import { defineHandler } from './handler.js';
import { TOPIC_OPERATIONS } from './metadata.js';

/** max.request.partition.size.limit's default, Kafka's. */
export const DEFAULT_MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000;
const OPERATIONS_NOT_REQUESTED = -2147483648;

/** Whether a broker is registered and can be reached on `listener`. */
function reachable(image: MetadataImage, nodeId: number, listener: string): boolean {
  const b = image.brokers.get(nodeId);
  return b !== undefined && endpointFor(b, listener) !== undefined;
}

function describePartition(p: PartitionState, image: MetadataImage, listener: string): DescribeTopicPartitionsResponsePartition {
  const offline = p.replicas.filter((r) => p.offlineReplicas.includes(r) || !reachable(image, r, listener));
  const leads = p.leader >= 0 && !p.offlineReplicas.includes(p.leader) && reachable(image, p.leader, listener);
  return {
    errorCode: ErrorCode.NONE,
    partitionIndex: p.partition,
    leaderId: leads ? p.leader : -1,
    leaderEpoch: p.leaderEpoch,
    replicaNodes: [...p.replicas],
    isrNodes: [...p.isr],
    eligibleLeaderReplicas: [],
    lastKnownElr: [],
    offlineReplicas: offline,
  };
}

function unknownTopic(name: string): DescribeTopicPartitionsResponseTopic {
  return {
    errorCode: topicNameProblem(name) === null ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.INVALID_TOPIC_EXCEPTION,
    name,
    topicId: ZERO_UUID,
    isInternal: isInternalTopicName(name),
    partitions: [],
    topicAuthorizedOperations: TOPIC_OPERATIONS,
  };
}

/**
 * The partitions of `t` from index `start`, at most `room` of them, and the index of
 * the first one left out (null when none is). Kafka computes the end as a 32-bit
 * int, so a start near 2^31 wraps it negative: no partition, and a negative next
 * index, which is what Kafka answers too.
 */
function page(t: TopicImage, start: number, room: number): { indexes: number[]; next: number | null } {
  const count = t.partitions.length;
  const end = Math.min(count, (start + room) | 0);
  const indexes: number[] = [];
  for (let i = start; i < end; i++) indexes.push(i);
  return { indexes, next: end < count ? end : null };
}

export const describeTopicPartitions = defineHandler<DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse>({
  apiKey: 75,
  name: 'DescribeTopicPartitions',
  request: DescribeTopicPartitionsRequest,
  response: DescribeTopicPartitionsResponse,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    const image = ctx.services.metadata.image();
    const cursor = req.cursor;
    const all = req.topics.length === 0;
    // Names sorting before the cursor's topic were answered on earlier pages.
    const from = cursor?.topicName ?? '';
    const names = new Set<string>();
    for (const name of all ? image.topics.keys() : req.topics.map((t) => t.name)) {
      if (name >= from) names.add(name);
    }
    if (cursor !== null && ((!all && !names.has(cursor.topicName)) || cursor.partitionIndex < 0)) {
      return errorBody(req, ErrorCode.INVALID_REQUEST);
    }
    // Kafka 4.4 fails on the topic "" when there is no cursor (it reads the start
    // partition of a topic named like the cursor's, "" by default, from the absent
    // cursor): the whole request is UNKNOWN_SERVER_ERROR. With a cursor naming "",
    // "" is just an illegal name.
    if (cursor === null && names.has('')) return errorBody(req, ErrorCode.UNKNOWN_SERVER_ERROR);

    const limit = ctx.services.settings.config.int('max.request.partition.size.limit') ?? DEFAULT_MAX_REQUEST_PARTITION_SIZE_LIMIT;
    let room = Math.max(Math.min(limit, req.responsePartitionLimit), 1);
    const topics: DescribeTopicPartitionsResponseTopic[] = [];
    let nextCursor: Cursor | null = null;
    for (const name of [...names].sort()) {
      if (room === 0) {
        nextCursor = { topicName: name, partitionIndex: 0 };
        break;
      }
      const t = image.topics.get(name);
      if (!t) {
        // With every topic asked for, one deleted meanwhile is just left out.
        if (!all) topics.push(unknownTopic(name));
        continue;
      }
      const start = cursor !== null && name === cursor.topicName ? cursor.partitionIndex : 0;
      const { indexes, next } = page(t, start, room);
      const partitions: DescribeTopicPartitionsResponsePartition[] = [];
      for (const i of indexes) {
        const p = t.partitions[i]?.partition === i ? t.partitions[i] : t.partitions.find((x) => x.partition === i);
        if (p) partitions.push(describePartition(p, image, ctx.listener));
      }
      topics.push({
        errorCode: ErrorCode.NONE,
        name,
        topicId: t.topicId,
        isInternal: isInternalTopicName(name),
        partitions,
        topicAuthorizedOperations: TOPIC_OPERATIONS,
      });
      if (next !== null) {
        nextCursor = { topicName: name, partitionIndex: next };
        break;
      }
      room -= partitions.length;
    }
    return { throttleTimeMs: 0, topics, nextCursor };
  },
  errorResponse: errorBody,
});

/** Every topic named, in request order, with `errorCode` and nothing else. */
function errorBody(req: DescribeTopicPartitionsRequest, errorCode: number): DescribeTopicPartitionsResponse {
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({
      errorCode,
      name: t.name,
      topicId: ZERO_UUID,
      isInternal: false,
      partitions: [],
      topicAuthorizedOperations: OPERATIONS_NOT_REQUESTED,
    })),
    nextCursor: null,
  };
}

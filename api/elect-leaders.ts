/**
 * ElectLeaders (key 43), versions 0-2.
 * v1 adds the election type (v0 is always a preferred election) and the
 * top-level error code; v2 is flexible.
 *
 * A preferred election (type 0) makes each partition's first replica its
 * leader when that replica is alive and in the ISR; an unclean one (type 1)
 * gives a partition without a live leader one, from outside the ISR when no
 * in-sync replica is alive. Per partition: NONE when the leader changed,
 * ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
 * ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION. Null topic
 * partitions mean every partition, and then only those that needed an
 * election are listed, as Kafka does. Another type is INVALID_REQUEST.
 *
 * A broker of its own leads every partition it has: nothing ever needs an
 * election there.
 */
import { ErrorCode } from '../wire/errors.js';
import { ElectLeadersRequest } from '../wire/messages/elect-leaders-request.js';
import { ElectLeadersResponse, type ReplicaElectionResult } from '../wire/messages/elect-leaders-response.js';
import type { MetadataImage, PartitionChangeResult } from '../cluster/metadata/metadata-image.js';
import { defineHandler } from './handler.js';

const TYPES = ['preferred', 'unclean'] as const;

export const electLeaders = defineHandler<ElectLeadersRequest, ElectLeadersResponse>({
  apiKey: 43,
  name: 'ElectLeaders',
  request: ElectLeadersRequest,
  response: ElectLeadersResponse,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    const type = TYPES[ctx.apiVersion === 0 ? 0 : req.electionType];
    if (!type) return errorBody(req, ErrorCode.INVALID_REQUEST);
    const store = ctx.services.metadata;
    const asked = req.topicPartitions === null ? null : dedupe(req.topicPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition }))));
    const results = store.electLeaders ? await store.electLeaders(type, asked) : alone(store.image(), type, asked);
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, replicaElectionResults: group(results) };
  },
  errorResponse: (req, errorCode) => errorBody(req, errorCode),
});

function errorBody(req: ElectLeadersRequest, errorCode: number): ElectLeadersResponse {
  const results = (req.topicPartitions ?? []).flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition, errorCode, message: null })));
  return { throttleTimeMs: 0, errorCode, replicaElectionResults: group(results) };
}

function dedupe(list: { topic: string; partition: number }[]): { topic: string; partition: number }[] {
  const seen = new Set<string>();
  return list.filter((p) => {
    const k = `${p.topic}\u0000${p.partition}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** On a broker of its own: every partition has its only replica as leader. */
function alone(image: MetadataImage, type: 'preferred' | 'unclean', asked: readonly { topic: string; partition: number }[] | null): PartitionChangeResult[] {
  if (asked === null) return [];
  return asked.map(({ topic, partition }) => {
    const p = image.topics.get(topic)?.partitions[partition];
    if (!p) return { topic, partition, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message: null };
    const needed = type === 'preferred' ? p.leader !== p.replicas[0] : p.leader < 0;
    if (!needed) return { topic, partition, errorCode: ErrorCode.ELECTION_NOT_NEEDED, message: null };
    return { topic, partition, errorCode: type === 'preferred' ? ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE : ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, message: null };
  });
}

function group(results: readonly PartitionChangeResult[]): ReplicaElectionResult[] {
  const byTopic = new Map<string, ReplicaElectionResult>();
  for (const r of results) {
    let t = byTopic.get(r.topic);
    if (!t) byTopic.set(r.topic, (t = { topic: r.topic, partitionResult: [] }));
    t.partitionResult.push({ partitionId: r.partition, errorCode: r.errorCode, errorMessage: r.message });
  }
  return [...byTopic.values()];
}

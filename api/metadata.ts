/**
 * Metadata (key 3), versions 0-13.
 * v0: an empty topic list means every topic; v1+: null means every topic and an
 * empty list means none, and controller_id appears. v2 adds cluster_id, v4
 * allow_auto_topic_creation, v7 leader epochs, v8 authorized operations, v10 topic
 * ids (and lookup by id), v12 nullable topic names, v13 a top-level error code
 * (always NONE here, as from Kafka without a rebootstrap). Cluster authorized
 * operations exist in v8-10 only.
 */
import { MetadataRequest } from '../wire/messages/metadata-request.js';
import { MetadataResponse, type MetadataResponseBroker, type MetadataResponseTopic } from '../wire/messages/metadata-response.js';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/reader.js';
import { endpointFor, type MetadataImage, type PartitionState, type TopicImage } from '../cluster/metadata/metadata-image.js';
import { autoCreateTopic } from './auto-create.js';
import { defineHandler, type RequestContext } from './handler.js';

/** Bits of READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: all a topic allows without an authorizer. */
export const TOPIC_OPERATIONS = [3, 4, 5, 6, 7, 8, 10, 11].reduce((m, op) => m | (1 << op), 0);
/**
 * Bits of CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS and
 * IDEMPOTENT_WRITE: 8096, what Kafka 4.0.2 answers without an authorizer, in Metadata
 * v8-v10 and DescribeCluster alike.
 */
export const CLUSTER_OPERATIONS = [5, 7, 8, 9, 10, 11, 12].reduce((m, op) => m | (1 << op), 0);
const OPERATIONS_NOT_REQUESTED = -2147483648;

function brokersOf(image: MetadataImage, listener: string): MetadataResponseBroker[] {
  const out: MetadataResponseBroker[] = [];
  for (const b of image.brokers.values()) {
    const ep = endpointFor(b, listener);
    if (ep) out.push({ nodeId: b.nodeId, host: ep.host, port: ep.port, rack: b.rack });
  }
  return out;
}

const leaderAlive = (p: PartitionState): boolean => p.leader >= 0 && !p.offlineReplicas.includes(p.leader);

function describeTopic(t: TopicImage, includeOps: boolean): MetadataResponseTopic {
  return {
    errorCode: ErrorCode.NONE,
    name: t.name,
    topicId: t.topicId,
    isInternal: t.internal,
    partitions: t.partitions.map((p) => ({
      // As Kafka: a partition whose leader is none or a broker that is gone has no leader to name.
      errorCode: leaderAlive(p) ? ErrorCode.NONE : ErrorCode.LEADER_NOT_AVAILABLE,
      partitionIndex: p.partition,
      leaderId: leaderAlive(p) ? p.leader : -1,
      leaderEpoch: p.leaderEpoch,
      replicaNodes: [...p.replicas],
      isrNodes: [...p.isr],
      offlineReplicas: [...p.offlineReplicas],
    })),
    topicAuthorizedOperations: includeOps ? TOPIC_OPERATIONS : OPERATIONS_NOT_REQUESTED,
  };
}

function topicError(errorCode: number, name: string | null, topicId = ZERO_UUID): MetadataResponseTopic {
  return { errorCode, name, topicId, isInternal: false, partitions: [], topicAuthorizedOperations: OPERATIONS_NOT_REQUESTED };
}

async function resolveTopic(
  requested: { name: string | null; topicId: string },
  allowCreate: boolean,
  includeOps: boolean,
  ctx: RequestContext,
): Promise<MetadataResponseTopic> {
  const store = ctx.services.metadata;
  const image = store.image();
  // An empty name with no id is just an illegal name, answered below.
  if (requested.name === null || (requested.name === '' && requested.topicId !== ZERO_UUID)) {
    const byId = image.topicsById.get(requested.topicId);
    if (!byId) return topicError(ErrorCode.UNKNOWN_TOPIC_ID, requested.name, requested.topicId);
    return describeTopic(byId, includeOps);
  }
  const name = requested.name;
  const known = image.topics.get(name);
  if (known) return describeTopic(known, includeOps);
  const outcome = await autoCreateTopic(name, allowCreate, ctx.services);
  switch (outcome.kind) {
    case 'exists':
      return describeTopic(outcome.topic, includeOps);
    case 'refused':
      return topicError(outcome.illegalName ? ErrorCode.INVALID_TOPIC_EXCEPTION : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name);
    case 'created':
      // Kafka 4 answers the request that starts a creation as if the topic were unknown
      // (a retriable code); clients ask again and then see the leader.
      return topicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name);
  }
}

export const metadata = defineHandler<MetadataRequest, MetadataResponse>({
  apiKey: 3,
  name: 'Metadata',
  request: MetadataRequest,
  response: MetadataResponse,
  minVersion: 0,
  maxVersion: 13,
  async handle(req, ctx) {
    const v = ctx.apiVersion;
    // v10-11 requests carry a topic id field but Kafka serves lookups by id only from
    // v12 (responses cannot carry a null name before it): it refuses them with INVALID_REQUEST.
    if (v < 12 && req.topics?.some((t) => t.name === null || t.topicId !== ZERO_UUID)) {
      return errorBody(req, ErrorCode.INVALID_REQUEST, ctx);
    }
    const image = ctx.services.metadata.image();
    const all = req.topics === null || (v === 0 && req.topics.length === 0);
    // Before v4 there is no flag, and Kafka creates topics whenever its config allows.
    const allowCreate = v < 4 ? true : req.allowAutoTopicCreation;
    const includeOps = v >= 8 && req.includeTopicAuthorizedOperations;
    const topics: MetadataResponseTopic[] = [];
    if (all) {
      for (const t of image.topics.values()) topics.push(describeTopic(t, includeOps));
    } else {
      // A topic asked for twice is answered once, as Kafka does.
      const seen = new Set<string>();
      for (const t of req.topics!) {
        const key = t.name ?? `id:${t.topicId}`;
        if (seen.has(key)) continue;
        seen.add(key);
        topics.push(await resolveTopic(t, allowCreate, includeOps, ctx));
      }
    }
    return {
      throttleTimeMs: 0,
      brokers: brokersOf(image, ctx.listener),
      clusterId: image.clusterId,
      controllerId: image.controllerId,
      topics,
      clusterAuthorizedOperations: v >= 8 && v <= 10 && req.includeClusterAuthorizedOperations ? CLUSTER_OPERATIONS : OPERATIONS_NOT_REQUESTED,
      errorCode: ErrorCode.NONE,
    };
  },
  errorResponse: errorBody,
});

/** Every requested topic with `errorCode`; a null name becomes "" where responses cannot carry null. */
function errorBody(req: MetadataRequest, errorCode: number, ctx: RequestContext): MetadataResponse {
  const image = ctx.services.metadata.image();
  return {
    throttleTimeMs: 0,
    brokers: brokersOf(image, ctx.listener),
    clusterId: image.clusterId,
    controllerId: image.controllerId,
    topics: (req.topics ?? []).map((t) => topicError(errorCode, t.name ?? (ctx.apiVersion < 12 ? '' : null), t.topicId)),
    clusterAuthorizedOperations: OPERATIONS_NOT_REQUESTED,
    errorCode: ErrorCode.NONE,
  };
}

/**
 * FindCoordinator (key 10), versions 0-6.
 * v1 adds key_type (0 group, 1 transaction) and an error message; v3 is
 * flexible; v4 asks for several keys at once and answers one entry per key;
 * v6 adds key type 2, the share coordinator (KIP-932), whose keys are
 * "groupId:topicId:partition" (INVALID_REQUEST for another shape, or below
 * v6).
 *
 * The coordinator of a group is the leader of partition
 * abs(javaHashCode(groupId)) % offsets.topic.num.partitions of
 * __consumer_offsets, and of a transactional id the leader of its partition of
 * __transaction_state, and of a share partition the leader of partition
 * abs(javaHashCode(key)) % share.coordinator.state.topic.num.partitions of
 * __share_group_state. As in Kafka, the first request that needs an internal
 * topic creates it and is answered COORDINATOR_NOT_AVAILABLE; clients retry.
 *
 * librdkafka turns LZ4 on only when the broker advertises this API from v0
 * (CLIENT-MATRIX.md trap 21), so it is served even before groups are.
 */
import { ErrorCode } from '../wire/errors.js';
import { FindCoordinatorRequest } from '../wire/messages/find-coordinator-request.js';
import { FindCoordinatorResponse, type Coordinator } from '../wire/messages/find-coordinator-response.js';
import { endpointFor } from '../cluster/metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC, javaStringHashCode, partitionFor } from '../cluster/coordinator/partition-for.js';
import { defineHandler, type BrokerServices, type RequestContext } from './handler.js';
import { SHARE_GROUP_STATE_TOPIC } from '../cluster/metadata/topic-names.js';

export { GROUP_METADATA_TOPIC, javaStringHashCode, partitionFor };
export const TRANSACTION_STATE_TOPIC = '__transaction_state';

const KEY_TYPE_GROUP = 0;
const KEY_TYPE_TRANSACTION = 1;
const KEY_TYPE_SHARE = 2;
const BATCHED_VERSION = 4;
const SHARE_KEY_VERSION = 6;

/**
 * A share coordinator key as Kafka's SharePartitionKey reads it
 * ("groupId:topicId:partition"; the group id may hold ':'), in its
 * canonical form, whose hash picks the partition; null when malformed.
 *
 * Example: "g:AAAAAAAAAAAAAAAAAAAAAg:07" -> "g:AAAAAAAAAAAAAAAAAAAAAg:7"; "g:x:0" -> null.
 */
export function shareCoordinatorKey(key: string): string | null {
  const tokens = key.split(':');
  if (tokens.length < 3) return null;
  const partition = tokens.at(-1)!;
  const topicId = tokens.at(-2)!;
  const groupId = tokens.slice(0, -2).join(':');
  if (groupId.trim() === '') return null;
  if (!/^[A-Za-z0-9_-]{22}(==)?$/.test(topicId)) return null;
  if (!/^[+-]?\d+$/.test(partition)) return null;
  const n = Number(partition);
  if (!Number.isSafeInteger(n) || n < -2147483648 || n > 2147483647) return null;
  return `${groupId}:${Buffer.from(topicId, 'base64url').toString('base64url')}:${n}`;
}

interface InternalTopicSpec {
  name: string;
  partitions: number;
  replicationFactor: number;
  configs: Record<string, string>;
}

/** The internal topic behind a key type, with the settings Kafka gives it. */
function internalTopic(keyType: number, services: BrokerServices): InternalTopicSpec {
  const s = services.settings;
  if (keyType === KEY_TYPE_GROUP) {
    return {
      name: GROUP_METADATA_TOPIC,
      partitions: s.config.int('offsets.topic.num.partitions'),
      replicationFactor: s.config.int('offsets.topic.replication.factor'),
      configs: {
        'cleanup.policy': 'compact',
        'compression.type': 'producer',
        'segment.bytes': String(s.config.int('offsets.topic.segment.bytes')),
      },
    };
  }
  if (keyType === KEY_TYPE_SHARE) {
    // Kafka's ShareCoordinatorService.shareGroupStateTopicConfigs.
    return {
      name: SHARE_GROUP_STATE_TOPIC,
      partitions: s.config.int('share.coordinator.state.topic.num.partitions'),
      replicationFactor: s.config.int('share.coordinator.state.topic.replication.factor'),
      configs: {
        'cleanup.policy': 'delete',
        'compression.type': 'producer',
        'segment.bytes': String(s.config.int('share.coordinator.state.topic.segment.bytes')),
        'min.insync.replicas': String(s.config.int('share.coordinator.state.topic.min.isr')),
        'retention.ms': '-1',
      },
    };
  }
  return {
    name: TRANSACTION_STATE_TOPIC,
    partitions: s.config.int('transaction.state.log.num.partitions'),
    replicationFactor: s.config.int('transaction.state.log.replication.factor'),
    configs: {
      'cleanup.policy': 'compact',
      'compression.type': 'uncompressed',
      'min.insync.replicas': String(s.config.int('transaction.state.log.min.isr')),
      'segment.bytes': String(s.config.int('transaction.state.log.segment.bytes')),
      'unclean.leader.election.enable': 'false',
    },
  };
}

interface Found {
  errorCode: number;
  errorMessage: string | null;
  nodeId: number;
  host: string;
  port: number;
}

const NO_NODE = { nodeId: -1, host: '', port: -1 };

function failure(errorCode: number, errorMessage: string): Found {
  return { errorCode, errorMessage, ...NO_NODE };
}

async function locate(keyType: number, rawKey: string, ctx: RequestContext): Promise<Found> {
  const { metadata, log } = ctx.services;
  let key = rawKey;
  if (keyType === KEY_TYPE_SHARE) {
    const canonical = ctx.apiVersion >= SHARE_KEY_VERSION ? shareCoordinatorKey(rawKey) : null;
    if (canonical === null) return { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: null, ...NO_NODE };
    key = canonical;
  }
  const spec = internalTopic(keyType, ctx.services);
  let topic = metadata.image().topics.get(spec.name);
  if (!topic) {
    try {
      await metadata.createTopic({
        name: spec.name,
        numPartitions: spec.partitions,
        replicationFactor: Math.min(spec.replicationFactor, metadata.image().brokers.size),
        configs: spec.configs,
      });
      log.info({ topic: spec.name, partitions: spec.partitions }, 'created internal topic');
    } catch (err) {
      topic = metadata.image().topics.get(spec.name);
      if (!topic) log.warn({ topic: spec.name, err }, 'cannot create internal topic');
    }
    if (!topic) return failure(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${spec.name} is being created; retry`);
  }
  const index = partitionFor(key, topic.partitions.length);
  const state = topic.partitions.find((p) => p.partition === index);
  const leader = state && state.leader >= 0 ? metadata.image().brokers.get(state.leader) : undefined;
  const endpoint = leader && endpointFor(leader, ctx.listener);
  if (!leader || !endpoint) {
    return failure(ErrorCode.COORDINATOR_NOT_AVAILABLE, `partition ${index} of ${spec.name} has no reachable leader`);
  }
  return { errorCode: ErrorCode.NONE, errorMessage: null, nodeId: leader.nodeId, host: endpoint.host, port: endpoint.port };
}

export const findCoordinator = defineHandler<FindCoordinatorRequest, FindCoordinatorResponse>({
  apiKey: 10,
  name: 'FindCoordinator',
  request: FindCoordinatorRequest,
  response: FindCoordinatorResponse,
  minVersion: 0,
  maxVersion: 6,
  async handle(req, ctx) {
    const keyType = ctx.apiVersion >= 1 ? req.keyType : KEY_TYPE_GROUP;
    if (keyType !== KEY_TYPE_GROUP && keyType !== KEY_TYPE_TRANSACTION && keyType !== KEY_TYPE_SHARE) {
      return errorBody(req, ErrorCode.INVALID_REQUEST, ctx, `unknown coordinator key type ${keyType}`);
    }
    if (ctx.apiVersion < BATCHED_VERSION) {
      const found = await locate(keyType, req.key, ctx);
      return single(found);
    }
    const coordinators: Coordinator[] = [];
    for (const key of req.coordinatorKeys) {
      const found = await locate(keyType, key, ctx);
      coordinators.push({ key, ...found });
    }
    return { ...single(failure(ErrorCode.NONE, '')), errorMessage: null, coordinators };
  },
  errorResponse: (req, code, ctx) => errorBody(req, code, ctx, null),
});

function single(found: Found): FindCoordinatorResponse {
  return {
    throttleTimeMs: 0,
    errorCode: found.errorCode,
    errorMessage: found.errorMessage,
    nodeId: found.nodeId,
    host: found.host,
    port: found.port,
    coordinators: [],
  };
}

function errorBody(req: FindCoordinatorRequest, errorCode: number, ctx: RequestContext, message: string | null): FindCoordinatorResponse {
  const body = single({ errorCode, errorMessage: message, ...NO_NODE });
  if (ctx.apiVersion >= BATCHED_VERSION) {
    body.coordinators = req.coordinatorKeys.map((key) => ({ key, errorCode, errorMessage: message, ...NO_NODE }));
  }
  return body;
}

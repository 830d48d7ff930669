/**
 * StreamsGroupHeartbeat (key 88), versions 0-1: the streams rebalance
 * protocol of KIP-1071, which Kafka 4.4 serves once streams.version is 1 (as
 * gregor finalizes it). A Kafka Streams member joins with epoch 0, its
 * topology and process id, heartbeats with its epoch and (when they changed)
 * the tasks it owns, and leaves with -1 (-2: a static member leaving for a
 * while). The answer carries its epoch, the heartbeat interval, statuses
 * (missing or wrongly partitioned topics, a stale topology, a delayed
 * assignment, a requested shutdown), its tasks when they changed, and the
 * partitions each member's endpoint serves for interactive queries when the
 * member has not seen them yet. v1 adds AcceptableRecoveryLag as int64 and
 * TopologyDescriptionRequired (KIP-1331: never asked for here, as gregor
 * keeps no topology description).
 *
 * The internal topics the topology needs and that do not exist yet are
 * created here after the coordinator answers, with the partitions,
 * replication factor and configs the topology asks for, as Kafka's broker
 * does; the member learns of them at a later heartbeat.
 */
import { ErrorCode } from '../wire/errors.js';
import { StreamsGroupHeartbeatRequest } from '../wire/messages/streams-group-heartbeat-request.js';
import { StreamsGroupHeartbeatResponse } from '../wire/messages/streams-group-heartbeat-response.js';
import type { InternalTopicToCreate } from '../cluster/group/streams-group.js';
import { defineHandler, type BrokerServices } from './handler.js';
import { javaClientHost } from './join-group.js';

const INT32_MAX = 2147483647;

export const streamsGroupHeartbeat = defineHandler<StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse>({
  apiKey: 88,
  name: 'StreamsGroupHeartbeat',
  request: StreamsGroupHeartbeatRequest,
  response: StreamsGroupHeartbeatResponse,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const groups = ctx.services.groups;
    const r = groups.streams.heartbeat({
      version: ctx.apiVersion,
      groupId: req.groupId,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      endpointInformationEpoch: req.endpointInformationEpoch,
      instanceId: req.instanceId,
      rackId: req.rackId,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs,
      topology: req.topology,
      activeTasks: req.activeTasks,
      standbyTasks: req.standbyTasks,
      warmupTasks: req.warmupTasks,
      processId: req.processId,
      userEndpoint: req.userEndpoint,
      clientTags: req.clientTags,
      shutdownApplication: req.shutdownApplication,
      clientId: ctx.clientId ?? '',
      clientHost: javaClientHost(ctx.clientHost),
    });
    if (r.internalTopicsToCreate.length > 0) createInternalTopics(r.internalTopicsToCreate, ctx.services);
    const durable = r.errorCode === ErrorCode.NONE ? await groups.replicated(req.groupId) : ErrorCode.NONE;
    if (durable !== ErrorCode.NONE) return failure(durable, null);
    return {
      throttleTimeMs: 0,
      errorCode: r.errorCode,
      errorMessage: r.errorMessage,
      memberId: r.memberId,
      memberEpoch: r.memberEpoch,
      heartbeatIntervalMs: r.heartbeatIntervalMs,
      acceptableRecoveryLagLegacy: Math.min(r.acceptableRecoveryLag, INT32_MAX),
      taskOffsetIntervalMs: r.taskOffsetIntervalMs,
      acceptableRecoveryLag: BigInt(r.acceptableRecoveryLag),
      status: r.status,
      activeTasks: r.activeTasks,
      standbyTasks: r.standbyTasks,
      warmupTasks: r.warmupTasks,
      topologyDescriptionRequired: false,
      endpointInformationEpoch: r.endpointInformationEpoch,
      partitionsByUserEndpoint: r.partitionsByUserEndpoint,
    };
  },
  errorResponse: (_req, errorCode) => failure(errorCode, null),
});

function failure(errorCode: number, errorMessage: string | null): StreamsGroupHeartbeatResponse {
  return {
    throttleTimeMs: 0,
    errorCode,
    errorMessage,
    memberId: '',
    memberEpoch: 0,
    heartbeatIntervalMs: 0,
    acceptableRecoveryLagLegacy: 0,
    taskOffsetIntervalMs: 0,
    acceptableRecoveryLag: -1n,
    status: null,
    activeTasks: null,
    standbyTasks: null,
    warmupTasks: null,
    topologyDescriptionRequired: false,
    endpointInformationEpoch: 0,
    partitionsByUserEndpoint: null,
  };
}

/** Topics being created, so that heartbeats arriving meanwhile do not ask again. */
const creating = new WeakMap<BrokerServices, Set<string>>();

function createInternalTopics(topics: readonly InternalTopicToCreate[], services: BrokerServices): void {
  let inFlight = creating.get(services);
  if (!inFlight) creating.set(services, (inFlight = new Set()));
  const store = services.metadata;
  for (const t of topics) {
    if (inFlight.has(t.name) || store.image().topics.has(t.name)) continue;
    inFlight.add(t.name);
    const replicationFactor = t.replicationFactor > 0 ? t.replicationFactor : Math.min(services.settings.config.int('default.replication.factor'), store.image().brokers.size);
    store
      .createTopic({ name: t.name, numPartitions: t.numPartitions, replicationFactor, configs: t.configs })
      .then(
        () => services.log.info({ topic: t.name, partitions: t.numPartitions, replicationFactor }, 'created streams internal topic'),
        (err: unknown) => {
          if (!store.image().topics.has(t.name)) services.log.warn({ topic: t.name, err }, 'cannot create streams internal topic');
        },
      )
      .finally(() => inFlight.delete(t.name));
  }
}

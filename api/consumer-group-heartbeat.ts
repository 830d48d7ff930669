/**
 * ConsumerGroupHeartbeat (key 68), versions 0-1: the consumer rebalance
 * protocol of KIP-848, which Kafka 4.4 serves once group.version is 1 (as
 * gregor finalizes it). A member joins with epoch 0 and its subscription,
 * heartbeats with its epoch (and, when they changed, its subscription and
 * the partitions it owns), and leaves with -1 (-2: a static member leaving
 * for a while). The answer carries its epoch, the heartbeat interval and,
 * when it changed, the partitions it may own now; the broker computes the
 * assignment (group.consumer.assignors: uniform, range). v1 adds the regular
 * expression subscription and requires the client to choose its member id.
 *
 * The coordinator of the group answers (see
 * cluster/group/group-coordinator.ts); its records are on every in-sync
 * replica of the group's partition of __consumer_offsets before the answer.
 */
import { ErrorCode } from '../wire/errors.js';
import { ConsumerGroupHeartbeatRequest } from '../wire/messages/consumer-group-heartbeat-request.js';
import { ConsumerGroupHeartbeatResponse } from '../wire/messages/consumer-group-heartbeat-response.js';
import { defineHandler } from './handler.js';
import { javaClientHost } from './join-group.js';

export const consumerGroupHeartbeat = defineHandler<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse>({
  apiKey: 68,
  name: 'ConsumerGroupHeartbeat',
  request: ConsumerGroupHeartbeatRequest,
  response: ConsumerGroupHeartbeatResponse,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const groups = ctx.services.groups;
    const r = groups.consumerGroupHeartbeat({
      version: ctx.apiVersion,
      groupId: req.groupId,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      instanceId: req.instanceId,
      rackId: req.rackId,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs,
      subscribedTopicNames: req.subscribedTopicNames,
      subscribedTopicRegex: ctx.apiVersion >= 1 ? req.subscribedTopicRegex : null,
      serverAssignor: req.serverAssignor,
      topicPartitions: req.topicPartitions,
      clientId: ctx.clientId ?? '',
      clientHost: javaClientHost(ctx.clientHost),
    });
    // What the heartbeat wrote is answered once every in-sync replica of the group's partition has it.
    const durable = r.errorCode === ErrorCode.NONE ? await groups.replicated(req.groupId) : ErrorCode.NONE;
    if (durable !== ErrorCode.NONE) return failure(durable, null);
    return {
      throttleTimeMs: 0,
      errorCode: r.errorCode,
      errorMessage: r.errorMessage,
      memberId: r.memberId,
      memberEpoch: r.memberEpoch,
      heartbeatIntervalMs: r.heartbeatIntervalMs,
      assignment: r.assignment === null ? null : { topicPartitions: r.assignment },
    };
  },
  errorResponse: (_req, errorCode) => failure(errorCode, null),
});

function failure(errorCode: number, errorMessage: string | null): ConsumerGroupHeartbeatResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null };
}

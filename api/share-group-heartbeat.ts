/**
 * ShareGroupHeartbeat (key 76), version 1 (v0 was KIP-932's early access in
 * Kafka 4.0, removed in 4.1; Kafka 4.4 advertises 1-1): a share group
 * member joins with epoch 0 and the topics it subscribes to (its member id
 * chosen by the client), heartbeats with its epoch, and leaves with -1. The
 * answer carries its epoch, the heartbeat interval and, when it changed, the
 * partitions it is assigned (several members may share a partition).
 *
 * The coordinator of the group answers (cluster/group/share-groups.ts); its
 * records are on every in-sync replica of the group's partition of
 * __consumer_offsets before the answer. Without share groups (no persister)
 * every request is UNSUPPORTED_VERSION, as Kafka answers while share.version
 * is 0.
 */
import { ErrorCode } from '../wire/errors.js';
import { ShareGroupHeartbeatRequest } from '../wire/messages/share-group-heartbeat-request.js';
import { ShareGroupHeartbeatResponse } from '../wire/messages/share-group-heartbeat-response.js';
import { defineHandler } from './handler.js';
import { javaClientHost } from './join-group.js';

export const shareGroupHeartbeat = defineHandler<ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse>({
  apiKey: 76,
  name: 'ShareGroupHeartbeat',
  request: ShareGroupHeartbeatRequest,
  response: ShareGroupHeartbeatResponse,
  minVersion: 1,
  maxVersion: 1,
  async handle(req, ctx) {
    const groups = ctx.services.groups;
    const r = groups.shares.heartbeat({
      groupId: req.groupId,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      rackId: req.rackId,
      subscribedTopicNames: req.subscribedTopicNames,
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

function failure(errorCode: number, errorMessage: string | null): ShareGroupHeartbeatResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null };
}

/**
 * Heartbeat (key 12), versions 0-4.
 * v1 adds the throttle time; v3 group_instance_id; v4 is flexible.
 *
 * Restarts the member's session; REBALANCE_IN_PROGRESS tells it to join
 * again, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID that it was fenced (see
 * cluster/group/group-coordinator.ts).
 */
import { HeartbeatRequest } from '../wire/messages/heartbeat-request.js';
import { HeartbeatResponse } from '../wire/messages/heartbeat-response.js';
import { defineHandler } from './handler.js';

export const heartbeat = defineHandler<HeartbeatRequest, HeartbeatResponse>({
  apiKey: 12,
  name: 'Heartbeat',
  request: HeartbeatRequest,
  response: HeartbeatResponse,
  minVersion: 0,
  maxVersion: 4,
  handle(req, ctx) {
    const errorCode = ctx.services.groups.heartbeat({
      groupId: req.groupId,
      generationId: req.generationId,
      memberId: req.memberId,
      groupInstanceId: ctx.apiVersion >= 3 ? req.groupInstanceId : null,
    });
    return { throttleTimeMs: 0, errorCode };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode }),
});

/**
 * SyncGroup (key 14), versions 0-5.
 * v1 adds the throttle time; v3 group_instance_id; v4 is flexible; v5 adds
 * protocol_type and protocol_name to both sides, which the request must
 * then carry (else INCONSISTENT_GROUP_PROTOCOL, as Kafka answers) and which
 * must match the group's.
 *
 * The leader's request carries every member's assignment; each member's
 * request parks until the leader's has been persisted on every in-sync
 * replica of the group's partition, then gets its own part (see
 * cluster/group/group-coordinator.ts).
 */
import { ErrorCode } from '../wire/errors.js';
import { SyncGroupRequest } from '../wire/messages/sync-group-request.js';
import { SyncGroupResponse } from '../wire/messages/sync-group-response.js';
import { defineHandler } from './handler.js';

const EMPTY = Buffer.alloc(0);

function errorBody(errorCode: number): SyncGroupResponse {
  return { throttleTimeMs: 0, errorCode, protocolType: null, protocolName: null, assignment: EMPTY };
}

export const syncGroup = defineHandler<SyncGroupRequest, SyncGroupResponse>({
  apiKey: 14,
  name: 'SyncGroup',
  request: SyncGroupRequest,
  response: SyncGroupResponse,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    const v = ctx.apiVersion;
    if (v >= 5 && (req.protocolType === null || req.protocolName === null)) return errorBody(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const r = await ctx.services.groups.syncGroup({
      groupId: req.groupId,
      generationId: req.generationId,
      memberId: req.memberId,
      groupInstanceId: v >= 3 ? req.groupInstanceId : null,
      protocolType: v >= 5 ? req.protocolType : null,
      protocolName: v >= 5 ? req.protocolName : null,
      assignments: req.assignments,
    });
    if (r.errorCode === ErrorCode.NONE) {
      // The coordinator answers a new assignment once replicated; this also covers what it wrote without
      // a new assignment (a static member replaced in a stable group).
      const durable = await ctx.services.groups.replicated(req.groupId);
      if (durable !== ErrorCode.NONE) return errorBody(durable);
    }
    return { throttleTimeMs: 0, errorCode: r.errorCode, protocolType: r.protocolType, protocolName: r.protocolName, assignment: r.assignment };
  },
  errorResponse: (_req, errorCode) => errorBody(errorCode),
});

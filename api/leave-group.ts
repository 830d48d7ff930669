/**
 * LeaveGroup (key 13), versions 0-5.
 * v1 adds the throttle time; v3 names several members at once, each by
 * member id and group instance id, and answers each (KIP-345: a static
 * member may be removed by its instance id alone); v4 is flexible; v5 adds
 * a reason per member. Before v3 the one member's error is the answer's.
 */
import { ErrorCode } from '../wire/errors.js';
import { LeaveGroupRequest } from '../wire/messages/leave-group-request.js';
import { LeaveGroupResponse } from '../wire/messages/leave-group-response.js';
import { defineHandler, type RequestContext } from './handler.js';

const BATCHED_VERSION = 3;

function membersOf(req: LeaveGroupRequest, version: number): { memberId: string; groupInstanceId: string | null }[] {
  if (version < BATCHED_VERSION) return [{ memberId: req.memberId, groupInstanceId: null }];
  return req.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId }));
}

export const leaveGroup = defineHandler<LeaveGroupRequest, LeaveGroupResponse>({
  apiKey: 13,
  name: 'LeaveGroup',
  request: LeaveGroupRequest,
  response: LeaveGroupResponse,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const r = ctx.services.groups.leaveGroup(req.groupId, membersOf(req, v));
    if (v >= BATCHED_VERSION) return { throttleTimeMs: 0, errorCode: r.errorCode, members: r.members };
    const memberError = r.members.find((m) => m.errorCode !== ErrorCode.NONE)?.errorCode ?? ErrorCode.NONE;
    return { throttleTimeMs: 0, errorCode: r.errorCode !== ErrorCode.NONE ? r.errorCode : memberError, members: [] };
  },
  errorResponse: (_req: LeaveGroupRequest, errorCode: number, _ctx: RequestContext) => ({ throttleTimeMs: 0, errorCode, members: [] }),
});

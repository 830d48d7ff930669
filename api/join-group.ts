/**
 * JoinGroup (key 11), versions 0-9.
 * v0 has no rebalance timeout (the session timeout stands in, as Kafka's
 * JoinGroupRequest sets it); v1 adds it; v2 the throttle time; v4 answers a
 * first join without a member id MEMBER_ID_REQUIRED with the id to come
 * back with (KIP-394); v5 adds group_instance_id (static membership,
 * KIP-345); v6 is flexible; v7 adds protocol_type to the answer and makes
 * protocol_name nullable; v8 adds the reason; v9 skip_assignment, set for a
 * static leader that rejoins a stable group.
 *
 * The request parks until the join phase of the rebalance completes: see
 * cluster/group/group-coordinator.ts for the rules. The member's client host is
 * given as Kafka gives it (Java's InetAddress.toString(), "/127.0.0.1").
 */
import { isIPv6 } from 'node:net';
import { JoinGroupRequest } from '../wire/messages/join-group-request.js';
import { JoinGroupResponse } from '../wire/messages/join-group-response.js';
import type { JoinGroupResult } from '../cluster/group/group-coordinator.js';
import { defineHandler } from './handler.js';

/**
 * A client address as Java's InetAddress.toString() prints one with no host
 * name: "/" and the address, IPv4-mapped IPv6 as IPv4, IPv6 in full
 * groups without "::" compression.
 *
 * Example: "::ffff:127.0.0.1" -> "/127.0.0.1"; "::1" -> "/0:0:0:0:0:0:0:1".
 */
export function javaClientHost(address: string): string {
  if (address === '') return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return `/${mapped[1]}`;
  if (!isIPv6(address)) return `/${address}`;
  const [head, tail = ''] = address.split('::') as [string, string?];
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `/${groups.map((g) => parseInt(g, 16).toString(16)).join(':')}`;
}

function response(r: JoinGroupResult, version: number): JoinGroupResponse {
  // Kafka's JoinGroupResponse: "" where the version cannot carry null, null rather than "" where it can.
  const protocolName = version < 7 ? (r.protocolName ?? '') : r.protocolName === '' ? null : r.protocolName;
  return {
    throttleTimeMs: 0,
    errorCode: r.errorCode,
    generationId: r.generationId,
    protocolType: r.protocolType,
    protocolName,
    leader: r.leader,
    skipAssignment: r.skipAssignment,
    memberId: r.memberId,
    members: r.members,
  };
}

export const joinGroup = defineHandler<JoinGroupRequest, JoinGroupResponse>({
  apiKey: 11,
  name: 'JoinGroup',
  request: JoinGroupRequest,
  response: JoinGroupResponse,
  minVersion: 0,
  maxVersion: 9,
  async handle(req, ctx) {
    const v = ctx.apiVersion;
    const result = await ctx.services.groups.joinGroup({
      groupId: req.groupId,
      memberId: req.memberId,
      groupInstanceId: v >= 5 ? req.groupInstanceId : null,
      sessionTimeoutMs: req.sessionTimeoutMs,
      rebalanceTimeoutMs: v >= 1 ? req.rebalanceTimeoutMs : req.sessionTimeoutMs,
      protocolType: req.protocolType,
      protocols: req.protocols,
      clientId: ctx.clientId ?? '',
      clientHost: javaClientHost(ctx.clientHost),
      requireKnownMemberId: v >= 4,
      supportsSkippingAssignment: v >= 9,
    });
    return response(result, v);
  },
  errorResponse: (req, errorCode, ctx) =>
    response({ errorCode, generationId: -1, protocolType: null, protocolName: null, leader: '', skipAssignment: false, memberId: req.memberId, members: [] }, ctx.apiVersion),
});

/**
 * DescribeShareGroupOffsets (key 90), versions 0-1: for each share group,
 * each partition's share-partition start offset and leader epoch, as the
 * share coordinator's state summary has them; v1 adds the lag (KIP-1226):
 * the partition's high watermark minus the start offset minus the records
 * after it already delivered for good. Null topics ask for every partition
 * whose state the group initialized; an empty list for none. A partition
 * without state has start offset -1 and lag -1 (cluster/group/share-groups.ts).
 * Without share groups each group is UNSUPPORTED_VERSION.
 *
 * The lag of a partition this broker does not lead is answered with that
 * partition's NOT_LEADER_OR_FOLLOWER.
 */
import { ErrorCode } from '../wire/errors.js';
import { DescribeShareGroupOffsetsRequest } from '../wire/messages/describe-share-group-offsets-request.js';
import { DescribeShareGroupOffsetsResponse } from '../wire/messages/describe-share-group-offsets-response.js';
import { defineHandler, type RequestContext } from './handler.js';
import type { LatestOffset } from '../cluster/group/share-groups.js';

/** ListOffsets LATEST with read_uncommitted: the high watermark, from this broker's leader replica. */
function latestOffsets(ctx: RequestContext): LatestOffset {
  return async (topic, partition) => {
    const r = ctx.services.replicas.fetchOffsetForTimestamp(topic, partition, -1n, 'highWatermark', -1, true);
    return { errorCode: r.errorCode, offset: r.offset };
  };
}

export const describeShareGroupOffsets = defineHandler<DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse>({
  apiKey: 90,
  name: 'DescribeShareGroupOffsets',
  request: DescribeShareGroupOffsetsRequest,
  response: DescribeShareGroupOffsetsResponse,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const shares = ctx.services.groups.shares;
    const groups = await Promise.all(
      req.groups.map(async (g) => {
        if (!shares.enabled) return { groupId: g.groupId, topics: [], errorCode: ErrorCode.UNSUPPORTED_VERSION, errorMessage: null };
        if (g.topics !== null && g.topics.length === 0) return { groupId: g.groupId, topics: [], errorCode: ErrorCode.NONE, errorMessage: null };
        return shares.describeOffsets(g.groupId, g.topics, latestOffsets(ctx));
      }),
    );
    return { throttleTimeMs: 0, groups };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    groups: req.groups.map((g) => ({ groupId: g.groupId, topics: [], errorCode, errorMessage: null })),
  }),
});

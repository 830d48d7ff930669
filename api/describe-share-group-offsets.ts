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
 * The high watermark of a partition another broker leads is asked of that
 * broker (ListOffsets), as Kafka's coordinator does.
 */
import { ErrorCode } from '../wire/errors.js';
import { DescribeShareGroupOffsetsRequest } from '../wire/messages/describe-share-group-offsets-request.js';
import { DescribeShareGroupOffsetsResponse } from '../wire/messages/describe-share-group-offsets-response.js';
import { defineHandler } from './handler.js';

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
        return shares.describeOffsets(g.groupId, g.topics, ctx.services.shares.latestOffset);
      }),
    );
    return { throttleTimeMs: 0, groups };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    groups: req.groups.map((g) => ({ groupId: g.groupId, topics: [], errorCode, errorMessage: null })),
  }),
});

/**
 * ShareGroupDescribe (key 77), version 1 (Kafka 4.4 advertises 1-1; v0 was
 * KIP-932's early access): share groups with their state (Empty, Stable),
 * group and assignment epochs, assignor ("simple"), and each member with
 * its rack, client, subscription and assigned partitions. A group this
 * broker does not know, or one of another type, is GROUP_ID_NOT_FOUND with
 * Kafka's message; without an authorizer every group allows READ, DELETE and
 * DESCRIBE. Without share groups every group is UNSUPPORTED_VERSION.
 */
import { ErrorCode } from '../wire/errors.js';
import { ShareGroupDescribeRequest } from '../wire/messages/share-group-describe-request.js';
import { ShareGroupDescribeResponse, type DescribedGroup } from '../wire/messages/share-group-describe-response.js';
import { defineHandler } from './handler.js';
import { GROUP_OPERATIONS } from './describe-groups.js';
import { undescribedShareGroup } from '../cluster/group/share-groups.js';

const OPERATIONS_NOT_REQUESTED = -2147483648;

export const shareGroupDescribe = defineHandler<ShareGroupDescribeRequest, ShareGroupDescribeResponse>({
  apiKey: 77,
  name: 'ShareGroupDescribe',
  request: ShareGroupDescribeRequest,
  response: ShareGroupDescribeResponse,
  minVersion: 1,
  maxVersion: 1,
  handle(req, ctx) {
    const shares = ctx.services.groups.shares;
    if (!shares.enabled) return errorBody(req, ErrorCode.UNSUPPORTED_VERSION);
    const operations = req.includeAuthorizedOperations ? GROUP_OPERATIONS : OPERATIONS_NOT_REQUESTED;
    const groups: DescribedGroup[] = req.groupIds.map((id) => {
      const g = shares.describe(id);
      return {
        ...g,
        authorizedOperations: g.errorCode === ErrorCode.NONE ? operations : OPERATIONS_NOT_REQUESTED,
        members: g.members.map((m) => ({ ...m, assignment: { topicPartitions: m.assignment } })),
      };
    });
    return { throttleTimeMs: 0, groups };
  },
  errorResponse: (req, errorCode) => errorBody(req, errorCode),
});

function errorBody(req: ShareGroupDescribeRequest, errorCode: number): ShareGroupDescribeResponse {
  return {
    throttleTimeMs: 0,
    groups: req.groupIds.map((groupId) => ({ ...undescribedShareGroup(groupId, errorCode, null), members: [], authorizedOperations: OPERATIONS_NOT_REQUESTED })),
  };
}

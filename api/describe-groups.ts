/**
 * DescribeGroups (key 15), versions 0-6.
 * v1 adds the throttle time; v3 include_authorized_operations and each
 * group's authorized operations; v4 each member's group_instance_id; v5 is
 * flexible; v6 answers a group this broker does not know GROUP_ID_NOT_FOUND
 * with a message (still in the "Dead" state), where older versions answer
 * no error. A consumer group (KIP-848) or a share group (KIP-932) is not
 * described: "Dead" as well, and at v6 GROUP_ID_NOT_FOUND saying it is not a
 * classic group.
 *
 * A stable group is described with its protocol and each member's metadata
 * for it; a group in any other state without them (assignments always). A
 * group this broker does not know is "Dead", without error, as in Kafka.
 * Without an authorizer every group allows READ, DELETE and DESCRIBE.
 */
import { DescribeGroupsRequest } from '../wire/messages/describe-groups-request.js';
import { DescribeGroupsResponse, type DescribedGroup } from '../wire/messages/describe-groups-response.js';
import { ErrorCode } from '../wire/errors.js';
import { defineHandler } from './handler.js';

const NOT_FOUND_VERSION = 6;

/** Bits of READ (3), DELETE (6) and DESCRIBE (8): what Kafka reports for a group without an authorizer. */
export const GROUP_OPERATIONS = [3, 6, 8].reduce((m, op) => m | (1 << op), 0);
const OPERATIONS_NOT_REQUESTED = -2147483648;

export const describeGroups = defineHandler<DescribeGroupsRequest, DescribeGroupsResponse>({
  apiKey: 15,
  name: 'DescribeGroups',
  request: DescribeGroupsRequest,
  response: DescribeGroupsResponse,
  minVersion: 0,
  maxVersion: 6,
  handle(req, ctx) {
    const operations = ctx.apiVersion >= 3 && req.includeAuthorizedOperations ? GROUP_OPERATIONS : OPERATIONS_NOT_REQUESTED;
    const groups: DescribedGroup[] = req.groups.map((id) => {
      const described = ctx.services.groups.describeGroup(id);
      const { consumerGroup, ...group } = described;
      const unknown = ctx.apiVersion >= NOT_FOUND_VERSION && group.errorCode === ErrorCode.NONE && group.groupState === 'Dead';
      const message = consumerGroup ? `Group ${id} is not a classic group.` : `Group ${id} not found.`;
      return unknown
        ? { ...group, errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: message, authorizedOperations: operations }
        : { ...group, errorMessage: null, authorizedOperations: operations };
    });
    return { throttleTimeMs: 0, groups };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    groups: req.groups.map((groupId) => ({ errorCode, errorMessage: null, groupId, groupState: '', protocolType: '', protocolData: '', members: [], authorizedOperations: OPERATIONS_NOT_REQUESTED })),
  }),
});

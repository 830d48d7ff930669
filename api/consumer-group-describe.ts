/**
 * ConsumerGroupDescribe (key 69), versions 0-1: the consumer groups of
 * KIP-848 with their state (Empty, Assigning, Reconciling, Stable), group
 * and assignment epochs, assignor, and each member with its subscription,
 * what it owns now (partitions still to revoke included) and its target.
 * v1 adds each member's type (1: a member of the consumer protocol, 0: a
 * classic member of a group being migrated between the protocols).
 * A group this broker does not know, or a classic one, is GROUP_ID_NOT_FOUND
 * with Kafka's message; without an authorizer every group allows READ,
 * DELETE and DESCRIBE.
 */
import { ConsumerGroupDescribeRequest } from '../wire/messages/consumer-group-describe-request.js';
import { ConsumerGroupDescribeResponse, type DescribedGroup } from '../wire/messages/consumer-group-describe-response.js';
import { defineHandler } from './handler.js';
import { GROUP_OPERATIONS } from './describe-groups.js';
import { undescribedConsumerGroup } from '../cluster/group/group-coordinator.js';

const OPERATIONS_NOT_REQUESTED = -2147483648;

export const consumerGroupDescribe = defineHandler<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>({
  apiKey: 69,
  name: 'ConsumerGroupDescribe',
  request: ConsumerGroupDescribeRequest,
  response: ConsumerGroupDescribeResponse,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const operations = req.includeAuthorizedOperations ? GROUP_OPERATIONS : OPERATIONS_NOT_REQUESTED;
    const groups: DescribedGroup[] = req.groupIds.map((id) => {
      const g = ctx.services.groups.describeConsumerGroup(id);
      return {
        ...g,
        authorizedOperations: g.errorCode === 0 ? operations : OPERATIONS_NOT_REQUESTED,
        members: g.members.map((m) => ({
          ...m,
          assignment: { topicPartitions: m.assignment },
          targetAssignment: { topicPartitions: m.targetAssignment },
        })),
      };
    });
    return { throttleTimeMs: 0, groups };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    groups: req.groupIds.map((groupId) => ({ ...undescribedConsumerGroup(groupId, errorCode, null), members: [], authorizedOperations: OPERATIONS_NOT_REQUESTED })),
  }),
});

/**
 * StreamsGroupDescribe (key 89), versions 0-1: the streams groups of
 * KIP-1071 with their state (Empty, NotReady, Assigning, Reconciling,
 * Stable), group and assignment epochs, topology (its subtopologies once
 * their topics are all there, with the partitions of internal topics) and
 * each member with its process, endpoint, current and target assignment.
 * v1 adds the assignor name ("sticky") and the topology description of
 * KIP-1331, which gregor does not keep (NOT_STORED when asked for).
 * A group this broker does not know, or one of another type, is
 * GROUP_ID_NOT_FOUND; without an authorizer every group allows READ,
 * DELETE and DESCRIBE.
 */
import { StreamsGroupDescribeRequest } from '../wire/messages/streams-group-describe-request.js';
import { StreamsGroupDescribeResponse, type DescribedGroup } from '../wire/messages/streams-group-describe-response.js';
import { undescribedStreamsGroup } from '../cluster/group/streams-coordinator.js';
import { defineHandler } from './handler.js';
import { GROUP_OPERATIONS } from './describe-groups.js';

const OPERATIONS_NOT_REQUESTED = -2147483648;
const DESCRIPTION_NOT_REQUESTED = 0;
const DESCRIPTION_NOT_STORED = 1;

export const streamsGroupDescribe = defineHandler<StreamsGroupDescribeRequest, StreamsGroupDescribeResponse>({
  apiKey: 89,
  name: 'StreamsGroupDescribe',
  request: StreamsGroupDescribeRequest,
  response: StreamsGroupDescribeResponse,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const operations = req.includeAuthorizedOperations ? GROUP_OPERATIONS : OPERATIONS_NOT_REQUESTED;
    const groups: DescribedGroup[] = req.groupIds.map((id) => {
      const g = ctx.services.groups.streams.describe(id);
      return {
        ...g,
        authorizedOperations: g.errorCode === 0 ? operations : OPERATIONS_NOT_REQUESTED,
        topologyDescription: null,
        topologyDescriptionStatus: g.errorCode === 0 && req.includeTopologyDescription ? DESCRIPTION_NOT_STORED : DESCRIPTION_NOT_REQUESTED,
      };
    });
    return { throttleTimeMs: 0, groups };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    groups: req.groupIds.map((groupId) => ({
      ...undescribedStreamsGroup(groupId, errorCode, null),
      authorizedOperations: OPERATIONS_NOT_REQUESTED,
      topologyDescription: null,
      topologyDescriptionStatus: DESCRIPTION_NOT_REQUESTED,
    })),
  }),
});

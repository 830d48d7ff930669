/** ReadShareGroupStateSummary (key 87), versions 0-1: a share partition's start offset and epochs, for share group offsets (inter-broker). v1 adds the delivery-complete count. */
import { ReadShareGroupStateSummaryRequest } from '../wire/messages/read-share-group-state-summary-request.js';
import { ReadShareGroupStateSummaryResponse } from '../wire/messages/read-share-group-state-summary-response.js';
import { defineHandler } from './handler.js';
import { allFailed, perPartition } from './share-state-support.js';

export const readShareGroupStateSummary = defineHandler<ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse>({
  apiKey: 87,
  name: 'ReadShareGroupStateSummary',
  request: ReadShareGroupStateSummaryRequest,
  response: ReadShareGroupStateSummaryResponse,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const c = ctx.services.shares.coordinator;
    return {
      results: await perPartition(req.topics, async (topicId, p) => ({
        partition: p.partition,
        ...(await c.readSummary({ groupId: req.groupId, topicId, partition: p.partition }, p.leaderEpoch)),
      })),
    };
  },
  errorResponse: (req, errorCode) => ({ results: allFailed(req.topics, errorCode, { stateEpoch: -1, leaderEpoch: -1, startOffset: -1n, deliveryCompleteCount: -1 }) }) as ReadShareGroupStateSummaryResponse,
});

/** ReadShareGroupState (key 84), version 0: a share partition's state, for the leader of its topic partition (inter-broker). */
import { ReadShareGroupStateRequest } from '../wire/messages/read-share-group-state-request.js';
import { ReadShareGroupStateResponse } from '../wire/messages/read-share-group-state-response.js';
import { defineHandler } from './handler.js';
import { allFailed, perPartition } from './share-state-support.js';

export const readShareGroupState = defineHandler<ReadShareGroupStateRequest, ReadShareGroupStateResponse>({
  apiKey: 84,
  name: 'ReadShareGroupState',
  request: ReadShareGroupStateRequest,
  response: ReadShareGroupStateResponse,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const c = ctx.services.shares.coordinator;
    return {
      results: await perPartition(req.topics, async (topicId, p) => {
        const r = await c.read({ groupId: req.groupId, topicId, partition: p.partition }, p.leaderEpoch);
        return { partition: p.partition, errorCode: r.errorCode, errorMessage: r.errorMessage, stateEpoch: r.stateEpoch, startOffset: r.startOffset, stateBatches: [...r.stateBatches] };
      }),
    };
  },
  errorResponse: (req, errorCode) => ({ results: allFailed(req.topics, errorCode, { stateEpoch: -1, startOffset: -1n, stateBatches: [] }) }) as ReadShareGroupStateResponse,
});

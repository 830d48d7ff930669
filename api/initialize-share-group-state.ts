/** InitializeShareGroupState (key 83), version 0: sets a share partition's state epoch and start offset (inter-broker). */
import { InitializeShareGroupStateRequest } from '../wire/messages/initialize-share-group-state-request.js';
import { InitializeShareGroupStateResponse } from '../wire/messages/initialize-share-group-state-response.js';
import { defineHandler } from './handler.js';
import { allFailed, perPartition } from './share-state-support.js';

export const initializeShareGroupState = defineHandler<InitializeShareGroupStateRequest, InitializeShareGroupStateResponse>({
  apiKey: 83,
  name: 'InitializeShareGroupState',
  request: InitializeShareGroupStateRequest,
  response: InitializeShareGroupStateResponse,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const c = ctx.services.shares.coordinator;
    return {
      results: await perPartition(req.topics, async (topicId, p) => ({
        partition: p.partition,
        ...(await c.initialize({ groupId: req.groupId, topicId, partition: p.partition }, p.stateEpoch, p.startOffset)),
      })),
    };
  },
  errorResponse: (req, errorCode) => ({ results: allFailed(req.topics, errorCode) }) as InitializeShareGroupStateResponse,
});

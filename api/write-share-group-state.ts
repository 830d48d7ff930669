/** WriteShareGroupState (key 85), versions 0-1: lays a share partition's changed delivery states over its state (inter-broker). v1 adds the delivery-complete count. */
import { WriteShareGroupStateRequest } from '../wire/messages/write-share-group-state-request.js';
import { WriteShareGroupStateResponse } from '../wire/messages/write-share-group-state-response.js';
import { defineHandler } from './handler.js';
import { allFailed, perPartition } from './share-state-support.js';

export const writeShareGroupState = defineHandler<WriteShareGroupStateRequest, WriteShareGroupStateResponse>({
  apiKey: 85,
  name: 'WriteShareGroupState',
  request: WriteShareGroupStateRequest,
  response: WriteShareGroupStateResponse,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const c = ctx.services.shares.coordinator;
    return {
      results: await perPartition(req.topics, async (topicId, p) => ({
        partition: p.partition,
        ...(await c.write(
          { groupId: req.groupId, topicId, partition: p.partition },
          { stateEpoch: p.stateEpoch, leaderEpoch: p.leaderEpoch, startOffset: p.startOffset, deliveryCompleteCount: ctx.apiVersion >= 1 ? p.deliveryCompleteCount : -1, stateBatches: p.stateBatches },
        )),
      })),
    };
  },
  errorResponse: (req, errorCode) => ({ results: allFailed(req.topics, errorCode) }) as WriteShareGroupStateResponse,
});

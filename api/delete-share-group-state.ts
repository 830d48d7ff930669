/** DeleteShareGroupState (key 86), version 0: removes a share partition's state (inter-broker). */
import { DeleteShareGroupStateRequest } from '../wire/messages/delete-share-group-state-request.js';
import { DeleteShareGroupStateResponse } from '../wire/messages/delete-share-group-state-response.js';
import { defineHandler } from './handler.js';
import { allFailed, perPartition } from './share-state-support.js';

export const deleteShareGroupState = defineHandler<DeleteShareGroupStateRequest, DeleteShareGroupStateResponse>({
  apiKey: 86,
  name: 'DeleteShareGroupState',
  request: DeleteShareGroupStateRequest,
  response: DeleteShareGroupStateResponse,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const c = ctx.services.shares.coordinator;
    return {
      results: await perPartition(req.topics, async (topicId, p) => ({
        partition: p.partition,
        ...(await c.delete({ groupId: req.groupId, topicId, partition: p.partition })),
      })),
    };
  },
  errorResponse: (req, errorCode) => ({ results: allFailed(req.topics, errorCode) }) as DeleteShareGroupStateResponse,
});

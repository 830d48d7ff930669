/**
 * DeleteShareGroupOffsets (key 92), version 0: forgets the share-partition
 * state of whole topics of an empty share group (NON_EMPTY_GROUP otherwise;
 * GROUP_ID_NOT_FOUND for a group that is not a share group), deleting it
 * through the persister; a topic without state is UNKNOWN_TOPIC_OR_PARTITION
 * (cluster/group/share-groups.ts). Without share groups the request is
 * UNSUPPORTED_VERSION.
 */
import { ErrorCode } from '../wire/errors.js';
import { DeleteShareGroupOffsetsRequest } from '../wire/messages/delete-share-group-offsets-request.js';
import { DeleteShareGroupOffsetsResponse } from '../wire/messages/delete-share-group-offsets-response.js';
import { defineHandler } from './handler.js';
import { UNSUPPORTED_VERSION_MESSAGE } from './alter-share-group-offsets.js';

export const deleteShareGroupOffsets = defineHandler<DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse>({
  apiKey: 92,
  name: 'DeleteShareGroupOffsets',
  request: DeleteShareGroupOffsetsRequest,
  response: DeleteShareGroupOffsetsResponse,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const groups = ctx.services.groups;
    if (!groups.shares.enabled) return failure(ErrorCode.UNSUPPORTED_VERSION, UNSUPPORTED_VERSION_MESSAGE);
    const r = await groups.shares.deleteOffsets(req.groupId, req.topics.map((t) => t.topicName));
    const durable = r.errorCode === ErrorCode.NONE ? await groups.replicated(req.groupId) : ErrorCode.NONE;
    if (durable !== ErrorCode.NONE) return failure(durable, null);
    return { throttleTimeMs: 0, errorCode: r.errorCode, errorMessage: r.errorMessage, responses: r.topics };
  },
  errorResponse: (_req, errorCode) => failure(errorCode, null),
});

function failure(errorCode: number, errorMessage: string | null): DeleteShareGroupOffsetsResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage, responses: [] };
}

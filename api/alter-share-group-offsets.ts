/**
 * AlterShareGroupOffsets (key 91), version 0: sets the share-partition start
 * offset of partitions of an empty share group (NON_EMPTY_GROUP otherwise),
 * by initializing their state again through the persister; an unknown topic
 * or partition is UNKNOWN_TOPIC_OR_PARTITION (cluster/group/share-groups.ts).
 * Without share groups the request is UNSUPPORTED_VERSION.
 */
import { ErrorCode } from '../wire/errors.js';
import { AlterShareGroupOffsetsRequest } from '../wire/messages/alter-share-group-offsets-request.js';
import { AlterShareGroupOffsetsResponse } from '../wire/messages/alter-share-group-offsets-response.js';
import { defineHandler } from './handler.js';

/** Errors.UNSUPPORTED_VERSION.message() in Kafka. */
export const UNSUPPORTED_VERSION_MESSAGE = 'The version of API is not supported.';

export const alterShareGroupOffsets = defineHandler<AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse>({
  apiKey: 91,
  name: 'AlterShareGroupOffsets',
  request: AlterShareGroupOffsetsRequest,
  response: AlterShareGroupOffsetsResponse,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const groups = ctx.services.groups;
    if (!groups.shares.enabled) return failure(ErrorCode.UNSUPPORTED_VERSION, UNSUPPORTED_VERSION_MESSAGE);
    const r = await groups.shares.alterOffsets(req.groupId, req.topics);
    const durable = r.errorCode === ErrorCode.NONE ? await groups.replicated(req.groupId) : ErrorCode.NONE;
    if (durable !== ErrorCode.NONE) return failure(durable, null);
    return { throttleTimeMs: 0, errorCode: r.errorCode, errorMessage: r.errorMessage, responses: r.topics };
  },
  errorResponse: (_req, errorCode) => failure(errorCode, null),
});

function failure(errorCode: number, errorMessage: string | null): AlterShareGroupOffsetsResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage, responses: [] };
}

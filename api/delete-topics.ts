/**
 * DeleteTopics (key 20), versions 0-6.
 * v1 adds throttle_time_ms; v4 is flexible; v5 adds error messages; v6 names
 * topics by name or by topic id and answers both.
 *
 * As in Kafka 4.0: an entry with neither a name nor an id, or with both, is
 * INVALID_REQUEST; a name or id given twice is refused (answered once); a
 * name that resolves to an id also given by id is refused; unknown names are
 * UNKNOWN_TOPIC_OR_PARTITION and unknown ids UNKNOWN_TOPIC_ID; timeout_ms <= 0
 * refuses the whole request with REQUEST_TIMED_OUT. Internal topics are
 * deleted like any other: Kafka's broker does not refuse them (its
 * kafka-topics tool does, on the client side).
 *
 * A deleted topic leaves the metadata image at once, so Metadata stops
 * listing it and the replica manager closes its logs and deletes them from
 * disk (renamed at once, removed after file.delete.delay.ms). A topic created
 * again under the name gets a new id and empty logs.
 */
import { DeleteTopicsRequest } from '../wire/messages/delete-topics-request.js';
import { DeleteTopicsResponse, type DeletableTopicResult } from '../wire/messages/delete-topics-response.js';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { UnknownTopicError } from '../cluster/metadata/metadata-image.js';
import { defineHandler, type RequestContext } from './handler.js';

const UNKNOWN_NAME_MESSAGE = 'This server does not host this topic-partition.';
const UNKNOWN_ID_MESSAGE = 'This server does not host this topic ID.';

function result(name: string | null, topicId: string, errorCode: number, errorMessage: string | null = null): DeletableTopicResult {
  return { name, topicId, errorCode, errorMessage };
}

/** The request's topics as (name, id) pairs whatever its version: before v6 they are names only. */
function entriesOf(req: DeleteTopicsRequest, version: number): { name: string | null; topicId: string }[] {
  return version >= 6 ? req.topics : req.topicNames.map((name) => ({ name, topicId: ZERO_UUID }));
}

export const deleteTopics = defineHandler<DeleteTopicsRequest, DeleteTopicsResponse>({
  apiKey: 20,
  name: 'DeleteTopics',
  request: DeleteTopicsRequest,
  response: DeleteTopicsResponse,
  minVersion: 0,
  maxVersion: 6,
  async handle(req, ctx) {
    if (req.timeoutMs <= 0) return errorBody(req, ErrorCode.REQUEST_TIMED_OUT, ctx);
    const { metadata: store, log } = ctx.services;
    const responses: DeletableTopicResult[] = [];
    // Names and ids given once, in request order; those given more than once are refused.
    const names = new Map<string, number>();
    const ids = new Map<string, number>();
    for (const { name, topicId } of entriesOf(req, ctx.apiVersion)) {
      if (name === null && topicId === ZERO_UUID) {
        responses.push(result(null, ZERO_UUID, ErrorCode.INVALID_REQUEST, 'Neither topic name nor id were specified.'));
      } else if (name !== null && topicId !== ZERO_UUID) {
        responses.push(result(name, topicId, ErrorCode.INVALID_REQUEST, 'You may not specify both topic name and topic id.'));
      } else if (name !== null) {
        names.set(name, (names.get(name) ?? 0) + 1);
      } else {
        ids.set(topicId, (ids.get(topicId) ?? 0) + 1);
      }
    }
    const once = (m: Map<string, number>) => [...m].filter(([, n]) => n === 1).map(([k]) => k);
    for (const [name, n] of names) if (n > 1) responses.push(result(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'));
    for (const [id, n] of ids) if (n > 1) responses.push(result(null, id, ErrorCode.INVALID_REQUEST, 'Duplicate topic id.'));

    const image = store.image();
    // The topics to delete: id -> name.
    const doomed = new Map<string, string>();
    for (const id of once(ids)) {
      const topic = image.topicsById.get(id);
      if (topic) doomed.set(id, topic.name);
      else responses.push(result(null, id, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_ID_MESSAGE));
    }
    const givenById = new Set(doomed.keys());
    for (const name of once(names)) {
      const topic = image.topics.get(name);
      if (!topic) {
        responses.push(result(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_NAME_MESSAGE));
      } else if (givenById.has(topic.topicId) || (ids.get(topic.topicId) ?? 0) > 1) {
        // The same topic by name and by id: neither is deleted, and only the name is answered.
        doomed.delete(topic.topicId);
        responses.push(result(name, topic.topicId, ErrorCode.INVALID_REQUEST, 'The provided topic name maps to an ID that was already supplied.'));
      } else {
        doomed.set(topic.topicId, name);
      }
    }

    for (const [topicId, name] of doomed) {
      try {
        await store.deleteTopic({ topicId });
        responses.push(result(name, topicId, ErrorCode.NONE));
        log.info({ topic: name, topicId }, 'deleted topic');
      } catch (err) {
        if (err instanceof UnknownTopicError) {
          // Deleted by another request since this one looked.
          responses.push(result(name, topicId, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_ID_MESSAGE));
        } else {
          log.warn({ topic: name, topicId, err }, 'topic deletion failed');
          responses.push(result(name, topicId, ErrorCode.UNKNOWN_SERVER_ERROR));
        }
      }
    }
    return { throttleTimeMs: 0, responses };
  },
  errorResponse: (req, errorCode, ctx) => errorBody(req, errorCode, ctx),
});

/** Every topic of the request with `errorCode`, as it was named. */
function errorBody(req: DeleteTopicsRequest, errorCode: number, ctx: RequestContext): DeleteTopicsResponse {
  return { throttleTimeMs: 0, responses: entriesOf(req, ctx.apiVersion).map((e) => result(e.name, e.topicId, errorCode)) };
}

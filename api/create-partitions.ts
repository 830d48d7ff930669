/**
 * CreatePartitions (key 37), versions 0-3.
 * v1 changes nothing on the wire (throttling behaviour only); v2 is flexible.
 *
 * A topic only grows: a count equal to or below the current one is
 * INVALID_PARTITIONS with Kafka's message. Assignments, when given, must
 * list exactly the new partitions, each with registered brokers, none twice,
 * and as many replicas as the topic's existing partitions
 * (INVALID_REPLICA_ASSIGNMENT). A topic named twice is refused (answered
 * once, first); an unknown one is UNKNOWN_TOPIC_OR_PARTITION; timeout_ms <= 0
 * refuses the whole request with REQUEST_TIMED_OUT; more than 10000 new
 * partitions in one request and the topic that passes the mark is
 * UNKNOWN_SERVER_ERROR, as in Kafka 4.0. validate_only checks and changes
 * nothing.
 *
 * New partitions are in the metadata image when the answer goes out, so
 * Metadata lists them and their logs exist (the replica manager creates them
 * from the image).
 */
import { CreatePartitionsRequest } from '../wire/messages/create-partitions-request.js';
import { CreatePartitionsResponse, type CreatePartitionsTopicResult } from '../wire/messages/create-partitions-response.js';
import { ErrorCode } from '../wire/errors.js';
import { UnknownTopicError } from '../cluster/metadata/metadata-image.js';
import { MAX_RECORDS_PER_REQUEST, manualAssignmentProblem } from './replica-assignment.js';
import { defineHandler } from './handler.js';

function result(name: string, errorCode: number, errorMessage: string | null = null): CreatePartitionsTopicResult {
  return { name, errorCode, errorMessage };
}

export const createPartitions = defineHandler<CreatePartitionsRequest, CreatePartitionsResponse>({
  apiKey: 37,
  name: 'CreatePartitions',
  request: CreatePartitionsRequest,
  response: CreatePartitionsResponse,
  minVersion: 0,
  maxVersion: 3,
  async handle(req, ctx) {
    if (req.timeoutMs <= 0) return errorBody(req, ErrorCode.REQUEST_TIMED_OUT);
    const { metadata: store, log } = ctx.services;
    const counts = new Map<string, number>();
    for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const results: CreatePartitionsTopicResult[] = [];
    for (const [name, n] of counts) if (n > 1) results.push(result(name, ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'));

    let added = 0;
    for (const t of req.topics) {
      if (counts.get(t.name) !== 1) continue;
      const image = store.image();
      const topic = image.topics.get(t.name);
      if (!topic) {
        results.push(result(t.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
        continue;
      }
      const current = topic.partitions.length;
      if (t.count === current) {
        results.push(result(t.name, ErrorCode.INVALID_PARTITIONS, `Topic already has ${current} partition(s).`));
        continue;
      }
      if (t.count < current) {
        results.push(
          result(t.name, ErrorCode.INVALID_PARTITIONS, `The topic ${t.name} currently has ${current} partition(s); ${t.count} would not be an increase.`),
        );
        continue;
      }
      const additional = t.count - current;
      if (t.assignments !== null && t.assignments.length !== additional) {
        results.push(
          result(
            t.name,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            `Attempted to add ${additional} additional partition(s), but only ${t.assignments.length} assignment(s) were specified.`,
          ),
        );
        continue;
      }
      // While partition 0 is reassigned, its replicas include those leaving.
      const first = topic.partitions[0];
      const replicationFactor = first ? first.replicas.length - (first.removingReplicas?.length ?? 0) : 1;
      if (t.assignments !== null) {
        const problem = t.assignments.map((a) => manualAssignmentProblem(a.brokerIds, image, replicationFactor)).find((p) => p !== null);
        if (problem) {
          results.push(result(t.name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem));
          continue;
        }
      } else if (replicationFactor > image.brokers.size) {
        results.push(
          result(
            t.name,
            ErrorCode.INVALID_REPLICATION_FACTOR,
            `The target replication factor of ${replicationFactor} cannot be reached because only ${image.brokers.size} broker(s) are registered.`,
          ),
        );
        continue;
      }
      // Kafka's controller writes one record per new partition and fails the topic that passes its limit.
      added += additional;
      if (added > MAX_RECORDS_PER_REQUEST) {
        results.push(result(t.name, ErrorCode.UNKNOWN_SERVER_ERROR));
        continue;
      }
      if (req.validateOnly) {
        results.push(result(t.name, ErrorCode.NONE));
        continue;
      }
      try {
        await store.createPartitions(t.name, t.count, t.assignments?.map((a) => a.brokerIds));
        results.push(result(t.name, ErrorCode.NONE));
        log.info({ topic: t.name, from: current, to: t.count }, 'created partitions');
      } catch (err) {
        if (err instanceof UnknownTopicError) {
          results.push(result(t.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
        } else {
          // Grown by another request since this one looked: what it asked for is no longer an increase.
          const now = store.image().topics.get(t.name)?.partitions.length;
          if (err instanceof RangeError && now !== undefined && now >= t.count) {
            results.push(
              result(t.name, ErrorCode.INVALID_PARTITIONS, `The topic ${t.name} currently has ${now} partition(s); ${t.count} would not be an increase.`),
            );
          } else {
            log.warn({ topic: t.name, err }, 'partition creation failed');
            results.push(result(t.name, ErrorCode.UNKNOWN_SERVER_ERROR));
          }
        }
      }
    }
    return { throttleTimeMs: 0, results };
  },
  errorResponse: (req, errorCode) => errorBody(req, errorCode),
});

/** Every topic of the request with `errorCode`. */
function errorBody(req: CreatePartitionsRequest, errorCode: number): CreatePartitionsResponse {
  return { throttleTimeMs: 0, results: req.topics.map((t) => result(t.name, errorCode)) };
}

/**
 * OffsetDelete (key 47), version 0 (KIP-496).
 *
 * Deletes a group's committed offsets of the named partitions, as Kafka
 * does: partitions of unknown topics (or that a topic does not have) are
 * UNKNOWN_TOPIC_OR_PARTITION; a group that is not empty may delete only
 * offsets of topics it does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC),
 * and only if it uses the consumer protocol (else NON_EMPTY_GROUP); an
 * unknown group is GROUP_ID_NOT_FOUND. A group-level error answers the
 * request alone, without topics.
 */
import { ErrorCode } from '../wire/errors.js';
import { OffsetDeleteRequest } from '../wire/messages/offset-delete-request.js';
import { OffsetDeleteResponse } from '../wire/messages/offset-delete-response.js';
import { hasPartition } from '../cluster/metadata/metadata-image.js';
import { defineHandler } from './handler.js';

export const offsetDelete = defineHandler<OffsetDeleteRequest, OffsetDeleteResponse>({
  apiKey: 47,
  name: 'OffsetDelete',
  request: OffsetDeleteRequest,
  response: OffsetDeleteResponse,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const image = ctx.services.metadata.image();
    const exists = (topic: string, partition: number): boolean => hasPartition(image, topic, partition);
    const known = req.topics
      .map((t) => ({ name: t.name, partitions: t.partitions.map((p) => p.partitionIndex).filter((i) => exists(t.name, i)) }))
      .filter((t) => t.partitions.length > 0);
    const r = ctx.services.groups.deleteOffsets(req.groupId, known);
    if (r.errorCode !== ErrorCode.NONE) return { errorCode: r.errorCode, throttleTimeMs: 0, topics: [] };
    const durable = await ctx.services.groups.replicated(req.groupId);
    if (durable !== ErrorCode.NONE) return { errorCode: durable, throttleTimeMs: 0, topics: [] };
    const answered = new Map<string, number>();
    for (const t of r.topics) for (const p of t.partitions) answered.set(`${p.partitionIndex}:${t.name}`, p.errorCode);
    return {
      errorCode: ErrorCode.NONE,
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode: answered.get(`${p.partitionIndex}:${t.name}`) ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        })),
      })),
    };
  },
  errorResponse: (_req, errorCode) => ({ errorCode, throttleTimeMs: 0, topics: [] }),
});

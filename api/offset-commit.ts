/**
 * OffsetCommit (key 8), versions 0-10.
 * v1 adds the generation, the member id and a commit timestamp per
 * partition; v2 replaces that timestamp with a retention time for the whole
 * request (kept with each offset as its expire timestamp); v3 adds the
 * throttle time; v5 drops the retention time; v6 adds the committed leader
 * epoch; v7 group_instance_id; v8 is flexible; v9 answers a commit with a
 * generation to an unknown group GROUP_ID_NOT_FOUND rather than
 * ILLEGAL_GENERATION; v10 names topics by id (UNKNOWN_TOPIC_ID for an id no
 * topic has).
 *
 * As Kafka's broker does, partitions of unknown topics, and partitions a
 * topic does not have, are answered UNKNOWN_TOPIC_OR_PARTITION here; the
 * rest go to the coordinator, which checks the group (a commit with
 * generation -1 and no member id is a "simple" commit, taken by a group
 * without members) and answers once the offsets are written to
 * __consumer_offsets and on every in-sync replica of its partition.
 */
import { ErrorCode } from '../wire/errors.js';
import { OffsetCommitRequest, type OffsetCommitRequestTopic } from '../wire/messages/offset-commit-request.js';
import { OffsetCommitResponse, type OffsetCommitResponseTopic } from '../wire/messages/offset-commit-response.js';
import { hasPartition } from '../cluster/metadata/metadata-image.js';
import { defineHandler } from './handler.js';


export const offsetCommit = defineHandler<OffsetCommitRequest, OffsetCommitResponse>({
  apiKey: 8,
  name: 'OffsetCommit',
  request: OffsetCommitRequest,
  response: OffsetCommitResponse,
  minVersion: 0,
  maxVersion: 10,
  async handle(req, ctx) {
    const v = ctx.apiVersion;
    const image = ctx.services.metadata.image();
    // v10 names topics by id: each is answered under its id, committed under its name.
    const names = req.topics.map((t) => (v >= 10 ? (image.topicsById.get(t.topicId)?.name ?? null) : t.name));
    const known: OffsetCommitRequestTopic[] = [];
    req.topics.forEach((t, i) => {
      const name = names[i];
      if (name === null || name === undefined) return;
      const partitions = t.partitions.filter((p) => hasPartition(image, name, p.partitionIndex));
      if (partitions.length > 0) known.push({ name, topicId: t.topicId, partitions });
    });
    const answered = new Map<string, number>();
    if (known.length > 0) {
      const results = ctx.services.groups.commitOffsets({
        groupId: req.groupId,
        generationId: v >= 1 ? req.generationIdOrMemberEpoch : -1,
        memberId: v >= 1 ? req.memberId : '',
        groupInstanceId: v >= 7 ? req.groupInstanceId : null,
        retentionTimeMs: v >= 2 && v <= 4 ? req.retentionTimeMs : -1n,
        groupIdNotFoundKnown: v >= 9,
        topics: known.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            committedOffset: p.committedOffset,
            committedLeaderEpoch: v >= 6 ? p.committedLeaderEpoch : -1,
            commitTimestamp: v === 1 ? p.commitTimestamp : -1n,
            committedMetadata: p.committedMetadata,
          })),
        })),
      });
      const written = results.some((t) => t.partitions.some((p) => p.errorCode === ErrorCode.NONE));
      const durable = written ? await ctx.services.groups.replicated(req.groupId) : ErrorCode.NONE;
      for (const t of results) {
        for (const p of t.partitions) answered.set(`${p.partitionIndex}:${t.name}`, p.errorCode === ErrorCode.NONE ? durable : p.errorCode);
      }
    }
    const topics: OffsetCommitResponseTopic[] = req.topics.map((t, i) => ({
      name: t.name,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: names[i] === null
          ? ErrorCode.UNKNOWN_TOPIC_ID
          : (answered.get(`${p.partitionIndex}:${names[i]}`) ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
      })),
    }));
    return { throttleTimeMs: 0, topics };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({ name: t.name, topicId: t.topicId, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) })),
  }),
});

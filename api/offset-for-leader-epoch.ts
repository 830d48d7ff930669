/**
 * OffsetForLeaderEpoch (key 23), versions 0-4. Kafka 4.0 dropped v0-1
 * (KIP-896); gregor serves them as Kafka 3.x did, with the same logic as
 * the newer versions (KafkaApis had no per-version branch for this API).
 * v0 answers each partition's error code and end offset only; v1 adds the
 * leader epoch found; v2 adds current_leader_epoch (fencing) and
 * throttle_time_ms; v3 replica_id, which Kafka 4.0 no longer looks at: every
 * request is answered by the leader only, for followers and consumers
 * (KIP-320) alike; v4 is flexible. Before v2 a request carries no current
 * leader epoch, so it decodes as -1 and nothing is fenced.
 *
 * Each requested (partition, leader_epoch) is answered in request order,
 * repeats included, as Kafka does: the largest epoch at most the requested
 * one that the partition's log knows, and the offset where that epoch ended
 * (the log end for the current epoch); -1 and -1 for an epoch above every
 * known one (see ReplicaManager.lastOffsetForLeaderEpoch).
 */
import { OffsetForLeaderEpochRequest } from '../wire/messages/offset-for-leader-epoch-request.js';
import { OffsetForLeaderEpochResponse, type EpochEndOffset } from '../wire/messages/offset-for-leader-epoch-response.js';
import { defineHandler } from './handler.js';

export const offsetForLeaderEpoch = defineHandler<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse>({
  apiKey: 23,
  name: 'OffsetForLeaderEpoch',
  request: OffsetForLeaderEpochRequest,
  response: OffsetForLeaderEpochResponse,
  minVersion: 0,
  maxVersion: 4,
  handle(req, ctx) {
    const { replicas } = ctx.services;
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        topic: t.topic,
        partitions: t.partitions.map((p): EpochEndOffset => {
          const r = replicas.lastOffsetForLeaderEpoch(t.topic, p.partition, p.currentLeaderEpoch, p.leaderEpoch);
          return { errorCode: r.errorCode, partition: p.partition, leaderEpoch: r.leaderEpoch, endOffset: r.endOffset };
        }),
      })),
    };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => ({ errorCode, partition: p.partition, leaderEpoch: -1, endOffset: -1n })),
    })),
  }),
});

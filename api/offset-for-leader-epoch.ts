/**
 * OffsetForLeaderEpoch (key 23), versions 2-4, the range Kafka 4.0 advertises
 * (KIP-896 removed v0-1; such a request closes the connection, as on Kafka 4.0).
 * v2 adds current_leader_epoch (fencing) and throttle_time_ms; v3 replica_id,
 * which Kafka 4.0 no longer looks at: every request is answered by the leader
 * only, for followers and consumers (KIP-320) alike; v4 is flexible.
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
  minVersion: 2,
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

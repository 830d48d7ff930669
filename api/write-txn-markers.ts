/**
 * WriteTxnMarkers (key 27), versions 0-2. Kafka 4.4 serves v1-2 (KIP-896
 * removed v0); gregor serves v0 as Kafka 3.x did: it is v1 without the
 * flexible encoding, answered alike. v2 adds each marker's
 * transaction_version: 2 for a transaction ended the transactions v2 way,
 * whose marker carries the epoch the coordinator bumped and must be newer
 * than the data's (see storage/producer-state.ts); v0 and v1 markers are
 * version 0.
 *
 * Sent by a transaction coordinator to the leader of each partition of a
 * transaction it ends: for every marker, a COMMIT or ABORT control batch of
 * the producer is written to each listed partition this broker leads,
 * stamped with the coordinator epoch, and the partition is answered once its
 * in-sync replicas have it, as an acks=all append (see
 * ReplicaManager.writeMarkers). Per partition: UNKNOWN_TOPIC_OR_PARTITION,
 * NOT_LEADER_OR_FOLLOWER (the coordinator asks the new leader),
 * NOT_ENOUGH_REPLICAS below min.insync.replicas, TRANSACTION_COORDINATOR_FENCED
 * for a coordinator epoch older than one the partition has seen,
 * INVALID_PRODUCER_EPOCH for an older producer epoch. A marker landing in
 * __consumer_offsets makes the transaction's offsets visible there, or drops
 * them.
 *
 * Not implemented: authorization (Kafka requires CLUSTER_ACTION).
 */
import { WriteTxnMarkersRequest } from '../wire/messages/write-txn-markers-request.js';
import { WriteTxnMarkersResponse, type WritableTxnMarkerResult } from '../wire/messages/write-txn-markers-response.js';
import { defineHandler } from './handler.js';

export const writeTxnMarkers = defineHandler<WriteTxnMarkersRequest, WriteTxnMarkersResponse>({
  apiKey: 27,
  name: 'WriteTxnMarkers',
  request: WriteTxnMarkersRequest,
  response: WriteTxnMarkersResponse,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    const markers = await Promise.all(
      req.markers.map(async (m): Promise<WritableTxnMarkerResult> => {
        const partitions = m.topics.flatMap((t) => t.partitionIndexes.map((partition) => ({ topic: t.name, partition })));
        const results = await ctx.services.replicas.writeMarkers({
          producerId: m.producerId,
          producerEpoch: m.producerEpoch,
          coordinatorEpoch: m.coordinatorEpoch,
          commit: m.transactionResult,
          transactionVersion: ctx.apiVersion >= 2 ? m.transactionVersion : 0,
          partitions,
        });
        const codes = new Map(results.map((r) => [`${r.topic}\u0000${r.partition}`, r.errorCode]));
        return {
          producerId: m.producerId,
          topics: m.topics.map((t) => ({
            name: t.name,
            partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode: codes.get(`${t.name}\u0000${partitionIndex}`)! })),
          })),
        };
      }),
    );
    return { markers };
  },
  errorResponse: (req, errorCode) => ({
    markers: req.markers.map((m) => ({
      producerId: m.producerId,
      topics: m.topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode })) })),
    })),
  }),
});

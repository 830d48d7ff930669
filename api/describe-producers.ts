/**
 * DescribeProducers (key 61), version 0 (flexible).
 *
 * For each asked partition this broker leads, the producers the partition's
 * log keeps state for: id, epoch, last sequence written, timestamp of their
 * last batch, the coordinator epoch of their last transaction marker, and the
 * first offset of their open transaction (-1 when none). Kafka's admin tool
 * `kafka-transactions.sh describe-producers` and AdminClient.describeProducers
 * use it to find hanging transactions. A partition missing from the metadata
 * answers UNKNOWN_TOPIC_OR_PARTITION, one led elsewhere NOT_LEADER_OR_FOLLOWER.
 */
import { DescribeProducersRequest } from '../wire/messages/describe-producers-request.js';
import { DescribeProducersResponse } from '../wire/messages/describe-producers-response.js';
import { defineHandler } from './handler.js';

export const describeProducers = defineHandler<DescribeProducersRequest, DescribeProducersResponse>({
  apiKey: 61,
  name: 'DescribeProducers',
  request: DescribeProducersRequest,
  response: DescribeProducersResponse,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    const { replicas } = ctx.services;
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((partitionIndex) => {
          const r = replicas.describeProducers(t.name, partitionIndex);
          return {
            partitionIndex,
            errorCode: r.errorCode,
            errorMessage: null,
            activeProducers: r.producers.map((p) => ({
              producerId: p.producerId,
              producerEpoch: p.producerEpoch,
              lastSequence: p.lastSequence,
              lastTimestamp: p.lastTimestamp,
              coordinatorEpoch: p.coordinatorEpoch,
              currentTxnStartOffset: p.currentTxnStartOffset,
            })),
          };
        }),
      })),
    };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode, errorMessage: null, activeProducers: [] })),
    })),
  }),
});

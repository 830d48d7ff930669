/**
 * InitProducerId (key 22), versions 0-5.
 * v1 is v0 again (the throttle time follows quota violation); v2 is
 * flexible; v3 carries the producer id and epoch the producer has (KIP-360:
 * bump the epoch without losing the producer id); v4 may answer
 * PRODUCER_FENCED (KIP-588), which older versions get as
 * INVALID_PRODUCER_EPOCH; v5 is v4 again.
 *
 * Without a transactional id any broker hands out a new producer id; with
 * one, only the coordinator of the id does (see cluster/txn/txn-coordinator.ts).
 * A producer id without an epoch, or an epoch without a producer id, is an
 * INVALID_REQUEST, as in Kafka.
 */
import { ErrorCode } from '../wire/errors.js';
import { InitProducerIdRequest } from '../wire/messages/init-producer-id-request.js';
import { InitProducerIdResponse } from '../wire/messages/init-producer-id-response.js';
import { defineHandler } from './handler.js';

const EXPECTED_PRODUCER_VERSION = 3;
const PRODUCER_FENCED_VERSION = 4;

export const initProducerId = defineHandler<InitProducerIdRequest, InitProducerIdResponse>({
  apiKey: 22,
  name: 'InitProducerId',
  request: InitProducerIdRequest,
  response: InitProducerIdResponse,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    let expected: { producerId: bigint; producerEpoch: number } | null = null;
    if (ctx.apiVersion >= EXPECTED_PRODUCER_VERSION) {
      const noId = req.producerId === -1n;
      const noEpoch = req.producerEpoch === -1;
      if (noId !== noEpoch) return answer(ErrorCode.INVALID_REQUEST);
      if (!noId) expected = { producerId: req.producerId, producerEpoch: req.producerEpoch };
    }
    const r = await ctx.services.transactions.initProducerId({ transactionalId: req.transactionalId, transactionTimeoutMs: req.transactionTimeoutMs, expected });
    const errorCode = ctx.apiVersion < PRODUCER_FENCED_VERSION && r.errorCode === ErrorCode.PRODUCER_FENCED ? ErrorCode.INVALID_PRODUCER_EPOCH : r.errorCode;
    if (errorCode === ErrorCode.NONE && req.transactionalId !== null) {
      // The new epoch is answered once it is on every in-sync replica of the id's partition.
      const durable = await ctx.services.transactions.replicated(req.transactionalId);
      if (durable !== ErrorCode.NONE) return answer(durable);
    }
    return { throttleTimeMs: 0, errorCode, producerId: r.producerId, producerEpoch: r.producerEpoch, ongoingTxnProducerId: -1n, ongoingTxnProducerEpoch: -1 };
  },
  errorResponse: (_req, errorCode) => answer(errorCode),
});

function answer(errorCode: number): InitProducerIdResponse {
  return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1, ongoingTxnProducerId: -1n, ongoingTxnProducerEpoch: -1 };
}

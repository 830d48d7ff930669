/**
 * EndTxn (key 26), versions 0-5.
 * v1 is v0 again; v2 may answer PRODUCER_FENCED (KIP-588), which older
 * versions get as INVALID_PRODUCER_EPOCH; v3 is flexible; v4 may answer
 * TRANSACTION_ABORTABLE (never given here); v5 is transactions v2 (KIP-890):
 * the transaction ends with the producer's epoch bumped (a new producer id at
 * epoch 0 once the epochs run out), answered with the producer id and epoch
 * to go on with, and an abort with nothing open is allowed.
 *
 * Commits or aborts the transaction: answered once PrepareCommit or
 * PrepareAbort is on every in-sync replica of the id's partition; the
 * markers follow (see cluster/txn/txn-coordinator.ts). A retry after
 * completion with the same outcome answers NONE.
 */
import { ErrorCode } from '../wire/errors.js';
import { EndTxnRequest } from '../wire/messages/end-txn-request.js';
import { EndTxnResponse } from '../wire/messages/end-txn-response.js';
import { defineHandler } from './handler.js';

const PRODUCER_FENCED_VERSION = 2;
const TRANSACTION_V2_VERSION = 5;

export const endTxn = defineHandler<EndTxnRequest, EndTxnResponse>({
  apiKey: 26,
  name: 'EndTxn',
  request: EndTxnRequest,
  response: EndTxnResponse,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    const coordinator = ctx.services.transactions;
    if (ctx.apiVersion >= TRANSACTION_V2_VERSION) {
      const r = await coordinator.endTransactionV2(req.transactionalId, req.producerId, req.producerEpoch, req.committed);
      const errorCode = r.errorCode === ErrorCode.NONE ? await coordinator.replicated(req.transactionalId) : r.errorCode;
      if (errorCode !== ErrorCode.NONE) return answer(errorCode);
      return { throttleTimeMs: 0, errorCode, producerId: r.producerId, producerEpoch: r.producerEpoch };
    }
    let errorCode = coordinator.endTransaction(req.transactionalId, req.producerId, req.producerEpoch, req.committed);
    if (ctx.apiVersion < PRODUCER_FENCED_VERSION && errorCode === ErrorCode.PRODUCER_FENCED) errorCode = ErrorCode.INVALID_PRODUCER_EPOCH;
    // The prepared commit or abort is answered once it is on every in-sync replica of the id's partition.
    if (errorCode === ErrorCode.NONE) errorCode = await coordinator.replicated(req.transactionalId);
    return answer(errorCode);
  },
  errorResponse: (_req, errorCode) => answer(errorCode),
});

function answer(errorCode: number): EndTxnResponse {
  return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 };
}

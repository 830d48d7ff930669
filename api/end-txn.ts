/**
 * EndTxn (key 26), versions 0-4.
 * v1 is v0 again; v2 may answer PRODUCER_FENCED (KIP-588), which older
 * versions get as INVALID_PRODUCER_EPOCH; v3 is flexible; v4 may answer
 * TRANSACTION_ABORTABLE (never given here).
 *
 * Commits or aborts the transaction: answered once PrepareCommit or
 * PrepareAbort is written; the markers follow (see
 * cluster/txn/txn-coordinator.ts). A retry after completion with the same
 * outcome answers NONE.
 *
 * Not implemented: v5 (transaction version 2, KIP-890 part 2: an epoch bump
 * per transaction, with the new producer id and epoch in the answer).
 */
import { ErrorCode } from '../wire/errors.js';
import { EndTxnRequest } from '../wire/messages/end-txn-request.js';
import { EndTxnResponse } from '../wire/messages/end-txn-response.js';
import { defineHandler } from './handler.js';

const PRODUCER_FENCED_VERSION = 2;

export const endTxn = defineHandler<EndTxnRequest, EndTxnResponse>({
  apiKey: 26,
  name: 'EndTxn',
  request: EndTxnRequest,
  response: EndTxnResponse,
  minVersion: 0,
  maxVersion: 4,
  async handle(req, ctx) {
    let errorCode = ctx.services.transactions.endTransaction(req.transactionalId, req.producerId, req.producerEpoch, req.committed);
    if (ctx.apiVersion < PRODUCER_FENCED_VERSION && errorCode === ErrorCode.PRODUCER_FENCED) errorCode = ErrorCode.INVALID_PRODUCER_EPOCH;
    // The prepared commit or abort is answered once it is on every in-sync replica of the id's partition.
    if (errorCode === ErrorCode.NONE) errorCode = await ctx.services.transactions.replicated(req.transactionalId);
    return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 }),
});

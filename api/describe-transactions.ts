/**
 * DescribeTransactions (key 65), version 0 (flexible).
 *
 * Each transactional id coordinated here is described from the
 * coordinator's state: its state by Kafka's name (Empty, Ongoing,
 * PrepareCommit, ...), producer id and epoch, timeout, start time and
 * partitions. Others answer NOT_COORDINATOR, and ids this coordinator does
 * not know TRANSACTIONAL_ID_NOT_FOUND.
 *
 * Not implemented: authorization (TRANSACTIONAL_ID describe).
 */
import { DescribeTransactionsRequest } from '../wire/messages/describe-transactions-request.js';
import { DescribeTransactionsResponse } from '../wire/messages/describe-transactions-response.js';
import { defineHandler } from './handler.js';

export const describeTransactions = defineHandler<DescribeTransactionsRequest, DescribeTransactionsResponse>({
  apiKey: 65,
  name: 'DescribeTransactions',
  request: DescribeTransactionsRequest,
  response: DescribeTransactionsResponse,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    return { throttleTimeMs: 0, transactionStates: req.transactionalIds.map((id) => ctx.services.transactions.describeTransaction(id)) };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    transactionStates: req.transactionalIds.map((transactionalId) => ({
      errorCode,
      transactionalId,
      transactionState: '',
      transactionTimeoutMs: 0,
      transactionStartTimeMs: 0n,
      producerId: 0n,
      producerEpoch: 0,
      topics: [],
    })),
  }),
});

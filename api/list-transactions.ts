/**
 * ListTransactions (key 66), versions 0-1 (flexible).
 * v1 adds duration_filter: only transactions running for longer than that
 * many milliseconds (KIP-994).
 *
 * Lists the transactional ids this broker coordinates, filtered by state
 * (Kafka's names, exactly; names it does not know come back in
 * unknown_state_filters) and by producer id.
 *
 * Not implemented: authorization (TRANSACTIONAL_ID describe).
 */
import { ListTransactionsRequest } from '../wire/messages/list-transactions-request.js';
import { ListTransactionsResponse } from '../wire/messages/list-transactions-response.js';
import { defineHandler } from './handler.js';

const DURATION_FILTER_VERSION = 1;

export const listTransactions = defineHandler<ListTransactionsRequest, ListTransactionsResponse>({
  apiKey: 66,
  name: 'ListTransactions',
  request: ListTransactionsRequest,
  response: ListTransactionsResponse,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const duration = ctx.apiVersion >= DURATION_FILTER_VERSION ? req.durationFilter : -1n;
    return { throttleTimeMs: 0, ...ctx.services.transactions.listTransactions(req.stateFilters, req.producerIdFilters, duration) };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, unknownStateFilters: [], transactionStates: [] }),
});

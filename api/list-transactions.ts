/**
 * ListTransactions (key 66), versions 0-2 (flexible).
 * v1 adds duration_filter: only transactions running for longer than that
 * many milliseconds (KIP-994); v2 transactional_id_pattern (KIP-1152): only
 * ids the regular expression matches in full (null or empty: every id), and
 * INVALID_REGULAR_EXPRESSION for one that does not compile.
 *
 * Lists the transactional ids this broker coordinates, filtered by state
 * (Kafka's names, exactly; names it does not know come back in
 * unknown_state_filters) and by producer id.
 *
 * Not implemented: authorization (TRANSACTIONAL_ID describe).
 */
import { ListTransactionsRequest } from '../wire/messages/list-transactions-request.js';
import { ListTransactionsResponse } from '../wire/messages/list-transactions-response.js';
import { ErrorCode } from '../wire/errors.js';
import { defineHandler } from './handler.js';

const DURATION_FILTER_VERSION = 1;
const PATTERN_VERSION = 2;

export const listTransactions = defineHandler<ListTransactionsRequest, ListTransactionsResponse>({
  apiKey: 66,
  name: 'ListTransactions',
  request: ListTransactionsRequest,
  response: ListTransactionsResponse,
  minVersion: 0,
  maxVersion: 2,
  handle(req, ctx) {
    const duration = ctx.apiVersion >= DURATION_FILTER_VERSION ? req.durationFilter : -1n;
    const source = ctx.apiVersion >= PATTERN_VERSION ? req.transactionalIdPattern : null;
    let pattern: RegExp | null = null;
    if (source !== null && source !== '') {
      try {
        pattern = new RegExp(`^(?:${source})$`, 'u');
      } catch {
        return { throttleTimeMs: 0, errorCode: ErrorCode.INVALID_REGULAR_EXPRESSION, unknownStateFilters: [], transactionStates: [] };
      }
    }
    const listed = ctx.services.transactions.listTransactions(req.stateFilters, req.producerIdFilters, duration);
    if (pattern === null) return { throttleTimeMs: 0, ...listed };
    return { throttleTimeMs: 0, ...listed, transactionStates: listed.transactionStates.filter((t) => pattern.test(t.transactionalId)) };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, unknownStateFilters: [], transactionStates: [] }),
});

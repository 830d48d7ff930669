/**
 * UnregisterBroker (key 64), version 0: what `kafka-cluster unregister`
 * sends to remove a broker that is gone for good from the cluster's
 * registrations. A gregor broker is registered while it runs (its lease in
 * the metadata store; the process itself on a broker of its own) and drops
 * out by itself when it stops, so a registered broker is a live one, and
 * the answer is NONE with nothing changed. (Kafka 4.4 removes a live broker's
 * registration too, and that broker stays fenced, its heartbeats answered
 * STALE_BROKER_EPOCH, until it is restarted: gregor does not take a running
 * broker out of its cluster on a request.) An id no registered broker has is
 * BROKER_ID_NOT_REGISTERED, with Kafka's message.
 */
import { ErrorCode } from '../wire/errors.js';
import { UnregisterBrokerRequest } from '../wire/messages/unregister-broker-request.js';
import { UnregisterBrokerResponse } from '../wire/messages/unregister-broker-response.js';
import { defineHandler } from './handler.js';

export const unregisterBroker = defineHandler<UnregisterBrokerRequest, UnregisterBrokerResponse>({
  apiKey: 64,
  name: 'UnregisterBroker',
  request: UnregisterBrokerRequest,
  response: UnregisterBrokerResponse,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    if (!ctx.services.metadata.image().brokers.has(req.brokerId)) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.BROKER_ID_NOT_REGISTERED, errorMessage: `Broker ID ${req.brokerId} is not currently registered` };
    }
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: '' };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, errorMessage: null }),
});

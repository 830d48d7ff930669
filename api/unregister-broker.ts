/**
 * UnregisterBroker (key 64), version 0: what `kafka-cluster unregister`
 * sends to remove a broker that is gone for good from the cluster's
 * registrations. A gregor broker is registered while it runs (its lease in
 * the metadata store; the process itself on a broker of its own) and drops
 * out when it stops, so a registered broker is a live one: as on Kafka, where
 * a live broker registers again at its next heartbeat, the answer is NONE
 * and nothing changes. An id no registered broker has is
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

/**
 * SaslHandshake (key 17), versions 0-1: a client on a SASL listener names
 * its mechanism; the answer lists the listener's mechanisms, with
 * UNSUPPORTED_SASL_MECHANISM for one it does not take. Version 1 goes on
 * with SaslAuthenticate requests; after version 0 the client's next frame is
 * its raw SASL token (Kafka 0.10.0's flow, still kafka-python 2.0's), which
 * the connection takes (src/connection.ts). On a listener without SASL, or after the
 * connection has authenticated, the answer is ILLEGAL_SASL_STATE, as Kafka
 * answers it.
 */
import { ErrorCode } from '../wire/errors.js';
import { SaslHandshakeRequest } from '../wire/messages/sasl-handshake-request.js';
import { SaslHandshakeResponse } from '../wire/messages/sasl-handshake-response.js';
import { defineHandler } from './handler.js';

export const saslHandshake = defineHandler<SaslHandshakeRequest, SaslHandshakeResponse>({
  apiKey: 17,
  name: 'SaslHandshake',
  request: SaslHandshakeRequest,
  response: SaslHandshakeResponse,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const sasl = ctx.sasl;
    if (!sasl) return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] };
    const ok = sasl.handshake(req.mechanism);
    return { errorCode: ok ? ErrorCode.NONE : ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: [...sasl.mechanisms] };
  },
  errorResponse(_req, errorCode) {
    return { errorCode, mechanisms: [] };
  },
});

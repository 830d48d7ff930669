/**
 * SaslAuthenticate (key 36), versions 0-2: one token of the mechanism the
 * handshake picked. Success answers NONE with an empty token (and a session
 * lifetime of 0: connections.max.reauth.ms is not used); failure answers
 * SASL_AUTHENTICATION_FAILED with Kafka's message, and the connection then
 * closes. On a listener without SASL, or after the connection has
 * authenticated, ILLEGAL_SASL_STATE, as Kafka answers it.
 */
import { ErrorCode } from '../wire/errors.js';
import { SaslAuthenticateRequest } from '../wire/messages/sasl-authenticate-request.js';
import { SaslAuthenticateResponse } from '../wire/messages/sasl-authenticate-response.js';
import { defineHandler } from './handler.js';

const EMPTY = Buffer.alloc(0);

export const saslAuthenticate = defineHandler<SaslAuthenticateRequest, SaslAuthenticateResponse>({
  apiKey: 36,
  name: 'SaslAuthenticate',
  request: SaslAuthenticateRequest,
  response: SaslAuthenticateResponse,
  minVersion: 0,
  maxVersion: 2,
  handle(req, ctx) {
    const sasl = ctx.sasl;
    if (!sasl) {
      return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, errorMessage: 'SaslAuthenticate request received after successful authentication', authBytes: EMPTY, sessionLifetimeMs: 0n };
    }
    const result = sasl.authenticate(req.authBytes);
    if (result.done) return { errorCode: ErrorCode.NONE, errorMessage: null, authBytes: EMPTY, sessionLifetimeMs: 0n };
    return { errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: result.message, authBytes: EMPTY, sessionLifetimeMs: 0n };
  },
  errorResponse(_req, errorCode) {
    return { errorCode, errorMessage: null, authBytes: EMPTY, sessionLifetimeMs: 0n };
  },
});

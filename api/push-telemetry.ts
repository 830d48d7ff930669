/**
 * PushTelemetry (key 72), version 0 (KIP-714), checked as Kafka 4.4's
 * ClientMetricsManager checks it (see client-telemetry.ts), in its order:
 * a missing or reserved client instance id is INVALID_REQUEST; a push after
 * the client said it was terminating INVALID_REQUEST; a push sooner than one
 * push interval after the last one (and with no get between, and not itself
 * terminating) THROTTLING_QUOTA_EXCEEDED; a subscription id other than the
 * instance's UNKNOWN_SUBSCRIPTION_ID (the client then asks for its
 * subscription again); an unknown compression type
 * UNSUPPORTED_COMPRESSION_TYPE; metrics larger than telemetry.max.bytes
 * TELEMETRY_TOO_LARGE. The terminating flag is recorded whatever the answer.
 * gregor has no metrics exporter, so accepted metrics are dropped.
 */
import { ErrorCode } from '../wire/errors.js';
import { PushTelemetryRequest } from '../wire/messages/push-telemetry-request.js';
import { PushTelemetryResponse } from '../wire/messages/push-telemetry-response.js';
import { ClientInstances, RESERVED_IDS, TELEMETRY_MAX_BYTES } from './client-telemetry.js';
import { defineHandler } from './handler.js';

/** Compression type ids Kafka knows: none, gzip, snappy, lz4, zstd. */
const KNOWN_COMPRESSION = new Set([0, 1, 2, 3, 4]);

export const pushTelemetry = defineHandler<PushTelemetryRequest, PushTelemetryResponse>({
  apiKey: 72,
  name: 'PushTelemetry',
  request: PushTelemetryRequest,
  response: PushTelemetryResponse,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    if (RESERVED_IDS.has(req.clientInstanceId)) return { throttleTimeMs: 0, errorCode: ErrorCode.INVALID_REQUEST };
    const now = Date.now();
    const c = ClientInstances.of(ctx.services).get(req.clientInstanceId, now);
    const errorCode = pushError(req, c, now);
    c.terminating = c.terminating || req.terminating;
    c.lastError = errorCode;
    return { throttleTimeMs: 0, errorCode };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode }),
});

function pushError(req: PushTelemetryRequest, c: ReturnType<ClientInstances['get']>, now: number): number {
  if (c.terminating) return ErrorCode.INVALID_REQUEST;
  const accepted = c.lastGetMs > c.lastPushMs || now - c.lastPushMs >= c.pushIntervalMs;
  if (accepted) c.lastPushMs = now;
  else if (!req.terminating) return ErrorCode.THROTTLING_QUOTA_EXCEEDED;
  if (req.subscriptionId !== c.subscriptionId) return ErrorCode.UNKNOWN_SUBSCRIPTION_ID;
  if (!KNOWN_COMPRESSION.has(req.compressionType)) return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE;
  if (req.metrics.length > TELEMETRY_MAX_BYTES) return ErrorCode.TELEMETRY_TOO_LARGE;
  return ErrorCode.NONE;
}

/**
 * GetTelemetrySubscriptions (key 71), version 0 (KIP-714), answered as
 * Kafka 4.4's ClientMetricsManager answers it with no client-metrics
 * subscription configured (see client-telemetry.ts): a client without an
 * instance id (the zero id) is given a new one; the answer names no metrics
 * (so the client pushes none), a push interval of 300000 ms, the accepted
 * compression types (zstd, lz4, gzip, snappy), telemetry.max.bytes
 * (1048576) and delta temporality. A client asking again sooner than one
 * push interval after its last get or push is answered
 * THROTTLING_QUOTA_EXCEEDED (unless its last push was refused for an unknown
 * subscription id or compression type), with the other fields empty.
 *
 * Kafka 4.4 advertises this API and PushTelemetry only when a client
 * telemetry exporter plugin is configured. gregor advertises both and asks
 * for no metrics: a KIP-714 client (the Java client, librdkafka) asks for
 * its subscription once per push interval and pushes nothing.
 */
import { ErrorCode } from '../wire/errors.js';
import { GetTelemetrySubscriptionsRequest } from '../wire/messages/get-telemetry-subscriptions-request.js';
import { GetTelemetrySubscriptionsResponse } from '../wire/messages/get-telemetry-subscriptions-response.js';
import { ACCEPTED_COMPRESSION_TYPES, ClientInstances, TELEMETRY_MAX_BYTES } from './client-telemetry.js';
import { defineHandler } from './handler.js';

const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

const errorAnswer = (errorCode: number): GetTelemetrySubscriptionsResponse => ({
  throttleTimeMs: 0,
  errorCode,
  clientInstanceId: ZERO_UUID,
  subscriptionId: 0,
  acceptedCompressionTypes: [],
  pushIntervalMs: 0,
  telemetryMaxBytes: 0,
  deltaTemporality: false,
  requestedMetrics: [],
});

export const getTelemetrySubscriptions = defineHandler<GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse>({
  apiKey: 71,
  name: 'GetTelemetrySubscriptions',
  request: GetTelemetrySubscriptionsRequest,
  response: GetTelemetrySubscriptionsResponse,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    const now = Date.now();
    const instances = ClientInstances.of(ctx.services);
    const id = req.clientInstanceId === ZERO_UUID ? instances.newId() : req.clientInstanceId;
    const c = instances.get(id, now);
    const sinceLast = now - Math.max(c.lastGetMs, c.lastPushMs);
    if (sinceLast < c.pushIntervalMs && c.lastError !== ErrorCode.UNKNOWN_SUBSCRIPTION_ID && c.lastError !== ErrorCode.UNSUPPORTED_COMPRESSION_TYPE) {
      return errorAnswer(ErrorCode.THROTTLING_QUOTA_EXCEEDED);
    }
    c.lastGetMs = now;
    c.lastError = ErrorCode.NONE;
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      clientInstanceId: id,
      subscriptionId: c.subscriptionId,
      acceptedCompressionTypes: [...ACCEPTED_COMPRESSION_TYPES],
      pushIntervalMs: c.pushIntervalMs,
      telemetryMaxBytes: TELEMETRY_MAX_BYTES,
      deltaTemporality: true,
      requestedMetrics: [],
    };
  },
  errorResponse: (_req, errorCode) => errorAnswer(errorCode),
});

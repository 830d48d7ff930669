import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import type { GetTelemetrySubscriptionsRequest } from '../wire/messages/get-telemetry-subscriptions-request.js';
import type { GetTelemetrySubscriptionsResponse } from '../wire/messages/get-telemetry-subscriptions-response.js';
import type { PushTelemetryRequest } from '../wire/messages/push-telemetry-request.js';
import type { PushTelemetryResponse } from '../wire/messages/push-telemetry-response.js';
import { subscriptionIdFor } from './client-telemetry.js';
import { getTelemetrySubscriptions } from './get-telemetry-subscriptions.js';
import { pushTelemetry } from './push-telemetry.js';
import { advertisedVersions } from './registry.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const ZERO = 'AAAAAAAAAAAAAAAAAAAAAA';
const open: TestServices[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const s of open.splice(0)) await s.close();
});

function services(): TestServices {
  const s = testServices();
  open.push(s);
  return s;
}

const get = (s: TestServices, clientInstanceId = ZERO) =>
  callAt<GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse>(getTelemetrySubscriptions, 0, { clientInstanceId }, s);

const push = (s: TestServices, p: Partial<PushTelemetryRequest> & { clientInstanceId: string; subscriptionId: number }) =>
  callAt<PushTelemetryRequest, PushTelemetryResponse>(pushTelemetry, 0, { terminating: false, compressionType: 0, metrics: Buffer.alloc(0), ...p }, s).then((r) => r.errorCode);

describe('client telemetry (KIP-714) with no subscription configured', () => {
  it('is advertised at version 0', () => {
    const byKey = new Map(advertisedVersions().map((v) => [v.apiKey, [v.minVersion, v.maxVersion]]));
    expect([byKey.get(71), byKey.get(72)]).toEqual([
      [0, 0],
      [0, 0],
    ]);
  });

  it('gives a new client an instance id and the empty subscription', async () => {
    const s = services();
    const r = await get(s);
    expect(r.errorCode).toBe(ErrorCode.NONE);
    expect(r.clientInstanceId).not.toBe(ZERO);
    expect(r).toMatchObject({
      requestedMetrics: [],
      pushIntervalMs: 300000,
      telemetryMaxBytes: 1048576,
      deltaTemporality: true,
      acceptedCompressionTypes: [4, 3, 1, 2],
      subscriptionId: subscriptionIdFor(r.clientInstanceId, [], 300000),
    });
    // Another client gets another id.
    expect((await get(s)).clientInstanceId).not.toBe(r.clientInstanceId);
  });

  it('throttles a client asking again within the push interval, and not after it', async () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ['Date'] });
    const s = services();
    const first = await get(s);
    const again = await get(s, first.clientInstanceId);
    expect(again.errorCode).toBe(ErrorCode.THROTTLING_QUOTA_EXCEEDED);
    vi.setSystemTime(1_000_000 + 300_000);
    expect((await get(s, first.clientInstanceId)).errorCode).toBe(ErrorCode.NONE);
  });

  it('checks pushes as Kafka does, in its order', async () => {
    vi.useFakeTimers({ now: 2_000_000, toFake: ['Date'] });
    const s = services();
    let now = 2_000_000;
    const tick = () => vi.setSystemTime((now += 10));
    const { clientInstanceId: id, subscriptionId } = await get(s);
    tick();
    expect(await push(s, { clientInstanceId: ZERO, subscriptionId })).toBe(ErrorCode.INVALID_REQUEST);
    expect(await push(s, { clientInstanceId: id, subscriptionId: subscriptionId + 1 })).toBe(ErrorCode.UNKNOWN_SUBSCRIPTION_ID);
    // After that error a get is not throttled; the push right after a get is accepted.
    tick();
    expect((await get(s, id)).errorCode).toBe(ErrorCode.NONE);
    tick();
    expect(await push(s, { clientInstanceId: id, subscriptionId, compressionType: 9 })).toBe(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
    tick();
    expect((await get(s, id)).errorCode).toBe(ErrorCode.NONE);
    tick();
    expect(await push(s, { clientInstanceId: id, subscriptionId, metrics: Buffer.alloc(1048577) })).toBe(ErrorCode.TELEMETRY_TOO_LARGE);
    // Neither error lets a get through early.
    tick();
    expect((await get(s, id)).errorCode).toBe(ErrorCode.THROTTLING_QUOTA_EXCEEDED);
    vi.setSystemTime((now += 300_000));
    expect(await push(s, { clientInstanceId: id, subscriptionId, compressionType: 4, metrics: Buffer.from('m') })).toBe(ErrorCode.NONE);
    // Too soon after that push, unless the client is terminating; after it said so, nothing more.
    expect(await push(s, { clientInstanceId: id, subscriptionId })).toBe(ErrorCode.THROTTLING_QUOTA_EXCEEDED);
    expect(await push(s, { clientInstanceId: id, subscriptionId, terminating: true })).toBe(ErrorCode.NONE);
    expect(await push(s, { clientInstanceId: id, subscriptionId, terminating: true })).toBe(ErrorCode.INVALID_REQUEST);
  });

  it('answers a push from an instance it does not know with UNKNOWN_SUBSCRIPTION_ID, so the client asks again', async () => {
    const s = services();
    expect(await push(s, { clientInstanceId: 'AAAAAAAAAAAAAAAAAAAAAg', subscriptionId: 12345 })).toBe(ErrorCode.UNKNOWN_SUBSCRIPTION_ID);
    expect((await get(s, 'AAAAAAAAAAAAAAAAAAAAAg')).errorCode).toBe(ErrorCode.NONE);
  });
});

import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { apiVersions } from './api-versions.js';
import { HANDLERS, advertisedVersions, handlerTable } from './registry.js';
import { ctxFor, testServices } from './test-services.js';

describe('ApiVersions', () => {
  const services = testServices();

  it('advertises exactly the registered handlers, each from version 0 unless Kafka 4.0 dropped its old versions', () => {
    const res = apiVersions.handle({ clientSoftwareName: 'c', clientSoftwareVersion: '1' }, ctxFor(services, 3)) as any;
    expect(res.errorCode).toBe(ErrorCode.NONE);
    // KIP-896: Kafka 4.0 serves ListOffsets from v1, OffsetForLeaderEpoch from v2 and WriteTxnMarkers from v1, and advertises just that.
    const removedInKafka4 = new Map([[2, 1], [23, 2], [27, 1]]);
    expect(res.apiKeys).toEqual(
      HANDLERS.map((h) => ({ apiKey: h.apiKey, minVersion: removedInKafka4.get(h.apiKey) ?? 0, maxVersion: h.maxVersion })).sort((a, b) => a.apiKey - b.apiKey),
    );
    expect(res.apiKeys).toContainEqual({ apiKey: 2, minVersion: 1, maxVersion: 10 });
    expect(res.apiKeys).toContainEqual({ apiKey: 23, minVersion: 2, maxVersion: 4 });
    expect(res.apiKeys).toContainEqual({ apiKey: 18, minVersion: 0, maxVersion: 4 });
    expect(res.apiKeys).toContainEqual({ apiKey: 3, minVersion: 0, maxVersion: 12 });
  });

  it('rejects a v3+ client software name Kafka would reject', () => {
    const res = apiVersions.handle({ clientSoftwareName: 'bad name!', clientSoftwareVersion: '1.0' }, ctxFor(services, 3)) as any;
    expect(res.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    const ok = apiVersions.handle({ clientSoftwareName: 'apache-kafka-java', clientSoftwareVersion: '4.4.0' }, ctxFor(services, 4)) as any;
    expect(ok.errorCode).toBe(ErrorCode.NONE);
  });

  it('never serves a version beyond what its declaration can encode', () => {
    expect(() => handlerTable(HANDLERS)).not.toThrow();
    for (const h of HANDLERS) expect(h.maxVersion).toBeLessThanOrEqual(h.response.versions[1]);
    const bad = { ...HANDLERS[0]!, maxVersion: HANDLERS[0]!.request.versions[1] + 1 };
    expect(() => handlerTable([bad])).toThrow(/beyond its declaration/);
  });

  it('lists API keys in ascending order', () => {
    const keys = advertisedVersions().map((v) => v.apiKey);
    expect(keys).toEqual([...keys].sort((a, b) => a - b));
  });
});

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { codecFor } from '../wire/codec.js';
import { Reader } from '../wire/reader.js';
import { ApiVersionsResponse } from '../wire/messages/api-versions-response.js';
import { API_MESSAGES } from '../wire/messages/index.js';
import { apiVersions } from './api-versions.js';
import { HANDLERS, advertisedVersions, handlerTable } from './registry.js';
import { ctxFor, testServices } from './test-services.js';

/**
 * Kafka 4.4 advertises ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge from v1:
 * their v0 was the early access of KIP-932 (Kafka 4.0), removed in 4.1, so
 * no client speaks it. Every other handler starts at v0.
 */
const FIRST_RELEASED = new Map<number, number>([
  [76, 1],
  [77, 1],
  [78, 1],
  [79, 1],
]);

describe('ApiVersions', () => {
  const services = testServices();

  it('advertises exactly the registered handlers, each from the oldest version its definitions describe (v0), but for the share APIs, from v1', () => {
    const res = apiVersions.handle({ clientSoftwareName: 'c', clientSoftwareVersion: '1', clusterId: null, nodeId: -1 }, ctxFor(services, 3)) as any;
    expect(res.errorCode).toBe(ErrorCode.NONE);
    expect(res.apiKeys).toEqual(
      HANDLERS.map((h) => ({ apiKey: h.apiKey, minVersion: FIRST_RELEASED.get(h.apiKey) ?? h.request.versions[0], maxVersion: h.maxVersion })).sort((a, b) => a.apiKey - b.apiKey),
    );
    // The October 2024 definitions still describe what Kafka 4.0 removed (KIP-896), so every declaration goes down to v0.
    expect(HANDLERS.filter((h) => h.request.versions[0] !== 0).map((h) => h.name)).toEqual([]);
    expect(HANDLERS.filter((h) => h.minVersion !== (FIRST_RELEASED.get(h.apiKey) ?? 0)).map((h) => h.name)).toEqual([]);
    expect(res.apiKeys).toContainEqual({ apiKey: 76, minVersion: 1, maxVersion: 1 });
    expect(res.apiKeys).toContainEqual({ apiKey: 77, minVersion: 1, maxVersion: 1 });
    // Kafka 4.0 advertises these three from v1, v2 and v1.
    expect(res.apiKeys).toContainEqual({ apiKey: 2, minVersion: 0, maxVersion: 11 });
    expect(res.apiKeys).toContainEqual({ apiKey: 23, minVersion: 0, maxVersion: 4 });
    expect(res.apiKeys).toContainEqual({ apiKey: 27, minVersion: 0, maxVersion: 2 });
    expect(res.apiKeys).toContainEqual({ apiKey: 18, minVersion: 0, maxVersion: 5 });
    expect(res.apiKeys).toContainEqual({ apiKey: 3, minVersion: 0, maxVersion: 13 });
  });

  it('finalizes transaction.version 2, share.version 2 and metadata.version 33 as Kafka 4.4 does, and hides ranges from level 0 from v3 clients', () => {
    const at = (v: number) => apiVersions.handle({ clientSoftwareName: 'c', clientSoftwareVersion: '1', clusterId: null, nodeId: -1 }, ctxFor(services, v)) as any;
    const v4 = at(4);
    // The Java client turns transactions v2 on when transaction.version is finalized at 2 with an epoch of 0 or more.
    expect(v4.finalizedFeaturesEpoch).toBeGreaterThanOrEqual(0n);
    expect(v4.finalizedFeatures).toContainEqual({ name: 'transaction.version', minVersionLevel: 2, maxVersionLevel: 2 });
    expect(v4.finalizedFeatures).toContainEqual({ name: 'metadata.version', minVersionLevel: 33, maxVersionLevel: 33 });
    // The Java client uses the share group APIs (KIP-932) only when share.version is finalized at 1 or more.
    expect(v4.finalizedFeatures).toContainEqual({ name: 'share.version', minVersionLevel: 2, maxVersionLevel: 2 });
    expect(v4.supportedFeatures).toContainEqual({ name: 'share.version', minVersion: 0, maxVersion: 2 });
    expect(v4.supportedFeatures).toContainEqual({ name: 'transaction.version', minVersion: 0, maxVersion: 2 });
    // Features at level 0 are not finalized.
    expect(v4.finalizedFeatures.every((f: { maxVersionLevel: number }) => f.maxVersionLevel > 0)).toBe(true);
    // KAFKA-17011: a v3 client cannot read a supported range starting at 0.
    expect(at(3).supportedFeatures.map((f: { name: string }) => f.name)).toEqual(['metadata.version']);
  });

  it('checks at v5 the cluster and node a client means to reach, as Kafka 4.4 answers (KIP-1242)', () => {
    const clusterId = services.metadata.image().clusterId;
    const nodeId = services.settings.nodeId;
    const at = (c: string | null, n: number) => apiVersions.handle({ clientSoftwareName: 'c', clientSoftwareVersion: '1', clusterId: c, nodeId: n }, ctxFor(services, 5)) as any;
    expect(at(null, -1).errorCode).toBe(ErrorCode.NONE);
    expect(at(clusterId, nodeId).errorCode).toBe(ErrorCode.NONE);
    // One without the other is a malformed request; a mismatch asks the client to bootstrap again.
    for (const [c, n, code] of [
      [clusterId, -1, ErrorCode.INVALID_REQUEST],
      [null, nodeId, ErrorCode.INVALID_REQUEST],
      ['another-cluster-id-xx', nodeId, ErrorCode.REBOOTSTRAP_REQUIRED],
      [clusterId, nodeId + 1, ErrorCode.REBOOTSTRAP_REQUIRED],
    ] as const) {
      const res = at(c, n);
      expect([c, n, res.errorCode, res.apiKeys.length]).toEqual([c, n, code, 0]);
    }
  });

  it('rejects a v3+ client software name Kafka would reject', () => {
    const res = apiVersions.handle({ clientSoftwareName: 'bad name!', clientSoftwareVersion: '1.0', clusterId: null, nodeId: -1 }, ctxFor(services, 3)) as any;
    expect(res.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    const ok = apiVersions.handle({ clientSoftwareName: 'apache-kafka-java', clientSoftwareVersion: '4.4.0', clusterId: null, nodeId: -1 }, ctxFor(services, 4)) as any;
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

  it('serves every client API Apache Kafka 4.4.0 advertised to its Java client, up to the same version, except those listed as left to other work', () => {
    // The answer a Kafka 4.4.0 broker gave kafka-clients 4.4.0 (wire/golden/java-client, recorded through the capture proxy).
    const hex = readFileSync(resolve(import.meta.dirname, '..', 'wire', 'golden', 'java-client', '01-ApiVersions-v5-response.hex'), 'utf8').replace(/\s+/g, '');
    const r = new Reader(Buffer.from(hex, 'hex'));
    r.int32(); // correlation id; ApiVersions answers with header v0
    const kafka = codecFor<{ apiKeys: { apiKey: number; minVersion: number; maxVersion: number }[] }>(ApiVersionsResponse, 5).decode(r);
    expect(r.error).toBeNull();
    const notServed = new Map<number, string>([
      // KRaft's quorum and controller-only APIs: gregor has no KRaft quorum.
      [55, 'kraft'], [80, 'kraft'], [81, 'kraft'], [94, 'kraft'],
      // Security: ACLs, SCRAM credentials, quotas, delegation tokens.
      [29, 'security'], [30, 'security'], [31, 'security'], [50, 'security'], [51, 'security'],
      [48, 'security'], [49, 'security'], [38, 'security'], [39, 'security'], [40, 'security'], [41, 'security'],
      // The topology description of streams groups (KIP-1331).
      [93, 'streams'],
    ]);
    const ours = new Map(advertisedVersions().map((v) => [v.apiKey, v]));
    const oldest = new Map(API_MESSAGES.map((a) => [a.apiKey, a.request.versions[0]]));
    const gaps: string[] = [];
    for (const k of kafka.apiKeys) {
      const mine = ours.get(k.apiKey);
      if (notServed.has(k.apiKey)) {
        if (mine) gaps.push(`${k.apiKey} is served: take it off the list`);
        continue;
      }
      if (!mine) gaps.push(`${k.apiKey} not served`);
      else if (mine.maxVersion !== k.maxVersion) gaps.push(`${k.apiKey} up to v${mine.maxVersion}, Kafka v${k.maxVersion}`);
      else if (FIRST_RELEASED.has(k.apiKey) ? mine.minVersion !== k.minVersion : mine.minVersion > Math.min(k.minVersion, oldest.get(k.apiKey)!)) {
        gaps.push(`${k.apiKey} from v${mine.minVersion}`);
      }
    }
    expect(gaps).toEqual([]);
  });
});

/** In-memory services for handler tests: a real local metadata store in a temp dir. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { LocalMetadataStore } from '../cluster/local-metadata-store.js';
import type { BrokerServices, BrokerSettings, RequestContext } from './handler.js';
import { HANDLERS, advertisedVersions } from './registry.js';

export function testServices(settings: Partial<BrokerSettings> = {}, dir = mkdtempSync(join(tmpdir(), 'gregor-api-'))): BrokerServices {
  const full: BrokerSettings = { nodeId: 1, autoCreateTopicsEnable: true, numPartitions: 3, defaultReplicationFactor: 1, ...settings };
  const store = new LocalMetadataStore(dir, 'test-cluster-id-00000', {
    nodeId: full.nodeId,
    rack: null,
    endpoints: [
      { listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 },
      { listener: 'INTERNAL', host: 'broker-1.internal', port: 19092 },
    ],
  });
  return { settings: full, metadata: store, log: pino({ level: 'silent' }), apiVersions: advertisedVersions(HANDLERS) };
}

export function ctxFor(services: BrokerServices, apiVersion: number, listener = 'PLAINTEXT'): RequestContext {
  return { apiVersion, correlationId: 1, clientId: 'test', listener, clientHost: '127.0.0.1', services };
}

/**
 * Frames recorded between real clients and Apache Kafka (wire/golden/<client>/):
 * our codec must decode every request and response whose version we declare,
 * and re-encode each to the very same bytes.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_MESSAGES } from './messages/index.js';
import { codecFor } from './codec.js';
import { Reader } from './reader.js';
import { Writer } from './writer.js';
import { inRange } from './schema.js';
import { readHeaderRest, readHeaderStart, requestHeaderVersion, responseHeaderVersion } from './headers.js';

interface CapturedFrame {
  file: string;
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  direction: 'request' | 'response';
}

const goldenDir = resolve(import.meta.dirname, 'golden');
// Client captures hold a capture.json; other directories (kafka-down-convert) have tests of their own.
const clients = readdirSync(goldenDir, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(goldenDir, d.name, 'capture.json')))
  .map((d) => d.name);
const apis = new Map(API_MESSAGES.map((a) => [a.apiKey, a]));

function hex(client: string, file: string): Buffer {
  return Buffer.from(readFileSync(join(goldenDir, client, file), 'utf8').replace(/\s+/g, ''), 'hex');
}

function reencode(decl: Parameters<typeof codecFor>[0], version: number, value: unknown): Buffer {
  const w = new Writer();
  codecFor(decl, version).encode(w, value);
  return Buffer.from(w.finish());
}

describe('golden frames from real clients and Apache Kafka', () => {
  it('exist for every client of the compat matrix', () => {
    for (const c of ['kafkajs', 'platformatic', 'kcat', 'confluent-kafka-debian', 'confluent-kafka-pypi', 'kafka-python-debian', 'kafka-python-pypi', 'java-client', 'franz-go']) {
      expect(clients).toContain(c);
    }
  });

  for (const client of clients) {
    it(`${client}: requests and responses decode and re-encode byte for byte`, () => {
      const capture = JSON.parse(readFileSync(join(goldenDir, client, 'capture.json'), 'utf8')) as { frames: CapturedFrame[] };
      let checked = 0;
      for (const f of capture.frames) {
        const api = apis.get(f.apiKey)!;
        const bytes = hex(client, f.file);
        const r = new Reader(bytes);
        if (f.direction === 'request') {
          const head = readHeaderStart(r);
          expect(head, f.file).toEqual({ apiKey: f.apiKey, apiVersion: f.apiVersion, correlationId: f.correlationId });
          // Versions newer than our declarations (Kafka 4.4.0 also serves Metadata v13, ApiVersions v5) are only header-checked.
          if (!inRange(api.request.versions, f.apiVersion)) continue;
          readHeaderRest(r, requestHeaderVersion(f.apiKey, f.apiVersion, api.request));
          const bodyStart = r.pos;
          const value = codecFor(api.request, f.apiVersion).decode(r);
          expect(r.error, f.file).toBeNull();
          // librdkafka may leave unused bytes after the last field; Kafka ignores them and so do we.
          const body = bytes.subarray(bodyStart, r.pos);
          expect(reencode(api.request, f.apiVersion, value).equals(body), `${f.file} re-encodes differently`).toBe(true);
        } else {
          expect(r.int32(), f.file).toBe(f.correlationId);
          if (!inRange(api.response.versions, f.apiVersion)) {
            // A version Kafka does not serve gets its answer in the v0 layout.
            if (f.apiKey !== 18) continue;
            const value = codecFor<{ errorCode: number; apiKeys: unknown[] }>(api.response, 0).decode(r);
            expect(r.error).toBeNull();
            expect(value.errorCode, f.file).toBe(35);
            checked++;
            continue;
          }
          if (responseHeaderVersion(f.apiKey, f.apiVersion, api.response) >= 1) r.uvarint();
          const bodyStart = r.pos;
          const value = codecFor(api.response, f.apiVersion).decode(r);
          expect(r.error, f.file).toBeNull();
          expect(r.remaining, `${f.file} has bytes we did not read`).toBe(0);
          expect(reencode(api.response, f.apiVersion, value).equals(bytes.subarray(bodyStart)), `${f.file} re-encodes differently`).toBe(true);
        }
        checked++;
      }
      expect(checked, 'at least the handshake was checked').toBeGreaterThanOrEqual(2);
    });
  }
});

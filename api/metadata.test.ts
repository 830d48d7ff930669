import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/reader.js';
import { encode } from '../wire/codec.js';
import { MetadataResponse as MetadataResponseDecl } from '../wire/messages/metadata-response.js';
import type { MetadataRequest } from '../wire/messages/metadata-request.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import { metadata } from './metadata.js';
import { ctxFor, testServices } from './test-services.js';
import type { BrokerServices } from './handler.js';

function req(topics: MetadataRequest['topics'], allowAutoTopicCreation = true): MetadataRequest {
  return { topics, allowAutoTopicCreation, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
}

const named = (...names: string[]) => names.map((name) => ({ name, topicId: ZERO_UUID }));

async function ask(services: BrokerServices, version: number, request: MetadataRequest, listener?: string): Promise<MetadataResponse> {
  return (await metadata.handle(request, ctxFor(services, version, listener))) as MetadataResponse;
}

describe('Metadata', () => {
  it('lists this broker with the address advertised for the listener the client used', async () => {
    const s = testServices();
    const res = await ask(s, 12, req([]), 'INTERNAL');
    expect(res.brokers).toEqual([{ nodeId: 1, host: 'broker-1.internal', port: 19092, rack: null }]);
    expect(res.controllerId).toBe(1);
    expect(res.clusterId).toBe('test-cluster-id-00000');
  });

  it('answers the cluster operations Kafka 4.4.0 answers without an authorizer, only in v8-v10 and only when asked', async () => {
    const s = testServices();
    const asked = { ...req([]), includeClusterAuthorizedOperations: true };
    // A Metadata v9 request with include_cluster_authorized_operations to Kafka 4.4.0 got 8096 (v8 and v10 too).
    expect((await ask(s, 9, asked)).clusterAuthorizedOperations).toBe(8096);
    expect((await ask(s, 9, req([]))).clusterAuthorizedOperations).toBe(-2147483648);
    expect((await ask(s, 11, asked)).clusterAuthorizedOperations).toBe(-2147483648);
  });

  it('reads an empty topic list as "all topics" in v0 and "no topics" from v1', async () => {
    const s = testServices();
    await ask(s, 1, req(named('a')));
    expect((await ask(s, 0, req([]))).topics.map((t) => t.name)).toEqual(['a']);
    expect((await ask(s, 1, req([]))).topics).toEqual([]);
    expect((await ask(s, 1, req(null))).topics.map((t) => t.name)).toEqual(['a']);
  });

  it('auto-creates an unknown topic: UNKNOWN_TOPIC_OR_PARTITION first (as Kafka 4), then the leader', async () => {
    const s = testServices({ config: { 'num.partitions': 3 } });
    const first = await ask(s, 9, req(named('orders')));
    expect(first.topics[0]).toMatchObject({ name: 'orders', errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partitions: [] });
    const second = await ask(s, 9, req(named('orders')));
    expect(second.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(second.topics[0]!.partitions.map((p) => [p.partitionIndex, p.leaderId, p.replicaNodes, p.isrNodes])).toEqual([
      [0, 1, [1], [1]],
      [1, 1, [1], [1]],
      [2, 1, [1], [1]],
    ]);
  });

  it('does not create when the client (v4+) or the broker config says no', async () => {
    const s = testServices();
    expect((await ask(s, 4, req(named('x'), false))).topics[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    const off = testServices({ config: { 'auto.create.topics.enable': false } });
    expect((await ask(off, 1, req(named('x')))).topics[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect((await ask(off, 1, req(null))).topics).toEqual([]);
  });

  it('rejects illegal names with INVALID_TOPIC_EXCEPTION and never creates internal topics on request', async () => {
    const s = testServices();
    for (const bad of ['has space', 'a/b', '..', 'x'.repeat(250)]) {
      expect((await ask(s, 9, req(named(bad)))).topics[0]!.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
    }
    expect((await ask(s, 9, req(named('__consumer_offsets')))).topics[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect((await ask(s, 1, req(null))).topics).toEqual([]);
  });

  it('gives topics a stable non-zero id and finds them by id from v10', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-md-'));
    const s = testServices({}, dir);
    await ask(s, 12, req(named('t')));
    const described = (await ask(s, 12, req(named('t')))).topics[0]!;
    expect(described.topicId).not.toBe(ZERO_UUID);
    const byId = await ask(s, 12, req([{ name: null, topicId: described.topicId }]));
    expect(byId.topics[0]).toMatchObject({ name: 't', errorCode: ErrorCode.NONE });
    const unknown = await ask(s, 12, req([{ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg' }]));
    expect(unknown.topics[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID);
    // Reopening the directory, as a restart does, keeps the id.
    const again = testServices({}, dir);
    expect((await ask(again, 12, req(named('t')))).topics[0]!.topicId).toBe(described.topicId);
  });

  it('refuses a topic whose name collides with an existing one through "." and "_"', async () => {
    const s = testServices();
    await ask(s, 9, req(named('a.b')));
    const res = await ask(s, 9, req(named('a_b')));
    expect(res.topics[0]).toMatchObject({ name: 'a_b', errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION });
    expect((await ask(s, 9, req(null))).topics.map((t) => t.name)).toEqual(['a.b']);
  });

  it('reports authorized operations only when asked', async () => {
    const s = testServices();
    await ask(s, 9, req(named('t')));
    const plain = await ask(s, 9, req(named('t')));
    expect(plain.topics[0]!.topicAuthorizedOperations).toBe(-2147483648);
    const withOps = await ask(s, 9, { ...req(named('t')), includeTopicAuthorizedOperations: true });
    expect(withOps.topics[0]!.topicAuthorizedOperations).toBeGreaterThan(0);
  });

  it('answers what a response version can carry when a request has a null or empty name', async () => {
    const s = testServices();
    for (const v of [10, 11]) {
      const res = await ask(s, v, req([{ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg' }]));
      expect(res.topics).toMatchObject([{ name: '', errorCode: ErrorCode.INVALID_REQUEST }]);
      expect(() => encode(MetadataResponseDecl, v, res)).not.toThrow();
    }
    for (const v of [0, 1, 9, 12]) {
      const res = await ask(s, v, req(named('')));
      expect(res.topics).toMatchObject([{ name: '', errorCode: ErrorCode.INVALID_TOPIC_EXCEPTION }]);
      expect(() => encode(MetadataResponseDecl, v, res)).not.toThrow();
    }
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import type { AlterConfigsRequest } from '../wire/messages/alter-configs-request.js';
import { AlterConfigsResponse as ResponseDecl, type AlterConfigsResponse } from '../wire/messages/alter-configs-response.js';
import { DEFAULT_LOG_CONFIG } from '../storage/log-config.js';
import { alterConfigs } from './alter-configs.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(dir?: string): TestServices {
  const s = testServices({}, dir, { followTopicConfigs: true });
  open.push(s);
  return s;
}

type Resource = [type: number, name: string, configs: [string, string | null][]];

function request(resources: Resource[], validateOnly = false): AlterConfigsRequest {
  return {
    resources: resources.map(([resourceType, resourceName, configs]) => ({ resourceType, resourceName, configs: configs.map(([name, value]) => ({ name, value })) })),
    validateOnly,
  };
}

async function alter(s: TestServices, req: AlterConfigsRequest, version = 2): Promise<[number, string, number, string | null][]> {
  const res = (await alterConfigs.handle(req, ctxFor(s, version))) as AlterConfigsResponse;
  return res.responses.map((r) => [r.resourceType, r.resourceName, r.errorCode, r.errorMessage]);
}

const DAY = 86400000;

describe('AlterConfigs', () => {
  it('makes the given configs a topic\'s whole set of overrides, and its open logs take them at once', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 2, replicationFactor: 1, configs: { 'retention.ms': '1000', 'cleanup.policy': 'compact' } });
    expect(s.logs.get('orders', 1)!.config).toMatchObject({ retentionMs: 1000, cleanupPolicy: ['compact'] });

    expect(await alter(s, request([[2, 'orders', [['segment.bytes', '2000000']]]]))).toEqual([[2, 'orders', ErrorCode.NONE, null]]);
    expect(s.metadata.image().topics.get('orders')!.configs).toEqual({ 'segment.bytes': '2000000' });
    for (const p of [0, 1]) expect(s.logs.get('orders', p)!.config).toEqual({ ...DEFAULT_LOG_CONFIG, segmentBytes: 2000000 });
  });

  it('applies a new retention.ms to the data already there', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    const twoDaysAgo = BigInt(Date.now() - 2 * DAY);
    expect(s.replicas.appendRecords('orders', 0, buildBatch({ records: [{ value: 'old', timestamp: twoDaysAgo }] }), -1).errorCode).toBe(ErrorCode.NONE);
    expect(s.logs.get('orders', 0)!.deleteOldSegments()).toBe(0); // a week's retention keeps it

    expect(await alter(s, request([[2, 'orders', [['retention.ms', String(DAY)]]]]))).toEqual([[2, 'orders', ErrorCode.NONE, null]]);
    const log = s.logs.get('orders', 0)!;
    expect(log.config.retentionMs).toBe(DAY);
    expect(log.deleteOldSegments()).toBe(1);
    expect(log.logStartOffset).toBe(1n);
  });

  it('checks everything and changes nothing with validate_only', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } });
    expect(await alter(s, request([[2, 'orders', [['retention.ms', '5']]], [4, '', [['log.retention.ms', '5']]]], true))).toEqual([
      [2, 'orders', ErrorCode.NONE, null],
      [4, '', ErrorCode.NONE, null],
    ]);
    expect(await alter(s, request([[2, 'orders', [['retention.ms', '-5']]]], true))).toEqual([
      [2, 'orders', ErrorCode.INVALID_CONFIG, 'Invalid value -5 for configuration retention.ms: Value must be at least -1'],
    ]);
    expect(s.metadata.image().topics.get('orders')!.configs).toEqual({ 'retention.ms': '1000' });
    expect(s.metadata.image().dynamicBrokerConfigs.clusterDefault).toEqual({});
    expect(s.logs.get('orders', 0)!.config.retentionMs).toBe(1000);
  });

  it('refuses what Kafka 4.0 refuses, resource by resource, with its codes and words', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    const resources: Resource[] = [
      [2, 'orders', [['retention.ms', null]]],
      [2, 'nope', []],
      [2, '', []],
      [2, 'bad name!', []],
      [4, '2', []],
      [4, 'x', []],
      [4, '1', [['log.retention.hours', '1']]],
      [4, '1', [['num.partitions', '3'], ['delete.topic.enable', 'true']]],
      [4, '', [['log.segment.bytes', '1000']]],
      [8, '1', [['root', 'INFO']]],
      [99, '1', []],
      [32, '', []],
      [32, 'group', [['share.isolation.level', 'committed']]],
      [16, 'metrics', []],
    ];
    const answers = [];
    // One request each: a resource named twice in one request is refused as such.
    for (const r of resources) answers.push(...(await alter(s, request([r]))));
    expect(answers).toEqual([
      [2, 'orders', ErrorCode.INVALID_REQUEST, 'Null value not supported for : retention.ms'],
      [2, 'nope', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."],
      [2, '', ErrorCode.INVALID_REQUEST, 'Default topic resources are not allowed.'],
      [2, 'bad name!', ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"],
      [4, '2', ErrorCode.INVALID_REQUEST, 'Unexpected broker id, expected 1, but received 2'],
      [4, 'x', ErrorCode.INVALID_REQUEST, 'Node id must be an integer, but it is: x'],
      [4, '1', ErrorCode.INVALID_REQUEST, 'Cannot update these configs dynamically: [log.retention.hours]'],
      [4, '1', ErrorCode.INVALID_REQUEST, 'Cannot update these configs dynamically: [num.partitions, delete.topic.enable]'],
      [4, '', ErrorCode.INVALID_REQUEST, 'Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576'],
      [8, '1', ErrorCode.INVALID_REQUEST, 'Unknown resource type 8'],
      [99, '1', ErrorCode.INVALID_REQUEST, 'Unknown resource type 99'],
      [32, '', ErrorCode.INVALID_REQUEST, 'Default group resources are not allowed.'],
      [32, 'group', ErrorCode.INVALID_CONFIG, 'Invalid value committed for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted'],
      [16, 'metrics', ErrorCode.INVALID_REQUEST, 'gregor does not support config resources of type 16'],
    ]);
    expect(await alter(s, request([[2, 'orders', [['nope.z', '1']]], [4, '1', [['message.max.bytes', 'x']]]]))).toEqual([
      [2, 'orders', ErrorCode.INVALID_CONFIG, 'Unknown topic config name: nope.z'],
      [4, '1', ErrorCode.INVALID_REQUEST, 'Invalid value x for configuration message.max.bytes: Not a number of type INT'],
    ]);
    expect(await alter(s, request([[2, 'orders', [['retention.ms', '1'], ['retention.ms', '2']]]]))).toEqual([
      [2, 'orders', ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys'],
    ]);
    expect(await alter(s, request([[2, 'orders', []], [2, 'orders', []]]))).toEqual([
      [2, 'orders', ErrorCode.INVALID_REQUEST, 'Each resource must appear at most once.'],
      [2, 'orders', ErrorCode.INVALID_REQUEST, 'Each resource must appear at most once.'],
    ]);
  });

  it('sets broker-wide topic defaults at the cluster level and per broker; topics that override keep theirs', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'plain', numPartitions: 1, replicationFactor: 1 });
    await s.metadata.createTopic({ name: 'own', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } });

    expect(await alter(s, request([[4, '', [['log.retention.ms', '3600000'], ['log.cleanup.policy', 'compact, delete']]]]))).toEqual([[4, '', ErrorCode.NONE, null]]);
    expect(s.logs.get('plain', 0)!.config).toMatchObject({ retentionMs: 3600000, cleanupPolicy: ['compact', 'delete'] });
    expect(s.logs.get('own', 0)!.config).toMatchObject({ retentionMs: 1000, cleanupPolicy: ['compact', 'delete'] });

    expect(await alter(s, request([[4, '1', [['log.retention.ms', '7200000']]]]))).toEqual([[4, '1', ErrorCode.NONE, null]]);
    expect(s.logs.get('plain', 0)!.config.retentionMs).toBe(7200000);

    // AlterConfigs replaces a level's whole set: emptying both brings Kafka's defaults back.
    await alter(s, request([[4, '1', []], [4, '', []]]));
    expect(s.logs.get('plain', 0)!.config).toEqual(DEFAULT_LOG_CONFIG);
    expect(s.metadata.image().dynamicBrokerConfigs).toEqual({ clusterDefault: {}, perBroker: new Map() });
  });

  it('keeps topic overrides and dynamic broker configs across a restart, and the logs reopen on them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-alter-'));
    const first = services(dir);
    await first.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    await alter(first, request([[2, 'orders', [['max.message.bytes', '5000']]], [4, '', [['log.retention.ms', '60000']]]]));
    await first.close();
    open.splice(open.indexOf(first), 1);

    const second = services(dir);
    expect(second.metadata.image().topics.get('orders')!.configs).toEqual({ 'max.message.bytes': '5000' });
    expect(second.metadata.image().dynamicBrokerConfigs.clusterDefault).toEqual({ 'log.retention.ms': '60000' });
    expect(second.logs.get('orders', 0)!.config).toMatchObject({ maxMessageBytes: 5000, retentionMs: 60000 });
  });

  it('encodes its answer at every version', async () => {
    const s = services();
    for (let v = 0; v <= 2; v++) {
      const res = (await alterConfigs.handle(request([[2, 'nope', []]]), ctxFor(s, v))) as AlterConfigsResponse;
      const back = decode<AlterConfigsResponse>(ResponseDecl, v, encode(ResponseDecl, v, res));
      expect(back.ok && back.value.responses[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    }
  });
});

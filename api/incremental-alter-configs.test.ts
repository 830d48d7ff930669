import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import type { IncrementalAlterConfigsRequest } from '../wire/messages/incremental-alter-configs-request.js';
import {
  IncrementalAlterConfigsResponse as ResponseDecl,
  type IncrementalAlterConfigsResponse,
} from '../wire/messages/incremental-alter-configs-response.js';
import type { DescribeConfigsResponse } from '../wire/messages/describe-configs-response.js';
import { describeConfigs } from './describe-configs.js';
import { incrementalAlterConfigs, OpType } from './incremental-alter-configs.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(): TestServices {
  const s = testServices({}, undefined, { followTopicConfigs: true });
  open.push(s);
  return s;
}

const { SET, DELETE, APPEND, SUBTRACT } = OpType;

type Resource = [type: number, name: string, configs: [string, number, string | null][]];

function request(resources: Resource[], validateOnly = false): IncrementalAlterConfigsRequest {
  return {
    resources: resources.map(([resourceType, resourceName, configs]) => ({
      resourceType,
      resourceName,
      configs: configs.map(([name, configOperation, value]) => ({ name, configOperation, value })),
    })),
    validateOnly,
  };
}

async function alter(s: TestServices, req: IncrementalAlterConfigsRequest, version = 1): Promise<[number, string, number, string | null][]> {
  const res = (await incrementalAlterConfigs.handle(req, ctxFor(s, version))) as IncrementalAlterConfigsResponse;
  return res.responses.map((r) => [r.resourceType, r.resourceName, r.errorCode, r.errorMessage]);
}

const ok = (type: number, name: string): [number, string, number, null] => [type, name, ErrorCode.NONE, null];

async function describeOne(s: TestServices, type: number, name: string, keys: string[]) {
  const res = (await describeConfigs.handle({ resources: [{ resourceType: type, resourceName: name, configurationKeys: keys }], includeSynonyms: false, includeDocumentation: false }, ctxFor(s, 4))) as DescribeConfigsResponse;
  return res.results[0]!.configs.map((c) => [c.name, c.value, c.configSource]);
}

describe('IncrementalAlterConfigs', () => {
  it('sets, deletes, appends to and subtracts from a topic\'s configs, in request order', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } });

    // APPEND starts from the default (delete) when the topic does not set the list.
    expect(await alter(s, request([[2, 'orders', [['cleanup.policy', APPEND, 'compact'], ['segment.bytes', SET, '2000000'], ['retention.ms', DELETE, null]]]]))).toEqual([ok(2, 'orders')]);
    expect(s.metadata.image().topics.get('orders')!.configs).toEqual({ 'cleanup.policy': 'delete,compact', 'segment.bytes': '2000000' });
    expect(s.logs.get('orders', 0)!.config).toMatchObject({ cleanupPolicy: ['delete', 'compact'], segmentBytes: 2000000, retentionMs: 604800000 });

    expect(await alter(s, request([[2, 'orders', [['cleanup.policy', SUBTRACT, 'delete']]]]))).toEqual([ok(2, 'orders')]);
    expect(s.logs.get('orders', 0)!.config.cleanupPolicy).toEqual(['compact']);
    expect(await describeOne(s, 2, 'orders', ['cleanup.policy'])).toEqual([['cleanup.policy', 'compact', 1]]);

    // DELETE of a name the topic does not set is fine.
    expect(await alter(s, request([[2, 'orders', [['retention.ms', DELETE, null], ['nope.y', DELETE, null]]]]))).toEqual([ok(2, 'orders')]);
  });

  it('switches an open log to LogAppendTime and a smaller max.message.bytes at once', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    const batch = buildBatch({ records: [{ value: 'x'.repeat(200), timestamp: 1n }] });
    expect(s.replicas.appendRecords('orders', 0, batch, -1).logAppendTimeMs).toBe(-1n);

    await alter(s, request([[2, 'orders', [['message.timestamp.type', SET, 'LogAppendTime']]]]));
    expect(s.replicas.appendRecords('orders', 0, batch, -1).logAppendTimeMs).toBeGreaterThan(0n);

    await alter(s, request([[4, '1', [['message.max.bytes', SET, '100']]]]));
    expect(s.replicas.appendRecords('orders', 0, batch, -1).errorCode).toBe(ErrorCode.MESSAGE_TOO_LARGE);
    expect(await describeOne(s, 2, 'orders', ['max.message.bytes'])).toEqual([['max.message.bytes', '100', 2]]);
  });

  it('refuses what Kafka 4.0 refuses on topics, with its codes and words', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    expect(
      await alter(
        s,
        request(
          [
            [2, 'orders', [['retention.ms', APPEND, '1']]],
            [2, 'orders-2', [['retention.ms', SUBTRACT, '1']]],
            [2, 'nope', [['retention.ms', SET, '1']]],
            [2, '', [['retention.ms', SET, '1']]],
            [99, 'x', [['a', SET, '1']]],
          ],
          true,
        ),
      ),
    ).toEqual([
      [2, 'orders', ErrorCode.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST."],
      [2, 'orders-2', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'orders-2' does not exist."],
      [2, 'nope', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."],
      [2, '', ErrorCode.INVALID_REQUEST, 'Default topic resources are not allowed.'],
      [99, 'x', ErrorCode.INVALID_REQUEST, 'Unknown resource type 99'],
    ]);
    const one = async (configs: [string, number, string | null][]) => (await alter(s, request([[2, 'orders', configs]], true)))[0]!.slice(2);
    expect(await one([['retention.ms', SUBTRACT, '1']])).toEqual([ErrorCode.INVALID_CONFIG, "Can't SUBTRACT to key retention.ms because its type is not LIST."]);
    expect(await one([['cleanup.policy', APPEND, 'foo']])).toEqual([ErrorCode.INVALID_CONFIG, 'Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete']);
    expect(await one([['cleanup.policy', APPEND, null]])).toEqual([ErrorCode.INVALID_REQUEST, 'Null value not supported for : cleanup.policy']);
    expect(await one([['retention.ms', SET, null]])).toEqual([ErrorCode.INVALID_REQUEST, 'Null value not supported for : retention.ms']);
    expect(await one([['retention.ms', SET, '1'], ['retention.ms', DELETE, null]])).toEqual([ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys']);
    expect(await one([['retention.ms', 7, '1']])).toEqual([ErrorCode.UNKNOWN_SERVER_ERROR, null]);
    expect(await one([['nope.x', SET, '1']])).toEqual([ErrorCode.INVALID_CONFIG, 'Unknown topic config name: nope.x']);
    expect(await one([['min.insync.replicas', SET, '0']])).toEqual([ErrorCode.INVALID_CONFIG, 'Invalid value 0 for configuration min.insync.replicas: Value must be at least 1']);
    expect(s.metadata.image().topics.get('orders')!.configs).toEqual({});
  });

  it('changes dynamic broker configs; list operations start from the default; names Kafka does not know are kept, their values hidden', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    expect(await alter(s, request([[4, '', [['log.cleanup.policy', APPEND, 'compact'], ['custom.plugin.secret', SET, 'hunter2']]]]))).toEqual([ok(4, '')]);
    expect(s.metadata.image().dynamicBrokerConfigs.clusterDefault).toEqual({ 'log.cleanup.policy': 'delete,compact', 'custom.plugin.secret': 'hunter2' });
    expect(s.logs.get('orders', 0)!.config.cleanupPolicy).toEqual(['delete', 'compact']);
    expect(await describeOne(s, 4, '', [])).toEqual([
      ['log.cleanup.policy', 'delete,compact', 3],
      ['custom.plugin.secret', null, 3],
    ]);

    expect(await alter(s, request([[4, '1', [['log.cleanup.policy', SUBTRACT, 'delete']]]]))).toEqual([ok(4, '1')]);
    expect(s.logs.get('orders', 0)!.config.cleanupPolicy).toEqual([]);
    expect(await alter(s, request([[4, '1', [['log.cleanup.policy', DELETE, null]]], [4, '', [['log.cleanup.policy', DELETE, null]]]]))).toEqual([ok(4, '1'), ok(4, '')]);
    expect(s.logs.get('orders', 0)!.config.cleanupPolicy).toEqual(['delete']);
  });

  it('refuses what Kafka 4.0 refuses on brokers', async () => {
    const s = services();
    const resources: Resource[] = [
      [4, '1', [['log.retention.ms', APPEND, '5']]],
      [4, '', [['log.retention.ms', SUBTRACT, '5']]],
      [4, '2', [['log.retention.ms', SET, '1']]],
      [4, 'x', [['log.retention.ms', SET, '1']]],
      [4, '1', [['num.partitions', SET, '3']]],
      [4, '1', [['log.retention.ms', SET, 'abc']]],
    ];
    const answers = [];
    // One request each: a resource named twice in one request is refused as such.
    for (const r of resources) answers.push(...(await alter(s, request([r], true))));
    expect(answers).toEqual([
      [4, '1', ErrorCode.INVALID_CONFIG, 'Config value append is not allowed for config key: log.retention.ms'],
      [4, '', ErrorCode.INVALID_CONFIG, 'Config value subtract is not allowed for config key: log.retention.ms'],
      [4, '2', ErrorCode.INVALID_REQUEST, 'Unexpected broker id, expected 1, but received 2'],
      [4, 'x', ErrorCode.INVALID_REQUEST, 'Node id must be an integer, but it is: x'],
      [4, '1', ErrorCode.INVALID_REQUEST, 'Cannot update these configs dynamically: [num.partitions]'],
      [4, '1', ErrorCode.INVALID_REQUEST, 'Invalid value abc for configuration log.retention.ms: Not a number of type LONG'],
    ]);
  });

  it('sets the root log level of this broker at once', async () => {
    const s = services();
    expect(await alter(s, request([[8, '1', [['root', SET, 'DEBUG']]]], true))).toEqual([ok(8, '1')]);
    expect(s.log.level).toBe('silent');
    expect(await alter(s, request([[8, '1', [['root', SET, 'DEBUG']]]]))).toEqual([ok(8, '1')]);
    expect(s.log.level).toBe('debug');
    expect(await describeOne(s, 8, '1', [])).toEqual([['root', 'DEBUG', 6]]);
    s.log.level = 'silent';

    expect(
      await alter(
        s,
        request([
          [8, '1', [['root', SET, 'info']]],
          [8, '1-', [['root', SET, 'INFO']]],
          [8, '2', [['root', SET, 'INFO']]],
          [8, '', [['root', SET, 'INFO']]],
        ]),
      ),
    ).toEqual([
      [8, '1', ErrorCode.INVALID_CONFIG, 'Cannot set the log level of root to info as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN'],
      [8, '1-', ErrorCode.INVALID_REQUEST, 'Node id must be an integer, but it is: 1-'],
      [8, '2', ErrorCode.INVALID_REQUEST, 'Unexpected node id. Expected 1, but received 2'],
      [8, '', ErrorCode.INVALID_REQUEST, 'Node id must be an integer, but it is: '],
    ]);
    const one = async (configs: [string, number, string | null][]) => (await alter(s, request([[8, '1', configs]])))[0]!.slice(2);
    expect(await one([['no.such.logger', SET, 'INFO']])).toEqual([ErrorCode.INVALID_CONFIG, 'Logger no.such.logger does not exist!']);
    expect(await one([['root', DELETE, null]])).toEqual([ErrorCode.INVALID_REQUEST, 'Removing the log level of the root logger is not allowed']);
    expect(await one([['root', APPEND, 'INFO']])).toEqual([ErrorCode.INVALID_REQUEST, 'APPEND operation is not allowed for the BROKER_LOGGER resource']);
    expect(await one([['root', SUBTRACT, 'INFO']])).toEqual([ErrorCode.INVALID_REQUEST, 'SUBTRACT operation is not allowed for the BROKER_LOGGER resource']);
    expect(s.log.level).toBe('silent');
  });

  it('encodes its answer at every version', async () => {
    const s = services();
    for (let v = 0; v <= 1; v++) {
      const res = (await incrementalAlterConfigs.handle(request([[2, 'nope', []]]), ctxFor(s, v))) as IncrementalAlterConfigsResponse;
      const back = decode<IncrementalAlterConfigsResponse>(ResponseDecl, v, encode(ResponseDecl, v, res));
      expect(back.ok && back.value.responses[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    }
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import type { DescribeConfigsRequest } from '../wire/messages/describe-configs-request.js';
import { DescribeConfigsResponse as ResponseDecl, type DescribeConfigsResponse, type DescribeConfigsResult } from '../wire/messages/describe-configs-response.js';
import type { StaticBrokerConfig } from '../cluster/metadata/broker-configs.js';
import { describeConfigs } from './describe-configs.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** A broker whose file set num.partitions=3; gregor's keys num.partitions and auto.create.topics.enable known. */
const STATIC: StaticBrokerConfig = {
  values: new Map([['num.partitions', '3']]),
  keys: new Map([
    ['num.partitions', { type: 'int', default: '1', doc: 'Partitions of an auto-created topic.' }],
    ['auto.create.topics.enable', { type: 'boolean', default: 'true', doc: 'Create unknown topics on request.' }],
  ]),
};

function services(): TestServices {
  const s = testServices({ staticConfig: STATIC }, undefined, { followTopicConfigs: true });
  open.push(s);
  return s;
}

type Resource = [type: number, name: string, keys: string[] | null];

function request(resources: Resource[], includeSynonyms = true, includeDocumentation = false): DescribeConfigsRequest {
  return { resources: resources.map(([resourceType, resourceName, configurationKeys]) => ({ resourceType, resourceName, configurationKeys })), includeSynonyms, includeDocumentation };
}

async function describeAt(s: TestServices, version: number, req: DescribeConfigsRequest): Promise<DescribeConfigsResponse> {
  return (await describeConfigs.handle(req, ctxFor(s, version))) as DescribeConfigsResponse;
}

const errorsOf = (res: DescribeConfigsResponse) => res.results.map((r) => [r.resourceType, r.resourceName, r.errorCode, r.errorMessage, r.configs.length]);

function config(result: DescribeConfigsResult, name: string) {
  const c = result.configs.find((x) => x.name === name);
  if (!c) throw new Error(`${name} not described`);
  return c;
}

describe('DescribeConfigs', () => {
  it('describes a topic on the broker\'s defaults, as Kafka 4.0 does (v4)', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    const res = await describeAt(s, 4, request([[2, 'orders', null]]));
    const [topic] = res.results;
    expect(topic).toMatchObject({ errorCode: 0, errorMessage: '', resourceType: 2, resourceName: 'orders' });
    expect(topic!.configs).toHaveLength(33);
    expect(config(topic!, 'cleanup.policy')).toEqual({
      name: 'cleanup.policy',
      value: 'delete',
      readOnly: false,
      isDefault: true,
      configSource: 5,
      isSensitive: false,
      synonyms: [{ name: 'log.cleanup.policy', value: 'delete', source: 5 }],
      configType: 7,
      documentation: null,
    });
    expect(config(topic!, 'retention.ms')).toMatchObject({ value: '604800000', configSource: 5, synonyms: [], configType: 5 });
    expect(config(topic!, 'min.cleanable.dirty.ratio')).toMatchObject({ value: '0.5', configType: 6 });
    expect(config(topic!, 'compression.type')).toMatchObject({ value: 'producer', configType: 2, synonyms: [{ name: 'compression.type', value: 'producer', source: 5 }] });
  });

  it('shows a topic\'s overrides as TOPIC_CONFIG, first among the synonyms', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000', 'cleanup.policy': ' compact , delete ' } });
    const [topic] = (await describeAt(s, 1, request([[2, 'orders', ['retention.ms', 'cleanup.policy', 'nope']]]))).results;
    expect(topic!.configs.map((c) => [c.name, c.value, c.configSource, c.synonyms])).toEqual([
      [
        'cleanup.policy',
        'compact,delete',
        1,
        [
          { name: 'cleanup.policy', value: 'compact,delete', source: 1 },
          { name: 'log.cleanup.policy', value: 'delete', source: 5 },
        ],
      ],
      ['retention.ms', '1000', 1, [{ name: 'retention.ms', value: '1000', source: 1 }]],
    ]);
  });

  it('answers v0 with is_default, and documentation only from v3 when asked', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } });
    const keys = ['retention.ms', 'segment.ms'];
    const v0 = (await describeAt(s, 0, request([[2, 'orders', keys]]))).results[0]!;
    expect(v0.configs.map((c) => [c.name, c.isDefault])).toEqual([
      ['retention.ms', false],
      ['segment.ms', true],
    ]);
    const v2 = (await describeAt(s, 2, request([[2, 'orders', keys]], false, true))).results[0]!;
    expect(v2.configs.every((c) => c.documentation === null && c.synonyms.length === 0)).toBe(true);
    const v3 = (await describeAt(s, 3, request([[2, 'orders', keys]], false, true))).results[0]!;
    expect(v3.configs.every((c) => typeof c.documentation === 'string' && c.documentation.length > 0)).toBe(true);
  });

  it('takes empty configuration_keys as every config, as Kafka does', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    expect((await describeAt(s, 1, request([[2, 'orders', []]]))).results[0]!.configs).toHaveLength(33);
  });

  it('describes this broker with sources and synonyms, and the cluster default resource with what is set there', async () => {
    const s = services();
    await s.metadata.alterBrokerConfigs(null, { 'log.retention.ms': '3600000' });
    const res = await describeAt(s, 4, request([
      [4, '1', ['num.partitions', 'auto.create.topics.enable', 'log.retention.ms', 'log.retention.hours']],
      [4, '', null],
    ]));
    const [broker, cluster] = res.results;
    expect(broker!.configs.map((c) => [c.name, c.value, c.configSource, c.readOnly, c.configType, c.synonyms])).toEqual([
      // In Kafka 4.0's order.
      ['log.retention.hours', '168', 5, true, 3, [{ name: 'log.retention.hours', value: '168', source: 5 }]],
      ['auto.create.topics.enable', 'true', 5, true, 1, [{ name: 'auto.create.topics.enable', value: 'true', source: 5 }]],
      [
        'log.retention.ms',
        '3600000',
        3,
        false,
        5,
        [
          { name: 'log.retention.ms', value: '3600000', source: 3 },
          { name: 'log.retention.hours', value: '168', source: 5 },
        ],
      ],
      [
        'num.partitions',
        '3',
        4,
        true,
        3,
        [
          { name: 'num.partitions', value: '3', source: 4 },
          { name: 'num.partitions', value: '1', source: 5 },
        ],
      ],
    ]);
    expect(cluster!.configs.map((c) => [c.name, c.value, c.configSource])).toEqual([['log.retention.ms', '3600000', 3]]);
  });

  it('reports each resource\'s own error, as Kafka 4.0 words them', async () => {
    const s = services();
    const res = await describeAt(s, 4, request([
      [2, 'nope', null],
      [2, 'bad name!', null],
      [2, '', null],
      [4, '7', null],
      [4, 'x', null],
      [8, '', null],
      [8, 'x', null],
      [8, '2', null],
      [32, '', null],
      [16, 'metrics', null],
    ]));
    expect(errorsOf(res)).toEqual([
      [2, 'nope', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, '', 0],
      [2, 'bad name!', ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", 0],
      [2, '', ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name is invalid: the empty string is not allowed', 0],
      [4, '7', ErrorCode.INVALID_REQUEST, 'Unexpected broker id, expected 1 or empty string, but received 7', 0],
      [4, 'x', ErrorCode.INVALID_REQUEST, 'Broker id must be an integer, but it is: x', 0],
      [8, '', ErrorCode.INVALID_REQUEST, 'Broker id must not be empty', 0],
      [8, 'x', ErrorCode.INVALID_REQUEST, 'Broker id must be an integer, but it is: x', 0],
      [8, '2', ErrorCode.INVALID_REQUEST, 'Unexpected broker id, expected 1 but received 2', 0],
      [32, '', ErrorCode.INVALID_REQUEST, 'Group name must not be empty', 0],
      [16, 'metrics', ErrorCode.INVALID_REQUEST, 'gregor does not support config resources of type 16', 0],
    ]);
  });

  it('fails the whole request for a resource type Kafka does not know', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
    const res = await describeAt(s, 1, request([[2, 'orders', null], [99, 'x', null]]));
    expect(res.results.map((r) => [r.resourceType, r.errorCode, r.configs.length])).toEqual([
      [2, ErrorCode.INVALID_REQUEST, 0],
      [99, ErrorCode.INVALID_REQUEST, 0],
    ]);
  });

  it('lists the root logger with its level for this broker\'s logger resource', async () => {
    const s = services();
    const [logger, filtered] = (await describeAt(s, 1, request([[8, '1', null], [8, '1', ['other']]]))).results;
    expect(logger!.configs.map((c) => [c.name, c.value, c.configSource, c.readOnly])).toEqual([['root', 'OFF', 6, false]]);
    expect(filtered!.configs).toEqual([]);
  });

  it('encodes its answer at every version', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } });
    for (let v = 0; v <= 4; v++) {
      const res = await describeAt(s, v, request([[2, 'orders', ['retention.ms']], [4, '1', ['num.partitions']], [2, 'nope', null]], true, true));
      const back = decode<DescribeConfigsResponse>(ResponseDecl, v, encode(ResponseDecl, v, res));
      expect(back.ok).toBe(true);
      if (!back.ok) continue;
      const retention = back.value.results[0]!.configs[0]!;
      expect(retention.value).toBe('1000');
      if (v === 0) expect(retention.isDefault).toBe(false);
      else expect([retention.configSource, retention.synonyms.length]).toEqual([1, 1]);
      expect(retention.configType).toBe(v >= 3 ? 5 : 0);
      expect(back.value.results[2]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    }
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import type { StaticBrokerConfig } from '../cluster/metadata/broker-configs.js';
import type { DescribeConfigsResponse, DescribeConfigsResult } from '../wire/messages/describe-configs-response.js';
import type { IncrementalAlterConfigsResponse } from '../wire/messages/incremental-alter-configs-response.js';
import type { AlterConfigsResponse } from '../wire/messages/alter-configs-response.js';
import { GROUP_CONFIG_DESCRIBE_ORDER } from '../cluster/group/group-configs.js';
import { alterConfigs } from './alter-configs.js';
import { describeConfigs } from './describe-configs.js';
import { incrementalAlterConfigs, OpType } from './incremental-alter-configs.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const GROUP = 32;
const { SET, DELETE, APPEND, SUBTRACT } = OpType;
const DEFAULT_CONFIG = 5;
const STATIC_BROKER_CONFIG = 4;
const GROUP_CONFIG = 8;

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** A broker whose file set group.share.record.lock.duration.ms=20000. */
const STATIC: StaticBrokerConfig = {
  values: new Map([['group.share.record.lock.duration.ms', '20000']]),
  keys: new Map([['group.share.record.lock.duration.ms', { type: 'int', default: '30000', doc: 'Lock duration.' }]]),
};

function services(): TestServices {
  const s = testServices({ staticConfig: STATIC });
  open.push(s);
  return s;
}

async function describe_(s: TestServices, group: string, keys: string[] | null, version = 4, documentation = false): Promise<DescribeConfigsResult> {
  const res = (await describeConfigs.handle(
    { resources: [{ resourceType: GROUP, resourceName: group, configurationKeys: keys }], includeSynonyms: true, includeDocumentation: documentation },
    ctxFor(s, version),
  )) as DescribeConfigsResponse;
  return res.results[0]!;
}

async function alter(s: TestServices, group: string, configs: [string, number, string | null][], validateOnly = false): Promise<[number, string | null]> {
  const res = (await incrementalAlterConfigs.handle(
    { resources: [{ resourceType: GROUP, resourceName: group, configs: configs.map(([name, configOperation, value]) => ({ name, configOperation, value })) }], validateOnly },
    ctxFor(s, 1),
  )) as IncrementalAlterConfigsResponse;
  return [res.responses[0]!.errorCode, res.responses[0]!.errorMessage];
}

const OK: [number, null] = [ErrorCode.NONE, null];

describe('the GROUP config resource', () => {
  it('describes a group with no configs (it need not exist) on the broker\'s settings, as Kafka 4.4 does', async () => {
    const s = services();
    const r = await describe_(s, 'no-such-group', null);
    expect(r).toMatchObject({ errorCode: 0, errorMessage: '', resourceType: GROUP, resourceName: 'no-such-group' });
    expect(r.configs.map((c) => c.name)).toEqual(GROUP_CONFIG_DESCRIBE_ORDER);
    const byName = new Map(r.configs.map((c) => [c.name, c]));
    expect(byName.get('share.record.lock.duration.ms')).toEqual({
      name: 'share.record.lock.duration.ms',
      value: '20000',
      readOnly: false,
      isDefault: false,
      configSource: STATIC_BROKER_CONFIG,
      isSensitive: false,
      synonyms: [
        { name: 'group.share.record.lock.duration.ms', value: '20000', source: STATIC_BROKER_CONFIG },
        { name: 'group.share.record.lock.duration.ms', value: '30000', source: DEFAULT_CONFIG },
      ],
      configType: 3,
      documentation: null,
    });
    expect(byName.get('share.auto.offset.reset')).toMatchObject({
      value: 'latest',
      configSource: DEFAULT_CONFIG,
      isDefault: true,
      configType: 2,
      synonyms: [{ name: 'share.auto.offset.reset', value: 'latest', source: DEFAULT_CONFIG }],
    });
    expect(byName.get('streams.assignor.name')).toMatchObject({
      value: 'sticky',
      configSource: DEFAULT_CONFIG,
      synonyms: [{ name: 'group.streams.assignors', value: 'sticky', source: DEFAULT_CONFIG }],
    });
    expect(byName.get('share.delivery.count.limit')).toMatchObject({ value: '5', synonyms: [{ name: 'group.share.delivery.count.limit', value: '5', source: DEFAULT_CONFIG }] });
  });

  it('sets and deletes a group\'s configs; the describe shows them as the group\'s own, asked by name, with documentation when asked', async () => {
    const s = services();
    expect(await alter(s, 'g', [['share.auto.offset.reset', SET, 'earliest'], ['share.record.lock.duration.ms', SET, '15000']])).toEqual(OK);
    expect(s.metadata.groupConfigOverrides('g')).toEqual(new Map([['share.auto.offset.reset', 'earliest'], ['share.record.lock.duration.ms', '15000']]));
    const r = await describe_(s, 'g', ['share.record.lock.duration.ms', 'share.auto.offset.reset', 'not.a.config'], 3, true);
    expect(r.configs.map((c) => [c.name, c.value, c.configSource, c.synonyms])).toEqual([
      [
        'share.auto.offset.reset',
        'earliest',
        GROUP_CONFIG,
        [
          { name: 'share.auto.offset.reset', value: 'earliest', source: GROUP_CONFIG },
          { name: 'share.auto.offset.reset', value: 'latest', source: DEFAULT_CONFIG },
        ],
      ],
      [
        'share.record.lock.duration.ms',
        '15000',
        GROUP_CONFIG,
        [
          { name: 'share.record.lock.duration.ms', value: '15000', source: GROUP_CONFIG },
          { name: 'group.share.record.lock.duration.ms', value: '20000', source: STATIC_BROKER_CONFIG },
          { name: 'group.share.record.lock.duration.ms', value: '30000', source: DEFAULT_CONFIG },
        ],
      ],
    ]);
    expect(r.configs.every((c) => typeof c.documentation === 'string' && c.documentation.length > 0)).toBe(true);

    expect(await alter(s, 'g', [['share.auto.offset.reset', DELETE, null], ['never.set.nor.known', DELETE, null]])).toEqual(OK);
    expect(s.metadata.groupConfigOverrides('g')).toEqual(new Map([['share.record.lock.duration.ms', '15000']]));
    expect(await alter(s, 'g', [['share.record.lock.duration.ms', DELETE, null]])).toEqual(OK);
    expect(s.metadata.image().groupConfigs.has('g')).toBe(false);
  });

  it('lists an internal config only when the group sets it, first', async () => {
    const s = services();
    expect(await alter(s, 'g', [['streams.num.warmup.replicas', SET, '4']])).toEqual(OK);
    const r = await describe_(s, 'g', null);
    expect(r.configs.map((c) => c.name)).toEqual(['streams.num.warmup.replicas', ...GROUP_CONFIG_DESCRIBE_ORDER]);
    expect(r.configs[0]).toMatchObject({
      value: '4',
      configSource: GROUP_CONFIG,
      synonyms: [
        { name: 'streams.num.warmup.replicas', value: '4', source: GROUP_CONFIG },
        { name: 'group.streams.num.warmup.replicas', value: '2', source: DEFAULT_CONFIG },
      ],
    });
  });

  it('refuses what Kafka 4.4 refuses, and changes nothing when it does or when only validating', async () => {
    const s = services();
    expect(await alter(s, 'g', [['share.delivery.count.limit', SET, '3']])).toEqual(OK);
    const cases: [string, [string, number, string | null][], [number, string]][] = [
      ['g', [['share.nope', SET, '1']], [ErrorCode.INVALID_CONFIG, 'Unknown group config name: share.nope']],
      ['g', [['__proto__', SET, '1']], [ErrorCode.INVALID_CONFIG, 'Unknown group config name: __proto__']],
      ['g', [['share.record.lock.duration.ms', SET, '1000']], [ErrorCode.INVALID_CONFIG, 'share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.']],
      [
        'g',
        [['share.auto.offset.reset', SET, 'sometimes']],
        [
          ErrorCode.INVALID_CONFIG,
          "Invalid value sometimes for configuration share.auto.offset.reset: Invalid value `sometimes` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        ],
      ],
      ['g', [['share.delivery.count.limit', APPEND, '4']], [ErrorCode.INVALID_CONFIG, "Can't APPEND to key share.delivery.count.limit because its type is not LIST."]],
      ['g', [['streams.rack.aware.assignment.tags', SUBTRACT, 'a']], [ErrorCode.INVALID_CONFIG, "Can't SUBTRACT to key streams.rack.aware.assignment.tags because its type is not LIST."]],
      ['g', [['share.isolation.level', SET, null]], [ErrorCode.INVALID_REQUEST, 'Null value not supported for : share.isolation.level']],
      ['g', [['errors.deadletterqueue.topic.name', SET, 'x'.repeat(32768)]], [ErrorCode.INVALID_CONFIG, 'The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes.']],
      ['', [['share.isolation.level', SET, 'read_committed']], [ErrorCode.INVALID_REQUEST, 'Default group resources are not allowed.']],
    ];
    for (const [group, configs, expected] of cases) expect(await alter(s, group, configs), JSON.stringify(configs).slice(0, 80)).toEqual(expected);
    expect(await alter(s, 'g', [['share.isolation.level', SET, 'read_committed']], true)).toEqual(OK);
    expect(s.metadata.image().groupConfigs).toEqual(new Map([['g', { 'share.delivery.count.limit': '3' }]]));
    expect((await describe_(s, '', null)).errorCode).toBe(ErrorCode.INVALID_REQUEST);
  });

  it('AlterConfigs replaces a group\'s whole set of overrides, with the same checks', async () => {
    const s = services();
    const call = async (configs: [string, string][], validateOnly = false) => {
      const res = (await alterConfigs.handle(
        { resources: [{ resourceType: GROUP, resourceName: 'g', configs: configs.map(([name, value]) => ({ name, value })) }], validateOnly },
        ctxFor(s, 2),
      )) as AlterConfigsResponse;
      return [res.responses[0]!.errorCode, res.responses[0]!.errorMessage];
    };
    expect(await call([['share.auto.offset.reset', 'earliest'], ['share.delivery.count.limit', '4']])).toEqual(OK);
    expect(await call([['share.isolation.level', 'read_committed']])).toEqual(OK);
    expect(s.metadata.groupConfigOverrides('g')).toEqual(new Map([['share.isolation.level', 'read_committed']]));
    expect(await call([['consumer.session.timeout.ms', '1']])).toEqual([ErrorCode.INVALID_CONFIG, 'consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.']);
    expect(await call([])).toEqual(OK);
    expect(s.metadata.image().groupConfigs.size).toBe(0);
  });
});

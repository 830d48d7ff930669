import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { DEFAULT_LOG_CONFIG } from '../../storage/log-config.js';
import { LogManager } from '../../storage/log-manager.js';
import { BrokerConfigs, ConfigSource, followTopicLogConfigs, NO_STATIC_CONFIG, type DescribeOptions, type StaticBrokerConfig } from './broker-configs.js';
import { dynamicMode, LISTED_BROKER_CONFIGS } from './broker-config-catalog.js';
import { LocalMetadataStore } from './local-metadata-store.js';
import { NO_DYNAMIC_BROKER_CONFIGS, UnknownTopicError, type DynamicBrokerConfigs } from './metadata-image.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-configs-'));
  dirs.push(d);
  return d;
}

const self = { nodeId: 1, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }] };
const openStore = (d: string) => new LocalMetadataStore(d, 'cluster-id', self);

const all: DescribeOptions = { keys: null, includeSynonyms: true, includeDocumentation: false };
const only = (...keys: string[]): DescribeOptions => ({ ...all, keys });

/** A broker started with num.partitions from its file, gregor's keys num.partitions and listeners known. */
const STATIC: StaticBrokerConfig = {
  values: new Map([['num.partitions', '3']]),
  keys: new Map([
    ['num.partitions', { type: 'int', default: '1', doc: 'Partitions of an auto-created topic.' }],
    ['listeners', { type: 'list', default: 'PLAINTEXT://127.0.0.1:9092', doc: 'Addresses to listen on.' }],
    ['broker.id', { type: 'int', default: null, doc: 'Older name of node.id.' }],
  ]),
};

function dynamic(clusterDefault: Record<string, string>, own: Record<string, string> = {}): DynamicBrokerConfigs {
  return { clusterDefault, perBroker: new Map([[1, own]]) };
}

describe('describing a topic', () => {
  it('on a broker left at its defaults: every value Kafka\'s, from DEFAULT_CONFIG, synonyms as Kafka lists them', () => {
    const view = new BrokerConfigs(NO_STATIC_CONFIG, NO_DYNAMIC_BROKER_CONFIGS, 1);
    const entries = view.describeTopic({}, all);
    expect(entries).toHaveLength(33);
    const byName = new Map(entries.map((e) => [e.name, e]));
    expect(byName.get('cleanup.policy')).toEqual({
      name: 'cleanup.policy',
      value: 'delete',
      source: ConfigSource.DEFAULT_CONFIG,
      readOnly: false,
      sensitive: false,
      type: 'list',
      documentation: null,
      synonyms: [{ name: 'log.cleanup.policy', value: 'delete', source: ConfigSource.DEFAULT_CONFIG }],
    });
    // log.retention.ms has no default and log.retention.hours comes after it: Kafka lists no synonym at all.
    expect(byName.get('retention.ms')).toMatchObject({ value: '604800000', source: ConfigSource.DEFAULT_CONFIG, synonyms: [] });
    expect(byName.get('segment.ms')).toMatchObject({ value: '604800000', synonyms: [] });
    expect(byName.get('flush.ms')).toMatchObject({ value: '9223372036854775807', synonyms: [] });
    // No broker synonym at all.
    expect(byName.get('remote.storage.enable')).toMatchObject({ value: 'false', source: ConfigSource.DEFAULT_CONFIG, synonyms: [] });
  });

  it('with overrides and dynamic broker defaults: the override first, then each layer', () => {
    const view = new BrokerConfigs(NO_STATIC_CONFIG, dynamic({ 'log.retention.ms': '3600000', 'log.cleanup.policy': 'compact' }, { 'log.retention.ms': '7200000' }), 1);
    const [cleanup, retention] = view.describeTopic({ 'cleanup.policy': 'delete, compact' }, only('retention.ms', 'cleanup.policy'));
    expect(cleanup).toMatchObject({
      name: 'cleanup.policy',
      value: 'delete,compact',
      source: ConfigSource.TOPIC_CONFIG,
      synonyms: [
        { name: 'cleanup.policy', value: 'delete,compact', source: ConfigSource.TOPIC_CONFIG },
        { name: 'log.cleanup.policy', value: 'compact', source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG },
        { name: 'log.cleanup.policy', value: 'delete', source: ConfigSource.DEFAULT_CONFIG },
      ],
    });
    expect(retention).toMatchObject({
      name: 'retention.ms',
      value: '7200000',
      source: ConfigSource.DYNAMIC_BROKER_CONFIG,
      synonyms: [
        { name: 'log.retention.ms', value: '7200000', source: ConfigSource.DYNAMIC_BROKER_CONFIG },
        { name: 'log.retention.ms', value: '3600000', source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG },
        { name: 'log.retention.hours', value: '168', source: ConfigSource.DEFAULT_CONFIG },
      ],
    });
  });

  it('leaves synonyms out unless asked, keeping the source', () => {
    const view = new BrokerConfigs(NO_STATIC_CONFIG, NO_DYNAMIC_BROKER_CONFIGS, 1);
    expect(view.describeTopic({ 'retention.ms': '1000' }, { keys: ['retention.ms'], includeSynonyms: false, includeDocumentation: true })).toEqual([
      expect.objectContaining({ value: '1000', source: ConfigSource.TOPIC_CONFIG, synonyms: [], documentation: expect.stringContaining('') }),
    ]);
  });
});

describe('describing a broker', () => {
  const view = new BrokerConfigs(STATIC, dynamic({ 'log.retention.ms': '3600000', 'custom.plugin.x': 'secret' }, { 'message.max.bytes': '2000000' }), 1);

  it('lists gregor\'s keys, every topic config default and the log manager settings', () => {
    const names = view.describeBroker(true, all).map((e) => e.name);
    for (const n of [...LISTED_BROKER_CONFIGS, 'num.partitions', 'listeners', 'custom.plugin.x']) expect(names).toContain(n);
    expect(names).toContain('log.retention.hours');
    expect(new Set(names).size).toBe(names.length);
  });

  it('gives each its source and synonyms', () => {
    const entries = view.describeBroker(true, only('num.partitions', 'log.retention.ms', 'log.retention.hours', 'message.max.bytes', 'broker.id', 'listeners'));
    const byName = new Map(entries.map((e) => [e.name, e]));
    expect(byName.get('num.partitions')).toMatchObject({
      value: '3',
      source: ConfigSource.STATIC_BROKER_CONFIG,
      readOnly: true,
      synonyms: [
        { name: 'num.partitions', value: '3', source: ConfigSource.STATIC_BROKER_CONFIG },
        { name: 'num.partitions', value: '1', source: ConfigSource.DEFAULT_CONFIG },
      ],
    });
    expect(byName.get('log.retention.ms')).toMatchObject({
      value: '3600000',
      source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
      readOnly: false,
      type: 'long',
      synonyms: [
        { name: 'log.retention.ms', value: '3600000', source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG },
        { name: 'log.retention.hours', value: '168', source: ConfigSource.DEFAULT_CONFIG },
      ],
    });
    expect(byName.get('log.retention.hours')).toMatchObject({
      value: '168',
      source: ConfigSource.DEFAULT_CONFIG,
      readOnly: true,
      synonyms: [{ name: 'log.retention.hours', value: '168', source: ConfigSource.DEFAULT_CONFIG }],
    });
    expect(byName.get('message.max.bytes')).toMatchObject({ value: '2000000', source: ConfigSource.DYNAMIC_BROKER_CONFIG });
    // gregor's key without a default keeps Kafka's (-1) as the default synonym.
    expect(byName.get('broker.id')).toMatchObject({ value: '-1', source: ConfigSource.DEFAULT_CONFIG });
    // Kafka can change listeners per broker; gregor binds them once.
    expect(byName.get('listeners')).toMatchObject({ readOnly: true, value: 'PLAINTEXT://127.0.0.1:9092' });
  });

  it('hides the value of a name it does not know, as Kafka does', () => {
    expect(view.describeBroker(true, only('custom.plugin.x'))).toEqual([
      {
        name: 'custom.plugin.x',
        value: null,
        source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        readOnly: true,
        sensitive: true,
        type: null,
        documentation: null,
        synonyms: [{ name: 'custom.plugin.x', value: null, source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG }],
      },
    ]);
  });

  it('lists only what is set there for the cluster default resource, with its own values', () => {
    const entries = view.describeBroker(false, all);
    expect(entries.map((e) => [e.name, e.value, e.source, e.synonyms.map((s) => s.source)])).toEqual([
      ['log.retention.ms', '3600000', ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, [ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]],
      ['custom.plugin.x', null, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, [ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]],
    ]);
    expect(new BrokerConfigs(STATIC, NO_DYNAMIC_BROKER_CONFIGS, 1).describeBroker(false, all)).toEqual([]);
  });

  it('documents what it lists in its own words when asked', () => {
    const [hours] = view.describeBroker(true, { keys: ['log.retention.hours'], includeSynonyms: false, includeDocumentation: true });
    expect(hours!.documentation).toMatch(/retention\.ms/);
  });
});

describe('dynamic changes', () => {
  const view = new BrokerConfigs(STATIC, NO_DYNAMIC_BROKER_CONFIGS, 1);

  it('takes the topic config defaults and Kafka\'s other cluster-wide configs', () => {
    expect(view.checkDynamicChange({ 'log.retention.ms': '1000', 'num.io.threads': '8', 'some.plugin.config': 'x' }, false)).toEqual({ ok: true });
    expect(view.checkDynamicChange({ 'log.retention.ms': '1000', 'sasl.kerberos.min.time.before.relogin': '58000' }, true)).toEqual({ ok: true });
    expect(dynamicMode('log.cleanup.policy', new Set())).toBe('cluster-wide');
    expect(dynamicMode('nope', new Set())).toBe('unknown');
    // Kafka changes these at run time; gregor applies max.connections at once and reads the others at start only.
    expect(dynamicMode('max.connections', new Set(['max.connections']))).toBe('cluster-wide');
    expect(dynamicMode('producer.id.expiration.ms', new Set(['producer.id.expiration.ms']))).toBe('read-only');
    expect(dynamicMode('log.cleaner.backoff.ms', new Set())).toBe('read-only');
  });

  it.each([
    [{ 'log.retention.hours': '1' }, 'Cannot update these configs dynamically: [log.retention.hours]'],
    [{ 'num.partitions': '3', 'delete.topic.enable': 'true' }, 'Cannot update these configs dynamically: [num.partitions, delete.topic.enable]'],
    // Kafka changes listeners per broker; gregor binds them once.
    [{ listeners: 'PLAINTEXT://127.0.0.1:1' }, 'Cannot update these configs dynamically: [listeners]'],
    [{ 'ssl.key.password': 'x' }, 'These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.key.password]'],
    [{ 'sasl.kerberos.min.time.before.relogin': '58000' }, 'Cannot update these configs at default cluster level, broker id must be specified: [sasl.kerberos.min.time.before.relogin]'],
    [{ 'log.retention.ms': 'abc' }, 'Invalid value abc for configuration log.retention.ms: Not a number of type LONG'],
    [{ 'log.segment.bytes': '1000' }, 'Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576'],
    [{ 'log.message.timestamp.type': 'x' }, 'Invalid value x for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime'],
    [{ 'leader.replication.throttled.rate': '-1' }, 'Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0'],
  ])('refuses %j with INVALID_REQUEST: %s', (configs, message) => {
    expect(view.checkDynamicChange(configs, false)).toEqual({ ok: false, errorCode: ErrorCode.INVALID_REQUEST, message });
  });
});

describe('log configs from the layers', () => {
  it('gives topics the broker\'s dynamic defaults, a broker\'s own winning over the cluster\'s', () => {
    const view = new BrokerConfigs(NO_STATIC_CONFIG, dynamic({ 'log.retention.ms': '1000', 'log.segment.bytes': '2000000' }, { 'log.retention.ms': '2000' }), 1);
    expect(view.logDefaults()).toEqual({ ...DEFAULT_LOG_CONFIG, retentionMs: 2000, segmentBytes: 2000000 });
    expect(view.logConfigFor({ 'retention.ms': '5' })).toEqual({ ...DEFAULT_LOG_CONFIG, retentionMs: 5, segmentBytes: 2000000 });
  });

  it('uses what the operator set at start (a key gregor\'s config knows)', () => {
    const withHours: StaticBrokerConfig = { values: new Map([['log.retention.hours', '1']]), keys: new Map([['log.retention.hours', { type: 'int', default: '168', doc: '' }]]) };
    expect(new BrokerConfigs(withHours, NO_DYNAMIC_BROKER_CONFIGS, 1).logDefaults().retentionMs).toBe(3600000);
  });
});

describe('LocalMetadataStore: configs', () => {
  it('replaces a topic\'s overrides and keeps them across a restart', async () => {
    const d = dir();
    const store = openStore(d);
    await store.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000', 'cleanup.policy': 'compact' } });
    const seen: Readonly<Record<string, string>>[] = [];
    store.subscribe((image) => seen.push(image.topics.get('orders')!.configs));
    const altered = await store.alterTopicConfigs('orders', { 'segment.bytes': '2000000' });
    expect(altered.configs).toEqual({ 'segment.bytes': '2000000' });
    expect(seen).toEqual([{ 'segment.bytes': '2000000' }]);
    expect(openStore(d).image().topics.get('orders')!.configs).toEqual({ 'segment.bytes': '2000000' });
    await expect(store.alterTopicConfigs('nope', {})).rejects.toBeInstanceOf(UnknownTopicError);
  });

  it('keeps dynamic broker configs per level across a restart, and drops a level emptied', async () => {
    const d = dir();
    const store = openStore(d);
    await store.alterBrokerConfigs(null, { 'log.retention.ms': '1000' });
    await store.alterBrokerConfigs(1, { 'message.max.bytes': '2000000' });
    const reopened = openStore(d).image().dynamicBrokerConfigs;
    expect(reopened.clusterDefault).toEqual({ 'log.retention.ms': '1000' });
    expect([...reopened.perBroker]).toEqual([[1, { 'message.max.bytes': '2000000' }]]);
    await store.alterBrokerConfigs(1, {});
    expect([...openStore(d).image().dynamicBrokerConfigs.perBroker]).toEqual([]);
  });

  it('reads a metadata file written before broker configs existed', async () => {
    const d = dir();
    await openStore(d).createTopic({ name: 'a', numPartitions: 1, replicationFactor: 1 });
    expect(openStore(d).image().dynamicBrokerConfigs).toEqual({ clusterDefault: {}, perBroker: new Map() });
  });
});

describe('followTopicLogConfigs', () => {
  it('puts open logs on their topic\'s new config at once, and new topics\' logs on theirs', async () => {
    const d = dir();
    const store = openStore(d);
    const logs = LogManager.open(d, { defaults: DEFAULT_LOG_CONFIG });
    try {
      await store.createTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 });
      logs.getOrCreate('orders', 0);
      const stop = followTopicLogConfigs(store, logs, NO_STATIC_CONFIG, 1);
      await store.alterTopicConfigs('orders', { 'retention.ms': '1000', 'max.message.bytes': '100' });
      expect(logs.get('orders', 0)!.config).toMatchObject({ retentionMs: 1000, maxMessageBytes: 100 });
      await store.alterBrokerConfigs(null, { 'log.segment.bytes': '2000000', 'log.retention.ms': '5' });
      expect(logs.get('orders', 0)!.config).toMatchObject({ retentionMs: 1000, segmentBytes: 2000000 });
      await store.createTopic({ name: 'fresh', numPartitions: 1, replicationFactor: 1, configs: { 'cleanup.policy': 'compact' } });
      expect(logs.getOrCreate('fresh', 0).config).toMatchObject({ cleanupPolicy: ['compact'], retentionMs: 5, segmentBytes: 2000000 });
      stop();
    } finally {
      await logs.close();
    }
  });
});

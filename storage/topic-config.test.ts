import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { DEFAULT_LOG_CONFIG } from './log-config.js';
import {
  checkTopicConfigs,
  javaDoubleString,
  normalizeConfigValue,
  parseConfigValue,
  TOPIC_CONFIG_DESCRIBE_ORDER,
  TOPIC_CONFIGS,
  topicConfigDef,
  topicConfigValue,
  topicLogConfig,
} from './topic-config.js';

describe('topic config catalog', () => {
  it('knows the 33 topic configs Kafka 4.0 lists, each once, in both orders', () => {
    expect(TOPIC_CONFIGS).toHaveLength(33);
    expect(new Set(TOPIC_CONFIGS.map((d) => d.name)).size).toBe(33);
    expect([...TOPIC_CONFIG_DESCRIBE_ORDER].sort()).toEqual(TOPIC_CONFIGS.map((d) => d.name).sort());
  });

  it('has the broker synonyms Kafka falls back to, with their units', () => {
    expect(topicConfigDef('retention.ms')!.serverDefaults).toEqual([
      ['log.retention.ms', 1n],
      ['log.retention.minutes', 60000n],
      ['log.retention.hours', 3600000n],
    ]);
    expect(topicConfigDef('max.message.bytes')!.serverDefaults).toEqual([['message.max.bytes', 1n]]);
    expect(topicConfigDef('remote.storage.enable')!.serverDefaults).toEqual([]);
  });
});

describe('parsing values as Kafka does', () => {
  it.each([
    ['long', ' 100 ', '100'],
    ['long', '+5', '5'],
    ['int', '007', '7'],
    ['boolean', 'TRUE', 'true'],
    ['list', ' compact , delete ', 'compact,delete'],
    ['list', '', ''],
    ['double', '1e-1', '0.1'],
    ['double', '1', '1.0'],
    ['string', ' CreateTime ', 'CreateTime'],
  ] as const)('%s %j is written back as %j', (type, raw, shown) => {
    expect(normalizeConfigValue(type, raw)).toBe(shown);
  });

  it.each([
    ['retention.ms', 'long', 'abc', 'Invalid value abc for configuration retention.ms: Not a number of type LONG'],
    ['retention.ms', 'long', '99999999999999999999', 'Invalid value 99999999999999999999 for configuration retention.ms: Not a number of type LONG'],
    ['segment.bytes', 'int', '2147483648', 'Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT'],
    ['preallocate', 'boolean', 'yes', 'Invalid value yes for configuration preallocate: Expected value to be either true or false'],
    ['min.cleanable.dirty.ratio', 'double', 'abc', 'Invalid value abc for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE'],
  ] as const)('%s %s %j is refused', (name, type, raw, message) => {
    expect(parseConfigValue(name, type, raw)).toEqual({ ok: false, message });
  });

  it('writes doubles as Java does', () => {
    expect(javaDoubleString(0.5)).toBe('0.5');
    expect(javaDoubleString(2)).toBe('2.0');
    expect(javaDoubleString(1e7)).toBe('1.0E7');
    expect(javaDoubleString(Number.MAX_VALUE)).toBe('1.7976931348623157E308');
    expect(javaDoubleString(0.0001)).toBe('1.0E-4');
  });
});

describe('checkTopicConfigs', () => {
  // Each answer as Kafka 4.0.2 gives it to IncrementalAlterConfigs / CreateTopics.
  it.each<[Readonly<Record<string, string>>, string]>([
    [{ 'retention.ms': '-2' }, 'Invalid value -2 for configuration retention.ms: Value must be at least -1'],
    [{ 'segment.bytes': '13' }, 'Invalid value 13 for configuration segment.bytes: Value must be at least 14'],
    [{ 'cleanup.policy': 'foo' }, 'Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete'],
    [{ 'cleanup.policy': 'compact,,delete' }, 'Invalid value  for configuration cleanup.policy: String must be one of: compact, delete'],
    [{ 'message.timestamp.type': 'Foo' }, 'Invalid value Foo for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime'],
    [{ 'min.insync.replicas': '0' }, 'Invalid value 0 for configuration min.insync.replicas: Value must be at least 1'],
    [{ 'compression.type': 'GZIP' }, 'Invalid value GZIP for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer'],
    [{ 'compression.gzip.level': '0' }, 'Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1'],
    [{ 'compression.lz4.level': '18' }, 'Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17'],
    [{ 'compression.zstd.level': '23' }, 'Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22'],
    [{ 'min.cleanable.dirty.ratio': '1.5' }, 'Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1'],
    [{ 'max.message.bytes': '-1' }, 'Invalid value -1 for configuration max.message.bytes: Value must be at least 0'],
    [{ 'local.retention.ms': '-3' }, 'Invalid value -3 for configuration local.retention.ms: Value must be at least -2'],
    [{ 'delete.retention.ms': '1.5' }, 'Invalid value 1.5 for configuration delete.retention.ms: Not a number of type LONG'],
    [{ 'nope.b': '1', 'nope.a': '1', 'retention.ms': 'x' }, 'Unknown topic config name: nope.a'],
    // Values are checked in Kafka's definition order: segment.ms comes before retention.ms.
    [{ 'retention.ms': 'y', 'segment.ms': 'x' }, 'Invalid value x for configuration segment.ms: Not a number of type LONG'],
    [{ 'min.compaction.lag.ms': '100', 'max.compaction.lag.ms': '50' }, 'conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms (50)'],
  ])('refuses %j: %s', (configs, message) => {
    expect(checkTopicConfigs(configs)).toEqual({ ok: false, errorCode: ErrorCode.INVALID_CONFIG, message });
  });

  it('refuses remote storage, which gregor does not have', () => {
    const check = checkTopicConfigs({ 'remote.storage.enable': 'true' });
    expect(check.ok).toBe(false);
    expect(check.ok || check.errorCode).toBe(ErrorCode.INVALID_CONFIG);
  });

  it.each<Readonly<Record<string, string | null>>>([
    { 'segment.bytes': '1000' }, // Kafka 4.0.2 takes it: the 1 MiB floor is log.segment.bytes's
    { 'cleanup.policy': '' },
    { 'cleanup.policy': 'compact,delete' },
    { 'compression.gzip.level': '-1' },
    { 'unclean.leader.election.enable': 'TRUE' },
    { 'retention.ms': ' 100 ' },
    { 'retention.bytes': '-5' },
    { 'leader.replication.throttled.replicas': '0:1,1:1' },
    { 'leader.replication.throttled.replicas': '*' },
    { 'retention.ms': null },
    {},
  ])('accepts %j', (configs) => {
    expect(checkTopicConfigs(configs)).toEqual({ ok: true });
  });

  it('checks compaction lags against the inherited value of the one not given', () => {
    expect(checkTopicConfigs({ 'min.compaction.lag.ms': '100' }, (n) => (n === 'max.compaction.lag.ms' ? '50' : topicConfigDef(n)!.default)).ok).toBe(false);
    expect(checkTopicConfigs({ 'min.compaction.lag.ms': '100' }).ok).toBe(true);
  });
});

describe('the value a topic config takes', () => {
  const retention = topicConfigDef('retention.ms')!;
  const broker = (values: Record<string, string>) => (name: string) => values[name] ?? null;

  it('is the topic\'s own, written back as Kafka shows it', () => {
    expect(topicConfigValue(topicConfigDef('cleanup.policy')!, { 'cleanup.policy': ' compact , delete ' }, broker({}))).toBe('compact,delete');
  });

  it('else the first broker synonym set, in the topic config\'s unit', () => {
    expect(topicConfigValue(retention, {}, broker({ 'log.retention.hours': '168' }))).toBe('604800000');
    expect(topicConfigValue(retention, {}, broker({ 'log.retention.hours': '168', 'log.retention.minutes': '2' }))).toBe('120000');
    expect(topicConfigValue(retention, {}, broker({ 'log.retention.hours': '168', 'log.retention.ms': '5000' }))).toBe('5000');
  });

  it('turns a negative broker retention into -1, as Kafka\'s broker does', () => {
    expect(topicConfigValue(retention, {}, broker({ 'log.retention.ms': '-5' }))).toBe('-1');
    expect(topicConfigValue(retention, {}, broker({ 'log.retention.hours': '-2' }))).toBe('-1');
  });

  it('else Kafka\'s default', () => {
    expect(topicConfigValue(retention, {}, broker({}))).toBe('604800000');
    expect(topicConfigValue(topicConfigDef('remote.storage.enable')!, {}, broker({}))).toBe('false');
  });

  it('passes over a stored value that does not parse', () => {
    expect(topicConfigValue(retention, { 'retention.ms': 'junk' }, broker({ 'log.retention.ms': '7' }))).toBe('7');
  });
});

describe('topicLogConfig', () => {
  it('is DEFAULT_LOG_CONFIG for a topic on Kafka\'s defaults', () => {
    expect(topicLogConfig({}, () => null)).toEqual(DEFAULT_LOG_CONFIG);
  });

  it('maps every topic config the storage uses', () => {
    const config = topicLogConfig(
      {
        'segment.bytes': '2000000',
        'segment.ms': '1000',
        'segment.index.bytes': '4096',
        'index.interval.bytes': '100',
        'retention.ms': '-1',
        'retention.bytes': '5000',
        'cleanup.policy': 'compact,delete',
        'delete.retention.ms': '10',
        'min.compaction.lag.ms': '20',
        'max.message.bytes': '300',
        'message.timestamp.type': 'LogAppendTime',
        'message.timestamp.before.max.ms': '40',
        'message.timestamp.after.max.ms': '50',
        'flush.messages': '60',
        'flush.ms': '70',
        'file.delete.delay.ms': '0',
        'compression.type': 'zstd',
        'compression.gzip.level': '9',
        'compression.lz4.level': '17',
        'compression.zstd.level': '-7',
        'min.insync.replicas': '2',
      },
      () => null,
    );
    expect(config).toEqual({
      ...DEFAULT_LOG_CONFIG,
      segmentBytes: 2000000,
      segmentMs: 1000,
      segmentIndexBytes: 4096,
      indexIntervalBytes: 100,
      retentionMs: -1,
      retentionBytes: 5000,
      cleanupPolicy: ['compact', 'delete'],
      deleteRetentionMs: 10,
      minCompactionLagMs: 20,
      maxMessageBytes: 300,
      messageTimestampType: 'LogAppendTime',
      messageTimestampBeforeMaxMs: 40,
      messageTimestampAfterMaxMs: 50,
      flushMessages: 60,
      flushMs: 70,
      fileDeleteDelayMs: 0,
      compressionType: 'zstd',
      compressionGzipLevel: 9,
      compressionLz4Level: 17,
      compressionZstdLevel: -7,
      minInSyncReplicas: 2,
    });
  });

  it('takes compression.type and min.insync.replicas from the broker\'s configs of the same names', () => {
    const config = topicLogConfig({}, (n) => (n === 'compression.type' ? 'uncompressed' : n === 'min.insync.replicas' ? '3' : null));
    expect([config.compressionType, config.minInSyncReplicas]).toEqual(['uncompressed', 3]);
    // A value the catalog refuses (an edited metadata file) changes nothing.
    expect(topicLogConfig({ 'compression.type': 'GZIP' }, () => null).compressionType).toBe('producer');
  });

  it('takes broker defaults for what the topic does not set; an empty cleanup.policy is neither delete nor compact', () => {
    const config = topicLogConfig({ 'cleanup.policy': '' }, (n) => (n === 'log.retention.hours' ? '1' : n === 'message.max.bytes' ? '2000' : null));
    expect(config.retentionMs).toBe(3600000);
    expect(config.maxMessageBytes).toBe(2000);
    expect(config.cleanupPolicy).toEqual([]);
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { groupCoordinatorConfig } from '../api/handler.js';
import { ConfigError, envSource, fileSource, parseListener, resolveConfig, type ConfigKey, type ConfigSource } from './config.js';

const tmp = mkdtempSync(join(tmpdir(), 'gregor-config-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let files = 0;
function propertiesFile(text: string): string {
  const path = join(tmp, `server-${++files}.properties`);
  writeFileSync(path, text);
  return path;
}

const flags = (values: Record<string, string>): ConfigSource => ({ origin: 'command line', values: Object.entries(values) });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}

describe('defaults', () => {
  const config = resolveConfig([]);

  it.each<[ConfigKey, number | boolean]>([
    ['num.partitions', 1],
    ['default.replication.factor', 1],
    ['auto.create.topics.enable', true],
    ['socket.request.max.bytes', 104857600],
    ['max.connections', 2147483647],
    ['connections.max.idle.ms', 600000],
    ['queued.max.requests', 500],
  ])('%s is Kafka\'s default (%s)', (key, expected) => {
    expect(typeof expected === 'boolean' ? config.values.bool(key) : config.values.int(key)).toEqual(expected);
  });

  it('listens on PLAINTEXT 127.0.0.1:9092, advertises what it binds, and is node 1 in ./data', () => {
    expect(config.listeners).toEqual([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }]);
    expect(config.advertisedListeners).toBeNull();
    expect(config.nodeId).toBe(1);
    expect(config.dataDir).toBe('./data');
    expect(config.rack).toBeNull();
  });
});

describe('precedence: file, then environment, then flags', () => {
  const file = (n: string) => fileSource(propertiesFile(`num.partitions=${n}\n`));
  const env = (n: string) => envSource({ GREGOR_NUM_PARTITIONS: n });

  it.each<[string, ConfigSource[], number]>([
    ['file alone', [file('2')], 2],
    ['environment alone', [env('3')], 3],
    ['flags alone', [flags({ 'num.partitions': '4' })], 4],
    ['environment over file', [file('2'), env('3')], 3],
    ['flags over file', [file('2'), flags({ 'num.partitions': '4' })], 4],
    ['flags over environment and file', [file('2'), env('3'), flags({ 'num.partitions': '4' })], 4],
  ])('%s', (_, sources, expected) => {
    expect(resolveConfig(sources).values.int('num.partitions')).toBe(expected);
  });

  it('keeps keys that a later source does not mention', () => {
    const config = resolveConfig([
      fileSource(propertiesFile('num.partitions=6\nauto.create.topics.enable=false\n')),
      envSource({ GREGOR_NUM_PARTITIONS: '7' }),
    ]);
    expect(config.values.int('num.partitions')).toBe(7);
    expect(config.values.bool('auto.create.topics.enable')).toBe(false);
  });
});

describe('envSource', () => {
  it.each<[string, string]>([
    ['GREGOR_LOG_DIRS', 'log.dirs'],
    ['GREGOR_AUTO_CREATE_TOPICS_ENABLE', 'auto.create.topics.enable'],
    ['GREGOR_NODE_ID', 'node.id'],
    ['GREGOR_SOME__NAME', 'some_name'],
    ['GREGOR_SOME___NAME', 'some-name'],
    ['GREGOR_A___B__C_D', 'a-b_c.d'],
  ])('%s names %s', (variable, key) => {
    expect([...envSource({ [variable]: 'v' }).values]).toEqual([[key, 'v']]);
  });

  it('ignores variables without the prefix and unset ones, and reports its origin', () => {
    const src = envSource({ PATH: '/bin', KAFKA_LOG_DIRS: '/k', gregor_log_dirs: '/lower', GREGOR_NUM_PARTITIONS: undefined, GREGOR_LOG_DIR: '/d' });
    expect([...src.values]).toEqual([['log.dir', '/d']]);
    expect(src.origin).toBe('environment');
  });

  it('takes another prefix', () => {
    expect([...envSource({ KAFKA_LOG_DIRS: '/k', GREGOR_LOG_DIRS: '/g' }, 'KAFKA_').values]).toEqual([['log.dirs', '/k']]);
  });

  it('sets the broker\'s config through resolveConfig', () => {
    const config = resolveConfig([envSource({ GREGOR_LOG_DIRS: '/var/gregor', GREGOR_AUTO_CREATE_TOPICS_ENABLE: 'false' })]);
    expect(config.dataDir).toBe('/var/gregor');
    expect(config.values.bool('auto.create.topics.enable')).toBe(false);
  });
});

describe('fileSource', () => {
  it('reads key=value, key = value and key: value lines and skips comments and blank lines', () => {
    const path = propertiesFile('# a comment\n! another\n\nnum.partitions=3\nlog.dirs = /srv/data\r\nbroker.rack: r1\n');
    expect([...fileSource(path).values]).toEqual([
      ['num.partitions', '3'],
      ['log.dirs', '/srv/data'],
      ['broker.rack', 'r1'],
    ]);
    expect(fileSource(path).origin).toBe(path);
  });

  it('names the file it cannot read', () => {
    const missing = join(tmp, 'missing.properties');
    expect(configError(() => fileSource(missing)).message).toContain(missing);
  });
});

describe('unknown keys', () => {
  const typoFile = propertiesFile('num.partitions=2\nnum.partition=3\n');
  it.each<[string, () => ConfigSource, string, string]>([
    ['a file', () => fileSource(typoFile), 'num.partition', `(from ${typoFile})`],
    ['the environment', () => envSource({ GREGOR_NO_SUCH_KEY: '1' }), 'no.such.key', '(from environment)'],
    ['flags', () => flags({ 'log.dirz': '/x' }), 'log.dirz', '(from command line)'],
  ])('from %s are errors naming the key and where it came from', (_, source, key, origin) => {
    const message = configError(() => resolveConfig([source()])).message;
    expect(message).toContain(`"${key}"`);
    expect(message).toContain(origin);
  });
});

describe("Kafka's keys", () => {
  const testdata = (name: string): string => fileURLToPath(new URL(`./testdata/${name}`, import.meta.url));

  it("starts from Kafka 4.4.0's server.properties: controller listeners left out, KRaft and thread keys not applying", () => {
    const config = resolveConfig([fileSource(testdata('kafka-4.4.0-server.properties'))]);
    expect(config.listeners).toEqual([{ name: 'PLAINTEXT', host: '', port: 9092 }]);
    expect(config.advertisedListeners).toEqual([{ name: 'PLAINTEXT', host: 'localhost', port: 9092 }]);
    expect(config.interBrokerListener).toBe('PLAINTEXT');
    expect(config.logDirs).toEqual(['/tmp/kraft-combined-logs']);
    expect(config.values.int('offsets.topic.replication.factor')).toBe(1);
    expect(config.raw.get('log.retention.hours')).toBe('168');
    expect(config.notApplying).toEqual([
      'process.roles', 'controller.quorum.bootstrap.servers', 'num.network.threads', 'num.io.threads', 'socket.send.buffer.bytes',
      'socket.receive.buffer.bytes', 'num.recovery.threads.per.data.dir',
    ]);
  });

  it('starts from a ZooKeeper-era tutorial file: its broker-wide topic defaults kept, ZooKeeper keys not applying', () => {
    const config = resolveConfig([fileSource(testdata('tutorial-server.properties'))]);
    expect(config.nodeId).toBe(0);
    expect(config.values.bool('auto.create.topics.enable')).toBe(false);
    for (const [k, v] of [['log.retention.bytes', '1073741824'], ['log.cleanup.policy', 'delete'], ['min.insync.replicas', '1'], ['message.max.bytes', '1048588']]) {
      expect(config.raw.get(k!)).toBe(v);
    }
    expect(config.notApplying).toContain('zookeeper.connect');
    expect(config.notApplying).toContain('zookeeper.connection.timeout.ms');
    expect(config.notApplying).not.toContain('log.retention.bytes');
  });

  it.each<[string, string]>([
    ['log.retention.hour', 'log.retention.hours'],
    ['log.segments.bytes', 'log.segment.bytes'],
    ['min.insync.replica', 'min.insync.replicas'],
    ['auto.create.topic.enable', 'auto.create.topics.enable'],
    ['offset.topic.replication.factor', 'offsets.topic.replication.factor'],
  ])('refuses the misspelt %s, suggesting %s', (typo, meant) => {
    const message = configError(() => resolveConfig([flags({ [typo]: '1' })])).message;
    expect(message).toContain(`unknown config key "${typo}"`);
    expect(message).toContain(`did you mean "${meant}"?`);
  });

  it('suggests nothing for a key far from every known one', () => {
    expect(configError(() => resolveConfig([flags({ 'completely.made.up.thing': '1' })])).message).not.toContain('did you mean');
  });

  it.each<[string, string, string]>([
    ['log.roll.hours', '0', 'Value must be at least 1'],
    ['log.segment.bytes', '100', 'Value must be at least 1048576'],
    ['min.insync.replicas', '0', 'Value must be at least 1'],
    ['log.cleanup.policy', 'compact,shred', 'String must be one of: compact, delete'],
    ['compression.type', 'brotli', 'String must be one of'],
    ['log.message.timestamp.type', 'WallClock', 'String must be one of: CreateTime, LogAppendTime'],
    ['message.max.bytes', 'big', 'Not a number of type INT'],
  ])("checks %s=%s with Kafka's validator", (key, value, problem) => {
    const message = configError(() => resolveConfig([flags({ [key]: value })])).message;
    expect(message).toContain(problem);
    expect(message).toContain('(from command line)');
  });

  it('takes listeners of the four security protocols, by listener.security.protocol.map', () => {
    const config = resolveConfig([
      flags({
        listeners: 'PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SECURE://127.0.0.1:9094,SASL_PLAINTEXT://127.0.0.1:9095',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,SSL:SSL,SECURE:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT',
      }),
    ]);
    expect(config.securityProtocols).toEqual(new Map([['PLAINTEXT', 'PLAINTEXT'], ['SSL', 'SSL'], ['SECURE', 'SASL_SSL'], ['SASL_PLAINTEXT', 'SASL_PLAINTEXT']]));
    expect(configError(() => resolveConfig([flags({ listeners: 'CLIENT://127.0.0.1:9092' })])).message).toContain('CLIENT:PLAINTEXT');
    expect(configError(() => resolveConfig([flags({ listeners: 'A://127.0.0.1:9092', 'listener.security.protocol.map': 'A:TLS' })])).message).toContain('TLS is not a security protocol');
  });

  it('keeps the brokers of a cluster talking over a PLAINTEXT listener', () => {
    const tls = { listeners: 'SSL://127.0.0.1:9093', 'metadata.store': 'etcd://127.0.0.1:2379' };
    expect(configError(() => resolveConfig([flags(tls)])).message).toContain('name a PLAINTEXT listener');
  });

  it('takes the inter-broker listener from inter.broker.listener.name or security.inter.broker.protocol', () => {
    const map = { listeners: 'CLIENT://127.0.0.1:9092,BROKER://127.0.0.1:9093', 'listener.security.protocol.map': 'CLIENT:PLAINTEXT,BROKER:PLAINTEXT' };
    expect(resolveConfig([flags(map)]).interBrokerListener).toBe('CLIENT');
    expect(resolveConfig([flags({ ...map, 'inter.broker.listener.name': 'BROKER' })]).interBrokerListener).toBe('BROKER');
    expect(configError(() => resolveConfig([flags({ ...map, 'inter.broker.listener.name': 'OTHER' })])).message).toContain('OTHER is not one of the listeners');
  });

  it('needs a listener that is not a controller listener', () => {
    expect(configError(() => resolveConfig([flags({ listeners: 'CONTROLLER://127.0.0.1:9093', 'controller.listener.names': 'CONTROLLER' })])).message).toContain(
      'not a controller listener',
    );
  });

  it('takes listener-prefixed, authorizer and ZooKeeper keys as not applying', () => {
    const config = resolveConfig([flags({ 'listener.name.plaintext.connections.max.reauth.ms': '1000', 'super.users': 'User:admin', 'zookeeper.session.timeout.ms': '18000' })]);
    expect(config.notApplying).toEqual(['listener.name.plaintext.connections.max.reauth.ms', 'super.users', 'zookeeper.session.timeout.ms']);
  });
});

describe('values', () => {
  it.each<[string, string, string]>([
    ['num.partitions', 'abc', 'whole number'],
    ['num.partitions', '1.5', 'whole number'],
    ['num.partitions', '', 'whole number'],
    ['num.partitions', '0', 'at least 1'],
    ['num.partitions', '2147483648', 'int range'],
    ['max.connections', '-1', 'at least 0'],
    ['socket.request.max.bytes', '100MB', 'whole number'],
    ['connections.max.idle.ms', '10s', 'whole number'],
    ['auto.create.topics.enable', 'yes', 'true or false'],
    ['auto.create.topics.enable', '1', 'true or false'],
    ['node.id', '-1', 'at least 0'],
  ])('%s=%j is rejected (%s)', (key, value, problem) => {
    const message = configError(() => resolveConfig([flags({ [key]: value })])).message;
    // gregor's own words name key=value; Kafka's validators name the value, then the key.
    expect(message).toMatch(new RegExp(`${key}=${value}|Invalid value ${value} for configuration ${key}`));
    expect(message).toContain('command line');
    expect(message).toContain(problem);
  });

  it('names the environment as the origin of a bad value set there', () => {
    expect(configError(() => resolveConfig([envSource({ GREGOR_NUM_PARTITIONS: 'many' })])).message).toContain('(from environment)');
  });

  it.each<[ConfigKey, string, number | boolean]>([
    ['num.partitions', ' 12 ', 12],
    ['max.connections', '0', 0],
    ['auto.create.topics.enable', 'FALSE', false],
    ['auto.create.topics.enable', 'True', true],
    ['auto.create.topics.enable', ' false ', false],
    ['socket.request.max.bytes', '2147483647', 2147483647],
    ['connections.max.idle.ms', '2147483647', 2147483647],
  ])('accepts %s=%j', (key, value, expected) => {
    const values = resolveConfig([flags({ [key]: value })]).values;
    expect(typeof expected === 'boolean' ? values.bool(key) : values.int(key)).toEqual(expected);
  });
});

describe('parseListener', () => {
  it.each<[string, { name: string; host: string; port: number }]>([
    ['PLAINTEXT://127.0.0.1:9092', { name: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }],
    ['127.0.0.1:0', { name: 'PLAINTEXT', host: '127.0.0.1', port: 0 }],
    ['[::1]:0', { name: 'PLAINTEXT', host: '::1', port: 0 }],
    ['INTERNAL://[fe80::1]:19092', { name: 'INTERNAL', host: 'fe80::1', port: 19092 }],
    ['internal://broker-1:19092', { name: 'INTERNAL', host: 'broker-1', port: 19092 }],
    ['PLAINTEXT://:9092', { name: 'PLAINTEXT', host: '', port: 9092 }],
    ['  PLAINTEXT://0.0.0.0:65535 ', { name: 'PLAINTEXT', host: '0.0.0.0', port: 65535 }],
  ])('%j', (spec, expected) => {
    expect(parseListener(spec, 'listeners')).toEqual(expected);
  });

  it.each<[string, string]>([
    ['localhost', 'not NAME://HOST:PORT'],
    ['PLAINTEXT://localhost', 'not NAME://HOST:PORT'],
    ['::1:9092', 'not NAME://HOST:PORT'],
    ['PLAINTEXT://h:port', 'not NAME://HOST:PORT'],
    ['h:65536', 'out of range'],
  ])('rejects %j', (spec, problem) => {
    const message = configError(() => parseListener(spec, 'advertised.listeners')).message;
    expect(message).toContain('advertised.listeners');
    expect(message).toContain(problem);
  });
});

describe('listeners and advertised.listeners', () => {
  it('parses a comma-separated list', () => {
    const config = resolveConfig([flags({ listeners: 'PLAINTEXT://127.0.0.1:0, INTERNAL://[::1]:0', 'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT' })]);
    expect(config.listeners).toEqual([
      { name: 'PLAINTEXT', host: '127.0.0.1', port: 0 },
      { name: 'INTERNAL', host: '::1', port: 0 },
    ]);
  });

  it('advertises per listener name', () => {
    const config = resolveConfig([
      flags({
        listeners: 'PLAINTEXT://0.0.0.0:9092,INTERNAL://127.0.0.1:19092',
        'advertised.listeners': 'PLAINTEXT://kafka.example:9092',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT',
      }),
    ]);
    expect(config.advertisedListeners).toEqual([{ name: 'PLAINTEXT', host: 'kafka.example', port: 9092 }]);
  });

  it.each<[Record<string, string>, string]>([
    [{ listeners: 'PLAINTEXT://127.0.0.1:0', 'advertised.listeners': 'EXTERNAL://kafka.example:9092' }, 'EXTERNAL is not one of the listeners'],
    [{ listeners: 'PLAINTEXT://127.0.0.1:0', 'advertised.listeners': 'PLAINTEXT://0.0.0.0:9092' }, 'needs a host clients can reach'],
    [{ listeners: 'PLAINTEXT://127.0.0.1:0', 'advertised.listeners': 'PLAINTEXT://:9092' }, 'needs a host clients can reach'],
    [{ listeners: 'PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2' }, 'appears twice'],
    [{ listeners: ' , ' }, 'at least one listener'],
  ])('rejects %j', (values, problem) => {
    expect(configError(() => resolveConfig([flags(values)])).message).toContain(problem);
  });
});

describe('node id', () => {
  it.each<[string, ConfigSource[], number]>([
    ['neither set', [], 1],
    ['only broker.id', [flags({ 'broker.id': '5' })], 5],
    ['only node.id', [flags({ 'node.id': '3' })], 3],
    ['both, equal', [flags({ 'broker.id': '3', 'node.id': '3' })], 3],
  ])('%s', (_, sources, expected) => {
    expect(resolveConfig(sources).nodeId).toBe(expected);
  });

  it.each([
    ['in one source', [flags({ 'broker.id': '5', 'node.id': '3' })]],
    ['node.id in the file, broker.id in flags', [fileSource(propertiesFile('node.id=3\n')), flags({ 'broker.id': '5' })]],
  ])('refuses node.id and broker.id that differ, %s', (_, sources) => {
    expect(() => resolveConfig(sources)).toThrow(/node.id=3 and broker.id=5 differ/);
  });

  it('takes the group settings that bound group configs only when they fit together, as Kafka does at start', () => {
    expect(() => resolveConfig([flags({ 'group.share.record.lock.duration.ms': '70000' })])).toThrow(
      'group.share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms',
    );
    expect(() => resolveConfig([flags({ 'group.consumer.max.session.timeout.ms': '40000' })])).toThrow(
      'group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms',
    );
    expect(() => resolveConfig([flags({ 'group.streams.heartbeat.interval.ms': '15000', 'group.streams.session.timeout.ms': '15000', 'group.streams.min.session.timeout.ms': '1000' })])).toThrow(
      'group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms',
    );
    expect(() => resolveConfig([flags({ 'group.share.delivery.count.limit': '11' })])).toThrow(/Invalid value 11 for configuration group.share.delivery.count.limit: Value must be no more than 10/);
    const config = resolveConfig([flags({ 'group.share.record.lock.duration.ms': '70000', 'group.share.max.record.lock.duration.ms': '120000' })]);
    expect(config.raw.get('group.share.record.lock.duration.ms')).toBe('70000');
  });

  it('refuses timeouts a timer cannot hold', () => {
    for (const key of ['connections.max.idle.ms', 'shutdown.timeout.ms']) {
      expect(() => resolveConfig([flags({ [key]: '5000000000' })])).toThrow(/at most 2147483647/);
    }
  });
});

describe('data directory', () => {
  it.each<[Record<string, string>, string]>([
    [{}, './data'],
    [{ 'log.dir': '/a' }, '/a'],
    [{ 'log.dirs': '/b' }, '/b'],
    [{ 'log.dir': '/a', 'log.dirs': '/b' }, '/b'],
    [{ 'log.dirs': ' /b , /c' }, '/b'],
  ])('%j uses %s', (values, expected) => {
    expect(resolveConfig([flags(values)]).dataDir).toBe(expected);
  });
});

describe('metadata.store', () => {
  it('is the local store by default, and etcd with its endpoints and root when asked', () => {
    expect(resolveConfig([]).metadata).toEqual({ kind: 'local' });
    expect(resolveConfig([flags({ 'metadata.store': 'etcd://10.0.0.1:2379, etcd-2:2379,[::1]:2380' })]).metadata).toEqual({
      kind: 'etcd',
      endpoints: ['10.0.0.1:2379', 'etcd-2:2379', '[::1]:2380'],
      root: '/gregor/',
    });
    expect(resolveConfig([flags({ 'metadata.store': 'etcd://h:1', 'metadata.etcd.root': '/team-a/' })]).metadata).toMatchObject({ root: '/team-a/' });
    expect(resolveConfig([]).values.int('broker.session.timeout.ms')).toBe(9000);
  });

  it('refuses what is neither, an endpoint without a port, and a root that is not a /path/', () => {
    expect(configError(() => resolveConfig([flags({ 'metadata.store': 'zookeeper://h:2181' })])).message).toContain('neither local nor etcd://');
    expect(configError(() => resolveConfig([flags({ 'metadata.store': 'etcd://h' })])).message).toContain('"h" is not HOST:PORT');
    expect(configError(() => resolveConfig([flags({ 'metadata.store': 'etcd://h:1', 'metadata.etcd.root': 'gregor' })])).message).toContain('must start and end with "/"');
  });
});

describe('group.consumer.migration.policy', () => {
  it('is bidirectional by default, reads any case, and refuses other values', () => {
    const policy = (values: Record<string, string>): unknown => groupCoordinatorConfig({ nodeId: 1, config: resolveConfig([flags(values)]).values }).consumerMigrationPolicy;
    expect(policy({})).toBe('bidirectional');
    expect(policy({ 'group.consumer.migration.policy': 'UpGrade' })).toBe('upgrade');
    expect(policy({ 'group.consumer.migration.policy': 'DISABLED' })).toBe('disabled');
    expect(configError(() => resolveConfig([flags({ 'group.consumer.migration.policy': 'sideways' })])).message).toContain('group.consumer.migration.policy');
  });
});

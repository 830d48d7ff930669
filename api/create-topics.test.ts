import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { ZERO_UUID } from '../wire/uuid.js';
import type { CreatableTopic, CreateTopicsRequest } from '../wire/messages/create-topics-request.js';
import { CreateTopicsResponse as CreateTopicsResponseDecl, type CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import { buildImage } from '../cluster/metadata/metadata-image.js';
import { BrokerConfigs, NO_STATIC_CONFIG } from '../cluster/metadata/broker-configs.js';
import { createTopics, createdTopicConfigs } from './create-topics.js';
import { manualAssignmentProblem } from './replica-assignment.js';
import { ctxFor, testServices, type TestServices, type TestSettings } from './test-services.js';

/**
 * What Apache Kafka 4.0.2 (the reference broker, on its default settings)
 * answers in CreateTopics v7 for a topic created without configs: every
 * entry DEFAULT_CONFIG (5), not read-only, not sensitive. Recorded with a raw
 * CreateTopics v7 request built on gregor's codec.
 */
const REFERENCE_DEFAULTS: readonly (readonly [name: string, value: string])[] = [
  ['cleanup.policy', 'delete'],
  ['compression.gzip.level', '-1'],
  ['compression.lz4.level', '9'],
  ['compression.type', 'producer'],
  ['compression.zstd.level', '3'],
  ['delete.retention.ms', '86400000'],
  ['file.delete.delay.ms', '60000'],
  ['flush.messages', '9223372036854775807'],
  ['flush.ms', '9223372036854775807'],
  ['follower.replication.throttled.replicas', ''],
  ['index.interval.bytes', '4096'],
  ['leader.replication.throttled.replicas', ''],
  ['local.retention.bytes', '-2'],
  ['local.retention.ms', '-2'],
  ['max.compaction.lag.ms', '9223372036854775807'],
  ['max.message.bytes', '1048588'],
  ['message.timestamp.after.max.ms', '3600000'],
  ['message.timestamp.before.max.ms', '9223372036854775807'],
  ['message.timestamp.type', 'CreateTime'],
  ['min.cleanable.dirty.ratio', '0.5'],
  ['min.compaction.lag.ms', '0'],
  ['min.insync.replicas', '1'],
  ['preallocate', 'false'],
  ['remote.log.copy.disable', 'false'],
  ['remote.log.delete.on.disable', 'false'],
  ['remote.storage.enable', 'false'],
  ['retention.bytes', '-1'],
  ['retention.ms', '604800000'],
  ['segment.bytes', '1073741824'],
  ['segment.index.bytes', '10485760'],
  ['segment.jitter.ms', '0'],
  ['segment.ms', '604800000'],
  ['unclean.leader.election.enable', 'false'],
];

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(settings: TestSettings = {}): TestServices {
  const s = testServices(settings);
  open.push(s);
  return s;
}

function topic(name: string, numPartitions = 1, replicationFactor = 1, extra: Partial<CreatableTopic> = {}): CreatableTopic {
  return { name, numPartitions, replicationFactor, assignments: [], configs: [], ...extra };
}

function req(topics: CreatableTopic[], extra: Partial<CreateTopicsRequest> = {}): CreateTopicsRequest {
  return { topics, timeoutMs: 30000, validateOnly: false, ...extra };
}

async function create(s: TestServices, request: CreateTopicsRequest, version = 7): Promise<CreateTopicsResponse> {
  return (await createTopics.handle(request, ctxFor(s, version))) as CreateTopicsResponse;
}

/** name -> [error code, error message] of each answered topic. */
function outcomes(res: CreateTopicsResponse): Record<string, [number, string | null]> {
  return Object.fromEntries(res.topics.map((t) => [t.name, [t.errorCode, t.errorMessage]]));
}

describe('CreateTopics', () => {
  it('creates a topic that Metadata lists at once, with logs, and answers its id, size and configs (v7)', async () => {
    const s = services();
    const res = await create(s, req([topic('orders', 2, 1, { configs: [{ name: 'retention.ms', value: '1000' }] })]));
    const [t] = res.topics;
    const image = s.metadata.image().topics.get('orders')!;
    expect(t).toMatchObject({ name: 'orders', errorCode: 0, errorMessage: null, numPartitions: 2, replicationFactor: 1, topicId: image.topicId });
    expect(image.topicId).not.toBe(ZERO_UUID);
    expect(image.partitions.map((p) => [p.partition, p.leader, p.replicas])).toEqual([
      [0, 1, [1]],
      [1, 1, [1]],
    ]);
    expect(image.configs).toEqual({ 'retention.ms': '1000' });
    expect(s.logs.get('orders', 0)).toBeDefined();
    expect(s.logs.get('orders', 1)).toBeDefined();
    // Every config Kafka lists, sorted by name; the override is DYNAMIC_TOPIC_CONFIG (1), the rest DEFAULT_CONFIG (5).
    expect(t!.configs!.map((c) => c.name)).toEqual(REFERENCE_DEFAULTS.map(([n]) => n));
    expect(t!.configs!.find((c) => c.name === 'retention.ms')).toEqual({ name: 'retention.ms', value: '1000', readOnly: false, configSource: 1, isSensitive: false });
    expect(t!.configs!.find((c) => c.name === 'segment.ms')).toEqual({ name: 'segment.ms', value: '604800000', readOnly: false, configSource: 5, isSensitive: false });
  });

  it('takes num.partitions and default.replication.factor for -1', async () => {
    const s = services({ config: { 'num.partitions': 4 } });
    const res = await create(s, req([topic('defaults', -1, -1)]));
    expect(res.topics[0]).toMatchObject({ errorCode: 0, numPartitions: 4, replicationFactor: 1 });
    expect(s.metadata.image().topics.get('defaults')!.partitions).toHaveLength(4);
  });

  it('refuses more replicas than brokers with Kafka\'s message, whether asked for or the default', async () => {
    const s = services({ config: { 'default.replication.factor': 3 } });
    const res = await create(s, req([topic('rf3', 1, 3), topic('rf-default', 1, -1)]));
    const message = 'Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered.';
    expect(outcomes(res)).toEqual({ rf3: [ErrorCode.INVALID_REPLICATION_FACTOR, message], 'rf-default': [ErrorCode.INVALID_REPLICATION_FACTOR, message] });
    expect(s.metadata.image().topics.size).toBe(0);
  });

  it('refuses illegal names with INVALID_TOPIC_EXCEPTION and Kafka\'s messages', async () => {
    const s = services();
    const long = 'x'.repeat(250);
    const res = await create(s, req([topic(''), topic('.'), topic('..'), topic(long), topic('bad name'), topic('y'.repeat(249))]));
    expect(outcomes(res)).toEqual({
      '': [ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name is invalid: the empty string is not allowed'],
      '.': [ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: '.' is not allowed"],
      '..': [ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: '..' is not allowed"],
      [long]: [ErrorCode.INVALID_TOPIC_EXCEPTION, `Topic name is invalid: the length of '${long}' is longer than the max allowed length 249`],
      'bad name': [
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'",
      ],
      ['y'.repeat(249)]: [ErrorCode.NONE, null],
    });
  });

  it('answers TOPIC_ALREADY_EXISTS, and INVALID_TOPIC_EXCEPTION for a name colliding through "." and "_"', async () => {
    const s = services();
    await create(s, req([topic('a.b')]));
    const res = await create(s, req([topic('a.b'), topic('a_b')]));
    expect(outcomes(res)).toEqual({
      'a.b': [ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'a.b' already exists."],
      a_b: [ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides with existing topic: a.b"],
    });
    // Two new names colliding in one request: the first is created, the second refused.
    const same = await create(s, req([topic('c_d'), topic('c.d')]));
    expect(outcomes(same)).toEqual({ c_d: [0, null], 'c.d': [ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'c.d' collides with existing topic: c_d"] });
  });

  it('refuses every copy of a name given twice, answered once after the others', async () => {
    const s = services();
    const res = await create(s, req([topic('dup'), topic('fine'), topic('dup', 5)]));
    expect(res.topics.map((t) => [t.name, t.errorCode, t.errorMessage])).toEqual([
      ['fine', 0, null],
      ['dup', ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'],
    ]);
    expect([...s.metadata.image().topics.keys()]).toEqual(['fine']);
  });

  it('checks partition counts and replication factors', async () => {
    const s = services();
    const res = await create(s, req([topic('p0', 0), topic('p-5', -5), topic('rf0', 1, 0), topic('rf-2', 1, -2)]));
    expect(outcomes(res)).toEqual({
      p0: [ErrorCode.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.'],
      'p-5': [ErrorCode.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.'],
      rf0: [ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0, or -1 to use the default value.'],
      'rf-2': [ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0, or -1 to use the default value.'],
    });
  });

  it('creates a topic from explicit replica assignments and checks them as Kafka does', async () => {
    const s = services();
    const a = (partitionIndex: number, brokerIds: number[]) => ({ partitionIndex, brokerIds });
    const res = await create(
      s,
      req([
        topic('manual', -1, -1, { assignments: [a(1, [1]), a(0, [1])] }),
        topic('with-rf', -1, 1, { assignments: [a(0, [1])] }),
        topic('with-count', 1, -1, { assignments: [a(0, [1])] }),
        topic('unknown-broker', -1, -1, { assignments: [a(0, [2])] }),
        topic('twice', -1, -1, { assignments: [a(0, [1, 1])] }),
        topic('empty', -1, -1, { assignments: [a(0, [])] }),
        topic('gap', -1, -1, { assignments: [a(1, [1])] }),
        topic('same-partition', -1, -1, { assignments: [a(0, [1]), a(0, [1])] }),
      ]),
    );
    expect(outcomes(res)).toEqual({
      manual: [0, null],
      'with-rf': [ErrorCode.INVALID_REQUEST, 'A manual partition assignment was specified, but replication factor was not set to -1.'],
      'with-count': [ErrorCode.INVALID_REQUEST, 'A manual partition assignment was specified, but numPartitions was not set to -1.'],
      'unknown-broker': [ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'The manual partition assignment includes broker 2, but no such broker is registered.'],
      twice: [ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'The manual partition assignment includes the broker 1 more than once.'],
      empty: [ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'The manual partition assignment includes an empty replica list.'],
      gap: [ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'partitions should be a consecutive 0-based integer sequence'],
      'same-partition': [ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Found multiple manual partition assignments for partition 0'],
    });
    expect(res.topics[0]).toMatchObject({ numPartitions: 2, replicationFactor: 1 });
    expect(s.metadata.image().topics.get('manual')!.partitions.map((p) => p.replicas)).toEqual([[1], [1]]);
  });

  it('refuses replica lists of unequal length (Kafka checks each against the ones before it)', () => {
    const image = buildImage('c', 1, [1, 2, 3].map((nodeId) => ({ nodeId, rack: null, endpoints: [] })), []);
    expect(manualAssignmentProblem([1, 2], image, null)).toBeNull();
    expect(manualAssignmentProblem([3], image, 2)).toBe(
      'The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).',
    );
    // The smallest offending id is the one named.
    expect(manualAssignmentProblem([9, 7, 1], image, null)).toBe('The manual partition assignment includes broker 7, but no such broker is registered.');
  });

  it('refuses null config values and configs the catalog refuses, with INVALID_CONFIG', async () => {
    const s = services();
    const res = await create(
      s,
      req([
        topic('nulls', 1, 1, { configs: [{ name: 'retention.ms', value: null }, { name: 'segment.ms', value: null }] }),
        topic('unnamed', 1, 1, { configs: [{ name: '', value: 'x' }] }),
      ]),
    );
    expect(res.topics[0]).toMatchObject({ errorCode: ErrorCode.INVALID_CONFIG, errorMessage: 'Null value not supported for topic configs: retention.ms,segment.ms' });
    expect(res.topics[1]!.errorCode).toBe(ErrorCode.INVALID_CONFIG);
    expect(res.topics[1]!.errorMessage).toBeTruthy();
    expect(s.metadata.image().topics.size).toBe(0);
  });

  it('checks the name before existence, existence before configs, configs before partitions', async () => {
    const s = services();
    await create(s, req([topic('there')]));
    const bad = { configs: [{ name: 'retention.ms', value: null }] };
    const res = await create(s, req([topic('bad name', 0, 0, bad), topic('there', 0, 0, bad), topic('new', 0, 5, bad)]));
    expect(res.topics.map((t) => t.errorCode)).toEqual([ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_CONFIG]);
  });

  it('keeps the last value of a config named twice', async () => {
    const s = services();
    const res = await create(s, req([topic('twice', 1, 1, { configs: [{ name: 'retention.ms', value: '1' }, { name: 'retention.ms', value: '2' }] })]));
    expect(res.topics[0]!.configs!.find((c) => c.name === 'retention.ms')!.value).toBe('2');
    expect(s.metadata.image().topics.get('twice')!.configs).toEqual({ 'retention.ms': '2' });
  });

  it('validate_only answers as a creation would, with an id, and creates nothing', async () => {
    const s = services();
    const res = await create(s, req([topic('maybe', 3), topic('bad name')], { validateOnly: true }));
    expect(res.topics[0]).toMatchObject({ name: 'maybe', errorCode: 0, numPartitions: 3, replicationFactor: 1 });
    expect(res.topics[0]!.topicId).not.toBe(ZERO_UUID);
    expect(res.topics[1]!.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
    expect(s.metadata.image().topics.size).toBe(0);
    expect(s.logs.all()).toEqual([]);
  });

  it('answers REQUEST_TIMED_OUT for every topic and creates nothing when timeout_ms <= 0', async () => {
    const s = services();
    for (const timeoutMs of [0, -1]) {
      const res = await create(s, req([topic('late'), topic('late2')], { timeoutMs }));
      expect(res.topics.map((t) => [t.name, t.errorCode, t.errorMessage])).toEqual([
        ['late', ErrorCode.REQUEST_TIMED_OUT, null],
        ['late2', ErrorCode.REQUEST_TIMED_OUT, null],
      ]);
    }
    expect(s.metadata.image().topics.size).toBe(0);
  });

  it('refuses a request for more than 10000 partitions, or more records than the controller writes at once', async () => {
    const s = services();
    const many = await create(s, req([topic('big1', 5000), topic('big2', 5000), topic('bad name', 1)]));
    expect(outcomes(many)).toEqual({
      big1: [ErrorCode.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
      big2: [ErrorCode.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
      'bad name': [ErrorCode.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
    });
    // 10000 partitions pass the first check, but with the topic's own record they are 10001.
    const records = await create(s, req([topic('big', 10000)]));
    expect(outcomes(records)).toEqual({ big: [ErrorCode.POLICY_VIOLATION, 'Unable to perform excessively large batch operation.'] });
    expect(s.metadata.image().topics.size).toBe(0);
  });

  it('never creates KRaft\'s metadata topic, and lets clients create internal topics as Kafka 4.0 does', async () => {
    const s = services();
    const res = await create(s, req([topic('__cluster_metadata'), topic('__consumer_offsets', 2)]));
    expect(outcomes(res)).toEqual({
      __cluster_metadata: [ErrorCode.INVALID_REQUEST, 'Creation of internal topic __cluster_metadata is prohibited.'],
      __consumer_offsets: [0, null],
    });
    expect(s.metadata.image().topics.get('__consumer_offsets')!.internal).toBe(true);
  });

  it('encodes its answer at every version, each carrying what the version has', async () => {
    const s = services();
    for (let v = 0; v <= 7; v++) {
      const res = await create(s, req([topic(`t${v}`), topic('bad name')]), v);
      const back = decode<CreateTopicsResponse>(CreateTopicsResponseDecl, v, encode(CreateTopicsResponseDecl, v, res));
      expect(back.ok).toBe(true);
      if (!back.ok) continue;
      expect(back.value.topics.map((t) => t.errorCode)).toEqual([0, ErrorCode.INVALID_TOPIC_EXCEPTION]);
      if (v >= 1) expect(back.value.topics[1]!.errorMessage).toBe(res.topics[1]!.errorMessage);
      expect(back.value.topics[0]!.numPartitions).toBe(v >= 5 ? 1 : -1);
      expect(back.value.topics[0]!.configs?.length ?? 0).toBe(v >= 5 ? REFERENCE_DEFAULTS.length : 0);
      expect(back.value.topics[0]!.topicId).toBe(v >= 7 ? s.metadata.image().topics.get(`t${v}`)!.topicId : ZERO_UUID);
    }
  });

  it('answers a topic without configs on a broker at its defaults exactly as Kafka 4.0.2 does', async () => {
    const s = services();
    const res = await create(s, req([topic('plain')]));
    expect(res.topics[0]!.configs!.map((c) => [c.name, c.value, c.configSource, c.readOnly, c.isSensitive])).toEqual(
      REFERENCE_DEFAULTS.map(([name, value]) => [name, value, 5, false, false]),
    );
  });

  it('echoes an override as the request wrote it, with DYNAMIC_TOPIC_CONFIG (1), validate_only too', async () => {
    const s = services();
    const configs = [
      { name: 'cleanup.policy', value: ' compact , delete ' },
      { name: 'compression.type', value: 'lz4' },
      { name: 'retention.ms', value: '1000' },
    ];
    for (const validateOnly of [true, false]) {
      const res = await create(s, req([topic(`over-${validateOnly}`, 1, 1, { configs })], { validateOnly }));
      // Kafka 4.0.2 answers exactly these three as set by the topic, the rest as defaults.
      expect(res.topics[0]!.configs!.filter((c) => c.configSource !== 5)).toEqual([
        { name: 'cleanup.policy', value: ' compact , delete ', readOnly: false, configSource: 1, isSensitive: false },
        { name: 'compression.type', value: 'lz4', readOnly: false, configSource: 1, isSensitive: false },
        { name: 'retention.ms', value: '1000', readOnly: false, configSource: 1, isSensitive: false },
      ]);
    }
  });

  it('answers the dynamic cluster defaults (3) where no override is set, as Kafka 4.4.0 does', async () => {
    const s = services();
    await s.metadata.alterBrokerConfigs(null, { 'log.retention.ms': '3600000', 'compression.type': 'gzip', 'min.insync.replicas': '2' });
    const res = await create(s, req([topic('dyn', 1, 1, { configs: [{ name: 'retention.ms', value: '5000' }] })], { validateOnly: true }));
    // The reference broker, with the same three set at its cluster default, answers these three.
    expect(res.topics[0]!.configs!.filter((c) => c.configSource !== 5)).toEqual([
      { name: 'compression.type', value: 'gzip', readOnly: false, configSource: 3, isSensitive: false },
      { name: 'min.insync.replicas', value: '2', readOnly: false, configSource: 3, isSensitive: false },
      { name: 'retention.ms', value: '5000', readOnly: false, configSource: 1, isSensitive: false },
    ]);
    const plain = await create(s, req([topic('dyn-plain')], { validateOnly: true }));
    expect(plain.topics[0]!.configs!.find((c) => c.name === 'retention.ms')).toMatchObject({ value: '3600000', configSource: 3 });
  });

  it('answers this broker\'s dynamic configs (2) and its static ones (4), synonyms converted, as Kafka\'s controller does', async () => {
    const staticConfig = { values: new Map([['log.retention.hours', '2'], ['log.segment.bytes', '2097152']]), keys: new Map() };
    const s = services({ staticConfig });
    await s.metadata.alterBrokerConfigs(1, { 'log.cleanup.policy': 'compact' });
    const res = await create(s, req([topic('layers')]));
    const listed = res.topics[0]!.configs!;
    expect(listed.filter((c) => c.configSource !== 5).map((c) => [c.name, c.value, c.configSource])).toEqual([
      ['cleanup.policy', 'compact', 2],
      ['retention.ms', '7200000', 4],
      ['segment.bytes', '2097152', 4],
    ]);
    // The values DescribeConfigs gives the topic, name for name; and its sources, but for
    // retention.ms: set through log.retention.hours alone, DescribeConfigs calls it DEFAULT_CONFIG.
    const described = BrokerConfigs.of(s.metadata.image(), staticConfig, 1).describeTopic({}, { keys: null, includeSynonyms: false, includeDocumentation: false });
    const byName = new Map(described.map((e) => [e.name, [e.value, e.name === 'retention.ms' ? 4 : e.source]]));
    for (const c of listed) expect([c.value, c.configSource], c.name).toEqual(byName.get(c.name));
  });

  it('createdTopicConfigs lists every topic config once, sorted by name', () => {
    const s = services();
    const listed = createdTopicConfigs(BrokerConfigs.of(s.metadata.image(), NO_STATIC_CONFIG, 1), { 'cleanup.policy': 'compact' });
    expect(listed).toHaveLength(33);
    expect(listed.map((c) => c.name)).toEqual([...listed.map((c) => c.name)].sort());
    expect(listed.filter((c) => c.configSource === 1)).toEqual([{ name: 'cleanup.policy', value: 'compact', readOnly: false, configSource: 1, isSensitive: false }]);
  });
});

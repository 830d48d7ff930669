// Scenarios for @platformatic/kafka 1.35.0, run by ./run as: node client.mjs <scenario> <host:port>
import zlib from 'node:zlib';
import {
  Admin,
  ConfigResourceTypes,
  Consumer,
  IncrementalAlterConfigOperationTypes,
  Producer,
  connectionsApiChannel,
  consumerGroupChannel,
  defaultPartitioner,
  protocolAPIsById,
} from '@platformatic/kafka';
import { waitForTopic } from '../lib/broker-requests.mjs';
import { proxiedListener, startCutProxy } from '../lib/cut-proxy.mjs';
import { CUT_PLAN, byPartition, checkPartition, produceThroughCuts } from '../lib/exactly-once.mjs';
import * as G from '../lib/group.mjs';
import { CODECS, checkAcknowledged, checkRecords, makeMessages, timestampProbe } from '../lib/roundtrip.mjs';
import { ScenarioFailure, checkCluster, expect, runScenarios, settle } from '../lib/scenario.mjs';

const clientOptions = (bootstrap) => ({
  clientId: 'gregor-compat-platformatic',
  bootstrapBrokers: [bootstrap],
  connectTimeout: 3_000,
  timeout: 10_000,
  retries: 2,
  retryDelay: 200,
});

function makeAdmin(bootstrap) {
  return new Admin(clientOptions(bootstrap));
}

// roundtrip: messages per codec, sent this many per send(); where the middle-offset and
// timestamp reads start; how long reading may go without progress.
const ROUNDTRIP_COUNT = 2000;
const ROUNDTRIP_SEND_SIZE = 500;
const ROUNDTRIP_MIDDLE = 1234;
const ROUNDTRIP_TIMESTAMP_INDEX = 1567;
const READ_IDLE_MS = 5_000;
// The codec a record batch's attributes name (the low three bits).
const BATCH_CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

// Counts the requests platformatic sends, from its diagnostics channel for each request.
function requestCounter() {
  const counts = new Map();
  const onStart = ({ apiKey, apiVersion }) => {
    const name = `${protocolAPIsById[apiKey] ?? `key ${apiKey}`} v${apiVersion}`;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  };
  connectionsApiChannel.start.subscribe(onStart);
  return {
    take: () => {
      const text = [...counts].map(([name, n]) => (n > 1 ? `${name} x${n}` : name)).join(', ');
      counts.clear();
      return text;
    },
  };
}

// Reads partition 0 of each topic, without a group, through Consumer.fetch (one Fetch
// request to the leader; topics are named by id, taken from metadata). Returns
// { topic: { records, batchCodecs, firstBatchOffset } }; records before the requested
// offset (the broker answers whole batches) are dropped.
async function fetchFrom(consumer, starts, want) {
  const topics = Object.keys(starts);
  const meta = await consumer.metadata({ topics, forceUpdate: true });
  const byId = new Map(topics.map((t) => [meta.topics.get(t).id, t]));
  const result = Object.fromEntries(topics.map((t) => [t, { records: [], batchCodecs: new Set(), firstBatchOffset: null }]));
  const next = { ...starts };
  let idleSince = Date.now();
  for (;;) {
    const pending = topics.filter((t) => result[t].records.length < want);
    if (pending.length === 0) return result;
    if (Date.now() - idleSince > READ_IDLE_MS) {
      throw new ScenarioFailure(`nothing more read in ${READ_IDLE_MS} ms from ${pending.map((t) => `${t} at offset ${next[t]}`).join(', ')}`);
    }
    const byLeader = new Map();
    for (const t of pending) {
      const leader = meta.topics.get(t).partitions[0].leader;
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), t]);
    }
    const answers = await Promise.all(
      [...byLeader].map(([node, leaderTopics]) =>
        consumer.fetch({
          node,
          maxWaitTime: 200,
          minBytes: 1,
          maxBytes: 8 << 20,
          topics: leaderTopics.map((t) => ({
            topicId: meta.topics.get(t).id,
            partitions: [{ partition: 0, fetchOffset: BigInt(next[t]), partitionMaxBytes: 4 << 20, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }],
          })),
        }),
      ),
    );
    for (const { topicId, partitions } of answers.flatMap((a) => a.responses)) {
      const topic = byId.get(topicId);
      for (const { errorCode, records: batches } of partitions) {
        expect(errorCode === 0, `Fetch ${topic} at offset ${next[topic]}: error code ${errorCode}`);
        const r = result[topic];
        for (const batch of batches ?? []) {
          r.batchCodecs.add(BATCH_CODECS[batch.attributes & 7] ?? `codec ${batch.attributes & 7}`);
          if (r.firstBatchOffset === null) r.firstBatchOffset = Number(batch.firstOffset);
          for (const record of batch.records) {
            const offset = Number(batch.firstOffset) + record.offsetDelta;
            if (offset < next[topic] || r.records.length >= want) continue;
            r.records.push({
              offset,
              key: record.key,
              value: record.value,
              headers: record.headers.map(([k, v]) => [k.toString(), v]),
              timestamp: batch.firstTimestamp + record.timestampDelta,
            });
            next[topic] = offset + 1;
            idleSince = Date.now();
          }
        }
      }
    }
  }
}

// platformatic nests the real protocol error inside MultipleErrors/cause chains; the
// innermost message (often with an apiCode) is what tells a broker bug apart.
function describeError(err, indent = '  ', depth = 0) {
  if (!err || depth > 4) return [];
  const extras = [];
  if (err.code) extras.push(`code=${err.code}`);
  if (err.apiCode !== undefined) extras.push(`apiCode=${err.apiCode}`);
  if (err.apiId) extras.push(`api=${err.apiId}`);
  const lines = [`${indent}${err.name ?? 'Error'}: ${err.message ?? err}${extras.length ? ` (${extras.join(', ')})` : ''}`];
  for (const inner of Array.isArray(err.errors) ? err.errors.slice(0, 5) : []) {
    lines.push(...describeError(inner, `${indent}  `, depth + 1));
  }
  if (err.cause) lines.push(...describeError(err.cause, `${indent}  `, depth + 1));
  return lines;
}

const scenarios = {
  async metadata(bootstrap) {
    const admin = makeAdmin(bootstrap);
    try {
      // An empty topic list asks for brokers and cluster fields only.
      const meta = await admin.metadata({ topics: [], forceUpdate: true });
      const brokers = [...meta.brokers.entries()].map(([nodeId, b]) => ({ nodeId, host: b.host, port: b.port }));
      checkCluster({ source: 'metadata', brokers, controller: meta.controllerId, clusterId: meta.id });

      // listTopics sends a Metadata request for all topics (null topic list).
      const topics = await admin.listTopics({ includeInternals: true });
      expect(Array.isArray(topics), 'listTopics did not return an array');
      console.log(`topics (${topics.length}): ${JSON.stringify(topics)}`);
    } finally {
      await admin.close().catch(() => {});
    }
  },
};

scenarios.roundtrip = async function roundtrip(bootstrap) {
  // platformatic's zstd is node:zlib's, which Node has only from 22.15 on.
  const codecs = CODECS.filter((c) => c !== 'zstd' || typeof zlib.zstdCompressSync === 'function');
  const skipped = CODECS.filter((c) => !codecs.includes(c));
  const messages = makeMessages(ROUNDTRIP_COUNT, 17);
  const stamp = `${Date.now()}-${process.pid}`;
  const topics = Object.fromEntries(codecs.map((c) => [c, `compat-roundtrip-platformatic-${c}-${stamp}`]));
  console.log(
    `${ROUNDTRIP_COUNT} messages per codec (${codecs.join(', ')}) to partition 0 of a new topic each (auto-created)` +
      (skipped.length ? `; not ${skipped.join(', ')}: Node ${process.versions.node} has no zlib zstd` : ''),
  );

  const requests = requestCounter();
  const producer = new Producer({ ...clientOptions(bootstrap), autocreateTopics: true, idempotent: false });
  try {
    const started = Date.now();
    for (const codec of codecs) {
      // The producer's Metadata request starts the topic's auto-creation (answered as unknown
      // until the topic is made); in a cluster, every broker learns of it a moment later.
      await producer.metadata({ topics: [topics[codec]] }).catch(() => {});
      await waitForTopic(bootstrap, topics[codec], 1);
      const sends = [];
      for (let i = 0; i < messages.length; i += ROUNDTRIP_SEND_SIZE) {
        const chunk = messages.slice(i, i + ROUNDTRIP_SEND_SIZE);
        const result = await producer.send({
          acks: -1,
          compression: codec,
          messages: chunk.map((m) => ({
            topic: topics[codec],
            partition: 0,
            key: m.key ?? undefined,
            value: m.value ?? undefined,
            timestamp: BigInt(m.timestamp),
            // Buffer keys, so the repeated name stays two headers.
            headers: new Map(m.headers.map(([k, v]) => [Buffer.from(k), v])),
          })),
        });
        const offsets = result.offsets ?? [];
        expect(offsets.length === 1, `${codec}: send at message ${i} returned ${JSON.stringify(offsets, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`);
        sends.push({ baseOffset: offsets[0].offset, count: chunk.length });
      }
      checkAcknowledged(codec, sends);
    }
    console.log(`produced in ${Date.now() - started} ms; producer requests: ${requests.take()}`);
  } catch (err) {
    console.log(`producer requests so far: ${requests.take()}`);
    throw err;
  } finally {
    await producer.close().catch(() => {});
  }

  // Consumer wants a groupId, but fetch() and listOffsets() never use the group.
  const consumer = new Consumer({ ...clientOptions(bootstrap), groupId: `compat-roundtrip-unused-${stamp}` });
  try {
    const started = Date.now();
    const names = Object.values(topics);
    const all = await fetchFrom(consumer, Object.fromEntries(names.map((t) => [t, 0])), messages.length);
    for (const codec of codecs) {
      const { records, batchCodecs } = all[topics[codec]];
      checkRecords(codec, messages, records);
      // The broker must keep the batches as produced (topic compression.type=producer).
      expect([...batchCodecs].every((c) => c === codec), `${codec}: batches read back are ${[...batchCodecs].join(', ')}`);
    }

    const middle = await fetchFrom(consumer, Object.fromEntries(names.map((t) => [t, ROUNDTRIP_MIDDLE])), 1);
    for (const codec of codecs) {
      const { records, firstBatchOffset } = middle[topics[codec]];
      expect(records[0].offset === ROUNDTRIP_MIDDLE, `${codec}: Fetch at ${ROUNDTRIP_MIDDLE} gave offset ${records[0].offset} first`);
      expect(firstBatchOffset <= ROUNDTRIP_MIDDLE, `${codec}: Fetch at ${ROUNDTRIP_MIDDLE} answered from offset ${firstBatchOffset}`);
    }

    const { target, expected } = timestampProbe(messages, ROUNDTRIP_TIMESTAMP_INDEX);
    const found = await consumer.listOffsets({ topics: names, timestamp: BigInt(target) });
    for (const codec of codecs) {
      const offset = found.get(topics[codec])?.[0];
      expect(Number(offset) === expected, `${codec}: listOffsets(timestamp ${target}) gave ${offset}, expected ${expected}`);
    }
    const byTime = await fetchFrom(consumer, Object.fromEntries(names.map((t) => [t, expected])), 1);
    for (const codec of codecs) {
      const first = byTime[topics[codec]].records[0];
      expect(first.offset === expected, `${codec}: Fetch at the offset for ${target} gave offset ${first.offset} first`);
    }
    console.log(`read back in ${Date.now() - started} ms; consumer requests: ${requests.take()}`);
  } catch (err) {
    console.log(`consumer requests so far: ${requests.take()}`);
    throw err;
  } finally {
    await consumer.close().catch(() => {});
  }
};

// admin: what a topic is created with and what the checks expect back. The defaults are
// Kafka 4.4's (unchanged since 4.0), reported with source DEFAULT_CONFIG when nothing overrides them.
const ADMIN_CONFIG = { 'cleanup.policy': 'compact', 'retention.ms': '3600000' };
const DEFAULT_SEGMENT_BYTES = '1073741824';
const DEFAULT_RETENTION_MS = '604800000';
const DEFAULT_MESSAGE_MAX_BYTES = '1048588';
// Timestamps of the records the offset lookups search, after a base: the largest is not the last.
const ADMIN_TIMESTAMP_STEPS = [0, 10, 50, 20, 30];
// ListOffsets' special timestamps.
const LATEST = -1n;
const EARLIEST = -2n;
const MAX_TIMESTAMP = -3n;
// Kafka's ConfigSource ids (platformatic's own ConfigSources names id 1 TOPIC_CONFIG).
const CONFIG_SOURCES = ['UNKNOWN', 'DYNAMIC_TOPIC_CONFIG', 'DYNAMIC_BROKER_CONFIG', 'DYNAMIC_DEFAULT_BROKER_CONFIG', 'STATIC_BROKER_CONFIG', 'DEFAULT_CONFIG'];

// The Kafka error names (ProtocolError.apiId) anywhere in a platformatic error chain.
function apiIds(err, depth = 0) {
  if (!err || depth > 5) return [];
  const own = err.apiId ? [err.apiId] : [];
  const inner = Array.isArray(err.errors) ? err.errors.flatMap((e) => apiIds(e, depth + 1)) : [];
  return [...own, ...inner, ...apiIds(err.cause, depth + 1)];
}

async function expectError(label, apiId, call) {
  let result;
  try {
    result = await call();
  } catch (err) {
    const ids = apiIds(err);
    expect(ids.includes(apiId), `${label}: failed with ${err.message} (${ids.join(', ') || 'no protocol error'}), expected ${apiId}`);
    console.log(`${label}: ${apiId} as expected`);
    return;
  }
  throw new ScenarioFailure(`${label}: returned ${JSON.stringify(result, (_, v) => (typeof v === 'bigint' ? String(v) : v))}, expected ${apiId}`);
}

scenarios.admin = async function admin(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-admin-platformatic-${stamp}`;
  const recordsTopic = `compat-admin-platformatic-records-${stamp}`;
  const missing = `compat-admin-platformatic-missing-${stamp}`;
  const requests = requestCounter();
  const started = Date.now();
  const created = [];
  const admin = makeAdmin(bootstrap);
  const { TOPIC, BROKER } = ConfigResourceTypes;
  const { SET, DELETE, APPEND } = IncrementalAlterConfigOperationTypes;

  const partitionCount = async (name) => {
    if (!(await admin.listTopics()).includes(name)) return null;
    const meta = await admin.metadata({ topics: [name], forceUpdate: true });
    return meta.topics.get(name).partitionsCount;
  };
  const expectPartitions = (name, count) =>
    settle(async () => {
      const got = await partitionCount(name);
      expect(got === count, `metadata: ${name} has ${got} partitions, expected ${count}`);
      console.log(`metadata: ${name} has ${count} partitions`);
    });
  const describe = async (resourceType, resourceName, configurationKeys) => {
    const described = await admin.describeConfigs({ resources: [{ resourceType, resourceName, configurationKeys }] });
    expect(described.length === 1, `describeConfigs(${resourceName}) answered ${described.length} resources`);
    return Object.fromEntries(described[0].configs.map((c) => [c.name, c]));
  };
  const checkConfigs = async (label, resourceType, resourceName, expected) => {
    const configs = await describe(resourceType, resourceName, Object.keys(expected));
    for (const [name, [value, source]] of Object.entries(expected)) {
      const entry = configs[name];
      expect(entry, `${label}: ${name} missing`);
      const got = CONFIG_SOURCES[entry.configSource] ?? `source ${entry.configSource}`;
      console.log(`${label}: ${name}=${JSON.stringify(entry.value)} source ${got}`);
      expect(entry.value === value && got === source, `${label}: ${name}=${JSON.stringify(entry.value)} source ${got}, expected ${JSON.stringify(value)} source ${source}`);
    }
  };
  const listed = async (timestamp) => {
    const [answer] = await admin.listOffsets({ topics: [{ name: recordsTopic, partitions: [{ partitionIndex: 0, timestamp }] }] });
    return answer.partitions[0];
  };

  try {
    const configs = Object.entries(ADMIN_CONFIG).map(([name, value]) => ({ name, value }));
    const [answer] = await admin.createTopics({ topics: [topic], partitions: 3, replicas: 1, configs });
    created.push(topic);
    console.log(`createTopics: ${topic} with 3 partitions, ${JSON.stringify(ADMIN_CONFIG)}: id ${answer?.id}, ${answer?.partitions} partitions, replication factor ${answer?.replicas}`);
    // CreateTopics v7 answers the topic id, its layout and its configs.
    expect(answer?.name === topic && answer.partitions === 3 && answer.replicas === 1, `createTopics answered ${JSON.stringify(answer)}`);
    expect(/^[0-9a-f-]{36}$/i.test(answer.id) && !/^[0-]+$/.test(answer.id), `createTopics answered topic id ${JSON.stringify(answer.id)}`);
    for (const [name, value] of Object.entries({ ...ADMIN_CONFIG, 'segment.bytes': DEFAULT_SEGMENT_BYTES })) {
      expect(answer.configuration[name] === value, `createTopics answered ${name}=${JSON.stringify(answer.configuration[name])}, expected ${JSON.stringify(value)}`);
    }
    await expectPartitions(topic, 3);
    const meta = await admin.metadata({ topics: [topic], forceUpdate: true });
    expect(meta.topics.get(topic).id === answer.id, `metadata gives topic id ${meta.topics.get(topic).id}, createTopics gave ${answer.id}`);
    await expectError('createTopics of an existing topic', 'TOPIC_ALREADY_EXISTS', () => admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 }));
    // One replica more than the cluster has brokers.
    const tooMany = meta.brokers.size + 1;
    await expectError(`createTopics with replication factor ${tooMany}, above the broker count`, 'INVALID_REPLICATION_FACTOR', () =>
      admin.createTopics({ topics: [missing], partitions: 1, replicas: tooMany }),
    );

    await settle(() =>
      checkConfigs('describeConfigs(topic)', TOPIC, topic, {
        'cleanup.policy': ['compact', 'DYNAMIC_TOPIC_CONFIG'],
        'retention.ms': ['3600000', 'DYNAMIC_TOPIC_CONFIG'],
        'segment.bytes': [DEFAULT_SEGMENT_BYTES, 'DEFAULT_CONFIG'],
      }),
    );
    const brokerId = String(Math.min(...meta.brokers.keys()));
    await checkConfigs(`describeConfigs(broker ${brokerId})`, BROKER, brokerId, {
      'message.max.bytes': [DEFAULT_MESSAGE_MAX_BYTES, 'DEFAULT_CONFIG'],
      'log.segment.bytes': [DEFAULT_SEGMENT_BYTES, 'DEFAULT_CONFIG'],
    });
    await expectError('describeConfigs of a missing topic', 'UNKNOWN_TOPIC_OR_PARTITION', () => describe(TOPIC, missing, ['retention.ms']));

    // AlterConfigs replaces the topic's whole set of overrides.
    await admin.alterConfigs({ resources: [{ resourceType: TOPIC, resourceName: topic, configs: [{ name: 'retention.ms', value: '7200000' }] }] });
    console.log('alterConfigs: retention.ms=7200000 (and nothing else)');
    await settle(() =>
      checkConfigs('describeConfigs(topic)', TOPIC, topic, {
        'retention.ms': ['7200000', 'DYNAMIC_TOPIC_CONFIG'],
        'cleanup.policy': ['delete', 'DEFAULT_CONFIG'],
      }),
    );
    await admin.incrementalAlterConfigs({
      resources: [
        {
          resourceType: TOPIC,
          resourceName: topic,
          configs: [
            { name: 'cleanup.policy', configOperation: APPEND, value: 'compact' },
            { name: 'retention.ms', configOperation: DELETE },
            { name: 'max.message.bytes', configOperation: SET, value: '200000' },
          ],
        },
      ],
    });
    console.log('incrementalAlterConfigs: APPEND cleanup.policy compact, DELETE retention.ms, SET max.message.bytes=200000');
    await settle(() =>
      checkConfigs('describeConfigs(topic)', TOPIC, topic, {
        'cleanup.policy': ['delete,compact', 'DYNAMIC_TOPIC_CONFIG'],
        'retention.ms': [DEFAULT_RETENTION_MS, 'DEFAULT_CONFIG'],
        'max.message.bytes': ['200000', 'DYNAMIC_TOPIC_CONFIG'],
      }),
    );
    await expectError('incrementalAlterConfigs SET retention.ms=soon', 'INVALID_CONFIG', () =>
      admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: topic, configs: [{ name: 'retention.ms', configOperation: SET, value: 'soon' }] }] }),
    );

    await admin.createPartitions({ topics: [{ name: topic, count: 5 }] });
    console.log(`createPartitions: ${topic} to 5`);
    await expectPartitions(topic, 5);
    await expectError('createPartitions to fewer (4)', 'INVALID_PARTITIONS', () => admin.createPartitions({ topics: [{ name: topic, count: 4 }] }));
    await expectError('createPartitions of a missing topic', 'UNKNOWN_TOPIC_OR_PARTITION', () => admin.createPartitions({ topics: [{ name: missing, count: 2 }] }));

    await admin.createTopics({ topics: [recordsTopic], partitions: 1, replicas: 1 });
    created.push(recordsTopic);
    // In a cluster, each broker learns of the topic a moment after the one that made it.
    await waitForTopic(bootstrap, recordsTopic, 1);
    const base = Date.now() - 60_000;
    const stamps = ADMIN_TIMESTAMP_STEPS.map((step) => BigInt(base + step));
    const producer = new Producer({ ...clientOptions(bootstrap), idempotent: false });
    try {
      const result = await producer.send({
        acks: -1,
        messages: stamps.map((timestamp, i) => ({ topic: recordsTopic, partition: 0, value: Buffer.from(`record ${i}`), timestamp })),
      });
      expect(Number(result.offsets?.[0]?.offset) === 0, `produce to ${recordsTopic}: offsets ${JSON.stringify(result.offsets, (_, v) => (typeof v === 'bigint' ? String(v) : v))}, expected 0`);
    } finally {
      await producer.close().catch(() => {});
    }
    console.log(`produced ${stamps.length} records with timestamps base+${JSON.stringify(ADMIN_TIMESTAMP_STEPS)}`);
    for (const [label, timestamp, offset, at] of [
      ['earliest', EARLIEST, 0n, null],
      ['latest', LATEST, 5n, null],
      ['max timestamp', MAX_TIMESTAMP, 2n, stamps[2]],
      ['timestamp base+15', BigInt(base + 15), 2n, stamps[2]],
      ['timestamp base+60', BigInt(base + 60), -1n, null],
    ]) {
      const got = await listed(timestamp);
      console.log(`listOffsets ${label}: offset ${got.offset} timestamp ${got.timestamp}`);
      expect(got.offset === offset && (at === null || got.timestamp === at), `listOffsets ${label}: offset ${got.offset} timestamp ${got.timestamp}, expected offset ${offset}${at === null ? '' : ` timestamp ${at}`}`);
    }
    const [deleted] = await admin.deleteRecords({ topics: [{ name: recordsTopic, partitions: [{ partition: 0, offset: 2n }] }] });
    const lowWatermark = deleted?.partitions?.[0]?.lowWatermark;
    console.log(`deleteRecords before offset 2: low watermark ${lowWatermark}`);
    expect(lowWatermark === 2n, `deleteRecords before offset 2: low watermark ${lowWatermark}, expected 2`);
    const earliest = await listed(EARLIEST);
    console.log(`listOffsets earliest after deleteRecords: offset ${earliest.offset}`);
    expect(earliest.offset === 2n, `listOffsets earliest after deleteRecords: ${earliest.offset}, expected 2`);

    const dirs = await admin.describeLogDirs({ topics: [{ name: recordsTopic, partitions: [0] }] });
    const replicas = dirs.flatMap((b) => b.results.flatMap((r) => r.topics.filter((t) => t.name === recordsTopic).flatMap((t) => t.partitions.map((p) => ({ dir: r.logDir, ...p })))));
    console.log(`describeLogDirs: ${recordsTopic}-0 in ${replicas.map((r) => `${r.dir} (${r.partitionSize} bytes)`).join(', ') || 'no log dir'}`);
    expect(replicas.length === 1 && replicas[0].partitionIndex === 0 && replicas[0].partitionSize > 0n, `describeLogDirs: ${recordsTopic}-0 found ${replicas.length} times, expected once with its bytes`);

    await admin.deleteTopics({ topics: [...created] });
    console.log(`deleteTopics: ${created.join(', ')}`);
    const gone = created.splice(0);
    await settle(async () => {
      const left = (await admin.listTopics()).filter((t) => gone.includes(t));
      expect(left.length === 0, `still listed after deleteTopics: ${left.join(', ')}`);
    });
    await expectError('deleteTopics of a missing topic', 'UNKNOWN_TOPIC_OR_PARTITION', () => admin.deleteTopics({ topics: [missing] }));
  } finally {
    if (created.length) await admin.deleteTopics({ topics: created }).catch((err) => console.log(`cleanup: deleteTopics: ${err.message}`));
    console.log(`${Date.now() - started} ms; requests: ${requests.take()}`);
    await admin.close().catch(() => {});
  }
};

// group: the plan in lib/group.mjs with platformatic consumers (classic protocol, its
// roundrobin assigner), each reading one stream in 'committed' mode (earliest when nothing
// is committed) and committing every message before taking the next. A consumer's
// holdings are what its last consumer:group:join event assigned, emptied when it starts a
// JoinGroup (the consumer:group channel) and when it is closed.
//
// After every join the stream reloads its positions (ListOffsets, OffsetFetch) without
// waiting for a Fetch already in flight; records that Fetch returns in the meantime are
// delivered and then read again from the reloaded, older position. So nothing is produced
// until each member's stream has announced its positions ('offsets') since its last join.
scenarios.group = async function group(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-group-platformatic-${stamp}`;
  const groupId = `compat-group-platformatic-${stamp}`;
  const check = new G.GroupCheck();
  const requests = requestCounter();
  const consumers = new Map(); // name -> { consumer, reading }
  const names = new Map(); // consumer -> name
  const onGroupOperation = ({ client, operation }) => {
    if (operation === 'joinGroup' && names.has(client)) check.assign(names.get(client), [], 'joins; holds');
  };
  consumerGroupChannel.start.subscribe(onGroupOperation);
  const admin = makeAdmin(bootstrap);
  const producer = new Producer({ ...clientOptions(bootstrap), autocreateTopics: false, idempotent: false });

  const produce = async (from, to) => {
    const messages = [];
    for (let i = from; i < to; i++) {
      // The producer's own default partitioner, run here so that each message's
      // acknowledged offset is known.
      const key = Buffer.from(G.messageKey(i));
      messages.push({ i, topic, key, value: Buffer.from(G.messageValue(i)), partition: defaultPartitioner(null, key) % G.PARTITIONS });
    }
    const result = await producer.send({ acks: -1, messages: messages.map(({ i, ...m }) => m) });
    for (const { partition, offset } of result.offsets ?? []) {
      messages.filter((m) => m.partition === partition).forEach((m, n) => check.produce(m.i, partition, Number(offset) + n));
    }
    const missing = messages.filter((m) => !check.produced.has(m.i));
    expect(missing.length === 0, `produce: no acknowledgement for partition ${missing[0]?.partition}`);
    check.log(`produced messages ${from}..${to - 1}`);
  };

  const start = async (name) => {
    const consumer = new Consumer({
      ...clientOptions(bootstrap),
      groupId,
      sessionTimeout: G.SESSION_TIMEOUT_MS,
      rebalanceTimeout: G.REBALANCE_TIMEOUT_MS,
      heartbeatInterval: G.HEARTBEAT_INTERVAL_MS,
      autocommit: false,
      maxWaitTime: 200,
    });
    names.set(consumer, name);
    const entry = { consumer, reading: null, commitsPending: 0, positioned: false };
    consumers.set(name, entry);
    consumer.on('consumer:group:join', ({ assignments, isLeader }) => {
      entry.positioned = false;
      check.assign(name, (assignments ?? []).filter((a) => a.topic === topic).flatMap((a) => a.partitions), `joined as ${isLeader ? 'leader' : 'follower'}, assigned`);
    });
    consumer.on('error', (err) => check.problem(`${name}: ${describeError(err).join(' ').trim()}`));
    const stream = await consumer.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false, maxWaitTime: 200 });
    stream.on('offsets', () => {
      entry.positioned = true;
    });
    entry.reading = (async () => {
      for await (const message of stream) {
        check.consume(name, message);
        entry.commitsPending++;
        try {
          await message.commit();
        } catch (err) {
          check.problem(`${name} commit of partition ${message.partition} offset ${message.offset}: ${describeError(err).join(' ').trim()}`);
        } finally {
          entry.commitsPending--;
        }
      }
    })().catch((err) => check.problem(`${name} stream: ${describeError(err).join(' ').trim()}`));
  };
  const leave = async (name) => {
    const entry = consumers.get(name);
    await G.waitFor(check, `${name}'s commits finishing`, G.CONSUME_TIMEOUT_MS, () => entry.commitsPending === 0);
    check.assign(name, [], 'leaves the group; holds');
    names.delete(entry.consumer);
    consumers.delete(name);
    await entry.consumer.close(true);
  };
  const positioned = (names) => names.every((n) => consumers.get(n)?.positioned);
  const consumeStep = async (step, from, to, members) => {
    await G.waitFor(check, `${step}: reading messages ${from}..${to - 1}`, G.CONSUME_TIMEOUT_MS, () => check.countRead(from, to) === to - from,
      () => `${check.countRead(from, to)} read; ${check.describe(members)}`);
    return check.expectStep(step, from, to, members);
  };

  try {
    await admin.createTopics({ topics: [topic], partitions: G.PARTITIONS, replicas: 1 });
    // In a cluster, each broker learns of the topic a moment after the one that made it.
    await waitForTopic(bootstrap, topic, G.PARTITIONS);
    check.log(`topic ${topic} with ${G.PARTITIONS} partitions; group ${groupId}`);

    await Promise.all([start('A'), start('B')]);
    await G.waitFor(check, 'A and B holding all partitions between them', G.JOIN_TIMEOUT_MS, () => check.split(['A', 'B']) && positioned(['A', 'B']),
      () => `${check.describe(['A', 'B'])}; positions loaded: A ${positioned(['A'])}, B ${positioned(['B'])}`);
    await produce(0, G.FIRST);
    await consumeStep('A and B', 0, G.FIRST, ['A', 'B']);
    check.expectSpread();

    const leftAt = Date.now();
    await leave('B');
    await G.waitFor(check, 'A holding all partitions after B left', G.SESSION_TIMEOUT_MS, () => check.holds('A').size === G.PARTITIONS && positioned(['A']),
      () => `${check.describe(['A'])}; positions loaded: ${positioned(['A'])}`);
    check.log(`A holds all ${G.PARTITIONS} partitions ${Date.now() - leftAt} ms after B started leaving`);
    await produce(G.FIRST, G.FIRST + G.SECOND);
    await consumeStep('A alone', G.FIRST, G.FIRST + G.SECOND, ['A']);

    await leave('A');
    const end = G.FIRST + G.SECOND + G.THIRD;
    await produce(G.FIRST + G.SECOND, end);
    await start('C');
    await consumeStep('C after the commits', G.FIRST + G.SECOND, end, ['C']);
    // A partition C wrongly read from its start would show up as old messages by now.
    await new Promise((r) => setTimeout(r, 1_000));
    check.expectStep('whole run', 0, end, ['A', 'B', 'C']);
    expect(check.holds('C').size === G.PARTITIONS, `C holds ${check.describe(['C'])}, expected all ${G.PARTITIONS} partitions`);
  } catch (err) {
    console.log(`  requests so far: ${requests.take()}`);
    throw err;
  } finally {
    consumerGroupChannel.start.unsubscribe(onGroupOperation);
    for (const [name, { consumer }] of consumers) await G.closeQuietly(`consumer ${name}`, () => consumer.close(true));
    await G.closeQuietly('producer', () => producer.close());
    await G.closeQuietly('admin', () => admin.close());
  }
  console.log(`  requests: ${requests.take()}`);
};

// idempotent-cut: an idempotent Producer (platformatic sends one request at a time per
// connection when idempotent) sends numbered records through the cut proxy
// (lib/cut-proxy.mjs) as produceThroughCuts (lib/exactly-once.mjs) plans it. Then a Consumer in a fresh group
// reads everything back directly from the broker: no record twice, every acknowledged one
// at its acknowledged offset, production order per partition.
const CUT_READ_MS = 10_000;
const CUT_SETTLE_MS = 1_000;

scenarios['idempotent-cut'] = async function idempotentCut(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-cut-platformatic-${stamp}`;
  const admin = makeAdmin(bootstrap);
  let proxy = null;
  let producer = null;
  let consumer = null;
  try {
    await admin.createTopics({ topics: [topic], partitions: CUT_PLAN.partitions, replicas: 1 });
    await waitForTopic(bootstrap, topic, CUT_PLAN.partitions);
    proxy = await startCutProxy(proxiedListener());
    console.log(`producing to ${topic} through the cut proxy at ${proxy.bootstrap}`);
    producer = new Producer({
      ...clientOptions(proxy.bootstrap),
      clientId: 'gregor-compat-platformatic-cut',
      timeout: 5_000,
      retries: 30,
      retryDelay: 100,
      idempotent: true,
      autocreateTopics: false,
    });

    const { order, acked, offsets, failures } = await produceThroughCuts({
      proxy,
      isFatal: (err) => err instanceof ScenarioFailure,
      describe: (err) => describeError(err).join(' ').trim(),
      send: async (messages) => {
        const result = await producer.send({ acks: -1, messages: messages.map((m) => ({ topic, partition: m.partition, value: Buffer.from(m.value) })) });
        return (result.offsets ?? []).map(({ partition, offset }) => ({ partition, baseOffset: offset }));
      },
    });
    await producer.close().catch(() => {});
    producer = null;
    expect(failures.length === 0, `${failures.length} sends failed despite retries (first: ${failures[0]})`);
    expect(proxy.cuts() > 0, 'no connection was cut while a Produce was in flight: the scenario tested nothing');

    consumer = new Consumer({ ...clientOptions(bootstrap), groupId: `${topic}-reader`, autocommit: false, maxWaitTime: 200 });
    const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 200 });
    const records = [];
    let lastAt = Date.now();
    const reading = (async () => {
      for await (const m of stream) {
        records.push({ partition: m.partition, offset: Number(m.offset), value: m.value.toString() });
        lastAt = Date.now();
      }
    })();
    reading.catch(() => {});
    const deadline = Date.now() + CUT_READ_MS;
    while (records.length < acked.size || Date.now() - lastAt < CUT_SETTLE_MS) {
      expect(Date.now() < deadline, `read back ${records.length} of ${acked.size} records in ${CUT_READ_MS} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    console.log(`read back: ${records.length} records`);
    const problems = [];
    for (const [p, read] of byPartition(records, CUT_PLAN.partitions)) {
      problems.push(...checkPartition(`partition ${p}`, { order: order.get(p) ?? [], required: acked, read, offsets }));
    }
    for (const p of problems.slice(1)) console.log(`  ${p}`);
    expect(problems.length === 0, problems.length > 1 ? `${problems[0]} (and ${problems.length - 1} more above)` : problems[0]);
    console.log(`each of the ${acked.size} acknowledged records exactly once, at its acknowledged offset, in order`);
  } finally {
    if (consumer) await consumer.close(true).catch(() => {});
    if (producer) await producer.close().catch(() => {});
    if (proxy) await proxy.stop();
    await admin.close().catch(() => {});
  }
};

runScenarios({
  label: 'platformatic',
  banner: '@platformatic/kafka 1.35.0',
  scenarios,
  formatError: (err) => ({ summary: '', details: describeError(err) }),
});

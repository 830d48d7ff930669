// Scenarios for kafkajs 2.2.4, run by ./run as: node client.mjs <scenario> <host:port>
import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import { waitForTopic } from '../lib/broker-requests.mjs';
import { startCutProxy, proxiedListener } from '../lib/cut-proxy.mjs';
import { CUT_PLAN, byPartition, checkPartition, produceThroughCuts } from '../lib/exactly-once.mjs';
import * as G from '../lib/group.mjs';
import * as TC from '../lib/txn-cluster.mjs';
import { checkAcknowledged, checkRecords, makeMessages, timestampProbe } from '../lib/roundtrip.mjs';
import { ScenarioFailure, checkCluster, expect, runScenarios, settle } from '../lib/scenario.mjs';
import { EXIT_NOT_IMPLEMENTED, SCENARIO_TIMEOUTS_MS } from '../lib/scenario.mjs';

const require = createRequire(import.meta.url);
// kafkajs is CommonJS; Node's ESM loader does not see ConfigResourceTypes as a named export.
const { CompressionTypes, ConfigResourceTypes, Kafka, Partitioners, logLevel } = kafkajs;

// One short line per error instead of kafkajs's JSON records with stack traces.
function compactErrorLog() {
  return ({ namespace, log }) => {
    const where = log.broker ? ` (broker ${log.broker})` : '';
    const error = log.error ? `: ${log.error}` : '';
    console.error(`  kafkajs [${namespace}] ${log.message}${where}${error}`);
  };
}

function makeKafka(bootstrap) {
  return new Kafka({
    clientId: 'gregor-compat-kafkajs',
    brokers: [bootstrap],
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 1_000 },
    // kafkajs logs every retry and reconnect at info/warn; only errors help here.
    logLevel: logLevel.ERROR,
    logCreator: compactErrorLog,
  });
}

// roundtrip: messages per codec, sent this many per send(); where the middle-offset and
// timestamp reads start; how long reading may go without progress.
const ROUNDTRIP_COUNT = 2000;
const ROUNDTRIP_SEND_SIZE = 500;
const ROUNDTRIP_MIDDLE = 1234;
const ROUNDTRIP_TIMESTAMP_INDEX = 1567;
const READ_IDLE_MS = 5_000;

// Counts requests by API and version from a kafkajs instrumentation emitter.
function requestCounter() {
  const counts = new Map();
  return {
    listener: ({ payload }) => {
      const name = `${payload.apiName} v${payload.apiVersion}`;
      counts.set(name, (counts.get(name) ?? 0) + 1);
    },
    text: () => [...counts].map(([name, n]) => (n > 1 ? `${name} x${n}` : name)).join(', '),
  };
}

// kafkajs has no assign(): its consumer always joins a group. Reading without one goes
// through the cluster object every kafkajs client is built on (src/cluster, created by
// the Kafka instance's private factory) and Broker.fetch, the Fetch request itself. The
// broker answers whole batches, so records before the requested offset are dropped here,
// as kafkajs's consumer does.
function groupFreeReader(kafka, topics) {
  const factory = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  expect(factory, 'kafkajs internals changed: no private:Kafka:createCluster on the Kafka instance');
  const InstrumentationEventEmitter = require('kafkajs/src/instrumentation/emitter');
  const emitter = new InstrumentationEventEmitter();
  const requests = requestCounter();
  emitter.addListener('network.request', requests.listener);
  const cluster = kafka[factory]({ allowAutoTopicCreation: false, instrumentationEmitter: emitter });

  // Reads from each topic's partition 0, starting at starts[topic], until it has want
  // records. Returns { topic: { records, firstBatchOffset } }.
  async function read(starts, want) {
    const result = Object.fromEntries(topics.map((t) => [t, { records: [], firstBatchOffset: null }]));
    const next = { ...starts };
    let idleSince = Date.now();
    for (;;) {
      const pending = topics.filter((t) => result[t].records.length < want);
      if (pending.length === 0) return result;
      if (Date.now() - idleSince > READ_IDLE_MS) {
        throw new ScenarioFailure(`nothing more read in ${READ_IDLE_MS} ms from ${pending.map((t) => `${t} at offset ${next[t]}`).join(', ')}`);
      }
      const byLeader = new Map();
      for (const topic of pending) {
        const leader = Object.keys(cluster.findLeaderForPartitions(topic, [0]))[0];
        byLeader.set(leader, [...(byLeader.get(leader) ?? []), topic]);
      }
      const answers = await Promise.all(
        [...byLeader].map(async ([nodeId, leaderTopics]) => {
          const broker = await cluster.findBroker({ nodeId });
          return broker.fetch({
            maxWaitTime: 200,
            minBytes: 1,
            maxBytes: 8 << 20,
            topics: leaderTopics.map((topic) => ({ topic, partitions: [{ partition: 0, fetchOffset: String(next[topic]), maxBytes: 4 << 20 }] })),
          });
        }),
      );
      for (const { topicName, partitions } of answers.flatMap((a) => a.responses)) {
        for (const { errorCode, messages } of partitions) {
          expect(errorCode === 0, `Fetch ${topicName} at offset ${next[topicName]}: error code ${errorCode}`);
          const r = result[topicName];
          for (const m of messages) {
            if (r.firstBatchOffset === null) r.firstBatchOffset = Number(m.offset);
            if (Number(m.offset) < next[topicName] || r.records.length >= want) continue;
            r.records.push(m);
            next[topicName] = Number(m.offset) + 1;
            idleSince = Date.now();
          }
        }
      }
    }
  }

  return {
    requests,
    connect: async () => {
      await cluster.connect();
      await cluster.addMultipleTargetTopics(topics);
    },
    read,
    disconnect: () => cluster.disconnect(),
  };
}

// checkRecords wants headers as [name, Buffer] pairs; kafkajs folds repeats into arrays.
const headerPairs = (headers) =>
  Object.entries(headers ?? {}).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]));

const scenarios = {
  async metadata(bootstrap) {
    const admin = makeKafka(bootstrap).admin();
    await admin.connect();
    try {
      const cluster = await admin.describeCluster();
      checkCluster({
        source: 'describeCluster',
        brokers: cluster.brokers,
        controller: cluster.controller,
        clusterId: cluster.clusterId,
      });

      const topics = await admin.listTopics();
      expect(Array.isArray(topics), 'listTopics did not return an array');
      console.log(`topics (${topics.length}): ${JSON.stringify(topics)}`);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  },

  // 100 messages with acks=-1 to a topic that does not exist yet (created on first use);
  // each partition's acknowledged offsets must run 0, 1, 2, ... in send order.
  async produce(bootstrap) {
    const topic = `compat-produce-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
    const producer = makeKafka(bootstrap).producer({ allowAutoTopicCreation: true });
    await producer.connect();
    try {
      const byPartition = new Map();
      for (let i = 0; i < 100; i++) {
        const meta = await producer.send({ topic, acks: -1, messages: [{ key: `k${i}`, value: `message ${i}` }] });
        expect(meta.length === 1, `send ${i} returned ${meta.length} partition results`);
        const { partition, errorCode, baseOffset } = meta[0];
        expect(errorCode === 0, `send ${i} to partition ${partition}: error code ${errorCode}`);
        if (!byPartition.has(partition)) byPartition.set(partition, []);
        byPartition.get(partition).push(Number(baseOffset));
      }
      for (const [partition, offsets] of [...byPartition].sort((a, b) => a[0] - b[0])) {
        console.log(`partition ${partition}: ${offsets.length} messages, offsets ${offsets[0]}..${offsets[offsets.length - 1]}`);
        offsets.forEach((o, i) => expect(o === i, `partition ${partition}: message ${i} got offset ${o}, expected ${i}`));
      }
      const total = [...byPartition.values()].reduce((n, o) => n + o.length, 0);
      expect(total === 100, `${total} messages acknowledged, expected 100`);
    } finally {
      await producer.disconnect().catch(() => {});
    }
  },
};

scenarios.roundtrip = async function roundtrip(bootstrap) {
  // kafkajs implements only gzip itself; snappy, lz4 and zstd need codec packages
  // (kafkajs-snappy, kafkajs-lz4, @kafkajs/zstd) that this repository does not install.
  const typeOf = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };
  const codecs = Object.keys(typeOf);
  const messages = makeMessages(ROUNDTRIP_COUNT, 13);
  const stamp = `${Date.now()}-${process.pid}`;
  const topics = Object.fromEntries(codecs.map((c) => [c, `compat-roundtrip-kafkajs-${c}-${stamp}`]));
  console.log(`${ROUNDTRIP_COUNT} messages per codec (${codecs.join(', ')}) to partition 0 of a new topic each (auto-created)`);

  const kafka = makeKafka(bootstrap);
  const producer = kafka.producer({ allowAutoTopicCreation: true, idempotent: false });
  const produced = requestCounter();
  producer.on(producer.events.REQUEST, produced.listener);
  await producer.connect();
  try {
    const started = Date.now();
    for (const codec of codecs) {
      const sends = [];
      for (let i = 0; i < messages.length; i += ROUNDTRIP_SEND_SIZE) {
        const chunk = messages.slice(i, i + ROUNDTRIP_SEND_SIZE);
        const [meta] = await producer.send({
          topic: topics[codec],
          acks: -1,
          compression: typeOf[codec],
          messages: chunk.map((m) => ({
            partition: 0,
            key: m.key,
            value: m.value,
            timestamp: String(m.timestamp),
            headers: m.headers.reduce((h, [k, v]) => ({ ...h, [k]: h[k] === undefined ? v : [].concat(h[k], v) }), {}),
          })),
        });
        expect(meta.errorCode === 0, `${codec}: send at message ${i}: error code ${meta.errorCode}`);
        sends.push({ baseOffset: meta.baseOffset, count: chunk.length });
      }
      checkAcknowledged(codec, sends);
    }
    console.log(`produced in ${Date.now() - started} ms; producer requests: ${produced.text()}`);
  } finally {
    await producer.disconnect().catch(() => {});
  }

  const started = Date.now();
  const reader = groupFreeReader(kafka, Object.values(topics));
  const admin = kafka.admin();
  try {
    await reader.connect();
    const all = await reader.read(Object.fromEntries(Object.values(topics).map((t) => [t, 0])), messages.length);
    for (const codec of codecs) {
      const records = all[topics[codec]].records.map((m) => ({ ...m, headers: headerPairs(m.headers) }));
      checkRecords(codec, messages, records);
    }

    const middle = await reader.read(Object.fromEntries(Object.values(topics).map((t) => [t, ROUNDTRIP_MIDDLE])), 1);
    for (const codec of codecs) {
      const { records, firstBatchOffset } = middle[topics[codec]];
      expect(Number(records[0].offset) === ROUNDTRIP_MIDDLE, `${codec}: Fetch at ${ROUNDTRIP_MIDDLE} gave offset ${records[0].offset} first`);
      // The answer starts with the batch holding the offset asked for, not the next one.
      expect(firstBatchOffset <= ROUNDTRIP_MIDDLE, `${codec}: Fetch at ${ROUNDTRIP_MIDDLE} answered from offset ${firstBatchOffset}`);
    }

    admin.on(admin.events.REQUEST, reader.requests.listener);
    await admin.connect();
    const { target, expected } = timestampProbe(messages, ROUNDTRIP_TIMESTAMP_INDEX);
    const found = {};
    for (const codec of codecs) {
      const [p0] = await admin.fetchTopicOffsetsByTimestamp(topics[codec], target);
      expect(Number(p0?.offset) === expected, `${codec}: fetchTopicOffsetsByTimestamp(${target}) gave ${JSON.stringify(p0)}, expected offset ${expected}`);
      found[topics[codec]] = Number(p0.offset);
    }
    const byTime = await reader.read(found, 1);
    for (const codec of codecs) {
      const first = byTime[topics[codec]].records[0];
      expect(Number(first.offset) === expected, `${codec}: Fetch at the offset for ${target} gave offset ${first.offset} first`);
    }
    console.log(`read back in ${Date.now() - started} ms; reader and admin requests: ${reader.requests.text()}`);
  } catch (err) {
    console.log(`reader requests so far: ${reader.requests.text()}`);
    throw err;
  } finally {
    await admin.disconnect().catch(() => {});
    await reader.disconnect().catch(() => {});
  }
};

// admin: what a topic is created with and what the checks expect back. The defaults are
// Kafka 4.4's (unchanged since 4.0), reported with source DEFAULT_CONFIG when nothing overrides them.
const ADMIN_CONFIG = { 'cleanup.policy': 'compact', 'retention.ms': '3600000' };
const DEFAULT_SEGMENT_BYTES = '1073741824';
const DEFAULT_MESSAGE_MAX_BYTES = '1048588';
// Timestamps of the records the offset lookups search, after a base: the largest is not the last.
const ADMIN_TIMESTAMP_STEPS = [0, 10, 50, 20, 30];
// Kafka's ConfigSource ids (kafkajs's own ConfigSource names id 1 TOPIC_CONFIG).
const CONFIG_SOURCES = ['UNKNOWN', 'DYNAMIC_TOPIC_CONFIG', 'DYNAMIC_BROKER_CONFIG', 'DYNAMIC_DEFAULT_BROKER_CONFIG', 'STATIC_BROKER_CONFIG', 'DEFAULT_CONFIG'];

// The Kafka error names (KafkaJSProtocolError.type) inside a kafkajs error: aggregate
// errors list several, retry wrappers keep the last in cause.
function errorTypes(err, depth = 0) {
  if (!err || depth > 4) return [];
  const own = err.type ? [err.type] : [];
  const inner = Array.isArray(err.errors) ? err.errors.flatMap((e) => errorTypes(e, depth + 1)) : [];
  const partitions = Array.isArray(err.partitions) ? err.partitions.flatMap((p) => errorTypes(p.error, depth + 1)) : [];
  return [...own, ...inner, ...partitions, ...errorTypes(err.cause ?? err.originalError, depth + 1)];
}

async function expectError(label, type, call) {
  let result;
  try {
    result = await call();
  } catch (err) {
    const types = errorTypes(err);
    expect(types.includes(type), `${label}: failed with ${err.name}: ${err.message} (types ${types.join(', ') || 'none'}), expected ${type}`);
    console.log(`${label}: ${type} as expected`);
    return;
  }
  throw new ScenarioFailure(`${label}: returned ${JSON.stringify(result)}, expected ${type}`);
}

scenarios.admin = async function admin(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-admin-kafkajs-${stamp}`;
  const recordsTopic = `compat-admin-kafkajs-records-${stamp}`;
  const missing = `compat-admin-kafkajs-missing-${stamp}`;
  const kafka = makeKafka(bootstrap);
  const admin = kafka.admin();
  const requests = requestCounter();
  admin.on(admin.events.REQUEST, requests.listener);
  const created = [];
  const started = Date.now();
  await admin.connect();

  const partitionCount = async (name) => {
    // listTopics asks for every topic: naming one could create it (kafkajs asks for auto-creation).
    if (!(await admin.listTopics()).includes(name)) return null;
    const { topics } = await admin.fetchTopicMetadata({ topics: [name] });
    return topics[0].partitions.length;
  };
  const expectPartitions = (name, count) =>
    settle(async () => {
      const got = await partitionCount(name);
      expect(got === count, `fetchTopicMetadata: ${name} has ${got} partitions, expected ${count}`);
      console.log(`fetchTopicMetadata: ${name} has ${count} partitions`);
    });
  const describe = async (type, name, configNames) => {
    const { resources } = await admin.describeConfigs({ resources: [{ type, name, configNames }], includeSynonyms: false });
    expect(resources.length === 1, `describeConfigs(${name}) answered ${resources.length} resources`);
    return Object.fromEntries(resources[0].configEntries.map((e) => [e.configName, e]));
  };
  const checkConfigs = async (label, type, name, expected) => {
    const configs = await describe(type, name, Object.keys(expected));
    for (const [config, [value, source]] of Object.entries(expected)) {
      const entry = configs[config];
      expect(entry, `${label}: ${config} missing`);
      const got = CONFIG_SOURCES[entry.configSource] ?? `source ${entry.configSource}`;
      console.log(`${label}: ${config}=${JSON.stringify(entry.configValue)} source ${got}`);
      expect(entry.configValue === value && got === source, `${label}: ${config}=${JSON.stringify(entry.configValue)} source ${got}, expected ${JSON.stringify(value)} source ${source}`);
    }
  };
  const TOPIC = ConfigResourceTypes.TOPIC;

  try {
    // createTopics answers true when it created the topic, false when it already existed.
    const configEntries = Object.entries(ADMIN_CONFIG).map(([name, value]) => ({ name, value }));
    // kafkajs's own wait for leaders (on by default) asks one broker and fails where that one has not
    // heard of the topic yet; waitForTopic below waits for every broker instead.
    const first = await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1, configEntries }], waitForLeaders: false, timeout: 5_000 });
    created.push(topic);
    console.log(`createTopics: ${topic} with 3 partitions, ${JSON.stringify(ADMIN_CONFIG)}: ${first}`);
    expect(first === true, `createTopics of a new topic returned ${first}, expected true`);
    // In a cluster, each broker learns of the topic a moment after the one that made it.
    await waitForTopic(bootstrap, topic, 3);
    await expectPartitions(topic, 3);
    const again = await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], timeout: 5_000 });
    console.log(`createTopics of an existing topic: ${again}`);
    expect(again === false, `createTopics of an existing topic returned ${again}, expected false`);
    // One replica more than the cluster has brokers.
    const tooMany = (await admin.describeCluster()).brokers.length + 1;
    await expectError(`createTopics with replication factor ${tooMany}, above the broker count`, 'INVALID_REPLICATION_FACTOR', () =>
      admin.createTopics({ topics: [{ topic: missing, numPartitions: 1, replicationFactor: tooMany }], timeout: 5_000 }),
    );
    await admin.createTopics({ topics: [{ topic: missing, numPartitions: 1, replicationFactor: 1 }], validateOnly: true, waitForLeaders: false, timeout: 5_000 });
    expect((await admin.listTopics()).includes(missing) === false, `createTopics({ validateOnly: true }) created ${missing}`);
    console.log('createTopics({ validateOnly: true }): succeeded, nothing created');

    await settle(() =>
      checkConfigs('describeConfigs(topic)', TOPIC, topic, {
        'cleanup.policy': ['compact', 'DYNAMIC_TOPIC_CONFIG'],
        'retention.ms': ['3600000', 'DYNAMIC_TOPIC_CONFIG'],
        'segment.bytes': [DEFAULT_SEGMENT_BYTES, 'DEFAULT_CONFIG'],
      }),
    );
    const { brokers } = await admin.describeCluster();
    const brokerId = String(Math.min(...brokers.map((b) => b.nodeId)));
    await checkConfigs(`describeConfigs(broker ${brokerId})`, ConfigResourceTypes.BROKER, brokerId, {
      'message.max.bytes': [DEFAULT_MESSAGE_MAX_BYTES, 'DEFAULT_CONFIG'],
      'log.segment.bytes': [DEFAULT_SEGMENT_BYTES, 'DEFAULT_CONFIG'],
    });
    await expectError('describeConfigs of a missing topic', 'UNKNOWN_TOPIC_OR_PARTITION', () => describe(TOPIC, missing, ['retention.ms']));

    // AlterConfigs replaces the topic's whole set of overrides.
    await admin.alterConfigs({ resources: [{ type: TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '7200000' }] }] });
    console.log('alterConfigs: retention.ms=7200000 (and nothing else)');
    await settle(() =>
      checkConfigs('describeConfigs(topic)', TOPIC, topic, {
        'retention.ms': ['7200000', 'DYNAMIC_TOPIC_CONFIG'],
        'cleanup.policy': ['delete', 'DEFAULT_CONFIG'],
      }),
    );
    await expectError('alterConfigs retention.ms=soon', 'INVALID_CONFIG', () =>
      admin.alterConfigs({ resources: [{ type: TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: 'soon' }] }] }),
    );

    await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }], timeout: 5_000 });
    console.log(`createPartitions: ${topic} to 5`);
    await waitForTopic(bootstrap, topic, 5);
    await expectPartitions(topic, 5);
    await expectError('createPartitions to fewer (4)', 'INVALID_PARTITIONS', () => admin.createPartitions({ topicPartitions: [{ topic, count: 4 }], timeout: 5_000 }));
    await expectError('createPartitions of a missing topic', 'UNKNOWN_TOPIC_OR_PARTITION', () =>
      admin.createPartitions({ topicPartitions: [{ topic: missing, count: 2 }], timeout: 5_000 }),
    );

    await admin.createTopics({ topics: [{ topic: recordsTopic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: false, timeout: 5_000 });
    created.push(recordsTopic);
    await waitForTopic(bootstrap, recordsTopic, 1);
    const base = Date.now() - 60_000;
    const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false });
    await producer.connect();
    try {
      const [meta] = await producer.send({
        topic: recordsTopic,
        acks: -1,
        messages: ADMIN_TIMESTAMP_STEPS.map((step, i) => ({ partition: 0, value: `record ${i}`, timestamp: String(base + step) })),
      });
      expect(meta.errorCode === 0 && Number(meta.baseOffset) === 0, `produce to ${recordsTopic}: ${JSON.stringify(meta)}, expected base offset 0`);
    } finally {
      await producer.disconnect().catch(() => {});
    }
    console.log(`produced ${ADMIN_TIMESTAMP_STEPS.length} records with timestamps base+${JSON.stringify(ADMIN_TIMESTAMP_STEPS)}`);
    const offsets = async (label, want) => {
      const [p0] = await admin.fetchTopicOffsets(recordsTopic);
      console.log(`fetchTopicOffsets ${label}: low ${p0.low} high ${p0.high}`);
      expect(Number(p0.low) === want.low && Number(p0.high) === want.high, `fetchTopicOffsets ${label}: low ${p0.low} high ${p0.high}, expected low ${want.low} high ${want.high}`);
    };
    await offsets('after producing', { low: 0, high: 5 });
    // The first offset whose timestamp is at least the one asked for; past the last, kafkajs answers the high watermark.
    for (const [label, at, want] of [['base+15', base + 15, 2], ['base+60', base + 60, 5]]) {
      const [p0] = await admin.fetchTopicOffsetsByTimestamp(recordsTopic, at);
      console.log(`fetchTopicOffsetsByTimestamp ${label}: offset ${p0.offset}`);
      expect(Number(p0.offset) === want, `fetchTopicOffsetsByTimestamp ${label}: offset ${p0.offset}, expected ${want}`);
    }
    await admin.deleteTopicRecords({ topic: recordsTopic, partitions: [{ partition: 0, offset: '2' }] });
    console.log('deleteTopicRecords before offset 2');
    await offsets('after deleteTopicRecords to 2', { low: 2, high: 5 });
    // Offset -1 deletes up to the high watermark.
    await admin.deleteTopicRecords({ topic: recordsTopic, partitions: [{ partition: 0, offset: '-1' }] });
    console.log('deleteTopicRecords with offset -1');
    await offsets('after deleteTopicRecords to -1', { low: 5, high: 5 });

    await admin.deleteTopics({ topics: [...created], timeout: 5_000 });
    console.log(`deleteTopics: ${created.join(', ')}`);
    const gone = created.splice(0);
    await settle(async () => {
      const left = (await admin.listTopics()).filter((t) => gone.includes(t));
      expect(left.length === 0, `still listed after deleteTopics: ${left.join(', ')}`);
    });
    await expectError('deleteTopics of a missing topic', 'UNKNOWN_TOPIC_OR_PARTITION', () => admin.deleteTopics({ topics: [missing], timeout: 5_000 }));
  } finally {
    if (created.length) await admin.deleteTopics({ topics: created, timeout: 5_000 }).catch((err) => console.log(`cleanup: deleteTopics: ${err.message}`));
    console.log(`${Date.now() - started} ms; admin requests: ${requests.text()}`);
    await admin.disconnect().catch(() => {});
  }
};

// group: the plan in lib/group.mjs with kafkajs consumers (eager RoundRobinAssigner, the
// only one kafkajs has). A consumer's holdings are what its last GROUP_JOIN event assigned,
// emptied by its REBALANCING event (sent before it rejoins) and when it is disconnected.
scenarios.group = async function group(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-group-kafkajs-${stamp}`;
  const groupId = `compat-group-kafkajs-${stamp}`;
  const kafka = makeKafka(bootstrap);
  const check = new G.GroupCheck();
  const requests = requestCounter();
  const consumers = new Map();
  let pendingCommits = 0;
  const admin = kafka.admin();
  // Idempotent: kafkajs retries a whole multi-partition send when one partition answers an error
  // (NOT_LEADER_OR_FOLLOWER while a new topic's leaders settle), which duplicates the partitions that took it.
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 });
  // The producer's own key partitioner (murmur2, as Java's), run here so that each
  // message's acknowledged offset is known.
  const partitionOf = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: G.PARTITIONS }, (_, partitionId) => ({ partitionId, leader: 0 }));

  const produce = async (from, to) => {
    const messages = [];
    for (let i = from; i < to; i++) {
      const partition = partitionOf({ topic, partitionMetadata, message: { key: G.messageKey(i) } });
      messages.push({ i, partition, key: G.messageKey(i), value: G.messageValue(i) });
    }
    const acks = await producer.send({ topic, acks: -1, messages: messages.map(({ partition, key, value }) => ({ partition, key, value })) });
    for (const { partition, errorCode, baseOffset } of acks) {
      expect(errorCode === 0, `produce to partition ${partition}: error code ${errorCode}`);
      messages.filter((m) => m.partition === partition).forEach((m, n) => check.produce(m.i, partition, Number(baseOffset) + n));
    }
    const missing = messages.filter((m) => !check.produced.has(m.i));
    expect(missing.length === 0, `produce: no acknowledgement for partition ${missing[0]?.partition}`);
    check.log(`produced messages ${from}..${to - 1}`);
  };

  const start = async (name) => {
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout: G.SESSION_TIMEOUT_MS,
      rebalanceTimeout: G.REBALANCE_TIMEOUT_MS,
      heartbeatInterval: G.HEARTBEAT_INTERVAL_MS,
      maxWaitTimeInMs: 200,
      allowAutoTopicCreation: false,
    });
    consumers.set(name, consumer);
    consumer.on(consumer.events.REQUEST, requests.listener);
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) =>
      check.assign(name, payload.memberAssignment[topic] ?? [], `joined generation as ${payload.isLeader ? 'leader' : 'follower'}, assigned`),
    );
    consumer.on(consumer.events.REBALANCING, () => check.assign(name, [], 'rejoins; holds'));
    consumer.on(consumer.events.CRASH, ({ payload }) => check.problem(`${name} crashed: ${payload.error?.message ?? payload.error}`));
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0) return;
        for (const m of batch.messages) check.consume(name, { partition: batch.partition, offset: m.offset, key: m.key, value: m.value });
        pendingCommits++;
        try {
          await consumer.commitOffsets([{ topic, partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }]);
        } catch (err) {
          check.problem(`${name} commitOffsets for partition ${batch.partition}: ${err.message}`);
        } finally {
          pendingCommits--;
        }
      },
    });
  };
  const leave = async (name) => {
    await G.waitFor(check, `${name}'s commits finishing`, G.CONSUME_TIMEOUT_MS, () => pendingCommits === 0);
    check.assign(name, [], 'leaves the group; holds');
    await consumers.get(name).disconnect();
    consumers.delete(name);
  };
  const consumeStep = async (step, from, to, members) => {
    await G.waitFor(check, `${step}: reading messages ${from}..${to - 1}`, G.CONSUME_TIMEOUT_MS, () => check.countRead(from, to) === to - from,
      () => `${check.countRead(from, to)} read; ${check.describe(members)}`);
    return check.expectStep(step, from, to, members);
  };

  try {
    await admin.connect();
    // kafkajs's own wait for leaders asks one broker and fails where that one has not heard of the topic yet.
    await admin.createTopics({ topics: [{ topic, numPartitions: G.PARTITIONS, replicationFactor: 1 }], waitForLeaders: false, timeout: 5_000 });
    // In a cluster, each broker learns of the topic a moment after the one that made it.
    await waitForTopic(bootstrap, topic, G.PARTITIONS);
    await producer.connect();
    check.log(`topic ${topic} with ${G.PARTITIONS} partitions; group ${groupId}`);

    await Promise.all([start('A'), start('B')]);
    await G.waitFor(check, 'A and B holding all partitions between them', G.JOIN_TIMEOUT_MS, () => check.split(['A', 'B']), () => check.describe(['A', 'B']));
    await produce(0, G.FIRST);
    await consumeStep('A and B', 0, G.FIRST, ['A', 'B']);
    check.expectSpread();

    const leftAt = Date.now();
    await leave('B');
    await G.waitFor(check, 'A holding all partitions after B left', G.SESSION_TIMEOUT_MS, () => check.holds('A').size === G.PARTITIONS, () => check.describe(['A']));
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
  } finally {
    for (const [name, consumer] of consumers) await G.closeQuietly(`consumer ${name}`, () => consumer.disconnect());
    await G.closeQuietly('producer', () => producer.disconnect());
    await G.closeQuietly('admin', () => admin.disconnect());
    console.log(`  consumer requests: ${requests.text()}`);
  }
};

// txn and idempotent-cut: partitions of their topics; how long reading may go without a
// new record once the expected ones are in (to catch duplicates and extras arriving late).
const EO_PARTITIONS = 3;
const EO_SETTLE_MS = 1_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(what, timeoutMs, condition, describe = () => '') {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new ScenarioFailure(`timed out after ${timeoutMs} ms waiting for ${what}${describe() ? `: ${describe()}` : ''}`);
    await sleep(50);
  }
}

function failOn(problems) {
  if (problems.length === 0) return;
  for (const p of problems.slice(1)) console.log(`  ${p}`);
  throw new ScenarioFailure(problems.length > 1 ? `${problems[0]} (and ${problems.length - 1} more above)` : problems[0]);
}

// Reads a whole topic with a kafkajs group consumer (a fresh group, from the beginning) in the
// given isolation level until `want` records are in and EO_SETTLE_MS passes without more.
// Returns [{ partition, offset, value }] in the order read.
async function readTopic(kafka, topic, { readUncommitted, want, timeoutMs, label }) {
  const consumer = kafka.consumer({
    groupId: `${topic}-reader-${readUncommitted ? 'uncommitted' : 'committed'}`,
    readUncommitted,
    maxWaitTimeInMs: 200,
    allowAutoTopicCreation: false,
  });
  const records = [];
  let lastAt = Date.now();
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        records.push({ partition, offset: Number(message.offset), value: message.value.toString() });
        lastAt = Date.now();
      },
    });
    await waitUntil(`${label}: ${want} records`, timeoutMs, () => records.length >= want, () => `${records.length} read`);
    await waitUntil(`${label}: no more records`, timeoutMs, () => Date.now() - lastAt >= EO_SETTLE_MS);
  } finally {
    await consumer.disconnect().catch(() => {});
  }
  console.log(`${label}: ${records.length} records read`);
  return records;
}

// txn: a consume-transform-produce loop. The input topic is filled (without a transaction)
// with TXN_INPUTS records; a group consumer reads them, and every TXN_CHUNK records of a
// batch go to the output topic (same partition, value "<input>#<attempt>") in one
// transaction that also commits the consumer's offsets (sendOffsets). Chunks TXN_ABORT are
// aborted once and processed again at once. A read_committed reader must then see every
// input exactly once, from its second attempt where the first was aborted; a
// read_uncommitted reader sees the aborted attempts too; and the group's committed offsets
// are the input's end offsets.
const TXN_INPUTS = 120;
const TXN_CHUNK = 10;
const TXN_ABORT = new Set([2, 7]);
const TXN_STEP_MS = 15_000;

scenarios.txn = async function txn(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const input = `compat-txn-kafkajs-in-${stamp}`;
  const output = `compat-txn-kafkajs-out-${stamp}`;
  const groupId = `compat-txn-kafkajs-${stamp}`;
  const kafka = makeKafka(bootstrap);
  const admin = kafka.admin();
  // Idempotent, so that kafkajs's retry of a whole send does not write a partition's inputs twice.
  const plain = kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 });
  const producer = kafka.producer({ transactionalId: `compat-txn-kafkajs-${stamp}`, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200, allowAutoTopicCreation: false });
  const requests = requestCounter();
  producer.on(producer.events.REQUEST, requests.listener);
  consumer.on(consumer.events.REQUEST, requests.listener);
  try {
    await admin.connect();
    await admin.createTopics({
      topics: [input, output].map((topic) => ({ topic, numPartitions: EO_PARTITIONS, replicationFactor: 1 })),
      // kafkajs's own wait for leaders asks one broker and fails where that one has not heard of the topics yet.
      waitForLeaders: false,
      timeout: 5_000,
    });
    // In a cluster, each broker learns of the topics a moment after the one that made them.
    for (const topic of [input, output]) await waitForTopic(bootstrap, topic, EO_PARTITIONS);
    await plain.connect();
    const inputs = Array.from({ length: TXN_INPUTS }, (_, i) => ({ partition: i % EO_PARTITIONS, value: `in-${i}` }));
    await plain.send({ topic: input, acks: -1, messages: inputs });
    console.log(`${TXN_INPUTS} records in ${input} (${EO_PARTITIONS} partitions); group ${groupId}`);

    await producer.connect();
    let chunks = 0;
    let processed = 0;
    const committed = [];
    const aborted = [];
    // Each output partition's values in the order the transactions wrote them, aborted ones included.
    const order = new Map(Array.from({ length: EO_PARTITIONS }, (_, p) => [p, []]));
    let failure = null;
    const transform = async (partition, messages, attempt) => {
      const values = messages.map((m) => `${m.value.toString()}#${attempt}`);
      const transaction = await producer.transaction();
      try {
        order.get(partition).push(...values);
        await transaction.send({ topic: output, acks: -1, messages: values.map((value) => ({ partition, value })) });
        const next = String(Number(messages[messages.length - 1].offset) + 1);
        await transaction.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [{ partition, offset: next }] }] });
      } catch (err) {
        await transaction.abort().catch(() => {});
        throw err;
      }
      return { transaction, values };
    };
    await consumer.connect();
    await consumer.subscribe({ topics: [input], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        try {
          for (let i = 0; i < batch.messages.length; i += TXN_CHUNK) {
            const messages = batch.messages.slice(i, i + TXN_CHUNK);
            const chunk = chunks++;
            if (TXN_ABORT.has(chunk)) {
              const first = await transform(batch.partition, messages, 1);
              await first.transaction.abort();
              aborted.push(...first.values.map((value) => ({ partition: batch.partition, value })));
              console.log(`chunk ${chunk} (partition ${batch.partition}, offsets ${messages[0].offset}..${messages[messages.length - 1].offset}): aborted, processed again`);
            }
            const { transaction, values } = await transform(batch.partition, messages, TXN_ABORT.has(chunk) ? 2 : 1);
            await transaction.commit();
            committed.push(...values.map((value) => ({ partition: batch.partition, value })));
            processed += messages.length;
            await heartbeat();
          }
        } catch (err) {
          failure ??= err;
          throw err;
        }
      },
    });
    await waitUntil(`all ${TXN_INPUTS} inputs processed`, TXN_STEP_MS, () => failure !== null || processed >= TXN_INPUTS, () => `${processed} processed in ${chunks} chunks`);
    if (failure) throw failure;
    await consumer.disconnect();
    console.log(`${chunks} transactions committed, ${TXN_ABORT.size} aborted; producer and consumer requests: ${requests.text()}`);

    const [readCommitted, readAll] = await Promise.all([
      readTopic(kafka, output, { readUncommitted: false, want: committed.length, timeoutMs: TXN_STEP_MS, label: 'read_committed' }),
      readTopic(kafka, output, { readUncommitted: true, want: committed.length + aborted.length, timeoutMs: TXN_STEP_MS, label: 'read_uncommitted' }),
    ]);
    const committedValues = new Set(committed.map((c) => c.value));
    const abortedValues = new Set(aborted.map((a) => a.value));
    const problems = [];
    for (const [p, read] of byPartition(readCommitted, EO_PARTITIONS)) {
      const values = order.get(p) ?? [];
      problems.push(...checkPartition(`read_committed partition ${p}`, { order: values, allowed: committedValues, required: new Set(values.filter((v) => committedValues.has(v))), read }));
    }
    for (const [p, read] of byPartition(readAll, EO_PARTITIONS)) {
      const values = order.get(p) ?? [];
      problems.push(...checkPartition(`read_uncommitted partition ${p}`, { order: values, required: new Set(values), read }));
    }
    // Every input once in the committed output: the transformation was applied exactly once.
    const inputsSeen = new Map();
    for (const r of readCommitted) {
      const inputValue = r.value.split('#')[0];
      inputsSeen.set(inputValue, (inputsSeen.get(inputValue) ?? 0) + 1);
    }
    const wrongInputs = inputs.filter((m) => inputsSeen.get(m.value) !== 1);
    if (wrongInputs.length) problems.push(`read_committed: ${wrongInputs.length} inputs not seen exactly once, first ${wrongInputs[0].value} seen ${inputsSeen.get(wrongInputs[0].value) ?? 0} times`);
    failOn(problems);
    console.log(`read_committed: each of the ${TXN_INPUTS} inputs exactly once, none of the ${abortedValues.size} aborted records; read_uncommitted: all ${committed.length + aborted.length}`);

    const ends = await admin.fetchTopicOffsets(input);
    const [groupOffsets] = await admin.fetchOffsets({ groupId, topics: [input] });
    const committedOffsets = Object.fromEntries(groupOffsets.partitions.map((p) => [p.partition, Number(p.offset)]));
    for (const { partition, high } of ends) {
      console.log(`input partition ${partition}: end offset ${high}, group committed ${committedOffsets[partition]}`);
      expect(committedOffsets[partition] === Number(high), `group ${groupId} committed offset ${committedOffsets[partition]} for input partition ${partition}, expected its end offset ${high}`);
    }
  } finally {
    await consumer.disconnect().catch(() => {});
    await producer.disconnect().catch(() => {});
    await plain.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
  }
};

// idempotent-cut: an idempotent producer (maxInFlightRequests 1, as kafkajs requires) sends
// numbered records through the cut proxy (lib/cut-proxy.mjs) as produceThroughCuts
// (lib/exactly-once.mjs) plans it. Then everything is read back directly from the broker: no record
// twice, every acknowledged one at its acknowledged offset, production order per partition.

scenarios['idempotent-cut'] = async function idempotentCut(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-cut-kafkajs-${stamp}`;
  const admin = makeKafka(bootstrap).admin();
  await admin.connect();
  let proxy = null;
  let producer = null;
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: CUT_PLAN.partitions, replicationFactor: 1 }], waitForLeaders: false, timeout: 5_000 });
    await waitForTopic(bootstrap, topic, CUT_PLAN.partitions);
    proxy = await startCutProxy(proxiedListener());
    console.log(`producing to ${topic} through the cut proxy at ${proxy.bootstrap}`);
    const viaProxy = new Kafka({
      clientId: 'gregor-compat-kafkajs-cut',
      brokers: [proxy.bootstrap],
      connectionTimeout: 3_000,
      requestTimeout: 5_000,
      retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 500 },
      logLevel: logLevel.ERROR,
      logCreator: compactErrorLog,
    });
    producer = viaProxy.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await producer.connect();

    const { order, acked, offsets, failures } = await produceThroughCuts({
      proxy,
      isFatal: (err) => err instanceof ScenarioFailure,
      send: async (messages) => {
        const results = await producer.send({ topic, acks: -1, messages });
        for (const { partition, errorCode } of results) expect(errorCode === 0, `send: partition ${partition} error code ${errorCode}`);
        return results.map(({ partition, baseOffset }) => ({ partition, baseOffset }));
      },
    });
    await producer.disconnect().catch(() => {});
    producer = null;
    expect(failures.length === 0, `${failures.length} sends failed despite retries (first: ${failures[0]})`);
    expect(proxy.cuts() > 0, 'no connection was cut while a Produce was in flight: the scenario tested nothing');

    const reader = makeKafka(bootstrap);
    const records = await readTopic(reader, topic, { readUncommitted: false, want: acked.size, timeoutMs: 10_000, label: 'read back' });
    const problems = [];
    for (const [p, read] of byPartition(records, CUT_PLAN.partitions)) {
      problems.push(...checkPartition(`partition ${p}`, { order: order.get(p) ?? [], required: acked, read, offsets }));
    }
    failOn(problems);
    console.log(`each of the ${acked.size} acknowledged records exactly once, at its acknowledged offset, in order`);
  } finally {
    if (producer) await producer.disconnect().catch(() => {});
    if (proxy) await proxy.stop();
    await admin.disconnect().catch(() => {});
  }
};

// txn-cluster: lib/txn-cluster.mjs has the plan. kafkajs has no FindCoordinator call, so the
// coordinators are computed from the leaders of the internal topics' partitions; kafkajs's
// consumer cannot read without a group, so the readers use fresh groups and commit nothing.
// A consumer's position comes from its batches' last offsets, which kafkajs takes past the
// control records, so it passes the transaction markers too.
SCENARIO_TIMEOUTS_MS['txn-cluster'] = TC.BUDGET_MS + 5_000;

scenarios['txn-cluster'] = async function txnCluster(bootstrap) {
  const deadline = Date.now() + TC.BUDGET_MS;
  const until = (ms) => {
    expect(Date.now() < deadline, `the scenario's budget of ${TC.BUDGET_MS} ms is used up`);
    return Math.min(ms, deadline - Date.now());
  };
  const prefix = `compat-txnc-kafkajs-${Date.now()}-${process.pid}`;
  const topicIn = `${prefix}-in`;
  const topicOut = `${prefix}-out`;
  const kafkaOf = (brokers) =>
    new Kafka({
      clientId: 'gregor-compat-kafkajs',
      brokers,
      connectionTimeout: 3_000,
      requestTimeout: 10_000,
      retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 2_000 },
      logLevel: logLevel.ERROR,
      logCreator: compactErrorLog,
    });
  const kafka = kafkaOf(bootstrap.split(','));
  const admin = kafka.admin();
  const open = [admin];
  const problems = [];
  const summary = [];
  const show = (map) => JSON.stringify(Object.fromEntries(map));
  // Map topic -> Map partition -> highest offset acknowledged.
  const lastOffsets = new Map([[topicIn, new Map()], [topicOut, new Map()]]);
  const acknowledged = (topic, results) => {
    const last = lastOffsets.get(topic);
    for (const { partition, baseOffset, count } of results) last.set(partition, Math.max(last.get(partition) ?? -1, Number(baseOffset) + count - 1));
  };
  // What a send() answered, with the number of records that went to each partition.
  const sendAcknowledged = async (txn, topic, messages) => {
    const results = await txn.send({ topic, acks: -1, messages });
    acknowledged(topic, results.map(({ partition, baseOffset }) => ({ partition, baseOffset, count: messages.filter((m) => m.partition === partition).length })));
  };

  // Map partition -> leader, once every broker (asked one by one: brokers learn of a new
  // topic at slightly different times) has a leader for every partition of `topic`.
  let brokerAdmins = [];
  const leaders = async (topic, partitions = null) => {
    let seen = new Map();
    await waitUntilAsync(`leaders of ${topic} on every broker`, until(TC.WAIT_MS), async () => {
      const answers = [];
      for (const a of brokerAdmins) {
        const { topics } = await a.fetchTopicMetadata({ topics: [topic] });
        answers.push(new Map(topics[0].partitions.map((p) => [p.partitionId, p.leader]).sort((x, y) => x[0] - y[0])));
      }
      seen = answers[0];
      return seen.size > 0 && (partitions === null || seen.size === partitions) && [...seen.values()].every((b) => b >= 0) &&
        answers.every((m) => show(m) === show(seen));
    }, () => show(seen));
    return seen;
  };

  // The end offsets of `topic` for a read_committed reader (kafkajs's admin lists offsets
  // read_committed), once past the last offset acknowledged in each partition: a transaction
  // is decided on a partition only once its marker is in, so before that the last stable
  // offset stops at its first record.
  const settledEnd = async (topic) => {
    const last = lastOffsets.get(topic);
    let end = new Map();
    await waitUntilAsync(`${topic}: the last stable offsets past the last records written ${show(last)} (the transactions decided)`, until(TC.WAIT_MS), async () => {
      end = new Map((await admin.fetchTopicOffsets(topic)).map(({ partition, high }) => [partition, Number(high)]).sort((a, b) => a[0] - b[0]));
      return [...last].every(([p, o]) => (end.get(p) ?? 0) > o);
    }, () => `saw ${show(end)}`);
    return end;
  };

  // Reads `topic` from the beginning with a fresh group (nothing committed) until the
  // consumer's position reaches `end` on every partition; Map partition -> values below it.
  const readToEnd = async (topic, { readUncommitted, end, label }) => {
    const consumer = kafka.consumer({ groupId: `${topic}-${label}`, readUncommitted, maxWaitTimeInMs: 200, allowAutoTopicCreation: false });
    open.push(consumer);
    const values = new Map(Array.from({ length: TC.PARTITIONS }, (_, p) => [p, []]));
    const position = new Map();
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.topic === topic) position.set(payload.partition, Math.max(position.get(payload.partition) ?? 0, Number(payload.lastOffset) + 1));
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (Number(message.offset) < end.get(partition)) values.get(partition).push(message.value.toString());
      },
    });
    await waitUntil(`${topic} ${label}: positions at the end offsets ${show(end)}`, until(TC.WAIT_MS),
      () => [...end].every(([p, o]) => (position.get(p) ?? 0) >= o), () => `at ${show(position)}`);
    await consumer.disconnect();
    console.log(`${topic} ${label}: ${TC.count(values)} records up to end offsets ${show(end)}`);
    return values;
  };

  try {
    await admin.connect();
    const { brokers } = await admin.describeCluster();
    if (brokers.length < TC.BROKERS) {
      console.log(`kafkajs txn-cluster: n/a: the cluster has ${brokers.length} broker(s); txn-cluster needs ${TC.BROKERS}`);
      await admin.disconnect();
      process.exit(EXIT_NOT_IMPLEMENTED);
    }
    console.log(`brokers: ${brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}`).join(', ')}`);
    brokerAdmins = brokers.map((b) => kafkaOf([`${b.host}:${b.port}`]).admin());
    open.push(...brokerAdmins);
    for (const a of brokerAdmins) await a.connect();

    // 1. The topics, and IN led by three brokers.
    await admin.createTopics({
      topics: [
        { topic: topicIn, numPartitions: TC.PARTITIONS, replicationFactor: TC.REPLICATION, configEntries: Object.entries(TC.IN_CONFIG).map(([name, value]) => ({ name, value })) },
        { topic: topicOut, numPartitions: TC.PARTITIONS, replicationFactor: TC.REPLICATION },
      ],
      // The wait below asks every broker, bounded by the scenario's clock.
      waitForLeaders: false,
      timeout: 10_000,
    });
    const inLeaders = await leaders(topicIn, TC.PARTITIONS);
    const outLeaders = await leaders(topicOut, TC.PARTITIONS);
    console.log(`${topicIn} leaders (partition: broker): ${show(inLeaders)}`);
    console.log(`${topicOut} leaders (partition: broker): ${show(outLeaders)}`);
    expect(new Set(inLeaders.values()).size === TC.PARTITIONS,
      `${topicIn}: expected its ${TC.PARTITIONS} partitions led by ${TC.PARTITIONS} different brokers, saw leaders ${show(inLeaders)}`);

    // 2. T and G with coordinators on two brokers. The internal topics exist once something
    // asked for a coordinator of their kind: a transactional producer's first transaction,
    // and a group's offsets.
    const probe = kafka.producer({ transactionalId: `${prefix}-probe`, idempotent: true, maxInFlightRequests: 1 });
    open.push(probe);
    await probe.connect();
    await (await probe.transaction()).abort();
    await probe.disconnect();
    await waitUntilAsync('the coordinator of a group', until(TC.WAIT_MS), async () => {
      await admin.fetchOffsets({ groupId: `${prefix}-probe`, topics: [topicIn] });
      return true;
    });
    const txnLeaders = await leaders('__transaction_state');
    const groupLeaders = await leaders('__consumer_offsets');
    console.log(`__transaction_state: ${txnLeaders.size} partitions, __consumer_offsets: ${groupLeaders.size}`);
    const picked = TC.pickIds(prefix,
      (t) => txnLeaders.get(TC.coordinatorPartition(t, txnLeaders.size)),
      (g) => groupLeaders.get(TC.coordinatorPartition(g, groupLeaders.size)));
    expect(picked, `none of ${TC.CANDIDATES} candidate pairs of ids has its transaction and group coordinators on two different brokers`);
    const { txnId, groupId, txnCoordinator, groupCoordinator } = picked;
    const third = [...inLeaders.values()].find((b) => b !== txnCoordinator && b !== groupCoordinator);
    console.log(`transaction coordinator of ${txnId}: broker ${txnCoordinator}`);
    console.log(`group coordinator of ${groupId}: broker ${groupCoordinator}`);
    console.log(`third broker ${third} leads ${topicIn} partition ${TC.ledBy(inLeaders, third)} and ${topicOut} partition(s) ${TC.ledBy(outLeaders, third)}`);

    // 3. A committed, B aborted, C committed. A send() waits for its acknowledgement, so B's
    // records are in the log before the abort.
    const producer = kafka.producer({ transactionalId: txnId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    open.push(producer);
    await producer.connect();
    for (const { name, commit } of TC.TXNS) {
      const txn = await producer.transaction();
      const messages = [];
      for (let k = 0; k < TC.PER_PARTITION; k++) for (let p = 0; p < TC.PARTITIONS; p++) messages.push({ partition: p, value: TC.value(name, p, k) });
      await sendAcknowledged(txn, topicIn, messages);
      await (commit ? txn.commit() : txn.abort());
    }
    console.log(`transactions on ${topicIn}: A committed, B aborted, C committed (${TC.PER_PARTITION} records to each partition each)`);

    // 4. IN as each isolation level sees it.
    const inEnd = await settledEnd(topicIn);
    console.log(`${topicIn} end offsets: ${show(inEnd)}`);
    const committedIn = TC.inputValues({ committedOnly: true });
    const allIn = TC.inputValues({ committedOnly: false });
    const inCommitted = await readToEnd(topicIn, { readUncommitted: false, end: inEnd, label: 'read_committed' });
    const inAll = await readToEnd(topicIn, { readUncommitted: true, end: inEnd, label: 'read_uncommitted' });
    problems.push(...TC.compare(`${topicIn} read_committed`, committedIn, inCommitted));
    problems.push(...TC.compare(`${topicIn} read_uncommitted`, allIn, inAll));
    summary.push(`${topicIn} read_committed ${TC.count(inCommitted)}/${TC.count(committedIn)}, read_uncommitted ${TC.count(inAll)}/${TC.count(allIn)}`);

    // 5. Consume-transform-produce: each batch (one partition's records of one fetch) is one
    // transaction. They run one at a time: a batch of only filtered records (markers, aborted
    // data) moves the position without reaching eachBatch, and the offsets-only transaction
    // that commits such a move comes from the loop below.
    const written = new Map(Array.from({ length: TC.PARTITIONS }, (_, p) => [p, []]));
    const committed = new Map();
    const position = new Map();
    let abortedRecords = 0;
    let transactions = 0;
    let failure = null;
    let chain = Promise.resolve();
    const serial = (fn) => {
      const run = chain.then(fn);
      chain = run.catch(() => {});
      return run;
    };
    const transact = async (records, offsets) => {
      const txn = await producer.transaction();
      try {
        if (records.length) await sendAcknowledged(txn, topicOut, records);
        await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: topicIn, partitions: [...offsets].map(([partition, offset]) => ({ partition, offset: String(offset) })) }] });
      } catch (err) {
        await txn.abort().catch(() => {});
        throw err;
      }
      return txn;
    };
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200, allowAutoTopicCreation: false, sessionTimeout: 10_000, heartbeatInterval: 1_000 });
    open.push(consumer);
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.topic === topicIn && payload.batchSize === 0) {
        position.set(payload.partition, Math.max(position.get(payload.partition) ?? 0, Number(payload.lastOffset) + 1));
      }
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [topicIn], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        try {
          await serial(async () => {
            const p = batch.partition;
            const next = Number(batch.lastOffset()) + 1;
            const records = batch.messages.map((m) => ({ partition: p, value: TC.transform(m.value.toString()) }));
            const txn = await transact(records, new Map([[p, next]]));
            written.get(p).push(...records.map((r) => r.value));
            if (abortedRecords === 0) {
              await txn.abort();
              abortedRecords = records.length;
              const first = batch.messages[0].offset;
              consumer.seek({ topic: topicIn, partition: p, offset: first });
              console.log(`aborted the transaction of ${records.length} records (partition ${p}: ${records.map((r) => r.value).join(', ')}), rewound to ${first}`);
              return;
            }
            await txn.commit();
            transactions++;
            committed.set(p, next);
            position.set(p, Math.max(position.get(p) ?? 0, next));
            console.log(`committed ${records.length} records, offsets ${JSON.stringify({ [p]: next })}`);
          });
        } catch (err) {
          failure ??= err;
          throw err;
        }
      },
    });
    const atEnd = () => [...inEnd].every(([p, o]) => committed.get(p) === o);
    const copyDeadline = Date.now() + until(TC.COPY_MS);
    while (!atEnd() && failure === null) {
      expect(Date.now() < copyDeadline, `copy loop: expected group ${groupId} to commit the end offsets ${show(inEnd)} through transactions, reached ${show(committed)} (${transactions} committed)`);
      const moved = new Map([...position].filter(([p, o]) => o > (committed.get(p) ?? 0)));
      if (moved.size) {
        await serial(async () => {
          await (await transact([], moved)).commit();
          transactions++;
          for (const [p, o] of moved) committed.set(p, o);
          console.log(`committed offsets only ${show(moved)}`);
        });
      }
      await sleep(50);
    }
    if (failure) throw failure;
    await consumer.disconnect();

    // 6. OUT, and the group's offsets.
    const expectedOut = new Map([...committedIn].map(([p, vs]) => [p, vs.map(TC.transform)]));
    const outEnd = await settledEnd(topicOut);
    const outCommitted = await readToEnd(topicOut, { readUncommitted: false, end: outEnd, label: 'read_committed' });
    const outAll = await readToEnd(topicOut, { readUncommitted: true, end: outEnd, label: 'read_uncommitted' });
    problems.push(...TC.compare(`${topicOut} read_committed`, expectedOut, outCommitted));
    problems.push(...TC.compare(`${topicOut} read_uncommitted (the aborted copies included)`, written, outAll));
    summary.push(`${topicOut} read_committed ${TC.count(outCommitted)}/${TC.count(expectedOut)}, read_uncommitted ${TC.count(outAll)}/${TC.count(written)} (${abortedRecords} aborted copies)`);

    const [groupOffsets] = await admin.fetchOffsets({ groupId, topics: [topicIn] });
    const fetched = new Map(groupOffsets.partitions.map((p) => [p.partition, Number(p.offset)]));
    let ok = 0;
    for (const [p, end] of inEnd) {
      console.log(`group ${groupId} ${topicIn} partition ${p}: committed ${fetched.get(p)}, end offset ${end}`);
      if (fetched.get(p) === end) ok++;
      else problems.push(`group ${groupId} partition ${p} of ${topicIn}: expected committed offset ${end} (the end offset), saw ${fetched.get(p)}`);
    }
    summary.push(`group offsets at the end ${ok}/${TC.PARTITIONS}`);
    summary.push(`${transactions} copy transactions committed, 1 aborted`);
  } catch (err) {
    problems.push(err instanceof ScenarioFailure ? err.message : `${err?.name ?? 'Error'}: ${err?.message ?? err}`);
  } finally {
    for (const line of summary) console.log(`summary: ${line}`);
    for (const c of open.reverse()) await c.disconnect().catch(() => {});
  }
  failOn(problems);
};

// waitUntil for a condition that asks the broker: an error counts as "not yet".
async function waitUntilAsync(what, timeoutMs, condition, describe = () => '') {
  const deadline = Date.now() + timeoutMs;
  let lastError = null;
  for (;;) {
    try {
      if (await condition()) return;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const seen = describe() || (lastError ? `${lastError.name}: ${lastError.message}` : '');
      throw new ScenarioFailure(`timed out after ${timeoutMs} ms waiting for ${what}${seen ? `: ${seen}` : ''}`);
    }
    await sleep(200);
  }
}

runScenarios({ label: 'kafkajs', banner: 'kafkajs 2.2.4', scenarios });

// Scenarios for kafkajs 2.2.4, run by ./run as: node client.mjs <scenario> <host:port>
import { createRequire } from 'node:module';
import { CompressionTypes, Kafka, logLevel } from 'kafkajs';
import { checkAcknowledged, checkRecords, makeMessages, timestampProbe } from '../lib/roundtrip.mjs';
import { ScenarioFailure, checkCluster, expect, runScenarios } from '../lib/scenario.mjs';

const require = createRequire(import.meta.url);

// One short line per error instead of kafkajs's JSON records with stack traces.
function compactErrorLog() {
  return ({ namespace, log }) => {
    const where = log.broker ? ` (broker ${log.broker})` : '';
    console.error(`  kafkajs [${namespace}] ${log.message}${where}`);
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

runScenarios({ label: 'kafkajs', banner: 'kafkajs 2.2.4', scenarios });

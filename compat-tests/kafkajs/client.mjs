// Scenarios for kafkajs 2.2.4, run by ./run as: node client.mjs <scenario> <host:port>
import { Kafka, logLevel } from 'kafkajs';
import { checkCluster, expect, runScenarios } from '../lib/scenario.mjs';

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

runScenarios({ label: 'kafkajs', banner: 'kafkajs 2.2.4', scenarios });

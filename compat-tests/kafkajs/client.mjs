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
};

runScenarios({ label: 'kafkajs', banner: 'kafkajs 2.2.4', scenarios });

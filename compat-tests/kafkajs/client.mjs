// Scenarios for kafkajs 2.2.4, run by ./run as: node client.mjs <scenario> <host:port>
import { Kafka, logLevel } from 'kafkajs';

// Upper bound for one scenario, so a broker that never answers fails instead of hanging.
const SCENARIO_TIMEOUT_MS = 20_000;

const EXIT_PASS = 0;
const EXIT_FAIL = 1;
const EXIT_NOT_IMPLEMENTED = 3;

class ScenarioFailure extends Error {}

function expect(condition, message) {
  if (!condition) throw new ScenarioFailure(message);
}

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
      console.log(`clusterId: ${JSON.stringify(cluster.clusterId)}`);
      console.log(`controller: ${cluster.controller}`);
      for (const b of cluster.brokers) {
        console.log(`broker ${b.nodeId}: ${b.host}:${b.port}`);
      }
      expect(Array.isArray(cluster.brokers) && cluster.brokers.length > 0, 'describeCluster returned no brokers');
      for (const b of cluster.brokers) {
        expect(typeof b.host === 'string' && b.host.length > 0, `broker ${b.nodeId} has an empty host`);
        expect(Number.isInteger(b.port) && b.port > 0, `broker ${b.nodeId} has port ${b.port}`);
      }
      const ids = cluster.brokers.map((b) => b.nodeId);
      expect(ids.includes(cluster.controller), `controller ${cluster.controller} is not among brokers [${ids.join(', ')}]`);
      expect(typeof cluster.clusterId === 'string' && cluster.clusterId.length > 0, 'clusterId is empty');

      const topics = await admin.listTopics();
      expect(Array.isArray(topics), 'listTopics did not return an array');
      console.log(`topics (${topics.length}): ${JSON.stringify(topics)}`);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  },
};

async function main() {
  const [name, bootstrap] = process.argv.slice(2);
  if (!name || !bootstrap) {
    console.error('usage: client.mjs <scenario> <host:port>');
    return EXIT_FAIL;
  }
  const scenario = scenarios[name];
  if (!scenario) {
    console.log(`kafkajs: scenario ${name} not implemented`);
    return EXIT_NOT_IMPLEMENTED;
  }
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new ScenarioFailure(`timed out after ${SCENARIO_TIMEOUT_MS} ms`)), SCENARIO_TIMEOUT_MS);
  });
  console.log(`kafkajs 2.2.4: scenario ${name} against ${bootstrap}`);
  try {
    await Promise.race([scenario(bootstrap), timeout]);
    console.log(`kafkajs ${name}: pass`);
    return EXIT_PASS;
  } catch (err) {
    const detail = err instanceof ScenarioFailure ? err.message : `${err?.name ?? 'Error'}: ${err?.message ?? err}`;
    console.log(`kafkajs ${name}: FAIL: ${detail}`);
    const cause = err?.cause?.message ?? err?.cause;
    if (cause && cause !== err.message && !String(err.message).includes(cause)) console.log(`  cause: ${cause}`);
    return EXIT_FAIL;
  } finally {
    clearTimeout(timer);
  }
}

// Exit explicitly: a half-open socket from a misbehaving broker must not keep the process alive.
main().then(
  (code) => process.exit(code),
  (err) => {
    console.log(`kafkajs: unexpected error: ${err?.stack ?? err}`);
    process.exit(EXIT_FAIL);
  },
);

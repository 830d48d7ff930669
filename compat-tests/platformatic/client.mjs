// Scenarios for @platformatic/kafka 1.35.0, run by ./run as: node client.mjs <scenario> <host:port>
import { Admin } from '@platformatic/kafka';

// Upper bound for one scenario, so a broker that never answers fails instead of hanging.
const SCENARIO_TIMEOUT_MS = 20_000;

const EXIT_PASS = 0;
const EXIT_FAIL = 1;
const EXIT_NOT_IMPLEMENTED = 3;

class ScenarioFailure extends Error {}

function expect(condition, message) {
  if (!condition) throw new ScenarioFailure(message);
}

function makeAdmin(bootstrap) {
  return new Admin({
    clientId: 'gregor-compat-platformatic',
    bootstrapBrokers: [bootstrap],
    connectTimeout: 3_000,
    timeout: 10_000,
    retries: 2,
    retryDelay: 200,
  });
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
      console.log(`clusterId: ${JSON.stringify(meta.id)}`);
      console.log(`controller: ${meta.controllerId}`);
      for (const b of brokers) console.log(`broker ${b.nodeId}: ${b.host}:${b.port}`);
      expect(brokers.length > 0, 'metadata returned no brokers');
      for (const b of brokers) {
        expect(typeof b.host === 'string' && b.host.length > 0, `broker ${b.nodeId} has an empty host`);
        expect(Number.isInteger(b.port) && b.port > 0, `broker ${b.nodeId} has port ${b.port}`);
      }
      const ids = brokers.map((b) => b.nodeId);
      expect(ids.includes(meta.controllerId), `controller ${meta.controllerId} is not among brokers [${ids.join(', ')}]`);
      expect(typeof meta.id === 'string' && meta.id.length > 0, 'clusterId is empty');

      // listTopics sends a Metadata request for all topics (null topic list).
      const topics = await admin.listTopics({ includeInternals: true });
      expect(Array.isArray(topics), 'listTopics did not return an array');
      console.log(`topics (${topics.length}): ${JSON.stringify(topics)}`);
    } finally {
      await admin.close().catch(() => {});
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
    console.log(`platformatic: scenario ${name} not implemented`);
    return EXIT_NOT_IMPLEMENTED;
  }
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new ScenarioFailure(`timed out after ${SCENARIO_TIMEOUT_MS} ms`)), SCENARIO_TIMEOUT_MS);
  });
  console.log(`@platformatic/kafka 1.35.0: scenario ${name} against ${bootstrap}`);
  try {
    await Promise.race([scenario(bootstrap), timeout]);
    console.log(`platformatic ${name}: pass`);
    return EXIT_PASS;
  } catch (err) {
    if (err instanceof ScenarioFailure) {
      console.log(`platformatic ${name}: FAIL: ${err.message}`);
    } else {
      console.log(`platformatic ${name}: FAIL:`);
      for (const line of describeError(err)) console.log(line);
    }
    return EXIT_FAIL;
  } finally {
    clearTimeout(timer);
  }
}

// Exit explicitly: a half-open socket from a misbehaving broker must not keep the process alive.
main().then(
  (code) => process.exit(code),
  (err) => {
    console.log(`platformatic: unexpected error: ${err?.stack ?? err}`);
    process.exit(EXIT_FAIL);
  },
);

// Scenarios for @platformatic/kafka 1.35.0, run by ./run as: node client.mjs <scenario> <host:port>
import { Admin } from '@platformatic/kafka';
import { checkCluster, expect, runScenarios } from '../lib/scenario.mjs';

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

runScenarios({
  label: 'platformatic',
  banner: '@platformatic/kafka 1.35.0',
  scenarios,
  formatError: (err) => ({ summary: '', details: describeError(err) }),
});

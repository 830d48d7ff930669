// Scenarios for @platformatic/kafka 1.35.0, run by ./run as: node client.mjs <scenario> <host:port>
import zlib from 'node:zlib';
import { Admin, Consumer, Producer, connectionsApiChannel, protocolAPIsById } from '@platformatic/kafka';
import { CODECS, checkAcknowledged, checkRecords, makeMessages, timestampProbe } from '../lib/roundtrip.mjs';
import { ScenarioFailure, checkCluster, expect, runScenarios } from '../lib/scenario.mjs';

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

runScenarios({
  label: 'platformatic',
  banner: '@platformatic/kafka 1.35.0',
  scenarios,
  formatError: (err) => ({ summary: '', details: describeError(err) }),
});

// Records a consumer group's life on Kafka 4.4.0 and dumps its __consumer_offsets records.
import { Probe } from '../lib/probe.mjs';
const dist = new URL('../../dist/', import.meta.url).href;
const { partitionFor } = await import(dist + 'cluster/coordinator/partition-for.js');
const { decodeRecords, wholeBatches } = await import(dist + 'wire/record-batch.js');
const bootstrap = process.argv[2] ?? '127.0.0.1:9092';
const p = await Probe.connect(bootstrap);
const suffix = Date.now().toString(36);
const topic = `golden-cg-${suffix}`, group = `golden-cg-${suffix}`;
await p.request(19, 5, { topics: [{ name: topic, numPartitions: 4, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 10000, validateOnly: false });
await new Promise((r) => setTimeout(r, 2500));
const md = await p.request(3, 12, { topics: [{ name: topic, topicId: 'AAAAAAAAAAAAAAAAAAAAAA' }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
const topicId = md.topics[0].topicId;
const hb = (memberId, memberEpoch, over = {}) => p.request(68, 1, { groupId: group, memberId, memberEpoch, instanceId: null, rackId: null, rebalanceTimeoutMs: memberEpoch === 0 ? 30000 : -1, subscribedTopicNames: memberEpoch === 0 ? [topic] : null, subscribedTopicRegex: null, serverAssignor: null, topicPartitions: memberEpoch === 0 ? [] : null, ...over });
const own = (ps) => [{ topicId, partitions: ps }];
const log = [];
const step = async (what, req) => { const r = await req; log.push([what, r.errorCode, r.memberEpoch, r.assignment?.topicPartitions.map((t) => t.partitions)]); return r; };
await step('A joins', hb('member-a', 0, { instanceId: 'instance-a', rackId: 'rack-1' }));
await new Promise((r) => setTimeout(r, 1200));
await step('B joins', hb('member-b', 0, { serverAssignor: 'range' }));
await step('A heartbeats', hb('member-a', 2, { instanceId: 'instance-a' }));
await step('A revoked', hb('member-a', 2, { instanceId: 'instance-a', topicPartitions: own([0, 1]) }));
await step('B heartbeats', hb('member-b', 3, { topicPartitions: own([]) }));
await step('A leaves for a while (-2)', hb('member-a', -2, { instanceId: 'instance-a' }));
await step('B leaves', hb('member-b', -1));
console.log(JSON.stringify(log));
// Read the group's partition of __consumer_offsets from the start.
const partition = partitionFor(group, 50);
const fetched = await p.request(1, 12, { clusterId: null, replicaId: -1, replicaState: { replicaId: -1, replicaEpoch: -1n }, maxWaitMs: 500, minBytes: 1, maxBytes: 10_000_000, isolationLevel: 0, sessionId: 0, sessionEpoch: -1, topics: [{ topic: '__consumer_offsets', topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: [{ partition, currentLeaderEpoch: -1, fetchOffset: 0n, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 10_000_000, replicaDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA', highWatermark: 9223372036854775807n }] }], forgottenTopicsData: [], rackId: '' });
const recs = fetched.responses[0].partitions[0].records;
const out = [];
for (const b of wholeBatches(recs)) {
  const d = decodeRecords(b);
  for (const r of d.records) {
    const key = r.key?.toString('hex');
    if (!r.key) continue;
    // keep only this group's records: the key holds the group id after the type
    const g = r.key.subarray(4, 4 + r.key.readInt16BE(2)).toString();
    if (g !== group) continue;
    out.push({ type: r.key.readInt16BE(0), key, value: r.value === null ? null : r.value.toString('hex') });
  }
}
console.log(JSON.stringify({ broker: 'Apache Kafka 4.4.0', group, topic, topicId, steps: log, records: out }, null, 1));
p.close();

// A client built on gregor's own codec that checks protocol rules where Kafka's
// behaviour is precise (error codes, list semantics, ids). Run against Apache Kafka
// it shows the rules are Kafka's; run against gregor it shows gregor keeps them.
import { randomBytes } from 'node:crypto';
import { Probe } from '../lib/probe.mjs';
import { expect, runScenarios } from '../lib/scenario.mjs';

const dist = new URL('../../dist/wire/', import.meta.url);
const { ErrorCode } = await import(new URL('errors.js', dist).href);
const batches = await import(new URL('record-batch.js', dist).href);

const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

const metadataRequest = (topics, allowAutoTopicCreation = true, includeTopicAuthorizedOperations = false) => ({
  topics,
  allowAutoTopicCreation,
  includeClusterAuthorizedOperations: false,
  includeTopicAuthorizedOperations,
});
const named = (...names) => names.map((name) => ({ name, topicId: ZERO_UUID }));

function check(label, actual, wanted) {
  const ok = JSON.stringify(actual) === JSON.stringify(wanted);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${label}: ${JSON.stringify(actual)}${ok ? '' : ` (Kafka: ${JSON.stringify(wanted)})`}`);
  return ok;
}

async function untilLeader(p, topic, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await p.request(3, 12, metadataRequest(named(topic)));
    const t = res.topics[0];
    if (t.errorCode === 0 && t.partitions.length > 0 && t.partitions.every((x) => x.leaderId >= 0)) return t;
    if (Date.now() > deadline) return t;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function metadataRules(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  try {
    const suffix = randomBytes(4).toString('hex');
    const topic = `probe-${suffix}`;

    const av = await p.request(18, 3, { clientSoftwareName: 'wire-probe', clientSoftwareVersion: '1.0' });
    results.push(check('ApiVersions v3 error', av.errorCode, ErrorCode.NONE));
    const byKey = new Map(av.apiKeys.map((k) => [k.apiKey, k]));
    results.push(check('ApiVersions v3 lists ApiVersions and Metadata from v0', [byKey.get(18)?.minVersion, byKey.get(3)?.minVersion], [0, 0]));

    const unsupported = await p.request(18, 99, null, 0);
    results.push(check('ApiVersions v99 error, in the v0 layout', unsupported.errorCode, ErrorCode.UNSUPPORTED_VERSION));
    const own = unsupported.apiKeys.find((k) => k.apiKey === 18);
    results.push(check('ApiVersions v99 still gives the ApiVersions range', own ? [own.minVersion, own.maxVersion >= 3] : null, [0, true]));

    const badName = await p.request(18, 3, { clientSoftwareName: 'bad name!', clientSoftwareVersion: '1.0' });
    results.push(check('ApiVersions v3 with an illegal software name', badName.errorCode, ErrorCode.INVALID_REQUEST));

    results.push(check('Metadata v1 with an empty topic list', (await p.request(3, 1, metadataRequest([]))).topics, []));
    const refused = await p.request(3, 4, metadataRequest(named(`${topic}-never`), false));
    results.push(check('Metadata v4 unknown topic without auto-creation', refused.topics.map((t) => t.errorCode), [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]));
    const illegal = await p.request(3, 12, metadataRequest(named('bad name')));
    results.push(check('Metadata v12 illegal topic name', illegal.topics.map((t) => t.errorCode), [ErrorCode.INVALID_TOPIC_EXCEPTION]));

    // Kafka 4 answers the request that starts an auto-creation as if the topic were unknown; clients retry.
    const created = await p.request(3, 9, metadataRequest(named(topic)));
    results.push(check('Metadata v9 auto-creating request', created.topics.map((t) => [t.name, t.errorCode, t.partitions.length]), [[topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0]]));
    const createdV1 = await p.request(3, 1, metadataRequest(named(`${topic}-v1`)));
    results.push(check('Metadata v1 auto-creating request', createdV1.topics.map((t) => [t.errorCode, t.partitions.length]), [[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0]]));
    const v1Created = await untilLeader(p, `${topic}-v1`, 10_000);
    results.push(check('Metadata v1 creation completes', v1Created.errorCode, ErrorCode.NONE));
    const described = await untilLeader(p, topic, 10_000);
    const brokerIds = (await p.request(3, 12, metadataRequest([]))).brokers.map((b) => b.nodeId);
    results.push(
      check(
        'the auto-created topic once it has a leader',
        [described.errorCode, described.partitions.length, described.partitions.every((x) => brokerIds.includes(x.leaderId) && x.isrNodes.includes(x.leaderId))],
        [ErrorCode.NONE, 1, true],
      ),
    );
    results.push(check('its topic id is set', described.topicId !== ZERO_UUID, true));
    const again = (await p.request(3, 12, metadataRequest(named(topic)))).topics[0];
    results.push(check('its topic id is stable', again.topicId === described.topicId, true));

    const all0 = (await p.request(3, 0, { topics: [] })).topics.map((t) => t.name);
    results.push(check('Metadata v0 empty list means all topics', all0.includes(topic), true));
    const all1 = (await p.request(3, 1, metadataRequest(null))).topics.map((t) => t.name);
    results.push(check('Metadata v1 null list means all topics', all1.includes(topic), true));

    const byId = (await p.request(3, 12, metadataRequest([{ name: null, topicId: described.topicId }]))).topics[0];
    results.push(check('Metadata v12 lookup by topic id', [byId.name, byId.errorCode], [topic, ErrorCode.NONE]));
    const unknownId = (await p.request(3, 12, metadataRequest([{ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg' }]))).topics[0];
    results.push(check('Metadata v12 unknown topic id', [unknownId.name, unknownId.errorCode], [null, ErrorCode.UNKNOWN_TOPIC_ID]));

    await p.request(3, 12, metadataRequest(named(`${topic}.dot`)));
    await untilLeader(p, `${topic}.dot`, 10_000);
    const collide = (await p.request(3, 12, metadataRequest(named(`${topic}_dot`)))).topics[0];
    results.push(check('Metadata v12 auto-creating a name that collides through "." and "_"', collide.errorCode, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
    await new Promise((r) => setTimeout(r, 500));
    const listed = (await p.request(3, 1, metadataRequest(null))).topics.map((t) => t.name);
    results.push(check('the colliding name is not created', listed.includes(`${topic}_dot`), false));

    const twice = (await p.request(3, 12, metadataRequest(named(topic, topic)))).topics;
    results.push(check('Metadata v12 naming a topic twice answers it once', twice.map((t) => [t.name, t.errorCode]), [[topic, ErrorCode.NONE]]));
    const idBelow12 = (await p.request(3, 10, metadataRequest([{ name: topic, topicId: described.topicId }]))).topics;
    results.push(check('Metadata v10 with a topic id', idBelow12.map((t) => t.errorCode), [ErrorCode.INVALID_REQUEST]));
    const nullBelow12 = (await p.request(3, 11, metadataRequest([{ name: null, topicId: described.topicId }]))).topics;
    results.push(check('Metadata v11 with a null topic name', nullBelow12.map((t) => [t.name, t.errorCode]), [['', ErrorCode.INVALID_REQUEST]]));

    const ops = (await p.request(3, 8, metadataRequest(named(topic), false, true))).topics[0];
    results.push(check('Metadata v8 topic authorized operations (no authorizer)', ops.topicAuthorizedOperations, 3576));
    const noOps = (await p.request(3, 8, metadataRequest(named(topic), false, false))).topics[0];
    results.push(check('Metadata v8 authorized operations not asked for', noOps.topicAuthorizedOperations, -2147483648));
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

// ---------------------------------------------------------------------------
// corrupt-batch

/** A valid batch of `values.length` records, keyed k0, k1, ...; timestamps fixed so runs compare. */
function goodBatch(values) {
  return batches.buildBatch({
    records: values.map((value, i) => ({ key: `k${i}`, value, headers: [{ key: 'h', value: 'x' }], timestamp: 1_700_000_000_000n + BigInt(i) })),
  });
}

/**
 * What partition 0 carries in each case, and the error Kafka 4.4 gives it. Partition 1 always
 * carries one good record in the same request, so each case also shows that one partition's
 * bad batch leaves the other's append alone.
 */
const CORRUPT_CASES = [
  {
    name: 'bad CRC (a flipped bit in a record value)',
    wanted: ErrorCode.CORRUPT_MESSAGE,
    batch() {
      const b = goodBatch(['payload']);
      b[b.indexOf('payload') + 3] ^= 0x01; // the header's CRC no longer matches
      return b;
    },
  },
  {
    // Kafka's request parsing finds no whole batch in the partition's bytes, and Produce v3+
    // needs exactly one: INVALID_RECORD, not CORRUPT_MESSAGE.
    name: 'batchLength overruns the bytes present',
    wanted: ErrorCode.INVALID_RECORD,
    batch() {
      const b = goodBatch(['payload']);
      b.writeInt32BE(b.readInt32BE(batches.BATCH_LENGTH) + 100, batches.BATCH_LENGTH);
      return b;
    },
  },
  {
    name: 'recordCount 2 with one record (lastOffsetDelta 0, CRC valid)',
    wanted: ErrorCode.INVALID_RECORD,
    batch() {
      const b = goodBatch(['payload']);
      b.writeInt32BE(2, batches.RECORD_COUNT);
      batches.writeBatchCrc(b, 0, b.length);
      return b;
    },
  },
  {
    // Header consistent, records short: Kafka's record iterator reports the early end as an
    // invalid record, as it does records left over (recordCount 1, lastOffsetDelta 0, below).
    name: 'recordCount 2 with one record (lastOffsetDelta 1, CRC valid)',
    wanted: ErrorCode.INVALID_RECORD,
    batch() {
      const b = goodBatch(['payload']);
      b.writeInt32BE(2, batches.RECORD_COUNT);
      b.writeInt32BE(1, batches.LAST_OFFSET_DELTA);
      batches.writeBatchCrc(b, 0, b.length);
      return b;
    },
  },
  {
    name: 'recordCount 1 with two records (lastOffsetDelta 1, CRC valid)',
    wanted: ErrorCode.INVALID_RECORD,
    batch() {
      const b = goodBatch(['one', 'two']);
      b.writeInt32BE(1, batches.RECORD_COUNT);
      batches.writeBatchCrc(b, 0, b.length);
      return b;
    },
  },
  {
    name: 'recordCount 1 with two records (lastOffsetDelta 0, CRC valid)',
    wanted: ErrorCode.INVALID_RECORD,
    batch() {
      const b = goodBatch(['one', 'two']);
      b.writeInt32BE(1, batches.RECORD_COUNT);
      b.writeInt32BE(0, batches.LAST_OFFSET_DELTA);
      batches.writeBatchCrc(b, 0, b.length);
      return b;
    },
  },
  {
    name: 'recordCount 0 with one record (CRC valid)',
    wanted: ErrorCode.INVALID_RECORD,
    batch() {
      const b = goodBatch(['payload']);
      b.writeInt32BE(0, batches.RECORD_COUNT);
      batches.writeBatchCrc(b, 0, b.length);
      return b;
    },
  },
];
const CORRUPT_PRODUCE_VERSIONS = [3, 9];

/** Creates `name` with one replica per partition; with `onBroker`, every partition's replica is on that broker. */
async function createTopic(p, name, numPartitions, onBroker = null) {
  const placed = onBroker !== null;
  const assignments = placed ? Array.from({ length: numPartitions }, (_, i) => ({ partitionIndex: i, brokerIds: [onBroker] })) : [];
  const res = await p.request(19, 5, {
    topics: [{ name, numPartitions: placed ? -1 : numPartitions, replicationFactor: placed ? -1 : 1, assignments, configs: [] }],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  const t = res.topics[0];
  expect(t?.errorCode === ErrorCode.NONE, `CreateTopics ${name}: error ${t?.errorCode} ${t?.errorMessage ?? ''}`);
}

const listOffsetsRequest = (topic, partitions, timestamp) => ({
  replicaId: -1,
  isolationLevel: 0,
  topics: [{ name: topic, partitions: partitions.map((partitionIndex) => ({ partitionIndex, currentLeaderEpoch: -1, timestamp, maxNumOffsets: 1 })) }],
  timeoutMs: 10_000,
});

/** [partition, errorCode, offset] of the latest offset of each partition, in partition order. */
async function latestOffsets(p, topic, partitions) {
  const res = await p.request(2, 7, listOffsetsRequest(topic, partitions, -1n));
  return res.topics[0].partitions.map((x) => [x.partitionIndex, x.errorCode, Number(x.offset)]).sort((a, b) => a[0] - b[0]);
}

/** Waits until every partition answers ListOffsets: a leader in Metadata can come before the log is ready. */
async function untilServing(p, topic, partitions, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const offsets = await latestOffsets(p, topic, partitions);
    if (offsets.every(([, errorCode]) => errorCode === ErrorCode.NONE)) return;
    expect(Date.now() < deadline, `${topic} not served within ${ms} ms: ${JSON.stringify(offsets)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** For each partition: [partition, errorCode, highWatermark, the (offset, key, value) of every record from offset 0]. */
async function fetchAll(p, topic, partitions) {
  const res = await p.request(1, 12, {
    clusterId: null,
    replicaId: -1,
    maxWaitMs: 100,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, partitions: partitions.map((partition) => ({ partition, currentLeaderEpoch: -1, fetchOffset: 0n, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1 << 20 })) }],
    forgottenTopicsData: [],
    rackId: '',
  });
  expect(res.errorCode === ErrorCode.NONE, `Fetch error ${res.errorCode}`);
  return res.responses[0].partitions
    .map((x) => {
      const records = [];
      const buf = x.records ?? Buffer.alloc(0);
      for (let at = 0; at + batches.LOG_OVERHEAD <= buf.length; ) {
        const size = batches.LOG_OVERHEAD + buf.readInt32BE(at + batches.BATCH_LENGTH);
        if (at + size > buf.length) break; // a partial batch at the end of a fetch is normal
        const h = batches.readBatchHeader(buf, at);
        const decoded = batches.decodeRecords(buf.subarray(at, at + size));
        expect(decoded.ok, `partition ${x.partitionIndex} batch at ${h.baseOffset} does not decode: ${decoded.error}`);
        for (const r of decoded.records) records.push([Number(h.baseOffset) + r.offsetDelta, r.key?.toString() ?? null, r.value?.toString() ?? null]);
        at += size;
      }
      return [x.partitionIndex, x.errorCode, Number(x.highWatermark), records];
    })
    .sort((a, b) => a[0] - b[0]);
}

/** The node id Metadata gives the broker at `bootstrap`, the one this connection reached. */
async function connectedBrokerId(p, bootstrap) {
  const { brokers } = await p.request(3, 12, metadataRequest([]));
  const self = brokers.find((b) => `${b.host}:${b.port}` === bootstrap);
  expect(self, `Metadata lists no broker at ${bootstrap}: ${brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}`).join(', ')}`);
  return self.nodeId;
}

async function corruptBatch(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  try {
    const suffix = randomBytes(4).toString('hex');
    // Produce, ListOffsets and Fetch all go to this connection's broker, so the partitions are
    // placed there: in a cluster the broker would otherwise spread their leaders.
    const self = await connectedBrokerId(p, bootstrap);
    for (const version of CORRUPT_PRODUCE_VERSIONS) {
      for (const [i, c] of CORRUPT_CASES.entries()) {
        const topic = `corrupt-${suffix}-v${version}-${i}`;
        await createTopic(p, topic, 2, self);
        await untilLeader(p, topic, 10_000);
        await untilServing(p, topic, [0, 1], 10_000);
        const res = await p.request(0, version, {
          transactionalId: null,
          acks: -1,
          timeoutMs: 10_000,
          topicData: [{ name: topic, partitionData: [{ index: 0, records: c.batch() }, { index: 1, records: goodBatch(['good']) }] }],
        });
        const answers = res.responses.flatMap((t) => t.partitionResponses).sort((a, b) => a.index - b.index);
        const p0 = answers.find((a) => a.index === 0);
        // Kafka leaves errorMessage null in every case here; gregor's text is a diagnostic, not compared.
        if (p0?.errorMessage) console.log(`     partition 0 errorMessage: ${p0.errorMessage}`);
        results.push(
          check(
            `Produce v${version} acks=-1, partition 0 ${c.name}; partition 1 good: [partition, error, baseOffset, recordErrors]`,
            answers.map((a) => [a.index, a.errorCode, a.errorCode === ErrorCode.NONE ? Number(a.baseOffset) : -1, a.recordErrors.length]),
            [[0, c.wanted, -1, 0], [1, ErrorCode.NONE, 0, 0]],
          ),
        );
        results.push(check('  then ListOffsets v7 latest: [partition, error, offset]', await latestOffsets(p, topic, [0, 1]), [[0, ErrorCode.NONE, 0], [1, ErrorCode.NONE, 1]]));
        results.push(
          check('  then Fetch v12 from 0: [partition, error, highWatermark, records]', await fetchAll(p, topic, [0, 1]), [
            [0, ErrorCode.NONE, 0, []],
            [1, ErrorCode.NONE, 1, [[0, 'k0', 'good']]],
          ]),
        );
      }
    }
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

/** A connection to the coordinator of `key` (0 a group, 1 a transactional id), found through `p`. */
async function coordinatorOf(p, key, keyType = 0) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await p.request(10, 4, { key: '', keyType, coordinatorKeys: [key] });
    const c = res.coordinators[0];
    if (c.errorCode === ErrorCode.NONE) return Probe.connect(`${c.host}:${c.port}`);
    if (Date.now() > deadline) throw new Error(`no coordinator for ${key}: error ${c.errorCode}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const heartbeat = (groupId, memberId, memberEpoch, over = {}) => ({
  groupId,
  memberId,
  memberEpoch,
  instanceId: null,
  rackId: null,
  rebalanceTimeoutMs: memberEpoch === 0 ? 30_000 : -1,
  subscribedTopicNames: null,
  subscribedTopicRegex: null,
  serverAssignor: null,
  topicPartitions: memberEpoch === 0 ? [] : null,
  ...over,
});

/**
 * Kafka 4.4's answers for ApiVersions v5 (KIP-1242), its finalized features, and the consumer
 * group protocol (KIP-848) around one member: request checks, epochs, fencing, the group as
 * ConsumerGroupDescribe, DescribeGroups, ListGroups and OffsetCommit see it, its leave and deletion.
 */
async function consumerGroupRules(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  let c = null;
  try {
    const suffix = randomBytes(4).toString('hex');
    const md = await p.request(3, 12, metadataRequest([]));
    const self = await connectedBrokerId(p, bootstrap);
    const av = (clusterId, nodeId) => p.request(18, 5, { clientSoftwareName: 'wire-probe', clientSoftwareVersion: '1', clusterId, nodeId });
    const answer = (r) => [r.errorCode, r.apiKeys.length > 0];
    results.push(check('ApiVersions v5 naming this cluster and node: [error, table]', answer(await av(md.clusterId, self)), [0, true]));
    results.push(check('ApiVersions v5 with a cluster id and no node id', answer(await av(md.clusterId, -1)), [ErrorCode.INVALID_REQUEST, false]));
    results.push(check('ApiVersions v5 naming another node', answer(await av(md.clusterId, self + 100)), [ErrorCode.REBOOTSTRAP_REQUIRED, false]));
    results.push(check('ApiVersions v5 naming another cluster', answer(await av('another-cluster-abcdef', self)), [ErrorCode.REBOOTSTRAP_REQUIRED, false]));
    const features = Object.fromEntries((await av(null, -1)).finalizedFeatures.map((f) => [f.name, f.maxVersionLevel]));
    results.push(check('finalized transaction.version and group.version', [features['transaction.version'], features['group.version']], [2, 1]));

    const topic = `cg-rules-${suffix}`;
    const group = `cg-rules-${suffix}`;
    await createTopic(p, topic, 6);
    const leaders = await untilLeader(p, topic, 10_000);
    const topicId = leaders.topicId;
    c = await coordinatorOf(p, group);
    // Kafka's group coordinator learns of a new topic a moment after its partitions have leaders; a member
    // joining before that is given nothing.
    await new Promise((r) => setTimeout(r, 2000));
    const hb = async (body, version = 1) => {
      const r = await c.request(68, version, body);
      return { ...r, parts: r.assignment === null ? null : r.assignment.topicPartitions.map((t) => [t.topicId === topicId, [...t.partitions].sort((a, b) => a - b)]) };
    };
    const brief = (r) => [r.errorCode, r.errorMessage];
    results.push(check('join without a member id (v1)', brief(await hb(heartbeat(group, '', 0, { subscribedTopicNames: [topic] }))), [ErrorCode.INVALID_REQUEST, "MemberId can't be empty."]));
    results.push(check('join without a rebalance timeout', brief(await hb(heartbeat(group, 'm-a', 0, { subscribedTopicNames: [topic], rebalanceTimeoutMs: -1 }))), [ErrorCode.INVALID_REQUEST, 'RebalanceTimeoutMs must be provided in first request.']));
    results.push(check('join naming an assignor the broker lacks', (await hb(heartbeat(group, 'm-a', 0, { subscribedTopicNames: [topic], serverAssignor: 'sticky' }))).errorCode, ErrorCode.UNSUPPORTED_ASSIGNOR));
    results.push(check('heartbeat to a group that does not exist', brief(await hb(heartbeat(group, 'm-a', 3))), [ErrorCode.GROUP_ID_NOT_FOUND, `Consumer group ${group} not found.`]));
    const joined = await hb(heartbeat(group, 'm-a', 0, { subscribedTopicNames: [topic] }));
    results.push(check('first member joins: [error, epoch, interval, assignment]', [joined.errorCode, joined.memberId, joined.memberEpoch, joined.heartbeatIntervalMs, joined.parts], [0, 'm-a', 2, 5000, [[true, [0, 1, 2, 3, 4, 5]]]]));
    results.push(check('heartbeat at the same epoch: no assignment', [(await hb(heartbeat(group, 'm-a', 2))).errorCode, (await hb(heartbeat(group, 'm-a', 2))).parts], [0, null]));
    results.push(check('heartbeat with a greater epoch', (await hb(heartbeat(group, 'm-a', 7))).errorCode, ErrorCode.FENCED_MEMBER_EPOCH));
    results.push(check('heartbeat with a smaller epoch', (await hb(heartbeat(group, 'm-a', 1, { topicPartitions: [] }))).errorCode, ErrorCode.FENCED_MEMBER_EPOCH));
    results.push(check('heartbeat of an unknown member', brief(await hb(heartbeat(group, 'm-z', 2))), [ErrorCode.UNKNOWN_MEMBER_ID, `Member m-z is not a member of group ${group}.`]));

    const describe = async () => {
      const g = (await c.request(69, 1, { groupIds: [group], includeAuthorizedOperations: false })).groups[0];
      return [g.errorCode, g.errorMessage, g.groupState, g.groupEpoch, g.assignmentEpoch, g.assignorName, g.members.map((m) => [m.memberId, m.memberEpoch, m.clientId, m.subscribedTopicNames, m.subscribedTopicRegex, m.memberType, m.assignment.topicPartitions.map((t) => [t.topicName, [...t.partitions].sort((a, b) => a - b)])])];
    };
    results.push(check('ConsumerGroupDescribe', await describe(), [0, null, 'Stable', 2, 2, 'uniform', [['m-a', 2, 'wire-probe', [topic], '', 1, [[topic, [0, 1, 2, 3, 4, 5]]]]]]));
    const dg = async (v) => {
      const g = (await c.request(15, v, { groups: [group], includeAuthorizedOperations: false })).groups[0];
      return [g.errorCode, g.errorMessage ?? null, g.groupState, g.members.length];
    };
    results.push(check('DescribeGroups v6 on a consumer group', await dg(6), [ErrorCode.GROUP_ID_NOT_FOUND, `Group ${group} is not a classic group.`, 'Dead', 0]));
    results.push(check('DescribeGroups v5 on a consumer group', await dg(5), [0, null, 'Dead', 0]));
    const listed = (await c.request(16, 5, { statesFilter: [], typesFilter: ['consumer'] })).groups.filter((g) => g.groupId === group);
    results.push(check('ListGroups v5 of type consumer', listed.map((g) => [g.protocolType, g.groupState, g.groupType]), [['consumer', 'Stable', 'consumer']]));
    const commit = async (epoch) =>
      (
        await c.request(8, 9, {
          groupId: group,
          generationIdOrMemberEpoch: epoch,
          memberId: 'm-a',
          groupInstanceId: null,
          retentionTimeMs: -1n,
          topics: [{ name: topic, topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 0n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
        })
      ).topics[0].partitions[0].errorCode;
    results.push(check('OffsetCommit v9 at a newer member epoch, then at its own', [await commit(3), await commit(2)], [ErrorCode.STALE_MEMBER_EPOCH, 0]));
    const fetchAs = async (memberId, memberEpoch) => {
      const g = (await c.request(9, 9, { groupId: '', topics: [], groups: [{ groupId: group, memberId, memberEpoch, topics: [{ name: topic, topicId: ZERO_UUID, partitionIndexes: [0] }] }], requireStable: false })).groups[0];
      return [g.errorCode, g.topics.map((t) => t.partitions.map((x) => [x.partitionIndex, Number(x.committedOffset)]))];
    };
    results.push(check('OffsetFetch v9 as the member at a stale epoch, an unknown member, the member, and no member', [
      await fetchAs('m-a', 3),
      await fetchAs('m-z', 2),
      await fetchAs('m-a', 2),
      await fetchAs(null, -1),
    ], [[ErrorCode.STALE_MEMBER_EPOCH, []], [ErrorCode.UNKNOWN_MEMBER_ID, []], [0, [[[0, 0]]]], [0, [[[0, 0]]]]]));
    const deleteGroup = async () => (await c.request(42, 2, { groupsNames: [group] })).results[0].errorCode;
    results.push(check('DeleteGroups while it has a member', await deleteGroup(), ErrorCode.NON_EMPTY_GROUP));
    const left = await hb(heartbeat(group, 'm-a', -1));
    results.push(check('leave: [error, member, epoch, interval]', [left.errorCode, left.memberId, left.memberEpoch, left.heartbeatIntervalMs], [0, 'm-a', -1, 0]));
    const empty = await describe();
    results.push(check('ConsumerGroupDescribe after the leave: [state, group epoch, assignment epoch]', empty.slice(2, 5), ['Empty', 3, 3]));
    results.push(check('DeleteGroups once empty', await deleteGroup(), 0));
    results.push(check('ConsumerGroupDescribe after the deletion', (await describe()).slice(0, 2), [ErrorCode.GROUP_ID_NOT_FOUND, `Group ${group} not found.`]));
  } finally {
    p.close();
    c?.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

/** Kafka 4.4's answers to UpdateFeatures (KIP-584) and UnregisterBroker, with nothing changed. */
async function featureRules(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  try {
    const update = async (version, feature, level, upgradeType = 1) => {
      const r = await p.request(57, version, { timeoutMs: 5000, validateOnly: true, featureUpdates: [{ feature, maxVersionLevel: level, allowDowngrade: upgradeType !== 1, upgradeType }] });
      // The message names the answering controller's id, which differs between brokers: compared without it.
      return [r.errorCode, r.errorMessage?.replace(/Local controller \d+/, 'Local controller N') ?? null, r.results.map((x) => [x.feature, x.errorCode, x.errorMessage])];
    };
    const head = 'The update failed for all features since the following feature had an error: Invalid update version';
    results.push(check('UpdateFeatures v1 to the current transaction.version', await update(1, 'transaction.version', 2), [0, null, [['transaction.version', 0, 'NONE']]]));
    results.push(check('UpdateFeatures v2 to the current group.version', await update(2, 'group.version', 1), [0, null, []]));
    results.push(check('UpdateFeatures v1 of an unknown feature', await update(1, 'no.such.feature', 1), [ErrorCode.INVALID_UPDATE_VERSION, `${head} 1 for feature no.such.feature. Local controller N does not support this feature.`, []]));
    results.push(check('UpdateFeatures v1 past the supported levels', await update(1, 'transaction.version', 5), [ErrorCode.INVALID_UPDATE_VERSION, `${head} 5 for feature transaction.version. Local controller N only supports versions 0-2`, []]));
    results.push(check('UpdateFeatures v1 downgrade without a downgrade type', await update(1, 'transaction.version', 1), [
      ErrorCode.INVALID_UPDATE_VERSION,
      `${head} 1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.`,
      [],
    ]));
    const unregister = async (id) => {
      const r = await p.request(64, 0, { brokerId: id });
      return [r.errorCode, r.errorMessage];
    };
    results.push(check('UnregisterBroker of an id no broker has', await unregister(4242), [ErrorCode.BROKER_ID_NOT_REGISTERED, 'Broker ID 4242 is not currently registered']));
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

// ---------------------------------------------------------------------------
// topic-partitions

const RESOURCE_TOPIC = 2;
const RESOURCE_BROKER = 4;
const RESOURCE_BROKER_LOGGER = 8;
const RESOURCE_CLIENT_METRICS = 16;
const RESOURCE_GROUP = 32;

const describeTopicPartitions = (p, names, responsePartitionLimit = 2000, cursor = null) =>
  p.request(75, 0, { topics: names.map((name) => ({ name })), responsePartitionLimit, cursor });

/** [name, errorCode, partition indexes] of each topic answered, then the next cursor. */
async function pageOf(p, names, limit, cursor = null) {
  const res = await describeTopicPartitions(p, names, limit, cursor);
  return [res.topics.map((t) => [t.name, t.errorCode, t.partitions.map((x) => x.partitionIndex)]), res.nextCursor];
}

/** [type, name] of each resource ListConfigResources v1 lists for `types`, and its error code. */
async function configResources(p, types) {
  const res = await p.request(74, 1, { resourceTypes: types });
  return [res.errorCode, res.configResources.map((c) => [c.resourceType, c.resourceName])];
}

async function topicPartitions(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  try {
    const suffix = randomBytes(4).toString('hex');
    // Named so that `one` sorts before `three`.
    const three = `tp-${suffix}-three`;
    const one = `tp-${suffix}-one`;
    const missing = `tp-${suffix}-missing`;
    await createTopic(p, three, 3);
    await createTopic(p, one, 1);
    const described = await untilLeader(p, three, 10_000);
    await untilLeader(p, one, 10_000);

    // DescribeTopicPartitions v0 against Metadata v12's view of the same topic.
    const answer = await describeTopicPartitions(p, [three]);
    const whole = answer.topics;
    results.push(
      check(
        'DescribeTopicPartitions of a 3-partition topic: [name, error, topic id equal to Metadata\'s, isInternal, authorized operations]',
        whole.map((t) => [t.name, t.errorCode, t.topicId === described.topicId && t.topicId !== ZERO_UUID, t.isInternal, t.topicAuthorizedOperations]),
        [[three, ErrorCode.NONE, true, false, 3576]],
      ),
    );
    const asMetadata = described.partitions
      .map((x) => [x.partitionIndex, ErrorCode.NONE, x.leaderId, x.leaderEpoch, x.replicaNodes, x.isrNodes, [], [], x.offlineReplicas])
      .sort((a, b) => a[0] - b[0]);
    results.push(
      check(
        '  its partitions: [index, error, leader, leaderEpoch, replicas, ISR, eligibleLeaderReplicas, lastKnownElr, offline], as Metadata has them',
        (whole[0]?.partitions ?? []).map((x) => [x.partitionIndex, x.errorCode, x.leaderId, x.leaderEpoch, x.replicaNodes, x.isrNodes, x.eligibleLeaderReplicas, x.lastKnownElr, x.offlineReplicas]),
        asMetadata,
      ),
    );
    results.push(check('  and no next cursor', answer.nextCursor, null));

    const first = await pageOf(p, [three], 2);
    results.push(check('ResponsePartitionLimit 2: [topics, nextCursor]', first, [[[three, ErrorCode.NONE, [0, 1]]], { topicName: three, partitionIndex: 2 }]));
    results.push(check('  the next page, from that cursor', await pageOf(p, [three], 2, first[1]), [[[three, ErrorCode.NONE, [2]]], null]));
    results.push(
      check('limit 1 used up by a whole topic: the cursor names the next topic at partition 0', await pageOf(p, [three, one], 1), [
        [[one, ErrorCode.NONE, [0]]],
        { topicName: three, partitionIndex: 0 },
      ]),
    );

    const unknown = (await describeTopicPartitions(p, [missing])).topics;
    results.push(
      check('a missing topic: [name, error, topic id, partitions]', unknown.map((t) => [t.name, t.errorCode, t.topicId, t.partitions.length]), [
        [missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID, 0],
      ]),
    );
    results.push(
      check('two topics named out of order are answered by name, with a missing one among them', await pageOf(p, [three, missing, one], 2000), [
        [
          [missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []],
          [one, ErrorCode.NONE, [0]],
          [three, ErrorCode.NONE, [0, 1, 2]],
        ],
        null,
      ]),
    );
    results.push(
      check('a cursor naming a topic not asked for', await pageOf(p, [one], 10, { topicName: three, partitionIndex: 0 }), [[[one, ErrorCode.INVALID_REQUEST, []]], null]),
    );

    // ListConfigResources.
    const [topicsError, topics] = await configResources(p, [RESOURCE_TOPIC]);
    results.push(
      check(
        'ListConfigResources v1 TOPIC: [error, lists both topics, every entry a topic]',
        [topicsError, [one, three].every((n) => topics.some(([t, name]) => t === RESOURCE_TOPIC && name === n)), topics.every(([t]) => t === RESOURCE_TOPIC)],
        [ErrorCode.NONE, true, true],
      ),
    );
    const brokerIds = (await p.request(3, 12, metadataRequest([]))).brokers.map((b) => String(b.nodeId)).sort();
    const [brokersError, brokers] = await configResources(p, [RESOURCE_BROKER]);
    results.push(check('ListConfigResources v1 BROKER: [error, the broker ids Metadata lists]', [brokersError, brokers.map(([, n]) => n).sort()], [ErrorCode.NONE, brokerIds]));
    const [allError, all] = await configResources(p, []);
    const typeOrder = all.map(([t]) => t).filter((t, i, ts) => i === 0 || ts[i - 1] !== t);
    // Groups are listed when they have configs, which other scenarios on this broker may have left
    // (Kafka keeps a group's configs after the group): they must come first, as Kafka lists them.
    results.push(check('ListConfigResources v1 with no type: [error, the types listed but groups, in order, groups first if any]',
      [allError, typeOrder.filter((t) => t !== RESOURCE_GROUP), typeOrder.indexOf(RESOURCE_GROUP) <= 0],
      [ErrorCode.NONE, [RESOURCE_BROKER_LOGGER, RESOURCE_BROKER, RESOURCE_TOPIC], true]));
    results.push(check('ListConfigResources v1 CLIENT_METRICS on a broker with none', await configResources(p, [RESOURCE_CLIENT_METRICS]), [ErrorCode.NONE, []]));
    results.push(check('ListConfigResources v1 with an unlisted type (3)', await configResources(p, [RESOURCE_TOPIC, 3]), [ErrorCode.UNSUPPORTED_VERSION, []]));
    const v0 = await p.request(74, 0, {});
    results.push(check('ListConfigResources v0 lists client-metrics resources only: [error, names]', [v0.errorCode, v0.configResources.map((c) => c.resourceName)], [ErrorCode.NONE, []]));
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

/** DescribeLogDirs v4: per directory [path, error, [[topic, partition, isFuture]...]], in the broker's order. */
async function logDirs(p, topics = null) {
  const res = await p.request(35, 4, { topics });
  expect(res.errorCode === ErrorCode.NONE, `DescribeLogDirs error ${res.errorCode}`);
  return res.results.map((d) => [d.logDir, d.errorCode, d.topics.flatMap((t) => t.partitions.map((x) => [t.name, x.partitionIndex, x.isFutureKey]))]);
}

/** AlterReplicaLogDirs v2: [topic, partition, error] of each answer, sorted (Kafka answers from a hash map). */
async function alterLogDirs(p, dirs) {
  const res = await p.request(34, 2, { dirs });
  return res.results
    .flatMap((t) => t.partitions.map((x) => [t.topicName, x.partitionIndex, x.errorCode]))
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
}

async function logDirsScenario(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  try {
    const dirs = await logDirs(p);
    expect(dirs.length >= 2, `the broker has ${dirs.length} log directory; the scenario needs two (log.dirs)`);
    const suffix = randomBytes(4).toString('hex');
    const topic = `dirs-${suffix}`;
    // Every partition on this connection's broker: AlterReplicaLogDirs acts on the replicas of the broker it is sent to.
    const self = await connectedBrokerId(p, bootstrap);
    await createTopic(p, topic, 4, self);
    await untilLeader(p, topic, 10_000);
    await untilServing(p, topic, [0, 1, 2, 3], 10_000);
    results.push(check('DescribeLogDirs v4: every directory online', dirs.map(([, e]) => e), dirs.map(() => ErrorCode.NONE)));
    const where = async () => {
      const now = await logDirs(p, [{ topic, partitions: [0, 1, 2, 3] }]);
      return new Map(now.flatMap(([dir, , logs]) => logs.map(([, partition, future]) => [`${partition}${future ? ' future' : ''}`, dir])));
    };
    const placed = await where();
    results.push(
      check(
        'a new topic of 4 partitions: each in one directory, and each directory holding some of them',
        [[0, 1, 2, 3].every((i) => placed.has(String(i))), dirs.every(([dir]) => [...placed.values()].includes(dir))],
        [true, true],
      ),
    );
    const only = await logDirs(p, [{ topic, partitions: [1] }]);
    results.push(check('DescribeLogDirs naming one partition lists it alone, in its directory', only.map(([dir, , logs]) => logs.length === 0 || dir === placed.get('1') ? logs : 'elsewhere'), only.map(([dir]) => (dir === placed.get('1') ? [[topic, 1, false]] : []))));

    // Records in partition 0, then a move to the other directory while it serves.
    const from = placed.get('0');
    const to = dirs.map(([dir]) => dir).find((d) => d !== from);
    const produce = async (values) => {
      const res = await p.request(0, 9, { transactionalId: null, acks: 1, timeoutMs: 10_000, topicData: [{ name: topic, partitionData: [{ index: 0, records: goodBatch(values) }] }] });
      return res.responses[0].partitionResponses[0].errorCode;
    };
    results.push(check('Produce 3 records to partition 0', await produce(['a', 'b', 'c']), ErrorCode.NONE));
    results.push(check('AlterReplicaLogDirs v2: partition 0 to the other directory', await alterLogDirs(p, [{ path: to, topics: [{ name: topic, partitions: [0] }] }]), [[topic, 0, ErrorCode.NONE]]));
    const deadline = Date.now() + 20_000;
    let after = await where();
    while ((after.get('0') !== to || after.has('0 future')) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      after = await where();
    }
    results.push(check('  then DescribeLogDirs lists partition 0 in that directory, with no future log left', [after.get('0') === to, after.has('0 future')], [true, false]));
    results.push(check('  Produce 1 more record to partition 0', await produce(['d']), ErrorCode.NONE));
    const [[, fetchError, , records]] = await fetchAll(p, topic, [0]);
    results.push(check('  Fetch from 0 reads all 4 records: [error, offsets]', [fetchError, records.map(([o]) => o)], [ErrorCode.NONE, [0, 1, 2, 3]]));

    // Kafka's answers for what cannot be moved.
    const long = 'x'.repeat(240);
    results.push(
      check(
        'AlterReplicaLogDirs errors: [topic, partition, error]',
        await alterLogDirs(p, [
          { path: `${to}-not-a-log-dir`, topics: [{ name: topic, partitions: [1] }] },
          { path: to, topics: [{ name: `${topic}-missing`, partitions: [0] }, { name: topic, partitions: [0, 99] }, { name: long, partitions: [0] }] },
        ]),
        [
          [topic, 0, ErrorCode.NONE], // already there
          [topic, 1, ErrorCode.LOG_DIR_NOT_FOUND],
          [topic, 99, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
          [`${topic}-missing`, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
          [long, 0, ErrorCode.INVALID_TOPIC_EXCEPTION],
        ].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1])),
      ),
    );
    // In a cluster: a partition whose replica is on another broker has none here to move.
    const { brokers } = await p.request(3, 12, metadataRequest([]));
    const other = brokers.map((b) => b.nodeId).find((id) => id !== self);
    if (other !== undefined) {
      const elsewhere = `${topic}-elsewhere`;
      await createTopic(p, elsewhere, 1, other);
      await untilLeader(p, elsewhere, 10_000);
      results.push(check('a partition with no replica on this broker', await alterLogDirs(p, [{ path: to, topics: [{ name: elsewhere, partitions: [0] }] }]), [[elsewhere, 0, ErrorCode.REPLICA_NOT_AVAILABLE]]));
    }
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

// ---------------------------------------------------------------------------
// group-configs

/** A group's configs as DescribeConfigs v4 answers them: the error, then [name, value, source, type, synonyms] of each. */
async function describeGroupConfigs(p, group, keys = null) {
  const res = await p.request(32, 4, { resources: [{ resourceType: RESOURCE_GROUP, resourceName: group, configurationKeys: keys }], includeSynonyms: true, includeDocumentation: false });
  const r = res.results[0];
  return [r.errorCode, r.errorMessage, r.configs.map((c) => [c.name, c.value, c.configSource, c.isSensitive, c.readOnly, c.configType, c.synonyms.map((x) => [x.name, x.value, x.source])])];
}

/** Kafka 4.4's answer for a group's configs on a broker with the defaults, `own` overriding some (as the group's). */
function expectedGroupConfigs(own = {}) {
  const DEFAULT = 5;
  const GROUP = 8;
  const rows = [
    ['consumer.session.timeout.ms', '45000', 3, 'group.consumer.session.timeout.ms'],
    ['streams.assignor.name', 'sticky', 2, 'group.streams.assignors'],
    ['consumer.assignment.interval.ms', '1000', 3, 'group.consumer.assignment.interval.ms'],
    ['errors.deadletterqueue.copy.record.enable', 'false', 1, null],
    ['share.auto.offset.reset', 'latest', 2, null],
    ['streams.rack.aware.assignment.tags', '', 7, 'group.streams.rack.aware.assignment.tags'],
    ['share.renew.acknowledge.enable', 'true', 1, null],
    ['streams.initial.rebalance.delay.ms', '3000', 3, 'group.streams.initial.rebalance.delay.ms'],
    ['share.session.timeout.ms', '45000', 3, 'group.share.session.timeout.ms'],
    ['streams.assignment.interval.ms', '1000', 3, 'group.streams.assignment.interval.ms'],
    ['share.heartbeat.interval.ms', '5000', 3, 'group.share.heartbeat.interval.ms'],
    ['streams.heartbeat.interval.ms', '5000', 3, 'group.streams.heartbeat.interval.ms'],
    ['share.delivery.count.limit', '5', 3, 'group.share.delivery.count.limit'],
    ['errors.deadletterqueue.topic.name', '', 2, null],
    ['consumer.heartbeat.interval.ms', '5000', 3, 'group.consumer.heartbeat.interval.ms'],
    ['share.record.lock.duration.ms', '30000', 3, 'group.share.record.lock.duration.ms'],
    ['share.assignment.interval.ms', '1000', 3, 'group.share.assignment.interval.ms'],
    ['share.isolation.level', 'read_uncommitted', 2, null],
    ['streams.session.timeout.ms', '45000', 3, 'group.streams.session.timeout.ms'],
    ['share.partition.max.record.locks', '2000', 3, 'group.share.partition.max.record.locks'],
    ['streams.num.standby.replicas', '0', 3, 'group.streams.num.standby.replicas'],
  ];
  return rows.map(([name, dflt, type, broker]) => {
    const fallback = [[broker ?? name, dflt, DEFAULT]];
    const value = own[name];
    return value === undefined
      ? [name, dflt, DEFAULT, false, false, type, fallback]
      : [name, value, GROUP, false, false, type, [[name, value, GROUP], ...fallback]];
  });
}

/** Asks `ask` again (another broker may not have seen a change yet) until it answers `wanted`, for up to 10 s. */
async function until(ask, wanted) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = await ask();
    if (JSON.stringify(got) === JSON.stringify(wanted) || Date.now() > deadline) return got;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Kafka 4.4's GROUP config resource (KIP-848/932/1071 group configs), on a group that does not exist. */
async function groupConfigsScenario(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  try {
    const group = `probe-group-configs-${randomBytes(4).toString('hex')}`;
    const incremental = async (name, configs, validateOnly = false) => {
      const r = await p.request(44, 1, { resources: [{ resourceType: RESOURCE_GROUP, resourceName: name, configs: configs.map(([n, configOperation, value]) => ({ name: n, configOperation, value })) }], validateOnly });
      return [r.responses[0].errorCode, r.responses[0].errorMessage];
    };
    const legacy = async (name, configs) => {
      const r = await p.request(33, 2, { resources: [{ resourceType: RESOURCE_GROUP, resourceName: name, configs: configs.map(([n, value]) => ({ name: n, value })) }], validateOnly: false });
      return [r.responses[0].errorCode, r.responses[0].errorMessage];
    };
    const listed = async () => (await configResources(p, [RESOURCE_GROUP]))[1].some(([, name]) => name === group);
    const internalOverride = ['streams.num.warmup.replicas', '4', 8, false, false, 3, [['streams.num.warmup.replicas', '4', 8], ['group.streams.num.warmup.replicas', '2', 5]]];
    const SET = 0;
    const DELETE = 1;
    const APPEND = 2;

    results.push(check('DescribeConfigs v4 of a group with no configs', await describeGroupConfigs(p, group), [0, '', expectedGroupConfigs()]));
    results.push(check('DescribeConfigs v4 of the group named ""', (await describeGroupConfigs(p, ''))[0], ErrorCode.INVALID_REQUEST));
    const both = [['share.auto.offset.reset', SET, 'earliest'], ['share.record.lock.duration.ms', SET, '15000']];
    results.push(check('IncrementalAlterConfigs v1 validate only', await incremental(group, both, true), [0, null]));
    results.push(check('nothing changed by it', await describeGroupConfigs(p, group, ['share.auto.offset.reset']), [0, '', expectedGroupConfigs().filter(([n]) => n === 'share.auto.offset.reset')]));
    results.push(check('IncrementalAlterConfigs v1 SET of two configs', await incremental(group, both), [0, null]));
    const own = { 'share.auto.offset.reset': 'earliest', 'share.record.lock.duration.ms': '15000' };
    results.push(check('DescribeConfigs v4 of the group with them', await until(() => describeGroupConfigs(p, group), [0, '', expectedGroupConfigs(own)]), [0, '', expectedGroupConfigs(own)]));
    results.push(check('ListConfigResources v1 lists the group', await until(listed, true), true));
    // An internal config is described only when the group sets it, ahead of the rest.
    results.push(check('IncrementalAlterConfigs v1 SET of an internal config', await incremental(group, [['streams.num.warmup.replicas', SET, '4']]), [0, null]));
    results.push(check('DescribeConfigs v4 with it', await until(() => describeGroupConfigs(p, group), [0, '', [internalOverride, ...expectedGroupConfigs(own)]]), [0, '', [internalOverride, ...expectedGroupConfigs(own)]]));
    results.push(check('IncrementalAlterConfigs v1 DELETE of it', await incremental(group, [['streams.num.warmup.replicas', DELETE, null]]), [0, null]));
    results.push(check('DescribeConfigs v4 without it', (await until(() => describeGroupConfigs(p, group), [0, '', expectedGroupConfigs(own)]))[2].length, 21));
    const refusals = [
      ['APPEND', group, [['share.delivery.count.limit', APPEND, '1']], [ErrorCode.INVALID_CONFIG, "Can't APPEND to key share.delivery.count.limit because its type is not LIST."]],
      ['a value outside the broker\'s bounds', group, [['share.record.lock.duration.ms', SET, '1000']], [ErrorCode.INVALID_CONFIG, 'share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.']],
      ['a value of the wrong type', group, [['share.delivery.count.limit', SET, 'x']], [ErrorCode.INVALID_CONFIG, 'Invalid value x for configuration share.delivery.count.limit: Not a number of type INT']],
      ['a session timeout and heartbeat interval at the ends of their bounds', group, [['share.session.timeout.ms', SET, '45000'], ['share.heartbeat.interval.ms', SET, '15000']], [0, null]],
      ['an unknown name', group, [['no.such.group.config', SET, '1']], [ErrorCode.INVALID_CONFIG, 'Unknown group config name: no.such.group.config']],
      ['a streams assignor the broker has not', group, [['streams.assignor.name', SET, 'greedy']], [ErrorCode.INVALID_CONFIG, "streams.assignor.name 'greedy' is not a registered task assignor. Registered assignors are: [sticky]."]],
      ['the group named ""', '', [['share.isolation.level', SET, 'read_committed']], [ErrorCode.INVALID_REQUEST, 'Default group resources are not allowed.']],
    ];
    for (const [what, name, configs, wanted] of refusals) results.push(check(`IncrementalAlterConfigs v1 with ${what}`, await incremental(name, configs, true), wanted));
    results.push(check('AlterConfigs v2 replacing every config', await legacy(group, [['share.isolation.level', 'read_committed']]), [0, null]));
    const committed = { 'share.isolation.level': 'read_committed' };
    results.push(check('DescribeConfigs v4 after it', await until(() => describeGroupConfigs(p, group), [0, '', expectedGroupConfigs(committed)]), [0, '', expectedGroupConfigs(committed)]));
    // The group comes into being with a commit of its own, and is deleted: its configs stay.
    const topic = `${group}-t`;
    await createTopic(p, topic, 1);
    await untilLeader(p, topic, 10_000);
    const c = await coordinatorOf(p, group);
    try {
      const commit = async () =>
        (
          await c.request(8, 9, {
            groupId: group,
            generationIdOrMemberEpoch: -1,
            memberId: '',
            groupInstanceId: null,
            retentionTimeMs: -1n,
            topics: [{ name: topic, topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 0n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
          })
        ).topics[0].partitions[0].errorCode;
      results.push(check('OffsetCommit v9 of the group, alone', await until(commit, 0), 0));
      results.push(check('DeleteGroups v2 of the group', (await c.request(42, 2, { groupsNames: [group] })).results[0].errorCode, 0));
    } finally {
      c.close();
    }
    results.push(check('DescribeConfigs v4 after the group\'s deletion', await describeGroupConfigs(p, group, ['share.isolation.level']), [0, '', expectedGroupConfigs(committed).filter(([n]) => n === 'share.isolation.level')]));
    results.push(check('ListConfigResources v1 lists it still', await listed(), true));
    results.push(check('IncrementalAlterConfigs v1 DELETE of the last one', await incremental(group, [['share.isolation.level', DELETE, null]]), [0, null]));
    results.push(check('ListConfigResources v1 no longer lists the group', await until(listed, false), false));
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

// broker-configs

/** A broker resource's configs as DescribeConfigs v4 answers them: the error, then [name, value, source, readOnly, sensitive, type, synonyms] of each. */
async function describeBrokerConfigs(p, broker, keys) {
  const res = await p.request(32, 4, { resources: [{ resourceType: RESOURCE_BROKER, resourceName: broker, configurationKeys: keys }], includeSynonyms: true, includeDocumentation: false });
  const r = res.results[0];
  return [r.errorCode, r.configs.map((c) => [c.name, c.value, c.configSource, c.readOnly, c.isSensitive, c.configType, c.synonyms.map((x) => [x.name, x.value, x.source])])];
}

/**
 * Dynamic broker configs (KIP-226) as Kafka 4.4 takes them: per-broker and cluster-wide keys,
 * the changes it refuses and with which words, and how DescribeConfigs shows each level, on
 * keys neither broker kind sets at start. Everything set is deleted again at the end.
 */
async function brokerConfigsScenario(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  const id = String(await connectedBrokerId(p, bootstrap));
  const SET = 0;
  const DELETE = 1;
  const incremental = async (name, configs, validateOnly = false) => {
    const r = await p.request(44, 1, { resources: [{ resourceType: RESOURCE_BROKER, resourceName: name, configs: configs.map(([n, configOperation, value]) => ({ name: n, configOperation, value })) }], validateOnly });
    return [r.responses[0].errorCode, r.responses[0].errorMessage];
  };
  const legacy = async (name, configs, validateOnly = false) => {
    const r = await p.request(33, 2, { resources: [{ resourceType: RESOURCE_BROKER, resourceName: name, configs: configs.map(([n, value]) => ({ name: n, value })) }], validateOnly });
    return [r.responses[0].errorCode, r.responses[0].errorMessage];
  };
  const KEYS = ['log.retention.ms', 'log.retention.hours', 'message.max.bytes', 'log.cleaner.threads', 'sasl.kerberos.min.time.before.relogin'];
  const DEFAULT = 5;
  const DYNAMIC_DEFAULT = 3;
  const DYNAMIC_BROKER = 2;
  const defaults = [
    ['log.retention.ms', null, DEFAULT, false, false, 5, []],
    ['log.retention.hours', '168', DEFAULT, true, false, 3, [['log.retention.hours', '168', DEFAULT]]],
    ['message.max.bytes', '1048588', DEFAULT, false, false, 3, [['message.max.bytes', '1048588', DEFAULT]]],
    ['log.cleaner.threads', '1', DEFAULT, false, false, 3, [['log.cleaner.threads', '1', DEFAULT]]],
    ['sasl.kerberos.min.time.before.relogin', '60000', DEFAULT, false, false, 5, [['sasl.kerberos.min.time.before.relogin', '60000', DEFAULT]]],
  ];
  const sorted = (answer) => [answer[0], [...answer[1]].sort((a, b) => KEYS.indexOf(a[0]) - KEYS.indexOf(b[0]))];
  const describe = async (name = id) => sorted(await describeBrokerConfigs(p, name, KEYS));
  try {
    results.push(check(`DescribeConfigs v4 of broker ${id}, nothing set`, await describe(), [0, defaults]));
    results.push(check('DescribeConfigs v4 of the cluster default, nothing set', await describe(''), [0, []]));

    const INVALID_REQUEST = ErrorCode.INVALID_REQUEST;
    const refusals = [
      ['a read-only config', id, [['num.partitions', SET, '3']], [INVALID_REQUEST, 'Cannot update these configs dynamically: [num.partitions]']],
      ['a read-only config at the cluster default', '', [['num.partitions', SET, '3']], [INVALID_REQUEST, 'Cannot update these configs dynamically: [num.partitions]']],
      ['a per-broker config at the cluster default', '', [['sasl.kerberos.min.time.before.relogin', SET, '58000']], [INVALID_REQUEST, 'Cannot update these configs at default cluster level, broker id must be specified: [sasl.kerberos.min.time.before.relogin]']],
      ['a TLS config without a listener prefix', id, [['ssl.keystore.location', SET, '/nowhere.p12']], [INVALID_REQUEST, 'These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]']],
      ['a value below the minimum', id, [['message.max.bytes', SET, '-1']], [INVALID_REQUEST, 'Invalid value -1 for configuration message.max.bytes: Value must be at least 0']],
      ['a value of the wrong type', '', [['log.cleaner.threads', SET, 'many']], [INVALID_REQUEST, 'Invalid value many for configuration log.cleaner.threads: Not a number of type INT']],
      ['another broker\'s id', String(Number(id) + 100), [['log.cleaner.threads', SET, '2']], [INVALID_REQUEST, `Unexpected broker id, expected ${id}, but received ${Number(id) + 100}`]],
      ['a name that is not a number', 'one', [['log.cleaner.threads', SET, '2']], [INVALID_REQUEST, 'Node id must be an integer, but it is: one']],
    ];
    for (const [what, name, configs, wanted] of refusals) results.push(check(`IncrementalAlterConfigs v1 of ${what}`, await incremental(name, configs, true), wanted));

    results.push(check(`IncrementalAlterConfigs v1 of a per-broker config on broker ${id}`, await incremental(id, [['sasl.kerberos.min.time.before.relogin', SET, '58000']]), [0, null]));
    results.push(check('IncrementalAlterConfigs v1 of cluster-wide configs at the cluster default', await incremental('', [['log.retention.ms', SET, '3600000'], ['log.cleaner.threads', SET, '2']]), [0, null]));
    results.push(check(`IncrementalAlterConfigs v1 of a cluster-wide config on broker ${id}`, await incremental(id, [['message.max.bytes', SET, '2000000']]), [0, null]));
    const set = [
      ['log.retention.ms', '3600000', DYNAMIC_DEFAULT, false, false, 5, [['log.retention.ms', '3600000', DYNAMIC_DEFAULT], ['log.retention.hours', '168', DEFAULT]]],
      ['log.retention.hours', '168', DEFAULT, true, false, 3, [['log.retention.hours', '168', DEFAULT]]],
      ['message.max.bytes', '2000000', DYNAMIC_BROKER, false, false, 3, [['message.max.bytes', '2000000', DYNAMIC_BROKER], ['message.max.bytes', '1048588', DEFAULT]]],
      ['log.cleaner.threads', '2', DYNAMIC_DEFAULT, false, false, 3, [['log.cleaner.threads', '2', DYNAMIC_DEFAULT], ['log.cleaner.threads', '1', DEFAULT]]],
      ['sasl.kerberos.min.time.before.relogin', '58000', DYNAMIC_BROKER, false, false, 5, [['sasl.kerberos.min.time.before.relogin', '58000', DYNAMIC_BROKER], ['sasl.kerberos.min.time.before.relogin', '60000', DEFAULT]]],
    ];
    results.push(check(`DescribeConfigs v4 of broker ${id} with them`, await until(describe, [0, set]), [0, set]));
    const atDefault = [
      ['log.retention.ms', '3600000', DYNAMIC_DEFAULT, false, false, 5, [['log.retention.ms', '3600000', DYNAMIC_DEFAULT]]],
      ['log.cleaner.threads', '2', DYNAMIC_DEFAULT, false, false, 3, [['log.cleaner.threads', '2', DYNAMIC_DEFAULT]]],
    ];
    results.push(check('DescribeConfigs v4 of the cluster default with them', await until(() => describe(''), [0, atDefault]), [0, atDefault]));

    // A topic without its own retention.ms takes the cluster default.
    const topic = `probe-broker-configs-${randomBytes(4).toString('hex')}`;
    await createTopic(p, topic, 1);
    const retention = async () => {
      const r = (await p.request(32, 4, { resources: [{ resourceType: RESOURCE_TOPIC, resourceName: topic, configurationKeys: ['retention.ms'] }], includeSynonyms: true, includeDocumentation: false })).results[0];
      return [r.errorCode, r.configs.map((c) => [c.name, c.value, c.configSource, c.synonyms.map((x) => [x.name, x.value, x.source])])];
    };
    const wantedRetention = [0, [['retention.ms', '3600000', DYNAMIC_DEFAULT, [['log.retention.ms', '3600000', DYNAMIC_DEFAULT], ['log.retention.hours', '168', DEFAULT]]]]];
    results.push(check('DescribeConfigs v4 of a topic without retention.ms', await until(retention, wantedRetention), wantedRetention));

    // AlterConfigs replaces the level's whole set: the per-broker config goes, message.max.bytes stays.
    results.push(check(`AlterConfigs v2 of broker ${id}`, await legacy(id, [['message.max.bytes', '2000000']]), [0, null]));
    const replaced = set.map((row) => (row[0] === 'sasl.kerberos.min.time.before.relogin' ? defaults[4] : row));
    results.push(check(`DescribeConfigs v4 of broker ${id} after it`, await until(describe, [0, replaced]), [0, replaced]));
    results.push(
      check('AlterConfigs v2 of the cluster default with a per-broker config', await legacy('', [['sasl.kerberos.min.time.before.relogin', '58000']], true), [
        INVALID_REQUEST,
        'Cannot update these configs at default cluster level, broker id must be specified: [sasl.kerberos.min.time.before.relogin]',
      ]),
    );
  } finally {
    await incremental(id, [['message.max.bytes', DELETE, null], ['sasl.kerberos.min.time.before.relogin', DELETE, null]]).catch(() => {});
    await incremental('', [['log.retention.ms', DELETE, null], ['log.cleaner.threads', DELETE, null]]).catch(() => {});
  }
  try {
    results.push(check(`DescribeConfigs v4 of broker ${id} once everything is deleted`, await until(describe, [0, defaults]), [0, defaults]));
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

// sasl-rules

/** The SASL requests on a listener without SASL, as Kafka 4.4 answers them. */
async function saslRules(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  try {
    for (const v of [0, 1]) {
      const r = await p.request(17, v, { mechanism: 'PLAIN' });
      results.push(check(`SaslHandshake v${v} on a PLAINTEXT listener`, [r.errorCode, r.mechanisms], [ErrorCode.ILLEGAL_SASL_STATE, []]));
    }
    for (const v of [0, 1, 2]) {
      const r = await p.request(36, v, { authBytes: Buffer.from('\u0000user\u0000password') });
      results.push(
        check(`SaslAuthenticate v${v} on a PLAINTEXT listener`, [r.errorCode, r.errorMessage], [ErrorCode.ILLEGAL_SASL_STATE, 'SaslAuthenticate request received after successful authentication']),
      );
    }
    // The connection is still served.
    const m = await p.request(3, 12, metadataRequest([]));
    results.push(check('Metadata v12 after them', m.brokers.length > 0, true));
  } finally {
    p.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

// share-group-rules

const SHARE_LOCK_MS = 15_000;
const ACCEPT = 1;
const RELEASE = 2;
const REJECT = 3;

/** Produces `values` as one batch to partition 0 of `topic` (acks=-1); fails unless appended at 0. */
async function produceOne(p, topic, values) {
  const res = await p.request(0, 9, { transactionalId: null, acks: -1, timeoutMs: 10_000, topicData: [{ name: topic, partitionData: [{ index: 0, records: goodBatch(values) }] }] });
  const r = res.responses[0].partitionResponses[0];
  expect(r.errorCode === ErrorCode.NONE && Number(r.baseOffset) === 0, `Produce to ${topic}: error ${r.errorCode} at ${r.baseOffset}`);
}

/**
 * Kafka 4.4's answers around one share group (KIP-932), raw: the share APIs' version ranges and
 * share.version; group configs (IncrementalAlterConfigs on the GROUP resource, a lock duration out
 * of range refused); FindCoordinator of a share-partition key; ShareGroupHeartbeat v1 request
 * checks, join, fencing, unknown member, leave; ShareGroupDescribe v1; ShareFetch v2 and
 * ShareAcknowledge v2 session epochs, acknowledgements of records not acquired or past the
 * acquired ones, release up to the delivery limit, reject, an acquisition lock that ran out, and
 * the session's close.
 */
async function shareGroupRules(bootstrap) {
  const p = await Probe.connect(bootstrap);
  const results = [];
  let c = null;
  try {
    const suffix = randomBytes(4).toString('hex');
    const topic = `sg-rules-${suffix}`;
    const group = `sg-rules-${suffix}`;
    const member = randomBytes(16).toString('base64url').slice(0, 22);

    const av = await p.request(18, 3, { clientSoftwareName: 'wire-probe', clientSoftwareVersion: '1.0' });
    const ranges = [76, 77, 78, 79].map((k) => av.apiKeys.find((x) => x.apiKey === k)).map((x) => (x ? [x.apiKey, x.minVersion, x.maxVersion] : null));
    results.push(check('ApiVersions: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge [key, min, max]', ranges, [[76, 1, 1], [77, 1, 1], [78, 1, 2], [79, 1, 2]]));
    results.push(check('finalized share.version', av.finalizedFeatures.find((f) => f.name === 'share.version')?.maxVersionLevel ?? null, 2));
    // Without them nothing below can be asked.
    expect(ranges.every((r) => r !== null), `the broker does not advertise the share APIs (${ranges.map((r, i) => r ?? `${76 + i} missing`).join(', ')})`);

    // The topic's one partition on this connection's broker: ShareFetch and ShareAcknowledge go to its leader.
    const self = await connectedBrokerId(p, bootstrap);
    await createTopic(p, topic, 1, self);
    const topicId = (await untilLeader(p, topic, 10_000)).topicId;
    await untilServing(p, topic, [0], 10_000);
    await produceOne(p, topic, ['r0', 'r1', 'r2', 'r3']);

    const alter = async (entries) => {
      const res = await p.request(44, 1, { resources: [{ resourceType: 32, resourceName: group, configs: entries.map(([name, value]) => ({ name, configOperation: 0, value })) }], validateOnly: false });
      return [res.responses[0].errorCode, res.responses[0].errorMessage];
    };
    results.push(check('IncrementalAlterConfigs of the group: share.auto.offset.reset=earliest, share.delivery.count.limit=2, share.record.lock.duration.ms=15000',
      await alter([['share.auto.offset.reset', 'earliest'], ['share.delivery.count.limit', '2'], ['share.record.lock.duration.ms', String(SHARE_LOCK_MS)]]), [0, null]));
    results.push(check('share.record.lock.duration.ms=1000', await alter([['share.record.lock.duration.ms', '1000']]),
      [ErrorCode.INVALID_CONFIG, 'share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.']));
    results.push(check('share.delivery.count.limit=1', await alter([['share.delivery.count.limit', '1']]),
      [ErrorCode.INVALID_CONFIG, 'Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2']));
    const badKey = (await p.request(10, 6, { key: '', keyType: 2, coordinatorKeys: [group] })).coordinators[0];
    results.push(check('FindCoordinator v6 of a share key that is not group:topicId:partition', badKey.errorCode, ErrorCode.INVALID_REQUEST));

    c = await coordinatorOf(p, group);
    const hb = (memberId, memberEpoch, subscribedTopicNames = null) => c.request(76, 1, { groupId: group, memberId, memberEpoch, rackId: null, subscribedTopicNames });
    const brief = (r) => [r.errorCode, r.errorMessage];
    // A coordinator that has just been created (a fresh broker's first group) loads for a moment.
    const loading = [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE];
    let missing = await hb(member, 3);
    for (let i = 0; i < 100 && loading.includes(missing.errorCode); i++) {
      await new Promise((r) => setTimeout(r, 200));
      missing = await hb(member, 3);
    }
    results.push(check('ShareGroupHeartbeat to a group that does not exist', brief(missing), [ErrorCode.GROUP_ID_NOT_FOUND, `Share group ${group} not found.`]));
    results.push(check('first heartbeat without topics', brief(await hb(member, 0, null)), [ErrorCode.INVALID_REQUEST, 'SubscribedTopicNames must be set in first request.']));
    results.push(check('first heartbeat with an empty topic list', brief(await hb(member, 0, [])), [ErrorCode.INVALID_REQUEST, 'SubscribedTopicNames must be set in first request.']));
    results.push(check('first heartbeat without a member id', (await hb('', 0, [topic])).errorCode, ErrorCode.INVALID_REQUEST));
    const joined = await hb(member, 0, [topic]);
    results.push(check('join: [error, member, epoch, interval]', [joined.errorCode, joined.memberId, joined.memberEpoch, joined.heartbeatIntervalMs], [0, member, 2, 5000]));
    // The assignment comes with a later heartbeat, once the coordinator has computed it.
    let epoch = joined.memberEpoch;
    let assigned = joined.assignment?.topicPartitions ?? [];
    const deadline = Date.now() + 15_000;
    while (!assigned.some((t) => t.topicId === topicId && t.partitions.includes(0)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      const r = await hb(member, epoch);
      expect(r.errorCode === ErrorCode.NONE, `heartbeat at epoch ${epoch}: error ${r.errorCode} ${r.errorMessage}`);
      epoch = r.memberEpoch;
      if (r.assignment) assigned = r.assignment.topicPartitions;
    }
    results.push(check('the member is assigned the partition: [epoch, assignment]', [epoch, assigned.map((t) => [t.topicId === topicId, t.partitions])], [3, [[true, [0]]]]));
    results.push(check('heartbeat of an unknown member', brief(await hb('BBBBBBBBBBBBBBBBBBBBBQ', epoch)), [ErrorCode.UNKNOWN_MEMBER_ID, `Member BBBBBBBBBBBBBBBBBBBBBQ is not a member of group ${group}.`]));
    results.push(check('heartbeat with a greater epoch', brief(await hb(member, epoch + 6)),
      [ErrorCode.FENCED_MEMBER_EPOCH, `The share group member has a greater member epoch (${epoch + 6}) than the one known by the group coordinator (${epoch}). The member must abandon all its partitions and rejoin.`]));
    results.push(check('heartbeat with a smaller epoch', brief(await hb(member, epoch - 2)),
      [ErrorCode.FENCED_MEMBER_EPOCH, `The share group member has a smaller member epoch (${epoch - 2}) than the one known by the group coordinator (${epoch}), and it does not match the previous member epoch (${epoch - 1}). The member must abandon all its partitions and rejoin.`]));

    const describe = async (g) => {
      const d = (await c.request(77, 1, { groupIds: [g], includeAuthorizedOperations: false })).groups[0];
      return [d.errorCode, d.errorMessage, d.groupState, d.groupEpoch, d.assignmentEpoch, d.assignorName,
        d.members.map((m) => [m.memberId, m.memberEpoch, m.clientId, m.clientHost, m.subscribedTopicNames, m.assignment.topicPartitions.map((t) => [t.topicName, t.partitions])])];
    };
    const elsewhere = await coordinatorOf(p, `${group}-none`);
    const none = (await elsewhere.request(77, 1, { groupIds: [`${group}-none`], includeAuthorizedOperations: false })).groups[0];
    elsewhere.close();
    results.push(check('ShareGroupDescribe of a missing group (at its coordinator): [error, message]', [none.errorCode, none.errorMessage], [ErrorCode.GROUP_ID_NOT_FOUND, `Group ${group}-none not found.`]));
    results.push(check('ShareGroupDescribe', await describe(group), [0, null, 'Stable', 3, 3, 'simple', [[member, 3, 'wire-probe', '/127.0.0.1', [topic], [[topic, [0]]]]]]));
    const asConsumer = (await c.request(69, 1, { groupIds: [group], includeAuthorizedOperations: false })).groups[0];
    results.push(check('ConsumerGroupDescribe of the share group', [asConsumer.errorCode, asConsumer.errorMessage], [ErrorCode.GROUP_ID_NOT_FOUND, `Group ${group} is not a consumer group.`]));

    // ShareFetch and ShareAcknowledge v2 at the partition's leader.
    let e = 0;
    // A fetch waits up to 3 s for records, so that it ends by acquiring them rather than by its wait
    // running out: Kafka can acquire records for a fetch it has just answered empty at the end of
    // its wait, and they are then held until their lock runs out.
    const sf = (sessionEpoch, acks = [], memberId = member, maxWaitMs = 3_000) => p.request(78, 2, {
      groupId: group, memberId, shareSessionEpoch: sessionEpoch, maxWaitMs, minBytes: 1, maxBytes: 1 << 20, maxRecords: 500, batchSize: 500,
      shareAcquireMode: 0, isRenewAck: false, topics: [{ topicId, partitions: [{ partitionIndex: 0, partitionMaxBytes: 0, acknowledgementBatches: acks }] }], forgottenTopicsData: [],
    });
    const sa = (sessionEpoch, acks) => p.request(79, 2, { groupId: group, memberId: member, shareSessionEpoch: sessionEpoch, isRenewAck: false, topics: [{ topicId, partitions: [{ partitionIndex: 0, acknowledgementBatches: acks }] }] });
    // A fetch that should acquire something is repeated (each at the next session epoch) until it
    // does, for up to 5 s: Kafka may answer a short wait before the partition's read is done.
    const fetchSome = async () => {
      const until = Date.now() + 5_000;
      for (;;) {
        const r = fetched(await sf(e++));
        if (r[0] !== 0 || r[2].some(([, , a]) => a.length > 0) || Date.now() > until) return r;
      }
    };
    const ack = (first, last, types) => ({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: types });
    const top = (r) => [r.errorCode, r.responses.length];
    const fetched = (r) => [r.errorCode, r.acquisitionLockTimeoutMs, r.responses.flatMap((t) => t.partitions.map((x) => [x.partitionIndex, x.errorCode, x.acquiredRecords.map((a) => [Number(a.firstOffset), Number(a.lastOffset), a.deliveryCount])]))];
    const acked = (r) => [r.errorCode, r.responses.flatMap((t) => t.partitions.map((x) => [x.partitionIndex, x.errorCode, x.errorMessage]))];
    results.push(check('ShareFetch at session epoch 5 without a session: [error, responses]', top(await sf(5)), [ErrorCode.SHARE_SESSION_NOT_FOUND, 0]));
    results.push(check('ShareAcknowledge at session epoch 5 without a session', top(await sa(5, [ack(0, 0, [ACCEPT])])), [ErrorCode.SHARE_SESSION_NOT_FOUND, 0]));
    results.push(check('ShareAcknowledge at session epoch 0', top(await sa(0, [ack(0, 0, [ACCEPT])])), [ErrorCode.INVALID_SHARE_SESSION_EPOCH, 0]));
    results.push(check('ShareFetch opening a session (epoch 0) with acknowledgements', top(await sf(0, [ack(0, 0, [ACCEPT])])), [ErrorCode.INVALID_REQUEST, 0]));
    // The share-partition is set up on its first fetch (on a fresh cluster with __share_group_state
    // made first); the records come with a fetch after that.
    let first = fetched(await sf(e++));
    const settled = Date.now() + 20_000;
    while (first[0] === 0 && first[2].every(([, , a]) => a.length === 0) && Date.now() < settled) first = fetched(await sf(e++));
    results.push(check('ShareFetch: the 4 records acquired: [error, lock ms, [partition, error, [first, last, delivery count]]]', first, [0, SHARE_LOCK_MS, [[0, 0, [[0, 3, 1]]]]]));
    results.push(check('ShareAcknowledge past the acquired records', acked(await sa(e++, [ack(10, 10, [ACCEPT])])),
      [0, [[0, ErrorCode.INVALID_REQUEST, 'Batch record not found. The first offset in request is past acquired records.']]]));
    results.push(check('ShareAcknowledge at a session epoch ahead', top(await sa(e + 5, [ack(0, 0, [ACCEPT])])), [ErrorCode.INVALID_SHARE_SESSION_EPOCH, 0]));
    results.push(check('release 0, accept 1, reject 2 (3 stays acquired)', acked(await sa(e++, [ack(0, 2, [RELEASE, ACCEPT, REJECT])])), [0, [[0, 0, null]]]));
    results.push(check('ShareFetch: 0 again, delivery count 2', await fetchSome(), [0, SHARE_LOCK_MS, [[0, 0, [[0, 0, 2]]]]]));
    results.push(check('release 0 at the delivery limit (2)', acked(await sa(e++, [ack(0, 0, [RELEASE])])), [0, [[0, 0, null]]]));
    const after = fetched(await sf(e++, [], member, 1_000));
    results.push(check('ShareFetch: nothing (0 archived, 1 accepted, 2 rejected, 3 acquired)', after[2].flatMap(([, , a]) => a), []));
    // Offsets 0 to 2 are all done, so the share-partition's start offset is 3 now: Kafka takes an
    // acknowledgement below it without an error.
    results.push(check('accept 1 again (below the start offset)', acked(await sa(e++, [ack(1, 1, [ACCEPT])])), [0, [[0, 0, null]]]));
    results.push(check('ShareFetch as another member id (no heartbeat ever): [error, acquired]', fetched(await sf(0, [], 'CCCCCCCCCCCCCCCCCCCCCQ', 1_000)).filter((_, i) => i !== 1), [0, [[0, 0, []]]]));
    // Record 3's lock runs out.
    await new Promise((r) => setTimeout(r, SHARE_LOCK_MS + 1_500));
    results.push(check('accept 3 after its acquisition lock ran out', acked(await sa(e++, [ack(3, 3, [ACCEPT])])),
      [0, [[0, ErrorCode.INVALID_RECORD_STATE, 'The offset cannot be acknowledged. The offset is not acquired.']]]));
    // Whether a fetch now gets 3 again is not checked here: on a busy 3-node Kafka the record is at
    // times acquired by a fetch that is answered without it (the java-client scenario checks the
    // redelivery). The session is closed without acknowledging anything.
    const closed = await p.request(79, 2, { groupId: group, memberId: member, shareSessionEpoch: -1, isRenewAck: false, topics: [] });
    results.push(check('ShareAcknowledge closing the session (epoch -1), nothing acknowledged: [error, responses]', top(closed), [0, 0]));
    results.push(check('ShareFetch in the closed session', top(await sf(e++)), [ErrorCode.SHARE_SESSION_NOT_FOUND, 0]));

    const left = await hb(member, -1);
    results.push(check('leave: [error, member, epoch, interval]', [left.errorCode, left.memberId, left.memberEpoch, left.heartbeatIntervalMs], [0, member, -1, 0]));
    results.push(check('ShareGroupDescribe after the leave: [state, group epoch, assignment epoch, members]', (await describe(group)).slice(2, 5).concat([(await describe(group))[6].length]), ['Empty', 4, 4, 0]));
  } finally {
    p.close();
    c?.close();
  }
  expect(results.every(Boolean), `${results.filter((r) => !r).length} of ${results.length} rules differ from Kafka's`);
}

runScenarios({
  label: 'wire-probe',
  banner: 'wire-probe (gregor codec)',
  scenarios: {
    'metadata-rules': metadataRules,
    'corrupt-batch': corruptBatch,
    'consumer-group-rules': consumerGroupRules,
    'feature-rules': featureRules,
    'topic-partitions': topicPartitions,
    'log-dirs': logDirsScenario,
    'group-configs': groupConfigsScenario,
    'broker-configs': brokerConfigsScenario,
    'sasl-rules': saslRules,
    'share-group-rules': shareGroupRules,
  },
});

/**
 * Group administration end to end: a real broker on 127.0.0.1, a group of two
 * kafkajs consumers that has consumed and committed a 3-partition topic, and
 * the admin clients of kafkajs 2.2.4 (ListGroups v2, DescribeGroups v2,
 * OffsetFetch v4, DeleteGroups v1, ListOffsets v3; setOffsets/resetOffsets
 * through a consumer of the group) and of kafka-python 2.0.2 from
 * /usr/bin/python3 (ListGroups v2, DescribeGroups v3, OffsetFetch v3,
 * DeleteGroups v1; offsets reset by a consumer outside the membership,
 * OffsetCommit v2 with generation -1). Each client lists the group,
 * describes it while its members are active (client ids, hosts, decoded
 * assignments) and once they have left (Empty), fetches the committed
 * offsets, computes the lag from ListOffsets and checks it against the
 * messages not yet consumed, moves the offsets and sees a new consumer start
 * from them, and deletes the group: refused with NON_EMPTY_GROUP while a
 * member is in it, done once it is empty.
 */
import { AssignerProtocol, Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QUICK_GROUP_CONFIG, runPython, TempBrokers, waitUntil } from './test-utils.js';

const TOPIC = 'ledger';
const PARTITIONS = [0, 1, 2];

const brokers = new TempBrokers('gregor-group-admin-', QUICK_GROUP_CONFIG);
const clients: { disconnect(): Promise<void> }[] = [];

afterEach(async () => {
  for (const c of clients.splice(0).reverse()) await c.disconnect().catch(() => {});
  await brokers.stopAll();
});

async function broker(): Promise<string> {
  return (await brokers.start()).bootstrap;
}

function kafkaFor(bootstrap: string, clientId: string): Kafka {
  return new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 } });
}

interface Member {
  readonly consumer: Consumer;
  /** Partition -> offsets read, in order. */
  readonly read: Map<number, number[]>;
}

async function startMember(bootstrap: string, groupId: string, clientId: string): Promise<Member> {
  const consumer = kafkaFor(bootstrap, clientId).consumer({
    groupId,
    sessionTimeout: 10_000,
    rebalanceTimeout: 10_000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
  });
  clients.push(consumer);
  const member: Member = { consumer, read: new Map() };
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  await consumer.run({
    autoCommitThreshold: 1,
    eachMessage: async ({ partition, message }) => {
      const list = member.read.get(partition) ?? [];
      list.push(Number(message.offset));
      member.read.set(partition, list);
    },
  });
  return member;
}

async function leave(member: Member): Promise<void> {
  await member.consumer.disconnect();
  clients.splice(clients.indexOf(member.consumer), 1);
}

/** Partition -> committed offset (as a number; -1 for none). */
async function committed(admin: Admin, groupId: string): Promise<Map<number, number>> {
  const [t] = await admin.fetchOffsets({ groupId, topics: [TOPIC] });
  return new Map(t!.partitions.map((p) => [p.partition, Number(p.offset)]));
}

/** Partition -> log end offset (ListOffsets, latest). */
async function logEnd(admin: Admin): Promise<Map<number, number>> {
  return new Map((await admin.fetchTopicOffsets(TOPIC)).map((p) => [p.partition, Number(p.high)]));
}

async function produce(bootstrap: string, perPartition: number, label: string): Promise<void> {
  const producer = kafkaFor(bootstrap, 'producer').producer();
  await producer.connect();
  try {
    const messages = PARTITIONS.flatMap((partition) => Array.from({ length: perPartition }, (_, i) => ({ partition, value: `${label}-${partition}-${i}` })));
    await producer.send({ topic: TOPIC, acks: -1, messages });
  } finally {
    await producer.disconnect();
  }
}

/**
 * The scenario both admin clients start from: 30 messages (10 a partition)
 * consumed and committed by two kafkajs consumers that are still members.
 */
async function consumedGroup(bootstrap: string, groupId: string): Promise<{ admin: Admin; members: Member[] }> {
  const admin = kafkaFor(bootstrap, 'group-admin').admin();
  clients.push(admin);
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 3 }], waitForLeaders: true });
  await produce(bootstrap, 10, 'first');
  const members = [await startMember(bootstrap, groupId, 'member-a'), await startMember(bootstrap, groupId, 'member-b')];
  await waitUntil(
    async () => {
      const offsets = await committed(admin, groupId);
      return PARTITIONS.every((p) => offsets.get(p) === 10);
    },
    20_000,
    'the group to consume and commit every message',
  );
  // Both members hold partitions: the second one's join has completed.
  await waitUntil(
    async () => {
      const [g] = (await admin.describeGroups([groupId])).groups;
      return g!.state === 'Stable' && g!.members.length === 2 && g!.members.every((m) => m.memberAssignment.length > 0);
    },
    20_000,
    'the group to settle with both members assigned',
  );
  return { admin, members };
}

const hasKafkaPython = await runPython('import kafka', []).then((r) => r.code === 0, () => false);

describe('group administration with kafkajs', () => {
  it('lists, describes, fetches offsets, computes lag, sets and resets offsets, deletes the group', async () => {
    const bootstrap = await broker();
    const GROUP = 'kafkajs-admin-group';
    const { admin, members } = await consumedGroup(bootstrap, GROUP);

    const listed = await admin.listGroups();
    expect(listed.groups).toContainEqual({ groupId: GROUP, protocolType: 'consumer' });

    // Active members: client ids, hosts, and assignments that split the three partitions.
    const [active] = (await admin.describeGroups([GROUP])).groups;
    expect(active).toMatchObject({ groupId: GROUP, state: 'Stable', protocolType: 'consumer', protocol: 'RoundRobinAssigner' });
    expect(active!.members.map((m) => m.clientId).sort()).toEqual(['member-a', 'member-b']);
    for (const m of active!.members) {
      expect(m.clientHost).toBe('/127.0.0.1');
      expect(m.memberId.startsWith(`${m.clientId}-`)).toBe(true);
    }
    const held = active!.members.map((m) => AssignerProtocol.MemberAssignment.decode(m.memberAssignment)!.assignment[TOPIC] ?? []);
    expect(held.every((ps) => ps.length > 0)).toBe(true);
    expect(held.flat().sort()).toEqual(PARTITIONS);

    // A group with members cannot be deleted.
    await expect(admin.deleteGroups([GROUP])).rejects.toMatchObject({
      name: 'KafkaJSDeleteGroupsError',
      groups: [{ groupId: GROUP, errorCode: 68, error: { type: 'NON_EMPTY_GROUP' } }],
    });

    for (const m of members) await leave(m);
    const [empty] = (await admin.describeGroups([GROUP])).groups;
    expect(empty).toMatchObject({ groupId: GROUP, state: 'Empty', protocolType: 'consumer', protocol: '', members: [] });

    // Lag: 4 more messages a partition, nobody reading them.
    await produce(bootstrap, 4, 'second');
    const ends = await logEnd(admin);
    let offsets = await committed(admin, GROUP);
    expect([...offsets].sort()).toEqual(PARTITIONS.map((p) => [p, 10]));
    const lag = PARTITIONS.map((p) => ends.get(p)! - offsets.get(p)!);
    expect(lag).toEqual([4, 4, 4]);

    // resetOffsets to the earliest commits kafkajs's sentinel -2 (EARLIEST), which the
    // broker keeps as it is, like Kafka; kafkajs resolves it with ListOffsets when it
    // consumes. Then setOffsets for two partitions: 0 from its start, 1 from 7, 2 from 12.
    await admin.resetOffsets({ groupId: GROUP, topic: TOPIC, earliest: true });
    offsets = await committed(admin, GROUP);
    expect([...offsets].sort()).toEqual(PARTITIONS.map((p) => [p, -2]));
    await admin.setOffsets({ groupId: GROUP, topic: TOPIC, partitions: [{ partition: 1, offset: '7' }, { partition: 2, offset: '12' }] });
    offsets = await committed(admin, GROUP);
    expect([...offsets].sort()).toEqual([
      [0, -2],
      [1, 7],
      [2, 12],
    ]);
    const starts = new Map((await admin.fetchTopicOffsets(TOPIC)).map((p) => [p.partition, Number(p.low)]));
    const expectedLag = PARTITIONS.map((p) => ends.get(p)! - (offsets.get(p)! === -2 ? starts.get(p)! : offsets.get(p)!));
    expect(expectedLag).toEqual([14, 7, 2]);
    expect((await admin.describeGroups([GROUP])).groups[0]!.state).toBe('Empty');

    // A new member starts exactly there, and reads exactly the lag.
    const next = await startMember(bootstrap, GROUP, 'member-c');
    await waitUntil(() => PARTITIONS.every((p) => (next.read.get(p)?.length ?? 0) >= expectedLag[p]!), 20_000, 'the new member to read the lag');
    await waitUntil(async () => [...(await committed(admin, GROUP)).values()].every((o) => o === 14), 10_000, 'the new member to commit');
    expect(PARTITIONS.map((p) => next.read.get(p)![0])).toEqual([0, 7, 12]);
    expect(PARTITIONS.map((p) => next.read.get(p)!.length)).toEqual(expectedLag);
    await leave(next);

    expect(await admin.deleteGroups([GROUP])).toEqual([{ groupId: GROUP, errorCode: 0 }]);
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).not.toContain(GROUP);
    expect((await admin.describeGroups([GROUP])).groups[0]).toMatchObject({ state: 'Dead', members: [] });
    // Its offsets went with it.
    expect([...(await committed(admin, GROUP)).values()]).toEqual([-1, -1, -1]);
  }, 40_000);
});

/**
 * kafka-python's KafkaAdminClient and KafkaConsumer, one phase per run; each
 * phase prints one JSON line.
 */
const KAFKA_PYTHON_ADMIN = `
import json, sys
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
phase, bootstrap, group, topic = sys.argv[1:5]
admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id='kpy-admin')
out = {}
def describe():
    (g,) = admin.describe_consumer_groups([group])
    return {
        'state': g.state, 'protocolType': g.protocol_type, 'protocol': g.protocol,
        'members': sorted(({
            'memberId': m.member_id, 'clientId': m.client_id, 'clientHost': m.client_host,
            'topics': sorted(m.member_metadata.subscription),
            'assignment': {t: sorted(ps) for t, ps in m.member_assignment.assignment},
        } for m in g.members), key=lambda m: m['clientId']),
    }
def offsets():
    return {str(tp.partition): o.offset for tp, o in admin.list_consumer_group_offsets(group).items() if tp.topic == topic}
def lag():
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, client_id='kpy-lag')
    tps = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic))]
    ends = c.end_offsets(tps)
    c.close()
    committed = offsets()
    return {str(tp.partition): ends[tp] - committed[str(tp.partition)] for tp in tps}
def delete():
    return [[g, e.__name__] for g, e in admin.delete_consumer_groups([group])]
out['groups'] = sorted([g, t] for g, t in admin.list_consumer_groups())
if phase == 'active':
    out['described'] = describe()
    out['delete'] = delete()
elif phase == 'empty':
    out['described'] = describe()
    out['offsets'] = offsets()
    out['lag'] = lag()
    # A consumer of the group outside its membership commits where the group is to resume.
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id='kpy-reset', enable_auto_commit=False)
    c.assign([TopicPartition(topic, p) for p in (0, 1, 2)])
    c.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, 'reset by kafka-python'), TopicPartition(topic, 2): OffsetAndMetadata(13, '')})
    c.close(autocommit=False)
    out['reset'] = offsets()
    out['resetLag'] = lag()
elif phase == 'delete':
    out['delete'] = delete()
    out['after'] = sorted([g, t] for g, t in admin.list_consumer_groups())
    out['offsetsAfter'] = {str(tp.partition): o.offset for tp, o in admin.list_consumer_group_offsets(group, partitions=[TopicPartition(topic, p) for p in (0, 1, 2)]).items()}
admin.close()
print(json.dumps(out))
`;

interface KafkaPythonDescribed {
  state: string;
  protocolType: string;
  protocol: string;
  members: { memberId: string; clientId: string; clientHost: string; topics: string[]; assignment: Record<string, number[]> }[];
}

/** What a phase of KAFKA_PYTHON_ADMIN prints; partition keys are strings, as JSON has them. */
interface KafkaPythonOut {
  groups: [string, string][];
  described: KafkaPythonDescribed;
  delete: [string, string][];
  offsets: Record<string, number>;
  lag: Record<string, number>;
  reset: Record<string, number>;
  resetLag: Record<string, number>;
  after: [string, string][];
  offsetsAfter: Record<string, number>;
}

async function kafkaPython(phase: string, bootstrap: string, groupId: string): Promise<KafkaPythonOut> {
  const { code, out, err } = await runPython(KAFKA_PYTHON_ADMIN, [phase, bootstrap, groupId, TOPIC]);
  expect(code, `${phase}: ${out}\n${err}`).toBe(0);
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

describe('group administration with kafka-python', () => {
  beforeAll(() => {
    if (!hasKafkaPython) throw new Error('this test drives the Debian Python Kafka clients through /usr/bin/python3: apt-get install python3-kafka python3-confluent-kafka (.ci/run does)');
  });
  it('lists, describes, fetches offsets, computes lag, resets offsets, deletes the group', async () => {
    const bootstrap = await broker();
    const GROUP = 'kafka-python-admin-group';
    const { admin, members } = await consumedGroup(bootstrap, GROUP);

    const active = await kafkaPython('active', bootstrap, GROUP);
    expect(active.groups).toContainEqual([GROUP, 'consumer']);
    expect(active.described).toMatchObject({ state: 'Stable', protocolType: 'consumer', protocol: 'RoundRobinAssigner' });
    const activeMembers = active.described.members;
    expect(activeMembers.map((m) => [m.clientId, m.clientHost, m.topics])).toEqual([
      ['member-a', '/127.0.0.1', [TOPIC]],
      ['member-b', '/127.0.0.1', [TOPIC]],
    ]);
    expect(activeMembers.every((m) => (m.assignment[TOPIC] ?? []).length > 0)).toBe(true);
    expect(activeMembers.flatMap((m) => m.assignment[TOPIC]!).sort()).toEqual(PARTITIONS);
    expect(active.delete).toEqual([[GROUP, 'NonEmptyGroupError']]);

    for (const m of members) await leave(m);
    await produce(bootstrap, 5, 'second');
    const empty = await kafkaPython('empty', bootstrap, GROUP);
    expect(empty.groups).toContainEqual([GROUP, 'consumer']);
    expect(empty.described).toEqual({ state: 'Empty', protocolType: 'consumer', protocol: '', members: [] });
    expect(empty.offsets).toEqual({ 0: 10, 1: 10, 2: 10 });
    // Five unread messages a partition: the lag kafka-python computes from ListOffsets and OffsetFetch.
    expect(empty.lag).toEqual({ 0: 5, 1: 5, 2: 5 });
    expect(empty.reset).toEqual({ 0: 3, 1: 10, 2: 13 });
    expect(empty.resetLag).toEqual({ 0: 12, 1: 5, 2: 2 });
    // The commit's metadata is kept.
    const [withMetadata] = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
    expect(withMetadata!.partitions.find((p) => p.partition === 0)).toMatchObject({ offset: '3', metadata: 'reset by kafka-python' });

    // A new member starts from the reset offsets and reads exactly the lag.
    const next = await startMember(bootstrap, GROUP, 'member-c');
    await waitUntil(() => PARTITIONS.every((p) => (next.read.get(p)?.length ?? 0) >= empty.resetLag[p]!), 20_000, 'the new member to read the lag');
    await waitUntil(async () => [...(await committed(admin, GROUP)).values()].every((o) => o === 15), 10_000, 'the new member to commit');
    expect(PARTITIONS.map((p) => next.read.get(p)![0])).toEqual([3, 10, 13]);
    expect(PARTITIONS.map((p) => next.read.get(p)!.length)).toEqual([12, 5, 2]);
    await leave(next);

    const deleted = await kafkaPython('delete', bootstrap, GROUP);
    expect(deleted.delete).toEqual([[GROUP, 'NoError']]);
    expect(deleted.after.map((g) => g[0])).not.toContain(GROUP);
    expect(deleted.offsetsAfter).toEqual({ 0: -1, 1: -1, 2: -1 });
  });
});

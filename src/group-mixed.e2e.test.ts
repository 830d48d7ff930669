/**
 * Clients that share no assignor in one group, end to end: a real broker on
 * 127.0.0.1. kafkajs 2.2.4 offers only "RoundRobinAssigner"; kafka-python
 * 2.0.2 offers "range" and "roundrobin", as librdkafka 2.0.2 does
 * (confluent-kafka-python from Debian). Whoever joins a group whose members
 * support none of its protocols is refused with INCONSISTENT_GROUP_PROTOCOL,
 * as Kafka refuses it, and the group goes on as it was. Checked both ways:
 * kafka-python and confluent-kafka joining a kafkajs group, kafkajs joining a
 * kafka-python group.
 */
import { execFile } from 'node:child_process';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { QUICK_GROUP_CONFIG, runPython, SYSTEM_PYTHON, TempBrokers, waitUntil, withTimeout } from './test-utils.js';

const TOPIC = 'mixed';

const brokers = new TempBrokers('gregor-group-mixed-', QUICK_GROUP_CONFIG);
const clients: { disconnect(): Promise<void> }[] = [];
const closers: (() => void)[] = [];

afterEach(async () => {
  for (const c of closers.splice(0)) c();
  for (const c of clients.splice(0).reverse()) await c.disconnect().catch(() => {});
  await brokers.stopAll();
});

async function broker(): Promise<string> {
  return (await brokers.start()).bootstrap;
}

function kafkaFor(bootstrap: string, clientId: string): Kafka {
  return new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 } });
}

const hasKafkaPython = await runPython('import kafka', [], 10_000).then((r) => r.code === 0, () => false);
const hasConfluentKafka = await runPython('import confluent_kafka', [], 10_000).then((r) => r.code === 0, () => false);

/** A kafka-python consumer joins the group; prints the exception poll() raises (or none within 10 s). */
const KAFKA_PYTHON_JOIN = `
import json, sys, time
from kafka import KafkaConsumer
bootstrap, group, topic = sys.argv[1:4]
c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id='kpy-mixed', session_timeout_ms=10000,
                  heartbeat_interval_ms=500, request_timeout_ms=15000, auto_offset_reset='earliest')
c.subscribe([topic])
out = {'protocols': [a.name for a in c.config['partition_assignment_strategy']]}
deadline = time.monotonic() + 10
try:
    while time.monotonic() < deadline:
        c.poll(timeout_ms=100)
    out['error'] = None
except Exception as e:
    out['error'] = [type(e).__name__, getattr(e, 'errno', None), str(e)]
c.close(autocommit=False)
print(json.dumps(out))
`;

/** A confluent-kafka consumer joins the group; prints the errors poll() hands back (up to 6 s, 1 s past the first). */
const CONFLUENT_KAFKA_JOIN = `
import json, sys, time
from confluent_kafka import Consumer
bootstrap, group, topic = sys.argv[1:4]
errors = []
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group, 'client.id': 'ck-mixed',
              'session.timeout.ms': 10000, 'error_cb': lambda e: errors.append(['error_cb', e.name(), e.str()])})
assigned = []
c.subscribe([topic], on_assign=lambda _c, ps: assigned.append(sorted(p.partition for p in ps)))
deadline = time.monotonic() + 6
while time.monotonic() < deadline:
    m = c.poll(0.1)
    if m is not None and m.error() is not None:
        errors.append(['poll', m.error().name(), m.error().str()])
        deadline = min(deadline, time.monotonic() + 1)
c.close()
print(json.dumps({'errors': errors, 'assigned': assigned}))
`;

async function kafkajsGroup(bootstrap: string, groupId: string): Promise<Consumer> {
  const consumer = kafkaFor(bootstrap, 'kafkajs-member').consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 300, maxWaitTimeInMs: 100 });
  clients.push(consumer);
  let joined = false;
  consumer.on(consumer.events.GROUP_JOIN, () => {
    joined = true;
  });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  await consumer.run({ eachMessage: async () => {} });
  await waitUntil(() => joined, 15_000, 'the kafkajs consumer to join');
  return consumer;
}

/** A kafka-python member of the group that polls until its stdin reaches its end. */
const KAFKA_PYTHON_MEMBER = `
import select, sys, time
from kafka import KafkaConsumer
bootstrap, group, topic = sys.argv[1:4]
c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id='kpy-member', session_timeout_ms=10000,
                  heartbeat_interval_ms=300, request_timeout_ms=15000)
c.subscribe([topic])
deadline = time.monotonic() + 25
while time.monotonic() < deadline and not select.select([sys.stdin], [], [], 0)[0]:
    c.poll(timeout_ms=100)
c.close()
`;

describe('clients without a common assignor in one group', () => {
  it('kafka-python and confluent-kafka joining a kafkajs group get INCONSISTENT_GROUP_PROTOCOL', async () => {
    if (!hasKafkaPython || !hasConfluentKafka) throw new Error('this test drives the Debian Python Kafka clients through /usr/bin/python3: apt-get install python3-kafka python3-confluent-kafka (.ci/run does)');
    const bootstrap = await broker();
    const GROUP = 'kafkajs-first';
    const admin = kafkaFor(bootstrap, 'mixed-admin').admin();
    clients.push(admin);
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 3 }], waitForLeaders: true });
    await kafkajsGroup(bootstrap, GROUP);
    const [before] = (await admin.describeGroups([GROUP])).groups;
    expect(before).toMatchObject({ state: 'Stable', protocol: 'RoundRobinAssigner' });

    const [kpy, ck] = await Promise.all([
      hasKafkaPython ? runPython(KAFKA_PYTHON_JOIN, [bootstrap, GROUP, TOPIC]) : null,
      hasConfluentKafka ? runPython(CONFLUENT_KAFKA_JOIN, [bootstrap, GROUP, TOPIC]) : null,
    ]);
    if (kpy) {
      expect(kpy.code, `${kpy.out}\n${kpy.err}`).toBe(0);
      const r = JSON.parse(kpy.out.trim().split('\n').at(-1)!);
      expect(r.protocols).toEqual(['range', 'roundrobin']);
      // JoinGroup v2 answered with error 23; kafka-python does not retry it and raises from poll().
      expect(r.error.slice(0, 2)).toEqual(['InconsistentGroupProtocolError', 23]);
    }
    if (ck) {
      expect(ck.code, `${ck.out}\n${ck.err}`).toBe(0);
      const r = JSON.parse(ck.out.trim().split('\n').at(-1)!);
      // librdkafka hands the JoinGroup error to the application as a consumer error, and keeps trying.
      expect(r.assigned).toEqual([]);
      expect(r.errors.length, ck.out).toBeGreaterThan(0);
      for (const e of r.errors) expect(e.slice(1), ck.out).toEqual(['INCONSISTENT_GROUP_PROTOCOL', expect.stringContaining('Inconsistent group protocol')]);
    }

    // The group went on without them.
    const [after] = (await admin.describeGroups([GROUP])).groups;
    expect(after).toMatchObject({ state: 'Stable', protocol: 'RoundRobinAssigner' });
    expect(after!.members.map((m) => m.memberId)).toEqual(before!.members.map((m) => m.memberId));
  });

  it('kafkajs joining a kafka-python group gets INCONSISTENT_GROUP_PROTOCOL', async () => {
    if (!hasKafkaPython) throw new Error('this test drives the Debian Python Kafka clients through /usr/bin/python3: apt-get install python3-kafka python3-confluent-kafka (.ci/run does)');
    const bootstrap = await broker();
    const GROUP = 'kafka-python-first';
    const admin = kafkaFor(bootstrap, 'mixed-admin').admin();
    clients.push(admin);
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 3 }], waitForLeaders: true });

    // A kafka-python member that stays in the group until its stdin closes.
    let stdinOf: { end(): void } | undefined;
    const member = new Promise<{ code: number; out: string; err: string }>((resolve) => {
      const child = execFile(SYSTEM_PYTHON, ['-c', KAFKA_PYTHON_MEMBER, bootstrap, GROUP, TOPIC], { timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, out: stdout, err: stderr });
      });
      stdinOf = child.stdin!;
    });
    closers.push(() => stdinOf?.end());
    await waitUntil(
      async () => {
        const [g] = (await admin.describeGroups([GROUP])).groups;
        return g!.state === 'Stable' && g!.members.length === 1;
      },
      15_000,
      'the kafka-python member to join',
    );
    const [before] = (await admin.describeGroups([GROUP])).groups;
    expect(before).toMatchObject({ protocol: 'range', protocolType: 'consumer' });
    expect(before!.members[0]!.clientId).toBe('kpy-member');

    const consumer = kafkaFor(bootstrap, 'kafkajs-joiner').consumer({ groupId: GROUP, sessionTimeout: 10_000, retry: { retries: 0 } });
    clients.push(consumer);
    const crashed = new Promise<{ type?: string; name?: string; retriable?: boolean }>((resolve) => {
      consumer.on(consumer.events.CRASH, (e) => resolve(e.payload.error as { type?: string; name?: string; retriable?: boolean }));
    });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC });
    await consumer.run({ eachMessage: async () => {} });
    const error = await withTimeout(crashed, 10_000, 'the kafkajs consumer to fail');
    expect(error).toMatchObject({ name: 'KafkaJSProtocolError', type: 'INCONSISTENT_GROUP_PROTOCOL', retriable: false });
    await consumer.disconnect();

    const [after] = (await admin.describeGroups([GROUP])).groups;
    expect(after).toMatchObject({ state: 'Stable', protocol: 'range' });
    expect(after!.members.map((m) => m.memberId)).toEqual(before!.members.map((m) => m.memberId));
    stdinOf!.end();
    const done = await member;
    expect(done.code, `${done.out}\n${done.err}`).toBe(0);
  });
});

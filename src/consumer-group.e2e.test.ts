/**
 * Consumer groups end to end: a real broker on 127.0.0.1 and real clients.
 * Two kafkajs consumers (JoinGroup v5, SyncGroup v3, OffsetCommit v5,
 * OffsetFetch v4) split a 6-partition topic, the survivor takes every
 * partition when the other leaves, and every message is consumed exactly
 * once; the committed offsets survive a broker restart; kcat's balanced
 * consumer (librdkafka 2.0.2) consumes through a group too.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from './index.js';
import { FrameClient, waitUntil } from './test-utils.js';
import { decode, encode } from '../wire/codec.js';
import type { MessageDecl } from '../wire/schema.js';
import { ErrorCode } from '../wire/errors.js';
import { FindCoordinatorRequest } from '../wire/messages/find-coordinator-request.js';
import { JoinGroupRequest } from '../wire/messages/join-group-request.js';
import { JoinGroupResponse, type JoinGroupResponse as JoinGroupResponseT } from '../wire/messages/join-group-response.js';

const KCAT = '/usr/bin/kcat';
const TOPIC = 'orders';
const GROUP = 'e2e-group';

const brokers: Broker[] = [];
const frameClients: FrameClient[] = [];
const dirs: string[] = [];
const clients: { disconnect(): Promise<void> }[] = [];

afterEach(async () => {
  for (const c of frameClients.splice(0)) c.destroy();
  for (const c of clients.splice(0).reverse()) await c.disconnect().catch(() => {});
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function broker(dir?: string, extra: Record<string, string> = {}): Promise<{ broker: Broker; bootstrap: string; dir: string }> {
  const dataDir = dir ?? mkdtempSync(join(tmpdir(), 'gregor-group-e2e-'));
  if (!dir) dirs.push(dataDir);
  const b = await startBroker(
    {
      listeners: 'PLAINTEXT://127.0.0.1:0',
      'log.dirs': dataDir,
      'offsets.topic.num.partitions': '5',
      'offsets.topic.replication.factor': '1',
      'group.initial.rebalance.delay.ms': '0',
      ...extra,
    },
    { log: pino({ level: 'silent' }) },
  );
  brokers.push(b);
  return { broker: b, bootstrap: b.bootstrap, dir: dataDir };
}

function kafkaFor(bootstrap: string, clientId: string): Kafka {
  return new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 } });
}

/** Polls `check` every 50 ms until it holds, for at most `ms`. */
interface Tracked {
  readonly consumer: Consumer;
  /** The partitions of TOPIC in this consumer's latest assignment. */
  assigned: number[];
  readonly seen: string[];
}

async function startConsumer(kafka: Kafka, consumed: Map<string, number>): Promise<Tracked> {
  const consumer = kafka.consumer({ groupId: GROUP, sessionTimeout: 10_000, rebalanceTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 200, allowAutoTopicCreation: false });
  clients.push(consumer);
  const tracked: Tracked = { consumer, assigned: [], seen: [] };
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    tracked.assigned = [...(e.payload.memberAssignment[TOPIC] ?? [])].sort((a, b) => a - b);
  });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  await consumer.run({
    autoCommitThreshold: 1,
    eachMessage: async ({ message }) => {
      const value = message.value!.toString();
      tracked.seen.push(value);
      consumed.set(value, (consumed.get(value) ?? 0) + 1);
    },
  });
  return tracked;
}

async function produceBatch(producer: Producer, label: string, count: number): Promise<string[]> {
  const values = Array.from({ length: count }, (_, i) => `${label}-${i}`);
  await producer.send({ topic: TOPIC, acks: -1, messages: values.map((value, i) => ({ value, partition: i % 6 })) });
  return values;
}

describe('consumer groups end to end', () => {
  it('two kafkajs consumers split 6 partitions, the survivor takes all when one leaves, every message exactly once', async () => {
    const { bootstrap } = await broker();
    const kafka = kafkaFor(bootstrap, 'e2e');
    const admin = kafka.admin();
    clients.push(admin);
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 6 }], waitForLeaders: true });
    const producer = kafka.producer();
    clients.push(producer);
    await producer.connect();

    const consumed = new Map<string, number>();
    const c1 = await startConsumer(kafkaFor(bootstrap, 'c1'), consumed);
    const c2 = await startConsumer(kafkaFor(bootstrap, 'c2'), consumed);
    // Balanced: each holds 3 partitions and no partition is held twice.
    await waitUntil(() => c1.assigned.length === 3 && c2.assigned.length === 3, 20_000, 'the group to split the partitions');
    expect(new Set([...c1.assigned, ...c2.assigned]).size).toBe(6);

    const all: string[] = [];
    all.push(...(await produceBatch(producer, 'a', 60)));
    await waitUntil(() => all.every((v) => consumed.has(v)), 20_000, 'batch a to be consumed');
    // Each consumer read only its own partitions' messages.
    expect(c1.seen.length).toBeGreaterThan(0);
    expect(c2.seen.length).toBeGreaterThan(0);
    for (const v of c1.seen) expect(c1.assigned).toContain(Number(v.split('-')[1]) % 6);

    // Let the last commits land, then one consumer leaves (LeaveGroup): the other takes everything.
    await new Promise((r) => setTimeout(r, 300));
    await c2.consumer.disconnect();
    await waitUntil(() => c1.assigned.length === 6, 20_000, 'the survivor to take every partition');

    all.push(...(await produceBatch(producer, 'b', 60)));
    await waitUntil(() => all.every((v) => consumed.has(v)), 20_000, 'batch b to be consumed');
    await new Promise((r) => setTimeout(r, 300));
    for (const v of all) expect(consumed.get(v), v).toBe(1);
    expect(consumed.size).toBe(all.length);

    // The group's committed offsets are what the consumers read: 20 messages per partition.
    const offsets = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
    expect(offsets[0]!.partitions.map((p) => [p.partition, p.offset]).sort((x, y) => x[0]! > y[0]! ? 1 : -1)).toEqual(
      [0, 1, 2, 3, 4, 5].map((p) => [p, '20']),
    );
    const described = await admin.describeGroups([GROUP]);
    expect(described.groups[0]).toMatchObject({ groupId: GROUP, state: 'Stable', protocolType: 'consumer', protocol: 'RoundRobinAssigner' });
    expect(described.groups[0]!.members).toHaveLength(1);
    expect(described.groups[0]!.members[0]!.clientHost).toBe('/127.0.0.1');
  });

  it('a consumer resumes after the last committed offset when the broker restarts', async () => {
    const first = await broker();
    let kafka = kafkaFor(first.bootstrap, 'e2e');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 6 }], waitForLeaders: true });
    await admin.disconnect();
    let producer = kafka.producer();
    await producer.connect();
    const before = await produceBatch(producer, 'before', 30);
    await producer.disconnect();
    const consumed = new Map<string, number>();
    const c = await startConsumer(kafkaFor(first.bootstrap, 'c'), consumed);
    await waitUntil(() => before.every((v) => consumed.has(v)), 20_000, 'the first batch to be consumed');
    await new Promise((r) => setTimeout(r, 300));
    await c.consumer.disconnect();
    clients.splice(clients.indexOf(c.consumer), 1);
    await first.broker.stop();
    brokers.splice(brokers.indexOf(first.broker), 1);

    const second = await broker(first.dir);
    kafka = kafkaFor(second.bootstrap, 'e2e');
    producer = kafka.producer();
    clients.push(producer);
    await producer.connect();
    const after = await produceBatch(producer, 'after', 30);
    const again = await startConsumer(kafkaFor(second.bootstrap, 'c-again'), consumed);
    await waitUntil(() => after.every((v) => consumed.has(v)), 20_000, 'the second batch to be consumed');
    await new Promise((r) => setTimeout(r, 300));
    // Nothing from before the restart came again.
    expect(again.seen.sort()).toEqual([...after].sort());
  });

  it('answers a JoinGroup parked in a rebalance when the broker stops, and stops at once', async () => {
    // A first rebalance that would wait 30 s for more members.
    const { broker: b } = await broker(undefined, { 'group.initial.rebalance.delay.ms': '30000' });
    const port = Number(/:(\d+)$/.exec(b.listenAddress)![1]);
    const client = await FrameClient.connect(port);
    frameClients.push(client);
    // The first FindCoordinator makes __consumer_offsets.
    client.send(frame(FindCoordinatorRequest, 1, 1, { key: 'parked', keyType: 0, coordinatorKeys: [] }));
    await client.nextFrame();
    const join = { groupId: 'parked', sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 60_000, memberId: '', groupInstanceId: null, protocolType: 'consumer', protocols: [{ name: 'range', metadata: Buffer.alloc(0) }], reason: null };
    client.send(frame(JoinGroupRequest, 3, 2, join));
    await new Promise((r) => setTimeout(r, 200));
    expect(client.frames).toHaveLength(1);
    const started = Date.now();
    await b.stop();
    brokers.splice(brokers.indexOf(b), 1);
    expect(Date.now() - started).toBeLessThan(5000);
    const res = await client.nextFrame();
    const answer = decode<JoinGroupResponseT>(JoinGroupResponse, 3, res.subarray(4));
    expect(answer.ok).toBe(true);
    expect(answer.ok && answer.value.errorCode).toBe(ErrorCode.NOT_COORDINATOR);
  });

  it('kcat -G (librdkafka 2.0.2 balanced consumer) consumes through a group and commits', async () => {
    if (!existsSync(KCAT)) throw new Error('this test drives kcat: apt-get install kcat (.ci/run does)');
    const { bootstrap } = await broker();
    const kafka = kafkaFor(bootstrap, 'e2e');
    const admin = kafka.admin();
    clients.push(admin);
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 6 }], waitForLeaders: true });
    const producer = kafka.producer();
    clients.push(producer);
    await producer.connect();
    const values = await produceBatch(producer, 'k', 24);
    const out = await kcat(['-b', bootstrap, '-G', 'kcat-group', '-o', 'beginning', '-c', '24', '-e', '-q', '-f', '%s\\n', '-X', 'auto.commit.interval.ms=100', TOPIC]);
    expect(out.trim().split('\n').sort()).toEqual([...values].sort());
    const offsets = await admin.fetchOffsets({ groupId: 'kcat-group', topics: [TOPIC] });
    const total = offsets[0]!.partitions.reduce((n, p) => n + Number(p.offset), 0);
    expect(total).toBe(24);
  });
});

/** A request frame with header v1 (the versions used here are not flexible). */
function frame<T>(decl: MessageDecl, version: number, correlationId: number, body: T): Buffer {
  const payload = encode(decl, version, body);
  const clientId = Buffer.from('raw');
  const header = Buffer.alloc(10 + clientId.length);
  header.writeInt16BE(decl.apiKey!, 0);
  header.writeInt16BE(version, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(clientId.length, 8);
  clientId.copy(header, 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + payload.length);
  return Buffer.concat([size, header, payload]);
}

/** Runs kcat without blocking the event loop (the broker runs in this process). */
function kcat(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(KCAT, args, { timeout: 40_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kcat ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * Topic administration end to end: real clients against a real broker on
 * 127.0.0.1. kafkajs 2.2.4 (CreateTopics v3, DeleteTopics v1,
 * CreatePartitions v1, DeleteRecords v1), @platformatic/kafka 1.35 (CreateTopics v7,
 * DeleteTopics v6, CreatePartitions v3, DeleteRecords v2, DescribeLogDirs v4)
 * and, when /usr/bin/python3 has it, confluent-kafka-python's AdminClient
 * (librdkafka: CreateTopics v4, DeleteTopics v1, CreatePartitions v0).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Admin as PlatformaticAdmin } from '@platformatic/kafka';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from './index.js';

const brokers: Broker[] = [];
const dirs: string[] = [];
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function broker(): Promise<{ dir: string; bootstrap: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'gregor-admin-'));
  dirs.push(dir);
  const b = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir, 'num.partitions': '2' });
  brokers.push(b);
  return { dir, bootstrap: b.bootstrap };
}

function kafkajs(bootstrap: string): Kafka {
  return new Kafka({ clientId: 'admin-test', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 2 } });
}

describe('topic administration with kafkajs', () => {
  it('creates, lists, grows and deletes topics; a recreated topic is new and empty', async () => {
    const { dir, bootstrap } = await broker();
    const client = kafkajs(bootstrap);
    const admin = client.admin();
    await admin.connect();
    closers.push(() => admin.disconnect());

    expect(await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }, { topic: 'defaults' }], waitForLeaders: true })).toBe(true);
    // Already there: kafkajs reports false rather than failing.
    expect(await admin.createTopics({ topics: [{ topic: 'orders' }] })).toBe(false);
    await expect(admin.createTopics({ topics: [{ topic: 'too-many', replicationFactor: 3 }] })).rejects.toMatchObject({
      errors: [{ topic: 'too-many', type: 'INVALID_REPLICATION_FACTOR' }],
    });
    expect((await admin.listTopics()).sort()).toEqual(['defaults', 'orders']);
    const described = await admin.fetchTopicMetadata({ topics: ['orders', 'defaults'] });
    expect(described.topics.map((t) => [t.name, t.partitions.length]).sort()).toEqual([
      ['defaults', 2],
      ['orders', 3],
    ]);

    await admin.createPartitions({ topicPartitions: [{ topic: 'orders', count: 5 }] });
    await expect(admin.createPartitions({ topicPartitions: [{ topic: 'orders', count: 4 }] })).rejects.toMatchObject({ type: 'INVALID_PARTITIONS' });
    expect((await admin.fetchTopicMetadata({ topics: ['orders'] })).topics[0]!.partitions).toHaveLength(5);

    const producer = client.producer();
    await producer.connect();
    closers.push(() => producer.disconnect());
    await producer.send({ topic: 'orders', messages: [{ value: 'a', partition: 4 }, { value: 'b', partition: 4 }] });
    expect((await admin.fetchTopicOffsets('orders')).find((p) => p.partition === 4)).toMatchObject({ low: '0', high: '2' });
    // DeleteRecords v1: kafkajs asks ListOffsets first, then moves the start of partition 4.
    await admin.deleteTopicRecords({ topic: 'orders', partitions: [{ partition: 4, offset: '1' }] });
    expect((await admin.fetchTopicOffsets('orders')).find((p) => p.partition === 4)).toMatchObject({ low: '1', high: '2' });

    await admin.deleteTopics({ topics: ['orders'] });
    expect(await admin.listTopics()).toEqual(['defaults']);
    expect(existsSync(join(dir, 'orders-4'))).toBe(false);
    await expect(admin.deleteTopics({ topics: ['orders'] })).rejects.toThrow();

    expect(await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 5 }], waitForLeaders: true })).toBe(true);
    await producer.send({ topic: 'orders', messages: [{ value: 'c', partition: 4 }] });
    // The new topic's partition 4 starts empty: the one record just sent is at offset 0.
    const [sent] = await producer.send({ topic: 'orders', messages: [{ value: 'd', partition: 4 }] });
    expect(sent!.baseOffset).toBe('1');
    expect(readdirSync(dir).filter((n) => n === 'orders-4')).toEqual(['orders-4']);
  });
});

describe('deleted topics across a restart', () => {
  it('removes what a deletion left on disk once the broker starts again, before file.delete.delay.ms', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-admin-'));
    dirs.push(dir);
    const config = { listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir };
    const first = await startBroker(config);
    const admin = kafkajs(first.bootstrap).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'doomed', numPartitions: 2 }], waitForLeaders: true });
    await admin.deleteTopics({ topics: ['doomed'] });
    await admin.disconnect();
    await first.stop();
    // file.delete.delay.ms (60 s) has not passed: the renamed directories are still there.
    const renamed = () => readdirSync(dir).filter((n) => n.startsWith('doomed-') && n.endsWith('-delete'));
    expect(renamed()).toHaveLength(2);

    const second = await startBroker(config);
    brokers.push(second);
    const deadline = Date.now() + 10000;
    while (renamed().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(renamed()).toEqual([]);
    const again = kafkajs(second.bootstrap).admin();
    await again.connect();
    closers.push(() => again.disconnect());
    expect(await again.listTopics()).toEqual([]);
  });
});

describe('topic administration with @platformatic/kafka', () => {
  it('creates (v7), grows (v3), deletes records (v2), describes log dirs (v4) and deletes topics (v6)', async () => {
    const { dir, bootstrap } = await broker();
    const admin = new PlatformaticAdmin({ clientId: 'admin-test', bootstrapBrokers: [bootstrap], retries: 1 });
    closers.push(() => admin.close());

    const [created] = await admin.createTopics({ topics: ['events'], partitions: 2, replicas: 1, configs: [{ name: 'retention.ms', value: '86400000' }] });
    expect(created).toMatchObject({ name: 'events', partitions: 2, replicas: 1 });
    expect(created!.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created!.configuration['retention.ms']).toBe('86400000');
    await admin.createPartitions({ topics: [{ name: 'events', count: 3 }] });
    expect(await admin.listTopics()).toEqual(['events']);

    const producer = kafkajs(bootstrap).producer();
    await producer.connect();
    closers.push(() => producer.disconnect());
    await producer.send({ topic: 'events', messages: ['a', 'b', 'c', 'd'].map((value) => ({ value, partition: 2 })) });

    const deleted = await admin.deleteRecords({ topics: [{ name: 'events', partitions: [{ partition: 2, offset: 3n }] }] });
    expect(deleted).toEqual([{ name: 'events', partitions: [{ partition: 2, lowWatermark: 3n }] }]);

    const [logDirs] = await admin.describeLogDirs({ topics: [{ name: 'events', partitions: [0, 1, 2] }] });
    expect(logDirs!.results).toHaveLength(1);
    const [described] = logDirs!.results;
    expect(described!.logDir).toBe(dir);
    expect(described!.totalBytes).toBeGreaterThan(0n);
    const sizes = described!.topics[0]!.partitions.map((p) => [p.partitionIndex, p.partitionSize > 0n]);
    expect(sizes.sort()).toEqual([
      [0, false],
      [1, false],
      [2, true],
    ]);

    await admin.deleteTopics({ topics: ['events'] });
    expect(await admin.listTopics()).toEqual([]);
  });
});

const python = '/usr/bin/python3';
function runPython(script: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(python, ['-c', script, ...args], { timeout: 60000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, out: stdout + stderr });
    });
  });
}

const hasConfluentKafka = await runPython('import confluent_kafka', []).then((r) => r.code === 0, () => false);

describe('topic administration with confluent-kafka-python (librdkafka)', () => {
  beforeAll(() => {
    if (!hasConfluentKafka) throw new Error('this test drives confluent-kafka through /usr/bin/python3: apt-get install python3-confluent-kafka (.ci/run does)');
  });
  it('creates, grows and deletes topics, and reports Kafka\'s errors', async () => {
    const { bootstrap } = await broker();
    const script = `
import sys
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions
a = AdminClient({'bootstrap.servers': sys.argv[1]})
def show(what, fs):
    for t, f in sorted(fs.items()):
        try:
            f.result(); print(what, t, 'ok')
        except Exception as e:
            print(what, t, 'error', e.args[0].name())
show('create', a.create_topics([NewTopic('ck', 2, 1), NewTopic('ck-rf', 1, 3), NewTopic('bad name', 1, 1)]))
show('create', a.create_topics([NewTopic('ck', 2, 1)]))
show('grow', a.create_partitions([NewPartitions('ck', 4)]))
show('grow', a.create_partitions([NewPartitions('ck', 2)]))
print('partitions', len(a.list_topics(timeout=10).topics['ck'].partitions))
show('delete', a.delete_topics(['ck', 'nope']))
print('topics', sorted(a.list_topics(timeout=10).topics))
`;
    const { code, out } = await runPython(script, [bootstrap]);
    expect(code, out).toBe(0);
    expect(out.trim().split('\n')).toEqual([
      'create bad name error TOPIC_EXCEPTION',
      'create ck ok',
      'create ck-rf error INVALID_REPLICATION_FACTOR',
      'create ck error TOPIC_ALREADY_EXISTS',
      'grow ck ok',
      'grow ck error INVALID_PARTITIONS',
      'partitions 4',
      'delete ck ok',
      'delete nope error UNKNOWN_TOPIC_OR_PART',
      'topics []',
    ]);
  });
});

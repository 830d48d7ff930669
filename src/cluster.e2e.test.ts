/**
 * Two gregor broker processes sharing their metadata through a real etcd
 * (Debian's etcd-server), driven by kafkajs 2.2.4 as a user's application
 * would: topics spread over both brokers, a consumer group across them, a
 * broker killed with SIGKILL and started again. Skipped where etcd is not
 * installed, except under CI, where that fails the run.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { clusterView, until } from './cluster-test-support.js';
// @ts-expect-error: JavaScript test helpers without type declarations.
import { etcdBinary, startEtcd } from '../compat-tests/lib/etcd.mjs';
// @ts-expect-error: JavaScript test helpers without type declarations.
import { freePort } from '../compat-tests/lib/free-port.mjs';
// @ts-expect-error: JavaScript test helpers without type declarations.
import { startGregor } from '../compat-tests/lib/gregor.mjs';

interface Gregor {
  bootstrap: string;
  pid: number;
  stop(): Promise<number>;
  output(): string;
}

const SESSION_MS = 2000;
const hasEtcd = etcdBinary() !== null;

let etcd: { endpoint: string; stop(): Promise<void> };
const dirs = new Map<number, string>();
const running = new Map<number, Gregor>();
const closers: (() => Promise<unknown>)[] = [];

function start(nodeId: number): Promise<Gregor> {
  let dir = dirs.get(nodeId);
  if (!dir) dirs.set(nodeId, (dir = mkdtempSync(join(tmpdir(), `gregor-cluster-${nodeId}-`))));
  return startGregor({
    dataDir: dir,
    args: ['--broker-id', String(nodeId), '--metadata', `etcd://${etcd.endpoint}`, '--override', `broker.session.timeout.ms=${SESSION_MS}`],
  }).then((g: Gregor) => {
    running.set(nodeId, g);
    return g;
  });
}

function client(bootstrap: string): Kafka {
  return new Kafka({ clientId: 'cluster-test', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } });
}

async function leaders(admin: Admin, topic: string): Promise<number[]> {
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  return md.topics[0]!.partitions.sort((a, b) => a.partitionId - b.partitionId).map((p) => p.leader);
}

describe.skipIf(!hasEtcd && !process.env.CI)('a cluster of two brokers on etcd, with kafkajs', () => {
  beforeAll(async () => {
    etcd = await startEtcd();
    await Promise.all([start(1), start(2)]);
  }, 60_000);

  afterAll(async () => {
    for (const c of closers.splice(0).reverse()) await c().catch(() => {});
    await Promise.all([...running.values()].map((g) => g.stop()));
    await etcd?.stop();
    for (const d of dirs.values()) rmSync(d, { recursive: true, force: true });
  });

  const acknowledged = new Map<number, string[]>();

  it('refuses to start without etcd, or on the data directory of a broker on its own store, saying why', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-cluster-refused-'));
    try {
      const port = await freePort();
      const noEtcd = await startGregor({ dataDir: dir, args: ['--metadata', `etcd://127.0.0.1:${port}`] }).then(
        () => 'started',
        (err: Error) => err.message,
      );
      expect(noEtcd).toMatch(/exited with code 1[\s\S]*cannot use etcd at 127\.0\.0\.1:\d+ .*check that etcd runs there/);
      // A directory made by a broker on its own store holds that broker's own cluster id.
      const alone = await startGregor({ dataDir: dir, args: ['--broker-id', '7'] });
      await alone.stop();
      const joined = await startGregor({ dataDir: dir, args: ['--broker-id', '7', '--metadata', `etcd://${etcd.endpoint}`] }).then(
        () => 'started',
        (err: Error) => err.message,
      );
      expect(joined).toMatch(/exited with code 1[\s\S]*belongs to a broker on its own \(local\) metadata store/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('spreads a topic over both brokers; produce with acks=all and a consumer group reach every partition', async () => {
    const kafka = client(running.get(1)!.bootstrap);
    const admin = kafka.admin();
    await admin.connect();
    closers.push(() => admin.disconnect());
    const cluster = await until('both brokers registered', async () => {
      const c = await admin.describeCluster();
      return c.brokers.length === 2 && c.controller !== null && c;
    });
    expect(cluster.brokers.map((b) => b.nodeId).sort()).toEqual([1, 2]);
    expect([1, 2]).toContain(cluster.controller);

    expect(await admin.createTopics({ topics: [{ topic: 'spread', numPartitions: 4, replicationFactor: 1 }], waitForLeaders: true })).toBe(true);
    // For the next test: a topic whose only replica is broker 1.
    await admin.createTopics({ topics: [{ topic: 'on-one', replicaAssignment: [{ partition: 0, replicas: [1] }] }], waitForLeaders: true });
    expect(new Set(await leaders(admin, 'spread'))).toEqual(new Set([1, 2]));

    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    closers.push(() => producer.disconnect());
    for (let partition = 0; partition < 4; partition++) {
      const values = Array.from({ length: 25 }, (_, i) => `p${partition}-m${i}`);
      await producer.send({ topic: 'spread', acks: -1, messages: values.map((value) => ({ value, partition })) });
      acknowledged.set(partition, values);
    }

    const consumer = kafka.consumer({ groupId: 'spread-readers', sessionTimeout: 10_000, rebalanceTimeout: 10_000 });
    await consumer.connect();
    closers.push(() => consumer.disconnect());
    await consumer.subscribe({ topic: 'spread', fromBeginning: true });
    const got = new Map<number, string[]>();
    let count = 0;
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          got.set(partition, [...(got.get(partition) ?? []), message.value!.toString()]);
          if (++count === 100) resolve();
        },
      });
    });
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`consumed ${count} of 100`)), 30_000))]);
    for (const [p, values] of acknowledged) expect(got.get(p)).toEqual(values);
    await consumer.disconnect();
  }, 60_000);

  it('copies every partition to its followers: the replicas\' logs are the same bytes', async () => {
    const kafka = client(running.get(1)!.bootstrap);
    const admin = kafka.admin();
    await admin.connect();
    closers.push(() => admin.disconnect());
    await admin.createTopics({ topics: [{ topic: 'copied', numPartitions: 2, replicationFactor: 2 }], waitForLeaders: true });
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    closers.push(() => producer.disconnect());
    for (let round = 0; round < 20; round++) {
      await producer.send({ topic: 'copied', acks: -1, messages: Array.from({ length: 10 }, (_, i) => ({ value: `r${round}-m${i}`, partition: (round + i) % 2 })) });
    }
    const segment = (nodeId: number, partition: number): Buffer | null => {
      try {
        return readFileSync(join(dirs.get(nodeId)!, `copied-${partition}`, '00000000000000000000.log'));
      } catch {
        return null;
      }
    };
    for (const partition of [0, 1]) {
      await until(`partition ${partition} copied`, async () => {
        const [a, b] = [segment(1, partition), segment(2, partition)];
        return a !== null && b !== null && a.length > 0 && a.equals(b);
      });
    }
    // 100 records in each partition's log, on both brokers.
    const offsets = await admin.fetchTopicOffsets('copied');
    expect(offsets.map((o) => o.high).sort()).toEqual(['100', '100']);
  }, 60_000);

  it('leaves a killed broker\'s partitions leaderless until it returns, and loses nothing that was acknowledged', async () => {
    const one = running.get(1)!.bootstrap;
    const kafka = client(one);
    const before = (await clusterView(one, 'spread')).partitions.map((p) => p.leader);
    expect(new Set(before)).toEqual(new Set([1, 2]));
    process.kill(running.get(2)!.pid, 'SIGKILL');
    await running.get(2)!.stop();
    running.delete(2);

    // The lease runs out after broker.session.timeout.ms; the controller then takes leadership away.
    await until('broker 2 gone from the cluster', async () => (await clusterView(one, 'spread')).brokers.length === 1);
    const during = await until('broker 2 partitions without a leader', async () => {
      const v = await clusterView(one, 'spread');
      return v.partitions.every((p, i) => (before[i] === 2 ? p.leader === -1 : p.leader === 1)) && v;
    });
    expect(during.controller).toBe(1);
    expect(during.partitions.map((p) => p.errorCode)).toEqual(before.map((l) => (l === 2 ? ErrorCode.LEADER_NOT_AVAILABLE : ErrorCode.NONE)));

    // A topic wholly on broker 1 takes writes all along (kafkajs refuses to write to a topic while
    // any of its partitions has no leader, against Apache Kafka too).
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    closers.push(() => producer.disconnect());
    await producer.send({ topic: 'on-one', acks: -1, messages: [{ value: 'while-2-was-down' }] });

    await start(2);
    await until('broker 2 leading its partitions again', async () => (await clusterView(one, 'spread')).partitions.every((p, i) => p.leader === before[i]));

    // Everything acknowledged is there, in order, from both brokers.
    const consumer = kafka.consumer({ groupId: 'after-restart', sessionTimeout: 10_000, rebalanceTimeout: 10_000 });
    await consumer.connect();
    closers.push(() => consumer.disconnect());
    await consumer.subscribe({ topics: ['spread', 'on-one'], fromBeginning: true });
    const want = [...acknowledged.values()].reduce((n, v) => n + v.length, 0) + 1;
    const got = new Map<number, string[]>();
    let count = 0;
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          const key = topic === 'on-one' ? -1 : partition;
          got.set(key, [...(got.get(key) ?? []), message.value!.toString()]);
          if (++count === want) resolve();
        },
      });
    });
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`consumed ${count} of ${want}`)), 30_000))]);
    for (const [p, values] of acknowledged) expect(got.get(p)).toEqual(values);
    expect(got.get(-1)).toEqual(['while-2-was-down']);
  }, 90_000);
});

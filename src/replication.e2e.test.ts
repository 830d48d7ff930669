/**
 * Replication across three gregor broker processes on one etcd, driven by
 * kafkajs 2.2.4: followers join the ISR, acks=all waits for them, a leader
 * killed with SIGKILL is replaced by an in-sync follower without losing an
 * acknowledged record, and comes back as a follower whose log is then the
 * same bytes as the others'. Skipped where etcd is not installed, except
 * under CI, where that fails the run.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterView, until as untilWithin } from './cluster-test-support.js';
// @ts-expect-error: JavaScript test helpers without type declarations.
import { etcdBinary, startEtcd } from '../compat-tests/lib/etcd.mjs';
// @ts-expect-error: JavaScript test helpers without type declarations.
import { startGregor } from '../compat-tests/lib/gregor.mjs';

interface Gregor {
  bootstrap: string;
  pid: number;
  stop(): Promise<number>;
}

const hasEtcd = etcdBinary() !== null;
let etcd: { endpoint: string; stop(): Promise<void> };
const dirs = new Map<number, string>();
const running = new Map<number, Gregor>();

function start(nodeId: number): Promise<Gregor> {
  let dir = dirs.get(nodeId);
  if (!dir) dirs.set(nodeId, (dir = mkdtempSync(join(tmpdir(), `gregor-repl-${nodeId}-`))));
  return startGregor({
    dataDir: dir,
    args: ['--broker-id', String(nodeId), '--metadata', `etcd://${etcd.endpoint}`, '--override', 'broker.session.timeout.ms=2000'],
  }).then((g: Gregor) => {
    running.set(nodeId, g);
    return g;
  });
}

async function kill(nodeId: number): Promise<void> {
  const g = running.get(nodeId)!;
  process.kill(g.pid, 'SIGKILL');
  await g.stop();
  running.delete(nodeId);
}

/** Waits of this test: a broker restarted has to catch up before the ISR holds it again. */
const until = <T>(what: string, probe: () => Promise<T | null | undefined | false>): Promise<T> => untilWithin(what, probe, 30_000);

const segment = (nodeId: number, topic: string, partition: number): Buffer =>
  readFileSync(join(dirs.get(nodeId)!, `${topic}-${partition}`, '00000000000000000000.log'));

describe.skipIf(!hasEtcd && !process.env.CI)('replication across three brokers on etcd, with kafkajs', () => {
  beforeAll(async () => {
    etcd = await startEtcd();
    await Promise.all([start(1), start(2), start(3)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([...running.values()].map((g) => g.stop()));
    await etcd?.stop();
    for (const d of dirs.values()) rmSync(d, { recursive: true, force: true });
  });

  it('grows the ISR to every replica, fails over to an in-sync follower, loses no acknowledged record, and the old leader rejoins with the same bytes', async () => {
    const any = (): string => [...running.values()][0]!.bootstrap;
    const kafka = new Kafka({ clientId: 'replication-test', brokers: [running.get(1)!.bootstrap, running.get(2)!.bootstrap, running.get(3)!.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } });
    const admin = kafka.admin();
    await admin.connect();
    await until('three brokers', async () => (await admin.describeCluster()).brokers.length === 3);
    await admin.createTopics({
      topics: [{ topic: 'safe', numPartitions: 1, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
      waitForLeaders: true,
    });
    await admin.disconnect();
    const first = await until('the ISR to hold all three', async () => {
      const [p] = (await clusterView(any(), 'safe')).partitions;
      return p && p.isr.length === 3 && p;
    });

    const acknowledged: string[] = [];
    const send = async (producer: ReturnType<Kafka['producer']>, n: number, tag: string): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const value = `${tag}-${i}`;
        await producer.send({ topic: 'safe', acks: -1, messages: [{ value }] });
        acknowledged.push(value);
      }
    };
    let producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await send(producer, 50, 'before');

    // The leader dies; an in-sync follower takes over at a new epoch, and acks=all goes on with two.
    const oldLeader = first.leader;
    await kill(oldLeader);
    const after = await until('a new leader from the ISR', async () => {
      const [p] = (await clusterView(any(), 'safe')).partitions;
      return p && p.leader !== oldLeader && p.leader >= 0 && p;
    });
    expect(after.leaderEpoch).toBeGreaterThan(first.leaderEpoch);
    expect(after.isr).not.toContain(oldLeader);
    await producer.disconnect();
    producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await send(producer, 50, 'during');

    // With a second broker down, min.insync.replicas=2 refuses acks=all: nothing is acknowledged unreplicated.
    const second = [...running.keys()].find((id) => id !== after.leader)!;
    await kill(second);
    await until('the ISR down to the leader', async () => {
      const [p] = (await clusterView(running.get(after.leader)!.bootstrap, 'safe')).partitions;
      return p && p.isr.length === 1;
    });
    await producer.disconnect();
    producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 1, initialRetryTime: 100 } });
    await producer.connect();
    const refused = await producer.send({ topic: 'safe', acks: -1, messages: [{ value: 'refused' }] }).then(
      () => 'acknowledged',
      (err: { type?: string; cause?: { type?: string } }) => err.cause?.type ?? err.type ?? String(err),
    );
    expect(refused).toMatch(/NOT_ENOUGH_REPLICAS/);
    await producer.disconnect();

    // Both come back: they cut what the leader does not have, catch up and rejoin the ISR.
    await Promise.all([start(oldLeader), start(second)]);
    await until('the ISR back to all three', async () => {
      const [p] = (await clusterView(any(), 'safe')).partitions;
      return p && p.isr.length === 3;
    });
    producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await send(producer, 20, 'after');
    await producer.disconnect();
    await until('the three logs the same bytes', async () => {
      const [a, b, c] = [segment(1, 'safe', 0), segment(2, 'safe', 0), segment(3, 'safe', 0)];
      return a.length > 0 && a.equals(b) && a.equals(c);
    });

    // Every acknowledged record, once and in order; the refused one nowhere.
    const consumer = kafka.consumer({ groupId: 'replication-readers', sessionTimeout: 10_000, rebalanceTimeout: 10_000 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'safe', fromBeginning: true });
    const got: string[] = [];
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          got.push(message.value!.toString());
          if (got.length >= acknowledged.length) resolve();
        },
      });
    });
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`consumed ${got.length} of ${acknowledged.length}`)), 30_000))]);
    await consumer.disconnect();
    expect(got).toEqual(acknowledged);
  }, 180_000);
});

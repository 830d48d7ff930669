/**
 * Several log directories (JBOD) on a cluster of three gregor broker
 * processes on one etcd, each with two directories: broker 1 comes back
 * from a restart with its second directory unusable (as after a disk
 * failure). Its replicas that lived there go offline (Metadata lists them
 * among the offline replicas, out of the ISR, led by other brokers), the
 * ones in its first directory catch up as usual, DescribeLogDirs reports the
 * broken directory with KAFKA_STORAGE_ERROR, and kafkajs with acks=all
 * loses nothing. With the directory repaired and the broker restarted, every
 * replica is back in sync. Skipped where etcd is not installed, except under
 * CI, where that fails the run.
 */
import { readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import { ErrorCode } from '../wire/errors.js';
import type { DescribeLogDirsRequest } from '../wire/messages/describe-log-dirs-request.js';
import type { DescribeLogDirsResponse } from '../wire/messages/describe-log-dirs-response.js';
import { clusterView, until } from './cluster-test-support.js';
import { TestCluster, hasEtcd } from './test-cluster.js';

const TOPIC = 'jbod';
const PARTITIONS = 6;

let cluster: TestCluster;

/** DescribeLogDirs v4 of broker `nodeId`: per directory, its error and the partitions of TOPIC in it. */
async function logDirsOf(nodeId: number): Promise<{ dir: string; errorCode: number; partitions: number[] }[]> {
  const b = cluster.running.get(nodeId)!.bootstrap;
  const at = b.lastIndexOf(':');
  const conn = await WireConnection.open(b.slice(0, at), Number(b.slice(at + 1)));
  try {
    const res = await conn.request<DescribeLogDirsResponse, DescribeLogDirsRequest>(api('DescribeLogDirs'), 4, { topics: null });
    return res.results.map((r) => ({
      dir: r.logDir,
      errorCode: r.errorCode,
      partitions: r.topics.filter((t) => t.name === TOPIC).flatMap((t) => t.partitions.map((p) => p.partitionIndex)).sort((x, y) => x - y),
    }));
  } finally {
    conn.close();
  }
}

describe.skipIf(!hasEtcd && !process.env.CI)('two log directories per broker, one of them failed', () => {
  beforeAll(async () => {
    cluster = await TestCluster.start([1, 2, 3], ['broker.session.timeout.ms=6000', 'auto.leader.rebalance.enable=false'], { logDirs: 2 });
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('takes the replicas in the failed directory offline, moves their leadership, keeps the others, and loses nothing acknowledged', async () => {
    const kafka = new Kafka({ clientId: 'jbod-test', brokers: cluster.bootstraps(), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    try {
      await until('three brokers', async () => (await admin.describeCluster()).brokers.length === 3);
      // Broker 1 leads partitions 0 and 3 and follows the others.
      const rotations = [
        [1, 2, 3],
        [2, 3, 1],
        [3, 1, 2],
      ];
      await admin.createTopics({
        topics: [{ topic: TOPIC, replicaAssignment: Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, replicas: rotations[partition % 3]! })), configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
        waitForLeaders: true,
      });
      const bootstrap2 = () => cluster.running.get(2)!.bootstrap;
      await until('every ISR at three', async () => (await clusterView(bootstrap2(), TOPIC)).partitions.every((p) => p.isr.length === 3));
      const before = await logDirsOf(1);
      expect(before.map((d) => d.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
      // Broker 1 spread its six replicas over both directories.
      expect(before.flatMap((d) => d.partitions).sort()).toEqual([0, 1, 2, 3, 4, 5]);
      expect(before.every((d) => d.partitions.length > 0)).toBe(true);

      await producer.connect();
      const sent: string[] = [];
      const send = async (from: number, count: number) => {
        for (let i = from; i < from + count; i++) {
          await producer.send({ topic: TOPIC, acks: -1, messages: [{ value: `r-${i}`, partition: i % PARTITIONS }] });
          sent.push(`r-${i}`);
        }
      };
      await send(0, 60);

      // Broker 1 stops, and its second directory is gone when it starts again: a file stands in its place.
      await cluster.stop(1);
      const second = join(cluster.dir(1), 'd2');
      const lost = readdirSync(second).filter((n) => n.startsWith(`${TOPIC}-`)).map((n) => Number(n.slice(TOPIC.length + 1))).sort((a, b) => a - b);
      expect(lost).toEqual(before[1]!.partitions);
      renameSync(second, `${second}.away`);
      writeFileSync(second, 'a failed disk');
      await cluster.start(1);

      await until(
        "broker 1's replicas in the failed directory offline, out of the ISR and led by others; the rest in sync",
        async () => {
          const view = await clusterView(bootstrap2(), TOPIC);
          return view.partitions.every((p, i) =>
            lost.includes(i) ? p.offline.includes(1) && !p.isr.includes(1) && p.leader !== 1 && p.leader >= 0 : p.isr.length === 3 && p.offline.length === 0,
          );
        },
        30_000,
      );
      const during = await logDirsOf(1);
      expect(during.map((d) => [d.dir.endsWith('d2'), d.errorCode, d.partitions])).toEqual([
        [false, ErrorCode.NONE, before[0]!.partitions],
        [true, ErrorCode.KAFKA_STORAGE_ERROR, []],
      ]);

      // Producing with acks=all goes on; every record acknowledged is there once.
      await send(60, 60);
      const consumer = kafka.consumer({ groupId: 'jbod-readers' });
      await consumer.connect();
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      const seen: string[] = [];
      await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
      await until('every acknowledged record consumed', async () => seen.length >= sent.length, 60_000);
      await consumer.disconnect();
      expect([...seen].sort()).toEqual([...sent].sort());

      // Repaired and restarted: every replica of broker 1 is back in sync, none offline.
      await cluster.stop(1);
      rmSync(second);
      renameSync(`${second}.away`, second);
      await cluster.start(1);
      await until(
        'every replica back in sync',
        async () => (await clusterView(bootstrap2(), TOPIC)).partitions.every((p) => p.isr.length === 3 && p.offline.length === 0),
        30_000,
      );
      expect((await logDirsOf(1)).map((d) => d.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    } finally {
      await producer.disconnect().catch(() => {});
      await admin.disconnect();
    }
  }, 180_000);
});

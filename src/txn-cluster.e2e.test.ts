/**
 * Transactions on a cluster where the partitions' leaders, the transaction
 * coordinator and the group coordinator are different brokers: three gregor
 * processes on one etcd, every topic with three replicas, min.insync.replicas
 * 2 for the test's topics and transaction.state.log.min.isr 2. A kafkajs 2.2.4 transactional producer commits and
 * aborts transactions over three partitions led by three brokers, and commits
 * a group's offsets in a transaction (sendOffsets) whose group coordinator is
 * yet another broker than its transaction coordinator. The coordinator's
 * markers must reach every partition's leader (WriteTxnMarkers), and each
 * leader must verify the producer's first batch with the coordinator
 * (AddPartitionsToTxn, verify only), or the transaction never completes.
 * read_committed readers see exactly the committed records, read_uncommitted
 * ones the aborted too, and the group's offsets become visible on commit.
 * Skipped where etcd is not installed, except under CI, where that fails the run.
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import { ErrorCode } from '../wire/errors.js';
import type { FindCoordinatorRequest } from '../wire/messages/find-coordinator-request.js';
import type { FindCoordinatorResponse } from '../wire/messages/find-coordinator-response.js';
import { clusterView, until } from './cluster-test-support.js';
import { TestCluster, hasEtcd } from './test-cluster.js';

const TOPIC = 'orders';
const OUT = 'orders-out';
const PARTITIONS = 3;
let cluster: TestCluster;
let kafka: Kafka;

/** The broker FindCoordinator names for `key` (0: group, 1: transactional id), once it names one. */
async function coordinatorOf(key: string, keyType: 0 | 1): Promise<number> {
  return until(`the coordinator of ${key}`, async () => {
    const b = cluster.any();
    const at = b.lastIndexOf(':');
    const conn = await WireConnection.open(b.slice(0, at), Number(b.slice(at + 1)));
    try {
      const r = await conn.request<FindCoordinatorResponse, FindCoordinatorRequest>(api('FindCoordinator'), 3, { key, keyType, coordinatorKeys: [] });
      return r.errorCode === ErrorCode.NONE && r.nodeId;
    } finally {
      conn.close();
    }
  });
}

/** Leaders by partition of `topic`, once every partition has its three replicas in sync. */
async function fullIsr(topic: string): Promise<number[]> {
  return until(`every replica of ${topic} in sync`, async () => {
    const v = await clusterView(cluster.any(), topic);
    return v.partitions.length > 0 && v.partitions.every((p) => p.leader >= 0 && p.isr.length === 3) && v.partitions.map((p) => p.leader);
  });
}

/** Every value of `topic`, partition by partition in offset order, as a read_committed or read_uncommitted reader sees it. */
async function readAll(topic: string, readUncommitted: boolean, expected: number): Promise<string[][]> {
  const consumer = kafka.consumer({ groupId: `reader-${topic}-${readUncommitted}-${Date.now()}`, readUncommitted, maxWaitTimeInMs: 100 });
  const byPartition: string[][] = Array.from({ length: PARTITIONS }, () => []);
  let seen = 0;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        byPartition[partition]!.push(message.value!.toString());
        seen++;
      },
    });
    await until(`${expected} records of ${topic}`, async () => seen >= expected, 30_000);
    // Anything beyond the expected count would arrive by now.
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    await consumer.disconnect();
  }
  return byPartition;
}

function values(txn: string): string[][] {
  return Array.from({ length: PARTITIONS }, (_, p) => Array.from({ length: 4 }, (_, i) => `${txn}-${p}-${i}`));
}

describe.skipIf(!hasEtcd && !process.env.CI)('transactions across three brokers', () => {
  let admin: Admin;

  beforeAll(async () => {
    cluster = await TestCluster.start(
      [1, 2, 3],
      [
        'broker.session.timeout.ms=6000',
        'default.replication.factor=3',
        'offsets.topic.replication.factor=3',
        'offsets.topic.num.partitions=6',
        'transaction.state.log.replication.factor=3',
        'transaction.state.log.min.isr=2',
        'transaction.state.log.num.partitions=6',
        'group.initial.rebalance.delay.ms=0',
      ],
    );
    kafka = new Kafka({ clientId: 'txn-cluster', brokers: cluster.bootstraps(), logLevel: logLevel.NOTHING, retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 } });
    admin = kafka.admin();
    await admin.connect();
    await until('three brokers', async () => (await admin.describeCluster()).brokers.length === 3);
    const configEntries = [{ name: 'min.insync.replicas', value: '2' }];
    await admin.createTopics({
      topics: [
        { topic: TOPIC, numPartitions: PARTITIONS, configEntries },
        { topic: OUT, numPartitions: PARTITIONS, configEntries },
      ],
      waitForLeaders: true,
    });
  }, 60_000);

  afterAll(async () => {
    await admin?.disconnect();
    await cluster?.close();
  }, 60_000);

  it('starts a new topic with every replica in sync: 30 partitions with full ISRs in the answer\'s wake', async () => {
    await admin.createTopics({ topics: [{ topic: 'wide', numPartitions: 30 }] });
    // Read right after the answer, from a broker that did not necessarily create it.
    const v = await until('the topic on every broker', async () => {
      const views = await Promise.all(cluster.bootstraps().map((b) => clusterView(b, 'wide')));
      return views.every((x) => x.partitions.length === 30) && views;
    });
    for (const view of v) for (const p of view.partitions) expect(p.isr).toEqual([1, 2, 3]);
  });

  it('commits and aborts over partitions, coordinators and group coordinator on different brokers', async () => {
    const leaders = await fullIsr(TOPIC);
    expect(new Set(leaders).size).toBe(3);
    await fullIsr(OUT);
    // Both internal topics come into being with the first question for a coordinator of their kind.
    await coordinatorOf('probe', 1);
    await coordinatorOf('probe', 0);
    await fullIsr('__transaction_state');
    await fullIsr('__consumer_offsets');
    let txnId = '';
    let txnCoordinator = -1;
    for (let i = 0; txnCoordinator < 0 || txnCoordinator === leaders[0]; i++) {
      txnId = `tx-${i}`;
      txnCoordinator = await coordinatorOf(txnId, 1);
    }
    let groupId = '';
    let groupCoordinator = -1;
    for (let i = 0; groupCoordinator < 0 || groupCoordinator === txnCoordinator || groupCoordinator === leaders[0]; i++) {
      groupId = `group-${i}`;
      groupCoordinator = await coordinatorOf(groupId, 0);
    }
    // Partition 0's leader, the transaction coordinator and the group coordinator: three brokers.
    expect(new Set([leaders[0], txnCoordinator, groupCoordinator]).size).toBe(3);

    const producer = kafka.producer({ transactionalId: txnId, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const send = async (txn: string, commit: boolean): Promise<void> => {
      const t = await producer.transaction();
      for (let p = 0; p < PARTITIONS; p++) await t.send({ topic: TOPIC, messages: values(txn)[p]!.map((value) => ({ partition: p, value })) });
      if (commit) await t.commit();
      else await t.abort();
    };
    await send('a', true);
    await send('b', false);
    await send('c', true);

    const committed = await readAll(TOPIC, false, 2 * 4 * PARTITIONS);
    for (let p = 0; p < PARTITIONS; p++) expect(committed[p]).toEqual([...values('a')[p]!, ...values('c')[p]!]);
    const everything = await readAll(TOPIC, true, 3 * 4 * PARTITIONS);
    for (let p = 0; p < PARTITIONS; p++) expect(everything[p]).toEqual([...values('a')[p]!, ...values('b')[p]!, ...values('c')[p]!]);

    // Consume-transform-produce: the group's offsets commit with the transaction, on the group coordinator's broker.
    const t = await producer.transaction();
    for (let p = 0; p < PARTITIONS; p++) await t.send({ topic: OUT, messages: committed[p]!.map((value) => ({ partition: p, value: value.toUpperCase() })) });
    const ends = await admin.fetchTopicOffsets(TOPIC);
    await t.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: TOPIC, partitions: ends.map((e) => ({ partition: e.partition, offset: e.high })) }] });
    await t.commit();
    const out = await readAll(OUT, false, 2 * 4 * PARTITIONS);
    for (let p = 0; p < PARTITIONS; p++) expect(out[p]).toEqual(committed[p]!.map((v) => v.toUpperCase()));
    const offsets = await until('the group offsets committed by the transaction', async () => {
      const [got] = await admin.fetchOffsets({ groupId, topics: [TOPIC] });
      return got!.partitions.every((p) => p.offset !== '-1') && got!.partitions;
    });
    expect(offsets.map((p) => [p.partition, p.offset]).sort()).toEqual(ends.map((e) => [e.partition, e.high]).sort());
    await producer.disconnect();
  }, 120_000);

  it('changed partition states without one compare-and-swap conflict', () => {
    // Per-partition state: leaders of one topic's partitions never contend, and nothing here raced the controller.
    for (const [id, b] of cluster.running) {
      const conflicts = b
        .output()
        .split('\n')
        .filter((l) => /"level":(40|50)/.test(l) && /compare-and-swap|times in a row|ISR change/.test(l));
      expect(conflicts, `broker ${id}`).toEqual([]);
    }
  });
});

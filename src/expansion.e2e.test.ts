/**
 * Hot expansion of a cluster of gregor broker processes on one etcd: a
 * fourth broker joins while a kafkajs producer with acks=all goes on, a
 * reassignment (AlterPartitionReassignments v0) moves replicas onto it and
 * off broker 1 (ListPartitionReassignments shows it while the new broker is
 * held back), broker 1's copies are then deleted, and no acknowledged record
 * is lost; when the new broker's partition loses it and gets it back,
 * ElectLeaders gives the partition back to its preferred replica (the
 * automatic rebalance is off here; src/controlled-shutdown.e2e.test.ts has
 * it on). Skipped where etcd is not installed, except under CI, where that
 * fails the run.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import { ErrorCode } from '../wire/errors.js';
import type { AlterPartitionReassignmentsRequest } from '../wire/messages/alter-partition-reassignments-request.js';
import type { AlterPartitionReassignmentsResponse } from '../wire/messages/alter-partition-reassignments-response.js';
import type { ElectLeadersRequest } from '../wire/messages/elect-leaders-request.js';
import type { ElectLeadersResponse } from '../wire/messages/elect-leaders-response.js';
import type { ListPartitionReassignmentsRequest } from '../wire/messages/list-partition-reassignments-request.js';
import type { ListPartitionReassignmentsResponse } from '../wire/messages/list-partition-reassignments-response.js';
import type { MetadataRequest } from '../wire/messages/metadata-request.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { clusterView, until } from './cluster-test-support.js';
import { TestCluster, hasEtcd } from './test-cluster.js';

let cluster: TestCluster;

async function request<Res, Req>(name: Parameters<typeof api>[0], version: number, body: Req): Promise<Res> {
  const b = cluster.running.get(2)!.bootstrap;
  const at = b.lastIndexOf(':');
  const conn = await WireConnection.open(b.slice(0, at), Number(b.slice(at + 1)));
  try {
    return await conn.request<Res, Req>(api(name), version, body);
  } finally {
    conn.close();
  }
}

/** Each partition's replicas, in order, from Metadata v12. */
async function replicasOf(topic: string): Promise<number[][]> {
  const md = await request<MetadataResponse, MetadataRequest>('Metadata', 12, {
    topics: [{ topicId: ZERO_UUID, name: topic }],
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: false,
    includeTopicAuthorizedOperations: false,
  });
  return [...md.topics[0]!.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex).map((p) => [...p.replicaNodes]);
}

const TARGETS = [
  [4, 2, 3],
  [2, 4, 3],
  [3, 2, 4],
];

describe.skipIf(!hasEtcd && !process.env.CI)('hot expansion: a fourth broker, a reassignment onto it, preferred leaders back', () => {
  beforeAll(async () => {
    // A session long enough that broker 4 held back (SIGSTOP) for a moment stays registered.
    cluster = await TestCluster.start([1, 2, 3], ['broker.session.timeout.ms=6000', 'auto.leader.rebalance.enable=false']);
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('moves replicas onto a broker that joined while producing, loses nothing, and gives partitions back to their preferred replicas', async () => {
    const kafka = new Kafka({ clientId: 'expansion-test', brokers: cluster.bootstraps(), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await until('three brokers', async () => (await admin.describeCluster()).brokers.length === 3);
    await admin.createTopics({
      topics: [{ topic: 'grow', replicaAssignment: [0, 1, 2].map((partition) => ({ partition, replicas: [1, 2, 3] })), configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
      waitForLeaders: true,
    });
    await until('every ISR at three', async () => (await clusterView(cluster.running.get(2)!.bootstrap, 'grow')).partitions.every((p) => p.isr.length === 3));

    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    // A send that fails (kafkajs gives up after its retries while leadership moves) is not acknowledged and not counted.
    const acknowledged: string[] = [];
    let sending = true;
    const load = (async () => {
      for (let i = 0; sending && i < 200_000; i++) {
        const value = `r-${i}`;
        try {
          await producer.send({ topic: 'grow', acks: -1, messages: [{ value, partition: i % 3 }] });
          acknowledged.push(value);
        } catch {
          // not acknowledged
        }
      }
    })();
    await until('records flowing', async () => acknowledged.length >= 100);

    // A fourth broker joins; nothing else restarts.
    await cluster.start(4);
    await until('four brokers', async () => (await admin.describeCluster()).brokers.length === 4);

    // Broker 4 is held back, so the moves stay in progress until it goes on.
    cluster.pause(4, true);
    let listed: ListPartitionReassignmentsResponse;
    try {
      const alter = await request<AlterPartitionReassignmentsResponse, AlterPartitionReassignmentsRequest>('AlterPartitionReassignments', 0, {
        timeoutMs: 30_000,
        allowReplicationFactorChange: true,
        topics: [{ name: 'grow', partitions: TARGETS.map((replicas, partitionIndex) => ({ partitionIndex, replicas })) }],
      });
      expect(alter.errorCode).toBe(ErrorCode.NONE);
      expect(alter.responses[0]!.partitions.map((p) => p.errorCode)).toEqual([0, 0, 0]);
      listed = await request<ListPartitionReassignmentsResponse, ListPartitionReassignmentsRequest>('ListPartitionReassignments', 0, { timeoutMs: 30_000, topics: null });
    } finally {
      cluster.pause(4, false);
    }
    expect(listed.topics).toEqual([
      {
        name: 'grow',
        partitions: TARGETS.map((target, partitionIndex) => ({ partitionIndex, replicas: [...target, 1], addingReplicas: [4], removingReplicas: [1] })),
      },
    ]);

    await until('the reassignment to complete', async () => JSON.stringify(await replicasOf('grow')) === JSON.stringify(TARGETS), 60_000);
    const after = await request<ListPartitionReassignmentsResponse, ListPartitionReassignmentsRequest>('ListPartitionReassignments', 0, { timeoutMs: 30_000, topics: null });
    expect(after.topics).toEqual([]);
    await until('the new replicas in sync, broker 1 out', async () =>
      (await clusterView(cluster.running.get(2)!.bootstrap, 'grow')).partitions.every((p) => JSON.stringify(p.isr) === '[2,3,4]' && p.leader !== 1),
    );
    // Broker 1 holds no replica of the topic any more: its copies are deleted.
    await until("broker 1's copies deleted", async () => [0, 1, 2].every((i) => !existsSync(join(cluster.dir(1), `grow-${i}`))));

    // Broker 4 dies and comes back: its partition leads elsewhere meanwhile, then goes back to it.
    await cluster.kill(4);
    await until('partition 0 led by another', async () => {
      const [p] = (await clusterView(cluster.running.get(2)!.bootstrap, 'grow')).partitions;
      return p && p.leader >= 0 && p.leader !== 4;
    });
    await cluster.start(4);
    await until('broker 4 in sync again', async () => (await clusterView(cluster.running.get(2)!.bootstrap, 'grow')).partitions[0]!.isr.includes(4), 30_000);
    const elect = (electionType: number): Promise<ElectLeadersResponse> =>
      request<ElectLeadersResponse, ElectLeadersRequest>('ElectLeaders', 2, { electionType, topicPartitions: [{ topic: 'grow', partitions: [0, 1, 2] }], timeoutMs: 30_000 });
    // Unclean: every partition has a live leader, nothing to do.
    const unclean = await elect(1);
    expect(unclean.replicaElectionResults[0]!.partitionResult.map((p) => p.errorCode)).toEqual([ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED]);
    // Preferred: partition 0 goes back to broker 4; the others have their preferred leader already.
    const leadersBefore = (await clusterView(cluster.running.get(2)!.bootstrap, 'grow')).partitions.map((p) => p.leader);
    const preferred = await elect(0);
    expect(preferred.errorCode).toBe(ErrorCode.NONE);
    expect(preferred.replicaElectionResults[0]!.partitionResult.map((p) => p.errorCode)).toEqual(
      leadersBefore.map((leader, i) => (leader === TARGETS[i]![0] ? ErrorCode.ELECTION_NOT_NEEDED : ErrorCode.NONE)),
    );
    expect(leadersBefore[0]).not.toBe(4);
    await until('every partition led by its preferred replica', async () => JSON.stringify((await clusterView(cluster.running.get(2)!.bootstrap, 'grow')).partitions.map((p) => p.leader)) === '[4,2,3]');

    const count = acknowledged.length;
    await until('records still flowing', async () => acknowledged.length >= count + 100);
    sending = false;
    await load;
    await producer.disconnect();
    await admin.disconnect();

    // Every acknowledged record is there.
    const consumer = kafka.consumer({ groupId: 'grow-check' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'grow', fromBeginning: true });
    const seen = new Set<string>();
    await consumer.run({ eachMessage: async ({ message }) => void seen.add(message.value!.toString()) });
    await until('every acknowledged record consumed', async () => acknowledged.every((v) => seen.has(v)), 30_000);
    await consumer.disconnect();
  }, 180_000);
});

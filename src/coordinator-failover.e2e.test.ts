/**
 * The group coordinator on a replicated __consumer_offsets, three gregor
 * broker processes on one etcd: an offset commit is answered only once every
 * in-sync replica has it (a stalled follower makes it COORDINATOR_NOT_AVAILABLE
 * after offsets.commit.timeout.ms), and when the coordinator dies its
 * partition's new leader serves every acknowledged commit. Skipped where
 * etcd is not installed, except under CI, where that fails the run.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import type { FindCoordinatorRequest } from '../wire/messages/find-coordinator-request.js';
import type { FindCoordinatorResponse } from '../wire/messages/find-coordinator-response.js';
import type { OffsetCommitRequest } from '../wire/messages/offset-commit-request.js';
import type { OffsetCommitResponse } from '../wire/messages/offset-commit-response.js';
import type { OffsetFetchRequest } from '../wire/messages/offset-fetch-request.js';
import type { OffsetFetchResponse } from '../wire/messages/offset-fetch-response.js';
import { clusterView, until } from './cluster-test-support.js';
import { TestCluster, hasEtcd } from './test-cluster.js';

const COMMIT_TIMEOUT_MS = 1000;
let cluster: TestCluster;

async function onBroker<T>(nodeId: number, body: (c: WireConnection) => Promise<T>): Promise<T> {
  const b = cluster.running.get(nodeId)!.bootstrap;
  const at = b.lastIndexOf(':');
  const conn = await WireConnection.open(b.slice(0, at), Number(b.slice(at + 1)));
  try {
    return await body(conn);
  } finally {
    conn.close();
  }
}

const findCoordinator = (nodeId: number, group: string): Promise<FindCoordinatorResponse> =>
  onBroker(nodeId, (c) => c.request<FindCoordinatorResponse, FindCoordinatorRequest>(api('FindCoordinator'), 3, { key: group, keyType: 0, coordinatorKeys: [] }));

async function commit(nodeId: number, group: string, offset: bigint): Promise<number> {
  const r = await onBroker(nodeId, (c) =>
    c.request<OffsetCommitResponse, OffsetCommitRequest>(api('OffsetCommit'), 8, {
      groupId: group,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [{ name: 'orders', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
    }),
  );
  return r.topics[0]!.partitions[0]!.errorCode;
}

async function committed(nodeId: number, group: string): Promise<{ errorCode: number; offset: bigint }> {
  const r = await onBroker(nodeId, (c) =>
    c.request<OffsetFetchResponse, OffsetFetchRequest>(api('OffsetFetch'), 7, { groupId: group, topics: [{ name: 'orders', partitionIndexes: [0] }], groups: [], requireStable: true }),
  );
  const p = r.topics[0]?.partitions[0];
  return { errorCode: r.errorCode !== ErrorCode.NONE ? r.errorCode : (p?.errorCode ?? -1), offset: p?.committedOffset ?? -1n };
}

describe.skipIf(!hasEtcd && !process.env.CI)('the group coordinator on a replicated __consumer_offsets', () => {
  beforeAll(async () => {
    cluster = await TestCluster.start(
      [1, 2, 3],
      [
        // Long enough that a follower stopped for a second keeps its registration, and stays in the ISR.
        'broker.session.timeout.ms=6000',
        `offsets.commit.timeout.ms=${COMMIT_TIMEOUT_MS}`,
        'offsets.topic.num.partitions=1',
        'offsets.topic.replication.factor=3',
      ],
    );
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('answers a commit once every in-sync replica has it, and the next coordinator serves every acknowledged commit', async () => {
    const kafka = new Kafka({ clientId: 'coordinator-test', brokers: cluster.bootstraps(), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await until('three brokers', async () => (await admin.describeCluster()).brokers.length === 3);
    await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 1, replicationFactor: 3 }], waitForLeaders: true });
    await admin.disconnect();

    // FindCoordinator makes __consumer_offsets (one partition, three replicas); its leader is the coordinator.
    const coordinator = await until('a coordinator for the group', async () => {
      const r = await findCoordinator(1, 'g');
      return r.errorCode === ErrorCode.NONE && r.nodeId;
    });
    await until('all three replicas of __consumer_offsets in sync', async () => {
      const [p] = (await clusterView(cluster.running.get(1)!.bootstrap, '__consumer_offsets')).partitions;
      return p && p.leader === coordinator && p.isr.length === 3;
    });
    expect(await until('a first commit', async () => (await commit(coordinator, 'g', 10n)) === ErrorCode.NONE)).toBe(true);

    // A follower that stops fetching but keeps its place in the ISR holds the answer back.
    const follower = [1, 2, 3].find((id) => id !== coordinator)!;
    cluster.pause(follower, true);
    const t0 = Date.now();
    expect(await commit(coordinator, 'g', 20n)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(COMMIT_TIMEOUT_MS - 50);
    const [held] = (await clusterView(cluster.running.get(coordinator)!.bootstrap, '__consumer_offsets')).partitions;
    expect(held!.isr).toContain(follower);

    // Back, it catches up, and commits are answered again.
    cluster.pause(follower, false);
    await until('a commit answered with the follower back', async () => (await commit(coordinator, 'g', 30n)) === ErrorCode.NONE);

    // The coordinator dies; the partition's new leader loads the group and has the acknowledged commit.
    await cluster.kill(coordinator);
    const next = await until(
      'a new coordinator',
      async () => {
        const r = await findCoordinator(follower, 'g');
        return r.errorCode === ErrorCode.NONE && r.nodeId !== coordinator && cluster.running.has(r.nodeId) && r.nodeId;
      },
      30_000,
    );
    const after = await until('the new coordinator to serve the group', async () => {
      const c = await committed(next, 'g');
      return c.errorCode === ErrorCode.NONE && c;
    });
    expect(after.offset).toBe(30n);
  }, 90_000);
});

/**
 * A cluster through outages of its metadata store and of the brokers' own
 * liveness: three gregor processes on one etcd, a topic of three replicas
 * with min.insync.replicas 2, and kafkajs producing with acks=all
 * throughout.
 *
 * - etcd is killed for longer than the brokers' session timeout, then
 *   started again on its data directory (etcd keeps leases across its
 *   restart): each broker must recognise its own registration under the
 *   lease it lost and take it over, with no broker restarted, every
 *   partition led with a full ISR again soon after, and nothing
 *   acknowledged lost.
 * - every broker is stopped (SIGSTOP) for longer than the session timeout,
 *   so that etcd drops all their registrations, then resumed, one first
 *   (it finds the others gone and leads every partition alone) and the
 *   other two after it: they register again by themselves and the ISRs are
 *   full again within 10 s of their resumption.
 *
 * Skipped where etcd is not installed, except under CI, where that fails the run.
 */
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import type { ApiVersionsRequest } from '../wire/messages/api-versions-request.js';
import type { ApiVersionsResponse } from '../wire/messages/api-versions-response.js';
import { clusterView, until } from './cluster-test-support.js';
import { TestCluster, hasEtcd } from './test-cluster.js';

const SESSION_TIMEOUT_MS = 3000;
// Below the 10 s after which the test harness kills a broker that did not stop on SIGTERM, with room
// for the steps after it (STOP_STEPS_GRACE_MS in broker.ts) and a process's 2 s to end by itself.
const SHUTDOWN_TIMEOUT_MS = 5000;
const TOPIC = 'outage';
const MANY = 'many';
const PARTITIONS = 3;
let cluster: TestCluster;
let kafka: Kafka;

/** Records a producer was told are written, by "partition:offset". */
const acknowledged = new Map<string, string>();

/** Produces to every partition, one record at a time per partition, until `stop` is set; keeps what was acknowledged. */
function produceUntil(producer: Producer, stop: { done: boolean }): Promise<void> {
  return Promise.all(
    Array.from({ length: PARTITIONS }, async (_, partition) => {
      for (let i = 0; !stop.done; i++) {
        const value = `p${partition}-${i}`;
        try {
          const [meta] = await producer.send({ topic: TOPIC, acks: -1, timeout: 5000, messages: [{ partition, value }] });
          acknowledged.set(`${partition}:${meta!.baseOffset}`, value);
        } catch {
          // Not acknowledged: nothing to check for it. A pause before the next try keeps the loop bounded.
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }),
  ).then(() => undefined);
}

/** Every partition of `topic` (and the internal ones) led, with all three replicas in sync, as broker `from` sees it. */
async function allInSync(topics: readonly string[]): Promise<boolean> {
  for (const b of cluster.bootstraps()) {
    for (const topic of topics) {
      const v = await clusterView(b, topic);
      if (v.brokers.length !== 3 || v.partitions.length === 0 || !v.partitions.every((p) => p.leader >= 0 && p.isr.length === 3)) {
        lastSeen = `${b} ${topic}: brokers [${v.brokers}], ${v.partitions.map((p) => `${p.leader}/${p.leaderEpoch}[${p.isr}]`).join(' ')}`;
        return false;
      }
    }
  }
  return true;
}
/** The last state allInSync found wanting, for the failure message. */
let lastSeen = '';

/** Reads the whole topic back and returns the records acknowledged but not found at their offsets. */
async function missingAcknowledged(): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: `outage-check-${Date.now()}`, readUncommitted: true, maxWaitTimeInMs: 100 });
  const found = new Map<string, string>();
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        found.set(`${partition}:${message.offset}`, message.value!.toString());
      },
    });
    await until('every acknowledged record read back', async () => [...acknowledged.keys()].every((k) => found.has(k)), 30_000).catch(() => undefined);
  } finally {
    await consumer.disconnect();
  }
  return [...acknowledged].filter(([k, v]) => found.get(k) !== v).map(([k, v]) => `${k}=${v} (found ${found.get(k)})`);
}

describe.skipIf(!hasEtcd && !process.env.CI)('a cluster through etcd and broker outages', () => {
  beforeAll(async () => {
    cluster = await TestCluster.start(
      [1, 2, 3],
      [
        `broker.session.timeout.ms=${SESSION_TIMEOUT_MS}`,
        `shutdown.timeout.ms=${SHUTDOWN_TIMEOUT_MS}`,
        'default.replication.factor=3',
        'offsets.topic.replication.factor=3',
        'offsets.topic.num.partitions=3',
        'transaction.state.log.replication.factor=3',
        'transaction.state.log.num.partitions=3',
      ],
      { fixedPorts: true },
    );
    kafka = new Kafka({ clientId: 'outage', brokers: cluster.bootstraps(), logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 } });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await until('three brokers', async () => (await admin.describeCluster()).brokers.length === 3);
      await admin.createTopics({
        topics: [
          { topic: TOPIC, numPartitions: PARTITIONS, configEntries: [{ name: 'min.insync.replicas', value: '2' }] },
          // Enough partitions that taking them all back into sync is more than a write or two.
          { topic: MANY, numPartitions: 60 },
        ],
        waitForLeaders: true,
      });
    } finally {
      await admin.disconnect();
    }
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('takes back every registration after etcd was away longer than the session timeout, with no broker restarted and nothing acknowledged lost', async () => {
    const pids = new Map([...cluster.running].map(([id, b]) => [id, b.pid]));
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const stop = { done: false };
    const load = produceUntil(producer, stop);
    try {
      await until('records acknowledged before the outage', async () => acknowledged.size >= 30);
      await cluster.etcdKill();
      // Longer than the session timeout: every broker's lease runs out on its side.
      await new Promise((r) => setTimeout(r, SESSION_TIMEOUT_MS * 4));
      const before = acknowledged.size;
      await cluster.etcdStart();
      const t0 = Date.now();
      // Every broker whose lease ran out on its side is registered again (the others kept theirs)...
      const reRegistered = (b: { output(): string }): boolean => {
        const out = b.output();
        const lost = out.lastIndexOf('lost the etcd lease');
        return lost < 0 || out.indexOf('registered in etcd again', lost) > 0;
      };
      await until('every broker registered again', async () => [...cluster.running.values()].every(reRegistered), 30_000);
      // ...and every partition is led, with all three replicas in sync.
      await until('every partition led and in sync again', () => allInSync([TOPIC]), 30_000);
      console.log(`etcd outage: every broker registered and every partition led with a full ISR ${Date.now() - t0} ms after etcd was back`);
      await until('records acknowledged after the outage', async () => acknowledged.size >= before + 30);
    } finally {
      stop.done = true;
      await load;
      await producer.disconnect();
    }
    // The same processes, none of which gave up its node id.
    for (const [id, b] of cluster.running) {
      expect(b.pid).toBe(pids.get(id));
      expect(b.output()).not.toMatch(/another broker has this node id/);
      // A broker whose lease ran out on its side took its registration over; one whose keepalive came through kept it.
      if (/lost the etcd lease/.test(b.output())) expect(b.output()).toMatch(/took over this broker's registration from its lost lease/);
    }
    expect([...cluster.running.values()].some((b) => /took over this broker's registration/.test(b.output()))).toBe(true);
    expect(await missingAcknowledged()).toEqual([]);
  }, 120_000);

  it('registers again by itself after every broker was stopped past the session timeout, and the ISRs are full within 10 s', async () => {
    await until('in sync before the pause', () => allInSync([TOPIC, MANY]));
    cluster.pauseAll(true);
    // etcd drops every registration meanwhile.
    await new Promise((r) => setTimeout(r, SESSION_TIMEOUT_MS * 2 + 1000));
    const registrations = (b: { output(): string }): number => b.output().split('registered in etcd again').length;
    const before = new Map([...cluster.running].map(([id, b]) => [id, registrations(b)]));
    // Broker 1 first, alone long enough to find the others gone and lead everything with an ISR of itself;
    // then the other two, which must catch up and be taken back into every ISR.
    cluster.pause(1, false);
    await until('broker 1 leading alone', async () => {
      const v = await clusterView(cluster.running.get(1)!.bootstrap, MANY);
      return v.partitions.every((p) => p.leader === 1 && p.isr.length === 1);
    });
    cluster.pauseAll(false);
    const t0 = Date.now();
    // Each broker learns that its registration went (the images answered right after the resume are the old ones)...
    await until(
      'every broker registered again',
      async () => [...cluster.running].every(([id, b]) => registrations(b) > before.get(id)!),
      10_000,
    );
    // ...and within 10 s of the resume every partition is led with all three replicas in sync again.
    await until('every partition led and in sync again', () => allInSync([TOPIC, MANY]), Math.max(0, 10_000 - (Date.now() - t0))).catch((err: Error) => {
      throw new Error(`${err.message}; last seen ${lastSeen}`);
    });
    console.log(`SIGSTOP of every broker: full ISRs ${Date.now() - t0} ms after the last two were resumed`);
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    try {
      const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ partition: 0, value: 'after-pause' }] });
      acknowledged.set(`0:${meta!.baseOffset}`, 'after-pause');
    } finally {
      await producer.disconnect();
    }
    expect(await missingAcknowledged()).toEqual([]);
  }, 90_000);

  it('stops, exiting non-zero, when it finds another live broker registered under its node id', async () => {
    // Broker 3 stalls past its session; meanwhile another process takes node id 3.
    cluster.pause(3, true);
    await until('broker 3 gone from the cluster', async () => !(await clusterView(cluster.running.get(1)!.bootstrap, TOPIC)).brokers.includes(3), 20_000);
    const stranger = await cluster.startStranger(3);
    const stalled = cluster.running.get(3)!;
    cluster.pause(3, false);
    // It exits by itself: stop() only collects the exit code once the process is gone.
    await until('the stalled broker to exit', async () => {
      try {
        process.kill(stalled.pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    const code = await stalled.stop();
    expect(code).toBe(1);
    expect(stalled.output()).toMatch(/another broker has this node id/);
    // The other broker keeps the node id and serves as broker 3.
    expect((await clusterView(stranger.bootstrap, TOPIC)).brokers).toEqual([1, 2, 3]);
    cluster.running.delete(3);
  }, 60_000);

  it('answers a client that connected while it was starting, and stops on SIGTERM after that', async () => {
    // Broker 4 cannot get past its start while etcd does not answer; its port listens from the first moment.
    const port = await cluster.port(4);
    cluster.etcdPause(true);
    let starting: Promise<unknown> | undefined;
    let answer: Promise<ApiVersionsResponse> | undefined;
    let early: WireConnection | undefined;
    try {
      starting = cluster.start(4);
      // Judged below; a failed start must not go unhandled meanwhile.
      starting.catch(() => undefined);
      early = await until('broker 4 listening', () => WireConnection.open('127.0.0.1', port, 1000), 10_000);
      const request = early.request<ApiVersionsResponse, ApiVersionsRequest>(api('ApiVersions'), 3, { clientSoftwareName: 'outage-test', clientSoftwareVersion: '1', clusterId: null, nodeId: -1 });
      answer = Promise.race([request, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no ApiVersions answer within 20 s')), 20_000))]);
      answer.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      cluster.etcdPause(false);
    }
    try {
      await starting;
      expect((await answer!).errorCode).toBe(0);
    } finally {
      early?.close();
    }
    const { code, output } = await cluster.stop(4);
    expect(code, output.slice(-2000)).toBe(0);
    expect(output).not.toMatch(/shutdown step still running/);
  }, 60_000);

  it('exits 1 when its start fails, also with a client connected meanwhile', async () => {
    // Another process under the node id of a live broker: refused at start, once etcd answers.
    const taken = [...cluster.running.keys()][0]!;
    const port = await cluster.port(90);
    cluster.etcdPause(true);
    let starting: Promise<unknown> | undefined;
    let early: WireConnection | undefined;
    try {
      starting = cluster.startStranger(taken, port);
      starting.catch(() => undefined);
      early = await until('the stranger listening', () => WireConnection.open('127.0.0.1', port, 1000), 10_000);
    } finally {
      cluster.etcdPause(false);
    }
    try {
      // The process ends: the test harness sees it exit before it was ever ready.
      await expect(starting).rejects.toThrow(/exited with code 1 before it was ready[\s\S]*registered in etcd by another broker/);
    } finally {
      early?.close();
    }
  }, 30_000);

  it('stops on SIGTERM within its shutdown timeout while etcd takes connections and answers nothing', async () => {
    await cluster.start(5);
    cluster.etcdPause(true);
    try {
      const { ms, code, output } = await cluster.stop(5);
      expect(code, output.slice(-2000)).toBe(0);
      // The controlled shutdown gives up at shutdown.timeout.ms; what follows does not wait for etcd
      // (the process may take 2 s more to end while the etcd client still retries).
      expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 4500);
    } finally {
      cluster.etcdPause(false);
    }
  }, 30_000);

  it('stops on SIGTERM after all this, each broker exiting 0 within its shutdown timeout', async () => {
    for (const id of [...cluster.running.keys()]) {
      const { code } = await cluster.stop(id);
      expect(code, `broker ${id}`).toBe(0);
    }
  }, 60_000);
});

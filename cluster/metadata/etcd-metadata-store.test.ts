/**
 * The etcd store against a real etcd (Debian's etcd-server), started here on
 * free loopback ports. Each test keeps its keys under a root of its own.
 * Without etcd installed the file is skipped, except under CI, where a
 * missing etcd fails the run instead of hiding these tests.
 */
import { createRequire } from 'node:module';
import type { Etcd3 } from 'etcd3';
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
// @ts-expect-error: a JavaScript module without type declarations, shared with the end-to-end tests.
import { etcdBinary, startEtcd } from '../../compat-tests/lib/etcd.mjs';
import { EtcdMetadataStore, NodeIdInUseError } from './etcd-metadata-store.js';
import { type BrokerRegistration, ConcurrentChangeError, type MetadataImage, TopicExistsError, UnknownTopicError } from './metadata-image.js';

interface Etcd {
  endpoint: string;
  clientPort: number;
  dataDir: string;
  stop(signal?: string, opts?: { keepData?: boolean }): Promise<void>;
}

const hasEtcd = etcdBinary() !== null;
const quiet = { error: () => {}, warn: () => {}, info: () => {} };
const broker = (nodeId: number): BrokerRegistration => ({ nodeId, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + nodeId }] });

let etcd: Etcd;
let rootSeq = 0;
let root = '';
const open: EtcdMetadataStore[] = [];

async function store(nodeId: number | null, opts: { directoryId?: string; sessionTimeoutMs?: number } = {}): Promise<EtcdMetadataStore> {
  const s = await EtcdMetadataStore.connect({ endpoints: [etcd.endpoint], root, sessionTimeoutMs: opts.sessionTimeoutMs ?? 2000, log: quiet }, `cluster-${root}`);
  open.push(s);
  if (nodeId !== null) {
    await s.claimNodeId(nodeId, opts.directoryId ?? `dir-${nodeId}`);
    await s.register(broker(nodeId), opts.directoryId ?? `dir-${nodeId}`);
  }
  return s;
}

/** Two registered brokers that each see the other. */
async function pair(): Promise<[EtcdMetadataStore, EtcdMetadataStore]> {
  const a = await store(1);
  const b = await store(2);
  await until('both brokers in both images', () => a.image().brokers.size === 2 && b.image().brokers.size === 2);
  return [a, b];
}

/** A plain etcd client on the test's etcd, for what a broker would not do itself. */
function rawClient(): Etcd3 {
  const { Etcd3: Client } = createRequire(import.meta.url)('etcd3') as typeof import('etcd3');
  return new Client({ hosts: `http://${etcd.endpoint}` });
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function untilAsync(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!hasEtcd && !process.env.CI)('the etcd metadata store', () => {
  beforeAll(async () => {
    etcd = await startEtcd();
  }, 30_000);
  afterAll(async () => {
    await etcd?.stop();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
    root = '';
  });
  const fresh = (): void => {
    root = `/gregor-test-${process.pid}-${++rootSeq}/`;
  };

  it('registers brokers, which see each other, and elects exactly one controller', async () => {
    fresh();
    const [a, b] = await pair();
    await until('a controller', () => a.image().controllerId !== -1 && a.image().controllerId === b.image().controllerId);
    expect([1, 2]).toContain(a.image().controllerId);
    expect(a.clusterId).toBe(`cluster-${root}`);
    expect(b.clusterId).toBe(a.clusterId);
  });

  it('keeps the first cluster id it was given', async () => {
    fresh();
    const a = await store(null);
    const b = await EtcdMetadataStore.connect({ endpoints: [etcd.endpoint], root, sessionTimeoutMs: 2000, log: quiet }, 'another-id');
    open.push(b);
    expect(b.clusterId).toBe(a.clusterId);
  });

  it('creates a topic that every broker sees, and tells its listeners before the creation resolves', async () => {
    fresh();
    const [a, b] = await pair();
    const seen: MetadataImage[] = [];
    a.subscribe((image) => seen.push(image));
    const t = await a.createTopic({ name: 'orders', numPartitions: 4, replicationFactor: 1, configs: { 'retention.ms': '60000' } });
    expect(seen.at(-1)!.topics.get('orders')).toBe(t);
    expect(t.partitions).toHaveLength(4);
    expect(t.configs).toEqual({ 'retention.ms': '60000' });
    // Leaders spread over both brokers, each partition led by its only replica.
    expect(new Set(t.partitions.map((p) => p.leader))).toEqual(new Set([1, 2]));
    for (const p of t.partitions) expect(p).toMatchObject({ leader: p.replicas[0], isr: [p.replicas[0]], leaderEpoch: 0 });
    await until('the topic on the other broker', () => b.image().topics.get('orders')?.topicId === t.topicId);
  });

  it('refuses a taken name or collision key, with the clash already in the refused broker\'s image', async () => {
    fresh();
    const [a, b] = await pair();
    await a.createTopic({ name: 'a.b', numPartitions: 1, replicationFactor: 1 });
    // b may not have seen it yet; the refusal must leave it in b's image all the same.
    await expect(b.createTopic({ name: 'a.b', numPartitions: 1, replicationFactor: 1 })).rejects.toThrow(TopicExistsError);
    expect(b.image().topics.has('a.b')).toBe(true);
    await expect(b.createTopic({ name: 'a_b', numPartitions: 1, replicationFactor: 1 })).rejects.toThrow("collides with existing topic 'a.b'");
  });

  it('lets one of two brokers creating the same topic at once win', async () => {
    fresh();
    const [a, b] = await pair();
    const results = await Promise.allSettled([
      a.createTopic({ name: 'race', numPartitions: 2, replicationFactor: 2 }),
      b.createTopic({ name: 'race', numPartitions: 3, replicationFactor: 1 }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const loser = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(loser.reason).toBeInstanceOf(TopicExistsError);
    const winner = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ topicId: string }>).value;
    await until('one topic in both images', () => a.image().topics.get('race')?.topicId === winner.topicId && b.image().topics.get('race')?.topicId === winner.topicId);
  });

  it('deletes, grows and reconfigures topics, and refuses unknown ones', async () => {
    fresh();
    const [a, b] = await pair();
    await a.createTopic({ name: 't', numPartitions: 2, replicationFactor: 2 });
    const grown = await b.createPartitions('t', 5);
    expect(grown.partitions.map((p) => p.replicas.length)).toEqual([2, 2, 2, 2, 2]);
    await expect(b.createPartitions('t', 5)).rejects.toThrow(RangeError);
    const altered = await a.alterTopicConfigs('t', { 'cleanup.policy': 'compact' });
    expect(altered.configs).toEqual({ 'cleanup.policy': 'compact' });
    expect((await a.alterTopicConfigs('t', {})).configs).toEqual({});
    const gone = await b.deleteTopic({ topicId: grown.topicId });
    expect(gone.name).toBe('t');
    await until('the deletion on both brokers', () => !a.image().topics.has('t') && !b.image().topics.has('t'));
    await expect(a.deleteTopic({ name: 't' })).rejects.toThrow(UnknownTopicError);
    await expect(a.createPartitions('t', 9)).rejects.toThrow(UnknownTopicError);
    await expect(a.alterTopicConfigs('t', {})).rejects.toThrow(UnknownTopicError);
    // The name is free again.
    await a.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
  });

  it('keeps dynamic broker configs, per broker and cluster-wide', async () => {
    fresh();
    const [a, b] = await pair();
    await a.alterBrokerConfigs(null, { 'log.retention.ms': '1000' });
    const after = await a.alterBrokerConfigs(2, { 'log.cleaner.threads': '2' });
    expect(after.clusterDefault).toEqual({ 'log.retention.ms': '1000' });
    expect(after.perBroker.get(2)).toEqual({ 'log.cleaner.threads': '2' });
    await until('the configs on the other broker', () => b.image().dynamicBrokerConfigs.perBroker.has(2));
    expect((await b.alterBrokerConfigs(2, {})).perBroker.has(2)).toBe(false);
  });

  it('keeps group config overrides that every broker sees, for groups that need not exist, and lets only one of two racing changes win', async () => {
    fresh();
    const [a, b] = await pair();
    await a.alterGroupConfigs('share/group one', { 'share.auto.offset.reset': 'earliest', 'share.record.lock.duration.ms': '15000' });
    expect(a.groupConfigOverrides('share/group one')).toEqual(new Map([['share.auto.offset.reset', 'earliest'], ['share.record.lock.duration.ms', '15000']]));
    await until('the overrides on the other broker', () => b.groupConfigOverrides('share/group one').get('share.auto.offset.reset') === 'earliest');
    expect(b.image().groupConfigs.get('share/group one')).toEqual({ 'share.auto.offset.reset': 'earliest', 'share.record.lock.duration.ms': '15000' });
    expect(b.groupConfigOverrides('another').size).toBe(0);
    // Both made their change from the same overrides.
    const both = await Promise.allSettled([a.alterGroupConfigs('share/group one', { 'share.delivery.count.limit': '3' }), b.alterGroupConfigs('share/group one', {})]);
    expect(both.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).toEqual([expect.any(ConcurrentChangeError)]);
    const winner = both[0].status === 'fulfilled' ? { 'share.delivery.count.limit': '3' } : {};
    const same = (s: EtcdMetadataStore): boolean => JSON.stringify(s.image().groupConfigs.get('share/group one') ?? {}) === JSON.stringify(winner);
    await until('the winner on both', () => same(a) && same(b));
    await a.alterGroupConfigs('share/group one', {});
    await until('the overrides gone on both', () => !a.image().groupConfigs.has('share/group one') && !b.image().groupConfigs.has('share/group one'));
    // A later broker reads them from etcd.
    await a.alterGroupConfigs('g', { 'streams.num.standby.replicas': '1' });
    const c = await store(3);
    expect(c.groupConfigOverrides('g').get('streams.num.standby.replicas')).toBe('1');
  });

  it('hands out producer id blocks that never overlap, across brokers', async () => {
    fresh();
    const [a, b] = await pair();
    const blocks = await Promise.all([a, b, a, b, a, b].map((s) => s.allocateProducerIdBlock()));
    const firsts = blocks.map((x) => x.firstProducerId).sort((x, y) => (x < y ? -1 : 1));
    expect(firsts).toEqual([0n, 1000n, 2000n, 3000n, 4000n, 5000n]);
  });

  it('refuses a second broker with a node id in use, but lets the same broker register again after a crash', async () => {
    fresh();
    const first = await store(1, { directoryId: 'disk-a', sessionTimeoutMs: 60_000 });
    await until('a controller', () => first.image().controllerId === 1);
    await expect(store(1, { directoryId: 'disk-b' })).rejects.toThrow(NodeIdInUseError);
    // The same data directory: its own registration from before a crash, still under its old lease,
    // which goes with everything it held (the controller key too).
    const again = await store(1, { directoryId: 'disk-a' });
    expect(again.image().brokers.has(1)).toBe(true);
    await until('the controller again', () => again.image().controllerId === 1);
  });

  it('registers again, under a new lease, when its lease is lost', async () => {
    fresh();
    const [a] = await pair();
    const raw = rawClient();
    try {
      const leaseOf2 = async (): Promise<string | null> => (await raw.get(`${root}brokers/2`).exec()).kvs[0]?.lease ?? null;
      const lost = (await leaseOf2())!;
      await raw.leaseClient.leaseRevoke({ ID: lost });
      await untilAsync('broker 2 under a new lease', async () => {
        const now = await leaseOf2();
        return now !== null && now !== lost;
      });
      await until("broker 2 in the other broker's image", () => a.image().brokers.has(2));
    } finally {
      raw.close();
    }
  });

  it('lets only one of two config changes made from the same configs win, so that none is silently lost', async () => {
    fresh();
    const [a, b] = await pair();
    await a.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    await until('the topic on b', () => b.image().topics.has('t'));
    // Both made their change from the same (empty) overrides.
    const results = await Promise.allSettled([a.alterTopicConfigs('t', { 'retention.ms': '1' }), b.alterTopicConfigs('t', { 'cleanup.policy': 'compact' })]);
    const won = results.filter((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ configs: Record<string, string> }>[];
    expect(won).toHaveLength(1);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(ConcurrentChangeError);
    await until('the winner on both', () => JSON.stringify(a.image().topics.get('t')!.configs) === JSON.stringify(won[0]!.value.configs) && JSON.stringify(b.image().topics.get('t')!.configs) === JSON.stringify(won[0]!.value.configs));
    const both = await Promise.allSettled([a.alterBrokerConfigs(null, { 'log.retention.ms': '1' }), b.alterBrokerConfigs(null, { 'log.retention.ms': '2' })]);
    expect(both.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).toEqual([expect.any(ConcurrentChangeError)]);
  });

  it('moves the controller and partition leadership when a broker goes, and gives leadership back when it returns', async () => {
    fresh();
    const a = await store(1);
    let b = await store(2);
    const t = await a.createTopic({ name: 'ha', numPartitions: 1, replicationFactor: 1, assignments: [[2]] });
    expect(t.partitions[0]).toMatchObject({ leader: 2, leaderEpoch: 0 });
    await until('a controller', () => a.image().controllerId !== -1);
    await b.close();
    await until('broker 2 gone, broker 1 controller', () => !a.image().brokers.has(2) && a.image().controllerId === 1);
    await until('the partition without a leader', () => a.image().topics.get('ha')!.partitions[0]!.leader === -1);
    expect(a.image().topics.get('ha')!.partitions[0]).toMatchObject({ leaderEpoch: 1, isr: [2], offlineReplicas: [2] });
    b = await store(2);
    await until('broker 2 leading again', () => a.image().topics.get('ha')!.partitions[0]!.leader === 2);
    expect(a.image().topics.get('ha')!.partitions[0]).toMatchObject({ leaderEpoch: 2, isr: [2], offlineReplicas: [] });
    await until('the same on broker 2', () => b.image().topics.get('ha')!.partitions[0]!.leaderEpoch === 2);
  });

  it('keeps each partition\'s state under a key of its own, a new partition with every live replica in sync, many partitions in several transactions', async () => {
    fresh();
    const [a] = await pair();
    const t = await a.createTopic({ name: 'wide', numPartitions: 130, replicationFactor: 2 });
    expect(t.partitions).toHaveLength(130);
    for (const p of t.partitions) expect(p).toMatchObject({ leader: p.replicas[0], isr: p.replicas, leaderEpoch: 0 });
    const raw = rawClient();
    try {
      const keys = await raw.getAll().prefix(`${root}partitions/wide/`).keys();
      expect(keys).toHaveLength(130);
      // Grown past one transaction's worth too.
      const grown = await a.createPartitions('wide', 200);
      expect(grown.partitions).toHaveLength(200);
      expect(grown.partitions.every((p) => p.leader >= 0 && p.isr.length === 2)).toBe(true);
      await a.deleteTopic({ name: 'wide' });
      expect(await raw.getAll().prefix(`${root}partitions/wide`).keys()).toEqual([]);
    } finally {
      raw.close();
    }
  });

  it('writes ISR changes asked together in few transactions, and two leaders of one topic never contend', async () => {
    fresh();
    const [a, b] = await pair();
    // Partitions 0-99 led by broker 1, 100-101 by broker 2; both replicas in sync.
    const assignments = [...Array.from({ length: 100 }, () => [1, 2]), [2, 1], [2, 1]];
    await a.createTopic({ name: 'isr', numPartitions: 102, replicationFactor: 2, assignments });
    await until('the topic on broker 2', () => b.image().topics.get('isr')?.partitions.length === 102);
    const raw = rawClient();
    try {
      const before = BigInt((await raw.get(`${root}cluster-id`).exec()).header.revision);
      // Broker 1 drops broker 2 from the ISR of its 100 partitions while broker 2 does the same to broker 1 on its two.
      await Promise.all([
        ...Array.from({ length: 100 }, (_, p) => a.alterPartitionIsr('isr', p, 0, [1, 2], [1])),
        b.alterPartitionIsr('isr', 100, 0, [2, 1], [2]),
        b.alterPartitionIsr('isr', 101, 0, [2, 1], [2]),
      ]);
      const after = BigInt((await raw.get(`${root}cluster-id`).exec()).header.revision);
      // Two transactions for broker 1's hundred, one for broker 2's two.
      expect(after - before).toBe(3n);
    } finally {
      raw.close();
    }
    const parts = a.image().topics.get('isr')!.partitions;
    expect(parts.slice(0, 100).every((p) => p.isr.length === 1 && p.isr[0] === 1)).toBe(true);
    expect(parts.slice(100).map((p) => p.isr)).toEqual([[2], [2]]);
    // A change made from an ISR that is no longer the partition's is refused, once this copy shows why.
    await expect(a.alterPartitionIsr('isr', 0, 0, [1, 2], [1, 2])).rejects.toThrow(ConcurrentChangeError);
    // Nor from a leader epoch that is not the partition's.
    await expect(a.alterPartitionIsr('isr', 1, 3, [1], [1, 2])).rejects.toThrow(ConcurrentChangeError);
  });

  it('as controller, moves partition states of the older layout to keys of their own and completes a creation cut short', async () => {
    fresh();
    const raw = rawClient();
    try {
      const topicId = 'AAAAAAAAAAAAAAAAAAAAAg';
      await raw.put(`${root}topics/old`).value(JSON.stringify({ topicId, replicas: [[1], [1]] }));
      await raw.put(`${root}partitions/old`).value(JSON.stringify([{ leader: 1, leaderEpoch: 4, partitionEpoch: 4, isr: [1] }, { leader: 1, leaderEpoch: 2, partitionEpoch: 2, isr: [1] }]));
      // A topic whose creation stopped before its partition states were written.
      await raw.put(`${root}topics/cut`).value(JSON.stringify({ topicId: 'AAAAAAAAAAAAAAAAAAAAAw', replicas: [[1]] }));
      const a = await store(1);
      await untilAsync('the older list gone', async () => (await raw.get(`${root}partitions/old`).string()) === null);
      expect((await raw.getAll().prefix(`${root}partitions/old/`).keys()).sort()).toEqual([`${root}partitions/old/0`, `${root}partitions/old/1`]);
      await until('states for both topics', () => a.image().topics.get('cut')?.partitions[0]?.leader === 1);
      expect(a.image().topics.get('old')!.partitions.map((p) => [p.leader, p.leaderEpoch])).toEqual([
        [1, 4],
        [1, 2],
      ]);
    } finally {
      raw.close();
    }
  });

  it('rides through an etcd restart: the watch resumes and changes go on', async () => {
    fresh();
    const a = await store(1, { sessionTimeoutMs: 10_000 });
    const b = await store(2, { sessionTimeoutMs: 10_000 });
    await a.createTopic({ name: 'before', numPartitions: 1, replicationFactor: 1 });
    const { clientPort, dataDir } = etcd;
    await etcd.stop('SIGTERM', { keepData: true });
    // From here the directory is this test's to remove if etcd does not come back.
    const restarted = { done: false };
    onTestFinished(() => {
      if (!restarted.done) rmSync(dataDir, { recursive: true, force: true });
    });
    // While etcd is away a change fails with an error that says so, and the image stays.
    await expect(a.createTopic({ name: 'during', numPartitions: 1, replicationFactor: 1 })).rejects.toThrow(/etcd/);
    expect(a.image().topics.has('before')).toBe(true);
    etcd = await startEtcd({ clientPort, dataDir, ownDataDir: true });
    restarted.done = true;
    // As a client would, try again while the etcd client's breaker still holds calls back (up to 5 s).
    let created: { topicId: string } | null = null;
    for (let i = 0; i < 100 && created === null; i++) {
      created = await a.createTopic({ name: 'after', numPartitions: 1, replicationFactor: 1 }).catch(async (err: Error) => {
        if (err instanceof TopicExistsError) return a.image().topics.get('after')!;
        await new Promise((r) => setTimeout(r, 200));
        return null;
      });
    }
    if (!created) throw new Error('no topic could be created after etcd came back');
    const id = created.topicId;
    await until('the change on the other broker', () => b.image().topics.get('after')?.topicId === id, 20_000);
  }, 60_000);
});

import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { type Entry, EtcdLayout, type StoredPartitionView, assignReplicas, completeReassignment, placeReplicas, electLeader, electLeaders, imageFromEntries, imbalancedPartitions, initialState, reassign } from './etcd-layout.js';

const layout = new EtcdLayout('/gregor/');

function entries(kvs: Record<string, unknown>): Map<string, Entry> {
  return new Map(Object.entries(kvs).map(([k, v], i) => [k, { value: typeof v === 'string' ? v : JSON.stringify(v), createRevision: String(i + 1), modRevision: String(i + 1), lease: '0' }]));
}

describe('the etcd key layout', () => {
  it('names every key under its root and reads each back', () => {
    expect(layout.topic('orders')).toBe('/gregor/topics/orders');
    expect(layout.kindOf(layout.topic('orders.v1_x'))).toEqual({ kind: 'topic', name: 'orders.v1_x' });
    expect(layout.kindOf(layout.partition('orders', 3))).toEqual({ kind: 'partition', name: 'orders', partition: 3 });
    expect(layout.kindOf(layout.legacyPartitions('orders'))).toEqual({ kind: 'legacy-partitions', name: 'orders' });
    expect(layout.kindOf('/gregor/partitions/orders/x')).toEqual({ kind: 'other' });
    expect(layout.kindOf(layout.broker(12))).toEqual({ kind: 'broker', nodeId: 12 });
    expect(layout.kindOf(layout.brokerConfigs(null))).toEqual({ kind: 'broker-configs', nodeId: null });
    expect(layout.kindOf(layout.brokerConfigs(3))).toEqual({ kind: 'broker-configs', nodeId: 3 });
    // A group id may hold anything, slashes and '%' too.
    expect(layout.groupConfigs('a/b %c')).toBe('/gregor/configs/groups/a%2Fb%20%25c');
    expect(layout.kindOf(layout.groupConfigs('a/b %c'))).toEqual({ kind: 'group-configs', groupId: 'a/b %c' });
    expect(layout.kindOf('/gregor/configs/groups/%E0%A4%A')).toEqual({ kind: 'other' });
    expect(layout.kindOf(layout.topicConfigs('t'))).toEqual({ kind: 'topic-configs', name: 't' });
    expect(layout.kindOf(layout.controller())).toEqual({ kind: 'controller' });
    expect(layout.kindOf(layout.barrier(1))).toEqual({ kind: 'barrier' });
    expect(layout.kindOf('/other/topics/orders')).toEqual({ kind: 'other' });
    expect(layout.kindOf('/gregor/brokers/x')).toEqual({ kind: 'other' });
    expect(() => new EtcdLayout('gregor')).toThrow(RangeError);
  });

  it('builds the image: topics with their states and configs, live brokers, the controller, offline replicas', () => {
    const endpoints = [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }];
    const image = imageFromEntries(
      layout,
      entries({
        '/gregor/cluster-id': 'abc',
        '/gregor/brokers/1': { rack: 'r1', endpoints, directoryId: 'd1' },
        '/gregor/brokers/2': { rack: null, endpoints, directoryId: 'd2' },
        '/gregor/controller': { nodeId: 2 },
        '/gregor/topics/t': { topicId: 'AAAAAAAAAAAAAAAAAAAAAg', replicas: [[1, 3], [2, 1]] },
        '/gregor/partitions/t/0': { leader: 1, leaderEpoch: 3, partitionEpoch: 5, isr: [1] },
        '/gregor/partitions/t/1': { leader: 2, leaderEpoch: 0, partitionEpoch: 0, isr: [2, 1] },
        '/gregor/configs/topics/t': { 'retention.ms': '1000' },
        '/gregor/configs/brokers/default': { 'log.retention.ms': '5' },
        '/gregor/configs/brokers/2': { 'log.cleaner.threads': '2' },
        '/gregor/topic-names/t': { name: 't' },
        '/gregor/barriers/1': 'x',
        '/gregor/producer-ids': '1000',
      }),
    );
    expect(image.clusterId).toBe('abc');
    expect(image.controllerId).toBe(2);
    expect([...image.brokers.keys()]).toEqual([1, 2]);
    expect(image.brokers.get(1)!.rack).toBe('r1');
    const t = image.topics.get('t')!;
    expect(image.topicsById.get('AAAAAAAAAAAAAAAAAAAAAg')).toBe(t);
    expect(t.configs).toEqual({ 'retention.ms': '1000' });
    expect(t.partitions).toEqual([
      { partition: 0, leader: 1, leaderEpoch: 3, replicas: [1, 3], isr: [1], offlineReplicas: [3] },
      { partition: 1, leader: 2, leaderEpoch: 0, replicas: [2, 1], isr: [2, 1], offlineReplicas: [] },
    ]);
    expect(image.dynamicBrokerConfigs.clusterDefault).toEqual({ 'log.retention.ms': '5' });
    expect(image.dynamicBrokerConfigs.perBroker.get(2)).toEqual({ 'log.cleaner.threads': '2' });
  });

  it('builds the image with each group\'s config overrides', () => {
    const image = imageFromEntries(layout, entries({ [layout.groupConfigs('g/1')]: { 'share.auto.offset.reset': 'earliest' }, [layout.groupConfigs('h')]: { 'streams.num.standby.replicas': '1' } }));
    expect(image.groupConfigs).toEqual(new Map([['g/1', { 'share.auto.offset.reset': 'earliest' }], ['h', { 'streams.num.standby.replicas': '1' }]]));
  });

  it('has no controller and no leader where the keys are missing', () => {
    const image = imageFromEntries(layout, entries({ '/gregor/topics/t': { topicId: 'AAAAAAAAAAAAAAAAAAAAAg', replicas: [[1]] } }));
    expect(image.controllerId).toBe(-1);
    expect(image.topics.get('t')!.partitions[0]).toMatchObject({ leader: -1, isr: [], offlineReplicas: [1] });
  });

  it('reads partition states of the older layout (one list per topic) where a partition has no key of its own', () => {
    const image = imageFromEntries(
      layout,
      entries({
        '/gregor/topics/t': { topicId: 'AAAAAAAAAAAAAAAAAAAAAg', replicas: [[1], [1]] },
        '/gregor/partitions/t': [
          { leader: 1, leaderEpoch: 3, partitionEpoch: 5, isr: [1] },
          { leader: 1, leaderEpoch: 4, partitionEpoch: 6, isr: [1] },
        ],
        '/gregor/partitions/t/1': { leader: 1, leaderEpoch: 7, partitionEpoch: 9, isr: [1] },
      }),
    );
    expect(image.topics.get('t')!.partitions.map((p) => p.leaderEpoch)).toEqual([3, 7]);
  });

  it('starts a new partition with every live assigned replica in the ISR, the first of them leading', () => {
    expect(initialState([2, 3, 1], new Set([1, 2, 3]))).toEqual({ leader: 2, leaderEpoch: 0, partitionEpoch: 0, isr: [2, 3, 1] });
    expect(initialState([2, 3, 1], new Set([1, 3]))).toEqual({ leader: 3, leaderEpoch: 0, partitionEpoch: 0, isr: [3, 1] });
    // Nobody alive: no leader, and whichever replica returns first may lead (all are empty).
    expect(initialState([2, 3], new Set([1]))).toEqual({ leader: -1, leaderEpoch: 0, partitionEpoch: 0, isr: [2, 3] });
  });

  it('leaves out a value that is not JSON, naming its key, and keeps the rest', () => {
    const bad: string[] = [];
    const image = imageFromEntries(
      layout,
      entries({ '/gregor/topics/t': 'not json', '/gregor/topics/u': { topicId: 'AAAAAAAAAAAAAAAAAAAAAg', replicas: [[1]] } }),
      (k) => bad.push(k),
    );
    expect(bad).toEqual(['/gregor/topics/t']);
    expect([...image.topics.keys()]).toEqual(['u']);
  });
});

describe('replica placement', () => {
  it("spreads leaders and followers as Kafka's rack-unaware assignment does", () => {
    // Kafka's documented example: 5 brokers, 10 partitions, replication factor 3, start index 0.
    const got = assignReplicas([0, 1, 2, 3, 4], 10, 3, 0, 0);
    expect(got.slice(0, 5).map((r) => r[0])).toEqual([0, 1, 2, 3, 4]);
    expect(got.slice(5).map((r) => r[0])).toEqual([0, 1, 2, 3, 4]);
    // Second replicas by broker: broker-0 holds p4 and p8, broker-1 p0 and p9, broker-2 p1 and p5 ...
    const second = (b: number): number[] => got.flatMap((r, p) => (r[1] === b ? [p] : []));
    expect([0, 1, 2, 3, 4].map(second)).toEqual([[4, 8], [0, 9], [1, 5], [2, 6], [3, 7]]);
    const third = (b: number): number[] => got.flatMap((r, p) => (r[2] === b ? [p] : []));
    expect([0, 1, 2, 3, 4].map(third)).toEqual([[3, 7], [4, 8], [0, 9], [1, 5], [2, 6]]);
  });

  it('never puts two replicas of a partition on one broker, and refuses more replicas than brokers', () => {
    for (const r of assignReplicas([5, 7, 9], 30, 3, 2, 4)) expect(new Set(r).size).toBe(3);
    expect(() => assignReplicas([1, 2], 1, 3, 0, 0)).toThrow(RangeError);
    expect(assignReplicas([4], 3, 1, 0, 0)).toEqual([[4], [4], [4]]);
  });
});

describe('rack-aware replica placement (broker.rack)', () => {
  const racks: Record<number, string> = { 0: 'rack1', 1: 'rack3', 2: 'rack3', 3: 'rack2', 4: 'rack2', 5: 'rack1' };
  const brokers = Object.entries(racks).map(([id, rack]) => ({ nodeId: Number(id), rack }));

  it("places as Kafka's rack-aware assignment does", () => {
    // Kafka's own expectation for these racks, 7 partitions of 3 replicas from index 0.
    expect(placeReplicas(brokers, 7, 3, 0, 0)).toEqual([
      [0, 3, 1],
      [3, 1, 5],
      [1, 5, 4],
      [5, 4, 2],
      [4, 2, 0],
      [2, 0, 3],
      [0, 4, 2],
    ]);
  });

  it('puts every partition on as many racks as it has replicas, up to the number of racks', () => {
    for (const start of [0, 1, 4]) {
      for (const r of placeReplicas(brokers, 30, 3, start, 2)) {
        expect(new Set(r).size).toBe(3);
        expect(new Set(r.map((id) => racks[id])).size).toBe(3);
      }
      for (const r of placeReplicas(brokers, 30, 5, start, 0)) expect(new Set(r.map((id) => racks[id])).size).toBe(3);
    }
  });

  it('counts brokers without a rack as one rack', () => {
    const mixed = [
      { nodeId: 1, rack: 'a' },
      { nodeId: 2, rack: null },
      { nodeId: 3, rack: 'a' },
      { nodeId: 4, rack: null },
    ];
    for (const r of placeReplicas(mixed, 8, 2, 0, 0)) expect(new Set(r.map((id) => mixed.find((b) => b.nodeId === id)!.rack)).size).toBe(2);
  });
});

describe('leader election by the controller', () => {
  const state = (leader: number, isr: number[], epoch = 4) => ({ leader, leaderEpoch: epoch, partitionEpoch: epoch, isr });

  it('moves leadership to the first live replica in the ISR and raises both epochs', () => {
    expect(electLeaders([state(1, [1, 3, 2])], [[1, 2, 3]], new Set([2, 3]))).toEqual([{ leader: 2, leaderEpoch: 5, partitionEpoch: 5, isr: [3, 2] }]);
  });

  it('leaves a partition leaderless, ISR kept, when no in-sync replica is alive (never unclean)', () => {
    expect(electLeaders([state(1, [1])], [[1, 2]], new Set([2]))).toEqual([{ leader: -1, leaderEpoch: 5, partitionEpoch: 5, isr: [1] }]);
    // And gives it back to that replica when it returns.
    expect(electLeaders([state(-1, [1], 5)], [[1, 2]], new Set([1, 2]))).toEqual([{ leader: 1, leaderEpoch: 6, partitionEpoch: 6, isr: [1] }]);
  });

  it('drops a gone follower from the ISR without a new leader epoch', () => {
    expect(electLeaders([state(1, [1, 2])], [[1, 2]], new Set([1]))).toEqual([{ leader: 1, leaderEpoch: 4, partitionEpoch: 5, isr: [1] }]);
  });

  it('treats a replica its broker reports offline (failed log directory) as gone for that partition only', () => {
    const offline = (partition: number, replica: number) => partition === 0 && replica === 1;
    expect(electLeaders([state(1, [1, 2]), state(1, [1, 2])], [[1, 2], [1, 2]], new Set([1, 2]), offline)).toEqual([
      { leader: 2, leaderEpoch: 5, partitionEpoch: 5, isr: [2] },
      state(1, [1, 2]),
    ]);
    // As a follower: out of the ISR, no new leader epoch.
    expect(electLeaders([state(2, [2, 1])], [[2, 1]], new Set([1, 2]), offline)).toEqual([{ leader: 2, leaderEpoch: 4, partitionEpoch: 5, isr: [2] }]);
  });

  it('changes nothing when every leader is alive and every ISR member too', () => {
    expect(electLeaders([state(1, [1]), state(-1, [3])], [[1], [3]], new Set([1, 2]))).toBeNull();
  });
});

const view = (replicas: number[], leader: number, isr: number[], reassigning: StoredPartitionView['reassigning'] = null): StoredPartitionView => ({
  replicas,
  reassigning,
  state: { leader, leaderEpoch: 4, partitionEpoch: 7, isr },
});
const live = (...ids: number[]): Set<number> => new Set(ids);

describe('partition reassignment (KIP-455)', () => {
  it('adds the new replicas first and keeps the leaving ones until the target is in sync', () => {
    const started = reassign(view([1, 2, 3], 1, [1, 2, 3]), [2, 3, 4], live(1, 2, 3, 4));
    expect(started).toEqual({
      replicas: [2, 3, 4, 1],
      reassigning: { adding: [4], removing: [1], original: [1, 2, 3] },
      state: { leader: 1, leaderEpoch: 4, partitionEpoch: 8, isr: [1, 2, 3] },
    });
    const v = started as StoredPartitionView;
    // Not yet: 4 is not in the ISR.
    expect(completeReassignment(v, live(1, 2, 3, 4))).toBeNull();
    // 4 caught up: 1 leaves the replicas and the ISR, and its leadership passes to the first target replica in sync.
    const done = completeReassignment({ ...v, state: { ...v.state, isr: [1, 2, 3, 4] } }, live(1, 2, 3, 4));
    expect(done).toEqual({ replicas: [2, 3, 4], reassigning: null, state: { leader: 2, leaderEpoch: 5, partitionEpoch: 9, isr: [2, 3, 4] } });
  });

  it('keeps a leader that stays, raising only the partition epoch', () => {
    const v = view([1, 2, 4, 3], 1, [1, 2, 3, 4], { adding: [4], removing: [3] });
    expect(completeReassignment(v, live(1, 2, 3, 4))).toEqual({ replicas: [1, 2, 4], reassigning: null, state: { leader: 1, leaderEpoch: 4, partitionEpoch: 8, isr: [1, 2, 4] } });
  });

  it('cancels: the original replicas come back in their order, and the added ones leave the ISR and the lead', () => {
    const v = view([2, 3, 4, 1], 4, [1, 2, 3, 4], { adding: [4], removing: [1], original: [1, 2, 3] });
    expect(reassign(v, null, live(1, 2, 3, 4))).toEqual({ replicas: [1, 2, 3], reassigning: null, state: { leader: 1, leaderEpoch: 5, partitionEpoch: 8, isr: [1, 2, 3] } });
    expect(reassign(view([1, 2], 1, [1, 2]), null, live(1, 2))).toMatchObject({ errorCode: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS });
    // Only an added replica in sync: going back would take an unclean election.
    expect(reassign(view([2, 3, 4, 1], 4, [4], { adding: [4], removing: [1] }), null, live(1, 2, 3, 4))).toMatchObject({ errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT });
  });

  it('replaces a reassignment in progress without dropping any replica before the new target is in sync, and a cancel then goes back to the first replicas', () => {
    const v = view([2, 3, 4, 1], 1, [1, 2, 3, 4], { adding: [4], removing: [1], original: [1, 2, 3] });
    const replaced = reassign(v, [1, 2, 5], live(1, 2, 3, 4, 5));
    expect(replaced).toEqual({
      replicas: [1, 2, 5, 3, 4],
      reassigning: { adding: [5], removing: [3, 4], original: [1, 2, 3] },
      state: { leader: 1, leaderEpoch: 4, partitionEpoch: 8, isr: [1, 2, 3, 4] },
    });
    expect(reassign(replaced as StoredPartitionView, null, live(1, 2, 3, 4, 5))).toEqual({
      replicas: [1, 2, 3],
      reassigning: null,
      state: { leader: 1, leaderEpoch: 4, partitionEpoch: 9, isr: [1, 2, 3] },
    });
  });

  it('applies a new order of the same replicas at once', () => {
    expect(reassign(view([1, 2], 1, [1, 2]), [2, 1], live(1, 2))).toEqual({ replicas: [2, 1], reassigning: null, state: { leader: 1, leaderEpoch: 4, partitionEpoch: 8, isr: [1, 2] } });
  });

  it('refuses empty, repeated and unregistered targets, and changes nothing for the replicas it has', () => {
    const v = view([1, 2], 1, [1, 2]);
    expect(reassign(v, [], live(1, 2))).toMatchObject({ errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT });
    expect(reassign(v, [1, 1], live(1, 2))).toMatchObject({ errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT });
    expect(reassign(v, [1, 9], live(1, 2))).toMatchObject({ errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT });
    expect(reassign(v, [1, 2], live(1, 2))).toBe(v);
  });
});

describe('requested leader elections', () => {
  it('preferred: the first replica leads when alive and in sync', () => {
    expect(electLeader(view([1, 2], 2, [1, 2]), 'preferred', live(1, 2))).toEqual({ leader: 1, leaderEpoch: 5, partitionEpoch: 8, isr: [1, 2] });
    expect(electLeader(view([1, 2], 1, [1, 2]), 'preferred', live(1, 2))).toMatchObject({ errorCode: ErrorCode.ELECTION_NOT_NEEDED });
    expect(electLeader(view([1, 2], 2, [2]), 'preferred', live(1, 2))).toMatchObject({ errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE });
    expect(electLeader(view([1, 2], 2, [1, 2]), 'preferred', live(2))).toMatchObject({ errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE });
  });

  it('unclean: a leaderless partition gets an in-sync replica if one lives, else any live replica alone in the ISR', () => {
    expect(electLeader(view([1, 2, 3], 1, [1, 2]), 'unclean', live(1, 2, 3))).toMatchObject({ errorCode: ErrorCode.ELECTION_NOT_NEEDED });
    expect(electLeader(view([1, 2, 3], -1, [1]), 'unclean', live(2, 3))).toEqual({ leader: 2, leaderEpoch: 5, partitionEpoch: 8, isr: [2] });
    expect(electLeader(view([1, 2, 3], -1, [1, 3]), 'unclean', live(2, 3))).toEqual({ leader: 3, leaderEpoch: 5, partitionEpoch: 8, isr: [3] });
    expect(electLeader(view([1, 2], -1, [1]), 'unclean', live(5))).toMatchObject({ errorCode: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE });
  });

  it('lists, for the automatic rebalance, the partitions whose preferred replica is in sync but does not lead', () => {
    const topics = [
      { name: 'a', partitions: [view([1, 2], 2, [1, 2]), view([2, 1], 2, [1, 2]), view([3, 1], 1, [1]), view([1, 3], 3, [1, 3], { adding: [3], removing: [] })] },
    ];
    expect(imbalancedPartitions(topics, live(1, 2, 3))).toEqual([{ topic: 'a', partition: 0 }]);
    expect(imbalancedPartitions(topics, live(2, 3))).toEqual([]);
  });
});

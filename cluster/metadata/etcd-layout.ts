/**
 * How the cluster's metadata sits in etcd, and how an image is built from it.
 * Pure: no etcd client here, so the layout is tested on its own.
 *
 * Every key lives under one root (`/gregor/` by default) and every value is
 * JSON, except the cluster id, which is the id itself:
 *
 *   cluster-id                        the cluster's id, written once
 *   brokers/<nodeId>                  a live broker: rack, endpoints, directory id (under its lease)
 *   controller                        the controller's node id (under its lease)
 *   topics/<name>                     topic id and replica assignment, one list of node ids per partition
 *   topic-names/<collision key>       the name holding a '.'/'_' collision key, written with the topic
 *   partitions/<name>/<partition>     one partition's leader, leader epoch, partition epoch and ISR
 *   partitions/<name>                 (older layout) every partition's state in one list, read until
 *                                     the controller has moved them to keys of their own
 *   configs/topics/<name>             a topic's config overrides
 *   configs/brokers/<nodeId|default>  dynamic broker configs, per broker and cluster-wide
 *   configs/groups/<group id, URI-encoded>  a group's config overrides
 *   producer-ids                      the first producer id of the next block
 *   barriers/<nodeId>                 written by a broker to learn when its watch has caught up
 *
 * Topic names are [a-zA-Z0-9._-]+, so a name is a safe path segment; a group
 * id may be any string, so it is URI-encoded into one. Each
 * partition's state has a key of its own, as Kafka keeps a record per
 * partition, so that changes to two partitions (their leaders' ISR changes,
 * the controller's elections) never contend. A change touching many
 * partitions is written in transactions of at most MAX_PARTITIONS_PER_TXN
 * of them, within etcd's limit of 128 operations per transaction.
 */
import type { BrokerRegistration, DynamicBrokerConfigs, Endpoint, MetadataImage, PartitionState, TopicImage } from './metadata-image.js';
import { buildImage } from './metadata-image.js';
import { ErrorCode } from '../../wire/errors.js';
import { INTERNAL_TOPICS } from './topic-names.js';

export interface StoredBroker {
  readonly rack: string | null;
  readonly endpoints: readonly Endpoint[];
  /** The data directory's id: tells a broker's own earlier registration from another broker using its node id. */
  readonly directoryId: string;
  /** Its replicas that cannot serve (offline log directory), as `topicId:partition`; absent when none. */
  readonly offlineReplicas?: readonly string[];
}

export interface StoredTopic {
  readonly topicId: string;
  /**
   * Replicas of each partition, by partition; the first is the preferred
   * leader. While a partition is reassigned: the target replicas, then those
   * being removed.
   */
  readonly replicas: readonly (readonly number[])[];
  /** Partitions being reassigned, by partition index: the replicas joining and the replicas leaving. */
  readonly reassigning?: Readonly<Record<string, Reassignment>>;
}

export interface Reassignment {
  readonly adding: readonly number[];
  readonly removing: readonly number[];
  /** The replicas, in order, before the first of the reassignments in a row began: what a cancel goes back to. */
  readonly original?: readonly number[];
}

export interface StoredPartition {
  readonly leader: number;
  readonly leaderEpoch: number;
  /** Goes up with every change of the partition's state, as Kafka's partition epoch does. */
  readonly partitionEpoch: number;
  readonly isr: readonly number[];
}

export interface StoredController {
  readonly nodeId: number;
}

/** A key's value, the revisions that created and last changed it, and its lease ('0' for none): decimal strings, as etcd gives them. */
export interface Entry {
  readonly value: string;
  readonly createRevision: string;
  readonly modRevision: string;
  readonly lease: string;
}

export type KeyKind =
  | { kind: 'cluster-id' }
  | { kind: 'broker'; nodeId: number }
  | { kind: 'controller' }
  | { kind: 'topic'; name: string }
  | { kind: 'topic-name' }
  | { kind: 'partition'; name: string; partition: number }
  | { kind: 'legacy-partitions'; name: string }
  | { kind: 'topic-configs'; name: string }
  | { kind: 'broker-configs'; nodeId: number | null }
  | { kind: 'group-configs'; groupId: string }
  | { kind: 'producer-ids' }
  | { kind: 'barrier' }
  | { kind: 'other' };

export class EtcdLayout {
  /** `root` must start and end with '/'. Example: new EtcdLayout('/gregor/').topic('orders') -> '/gregor/topics/orders'. */
  constructor(readonly root: string) {
    if (!root.startsWith('/') || !root.endsWith('/')) throw new RangeError(`etcd root "${root}" must start and end with "/"`);
  }

  clusterId(): string {
    return `${this.root}cluster-id`;
  }
  broker(nodeId: number): string {
    return `${this.root}brokers/${nodeId}`;
  }
  controller(): string {
    return `${this.root}controller`;
  }
  topic(name: string): string {
    return `${this.root}topics/${name}`;
  }
  topicName(collisionKey: string): string {
    return `${this.root}topic-names/${collisionKey}`;
  }
  /** Example: new EtcdLayout('/gregor/').partition('orders', 3) -> '/gregor/partitions/orders/3'. */
  partition(name: string, partition: number): string {
    return `${this.root}partitions/${name}/${partition}`;
  }
  /** Every partition key of a topic starts with this. */
  partitionsPrefix(name: string): string {
    return `${this.root}partitions/${name}/`;
  }
  /** The key of the older layout that held all of a topic's partition states. */
  legacyPartitions(name: string): string {
    return `${this.root}partitions/${name}`;
  }
  topicConfigs(name: string): string {
    return `${this.root}configs/topics/${name}`;
  }
  brokerConfigs(nodeId: number | null): string {
    return `${this.root}configs/brokers/${nodeId === null ? 'default' : nodeId}`;
  }
  /** Example: new EtcdLayout('/gregor/').groupConfigs('my/group') -> '/gregor/configs/groups/my%2Fgroup'. */
  groupConfigs(groupId: string): string {
    return `${this.root}configs/groups/${encodeURIComponent(groupId)}`;
  }
  producerIds(): string {
    return `${this.root}producer-ids`;
  }
  barrier(nodeId: number): string {
    return `${this.root}barriers/${nodeId}`;
  }

  /** What a key under the root holds. Example: '/gregor/partitions/orders/3' -> { kind: 'partition', name: 'orders', partition: 3 }. */
  kindOf(key: string): KeyKind {
    if (!key.startsWith(this.root)) return { kind: 'other' };
    const rest = key.slice(this.root.length);
    if (rest === 'cluster-id') return { kind: 'cluster-id' };
    if (rest === 'controller') return { kind: 'controller' };
    if (rest === 'producer-ids') return { kind: 'producer-ids' };
    const slash = rest.indexOf('/');
    if (slash < 0) return { kind: 'other' };
    const dir = rest.slice(0, slash);
    const tail = rest.slice(slash + 1);
    switch (dir) {
      case 'brokers':
        return /^\d+$/.test(tail) ? { kind: 'broker', nodeId: Number(tail) } : { kind: 'other' };
      case 'topics':
        return tail.length > 0 && !tail.includes('/') ? { kind: 'topic', name: tail } : { kind: 'other' };
      case 'topic-names':
        return { kind: 'topic-name' };
      case 'barriers':
        return { kind: 'barrier' };
      case 'partitions': {
        if (tail.length > 0 && !tail.includes('/')) return { kind: 'legacy-partitions', name: tail };
        const m = /^([^/]+)\/(\d+)$/.exec(tail);
        return m ? { kind: 'partition', name: m[1]!, partition: Number(m[2]) } : { kind: 'other' };
      }
      case 'configs': {
        if (tail.startsWith('topics/')) return { kind: 'topic-configs', name: tail.slice('topics/'.length) };
        if (tail === 'brokers/default') return { kind: 'broker-configs', nodeId: null };
        if (tail.startsWith('groups/')) {
          try {
            return { kind: 'group-configs', groupId: decodeURIComponent(tail.slice('groups/'.length)) };
          } catch {
            return { kind: 'other' };
          }
        }
        const m = /^brokers\/(\d+)$/.exec(tail);
        return m ? { kind: 'broker-configs', nodeId: Number(m[1]) } : { kind: 'other' };
      }
      default:
        return { kind: 'other' };
    }
  }
}

/** The most partitions one etcd transaction changes: a compare and a put each, within etcd's 128 operations. */
export const MAX_PARTITIONS_PER_TXN = 60;

/**
 * The image that the keys under `layout.root` describe. Replicas whose broker is
 * not registered are offline. A partition whose state key is missing (a topic
 * whose creation was cut short, until the controller writes it) has no leader. A value that is not JSON (not
 * written by gregor) is left out and its key given to `onBadKey`.
 */
export function imageFromEntries(layout: EtcdLayout, entries: ReadonlyMap<string, Entry>, onBadKey: (key: string) => void = () => {}): MetadataImage {
  const parse = <T>(key: string, entry: Entry): T | undefined => {
    try {
      return JSON.parse(entry.value) as T;
    } catch {
      onBadKey(key);
      return undefined;
    }
  };
  const brokers: BrokerRegistration[] = [];
  const topics = new Map<string, StoredTopic>();
  const partitions = new Map<string, Map<number, StoredPartition>>();
  const legacy = new Map<string, readonly StoredPartition[]>();
  const topicConfigs = new Map<string, Record<string, string>>();
  let clusterDefault: Record<string, string> = {};
  const perBroker = new Map<number, Record<string, string>>();
  const groupConfigs = new Map<string, Record<string, string>>();
  let clusterId = '';
  let controllerId = -1;
  for (const [key, entry] of entries) {
    const k = layout.kindOf(key);
    if (k.kind === 'cluster-id') {
      clusterId = entry.value;
      continue;
    }
    if (k.kind === 'other' || k.kind === 'barrier' || k.kind === 'topic-name' || k.kind === 'producer-ids') continue;
    const v = parse<unknown>(key, entry);
    if (v === undefined) continue;
    switch (k.kind) {
      case 'broker': {
        const b = v as StoredBroker;
        brokers.push({ nodeId: k.nodeId, rack: b.rack, endpoints: b.endpoints, ...(b.offlineReplicas?.length ? { offlineReplicas: b.offlineReplicas } : {}) });
        break;
      }
      case 'controller':
        controllerId = (v as StoredController).nodeId;
        break;
      case 'topic':
        topics.set(k.name, v as StoredTopic);
        break;
      case 'partition': {
        let m = partitions.get(k.name);
        if (!m) partitions.set(k.name, (m = new Map()));
        m.set(k.partition, v as StoredPartition);
        break;
      }
      case 'legacy-partitions':
        legacy.set(k.name, v as StoredPartition[]);
        break;
      case 'topic-configs':
        topicConfigs.set(k.name, v as Record<string, string>);
        break;
      case 'broker-configs':
        if (k.nodeId === null) clusterDefault = v as Record<string, string>;
        else perBroker.set(k.nodeId, v as Record<string, string>);
        break;
      case 'group-configs':
        groupConfigs.set(k.groupId, v as Record<string, string>);
        break;
    }
  }
  const live = new Set(brokers.map((b) => b.nodeId));
  const down = offlineReplicaSets(brokers);
  const images: TopicImage[] = [];
  for (const [name, t] of topics) {
    const own = partitions.get(name);
    const old = legacy.get(name);
    const parts: PartitionState[] = t.replicas.map((replicas, partition) => {
      const s = own?.get(partition) ?? old?.[partition];
      const moving = t.reassigning?.[String(partition)];
      return {
        partition,
        leader: s?.leader ?? -1,
        leaderEpoch: s?.leaderEpoch ?? 0,
        replicas: [...replicas],
        isr: s ? [...s.isr] : [],
        offlineReplicas: replicas.filter((r) => !live.has(r) || down.get(r)?.has(`${t.topicId}:${partition}`) === true),
        ...(moving ? { addingReplicas: [...moving.adding], removingReplicas: [...moving.removing] } : {}),
      };
    });
    images.push({ name, topicId: t.topicId, internal: INTERNAL_TOPICS.has(name), configs: topicConfigs.get(name) ?? {}, partitions: parts });
  }
  brokers.sort((a, b) => a.nodeId - b.nodeId);
  const dynamic: DynamicBrokerConfigs = { clusterDefault, perBroker };
  return buildImage(clusterId, controllerId, brokers, images, dynamic, groupConfigs);
}

/**
 * A new partition's state, as Kafka's controller makes it: every assigned
 * replica that is alive is in the ISR (a new partition is empty everywhere,
 * so all of them are in sync), and the first of them leads. With none alive,
 * no leader and every replica in the ISR, so whichever comes first may lead.
 *
 * Example: initialState([2, 3, 1], {1, 3}) -> { leader: 3, leaderEpoch: 0, partitionEpoch: 0, isr: [3, 1] }.
 */
export function initialState(replicas: readonly number[], live: ReadonlySet<number>): StoredPartition {
  const alive = replicas.filter((r) => live.has(r));
  return { leader: alive[0] ?? -1, leaderEpoch: 0, partitionEpoch: 0, isr: alive.length > 0 ? alive : [...replicas] };
}

/**
 * Replicas for `count` new partitions over `brokerIds`, the way Kafka places
 * them without racks: leaders go round the brokers from `startIndex`, and each
 * partition's followers follow its leader at a shift that grows by one every
 * time the leaders have gone round once, so that followers spread too.
 * `firstPartition` is the number of partitions the topic already has.
 *
 * Example: assignReplicas([1, 2, 3], 3, 2, 0, 0) -> [[1, 2], [2, 3], [3, 1]].
 */
export function assignReplicas(
  brokerIds: readonly number[],
  count: number,
  replicationFactor: number,
  startIndex: number,
  firstPartition: number,
): number[][] {
  return placeReplicas(brokerIds.map((nodeId) => ({ nodeId, rack: null })), count, replicationFactor, startIndex, firstPartition);
}

/**
 * Replicas for `count` new partitions over `brokers`, the way Kafka places
 * them with racks (broker.rack): the brokers are listed alternating between
 * racks (each rack's brokers in id order, racks in name order), leaders go
 * round that list from `startIndex`, and each follower is the next broker at
 * the leader's shift that is on a rack and a broker not used yet by the
 * partition (any rack, once every rack has a replica). Brokers without a rack
 * count as one rack of their own; with no racks at all this is
 * assignReplicas. `firstPartition` is the number of partitions the topic
 * already has.
 *
 * Example: brokers 1, 2 on rack a and 3, 4 on rack b, 4 partitions of 2
 * replicas from index 0 -> [[1, 3], [3, 2], [2, 4], [4, 1]]: every partition on both racks.
 */
export function placeReplicas(
  brokers: readonly { nodeId: number; rack: string | null }[],
  count: number,
  replicationFactor: number,
  startIndex: number,
  firstPartition: number,
): number[][] {
  const n = brokers.length;
  if (replicationFactor < 1 || replicationFactor > n) throw new RangeError(`replication factor ${replicationFactor} cannot be placed on ${n} broker(s)`);
  const rackOf = new Map(brokers.map((b) => [b.nodeId, b.rack ?? '']));
  const byRack = new Map<string, number[]>();
  for (const b of [...brokers].sort((x, y) => x.nodeId - y.nodeId)) byRack.set(rackOf.get(b.nodeId)!, [...(byRack.get(rackOf.get(b.nodeId)!) ?? []), b.nodeId]);
  const racks = [...byRack.keys()].sort();
  const arranged: number[] = [];
  for (let i = 0; arranged.length < n; i++) {
    const next = byRack.get(racks[i % racks.length]!)!.shift();
    if (next !== undefined) arranged.push(next);
  }
  const out: number[][] = [];
  let shift = startIndex;
  for (let i = 0; i < count; i++) {
    const p = firstPartition + i;
    if (p > 0 && p % n === 0) shift++;
    const first = (p + startIndex) % n;
    const leader = arranged[first]!;
    const replicas = [leader];
    const usedRacks = new Set([rackOf.get(leader)!]);
    for (let k = 0; replicas.length < replicationFactor; k++) {
      const candidate = arranged[(first + 1 + ((shift * racks.length + k) % (n - 1))) % n]!;
      const rack = rackOf.get(candidate)!;
      if ((usedRacks.has(rack) && usedRacks.size < racks.length) || replicas.includes(candidate)) continue;
      replicas.push(candidate);
      usedRacks.add(rack);
    }
    out.push(replicas);
  }
  return out;
}

/**
 * Each broker's replicas that cannot serve, from the registrations: node id
 * -> `topicId:partition` keys. Brokers with none are left out.
 */
export function offlineReplicaSets(brokers: Iterable<BrokerRegistration>): Map<number, Set<string>> {
  const out = new Map<number, Set<string>>();
  for (const b of brokers) if (b.offlineReplicas && b.offlineReplicas.length > 0) out.set(b.nodeId, new Set(b.offlineReplicas));
  return out;
}

/**
 * What the controller writes when brokers come and go, for one topic's
 * partitions: a partition whose leader is gone gets the first of its replicas
 * that is in the ISR and alive (an unclean election never happens), with the
 * leader epoch raised; with no such replica it has no leader (-1) and keeps
 * its ISR, so that the last in-sync replica can lead again when it returns.
 * Replicas that are gone leave the ISR of a partition that keeps or gets a
 * leader. Every change raises the partition epoch. Null when nothing changes.
 * A replica `offline` names (its broker's log directory failed) counts as gone
 * for that partition only.
 *
 * Example: states [{ leader: 1, leaderEpoch: 4, partitionEpoch: 4, isr: [1, 2] }],
 * replicas [[1, 2]], live {2} -> [{ leader: 2, leaderEpoch: 5, partitionEpoch: 5, isr: [2] }].
 */
export function electLeaders(
  states: readonly StoredPartition[],
  replicas: readonly (readonly number[])[],
  liveBrokers: ReadonlySet<number>,
  offline: (partition: number, replica: number) => boolean = () => false,
): StoredPartition[] | null {
  let changed = false;
  const out = states.map((s, partition): StoredPartition => {
    const live = { has: (r: number) => liveBrokers.has(r) && !offline(partition, r) };
    if (s.leader >= 0 && live.has(s.leader)) {
      const isr = s.isr.filter((r) => live.has(r));
      if (isr.length === s.isr.length) return s;
      changed = true;
      return { ...s, isr, partitionEpoch: s.partitionEpoch + 1 };
    }
    const candidates = new Set(s.isr.filter((r) => live.has(r)));
    const leader = (replicas[partition] ?? []).find((r) => candidates.has(r)) ?? [...candidates][0];
    if (leader !== undefined) {
      changed = true;
      return { leader, leaderEpoch: s.leaderEpoch + 1, partitionEpoch: s.partitionEpoch + 1, isr: s.isr.filter((r) => live.has(r)) };
    }
    if (s.leader === -1) return s;
    changed = true;
    return { ...s, leader: -1, leaderEpoch: s.leaderEpoch + 1, partitionEpoch: s.partitionEpoch + 1 };
  });
  return changed ? out : null;
}

/** One partition of a topic as etcd holds it: its replicas, its reassignment if one runs, and its state. */
export interface StoredPartitionView {
  readonly replicas: readonly number[];
  readonly reassigning: Reassignment | null;
  readonly state: StoredPartition;
}

/** Each partition of a topic as etcd holds it: the topic key's replicas and reassignments with the partition-state key's states. */
export function partitionViews(stored: StoredTopic, states: readonly StoredPartition[]): StoredPartitionView[] {
  return stored.replicas.map((replicas, i) => ({ replicas, reassigning: stored.reassigning?.[String(i)] ?? null, state: states[i]! }));
}

/** The partition's replicas before its reassignment began. */
function originalReplicas(p: StoredPartitionView): readonly number[] {
  return p.reassigning?.original ?? p.replicas.filter((r) => !(p.reassigning?.adding ?? []).includes(r));
}

/** A new state with both epochs raised when the leader changes, the partition epoch alone otherwise. */
function changed(s: StoredPartition, leader: number, isr: readonly number[]): StoredPartition {
  return {
    leader,
    leaderEpoch: leader === s.leader ? s.leaderEpoch : s.leaderEpoch + 1,
    partitionEpoch: s.partitionEpoch + 1,
    isr: [...isr],
  };
}

/**
 * What AlterPartitionReassignments asks of one partition (KIP-455), as the
 * new view to write or the error code to answer.
 *
 * A target: the replicas become the target followed by the current replicas
 * not in it, which leave once every target replica is in the ISR (see
 * completeReassignment). Over a reassignment in progress, "current" includes
 * the replicas it was adding, so nothing in sync goes before the new target
 * is; the replicas from before the first reassignment are kept for a cancel,
 * and "adding" is counted from them. The target must name distinct
 * registered brokers. A target that only reorders the current replicas
 * applies at once (nothing to copy).
 *
 * Null cancels the reassignment in progress: the replicas go back to what
 * they were before it (and before any it replaced), the others leave the
 * ISR, and a leader among them gives way to the first original replica in
 * the ISR and alive. Refused (INVALID_REPLICA_ASSIGNMENT) when no original
 * replica is in the ISR: that would take an unclean election, as Kafka
 * refuses it.
 *
 * Example: replicas [1, 2, 3], target [2, 3, 4] ->
 * { replicas: [2, 3, 4, 1], reassigning: { adding: [4], removing: [1], original: [1, 2, 3] } }.
 */
export function reassign(p: StoredPartitionView, target: readonly number[] | null, live: ReadonlySet<number>): StoredPartitionView | { errorCode: number; message: string } {
  if (target === null) {
    if (!p.reassigning) return { errorCode: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, message: 'No reassignment is in progress for this partition.' };
    const original = originalReplicas(p);
    const isr = p.state.isr.filter((r) => original.includes(r));
    if (isr.length === 0) {
      return { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT, message: `No original replica (${original.join(', ')}) is in sync; cancelling would need an unclean leader election.` };
    }
    const leader = original.includes(p.state.leader) ? p.state.leader : (original.find((r) => isr.includes(r) && live.has(r)) ?? -1);
    return { replicas: original, reassigning: null, state: changed(p.state, leader, isr) };
  }
  if (target.length === 0) return { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT, message: 'The target replica list is empty.' };
  if (new Set(target).size !== target.length) return { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT, message: `The target replicas [${target.join(', ')}] name a broker twice.` };
  const unknown = target.filter((r) => !live.has(r));
  if (unknown.length > 0) return { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT, message: `Brokers ${unknown.join(', ')} are not registered.` };
  const current = p.replicas;
  const original = originalReplicas(p);
  const removing = current.filter((r) => !target.includes(r));
  const state = { ...p.state, partitionEpoch: p.state.partitionEpoch + 1 };
  if (removing.length === 0 && target.every((r) => current.includes(r))) {
    if (!p.reassigning && target.every((r, i) => current[i] === r)) return p;
    return { replicas: [...target], reassigning: null, state };
  }
  const adding = target.filter((r) => !original.includes(r));
  return { replicas: [...target, ...removing], reassigning: { adding, removing, original: [...original] }, state };
}

/**
 * The controller's step for a partition being reassigned: once every target
 * replica is in the ISR, the replicas become the target, the removed ones
 * leave the ISR, and a leader being removed gives way to the first target
 * replica in the ISR and alive. Null while the target is not in sync yet.
 *
 * Example: { replicas: [2, 3, 4, 1], adding [4], removing [1], leader 1,
 * isr [1, 2, 3, 4] } -> { replicas: [2, 3, 4], leader 2, isr [2, 3, 4] }.
 */
export function completeReassignment(p: StoredPartitionView, live: ReadonlySet<number>): StoredPartitionView | null {
  if (!p.reassigning) return null;
  const target = p.replicas.filter((r) => !p.reassigning!.removing.includes(r));
  if (!target.every((r) => p.state.isr.includes(r))) return null;
  const isr = p.state.isr.filter((r) => target.includes(r));
  const leader = target.includes(p.state.leader) && live.has(p.state.leader) ? p.state.leader : (target.find((r) => isr.includes(r) && live.has(r)) ?? -1);
  return { replicas: target, reassigning: null, state: changed(p.state, leader, isr) };
}

/**
 * ElectLeaders for one partition: 'preferred' makes the first replica the
 * leader when it is alive and in the ISR (PREFERRED_LEADER_NOT_AVAILABLE
 * otherwise, ELECTION_NOT_NEEDED when it leads already); 'unclean' gives a
 * partition without a live leader one: an in-sync replica if one is alive,
 * else the first live replica, alone in the ISR (ELECTION_NOT_NEEDED while
 * the leader is alive, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is).
 *
 * Example: replicas [1, 2], leader 2, isr [1, 2], 'preferred' -> leader 1.
 */
export function electLeader(p: StoredPartitionView, type: 'preferred' | 'unclean', live: ReadonlySet<number>): StoredPartition | { errorCode: number; message: string } {
  const s = p.state;
  if (type === 'preferred') {
    const preferred = p.replicas[0];
    if (preferred === undefined) return { errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, message: 'The partition has no replicas.' };
    if (s.leader === preferred) return { errorCode: ErrorCode.ELECTION_NOT_NEEDED, message: 'The preferred replica is the leader already.' };
    if (!live.has(preferred) || !s.isr.includes(preferred)) {
      return { errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, message: `The preferred replica ${preferred} is not ${live.has(preferred) ? 'in sync' : 'alive'}.` };
    }
    return changed(s, preferred, s.isr);
  }
  if (s.leader >= 0 && live.has(s.leader)) return { errorCode: ErrorCode.ELECTION_NOT_NEEDED, message: 'The partition has a live leader.' };
  const clean = p.replicas.find((r) => s.isr.includes(r) && live.has(r));
  if (clean !== undefined) return changed(s, clean, s.isr.filter((r) => live.has(r)));
  const any = p.replicas.find((r) => live.has(r));
  if (any === undefined) return { errorCode: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, message: 'No replica of the partition is alive.' };
  return changed(s, any, [any]);
}

/**
 * Partitions whose preferred replica should lead again (auto.leader.rebalance.enable):
 * those whose first replica is alive and in the ISR but does not lead, and
 * which are not being reassigned. As Kafka 4.0's controller (KRaft), every
 * such partition counts, whatever the share of a broker's partitions it is.
 *
 * Example: a partition with replicas [1, 2], leader 2, ISR [1, 2] and 1 alive
 * -> listed.
 */
export function imbalancedPartitions(topics: readonly { name: string; partitions: readonly StoredPartitionView[] }[], live: ReadonlySet<number>): { topic: string; partition: number }[] {
  const out: { topic: string; partition: number }[] = [];
  for (const t of topics) {
    t.partitions.forEach((p, partition) => {
      const preferred = p.replicas[0];
      if (preferred === undefined || p.reassigning) return;
      if (p.state.leader !== preferred && live.has(preferred) && p.state.isr.includes(preferred)) out.push({ topic: t.name, partition });
    });
  }
  return out;
}

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
 *   partitions/<name>                 every partition's leader, leader epoch, partition epoch and ISR
 *   configs/topics/<name>             a topic's config overrides
 *   configs/brokers/<nodeId|default>  dynamic broker configs, per broker and cluster-wide
 *   producer-ids                      the first producer id of the next block
 *   barriers/<nodeId>                 written by a broker to learn when its watch has caught up
 *
 * Topic names are [a-zA-Z0-9._-]+, so a name is a safe path segment. A topic's
 * partition states share one key so that a topic of thousands of partitions is
 * still written in one transaction (etcd allows 128 operations in one).
 */
import type { BrokerRegistration, DynamicBrokerConfigs, Endpoint, MetadataImage, PartitionState, TopicImage } from './metadata-image.js';
import { buildImage } from './metadata-image.js';
import { INTERNAL_TOPICS } from './topic-names.js';

export interface StoredBroker {
  readonly rack: string | null;
  readonly endpoints: readonly Endpoint[];
  /** The data directory's id: tells a broker's own earlier registration from another broker using its node id. */
  readonly directoryId: string;
}

export interface StoredTopic {
  readonly topicId: string;
  /** Replicas of each partition, by partition; the first is the preferred leader. */
  readonly replicas: readonly (readonly number[])[];
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
  | { kind: 'partitions'; name: string }
  | { kind: 'topic-configs'; name: string }
  | { kind: 'broker-configs'; nodeId: number | null }
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
  partitions(name: string): string {
    return `${this.root}partitions/${name}`;
  }
  topicConfigs(name: string): string {
    return `${this.root}configs/topics/${name}`;
  }
  brokerConfigs(nodeId: number | null): string {
    return `${this.root}configs/brokers/${nodeId === null ? 'default' : nodeId}`;
  }
  producerIds(): string {
    return `${this.root}producer-ids`;
  }
  barrier(nodeId: number): string {
    return `${this.root}barriers/${nodeId}`;
  }

  /** What a key under the root holds. Example: '/gregor/partitions/orders' -> { kind: 'partitions', name: 'orders' }. */
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
      case 'partitions':
        return tail.length > 0 && !tail.includes('/') ? { kind: 'partitions', name: tail } : { kind: 'other' };
      case 'configs': {
        if (tail.startsWith('topics/')) return { kind: 'topic-configs', name: tail.slice('topics/'.length) };
        if (tail === 'brokers/default') return { kind: 'broker-configs', nodeId: null };
        const m = /^brokers\/(\d+)$/.exec(tail);
        return m ? { kind: 'broker-configs', nodeId: Number(m[1]) } : { kind: 'other' };
      }
      default:
        return { kind: 'other' };
    }
  }
}

/**
 * The image that the keys under `layout.root` describe. Replicas whose broker is
 * not registered are offline. A partition whose state key is missing (never the
 * case for topics gregor wrote) has no leader. A value that is not JSON (not
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
  const partitions = new Map<string, readonly StoredPartition[]>();
  const topicConfigs = new Map<string, Record<string, string>>();
  let clusterDefault: Record<string, string> = {};
  const perBroker = new Map<number, Record<string, string>>();
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
        brokers.push({ nodeId: k.nodeId, rack: b.rack, endpoints: b.endpoints });
        break;
      }
      case 'controller':
        controllerId = (v as StoredController).nodeId;
        break;
      case 'topic':
        topics.set(k.name, v as StoredTopic);
        break;
      case 'partitions':
        partitions.set(k.name, v as StoredPartition[]);
        break;
      case 'topic-configs':
        topicConfigs.set(k.name, v as Record<string, string>);
        break;
      case 'broker-configs':
        if (k.nodeId === null) clusterDefault = v as Record<string, string>;
        else perBroker.set(k.nodeId, v as Record<string, string>);
        break;
    }
  }
  const live = new Set(brokers.map((b) => b.nodeId));
  const images: TopicImage[] = [];
  for (const [name, t] of topics) {
    const states = partitions.get(name);
    const parts: PartitionState[] = t.replicas.map((replicas, partition) => {
      const s = states?.[partition];
      return {
        partition,
        leader: s?.leader ?? -1,
        leaderEpoch: s?.leaderEpoch ?? 0,
        replicas: [...replicas],
        isr: s ? [...s.isr] : [],
        offlineReplicas: replicas.filter((r) => !live.has(r)),
      };
    });
    images.push({ name, topicId: t.topicId, internal: INTERNAL_TOPICS.has(name), configs: topicConfigs.get(name) ?? {}, partitions: parts });
  }
  brokers.sort((a, b) => a.nodeId - b.nodeId);
  const dynamic: DynamicBrokerConfigs = { clusterDefault, perBroker };
  return buildImage(clusterId, controllerId, brokers, images, dynamic);
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
  const ids = [...brokerIds].sort((a, b) => a - b);
  const n = ids.length;
  if (replicationFactor < 1 || replicationFactor > n) throw new RangeError(`replication factor ${replicationFactor} cannot be placed on ${n} broker(s)`);
  const out: number[][] = [];
  let shift = startIndex;
  for (let i = 0; i < count; i++) {
    const p = firstPartition + i;
    if (p > 0 && p % n === 0) shift++;
    const first = (p + startIndex) % n;
    const replicas = [ids[first]!];
    for (let j = 0; j < replicationFactor - 1; j++) replicas.push(ids[(first + 1 + ((shift + j) % (n - 1))) % n]!);
    out.push(replicas);
  }
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
 *
 * Example: states [{ leader: 1, leaderEpoch: 4, partitionEpoch: 4, isr: [1, 2] }],
 * replicas [[1, 2]], live {2} -> [{ leader: 2, leaderEpoch: 5, partitionEpoch: 5, isr: [2] }].
 */
export function electLeaders(
  states: readonly StoredPartition[],
  replicas: readonly (readonly number[])[],
  live: ReadonlySet<number>,
): StoredPartition[] | null {
  let changed = false;
  const out = states.map((s, partition): StoredPartition => {
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

/**
 * Metadata of a single broker, kept in its data directory. The broker is the
 * controller and the leader of every partition, and the ISR is itself. Each
 * start of the broker is a new leadership of every partition: its leader epoch
 * grows (see RESTART_LEADER_EPOCH_BUMP) and is written back before any client
 * is served.
 */
import { randomUuid } from '../../wire/uuid.js';
import { join } from 'node:path';
import { readFileIfExists, writeFileAtomic } from '../../storage/atomic-file.js';
import {
  buildImage,
  groupConfigsIn,
  PRODUCER_ID_BLOCK_SIZE,
  TopicExistsError,
  UnknownTopicError,
  type BrokerRegistration,
  type DynamicBrokerConfigs,
  type MetadataImage,
  type MetadataStore,
  type NewTopic,
  type TopicImage,
  type TopicRef,
} from './metadata-image.js';
import { INTERNAL_TOPICS, collisionKey } from './topic-names.js';

const FILE = 'gregor-metadata.json';

/**
 * How much every partition's leader epoch grows when the broker starts again.
 * A single-node KRaft Kafka moves leadership off a broker that shuts down (or
 * comes back after a crash) and onto it again once it is unfenced: two leader
 * changes, two epochs, which clients see in Metadata and ListOffsets.
 */
const RESTART_LEADER_EPOCH_BUMP = 2;

interface StoredTopic {
  name: string;
  topicId: string;
  configs: Record<string, string>;
  /** `replicas` is absent for partitions placed by the store: this broker alone. */
  partitions: { partition: number; leaderEpoch: number; replicas?: number[] }[];
}

interface StoredMetadata {
  version: 1;
  topics: StoredTopic[];
  /** Dynamic broker configs; absent in files written before they existed. */
  brokerConfigs?: StoredBrokerConfigs;
  /** The first producer id of the next block, in decimal; absent until a block is handed out. */
  nextProducerId?: string;
  /** Group config overrides by group id; absent in files written before they existed. */
  groupConfigs?: Record<string, Record<string, string>>;
}

interface StoredBrokerConfigs {
  clusterDefault: Record<string, string>;
  /** By node id. */
  perBroker: Record<string, Record<string, string>>;
}


function withLeaderEpochsBumped(stored: StoredMetadata, by: number): StoredMetadata {
  return {
    ...stored,
    topics: stored.topics.map((t) => ({ ...t, partitions: t.partitions.map((p) => ({ ...p, leaderEpoch: p.leaderEpoch + by })) })),
  };
}

export class LocalMetadataStore implements MetadataStore {
  private current: MetadataImage;
  private stored: StoredMetadata;
  private readonly path: string;
  private readonly listeners = new Set<(image: MetadataImage) => void>();

  constructor(
    dataDir: string,
    private readonly clusterId: string,
    private readonly self: BrokerRegistration,
  ) {
    this.path = join(dataDir, FILE);
    const text = readFileIfExists(this.path);
    try {
      this.stored = text === null ? { version: 1, topics: [] } : (JSON.parse(text) as StoredMetadata);
    } catch (err) {
      throw new Error(`${this.path} is not valid metadata (${(err as Error).message}); restore it from a backup or move it away to start with no topics`);
    }
    if (this.stored.topics.length > 0) {
      this.stored = withLeaderEpochsBumped(this.stored, RESTART_LEADER_EPOCH_BUMP);
      writeFileAtomic(this.path, JSON.stringify(this.stored, null, 1));
    }
    this.current = this.build();
  }

  image(): MetadataImage {
    return this.current;
  }

  async createTopic(topic: NewTopic): Promise<TopicImage> {
    const clash = this.stored.topics.find((t) => t.name === topic.name || collisionKey(t.name) === collisionKey(topic.name));
    if (clash) throw new TopicExistsError(clash.name === topic.name ? `Topic '${topic.name}' already exists.` : `Topic '${topic.name}' collides with existing topic '${clash.name}'.`);
    const entry: StoredTopic = {
      name: topic.name,
      topicId: randomUuid(),
      configs: { ...(topic.configs ?? {}) },
      partitions: topic.assignments
        ? topic.assignments.map((replicas, partition) => ({ partition, leaderEpoch: 0, replicas: [...replicas] }))
        : Array.from({ length: topic.numPartitions }, (_, partition) => ({ partition, leaderEpoch: 0 })),
    };
    const next: StoredMetadata = { ...this.stored, topics: [...this.stored.topics, entry] };
    writeFileAtomic(this.path, JSON.stringify(next, null, 1));
    this.stored = next;
    this.current = this.build();
    const image = this.current;
    for (const l of [...this.listeners]) l(image);
    return image.topics.get(topic.name)!;
  }

  async deleteTopic(ref: TopicRef): Promise<TopicImage> {
    const gone = 'name' in ref ? this.current.topics.get(ref.name) : this.current.topicsById.get(ref.topicId);
    if (!gone) throw new UnknownTopicError('name' in ref ? `Topic '${ref.name}' does not exist.` : `Topic id ${ref.topicId} does not exist.`);
    this.commit({ ...this.stored, topics: this.stored.topics.filter((t) => t.topicId !== gone.topicId) });
    return gone;
  }

  async createPartitions(name: string, count: number, assignments?: readonly (readonly number[])[]): Promise<TopicImage> {
    const entry = this.stored.topics.find((t) => t.name === name);
    if (!entry) throw new UnknownTopicError(`Topic '${name}' does not exist.`);
    const current = entry.partitions.length;
    if (!Number.isInteger(count) || count <= current) throw new RangeError(`topic '${name}' has ${current} partitions; ${count} is not an increase`);
    if (assignments && assignments.length !== count - current) {
      throw new RangeError(`${count - current} new partitions but ${assignments.length} assignments`);
    }
    const added = Array.from({ length: count - current }, (_, i) => {
      const replicas = assignments?.[i];
      return replicas ? { partition: current + i, leaderEpoch: 0, replicas: [...replicas] } : { partition: current + i, leaderEpoch: 0 };
    });
    const grown: StoredTopic = { ...entry, partitions: [...entry.partitions, ...added] };
    this.commit({ ...this.stored, topics: this.stored.topics.map((t) => (t === entry ? grown : t)) });
    return this.current.topics.get(name)!;
  }

  async alterTopicConfigs(name: string, configs: Readonly<Record<string, string>>): Promise<TopicImage> {
    const entry = this.stored.topics.find((t) => t.name === name);
    if (!entry) throw new UnknownTopicError(`The topic '${name}' does not exist.`);
    const altered: StoredTopic = { ...entry, configs: { ...configs } };
    this.commit({ ...this.stored, topics: this.stored.topics.map((t) => (t === entry ? altered : t)) });
    return this.current.topics.get(name)!;
  }

  async alterBrokerConfigs(nodeId: number | null, configs: Readonly<Record<string, string>>): Promise<DynamicBrokerConfigs> {
    const before = this.stored.brokerConfigs ?? { clusterDefault: {}, perBroker: {} };
    const brokerConfigs: StoredBrokerConfigs =
      nodeId === null ? { ...before, clusterDefault: { ...configs } } : { ...before, perBroker: { ...before.perBroker, [String(nodeId)]: { ...configs } } };
    if (nodeId !== null && Object.keys(configs).length === 0) delete brokerConfigs.perBroker[String(nodeId)];
    this.commit({ ...this.stored, brokerConfigs });
    return this.current.dynamicBrokerConfigs;
  }

  groupConfigOverrides(groupId: string): ReadonlyMap<string, string> {
    return groupConfigsIn(this.current, groupId);
  }

  async alterGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>): Promise<void> {
    // Through a Map: a group id may be any string, '__proto__' too.
    const groupConfigs = new Map(Object.entries(this.stored.groupConfigs ?? {}));
    if (Object.keys(configs).length === 0) groupConfigs.delete(groupId);
    else groupConfigs.set(groupId, { ...configs });
    this.commit({ ...this.stored, groupConfigs: Object.fromEntries(groupConfigs) });
  }

  async allocateProducerIdBlock(): Promise<{ firstProducerId: bigint; size: number }> {
    const first = BigInt(this.stored.nextProducerId ?? '0');
    const next: StoredMetadata = { ...this.stored, nextProducerId: String(first + BigInt(PRODUCER_ID_BLOCK_SIZE)) };
    // The image does not change, so no listener hears of it.
    writeFileAtomic(this.path, JSON.stringify(next, null, 1));
    this.stored = next;
    return { firstProducerId: first, size: PRODUCER_ID_BLOCK_SIZE };
  }

  subscribe(listener: (image: MetadataImage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }

  /** Writes `next` (atomically, synced), makes it the image, and tells every listener before returning. */
  private commit(next: StoredMetadata): void {
    writeFileAtomic(this.path, JSON.stringify(next, null, 1));
    this.stored = next;
    this.current = this.build();
    const image = this.current;
    for (const l of [...this.listeners]) l(image);
  }

  private build(): MetadataImage {
    const id = this.self.nodeId;
    const topics: TopicImage[] = this.stored.topics.map((t) => ({
      name: t.name,
      topicId: t.topicId,
      internal: INTERNAL_TOPICS.has(t.name),
      configs: t.configs,
      partitions: t.partitions.map((p) => ({
        partition: p.partition,
        leader: id,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicas ?? [id],
        isr: [id],
        offlineReplicas: [],
      })),
    }));
    const stored = this.stored.brokerConfigs;
    const dynamic: DynamicBrokerConfigs = {
      clusterDefault: stored?.clusterDefault ?? {},
      perBroker: new Map(Object.entries(stored?.perBroker ?? {}).map(([node, configs]) => [Number(node), configs])),
    };
    return buildImage(this.clusterId, id, [this.self], topics, dynamic, new Map(Object.entries(this.stored.groupConfigs ?? {})));
  }
}


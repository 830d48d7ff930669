/**
 * Metadata of a single broker, kept in its data directory. The broker is the
 * controller and the leader of every partition, and the ISR is itself.
 */
import { randomUuid } from '../wire/uuid.js';
import { join } from 'node:path';
import { readFileIfExists, writeFileAtomic } from '../storage/atomic-file.js';
import { buildImage, type BrokerRegistration, type MetadataImage, type MetadataStore, type NewTopic, type TopicImage } from './metadata-image.js';
import { INTERNAL_TOPICS, collisionKey } from './topic-names.js';

const FILE = 'gregor-metadata.json';

interface StoredTopic {
  name: string;
  topicId: string;
  configs: Record<string, string>;
  partitions: { partition: number; leaderEpoch: number }[];
}

interface StoredMetadata {
  version: 1;
  topics: StoredTopic[];
}

export class TopicExistsError extends Error {}

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
      partitions: Array.from({ length: topic.numPartitions }, (_, partition) => ({ partition, leaderEpoch: 0 })),
    };
    const next: StoredMetadata = { ...this.stored, topics: [...this.stored.topics, entry] };
    writeFileAtomic(this.path, JSON.stringify(next, null, 1));
    this.stored = next;
    this.current = this.build();
    const image = this.current;
    for (const l of [...this.listeners]) l(image);
    return image.topics.get(topic.name)!;
  }

  subscribe(listener: (image: MetadataImage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
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
        replicas: [id],
        isr: [id],
        offlineReplicas: [],
      })),
    }));
    return buildImage(this.clusterId, id, [this.self], topics);
  }
}


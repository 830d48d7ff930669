/**
 * The cluster as every component sees it: an immutable snapshot. Only a metadata
 * store produces new images; readers keep whichever image they were handed.
 */

export interface Endpoint {
  /** Listener name, e.g. PLAINTEXT. */
  readonly listener: string;
  readonly host: string;
  readonly port: number;
}

export interface BrokerRegistration {
  readonly nodeId: number;
  readonly rack: string | null;
  /** Advertised endpoints, one per listener. */
  readonly endpoints: readonly Endpoint[];
}

export interface PartitionState {
  readonly partition: number;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly offlineReplicas: readonly number[];
}

export interface TopicImage {
  readonly name: string;
  /** Kafka's base64url form of the topic's UUID; never the zero id. */
  readonly topicId: string;
  readonly internal: boolean;
  readonly configs: Readonly<Record<string, string>>;
  readonly partitions: readonly PartitionState[];
}

export interface MetadataImage {
  readonly clusterId: string;
  readonly controllerId: number;
  readonly brokers: ReadonlyMap<number, BrokerRegistration>;
  readonly topics: ReadonlyMap<string, TopicImage>;
  readonly topicsById: ReadonlyMap<string, TopicImage>;
}

export interface NewTopic {
  readonly name: string;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  readonly configs?: Readonly<Record<string, string>>;
}

/** Where images come from: the local file store for one broker, etcd for a cluster. */
export interface MetadataStore {
  image(): MetadataImage;
  createTopic(topic: NewTopic): Promise<TopicImage>;
  /**
   * Calls `listener` with every new image, synchronously, before the change
   * that made it is reported to its caller (so a createTopic that resolves has
   * already been seen by every listener). Returns the function that stops it.
   */
  subscribe(listener: (image: MetadataImage) => void): () => void;
  close(): Promise<void>;
}

export function buildImage(
  clusterId: string,
  controllerId: number,
  brokers: Iterable<BrokerRegistration>,
  topics: Iterable<TopicImage>,
): MetadataImage {
  const byName = new Map<string, TopicImage>();
  const byId = new Map<string, TopicImage>();
  for (const t of topics) {
    byName.set(t.name, t);
    byId.set(t.topicId, t);
  }
  return {
    clusterId,
    controllerId,
    brokers: new Map([...brokers].map((b) => [b.nodeId, b])),
    topics: byName,
    topicsById: byId,
  };
}

/**
 * The advertised endpoint of a broker for the listener a client came in on; a
 * broker without that listener is not reachable that way and is left out.
 */
export function endpointFor(broker: BrokerRegistration, listener: string): Endpoint | undefined {
  return broker.endpoints.find((e) => e.listener === listener);
}

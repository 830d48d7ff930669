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
  /**
   * Replicas on this broker that cannot serve (their log directory is
   * offline), as `topicId:partition`: the controller treats them as offline
   * replicas. Absent when there are none.
   */
  readonly offlineReplicas?: readonly string[];
}

export interface PartitionState {
  readonly partition: number;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly offlineReplicas: readonly number[];
  /** While a reassignment moves the partition (KIP-455): replicas joining, and replicas leaving once those are in sync. */
  readonly addingReplicas?: readonly number[];
  readonly removingReplicas?: readonly number[];
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
  /** Broker configs set at run time (AlterConfigs on a broker resource). */
  readonly dynamicBrokerConfigs: DynamicBrokerConfigs;
  /**
   * Group config overrides (the GROUP config resource), by group id, as
   * they were given (values checked when set: cluster/group/group-configs.ts).
   * A group may have them whether or not it exists; a group without any is
   * not listed.
   */
  readonly groupConfigs: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

/**
 * Broker configs changed at run time, by Kafka name, as they were given
 * (values checked when set). A broker's own override the cluster default,
 * which overrides its static config.
 */
export interface DynamicBrokerConfigs {
  /** The cluster-wide defaults: the broker resource named "". */
  readonly clusterDefault: Readonly<Record<string, string>>;
  /** Each broker's own, by node id. */
  readonly perBroker: ReadonlyMap<number, Readonly<Record<string, string>>>;
}

export const NO_DYNAMIC_BROKER_CONFIGS: DynamicBrokerConfigs = { clusterDefault: {}, perBroker: new Map() };

export interface NewTopic {
  readonly name: string;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  readonly configs?: Readonly<Record<string, string>>;
  /**
   * The replicas of each partition, in partition order, chosen by the client
   * (the first is the preferred leader). When given it replaces numPartitions
   * and replicationFactor; the caller has validated it against the image.
   */
  readonly assignments?: readonly (readonly number[])[];
}

/** A topic named by name or by id, as DeleteTopics names them. */
export type TopicRef = { readonly name: string } | { readonly topicId: string };

/** The store was asked to change a topic that is not (or no longer) in the image. */
export class UnknownTopicError extends Error {}

/** The store was asked to create a topic whose name, or its '.'/'_' collision key, is taken. */
export class TopicExistsError extends Error {}

/** What a change was computed from was changed by another request first: nothing was written. */
export class ConcurrentChangeError extends Error {}

/** Where images come from: the local file store for one broker, etcd for a cluster. */
export interface MetadataStore {
  image(): MetadataImage;
  createTopic(topic: NewTopic): Promise<TopicImage>;
  /**
   * Removes a topic with its partitions and configs; the next image no longer
   * lists it, so its logs go (see ReplicaManager). Returns the topic as it was.
   * Throws UnknownTopicError when there is no such topic.
   */
  deleteTopic(topic: TopicRef): Promise<TopicImage>;
  /**
   * Grows a topic to `count` partitions. `assignments`, when given, holds the
   * replicas of each new partition in order (count minus the current number of
   * them); otherwise they are placed like the existing ones. Throws
   * UnknownTopicError for a missing topic and RangeError when `count` is not an
   * increase or the assignments do not fit it.
   */
  createPartitions(name: string, count: number, assignments?: readonly (readonly number[])[]): Promise<TopicImage>;
  /**
   * Replaces every config override of a topic with `configs` (already
   * checked: see storage/topic-config.ts); an empty record leaves the topic
   * on the broker's defaults. Throws UnknownTopicError for a missing topic.
   */
  alterTopicConfigs(name: string, configs: Readonly<Record<string, string>>): Promise<TopicImage>;
  /**
   * Replaces the dynamic broker configs of one level: a broker's own
   * (`nodeId`) or the cluster default (`nodeId` null). Values are already
   * checked (see cluster/metadata/broker-configs.ts).
   */
  alterBrokerConfigs(nodeId: number | null, configs: Readonly<Record<string, string>>): Promise<DynamicBrokerConfigs>;
  /**
   * The config overrides of group `groupId` in the latest image, by name;
   * empty when it has none (or does not exist). Every broker of a cluster
   * sees the same ones. Resolve them with effectiveGroupConfig
   * (cluster/group/group-configs.ts).
   */
  groupConfigOverrides(groupId: string): ReadonlyMap<string, string>;
  /**
   * Replaces every config override of group `groupId` with `configs`
   * (already checked: see cluster/group/group-configs.ts); an empty record
   * removes them. The group need not exist. A store shared by brokers throws
   * ConcurrentChangeError when they changed meanwhile.
   */
  alterGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>): Promise<void>;
  /**
   * Calls `listener` with every new image, synchronously, before the change
   * that made it is reported to its caller (so a createTopic that resolves has
   * already been seen by every listener). Returns the function that stops it.
   */
  subscribe(listener: (image: MetadataImage) => void): () => void;
  /**
   * Hands out the next block of producer ids (1000, as Kafka's controller
   * does), persisted before it resolves so that no id is handed out twice,
   * across restarts and brokers. The first block starts at 0.
   *
   * Example: on a new store -> { firstProducerId: 0n, size: 1000 }, then
   * { firstProducerId: 1000n, size: 1000 }.
   */
  allocateProducerIdBlock(): Promise<{ firstProducerId: bigint; size: number }>;
  /**
   * As the leader of a partition at `leaderEpoch`: makes `isr` its in-sync
   * replicas instead of `baseIsr` (Kafka's AlterPartition). Refused (the
   * promise rejects) when the partition has another leader, epoch or ISR by
   * now, or when a replica added is not a live broker. Stores where one
   * broker holds every replica have no followers and no such method.
   */
  alterPartitionIsr?(topic: string, partition: number, leaderEpoch: number, baseIsr: readonly number[], isr: readonly number[]): Promise<void>;
  /**
   * Before a broker of a cluster stops: takes it out of the cluster so that
   * its partitions get other leaders, and resolves once none that another
   * live in-sync replica could lead names it (or after `timeoutMs`): how many
   * still name it, and whether the time ran out. Stores of one broker have none.
   */
  controlledShutdown?(timeoutMs: number): Promise<{ leading: number; timedOut: boolean }>;
  /**
   * Publishes this broker's replicas that cannot serve (`topicId:partition`,
   * the whole current list): every partition lists them among its offline
   * replicas, and the controller elects other leaders for them and takes them
   * out of the ISR. Stores of one broker have none.
   */
  reportOfflineReplicas?(replicas: readonly string[]): Promise<void>;
  /**
   * AlterPartitionReassignments (KIP-455): starts moving each partition to
   * its target replicas (null cancels a reassignment in progress); the
   * controller completes a move once the target replicas are in sync. One
   * answer per partition asked, in order. Stores of one broker have none.
   */
  alterPartitionReassignments?(changes: readonly { topic: string; partition: number; replicas: readonly number[] | null }[]): Promise<PartitionChangeResult[]>;
  /**
   * ElectLeaders: a 'preferred' or 'unclean' election for each partition
   * asked, or for every partition when `partitions` is null (then only the
   * partitions whose answer is not ELECTION_NOT_NEEDED are listed). Stores of
   * one broker have none.
   */
  electLeaders?(type: 'preferred' | 'unclean', partitions: readonly { topic: string; partition: number }[] | null): Promise<PartitionChangeResult[]>;
  close(): Promise<void>;
}

/** One partition's answer to a change of its replicas or leader: NONE, or the error code with a message. */
export interface PartitionChangeResult {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: number;
  readonly message: string | null;
}

/** How many producer ids one allocateProducerIdBlock hands out (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE). */
export const PRODUCER_ID_BLOCK_SIZE = 1000;

export function buildImage(
  clusterId: string,
  controllerId: number,
  brokers: Iterable<BrokerRegistration>,
  topics: Iterable<TopicImage>,
  dynamicBrokerConfigs: DynamicBrokerConfigs = NO_DYNAMIC_BROKER_CONFIGS,
  groupConfigs: ReadonlyMap<string, Readonly<Record<string, string>>> = new Map(),
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
    dynamicBrokerConfigs,
    groupConfigs,
  };
}

/** The overrides of one group in `image`, as groupConfigOverrides answers them. */
export function groupConfigsIn(image: MetadataImage, groupId: string): ReadonlyMap<string, string> {
  return new Map(Object.entries(image.groupConfigs.get(groupId) ?? {}));
}

/**
 * Whether `topic` exists in `image` with partition `partition`. Partitions
 * are usually listed by index, so that is looked at first.
 * Example: with topic t of 3 partitions: hasPartition(image, 't', 2) ->
 * true; hasPartition(image, 't', 3) -> false; hasPartition(image, 'u', 0) -> false.
 */
export function hasPartition(image: MetadataImage, topic: string, partition: number): boolean {
  const t = image.topics.get(topic);
  return t !== undefined && (t.partitions[partition]?.partition === partition || t.partitions.some((p) => p.partition === partition));
}

/**
 * The advertised endpoint of a broker for the listener a client came in on; a
 * broker without that listener is not reachable that way and is left out.
 */
export function endpointFor(broker: BrokerRegistration, listener: string): Endpoint | undefined {
  return broker.endpoints.find((e) => e.listener === listener);
}

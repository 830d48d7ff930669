/**
 * Helpers for group coordinator tests: an in-memory __consumer_offsets, a
 * metadata store whose image holds only that topic, and request builders.
 */
import { ErrorCode } from '../../wire/errors.js';
import { BASE_OFFSET, LAST_OFFSET_DELTA } from '../../wire/record-batch.js';
import { buildImage, groupConfigsIn, type MetadataImage, type MetadataStore, type TopicImage } from '../metadata/metadata-image.js';
import { GroupCoordinator, type ConsumerGroupHeartbeatParams, type ConsumerGroupHeartbeatResult, type GroupCoordinatorConfig, type GroupCoordinatorLogger, type JoinGroupParams } from './group-coordinator.js';
import type { OffsetsTopicStore } from '../coordinator/state-log-store.js';
import { GROUP_METADATA_TOPIC } from '../coordinator/partition-for.js';
import { ManualGroupTimer } from '../coordinator/timer.js';
import type { Persister } from '../share/persister.js';

/** Partitions of __consumer_offsets, each a list of stored batches with offsets assigned. */
export class MemoryOffsetsStore implements OffsetsTopicStore {
  readonly partitions = new Map<number, Buffer[]>();
  /** The next appends answer these codes instead of writing. */
  readonly failures: number[] = [];
  appends = 0;

  append(partition: number, batch: Buffer): { errorCode: number; baseOffset: bigint } {
    const failure = this.failures.shift();
    if (failure !== undefined) return { errorCode: failure, baseOffset: -1n };
    const batches = this.partitions.get(partition) ?? [];
    const last = batches.at(-1);
    const next = last ? last.readBigInt64BE(BASE_OFFSET) + BigInt(last.readInt32BE(LAST_OFFSET_DELTA)) + 1n : 0n;
    const stored = Buffer.from(batch);
    stored.writeBigInt64BE(next, BASE_OFFSET);
    batches.push(stored);
    this.partitions.set(partition, batches);
    this.appends++;
    return { errorCode: ErrorCode.NONE, baseOffset: next };
  }

  *read(partition: number): Iterable<Buffer> {
    const batches = this.partitions.get(partition);
    if (batches && batches.length > 0) yield Buffer.concat(batches);
  }
}

/**
 * A metadata store that serves the image it is given and changes only
 * through `publish`; every change a broker would ask of it throws, and
 * producer id blocks of 1000 are handed out from 0.
 */
export class FakeMetadataStore implements MetadataStore {
  private readonly listeners = new Set<(image: MetadataImage) => void>();
  private nextBlock = 0n;
  blocksAllocated = 0;

  constructor(private current: MetadataImage) {}

  image(): MetadataImage {
    return this.current;
  }

  /** Makes `image` the current one and tells every listener. */
  protected publish(image: MetadataImage): void {
    this.current = image;
    for (const l of this.listeners) l(image);
  }

  subscribe(listener: (image: MetadataImage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async allocateProducerIdBlock(): Promise<{ firstProducerId: bigint; size: number }> {
    const first = this.nextBlock;
    this.nextBlock += 1000n;
    this.blocksAllocated++;
    return { firstProducerId: first, size: 1000 };
  }

  createTopic(): never {
    throw new Error('not in this fake');
  }
  deleteTopic(): never {
    throw new Error('not in this fake');
  }
  createPartitions(): never {
    throw new Error('not in this fake');
  }
  alterTopicConfigs(): never {
    throw new Error('not in this fake');
  }
  alterBrokerConfigs(): never {
    throw new Error('not in this fake');
  }
  groupConfigOverrides(groupId: string): ReadonlyMap<string, string> {
    return groupConfigsIn(this.current, groupId);
  }
  async alterGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>): Promise<void> {
    const groupConfigs = new Map(this.current.groupConfigs);
    if (Object.keys(configs).length === 0) groupConfigs.delete(groupId);
    else groupConfigs.set(groupId, { ...configs });
    this.publish({ ...this.current, groupConfigs });
  }
  async close(): Promise<void> {}
}

/** A metadata store whose image holds __consumer_offsets with `partitions` partitions, all led by `leader`. */
export class OffsetsTopicMetadata extends FakeMetadataStore {
  constructor(partitions: number | null, leader = 1) {
    super(OffsetsTopicMetadata.imageOf(partitions, leader, []));
  }

  /** The image, with `others` as one-partition topics beside __consumer_offsets. */
  static imageOf(partitions: number | null, leader: number, others: readonly string[]): MetadataImage {
    const otherTopics: TopicImage[] = others.map((name) => ({
      name,
      topicId: `topic-${name}`,
      internal: false,
      configs: {},
      partitions: [{ partition: 0, leader, leaderEpoch: 0, replicas: [leader], isr: [leader], offlineReplicas: [] }],
    }));
    const topics: TopicImage[] =
      partitions === null
        ? []
        : [
            {
              name: GROUP_METADATA_TOPIC,
              topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
              internal: true,
              configs: {},
              partitions: Array.from({ length: partitions }, (_, partition) => ({
                partition,
                leader,
                leaderEpoch: 0,
                replicas: [leader],
                isr: [leader],
                offlineReplicas: [],
              })),
            },
          ];
    return buildImage('cluster', 1, [{ nodeId: 1, rack: null, endpoints: [] }], [...topics, ...otherTopics]);
  }

  set(partitions: number | null, leader = 1, others: readonly string[] = []): void {
    this.publish(OffsetsTopicMetadata.imageOf(partitions, leader, others));
  }
}

export const silentLog = { info: () => {}, warn: () => {} };

export interface Harness {
  readonly coordinator: GroupCoordinator;
  readonly timer: ManualGroupTimer;
  readonly store: MemoryOffsetsStore;
  readonly metadata: OffsetsTopicMetadata;
  /** A new coordinator over the same store and metadata, as after a restart; it logs to `log` (default: nowhere). */
  restart(log?: GroupCoordinatorLogger): Harness;
}

export function harness(
  config: Partial<GroupCoordinatorConfig> = {},
  opts: { store?: MemoryOffsetsStore; metadata?: OffsetsTopicMetadata; partitions?: number; log?: GroupCoordinatorLogger; now?: number; persister?: Persister } = {},
): Harness {
  const store = opts.store ?? new MemoryOffsetsStore();
  const metadata = opts.metadata ?? new OffsetsTopicMetadata(opts.partitions ?? 4);
  const timer = new ManualGroupTimer(opts.now);
  const coordinator = new GroupCoordinator(1, metadata, store, opts.log ?? silentLog, { config, timer, persister: opts.persister }).start();
  return {
    coordinator,
    timer,
    store,
    metadata,
    /** The clock goes on from where it was, as a restarted broker's would. */
    restart(log?: GroupCoordinatorLogger) {
      coordinator.shutdown();
      return harness(config, { store, metadata, log, now: timer.now(), persister: opts.persister });
    },
  };
}

/** A ConsumerProtocol subscription (version 0) to `topics`. */
export function subscription(topics: readonly string[]): Buffer {
  const parts: Buffer[] = [Buffer.from([0, 0]), int32(topics.length)];
  for (const t of topics) {
    const b = Buffer.from(t, 'utf8');
    parts.push(Buffer.from([b.length >> 8, b.length & 0xff]), b);
  }
  parts.push(int32(-1));
  return Buffer.concat(parts);
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

export function joinParams(over: Partial<JoinGroupParams> = {}): JoinGroupParams {
  return {
    groupId: 'g',
    memberId: '',
    groupInstanceId: null,
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 30_000,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: subscription(['t']) }],
    clientId: 'client',
    clientHost: '/127.0.0.1',
    requireKnownMemberId: true,
    supportsSkippingAssignment: false,
    ...over,
  };
}

/** Whether a promise has settled, without waiting for it. */
export async function settled<T>(p: Promise<T>): Promise<{ done: true; value: T } | { done: false }> {
  const marker = Symbol('pending');
  const v = await Promise.race([p, Promise.resolve(marker)]);
  return v === marker ? { done: false } : { done: true, value: v as T };
}

/** A ConsumerGroupHeartbeat joining group g (epoch 0), subscribed to topic t, with `over` applied. */
export const consumerJoin = (memberId: string, over: Partial<ConsumerGroupHeartbeatParams> = {}): ConsumerGroupHeartbeatParams => ({
  version: 1,
  groupId: 'g',
  memberId,
  memberEpoch: 0,
  instanceId: null,
  rackId: null,
  rebalanceTimeoutMs: 30_000,
  subscribedTopicNames: ['t'],
  subscribedTopicRegex: null,
  serverAssignor: null,
  topicPartitions: [],
  clientId: `client-${memberId}`,
  clientHost: '/127.0.0.1',
  ...over,
});

/** A ConsumerGroupHeartbeat at `memberEpoch` that changes nothing, reporting `owned` partitions of topic id `topicId` when given. */
export const consumerBeat = (memberId: string, memberEpoch: number, owned: number[] | null = null, topicId = 'AAAAAAAAAAAAAAAAAAAAAg'): ConsumerGroupHeartbeatParams =>
  consumerJoin(memberId, { memberEpoch, rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: owned === null ? null : [{ topicId, partitions: owned }] });

/** The partitions a heartbeat answer assigns, sorted; null when it carries no assignment. */
export const assignedPartitions = (r: ConsumerGroupHeartbeatResult): number[] | null =>
  r.assignment === null ? null : r.assignment.flatMap((t) => t.partitions).sort((a, b) => a - b);


/**
 * Helpers for share group tests: an in-memory Persister that records every
 * call (and can fail or hold its answers), a metadata image with topics of
 * chosen sizes, and ShareGroupHeartbeat builders.
 */
import { ErrorCode } from '../../wire/errors.js';
import { buildImage, type MetadataImage } from '../metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC } from '../coordinator/partition-for.js';
import type { Persister, PersisterResult, ReadStateResult, ReadSummaryResult, SharePartitionKey, WriteStateParams } from '../share/persister.js';
import type { ShareGroupHeartbeatParams, ShareGroupHeartbeatResult } from './share-groups.js';
import { FakeMetadataStore } from './group-test-support.js';

/** Topic ids of the test topics: t, u, v. */
export const TOPIC_IDS: Readonly<Record<string, string>> = { t: 'AAAAAAAAAAAAAAAAAAAAAg', u: 'AAAAAAAAAAAAAAAAAAAAAw', v: 'AAAAAAAAAAAAAAAAAAAABA' };

interface Entry {
  stateEpoch: number;
  startOffset: bigint;
  leaderEpoch: number;
  deliveryCompleteCount: number;
}

const keyOf = (k: SharePartitionKey): string => `${k.groupId}\u0000${k.topicId}\u0000${k.partition}`;

/** A Persister over a map; `calls` lists every call in order. */
export class FakePersister implements Persister {
  readonly state = new Map<string, Entry>();
  readonly calls: { op: string; key: SharePartitionKey; stateEpoch?: number; startOffset?: bigint }[] = [];
  /** Error codes the next calls of each operation answer, in order. */
  readonly failures: Record<'initialize' | 'delete' | 'readSummary', number[]> = { initialize: [], delete: [], readSummary: [] };
  /** While set, initialize calls wait until `release` is called. */
  private held: (() => void)[] | null = null;

  hold(): void {
    this.held = [];
  }

  release(): void {
    const waiting = this.held ?? [];
    this.held = null;
    for (const w of waiting) w();
  }

  entry(k: SharePartitionKey): Entry | undefined {
    return this.state.get(keyOf(k));
  }

  setSummary(k: SharePartitionKey, startOffset: bigint, deliveryCompleteCount: number, leaderEpoch = 0): void {
    this.state.set(keyOf(k), { stateEpoch: this.entry(k)?.stateEpoch ?? 0, startOffset, deliveryCompleteCount, leaderEpoch });
  }

  async initialize(key: SharePartitionKey, stateEpoch: number, startOffset: bigint): Promise<PersisterResult> {
    this.calls.push({ op: 'initialize', key, stateEpoch, startOffset });
    if (this.held) await new Promise<void>((resolve) => this.held!.push(resolve));
    const failure = this.failures.initialize.shift();
    if (failure !== undefined) return { errorCode: failure, errorMessage: 'injected' };
    this.state.set(keyOf(key), { stateEpoch, startOffset, leaderEpoch: -1, deliveryCompleteCount: startOffset === -1n ? -1 : 0 });
    return { errorCode: ErrorCode.NONE, errorMessage: null };
  }

  async read(key: SharePartitionKey): Promise<ReadStateResult> {
    const e = this.entry(key);
    if (!e) return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null, stateEpoch: 0, startOffset: -1n, stateBatches: [] };
    return { errorCode: ErrorCode.NONE, errorMessage: null, stateEpoch: e.stateEpoch, startOffset: e.startOffset, stateBatches: [] };
  }

  async write(key: SharePartitionKey, params: WriteStateParams): Promise<PersisterResult> {
    this.state.set(keyOf(key), { stateEpoch: params.stateEpoch, startOffset: params.startOffset, leaderEpoch: params.leaderEpoch, deliveryCompleteCount: params.deliveryCompleteCount });
    return { errorCode: ErrorCode.NONE, errorMessage: null };
  }

  async readSummary(key: SharePartitionKey): Promise<ReadSummaryResult> {
    this.calls.push({ op: 'readSummary', key });
    const failure = this.failures.readSummary.shift();
    const e = this.entry(key);
    if (failure !== undefined || !e) {
      return { errorCode: failure ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null, stateEpoch: 0, leaderEpoch: 0, startOffset: -1n, deliveryCompleteCount: -1 };
    }
    return { errorCode: ErrorCode.NONE, errorMessage: null, stateEpoch: e.stateEpoch, leaderEpoch: e.leaderEpoch, startOffset: e.startOffset, deliveryCompleteCount: e.deliveryCompleteCount };
  }

  async delete(key: SharePartitionKey): Promise<PersisterResult> {
    this.calls.push({ op: 'delete', key });
    const failure = this.failures.delete.shift();
    if (failure !== undefined) return { errorCode: failure, errorMessage: 'injected' };
    this.state.delete(keyOf(key));
    return { errorCode: ErrorCode.NONE, errorMessage: null };
  }

  /** The calls of one operation, as "topic-partition@epoch:offset" (or "topic-partition"), topics by name. */
  ops(op: string): string[] {
    const names = new Map(Object.entries(TOPIC_IDS).map(([n, id]) => [id, n]));
    return this.calls
      .filter((c) => c.op === op)
      .map((c) => `${names.get(c.key.topicId) ?? c.key.topicId}-${c.key.partition}${c.stateEpoch === undefined ? '' : `@${c.stateEpoch}:${c.startOffset}`}`);
  }
}

/** __consumer_offsets (4 partitions) and the given topics (name -> partitions), all led by one broker (1 unless moved). */
export class ShareTopicsMetadata extends FakeMetadataStore {
  private topics: Readonly<Record<string, number>>;
  private leader = 1;

  constructor(topics: Readonly<Record<string, number>>) {
    super(ShareTopicsMetadata.imageOf(topics, 1));
    this.topics = topics;
  }

  static imageOf(topics: Readonly<Record<string, number>>, leader: number): MetadataImage {
    const parts = (n: number) => Array.from({ length: n }, (_, partition) => ({ partition, leader, leaderEpoch: leader - 1, replicas: [1, 2], isr: [1, 2], offlineReplicas: [] }));
    return buildImage('cluster', 1, [1, 2].map((nodeId) => ({ nodeId, rack: null, endpoints: [] })), [
      { name: GROUP_METADATA_TOPIC, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: true, configs: {}, partitions: parts(4) },
      ...Object.entries(topics).map(([name, n]) => ({ name, topicId: TOPIC_IDS[name]!, internal: false, configs: {}, partitions: parts(n) })),
    ]);
  }

  setTopics(topics: Readonly<Record<string, number>>): void {
    this.topics = topics;
    this.publish(ShareTopicsMetadata.imageOf(topics, this.leader));
  }

  /** Moves the leadership of every partition to broker `leader`, as a failover does. */
  moveLeaders(leader: number): void {
    this.leader = leader;
    this.publish(ShareTopicsMetadata.imageOf(this.topics, leader));
  }
}

/** A ShareGroupHeartbeat joining share group g (epoch 0), subscribed to topic t, with `over` applied. */
export const shareJoin = (memberId: string, over: Partial<ShareGroupHeartbeatParams> = {}): ShareGroupHeartbeatParams => ({
  groupId: 'g',
  memberId,
  memberEpoch: 0,
  rackId: null,
  subscribedTopicNames: ['t'],
  clientId: `client-${memberId}`,
  clientHost: '/127.0.0.1',
  ...over,
});

/** A ShareGroupHeartbeat at `memberEpoch` that changes nothing. */
export const shareBeat = (memberId: string, memberEpoch: number): ShareGroupHeartbeatParams => shareJoin(memberId, { memberEpoch, subscribedTopicNames: null });

/** The partitions a heartbeat answer assigns as "topic-partition", sorted; null when it carries no assignment. */
export const shareAssigned = (r: ShareGroupHeartbeatResult): string[] | null => {
  if (r.assignment === null) return null;
  const names = new Map(Object.entries(TOPIC_IDS).map(([n, id]) => [id, n]));
  return r.assignment.flatMap((t) => t.partitions.map((p) => `${names.get(t.topicId) ?? t.topicId}-${p}`)).sort();
};

/** Lets pending promise callbacks (the persister's answers and what follows them) run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

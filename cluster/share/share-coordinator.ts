/**
 * The share coordinator (KIP-932): keeps the state of every share partition
 * whose key (group, topic id, partition) belongs to a partition of
 * __share_group_state this broker leads. The state lives in that partition
 * as ShareSnapshot records (the whole state) and ShareUpdate records (a
 * change laid over the last snapshot), in Kafka 4.4's layouts, so a new
 * leader of the partition rebuilds it by replaying the log.
 *
 * Fencing, as Kafka's share coordinator does it: a write or read with an
 * older leader epoch than the last one seen is FENCED_LEADER_EPOCH (a
 * share-partition leader that lost its partition), a write with an older
 * state epoch FENCED_STATE_EPOCH (the state was initialized again, by
 * AlterShareGroupOffsets or a deletion, since that leader read it).
 */
import { decode, encode } from '../../wire/codec.js';
import { ErrorCode } from '../../wire/errors.js';
import { buildBatch } from '../../wire/record-batch.js';
import { ShareSnapshotKey } from '../../wire/messages/share-snapshot-key.js';
import { ShareSnapshotValue, type ShareSnapshotValue as ShareSnapshotValueT } from '../../wire/messages/share-snapshot-value.js';
import { ShareUpdateKey } from '../../wire/messages/share-update-key.js';
import { ShareUpdateValue, type ShareUpdateValue as ShareUpdateValueT } from '../../wire/messages/share-update-value.js';
import type { MessageDecl } from '../../wire/schema.js';
import { partitionFor } from '../coordinator/partition-for.js';
import { appendErrorToResponseError, type OffsetsTopicStore } from '../coordinator/state-log-store.js';
import { batchesOfBytes } from './records-in.js';
import type { MetadataImage, MetadataStore } from '../metadata/metadata-image.js';
import type { PersisterResult, ReadStateResult, ReadSummaryResult, SharePartitionKey, StateBatch, WriteStateParams } from './persister.js';
import { DeliveryState } from './persister.js';
import { mergeStateBatches, normalize } from './state-batches.js';

export const SHARE_STATE_TOPIC = '__share_group_state';

const SNAPSHOT_TYPE = 0;
const UPDATE_TYPE = 1;
const VALUE_VERSION = 0;
const KEY_VERSION = 0;

/** Kafka's share.coordinator.* settings that shape the coordinator. */
export interface ShareCoordinatorConfig {
  /** share.coordinator.snapshot.update.records.per.snapshot: updates written before the next snapshot. */
  readonly updatesPerSnapshot: number;
  /** share.coordinator.write.timeout.ms: how long a write waits for the in-sync replicas. */
  readonly writeTimeoutMs: number;
}

export const DEFAULT_SHARE_COORDINATOR_CONFIG: ShareCoordinatorConfig = { updatesPerSnapshot: 500, writeTimeoutMs: 5000 };

interface ShareState {
  snapshotEpoch: number;
  stateEpoch: number;
  leaderEpoch: number;
  startOffset: bigint;
  deliveryCompleteCount: number;
  createTimestamp: bigint;
  writeTimestamp: bigint;
  stateBatches: StateBatch[];
  updatesSinceSnapshot: number;
}

interface Logger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** The key of a share partition in __share_group_state, and of its coordinator: "group:topicId:partition". */
export function shareCoordinatorKey(key: SharePartitionKey): string {
  return `${key.groupId}:${key.topicId}:${key.partition}`;
}

function mapKey(key: SharePartitionKey): string {
  return `${key.groupId}\u0000${key.topicId}\u0000${key.partition}`;
}

export type ShareStateRecord =
  | { readonly type: 0; readonly key: SharePartitionKey; readonly value: ShareSnapshotValueData | null }
  | { readonly type: 1; readonly key: SharePartitionKey; readonly value: ShareUpdateValueData | null };

export type ShareSnapshotValueData = ShareSnapshotValueT;
export type ShareUpdateValueData = ShareUpdateValueT;

const DECLS: Record<0 | 1, { key: MessageDecl; value: MessageDecl }> = {
  0: { key: ShareSnapshotKey, value: ShareSnapshotValue },
  1: { key: ShareUpdateKey, value: ShareUpdateValue },
};

function versioned(version: number, body: Buffer): Buffer {
  const b = Buffer.allocUnsafe(2 + body.length);
  b.writeInt16BE(version, 0);
  body.copy(b, 2);
  return b;
}

export function serializeShareRecord(r: ShareStateRecord): { key: Buffer; value: Buffer | null } {
  const decls = DECLS[r.type];
  const key = versioned(r.type, encode(decls.key, KEY_VERSION, { groupId: r.key.groupId, topicId: r.key.topicId, partition: r.key.partition }));
  return { key, value: r.value === null ? null : versioned(VALUE_VERSION, encode(decls.value, VALUE_VERSION, r.value)) };
}

/** One record of __share_group_state, or why it cannot be read. */
export function deserializeShareRecord(key: Buffer | null, value: Buffer | null): ShareStateRecord | { skipped: string } {
  if (key === null || key.length < 2) return { skipped: 'record without a versioned key' };
  const type = key.readInt16BE(0);
  if (type !== SNAPSHOT_TYPE && type !== UPDATE_TYPE) return { skipped: `record type ${type} is not a share state record` };
  const decls = DECLS[type];
  const k = decode<SharePartitionKey>(decls.key, KEY_VERSION, key.subarray(2));
  if (!k.ok) return { skipped: k.error };
  const sk = { groupId: k.value.groupId, topicId: k.value.topicId, partition: k.value.partition };
  if (value === null) return { type, key: sk, value: null } as ShareStateRecord;
  if (value.length < 2) return { skipped: 'value shorter than its version' };
  const version = value.readInt16BE(0);
  if (version < decls.value.versions[0] || version > decls.value.versions[1]) return { skipped: `${decls.value.name} version ${version} is unknown` };
  const v = decode<ShareSnapshotValueData & ShareUpdateValueData>(decls.value, version, value.subarray(2));
  if (!v.ok) return { skipped: v.error };
  return { type, key: sk, value: v.value } as ShareStateRecord;
}

function notCoordinator(errorCode: number, what: string): PersisterResult {
  return { errorCode, errorMessage: what };
}

export class ShareCoordinator {
  readonly config: ShareCoordinatorConfig;
  private readonly shards = new Map<number, Map<string, ShareState>>();
  private numPartitions = 0;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly store: OffsetsTopicStore,
    private readonly log: Logger,
    opts: { config?: Partial<ShareCoordinatorConfig>; now?: () => number } = {},
  ) {
    this.config = { ...DEFAULT_SHARE_COORDINATOR_CONFIG, ...opts.config };
    this.now = opts.now ?? Date.now;
  }

  private readonly now: () => number;

  start(): this {
    if (this.unsubscribe || this.stopped) return this;
    this.applyImage(this.metadata.image());
    this.unsubscribe = this.metadata.subscribe((image) => this.applyImage(image));
    return this;
  }

  shutdown(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.shards.clear();
  }

  /** The partition of __share_group_state that holds `key`, or -1 before the topic exists. */
  partitionOf(key: SharePartitionKey): number {
    return this.numPartitions === 0 ? -1 : partitionFor(shareCoordinatorKey(key), this.numPartitions);
  }

  /** Partitions of __share_group_state loaded here, for tests. */
  get loadedPartitions(): number[] {
    return [...this.shards.keys()].sort((a, b) => a - b);
  }

  async initialize(key: SharePartitionKey, stateEpoch: number, startOffset: bigint): Promise<PersisterResult> {
    const at = this.shardFor(key);
    if (typeof at === 'number') return notCoordinator(at, 'this broker is not the share coordinator of that key');
    const { partition, shard } = at;
    const current = shard.get(mapKey(key));
    if (current && current.stateEpoch >= stateEpoch) {
      return { errorCode: ErrorCode.FENCED_STATE_EPOCH, errorMessage: `state epoch ${stateEpoch} is not newer than ${current.stateEpoch}` };
    }
    const now = BigInt(this.now());
    const state: ShareState = {
      snapshotEpoch: current ? current.snapshotEpoch + 1 : 0,
      stateEpoch,
      leaderEpoch: -1,
      startOffset,
      deliveryCompleteCount: 0,
      createTimestamp: now,
      writeTimestamp: now,
      stateBatches: [],
      updatesSinceSnapshot: 0,
    };
    return this.persist(partition, shard, key, state, { type: 0, key, value: snapshotValue(state) });
  }

  async read(key: SharePartitionKey, leaderEpoch: number): Promise<ReadStateResult> {
    const at = this.shardFor(key);
    if (typeof at === 'number') return { ...notCoordinator(at, 'this broker is not the share coordinator of that key'), stateEpoch: -1, startOffset: -1n, stateBatches: [] };
    const { partition, shard } = at;
    const current = shard.get(mapKey(key));
    if (!current) {
      return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'the share partition has no state', stateEpoch: -1, startOffset: -1n, stateBatches: [] };
    }
    if (leaderEpoch !== -1 && leaderEpoch < current.leaderEpoch) {
      return { errorCode: ErrorCode.FENCED_LEADER_EPOCH, errorMessage: `leader epoch ${leaderEpoch} is older than ${current.leaderEpoch}`, stateEpoch: -1, startOffset: -1n, stateBatches: [] };
    }
    if (leaderEpoch > current.leaderEpoch) {
      // A new leader of the share partition: from now on the previous one is fenced.
      const next = { ...current, leaderEpoch };
      const r = await this.persist(partition, shard, key, next, this.changeRecord(key, current, next, []));
      if (r.errorCode !== ErrorCode.NONE) return { ...r, stateEpoch: -1, startOffset: -1n, stateBatches: [] };
    }
    const s = shard.get(mapKey(key)) ?? current;
    return { errorCode: ErrorCode.NONE, errorMessage: null, stateEpoch: s.stateEpoch, startOffset: s.startOffset, stateBatches: s.stateBatches };
  }

  async write(key: SharePartitionKey, p: WriteStateParams): Promise<PersisterResult> {
    const at = this.shardFor(key);
    if (typeof at === 'number') return notCoordinator(at, 'this broker is not the share coordinator of that key');
    const { partition, shard } = at;
    const current = shard.get(mapKey(key));
    if (current && p.stateEpoch < current.stateEpoch) {
      return { errorCode: ErrorCode.FENCED_STATE_EPOCH, errorMessage: `state epoch ${p.stateEpoch} is older than ${current.stateEpoch}` };
    }
    if (current && p.leaderEpoch !== -1 && p.leaderEpoch < current.leaderEpoch) {
      return { errorCode: ErrorCode.FENCED_LEADER_EPOCH, errorMessage: `leader epoch ${p.leaderEpoch} is older than ${current.leaderEpoch}` };
    }
    const now = BigInt(this.now());
    const base: ShareState = current ?? {
      snapshotEpoch: -1,
      stateEpoch: p.stateEpoch,
      leaderEpoch: p.leaderEpoch,
      startOffset: p.startOffset,
      deliveryCompleteCount: 0,
      createTimestamp: now,
      writeTimestamp: now,
      stateBatches: [],
      updatesSinceSnapshot: 0,
    };
    const startOffset = p.startOffset === -1n ? base.startOffset : p.startOffset;
    const next: ShareState = {
      ...base,
      stateEpoch: p.stateEpoch,
      leaderEpoch: p.leaderEpoch === -1 ? base.leaderEpoch : p.leaderEpoch,
      startOffset,
      deliveryCompleteCount: p.deliveryCompleteCount,
      writeTimestamp: now,
      stateBatches: mergeStateBatches(base.stateBatches, p.stateBatches, startOffset),
    };
    return this.persist(partition, shard, key, next, current ? this.changeRecord(key, current, next, p.stateBatches) : null);
  }

  async readSummary(key: SharePartitionKey, leaderEpoch: number): Promise<ReadSummaryResult> {
    const at = this.shardFor(key);
    const none = { stateEpoch: -1, leaderEpoch: -1, startOffset: -1n, deliveryCompleteCount: -1 };
    if (typeof at === 'number') return { ...notCoordinator(at, 'this broker is not the share coordinator of that key'), ...none };
    const current = at.shard.get(mapKey(key));
    if (!current) return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'the share partition has no state', ...none };
    void leaderEpoch;
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      stateEpoch: current.stateEpoch,
      leaderEpoch: current.leaderEpoch,
      startOffset: current.startOffset,
      deliveryCompleteCount: current.deliveryCompleteCount,
    };
  }

  async delete(key: SharePartitionKey): Promise<PersisterResult> {
    const at = this.shardFor(key);
    if (typeof at === 'number') return notCoordinator(at, 'this broker is not the share coordinator of that key');
    const { partition, shard } = at;
    if (!shard.has(mapKey(key))) return { errorCode: ErrorCode.NONE, errorMessage: null };
    const batch = this.batchOf([
      { type: 0, key, value: null },
      { type: 1, key, value: null },
    ]);
    const appended = this.store.append(partition, batch);
    if (appended.errorCode !== ErrorCode.NONE) return { errorCode: appendErrorToResponseError(appended.errorCode), errorMessage: 'cannot write the deletion' };
    shard.delete(mapKey(key));
    return this.replicated(partition);
  }

  // ---- internals ----------------------------------------------------------------------------

  /** A ShareUpdate, or a new snapshot once enough updates followed the last one. */
  private changeRecord(key: SharePartitionKey, current: ShareState, next: ShareState, delta: readonly StateBatch[]): ShareStateRecord | null {
    if (current.updatesSinceSnapshot + 1 >= this.config.updatesPerSnapshot) return null;
    return {
      type: 1,
      key,
      value: {
        snapshotEpoch: current.snapshotEpoch,
        leaderEpoch: next.leaderEpoch,
        startOffset: next.startOffset,
        deliveryCompleteCount: next.deliveryCompleteCount,
        stateBatches: normalize(delta, next.startOffset),
      },
    };
  }

  /** Writes `record` (a new snapshot of `next` when null), then makes `next` the state. */
  private async persist(partition: number, shard: Map<string, ShareState>, key: SharePartitionKey, next: ShareState, record: ShareStateRecord | null): Promise<PersisterResult> {
    let state = next;
    let r = record;
    if (r === null) {
      state = { ...next, snapshotEpoch: next.snapshotEpoch + 1, updatesSinceSnapshot: 0 };
      r = { type: 0, key, value: snapshotValue(state) };
    } else if (r.type === 1) {
      state = { ...next, updatesSinceSnapshot: next.updatesSinceSnapshot + 1 };
    } else {
      state = { ...next, updatesSinceSnapshot: 0 };
    }
    const appended = this.store.append(partition, this.batchOf([r]));
    if (appended.errorCode !== ErrorCode.NONE) {
      return { errorCode: appendErrorToResponseError(appended.errorCode), errorMessage: `cannot write to partition ${partition} of ${SHARE_STATE_TOPIC}` };
    }
    shard.set(mapKey(key), state);
    return this.replicated(partition);
  }

  private async replicated(partition: number): Promise<PersisterResult> {
    const code = this.store.replicated ? await this.store.replicated(partition, this.config.writeTimeoutMs) : ErrorCode.NONE;
    return code === ErrorCode.NONE ? { errorCode: ErrorCode.NONE, errorMessage: null } : { errorCode: appendErrorToResponseError(code), errorMessage: 'the state did not reach the in-sync replicas' };
  }

  private batchOf(records: readonly ShareStateRecord[]): Buffer {
    const now = BigInt(this.now());
    return buildBatch({
      baseTimestamp: now,
      records: records.map((r) => ({ ...serializeShareRecord(r), timestamp: now })),
    });
  }

  private shardFor(key: SharePartitionKey): { partition: number; shard: Map<string, ShareState> } | number {
    if (this.stopped) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const partition = this.partitionOf(key);
    if (partition < 0) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const shard = this.shards.get(partition);
    return shard ? { partition, shard } : ErrorCode.NOT_COORDINATOR;
  }

  private applyImage(image: MetadataImage): void {
    if (this.stopped) return;
    const topic = image.topics.get(SHARE_STATE_TOPIC);
    const led = new Set<number>();
    for (const p of topic?.partitions ?? []) if (p.leader === this.nodeId) led.add(p.partition);
    for (const partition of [...this.shards.keys()]) if (!led.has(partition)) this.shards.delete(partition);
    this.numPartitions = topic?.partitions.length ?? 0;
    for (const partition of led) if (!this.shards.has(partition)) this.load(partition);
  }

  /** Replays a partition: a snapshot replaces a key's state, an update is laid over it, a tombstone removes it. */
  private load(partition: number): void {
    const shard = new Map<string, ShareState>();
    let records = 0;
    for (const chunk of this.store.read(partition)) {
      for (const { key, value } of batchesOfBytes(chunk, (baseOffset, error) => this.log.warn({ partition, baseOffset, error }, `skipping an unreadable batch of ${SHARE_STATE_TOPIC}`))) {
        const r = deserializeShareRecord(key, value);
        if ('skipped' in r) continue;
        records++;
        replay(shard, r);
      }
    }
    this.shards.set(partition, shard);
    if (records > 0) this.log.info({ partition, records, sharePartitions: shard.size }, `loaded share-partition state from ${SHARE_STATE_TOPIC}`);
  }
}

function snapshotValue(s: ShareState): ShareSnapshotValueData {
  return {
    snapshotEpoch: s.snapshotEpoch,
    stateEpoch: s.stateEpoch,
    leaderEpoch: s.leaderEpoch,
    startOffset: s.startOffset,
    deliveryCompleteCount: s.deliveryCompleteCount,
    createTimestamp: s.createTimestamp,
    writeTimestamp: s.writeTimestamp,
    stateBatches: s.stateBatches,
  };
}

/** Applies one stored record to a shard's states. */
export function replay(shard: Map<string, ShareState>, r: ShareStateRecord): void {
  const k = mapKey(r.key);
  if (r.value === null) {
    shard.delete(k);
    return;
  }
  if (r.type === 0) {
    const v = r.value;
    shard.set(k, { ...v, stateBatches: normalize(v.stateBatches, v.startOffset), updatesSinceSnapshot: 0 });
    return;
  }
  const current = shard.get(k);
  if (!current) return;
  const v = r.value;
  const startOffset = v.startOffset === -1n ? current.startOffset : v.startOffset;
  shard.set(k, {
    ...current,
    leaderEpoch: v.leaderEpoch === -1 ? current.leaderEpoch : v.leaderEpoch,
    startOffset,
    deliveryCompleteCount: v.deliveryCompleteCount,
    stateBatches: mergeStateBatches(current.stateBatches, v.stateBatches, startOffset),
    updatesSinceSnapshot: current.updatesSinceSnapshot + 1,
  });
}

export { DeliveryState };

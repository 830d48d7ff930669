/**
 * The coordinators' store on a replicated partition of __consumer_offsets:
 * what it has appended counts as written only once every in-sync replica
 * has it, as Kafka's coordinator answers only then.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { ZERO_UUID } from '../../wire/uuid.js';
import { logConfig } from '../../storage/log-config.js';
import { LogManager } from '../../storage/log-manager.js';
import { appendErrorToResponseError } from './state-log-store.js';
import { GROUP_METADATA_TOPIC } from './partition-for.js';
import { offsetCommitRecord, recordsBatch } from '../group/group-records.js';
import { replicaOffsetsStore } from './state-log-store.js';
import { buildImage, type MetadataImage, type MetadataStore, type PartitionState } from '../metadata/metadata-image.js';
import { ReplicaManager } from '../replication/replica-manager.js';

const quiet = { warn: () => {}, info: () => {} };
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

const broker = (nodeId: number) => ({ nodeId, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9090 + nodeId }] });

/** __consumer_offsets with one partition, led by broker 1, replicas 1 and 2. */
class Store {
  private listeners: ((i: MetadataImage) => void)[] = [];
  private current: MetadataImage;
  constructor(private state: PartitionState) {
    this.current = this.build();
  }
  private build(): MetadataImage {
    return buildImage('c', 1, [broker(1), broker(2)], [{ name: GROUP_METADATA_TOPIC, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: true, configs: {}, partitions: [this.state] }]);
  }
  image(): MetadataImage {
    return this.current;
  }
  subscribe(l: (i: MetadataImage) => void): () => void {
    this.listeners.push(l);
    return () => {};
  }
  set(change: Partial<PartitionState>): void {
    this.state = { ...this.state, ...change };
    this.current = this.build();
    for (const l of this.listeners) l(this.current);
  }
  async alterPartitionIsr(): Promise<void> {}
}

function setup(): { rm: ReplicaManager; store: Store; offsets: ReturnType<typeof replicaOffsetsStore>; commit: (offset: bigint) => bigint } {
  const d = mkdtempSync(join(tmpdir(), 'gregor-group-store-'));
  const store = new Store({ partition: 0, leader: 1, leaderEpoch: 3, replicas: [1, 2], isr: [1, 2], offlineReplicas: [] });
  const logs = LogManager.open(d, { defaults: logConfig({}), log: quiet });
  const rm = new ReplicaManager(1, store as unknown as MetadataStore, logs, quiet).start();
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  cleanups.push(() => {
    rm.stop();
    void logs.close();
  });
  const offsets = replicaOffsetsStore(rm);
  const commit = (offset: bigint): bigint => {
    const r = offsets.append(0, recordsBatch([offsetCommitRecord('g', 't', 0, { offset, leaderEpoch: -1, metadata: '', commitTimestamp: 1n, expireTimestamp: -1n, topicId: ZERO_UUID })], 1));
    expect(r.errorCode).toBe(ErrorCode.NONE);
    return rm.logFor(GROUP_METADATA_TOPIC, 0)!.logEndOffset;
  };
  return { rm, store, offsets, commit };
}

describe('the coordinators\u2019 store on a replicated partition', () => {
  it('counts an append as written only once the in-sync follower has fetched past it', async () => {
    const { rm, offsets, commit } = setup();
    const end = commit(42n);
    let answer: number | null = null;
    const waiting = offsets.replicated!(0, 10_000).then((code) => (answer = code));
    await new Promise((r) => setTimeout(r, 30));
    expect(answer).toBeNull();
    rm.recordFollowerFetch(GROUP_METADATA_TOPIC, 0, 2, end - 1n, 3);
    await new Promise((r) => setTimeout(r, 30));
    expect(answer).toBeNull();
    rm.recordFollowerFetch(GROUP_METADATA_TOPIC, 0, 2, end, 3);
    expect(await waiting).toBe(ErrorCode.NONE);
  });

  it('gives up after the timeout while the follower stays in the ISR without fetching: the group APIs answer COORDINATOR_NOT_AVAILABLE', async () => {
    const { offsets, commit } = setup();
    commit(7n);
    const code = await offsets.replicated!(0, 50);
    expect(code).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(appendErrorToResponseError(code)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  it('answers NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR to the group APIs, when leadership moves away while it waits', async () => {
    const { store, offsets, commit } = setup();
    commit(7n);
    const waiting = offsets.replicated!(0, 10_000);
    store.set({ leader: 2, leaderEpoch: 4, isr: [2] });
    const code = await waiting;
    expect(code).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(appendErrorToResponseError(code)).toBe(ErrorCode.NOT_COORDINATOR);
  });

  it('answers at once when the partition has only its leader in the ISR', async () => {
    const { store, offsets, commit } = setup();
    store.set({ isr: [1] });
    commit(9n);
    expect(await offsets.replicated!(0, 10_000)).toBe(ErrorCode.NONE);
  });
});

/**
 * ReplicaManager as the leader of a replicated partition: what followers'
 * fetches tell it, the ISR changes it asks for, the high watermark, and
 * acks=-1 appends that wait for it (Kafka's Partition and DelayedProduce).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { buildBatch } from '../../wire/record-batch.js';
import { logConfig } from '../../storage/log-config.js';
import { LogManager } from '../../storage/log-manager.js';
import { buildImage, type MetadataImage, type MetadataStore, type PartitionState } from '../metadata/metadata-image.js';
import { ReplicaManager } from './replica-manager.js';

const quiet = { warn: () => {}, info: () => {} };
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

const broker = (nodeId: number) => ({ nodeId, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9090 + nodeId }] });

/** A cluster store for one partition t-0 led by broker 1 with replicas 1, 2, 3: ISR changes apply when the test says. */
class Store {
  readonly asked: number[][] = [];
  private listeners: ((i: MetadataImage) => void)[] = [];
  private current: MetadataImage;
  autoApply = true;
  constructor(private state: PartitionState) {
    this.current = this.build();
  }
  private build(): MetadataImage {
    return buildImage('c', 1, [broker(1), broker(2), broker(3)], [{ name: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: false, configs: {}, partitions: [this.state] }]);
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
  async alterPartitionIsr(_t: string, _p: number, leaderEpoch: number, _base: readonly number[], isr: readonly number[]): Promise<void> {
    this.asked.push([...isr]);
    if (leaderEpoch !== this.state.leaderEpoch) throw new Error('fenced');
    if (this.autoApply) this.set({ isr: [...isr] });
  }
}

function leader(isr: number[], opts: { minIsr?: number; lagMs?: number; now?: () => number } = {}): { rm: ReplicaManager; store: Store; append: (n: number) => bigint } {
  const d = mkdtempSync(join(tmpdir(), 'gregor-rm-leader-'));
  const store = new Store({ partition: 0, leader: 1, leaderEpoch: 5, replicas: [1, 2, 3], isr, offlineReplicas: [] });
  const logs = LogManager.open(d, { defaults: logConfig({ minInSyncReplicas: opts.minIsr ?? 1 }), log: quiet });
  const rm = new ReplicaManager(1, store as unknown as MetadataStore, logs, quiet, { replicaLagTimeMaxMs: opts.lagMs ?? 30_000, now: opts.now }).start();
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  cleanups.push(() => {
    rm.stop();
    void logs.close();
  });
  const append = (n: number): bigint => {
    const r = rm.appendRecords('t', 0, buildBatch({ records: Array.from({ length: n }, () => ({ value: 'v', timestamp: 1n })) }), -1);
    expect(r.errorCode).toBe(ErrorCode.NONE);
    return r.replicatedAt!;
  };
  return { rm, store, append };
}

const hw = (rm: ReplicaManager): bigint => rm.logFor('t', 0)!.highWatermark;

describe('the leader of a replicated partition', () => {
  it('moves the high watermark to the least log end in the ISR, as followers report it', () => {
    const { rm, append } = leader([1, 2, 3]);
    append(10);
    expect(hw(rm)).toBe(0n);
    rm.recordFollowerFetch('t', 0, 2, 10n, 5);
    expect(hw(rm)).toBe(0n);
    rm.recordFollowerFetch('t', 0, 3, 4n, 5);
    expect(hw(rm)).toBe(4n);
    rm.recordFollowerFetch('t', 0, 3, 10n, 5);
    expect(hw(rm)).toBe(10n);
    // Never back.
    rm.recordFollowerFetch('t', 0, 3, 2n, 5);
    expect(hw(rm)).toBe(10n);
  });

  it('takes a follower into the ISR once it has reached the high watermark', () => {
    const { rm, store, append } = leader([1]);
    append(5);
    expect(hw(rm)).toBe(5n);
    rm.recordFollowerFetch('t', 0, 2, 3n, 5);
    expect(store.asked).toEqual([]);
    rm.recordFollowerFetch('t', 0, 2, 5n, 5);
    expect(store.asked).toEqual([[1, 2]]);
    expect(store.image().topics.get('t')!.partitions[0]!.isr).toEqual([1, 2]);
    // A replica id that is not a replica changes nothing.
    rm.recordFollowerFetch('t', 0, 7, 5n, 5);
    expect(store.asked).toEqual([[1, 2]]);
  });

  it('counts a follower being added to the ISR before the image shows it: the high watermark waits for it too', () => {
    const { rm, store, append } = leader([1]);
    store.autoApply = false;
    append(5);
    rm.recordFollowerFetch('t', 0, 2, 5n, 5);
    expect(store.asked).toEqual([[1, 2]]);
    // The store may have written [1, 2] already: what broker 2 lacks is not committed.
    append(3);
    expect(hw(rm)).toBe(5n);
    rm.recordFollowerFetch('t', 0, 2, 8n, 5);
    expect(hw(rm)).toBe(8n);
  });

  it('ignores a follower fetch it would refuse: another leader epoch, or past its log end', () => {
    const { rm, store, append } = leader([1, 2]);
    append(4);
    rm.recordFollowerFetch('t', 0, 2, 4n, 4);
    rm.recordFollowerFetch('t', 0, 2, 9n, 5);
    expect(hw(rm)).toBe(0n);
    rm.recordFollowerFetch('t', 0, 2, 4n, 5);
    expect(hw(rm)).toBe(4n);
    expect(store.asked).toEqual([]);
  });

  it('answers acks=-1 once every ISR member has the records', async () => {
    const { rm, append } = leader([1, 2]);
    const at = append(3);
    let answer: number | null = null;
    const waiting = rm.waitForReplication('t', 0, at, 10_000).then((c) => (answer = c));
    await Promise.resolve();
    expect(answer).toBeNull();
    rm.recordFollowerFetch('t', 0, 2, at, 5);
    await waiting;
    expect(answer).toBe(ErrorCode.NONE);
  });

  it('answers acks=-1 with REQUEST_TIMED_OUT when the ISR does not catch up in time', async () => {
    const { rm, append } = leader([1, 2]);
    expect(await rm.waitForReplication('t', 0, append(1), 30)).toBe(ErrorCode.REQUEST_TIMED_OUT);
  });

  it('answers acks=-1 with NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas meanwhile', async () => {
    const { rm, store, append } = leader([1, 2], { minIsr: 2 });
    const at = append(2);
    const waiting = rm.waitForReplication('t', 0, at, 10_000);
    store.set({ isr: [1] });
    expect(await waiting).toBe(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
  });

  it('answers acks=-1 with NOT_LEADER_OR_FOLLOWER when leadership moves first', async () => {
    const { rm, store, append } = leader([1, 2]);
    const waiting = rm.waitForReplication('t', 0, append(2), 10_000);
    store.set({ leader: 2, leaderEpoch: 6, isr: [2] });
    expect(await waiting).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  });

  it('drops a follower from the ISR after replica.lag.time.max.ms without catching up', async () => {
    let now = 1_000_000;
    const { rm, store, append } = leader([1, 2, 3], { lagMs: 40, now: () => now });
    append(4);
    rm.recordFollowerFetch('t', 0, 2, 4n, 5);
    rm.recordFollowerFetch('t', 0, 3, 1n, 5);
    now += 41;
    rm.recordFollowerFetch('t', 0, 2, 4n, 5);
    // The check runs every 20 ms.
    const deadline = Date.now() + 2000;
    while (store.asked.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(store.asked[0]).toEqual([1, 2]);
    expect(hw(rm)).toBe(4n);
  });

  it('writes a transaction marker as acks=-1: refused below min.insync.replicas, answered once the ISR has it', async () => {
    const marker = { producerId: 7n, producerEpoch: 0, coordinatorEpoch: 1, commit: true, partitions: [{ topic: 't', partition: 0 }] };
    const short = leader([1], { minIsr: 2 });
    expect(await short.rm.writeMarkers(marker)).toEqual([{ topic: 't', partition: 0, errorCode: ErrorCode.NOT_ENOUGH_REPLICAS }]);
    expect(short.rm.logFor('t', 0)!.logEndOffset).toBe(0n);

    const { rm } = leader([1, 2], { minIsr: 2 });
    let answer: unknown = null;
    const written = rm.writeMarkers(marker).then((r) => (answer = r));
    await new Promise((r) => setTimeout(r, 30));
    expect(answer).toBeNull();
    rm.recordFollowerFetch('t', 0, 2, rm.logFor('t', 0)!.logEndOffset, 5);
    expect(await written).toEqual([{ topic: 't', partition: 0, errorCode: ErrorCode.NONE }]);
  });
});

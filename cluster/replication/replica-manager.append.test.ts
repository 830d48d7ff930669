/**
 * ReplicaManager.appendRecords and min.insync.replicas, as Kafka 4.0's
 * Partition.appendRecordsToLeader checks it: with acks=-1 the ISR must hold
 * min(min.insync.replicas, replica count) replicas, or nothing is appended
 * and the answer is NOT_ENOUGH_REPLICAS (19) with the log start offset and no
 * message. The reference broker (4.4.0, one node) appends acks=-1 to a
 * one-replica topic with min.insync.replicas=2, which the cap explains.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { buildBatch } from '../../wire/record-batch.js';
import { logConfig } from '../../storage/log-config.js';
import { LogManager } from '../../storage/log-manager.js';
import { buildImage, type MetadataImage, type MetadataStore, type TopicImage } from '../metadata/metadata-image.js';
import { ReplicaManager } from './replica-manager.js';

const quiet = { warn: () => {}, info: () => {} };
const self = { nodeId: 1, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }] };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A store that hands out whatever image the test sets, as a cluster store could. */
class ScriptedStore {
  private listeners: ((image: MetadataImage) => void)[] = [];
  constructor(private current: MetadataImage) {}
  image(): MetadataImage {
    return this.current;
  }
  subscribe(l: (image: MetadataImage) => void): () => void {
    this.listeners.push(l);
    return () => (this.listeners = this.listeners.filter((x) => x !== l));
  }
  set(image: MetadataImage): void {
    this.current = image;
    for (const l of this.listeners) l(image);
  }
}

function topic(replicas: number[], isr: number[]): TopicImage {
  return {
    name: 't',
    topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
    internal: false,
    configs: {},
    partitions: [{ partition: 0, leader: 1, leaderEpoch: 0, replicas, isr, offlineReplicas: [] }],
  };
}

const others = [2, 3].map((nodeId) => ({ ...self, nodeId }));
const imageOf = (t: TopicImage): MetadataImage => buildImage('c', 1, [self, ...others], [t]);

function setup(replicas: number[], isr: number[], minInSyncReplicas: number): { store: ScriptedStore; logs: LogManager; rm: ReplicaManager } {
  const d = mkdtempSync(join(tmpdir(), 'gregor-rm-append-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  const logs = LogManager.open(d, { defaults: logConfig({ minInSyncReplicas }), log: quiet });
  cleanups.push(() => logs.close());
  const store = new ScriptedStore(imageOf(topic(replicas, isr)));
  const rm = new ReplicaManager(1, store as unknown as MetadataStore, logs, quiet).start();
  cleanups.push(() => rm.stop());
  return { store, logs, rm };
}

const batch = () => buildBatch({ records: [{ key: 'k', value: 'v', timestamp: BigInt(Date.now()) }] });

describe('ReplicaManager.appendRecords: min.insync.replicas', () => {
  it('refuses acks=-1 with NOT_ENOUGH_REPLICAS and appends nothing when the ISR is too small; acks 0 and 1 append', () => {
    const { rm } = setup([1, 2, 3], [1], 2);
    const refused = rm.appendRecords('t', 0, batch(), -1);
    expect(refused).toEqual({ errorCode: ErrorCode.NOT_ENOUGH_REPLICAS, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null });
    expect(rm.logFor('t', 0)!.logEndOffset).toBe(0n);
    expect(rm.appendRecords('t', 0, batch(), 1)).toMatchObject({ errorCode: 0, baseOffset: 0n });
    expect(rm.appendRecords('t', 0, batch(), 0)).toMatchObject({ errorCode: 0, baseOffset: 1n });
    expect(rm.logFor('t', 0)!.logEndOffset).toBe(2n);
  });

  it('compares the ISR size with min(min.insync.replicas, replica count)', () => {
    const table: [replicas: number[], isr: number[], minIsr: number, errorCode: number][] = [
      [[1], [1], 1, ErrorCode.NONE],
      // What Kafka 4.4.0 does on one node: a one-replica partition never lacks replicas.
      [[1], [1], 2, ErrorCode.NONE],
      [[1, 2, 3], [1], 1, ErrorCode.NONE],
      [[1, 2, 3], [1], 2, ErrorCode.NOT_ENOUGH_REPLICAS],
      [[1, 2, 3], [1, 2], 2, ErrorCode.NONE],
      [[1, 2, 3], [1, 2], 3, ErrorCode.NOT_ENOUGH_REPLICAS],
      [[1, 2, 3], [1, 2, 3], 5, ErrorCode.NONE],
      [[1, 2], [1], 5, ErrorCode.NOT_ENOUGH_REPLICAS],
    ];
    for (const [replicas, isr, minIsr, errorCode] of table) {
      const { rm } = setup(replicas, isr, minIsr);
      expect(rm.appendRecords('t', 0, batch(), -1).errorCode, `replicas ${replicas} isr ${isr} min ${minIsr}`).toBe(errorCode);
    }
  });

  it('follows the ISR and min.insync.replicas as they change, from the next produce on', () => {
    const { store, logs, rm } = setup([1, 2, 3], [1], 2);
    expect(rm.appendRecords('t', 0, batch(), -1).errorCode).toBe(ErrorCode.NOT_ENOUGH_REPLICAS);
    store.set(imageOf(topic([1, 2, 3], [1, 3])));
    expect(rm.appendRecords('t', 0, batch(), -1)).toMatchObject({ errorCode: 0, baseOffset: 0n });
    logs.updateConfig('t', logConfig({ minInSyncReplicas: 3 }));
    expect(rm.appendRecords('t', 0, batch(), -1)).toMatchObject({ errorCode: ErrorCode.NOT_ENOUGH_REPLICAS, logStartOffset: 0n });
    expect(rm.logFor('t', 0)!.logEndOffset).toBe(1n);
  });

  it('reports the log start offset of the partition with the refusal', () => {
    const { store, rm } = setup([1, 2], [1, 2], 2);
    for (let i = 0; i < 3; i++) rm.appendRecords('t', 0, batch(), -1);
    rm.logFor('t', 0)!.updateHighWatermark(3n);
    expect(rm.deleteRecords('t', 0, 2n)).toEqual({ errorCode: 0, lowWatermark: 2n });
    store.set(imageOf(topic([1, 2], [1])));
    expect(rm.appendRecords('t', 0, batch(), -1)).toMatchObject({ errorCode: ErrorCode.NOT_ENOUGH_REPLICAS, logStartOffset: 2n, errorMessage: null });
  });
});

describe('ReplicaManager: a stopping broker', () => {
  it('writes no acks=-1 batch or transaction marker once it waits for followers no more, and answers NOT_LEADER_OR_FOLLOWER', async () => {
    const { rm } = setup([1, 2], [1, 2], 1);
    rm.releaseReplicationWaiters();
    expect(rm.appendRecords('t', 0, batch(), -1)).toMatchObject({ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, baseOffset: -1n });
    const marker = { producerId: 7n, producerEpoch: 0, coordinatorEpoch: 0, commit: true, partitions: [{ topic: 't', partition: 0 }] };
    expect((await rm.writeMarkers(marker))[0]!.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(rm.logFor('t', 0)!.logEndOffset).toBe(0n);
    // acks=1 never waited for followers: it is still written and answered.
    expect(rm.appendRecords('t', 0, batch(), 1)).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0n });
  });

  it('still writes and answers acks=-1 where this broker is the whole ISR: nothing waits', () => {
    const { rm } = setup([1, 2], [1], 1);
    rm.releaseReplicationWaiters();
    expect(rm.appendRecords('t', 0, batch(), -1)).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0n });
    expect(rm.logFor('t', 0)!.highWatermark).toBe(1n);
  });
});

describe('ReplicaManager: transaction verification guards', () => {
  const txnBatch = (producerEpoch = 0) => buildBatch({ producerId: 7n, producerEpoch, baseSequence: 0, transactional: true, records: [{ value: 'v', timestamp: 1000n }] });
  const marker = { producerId: 7n, producerEpoch: 0, coordinatorEpoch: 0, commit: false, partitions: [{ topic: 't', partition: 0 }] };

  it('needs a verification until the producer\'s transaction is open in the partition, and again after its marker', async () => {
    const { rm } = setup([1], [1], 1);
    const guard = rm.startTransactionVerification('t', 0, 7n, 0);
    expect(guard).not.toBeNull();
    expect(rm.appendRecords('t', 0, txnBatch(), -1, 'client', guard)).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0n });
    // The transaction is open here now: later batches of it need no coordinator.
    expect(rm.startTransactionVerification('t', 0, 7n, 0)).toBeNull();
    // Another epoch is another transaction.
    expect(rm.startTransactionVerification('t', 0, 7n, 1)).not.toBeNull();
    expect((await rm.writeMarkers(marker))[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(rm.startTransactionVerification('t', 0, 7n, 0)).not.toBeNull();
  });

  it('refuses a verified batch whose transaction ended while it was being verified, appending nothing', async () => {
    const { rm } = setup([1], [1], 1);
    expect(rm.appendRecords('t', 0, txnBatch(), -1, 'client', rm.startTransactionVerification('t', 0, 7n, 0))).toMatchObject({ errorCode: ErrorCode.NONE });
    expect((await rm.writeMarkers(marker))[0]!.errorCode).toBe(ErrorCode.NONE);
    const guard = rm.startTransactionVerification('t', 0, 7n, 0)!;
    // The coordinator aborts the transaction (a timeout) before the answer reaches this broker.
    expect((await rm.writeMarkers(marker))[0]!.errorCode).toBe(ErrorCode.NONE);
    const end = rm.logFor('t', 0)!.logEndOffset;
    expect(rm.appendRecords('t', 0, txnBatch(), -1, 'client', guard)).toMatchObject({ errorCode: ErrorCode.INVALID_TXN_STATE, baseOffset: -1n });
    expect(rm.logFor('t', 0)!.logEndOffset).toBe(end);
    expect(rm.claimTransactionVerification('t', 0, guard)).toBe(false);
  });

  it('keeps a transactions v2 verification at the epoch a v2 marker carries: the next transaction, added before that marker came', async () => {
    const { rm } = setup([1], [1], 1);
    expect(rm.appendRecords('t', 0, txnBatch(0), -1, 'client', rm.startTransactionVerification('t', 0, 7n, 0, true))).toMatchObject({ errorCode: ErrorCode.NONE });
    // The producer's next transaction, at the bumped epoch 1, is verified while the marker of the first is on its way.
    const next = rm.startTransactionVerification('t', 0, 7n, 1, true)!;
    expect((await rm.writeMarkers({ ...marker, producerEpoch: 1, commit: true, transactionVersion: 2 }))[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(rm.appendRecords('t', 0, txnBatch(1), -1, 'client', next)).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 2n });
    // A version 0 marker voids any verification under way, whatever its epoch.
    const other = rm.startTransactionVerification('t', 0, 7n, 2, true)!;
    expect((await rm.writeMarkers({ ...marker, producerEpoch: 1, transactionVersion: 0 }))[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(rm.claimTransactionVerification('t', 0, other)).toBe(false);
  });
});

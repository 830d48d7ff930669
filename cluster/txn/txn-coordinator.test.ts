import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { buildImage, type MetadataImage, type TopicImage } from '../metadata/metadata-image.js';
import { FakeMetadataStore, MemoryOffsetsStore, silentLog } from '../group/group-test-support.js';
import { GROUP_METADATA_TOPIC, partitionFor } from '../coordinator/partition-for.js';
import { ManualGroupTimer } from '../coordinator/timer.js';
import { ProducerIdManager } from './producer-id-manager.js';
import { TRANSACTION_STATE_TOPIC, TransactionCoordinator, type TransactionCoordinatorConfig, type TxnMarkerWriter } from './txn-coordinator.js';
import { txnRecordsBatch, txnRecordsIn, type TxnLogRecord } from './txn-records.js';
import { verificationError } from './txn-verifier.js';
import { TRANSACTION_STATE_IDS, type TransactionStateName } from './txn-state.js';

const TXN_PARTITIONS = 4;

/** A metadata store whose image holds __transaction_state and plain topics, with a leader epoch per partition of __transaction_state. */
class TxnMetadata extends FakeMetadataStore {
  constructor(
    private topics: string[] = ['t', 'u'],
    private leader = 1,
    private leaderEpoch = 5,
  ) {
    super(TxnMetadata.imageOf(topics, leader, leaderEpoch));
  }

  private static imageOf(names: readonly string[], leader: number, leaderEpoch: number): MetadataImage {
    const part = (partition: number, epoch: number) => ({ partition, leader, leaderEpoch: epoch, replicas: [leader], isr: [leader], offlineReplicas: [] });
    const topics: TopicImage[] = [
      { name: TRANSACTION_STATE_TOPIC, topicId: 'txn', internal: true, configs: {}, partitions: Array.from({ length: TXN_PARTITIONS }, (_, p) => part(p, leaderEpoch)) },
      ...names.map((name) => ({ name, topicId: `id-${name}`, internal: false, configs: {}, partitions: [part(0, 0), part(1, 0)] })),
    ];
    return buildImage('cluster', 1, [{ nodeId: 1, rack: null, endpoints: [] }], topics);
  }

  set(over: { topics?: string[]; leader?: number; leaderEpoch?: number }): void {
    this.topics = over.topics ?? this.topics;
    this.leader = over.leader ?? this.leader;
    this.leaderEpoch = over.leaderEpoch ?? this.leaderEpoch;
    this.publish(TxnMetadata.imageOf(this.topics, this.leader, this.leaderEpoch));
  }
}

interface MarkerCall {
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
  commit: boolean;
  transactionVersion: number;
  partitions: { topic: string; partition: number }[];
}

/** Records every call; answers NONE unless told otherwise, and can hold its answers until released. */
class FakeMarkerWriter implements TxnMarkerWriter {
  readonly calls: MarkerCall[] = [];
  /** Per "topic-partition", the codes the next writes answer before NONE. */
  readonly failures = new Map<string, number[]>();
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;

  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }
  release(): void {
    this.open?.();
    this.gate = null;
  }

  async writeMarkers(req: Parameters<TxnMarkerWriter['writeMarkers']>[0]): Promise<{ topic: string; partition: number; errorCode: number }[]> {
    this.calls.push({ ...req, partitions: [...req.partitions] });
    if (this.gate) await this.gate;
    return req.partitions.map(({ topic, partition }) => ({ topic, partition, errorCode: this.failures.get(`${topic}-${partition}`)?.shift() ?? ErrorCode.NONE }));
  }
}

interface Harness {
  coordinator: TransactionCoordinator;
  timer: ManualGroupTimer;
  store: MemoryOffsetsStore;
  metadata: TxnMetadata;
  markers: FakeMarkerWriter;
  restart(): Harness;
}

function harness(config: Partial<TransactionCoordinatorConfig> = {}, opts: { store?: MemoryOffsetsStore; metadata?: TxnMetadata; markers?: FakeMarkerWriter } = {}): Harness {
  const store = opts.store ?? new MemoryOffsetsStore();
  const metadata = opts.metadata ?? new TxnMetadata();
  const markers = opts.markers ?? new FakeMarkerWriter();
  const timer = new ManualGroupTimer();
  const pids = new ProducerIdManager(metadata, silentLog, () => timer.now());
  const coordinator = new TransactionCoordinator(1, metadata, store, markers, pids, silentLog, { config, timer }).start();
  return {
    coordinator,
    timer,
    store,
    metadata,
    markers,
    restart() {
      coordinator.shutdown();
      return harness(config, { store, metadata, markers });
    },
  };
}

/** Every record written to the partition of `transactionalId`, in order. */
function records(h: Harness, transactionalId: string): TxnLogRecord[] {
  const out: TxnLogRecord[] = [];
  for (const chunk of h.store.read(partitionFor(transactionalId, TXN_PARTITIONS))) {
    for (const { record } of txnRecordsIn(chunk, () => {})) if (!('skipped' in record) && record.transactionalId === transactionalId) out.push(record);
  }
  return out;
}

function statesWritten(h: Harness, transactionalId: string): (TransactionStateName | 'tombstone')[] {
  const names = Object.fromEntries(Object.entries(TRANSACTION_STATE_IDS).map(([k, v]) => [v, k])) as Record<number, TransactionStateName>;
  return records(h, transactionalId).map((r) => (r.value === null ? 'tombstone' : names[r.value.transactionStatus]!));
}

const init = (h: Harness, transactionalId: string | null, over: { timeoutMs?: number; expected?: { producerId: bigint; producerEpoch: number } } = {}) =>
  h.coordinator.initProducerId({ transactionalId, transactionTimeoutMs: over.timeoutMs ?? 60_000, expected: over.expected ?? null });

/** A stored state of transactional id 'tx': transaction t-0 at 60 s timeout, started and updated at 1, unless `over` says otherwise. */
function txnRecord(over: Partial<NonNullable<TxnLogRecord['value']>>): TxnLogRecord {
  return {
    transactionalId: 'tx',
    value: {
      producerId: 0n,
      previousProducerId: -1n,
      nextProducerId: -1n,
      producerEpoch: 0,
      nextProducerEpoch: -1,
      transactionTimeoutMs: 60_000,
      transactionStatus: TRANSACTION_STATE_IDS.Ongoing,
      transactionPartitions: [{ topic: 't', partitionIds: [0] }],
      transactionLastUpdateTimestampMs: 1n,
      transactionStartTimestampMs: 1n,
      clientTransactionVersion: 0,
      ...over,
    },
  };
}

const T0 = { topic: 't', partition: 0 };
const T1 = { topic: 't', partition: 1 };
const U0 = { topic: 'u', partition: 0 };

describe('TransactionCoordinator: InitProducerId', () => {
  it('hands out producer ids without a transactional id, on any broker, from allocated blocks', async () => {
    const h = harness();
    h.metadata.set({ leader: 2 });
    expect(await init(h, null)).toEqual({ errorCode: 0, producerId: 0n, producerEpoch: 0 });
    expect(await init(h, null)).toEqual({ errorCode: 0, producerId: 1n, producerEpoch: 0 });
    // KIP-360: an idempotent producer naming its old id gets a new one.
    expect(await init(h, null, { expected: { producerId: 1n, producerEpoch: 0 } })).toEqual({ errorCode: 0, producerId: 2n, producerEpoch: 0 });
  });

  it('gives a new transactional id a producer id at epoch 0, then bumps the epoch, writing each to the log', async () => {
    const h = harness();
    const first = await init(h, 'tx');
    expect(first).toEqual({ errorCode: 0, producerId: 0n, producerEpoch: 0 });
    expect(await init(h, 'tx')).toEqual({ errorCode: 0, producerId: 0n, producerEpoch: 1 });
    expect(statesWritten(h, 'tx')).toEqual(['Empty', 'Empty']);
    expect(records(h, 'tx')[1]!.value).toMatchObject({ producerId: 0n, producerEpoch: 1, transactionTimeoutMs: 60_000, transactionPartitions: null, transactionStartTimestampMs: -1n });
  });

  it('refuses an empty id, a bad timeout, and ids of partitions it does not lead', async () => {
    const h = harness({ transactionMaxTimeoutMs: 900_000 });
    expect((await init(h, '')).errorCode).toBe(ErrorCode.INVALID_REQUEST);
    expect((await init(h, 'tx', { timeoutMs: 900_001 })).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT);
    expect((await init(h, 'tx', { timeoutMs: 0 })).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT);
    expect((await init(h, 'tx', { timeoutMs: 900_000 })).errorCode).toBe(ErrorCode.NONE);
    h.metadata.set({ leader: 2 });
    expect(await init(h, 'tx')).toEqual({ errorCode: ErrorCode.NOT_COORDINATOR, producerId: -1n, producerEpoch: -1 });
    expect(h.coordinator.loadedPartitions).toEqual([]);
  });

  it('checks the producer id and epoch a KIP-360 producer names', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    expect(await init(h, 'tx', { expected: { producerId, producerEpoch: 0 } })).toMatchObject({ errorCode: 0, producerEpoch: 1 });
    // A retry of that bump, which the producer never saw answered: the same epoch again.
    expect(await init(h, 'tx', { expected: { producerId, producerEpoch: 0 } })).toMatchObject({ errorCode: 0, producerEpoch: 1 });
    expect((await init(h, 'tx', { expected: { producerId, producerEpoch: 7 } })).errorCode).toBe(ErrorCode.PRODUCER_FENCED);
    expect((await init(h, 'tx', { expected: { producerId: producerId + 100n, producerEpoch: 1 } })).errorCode).toBe(ErrorCode.PRODUCER_FENCED);
    // Without an expectation, another producer takes over: the last epoch is forgotten.
    expect(await init(h, 'tx')).toMatchObject({ errorCode: 0, producerEpoch: 2 });
    expect((await init(h, 'tx', { expected: { producerId, producerEpoch: 1 } })).errorCode).toBe(ErrorCode.PRODUCER_FENCED);
  });

  it('rotates to a new producer id when the epochs run out', async () => {
    const store = new MemoryOffsetsStore();
    const exhausted = txnRecord({ producerId: 42n, previousProducerId: -1n, producerEpoch: 32766, transactionStatus: TRANSACTION_STATE_IDS.CompleteCommit, transactionPartitions: [], clientTransactionVersion: 0 });
    store.append(partitionFor('tx', TXN_PARTITIONS), txnRecordsBatch([exhausted], 1));
    const h = harness({}, { store });
    const next = await init(h, 'tx', { expected: { producerId: 42n, producerEpoch: 32766 } });
    expect(next.errorCode).toBe(ErrorCode.NONE);
    expect(next.producerId).not.toBe(42n);
    expect(next.producerEpoch).toBe(0);
    // The old producer retrying the rotation it did not see answered is not fenced.
    expect((await init(h, 'tx', { expected: { producerId: 42n, producerEpoch: 32766 } })).errorCode).toBe(ErrorCode.NONE);
  });
});

describe('TransactionCoordinator: transactions', () => {
  it('commits: Ongoing, PrepareCommit, markers to every partition, CompleteCommit', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0, U0])).toBe(ErrorCode.NONE);
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T1])).toBe(ErrorCode.NONE);
    expect(h.coordinator.transaction('tx')?.state).toBe('Ongoing');
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.NONE);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 0, coordinatorEpoch: 5, commit: true, transactionVersion: 0, partitions: [T0, T1, U0] }]);
    expect(statesWritten(h, 'tx')).toEqual(['Empty', 'Ongoing', 'Ongoing', 'PrepareCommit', 'CompleteCommit']);
    const txn = h.coordinator.transaction('tx')!;
    expect(txn.state).toBe('CompleteCommit');
    expect(txn.partitions.size).toBe(0);
    expect(txn.producerEpoch).toBe(0);
    // The next transaction uses the same epoch (transaction version 1) and starts anew.
    h.timer.advance(1000);
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.NONE);
    expect(h.coordinator.transaction('tx')!.txnStartTimestamp).toBe(h.timer.now());
  });

  it('writes no marker before every in-sync replica has the PrepareCommit, and retries while they do not', async () => {
    // A store whose partitions are replicated only when the test says: first not in time, then done.
    class Replicated extends MemoryOffsetsStore {
      readonly answers: number[] = [ErrorCode.REQUEST_TIMED_OUT];
      asked = 0;
      async replicated(): Promise<number> {
        this.asked++;
        return this.answers.shift() ?? ErrorCode.NONE;
      }
    }
    const store = new Replicated();
    const h = harness({}, { store });
    const { producerId } = await init(h, 'tx');
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.NONE);
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.NONE);
    await h.coordinator.markersSettled();
    // Not replicated in time: no marker yet, the transaction stays prepared.
    expect(h.markers.calls).toEqual([]);
    expect(h.coordinator.transaction('tx')!.state).toBe('PrepareCommit');
    h.timer.advance(1000);
    await h.coordinator.markersSettled();
    expect(store.asked).toBe(2);
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 0, coordinatorEpoch: 5, commit: true, transactionVersion: 0, partitions: [T0] }]);
    expect(h.coordinator.transaction('tx')!.state).toBe('CompleteCommit');
  });

  it('aborts, and answers a retried EndTxn as Kafka does', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    expect(h.coordinator.endTransaction('tx', producerId, 0, false)).toBe(ErrorCode.INVALID_TXN_STATE);
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    expect(h.coordinator.endTransaction('tx', producerId, 0, false)).toBe(ErrorCode.NONE);
    await h.coordinator.markersSettled();
    expect(h.markers.calls.map((c) => c.commit)).toEqual([false]);
    expect(h.coordinator.transaction('tx')!.state).toBe('CompleteAbort');
    expect(h.coordinator.endTransaction('tx', producerId, 0, false)).toBe(ErrorCode.NONE);
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.INVALID_TXN_STATE);
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    h.coordinator.endTransaction('tx', producerId, 0, true);
    await h.coordinator.markersSettled();
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.NONE);
    expect(h.coordinator.endTransaction('tx', producerId, 0, false)).toBe(ErrorCode.INVALID_TXN_STATE);
    expect(h.coordinator.endTransaction('tx', producerId + 1n, 0, true)).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    expect(h.coordinator.endTransaction('nobody', producerId, 0, true)).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
  });

  it('answers CONCURRENT_TRANSACTIONS while the markers are being written', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    h.markers.hold();
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.NONE);
    expect(h.coordinator.transaction('tx')!.state).toBe('PrepareCommit');
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T1])).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    expect(h.coordinator.endTransaction('tx', producerId, 0, false)).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    expect((await init(h, 'tx')).errorCode).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    h.markers.release();
    await h.coordinator.markersSettled();
    expect(h.coordinator.transaction('tx')!.state).toBe('CompleteCommit');
    expect(await init(h, 'tx')).toMatchObject({ errorCode: 0, producerEpoch: 1 });
  });

  it('fences the old producer when a second InitProducerId finds its transaction ongoing', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    expect((await init(h, 'tx')).errorCode).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    await h.coordinator.markersSettled();
    // The ongoing transaction was aborted with the fencing epoch.
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 1, coordinatorEpoch: 5, commit: false, transactionVersion: 2, partitions: [T0] }]);
    expect(statesWritten(h, 'tx')).toEqual(['Empty', 'Ongoing', 'PrepareAbort', 'CompleteAbort']);
    expect(await init(h, 'tx')).toEqual({ errorCode: 0, producerId, producerEpoch: 2 });
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.PRODUCER_FENCED);
    expect(h.coordinator.endTransaction('tx', producerId, 1, true)).toBe(ErrorCode.PRODUCER_FENCED);
    expect(h.coordinator.addPartitions('tx', producerId, 2, [T0])).toBe(ErrorCode.NONE);
  });

  it('checks AddPartitionsToTxn and keeps the state when the log refuses the change', async () => {
    const h = harness();
    expect(h.coordinator.addPartitions('tx', 0n, 0, [T0])).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    const { producerId } = await init(h, 'tx');
    expect(h.coordinator.addPartitions('tx', producerId + 1n, 0, [T0])).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    expect(h.coordinator.addPartitions('tx', producerId, 3, [T0])).toBe(ErrorCode.PRODUCER_FENCED);
    expect(h.coordinator.addPartitions('', producerId, 0, [T0])).toBe(ErrorCode.INVALID_REQUEST);
    h.store.failures.push(ErrorCode.NOT_ENOUGH_REPLICAS);
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(h.coordinator.transaction('tx')!.state).toBe('Empty');
    expect(h.coordinator.transaction('tx')!.pendingState).toBeNull();
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.NONE);
    const writes = h.store.appends;
    // Already in the transaction: answered without a write.
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.NONE);
    expect(h.store.appends).toBe(writes);
  });

  it('adds the offsets partition of a group for AddOffsetsToTxn', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    expect(h.coordinator.addOffsets('tx', producerId, 0, 'my-group', 50)).toBe(ErrorCode.NONE);
    expect(h.coordinator.transaction('tx')!.hasPartition(GROUP_METADATA_TOPIC, 12)).toBe(true);
  });

  it('verifies a produce to a partition of the ongoing transaction', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    const verify = (pid: bigint, epoch: number, partition: number, id = 'tx', abortableKnown = false) =>
      verificationError(h.coordinator.verifyPartitions(id, pid, epoch, [{ topic: 't', partition }])[0]!.errorCode, abortableKnown);
    expect(verify(producerId, 0, 0)).toBe(ErrorCode.NONE);
    expect(verify(producerId, 0, 1)).toBe(ErrorCode.INVALID_TXN_STATE);
    expect(verify(producerId, 0, 1, 'tx', true)).toBe(ErrorCode.TRANSACTION_ABORTABLE);
    expect(verify(producerId, 1, 0)).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect(verify(producerId + 1n, 0, 0)).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    expect(verify(producerId, 0, 0, 'other')).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    h.markers.hold();
    h.coordinator.endTransaction('tx', producerId, 0, true);
    expect(verify(producerId, 0, 0)).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    h.markers.release();
    await h.coordinator.markersSettled();
    expect(verify(producerId, 0, 0)).toBe(ErrorCode.INVALID_TXN_STATE);
    expect(h.coordinator.verifyPartitions('tx', producerId, 0, [T0])).toEqual([{ ...T0, errorCode: ErrorCode.TRANSACTION_ABORTABLE }]);
  });
});

describe('TransactionCoordinator: markers', () => {
  it('retries markers that fail with retriable errors and drops partitions that are gone', async () => {
    const h = harness({ markerRetryBackoffMs: 100, markerRetryBackoffMaxMs: 1000 });
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0, T1, U0]);
    h.markers.failures.set('t-1', [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS]);
    h.markers.failures.set('u-0', [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]);
    h.metadata.set({ topics: ['t'] });
    h.coordinator.endTransaction('tx', producerId, 0, true);
    await h.coordinator.markersSettled();
    // u was deleted: no marker is written for it.
    expect(h.markers.calls.map((c) => c.partitions)).toEqual([[T0, T1]]);
    expect(h.coordinator.transaction('tx')!.state).toBe('PrepareCommit');
    h.timer.advance(99);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toHaveLength(1);
    h.timer.advance(1);
    await h.coordinator.markersSettled();
    expect(h.markers.calls.map((c) => c.partitions)).toEqual([[T0, T1], [T1]]);
    h.timer.advance(200);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toHaveLength(3);
    expect(h.coordinator.transaction('tx')!.state).toBe('CompleteCommit');
  });

  it('completes a transaction whose marker a partition refuses for good, so that the id can go on', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0, T1]);
    h.markers.failures.set('t-1', [ErrorCode.INVALID_PRODUCER_EPOCH]);
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.NONE);
    await h.coordinator.markersSettled();
    expect(h.coordinator.transaction('tx')!.state).toBe('CompleteCommit');
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.NONE);
  });

  it('retries the completion write after an unexpected error too', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    h.markers.hold();
    h.coordinator.endTransaction('tx', producerId, 0, true);
    h.store.failures.push(ErrorCode.UNKNOWN_SERVER_ERROR);
    h.markers.release();
    await h.coordinator.markersSettled();
    expect(h.coordinator.transaction('tx')!.state).toBe('PrepareCommit');
    h.timer.advance(1000);
    expect(h.coordinator.transaction('tx')!.state).toBe('CompleteCommit');
  });

  it('retries the completion write while the log is unavailable', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    h.markers.hold();
    h.coordinator.endTransaction('tx', producerId, 0, false);
    h.store.failures.push(ErrorCode.NOT_ENOUGH_REPLICAS);
    h.markers.release();
    await h.coordinator.markersSettled();
    expect(h.coordinator.transaction('tx')!.state).toBe('PrepareAbort');
    h.timer.advance(1000);
    expect(h.coordinator.transaction('tx')!.state).toBe('CompleteAbort');
  });
});

describe('TransactionCoordinator: timeouts and expiry', () => {
  it('aborts a transaction past its timeout with a fencing epoch', async () => {
    const h = harness({ abortTimedOutTransactionCleanupIntervalMs: 10_000 });
    const { producerId } = await init(h, 'tx', { timeoutMs: 15_000 });
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    h.timer.advance(10_000);
    expect(h.coordinator.transaction('tx')!.state).toBe('Ongoing');
    h.timer.advance(10_000);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 1, coordinatorEpoch: 5, commit: false, transactionVersion: 2, partitions: [T0] }]);
    expect(h.coordinator.transaction('tx')).toMatchObject({ state: 'CompleteAbort', producerEpoch: 1 });
    // The producer's next request is fenced.
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.PRODUCER_FENCED);
    expect(h.coordinator.endTransaction('tx', producerId, 0, true)).toBe(ErrorCode.PRODUCER_FENCED);
  });

  it('expires idle transactional ids with a tombstone', async () => {
    const h = harness({ transactionalIdExpirationMs: 60_000, removeExpiredTransactionalIdCleanupIntervalMs: 30_000 });
    const { producerId } = await init(h, 'idle');
    await init(h, 'busy');
    h.timer.advance(30_000);
    expect(h.coordinator.addPartitions('busy', 1n, 0, [T0])).toBe(ErrorCode.NONE);
    expect(h.coordinator.transaction('idle')).toBeDefined();
    h.timer.advance(29_999);
    expect(h.coordinator.transaction('idle')).toBeDefined();
    h.timer.advance(30_001);
    expect(h.coordinator.transaction('idle')).toBeUndefined();
    expect(statesWritten(h, 'idle')).toEqual(['Empty', 'tombstone']);
    // An ongoing transaction never expires.
    expect(h.coordinator.transaction('busy')?.state).toBe('Ongoing');
    expect(h.coordinator.endTransaction('idle', producerId, 0, true)).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    const after = h.restart();
    expect(after.coordinator.transaction('idle')).toBeUndefined();
    expect(after.coordinator.transaction('busy')?.state).toBe('Ongoing');
  });
});

describe('TransactionCoordinator: loading', () => {
  /** A coordinator whose log leaves 'tx' in `state`, restarted over that log. */
  async function reloadedIn(state: TransactionStateName): Promise<{ h: Harness; producerId: bigint }> {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    if (state !== 'Empty') h.coordinator.addPartitions('tx', producerId, 0, [T0, U0]);
    if (state === 'PrepareCommit' || state === 'PrepareAbort') h.markers.hold();
    if (state !== 'Empty' && state !== 'Ongoing') {
      h.coordinator.endTransaction('tx', producerId, 0, state === 'PrepareCommit' || state === 'CompleteCommit');
    }
    if (state === 'CompleteCommit' || state === 'CompleteAbort') await h.coordinator.markersSettled();
    expect(h.coordinator.transaction('tx')!.state).toBe(state);
    h.markers.release();
    h.markers.calls.length = 0;
    // The markers of a transaction found in PrepareCommit/PrepareAbort wait until the test lets them go.
    if (state === 'PrepareCommit' || state === 'PrepareAbort') h.markers.hold();
    const after = h.restart();
    return { h: after, producerId };
  }

  it.each(['Empty', 'Ongoing', 'CompleteCommit', 'CompleteAbort'] as const)('reloads %s as it was', async (state) => {
    const { h, producerId } = await reloadedIn(state);
    const txn = h.coordinator.transaction('tx')!;
    expect(txn).toMatchObject({ state, producerId, producerEpoch: 0, txnTimeoutMs: 60_000 });
    expect(txn.partitions.size).toBe(state === 'Ongoing' ? 2 : 0);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([]);
    expect(h.coordinator.describeTransaction('tx').transactionState).toBe(state);
  });

  it.each(['PrepareCommit', 'PrepareAbort'] as const)('finishes a transaction found in %s', async (state) => {
    const { h, producerId } = await reloadedIn(state);
    expect(h.coordinator.transaction('tx')!.state).toBe(state);
    expect((await init(h, 'tx')).errorCode).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    h.markers.release();
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 0, coordinatorEpoch: 5, commit: state === 'PrepareCommit', transactionVersion: 0, partitions: [T0, U0] }]);
    expect(h.coordinator.transaction('tx')!.state).toBe(state === 'PrepareCommit' ? 'CompleteCommit' : 'CompleteAbort');
  });

  it('leaves an ongoing transaction found on load to its timeout', async () => {
    const { h, producerId } = await reloadedIn('Ongoing');
    h.timer.advance(70_000);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 1, coordinatorEpoch: 5, commit: false, transactionVersion: 2, partitions: [T0, U0] }]);
  });

  it('reloads with the new coordinator epoch when the leader epoch changes, and drops partitions it no longer leads', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.metadata.set({ leaderEpoch: 9 });
    h.coordinator.addPartitions('tx', producerId, 0, [T0]);
    h.coordinator.endTransaction('tx', producerId, 0, true);
    await h.coordinator.markersSettled();
    expect(h.markers.calls[0]!.coordinatorEpoch).toBe(9);
    h.metadata.set({ leader: 2 });
    expect(h.coordinator.loadedPartitions).toEqual([]);
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0])).toBe(ErrorCode.NOT_COORDINATOR);
  });
});

describe('TransactionCoordinator: DescribeTransactions and ListTransactions', () => {
  it('describes and lists with Kafka state names and filters', async () => {
    const h = harness();
    const a = await init(h, 'a');
    const b = await init(h, 'b');
    h.coordinator.addPartitions('a', a.producerId, 0, [T1, T0, U0]);
    const start = h.timer.now();
    h.timer.advance(5000);
    expect(h.coordinator.describeTransaction('a')).toEqual({
      errorCode: 0,
      transactionalId: 'a',
      transactionState: 'Ongoing',
      transactionTimeoutMs: 60_000,
      transactionStartTimeMs: BigInt(start),
      producerId: a.producerId,
      producerEpoch: 0,
      topics: [
        { topic: 't', partitions: [0, 1] },
        { topic: 'u', partitions: [0] },
      ],
    });
    expect(h.coordinator.describeTransaction('nobody').errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
    expect(h.coordinator.describeTransaction('').errorCode).toBe(ErrorCode.INVALID_REQUEST);
    const ids = (r: { transactionStates: { transactionalId: string }[] }) => r.transactionStates.map((s) => s.transactionalId).sort();
    expect(ids(h.coordinator.listTransactions([], [], -1n))).toEqual(['a', 'b']);
    expect(ids(h.coordinator.listTransactions(['Ongoing'], [], -1n))).toEqual(['a']);
    expect(ids(h.coordinator.listTransactions([], [b.producerId], -1n))).toEqual(['b']);
    const odd = h.coordinator.listTransactions(['Empty', 'ongoing'], [], -1n);
    expect(ids(odd)).toEqual(['b']);
    expect(odd.unknownStateFilters).toEqual(['ongoing']);
    expect(ids(h.coordinator.listTransactions(['Ongoing'], [], 4999n))).toEqual(['a']);
    expect(ids(h.coordinator.listTransactions(['Ongoing'], [], 5000n))).toEqual([]);
    h.coordinator.shutdown();
    expect(h.coordinator.listTransactions([], [], -1n).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(h.coordinator.describeTransaction('a').errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });
});

describe('TransactionCoordinator: transactions v2 (EndTxn v5)', () => {
  it('bumps the epoch at each end, answers it, and sends markers at the bumped epoch marked version 2', async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    // A partition leader adds the partitions for a v2 producer.
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0, U0], 2)).toBe(ErrorCode.NONE);
    expect(await h.coordinator.endTransactionV2('tx', producerId, 0, true)).toEqual({ errorCode: 0, producerId, producerEpoch: 1 });
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 1, coordinatorEpoch: 5, commit: true, transactionVersion: 2, partitions: [T0, U0] }]);
    expect(statesWritten(h, 'tx')).toEqual(['Empty', 'Ongoing', 'PrepareCommit', 'CompleteCommit']);
    const written = records(h, 'tx').map((r) => [r.value!.producerEpoch, r.value!.clientTransactionVersion]);
    expect(written).toEqual([[0, 0], [0, 2], [1, 2], [1, 2]]);
    // The next transaction runs at epoch 1; the old epoch is fenced.
    expect(h.coordinator.addPartitions('tx', producerId, 0, [T0], 2)).toBe(ErrorCode.PRODUCER_FENCED);
    expect(h.coordinator.addPartitions('tx', producerId, 1, [T0], 2)).toBe(ErrorCode.NONE);
    expect(await h.coordinator.endTransactionV2('tx', producerId, 1, false)).toEqual({ errorCode: 0, producerId, producerEpoch: 2 });
  });

  it("answers a retry of an end that already bumped with the current epoch, and the other outcome INVALID_TXN_STATE, as Kafka 4.4 does", async () => {
    const h = harness();
    const { producerId } = await init(h, 'tx');
    h.coordinator.addPartitions('tx', producerId, 0, [T0], 2);
    h.markers.hold();
    expect(await h.coordinator.endTransactionV2('tx', producerId, 0, true)).toMatchObject({ errorCode: 0, producerEpoch: 1 });
    // While the markers are on their way.
    expect((await h.coordinator.endTransactionV2('tx', producerId, 0, true)).errorCode).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    h.markers.release();
    await h.coordinator.markersSettled();
    expect(await h.coordinator.endTransactionV2('tx', producerId, 0, true)).toEqual({ errorCode: 0, producerId, producerEpoch: 1 });
    expect((await h.coordinator.endTransactionV2('tx', producerId, 0, false)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE);
    expect((await h.coordinator.endTransactionV2('tx', producerId, 1, true)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE);
    expect((await h.coordinator.endTransactionV2('tx', producerId, 5, false)).errorCode).toBe(ErrorCode.PRODUCER_FENCED);
    expect((await h.coordinator.endTransactionV2('tx', producerId + 1n, 1, false)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    // An abort with nothing open is an empty transaction, bumped all the same; its retry is answered again.
    expect(await h.coordinator.endTransactionV2('tx', producerId, 1, false)).toEqual({ errorCode: 0, producerId, producerEpoch: 2 });
    await h.coordinator.markersSettled();
    expect(await h.coordinator.endTransactionV2('tx', producerId, 1, false)).toEqual({ errorCode: 0, producerId, producerEpoch: 2 });
    expect(h.markers.calls).toHaveLength(1);
    // Committing with nothing open is not a transaction.
    expect((await h.coordinator.endTransactionV2('tx', producerId, 2, true)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE);
  });

  it('moves to the next producer id at epoch 0 once the epochs run out, and knows the retry of that end', async () => {
    const store = new MemoryOffsetsStore();
    const atLast = txnRecord({ producerId: 42n, previousProducerId: 42n, producerEpoch: 32766, transactionStatus: TRANSACTION_STATE_IDS.Ongoing, clientTransactionVersion: 2 });
    store.append(partitionFor('tx', TXN_PARTITIONS), txnRecordsBatch([atLast], 1));
    const h = harness({}, { store });
    const end = await h.coordinator.endTransactionV2('tx', 42n, 32766, true);
    expect(end.errorCode).toBe(ErrorCode.NONE);
    expect(end.producerId).not.toBe(42n);
    expect(end.producerEpoch).toBe(0);
    await h.coordinator.markersSettled();
    // The markers go out under the old id at the last epoch there is.
    expect(h.markers.calls).toEqual([{ producerId: 42n, producerEpoch: 32767, coordinatorEpoch: 5, commit: true, transactionVersion: 2, partitions: [T0] }]);
    const prepared = records(h, 'tx').find((r) => r.value?.transactionStatus === TRANSACTION_STATE_IDS.PrepareCommit)!.value!;
    expect([prepared.producerId, prepared.producerEpoch, prepared.nextProducerId]).toEqual([42n, 32767, end.producerId]);
    expect(h.coordinator.transaction('tx')).toMatchObject({ state: 'CompleteCommit', producerId: end.producerId, producerEpoch: 0, previousProducerId: 42n });
    expect(await h.coordinator.endTransactionV2('tx', 42n, 32766, true)).toEqual(end);
    // A restart finds the same state.
    const again = h.restart();
    expect(again.coordinator.transaction('tx')).toMatchObject({ state: 'CompleteCommit', producerId: end.producerId, producerEpoch: 0 });
  });

  it('aborts a timed-out transaction once, at the epoch above the data, so a v2 client retrying its abort is answered', async () => {
    const h = harness({ abortTimedOutTransactionCleanupIntervalMs: 1000 });
    const { producerId } = await init(h, 'tx', { timeoutMs: 2000 });
    h.coordinator.addPartitions('tx', producerId, 0, [T0], 2);
    h.timer.advance(3000);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([{ producerId, producerEpoch: 1, coordinatorEpoch: 5, commit: false, transactionVersion: 2, partitions: [T0] }]);
    expect(h.coordinator.transaction('tx')).toMatchObject({ state: 'CompleteAbort', producerEpoch: 1 });
    expect(await h.coordinator.endTransactionV2('tx', producerId, 0, false)).toEqual({ errorCode: 0, producerId, producerEpoch: 1 });
    expect((await h.coordinator.endTransactionV2('tx', producerId, 0, true)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE);
  });
});

describe('TransactionCoordinator: a timed-out transaction at the last epoch but one', () => {
  it('is aborted at the last epoch and moves the id to a new producer id, which a v2 client retrying its abort is given', async () => {
    const store = new MemoryOffsetsStore();
    const ongoing = txnRecord({ producerId: 42n, previousProducerId: 42n, producerEpoch: 32766, transactionTimeoutMs: 2000, transactionStatus: TRANSACTION_STATE_IDS.Ongoing, clientTransactionVersion: 2 });
    store.append(partitionFor('tx', TXN_PARTITIONS), txnRecordsBatch([ongoing], 1));
    const h = harness({ abortTimedOutTransactionCleanupIntervalMs: 1000 }, { store });
    // The first sweep finds no producer id at hand and asks for one; a later one aborts.
    h.timer.advance(1000);
    await h.coordinator.markersSettled();
    h.timer.advance(1000);
    await h.coordinator.markersSettled();
    expect(h.markers.calls).toEqual([{ producerId: 42n, producerEpoch: 32767, coordinatorEpoch: 5, commit: false, transactionVersion: 2, partitions: [T0] }]);
    const txn = h.coordinator.transaction('tx')!;
    expect(txn).toMatchObject({ state: 'CompleteAbort', producerEpoch: 0, previousProducerId: 42n });
    expect(txn.producerId).not.toBe(42n);
    expect(await h.coordinator.endTransactionV2('tx', 42n, 32766, false)).toEqual({ errorCode: 0, producerId: txn.producerId, producerEpoch: 0 });
    // The new producer id goes on as any other.
    expect(h.coordinator.addPartitions('tx', txn.producerId, 0, [T0], 2)).toBe(ErrorCode.NONE);
  });
});

/**
 * The transaction coordinator, as Kafka 4.4's TransactionCoordinator,
 * TransactionStateManager and TransactionMarkerChannelManager run it with
 * transaction.version 2 finalized. Each request decides which protocol its
 * transaction follows: EndTxn up to v4 (transaction version 0/1) ends it at
 * the producer's epoch; EndTxn v5 (transactions v2, KIP-890) bumps the epoch
 * in the prepare record, answers the new producer id and epoch, and the
 * markers carry the bumped epoch (and transaction version 2), so that a late
 * write of the ended transaction is fenced. A transactions v2 producer never
 * sends AddPartitionsToTxn: the partition leader adds the partition for it
 * (AddPartitionsToTxn v4+ without verify_only, client_transaction_version 2).
 *
 * A transactional id belongs to one partition of __transaction_state
 * (partitionFor, as for groups); this broker coordinates the ids of the
 * partitions it leads, each kept in a shard loaded from that partition's log
 * when the leadership arrives (or its leader epoch changes) and dropped when
 * it goes. The coordinator epoch is that partition's leader epoch. Requests
 * for any other id answer NOT_COORDINATOR.
 *
 * Durability: every state change is appended to the id's partition
 * (txn-records.ts, acks=all) and takes effect, and is answered, only once
 * the append has succeeded. EndTxn answers once PrepareCommit or
 * PrepareAbort is written; the markers then go to every partition of the
 * transaction through the TxnMarkerWriter (in a cluster, TxnMarkerChannel:
 * to each partition's leader, here or on another broker), retried with a bounded backoff
 * while they fail with retriable errors (a partition that no longer exists
 * is dropped), and CompleteCommit or CompleteAbort is written after the
 * last one. Until then the id answers CONCURRENT_TRANSACTIONS. Loading a
 * partition finishes the transactions it finds in PrepareCommit or
 * PrepareAbort the same way; Ongoing ones are left for the timeout.
 *
 * Every transaction.abort.timed.out.transaction.cleanup.interval.ms, an
 * ongoing transaction older than its timeout is aborted with its epoch
 * raised by one, so its producer is fenced (Kafka's
 * abortTimedOutTransactions). Every
 * transaction.remove.expired.transaction.cleanup.interval.ms, ids without a
 * transaction that have not changed for transactional.id.expiration.ms get
 * a tombstone and are forgotten.
 *
 * Appends are synchronous (OffsetsTopicStore), so a change is prepared,
 * written and applied without interleaving; only producer id allocation
 * and marker writing wait. Timers come from an injectable GroupTimer.
 *
 * Not implemented: two-phase commit (KIP-939, InitProducerId v6, which
 * Kafka 4.4 marks unstable).
 */
import { DEFAULT_CONFIG } from '../metadata/broker-config-registry.js';
import { ErrorCode } from '../../wire/errors.js';
import { hasPartition, type MetadataImage, type MetadataStore } from '../metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC, partitionFor } from '../coordinator/partition-for.js';
import { SystemGroupTimer, type GroupTimer } from '../coordinator/timer.js';
import { appendErrorToResponseError, type OffsetsTopicStore } from '../coordinator/state-log-store.js';
import type { ProducerIdManager } from './producer-id-manager.js';
import {
  IllegalTransitionError,
  MAX_EPOCH,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  TRANSACTION_V2,
  TransactionMetadata,
  isEpochExhausted,
  isExpirationAllowed,
  isTransactionStateName,
  partitionList,
  type TopicPartition,
  type TransactionStateName,
  type TxnTransit,
} from './txn-state.js';
import { metadataFromValue, txnLogValue, txnRecordsBatch, txnRecordsIn, type TxnLogRecord } from './txn-records.js';

export { type TransactionStateName, type TopicPartition };

export const TRANSACTION_STATE_TOPIC = '__transaction_state';

/** Writes transaction markers as the leader of each partition does (WriteTxnMarkers). */
export interface TxnMarkerWriter {
  writeMarkers(req: {
    producerId: bigint;
    producerEpoch: number;
    coordinatorEpoch: number;
    commit: boolean;
    /** The transaction's client_transaction_version: 2 for transactions v2. */
    transactionVersion: number;
    partitions: readonly { topic: string; partition: number }[];
  }): Promise<{ topic: string; partition: number; errorCode: number }[]>;
}

/** What EndTxn v5 answers: the producer id and epoch the producer goes on with. */
export interface EndTxnResult {
  errorCode: number;
  producerId: bigint;
  producerEpoch: number;
}

/** The coordinator's way to its partitions of __transaction_state: the group coordinator's store, on another topic. */
export type TransactionLogStore = OffsetsTopicStore;

/** The coordinator's settings, by their Kafka config names in the comments. */
export interface TransactionCoordinatorConfig {
  /** transactional.id.expiration.ms */
  readonly transactionalIdExpirationMs: number;
  /** transaction.max.timeout.ms */
  readonly transactionMaxTimeoutMs: number;
  /** transaction.abort.timed.out.transaction.cleanup.interval.ms */
  readonly abortTimedOutTransactionCleanupIntervalMs: number;
  /** transaction.remove.expired.transaction.cleanup.interval.ms */
  readonly removeExpiredTransactionalIdCleanupIntervalMs: number;
  /** retry.backoff.ms: the first wait before markers are written again */
  readonly markerRetryBackoffMs: number;
  /** retry.backoff.max.ms: the longest wait between marker attempts */
  readonly markerRetryBackoffMaxMs: number;
  /** request.timeout.ms: how long an answer waits for its state records to reach every in-sync replica */
  readonly stateLogReplicationTimeoutMs: number;
}

/** The defaults of the broker config (Kafka's), and Kafka's marker retry timings. */
export const DEFAULT_TRANSACTION_COORDINATOR_CONFIG: TransactionCoordinatorConfig = {
  transactionalIdExpirationMs: DEFAULT_CONFIG.int('transactional.id.expiration.ms'),
  transactionMaxTimeoutMs: DEFAULT_CONFIG.int('transaction.max.timeout.ms'),
  abortTimedOutTransactionCleanupIntervalMs: DEFAULT_CONFIG.int('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
  removeExpiredTransactionalIdCleanupIntervalMs: DEFAULT_CONFIG.int('transaction.remove.expired.transaction.cleanup.interval.ms'),
  markerRetryBackoffMs: 100,
  markerRetryBackoffMaxMs: 1000,
  stateLogReplicationTimeoutMs: 30000,
};

export interface TransactionCoordinatorLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface InitProducerIdParams {
  /** null for an idempotent producer without transactions. */
  readonly transactionalId: string | null;
  readonly transactionTimeoutMs: number;
  /** InitProducerId v3+ (KIP-360): the producer id and epoch the producer has, or null. */
  readonly expected: { readonly producerId: bigint; readonly producerEpoch: number } | null;
}

export interface InitProducerIdResult {
  errorCode: number;
  producerId: bigint;
  producerEpoch: number;
}

export interface DescribedTransaction {
  errorCode: number;
  transactionalId: string;
  transactionState: string;
  transactionTimeoutMs: number;
  transactionStartTimeMs: bigint;
  producerId: bigint;
  producerEpoch: number;
  topics: { topic: string; partitions: number[] }[];
}

export interface ListedTransaction {
  transactionalId: string;
  producerId: bigint;
  transactionState: string;
}

export interface ListTransactionsResult {
  errorCode: number;
  unknownStateFilters: string[];
  transactionStates: ListedTransaction[];
}

/** The transactional ids of one partition of __transaction_state. */
class TxnShard {
  readonly txns = new Map<string, TransactionMetadata>();
  constructor(
    readonly partition: number,
    readonly coordinatorEpoch: number,
  ) {}
}

const ABORT_TIMED_OUT_KEY = 'txn-abort-timed-out';
const EXPIRE_IDS_KEY = 'txn-expire-transactional-ids';
const markersKey = (transactionalId: string): string => `txn-markers\u0000${transactionalId}`;

/** Marker errors that a later attempt may not get (Kafka's TransactionMarkerRequestCompletionHandler). */
const RETRIABLE_MARKER_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.NOT_ENOUGH_REPLICAS,
  ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
  ErrorCode.REQUEST_TIMED_OUT,
  ErrorCode.KAFKA_STORAGE_ERROR,
]);

/** Marker attempts that fail before a warning says so, and between two such warnings (about 30 s at the longest backoff). */
const MARKER_RETRIES_BEFORE_WARNING = 5;
const MARKER_RETRIES_BETWEEN_WARNINGS = 30;

function failed(errorCode: number): InitProducerIdResult {
  return { errorCode, producerId: NO_PRODUCER_ID, producerEpoch: NO_PRODUCER_EPOCH };
}


export class TransactionCoordinator {
  readonly config: TransactionCoordinatorConfig;
  readonly timer: GroupTimer;
  private readonly shards = new Map<number, TxnShard>();
  /** Partitions of __transaction_state in the current image; 0 before it exists. */
  private numPartitions = 0;
  private unsubscribe: (() => void) | null = null;
  private started = false;
  private stopped = false;
  /** Marker writes under way, so that tests and shutdown can wait for them. */
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * A producer id set aside for aborting a timed-out transaction whose epoch
   * is the last but one (32766): its abort takes the last epoch, and its
   * completion moves the transactional id to this id at epoch 0, as Kafka
   * 4.4 ends such a transaction.
   */
  private spareProducerId: bigint | null = null;
  private spareRequested = false;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly store: TransactionLogStore,
    private readonly markers: TxnMarkerWriter,
    private readonly producerIds: ProducerIdManager,
    private readonly log: TransactionCoordinatorLogger,
    opts: { config?: Partial<TransactionCoordinatorConfig>; timer?: GroupTimer } = {},
  ) {
    this.config = { ...DEFAULT_TRANSACTION_COORDINATOR_CONFIG, ...opts.config };
    this.timer = opts.timer ?? new SystemGroupTimer();
  }

  /**
   * Loads the partitions this broker leads in the current image and follows
   * the image from then on; starts the timeout and expiry tasks.
   */
  start(): this {
    if (this.started || this.stopped) return this;
    this.started = true;
    // No producer id block yet: the first InitProducerId asks for one, as Kafka's
    // broker does, so that a broker's start never waits on the block's write.
    this.applyImage(this.metadata.image());
    this.unsubscribe = this.metadata.subscribe((image) => this.applyImage(image));
    this.scheduleAbortTimedOut();
    this.scheduleExpireTransactionalIds();
    return this;
  }

  /** Stops coordinating: timers are cancelled, marker writes are abandoned, later requests are refused. */
  shutdown(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.shards.clear();
    this.timer.cancelAll();
  }

  /** Resolves once no marker write is under way (they may schedule retries on the timer). */
  async markersSettled(): Promise<void> {
    for (let i = 0; i < 1000 && this.inFlight.size > 0; i++) await Promise.allSettled([...this.inFlight]);
  }

  /** Partitions of __transaction_state loaded here, for tests and metrics. */
  get loadedPartitions(): number[] {
    return [...this.shards.keys()].sort((a, b) => a - b);
  }

  /** A transactional id's metadata, for tests; undefined when this broker does not hold it. */
  transaction(transactionalId: string): TransactionMetadata | undefined {
    return this.shardOf(transactionalId)?.txns.get(transactionalId);
  }

  // ---- InitProducerId ------------------------------------------------------------------------

  /**
   * InitProducerId. Without a transactional id, any broker hands out a new
   * producer id at epoch 0 (also to a KIP-360 producer naming its old one).
   * With one: a new id gets a producer id and epoch 0; a known one its
   * epoch raised by one (a new producer id once its epochs are used up),
   * which fences older producers. An ongoing transaction is aborted first
   * and the answer is CONCURRENT_TRANSACTIONS, so the producer asks again.
   *
   * Example: initProducerId({ transactionalId: 'tx', transactionTimeoutMs:
   * 60000, expected: null }) -> { errorCode: 0, producerId: 0n,
   * producerEpoch: 0 }; the same again -> epoch 1.
   */
  async initProducerId(p: InitProducerIdParams): Promise<InitProducerIdResult> {
    if (p.transactionalId === null) {
      const id = await this.newProducerId();
      return typeof id === 'bigint' ? { errorCode: ErrorCode.NONE, producerId: id, producerEpoch: 0 } : failed(id.error);
    }
    const transactionalId = p.transactionalId;
    if (transactionalId === '') return failed(ErrorCode.INVALID_REQUEST);
    if (p.transactionTimeoutMs <= 0 || p.transactionTimeoutMs > this.config.transactionMaxTimeoutMs) return failed(ErrorCode.INVALID_TRANSACTION_TIMEOUT);
    // A producer id, when one is needed, is awaited outside any change; the state is then looked at again.
    let spareId: bigint | null = null;
    for (let attempt = 0; attempt < 4; attempt++) {
      const found = this.lookup(transactionalId);
      if ('error' in found) return failed(found.error);
      const { shard } = found;
      let txn = found.txn;
      if (!txn) {
        if (spareId === null) {
          const id = await this.newProducerId();
          if (typeof id !== 'bigint') return failed(id.error);
          spareId = id;
          continue;
        }
        txn = TransactionMetadata.fresh(transactionalId, spareId, p.transactionTimeoutMs, this.timer.now());
        shard.txns.set(transactionalId, txn);
        spareId = null;
      }
      const prepared = this.prepareInitProducerId(txn, p.transactionTimeoutMs, p.expected, spareId);
      if (prepared === 'needsProducerId') {
        const id = await this.newProducerId();
        if (typeof id !== 'bigint') return failed(id.error);
        spareId = id;
        continue;
      }
      if (typeof prepared === 'number') return failed(prepared);
      if (prepared.state === 'PrepareEpochFence') {
        const error = this.endTransactionAs(transactionalId, prepared.producerId, prepared.producerEpoch, false, false);
        if (txn.pendingState === 'PrepareEpochFence') txn.pendingState = null;
        return failed(error === ErrorCode.NONE ? ErrorCode.CONCURRENT_TRANSACTIONS : error);
      }
      const error = this.persist(shard, txn, prepared);
      if (error !== ErrorCode.NONE) {
        this.log.info({ transactionalId, error }, 'InitProducerId not written');
        return failed(error);
      }
      this.log.info({ transactionalId, producerId: String(prepared.producerId), producerEpoch: prepared.producerEpoch, partition: shard.partition }, 'initialized transactional id');
      return { errorCode: ErrorCode.NONE, producerId: prepared.producerId, producerEpoch: prepared.producerEpoch };
    }
    return failed(ErrorCode.CONCURRENT_TRANSACTIONS);
  }

  private async newProducerId(): Promise<bigint | { error: number }> {
    try {
      return await this.producerIds.generateProducerId();
    } catch (err) {
      this.log.warn({ err }, 'no producer id available');
      return { error: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS };
    }
  }

  /** The change InitProducerId makes, an error, or the need of a new producer id first. */
  private prepareInitProducerId(
    txn: TransactionMetadata,
    timeoutMs: number,
    expected: InitProducerIdParams['expected'],
    newProducerId: bigint | null,
  ): TxnTransit | number | 'needsProducerId' {
    if (txn.pendingTransitionInProgress) return ErrorCode.CONCURRENT_TRANSACTIONS;
    if (expected && !this.isValidExpectedProducer(txn, expected)) return ErrorCode.PRODUCER_FENCED;
    const now = this.timer.now();
    switch (txn.state) {
      case 'PrepareCommit':
      case 'PrepareAbort':
        return ErrorCode.CONCURRENT_TRANSACTIONS;
      case 'Empty':
      case 'CompleteCommit':
      case 'CompleteAbort':
        if (txn.isProducerEpochExhausted) {
          if (expected && expected.producerEpoch !== txn.producerEpoch) return ErrorCode.PRODUCER_FENCED;
          if (newProducerId === null) return 'needsProducerId';
          return txn.prepareProducerIdRotation(newProducerId, timeoutMs, now, expected !== null);
        }
        return txn.prepareIncrementProducerEpoch(timeoutMs, expected?.producerEpoch ?? null, now) ?? ErrorCode.PRODUCER_FENCED;
      case 'Ongoing':
        // The epoch raised here is never given to a client: the retry after
        // CONCURRENT_TRANSACTIONS raises it again (or rotates the producer id).
        return txn.prepareFenceProducerEpoch();
      case 'Dead':
      case 'PrepareEpochFence':
        throw new IllegalTransitionError(`${txn.transactionalId} is in state ${txn.state}, which is never stored`);
    }
  }

  /**
   * KIP-360: a producer naming its producer id may bump it unless another
   * has since: the id is current, or is new (no epoch yet), or is the
   * previous one with its epochs used up (a retry of the rotation).
   */
  private isValidExpectedProducer(txn: TransactionMetadata, expected: { producerId: bigint; producerEpoch: number }): boolean {
    return (
      txn.producerEpoch === NO_PRODUCER_EPOCH ||
      expected.producerId === txn.producerId ||
      (expected.producerId === txn.previousProducerId && isEpochExhausted(expected.producerEpoch))
    );
  }

  // ---- AddPartitionsToTxn, AddOffsetsToTxn ----------------------------------------------------

  /**
   * AddPartitionsToTxn for one transaction (the partitions already checked
   * to exist): they join its transaction, which starts now if none is
   * ongoing. The change is written before the answer.
   *
   * Example: after InitProducerId gave 0n/0: addPartitions('tx', 0n, 0,
   * [{ topic: 'orders', partition: 0 }]) -> NONE, the id is Ongoing; with
   * epoch 1 instead -> PRODUCER_FENCED.
   */
  addPartitions(transactionalId: string, producerId: bigint, producerEpoch: number, partitions: readonly TopicPartition[], clientTransactionVersion = 0): number {
    if (transactionalId === '') return ErrorCode.INVALID_REQUEST;
    const found = this.lookup(transactionalId);
    if ('error' in found) return found.error;
    const txn = found.txn;
    if (!txn) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
    if (txn.producerId !== producerId) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
    if (txn.producerEpoch !== producerEpoch) return ErrorCode.PRODUCER_FENCED;
    if (txn.pendingTransitionInProgress) return ErrorCode.CONCURRENT_TRANSACTIONS;
    if (txn.state === 'PrepareCommit' || txn.state === 'PrepareAbort') return ErrorCode.CONCURRENT_TRANSACTIONS;
    if (txn.state === 'Ongoing' && partitions.every((p) => txn.hasPartition(p.topic, p.partition))) return ErrorCode.NONE;
    return this.persist(found.shard, txn, txn.prepareAddPartitions(partitions, this.timer.now(), clientTransactionVersion));
  }

  /**
   * AddOffsetsToTxn: the partition of __consumer_offsets that holds the
   * group's offsets joins the transaction. `offsetsTopicPartitions` is the
   * count of that topic's partitions (offsets.topic.num.partitions when it
   * does not exist yet).
   */
  addOffsets(transactionalId: string, producerId: bigint, producerEpoch: number, groupId: string, offsetsTopicPartitions: number): number {
    const partition = partitionFor(groupId, offsetsTopicPartitions);
    return this.addPartitions(transactionalId, producerId, producerEpoch, [{ topic: GROUP_METADATA_TOPIC, partition }]);
  }

  /**
   * AddPartitionsToTxn v4+ with verify_only (KIP-890): whether each
   * partition is in the ongoing transaction of this producer; nothing
   * changes. TRANSACTION_ABORTABLE for a partition that is not.
   */
  verifyPartitions(transactionalId: string, producerId: bigint, producerEpoch: number, partitions: readonly TopicPartition[]): { topic: string; partition: number; errorCode: number }[] {
    const all = (errorCode: number) => partitions.map((p) => ({ topic: p.topic, partition: p.partition, errorCode }));
    if (transactionalId === '') return all(ErrorCode.INVALID_REQUEST);
    const found = this.lookup(transactionalId);
    if ('error' in found) return all(found.error);
    const txn = found.txn;
    if (!txn || txn.producerId !== producerId) return all(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    if (txn.producerEpoch !== producerEpoch) return all(ErrorCode.PRODUCER_FENCED);
    if (txn.state === 'PrepareCommit' || txn.state === 'PrepareAbort') return all(ErrorCode.CONCURRENT_TRANSACTIONS);
    return partitions.map((p) => ({ topic: p.topic, partition: p.partition, errorCode: txn.hasPartition(p.topic, p.partition) ? ErrorCode.NONE : ErrorCode.TRANSACTION_ABORTABLE }));
  }

  // ---- EndTxn --------------------------------------------------------------------------------

  /**
   * EndTxn (v0-v4): commits or aborts the ongoing transaction. Answers once
   * PrepareCommit or PrepareAbort is written; markers and the completion
   * follow in the background. A retry after the transaction completed
   * with the same outcome answers NONE; one with the other outcome, or with
   * no transaction, INVALID_TXN_STATE.
   *
   * Example: endTransaction('tx', 0n, 0, true) -> NONE with the id in
   * PrepareCommit, and CompleteCommit once every marker is written; then
   * endTransaction('tx', 0n, 0, true) -> NONE, endTransaction('tx', 0n, 0,
   * false) -> INVALID_TXN_STATE.
   */
  endTransaction(transactionalId: string, producerId: bigint, producerEpoch: number, commit: boolean): number {
    return this.endTransactionAs(transactionalId, producerId, producerEpoch, commit, true);
  }

  private endTransactionAs(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
    isFromClient: boolean,
    fenceNextProducerId: bigint = NO_PRODUCER_ID,
  ): number {
    if (transactionalId === '') return ErrorCode.INVALID_REQUEST;
    const found = this.lookup(transactionalId);
    if ('error' in found) return found.error;
    const { shard, txn } = found;
    if (!txn || txn.producerId !== producerId) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
    // A client must name the current epoch; the coordinator's own abort names the fencing one.
    if ((isFromClient && producerEpoch !== txn.producerEpoch) || producerEpoch < txn.producerEpoch) return ErrorCode.PRODUCER_FENCED;
    if (txn.pendingTransitionInProgress && txn.pendingState !== 'PrepareEpochFence') return ErrorCode.CONCURRENT_TRANSACTIONS;
    const invalid = (): number => {
      this.log.warn({ transactionalId, state: txn.state, commit }, 'EndTxn does not fit the transaction state');
      return ErrorCode.INVALID_TXN_STATE;
    };
    let isEpochFence = false;
    let transit: TxnTransit;
    switch (txn.state) {
      case 'Ongoing': {
        const next = commit ? 'PrepareCommit' : 'PrepareAbort';
        if (next === 'PrepareAbort' && txn.pendingState === 'PrepareEpochFence') {
          isEpochFence = true;
          txn.pendingState = null;
          txn.producerEpoch = producerEpoch;
          txn.lastProducerEpoch = NO_PRODUCER_EPOCH;
        }
        // A timed-out transaction is aborted as transactions v2 (the finalized version) would end it: the
        // fence's epoch, one above the data's, marked as version 2, so that a v2 client's EndTxn v5 retry at
        // the old epoch is answered as the bump it missed.
        transit = isEpochFence
          ? txn.prepareAbortOrCommit(next, this.timer.now(), { nextProducerId: fenceNextProducerId, bump: false, lastProducerEpoch: producerEpoch - 1 })
          : txn.prepareAbortOrCommit(next, this.timer.now());
        break;
      }
      case 'CompleteCommit':
        return commit ? ErrorCode.NONE : invalid();
      case 'CompleteAbort':
        return commit ? invalid() : ErrorCode.NONE;
      case 'PrepareCommit':
        return commit ? ErrorCode.CONCURRENT_TRANSACTIONS : invalid();
      case 'PrepareAbort':
        return commit ? invalid() : ErrorCode.CONCURRENT_TRANSACTIONS;
      case 'Empty':
        return invalid();
      case 'Dead':
      case 'PrepareEpochFence':
        throw new IllegalTransitionError(`${transactionalId} is in state ${txn.state}, which is never stored`);
    }
    const error = this.persist(shard, txn, transit);
    if (error !== ErrorCode.NONE) {
      if (isEpochFence && this.owns(shard, txn)) txn.hasFailedEpochFence = true;
      this.log.info({ transactionalId, commit, error }, 'EndTxn not written');
      return error;
    }
    this.writeMarkers(shard, txn, commit, txn.prepareComplete(this.timer.now()), 0);
    return ErrorCode.NONE;
  }

  /**
   * EndTxn v5 (transactions v2): ends the transaction with the epoch one
   * higher (a new producer id at epoch 0 when the epoch is the last one) and
   * answers the producer id and epoch to go on with, once PrepareCommit or
   * PrepareAbort is written. An abort with nothing open is an empty
   * transaction, bumped all the same. A retry of an end that already bumped
   * names the epoch before the bump (or the last epoch of the previous
   * producer id) and is answered with the current ones; checks in Kafka
   * 4.4's order: a pending change (CONCURRENT_TRANSACTIONS), the producer id
   * (INVALID_PRODUCER_ID_MAPPING), the epoch (PRODUCER_FENCED), the state.
   *
   * Example: producer 5 at epoch 0 with orders-0 in its transaction:
   * endTransactionV2('tx', 5n, 0, true) -> NONE (5n, 1), PrepareCommit at
   * epoch 1 and markers at epoch 1; after completion the same call -> NONE
   * (5n, 1) again; endTransactionV2('tx', 5n, 0, false) -> INVALID_TXN_STATE.
   */
  async endTransactionV2(transactionalId: string, producerId: bigint, producerEpoch: number, commit: boolean): Promise<EndTxnResult> {
    const fail = (errorCode: number): EndTxnResult => ({ errorCode, producerId: NO_PRODUCER_ID, producerEpoch: NO_PRODUCER_EPOCH });
    if (transactionalId === '') return fail(ErrorCode.INVALID_REQUEST);
    let nextProducerId = NO_PRODUCER_ID;
    // A producer id may have to be allocated first (the last epoch); the state is then looked at afresh.
    for (let attempt = 0; attempt < 2; attempt++) {
      const found = this.lookup(transactionalId);
      if ('error' in found) return fail(found.error);
      const { shard, txn } = found;
      if (!txn) return fail(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
      const E = txn.producerEpoch;
      const retryBump = E === producerEpoch + 1;
      const retryRotation = txn.previousProducerId === producerId && producerEpoch === MAX_EPOCH - 1 && E === 0;
      const isRetry = retryBump || retryRotation;
      if (txn.pendingTransitionInProgress) return fail(ErrorCode.CONCURRENT_TRANSACTIONS);
      if (txn.producerId !== producerId && !retryRotation) return fail(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
      let validEpoch: boolean;
      switch (txn.state) {
        case 'Ongoing':
        case 'Empty':
          validEpoch = producerEpoch === E;
          break;
        case 'PrepareCommit':
        case 'PrepareAbort':
          validEpoch = retryBump;
          break;
        default:
          validEpoch = isRetry || producerEpoch === E;
      }
      if (!validEpoch) return fail(ErrorCode.PRODUCER_FENCED);
      const current: EndTxnResult = { errorCode: ErrorCode.NONE, producerId: txn.producerId, producerEpoch: E };
      const invalid = (): EndTxnResult => {
        this.log.warn({ transactionalId, state: txn.state, commit }, 'EndTxn does not fit the transaction state');
        return fail(ErrorCode.INVALID_TXN_STATE);
      };
      switch (txn.state) {
        case 'Ongoing':
          break;
        case 'Empty':
          if (commit) return invalid();
          break;
        case 'CompleteCommit':
          if (commit) return isRetry ? current : invalid();
          if (isRetry) return invalid();
          break;
        case 'CompleteAbort':
          if (commit) return invalid();
          if (isRetry) return current;
          break;
        case 'PrepareCommit':
          return commit ? fail(ErrorCode.CONCURRENT_TRANSACTIONS) : invalid();
        case 'PrepareAbort':
          return commit ? invalid() : fail(ErrorCode.CONCURRENT_TRANSACTIONS);
        case 'Dead':
        case 'PrepareEpochFence':
          throw new IllegalTransitionError(`${transactionalId} is in state ${txn.state}, which is never stored`);
      }
      if (txn.isProducerEpochExhausted && nextProducerId === NO_PRODUCER_ID) {
        const id = await this.newProducerId();
        if (typeof id !== 'bigint') return fail(id.error);
        nextProducerId = id;
        continue;
      }
      const transit = txn.prepareAbortOrCommit(commit ? 'PrepareCommit' : 'PrepareAbort', this.timer.now(), {
        nextProducerId: txn.isProducerEpochExhausted ? nextProducerId : NO_PRODUCER_ID,
      });
      const error = this.persist(shard, txn, transit);
      if (error !== ErrorCode.NONE) {
        this.log.info({ transactionalId, commit, error }, 'EndTxn not written');
        return fail(error);
      }
      const answer: EndTxnResult =
        txn.nextProducerId !== NO_PRODUCER_ID
          ? { errorCode: ErrorCode.NONE, producerId: txn.nextProducerId, producerEpoch: 0 }
          : { errorCode: ErrorCode.NONE, producerId: txn.producerId, producerEpoch: txn.producerEpoch };
      this.writeMarkers(shard, txn, commit, txn.prepareComplete(this.timer.now()), 0);
      return answer;
    }
    return fail(ErrorCode.CONCURRENT_TRANSACTIONS);
  }

  // ---- markers -------------------------------------------------------------------------------

  /** Starts (or retries) the markers of a transaction in PrepareCommit/PrepareAbort, then writes `complete`. */
  private writeMarkers(shard: TxnShard, txn: TransactionMetadata, commit: boolean, complete: TxnTransit, attempt: number): void {
    const run = this.writeMarkersOnce(shard, txn, commit, complete, attempt).catch((err: unknown) => {
      // Nothing else would ever end the transaction: try again later.
      this.log.warn({ transactionalId: txn.transactionalId, err }, 'writing transaction markers failed; will retry');
      this.timer.schedule(markersKey(txn.transactionalId), this.backoff(attempt), () => this.writeMarkers(shard, txn, commit, complete, attempt + 1));
    });
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }

  private async writeMarkersOnce(shard: TxnShard, txn: TransactionMetadata, commit: boolean, complete: TxnTransit, attempt: number): Promise<void> {
    if (!this.owns(shard, txn)) return;
    const transactionalId = txn.transactionalId;
    // No marker before every in-sync replica has the PrepareCommit/PrepareAbort: a coordinator taking
    // over must find the decision the markers carry out, or it could end the transaction the other way.
    if (this.store.replicated) {
      const code = await this.store.replicated(shard.partition, this.config.stateLogReplicationTimeoutMs);
      if (!this.owns(shard, txn)) return;
      if (code !== ErrorCode.NONE) {
        this.log.info({ transactionalId, error: code }, 'the prepared transaction is not on every in-sync replica yet; markers wait');
        this.timer.schedule(markersKey(transactionalId), this.backoff(attempt), () => this.writeMarkers(shard, txn, commit, complete, attempt + 1));
        return;
      }
    }
    const image = this.metadata.image();
    for (const { topic, partition } of partitionList(txn.partitions)) {
      if (hasPartition(image, topic, partition)) continue;
      this.log.info({ transactionalId, topic, partition }, 'partition of the transaction no longer exists; no marker for it');
      txn.removePartition(topic, partition);
    }
    const partitions = partitionList(txn.partitions);
    let retry = false;
    if (partitions.length > 0) {
      let results: { topic: string; partition: number; errorCode: number }[];
      try {
        results = await this.markers.writeMarkers({
          producerId: txn.producerId,
          producerEpoch: txn.producerEpoch,
          coordinatorEpoch: shard.coordinatorEpoch,
          commit,
          transactionVersion: txn.clientTransactionVersion >= TRANSACTION_V2 ? TRANSACTION_V2 : 0,
          partitions,
        });
      } catch (err) {
        this.log.warn({ transactionalId, err }, 'cannot write transaction markers; will retry');
        results = [];
      }
      if (!this.owns(shard, txn)) return;
      const answered = new Set<string>();
      for (const r of results) {
        if (!txn.hasPartition(r.topic, r.partition)) continue;
        answered.add(`${r.topic}\u0000${r.partition}`);
        if (r.errorCode === ErrorCode.NONE) {
          txn.removePartition(r.topic, r.partition);
        } else if (r.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && !hasPartition(this.metadata.image(), r.topic, r.partition)) {
          txn.removePartition(r.topic, r.partition);
        } else if (r.errorCode === ErrorCode.INVALID_PRODUCER_EPOCH || r.errorCode === ErrorCode.TRANSACTION_COORDINATOR_FENCED) {
          // The partition already knows a newer producer epoch or coordinator, whose markers decide its
          // data; the transaction still completes here, or its id would stay busy for good.
          this.log.warn({ transactionalId, topic: r.topic, partition: r.partition, error: r.errorCode }, 'transaction marker refused by the partition; not writing it there');
          txn.removePartition(r.topic, r.partition);
        } else if (r.errorCode === ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT || r.errorCode === ErrorCode.UNSUPPORTED_VERSION) {
          txn.removePartition(r.topic, r.partition);
        } else {
          if (!RETRIABLE_MARKER_ERRORS.has(r.errorCode)) this.log.warn({ transactionalId, topic: r.topic, partition: r.partition, error: r.errorCode }, 'unexpected transaction marker error; will retry');
          retry = true;
        }
      }
      if (partitions.some((p) => !answered.has(`${p.topic}\u0000${p.partition}`) && txn.hasPartition(p.topic, p.partition))) retry = true;
    }
    if (retry) {
      // Retried quietly at first (a leader change is routine), then said out loud while it lasts.
      if (attempt === MARKER_RETRIES_BEFORE_WARNING || (attempt > MARKER_RETRIES_BEFORE_WARNING && attempt % MARKER_RETRIES_BETWEEN_WARNINGS === 0)) {
        this.log.warn(
          { transactionalId, attempts: attempt + 1, waiting: partitionList(txn.partitions).map((p) => `${p.topic}-${p.partition}`) },
          'transaction markers still not written on every partition; the transaction stays open (CONCURRENT_TRANSACTIONS) until they are: check that these partitions have a leader with enough in-sync replicas',
        );
      }
      this.timer.schedule(markersKey(transactionalId), this.backoff(attempt), () => this.writeMarkers(shard, txn, commit, complete, attempt + 1));
      return;
    }
    this.writeCompletion(shard, txn, complete, 0);
  }

  /**
   * Writes CompleteCommit/CompleteAbort, retried with backoff until it is
   * written or the partition is no longer led here: until then the id
   * answers CONCURRENT_TRANSACTIONS, which producers retry.
   */
  private writeCompletion(shard: TxnShard, txn: TransactionMetadata, complete: TxnTransit, attempt: number): void {
    if (!this.owns(shard, txn)) return;
    let error: number;
    try {
      error = this.persist(shard, txn, complete, () => true);
    } catch (err) {
      this.log.warn({ transactionalId: txn.transactionalId, err }, 'cannot complete the transaction');
      return;
    }
    if (error === ErrorCode.NONE) {
      this.log.info({ transactionalId: txn.transactionalId, state: complete.state }, 'completed transaction');
      return;
    }
    if (attempt === 0) this.log.warn({ transactionalId: txn.transactionalId, error }, 'cannot write the completion of a transaction; will retry');
    this.timer.schedule(markersKey(txn.transactionalId), this.backoff(attempt), () => this.writeCompletion(shard, txn, complete, attempt + 1));
  }

  private backoff(attempt: number): number {
    return Math.min(this.config.markerRetryBackoffMs * 2 ** Math.min(attempt, 30), this.config.markerRetryBackoffMaxMs);
  }

  // ---- timeouts and expiry -------------------------------------------------------------------

  /** Aborts, with a fencing epoch, every ongoing transaction older than its timeout. */
  abortTimedOutTransactions(): void {
    const now = this.timer.now();
    for (const shard of [...this.shards.values()]) {
      for (const txn of [...shard.txns.values()]) {
        if (txn.pendingTransitionInProgress || txn.state !== 'Ongoing') continue;
        if (txn.txnStartTimestamp + txn.txnTimeoutMs >= now) continue;
        // At the last epoch but one the abort moves the id to a new producer id: one must be at hand (the next sweep
        // aborts it once the allocation is done).
        let nextProducerId = NO_PRODUCER_ID;
        if (txn.isProducerEpochExhausted) {
          if (this.spareProducerId === null) {
            this.requestSpareProducerId();
            continue;
          }
          nextProducerId = this.spareProducerId;
        }
        try {
          const fence = txn.prepareFenceProducerEpoch();
          const error = this.endTransactionAs(txn.transactionalId, fence.producerId, fence.producerEpoch, false, false, nextProducerId);
          if (txn.pendingState === 'PrepareEpochFence') txn.pendingState = null;
          if (error === ErrorCode.NONE) {
            if (nextProducerId !== NO_PRODUCER_ID) this.spareProducerId = null;
            this.log.info({ transactionalId: txn.transactionalId, producerId: String(txn.producerId), producerEpoch: txn.producerEpoch }, 'aborting timed out transaction');
          } else this.log.warn({ transactionalId: txn.transactionalId, error }, 'cannot abort timed out transaction');
        } catch (err) {
          // One transaction that cannot be aborted must not keep the others from their timeouts.
          if (txn.pendingState === 'PrepareEpochFence') txn.pendingState = null;
          this.log.warn({ transactionalId: txn.transactionalId, err }, 'cannot abort timed out transaction');
        }
      }
    }
  }

  private requestSpareProducerId(): void {
    if (this.spareRequested) return;
    this.spareRequested = true;
    const run = this.newProducerId().then((id) => {
      this.spareRequested = false;
      if (typeof id === 'bigint') this.spareProducerId = id;
    });
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }

  /** Writes tombstones for, then forgets, the ids idle for transactional.id.expiration.ms. */
  expireTransactionalIds(): void {
    const now = this.timer.now();
    for (const shard of [...this.shards.values()]) {
      const expiring: { txn: TransactionMetadata; epoch: number }[] = [];
      for (const txn of shard.txns.values()) {
        if (txn.pendingTransitionInProgress || !isExpirationAllowed(txn.state)) continue;
        if (txn.txnLastUpdateTimestamp > now - this.config.transactionalIdExpirationMs) continue;
        txn.prepareDead();
        expiring.push({ txn, epoch: txn.producerEpoch });
      }
      if (expiring.length === 0) continue;
      const records: TxnLogRecord[] = expiring.map(({ txn }) => ({ transactionalId: txn.transactionalId, value: null }));
      const error = this.append(shard, records);
      for (const { txn, epoch } of expiring) {
        if (error === ErrorCode.NONE && txn.pendingState === 'Dead' && txn.producerEpoch === epoch && shard.txns.get(txn.transactionalId) === txn) {
          shard.txns.delete(txn.transactionalId);
        } else {
          txn.pendingState = null;
        }
      }
      if (error === ErrorCode.NONE) this.log.info({ partition: shard.partition, transactionalIds: expiring.length }, 'expired transactional ids');
      else this.log.warn({ partition: shard.partition, error }, 'cannot write tombstones of expired transactional ids; will try again');
    }
  }

  private scheduleAbortTimedOut(): void {
    this.timer.schedule(ABORT_TIMED_OUT_KEY, this.config.abortTimedOutTransactionCleanupIntervalMs, () => {
      try {
        this.abortTimedOutTransactions();
      } catch (err) {
        this.log.warn({ err }, 'aborting timed out transactions failed');
      }
      this.scheduleAbortTimedOut();
    });
  }

  private scheduleExpireTransactionalIds(): void {
    this.timer.schedule(EXPIRE_IDS_KEY, this.config.removeExpiredTransactionalIdCleanupIntervalMs, () => {
      try {
        this.expireTransactionalIds();
      } catch (err) {
        this.log.warn({ err }, 'expiring transactional ids failed');
      }
      this.scheduleExpireTransactionalIds();
    });
  }

  // ---- DescribeTransactions, ListTransactions -------------------------------------------------

  /** DescribeTransactions for one id: TRANSACTIONAL_ID_NOT_FOUND when this coordinator has none. */
  describeTransaction(transactionalId: string): DescribedTransaction {
    const described = (errorCode: number): DescribedTransaction => ({
      errorCode,
      transactionalId,
      transactionState: '',
      transactionTimeoutMs: 0,
      transactionStartTimeMs: 0n,
      producerId: 0n,
      producerEpoch: 0,
      topics: [],
    });
    if (!this.started || this.stopped) return described(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (transactionalId === '') return described(ErrorCode.INVALID_REQUEST);
    const found = this.lookup(transactionalId);
    if ('error' in found) return described(found.error);
    const txn = found.txn;
    if (!txn || txn.state === 'Dead') return described(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
    const topics = new Map<string, number[]>();
    for (const { topic, partition } of partitionList(txn.partitions)) {
      const list = topics.get(topic) ?? [];
      list.push(partition);
      topics.set(topic, list);
    }
    return {
      errorCode: ErrorCode.NONE,
      transactionalId,
      transactionState: txn.state,
      transactionTimeoutMs: txn.txnTimeoutMs,
      transactionStartTimeMs: BigInt(txn.txnStartTimestamp),
      producerId: txn.producerId,
      producerEpoch: txn.producerEpoch,
      topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
    };
  }

  /**
   * ListTransactions: the ids this broker coordinates, filtered by state
   * (Kafka's names, exactly; unknown names are reported back), producer id,
   * and (v1) how long ago the transaction started: only those running for
   * longer than `durationFilterMs` when it is not negative.
   */
  listTransactions(stateFilters: readonly string[], producerIdFilters: readonly bigint[], durationFilterMs: bigint): ListTransactionsResult {
    if (!this.started || this.stopped) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, unknownStateFilters: [], transactionStates: [] };
    const unknownStateFilters: string[] = [];
    const states = new Set<TransactionStateName>();
    for (const name of stateFilters) {
      if (isTransactionStateName(name)) states.add(name);
      else unknownStateFilters.push(name);
    }
    const producerIds = new Set(producerIdFilters);
    const now = BigInt(this.timer.now());
    const transactionStates: ListedTransaction[] = [];
    for (const shard of this.shards.values()) {
      for (const txn of shard.txns.values()) {
        if (txn.state === 'Dead') continue;
        if (producerIds.size > 0 && !producerIds.has(txn.producerId)) continue;
        if (states.size > 0 && !states.has(txn.state)) continue;
        if (durationFilterMs >= 0n && now - BigInt(txn.txnStartTimestamp) <= durationFilterMs) continue;
        transactionStates.push({ transactionalId: txn.transactionalId, producerId: txn.producerId, transactionState: txn.state });
      }
    }
    return { errorCode: ErrorCode.NONE, unknownStateFilters, transactionStates };
  }

  // ---- partitions, persistence ---------------------------------------------------------------

  private lookup(transactionalId: string): { error: number } | { shard: TxnShard; txn: TransactionMetadata | undefined } {
    if (this.stopped || this.numPartitions === 0) return { error: ErrorCode.NOT_COORDINATOR };
    const shard = this.shards.get(partitionFor(transactionalId, this.numPartitions));
    if (!shard) return { error: ErrorCode.NOT_COORDINATOR };
    return { shard, txn: shard.txns.get(transactionalId) };
  }

  /**
   * Waits until what the transactional id's partition of __transaction_state
   * holds now is on every in-sync replica, as Kafka's coordinator answers
   * only then: NONE, or the error to answer instead (COORDINATOR_NOT_AVAILABLE,
   * NOT_COORDINATOR). A handler calls it after the coordinator wrote the
   * request's state and before it answers.
   */
  async replicated(transactionalId: string): Promise<number> {
    if (this.numPartitions === 0 || !this.store.replicated) return ErrorCode.NONE;
    const code = await this.store.replicated(partitionFor(transactionalId, this.numPartitions), this.config.stateLogReplicationTimeoutMs);
    return code === ErrorCode.NONE ? code : appendErrorToResponseError(code);
  }

  private shardOf(transactionalId: string): TxnShard | undefined {
    if (this.numPartitions === 0) return undefined;
    return this.shards.get(partitionFor(transactionalId, this.numPartitions));
  }

  /** Whether `txn` is still this coordinator's, in the same shard (the same coordinator epoch). */
  private owns(shard: TxnShard, txn: TransactionMetadata): boolean {
    return !this.stopped && this.shards.get(shard.partition) === shard && shard.txns.get(txn.transactionalId) === txn;
  }

  /**
   * Writes a prepared transit and, once written, applies it. On failure the
   * pending state is dropped (unless `keepPending` says the caller retries),
   * and the error is the one the client sees.
   */
  private persist(shard: TxnShard, txn: TransactionMetadata, transit: TxnTransit, keepPending?: (error: number) => boolean): number {
    const error = this.append(shard, [{ transactionalId: txn.transactionalId, value: txnLogValue(transit) }]);
    if (error !== ErrorCode.NONE) {
      if (this.owns(shard, txn) && !keepPending?.(error)) txn.pendingState = null;
      return error;
    }
    if (!this.owns(shard, txn)) return ErrorCode.NOT_COORDINATOR;
    txn.completeTransitionTo(transit);
    return ErrorCode.NONE;
  }

  private append(shard: TxnShard, records: readonly TxnLogRecord[]): number {
    let code: number;
    try {
      code = this.store.append(shard.partition, txnRecordsBatch(records, this.timer.now())).errorCode;
    } catch (err) {
      this.log.warn({ partition: shard.partition, err }, 'cannot append to __transaction_state');
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    }
    return code === ErrorCode.NONE ? code : appendErrorToResponseError(code);
  }

  private applyImage(image: MetadataImage): void {
    if (this.stopped) return;
    const topic = image.topics.get(TRANSACTION_STATE_TOPIC);
    const led = new Map<number, number>();
    for (const p of topic?.partitions ?? []) if (p.leader === this.nodeId) led.set(p.partition, p.leaderEpoch);
    for (const [partition, shard] of [...this.shards]) {
      if (led.get(partition) !== shard.coordinatorEpoch) this.unload(partition);
    }
    this.numPartitions = topic?.partitions.length ?? 0;
    for (const [partition, epoch] of led) if (!this.shards.has(partition)) this.load(partition, epoch);
  }

  /**
   * Replays a partition's records into a new shard; then finishes the
   * transactions found in PrepareCommit or PrepareAbort.
   */
  private load(partition: number, coordinatorEpoch: number): void {
    const shard = new TxnShard(partition, coordinatorEpoch);
    let records = 0;
    try {
      for (const chunk of this.store.read(partition)) {
        for (const { offset, record } of txnRecordsIn(chunk, (baseOffset, error) => this.log.warn({ partition, baseOffset: String(baseOffset), error }, 'skipping an unreadable batch of __transaction_state'))) {
          records++;
          if ('skipped' in record) {
            this.log.warn({ partition, offset: String(offset), reason: record.skipped }, 'skipping a record of __transaction_state');
            continue;
          }
          if (record.value === null) shard.txns.delete(record.transactionalId);
          else shard.txns.set(record.transactionalId, metadataFromValue(record.transactionalId, record.value));
        }
      }
    } catch (err) {
      this.log.warn({ partition, err }, 'cannot read __transaction_state; its transactions are not loaded');
      return;
    }
    this.shards.set(partition, shard);
    if (records > 0) this.log.info({ partition, coordinatorEpoch, records, transactionalIds: shard.txns.size }, 'loaded transaction coordinator state');
    for (const txn of [...shard.txns.values()]) {
      if (txn.state !== 'PrepareCommit' && txn.state !== 'PrepareAbort') continue;
      this.writeMarkers(shard, txn, txn.state === 'PrepareCommit', txn.prepareComplete(this.timer.now()), 0);
    }
  }

  private unload(partition: number): void {
    const shard = this.shards.get(partition);
    if (!shard) return;
    this.shards.delete(partition);
    for (const id of shard.txns.keys()) this.timer.cancel(markersKey(id));
  }
}

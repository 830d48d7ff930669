/**
 * One transactional id's state, as Kafka 4.4's TransactionMetadata keeps it.
 * A transaction ended by EndTxn v5 (transactions v2, KIP-890) bumps the
 * epoch in its PrepareCommit/PrepareAbort, and one at the last epoch there is
 * rotates to the next producer id in its Complete state; one ended by an
 * older EndTxn keeps its epoch (transaction version 0/1). Each change
 * records which of the two the client used (client_transaction_version).
 *
 * A change goes in two steps: `prepare*` checks that the target state may
 * follow the current one, records it as the pending state and returns the
 * target as a TxnTransit; once the transit is written to
 * __transaction_state, `completeTransitionTo` applies it. While a state is
 * pending no other change may be prepared; requests that would need one
 * answer CONCURRENT_TRANSACTIONS.
 *
 * Example: an Empty producer adds a partition:
 *   const t = txn.prepareAddPartitions([{ topic: 'orders', partition: 0 }], now);
 *   // t.state === 'Ongoing', txn.pendingState === 'Ongoing'
 *   ...write t...
 *   txn.completeTransitionTo(t); // txn.state === 'Ongoing', txn.pendingState === null
 */

/** The states, by the names DescribeTransactions and ListTransactions use. */
export type TransactionStateName =
  | 'Empty'
  | 'Ongoing'
  | 'PrepareCommit'
  | 'PrepareAbort'
  | 'CompleteCommit'
  | 'CompleteAbort'
  | 'Dead'
  | 'PrepareEpochFence';

/** The state's id in a TransactionLogValue's transaction_status. */
export const TRANSACTION_STATE_IDS: Readonly<Record<TransactionStateName, number>> = {
  Empty: 0,
  Ongoing: 1,
  PrepareCommit: 2,
  PrepareAbort: 3,
  CompleteCommit: 4,
  CompleteAbort: 5,
  Dead: 6,
  PrepareEpochFence: 7,
};

const STATES_BY_ID: readonly TransactionStateName[] = ['Empty', 'Ongoing', 'PrepareCommit', 'PrepareAbort', 'CompleteCommit', 'CompleteAbort', 'Dead', 'PrepareEpochFence'];

/** The state with transaction_status `id`, or undefined for an id Kafka does not define. */
export function transactionStateOfId(id: number): TransactionStateName | undefined {
  return STATES_BY_ID[id];
}

/** Whether `name` is a state's name, exactly as Kafka spells it. */
export function isTransactionStateName(name: string): name is TransactionStateName {
  return (STATES_BY_ID as readonly string[]).includes(name);
}

/** The states each state may be entered from (transaction version 1). */
const VALID_PREVIOUS: Readonly<Record<TransactionStateName, readonly TransactionStateName[]>> = {
  Empty: ['Empty', 'CompleteCommit', 'CompleteAbort'],
  Ongoing: ['Ongoing', 'Empty', 'CompleteCommit', 'CompleteAbort'],
  PrepareCommit: ['Ongoing'],
  // Transactions v2 may abort with nothing open (an "empty abort"), bumping the epoch.
  PrepareAbort: ['Ongoing', 'PrepareEpochFence', 'Empty', 'CompleteCommit', 'CompleteAbort'],
  CompleteCommit: ['PrepareCommit'],
  CompleteAbort: ['PrepareAbort'],
  Dead: ['Empty', 'CompleteAbort', 'CompleteCommit'],
  PrepareEpochFence: ['Ongoing'],
};

/** States a transactional id may be expired from after transactional.id.expiration.ms. */
export function isExpirationAllowed(state: TransactionStateName): boolean {
  return state === 'Empty' || state === 'CompleteCommit' || state === 'CompleteAbort';
}

export const NO_PRODUCER_ID = -1n;
export const NO_PRODUCER_EPOCH = -1;
/** Epochs stop at 32766, so that the coordinator can always fence with one more. */
export const MAX_EPOCH = 32767;
/** client_transaction_version of a transaction ended the transactions v2 way. */
export const TRANSACTION_V2 = 2;

export function isEpochExhausted(epoch: number): boolean {
  return epoch >= MAX_EPOCH - 1;
}

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Partitions by topic. */
export type PartitionSet = ReadonlyMap<string, ReadonlySet<number>>;

/** The target of a prepared change: what is written to the log and then applied. */
export interface TxnTransit {
  readonly producerId: bigint;
  readonly previousProducerId: bigint;
  /** The producer id a transactions v2 end at the last epoch moves to once complete; -1n otherwise. */
  readonly nextProducerId: bigint;
  /** 2 when the client of this change uses transactions v2, else 0. */
  readonly clientTransactionVersion: number;
  readonly producerEpoch: number;
  readonly lastProducerEpoch: number;
  readonly txnTimeoutMs: number;
  readonly state: TransactionStateName;
  readonly partitions: PartitionSet;
  readonly txnStartTimestamp: number;
  readonly txnLastUpdateTimestamp: number;
}

/** A change asked for in a state that does not allow it: a coordinator bug, never a client's error. */
export class IllegalTransitionError extends Error {}

export function partitionCount(set: PartitionSet): number {
  let n = 0;
  for (const ps of set.values()) n += ps.size;
  return n;
}

/** The partitions of `set`, sorted by topic then partition. */
export function partitionList(set: PartitionSet): TopicPartition[] {
  const out: TopicPartition[] = [];
  for (const topic of [...set.keys()].sort()) {
    for (const partition of [...set.get(topic)!].sort((a, b) => a - b)) out.push({ topic, partition });
  }
  return out;
}

function copyPartitions(set: PartitionSet): Map<string, Set<number>> {
  return new Map([...set].map(([topic, ps]) => [topic, new Set(ps)]));
}

function isSubset(a: PartitionSet, b: PartitionSet): boolean {
  for (const [topic, ps] of a) {
    const other = b.get(topic);
    if (!other) return false;
    for (const p of ps) if (!other.has(p)) return false;
  }
  return true;
}

export class TransactionMetadata {
  /** The state being written, if any. */
  pendingState: TransactionStateName | null = null;
  /**
   * A fence whose PrepareAbort could not be written left the epoch raised
   * in memory without telling any client; the next fence reuses it.
   */
  hasFailedEpochFence = false;
  /** Set by a transactions v2 PrepareCommit/PrepareAbort at the last epoch: the producer id its completion moves to. */
  nextProducerId: bigint = NO_PRODUCER_ID;
  /** 2 once the current transaction is run the transactions v2 way, else 0. */
  clientTransactionVersion = 0;
  private readonly topicPartitions: Map<string, Set<number>>;

  constructor(
    readonly transactionalId: string,
    public producerId: bigint,
    public previousProducerId: bigint,
    public producerEpoch: number,
    public lastProducerEpoch: number,
    public txnTimeoutMs: number,
    public state: TransactionStateName,
    partitions: PartitionSet,
    public txnStartTimestamp: number,
    public txnLastUpdateTimestamp: number,
  ) {
    this.topicPartitions = copyPartitions(partitions);
  }

  /** A new transactional id: Empty, with a producer id but no epoch yet. */
  static fresh(transactionalId: string, producerId: bigint, txnTimeoutMs: number, now: number): TransactionMetadata {
    return new TransactionMetadata(transactionalId, producerId, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, txnTimeoutMs, 'Empty', new Map(), -1, now);
  }

  get partitions(): PartitionSet {
    return this.topicPartitions;
  }

  get pendingTransitionInProgress(): boolean {
    return this.pendingState !== null;
  }

  get isProducerEpochExhausted(): boolean {
    return isEpochExhausted(this.producerEpoch);
  }

  hasPartition(topic: string, partition: number): boolean {
    return this.topicPartitions.get(topic)?.has(partition) === true;
  }

  /** Drops a partition whose marker is written (or that no longer exists). */
  removePartition(topic: string, partition: number): void {
    if (this.state !== 'PrepareCommit' && this.state !== 'PrepareAbort') {
      throw new IllegalTransitionError(`${this.transactionalId}: removing a partition in state ${this.state}`);
    }
    const ps = this.topicPartitions.get(topic);
    ps?.delete(partition);
    if (ps && ps.size === 0) this.topicPartitions.delete(topic);
  }

  /** The ongoing transaction is to be aborted with the epoch one higher, so that its producer is fenced. */
  prepareFenceProducerEpoch(): TxnTransit {
    if (this.producerEpoch >= MAX_EPOCH) throw new IllegalTransitionError(`${this.transactionalId}: epoch ${this.producerEpoch} cannot be fenced`);
    const epoch = this.hasFailedEpochFence ? this.producerEpoch : this.producerEpoch + 1;
    return this.prepareTransitionTo('PrepareEpochFence', this.producerId, epoch, NO_PRODUCER_EPOCH, this.txnTimeoutMs, this.topicPartitions, this.txnStartTimestamp, this.txnLastUpdateTimestamp);
  }

  /**
   * InitProducerId on a producer id with epochs left: the epoch one higher,
   * or, for a retry of a bump that succeeded (KIP-360: the expected epoch is
   * the last one), the current epoch again. null when the expected epoch is
   * neither: PRODUCER_FENCED.
   */
  prepareIncrementProducerEpoch(newTxnTimeoutMs: number, expectedEpoch: number | null, now: number): TxnTransit | null {
    if (this.isProducerEpochExhausted) throw new IllegalTransitionError(`${this.transactionalId}: no epochs left for producer id ${this.producerId}`);
    const bumped = this.producerEpoch + 1;
    let next: number;
    let last: number;
    if (expectedEpoch === null) {
      next = bumped;
      last = NO_PRODUCER_EPOCH;
    } else if (this.producerEpoch === NO_PRODUCER_EPOCH || expectedEpoch === this.producerEpoch) {
      next = bumped;
      last = this.producerEpoch;
    } else if (expectedEpoch === this.lastProducerEpoch) {
      next = this.producerEpoch;
      last = this.lastProducerEpoch;
    } else {
      return null;
    }
    return this.prepareTransitionTo('Empty', this.producerId, next, last, newTxnTimeoutMs, new Map(), -1, now);
  }

  /** InitProducerId when the epochs of the producer id are used up: a new producer id at epoch 0. */
  prepareProducerIdRotation(newProducerId: bigint, newTxnTimeoutMs: number, now: number, recordLastEpoch: boolean): TxnTransit {
    if (this.state === 'Ongoing' || this.state === 'PrepareCommit' || this.state === 'PrepareAbort') {
      throw new IllegalTransitionError(`${this.transactionalId}: rotating the producer id during a transaction`);
    }
    return this.prepareTransitionTo('Empty', newProducerId, 0, recordLastEpoch ? this.producerEpoch : NO_PRODUCER_EPOCH, newTxnTimeoutMs, new Map(), -1, now);
  }

  /**
   * AddPartitionsToTxn / AddOffsetsToTxn: the transaction goes on with more
   * partitions; a new one starts now. `clientTransactionVersion` 2 when a
   * partition leader adds them for a transactions v2 producer.
   */
  prepareAddPartitions(added: readonly TopicPartition[], now: number, clientTransactionVersion = 0): TxnTransit {
    const start = this.state === 'Empty' || this.state === 'CompleteAbort' || this.state === 'CompleteCommit' ? now : this.txnStartTimestamp;
    const partitions = copyPartitions(this.topicPartitions);
    for (const { topic, partition } of added) {
      let ps = partitions.get(topic);
      if (!ps) partitions.set(topic, (ps = new Set()));
      ps.add(partition);
    }
    return this.prepareTransitionTo('Ongoing', this.producerId, this.producerEpoch, this.lastProducerEpoch, this.txnTimeoutMs, partitions, start, now, { clientTransactionVersion });
  }

  /**
   * EndTxn: PrepareCommit or PrepareAbort. Transaction version 0/1 (EndTxn
   * up to v4) keeps the epoch. Transactions v2 (`v2` set) raises it by one
   * (the markers carry the raised epoch, fencing the transaction's own late
   * writes) and, at the last epoch there is, names `nextProducerId`, which the
   * completion moves to at epoch 0. An abort with nothing open (from Empty or
   * a Complete state) starts and ends an empty transaction now.
   */
  prepareAbortOrCommit(
    state: 'PrepareCommit' | 'PrepareAbort',
    now: number,
    v2?: { nextProducerId: bigint; bump?: boolean; lastProducerEpoch?: number },
  ): TxnTransit {
    if (!v2) {
      return this.prepareTransitionTo(state, this.producerId, this.producerEpoch, this.lastProducerEpoch, this.txnTimeoutMs, this.topicPartitions, this.txnStartTimestamp, now, { clientTransactionVersion: 0 });
    }
    const empty = this.state !== 'Ongoing';
    const bump = v2.bump ?? true;
    const epoch = bump && this.producerEpoch < MAX_EPOCH ? this.producerEpoch + 1 : this.producerEpoch;
    const last = v2.lastProducerEpoch ?? this.producerEpoch;
    return this.prepareTransitionTo(state, this.producerId, epoch, last, this.txnTimeoutMs, empty ? new Map() : this.topicPartitions, empty ? now : this.txnStartTimestamp, now, {
      clientTransactionVersion: TRANSACTION_V2,
      nextProducerId: v2.nextProducerId,
    });
  }

  /**
   * Every marker is written: CompleteCommit or CompleteAbort, without
   * partitions; at the next producer id (epoch 0) when the prepare named one.
   */
  prepareComplete(now: number): TxnTransit {
    const state = this.state === 'PrepareCommit' ? 'CompleteCommit' : 'CompleteAbort';
    this.hasFailedEpochFence = false;
    const rotate = this.nextProducerId !== NO_PRODUCER_ID;
    return this.prepareTransitionTo(
      state,
      rotate ? this.nextProducerId : this.producerId,
      rotate ? 0 : this.producerEpoch,
      this.lastProducerEpoch,
      this.txnTimeoutMs,
      new Map(),
      this.txnStartTimestamp,
      now,
      { clientTransactionVersion: this.clientTransactionVersion },
    );
  }

  /** The transactional id expires: its tombstone is written, then it is forgotten. */
  prepareDead(): TxnTransit {
    return this.prepareTransitionTo('Dead', this.producerId, this.producerEpoch, this.lastProducerEpoch, this.txnTimeoutMs, new Map(), this.txnStartTimestamp, this.txnLastUpdateTimestamp);
  }

  private prepareTransitionTo(
    state: TransactionStateName,
    producerId: bigint,
    producerEpoch: number,
    lastProducerEpoch: number,
    txnTimeoutMs: number,
    partitions: PartitionSet,
    txnStartTimestamp: number,
    now: number,
    v2: { clientTransactionVersion?: number; nextProducerId?: bigint } = {},
  ): TxnTransit {
    if (this.pendingState !== null) {
      throw new IllegalTransitionError(`${this.transactionalId}: preparing ${state} while ${this.pendingState} is pending`);
    }
    if (producerId < 0n) throw new IllegalTransitionError(`${this.transactionalId}: producer id ${producerId}`);
    if (state !== 'Dead' && producerEpoch < 0) throw new IllegalTransitionError(`${this.transactionalId}: producer epoch ${producerEpoch}`);
    if (!VALID_PREVIOUS[state].includes(this.state)) {
      throw new IllegalTransitionError(`${this.transactionalId}: ${state} cannot follow ${this.state}`);
    }
    this.pendingState = state;
    return {
      producerId,
      previousProducerId: this.producerId,
      nextProducerId: v2.nextProducerId ?? NO_PRODUCER_ID,
      clientTransactionVersion: v2.clientTransactionVersion ?? this.clientTransactionVersion,
      producerEpoch,
      lastProducerEpoch,
      txnTimeoutMs,
      state,
      partitions: copyPartitions(partitions),
      txnStartTimestamp,
      txnLastUpdateTimestamp: now,
    };
  }

  /** Applies a transit once it is written; it must be the pending one. */
  completeTransitionTo(t: TxnTransit): void {
    const fail = (why: string): never => {
      throw new IllegalTransitionError(`${this.transactionalId}: cannot complete ${this.state} -> ${t.state}: ${why}`);
    };
    if (this.pendingState !== t.state) fail(`pending state is ${this.pendingState}`);
    const sameProducer = t.producerId === this.producerId && t.producerEpoch === this.producerEpoch;
    switch (t.state) {
      case 'Empty': {
        const bump = t.producerEpoch === this.producerEpoch + 1 || (t.producerEpoch === 0 && t.producerId !== this.producerId);
        if ((t.producerEpoch !== this.producerEpoch && !bump) || partitionCount(t.partitions) > 0 || t.txnStartTimestamp !== -1) fail('not an epoch bump');
        this.txnTimeoutMs = t.txnTimeoutMs;
        this.producerEpoch = t.producerEpoch;
        this.lastProducerEpoch = t.lastProducerEpoch;
        this.producerId = t.producerId;
        this.previousProducerId = t.previousProducerId;
        break;
      }
      case 'Ongoing':
        if (!sameProducer || !isSubset(this.topicPartitions, t.partitions) || this.txnTimeoutMs !== t.txnTimeoutMs) fail('not an addition');
        this.txnStartTimestamp = t.txnStartTimestamp;
        for (const [topic, ps] of t.partitions) {
          let mine = this.topicPartitions.get(topic);
          if (!mine) this.topicPartitions.set(topic, (mine = new Set()));
          for (const p of ps) mine.add(p);
        }
        break;
      case 'PrepareCommit':
      case 'PrepareAbort': {
        const bumped = t.producerId === this.producerId && (t.producerEpoch === this.producerEpoch + 1 || (t.producerEpoch === MAX_EPOCH && this.producerEpoch === MAX_EPOCH));
        if (t.clientTransactionVersion >= TRANSACTION_V2 && bumped && this.state !== 'Ongoing') {
          // An empty abort: nothing was open.
          if (partitionCount(t.partitions) > 0) fail('an empty abort with partitions');
          this.txnStartTimestamp = t.txnStartTimestamp;
          this.topicPartitions.clear();
        } else if (
          !(sameProducer || (t.clientTransactionVersion >= TRANSACTION_V2 && bumped)) ||
          !isSubset(this.topicPartitions, t.partitions) ||
          !isSubset(t.partitions, this.topicPartitions) ||
          this.txnStartTimestamp !== t.txnStartTimestamp
        ) {
          fail('the transaction changed');
        }
        this.producerEpoch = t.producerEpoch;
        this.lastProducerEpoch = t.lastProducerEpoch;
        this.nextProducerId = t.nextProducerId;
        break;
      }
      case 'CompleteCommit':
      case 'CompleteAbort': {
        const rotated = this.nextProducerId !== NO_PRODUCER_ID && t.producerId === this.nextProducerId && t.producerEpoch === 0;
        if (!(sameProducer || rotated) || t.txnStartTimestamp === -1) fail('the transaction changed');
        if (rotated) {
          this.previousProducerId = t.previousProducerId;
          this.producerId = t.producerId;
          this.producerEpoch = 0;
          this.lastProducerEpoch = NO_PRODUCER_EPOCH;
        }
        this.nextProducerId = NO_PRODUCER_ID;
        this.txnStartTimestamp = t.txnStartTimestamp;
        this.topicPartitions.clear();
        break;
      }
      case 'PrepareEpochFence':
      case 'Dead':
        fail('never written as a state');
    }
    this.txnLastUpdateTimestamp = t.txnLastUpdateTimestamp;
    this.clientTransactionVersion = t.clientTransactionVersion;
    this.pendingState = null;
    this.state = t.state;
  }
}

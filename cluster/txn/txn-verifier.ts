/**
 * Transaction verification (KIP-890 part 1), as Kafka's
 * AddPartitionsToTxnManager does it for the partition leaders and group
 * coordinators of a broker: before the first transactional batch of a
 * producer lands in a partition, the transaction's coordinator, wherever it
 * is, is asked whether the partition is in the producer's ongoing
 * transaction. The coordinator of a transactional id is the leader of its
 * partition of __transaction_state; when that is this broker, its own
 * TransactionCoordinator answers; otherwise an AddPartitionsToTxn request
 * with verify_only (v4, the batched form brokers send) goes to it.
 *
 * A producer of transactions v2 (Produce v12+, TxnOffsetCommit v5+) never
 * adds its partitions itself: the same request without verify_only (`add`)
 * has the coordinator add them (KIP-890 part 2).
 *
 * Answers per partition are the coordinator's: NONE, TRANSACTION_ABORTABLE
 * (not in the transaction), INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
 * CONCURRENT_TRANSACTIONS, or, when the coordinator cannot be found or
 * reached, NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE; see
 * verificationError for what Produce and TxnOffsetCommit answer for them.
 */
import { ErrorCode } from '../../wire/errors.js';
import type { AddPartitionsToTxnRequest } from '../../wire/messages/add-partitions-to-txn-request.js';
import type { AddPartitionsToTxnResponse } from '../../wire/messages/add-partitions-to-txn-response.js';
import { partitionFor } from '../coordinator/partition-for.js';
import { BrokerRequestError, type InterBrokerClient } from '../inter-broker/broker-channel.js';
import { api } from '../inter-broker/kafka-connection.js';
import type { MetadataStore } from '../metadata/metadata-image.js';
import { TRANSACTION_STATE_TOPIC, type TransactionCoordinator } from './txn-coordinator.js';
import { TRANSACTION_V2, type TopicPartition } from './txn-state.js';

/** The batched AddPartitionsToTxn, the first version with verify_only. */
const VERIFY_VERSION = 4;
/** What a Kafka 4.4 broker sends to add partitions for a transactions v2 producer (v4 on a coordinator that serves no more). */
const ADD_VERSION = 5;

export interface TxnVerifierLogger {
  warn(obj: object, msg: string): void;
}

export type VerifiedPartition = { topic: string; partition: number; errorCode: number };

export class TransactionVerifier {
  /** The last write of each producer that waits on a verification: its later writes queue behind it. */
  private readonly tails = new Map<bigint, Promise<void>>();

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly coordinator: Pick<TransactionCoordinator, 'verifyPartitions' | 'addPartitions' | 'replicated'>,
    /** null on a broker of its own: every coordinator is this broker. */
    private readonly channel: InterBrokerClient | null,
    private readonly log: TxnVerifierLogger,
  ) {}

  /**
   * The writes of one producer that wait on a verification keep the
   * producer's order: a write of it that arrives meanwhile (even one that
   * needs no verification) runs after them, or its batches could land
   * before earlier ones of the same partitions and break their sequence.
   * `pending` is what a new write of `producerId` must wait for first, if
   * anything; `track` makes `work` the one its next write waits for.
   *
   * Example: a request for producer 7 verifying orders-0 is tracked; a
   * second request of producer 7 to orders-1 arriving before the answer
   * awaits pending(7n) and appends after the first.
   */
  pending(producerId: bigint): Promise<void> | undefined {
    return this.tails.get(producerId);
  }

  track(producerId: bigint, work: Promise<unknown>): void {
    const tail = work.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(producerId, tail);
    void tail.then(() => {
      if (this.tails.get(producerId) === tail) this.tails.delete(producerId);
    });
  }

  /**
   * Whether each of `partitions` is in the ongoing transaction of
   * `transactionalId` at this producer id and epoch; nothing changes.
   *
   * Example: after AddPartitionsToTxn added orders-0 to 'tx' (producer 7,
   * epoch 0) on whichever broker coordinates it: verify('tx', 7n, 0,
   * [orders-0, orders-1]) -> [orders-0 NONE, orders-1 TRANSACTION_ABORTABLE].
   */
  async verify(transactionalId: string, producerId: bigint, producerEpoch: number, partitions: readonly TopicPartition[], add = false): Promise<VerifiedPartition[]> {
    const all = (errorCode: number): VerifiedPartition[] => partitions.map((p) => ({ topic: p.topic, partition: p.partition, errorCode }));
    const image = this.metadata.image();
    const stateTopic = image.topics.get(TRANSACTION_STATE_TOPIC);
    if (!stateTopic || stateTopic.partitions.length === 0) return all(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const leader = stateTopic.partitions[partitionFor(transactionalId, stateTopic.partitions.length)]?.leader ?? -1;
    if (leader === this.nodeId || this.channel === null) {
      if (!add) return this.coordinator.verifyPartitions(transactionalId, producerId, producerEpoch, partitions);
      let code = this.coordinator.addPartitions(transactionalId, producerId, producerEpoch, partitions, TRANSACTION_V2);
      // Added is added once it is on every in-sync replica of the id's partition, as the remote answer is.
      if (code === ErrorCode.NONE) code = await this.coordinator.replicated(transactionalId);
      return all(code);
    }
    if (leader < 0 || !image.brokers.has(leader)) return all(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const topics = new Map<string, number[]>();
    for (const p of partitions) topics.set(p.topic, [...(topics.get(p.topic) ?? []), p.partition]);
    const body: AddPartitionsToTxnRequest = {
      transactions: [{ transactionalId, producerId, producerEpoch, verifyOnly: !add, topics: [...topics].map(([name, ps]) => ({ name, partitions: ps })) }],
      v3AndBelowTransactionalId: '',
      v3AndBelowProducerId: -1n,
      v3AndBelowProducerEpoch: -1,
      v3AndBelowTopics: [],
    };
    let response: AddPartitionsToTxnResponse;
    try {
      ({ response } = await this.channel.request<AddPartitionsToTxnResponse>(leader, api('AddPartitionsToTxn'), add ? ADD_VERSION : VERIFY_VERSION, body, { minVersion: VERIFY_VERSION }));
    } catch (err) {
      this.log.warn({ transactionalId, coordinator: leader, err: (err as Error).message }, 'cannot reach the transaction coordinator to verify a transactional write');
      return all(err instanceof BrokerRequestError && err.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER ? ErrorCode.NOT_COORDINATOR : ErrorCode.COORDINATOR_NOT_AVAILABLE);
    }
    if (response.errorCode !== ErrorCode.NONE) return all(response.errorCode);
    const codes = new Map<string, number>();
    for (const r of response.resultsByTransaction) {
      if (r.transactionalId !== transactionalId) continue;
      for (const t of r.topicResults) for (const p of t.resultsByPartition) codes.set(`${t.name}\u0000${p.partitionIndex}`, p.partitionErrorCode);
    }
    return partitions.map((p) => ({ topic: p.topic, partition: p.partition, errorCode: codes.get(`${p.topic}\u0000${p.partition}`) ?? ErrorCode.COORDINATOR_NOT_AVAILABLE }));
  }
}

/**
 * What a verification answer becomes for the write that asked, as Kafka
 * hands it to Produce and TxnOffsetCommit: PRODUCER_FENCED is
 * INVALID_PRODUCER_EPOCH; a partition not in the transaction is
 * TRANSACTION_ABORTABLE for requests that know that error (`abortableKnown`:
 * Produce v11+, TxnOffsetCommit v4+) and INVALID_TXN_STATE for older ones;
 * the rest as they are (the caller translates the coordinator's transient
 * errors).
 */
export function verificationError(code: number, abortableKnown: boolean): number {
  switch (code) {
    case ErrorCode.PRODUCER_FENCED:
      return ErrorCode.INVALID_PRODUCER_EPOCH;
    case ErrorCode.TRANSACTION_ABORTABLE:
      return abortableKnown ? ErrorCode.TRANSACTION_ABORTABLE : ErrorCode.INVALID_TXN_STATE;
    default:
      return code;
  }
}

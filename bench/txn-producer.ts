/**
 * A transactional producer on bare WireConnections, for the cluster
 * benchmark: it times what the brokers do for one transaction over several
 * partitions, with no client library's batching, linger or retry backoff in
 * between.
 *
 * Once: FindCoordinator (key type 1) for the transactional id, then
 * InitProducerId on the coordinator. Per transaction, one after another:
 * AddPartitionsToTxn v3 for every partition on the coordinator (asked again
 * every 2 ms while it answers CONCURRENT_TRANSACTIONS, which is how a
 * producer learns that the previous transaction's markers are still being
 * written); one Produce (acks=-1) of a transactional batch to each
 * partition's leader, all at once; EndTxn commit on the coordinator; then
 * ListOffsets read_committed on each leader, every millisecond, until the
 * last stable offset has passed the transaction's records.
 *
 * Per transaction it records:
 * - commit: EndTxn sent -> EndTxn answered;
 * - end to end: first AddPartitionsToTxn sent (retries included) -> EndTxn answered;
 * - visible: EndTxn sent -> the last of the leaders answers ListOffsets with
 *   a last stable offset past the records. Polling starts when EndTxn is
 *   answered, so that it does not load the brokers while the commit is timed;
 *   a commit visible earlier is seen at the first poll.
 *
 * Example:
 *   const r = await runTransactions(nodes, 'txn', [1, 2, 3], 'bench-txn', { warmup: 20, transactions: 200, records: 1, recordSize: 100 });
 *   r.commitMs.length === 200
 */
import { ErrorCode, errorName } from '../wire/errors.js';
import type { AddPartitionsToTxnRequest } from '../wire/messages/add-partitions-to-txn-request.js';
import type { AddPartitionsToTxnResponse } from '../wire/messages/add-partitions-to-txn-response.js';
import type { EndTxnRequest } from '../wire/messages/end-txn-request.js';
import type { EndTxnResponse } from '../wire/messages/end-txn-response.js';
import type { FindCoordinatorRequest } from '../wire/messages/find-coordinator-request.js';
import type { FindCoordinatorResponse } from '../wire/messages/find-coordinator-response.js';
import type { InitProducerIdRequest } from '../wire/messages/init-producer-id-request.js';
import type { InitProducerIdResponse } from '../wire/messages/init-producer-id-response.js';
import type { ListOffsetsRequest } from '../wire/messages/list-offsets-request.js';
import type { ListOffsetsResponse } from '../wire/messages/list-offsets-response.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import type { ProduceResponse } from '../wire/messages/produce-response.js';
import { buildBatch } from '../wire/record-batch.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import { PRODUCE_VERSION } from './load.js';

/**
 * Versions both gregor and Kafka 4.4 serve, as a producer of transaction
 * version 1 sends them: AddPartitionsToTxn v4+ is the brokers' form (and v5
 * marks transaction version 2), as is EndTxn v5.
 */
const FIND_COORDINATOR_VERSION = 4;
const INIT_PRODUCER_ID_VERSION = 4;
const ADD_PARTITIONS_VERSION = 3;
const END_TXN_VERSION = 4;
const LIST_OFFSETS_VERSION = 7;

const KEY_TYPE_TRANSACTION = 1;
const READ_COMMITTED = 1;
const LATEST_TIMESTAMP = -1n;
const TRANSACTION_TIMEOUT_MS = 60_000;
/** Bounds the set-up steps, which wait for __transaction_state to be made and loaded. */
const SETUP_DEADLINE_MS = 60_000;
/** Bounds each transaction, from its first AddPartitionsToTxn to its records being visible. */
const TRANSACTION_DEADLINE_MS = 30_000;
const RETRY_MS = 2;
const POLL_MS = 1;

export interface TxnNode {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

export interface TxnSettings {
  /** Transactions run first and not recorded. */
  readonly warmup: number;
  /** Transactions recorded. */
  readonly transactions: number;
  /** Records per partition and transaction, each of `recordSize` value bytes. */
  readonly records: number;
  readonly recordSize: number;
}

export interface TxnRun {
  readonly transactionalId: string;
  readonly coordinator: number;
  /** The leader of each partition, by index. */
  readonly leaders: readonly number[];
  /** One per recorded transaction, in milliseconds. */
  readonly commitMs: number[];
  readonly endToEndMs: number[];
  readonly visibleMs: number[];
  /** CONCURRENT_TRANSACTIONS answers to AddPartitionsToTxn and EndTxn during the recorded transactions. */
  readonly concurrentTransactions: number;
  /** Recorded transactions whose AddPartitionsToTxn got CONCURRENT_TRANSACTIONS first, and the milliseconds they spent asking again in all. */
  readonly delayedTransactions: number;
  readonly delayedMs: number;
  /** The same during the warm-up (the first transaction included). */
  readonly warmupConcurrentTransactions: number;
  /** ListOffsets requests sent while waiting for visibility, over the recorded transactions. */
  readonly visibilityPolls: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Nearest-rank percentile of `values` (which it sorts). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  values.sort((a, b) => a - b);
  return values[Math.min(values.length - 1, Math.max(0, Math.ceil((p / 100) * values.length) - 1))]!;
}

function check(what: string, code: number): void {
  if (code !== ErrorCode.NONE) throw new Error(`${what}: ${errorName(code)}`);
}

/** The node id of the coordinator of `transactionalId`, asked of `conn`; waits while the coordinator is being made. */
export async function findTransactionCoordinator(conn: WireConnection, transactionalId: string): Promise<number> {
  const deadline = Date.now() + SETUP_DEADLINE_MS;
  for (;;) {
    const res = await conn.request<FindCoordinatorResponse, FindCoordinatorRequest>(api('FindCoordinator'), FIND_COORDINATOR_VERSION, {
      key: transactionalId,
      keyType: KEY_TYPE_TRANSACTION,
      coordinatorKeys: [transactionalId],
    });
    const c = res.coordinators[0];
    if (!c) throw new Error(`FindCoordinator ${transactionalId}: an answer without the key`);
    if (c.errorCode === ErrorCode.NONE) return c.nodeId;
    const retriable = c.errorCode === ErrorCode.COORDINATOR_NOT_AVAILABLE || c.errorCode === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    if (!retriable || Date.now() > deadline) throw new Error(`FindCoordinator ${transactionalId}: ${errorName(c.errorCode)} ${c.errorMessage ?? ''}`);
    await sleep(100);
  }
}

class Producer {
  readonly seq: number[];
  concurrent = 0;
  /** Transactions that got CONCURRENT_TRANSACTIONS at least once, and the time they spent asking again. */
  delayed = 0;
  delayedMs = 0;
  polls = 0;

  constructor(
    private readonly conns: ReadonlyMap<number, WireConnection>,
    readonly transactionalId: string,
    readonly coordinator: number,
    private readonly topic: string,
    readonly leaders: readonly number[],
    private readonly producerId: bigint,
    private readonly producerEpoch: number,
    private readonly settings: TxnSettings,
  ) {
    this.seq = leaders.map(() => 0);
  }

  private conn(nodeId: number): WireConnection {
    const c = this.conns.get(nodeId);
    if (!c) throw new Error(`no connection to broker ${nodeId}`);
    return c;
  }

  /** One transaction: its three timings in milliseconds. */
  async once(value: Buffer): Promise<{ commitMs: number; endToEndMs: number; visibleMs: number }> {
    const partitions = this.leaders.map((_, p) => p);
    const batches = partitions.map((p) =>
      buildBatch({
        records: Array.from({ length: this.settings.records }, () => ({ key: null, value })),
        producerId: this.producerId,
        producerEpoch: this.producerEpoch,
        baseSequence: this.seq[p]!,
        transactional: true,
      }),
    );
    const coordinator = this.conn(this.coordinator);
    const t0 = performance.now();
    const deadline = t0 + TRANSACTION_DEADLINE_MS;

    let sentAt = t0;
    for (;;) {
      const res = await coordinator.request<AddPartitionsToTxnResponse, AddPartitionsToTxnRequest>(api('AddPartitionsToTxn'), ADD_PARTITIONS_VERSION, {
        transactions: [],
        v3AndBelowTransactionalId: this.transactionalId,
        v3AndBelowProducerId: this.producerId,
        v3AndBelowProducerEpoch: this.producerEpoch,
        v3AndBelowTopics: [{ name: this.topic, partitions }],
      });
      const codes = res.resultsByTopicV3AndBelow.flatMap((t) => t.resultsByPartition.map((r) => r.partitionErrorCode));
      if (codes.length !== partitions.length) throw new Error(`AddPartitionsToTxn answered ${codes.length} partitions of ${partitions.length}`);
      if (codes.every((c) => c === ErrorCode.NONE)) {
        if (sentAt > t0) {
          this.delayed++;
          this.delayedMs += sentAt - t0;
        }
        break;
      }
      if (!codes.every((c) => c === ErrorCode.CONCURRENT_TRANSACTIONS)) throw new Error(`AddPartitionsToTxn: ${codes.map(errorName).join(', ')}`);
      this.concurrent++;
      if (performance.now() > deadline) throw new Error(`AddPartitionsToTxn still answers CONCURRENT_TRANSACTIONS after ${TRANSACTION_DEADLINE_MS} ms`);
      await sleep(RETRY_MS);
      sentAt = performance.now();
    }

    const lastOffsets = await Promise.all(
      partitions.map(async (p) => {
        const res = await this.conn(this.leaders[p]!).request<ProduceResponse, ProduceRequest>(api('Produce'), PRODUCE_VERSION, {
          transactionalId: this.transactionalId,
          acks: -1,
          timeoutMs: TRANSACTION_DEADLINE_MS,
          topicData: [{ name: this.topic, topicId: ZERO_UUID, partitionData: [{ index: p, records: batches[p]! }] }],
        });
        const answer = res.responses[0]?.partitionResponses[0];
        if (!answer) throw new Error(`Produce to partition ${p}: an answer without the partition`);
        check(`Produce to partition ${p} (leader ${this.leaders[p]})`, answer.errorCode);
        return answer.baseOffset + BigInt(this.settings.records - 1);
      }),
    );
    for (const p of partitions) this.seq[p]! += this.settings.records;

    const tEnd = performance.now();
    for (;;) {
      const res = await coordinator.request<EndTxnResponse, EndTxnRequest>(api('EndTxn'), END_TXN_VERSION, {
        transactionalId: this.transactionalId,
        producerId: this.producerId,
        producerEpoch: this.producerEpoch,
        committed: true,
      });
      if (res.errorCode === ErrorCode.NONE) break;
      if (res.errorCode !== ErrorCode.CONCURRENT_TRANSACTIONS) check('EndTxn', res.errorCode);
      this.concurrent++;
      if (performance.now() > deadline) throw new Error(`EndTxn still answers CONCURRENT_TRANSACTIONS after ${TRANSACTION_DEADLINE_MS} ms`);
      await sleep(RETRY_MS);
    }
    const tCommitted = performance.now();

    const seenAt = await Promise.all(partitions.map((p) => this.awaitStable(p, lastOffsets[p]!, deadline)));
    return { commitMs: tCommitted - tEnd, endToEndMs: tCommitted - t0, visibleMs: Math.max(...seenAt) - tEnd };
  }

  /** Polls the leader of `partition` until its last stable offset is past `lastOffset`; when it saw it. */
  private async awaitStable(partition: number, lastOffset: bigint, deadline: number): Promise<number> {
    const leader = this.conn(this.leaders[partition]!);
    for (;;) {
      this.polls++;
      const res = await leader.request<ListOffsetsResponse, ListOffsetsRequest>(api('ListOffsets'), LIST_OFFSETS_VERSION, {
        replicaId: -1,
        isolationLevel: READ_COMMITTED,
        topics: [{ name: this.topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: LATEST_TIMESTAMP, maxNumOffsets: 1 }] }],
        timeoutMs: 0,
      });
      const now = performance.now();
      const answer = res.topics[0]?.partitions[0];
      if (!answer) throw new Error(`ListOffsets of partition ${partition}: an answer without the partition`);
      check(`ListOffsets read_committed of partition ${partition} (leader ${this.leaders[partition]})`, answer.errorCode);
      if (answer.offset > lastOffset) return now;
      if (now > deadline) throw new Error(`partition ${partition}: last stable offset ${answer.offset} still not past ${lastOffset} ${TRANSACTION_DEADLINE_MS} ms after the transaction began`);
      await sleep(POLL_MS);
    }
  }
}

/** Transactional ids tried, `${prefix}-0` onwards, for one whose coordinator is not the leader of every partition. */
const ID_CANDIDATES = 20;

/**
 * Runs `settings.warmup` then `settings.transactions` transactions over
 * every partition of `topic` (led by `leaders[p]`), with one connection per
 * node of `nodes`, and returns the recorded timings. The transactional id
 * is the first of `${idPrefix}-0`, `${idPrefix}-1`, ... whose coordinator
 * is not the leader of every partition, so that at least one partition's
 * markers and verification cross between brokers.
 */
export async function runTransactions(nodes: readonly TxnNode[], topic: string, leaders: readonly number[], idPrefix: string, settings: TxnSettings): Promise<TxnRun> {
  const conns = new Map<number, WireConnection>();
  try {
    for (const n of nodes) conns.set(n.nodeId, await WireConnection.open(n.host, n.port));
    const any = conns.get(nodes[0]!.nodeId)!;
    let transactionalId = '';
    let coordinator = -1;
    for (let i = 0; i < ID_CANDIDATES && coordinator === -1; i++) {
      const id = `${idPrefix}-${i}`;
      const node = await findTransactionCoordinator(any, id);
      if (leaders.some((l) => l !== node)) [transactionalId, coordinator] = [id, node];
    }
    if (coordinator === -1) throw new Error(`the coordinators of ${idPrefix}-0..${ID_CANDIDATES - 1} all lead every partition of ${topic}; lead the partitions from several brokers`);

    // A coordinator just elected may not have taken its partition of __transaction_state yet
    // (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE): the coordinator is asked for again, as a producer does.
    const deadline = Date.now() + SETUP_DEADLINE_MS;
    let init: InitProducerIdResponse;
    for (;;) {
      const coordinatorConn = conns.get(coordinator);
      if (!coordinatorConn) throw new Error(`the coordinator of ${transactionalId}, broker ${coordinator}, is not among the brokers ${nodes.map((n) => n.nodeId).join(', ')}`);
      init = await coordinatorConn.request<InitProducerIdResponse, InitProducerIdRequest>(api('InitProducerId'), INIT_PRODUCER_ID_VERSION, {
        transactionalId,
        transactionTimeoutMs: TRANSACTION_TIMEOUT_MS,
        producerId: -1n,
        producerEpoch: -1,
        enable2Pc: false,
        keepPreparedTxn: false,
      });
      if (init.errorCode === ErrorCode.NONE) break;
      const moved = init.errorCode === ErrorCode.NOT_COORDINATOR || init.errorCode === ErrorCode.COORDINATOR_NOT_AVAILABLE;
      const retriable = moved || init.errorCode === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS || init.errorCode === ErrorCode.CONCURRENT_TRANSACTIONS;
      if (!retriable || Date.now() > deadline) check(`InitProducerId ${transactionalId} on broker ${coordinator}`, init.errorCode);
      await sleep(100);
      if (moved) coordinator = await findTransactionCoordinator(any, transactionalId);
    }
    if (leaders.every((l) => l === coordinator)) throw new Error(`the coordinator of ${transactionalId} moved to broker ${coordinator}, which leads every partition of ${topic}`);

    const producer = new Producer(conns, transactionalId, coordinator, topic, leaders, init.producerId, init.producerEpoch, settings);
    const value = Buffer.alloc(settings.recordSize);
    for (let i = 0; i < settings.recordSize; i++) value[i] = 97 + ((i * 7919) % 26);
    for (let i = 0; i < settings.warmup; i++) await producer.once(value);
    const warmupConcurrentTransactions = producer.concurrent;
    producer.concurrent = 0;
    producer.delayed = 0;
    producer.delayedMs = 0;
    producer.polls = 0;
    const commitMs: number[] = [];
    const endToEndMs: number[] = [];
    const visibleMs: number[] = [];
    for (let i = 0; i < settings.transactions; i++) {
      const t = await producer.once(value);
      commitMs.push(t.commitMs);
      endToEndMs.push(t.endToEndMs);
      visibleMs.push(t.visibleMs);
    }
    return {
      transactionalId,
      coordinator,
      leaders,
      commitMs,
      endToEndMs,
      visibleMs,
      concurrentTransactions: producer.concurrent,
      delayedTransactions: producer.delayed,
      delayedMs: producer.delayedMs,
      warmupConcurrentTransactions,
      visibilityPolls: producer.polls,
    };
  } finally {
    for (const c of conns.values()) c.close();
  }
}

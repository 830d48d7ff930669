import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import type { AddPartitionsToTxnRequest } from '../../wire/messages/add-partitions-to-txn-request.js';
import type { AddPartitionsToTxnResponse } from '../../wire/messages/add-partitions-to-txn-response.js';
import { partitionFor } from '../coordinator/partition-for.js';
import { FakeMetadataStore } from '../group/group-test-support.js';
import { BrokerRequestError, type InterBrokerClient } from '../inter-broker/broker-channel.js';
import type { ApiDecl } from '../inter-broker/kafka-connection.js';
import { buildImage, type TopicImage } from '../metadata/metadata-image.js';
import { TRANSACTION_STATE_TOPIC } from './txn-coordinator.js';
import { TransactionVerifier, verificationError } from './txn-verifier.js';
import type { TopicPartition } from './txn-state.js';

const STATE_PARTITIONS = 4;
const ID = 'tx';
const T0 = { topic: 't', partition: 0 };
const T1 = { topic: 't', partition: 1 };
const U0 = { topic: 'u', partition: 0 };

/** __transaction_state with `ID`'s partition led by `leader`; brokers 1-3 registered. */
function store(leader: number | null): FakeMetadataStore {
  const mine = partitionFor(ID, STATE_PARTITIONS);
  const topics: TopicImage[] =
    leader === null
      ? []
      : [
          {
            name: TRANSACTION_STATE_TOPIC,
            topicId: 'txn',
            internal: true,
            configs: {},
            partitions: Array.from({ length: STATE_PARTITIONS }, (_, partition) => ({
              partition,
              leader: partition === mine ? leader : 1,
              leaderEpoch: 0,
              replicas: [1, 2, 3],
              isr: [1, 2, 3],
              offlineReplicas: [],
            })),
          },
        ];
  const brokers = [1, 2, 3].map((nodeId) => ({ nodeId, rack: null, endpoints: [] }));
  return new FakeMetadataStore(buildImage('cluster', 1, brokers, topics));
}

class LocalCoordinator {
  readonly asked: TopicPartition[][] = [];
  readonly added: { partitions: TopicPartition[]; clientTransactionVersion: number }[] = [];
  verifyPartitions(_id: string, _pid: bigint, _epoch: number, partitions: readonly TopicPartition[]) {
    this.asked.push([...partitions]);
    return partitions.map((p) => ({ ...p, errorCode: ErrorCode.NONE }));
  }
  addPartitions(_id: string, _pid: bigint, _epoch: number, partitions: readonly TopicPartition[], clientTransactionVersion = 0): number {
    this.added.push({ partitions: [...partitions], clientTransactionVersion });
    return ErrorCode.NONE;
  }
  async replicated(_id: string): Promise<number> {
    return ErrorCode.NONE;
  }
}

class FakeClient implements InterBrokerClient {
  readonly sent: { nodeId: number; apiKey: number; version: number; body: AddPartitionsToTxnRequest }[] = [];
  answer: (body: AddPartitionsToTxnRequest) => AddPartitionsToTxnResponse = () => {
    throw new Error('no answer set');
  };
  async request<Res>(nodeId: number, decl: ApiDecl, maxVersion: number, body: unknown) {
    this.sent.push({ nodeId, apiKey: decl.apiKey, version: maxVersion, body: body as AddPartitionsToTxnRequest });
    return { version: maxVersion, response: this.answer(body as AddPartitionsToTxnRequest) as Res };
  }
}

const quiet = { warn: () => {} };

describe('TransactionVerifier', () => {
  it('asks its own coordinator when it leads the id\'s partition of __transaction_state', async () => {
    const local = new LocalCoordinator();
    const client = new FakeClient();
    const v = new TransactionVerifier(1, store(1), local, client, quiet);
    expect(await v.verify(ID, 7n, 0, [T0])).toEqual([{ ...T0, errorCode: ErrorCode.NONE }]);
    expect(local.asked).toEqual([[T0]]);
    expect(client.sent).toEqual([]);
  });

  it('sends AddPartitionsToTxn v4 with verify_only to the coordinator on another broker and hands on its answer per partition', async () => {
    const client = new FakeClient();
    client.answer = (body) => ({
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      resultsByTransaction: body.transactions.map((t) => ({
        transactionalId: t.transactionalId,
        topicResults: t.topics.map((topic) => ({
          name: topic.name,
          resultsByPartition: topic.partitions.map((partitionIndex) => ({ partitionIndex, partitionErrorCode: topic.name === 'u' ? ErrorCode.TRANSACTION_ABORTABLE : ErrorCode.NONE })),
        })),
      })),
      resultsByTopicV3AndBelow: [],
    });
    const local = new LocalCoordinator();
    const v = new TransactionVerifier(1, store(3), local, client, quiet);
    expect(await v.verify(ID, 7n, 2, [T0, T1, U0])).toEqual([
      { ...T0, errorCode: ErrorCode.NONE },
      { ...T1, errorCode: ErrorCode.NONE },
      { ...U0, errorCode: ErrorCode.TRANSACTION_ABORTABLE },
    ]);
    expect(local.asked).toEqual([]);
    expect(client.sent).toHaveLength(1);
    expect(client.sent[0]).toMatchObject({ nodeId: 3, apiKey: 24, version: 4 });
    expect(client.sent[0]!.body.transactions).toEqual([
      {
        transactionalId: ID,
        producerId: 7n,
        producerEpoch: 2,
        verifyOnly: true,
        topics: [
          { name: 't', partitions: [0, 1] },
          { name: 'u', partitions: [0] },
        ],
      },
    ]);
  });

  it('for a transactions v2 producer has the coordinator add the partitions: its own, marked version 2, or with AddPartitionsToTxn v5 without verify_only', async () => {
    const local = new LocalCoordinator();
    const client = new FakeClient();
    expect(await new TransactionVerifier(1, store(1), local, client, quiet).verify(ID, 7n, 3, [T0, T1], true)).toEqual([
      { ...T0, errorCode: ErrorCode.NONE },
      { ...T1, errorCode: ErrorCode.NONE },
    ]);
    expect([local.added, local.asked]).toEqual([[{ partitions: [T0, T1], clientTransactionVersion: 2 }], []]);
    client.answer = (body) => ({
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      resultsByTransaction: body.transactions.map((t) => ({
        transactionalId: t.transactionalId,
        topicResults: t.topics.map((topic) => ({ name: topic.name, resultsByPartition: topic.partitions.map((partitionIndex) => ({ partitionIndex, partitionErrorCode: ErrorCode.CONCURRENT_TRANSACTIONS })) })),
      })),
      resultsByTopicV3AndBelow: [],
    });
    const remote = await new TransactionVerifier(1, store(3), new LocalCoordinator(), client, quiet).verify(ID, 7n, 3, [T0], true);
    expect(remote).toEqual([{ ...T0, errorCode: ErrorCode.CONCURRENT_TRANSACTIONS }]);
    expect(client.sent[0]).toMatchObject({ nodeId: 3, apiKey: 24, version: 5 });
    expect(client.sent[0]!.body.transactions[0]).toMatchObject({ verifyOnly: false, producerEpoch: 3 });
  });

  it('answers the coordinator\'s absence as a coordinator error, which the writers retry', async () => {
    const client = new FakeClient();
    // No __transaction_state yet, no leader for the id's partition, or an unregistered one.
    for (const leader of [null, -1, 9]) {
      expect(await new TransactionVerifier(1, store(leader), new LocalCoordinator(), client, quiet).verify(ID, 7n, 0, [T0])).toEqual([{ ...T0, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }]);
    }
    expect(client.sent).toEqual([]);
    const v = new TransactionVerifier(1, store(2), new LocalCoordinator(), client, quiet);
    client.answer = () => {
      throw new BrokerRequestError('no answer within 30000 ms', ErrorCode.REQUEST_TIMED_OUT);
    };
    expect(await v.verify(ID, 7n, 0, [T0])).toEqual([{ ...T0, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }]);
    client.answer = () => {
      throw new BrokerRequestError('broker 2 is not registered', ErrorCode.NOT_LEADER_OR_FOLLOWER);
    };
    expect(await v.verify(ID, 7n, 0, [T0])).toEqual([{ ...T0, errorCode: ErrorCode.NOT_COORDINATOR }]);
    client.answer = () => ({ throttleTimeMs: 0, errorCode: ErrorCode.NONE, resultsByTransaction: [], resultsByTopicV3AndBelow: [] });
    expect(await v.verify(ID, 7n, 0, [T0])).toEqual([{ ...T0, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }]);
  });

  it('keeps a producer\'s writes in order behind one that waits on a verification', async () => {
    const v = new TransactionVerifier(1, store(1), new LocalCoordinator(), null, quiet);
    const order: string[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => (release = r)).then(() => {
      order.push('first');
    });
    v.track(7n, first);
    const before = v.pending(7n);
    expect(before).toBeDefined();
    expect(v.pending(8n)).toBeUndefined();
    const second = (async () => {
      await before;
      order.push('second');
    })();
    v.track(7n, second);
    release();
    await second;
    expect(order).toEqual(['first', 'second']);
    // Once the last tracked write is done, a new one runs at once.
    await new Promise((r) => setTimeout(r, 0));
    expect(v.pending(7n)).toBeUndefined();
  });

  it('translates the coordinator\'s answer for the writer, as Kafka does', () => {
    expect(verificationError(ErrorCode.PRODUCER_FENCED, true)).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect(verificationError(ErrorCode.TRANSACTION_ABORTABLE, true)).toBe(ErrorCode.TRANSACTION_ABORTABLE);
    expect(verificationError(ErrorCode.TRANSACTION_ABORTABLE, false)).toBe(ErrorCode.INVALID_TXN_STATE);
    expect(verificationError(ErrorCode.CONCURRENT_TRANSACTIONS, false)).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
  });
});

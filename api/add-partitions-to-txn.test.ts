import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import type { AddPartitionsToTxnRequest, AddPartitionsToTxnTransaction } from '../wire/messages/add-partitions-to-txn-request.js';
import { addPartitionsToTxn } from './add-partitions-to-txn.js';
import { initProducerId } from './init-producer-id.js';
import { callAt, txnServices, type TxnServices } from './test-services.js';

const open: TxnServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function producer(s: TxnServices, transactionalId = 'tx'): Promise<{ producerId: bigint; producerEpoch: number }> {
  const res = await callAt(initProducerId, 4, { transactionalId, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1, enable2Pc: false, keepPreparedTxn: false }, s);
  return { producerId: res.producerId, producerEpoch: res.producerEpoch };
}

/** A v0-v3 request for one transaction. */
function single(producerId: bigint, producerEpoch: number, topics: { name: string; partitions: number[] }[], transactionalId = 'tx'): AddPartitionsToTxnRequest {
  return { transactions: [], v3AndBelowTransactionalId: transactionalId, v3AndBelowProducerId: producerId, v3AndBelowProducerEpoch: producerEpoch, v3AndBelowTopics: topics };
}

function batched(transactions: AddPartitionsToTxnTransaction[]): AddPartitionsToTxnRequest {
  return { transactions, v3AndBelowTransactionalId: '', v3AndBelowProducerId: 0n, v3AndBelowProducerEpoch: 0, v3AndBelowTopics: [] };
}

describe('AddPartitionsToTxn', () => {
  it('adds partitions to the transaction at v0-v3', async () => {
    const s = await txnServices();
    open.push(s);
    const { producerId } = await producer(s);
    for (let v = 0; v <= 3; v++) {
      const res = await callAt(addPartitionsToTxn, v, single(producerId, 0, [{ name: 't', partitions: [v % 3] }]), s);
      expect(res.resultsByTopicV3AndBelow).toEqual([{ name: 't', resultsByPartition: [{ partitionIndex: v % 3, partitionErrorCode: 0 }] }]);
    }
    expect(s.transactions.describeTransaction('tx')).toMatchObject({ transactionState: 'Ongoing', topics: [{ topic: 't', partitions: [0, 1, 2] }] });
  });

  it('adds nothing when a partition does not exist', async () => {
    const s = await txnServices();
    open.push(s);
    const { producerId } = await producer(s);
    const res = await callAt(addPartitionsToTxn, 3, single(producerId, 0, [{ name: 't', partitions: [0, 7] }, { name: 'nope', partitions: [0] }]), s);
    expect(res.resultsByTopicV3AndBelow).toEqual([
      {
        name: 't',
        resultsByPartition: [
          { partitionIndex: 0, partitionErrorCode: ErrorCode.OPERATION_NOT_ATTEMPTED },
          { partitionIndex: 7, partitionErrorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION },
        ],
      },
      { name: 'nope', resultsByPartition: [{ partitionIndex: 0, partitionErrorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }] },
    ]);
    expect(s.transactions.describeTransaction('tx').transactionState).toBe('Empty');
  });

  it('answers a stale epoch INVALID_PRODUCER_EPOCH before v2 and PRODUCER_FENCED from v2; an unknown id INVALID_PRODUCER_ID_MAPPING', async () => {
    const s = await txnServices();
    open.push(s);
    const { producerId } = await producer(s);
    await producer(s);
    const code = async (v: number, req: AddPartitionsToTxnRequest) => (await callAt(addPartitionsToTxn, v, req, s)).resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode;
    expect(await code(1, single(producerId, 0, [{ name: 't', partitions: [0] }]))).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect(await code(2, single(producerId, 0, [{ name: 't', partitions: [0] }]))).toBe(ErrorCode.PRODUCER_FENCED);
    expect(await code(3, single(producerId, 0, [{ name: 't', partitions: [0] }], 'other'))).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
  });

  it('serves the batched broker form (v4+), with verify_only', async () => {
    const s = await txnServices();
    open.push(s);
    const a = await producer(s, 'a');
    const b = await producer(s, 'b');
    await callAt(addPartitionsToTxn, 3, single(a.producerId, 0, [{ name: 't', partitions: [0] }], 'a'), s);
    const res = await callAt(
      addPartitionsToTxn,
      5,
      batched([
        { transactionalId: 'a', producerId: a.producerId, producerEpoch: 0, verifyOnly: true, topics: [{ name: 't', partitions: [0, 1] }] },
        { transactionalId: 'b', producerId: b.producerId, producerEpoch: 0, verifyOnly: false, topics: [{ name: 't', partitions: [2] }] },
      ]),
      s,
    );
    expect(res.errorCode).toBe(0);
    expect(res.resultsByTransaction).toEqual([
      {
        transactionalId: 'a',
        topicResults: [
          {
            name: 't',
            resultsByPartition: [
              { partitionIndex: 0, partitionErrorCode: ErrorCode.NONE },
              { partitionIndex: 1, partitionErrorCode: ErrorCode.TRANSACTION_ABORTABLE },
            ],
          },
        ],
      },
      { transactionalId: 'b', topicResults: [{ name: 't', resultsByPartition: [{ partitionIndex: 2, partitionErrorCode: ErrorCode.NONE }] }] },
    ]);
    // Verification added nothing.
    expect(s.transactions.describeTransaction('a').topics).toEqual([{ topic: 't', partitions: [0] }]);
    expect(s.transactions.describeTransaction('b').topics).toEqual([{ topic: 't', partitions: [2] }]);
  });
});

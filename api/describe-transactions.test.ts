import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { addPartitionsToTxn } from './add-partitions-to-txn.js';
import { describeTransactions } from './describe-transactions.js';
import { initProducerId } from './init-producer-id.js';
import { callAt, txnServices, type TxnServices } from './test-services.js';

const open: TxnServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('DescribeTransactions', () => {
  it('describes each id: its state by Kafka name, producer, timeout, start and partitions', async () => {
    const s = await txnServices();
    open.push(s);
    const { producerId } = await callAt(initProducerId, 4, { transactionalId: 'tx', transactionTimeoutMs: 45_000, producerId: -1n, producerEpoch: -1, enable2Pc: false, keepPreparedTxn: false }, s);
    await callAt(addPartitionsToTxn, 3, { transactions: [], v3AndBelowTransactionalId: 'tx', v3AndBelowProducerId: producerId, v3AndBelowProducerEpoch: 0, v3AndBelowTopics: [{ name: 't', partitions: [2, 0] }] }, s);
    const res = await callAt(describeTransactions, 0, { transactionalIds: ['tx', 'nobody', ''] }, s);
    expect(res.transactionStates).toEqual([
      {
        errorCode: 0,
        transactionalId: 'tx',
        transactionState: 'Ongoing',
        transactionTimeoutMs: 45_000,
        transactionStartTimeMs: BigInt(s.txnTimer.now()),
        producerId,
        producerEpoch: 0,
        topics: [{ topic: 't', partitions: [0, 2] }],
      },
      { errorCode: ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, transactionalId: 'nobody', transactionState: '', transactionTimeoutMs: 0, transactionStartTimeMs: 0n, producerId: 0n, producerEpoch: 0, topics: [] },
      { errorCode: ErrorCode.INVALID_REQUEST, transactionalId: '', transactionState: '', transactionTimeoutMs: 0, transactionStartTimeMs: 0n, producerId: 0n, producerEpoch: 0, topics: [] },
    ]);
  });
});

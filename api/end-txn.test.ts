import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { CONTROL } from '../wire/record-batch.js';
import { addPartitionsToTxn } from './add-partitions-to-txn.js';
import { endTxn } from './end-txn.js';
import { initProducerId } from './init-producer-id.js';
import { callAt, txnServices, type TxnServices } from './test-services.js';

const open: TxnServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function ongoing(s: TxnServices): Promise<bigint> {
  const { producerId } = await callAt(initProducerId, 4, { transactionalId: 'tx', transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1, enable2Pc: false, keepPreparedTxn: false }, s);
  await callAt(addPartitionsToTxn, 3, { transactions: [], v3AndBelowTransactionalId: 'tx', v3AndBelowProducerId: producerId, v3AndBelowProducerEpoch: 0, v3AndBelowTopics: [{ name: 't', partitions: [0] }] }, s);
  return producerId;
}

describe('EndTxn', () => {
  it('commits: a marker lands in each partition and a retry answers NONE', async () => {
    const s = await txnServices();
    open.push(s);
    const producerId = await ongoing(s);
    const end = (v: number, committed: boolean) => callAt(endTxn, v, { transactionalId: 'tx', producerId, producerEpoch: 0, committed }, s);
    expect(await end(4, true)).toEqual({ throttleTimeMs: 0, errorCode: 0, producerId: -1n, producerEpoch: -1 });
    await s.transactions.markersSettled();
    expect(s.transactions.describeTransaction('tx')).toMatchObject({ transactionState: 'CompleteCommit', topics: [] });
    const log = s.replicas.logFor('t', 0)!;
    expect(log.logEndOffset).toBe(1n);
    const marker = log.readBuffer(0n, 1 << 20, { maxOffset: 1n })!;
    expect(marker.readInt16BE(21) & CONTROL).toBe(CONTROL);
    expect(marker.readBigInt64BE(43)).toBe(producerId);
    expect((await end(0, true)).errorCode).toBe(ErrorCode.NONE);
    expect((await end(3, false)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE);
  });

  it('aborts at every version, and refuses to end without a transaction', async () => {
    const s = await txnServices();
    open.push(s);
    const producerId = await ongoing(s);
    for (let v = 0; v <= 4; v++) {
      expect((await callAt(endTxn, v, { transactionalId: 'tx', producerId, producerEpoch: 0, committed: false }, s)).errorCode).toBe(ErrorCode.NONE);
      await s.transactions.markersSettled();
    }
    expect(s.transactions.describeTransaction('tx').transactionState).toBe('CompleteAbort');
    expect((await callAt(endTxn, 4, { transactionalId: 'other', producerId, producerEpoch: 0, committed: false }, s)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
  });

  it('answers a stale epoch INVALID_PRODUCER_EPOCH before v2 and PRODUCER_FENCED from v2', async () => {
    const s = await txnServices();
    open.push(s);
    const producerId = await ongoing(s);
    const req = { transactionalId: 'tx', producerId, producerEpoch: 1, committed: true };
    expect((await callAt(endTxn, 1, req, s)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect((await callAt(endTxn, 2, req, s)).errorCode).toBe(ErrorCode.PRODUCER_FENCED);
    expect(s.transactions.describeTransaction('tx').transactionState).toBe('Ongoing');
  });
});

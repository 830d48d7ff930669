import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { addOffsetsToTxn } from './add-offsets-to-txn.js';
import { initProducerId } from './init-producer-id.js';
import { callAt, txnServices, type TxnServices } from './test-services.js';

const open: TxnServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('AddOffsetsToTxn', () => {
  it("adds the group's partition of __consumer_offsets to the transaction at every version", async () => {
    const s = await txnServices();
    open.push(s);
    const { producerId } = await callAt(initProducerId, 4, { transactionalId: 'tx', transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1, enable2Pc: false, keepPreparedTxn: false }, s);
    for (let v = 0; v <= 4; v++) {
      expect(await callAt(addOffsetsToTxn, v, { transactionalId: 'tx', producerId, producerEpoch: 0, groupId: 'my-group' }, s)).toEqual({ throttleTimeMs: 0, errorCode: 0 });
    }
    // offsets.topic.num.partitions is 50 while the topic does not exist: 'my-group' is partition 12.
    expect(s.transactions.describeTransaction('tx')).toMatchObject({ transactionState: 'Ongoing', topics: [{ topic: '__consumer_offsets', partitions: [12] }] });
  });

  it('answers a stale epoch INVALID_PRODUCER_EPOCH before v2 and PRODUCER_FENCED from v2', async () => {
    const s = await txnServices();
    open.push(s);
    const init = () => callAt(initProducerId, 4, { transactionalId: 'tx', transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1, enable2Pc: false, keepPreparedTxn: false }, s);
    const { producerId } = await init();
    await init();
    const req = { transactionalId: 'tx', producerId, producerEpoch: 0, groupId: 'g' };
    expect((await callAt(addOffsetsToTxn, 1, req, s)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect((await callAt(addOffsetsToTxn, 2, req, s)).errorCode).toBe(ErrorCode.PRODUCER_FENCED);
    expect((await callAt(addOffsetsToTxn, 3, { ...req, producerId: producerId + 1n }, s)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
  });
});

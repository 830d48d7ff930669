import { afterEach, describe, expect, it } from 'vitest';
import { addPartitionsToTxn } from './add-partitions-to-txn.js';
import { initProducerId } from './init-producer-id.js';
import { listTransactions } from './list-transactions.js';
import { callAt, txnServices, type TxnServices } from './test-services.js';

const open: TxnServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

describe('ListTransactions', () => {
  it('lists the ids coordinated here, by state, producer id and (v1) duration', async () => {
    const s = await txnServices();
    open.push(s);
    const init = (transactionalId: string) => callAt(initProducerId, 4, { transactionalId, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1, enable2Pc: false, keepPreparedTxn: false }, s);
    const a = await init('a');
    const b = await init('b');
    await callAt(addPartitionsToTxn, 3, { transactions: [], v3AndBelowTransactionalId: 'a', v3AndBelowProducerId: a.producerId, v3AndBelowProducerEpoch: 0, v3AndBelowTopics: [{ name: 't', partitions: [0] }] }, s);
    s.txnTimer.advance(2000);
    const list = async (v: number, stateFilters: string[] = [], producerIdFilters: bigint[] = [], durationFilter = -1n) => {
      const res = await callAt(listTransactions, v, { stateFilters, producerIdFilters, durationFilter, transactionalIdPattern: null }, s);
      return { ...res, transactionStates: [...res.transactionStates].sort((x, y) => x.transactionalId.localeCompare(y.transactionalId)) };
    };
    expect(await list(0)).toEqual({
      throttleTimeMs: 0,
      errorCode: 0,
      unknownStateFilters: [],
      transactionStates: [
        { transactionalId: 'a', producerId: a.producerId, transactionState: 'Ongoing' },
        { transactionalId: 'b', producerId: b.producerId, transactionState: 'Empty' },
      ],
    });
    expect((await list(0, ['Empty', 'Bogus'])).transactionStates.map((t) => t.transactionalId)).toEqual(['b']);
    expect((await list(0, ['Empty', 'Bogus'])).unknownStateFilters).toEqual(['Bogus']);
    expect((await list(1, [], [a.producerId])).transactionStates.map((t) => t.transactionalId)).toEqual(['a']);
    expect((await list(1, ['Ongoing'], [], 1999n)).transactionStates.map((t) => t.transactionalId)).toEqual(['a']);
    expect((await list(1, ['Ongoing'], [], 2000n)).transactionStates).toEqual([]);
    // v0 cannot carry the duration filter: it lists as if there were none.
    expect((await list(0, ['Ongoing'], [], 2000n)).transactionStates.map((t) => t.transactionalId)).toEqual(['a']);
  });
});

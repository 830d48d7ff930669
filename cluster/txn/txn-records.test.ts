import { describe, expect, it } from 'vitest';
import { encode } from '../../wire/codec.js';
import { TransactionLogValue } from '../../wire/messages/transaction-log-value.js';
import { buildBatch } from '../../wire/record-batch.js';
import { deserializeTxnRecord, metadataFromValue, serializeTxnRecord, txnLogValue, txnRecordsBatch, txnRecordsIn } from './txn-records.js';
import type { TxnTransit } from './txn-state.js';

const ongoing: TxnTransit = {
  producerId: 7n,
  previousProducerId: 7n,
  nextProducerId: -1n,
  clientTransactionVersion: 0,
  producerEpoch: 3,
  lastProducerEpoch: -1,
  txnTimeoutMs: 60000,
  state: 'Ongoing',
  partitions: new Map([['t', new Set([1, 0])]]),
  txnStartTimestamp: 500,
  txnLastUpdateTimestamp: 1000,
};

describe('__transaction_state records', () => {
  it("writes Kafka 4.4's layout: key version 0, value version 1 (flexible, the previous producer id tagged)", () => {
    const { key, value } = serializeTxnRecord({ transactionalId: 'tx', value: txnLogValue(ongoing) });
    expect(key.toString('hex')).toBe('0000' + '0002' + '7478');
    // Laid out by hand from TransactionLogValue v1: compact arrays and strings, tag 0 (previous producer id 7),
    // the unset next producer id, next epoch and client transaction version left out.
    expect(value!.toString('hex')).toBe(
      '0001' + '0000000000000007' + '0003' + '0000ea60' + '01' +
        '02' + '0274' + '03' + '00000000' + '00000001' + '00' +
        '00000000000003e8' + '00000000000001f4' +
        '01' + '00' + '08' + '0000000000000007',
    );
  });

  it('writes no partitions (null) for Empty and reads a tombstone back', () => {
    const empty = txnLogValue({ ...ongoing, state: 'Empty', partitions: new Map(), txnStartTimestamp: -1 });
    expect(empty.transactionPartitions).toBeNull();
    const { key, value } = serializeTxnRecord({ transactionalId: 'tx', value: empty });
    expect(deserializeTxnRecord(key, value)).toEqual({ transactionalId: 'tx', value: empty });
    expect(deserializeTxnRecord(key, null)).toEqual({ transactionalId: 'tx', value: null });
  });

  it('reads value version 1, as Kafka writes it under transaction version 2, with its tagged fields', () => {
    const v1 = { ...txnLogValue(ongoing), previousProducerId: 6n, clientTransactionVersion: 2 };
    const value = Buffer.concat([Buffer.from([0, 1]), encode(TransactionLogValue, 1, v1)]);
    const { key } = serializeTxnRecord({ transactionalId: 'tx', value: null });
    const back = deserializeTxnRecord(key, value);
    expect(back).toEqual({ transactionalId: 'tx', value: v1 });
    const txn = metadataFromValue('tx', v1);
    expect(txn).toMatchObject({ state: 'Ongoing', producerId: 7n, previousProducerId: 6n, producerEpoch: 3, lastProducerEpoch: -1, txnStartTimestamp: 500 });
    expect(txn.hasPartition('t', 0) && txn.hasPartition('t', 1)).toBe(true);
  });

  it('skips what it cannot read instead of failing', () => {
    expect(deserializeTxnRecord(null, null)).toHaveProperty('skipped');
    expect(deserializeTxnRecord(Buffer.from('00010002', 'hex'), null)).toHaveProperty('skipped');
    const { key, value } = serializeTxnRecord({ transactionalId: 'tx', value: txnLogValue(ongoing) });
    const future = Buffer.from(value!);
    future.writeInt16BE(9, 0);
    expect(deserializeTxnRecord(key, future)).toHaveProperty('skipped');
    const badState = Buffer.from(value!);
    badState[2 + 8 + 2 + 4] = 12;
    expect(deserializeTxnRecord(key, badState)).toHaveProperty('skipped');
  });

  it('reads back batches in offset order, passing over control batches', () => {
    const a = txnRecordsBatch([{ transactionalId: 'a', value: txnLogValue(ongoing) }, { transactionalId: 'b', value: null }], 1000);
    const marker = buildBatch({ baseOffset: 2n, control: true, records: [{ key: Buffer.from([0, 0, 0, 1]), value: Buffer.alloc(6) }] });
    const c = txnRecordsBatch([{ transactionalId: 'c', value: null }], 1000);
    c.writeBigInt64BE(3n, 0);
    const seen = [...txnRecordsIn(Buffer.concat([a, marker, c]), () => {})].map(({ offset, record }) => [offset, 'skipped' in record ? 'skipped' : record.transactionalId]);
    expect(seen).toEqual([
      [0n, 'a'],
      [1n, 'b'],
      [3n, 'c'],
    ]);
  });
});

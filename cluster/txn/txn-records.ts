/**
 * The records of __transaction_state in Kafka's layout
 * (kafka-protocol/transaction-coordinator/*.json), so that Kafka's tools
 * reading that topic understand gregor's records and gregor reads Kafka's.
 *
 * A record's key is the int16 version 0 followed by TransactionLogKey (the
 * transactional id). Its value is an int16 version and TransactionLogValue
 * at that version, or null: a tombstone, written when a transactional id
 * expires. Kafka 4.4 writes value version 1 (flexible, with the tagged
 * previous and next producer ids and the client's transaction version) once
 * transaction.version is at least 1, as gregor's is (2); both versions are
 * read. next_producer_epoch (tag 3) is never written, as by Kafka 4.4.
 */
import { decode, encode } from '../../wire/codec.js';
import { ATTRIBUTES, CONTROL, MAGIC, MAGIC_V2, buildBatch, decodeRecords, wholeBatches } from '../../wire/record-batch.js';
import { TransactionLogKey } from '../../wire/messages/transaction-log-key.js';
import { TransactionLogValue } from '../../wire/messages/transaction-log-value.js';
import type { TransactionLogKey as TransactionLogKeyT } from '../../wire/messages/transaction-log-key.js';
import type { TransactionLogValue as TransactionLogValueT } from '../../wire/messages/transaction-log-value.js';
import { TRANSACTION_STATE_IDS, TransactionMetadata, transactionStateOfId, type PartitionSet, type TxnTransit } from './txn-state.js';

export type TransactionLogValueData = TransactionLogValueT;

const KEY_VERSION = 0;
/** What Kafka 4.4 writes when transaction.version is 1 or more. */
const VALUE_VERSION = 1;

/** One record of __transaction_state: a transactional id's state, or its tombstone (value null). */
export interface TxnLogRecord {
  readonly transactionalId: string;
  readonly value: TransactionLogValueT | null;
}

export interface SkippedTxnRecord {
  readonly skipped: string;
}

function versioned(version: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(2 + body.length);
  out.writeInt16BE(version, 0);
  body.copy(out, 2);
  return out;
}

/**
 * The value a transit is written as. The partitions are null in Empty, as
 * Kafka writes them; otherwise grouped by topic.
 */
export function txnLogValue(t: TxnTransit): TransactionLogValueT {
  return {
    producerId: t.producerId,
    previousProducerId: t.previousProducerId,
    nextProducerId: t.nextProducerId,
    producerEpoch: t.producerEpoch,
    nextProducerEpoch: -1,
    transactionTimeoutMs: t.txnTimeoutMs,
    transactionStatus: TRANSACTION_STATE_IDS[t.state],
    transactionPartitions: t.state === 'Empty' ? null : partitionsSchema(t.partitions),
    transactionLastUpdateTimestampMs: BigInt(t.txnLastUpdateTimestamp),
    transactionStartTimestampMs: BigInt(t.txnStartTimestamp),
    clientTransactionVersion: t.clientTransactionVersion,
  };
}

function partitionsSchema(set: PartitionSet): { topic: string; partitionIds: number[] }[] {
  return [...set.keys()].sort().map((topic) => ({ topic, partitionIds: [...set.get(topic)!].sort((a, b) => a - b) }));
}

/** The key and value bytes of a record as they go into __transaction_state. */
export function serializeTxnRecord(r: TxnLogRecord): { key: Buffer; value: Buffer | null } {
  const key = versioned(KEY_VERSION, encode(TransactionLogKey, KEY_VERSION, { transactionalId: r.transactionalId } satisfies TransactionLogKeyT));
  if (r.value === null) return { key, value: null };
  return { key, value: versioned(VALUE_VERSION, encode(TransactionLogValue, VALUE_VERSION, r.value)) };
}

/**
 * Reads one record of __transaction_state back. Never throws: what it
 * cannot read comes back as skipped, with the reason.
 *
 * Example: the key 0000 0002 7478 (version 0, transactional id "tx") with a
 * null value -> { transactionalId: 'tx', value: null }, a tombstone.
 */
export function deserializeTxnRecord(key: Buffer | null, value: Buffer | null): TxnLogRecord | SkippedTxnRecord {
  if (key === null || key.length < 2) return { skipped: 'record without a versioned key' };
  const keyVersion = key.readInt16BE(0);
  if (keyVersion !== KEY_VERSION) return { skipped: `key version ${keyVersion} is not a transaction log key` };
  const k = decode<TransactionLogKeyT>(TransactionLogKey, KEY_VERSION, key.subarray(2));
  if (!k.ok) return { skipped: k.error };
  if (value === null) return { transactionalId: k.value.transactionalId, value: null };
  if (value.length < 2) return { skipped: 'value shorter than its version' };
  const version = value.readInt16BE(0);
  if (version < TransactionLogValue.versions[0] || version > TransactionLogValue.versions[1]) return { skipped: `TransactionLogValue version ${version} is unknown` };
  const v = decode<TransactionLogValueT>(TransactionLogValue, version, value.subarray(2));
  if (!v.ok) return { skipped: v.error };
  if (transactionStateOfId(v.value.transactionStatus) === undefined) return { skipped: `transaction status ${v.value.transactionStatus} is unknown` };
  return { transactionalId: k.value.transactionalId, value: v.value };
}

/**
 * A transactional id's metadata as a value describes it. Kafka keeps no
 * last epoch in the log, so a loaded id has none (-1). A prepared
 * transactions v2 end at the last epoch keeps its next producer id, which
 * its completion moves to.
 */
export function metadataFromValue(transactionalId: string, v: TransactionLogValueT): TransactionMetadata {
  const state = transactionStateOfId(v.transactionStatus) ?? 'Empty';
  const partitions = new Map<string, Set<number>>();
  if (state !== 'Empty') {
    for (const p of v.transactionPartitions ?? []) {
      const set = partitions.get(p.topic) ?? new Set<number>();
      for (const id of p.partitionIds) set.add(id);
      partitions.set(p.topic, set);
    }
  }
  const meta = new TransactionMetadata(
    transactionalId,
    v.producerId,
    v.previousProducerId,
    v.producerEpoch,
    -1,
    v.transactionTimeoutMs,
    state,
    partitions,
    Number(v.transactionStartTimestampMs),
    Number(v.transactionLastUpdateTimestampMs),
  );
  meta.clientTransactionVersion = v.clientTransactionVersion;
  if (state === 'PrepareCommit' || state === 'PrepareAbort') meta.nextProducerId = v.nextProducerId;
  return meta;
}

/** One v2 batch holding `records`, uncompressed, as the coordinator appends them. */
export function txnRecordsBatch(records: readonly TxnLogRecord[], now: number): Buffer {
  return buildBatch({
    baseTimestamp: BigInt(now),
    records: records.map((r) => ({ ...serializeTxnRecord(r), timestamp: BigInt(now) })),
  });
}

/**
 * Every record in `bytes` (whole stored batches, as a log read returns
 * them), in offset order, with its offset. Control batches and a truncated
 * last batch are passed over; a batch that does not decode is reported
 * through `onBadBatch` and skipped.
 */
export function* txnRecordsIn(
  bytes: Buffer,
  onBadBatch: (baseOffset: bigint, error: string) => void,
): Generator<{ offset: bigint; record: TxnLogRecord | SkippedTxnRecord }> {
  for (const batch of wholeBatches(bytes)) {
    const baseOffset = batch.readBigInt64BE(0);
    if (batch.length <= MAGIC || batch[MAGIC] !== MAGIC_V2) {
      onBadBatch(baseOffset, `magic ${batch[MAGIC]} is not 2`);
      continue;
    }
    if ((batch.readInt16BE(ATTRIBUTES) & CONTROL) !== 0) continue;
    const decoded = decodeRecords(batch);
    if (!decoded.ok) {
      onBadBatch(baseOffset, decoded.error);
      continue;
    }
    for (const r of decoded.records) {
      yield { offset: baseOffset + BigInt(r.offsetDelta), record: deserializeTxnRecord(r.key, r.value) };
    }
  }
}

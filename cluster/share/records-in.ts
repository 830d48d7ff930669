/** The keys and values of the data records in whole stored batches (control batches passed over). */
import { ATTRIBUTES, CONTROL, decodeRecords, wholeBatches } from '../../wire/record-batch.js';

export function* batchesOfBytes(bytes: Buffer, onBadBatch: (baseOffset: bigint, error: string) => void): Generator<{ key: Buffer | null; value: Buffer | null }> {
  for (const batch of wholeBatches(bytes)) {
    const baseOffset = batch.readBigInt64BE(0);
    const decoded = decodeRecords(batch);
    if (!decoded.ok) {
      onBadBatch(baseOffset, decoded.error);
      continue;
    }
    if ((batch.readInt16BE(ATTRIBUTES) & CONTROL) !== 0) continue;
    for (const r of decoded.records) yield { key: r.key, value: r.value };
  }
}

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildEndTxnMarkerBatch, readEndTxnMarker } from '../wire/record-batch.js';
import { nodeFs } from './fs.js';
import { ABORTED_TXN_SIZE, TransactionIndex, decodeAbortedTxns, encodeAbortedTxns } from './txn-index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function indexPath(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-txnidx-'));
  dirs.push(d);
  return join(d, '00000000000000000000.txnindex');
}

const t = (producerId: bigint, firstOffset: bigint, lastOffset: bigint, lastStableOffset: bigint) => ({ producerId, firstOffset, lastOffset, lastStableOffset });

describe('TransactionIndex', () => {
  it("writes Kafka's 34-byte entries and reads them back after reopening", () => {
    const path = indexPath();
    const idx = new TransactionIndex(nodeFs, path);
    idx.append(t(7n, 10n, 14n, 15n));
    idx.append(t(8n, 12n, 20n, 21n));
    idx.flush();
    idx.close();
    const bytes = readFileSync(path);
    expect(bytes.length).toBe(2 * ABORTED_TXN_SIZE);
    expect([bytes.readInt16BE(0), bytes.readBigInt64BE(2), bytes.readBigInt64BE(10), bytes.readBigInt64BE(18), bytes.readBigInt64BE(26)]).toEqual([0, 7n, 10n, 14n, 15n]);
    expect(new TransactionIndex(nodeFs, path).entries).toEqual([t(7n, 10n, 14n, 15n), t(8n, 12n, 20n, 21n)]);
  });

  it('collects the overlapping entries and says when later segments cannot add any', () => {
    const idx = new TransactionIndex(nodeFs, indexPath());
    idx.append(t(7n, 10n, 14n, 15n));
    idx.append(t(8n, 12n, 20n, 21n));
    expect(idx.collectAbortedTxns(0n, 11n)).toEqual({ abortedTransactions: [t(7n, 10n, 14n, 15n)], isComplete: true });
    expect(idx.collectAbortedTxns(13n, 21n)).toEqual({ abortedTransactions: [t(7n, 10n, 14n, 15n), t(8n, 12n, 20n, 21n)], isComplete: true });
    expect(idx.collectAbortedTxns(0n, 12n)).toEqual({ abortedTransactions: [t(7n, 10n, 14n, 15n)], isComplete: true });
    expect(idx.collectAbortedTxns(21n, 30n)).toEqual({ abortedTransactions: [], isComplete: false });
    expect(() => idx.append(t(9n, 1n, 20n, 21n))).toThrow(RangeError);
    idx.close();
  });

  it('truncates at a marker offset and resets', () => {
    const path = indexPath();
    const idx = new TransactionIndex(nodeFs, path);
    idx.append(t(7n, 10n, 14n, 15n));
    idx.append(t(8n, 12n, 20n, 21n));
    idx.truncateTo(20n);
    expect(idx.entries).toEqual([t(7n, 10n, 14n, 15n)]);
    expect(readFileSync(path).length).toBe(ABORTED_TXN_SIZE);
    idx.reset();
    expect(idx.entries).toEqual([]);
    idx.close();
  });

  it('reports a torn file as not sane', () => {
    const path = indexPath();
    writeFileSync(path, Buffer.concat([encodeAbortedTxns([t(1n, 2n, 3n, 4n)]), Buffer.alloc(5)]));
    expect(new TransactionIndex(nodeFs, path).sanityProblem()).toMatch(/whole number/);
    expect(decodeAbortedTxns(encodeAbortedTxns([t(1n, 2n, 3n, 4n)]))).toEqual([t(1n, 2n, 3n, 4n)]);
  });
});

describe('end-transaction marker batches', () => {
  it('encode and read back as Kafka lays them out', () => {
    const b = buildEndTxnMarkerBatch({ baseOffset: 5n, producerId: 9n, producerEpoch: 2, coordinatorEpoch: 3, commit: true, timestamp: 1000n });
    expect(b.length).toBe(78);
    expect(readEndTxnMarker(b)).toEqual({ commit: true, coordinatorEpoch: 3 });
    const abort = buildEndTxnMarkerBatch({ baseOffset: 0n, producerId: 9n, producerEpoch: 2, coordinatorEpoch: -1, commit: false, timestamp: 1n });
    expect(readEndTxnMarker(abort)).toEqual({ commit: false, coordinatorEpoch: -1 });
  });
});

import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { buildBatch, readBatchHeader, readEndTxnMarker } from '../wire/record-batch.js';
import { LogCleaner } from './cleaner.js';
import { logConfig } from './log-config.js';
import { CLEAN_SHUTDOWN_FILE, type PartitionLog } from './log.js';
import { logFixtures } from './test-support.js';

const { tempDir, open, cleanup } = logFixtures('gregor-txn-');
afterEach(cleanup);

const config = logConfig({ segmentBytes: 1 << 20 });

/** One batch of `count` records from producer `pid` at `epoch`, sequences from `seq`. */
function batch(pid: bigint, epoch: number, seq: number, count = 1, opts: { transactional?: boolean; timestamp?: bigint; key?: string } = {}): Buffer {
  const timestamp = opts.timestamp ?? BigInt(Date.now());
  return buildBatch({
    records: Array.from({ length: count }, (_, i) => ({ key: opts.key ?? `k${i}`, value: `v${seq + i}`, timestamp })),
    producerId: pid,
    producerEpoch: epoch,
    baseSequence: seq,
    transactional: opts.transactional ?? false,
  });
}

function ok(r: ReturnType<PartitionLog['append']>): { firstOffset: bigint; lastOffset: bigint; duplicate?: boolean; logAppendTime: bigint } {
  if (!r.ok) throw new Error(`append refused: ${r.errorCode} ${r.message}`);
  return r;
}

describe('idempotent producers', () => {
  it('answers a retry of any of the last five batches with its original offsets and writes nothing', () => {
    const log = open(tempDir(), config);
    const first = [0, 2, 4, 6, 8].map((seq) => ok(log.append(batch(7n, 0, seq, 2, { timestamp: 1000n + BigInt(seq) }))));
    const end = log.logEndOffset;
    [0, 2, 4, 6, 8].forEach((seq, i) => {
      const again = ok(log.append(batch(7n, 0, seq, 2, { timestamp: 1000n + BigInt(seq) })));
      expect(again).toMatchObject({ duplicate: true, firstOffset: first[i]!.firstOffset, lastOffset: first[i]!.lastOffset, logAppendTime: 1000n + BigInt(seq) });
    });
    expect(log.logEndOffset).toBe(end);
  });

  it('does not recognise the sixth-oldest batch: its retry is OUT_OF_ORDER_SEQUENCE_NUMBER', () => {
    const log = open(tempDir(), config);
    for (let seq = 0; seq < 6; seq++) ok(log.append(batch(7n, 0, seq)));
    const r = log.append(batch(7n, 0, 0));
    expect(r).toMatchObject({ ok: false, errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, recordErrors: [] });
    expect(log.append(batch(7n, 0, 1))).toMatchObject({ ok: true, duplicate: true, firstOffset: 1n });
    expect(log.logEndOffset).toBe(6n);
  });

  it('refuses a sequence gap, an old epoch, and a new epoch not starting at 0; takes a new epoch at 0', () => {
    const log = open(tempDir(), config);
    ok(log.append(batch(7n, 3, 40, 2))); // a producer with no state may start anywhere
    expect(log.append(batch(7n, 3, 43))).toMatchObject({ ok: false, errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER });
    expect(log.append(batch(7n, 2, 42))).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_PRODUCER_EPOCH });
    expect(log.append(batch(7n, 4, 1))).toMatchObject({ ok: false, errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER });
    expect(log.logEndOffset).toBe(2n);
    expect(ok(log.append(batch(7n, 4, 0))).firstOffset).toBe(2n);
    expect(log.activeProducers()).toEqual([
      expect.objectContaining({ producerId: 7n, producerEpoch: 4, lastSequence: 0, coordinatorEpoch: -1, currentTxnStartOffset: -1n }),
    ]);
  });

  it('wraps sequences at Integer.MAX_VALUE', () => {
    const log = open(tempDir(), config);
    ok(log.append(batch(7n, 0, 2147483646, 2)));
    expect(ok(log.append(batch(7n, 0, 0))).firstOffset).toBe(2n);
  });

  it('costs nothing for batches without a producer id: no snapshot, no producer', () => {
    const dir = tempDir();
    const log = open(dir, config);
    ok(log.append(buildBatch({ records: [{ value: 'a' }] })));
    expect(log.activeProducers()).toEqual([]);
    expect(log.firstUnstableOffset).toBeNull();
  });
});

describe('transactions', () => {
  it('holds the LSO at the first transactional offset until the commit marker passes the high watermark', () => {
    const log = open(tempDir(), config);
    ok(log.append(buildBatch({ records: [{ value: 'plain' }] })));
    ok(log.append(batch(7n, 0, 0, 2, { transactional: true })));
    ok(log.append(buildBatch({ records: [{ value: 'plain' }] })));
    log.updateHighWatermark(log.logEndOffset);
    expect([log.firstUnstableOffset, log.lastStableOffset, log.highWatermark]).toEqual([1n, 1n, 4n]);
    const marker = log.appendControlMarker({ producerId: 7n, producerEpoch: 0, coordinatorEpoch: 1, commit: true }, 0);
    expect(marker).toMatchObject({ ok: true, firstOffset: 4n, lastOffset: 4n });
    expect(log.lastStableOffset).toBe(1n); // the marker is not below the high watermark yet
    log.updateHighWatermark(5n);
    expect([log.firstUnstableOffset, log.lastStableOffset]).toEqual([null, 5n]);
    expect(log.collectAbortedTransactions(0n, 5n)).toEqual([]);
    const stored = log.readBuffer(4n, 1 << 20)!;
    const header = readBatchHeader(stored);
    expect([header.attributes & 0x30, header.producerId, header.baseSequence]).toEqual([0x30, 7n, -1]);
    expect(readEndTxnMarker(stored)).toEqual({ commit: true, coordinatorEpoch: 1 });
  });

  it('indexes an aborted transaction and returns it only to fetches that overlap it', () => {
    const dir = tempDir();
    const log = open(dir, config);
    ok(log.append(buildBatch({ records: [{ value: 'x' }, { value: 'y' }] }))); // 0..1
    ok(log.append(batch(7n, 0, 0, 3, { transactional: true }))); // 2..4
    ok(log.append(buildBatch({ records: [{ value: 'z' }] }))); // 5
    expect(log.appendControlMarker({ producerId: 7n, producerEpoch: 0, coordinatorEpoch: 1, commit: false }, 0)).toMatchObject({ ok: true, firstOffset: 6n });
    log.updateHighWatermark(7n);
    expect(log.collectAbortedTransactions(0n, 3n)).toEqual([{ producerId: 7n, firstOffset: 2n }]);
    expect(log.collectAbortedTransactions(6n, 7n)).toEqual([{ producerId: 7n, firstOffset: 2n }]);
    expect(log.collectAbortedTransactions(0n, 2n)).toEqual([]);
    expect(log.collectAbortedTransactions(7n, 7n)).toEqual([]);
    expect(readdirSync(dir)).toContain('00000000000000000000.txnindex');
    expect(log.lastStableOffset).toBe(7n);
  });

  it('fences an older coordinator epoch and an older producer epoch, and writes a marker with no open transaction', () => {
    const log = open(tempDir(), config);
    ok(log.append(batch(7n, 2, 0, 1, { transactional: true })));
    ok(log.appendControlMarker({ producerId: 7n, producerEpoch: 2, coordinatorEpoch: 5, commit: true }, 0));
    ok(log.append(batch(7n, 2, 1, 1, { transactional: true })));
    const end = log.logEndOffset;
    expect(log.appendControlMarker({ producerId: 7n, producerEpoch: 2, coordinatorEpoch: 4, commit: true }, 0)).toMatchObject({
      ok: false,
      errorCode: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    });
    expect(log.appendControlMarker({ producerId: 7n, producerEpoch: 1, coordinatorEpoch: 6, commit: true }, 0)).toMatchObject({
      ok: false,
      errorCode: ErrorCode.INVALID_PRODUCER_EPOCH,
    });
    expect(log.logEndOffset).toBe(end);
    expect(log.appendControlMarker({ producerId: 9n, producerEpoch: 0, coordinatorEpoch: 0, commit: false }, 0)).toMatchObject({ ok: true, firstOffset: end });
    expect(log.activeProducers().find((p) => p.producerId === 7n)).toMatchObject({ currentTxnStartOffset: 2n, coordinatorEpoch: 5 });
  });

  it('refuses a plain batch from a producer inside its transaction (INVALID_TXN_STATE)', () => {
    const log = open(tempDir(), config);
    ok(log.append(batch(7n, 0, 0, 1, { transactional: true })));
    expect(log.append(batch(7n, 0, 1))).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_TXN_STATE });
  });
});

/** A log with an open transaction of producer 7 at 1, an aborted one of producer 8 at 2..3 (marker 4), idempotent producer 9. */
function withState(log: PartitionLog): void {
  ok(log.append(batch(9n, 0, 0)));
  ok(log.append(batch(7n, 1, 0, 1, { transactional: true })));
  ok(log.append(batch(8n, 0, 0, 2, { transactional: true })));
  ok(log.appendControlMarker({ producerId: 8n, producerEpoch: 0, coordinatorEpoch: 3, commit: false }, 0));
  ok(log.append(batch(9n, 0, 1, 2)));
  log.updateHighWatermark(log.logEndOffset);
}

function expectState(log: PartitionLog): void {
  expect(log.logEndOffset).toBe(7n);
  expect(log.firstUnstableOffset).toBe(1n);
  expect(log.lastStableOffset).toBe(1n);
  expect(log.collectAbortedTransactions(0n, 7n)).toEqual([
    { producerId: 8n, firstOffset: 2n },
  ]);
  const byId = new Map(log.activeProducers().map((p) => [p.producerId, p]));
  expect(byId.get(7n)).toMatchObject({ producerEpoch: 1, lastSequence: 0, currentTxnStartOffset: 1n });
  expect(byId.get(8n)).toMatchObject({ producerEpoch: 0, coordinatorEpoch: 3, currentTxnStartOffset: -1n });
  expect(byId.get(9n)).toMatchObject({ producerEpoch: 0, lastSequence: 2 });
  // Duplicate detection survives too (from the snapshot only the last batch).
  expect(log.append(batch(9n, 0, 1, 2))).toMatchObject({ ok: true, duplicate: true, firstOffset: 5n, lastOffset: 6n });
  expect(log.append(batch(9n, 0, 4))).toMatchObject({ ok: false, errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER });
}

describe('durability of producer state', () => {
  it('survives close and reopen through a snapshot at the log end', () => {
    const dir = tempDir();
    const log = open(dir, config);
    withState(log);
    log.close();
    expect(readdirSync(dir)).toContain('00000000000000000007.snapshot');
    expectState(open(dir, config));
  });

  it('is rebuilt from the log after an unclean stop without any snapshot', () => {
    const dir = tempDir();
    const log = open(dir, config);
    withState(log);
    log.flush();
    log.checkpoint();
    for (const f of readdirSync(dir)) if (f.endsWith('.snapshot') || f.endsWith('.txnindex')) rmSync(join(dir, f));
    expect(existsSync(join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
    const again = open(dir, config);
    again.updateHighWatermark(7n);
    expectState(again);
    expect(readdirSync(dir)).toContain('00000000000000000000.txnindex');
  });

  it('is rebuilt from the log when the snapshot is corrupt', () => {
    const dir = tempDir();
    const log = open(dir, config);
    withState(log);
    log.close();
    writeFileSync(join(dir, '00000000000000000007.snapshot'), Buffer.from('not a snapshot'));
    expectState(open(dir, config));
  });

  it('takes a snapshot at each roll, at the new base offset, and replays only after the newest one', () => {
    const dir = tempDir();
    const log = open(dir, config);
    ok(log.append(batch(7n, 0, 0, 1, { transactional: true })));
    log.roll();
    ok(log.append(batch(9n, 0, 0)));
    expect(readdirSync(dir).filter((f) => f.endsWith('.snapshot'))).toEqual(['00000000000000000001.snapshot']);
    log.updateHighWatermark(2n);
    const again = open(dir, config); // unclean: replays from the snapshot at 1
    expect(again.firstUnstableOffset).toBe(0n);
    expect(again.activeProducers().map((p) => p.producerId).sort()).toEqual([7n, 9n]);
  });

  it('rebuilds one damaged segment\'s aborted-transaction index without adding to the others', () => {
    const dir = tempDir();
    const log = open(dir, config);
    const abortAt = (pid: bigint): void => {
      ok(log.append(batch(pid, 0, 0, 1, { transactional: true })));
      expect(log.appendControlMarker({ producerId: pid, producerEpoch: 0, coordinatorEpoch: 0, commit: false }, 0).ok).toBe(true);
    };
    abortAt(7n); // 0, marker 1
    log.roll();
    abortAt(8n); // 2, marker 3
    log.roll();
    log.updateHighWatermark(4n);
    log.close();
    // A damaged index makes a clean open rescan that segment, and replay the producers from it on.
    const first = join(dir, '00000000000000000000.txnindex');
    writeFileSync(first, Buffer.concat([readFileSync(first), Buffer.from([0])]));
    const again = open(dir, config);
    expect(again.collectAbortedTransactions(0n, 4n)).toEqual([
      { producerId: 7n, firstOffset: 0n },
      { producerId: 8n, firstOffset: 2n },
    ]);
    again.close();
    expect(open(dir, config).collectAbortedTransactions(2n, 4n)).toEqual([{ producerId: 8n, firstOffset: 2n }]);
  });

  it('expires idle producers without an open transaction', () => {
    const log = open(tempDir(), config, { producerIdExpirationMs: 1000 });
    ok(log.append(batch(7n, 0, 0, 1, { timestamp: 5000n })));
    ok(log.append(batch(8n, 0, 0, 1, { timestamp: 5000n, transactional: true })));
    expect(log.removeExpiredProducers(5999)).toBe(0);
    expect(log.removeExpiredProducers(6000)).toBe(1);
    expect(log.activeProducers().map((p) => p.producerId)).toEqual([8n]);
    // Forgotten: its next batch is taken whatever its sequence.
    expect(log.append(batch(7n, 0, 17))).toMatchObject({ ok: true });
  });

  it('truncateTo rebuilds producer state, the LSO and the index for the shorter log', () => {
    const log = open(tempDir(), config);
    withState(log);
    log.truncateTo(4n); // drops the ABORT marker at 4 and producer 9's second batch
    expect(log.collectAbortedTransactions(0n, 4n)).toEqual([]);
    expect(log.firstUnstableOffset).toBe(1n);
    expect(log.activeProducers().find((p) => p.producerId === 8n)).toMatchObject({ currentTxnStartOffset: 2n });
    const retried = ok(log.append(batch(9n, 0, 1, 2)));
    expect([retried.duplicate, retried.firstOffset]).toEqual([undefined, 4n]);
    log.truncateTo(1n);
    expect(log.firstUnstableOffset).toBeNull();
    expect(log.activeProducers().map((p) => p.producerId)).toEqual([9n]);
    log.truncateFullyAndStartAt(50n);
    expect(log.activeProducers()).toEqual([]);
    expect(log.lastStableOffset).toBe(50n);
  });

  it('DeleteRecords raises the first unstable offset to the log start', () => {
    const log = open(tempDir(), config);
    withState(log);
    expect(log.deleteRecordsBefore(3n)).toEqual({ ok: true, lowWatermark: 3n });
    expect(log.firstUnstableOffset).toBe(3n);
  });
});

describe('compaction with transactions', () => {
  it('keeps markers, transactional batches and the aborted-transaction index of cleaned segments', () => {
    const dir = tempDir();
    const compacted = logConfig({ segmentBytes: 1 << 20, cleanupPolicy: ['compact'] });
    const log = open(dir, compacted);
    ok(log.append(buildBatch({ records: [{ key: 'a', value: '1' }] })));
    ok(log.append(batch(8n, 0, 0, 1, { transactional: true, key: 'a' })));
    ok(log.appendControlMarker({ producerId: 8n, producerEpoch: 0, coordinatorEpoch: 0, commit: false }, 0));
    log.roll();
    ok(log.append(buildBatch({ records: [{ key: 'a', value: '2' }] })));
    ok(log.append(buildBatch({ records: [{ key: 'b', value: '1' }] })));
    log.roll();
    ok(log.append(buildBatch({ records: [{ key: 'c', value: '1' }] })));
    log.updateHighWatermark(log.logEndOffset);
    new LogCleaner(log).cleanAll(Date.now());
    expect(log.segmentBaseOffsets()).toEqual([0n, 5n]);
    expect(log.collectAbortedTransactions(0n, 5n)).toEqual([{ producerId: 8n, firstOffset: 1n }]);
    const offsets: bigint[] = [];
    for (let o = 0n; o < log.logEndOffset; ) {
      const buf = log.readBuffer(o, 1 << 20)!;
      if (buf.length === 0) break;
      for (let at = 0; at < buf.length; ) {
        const h = readBatchHeader(buf, at);
        offsets.push(h.baseOffset);
        at += h.batchLength + 12;
        o = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n;
      }
    }
    expect(offsets).toEqual([1n, 2n, 3n, 4n, 5n]);
    log.close();
    const again = open(dir, compacted);
    expect(again.collectAbortedTransactions(0n, 5n)).toEqual([{ producerId: 8n, firstOffset: 1n }]);
  });
});

describe('transactions v2 markers (KIP-890)', () => {
  it('takes a marker at the epoch above the data, refuses one at the open transaction\'s own epoch, and lets the producer go on at the new epoch from sequence 0', () => {
    const log = open(tempDir(), config);
    ok(log.append(batch(7n, 3, 0, 2, { transactional: true })));
    const late = log.appendControlMarker({ producerId: 7n, producerEpoch: 3, coordinatorEpoch: 1, commit: true, transactionVersion: 2 });
    expect(late).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_PRODUCER_EPOCH });
    // A version 2 marker at the epoch above the data ends the transaction.
    const end = log.appendControlMarker({ producerId: 7n, producerEpoch: 4, coordinatorEpoch: 1, commit: true, transactionVersion: 2 });
    expect(end.ok).toBe(true);
    expect(log.activeProducers().find((p) => p.producerId === 7n)).toMatchObject({ producerEpoch: 4, currentTxnStartOffset: -1n });
    // A retried marker with nothing open is written again.
    expect(log.appendControlMarker({ producerId: 7n, producerEpoch: 4, coordinatorEpoch: 1, commit: true, transactionVersion: 2 }).ok).toBe(true);
    // The data of the ended transaction's epoch is fenced; the next transaction starts at sequence 0.
    expect(log.append(batch(7n, 3, 2, 1, { transactional: true }))).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_PRODUCER_EPOCH });
    ok(log.append(batch(7n, 4, 0, 1, { transactional: true })));
    // With the new transaction open, a marker at its epoch is a late one of the previous transaction.
    expect(log.appendControlMarker({ producerId: 7n, producerEpoch: 4, coordinatorEpoch: 1, commit: false, transactionVersion: 2 })).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_PRODUCER_EPOCH });
    expect(log.appendControlMarker({ producerId: 7n, producerEpoch: 4, coordinatorEpoch: 1, commit: false, transactionVersion: 0 }).ok).toBe(true);
  });
});

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBatch, readBatchHeader } from '../wire/record-batch.js';
import { FaultyFs } from './fs.js';
import { type LogConfig, logConfig } from './log-config.js';
import { PartitionLog, StorageError } from './log.js';
import { segmentFileName } from './segment.js';
import { logFixtures } from './test-support.js';

const { tempDir, open, cleanup } = logFixtures('gregor-retention-');
afterEach(cleanup);

/** `count` records, record i at timestamp ts + i (ts -1: no timestamps). */
function batch(count: number, ts: bigint): Buffer {
  return buildBatch({
    records: Array.from({ length: count }, (_, i) => ({
      key: `k${i}`,
      value: Buffer.alloc(20, i),
      timestamp: ts < 0n ? ts : ts + BigInt(i),
    })),
  });
}

function append(log: PartitionLog, records: Buffer): void {
  const r = log.append(records, 0);
  if (!r.ok) throw new Error(r.message);
}

/** Segments of `perSegment` records each, one batch per segment, the i-th at timestamp times[i]. */
function build(log: PartitionLog, times: bigint[], perSegment = 10): void {
  times.forEach((ts, i) => {
    append(log, batch(perSegment, ts));
    if (i < times.length - 1) log.roll();
  });
}

function firstBatchBase(log: PartitionLog, offset: bigint): bigint | null {
  const buf = log.readBuffer(offset, 1 << 20);
  return buf && buf.length > 0 ? readBatchHeader(buf, 0).baseOffset : null;
}

const deleteOnly = (o: Partial<LogConfig>) => logConfig({ cleanupPolicy: ['delete'], retentionMs: -1, retentionBytes: -1, ...o });

describe('retention by time (retention.ms)', () => {
  it('deletes segments whose largest timestamp is older than retention.ms, rolling the active one when it has expired too', () => {
    let now = 0;
    const dir = tempDir();
    const log = open(dir, deleteOnly({ retentionMs: 1000 }), { now: () => now });
    // Segments 0, 10, 20 (active, end 25); largest timestamps 5009, 6009, 7004.
    build(log, [5000n, 6000n]);
    log.roll();
    append(log, batch(5, 7000n));
    log.updateHighWatermark(25n);

    now = 6009; // 6009 - 5009 = 1000: not older than retention.ms
    expect(log.deleteOldSegments()).toBe(0);
    now = 6010;
    expect(log.deleteOldSegments()).toBe(1);
    expect(log.segmentBaseOffsets()).toEqual([10n, 20n]);
    expect(log.logStartOffset).toBe(10n);
    expect(existsSync(join(dir, segmentFileName(0n, '.log')))).toBe(false);
    expect(existsSync(join(dir, segmentFileName(0n, '.index')))).toBe(false);
    expect(log.read(9n, 100).ok).toBe(false);
    expect(firstBatchBase(log, 10n)).toBe(10n);

    expect(log.deleteOldSegments(8005)).toBe(2);
    expect(log.segmentBaseOffsets()).toEqual([25n]);
    expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([25n, 25n, 25n]);
    // The empty active segment stays, and nothing more happens.
    expect(log.deleteOldSegments(1e12)).toBe(0);
    append(log, batch(1, 9000n));
    expect(firstBatchBase(log, 25n)).toBe(25n);
  });

  it('checkpoints the new log start offset', () => {
    let now = 0;
    const dir = tempDir();
    const config = deleteOnly({ retentionMs: 1000 });
    const fs = new FaultyFs();
    const log = PartitionLog.open(dir, config, { fs, now: () => now });
    build(log, [1000n, 5000n, 9000n]);
    log.updateHighWatermark(30n);
    now = 5500; // 5500 - 1009 > 1000; 5500 - 5009 is not
    expect(log.deleteOldSegments()).toBe(1);
    fs.crash(); // no close, no clean-shutdown marker
    const again = open(dir, config, { now: () => now });
    expect(again.logStartOffset).toBe(10n);
    expect(again.segmentBaseOffsets()).toEqual([10n, 20n]);
    expect(again.logEndOffset).toBe(30n);
  });

  it('keeps everything with retention.ms -1, and applies no time or size rule without the delete policy', () => {
    const forever = open(tempDir(), deleteOnly({ retentionMs: -1 }), { now: () => 1e12 });
    build(forever, [0n, 0n, 0n]);
    forever.updateHighWatermark(30n);
    expect(forever.deleteOldSegments()).toBe(0);

    const compacted = open(tempDir(), logConfig({ cleanupPolicy: ['compact'], retentionMs: 1, retentionBytes: 0 }), { now: () => 1e12 });
    build(compacted, [0n, 0n, 0n]);
    compacted.updateHighWatermark(30n);
    expect(compacted.deleteOldSegments()).toBe(0);
    expect(compacted.segmentBaseOffsets()).toEqual([0n, 10n, 20n]);
  });

  it('judges segments without timestamps by the time of their last append', () => {
    let now = 100_000;
    const log = open(tempDir(), deleteOnly({ retentionMs: 1000 }), { now: () => now });
    append(log, batch(3, -1n));
    log.roll();
    now = 100_500;
    append(log, batch(3, -1n));
    log.roll();
    log.updateHighWatermark(6n);
    now = 101_000;
    expect(log.deleteOldSegments()).toBe(0);
    now = 101_001;
    expect(log.deleteOldSegments()).toBe(1);
    now = 101_501;
    expect(log.deleteOldSegments()).toBe(1);
    expect(log.segmentBaseOffsets()).toEqual([6n]);
  });
});

describe('retention by size (retention.bytes)', () => {
  it('deletes the oldest segments while a whole one still fits in the excess', () => {
    const one = batch(10, 0n).length;
    const dir = tempDir();
    const config = deleteOnly({ retentionBytes: Math.floor(2.5 * one) });
    const log = open(dir, config);
    build(log, [1n, 2n, 3n, 4n, 5n]); // 5 segments of one batch each, the last active
    log.updateHighWatermark(50n);
    expect(log.size).toBe(5 * one);
    // Excess 2.5 segments: two go, the third would take the log below retention.bytes.
    expect(log.deleteOldSegments()).toBe(2);
    expect(log.segmentBaseOffsets()).toEqual([20n, 30n, 40n]);
    expect(log.logStartOffset).toBe(20n);
    expect(log.deleteOldSegments()).toBe(0);
  });

  it('with retention.bytes 0 empties the log down to a fresh active segment', () => {
    const log = open(tempDir(), deleteOnly({ retentionBytes: 0 }));
    build(log, [1n, 2n]);
    log.updateHighWatermark(20n);
    expect(log.deleteOldSegments()).toBe(2);
    expect(log.segmentBaseOffsets()).toEqual([20n]);
    expect(log.size).toBe(0);
  });
});

describe('retention and the high watermark', () => {
  it('never removes data at or above the high watermark', () => {
    const log = open(tempDir(), deleteOnly({ retentionMs: 1, retentionBytes: 0 }), { now: () => 1e12 });
    build(log, [1n, 2n, 3n, 4n]); // segments 0, 10, 20, 30 (active, end 40)
    expect(log.deleteOldSegments()).toBe(0); // high watermark 0
    log.updateHighWatermark(25n);
    // Segment 10 ends at 20 <= 25 and goes; segment 20 holds 25..29, not yet committed.
    expect(log.deleteOldSegments()).toBe(2);
    expect(log.segmentBaseOffsets()).toEqual([20n, 30n]);
    expect(log.logStartOffset).toBe(20n);
    log.updateHighWatermark(39n);
    expect(log.deleteOldSegments()).toBe(1);
    // The active segment holds offset 39, above the high watermark: no roll.
    expect(log.segmentBaseOffsets()).toEqual([30n]);
    expect(firstBatchBase(log, 39n)).toBe(30n);
    log.updateHighWatermark(40n);
    expect(log.deleteOldSegments()).toBe(1);
    expect(log.segmentBaseOffsets()).toEqual([40n]);
    expect(log.logStartOffset).toBeLessThanOrEqual(log.highWatermark);
  });
});

describe('retention and I/O faults', () => {
  it('a failed unlink takes the log offline but leaves it consistent, and the next open finishes the job', () => {
    const dir = tempDir();
    const fs = new FaultyFs();
    const config = deleteOnly({ retentionMs: 1000 });
    const log = open(dir, config, { fs, now: () => 10_000 });
    build(log, [1000n, 2000n, 9500n, 9600n]); // 0 and 10 expired; 20 and active 30 not
    log.updateHighWatermark(40n);
    const kept = log.readBuffer(20n, 1 << 20)!;
    const active = log.readBuffer(30n, 1 << 20)!;
    fs.failNextUnlink('EIO', (p) => p.endsWith(segmentFileName(10n, '.log')));
    expect(() => log.deleteOldSegments()).toThrow(StorageError);
    expect(log.isOffline).toBe(true);
    // In memory the segments are gone and the log start moved; reads of what stays go on.
    expect(log.logStartOffset).toBe(20n);
    expect(log.segmentBaseOffsets()).toEqual([20n, 30n]);
    expect(log.read(15n, 100).ok).toBe(false);
    expect(log.readBuffer(20n, 1 << 20)).toEqual(kept);
    log.close();

    const again = open(dir, config, { now: () => 10_000 });
    expect(again.logStartOffset).toBe(20n);
    expect(again.logEndOffset).toBe(40n);
    expect(again.read(15n, 100).ok).toBe(false);
    expect(again.readBuffer(20n, 1 << 20)).toEqual(kept);
    expect(again.readBuffer(30n, 1 << 20)).toEqual(active);
    // Segment 10 survived on disk below the log start; the next pass removes it.
    expect(existsSync(join(dir, segmentFileName(10n, '.log')))).toBe(true);
    expect(again.deleteOldSegments()).toBe(1);
    expect(again.segmentBaseOffsets()).toEqual([20n, 30n]);
    expect(existsSync(join(dir, segmentFileName(10n, '.log')))).toBe(false);
  });
});

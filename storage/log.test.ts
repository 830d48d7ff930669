import { appendFileSync, existsSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { Compression, buildBatch, readBatchHeader } from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { FaultyFs, type Fs, nodeFs } from './fs.js';
import { PARTITION_CHECKPOINT_FILE, readPartitionCheckpoint } from './checkpoint.js';
import { logConfig } from './log-config.js';
import { validateAndAssignOffsets } from './log-validator.js';
import { type AppendInfo, CLEAN_SHUTDOWN_FILE, PartitionLog, StorageError, readRanges } from './log.js';
import { segmentFileName } from './segment.js';
import { logFixtures } from './test-support.js';

const { tempDir, open, cleanup } = logFixtures('gregor-log-');
afterEach(cleanup);

/** A batch of `count` records, `valueBytes` each, record i at timestamp ts + i. */
function batch(count: number, ts = 1000n, valueBytes = 20): Buffer {
  return buildBatch({
    records: Array.from({ length: count }, (_, i) => ({ value: Buffer.alloc(valueBytes, i), timestamp: ts + BigInt(i) })),
  });
}

/** The leader epoch appendOk stamps. */
const EPOCH = 3;

function appendOk(log: PartitionLog, records: Buffer): { firstOffset: bigint; lastOffset: bigint } {
  const r = log.append(records, EPOCH);
  if (!r.ok) throw new Error(r.message);
  return r;
}

/** The batches a read returned, as [baseOffset, lastOffset] pairs. */
function offsetsOf(buf: Buffer): [bigint, bigint][] {
  const out: [bigint, bigint][] = [];
  for (let at = 0; at < buf.length; ) {
    const h = readBatchHeader(buf, at);
    out.push([h.baseOffset, h.baseOffset + BigInt(h.lastOffsetDelta)]);
    at += h.batchLength + 12;
  }
  return out;
}

function readOffsets(log: PartitionLog, offset: bigint, maxBytes = 1 << 20, opts = {}): [bigint, bigint][] {
  const r = log.read(offset, maxBytes, opts);
  if (!r.ok) throw new Error('out of range');
  return offsetsOf(readRanges(r.records));
}

const small = logConfig({ segmentBytes: 1 << 20, indexIntervalBytes: 256 });

describe('PartitionLog worked examples', () => {
  it('appends, assigns offsets and stamps the leader epoch', () => {
    const log = open(tempDir(), small);
    const r = log.append(batch(3), 5);
    expect(r).toMatchObject({ ok: true, firstOffset: 0n, lastOffset: 2n, logStartOffset: 0n });
    expect(log.logEndOffset).toBe(3n);
    appendOk(log, batch(2));
    expect(log.logEndOffset).toBe(5n);
    const bytes = log.readBuffer(0n, 1 << 20)!;
    expect(offsetsOf(bytes)).toEqual([
      [0n, 2n],
      [3n, 4n],
    ]);
    expect(readBatchHeader(bytes, 0).partitionLeaderEpoch).toBe(5);
  });

  it('appendValidated writes batches with offsets already assigned, skipping ahead if told', () => {
    const log = open(tempDir(), small);
    const a = batch(3);
    const b = batch(2, 2000n);
    a.writeBigInt64BE(10n, 0);
    b.writeBigInt64BE(13n, 0);
    const info: AppendInfo = {
      firstOffset: 10n,
      lastOffset: 14n,
      maxTimestamp: 2001n,
      offsetOfMaxTimestamp: 14n,
      appended: [
        { baseOffset: 10n, lastOffset: 12n, maxTimestamp: 1002n, position: 0, size: a.length },
        { baseOffset: 13n, lastOffset: 14n, maxTimestamp: 2001n, position: a.length, size: b.length },
      ],
    };
    log.appendValidated(Buffer.concat([a, b]), info);
    expect(log.logEndOffset).toBe(15n);
    expect(readOffsets(log, 12n)).toEqual([
      [10n, 12n],
      [13n, 14n],
    ]);
    expect(() => log.appendValidated(a, { ...info, firstOffset: 3n })).toThrow(RangeError);
  });

  it('reads whole batches within maxBytes, the first one regardless (KIP-74), below maxOffset', () => {
    const log = open(tempDir(), small);
    for (let i = 0; i < 3; i++) appendOk(log, batch(3)); // 0..2, 3..5, 6..8
    const size = batch(3).length;
    expect(readOffsets(log, 1n, size + size / 2)).toEqual([[0n, 2n]]);
    expect(readOffsets(log, 0n, 10)).toEqual([[0n, 2n]]);
    const noMin = log.read(0n, 10, { minOneMessage: false });
    expect(noMin.ok && noMin.records).toEqual([]);
    expect(readOffsets(log, 0n, 1 << 20, { maxOffset: 6n })).toEqual([
      [0n, 2n],
      [3n, 5n],
    ]);
    // A batch that reaches the high watermark is not yet visible.
    expect(readOffsets(log, 3n, 1 << 20, { maxOffset: 5n })).toEqual([]);
    expect(readOffsets(log, 9n)).toEqual([]);
    expect(log.read(10n, 100)).toEqual({ ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE, logStartOffset: 0n, logEndOffset: 9n });
  });

  it('finds batches through the offset index in a long segment', () => {
    const log = open(tempDir(), logConfig({ indexIntervalBytes: 100 }));
    for (let i = 0; i < 500; i++) appendOk(log, batch(2));
    for (const off of [0n, 1n, 2n, 500n, 777n, 998n, 999n]) {
      const base = off - (off % 2n);
      expect(readOffsets(log, off, 1)).toEqual([[base, base + 1n]]);
    }
  });

  it('rolls by segment.bytes', () => {
    const size = batch(1).length;
    const log = open(tempDir(), logConfig({ segmentBytes: size * 3 }));
    for (let i = 0; i < 7; i++) appendOk(log, batch(1));
    expect(log.segmentBaseOffsets()).toEqual([0n, 3n, 6n]);
    expect(readOffsets(log, 0n)).toEqual([
      [0n, 0n],
      [1n, 1n],
      [2n, 2n],
    ]);
    expect(readOffsets(log, 3n)).toEqual([
      [3n, 3n],
      [4n, 4n],
      [5n, 5n],
    ]);
  });

  it('rolls by segment.ms, measured between batch timestamps, or by the clock when batches have none', () => {
    let now = 1_000_000;
    const log = open(tempDir(), logConfig({ segmentMs: 1000 }), { now: () => now });
    appendOk(log, batch(1, 5000n));
    appendOk(log, batch(1, 6000n)); // waited exactly segment.ms: no roll
    expect(log.segmentBaseOffsets()).toEqual([0n]);
    appendOk(log, batch(1, 6001n));
    expect(log.segmentBaseOffsets()).toEqual([0n, 2n]);

    const noTs = open(tempDir(), logConfig({ segmentMs: 1000 }), { now: () => now });
    appendOk(noTs, batch(1, -1n));
    now += 1001;
    appendOk(noTs, batch(1, -1n));
    expect(noTs.segmentBaseOffsets()).toEqual([0n, 1n]);
  });

  it('rolls when the offset index or the time index is full', () => {
    // 40 bytes: five offset entries, three time entries; an entry comes with every batch after the first.
    const config = logConfig({ indexIntervalBytes: 1, segmentIndexBytes: 40 });
    const sameTime = open(tempDir(), config);
    for (let i = 0; i < 7; i++) appendOk(sameTime, batch(1, 1000n));
    expect(sameTime.segmentBaseOffsets()).toEqual([0n, 6n]);
    const risingTime = open(tempDir(), config);
    for (let i = 0; i < 5; i++) appendOk(risingTime, batch(1, BigInt(1000 + i)));
    expect(risingTime.segmentBaseOffsets()).toEqual([0n, 4n]);
  });

  it('rolls on demand and keeps an empty active segment', () => {
    const log = open(tempDir(), small);
    expect(log.roll()).toBe(0n);
    appendOk(log, batch(3));
    expect(log.roll()).toBe(3n);
    expect(log.roll()).toBe(3n);
    appendOk(log, batch(1));
    expect(log.segmentBaseOffsets()).toEqual([0n, 3n]);
    expect(readOffsets(log, 2n)).toEqual([[0n, 2n]]);
    expect(readOffsets(log, 3n)).toEqual([[3n, 3n]]);
  });

  it('truncateTo drops batches at and after the offset, across segments', () => {
    const log = open(tempDir(), small);
    appendOk(log, batch(3)); // 0..2
    appendOk(log, batch(3)); // 3..5
    log.roll();
    appendOk(log, batch(3)); // 6..8
    log.updateHighWatermark(9n);
    log.truncateTo(20n);
    expect(log.logEndOffset).toBe(9n);
    log.truncateTo(3n);
    expect(log.logEndOffset).toBe(3n);
    expect(log.highWatermark).toBe(3n);
    expect(log.segmentBaseOffsets()).toEqual([0n]);
    expect(readOffsets(log, 0n)).toEqual([[0n, 2n]]);
    expect(appendOk(log, batch(1)).firstOffset).toBe(3n);
    // A batch straddling the offset goes whole.
    log.truncateTo(1n);
    expect(log.logEndOffset).toBe(1n);
    expect(readOffsets(log, 0n)).toEqual([]);
  });

  it('truncateFullyAndStartAt empties the log at a new offset', () => {
    const log = open(tempDir(), small);
    appendOk(log, batch(3));
    log.truncateFullyAndStartAt(500n);
    expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([500n, 500n, 500n]);
    expect(log.segmentBaseOffsets()).toEqual([500n]);
    expect(appendOk(log, batch(2)).firstOffset).toBe(500n);
  });

  it('deleteRecordsBefore moves the log start and deletes whole segments below it', () => {
    const dir = tempDir();
    const log = open(dir, small);
    for (let i = 0; i < 4; i++) {
      appendOk(log, batch(50));
      log.roll();
    } // segments 0, 50, 100, 150, 200 (empty)
    log.updateHighWatermark(150n);
    expect(log.deleteRecordsBefore(151n)).toEqual({ ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE });
    expect(log.deleteRecordsBefore(120n)).toEqual({ ok: true, lowWatermark: 120n });
    expect(log.segmentBaseOffsets()).toEqual([100n, 150n, 200n]);
    expect(existsSync(join(dir, segmentFileName(0n, '.log')))).toBe(false);
    expect(log.read(110n, 100).ok).toBe(false);
    expect(readOffsets(log, 120n, 1)).toEqual([[100n, 149n]]);
    log.updateHighWatermark(200n);
    expect(log.deleteRecordsBefore(200n)).toEqual({ ok: true, lowWatermark: 200n });
    expect(log.segmentBaseOffsets()).toEqual([200n]);
    log.close();
    const again = open(dir, small);
    expect([again.logStartOffset, again.logEndOffset, again.highWatermark]).toEqual([200n, 200n, 200n]);
  });

  it('deleteRecordsBefore the log end rolls so the last segment can go too', () => {
    const log = open(tempDir(), small);
    appendOk(log, batch(5));
    log.updateHighWatermark(5n);
    log.deleteRecordsBefore(5n);
    expect(log.segmentBaseOffsets()).toEqual([5n]);
    expect(readOffsets(log, 5n)).toEqual([]);
  });

  it('offsetForTimestamp finds the earliest record at or after a time', () => {
    const log = open(tempDir(), logConfig({ indexIntervalBytes: 50 }));
    for (let i = 0; i < 20; i++) appendOk(log, batch(5, BigInt(1000 + i * 100))); // record 5i+k at 1000 + 100i + k
    log.roll();
    appendOk(log, batch(5, 9000n)); // 100..104
    expect(log.offsetForTimestamp(0n)).toEqual({ offset: 0n, timestamp: 1000n });
    expect(log.offsetForTimestamp(1203n)).toEqual({ offset: 13n, timestamp: 1203n });
    expect(log.offsetForTimestamp(1205n)).toEqual({ offset: 15n, timestamp: 1300n });
    expect(log.offsetForTimestamp(2905n)).toEqual({ offset: 100n, timestamp: 9000n });
    expect(log.offsetForTimestamp(9004n)).toEqual({ offset: 104n, timestamp: 9004n });
    expect(log.offsetForTimestamp(9005n)).toBeNull();
  });

  it('moves the high watermark forward only, up to the log end, and checkpoints it', () => {
    const dir = tempDir();
    const log = open(dir, small);
    appendOk(log, batch(10));
    expect(log.updateHighWatermark(4n)).toBe(4n);
    expect(log.updateHighWatermark(7n)).toBe(7n);
    expect(log.updateHighWatermark(5n)).toBe(7n);
    expect(log.updateHighWatermark(99n)).toBe(10n);
    expect(log.lastStableOffset).toBe(10n);
    log.checkpoint();
    const reopened = open(dir, small, { fs: new FaultyFs() }); // unclean: not closed
    expect(reopened.highWatermark).toBe(10n);
  });

  it('a periodic checkpoint rewrites the file only when a value changed', () => {
    const dir = tempDir();
    let writes = 0;
    const fs: Fs = {
      ...nodeFs,
      open: (path, mode) => {
        if (path.endsWith(`${PARTITION_CHECKPOINT_FILE}.tmp`)) writes++;
        return nodeFs.open(path, mode);
      },
    };
    const log = open(dir, small, { fs });
    appendOk(log, batch(10));
    log.updateHighWatermark(4n);
    log.checkpoint();
    const first = writes;
    expect(first).toBeGreaterThan(0);
    log.checkpoint();
    log.checkpoint();
    expect(writes).toBe(first);
    log.updateHighWatermark(6n);
    log.checkpoint();
    expect(writes).toBe(first + 1);
    expect(readPartitionCheckpoint(fs, dir)?.highWatermark).toBe(6n);
    log.close();
    const reopened = open(dir, small, { fs });
    const afterOpen = writes;
    reopened.checkpoint(); // a clean shutdown left the same values in the file
    expect(writes).toBe(afterOpen);
  });
});

describe('durability', () => {
  /**
   * The first append of a leader epoch also writes the leader-epoch checkpoint
   * (fsynced, as Kafka's is); a leader records its epoch when it takes over,
   * so the appends measured here are not the first of theirs.
   */
  function leading(log: PartitionLog): PartitionLog {
    log.maybeAssignEpochStartOffset(EPOCH, log.logEndOffset);
    return log;
  }

  it('fsyncs every append with flush.messages = 1, and not otherwise', () => {
    const fs = new FaultyFs();
    const log = leading(open(tempDir(), logConfig({ flushMessages: 1 }), { fs }));
    const before = fs.fsyncs;
    appendOk(log, batch(1));
    appendOk(log, batch(1));
    expect(fs.fsyncs - before).toBeGreaterThanOrEqual(2);

    const lazyFs = new FaultyFs();
    const lazy = leading(open(tempDir(), small, { fs: lazyFs }));
    const lazyBefore = lazyFs.fsyncs;
    for (let i = 0; i < 10; i++) appendOk(lazy, batch(1));
    expect(lazyFs.fsyncs).toBe(lazyBefore);
  });

  it('flushes after flush.messages messages and when flush.ms has passed', () => {
    let now = 0;
    const fs = new FaultyFs();
    const log = leading(open(tempDir(), logConfig({ flushMessages: 5, flushMs: 1000 }), { fs, now: () => now }));
    const start = fs.fsyncs;
    appendOk(log, batch(3));
    expect(fs.fsyncs).toBe(start);
    appendOk(log, batch(2));
    expect(fs.fsyncs).toBeGreaterThan(start);
    const mid = fs.fsyncs;
    appendOk(log, batch(1));
    now = 999;
    expect(log.flushIfDue()).toBe(false);
    now = 1000;
    expect(log.flushIfDue()).toBe(true);
    expect(fs.fsyncs).toBeGreaterThan(mid);
  });

  it('each append is one write', () => {
    const fs = new FaultyFs();
    const log = leading(open(tempDir(), small, { fs }));
    const before = fs.writes;
    appendOk(log, Buffer.concat([batch(3), batch(4)]));
    expect(fs.writes - before).toBe(1);
  });
});

describe('recovery', () => {
  function filled(dir: string, config = small): { bytes: Buffer; end: bigint } {
    const log = PartitionLog.open(dir, config);
    for (let i = 0; i < 10; i++) appendOk(log, batch(3, BigInt(1000 + i)));
    const bytes = log.readBuffer(0n, 1 << 30)!;
    const end = log.logEndOffset;
    log.close();
    return { bytes, end };
  }
  const logFile = (dir: string) => join(dir, segmentFileName(0n, '.log'));

  it('a clean shutdown marker skips the scan (a damaged tail then goes unnoticed until read)', () => {
    const dir = tempDir();
    const { end } = filled(dir);
    expect(existsSync(join(dir, CLEAN_SHUTDOWN_FILE))).toBe(true);
    const fs = new FaultyFs();
    let reads = 0;
    const counting = Object.assign(Object.create(fs) as FaultyFs, {
      read: (fd: number, buf: Buffer, o: number, l: number, p: number) => {
        reads += l;
        return fs.read(fd, buf, o, l, p);
      },
    });
    const log = open(dir, small, { fs: counting });
    expect(log.logEndOffset).toBe(end);
    expect(reads).toBeLessThan(statSync(logFile(dir)).size);
    expect(existsSync(join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
  });

  it('cuts a torn tail after a crash', () => {
    const dir = tempDir();
    const { bytes } = filled(dir);
    unlinkSync(join(dir, CLEAN_SHUTDOWN_FILE));
    const one = batch(3).length;
    truncateSync(logFile(dir), bytes.length - Math.floor(one / 2));
    const log = open(dir, small);
    expect(log.logEndOffset).toBe(27n);
    expect(statSync(logFile(dir)).size).toBe(bytes.length - one);
    expect(appendOk(log, batch(1)).firstOffset).toBe(27n);
    expect(readOffsets(log, 24n)).toEqual([
      [24n, 26n],
      [27n, 27n],
    ]);
  });

  it('cuts from a batch whose CRC fails, dropping everything after it', () => {
    const dir = tempDir();
    const { bytes } = filled(dir);
    unlinkSync(join(dir, CLEAN_SHUTDOWN_FILE));
    const one = batch(3).length;
    const damaged = Buffer.from(bytes);
    damaged[4 * one + 70]! ^= 0xff; // inside the records of batch 12..14
    writeFileSync(logFile(dir), damaged);
    // The checkpoint says everything was flushed; recovery must still start at the segment holding it.
    const log = open(dir, small);
    expect(log.logEndOffset).toBe(12n);
    expect(readFileSync(logFile(dir))).toEqual(bytes.subarray(0, 4 * one));
  });

  it('rebuilds a missing or corrupt index, even after a clean shutdown', () => {
    const dir = tempDir();
    const config = logConfig({ indexIntervalBytes: 1 });
    filled(dir, config);
    const index = join(dir, segmentFileName(0n, '.index'));
    expect(statSync(index).size).toBeGreaterThan(0);
    const good = readFileSync(index);
    unlinkSync(index);
    let log = open(dir, config);
    expect(readOffsets(log, 13n, 1)).toEqual([[12n, 14n]]);
    log.close();
    expect(readFileSync(index)).toEqual(good);

    const corrupt = Buffer.from(good);
    corrupt.writeInt32BE(7, corrupt.length - 4); // last entry now points inside a batch
    writeFileSync(index, corrupt);
    log = open(dir, config);
    expect(log.logEndOffset).toBe(30n);
    expect(readOffsets(log, 28n, 1)).toEqual([[27n, 29n]]);
    log.close();
    expect(readFileSync(index)).toEqual(good);

    writeFileSync(index, good.subarray(0, good.length - 3));
    log = open(dir, config);
    expect(readOffsets(log, 25n, 1)).toEqual([[24n, 26n]]);
  });

  it('rebuilds a corrupt time index', () => {
    const dir = tempDir();
    const config = logConfig({ indexIntervalBytes: 1 });
    filled(dir, config);
    const timeIndex = join(dir, segmentFileName(0n, '.timeindex'));
    const t = readFileSync(timeIndex);
    t.writeBigInt64BE(0n, t.length - 12); // out of order
    writeFileSync(timeIndex, t);
    const log = open(dir, config);
    expect(log.offsetForTimestamp(1005n)).toEqual({ offset: 11n, timestamp: 1005n });
  });

  it('recovers an unclean log with no checkpoint from the first segment', () => {
    const dir = tempDir();
    const size = batch(3).length;
    const fs = new FaultyFs();
    const log = PartitionLog.open(dir, logConfig({ segmentBytes: size * 2 }), { fs });
    for (let i = 0; i < 5; i++) appendOk(log, batch(3));
    fs.crash();
    rmSync(join(dir, 'partition.checkpoint'));
    const again = open(dir, logConfig({ segmentBytes: size * 2 }));
    expect(again.logEndOffset).toBe(15n);
    expect(again.segmentBaseOffsets()).toEqual([0n, 6n, 12n]);
  });
});

describe('I/O faults', () => {
  function setup(config = small) {
    const dir = tempDir();
    const fs = new FaultyFs();
    const log = open(dir, config, { fs });
    for (let i = 0; i < 5; i++) appendOk(log, batch(2));
    const stored = log.readBuffer(0n, 1 << 20)!;
    return { dir, fs, log, stored };
  }
  const isLog = (p: string) => p.endsWith('.log');

  function expectOfflineButIntact(dir: string, log: PartitionLog, stored: Buffer) {
    expect(log.isOffline).toBe(true);
    expect(() => log.append(batch(1))).toThrow(StorageError);
    try {
      log.append(batch(1));
    } catch (e) {
      expect((e as StorageError).errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    }
    expect(log.readBuffer(0n, 1 << 20)).toEqual(stored);
    expect(log.logEndOffset).toBe(10n);
    log.close();
    expect(existsSync(join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
    const again = open(dir, small);
    expect(again.logEndOffset).toBe(10n);
    expect(again.readBuffer(0n, 1 << 20)).toEqual(stored);
    expect(appendOk(again, batch(1)).firstOffset).toBe(10n);
  }

  it('a failed write takes the log offline and leaves what was stored', () => {
    const { dir, fs, log, stored } = setup();
    fs.failNextWrite('EIO', isLog);
    expect(() => log.append(batch(2))).toThrow(StorageError);
    expectOfflineButIntact(dir, log, stored);
  });

  it('a torn write is cut back', () => {
    const { dir, fs, log, stored } = setup();
    fs.tearNextWrite(30, isLog);
    expect(() => log.append(batch(2))).toThrow(StorageError);
    expect(statSync(join(dir, segmentFileName(0n, '.log'))).size).toBe(stored.length);
    expectOfflineButIntact(dir, log, stored);
  });

  it('a full disk fails the append with a storage error', () => {
    const { dir, fs, log, stored } = setup();
    fs.setFreeBytes(40);
    expect(() => log.append(batch(2))).toThrow(/ENOSPC/);
    fs.setFreeBytes(Infinity);
    expectOfflineButIntact(dir, log, stored);
  });

  it('a failed fsync takes the log offline', () => {
    const { dir, fs, log, stored } = setup();
    fs.failNextFsync('EIO', isLog);
    expect(() => log.flush()).toThrow(StorageError);
    expectOfflineButIntact(dir, log, stored);
  });

  it('a failure while rolling takes the log offline', () => {
    const size = batch(2).length;
    const { dir, fs, log, stored } = setup(logConfig({ segmentBytes: size * 5 }));
    fs.failNextFsync('EIO', isLog);
    expect(() => log.append(batch(2))).toThrow(StorageError);
    expectOfflineButIntact(dir, log, stored);
  });
});

describe('against a model (seeded)', () => {
  interface ModelBatch {
    base: bigint;
    last: bigint;
    bytes: Buffer;
  }

  for (const seed of Array.from({ length: 16 }, (_, i) => i + 1)) {
    it(`seed ${seed}`, () => {
      const rnd = seededRandom(seed);
      const int = (n: number) => Math.floor(rnd() * n);
      const dir = tempDir();
      const one = batch(1, 0n, 8).length;
      const config = logConfig({ segmentBytes: 800 + int(2000), indexIntervalBytes: 1 + int(300), segmentIndexBytes: 8 * (2 + int(20)) });
      let fs = new FaultyFs();
      let log = PartitionLog.open(dir, config, { fs });
      let model: ModelBatch[] = [];
      let start = 0n;
      let ts = 1000n;
      const end = () => (model.length ? model[model.length - 1]!.last + 1n : start);

      const check = () => {
        expect(log.logEndOffset).toBe(end());
        expect(log.logStartOffset).toBe(start);
        const visible = model.filter((b) => b.last >= start);
        // Every batch boundary and a random inner offset.
        for (const b of visible) {
          for (const off of [b.base < start ? start : b.base, b.last]) {
            const maxBytes = int(3) === 0 ? 1 : 1 + int(one * 6);
            const r = log.read(off, maxBytes);
            expect(r.ok).toBe(true);
            const got = readRanges(r.ok ? r.records : []);
            const from = visible.indexOf(b);
            let want = Buffer.alloc(0);
            const seg = log.segmentBaseOffsets();
            const segEnd = seg.find((s) => s > b.base) ?? Infinity;
            for (let i = from, total = 0; i < visible.length; i++) {
              const v = visible[i]!;
              if (v.base >= (segEnd as bigint) || (total > 0 && total + v.bytes.length > maxBytes)) break;
              want = Buffer.concat([want, v.bytes]);
              total += v.bytes.length;
            }
            expect(got.equals(want)).toBe(true);
          }
        }
        expect(log.read(end() + 1n, 100).ok).toBe(false);
        if (start > 0n) expect(log.read(start - 1n, 100).ok).toBe(false);
      };

      for (let step = 0; step < 150; step++) {
        const op = int(100);
        if (op < 55) {
          const count = 1 + int(4);
          const n = 1 + int(3);
          const buf = Buffer.concat(Array.from({ length: n }, () => batch(count, (ts += BigInt(int(50))), int(40))));
          const r = validateAndAssignOffsets(buf, { nextOffset: log.logEndOffset, leaderEpoch: 0, now: 0, config });
          if (!r.ok) throw new Error(r.message);
          log.appendValidated(r.batches, r);
          for (const a of r.appended) model.push({ base: a.baseOffset, last: a.lastOffset, bytes: Buffer.from(r.batches.subarray(a.position, a.position + a.size)) });
        } else if (op < 65 && model.length > 0) {
          // Truncate at a batch boundary, as a follower does.
          const keep = int(model.length + 1);
          const to = keep < model.length ? model[keep]!.base : end();
          if (to > start) {
            log.truncateTo(to);
            model = model.slice(0, keep);
          }
        } else if (op < 72) {
          log.roll();
        } else if (op < 78 && model.length > 0) {
          const target = start + BigInt(int(Number(end() - start) + 1));
          log.updateHighWatermark(target);
          expect(log.deleteRecordsBefore(target).ok).toBe(true);
          if (target > start) start = target;
          model = model.filter((b) => b.last >= start || b.last + 1n === start);
        } else if (op < 86) {
          log.close();
          log = PartitionLog.open(dir, config, { fs });
        } else if (op < 94) {
          // Crash: no close, no marker; the page cache keeps what was written.
          const lastBase = log.segmentBaseOffsets().pop()!;
          fs.crash();
          // Sometimes the crash tore a write: garbage follows the last whole batch.
          if (int(2) === 0) {
            const garbage = Buffer.from(Array.from({ length: 1 + int(200) }, () => int(256)));
            appendFileSync(join(dir, segmentFileName(lastBase, '.log')), garbage);
          }
          fs = new FaultyFs();
          log = PartitionLog.open(dir, config, { fs });
        } else if (op < 97) {
          log.flush();
        } else {
          log.truncateFullyAndStartAt(end() + 5n);
          start = end() + 5n;
          model = [];
        }
        model = model.filter((b) => b.last >= start);
        check();
      }
      log.close();
    });
  }
});

describe('offsetForTimestamp, as Kafka answers ListOffsets by time', () => {
  /** One batch whose record i has timestamps[i]. */
  const timed = (timestamps: readonly bigint[], compression = Compression.None): Buffer =>
    buildBatch({ records: timestamps.map((timestamp, i) => ({ value: `v${i}`.repeat(20), timestamp })), compression });

  it('finds the record inside a batch, compressed or not', () => {
    const log = open(tempDir(), small);
    appendOk(log, timed([100n, 200n, 300n, 400n, 500n])); // 0..4
    appendOk(log, timed([600n, 700n, 800n, 900n, 1000n], Compression.Gzip)); // 5..9
    appendOk(log, timed([1100n, 1200n, 1300n, 1400n, 1500n], Compression.Lz4)); // 10..14
    const cases: [bigint, { offset: bigint; timestamp: bigint } | null][] = [
      [250n, { offset: 2n, timestamp: 300n }],
      [750n, { offset: 7n, timestamp: 800n }],
      [900n, { offset: 8n, timestamp: 900n }],
      [1001n, { offset: 10n, timestamp: 1100n }],
      [1350n, { offset: 13n, timestamp: 1400n }],
      [1501n, null],
    ];
    for (const [target, want] of cases) expect(log.offsetForTimestamp(target), `target ${target}`).toEqual(want);
  });

  it('takes the first record in offset order, not the nearest timestamp', () => {
    const log = open(tempDir(), small);
    appendOk(log, timed([100n, 300n, 50n, 200n], Compression.Gzip)); // 0..3
    expect(log.offsetForTimestamp(150n)).toEqual({ offset: 1n, timestamp: 300n });
    expect(log.offsetForTimestamp(301n)).toBeNull();
  });

  it('gives every record of a LogAppendTime batch the time the log appended it', () => {
    const now = 5000;
    const log = open(tempDir(), logConfig({ messageTimestampType: 'LogAppendTime' }), { now: () => now });
    appendOk(log, timed([100n, 200n, 300n], Compression.Gzip)); // 0..2, max timestamp 5000
    appendOk(log, timed([100n, 200n, 300n])); // 3..5, max timestamp 5000
    expect(log.offsetForTimestamp(150n)).toEqual({ offset: 0n, timestamp: 5000n });
    expect(log.offsetForTimestamp(5000n)).toEqual({ offset: 0n, timestamp: 5000n });
    expect(log.offsetForTimestamp(5001n)).toBeNull();
  });

  it('searches only the first segment whose largest timestamp reaches the target, from the log start', () => {
    const log = open(tempDir(), small);
    appendOk(log, timed([5000n, 5001n, 100n, 101n, 102n])); // 0..4
    log.roll();
    appendOk(log, timed([9000n])); // 5
    log.updateHighWatermark(log.logEndOffset);
    log.deleteRecordsBefore(2n);
    // Segment 0 reaches 4000, but only below the log start: Kafka answers nothing, not offset 5.
    expect(log.offsetForTimestamp(4000n)).toBeNull();
    expect(log.offsetForTimestamp(101n)).toEqual({ offset: 3n, timestamp: 101n });
    expect(log.offsetForTimestamp(6000n)).toEqual({ offset: 5n, timestamp: 9000n });
  });

  it('judges a segment whose records carry no timestamp by its last append time', () => {
    let now = 50_000;
    const log = open(tempDir(), small, { now: () => now });
    appendOk(log, timed([-1n, -1n])); // 0..1, no timestamps
    log.roll();
    now = 60_000;
    appendOk(log, timed([1000n, 2000n])); // 2..3
    // Segment 0 counts as 50000: it is searched for 1500 and holds no such record.
    expect(log.offsetForTimestamp(1500n)).toBeNull();
    expect(log.offsetForTimestamp(50_001n)).toBeNull();
    now = 70_000;
    appendOk(log, timed([60_000n])); // 4
    expect(log.offsetForTimestamp(50_001n)).toEqual({ offset: 4n, timestamp: 60_000n });
  });
});

describe('legacyOffsetsBefore, as Kafka 3.x answers ListOffsets v0', () => {
  /** The worked example: segment 0 (offsets 0..9) last appended at 1000, segment 10 (10..14) at 2000, the clock then at 3000. */
  function twoSegments(dir = tempDir()) {
    const clock = { now: 1000 };
    const log = open(dir, small, { now: () => clock.now });
    appendOk(log, batch(10)); // 0..9
    log.roll();
    clock.now = 2000;
    appendOk(log, batch(5)); // 10..14
    clock.now = 3000;
    return { log, clock };
  }

  it('answers segment bases and the log end by their times, newest first, as many as asked', () => {
    const { log } = twoSegments();
    const cases: [bigint, number, bigint[]][] = [
      [-1n, 10, [15n, 10n, 0n]],
      [-1n, 2, [15n, 10n]],
      [-1n, 1, [15n]],
      [-1n, 0, []],
      [-2n, 10, [0n]],
      [-2n, 0, []],
      [3000n, 10, [15n, 10n, 0n]],
      [2999n, 10, [10n, 0n]],
      [2500n, 1, [10n]],
      [2000n, 10, [10n, 0n]],
      [1999n, 10, [0n]],
      [1000n, 10, [0n]],
      [999n, 10, []],
      // Other negative targets are times before every segment.
      [-3n, 10, []],
    ];
    for (const [target, max, want] of cases) expect([target, max, log.legacyOffsetsBefore(target, max)]).toEqual([target, max, want]);
  });

  it('has no log end candidate while the active segment is empty: its base is the log end', () => {
    const { log, clock } = twoSegments();
    log.roll(); // at 3000: segment 15 is empty
    clock.now = 4000;
    expect(log.legacyOffsetsBefore(-1n, 10)).toEqual([15n, 10n, 0n]);
    expect(log.legacyOffsetsBefore(3500n, 10)).toEqual([15n, 10n, 0n]);
    expect(log.legacyOffsetsBefore(2999n, 10)).toEqual([10n, 0n]);
  });

  it('answers an empty log with its start offset, dated when the segment was made', () => {
    const log = open(tempDir(), small, { now: () => 500 });
    expect(log.legacyOffsetsBefore(-1n, 5)).toEqual([0n]);
    expect(log.legacyOffsetsBefore(-2n, 5)).toEqual([0n]);
    expect(log.legacyOffsetsBefore(500n, 5)).toEqual([0n]);
    expect(log.legacyOffsetsBefore(499n, 5)).toEqual([]);
  });

  it('raises segment bases below the log start offset to it', () => {
    const { log } = twoSegments();
    log.updateHighWatermark(log.logEndOffset);
    log.deleteRecordsBefore(3n);
    expect(log.segmentBaseOffsets()).toEqual([0n, 10n]);
    expect(log.legacyOffsetsBefore(-2n, 10)).toEqual([3n]);
    expect(log.legacyOffsetsBefore(-1n, 10)).toEqual([15n, 10n, 3n]);
    expect(log.legacyOffsetsBefore(1500n, 10)).toEqual([3n]);
  });

  it('dates a segment loaded from disk and not written since when the log opened', () => {
    const dir = tempDir();
    twoSegments(dir).log.close();
    const log = open(dir, small, { now: () => 10_000 });
    expect(log.legacyOffsetsBefore(-1n, 10)).toEqual([15n, 10n, 0n]);
    expect(log.legacyOffsetsBefore(9999n, 10)).toEqual([]);
    expect(log.legacyOffsetsBefore(10_000n, 10)).toEqual([15n, 10n, 0n]);
  });
});

describe('rolled segments sync in the background', () => {
  /** nodeFs whose background fsyncs wait until the test releases them, and which records the paths fsynced on the loop. */
  function deferredFs() {
    const paths = new Map<number, string>();
    const synced: string[] = [];
    const held: { path: string; run: (err?: Error) => void }[] = [];
    const failed: string[] = [];
    const fs: Fs = {
      ...nodeFs,
      open: (path, mode) => {
        const fd = nodeFs.open(path, mode);
        paths.set(fd, path);
        return fd;
      },
      fsync: (fd) => {
        synced.push(paths.get(fd) ?? '?');
        nodeFs.fsync(fd);
      },
      fsyncAsync: (fd, cb) => {
        held.push({
          path: paths.get(fd) ?? '?',
          run: (err) => {
            if (err) return cb(err);
            try {
              nodeFs.fsync(fd);
            } catch (e) {
              failed.push((e as NodeJS.ErrnoException).code ?? '?');
              return cb(e as Error); // EBADF had the file been closed under it, as fs.fsync would call back
            }
            cb(null);
          },
        });
      },
    };
    return { fs, synced, held, failed };
  }

  function rolled(fs: Fs) {
    const dir = tempDir();
    const size = batch(2).length;
    const log = open(dir, logConfig({ segmentBytes: size * 3 }), { fs });
    for (let i = 0; i < 4; i++) appendOk(log, batch(2));
    expect(log.segmentBaseOffsets()).toEqual([0n, 6n]);
    return { dir, log };
  }

  it('a roll leaves the old segment to a background fsync; the recovery point moves once it is done', () => {
    const { fs, synced, held } = deferredFs();
    const { dir, log } = rolled(fs);
    const oldLog = join(dir, segmentFileName(0n, '.log'));
    expect(synced).not.toContain(oldLog);
    expect(held.map((h) => h.path)).toEqual([oldLog]);
    expect(readPartitionCheckpoint(fs, dir)?.recoveryPoint ?? 0n).toBe(0n);
    held[0]!.run();
    expect(readPartitionCheckpoint(fs, dir)?.recoveryPoint).toBe(6n);
    expect(log.isOffline).toBe(false);
  });

  it('a failed background fsync takes the log offline', () => {
    const { fs, held } = deferredFs();
    const { log } = rolled(fs);
    held[0]!.run(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    expect(log.isOffline).toBe(true);
    expect(() => log.append(batch(1))).toThrow(StorageError);
  });

  it('a segment rolled again after a truncation waits for its second fsync', () => {
    const { fs, held } = deferredFs();
    const { dir, log } = rolled(fs);
    log.truncateTo(4n); // a follower's truncation: segment 0 is active again
    expect(log.segmentBaseOffsets()).toEqual([0n]);
    appendOk(log, batch(2));
    appendOk(log, batch(2));
    expect(log.segmentBaseOffsets()).toEqual([0n, 6n]);
    expect(held.map((h) => h.path)).toEqual([join(dir, segmentFileName(0n, '.log')), join(dir, segmentFileName(0n, '.log'))]);
    held[0]!.run(); // the first fsync may have run before the bytes appended since
    expect(readPartitionCheckpoint(fs, dir)?.recoveryPoint ?? 0n).toBe(0n);
    held[1]!.run();
    expect(readPartitionCheckpoint(fs, dir)?.recoveryPoint).toBe(6n);
  });

  it('a failed background fsync takes the log offline even when a flush synced the segment since', () => {
    const { fs, held } = deferredFs();
    const { log } = rolled(fs);
    log.flush(); // its fsync succeeds: the kernel reported the write-back error to the first fsync only
    held[0]!.run(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    expect(log.isOffline).toBe(true);
  });

  it('an explicit roll syncs the segments still syncing in the background before moving the recovery point', () => {
    const { fs, synced } = deferredFs();
    const { dir, log } = rolled(fs);
    appendOk(log, batch(2));
    log.roll();
    expect(synced).toContain(join(dir, segmentFileName(0n, '.log')));
    expect(synced).toContain(join(dir, segmentFileName(6n, '.log')));
    expect(readPartitionCheckpoint(fs, dir)?.recoveryPoint).toBe(10n);
  });

  it('flush and close sync a rolled segment whose background fsync has not finished', () => {
    const { fs, synced, held, failed } = deferredFs();
    const { dir, log } = rolled(fs);
    const oldLog = join(dir, segmentFileName(0n, '.log'));
    log.flush();
    expect(synced).toContain(oldLog);
    for (let i = 0; i < 3; i++) appendOk(log, batch(2));
    expect(log.segmentBaseOffsets()).toEqual([0n, 6n, 12n]);
    synced.length = 0;
    log.close();
    expect(synced).toContain(join(dir, segmentFileName(6n, '.log')));
    // The late callbacks change nothing, and their descriptors stayed open until they ran.
    for (const h of held) h.run();
    expect(failed).toEqual([]);
    expect(readPartitionCheckpoint(fs, dir)?.recoveryPoint).toBe(14n);
  });
});

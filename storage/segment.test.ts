import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import {
  BATCH_HEADER_SIZE,
  Compression,
  LAST_OFFSET_DELTA,
  MAX_TIMESTAMP,
  RECORD_COUNT,
  buildBatch,
  readBatchHeader,
  writeBatchCrc,
} from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { type Fs, nodeFs } from './fs.js';
import { type LogConfig, logConfig } from './log-config.js';
import { type AppendedBatch, BatchCursor, CorruptRecordError, type FileRange, LogSegment, readRanges } from './segment.js';

const dirs: string[] = [];
const segments: LogSegment[] = [];
afterEach(() => {
  for (const s of segments.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** nodeFs that counts the reads of `.log` files and their bytes. */
class CountingFs {
  reads = 0;
  bytes = 0;
  private readonly logFds = new Set<number>();
  readonly fs: Fs = {
    ...nodeFs,
    open: (path, mode) => {
      const fd = nodeFs.open(path, mode);
      if (path.endsWith('.log')) this.logFds.add(fd);
      return fd;
    },
    read: (fd, buf, offset, length, position) => {
      if (this.logFds.has(fd)) {
        this.reads++;
        this.bytes += length;
      }
      return nodeFs.read(fd, buf, offset, length, position);
    },
  };
  reset(): void {
    this.reads = 0;
    this.bytes = 0;
  }
}

interface Layout {
  base: bigint;
  last: bigint;
  position: number;
  size: number;
}

/** A batch of `count` records of `valueBytes` each, renumbered to start at `baseOffset`. */
function batchAt(baseOffset: bigint, count: number, valueBytes: number): Buffer {
  const b = buildBatch({
    records: Array.from({ length: count }, (_, i) => ({ value: Buffer.alloc(valueBytes, i), timestamp: 1000n + BigInt(i) })),
  });
  b.writeBigInt64BE(baseOffset, 0);
  return b;
}

function newSegment(config: LogConfig, fs: Fs = nodeFs): LogSegment {
  const dir = mkdtempSync(join(tmpdir(), 'gregor-segment-'));
  dirs.push(dir);
  const seg = LogSegment.create(fs, dir, 0n, config, 0);
  segments.push(seg);
  return seg;
}

/** Appends batches one call each; returns their layout. */
function fill(seg: LogSegment, specs: readonly { base: bigint; count: number; valueBytes: number }[]): Layout[] {
  const out: Layout[] = [];
  for (const s of specs) {
    const bytes = batchAt(s.base, s.count, s.valueBytes);
    const last = s.base + BigInt(s.count - 1);
    const appended: AppendedBatch[] = [{ baseOffset: s.base, lastOffset: last, maxTimestamp: 1000n, position: 0, size: bytes.length }];
    out.push({ base: s.base, last, position: seg.size, size: bytes.length });
    seg.append(bytes, appended, last);
  }
  return out;
}

/** The read contract, by walking every batch from the index entry on (the reference). */
function referenceRead(seg: LogSegment, target: bigint, maxBytes: number, maxOffset: bigint | undefined, minOne: boolean) {
  const cursor = new BatchCursor(seg.file, seg.offsetIndex.lookup(target).position, seg.size, false);
  let start = -1;
  let total = 0;
  while (cursor.next()) {
    if (start < 0) {
      if (cursor.lastOffset < target) continue;
      start = cursor.position;
    }
    if (maxOffset !== undefined && cursor.lastOffset >= maxOffset) break;
    if (total + cursor.size > maxBytes && !(total === 0 && minOne)) break;
    total += cursor.size;
  }
  return start < 0 ? null : { position: start, size: total };
}

const plain = (r: FileRange | null) => (r === null ? null : { position: r.position, size: r.size });

describe('LogSegment.read', () => {
  it('ends exactly at an index entry when the byte limit falls on it', () => {
    const seg = newSegment(logConfig({ indexIntervalBytes: 1 }));
    const layout = fill(seg, Array.from({ length: 8 }, (_, i) => ({ base: BigInt(i * 3), count: 3, valueBytes: 40 })));
    // With an interval of 1 byte every batch but the first is an index entry.
    expect(seg.offsetIndex.count).toBe(7);
    const at3 = layout[3]!.position;
    expect(plain(seg.read(0n, at3, undefined, true))).toEqual({ position: 0, size: at3 });
    expect(plain(seg.read(0n, at3 - 1, undefined, true))).toEqual({ position: 0, size: layout[2]!.position });
    const at1 = layout[1]!.position;
    expect(plain(seg.read(4n, at3 - at1, undefined, true))).toEqual({ position: at1, size: at3 - at1 });
    // The continuation starts at that entry.
    expect(plain(seg.read(9n, 1, undefined, true))).toEqual({ position: at3, size: layout[3]!.size });
  });

  it('leaves out a batch spanning the maxBytes limit, but returns a first one that does (KIP-74)', () => {
    const seg = newSegment(logConfig({ indexIntervalBytes: 1 << 20 }));
    const layout = fill(seg, [
      { base: 0n, count: 2, valueBytes: 10 },
      { base: 2n, count: 2, valueBytes: 500 },
      { base: 4n, count: 2, valueBytes: 10 },
    ]);
    const [a, b] = layout as [Layout, Layout, Layout];
    expect(plain(seg.read(0n, a.size + b.size - 1, undefined, true))).toEqual({ position: 0, size: a.size });
    expect(plain(seg.read(0n, a.size + b.size, undefined, true))).toEqual({ position: 0, size: a.size + b.size });
    expect(plain(seg.read(2n, b.size - 1, undefined, true))).toEqual({ position: b.position, size: b.size });
    expect(plain(seg.read(3n, 0, undefined, true))).toEqual({ position: b.position, size: b.size });
    expect(plain(seg.read(2n, b.size - 1, undefined, false))).toEqual({ position: b.position, size: 0 });
  });

  it('stops before the batch that maxOffset falls inside', () => {
    const seg = newSegment(logConfig({ indexIntervalBytes: 1 }));
    const layout = fill(seg, Array.from({ length: 6 }, (_, i) => ({ base: BigInt(i * 4), count: 4, valueBytes: 30 })));
    // maxOffset 10 is inside batch 8..11: batches 0..3 and 4..7 only.
    expect(plain(seg.read(0n, 1 << 20, 10n, true))).toEqual({ position: 0, size: layout[2]!.position });
    // At a batch's first offset the batch is excluded too.
    expect(plain(seg.read(0n, 1 << 20, 8n, true))).toEqual({ position: 0, size: layout[2]!.position });
    // Inside the first batch: nothing, even with minOneMessage.
    expect(plain(seg.read(9n, 1 << 20, 10n, true))).toEqual({ position: layout[2]!.position, size: 0 });
    // The byte limit and maxOffset together: the tighter one wins.
    expect(plain(seg.read(0n, layout[1]!.position, 22n, true))).toEqual({ position: 0, size: layout[1]!.position });
    expect(plain(seg.read(0n, 1 << 20, 22n, true))).toEqual({ position: 0, size: layout[5]!.position });
    // At or past the segment's next offset maxOffset cuts nothing.
    expect(plain(seg.read(0n, 1 << 20, 24n, true))).toEqual({ position: 0, size: seg.size });
  });

  it('reads only batch headers, not the batches it returns', () => {
    const counting = new CountingFs();
    const seg = newSegment(logConfig(), counting.fs);
    fill(seg, Array.from({ length: 400 }, (_, i) => ({ base: BigInt(i * 10), count: 10, valueBytes: 1000 })));
    counting.reset();
    let offset = 0n;
    let returned = 0;
    let calls = 0;
    for (;;) {
      const r = seg.read(offset, 1 << 20, undefined, true);
      if (r === null || r.size === 0) break;
      const bytes = readRanges([r]);
      returned += r.size;
      calls++;
      const at = lastBatchStart(bytes);
      offset = bytes.readBigInt64BE(at) + BigInt(bytes.readInt32BE(at + LAST_OFFSET_DELTA)) + 1n;
    }
    expect(returned).toBe(seg.size);
    // Besides the copies (one read each), a few small header reads per call.
    expect(counting.bytes - returned).toBeLessThan(calls * 4096);
    expect(counting.reads).toBeLessThanOrEqual(calls * 3);
  });

  it('continues where the last read ended, also after appends, and forgets that place on truncation', () => {
    const seg = newSegment(logConfig({ indexIntervalBytes: 1 << 20 }));
    const [a, b] = fill(seg, [
      { base: 0n, count: 3, valueBytes: 10 },
      { base: 3n, count: 3, valueBytes: 10 },
    ]) as [Layout, Layout];
    const end = seg.size;
    expect(plain(seg.read(0n, 1 << 20, undefined, true))).toEqual({ position: 0, size: end });
    expect(seg.read(6n, 1 << 20, undefined, true)).toBeNull();
    const [c, d] = fill(seg, [
      { base: 6n, count: 1, valueBytes: 10 },
      { base: 7n, count: 2, valueBytes: 10 },
    ]) as [Layout, Layout];
    expect(plain(seg.read(7n, 1 << 20, undefined, true))).toEqual({ position: d.position, size: d.size });
    expect(plain(seg.read(6n, 1 << 20, undefined, true))).toEqual({ position: c.position, size: c.size + d.size });

    // A read ending at b's end, then a truncation to b and a longer batch in its place.
    expect(plain(seg.read(0n, a.size + b.size, undefined, true))).toEqual({ position: 0, size: a.size + b.size });
    seg.truncateTo(3n);
    const [e] = fill(seg, [{ base: 3n, count: 8, valueBytes: 30 }]) as [Layout];
    expect(e.position + e.size).toBeGreaterThan(c.position);
    expect(plain(seg.read(6n, 1 << 20, undefined, true))).toEqual({ position: e.position, size: e.size });
    expect(seg.read(11n, 1 << 20, undefined, true)).toBeNull();
  });

  for (const seed of Array.from({ length: 12 }, (_, i) => i + 1)) {
    it(`agrees with a walk over every batch (seed ${seed})`, () => {
      const rnd = seededRandom(seed);
      const int = (n: number) => Math.floor(rnd() * n);
      const seg = newSegment(logConfig({ indexIntervalBytes: [1, 50, 300, 1000, 4096, 20000][int(6)]! }));
      const specs: { base: bigint; count: number; valueBytes: number }[] = [];
      let next = 0n;
      for (let i = 0, n = 20 + int(150); i < n; i++) {
        next += int(4) === 0 ? BigInt(int(5)) : 0n; // gaps, as compaction leaves
        const count = 1 + int(6);
        specs.push({ base: next, count, valueBytes: int(5) === 0 ? int(3000) : int(60) });
        next += BigInt(count);
      }
      const layout = fill(seg, specs);
      const end = layout[layout.length - 1]!.last + 1n;
      const boundaries = layout.map((l) => l.position).concat(seg.size);
      const pickMaxBytes = (from: number): number => {
        switch (int(5)) {
          case 0:
            return int(100);
          case 1:
            return 1 << 20;
          case 2: // exactly to a batch boundary, or one byte off either side
            return Math.max(0, boundaries[int(boundaries.length)]! - from + int(3) - 1);
          default:
            return int(seg.size + 1);
        }
      };
      const pickMaxOffset = (): bigint | undefined => (int(3) === 0 ? undefined : BigInt(int(Number(end) + 3)));
      const check = (target: bigint, maxBytes: number, maxOffset: bigint | undefined, minOne: boolean) => {
        const want = referenceRead(seg, target, maxBytes, maxOffset, minOne);
        const got = plain(seg.read(target, maxBytes, maxOffset, minOne));
        expect(got, `read(${target}, ${maxBytes}, ${maxOffset}, ${minOne})`).toEqual(want);
        return got;
      };

      // Random reads.
      for (let i = 0; i < 400; i++) {
        const target = BigInt(int(Number(end) + 2));
        const from = layout.find((l) => l.last >= target)?.position ?? 0;
        check(target, pickMaxBytes(from), pickMaxOffset(), int(4) !== 0);
      }
      // Consumers reading on from the last batch returned.
      for (let c = 0; c < 10; c++) {
        let target = BigInt(int(Number(end)));
        const maxOffset = pickMaxOffset();
        for (let steps = 0; steps < 200; steps++) {
          const from = layout.find((l) => l.last >= target)?.position ?? 0;
          const got = check(target, pickMaxBytes(from), maxOffset, true);
          if (got === null || got.size === 0) break;
          const lastBatch = layout.filter((l) => l.position < got.position + got.size).pop()!;
          target = lastBatch.last + 1n;
        }
      }
    });
  }
});

/** Position within `bytes` (whole batches) of its last batch. */
function lastBatchStart(bytes: Buffer): number {
  let at = 0;
  for (;;) {
    const next = at + bytes.readInt32BE(at + 8) + 12;
    if (next >= bytes.length) return at;
    at = next;
  }
}

/** One batch at `baseOffset` whose record i has timestamps[i]; with `logAppendTime`, the broker's time replaces the max timestamp. */
function timedBatch(
  baseOffset: bigint,
  timestamps: readonly bigint[],
  opts: { compression?: Compression; logAppendTime?: bigint } = {},
): Buffer {
  const b = buildBatch({
    baseOffset,
    records: timestamps.map((timestamp, i) => ({ key: `k${i}`, value: `value ${i} `.repeat(8), timestamp })),
    compression: opts.compression ?? Compression.None,
    logAppendTime: opts.logAppendTime !== undefined,
  });
  if (opts.logAppendTime !== undefined) {
    b.writeBigInt64BE(opts.logAppendTime, MAX_TIMESTAMP);
    writeBatchCrc(b, 0, b.length);
  }
  return b;
}

/** Appends whole batches as the log would after validation; returns each one's position. */
function appendBatches(seg: LogSegment, batches: readonly Buffer[]): number[] {
  return batches.map((bytes) => {
    const h = readBatchHeader(bytes);
    const last = h.baseOffset + BigInt(h.lastOffsetDelta);
    const position = seg.size;
    seg.append(bytes, [{ baseOffset: h.baseOffset, lastOffset: last, maxTimestamp: h.maxTimestamp, position: 0, size: bytes.length }], last);
    return position;
  });
}

describe('LogSegment.findOffsetByTimestamp (Kafka FileRecords.searchForTimestamp)', () => {
  const codecs = [Compression.None, Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd];
  // Batches 0..4 (timestamps 10..14), 5..9 (listed per case), 10..11 (900, 901).
  const cases: {
    name: string;
    middle: bigint[];
    logAppendTime?: bigint;
    target: bigint;
    minOffset?: bigint;
    want: { offset: bigint; timestamp: bigint } | null;
  }[] = [
    { name: 'target between records, mid-batch', middle: [100n, 200n, 300n, 400n, 500n], target: 250n, want: { offset: 7n, timestamp: 300n } },
    { name: 'target equal to a record', middle: [100n, 200n, 300n, 400n, 500n], target: 400n, want: { offset: 8n, timestamp: 400n } },
    { name: 'target at or below the first record', middle: [100n, 200n, 300n, 400n, 500n], target: 15n, want: { offset: 5n, timestamp: 100n } },
    { name: 'last record of the batch', middle: [100n, 200n, 300n, 400n, 500n], target: 450n, want: { offset: 9n, timestamp: 500n } },
    { name: 'past the batch: the next one', middle: [100n, 200n, 300n, 400n, 500n], target: 501n, want: { offset: 10n, timestamp: 900n } },
    { name: 'past every record', middle: [100n, 200n, 300n, 400n, 500n], target: 902n, want: null },
    // Offset order, not the nearest timestamp: 300 at offset 6 comes before 200 at offset 8.
    { name: 'timestamps out of order', middle: [100n, 300n, 50n, 200n, 120n], target: 150n, want: { offset: 6n, timestamp: 300n } },
    { name: 'out of order, from minOffset', middle: [100n, 300n, 50n, 200n, 120n], target: 150n, minOffset: 7n, want: { offset: 8n, timestamp: 200n } },
    { name: 'out of order, none at or after minOffset in the batch', middle: [100n, 300n, 50n, 200n, 120n], target: 250n, minOffset: 7n, want: { offset: 10n, timestamp: 900n } },
    // Every record of a LogAppendTime batch carries the batch's max timestamp.
    { name: 'LogAppendTime: the first record at or after minOffset', middle: [100n, 200n, 300n, 400n, 500n], logAppendTime: 700n, target: 250n, want: { offset: 5n, timestamp: 700n } },
    { name: 'LogAppendTime, from minOffset', middle: [100n, 200n, 300n, 400n, 500n], logAppendTime: 700n, target: 250n, minOffset: 8n, want: { offset: 8n, timestamp: 700n } },
    { name: 'LogAppendTime below the target', middle: [100n, 200n, 300n, 400n, 500n], logAppendTime: 700n, target: 701n, want: { offset: 10n, timestamp: 900n } },
  ];
  for (const compression of codecs) {
    for (const c of cases) {
      it(`${Compression[compression]}: ${c.name}`, () => {
        const seg = newSegment(logConfig({ indexIntervalBytes: 1 }));
        appendBatches(seg, [
          timedBatch(0n, [10n, 11n, 12n, 13n, 14n], { compression }),
          timedBatch(5n, c.middle, { compression, logAppendTime: c.logAppendTime }),
          timedBatch(10n, [900n, 901n], { compression }),
        ]);
        expect(seg.findOffsetByTimestamp(c.target, c.minOffset ?? 0n)).toEqual(c.want);
      });
    }
  }

  it('decodes only the batch holding the answer, and reports one that does not decode', () => {
    const seg = newSegment(logConfig({ indexIntervalBytes: 1 }));
    const first = timedBatch(0n, [10n, 11n, 12n], { compression: Compression.Gzip });
    const second = timedBatch(3n, [100n, 200n, 300n], { compression: Compression.Gzip });
    const third = timedBatch(6n, [400n, 500n], { compression: Compression.Gzip });
    // Ruin the compressed payload of the first and third batches; their headers stay sound.
    first.fill(0x55, BATCH_HEADER_SIZE + 10);
    third.fill(0x55, BATCH_HEADER_SIZE + 10);
    appendBatches(seg, [first, second, third]);
    expect(seg.findOffsetByTimestamp(150n, 0n)).toEqual({ offset: 4n, timestamp: 200n });
    let err: unknown;
    try {
      seg.findOffsetByTimestamp(450n, 0n);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect((err as CorruptRecordError).errorCode).toBe(ErrorCode.CORRUPT_MESSAGE);
    expect((err as Error).message).toMatch(/batch at \d+: cannot decompress/);
    // The segment goes on answering.
    expect(seg.findOffsetByTimestamp(250n, 0n)).toEqual({ offset: 5n, timestamp: 300n });
    expect(seg.findOffsetByTimestamp(501n, 0n)).toBeNull();
  });

  it('reports a batch whose record count disagrees with its records', () => {
    const seg = newSegment(logConfig({ indexIntervalBytes: 1 }));
    const bad = timedBatch(0n, [100n, 200n, 300n]);
    bad.writeInt32BE(4, RECORD_COUNT);
    writeBatchCrc(bad, 0, bad.length);
    appendBatches(seg, [bad]);
    expect(() => seg.findOffsetByTimestamp(150n, 0n)).toThrow(CorruptRecordError);
  });
});

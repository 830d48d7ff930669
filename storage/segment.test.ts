import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LAST_OFFSET_DELTA, buildBatch } from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { type Fs, nodeFs } from './fs.js';
import { type LogConfig, logConfig } from './log-config.js';
import { type AppendedBatch, BatchCursor, type FileRange, LogSegment, readRanges } from './segment.js';

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

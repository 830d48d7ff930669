/**
 * The sparse offset index of one segment: relative offset (int32) and file
 * position (int32) of a batch start, one entry every index.interval.bytes.
 *
 * The entries live in memory, where lookups binary-search them, and are
 * written to the `.index` file when the segment is flushed, rolled or closed.
 * Kafka preallocates its index files to segment.index.bytes because it maps
 * them into memory; without a mapping, preallocation would only add a trim
 * step and the need to tell real entries from zero padding on load, so the
 * file here holds exactly the entries and grows. segment.index.bytes still
 * caps the entry count: a full index rolls the segment, as in Kafka. An index
 * only matters on disk for segments below the recovery point; everything
 * above it is rebuilt from the log after an unclean shutdown.
 */
import { type Fs, readWholeFile, writeFully } from './fs.js';

/** Entries of fixed size kept in memory and mirrored to a file at flush. */
export class IndexEntries {
  buf: Buffer;
  count: number;
  /** Entries [0, written) are in the file; unless `rewrite`, the file holds nothing else. */
  private written: number;
  /** The file must be cut to `written` entries (or created) at the next flush. */
  private rewrite: boolean;
  /** The file's length was not a whole number of entries. */
  readonly partial: boolean;
  /** The file was expected but not there. */
  readonly missing: boolean;

  constructor(
    private readonly fs: Fs,
    readonly path: string,
    readonly entrySize: number,
    readonly maxEntries: number,
    load: boolean,
  ) {
    const bytes = load ? readWholeFile(fs, path) : null;
    if (bytes === null) {
      this.buf = Buffer.alloc(Math.min(64, Math.max(1, maxEntries)) * entrySize);
      this.count = 0;
      this.written = 0;
      this.partial = false;
      this.missing = load;
      this.rewrite = true;
      return;
    }
    this.count = Math.floor(bytes.length / entrySize);
    this.partial = bytes.length % entrySize !== 0;
    this.buf = Buffer.alloc(Math.max(64, this.count) * entrySize);
    bytes.copy(this.buf, 0, 0, this.count * entrySize);
    this.written = this.count;
    this.missing = false;
    this.rewrite = this.partial;
  }

  get isFull(): boolean {
    return this.count >= this.maxEntries;
  }

  /** The byte offset in `buf` of a new entry, growing the buffer as needed. */
  reserve(): number {
    const at = this.count * this.entrySize;
    if (at + this.entrySize > this.buf.length) {
      const grown = Buffer.alloc(this.buf.length * 2);
      this.buf.copy(grown, 0, 0, at);
      this.buf = grown;
    }
    this.count++;
    return at;
  }

  truncateEntries(count: number): void {
    if (count >= this.count) return;
    this.count = count;
    if (this.written > count) {
      this.written = count;
      this.rewrite = true;
    }
  }

  /** Writes the entries not yet in the file and fsyncs it. */
  flush(): void {
    if (this.written === this.count && !this.rewrite) return;
    const fd = this.fs.open(this.path, 'create');
    try {
      if (this.rewrite) this.fs.ftruncate(fd, this.written * this.entrySize);
      const from = this.written * this.entrySize;
      const to = this.count * this.entrySize;
      if (to > from) writeFully(this.fs, fd, this.buf.subarray(from, to), from);
      this.fs.fsync(fd);
    } finally {
      this.fs.close(fd);
    }
    this.written = this.count;
    this.rewrite = false;
  }

  /** Forgets every entry, in memory and (at the next flush) on disk. */
  reset(): void {
    this.truncateEntries(0);
    this.rewrite = true;
  }

  delete(): void {
    if (this.fs.exists(this.path)) this.fs.unlink(this.path);
  }

  /**
   * The last entry i for which `atOrBelow(i * entrySize)` holds, by binary
   * search, or -1 when there is none. It must hold for a prefix of the entries.
   */
  floor(atOrBelow: (at: number) => boolean): number {
    let lo = 0;
    let hi = this.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (atOrBelow(mid * this.entrySize)) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }
}

/** An index of one segment kept in `entries`: what the offset and time indexes have in common. */
export abstract class SegmentIndex {
  protected constructor(protected readonly entries: IndexEntries) {}

  get count(): number {
    return this.entries.count;
  }
  /** A full index rolls the segment; the time index's entry added at the roll may go one past this (the file grows, so it fits). */
  get isFull(): boolean {
    return this.entries.isFull;
  }

  reset(): void {
    this.entries.reset();
  }

  flush(): void {
    this.entries.flush();
  }

  delete(): void {
    this.entries.delete();
  }
}

export interface OffsetPosition {
  offset: bigint;
  position: number;
}

export class OffsetIndex extends SegmentIndex {
  /** `load` reads the existing file; otherwise the index starts empty. */
  constructor(fs: Fs, path: string, readonly baseOffset: bigint, maxIndexBytes: number, load: boolean) {
    super(new IndexEntries(fs, path, 8, Math.floor(maxIndexBytes / 8), load));
  }

  /** Records that the batch starting at `offset` sits at `position`; offsets and positions only grow. */
  append(offset: bigint, position: number): void {
    const rel = Number(offset - this.baseOffset);
    const n = this.entries.count;
    if (n > 0 && rel <= this.entries.buf.readInt32BE((n - 1) * 8)) return;
    const at = this.entries.reserve();
    this.entries.buf.writeInt32BE(rel, at);
    this.entries.buf.writeInt32BE(position, at + 4);
  }

  /** The last entry at or below `target`, or the segment start when there is none. */
  lookup(target: bigint): OffsetPosition {
    const i = this.floorIndex(target);
    if (i < 0) return { offset: this.baseOffset, position: 0 };
    return this.entry(i);
  }

  entry(i: number): OffsetPosition {
    const b = this.entries.buf;
    return { offset: this.baseOffset + BigInt(b.readInt32BE(i * 8)), position: b.readInt32BE(i * 8 + 4) };
  }

  lastEntry(): OffsetPosition {
    return this.entries.count === 0 ? { offset: this.baseOffset, position: 0 } : this.entry(this.entries.count - 1);
  }

  /** Drops the entries for offsets at and after `offset`. */
  truncateTo(offset: bigint): void {
    this.entries.truncateEntries(this.floorIndex(offset - 1n) + 1);
  }

  /** Largest i whose offset <= target, -1 when none. */
  private floorIndex(target: bigint): number {
    const rel = target - this.baseOffset;
    if (rel < 0n) return -1;
    const r = rel > 0x7fffffffn ? 0x7fffffff : Number(rel);
    const b = this.entries.buf;
    return this.entries.floor((at) => b.readInt32BE(at) <= r);
  }

  /**
   * Why the loaded index cannot be trusted for a log of `logSize` bytes, or
   * null: entries must grow strictly in offset and position and point inside the log.
   */
  sanityProblem(logSize: number): string | null {
    if (this.entries.missing) return 'file is missing';
    if (this.entries.partial) return 'length is not a whole number of entries';
    const b = this.entries.buf;
    let lastRel = 0;
    let lastPos = 0;
    for (let i = 0; i < this.entries.count; i++) {
      const rel = b.readInt32BE(i * 8);
      const pos = b.readInt32BE(i * 8 + 4);
      if (rel <= lastRel && i > 0) return `entry ${i} does not advance the offset`;
      if (rel < 0) return `entry ${i} has a negative offset`;
      if (pos <= lastPos && i > 0) return `entry ${i} does not advance the position`;
      if (pos < 0 || pos >= logSize) return `entry ${i} points outside the log`;
      lastRel = rel;
      lastPos = pos;
    }
    return null;
  }
}

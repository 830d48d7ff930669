/**
 * The time index of one segment: timestamp (int64) and relative offset
 * (int32) of the batch where the segment's largest timestamp so far first
 * appeared. Timestamps strictly grow from entry to entry, so a binary search
 * finds where to start looking for the first batch at or after a time.
 * Kept in memory and written at flush, like the offset index.
 */
import { type Fs } from './fs.js';
import { IndexEntries, SegmentIndex } from './offset-index.js';

export interface TimestampOffset {
  timestamp: bigint;
  offset: bigint;
}

const ENTRY = 12;

export class TimeIndex extends SegmentIndex {
  constructor(fs: Fs, path: string, readonly baseOffset: bigint, maxIndexBytes: number, load: boolean) {
    super(new IndexEntries(fs, path, ENTRY, Math.floor(maxIndexBytes / ENTRY), load));
  }

  /** Adds an entry when `timestamp` is larger than the last one. */
  maybeAppend(timestamp: bigint, offset: bigint): void {
    const n = this.entries.count;
    if (n > 0) {
      const last = this.entry(n - 1);
      if (timestamp <= last.timestamp || offset < last.offset) return;
    }
    const at = this.entries.reserve();
    this.entries.buf.writeBigInt64BE(timestamp, at);
    this.entries.buf.writeInt32BE(Number(offset - this.baseOffset), at + 8);
  }

  entry(i: number): TimestampOffset {
    const b = this.entries.buf;
    return { timestamp: b.readBigInt64BE(i * ENTRY), offset: this.baseOffset + BigInt(b.readInt32BE(i * ENTRY + 8)) };
  }

  lastEntry(): TimestampOffset | null {
    return this.entries.count === 0 ? null : this.entry(this.entries.count - 1);
  }

  /** The last entry whose timestamp is at or below `timestamp`, or null when every entry is later. */
  lookup(timestamp: bigint): TimestampOffset | null {
    const b = this.entries.buf;
    const found = this.entries.floor((at) => b.readBigInt64BE(at) <= timestamp);
    return found < 0 ? null : this.entry(found);
  }

  /** Drops the entries that point at `offset` or later. */
  truncateTo(offset: bigint): void {
    let n = this.entries.count;
    while (n > 0 && this.entry(n - 1).offset >= offset) n--;
    this.entries.truncateEntries(n);
  }

  /** Why the loaded index cannot be trusted for a segment whose offsets end before `nextOffset`, or null. */
  sanityProblem(nextOffset: bigint): string | null {
    if (this.entries.missing) return 'file is missing';
    if (this.entries.partial) return 'length is not a whole number of entries';
    let last: TimestampOffset | null = null;
    for (let i = 0; i < this.entries.count; i++) {
      const e = this.entry(i);
      if (e.offset < this.baseOffset || e.offset >= nextOffset) return `entry ${i} points outside the segment`;
      if (last && (e.timestamp <= last.timestamp || e.offset < last.offset)) return `entry ${i} is out of order`;
      last = e;
    }
    return null;
  }
}

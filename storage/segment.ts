/**
 * One segment of a partition log: the `.log` file of whole RecordBatch v2
 * batches, stored verbatim, with its sparse offset index, time index and
 * aborted-transaction index (`.txnindex`, only once a transaction aborts
 * in it). Files are named by the segment's base offset in 20 digits.
 *
 * Invariants: batches in the file are whole and their offsets grow; `size` is
 * the byte length of the valid data (the file is never longer after a
 * successful operation); `nextOffset` is one past the last offset the segment
 * accounts for.
 */
import { join } from 'node:path';
import { ErrorCode } from '../wire/errors.js';
import {
  ATTRIBUTES,
  BASE_TIMESTAMP,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH,
  LAST_OFFSET_DELTA,
  LOG_OVERHEAD,
  MAGIC,
  MAX_TIMESTAMP,
  TIMESTAMP_TYPE_LOG_APPEND,
  batchCrcValid,
  decodeRecords,
} from '../wire/record-batch.js';
import { type Fs, readFully, writeFully } from './fs.js';
import type { LogConfig } from './log-config.js';
import { OffsetIndex, type OffsetPosition } from './offset-index.js';
import { TimeIndex } from './time-index.js';
import { TXN_INDEX_SUFFIX, TransactionIndex } from './txn-index.js';

export const LOG_SUFFIX = '.log';
export const INDEX_SUFFIX = '.index';
export const TIME_INDEX_SUFFIX = '.timeindex';

/** `00000000000000000042.log` for base offset 42. */
export function segmentFileName(baseOffset: bigint, suffix: string): string {
  return baseOffset.toString().padStart(20, '0') + suffix;
}

/** The base offset named by a `.log` file, or null for any other file. */
export function parseSegmentFileName(name: string): bigint | null {
  const m = /^(\d{20})\.log$/.exec(name);
  return m ? BigInt(m[1]!) : null;
}

/** An open segment file. Reads after close throw instead of reaching a reused descriptor. */
export class LogFile {
  private open = true;
  /** Background fsyncs not called back yet: the descriptor stays open until then, so none reaches a reused one. */
  private inFlight = 0;
  constructor(
    readonly fs: Fs,
    readonly path: string,
    private readonly fd: number,
  ) {}

  get isOpen(): boolean {
    return this.open;
  }

  read(buf: Buffer, offset: number, length: number, position: number): number {
    this.check();
    return readFully(this.fs, this.fd, buf, offset, length, position);
  }
  write(buf: Buffer, position: number): void {
    this.check();
    writeFully(this.fs, this.fd, buf, position);
  }
  truncate(length: number): void {
    this.check();
    this.fs.ftruncate(this.fd, length);
  }
  fsync(): void {
    this.check();
    this.fs.fsync(this.fd);
  }
  /** fsync() off the event loop where the Fs can; `cb` gets the error, if any. */
  fsyncAsync(cb: (err: Error | null) => void): void {
    this.check();
    const async = this.fs.fsyncAsync;
    if (async !== undefined) {
      this.inFlight++;
      async.call(this.fs, this.fd, (err) => {
        if (--this.inFlight === 0 && !this.open) {
          try {
            this.fs.close(this.fd);
          } catch {
            // Closed for good either way; a throw here would escape into libuv's callback.
          }
        }
        cb(err);
      });
      return;
    }
    let failure: Error | null = null;
    try {
      this.fs.fsync(this.fd);
    } catch (err) {
      failure = err as Error;
    }
    cb(failure);
  }
  size(): number {
    this.check();
    return this.fs.size(this.fd);
  }
  close(): void {
    if (!this.open) return;
    this.open = false;
    if (this.inFlight === 0) this.fs.close(this.fd);
  }
  private check(): void {
    if (!this.open) throw new Error(`${this.path} is closed (the segment was deleted or the log closed)`);
  }
}

/**
 * A byte range of a segment file holding whole batches. Valid until the log is
 * next truncated, has segments deleted or is closed: materialise it (or send
 * it) before then, in the same tick as the read is the simple rule.
 */
export interface FileRange {
  readonly file: LogFile;
  readonly position: number;
  readonly size: number;
}

/** Copies file ranges into one Buffer, from `alloc` (a fresh one by default). */
export function readRanges(ranges: readonly FileRange[], alloc: (size: number) => Buffer = Buffer.allocUnsafe): Buffer {
  let total = 0;
  for (const r of ranges) total += r.size;
  const out = alloc(total);
  let at = 0;
  for (const r of ranges) {
    const n = r.file.read(out, at, r.size, r.position);
    if (n !== r.size) throw new Error(`${r.file.path}: range ${r.position}+${r.size} is no longer there`);
    at += n;
  }
  return out;
}

/**
 * Walks the batches of a file range without allocating per batch: each
 * `next()` fills the public fields. With `whole`, `buf[at, at + size)` holds the
 * whole batch; otherwise only its 61-byte header is guaranteed. Reads happen in
 * chunks, so many small batches cost one pread.
 */
export class BatchCursor {
  position = 0;
  size = 0;
  baseOffset = 0n;
  lastOffset = 0n;
  maxTimestamp = 0n;
  buf: Buffer;
  at = 0;
  /** Why the walk stopped before `end`, or null when it reached it. */
  problem: string | null = null;
  private chunkPos = 0;
  private chunkLen = 0;
  private nextPos: number;

  constructor(
    private readonly file: LogFile,
    start: number,
    private readonly end: number,
    private readonly whole: boolean,
    private readonly chunkSize = 16384,
  ) {
    this.buf = Buffer.allocUnsafe(chunkSize);
    this.nextPos = start;
  }

  next(): boolean {
    const pos = this.nextPos;
    if (pos >= this.end || this.problem !== null) return false;
    if (this.end - pos < BATCH_HEADER_SIZE) return this.fail(`${this.end - pos} bytes at ${pos} are too few for a batch header`);
    if (!this.load(pos, BATCH_HEADER_SIZE)) return false;
    const b = this.buf;
    const at = this.at;
    const batchLength = b.readInt32BE(at + BATCH_LENGTH);
    if (batchLength < BATCH_HEADER_SIZE - LOG_OVERHEAD) return this.fail(`batch at ${pos} has length ${batchLength}`);
    const size = batchLength + LOG_OVERHEAD;
    if (size > this.end - pos) return this.fail(`batch at ${pos} of ${size} bytes runs past ${this.end}`);
    if (b.readInt8(at + MAGIC) !== 2) return this.fail(`batch at ${pos} has magic ${b.readInt8(at + MAGIC)}`);
    const lastOffsetDelta = b.readInt32BE(at + LAST_OFFSET_DELTA);
    if (lastOffsetDelta < 0) return this.fail(`batch at ${pos} has lastOffsetDelta ${lastOffsetDelta}`);
    this.position = pos;
    this.size = size;
    this.baseOffset = b.readBigInt64BE(at);
    this.lastOffset = this.baseOffset + BigInt(lastOffsetDelta);
    this.maxTimestamp = b.readBigInt64BE(at + MAX_TIMESTAMP);
    if (this.whole && !this.load(pos, size)) return false;
    this.nextPos = pos + size;
    return true;
  }

  /** Makes buf[at, at + length) hold the file's bytes [pos, pos + length). */
  private load(pos: number, length: number): boolean {
    if (pos >= this.chunkPos && pos + length <= this.chunkPos + this.chunkLen) {
      this.at = pos - this.chunkPos;
      return true;
    }
    const want = Math.min(Math.max(length, this.chunkSize), this.end - pos);
    if (this.buf.length < want) this.buf = Buffer.allocUnsafe(want);
    this.chunkPos = pos;
    this.chunkLen = this.file.read(this.buf, 0, want, pos);
    this.at = 0;
    if (this.chunkLen < length) return this.fail(`file ends inside the batch at ${pos}`);
    return true;
  }

  private fail(problem: string): false {
    this.problem = problem;
    return false;
  }
}

/** Header bytes the read path looks at: base offset and length up to lastOffsetDelta. */
const READ_HEADER_BYTES = LAST_OFFSET_DELTA + 4;
/**
 * A header walk's first pread is small (most walks need one or two headers);
 * each further one doubles, up to the largest, so a walk over many small
 * batches takes a few preads instead of one per batch.
 */
const HEADER_WALK_FIRST_CHUNK = 128;
const HEADER_WALK_MAX_CHUNK = 4096;

/**
 * Reads batch headers of one file within `[0, end)`, a chunk at a time into a
 * buffer shared by all segments: reads are synchronous and never nest, and
 * `begin` forgets what the buffer held.
 */
class HeaderWalk {
  size = 0;
  baseOffset = 0n;
  lastOffset = 0n;
  private readonly buf = Buffer.allocUnsafeSlow(HEADER_WALK_MAX_CHUNK);
  private file: LogFile | null = null;
  private end = 0;
  private chunkPos = 0;
  private chunkLen = 0;
  private nextChunk = HEADER_WALK_FIRST_CHUNK;

  begin(file: LogFile, end: number): void {
    this.file = file;
    this.end = end;
    this.chunkLen = 0;
    this.restart();
  }

  /** The next pread is small again: for a walk far from the last one. */
  restart(): void {
    this.nextChunk = HEADER_WALK_FIRST_CHUNK;
  }

  /** Fills the fields from the batch at `pos`; false when no sound batch header (ending by `end`) is there. */
  at(pos: number): boolean {
    if (this.end - pos < BATCH_HEADER_SIZE) return false;
    if (pos < this.chunkPos || pos + READ_HEADER_BYTES > this.chunkPos + this.chunkLen) {
      this.chunkPos = pos;
      this.chunkLen = this.file!.read(this.buf, 0, Math.min(this.nextChunk, this.end - pos), pos);
      if (this.nextChunk < HEADER_WALK_MAX_CHUNK) this.nextChunk *= 2;
      if (this.chunkLen < READ_HEADER_BYTES) return false;
    }
    const b = this.buf;
    const at = pos - this.chunkPos;
    const batchLength = b.readInt32BE(at + BATCH_LENGTH);
    if (batchLength < BATCH_HEADER_SIZE - LOG_OVERHEAD || batchLength + LOG_OVERHEAD > this.end - pos) return false;
    if (b.readInt8(at + MAGIC) !== 2) return false;
    const lastOffsetDelta = b.readInt32BE(at + LAST_OFFSET_DELTA);
    if (lastOffsetDelta < 0) return false;
    this.size = batchLength + LOG_OVERHEAD;
    this.baseOffset = b.readBigInt64BE(at);
    this.lastOffset = this.baseOffset + BigInt(lastOffsetDelta);
    return true;
  }
}

const headerWalk = new HeaderWalk();

/** A batch as the log appends it: offsets already assigned, position within the appended buffer. */
export interface AppendedBatch {
  baseOffset: bigint;
  lastOffset: bigint;
  maxTimestamp: bigint;
  position: number;
  size: number;
}

export interface BatchLocation {
  position: number;
  size: number;
  baseOffset: bigint;
  lastOffset: bigint;
}

/** A record found by timestamp (Kafka's FileRecords.TimestampAndOffset, without the leader epoch). */
export interface TimestampAndOffset {
  offset: bigint;
  timestamp: bigint;
}

/**
 * Stored batches that cannot be read (Kafka's CorruptRecordException). Only
 * the operation fails: the partition answers CORRUPT_MESSAGE and the log
 * stays online, unlike a StorageError.
 */
export class CorruptRecordError extends Error {
  readonly errorCode = ErrorCode.CORRUPT_MESSAGE;
  constructor(message: string) {
    super(message);
    this.name = 'CorruptRecordError';
  }
}

const INT32_MAX = 0x7fffffffn;
const RECOVERY_CHUNK = 1 << 20;

export class LogSegment {
  size: number;
  nextOffset: bigint;
  /** Largest batch max timestamp in the segment, -1 when none, and the base offset of the first batch carrying it. */
  maxTimestamp = -1n;
  offsetOfMaxTimestamp: bigint;
  private bytesSinceLastIndexEntry = 0;
  /**
   * When the segment last took an append, by the log's clock; the time it was
   * opened for a segment from disk. Never earlier than the real last write, so
   * a segment judged by it (one whose batches carry no timestamp) is only ever
   * kept longer than retention.ms, never shorter.
   */
  lastModifiedMs: number;
  /** Max timestamp of the first batch (Kafka's segment.ms rule); undefined until read. */
  private firstBatchTimestamp: bigint | null | undefined = undefined;
  /**
   * Where the last read ended: the first batch whose last offset is at or
   * after `readAheadOffset` starts at `readAheadPosition` (-1n: nothing
   * known). Appends keep it true; truncation and recovery forget it.
   */
  private readAheadOffset = -1n;
  private readAheadPosition = 0;

  private constructor(
    private readonly fs: Fs,
    readonly dir: string,
    readonly baseOffset: bigint,
    private readonly config: LogConfig,
    readonly file: LogFile,
    readonly offsetIndex: OffsetIndex,
    readonly timeIndex: TimeIndex,
    readonly txnIndex: TransactionIndex,
    /** When this segment object came to be, for segment.ms when batches carry no timestamp. */
    readonly createdMs: number,
  ) {
    this.size = 0;
    this.nextOffset = baseOffset;
    this.offsetOfMaxTimestamp = baseOffset;
    this.lastModifiedMs = createdMs;
  }

  /**
   * The timestamp retention judges the segment by: its largest batch
   * timestamp, or when no batch carries one, the time of its last append.
   */
  get largestTimestamp(): number {
    return this.maxTimestamp >= 0n ? Number(this.maxTimestamp) : this.lastModifiedMs;
  }

  static create(fs: Fs, dir: string, baseOffset: bigint, config: LogConfig, nowMs: number): LogSegment {
    const logPath = join(dir, segmentFileName(baseOffset, LOG_SUFFIX));
    for (const suffix of [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX]) {
      const p = join(dir, segmentFileName(baseOffset, suffix));
      if (fs.exists(p)) fs.unlink(p);
    }
    const fd = fs.open(logPath, 'create');
    const file = new LogFile(fs, logPath, fd);
    try {
      if (fs.size(fd) > 0) fs.ftruncate(fd, 0);
    } catch (err) {
      file.close();
      throw err;
    }
    return LogSegment.withIndexes(fs, dir, baseOffset, config, file, false, nowMs);
  }

  /** A segment over `file` with its two indexes, read from disk when `load` is set. */
  private static withIndexes(fs: Fs, dir: string, baseOffset: bigint, config: LogConfig, file: LogFile, load: boolean, nowMs: number): LogSegment {
    const index = (suffix: string): string => join(dir, segmentFileName(baseOffset, suffix));
    return new LogSegment(
      fs,
      dir,
      baseOffset,
      config,
      file,
      new OffsetIndex(fs, index(INDEX_SUFFIX), baseOffset, config.segmentIndexBytes, load),
      new TimeIndex(fs, index(TIME_INDEX_SUFFIX), baseOffset, config.segmentIndexBytes, load),
      new TransactionIndex(fs, index(TXN_INDEX_SUFFIX)),
      nowMs,
    );
  }

  /** Opens an existing segment; the caller then runs `loadTail()` (trusted) or `recover()`. */
  static open(fs: Fs, dir: string, baseOffset: bigint, config: LogConfig, nowMs: number): LogSegment {
    const logPath = join(dir, segmentFileName(baseOffset, LOG_SUFFIX));
    const file = new LogFile(fs, logPath, fs.open(logPath, 'readWrite'));
    try {
      const seg = LogSegment.withIndexes(fs, dir, baseOffset, config, file, true, nowMs);
      seg.size = file.size();
      return seg;
    } catch (err) {
      file.close();
      throw err;
    }
  }

  /**
   * For a segment below the recovery point: trusts the data and checks the
   * indexes against it, reading only from the last offset-index entry on.
   * Returns why the segment needs `recover()`, or null when it loaded.
   */
  loadTail(): string | null {
    const problem = this.offsetIndex.sanityProblem(this.size);
    if (problem) return `offset index: ${problem}`;
    const tail = this.rescanTail(true);
    if (tail) return tail;
    const timeProblem = this.timeIndex.sanityProblem(this.nextOffset);
    if (timeProblem) return `time index: ${timeProblem}`;
    const txnProblem = this.txnIndex.sanityProblem();
    return txnProblem ? `transaction index: ${txnProblem}` : null;
  }

  /**
   * Recomputes nextOffset (when `setNext`), the max timestamp and the bytes
   * since the last index entry from the last offset-index entry to the end.
   * Every batch before that entry is covered by the time index: whenever an
   * offset entry is added, the time index is offered the max so far.
   */
  private rescanTail(setNext: boolean): string | null {
    const from = this.offsetIndex.lastEntry();
    const lastTime = this.timeIndex.lastEntry();
    this.maxTimestamp = lastTime ? lastTime.timestamp : -1n;
    this.offsetOfMaxTimestamp = lastTime ? lastTime.offset : this.baseOffset;
    this.bytesSinceLastIndexEntry = 0;
    const cursor = new BatchCursor(this.file, from.position, this.size, false);
    let first = true;
    let next = this.baseOffset;
    while (cursor.next()) {
      if (first && this.offsetIndex.count > 0 && cursor.baseOffset !== from.offset) {
        return `offset index entry for ${from.offset} points at a batch starting at ${cursor.baseOffset}`;
      }
      first = false;
      if (cursor.maxTimestamp > this.maxTimestamp) {
        this.maxTimestamp = cursor.maxTimestamp;
        this.offsetOfMaxTimestamp = cursor.baseOffset;
      }
      this.bytesSinceLastIndexEntry += cursor.size;
      next = cursor.lastOffset + 1n;
    }
    if (cursor.problem) return cursor.problem;
    if (setNext) this.nextOffset = next;
    return null;
  }

  /**
   * Verifies every batch (size, magic, CRC, growing offsets), rebuilds both
   * indexes from scratch and cuts the file at the first bad byte. Returns the
   * number of bytes cut.
   */
  recover(): number {
    this.forgetReadEnd();
    const fileSize = this.file.size();
    this.offsetIndex.reset();
    this.timeIndex.reset();
    this.maxTimestamp = -1n;
    this.offsetOfMaxTimestamp = this.baseOffset;
    this.bytesSinceLastIndexEntry = 0;
    this.firstBatchTimestamp = undefined;
    let next = this.baseOffset;
    let good = 0;
    const cursor = new BatchCursor(this.file, 0, fileSize, true, RECOVERY_CHUNK);
    while (cursor.next()) {
      if (!batchCrcValid(cursor.buf, cursor.at, cursor.size)) break;
      if (cursor.baseOffset < next || cursor.lastOffset - this.baseOffset > INT32_MAX) break;
      this.indexBatch(cursor.baseOffset, cursor.maxTimestamp, cursor.position, cursor.size);
      next = cursor.lastOffset + 1n;
      good = cursor.position + cursor.size;
    }
    if (good < fileSize) this.file.truncate(good);
    this.size = good;
    this.nextOffset = next;
    return fileSize - good;
  }

  /** Index bookkeeping for one batch at `position`, shared by append and recovery. */
  private indexBatch(baseOffset: bigint, maxTimestamp: bigint, position: number, size: number): void {
    if (maxTimestamp > this.maxTimestamp) {
      this.maxTimestamp = maxTimestamp;
      this.offsetOfMaxTimestamp = baseOffset;
    }
    if (this.bytesSinceLastIndexEntry > this.config.indexIntervalBytes) {
      this.offsetIndex.append(baseOffset, position);
      this.timeIndex.maybeAppend(this.maxTimestamp, this.offsetOfMaxTimestamp);
      this.bytesSinceLastIndexEntry = 0;
    }
    this.bytesSinceLastIndexEntry += size;
  }

  /**
   * Writes `batches` at the end of the file in one write. On failure the
   * file is cut back to where it was (when the disk still allows) and the
   * segment's state is unchanged; the error is rethrown.
   */
  append(batches: Buffer, appended: readonly AppendedBatch[], lastOffset: bigint): void {
    const start = this.size;
    try {
      this.file.write(batches, start);
    } catch (err) {
      try {
        this.file.truncate(start);
      } catch {
        // The torn bytes stay past `size`, invisible to reads; recovery cuts them at the next open.
      }
      throw err;
    }
    this.size = start + batches.length;
    if (start === 0 && appended.length > 0) this.firstBatchTimestamp = appended[0]!.maxTimestamp;
    for (const b of appended) this.indexBatch(b.baseOffset, b.maxTimestamp, start + b.position, b.size);
    this.nextOffset = lastOffset + 1n;
  }

  /**
   * Kafka's roll rule for an append of `bytes` bytes whose max timestamp is
   * `maxTimestamp` and last offset `lastOffset`: the segment is not empty and
   * would exceed segment.bytes, or has aged past segment.ms (measured between
   * its first batch's timestamp and the new one, or by the clock when batches
   * carry no timestamp), or an index is full, or the offsets would no longer
   * fit the indexes' 32-bit relative offsets.
   */
  shouldRoll(bytes: number, maxTimestamp: bigint, lastOffset: bigint, nowMs: number): boolean {
    if (this.size === 0) return false;
    if (this.size > this.config.segmentBytes - bytes) return true;
    const first = this.readFirstBatchTimestamp();
    const waited = first !== null && first >= 0n ? Number(maxTimestamp - first) : nowMs - this.createdMs;
    if (waited > this.config.segmentMs) return true;
    if (this.offsetIndex.isFull || this.timeIndex.isFull) return true;
    return lastOffset - this.baseOffset > INT32_MAX;
  }

  private readFirstBatchTimestamp(): bigint | null {
    if (this.firstBatchTimestamp !== undefined) return this.firstBatchTimestamp;
    if (this.size < BATCH_HEADER_SIZE) return (this.firstBatchTimestamp = null);
    const header = Buffer.allocUnsafe(BATCH_HEADER_SIZE);
    this.file.read(header, 0, BATCH_HEADER_SIZE, 0);
    return (this.firstBatchTimestamp = header.readBigInt64BE(MAX_TIMESTAMP));
  }

  /**
   * The first batch whose last offset is at or after `target`, found through
   * the offset index and then at most one index interval of headers.
   */
  findBatch(target: bigint): BatchLocation | null {
    const from = this.offsetIndex.lookup(target);
    const cursor = new BatchCursor(this.file, from.position, this.size, false);
    while (cursor.next()) {
      if (cursor.lastOffset >= target) {
        return { position: cursor.position, size: cursor.size, baseOffset: cursor.baseOffset, lastOffset: cursor.lastOffset };
      }
    }
    return null;
  }

  /**
   * Whole batches from the one holding `target`: at most `maxBytes` (but the
   * first one regardless when `minOneMessage`), none whose last offset
   * reaches `maxOffset`. Null when the segment holds nothing at or after `target`.
   *
   * Only batch headers near the two ends are read, never the batches between:
   * the start comes from the position where the previous read of this segment
   * ended (when `target` is where it left off) or from the offset index and a
   * walk of at most one index interval; the end is the whole segment when it
   * fits, otherwise a walk from the last index entry at or before the byte
   * limit (or before `maxOffset`, whichever comes first).
   */
  read(target: bigint, maxBytes: number, maxOffset: bigint | undefined, minOneMessage: boolean): FileRange | null {
    const size = this.size;
    const w = headerWalk;
    w.begin(this.file, size);
    let start: number;
    if (target === this.readAheadOffset && target >= 0n) {
      start = this.readAheadPosition;
      if (start >= size) return null;
    } else {
      start = this.offsetIndex.lookup(target).position;
      for (;;) {
        if (start >= size || !w.at(start)) return null;
        if (w.lastOffset >= target) break;
        start += w.size;
      }
    }
    const limit = maxBytes >= size - start ? size : start + Math.max(0, maxBytes);
    const capped = maxOffset !== undefined && maxOffset < this.nextOffset;
    if (!capped && limit === size) {
      // Every batch from `start` on fits; none can reach maxOffset (all end before nextOffset).
      this.rememberReadEnd(this.nextOffset, size);
      return { file: this.file, position: start, size: size - start };
    }

    // Batches before `from` fit within `limit` and end below `maxOffset`: walk only from there.
    let from = start;
    let fromKey = target;
    if (limit > start) {
      const byPosition = this.indexEntryAtOrBefore(limit);
      let best = byPosition;
      if (capped) {
        const byOffset = this.offsetIndex.lookup(maxOffset);
        if (byOffset.position < best.position) best = byOffset;
      }
      if (best.position > start) {
        from = best.position;
        fromKey = best.offset;
      }
    }

    let pos = from;
    let key = fromKey;
    let sound = true;
    if (from > start) w.restart();
    for (;;) {
      if (pos >= limit && pos > start) break;
      if (pos >= size || !w.at(pos)) {
        sound = pos >= size;
        break;
      }
      if (capped && w.lastOffset >= maxOffset) break;
      if (pos + w.size > limit) {
        if (pos === start && minOneMessage) {
          key = w.lastOffset + 1n;
          pos += w.size;
        }
        break;
      }
      key = w.lastOffset + 1n;
      pos += w.size;
    }
    if (sound) this.rememberReadEnd(key, pos);
    return { file: this.file, position: start, size: pos - start };
  }

  /**
   * Notes that the first batch whose last offset is at or after `offset`
   * starts at `position` (the segment end when there is none yet), so the
   * read that continues from `offset` needs no index lookup.
   */
  private rememberReadEnd(offset: bigint, position: number): void {
    this.readAheadOffset = offset;
    this.readAheadPosition = position;
  }

  private forgetReadEnd(): void {
    this.readAheadOffset = -1n;
    this.readAheadPosition = 0;
  }

  /** The last offset-index entry whose position is at or before `position`, or the segment start. */
  private indexEntryAtOrBefore(position: number): OffsetPosition {
    const index = this.offsetIndex;
    let lo = 0;
    let hi = index.count - 1;
    let found: OffsetPosition = { offset: this.baseOffset, position: 0 };
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const e = index.entry(mid);
      if (e.position <= position) {
        found = e;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /**
   * Kafka's LogSegment.findOffsetByTimestamp: the first record, in offset
   * order, at or after `minOffset` whose timestamp is at least `timestamp`,
   * or null when the segment has none. The time index gives a batch to start
   * from; batch headers are walked from there, and only a batch whose max
   * timestamp reaches `timestamp` is read whole and decoded (decompressed if
   * need be) for its records. A record of a LogAppendTime batch carries the
   * batch's max timestamp. Stored bytes that do not decode throw
   * CorruptRecordError; the segment stays usable.
   *
   * Example: one batch at offsets 10..12 with record timestamps 100, 300, 200:
   * findOffsetByTimestamp(150n, 0n) -> { offset: 11n, timestamp: 300n };
   * findOffsetByTimestamp(150n, 12n) -> { offset: 12n, timestamp: 200n };
   * findOffsetByTimestamp(301n, 0n) -> null. The same batch appended with
   * LogAppendTime 500: findOffsetByTimestamp(150n, 0n) -> { offset: 10n, timestamp: 500n }.
   */
  findOffsetByTimestamp(timestamp: bigint, minOffset: bigint): TimestampAndOffset | null {
    if (this.maxTimestamp < timestamp) return null;
    const hint = this.timeIndex.lookup(timestamp);
    const startOffset = hint && hint.offset > minOffset ? hint.offset : minOffset;
    const from = this.offsetIndex.lookup(startOffset);
    const cursor = new BatchCursor(this.file, from.position, this.size, false);
    while (cursor.next()) {
      if (cursor.lastOffset < minOffset || cursor.maxTimestamp < timestamp) continue;
      const found = this.firstRecordAtOrAfter(cursor.position, cursor.size, timestamp, minOffset);
      if (found) return found;
    }
    if (cursor.problem) throw new CorruptRecordError(`${this.file.path}: ${cursor.problem}`);
    return null;
  }

  /**
   * Reads the batch at `position` and returns its first record (in offset
   * order, as Kafka iterates) with offset >= minOffset and timestamp >= target.
   */
  private firstRecordAtOrAfter(position: number, size: number, target: bigint, minOffset: bigint): TimestampAndOffset | null {
    const batch = Buffer.allocUnsafe(size);
    if (this.file.read(batch, 0, size, position) !== size) {
      throw new CorruptRecordError(`${this.file.path}: file ends inside the batch at ${position}`);
    }
    const decoded = decodeRecords(batch);
    if (!decoded.ok) throw new CorruptRecordError(`${this.file.path}: batch at ${position}: ${decoded.error}`);
    const baseOffset = batch.readBigInt64BE(0);
    const baseTimestamp = batch.readBigInt64BE(BASE_TIMESTAMP);
    const logAppendTime = (batch.readInt16BE(ATTRIBUTES) & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
    const maxTimestamp = batch.readBigInt64BE(MAX_TIMESTAMP);
    for (const record of decoded.records) {
      const offset = baseOffset + BigInt(record.offsetDelta);
      // Java's long addition wraps; so does the record timestamp Kafka computes.
      const ts = logAppendTime ? maxTimestamp : BigInt.asIntN(64, baseTimestamp + record.timestampDelta);
      if (ts >= target && offset >= minOffset) return { offset, timestamp: ts };
    }
    return null;
  }

  /**
   * Drops every batch whose last offset is at or after `offset` and leaves
   * the segment ending at `offset`. Returns the bytes dropped.
   */
  truncateTo(offset: bigint): number {
    this.forgetReadEnd();
    const cut = this.findBatch(offset);
    this.nextOffset = offset < this.nextOffset ? offset : this.nextOffset;
    if (!cut) return 0;
    const dropped = this.size - cut.position;
    this.file.truncate(cut.position);
    this.size = cut.position;
    this.offsetIndex.truncateTo(cut.baseOffset);
    this.timeIndex.truncateTo(cut.baseOffset);
    this.txnIndex.truncateTo(offset);
    if (cut.position === 0) this.firstBatchTimestamp = undefined;
    const problem = this.rescanTail(false);
    if (problem) throw new Error(`${this.file.path}: ${problem} after truncation`);
    return dropped;
  }

  /** The final time-index entry, so the max timestamp survives a restart without a scan. */
  onBecomeInactive(): void {
    if (this.maxTimestamp >= 0n) this.timeIndex.maybeAppend(this.maxTimestamp, this.offsetOfMaxTimestamp);
  }

  flush(): void {
    this.file.fsync();
    this.flushIndexes();
  }

  /** Fsyncs the log file off the event loop where the Fs can (then flushIndexes() completes a flush). */
  fsyncLogAsync(cb: (err: Error | null) => void): void {
    this.file.fsyncAsync(cb);
  }

  /** Writes out and fsyncs the indexes (flush() without the log file). */
  flushIndexes(): void {
    this.offsetIndex.flush();
    this.timeIndex.flush();
    this.txnIndex.flush();
  }

  close(): void {
    this.file.close();
    this.txnIndex.close();
  }

  /**
   * Removes the segment's index files and, with `withLog`, its log file, but
   * keeps the log file open: reads through this segment go on until close().
   */
  unlinkFiles(withLog: boolean): void {
    if (withLog && this.fs.exists(this.file.path)) this.fs.unlink(this.file.path);
    this.offsetIndex.delete();
    this.timeIndex.delete();
    this.txnIndex.delete();
  }

  delete(): void {
    this.file.close();
    if (this.fs.exists(this.file.path)) this.fs.unlink(this.file.path);
    this.offsetIndex.delete();
    this.timeIndex.delete();
    this.txnIndex.delete();
  }
}

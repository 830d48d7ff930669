/**
 * Log compaction (cleanup.policy `compact`, alone or with `delete`): keeps,
 * for every key, at least its latest record, and drops the older ones.
 *
 * What may be cleaned: the non-active segments lying wholly below the high
 * watermark and the first unstable offset (an open transaction holds
 * compaction back, as in Kafka), up to the first one whose largest
 * timestamp is younger than min.compaction.lag.ms. Its base offset is the pass's dirty end. Offsets
 * from the cleaner's first dirty offset up to the dirty end are "dirty": a
 * pass maps every key seen there to its latest offset, then rewrites the
 * segments from the log start to the dirty end, in groups whose sizes add
 * up to at most segment.bytes, merging small segments. A record goes when
 * the map holds a later offset for its key; a tombstone (null value) goes
 * too once its batch's delete horizon has passed (below). Everything else
 * stays, offsets unchanged: a batch keeps its base offset and last offset
 * delta, its surviving records keep their offset deltas and bytes, and it
 * is recompressed with its own codec; a batch left with no record
 * disappears. After the pass everything below the dirty end is clean.
 *
 * Tombstones, as Kafka 3.1+ (KIP-534): a tombstone stays for
 * delete.retention.ms after the first pass that kept it, whatever its
 * record timestamp. That pass stamps the batch holding it with a delete
 * horizon, now + delete.retention.ms (the pass's start time): the
 * DELETE_HORIZON attribute bit is set and baseTimestamp holds the horizon,
 * each record's timestampDelta being rewritten so that baseTimestamp +
 * timestampDelta, the record's timestamp, does not change. A stamped batch
 * keeps its horizon when later passes rewrite it; a pass that starts at or
 * after the horizon drops its tombstones. Between two passes a consumer
 * reading to the end within delete.retention.ms of the first one sees the
 * delete. A pass also becomes due, dirty data or not, once the earliest
 * horizon it left behind has passed (known in this process only; after a
 * restart such tombstones go with the next pass that dirty data brings, as
 * in Kafka).
 *
 * Kept as they are, and not mapped: control batches (transaction markers),
 * transactional batches (committed or aborted: they neither lose records
 * nor make others go, so an aborted record never hides a committed one and
 * the aborted-transaction indexes stay true; the cleaned segment takes over
 * the index entries of the segments it replaces), records without a key
 * (a compacted topic refuses them; one may predate a change of policy),
 * and batches whose CRC or records do not check out.
 *
 * The work goes in bounded steps for a timer to drive (`step`): mapping one
 * segment, or rewriting one group. Appends only touch the active segment,
 * which no step reads or writes; everything is synchronous, so no append
 * runs inside a step. Between steps the log may grow, lose segments to
 * retention (the pass goes on with what is left) or be truncated (the pass
 * is dropped and the whole log counts as dirty again).
 *
 * Where a crash leaves things: see PartitionLog.replaceSegments. The first
 * dirty offset is the cleaner's progress; the LogManager checkpoints it at
 * the end of each pass (`cleaner-offset-checkpoint`) and hands it back to
 * the cleaner it makes after a restart. Without one the first pass treats
 * the whole log as dirty, which costs a read of it and changes nothing a
 * consumer can see.
 */
import { Compression, compress } from '../wire/compression.js';
import {
  ATTRIBUTES,
  BASE_TIMESTAMP,
  BATCH_LENGTH,
  COMPRESSION_MASK,
  CONTROL,
  DELETE_HORIZON,
  LOG_OVERHEAD,
  MAX_TIMESTAMP,
  PRODUCER_ID,
  RECORDS,
  RECORD_COUNT,
  TIMESTAMP_TYPE_LOG_APPEND,
  TRANSACTIONAL,
  batchCrcValid,
  deleteHorizonMs,
  recordsPayload,
  writeBatchCrc,
} from '../wire/record-batch.js';
import { Reader } from '../wire/reader.js';
import { Writer } from '../wire/writer.js';
import type { PartitionLog } from './log.js';
import { BatchCursor, type LogSegment } from './segment.js';

const INT32_MAX = 0x7fffffffn;
const READ_CHUNK = 1 << 20;
const WRITE_CHUNK = 1 << 20;

/** What one step did: nothing to do, mapped one segment, rewrote one group, or finished a pass. */
export type CleanStep = 'idle' | 'mapped' | 'cleaned' | 'done';

interface Pass {
  /** When the pass started: tombstones are judged and horizons stamped against it, as Kafka uses one time per cleaning. */
  now: number;
  dirtyEnd: bigint;
  /** Key (bytes as latin1) -> latest offset in [first dirty, dirtyEnd). */
  map: Map<string, bigint>;
  /** Next offset to map; mapping is over once it reaches dirtyEnd. */
  mapFrom: bigint;
  /** Segments with a base below this have been rewritten in this pass. */
  cleanFrom: bigint;
  /** Earliest delete horizon of a batch this pass kept with a tombstone. */
  tombstoneDueMs: number;
  /** Last offsets of each producer's last batch, kept whole so that its sequence state can be rebuilt from the log. */
  producerLastBatches: ReadonlySet<bigint>;
}

/** One record's place in a batch's (decompressed) records and what the cleaner needs of it. */
interface RecordInfo {
  /** Where its length varint starts. */
  start: number;
  /** Its attributes byte, after the length. */
  bodyStart: number;
  /** The byte after its timestampDelta. */
  timestampEnd: number;
  end: number;
  offsetDelta: number;
  timestampDelta: bigint;
  key: Buffer | null;
  isTombstone: boolean;
}

/**
 * Compacts one partition log, a bounded step at a time.
 *
 * Example: a compacted log holding a@0, b@1, a@2, c@3, b@4 in a rolled
 * segment, high watermark at the log end: cleaner.cleanAll(now) leaves
 * c@3, a@2, b@4 in offset order a@2, c@3, b@4, and read(0n, ..) returns the
 * batch that holds offset 2.
 */
export class LogCleaner {
  private firstDirty: bigint | null = null;
  private truncationsSeen: number;
  private pass: Pass | null = null;
  /** When a tombstone kept by an earlier pass may go; Infinity when none waits. */
  private tombstoneDueMs = Number.POSITIVE_INFINITY;

  /**
   * `checkpointed` is the first dirty offset an earlier run reached (from
   * the cleaner checkpoint), for a log not truncated since. As in Kafka's
   * LogCleanerManager.cleanableOffsets, one below the log start counts
   * from the log start, and one past the log end (data lost at the end of
   * the log) is not trusted: the whole log is dirty again.
   *
   * Example: new LogCleaner(log, 40n) on a log of offsets 0..99 maps only
   * from 40 in its first pass; new LogCleaner(log, 500n) maps from 0.
   */
  constructor(
    readonly log: PartitionLog,
    checkpointed?: bigint,
  ) {
    this.truncationsSeen = log.truncations;
    if (checkpointed !== undefined && checkpointed <= log.logEndOffset) this.firstDirty = checkpointed;
  }

  /** The offset below which the log has been cleaned; the log start before any pass. */
  get firstDirtyOffset(): bigint {
    const start = this.log.logStartOffset;
    return this.firstDirty === null || this.firstDirty < start ? start : this.firstDirty;
  }

  /**
   * Does one bounded piece of work: starts a pass when there is dirty data
   * or a tombstone has come due, maps one segment, or rewrites one group.
   * Returns 'idle' when there is nothing to do, 'done' when a pass ended.
   */
  step(now: number): CleanStep {
    const log = this.log;
    if (!log.config.cleanupPolicy.includes('compact')) return 'idle';
    if (log.truncations !== this.truncationsSeen) {
      // Where the truncation cut is not known here, so nothing cleaned is trusted.
      this.truncationsSeen = log.truncations;
      this.firstDirty = null;
      this.pass = null;
    }
    const segments = log.segmentsForCleaning();
    if (this.pass === null) {
      const dirtyEnd = this.dirtyEnd(segments, now);
      const firstDirty = this.firstDirtyOffset;
      if (firstDirty >= dirtyEnd && now < this.tombstoneDueMs) return 'idle';
      if (dirtyEnd <= log.logStartOffset) return 'idle';
      this.pass = {
        now,
        dirtyEnd,
        map: new Map(),
        mapFrom: firstDirty < dirtyEnd ? firstDirty : dirtyEnd,
        cleanFrom: log.logStartOffset,
        tombstoneDueMs: Number.POSITIVE_INFINITY,
        producerLastBatches: log.producerLastBatchOffsets(),
      };
    }
    const pass = this.pass;
    if (pass.mapFrom < pass.dirtyEnd) {
      const i = segments.findIndex((s, k) => s.baseOffset < pass.dirtyEnd && nextBase(segments, k) > pass.mapFrom);
      if (i < 0) pass.mapFrom = pass.dirtyEnd;
      else {
        mapSegment(segments[i]!, pass.mapFrom, pass.map);
        pass.mapFrom = nextBase(segments, i);
      }
      return 'mapped';
    }
    const group = this.nextGroup(segments, pass);
    if (group.length === 0) {
      // A pass begun only for a due tombstone may end below what was already clean.
      if (this.firstDirty === null || this.firstDirty < pass.dirtyEnd) this.firstDirty = pass.dirtyEnd;
      this.tombstoneDueMs = pass.tombstoneDueMs;
      this.pass = null;
      return 'done';
    }
    const end = nextBase(segments, segments.indexOf(group[group.length - 1]!));
    const horizon = BigInt(pass.now) + BigInt(log.config.deleteRetentionMs);
    log.replaceSegments(group, (write) => {
      const out = new ChunkedWriter(write);
      for (const seg of group) {
        const due = cleanSegment(seg, pass.map, BigInt(pass.now), horizon, pass.producerLastBatches, out);
        if (due < pass.tombstoneDueMs) pass.tombstoneDueMs = due;
      }
      out.flush();
    });
    pass.cleanFrom = end;
    return 'cleaned';
  }

  /**
   * Runs steps until a pass ends or there is nothing to do; for tests and
   * for callers that do not mind the wait. Returns the number of groups
   * rewritten.
   */
  cleanAll(now: number): number {
    let rewritten = 0;
    for (;;) {
      const s = this.step(now);
      if (s === 'cleaned') rewritten++;
      if (s === 'idle' || s === 'done') return rewritten;
    }
  }

  /**
   * The base offset of the first segment that may not be cleaned: the
   * active one, one reaching past the high watermark, or one younger than
   * min.compaction.lag.ms; every segment after it waits too.
   */
  private dirtyEnd(segments: readonly LogSegment[], now: number): bigint {
    const hw = this.log.highWatermark;
    // As Kafka's cleanableOffsets: nothing at or after the first unstable offset is cleaned yet.
    const unstable = this.log.firstUnstableOffset;
    const lag = this.log.config.minCompactionLagMs;
    for (let i = 0; i < segments.length - 1; i++) {
      const seg = segments[i]!;
      if (nextBase(segments, i) > hw) return seg.baseOffset;
      if (unstable !== null && nextBase(segments, i) > unstable) return seg.baseOffset;
      if (lag > 0 && now - seg.largestTimestamp < lag) return seg.baseOffset;
    }
    return segments[segments.length - 1]!.baseOffset;
  }

  /** The next run of segments to rewrite: from cleanFrom, below dirtyEnd, at most segment.bytes together (one at least). */
  private nextGroup(segments: readonly LogSegment[], pass: Pass): LogSegment[] {
    const group: LogSegment[] = [];
    let size = 0;
    for (let i = 0; i < segments.length - 1; i++) {
      const seg = segments[i]!;
      if (seg.baseOffset < pass.cleanFrom) continue;
      if (nextBase(segments, i) > pass.dirtyEnd) break;
      if (group.length > 0) {
        // The merged segment's indexes hold offsets relative to its base in 32 bits.
        if (size + seg.size > this.log.config.segmentBytes || nextBase(segments, i) - group[0]!.baseOffset > INT32_MAX) break;
      }
      group.push(seg);
      size += seg.size;
    }
    return group;
  }
}

function nextBase(segments: readonly LogSegment[], i: number): bigint {
  return segments[i + 1]?.baseOffset ?? segments[i]!.nextOffset;
}

/** Whether the cleaner may look inside the batch at cursor.buf[at, at + size). */
function cleanable(buf: Buffer, at: number, size: number): boolean {
  const attributes = buf.readInt16BE(at + ATTRIBUTES);
  if ((attributes & (CONTROL | TRANSACTIONAL)) !== 0) return false;
  return batchCrcValid(buf, at, size);
}

/** Adds the keys of records at or after `from` in `seg` to `map`, each at its latest offset. */
function mapSegment(seg: LogSegment, from: bigint, map: Map<string, bigint>): void {
  const cursor = new BatchCursor(seg.file, seg.offsetIndex.lookup(from).position, seg.size, true, READ_CHUNK);
  while (cursor.next()) {
    if (cursor.lastOffset < from || !cleanable(cursor.buf, cursor.at, cursor.size)) continue;
    const records = recordsOf(cursor.buf, cursor.at, cursor.size);
    if (records === null) continue;
    for (const r of records.list) {
      const offset = cursor.baseOffset + BigInt(r.offsetDelta);
      if (r.key !== null && offset >= from) map.set(r.key.toString('latin1'), offset);
    }
  }
  if (cursor.problem) throw new Error(`${seg.file.path}: ${cursor.problem}`);
}

/**
 * Writes the batches of `seg` that survive to `out`, judging tombstones at
 * `now` and stamping `horizon` on a batch that keeps a tombstone and has no
 * delete horizon yet (Kafka's MemoryRecords.filterTo with the cleaner's
 * filter). Returns the earliest delete horizon among the batches kept with
 * a tombstone, Infinity when there is none.
 *
 * Example: a batch [a=1, b=null] at base timestamp 6000, b the latest for
 * its key, cleaned at now 10000 with delete.retention.ms 1000: written with
 * DELETE_HORIZON set, baseTimestamp 11000, both records' timestamps still
 * 6000; returns 11000. The same batch cleaned at 11000: [a=1] only, still
 * stamped 11000.
 */
function cleanSegment(seg: LogSegment, map: Map<string, bigint>, now: bigint, horizon: bigint, producerLastBatches: ReadonlySet<bigint>, out: ChunkedWriter): number {
  let due = Number.POSITIVE_INFINITY;
  const cursor = new BatchCursor(seg.file, 0, seg.size, true, READ_CHUNK);
  while (cursor.next()) {
    const { buf, at, size, baseOffset } = cursor;
    const records = cleanable(buf, at, size) ? recordsOf(buf, at, size) : null;
    if (records === null) {
      out.write(buf.subarray(at, at + size));
      continue;
    }
    const stamped = deleteHorizonMs(buf, at);
    // Kafka keeps a tombstone while the batch has no horizon or the horizon is still ahead.
    const dropTombstones = stamped !== null && now >= stamped;
    const kept: RecordInfo[] = [];
    let keptTombstone = false;
    for (const r of records.list) {
      if (r.key !== null) {
        const latest = map.get(r.key.toString('latin1'));
        if (latest !== undefined && latest > baseOffset + BigInt(r.offsetDelta)) continue;
        if (r.isTombstone) {
          if (dropTombstones) continue;
          keptTombstone = true;
        }
      }
      kept.push(r);
    }
    if (kept.length === 0) {
      // A producer's last batch stays (Kafka keeps its header): the producer's sequence state is rebuilt from it.
      if (buf.readBigInt64BE(at + PRODUCER_ID) >= 0n && producerLastBatches.has(cursor.lastOffset)) out.write(buf.subarray(at, at + size));
      continue;
    }
    const stamp = keptTombstone && stamped === null;
    if (keptTombstone) {
      const h = Number(stamp ? horizon : stamped!);
      if (h < due) due = h;
    }
    if (kept.length === records.list.length && !stamp) out.write(buf.subarray(at, at + size));
    else out.write(rebuildBatch(buf, at, records.payload, kept, stamp ? horizon : null));
  }
  if (cursor.problem) throw new Error(`${seg.file.path}: ${cursor.problem}`);
  return due;
}

/** The records of a v2 batch with their byte ranges in `payload`, or null when they do not parse. */
function recordsOf(buf: Buffer, at: number, size: number): { payload: Buffer; list: RecordInfo[] } | null {
  const payload = recordsPayload(buf, at, size);
  if (typeof payload === 'string') return null;
  const count = buf.readInt32BE(at + RECORD_COUNT);
  const r = new Reader(payload);
  const list: RecordInfo[] = [];
  for (let i = 0; i < count; i++) {
    const start = r.pos;
    const length = r.varint();
    const bodyStart = r.pos;
    if (r.error !== null || length < 0 || length > r.remaining) return null;
    r.int8();
    const timestampDelta = r.varlong();
    const timestampEnd = r.pos;
    const offsetDelta = r.varint();
    const keyLength = r.varint();
    const key = keyLength >= 0 ? r.raw(keyLength) : null;
    const valueLength = r.varint();
    if (r.error !== null || keyLength < -1 || valueLength < -1) return null;
    r.pos = bodyStart + length;
    list.push({ start, bodyStart, timestampEnd, end: r.pos, offsetDelta, timestampDelta, key, isTombstone: valueLength < 0 });
  }
  if (r.error !== null || r.remaining !== 0) return null;
  return { payload, list };
}

/**
 * The batch at buf[at..] with only the `kept` records: same base offset,
 * last offset delta, producer fields and codec; the record count, max
 * timestamp (unless LogAppendTime, where every record carries the batch's),
 * length and CRC follow the records that remain. With `stampHorizon` the
 * batch gets the DELETE_HORIZON bit and that baseTimestamp, and every
 * record a timestampDelta that keeps its timestamp (Kafka rebuilds the
 * batch with the horizon as its base timestamp the same way); otherwise
 * attributes, baseTimestamp and the records' bytes stay as they were.
 */
function rebuildBatch(buf: Buffer, at: number, payload: Buffer, kept: readonly RecordInfo[], stampHorizon: bigint | null): Buffer {
  let attributes = buf.readInt16BE(at + ATTRIBUTES);
  const codec = (attributes & COMPRESSION_MASK) as Compression;
  const baseTimestamp = buf.readBigInt64BE(at + BASE_TIMESTAMP);
  let raw: Buffer;
  if (stampHorizon === null) raw = Buffer.concat(kept.map((r) => payload.subarray(r.start, r.end)));
  else {
    attributes |= DELETE_HORIZON;
    const w = new Writer(payload.length + kept.length * 10);
    const delta = new Writer(10);
    for (const r of kept) {
      delta.pos = 0;
      // int64 arithmetic, as readers (Java's long) add base and delta.
      delta.varlong(BigInt.asIntN(64, baseTimestamp + r.timestampDelta - stampHorizon));
      const newDelta = delta.finish();
      const rest = payload.subarray(r.timestampEnd, r.end);
      w.varint(1 + newDelta.length + rest.length)
        .raw(payload.subarray(r.bodyStart, r.bodyStart + 1))
        .raw(newDelta)
        .raw(rest);
    }
    raw = w.finish();
  }
  const records = codec === Compression.None ? raw : compress(codec, raw);
  const out = Buffer.allocUnsafe(RECORDS + records.length);
  buf.copy(out, 0, at, at + RECORDS);
  records.copy(out, RECORDS);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH);
  out.writeInt16BE(attributes, ATTRIBUTES);
  if (stampHorizon !== null) out.writeBigInt64BE(stampHorizon, BASE_TIMESTAMP);
  out.writeInt32BE(kept.length, RECORD_COUNT);
  if ((attributes & TIMESTAMP_TYPE_LOG_APPEND) === 0) {
    let maxDelta = kept[0]!.timestampDelta;
    for (const r of kept) if (r.timestampDelta > maxDelta) maxDelta = r.timestampDelta;
    out.writeBigInt64BE(BigInt.asIntN(64, baseTimestamp + maxDelta), MAX_TIMESTAMP);
  }
  writeBatchCrc(out, 0, out.length);
  return out;
}

/** Gathers small batches into larger writes; copies, since the cursor reuses its buffer. */
class ChunkedWriter {
  private parts: Buffer[] = [];
  private size = 0;
  constructor(private readonly sink: (bytes: Buffer) => void) {}
  write(bytes: Buffer): void {
    this.parts.push(Buffer.from(bytes));
    this.size += bytes.length;
    if (this.size >= WRITE_CHUNK) this.flush();
  }
  flush(): void {
    if (this.size === 0) return;
    this.sink(this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts));
    this.parts = [];
    this.size = 0;
  }
}

/**
 * Checks the record batches of one Produce partition and assigns their offsets,
 * as a partition log does on append.
 *
 * Invariant: an ok result holds the input batches in order, byte for byte, except
 * baseOffset and partitionLeaderEpoch (outside the CRC) and, when the timestamp
 * type or the batch maxTimestamp had to change, attributes, maxTimestamp and the
 * CRC, which is then recomputed. The one exception is a topic whose
 * compression.type names a codec: a batch compressed otherwise is re-encoded
 * with it (see reencode), as Kafka's LogValidator rebuilds such a batch;
 * with compression.type=producer (the default) nothing is ever re-encoded.
 */
import { ErrorCode } from '../wire/errors.js';
import { legacyToBatch } from '../wire/legacy-message-set.js';
import { compress } from '../wire/compression.js';
import {
  ATTRIBUTES,
  BASE_OFFSET,
  BASE_SEQUENCE,
  BASE_TIMESTAMP,
  BATCH_LENGTH,
  CONTROL,
  COMPRESSION_MASK,
  Compression,
  LAST_OFFSET_DELTA,
  LOG_OVERHEAD,
  MAGIC,
  MAGIC_V2,
  MAX_TIMESTAMP,
  MIN_BATCH_LENGTH,
  NO_TIMESTAMP,
  PARTITION_LEADER_EPOCH,
  PRODUCER_EPOCH,
  PRODUCER_ID,
  RECORD_COUNT,
  RECORDS,
  TIMESTAMP_TYPE_LOG_APPEND,
  TRANSACTIONAL,
  batchCrcValid,
  buildBatch,
  decodeRecords,
  fastScan,
  recordsPayload,
  scanRecords,
  scanRecordsFast,
  writeBatchCrc,
} from '../wire/record-batch.js';
import type { LogConfig } from './log-config.js';

export interface ValidationContext {
  nextOffset: bigint;
  leaderEpoch: number;
  now: number /* ms */;
  config: LogConfig;
  /**
   * Who appends (Kafka's AppendOrigin); default 'client'. Only a client is
   * refused idempotent batches without a sequence, as Kafka's LogValidator
   * checks that for client appends alone (a coordinator writes
   * transactional offset commits with sequence -1). Control batches are
   * refused whatever the origin: markers go through the log's
   * appendControlMarker.
   */
  origin?: 'client' | 'coordinator';
}

export interface AppendedBatch {
  baseOffset: bigint;
  lastOffset: bigint;
  maxTimestamp: bigint;
  position: number /* within `batches` */;
  size: number;
}

export type ValidationResult =
  | {
      ok: true;
      batches: Buffer;
      firstOffset: bigint;
      lastOffset: bigint;
      maxTimestamp: bigint;
      offsetOfMaxTimestamp: bigint;
      logAppendTime: bigint /* -1n unless LogAppendTime */;
      appended: AppendedBatch[];
      recordCount: number;
    }
  | { ok: false; errorCode: number; message: string; recordErrors: { batchIndex: number; message: string }[] };

export interface ValidationOptions {
  /**
   * The caller owns `records` and will not read it again as it was: rewrite the
   * batch headers in it instead of in a copy. Default false.
   */
  inPlace?: boolean;
}

type Failure = Extract<ValidationResult, { ok: false }>;

/** What the checking pass learned about one batch, for the offset-assigning pass. */
interface Checked {
  position: number;
  size: number;
  /** The codec of the batch as it came (attributes' low three bits). */
  codec: number;
  lastOffsetDelta: number;
  /** Largest record timestamp, NO_TIMESTAMP when none is above -1 (as Kafka). */
  maxRecordTimestamp: bigint;
  /** offsetDelta of the first record with maxRecordTimestamp, or -1. */
  offsetDeltaOfMax: number;
}

/**
 * Validates `records` (one or more v2 batches, or a magic 0/1 message set, which is
 * converted to one v2 batch first) and assigns offsets from ctx.nextOffset. On
 * success `batches` is a new buffer and `records` itself is never written, unless
 * `options.inPlace` says the caller owns `records`: then the headers of a v2 input
 * are rewritten in `records` and `batches` is `records` itself (a legacy message
 * set is still converted into a new buffer). Every batch is checked before any
 * byte is written, so an error result leaves `records` unchanged in either mode.
 * Returns an error value for any bad input, never throws.
 *
 * Example: one batch of 3 records, ctx.nextOffset 10, CreateTime, record times
 * 100, 300, 200 -> ok, firstOffset 10, lastOffset 12, appended[0].baseOffset 10,
 * maxTimestamp 300, offsetOfMaxTimestamp 11, logAppendTime -1n, recordCount 3.
 * The same batch on a LogAppendTime topic at now = 5000 -> maxTimestamp 5000,
 * offsetOfMaxTimestamp 10, logAppendTime 5000n, and the stored batch carries the
 * LogAppendTime attribute bit, maxTimestamp 5000 and a recomputed CRC.
 * On a CreateTime topic at now = 5000 with Kafka 4.0's default
 * message.timestamp.after.max.ms of 3600000, record times 100, 3605001, 200 ->
 * INVALID_TIMESTAMP with one record error, batchIndex 1. Record times are
 * baseTimestamp + timestampDelta wrapped to int64, as Kafka's Java longs wrap:
 * baseTimestamp 2^63 - 2 with deltas 0 and 5 gives 2^63 - 2 and -2^63 + 3.
 *
 * `recordErrors[].batchIndex` is, as in Kafka's ProduceResponse, the index of the
 * offending record, counted from the first record of `records`.
 *
 * On a topic whose compression.type is a codec (not 'producer'), every batch
 * that arrives with another codec is checked as above and then re-encoded
 * (see reencode): the result is new bytes whatever `options.inPlace` says,
 * and is checked against max.message.bytes and segment.bytes once more, as
 * its size changed. Example: a gzip batch of 3 records on a topic with
 * compression.type=lz4 at ctx.nextOffset 10 -> ok, firstOffset 10, one lz4
 * batch holding the same keys, values, headers and timestamps.
 */
export function validateAndAssignOffsets(
  records: Buffer,
  ctx: ValidationContext,
  options: ValidationOptions = {},
): ValidationResult {
  try {
    return validate(records, ctx, options.inPlace === true);
  } catch (e) {
    // Every expected failure is a value; reaching here is a bug, not bad input.
    return fail(ErrorCode.UNKNOWN_SERVER_ERROR, `validator failed: ${(e as Error).message}`);
  }
}

function validate(records: Buffer, ctx: ValidationContext, inPlace: boolean): ValidationResult {
  if (records.length === 0) return fail(ErrorCode.INVALID_RECORD, 'no record batch');
  if (records.length <= MAGIC) return fail(ErrorCode.CORRUPT_MESSAGE, `${records.length} bytes cannot hold a batch header`);
  let input = records;
  let owned = inPlace;
  const firstMagic = records[MAGIC]!;
  if (firstMagic === 0 || firstMagic === 1) {
    const converted = legacyToBatch(records);
    if (!converted.ok) return fail(ErrorCode.CORRUPT_MESSAGE, converted.error);
    input = converted.batch;
    owned = true;
  }
  if (input.length > ctx.config.segmentBytes) {
    return fail(ErrorCode.RECORD_LIST_TOO_LARGE, `${input.length} bytes exceed segment.bytes ${ctx.config.segmentBytes}`);
  }

  const compacted = ctx.config.cleanupPolicy.includes('compact');
  const logAppend = ctx.config.messageTimestampType === 'LogAppendTime';
  const limits = timestampLimits(ctx, logAppend);
  const checked: Checked[] = [];
  let recordBase = 0;
  let pos = 0;
  while (pos < input.length) {
    const remaining = input.length - pos;
    if (remaining <= MAGIC) return fail(ErrorCode.CORRUPT_MESSAGE, `${remaining} trailing bytes at byte ${pos}`);
    const batchLength = input.readInt32BE(pos + BATCH_LENGTH);
    if (batchLength < MIN_BATCH_LENGTH) {
      return fail(ErrorCode.CORRUPT_MESSAGE, `batchLength ${batchLength} at byte ${pos} is below ${MIN_BATCH_LENGTH}`);
    }
    const size = batchLength + LOG_OVERHEAD;
    if (size > remaining) return fail(ErrorCode.CORRUPT_MESSAGE, `batch of ${size} bytes at byte ${pos} has only ${remaining}`);
    const magic = input.readInt8(pos + MAGIC);
    if (magic !== MAGIC_V2) return fail(ErrorCode.CORRUPT_MESSAGE, `batch at byte ${pos} has magic ${magic}`);
    if (size > ctx.config.maxMessageBytes) {
      return fail(ErrorCode.MESSAGE_TOO_LARGE, `batch of ${size} bytes exceeds max.message.bytes ${ctx.config.maxMessageBytes}`);
    }
    if (!batchCrcValid(input, pos, size)) return fail(ErrorCode.CORRUPT_MESSAGE, `CRC mismatch in batch at byte ${pos}`);

    const attributes = input.readInt16BE(pos + ATTRIBUTES);
    const fromClient = ctx.origin !== 'coordinator';
    if ((attributes & CONTROL) !== 0) return fail(ErrorCode.INVALID_RECORD, 'clients may not write control batches');
    const lastOffsetDelta = input.readInt32BE(pos + LAST_OFFSET_DELTA);
    const count = input.readInt32BE(pos + RECORD_COUNT);
    if (count <= 0) return fail(ErrorCode.INVALID_RECORD, `batch at byte ${pos} has record count ${count}`);
    if (count !== lastOffsetDelta + 1) {
      return fail(ErrorCode.INVALID_RECORD, `batch at byte ${pos} has ${count} records but lastOffsetDelta ${lastOffsetDelta}`);
    }
    // The sign of an int64 is the sign of its high 32 bits.
    if (fromClient && input.readInt32BE(pos + PRODUCER_ID) >= 0 && input.readInt32BE(pos + BASE_SEQUENCE) < 0) {
      return fail(ErrorCode.INVALID_RECORD, `idempotent batch at byte ${pos} has a negative base sequence`);
    }

    let body = input;
    let start = pos + RECORDS;
    let end = pos + size;
    if ((attributes & COMPRESSION_MASK) !== Compression.None) {
      const payload = recordsPayload(input, pos, size);
      if (typeof payload === 'string') return fail(ErrorCode.CORRUPT_MESSAGE, payload);
      body = payload;
      start = 0;
      end = payload.length;
    }
    let maxTimestampDelta: number | null;
    let minTimestampDelta: number;
    let offsetDeltaOfMax: number;
    let nullKeys = false;
    if (scanRecordsFast(body, start, end, count, compacted)) {
      maxTimestampDelta = fastScan.maxTimestampDelta;
      minTimestampDelta = fastScan.minTimestampDelta;
      offsetDeltaOfMax = fastScan.offsetDeltaOfMax;
    } else {
      const scan = scanRecords(body, start, end, count, compacted);
      if (scan.error !== null) {
        const errors = scan.errorIndex < 0 ? [] : [{ batchIndex: recordBase + scan.errorIndex, message: scan.error }];
        // Kafka reads a batch whose CRC holds but whose records do not parse (too
        // few, bytes left over, a length past the end) as an invalid record,
        // not a corrupt message: only the CRC and the batch header give CORRUPT_MESSAGE.
        return fail(ErrorCode.INVALID_RECORD, scan.error, errors);
      }
      nullKeys = scan.nullKeys.length > 0;
      maxTimestampDelta = scan.maxTimestampDelta;
      minTimestampDelta = scan.minTimestampDelta;
      offsetDeltaOfMax = scan.offsetDeltaOfMax;
    }

    // The usual batch is settled in doubles from its extreme deltas; anything
    // else (a record error to report, a LogAppendTime batch from a client, a
    // timestamp that may wrap or break a bound) is judged record by record.
    const usual =
      !nullKeys && (attributes & TIMESTAMP_TYPE_LOG_APPEND) === 0 && maxTimestampDelta !== null
        ? usualMaxTimestamp(input, pos + BASE_TIMESTAMP, maxTimestampDelta, minTimestampDelta, limits)
        : null;
    let maxRecordTimestamp: bigint;
    if (usual !== null) {
      maxRecordTimestamp = BigInt(usual);
    } else {
      const exact = judgeRecords(input.subarray(pos, pos + size), compacted, limits);
      if (typeof exact === 'string') return fail(ErrorCode.CORRUPT_MESSAGE, exact);
      if (exact.errors.length > 0) {
        const errors = exact.errors.map((e) => ({ batchIndex: recordBase + e.batchIndex, message: e.message }));
        if (exact.invalidTimestamp) return fail(ErrorCode.INVALID_TIMESTAMP, 'one or more records have an invalid timestamp', errors);
        return fail(ErrorCode.INVALID_RECORD, NULL_KEY, errors);
      }
      maxRecordTimestamp = exact.maxTimestamp;
      offsetDeltaOfMax = exact.offsetDeltaOfMax;
    }
    if (maxRecordTimestamp <= NO_TIMESTAMP) {
      maxRecordTimestamp = NO_TIMESTAMP;
      offsetDeltaOfMax = -1;
    }
    checked.push({ position: pos, size, codec: attributes & COMPRESSION_MASK, lastOffsetDelta, maxRecordTimestamp, offsetDeltaOfMax });
    recordBase += count;
    pos += size;
  }

  const target = TARGET_CODEC[ctx.config.compressionType];
  if (target !== undefined) {
    for (const c of checked) if (c.codec !== target) return reencodeAndAssign(input, checked, ctx, target, logAppend, recordBase);
  }

  // Every check passed: one copy (unless the caller owns the input or the legacy
  // conversion already made one), then the header rewrites.
  let out = input;
  if (!owned) {
    out = outputBuffer(input.length);
    out.set(input);
  }
  return assignOffsets(out, checked, ctx, logAppend, recordBase);
}

/**
 * The offset-assigning pass over batches that passed every check, laid out
 * in `out` as `checked` says: baseOffset and partitionLeaderEpoch stamped,
 * and the timestamp type and maxTimestamp set (with a new CRC) where they
 * differ from what the topic wants.
 */
function assignOffsets(out: Buffer, checked: readonly Checked[], ctx: ValidationContext, logAppend: boolean, recordCount: number): ValidationResult {
  const now = BigInt(Math.trunc(ctx.now));
  const appended: AppendedBatch[] = [];
  let offset = ctx.nextOffset;
  let maxTimestamp = NO_TIMESTAMP;
  let offsetOfMaxTimestamp = -1n;
  for (const c of checked) {
    const baseOffset = offset;
    const lastOffset = baseOffset + BigInt(c.lastOffsetDelta);
    out.writeBigInt64BE(baseOffset, c.position + BASE_OFFSET);
    out.writeInt32BE(ctx.leaderEpoch, c.position + PARTITION_LEADER_EPOCH);

    const attributes = out.readInt16BE(c.position + ATTRIBUTES);
    const wantAttributes = logAppend ? attributes | TIMESTAMP_TYPE_LOG_APPEND : attributes & ~TIMESTAMP_TYPE_LOG_APPEND;
    const wantMax = logAppend ? now : c.maxRecordTimestamp;
    if (wantAttributes !== attributes || out.readBigInt64BE(c.position + MAX_TIMESTAMP) !== wantMax) {
      out.writeInt16BE(wantAttributes, c.position + ATTRIBUTES);
      out.writeBigInt64BE(wantMax, c.position + MAX_TIMESTAMP);
      writeBatchCrc(out, c.position, c.size);
    }
    if (!logAppend && c.maxRecordTimestamp > maxTimestamp) {
      maxTimestamp = c.maxRecordTimestamp;
      offsetOfMaxTimestamp = baseOffset + BigInt(c.offsetDeltaOfMax);
    }
    appended.push({ baseOffset, lastOffset, maxTimestamp: wantMax, position: c.position, size: c.size });
    offset = lastOffset + 1n;
  }
  if (logAppend) {
    // Every record now carries the same time, so the first one holds the maximum.
    maxTimestamp = now;
    offsetOfMaxTimestamp = ctx.nextOffset;
  }
  return {
    ok: true,
    batches: out,
    firstOffset: ctx.nextOffset,
    lastOffset: offset - 1n,
    maxTimestamp,
    offsetOfMaxTimestamp,
    logAppendTime: logAppend ? now : NO_TIMESTAMP,
    appended,
    recordCount,
  };
}

/** compression.type -> the codec batches are stored with; undefined for 'producer' (each keeps its own). */
const TARGET_CODEC: Readonly<Record<LogConfig['compressionType'], Compression | undefined>> = {
  producer: undefined,
  uncompressed: Compression.None,
  gzip: Compression.Gzip,
  snappy: Compression.Snappy,
  lz4: Compression.Lz4,
  zstd: Compression.Zstd,
};

/** The level of compression.<codec>.level for `codec`, or undefined for a codec without one. */
function levelFor(codec: Compression, config: LogConfig): number | undefined {
  switch (codec) {
    case Compression.Gzip:
      return config.compressionGzipLevel;
    case Compression.Lz4:
      return config.compressionLz4Level;
    case Compression.Zstd:
      return config.compressionZstdLevel;
    default:
      return undefined;
  }
}

/**
 * The offset-assigning pass of a topic that stores `target` when some batch
 * came with another codec: each such batch is re-encoded (see reencode), the
 * others are copied, the result is checked against max.message.bytes and
 * segment.bytes again (Kafka re-checks sizes that may have changed), and
 * offsets are assigned as usual.
 */
function reencodeAndAssign(
  input: Buffer,
  checked: readonly Checked[],
  ctx: ValidationContext,
  target: Compression,
  logAppend: boolean,
  recordCount: number,
): ValidationResult {
  const level = levelFor(target, ctx.config);
  const parts: Buffer[] = [];
  const placed: Checked[] = [];
  let total = 0;
  for (const c of checked) {
    let part = input.subarray(c.position, c.position + c.size);
    if (c.codec !== target) {
      const rebuilt = reencode(part, target, level);
      if (typeof rebuilt === 'string') return fail(ErrorCode.CORRUPT_MESSAGE, rebuilt);
      if (rebuilt.length > ctx.config.maxMessageBytes) {
        return fail(
          ErrorCode.MESSAGE_TOO_LARGE,
          `batch of ${rebuilt.length} bytes once stored as ${Compression[target]} exceeds max.message.bytes ${ctx.config.maxMessageBytes}`,
        );
      }
      part = rebuilt;
    }
    parts.push(part);
    placed.push({ ...c, position: total, size: part.length });
    total += part.length;
  }
  if (total > ctx.config.segmentBytes) {
    return fail(ErrorCode.RECORD_LIST_TOO_LARGE, `${total} bytes once stored as ${Compression[target]} exceed segment.bytes ${ctx.config.segmentBytes}`);
  }
  return assignOffsets(Buffer.concat(parts, total), placed, ctx, logAppend, recordCount);
}

/**
 * One checked batch (at byte 0 of `batch`) encoded again with `target`, as
 * Kafka's LogValidator.buildRecordsAndAssignOffsets rebuilds it: the same
 * records (keys, values, headers, timestamps) with offset deltas 0..n-1 and
 * record attributes 0; baseTimestamp the first record's timestamp; producer
 * id, epoch, base sequence and the transactional flag kept; CreateTime, as the
 * offset-assigning pass sets the topic's timestamp type; baseOffset 0 and
 * partitionLeaderEpoch -1 until then. A record of a batch marked LogAppendTime
 * has the batch's maxTimestamp as its time, as Kafka reads it. Control batches
 * never get here (clients may not write them). A message when the records do
 * not decode, which the checks before make a bug.
 *
 * Example: a gzip batch with baseTimestamp 90 and records at 100, 96 ->
 * an lz4 batch with baseTimestamp 100, timestamp deltas 0 and -4.
 */
function reencode(batch: Buffer, target: Compression, level: number | undefined): Buffer | string {
  const decoded = decodeRecords(batch);
  if (!decoded.ok) return decoded.error;
  const attributes = batch.readInt16BE(ATTRIBUTES);
  const logAppendBatch = (attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
  const base = batch.readBigInt64BE(BASE_TIMESTAMP);
  const batchMax = batch.readBigInt64BE(MAX_TIMESTAMP);
  const plain = buildBatch({
    records: decoded.records.map((r) => ({
      key: r.key,
      value: r.value,
      headers: r.headers,
      timestamp: logAppendBatch ? batchMax : BigInt.asIntN(64, base + r.timestampDelta),
    })),
    producerId: batch.readBigInt64BE(PRODUCER_ID),
    producerEpoch: batch.readInt16BE(PRODUCER_EPOCH),
    baseSequence: batch.readInt32BE(BASE_SEQUENCE),
    transactional: (attributes & TRANSACTIONAL) !== 0,
  });
  if (target === Compression.None) return plain;
  const records = compress(target, plain.subarray(RECORDS), level);
  const out = Buffer.allocUnsafe(RECORDS + records.length);
  plain.copy(out, 0, 0, RECORDS);
  records.copy(out, RECORDS);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH);
  out.writeInt16BE(plain.readInt16BE(ATTRIBUTES) | target, ATTRIBUTES);
  writeBatchCrc(out, 0, out.length);
  return out;
}

/**
 * Output buffers up to SLAB_MAX bytes are cut from a shared slab, as Node's own
 * Buffer pool does for small buffers, so that a typical produce batch costs no
 * allocation of its own; larger ones get their own memory. A slab is never
 * handed out twice: it is freed once every buffer cut from it is gone.
 */
const SLAB_SIZE = 256 * 1024;
const SLAB_MAX = 32 * 1024;
let slab = Buffer.alloc(0);
let slabUsed = 0;

function outputBuffer(size: number): Buffer {
  if (size > SLAB_MAX) return Buffer.allocUnsafeSlow(size);
  if (size > slab.length - slabUsed) {
    slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
    slabUsed = 0;
  }
  const out = slab.subarray(slabUsed, slabUsed + size);
  slabUsed = (slabUsed + size + 7) & ~7;
  return out;
}

const NULL_KEY = 'a compacted topic needs a key on every record';
const LONG_MAX = (1n << 63n) - 1n;

/**
 * Kafka's timestamp rule (LogValidator.validateTimestamp). On a CreateTime
 * topic a record with timestamp t other than -1 is refused when, in wrapping
 * int64 arithmetic, diff = now - t > before or -diff > after. A record left
 * unchecked by that (t = -1, or a LogAppendTime topic) is refused if its batch
 * claims LogAppendTime, which only a broker may set. A configured bound of
 * Number.MAX_SAFE_INTEGER or more is Kafka's Long.MAX_VALUE.
 */
interface TimestampLimits {
  createTime: boolean;
  ctx: ValidationContext;
  /**
   * The bounds as doubles, for usualMaxTimestamp: Infinity where a bound never
   * applies, -Infinity in both when the clock is not a safe integer (every
   * batch then takes the record-by-record check).
   */
  nowMs: number;
  beforeMs: number;
  afterMs: number;
}

function timestampLimits(ctx: ValidationContext, logAppend: boolean): TimestampLimits {
  const never = Number.POSITIVE_INFINITY;
  const nowMs = Math.trunc(ctx.now);
  if (logAppend) return { createTime: false, ctx, nowMs: 0, beforeMs: never, afterMs: never };
  if (!Number.isSafeInteger(nowMs)) return { createTime: true, ctx, nowMs: 0, beforeMs: -never, afterMs: -never };
  const { messageTimestampBeforeMaxMs: before, messageTimestampAfterMaxMs: after } = ctx.config;
  return {
    createTime: true,
    ctx,
    nowMs,
    beforeMs: before >= Number.MAX_SAFE_INTEGER ? never : before,
    afterMs: after >= Number.MAX_SAFE_INTEGER ? never : after,
  };
}

/** A bound as Kafka's long. */
function longBound(ms: number): bigint {
  return ms >= Number.MAX_SAFE_INTEGER ? LONG_MAX : BigInt(ms);
}

/**
 * The largest record timestamp of a batch whose record timestamps are
 * baseTimestamp + delta, computed in doubles, or null when the batch must be
 * judged record by record. Exact because |baseTimestamp| < 2^52 here and the
 * scans pass no delta beyond 2^52: no sum wraps, every timestamp and the clock
 * are safe integers, and the records furthest before and after the clock are
 * those with the smallest and largest deltas. Rounding of now - t, which may
 * pass 2^53, cannot carry it across an integer bound below 2^53. A record at
 * -1 is exempt from the bounds but counted here, which can only send a batch
 * to the exact check.
 */
function usualMaxTimestamp(buf: Buffer, at: number, maxDelta: number, minDelta: number, lim: TimestampLimits): number | null {
  const hi = buf.readInt32BE(at);
  if (hi < -0x100000 || hi >= 0x100000) return null;
  const base = hi * 4294967296 + buf.readUInt32BE(at + 4);
  const max = base + maxDelta;
  if (max - lim.nowMs > lim.afterMs || lim.nowMs - (base + minDelta) > lim.beforeMs) return null;
  return max;
}

interface JudgedRecords {
  /** Largest record timestamp above -1, else -1; offsetDeltaOfMax is then -1. */
  maxTimestamp: bigint;
  offsetDeltaOfMax: number;
  /** One per refused record, in record order, batchIndex counted within the batch. */
  errors: { batchIndex: number; message: string }[];
  /** Some error is about a timestamp: the batch fails INVALID_TIMESTAMP, else INVALID_RECORD. */
  invalidTimestamp: boolean;
}

/**
 * Kafka's per-record checks of one v2 batch (at byte 0 of `batch`, already
 * scanned), as LogValidator.validateRecord makes them: a missing key on a
 * compacted topic, else the timestamp rule. Record timestamps are
 * baseTimestamp + timestampDelta wrapped to int64, as Java's long addition in
 * DefaultRecord.readFrom leaves them, or the batch maxTimestamp for every
 * record of a batch marked LogAppendTime (DefaultRecordBatch). Returns a
 * message when the batch does not decode.
 */
function judgeRecords(batch: Buffer, requireKey: boolean, lim: TimestampLimits): JudgedRecords | string {
  const decoded = decodeRecords(batch);
  if (!decoded.ok) return decoded.error;
  const base = batch.readBigInt64BE(BASE_TIMESTAMP);
  const logAppendBatch = (batch.readInt16BE(ATTRIBUTES) & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
  const batchMax = batch.readBigInt64BE(MAX_TIMESTAMP);
  const now = BigInt.asIntN(64, BigInt(Math.trunc(lim.ctx.now)));
  const before = longBound(lim.ctx.config.messageTimestampBeforeMaxMs);
  const after = longBound(lim.ctx.config.messageTimestampAfterMaxMs);
  const out: JudgedRecords = { maxTimestamp: NO_TIMESTAMP, offsetDeltaOfMax: -1, errors: [], invalidTimestamp: false };
  decoded.records.forEach((r, i) => {
    const t = logAppendBatch ? batchMax : BigInt.asIntN(64, base + r.timestampDelta);
    if (requireKey && r.key === null) {
      out.errors.push({ batchIndex: i, message: NULL_KEY });
    } else if (lim.createTime && t !== NO_TIMESTAMP) {
      const diff = BigInt.asIntN(64, now - t);
      const why =
        diff > before
          ? `more than ${before} ms before the broker time ${now}`
          : BigInt.asIntN(64, -diff) > after
            ? `more than ${after} ms after the broker time ${now}`
            : null;
      if (why !== null) {
        out.errors.push({ batchIndex: i, message: `timestamp ${t} is ${why}` });
        out.invalidTimestamp = true;
      }
    } else if (logAppendBatch) {
      out.errors.push({ batchIndex: i, message: 'its batch is marked LogAppendTime, which only a broker may set' });
      out.invalidTimestamp = true;
    }
    if (t > out.maxTimestamp) {
      out.maxTimestamp = t;
      out.offsetDeltaOfMax = i;
    }
  });
  return out;
}

function fail(errorCode: number, message: string, recordErrors: Failure['recordErrors'] = []): Failure {
  return { ok: false, errorCode, message, recordErrors };
}

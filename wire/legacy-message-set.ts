/**
 * Magic 0 and 1 message sets, as sent by old producers (Produce v0-v2), turned
 * into one RecordBatch v2 so that the log stores a single format; and the way
 * back for old consumers (Fetch v0-v3), as Kafka's broker down-converts.
 */
import { zlib } from './builtins.js';
import { Compression, compress, decompress, isKnownCompression } from './compression.js';
import { LZ4_FRAME_MAGIC, xxh32 } from './lz4.js';
import {
  ATTRIBUTES,
  BASE_OFFSET,
  BASE_TIMESTAMP,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH,
  buildBatch,
  COMPRESSION_MASK,
  CONTROL,
  decodeRecords,
  LOG_OVERHEAD,
  MAGIC,
  MAGIC_V2,
  MAX_TIMESTAMP,
  NO_TIMESTAMP,
  TIMESTAMP_TYPE_LOG_APPEND,
  type BuildRecord,
} from './record-batch.js';

/** offset int64 + message size int32: the part of an entry before its message. */
const ENTRY_OVERHEAD = 12;
/** crc, magic, attributes, key length, value length. */
const MIN_MESSAGE_V0 = 14;
/** Magic 1 adds an int64 timestamp. */
const MIN_MESSAGE_V1 = 22;
const CODEC_MASK = 0x07;
/** Magic 1 attribute bit: the timestamp was set by the broker. */
const LEGACY_LOG_APPEND_TIME = 0x08;

export interface LegacyMessage {
  magic: 0 | 1;
  /** NO_TIMESTAMP (-1) for magic 0. */
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
}

export type ParseMessageSetResult =
  | { ok: true; messages: LegacyMessage[]; /** codec of the first compressed wrapper, else None */ compression: Compression }
  | { ok: false; error: string };

/**
 * Parses a whole magic 0/1 message set, checking every message's CRC-32 and
 * flattening compressed wrappers (one level: a wrapper inside a wrapper is
 * refused, as Kafka does). Keys and values of uncompressed messages are views
 * into `buf`. Never throws.
 */
export function parseMessageSet(buf: Buffer): ParseMessageSetResult {
  const messages: LegacyMessage[] = [];
  const codecs: Compression[] = [];
  const error = parseInto(buf, null, messages, codecs);
  return error === null ? { ok: true, messages, compression: codecs[0] ?? Compression.None } : { ok: false, error };
}

/**
 * Converts a magic 0/1 message set to one v2 batch with baseOffset 0, the records
 * in the order given, compressed with the codec of the set's (first) compressed
 * wrapper so that the stored batch stays about the size the producer sent.
 * Magic 0 messages get timestamp -1.
 * Example: two magic 1 messages with timestamps 5 and 7 become a batch with
 * baseTimestamp 5, maxTimestamp 7, lastOffsetDelta 1.
 */
export function legacyToBatch(buf: Buffer): { ok: true; batch: Buffer } | { ok: false; error: string } {
  const parsed = parseMessageSet(buf);
  if (!parsed.ok) return parsed;
  if (parsed.messages.length === 0) return { ok: false, error: 'empty message set' };
  const records: BuildRecord[] = parsed.messages.map((m) => ({ key: m.key, value: m.value, timestamp: m.timestamp }));
  try {
    const compression = parsed.compression;
    return { ok: true, batch: buildBatch({ records, baseTimestamp: records[0]!.timestamp, compression }) };
  } catch (e) {
    return { ok: false, error: `cannot build batch: ${(e as Error).message}` };
  }
}

interface Wrapper {
  magic: 0 | 1;
  attributes: number;
  timestamp: bigint;
}

function parseInto(buf: Buffer, wrapper: Wrapper | null, out: LegacyMessage[], codecs: Compression[]): string | null {
  const where = wrapper === null ? '' : ' inside a compressed wrapper';
  let pos = 0;
  while (pos < buf.length) {
    if (buf.length - pos < ENTRY_OVERHEAD) return `truncated message header at byte ${pos}${where}`;
    const size = buf.readInt32BE(pos + 8);
    const m = pos + ENTRY_OVERHEAD;
    if (size < MIN_MESSAGE_V0 || size > buf.length - m) return `message size ${size} at byte ${pos} does not fit${where}`;
    const end = m + size;
    const magic = buf[m + 4]!;
    if (magic !== 0 && magic !== 1) return `magic ${magic} at byte ${pos}${where}`;
    if (magic === 1 && size < MIN_MESSAGE_V1) return `magic 1 message of ${size} bytes at byte ${pos}${where}`;
    const crc = buf.readUInt32BE(m);
    if (crc !== zlib().crc32(buf.subarray(m + 4, end))) return `CRC mismatch in message at byte ${pos}${where}`;
    const attributes = buf[m + 5]!;
    let p = m + 6;
    let timestamp = NO_TIMESTAMP;
    if (magic === 1) {
      timestamp = buf.readBigInt64BE(p);
      p += 8;
    }
    const keyLength = buf.readInt32BE(p);
    p += 4;
    if (keyLength < -1 || keyLength > end - p - 4) return `key of ${keyLength} bytes at byte ${pos} does not fit${where}`;
    const key = keyLength === -1 ? null : buf.subarray(p, p + keyLength);
    p += Math.max(keyLength, 0);
    const valueLength = buf.readInt32BE(p);
    p += 4;
    if (valueLength === -1 ? p !== end : valueLength !== end - p) {
      return `value of ${valueLength} bytes at byte ${pos} does not fill its message${where}`;
    }
    const value = valueLength === -1 ? null : buf.subarray(p, end);

    const codec = attributes & CODEC_MASK;
    if (codec === Compression.None) {
      if (wrapper !== null) {
        // Inner messages take the wrapper's time when the broker set it.
        if (wrapper.magic === 1 && (wrapper.attributes & LEGACY_LOG_APPEND_TIME) !== 0) timestamp = wrapper.timestamp;
        if (magic !== wrapper.magic) return `magic ${magic} message inside a magic ${wrapper.magic} wrapper`;
      }
      out.push({ magic, timestamp, key, value });
    } else {
      if (wrapper !== null) return `nested compressed message at byte ${pos}${where}`;
      if (!isKnownCompression(codec)) return `unknown compression codec ${codec} at byte ${pos}`;
      if (value === null) return `compressed message without a value at byte ${pos}`;
      let inner: Buffer;
      try {
        inner = decompress(codec, codec === Compression.Lz4 && magic === 0 ? withStandardLz4Checksum(value) : value);
      } catch (e) {
        return `cannot decompress ${Compression[codec]} message at byte ${pos}: ${(e as Error).message}`;
      }
      const before = out.length;
      codecs.push(codec);
      const error = parseInto(inner, { magic, attributes, timestamp }, out, codecs);
      if (error !== null) return error;
      if (out.length === before) return `compressed message at byte ${pos} holds no messages`;
    }
    pos = end;
  }
  return null;
}

/**
 * Magic 0 LZ4 wrappers from Kafka before 0.10 (and clients that mimic it)
 * carry a frame header checksum computed over the frame magic too; Kafka does
 * not check it for magic 0. Returns the frame with the standard checksum, so
 * that a strict decoder takes either kind.
 */
function withStandardLz4Checksum(frame: Buffer): Buffer {
  if (frame.length < 7 || frame.readUInt32LE(0) !== LZ4_FRAME_MAGIC) return frame;
  const flg = frame[4]!;
  const hcAt = 6 + ((flg & 0x08) !== 0 ? 8 : 0) + ((flg & 0x01) !== 0 ? 4 : 0);
  if (hcAt >= frame.length) return frame;
  const fixed = Buffer.from(frame);
  fixed[hcAt] = (xxh32(fixed, 4, hcAt, 0) >>> 8) & 0xff;
  return fixed;
}

/** One message-set entry: offset, size, crc, magic, attributes, [timestamp], key, value. */
function writeMessage(
  out: Buffer[],
  offset: bigint,
  magic: 0 | 1,
  attributes: number,
  timestamp: bigint,
  key: Buffer | null,
  value: Buffer | null,
): number {
  const headerSize = magic === 0 ? MIN_MESSAGE_V0 : MIN_MESSAGE_V1;
  const size = headerSize + (key?.length ?? 0) + (value?.length ?? 0);
  const b = Buffer.allocUnsafe(ENTRY_OVERHEAD + size);
  b.writeBigInt64BE(offset, 0);
  b.writeInt32BE(size, 8);
  let p = ENTRY_OVERHEAD + 4;
  b[p++] = magic;
  b[p++] = attributes;
  if (magic === 1) {
    b.writeBigInt64BE(timestamp, p);
    p += 8;
  }
  b.writeInt32BE(key === null ? -1 : key.length, p);
  p += 4;
  if (key !== null) p += key.copy(b, p);
  b.writeInt32BE(value === null ? -1 : value.length, p);
  p += 4;
  if (value !== null) value.copy(b, p);
  b.writeUInt32BE(zlib().crc32(b.subarray(ENTRY_OVERHEAD + 4)), ENTRY_OVERHEAD);
  out.push(b);
  return b.length;
}

/**
 * The codec's bytes as Kafka's broker writes them into a magic 0/1 wrapper:
 * gzip with Java's header (OS byte 255, "unknown"); LZ4 frames whose header checksum, for
 * magic 0, covers the frame magic too (the pre-0.10 framing that magic 0
 * readers expect).
 */
function compressLegacy(codec: Compression, data: Buffer, magic: 0 | 1): Buffer {
  const out = compress(codec, data);
  if (codec === Compression.Gzip && out.length > 9) out[9] = 0xff;
  if (codec === Compression.Lz4 && magic === 0 && out.length > 6) out[6] = (xxh32(out, 0, 6, 0) >>> 8) & 0xff;
  return out;
}

/** Why a v2 batch could not be down-converted: a codec older formats lack. */
class UnsupportedCompression extends Error {}

/**
 * The magic 0/1 form of the v2 batch at `at` (whole, `size` bytes): nothing
 * for a control batch; an uncompressed batch becomes one message per record
 * at or after `firstOffset`; a compressed one becomes one wrapper message
 * holding all its records, compressed with the batch's codec. Headers are
 * dropped; magic 1 keeps timestamps and the LogAppendTime flag.
 */
function convertBatch(buf: Buffer, at: number, size: number, toMagic: 0 | 1, firstOffset: bigint): Buffer[] {
  const attributes = buf.readInt16BE(at + ATTRIBUTES);
  if ((attributes & CONTROL) !== 0) return [];
  const codec = attributes & COMPRESSION_MASK;
  if (codec === Compression.Zstd) throw new UnsupportedCompression('zstd batches cannot be down-converted');
  const decoded = decodeRecords(buf.subarray(at, at + size));
  if (!decoded.ok) throw new Error(`cannot down-convert a batch: ${decoded.error}`);
  const baseOffset = buf.readBigInt64BE(at + BASE_OFFSET);
  const baseTimestamp = buf.readBigInt64BE(at + BASE_TIMESTAMP);
  const logAppendTime = (attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
  const maxTimestamp = buf.readBigInt64BE(at + MAX_TIMESTAMP);
  const timeAttr = toMagic === 1 && logAppendTime ? LEGACY_LOG_APPEND_TIME : 0;
  const compressed = codec !== Compression.None;
  const records = decoded.records
    .map((r) => ({ offset: baseOffset + BigInt(r.offsetDelta), timestamp: logAppendTime ? maxTimestamp : BigInt.asIntN(64, baseTimestamp + r.timestampDelta), r }))
    .filter((x) => compressed || x.offset >= firstOffset);
  if (records.length === 0) return [];
  const out: Buffer[] = [];
  if (!compressed) {
    for (const x of records) writeMessage(out, x.offset, toMagic, timeAttr, x.timestamp, x.r.key, x.r.value);
    return out;
  }
  // Magic 1 wrappers number their inner messages from 0; magic 0 ones use absolute offsets.
  const innerBase = records[0]!.offset;
  const inner: Buffer[] = [];
  let innerMax = NO_TIMESTAMP;
  for (const x of records) {
    writeMessage(inner, toMagic === 1 ? x.offset - innerBase : x.offset, toMagic, timeAttr, x.timestamp, x.r.key, x.r.value);
    if (x.timestamp > innerMax) innerMax = x.timestamp;
  }
  const value = compressLegacy(codec, Buffer.concat(inner), toMagic);
  const last = records[records.length - 1]!.offset;
  writeMessage(out, last, toMagic, codec | timeAttr, logAppendTime ? maxTimestamp : innerMax, null, value);
  return out;
}

/** Batches are converted in chunks of about this many stored bytes after the first, as Kafka does. */
const DOWN_CONVERT_CHUNK_BYTES = 16 * 1024;
/** The smallest filler Kafka sends when conversion runs short: an offset and a size. */
const OVERFLOW_MIN_LENGTH = LOG_OVERHEAD;

/** Whole v2 batches in `buf`, as [position, size]; a truncated tail is ignored. */
function batchesOf(buf: Buffer): [number, number][] {
  const out: [number, number][] = [];
  let at = 0;
  while (buf.length - at >= BATCH_HEADER_SIZE) {
    const size = buf.readInt32BE(at + BATCH_LENGTH) + LOG_OVERHEAD;
    if (size < BATCH_HEADER_SIZE || size > buf.length - at || buf[at + MAGIC] !== MAGIC_V2) break;
    out.push([at, size]);
    at += size;
  }
  return out;
}

/**
 * A filler of `remaining` bytes that a consumer reads as the start of a message
 * too large to be there (offset -1, a size past the end) and so skips, as
 * Kafka pads a down-converted answer that came out shorter than announced.
 */
function overflow(remaining: number): Buffer {
  const b = Buffer.alloc(Math.max(OVERFLOW_MIN_LENGTH, Math.min(remaining + 1, DOWN_CONVERT_CHUNK_BYTES)));
  b.writeBigInt64BE(-1n, 0);
  b.writeInt32BE(Math.max(remaining + 1, BATCH_HEADER_SIZE), 8);
  return b;
}

/**
 * Every whole batch of `records` converted, concatenated, with no sizing: what
 * Kafka's RecordsUtil.downConvert returns for the same batches. For golden
 * tests against Kafka's own converter; a fetch answer uses downConvert.
 */
export function downConvertAll(records: Buffer, toMagic: 0 | 1, firstOffset: bigint): Buffer {
  return Buffer.concat(batchesOf(records).flatMap(([at, size]) => convertBatch(records, at, size, toMagic, firstOffset)));
}

export type DownConvertResult = { ok: true; records: Buffer } | { ok: false; unsupportedCompression: string };

/**
 * Stored v2 batches (whole, as a fetch reads them) as the magic 0 or 1
 * message set an old consumer gets for them, following Kafka's lazy
 * down-conversion byte for byte in size: the answer is exactly as long as the
 * stored bytes, or as the first converted batch if that is longer; converted
 * messages beyond that length are cut off (the consumer drops the partial
 * message and fetches on), and a conversion that comes out shorter is padded
 * with an overflow filler. Records before `firstOffset` (the fetch offset) are
 * dropped from uncompressed batches; compressed ones keep all theirs, in one
 * wrapper. A zstd batch before anything was converted makes the partition
 * UNSUPPORTED_COMPRESSION_TYPE; after it, the answer ends with filler there.
 *
 * Example: one uncompressed batch of records 0..2 (keys/values 'k'/'v'), to
 * magic 1 from offset 1: two 36-byte messages (offsets 1 and 2), 72 bytes,
 * then padded to the batch's own 85 bytes: 72 + a 13-byte overflow filler.
 */
export function downConvert(records: Buffer, toMagic: 0 | 1, firstOffset: bigint): DownConvertResult {
  const batches = batchesOf(records);
  if (records.length === 0) return { ok: true, records: records };
  let first: Buffer[] = [];
  let next = 0;
  try {
    while (next < batches.length && first.length === 0) {
      const [at, size] = batches[next++]!;
      first = convertBatch(records, at, size, toMagic, firstOffset);
    }
  } catch (e) {
    if (e instanceof UnsupportedCompression) return { ok: false, unsupportedCompression: e.message };
    throw e;
  }
  const firstSize = first.reduce((n, b) => n + b.length, 0);
  const total = firstSize > 0 ? Math.max(records.length, firstSize) : batches.length > 0 ? OVERFLOW_MIN_LENGTH : 0;
  const out: Buffer[] = [...first];
  let written = firstSize;
  while (written < total && next < batches.length) {
    const chunk: [number, number][] = [batches[next++]!];
    let chunkBytes = chunk[0]![1];
    while (next < batches.length && chunkBytes + batches[next]![1] <= DOWN_CONVERT_CHUNK_BYTES) {
      chunkBytes += batches[next]![1];
      chunk.push(batches[next++]!);
    }
    let converted: Buffer[];
    try {
      converted = chunk.flatMap(([at, size]) => convertBatch(records, at, size, toMagic, firstOffset));
    } catch (e) {
      if (!(e instanceof UnsupportedCompression)) throw e;
      // The chunk is lost: filler stands in for it and the consumer comes back for the zstd batch.
      converted = [overflow(total - written)];
    }
    for (const b of converted) {
      out.push(b);
      written += b.length;
    }
  }
  while (written < total) {
    const filler = overflow(total - written);
    out.push(filler);
    written += filler.length;
  }
  const all = Buffer.concat(out);
  return { ok: true, records: all.length > total ? all.subarray(0, total) : all };
}

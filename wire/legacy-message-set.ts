/**
 * Magic 0 and 1 message sets, as sent by old producers (Produce v0-v2), turned
 * into one RecordBatch v2 so that the log stores a single format.
 */
import CRC32 from 'crc-32';
import { Compression, decompress, isKnownCompression } from './compression.js';
import { buildBatch, NO_TIMESTAMP, type BuildRecord } from './record-batch.js';

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
    if (crc !== CRC32.buf(buf.subarray(m + 4, end)) >>> 0) return `CRC mismatch in message at byte ${pos}${where}`;
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
        inner = decompress(codec, value);
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

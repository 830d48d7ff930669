/**
 * The record-batch codecs, synchronous so that produce validation stays one
 * straight-line pass. Every function throws on corrupt input; callers that handle
 * untrusted bytes catch and turn the failure into an error code.
 */
import type { Decoder as ZstdDecoder, Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { decodeLz4Frame } from './lz4.js';
import { zlib } from './builtins.js';
import { lz4, snappy, zstd } from './native.js';

/** The codec ids of the low three attribute bits, shared by every message format. */
export enum Compression {
  None = 0,
  Gzip = 1,
  Snappy = 2,
  Lz4 = 3,
  Zstd = 4,
}

/** The 8-byte header of the xerial snappy stream format (Java clients, KafkaJS). */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
/** Magic, version int32, compatible-version int32. */
const XERIAL_HEADER_SIZE = 16;
/** Uncompressed bytes per xerial block; Java's SnappyOutputStream default. */
const XERIAL_BLOCK_SIZE = 32 * 1024;

// One decoder, and one encoder per zstd level used: they are only used
// synchronously, so never shared between two calls at once.
const zstdEncoders = new Map<number, ZstdEncoder>();
let zstdDecoder: ZstdDecoder | null = null;

/** zstd's own default level, which Kafka's compression.zstd.level defaults to as well. */
const ZSTD_DEFAULT_LEVEL = 3;

/**
 * Compresses `data` with `codec` at `level` (the codec's default when
 * undefined), as Kafka's compression.<codec>.level configs mean it:
 *
 * - gzip: zlib's levels 1-9, or -1 for zlib's default (6), as Java's Deflater;
 * - zstd: any level libzstd takes (Kafka allows -131072 to 22);
 * - lz4: the level is not honoured. lz4-napi (lz4_flex) has one compressor,
 *   LZ4's fast one; Kafka's levels pick lz4-java's high-compression one. The
 *   frames decode the same; only their size differs;
 * - snappy and none take no level.
 *
 * Example: compress(Compression.Gzip, data, 1) is a gzip member at zlib level 1.
 */
export function compress(codec: Compression, data: Buffer, level?: number): Buffer {
  switch (codec) {
    case Compression.None:
      return data;
    case Compression.Gzip:
      return level === undefined ? zlib().gzipSync(data) : zlib().gzipSync(data, { level });
    case Compression.Snappy:
      return xerialCompress(data);
    case Compression.Lz4:
      return lz4().compressFrameSync(data);
    case Compression.Zstd:
      return zstdEncoder(level ?? ZSTD_DEFAULT_LEVEL).encodeSync(data);
    default:
      throw new Error(`unknown compression codec ${codec as number}`);
  }
}

function zstdEncoder(level: number): ZstdEncoder {
  let encoder = zstdEncoders.get(level);
  if (encoder === undefined) {
    encoder = new (zstd().Encoder)(level);
    zstdEncoders.set(level, encoder);
  }
  return encoder;
}

/**
 * Largest decompressed payload accepted. A batch is at most max.message.bytes
 * compressed, but a hostile one could expand far beyond memory; real batches stay
 * well below this. Every codec enforces it before allocating: gzip and snappy
 * through their libraries or declared lengths, LZ4 and zstd by a declared
 * content size or, without one, a bound read off their block headers.
 */
export const MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024;

export function decompress(codec: Compression, data: Buffer): Buffer {
  switch (codec) {
    case Compression.None:
      return data;
    case Compression.Gzip:
      return zlib().gunzipSync(data, { maxOutputLength: MAX_DECOMPRESSED_BYTES });
    case Compression.Snappy:
      return snappyDecompress(data);
    case Compression.Lz4:
      return decodeLz4Frame(data, MAX_DECOMPRESSED_BYTES);
    case Compression.Zstd:
      checkZstdBound(data);
      return (zstdDecoder ??= new (zstd().Decoder)()).decodeSync(data);
    default:
      throw new Error(`unknown compression codec ${codec as number}`);
  }
}

/** True for a compression attribute value this broker can decode. */
export function isKnownCompression(codec: number): codec is Compression {
  return codec >= Compression.None && codec <= Compression.Zstd;
}

function checkDeclaredSize(size: number | null): void {
  if (size !== null && size > MAX_DECOMPRESSED_BYTES) throw new Error(`declares ${size} decompressed bytes, more than ${MAX_DECOMPRESSED_BYTES}`);
}

/** Raw snappy starts with the uncompressed length as an unsigned varint. */
function snappyLength(block: Buffer): number {
  let value = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const b = block[i]!;
    value += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return value;
  }
  throw new Error('bad snappy length');
}

const ZSTD_MAGIC = 0xfd2fb528;
/** Skippable frames carry magics 0x184D2A50 to 0x184D2A5F. */
const ZSTD_SKIPPABLE_MASK = 0xfffffff0;
const ZSTD_SKIPPABLE_MAGIC = 0x184d2a50;
/** No zstd block regenerates more than this. */
const ZSTD_BLOCK_MAX = 128 * 1024;

/**
 * Bounds what `data` (zstd frames, possibly several, possibly skippable ones)
 * can decompress to by walking the frame and block headers, and throws when
 * that bound, or a declared content size, passes MAX_DECOMPRESSED_BYTES. Raw
 * and RLE blocks state their regenerated size; a compressed block regenerates
 * at most 128 KiB. Real encoders fill their blocks, so the bound is close to
 * the true size; only a hostile frame of many tiny blocks is refused early.
 */
function checkZstdBound(data: Buffer): void {
  let at = 0;
  let bound = 0;
  while (at < data.length) {
    if (data.length < at + 8) throw new Error('zstd frame is cut short');
    const magic = data.readUInt32LE(at);
    if ((magic & ZSTD_SKIPPABLE_MASK) >>> 0 === ZSTD_SKIPPABLE_MAGIC) {
      at += 8 + data.readUInt32LE(at + 4);
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw new Error('not a zstd frame');
    const descriptor = data[at + 4]!;
    const fcsFlag = descriptor >> 6;
    const singleSegment = (descriptor >> 5) & 1;
    const hasChecksum = (descriptor >> 2) & 1;
    const dictIdSize = [0, 1, 2, 4][descriptor & 3]!;
    const fcsSize = fcsFlag === 0 ? singleSegment : [1, 2, 4, 8][fcsFlag]!;
    let p = at + 5 + (singleSegment ? 0 : 1) + dictIdSize;
    if (data.length < p + fcsSize) throw new Error('zstd frame header is cut short');
    if (fcsSize > 0) checkDeclaredSize(zstdFrameContentSize(data, p, fcsSize));
    p += fcsSize;
    for (;;) {
      if (data.length < p + 3) throw new Error('zstd block header is cut short');
      const header = data[p]! | (data[p + 1]! << 8) | (data[p + 2]! << 16);
      const last = header & 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      p += 3;
      if (type === 0) {
        bound += size;
        p += size;
      } else if (type === 1) {
        bound += size;
        p += 1;
      } else if (type === 2) {
        bound += ZSTD_BLOCK_MAX;
        p += size;
      } else {
        throw new Error('zstd block of the reserved type');
      }
      if (bound > MAX_DECOMPRESSED_BYTES) throw new Error(`zstd data may expand past ${MAX_DECOMPRESSED_BYTES} bytes`);
      if (last) break;
    }
    at = p + hasChecksum * 4;
  }
}

function zstdFrameContentSize(frame: Buffer, at: number, size: number): number {
  switch (size) {
    case 1: return frame[at]!;
    case 2: return frame.readUInt16LE(at) + 256;
    case 4: return frame.readUInt32LE(at);
    default: return Number(frame.readBigUInt64LE(at));
  }
}

function snappyDecompress(data: Buffer): Buffer {
  if (data.length >= XERIAL_MAGIC.length && data.compare(XERIAL_MAGIC, 0, 8, 0, 8) === 0) {
    return xerialDecompress(data);
  }
  checkDeclaredSize(snappyLength(data));
  return snappy().uncompressSync(data, { asBuffer: true }) as Buffer;
}

function xerialDecompress(data: Buffer): Buffer {
  if (data.length < XERIAL_HEADER_SIZE) throw new Error('truncated xerial snappy header');
  const blocks: Buffer[] = [];
  let total = 0;
  let at = XERIAL_HEADER_SIZE;
  while (at < data.length) {
    if (data.length - at < 4) throw new Error('truncated xerial snappy block length');
    const n = data.readInt32BE(at);
    at += 4;
    if (n < 0 || n > data.length - at) throw new Error(`xerial snappy block of ${n} bytes past the end`);
    checkDeclaredSize(total + snappyLength(data.subarray(at, at + n)));
    const block = snappy().uncompressSync(data.subarray(at, at + n), { asBuffer: true }) as Buffer;
    blocks.push(block);
    total += block.length;
    at += n;
  }
  return blocks.length === 1 ? blocks[0]! : Buffer.concat(blocks, total);
}

/**
 * Xerial framing, as Java producers write it: the one snappy layout that every
 * Kafka client decodes.
 */
function xerialCompress(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(XERIAL_HEADER_SIZE);
  XERIAL_MAGIC.copy(header, 0);
  header.writeInt32BE(1, 8);
  header.writeInt32BE(1, 12);
  parts.push(header);
  for (let at = 0; at < data.length; at += XERIAL_BLOCK_SIZE) {
    const block = snappy().compressSync(data.subarray(at, Math.min(at + XERIAL_BLOCK_SIZE, data.length)));
    const len = Buffer.allocUnsafe(4);
    len.writeInt32BE(block.length, 0);
    parts.push(len, block);
  }
  return Buffer.concat(parts);
}

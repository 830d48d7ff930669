/**
 * The record-batch codecs, synchronous so that produce validation stays one
 * straight-line pass. Every function throws on corrupt input; callers that handle
 * untrusted bytes catch and turn the failure into an error code.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { Decoder as ZstdDecoder, Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { compressFrameSync, decompressFrameSync } from 'lz4-napi';
import { compressSync as snappyCompress, uncompressSync as snappyUncompress } from 'snappy';

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
/** LZ4 frame magic 0x184D2204, little-endian as it appears on the wire. */
const LZ4_FRAME_MAGIC = 0x184d2204;

// One encoder and decoder each: they are only used synchronously, so never shared
// between two calls at once.
let zstdEncoder: ZstdEncoder | null = null;
let zstdDecoder: ZstdDecoder | null = null;

export function compress(codec: Compression, data: Buffer): Buffer {
  switch (codec) {
    case Compression.None:
      return data;
    case Compression.Gzip:
      return gzipSync(data);
    case Compression.Snappy:
      return xerialCompress(data);
    case Compression.Lz4:
      return compressFrameSync(data);
    case Compression.Zstd:
      return (zstdEncoder ??= new ZstdEncoder(3)).encodeSync(data);
    default:
      throw new Error(`unknown compression codec ${codec as number}`);
  }
}

/**
 * Largest decompressed payload accepted. A batch is at most max.message.bytes
 * compressed, but a hostile one could expand far beyond memory; real batches stay
 * well below this. gzip and snappy enforce it before allocating; LZ4 and zstd
 * enforce it when their frame declares its content size.
 */
export const MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024;

export function decompress(codec: Compression, data: Buffer): Buffer {
  switch (codec) {
    case Compression.None:
      return data;
    case Compression.Gzip:
      return gunzipSync(data, { maxOutputLength: MAX_DECOMPRESSED_BYTES });
    case Compression.Snappy:
      return snappyDecompress(data);
    case Compression.Lz4:
      // The library reads a too-short buffer as an empty frame; a batch payload
      // must at least carry the frame magic.
      if (data.length < 7 || data.readUInt32LE(0) !== LZ4_FRAME_MAGIC) throw new Error('not an LZ4 frame');
      checkDeclaredSize(lz4ContentSize(data));
      return decompressFrameSync(data);
    case Compression.Zstd:
      checkDeclaredSize(zstdContentSize(data));
      return (zstdDecoder ??= new ZstdDecoder()).decodeSync(data);
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

/** Content size from an LZ4 frame descriptor, when its flag says it is present. */
function lz4ContentSize(frame: Buffer): number | null {
  const flags = frame[4]!;
  if ((flags & 0x08) === 0 || frame.length < 14) return null;
  return Number(frame.readBigUInt64LE(6));
}

/** Frame_Content_Size from a zstd frame header, when present. */
function zstdContentSize(frame: Buffer): number | null {
  if (frame.length < 5 || frame.readUInt32LE(0) !== 0xfd2fb528) return null;
  const descriptor = frame[4]!;
  const fcsFlag = descriptor >> 6;
  const singleSegment = (descriptor >> 5) & 1;
  const dictIdFlag = descriptor & 3;
  const at = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][dictIdFlag]!;
  const fcsSize = fcsFlag === 0 ? singleSegment : [1, 2, 4, 8][fcsFlag]!;
  if (fcsSize === 0 || frame.length < at + fcsSize) return null;
  switch (fcsSize) {
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
  return snappyUncompress(data, { asBuffer: true }) as Buffer;
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
    const block = snappyUncompress(data.subarray(at, at + n), { asBuffer: true }) as Buffer;
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
    const block = snappyCompress(data.subarray(at, Math.min(at + XERIAL_BLOCK_SIZE, data.length)));
    const len = Buffer.allocUnsafe(4);
    len.writeInt32BE(block.length, 0);
    parts.push(len, block);
  }
  return Buffer.concat(parts);
}

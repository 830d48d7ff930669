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

export function decompress(codec: Compression, data: Buffer): Buffer {
  switch (codec) {
    case Compression.None:
      return data;
    case Compression.Gzip:
      return gunzipSync(data);
    case Compression.Snappy:
      return snappyDecompress(data);
    case Compression.Lz4:
      // The library reads a too-short buffer as an empty frame; a batch payload
      // must at least carry the frame magic.
      if (data.length < 7 || data.readUInt32LE(0) !== LZ4_FRAME_MAGIC) throw new Error('not an LZ4 frame');
      return decompressFrameSync(data);
    case Compression.Zstd:
      return (zstdDecoder ??= new ZstdDecoder()).decodeSync(data);
    default:
      throw new Error(`unknown compression codec ${codec as number}`);
  }
}

/** True for a compression attribute value this broker can decode. */
export function isKnownCompression(codec: number): codec is Compression {
  return codec >= Compression.None && codec <= Compression.Zstd;
}

function snappyDecompress(data: Buffer): Buffer {
  if (data.length >= XERIAL_MAGIC.length && data.compare(XERIAL_MAGIC, 0, 8, 0, 8) === 0) {
    return xerialDecompress(data);
  }
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

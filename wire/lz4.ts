/**
 * LZ4 frame decoding (the frame format of lz4 1.5+, which every Kafka client
 * writes for compression type 3), with the output bounded before anything is
 * decompressed.
 *
 * The frame descriptor (version, reserved bits, header checksum, declared
 * content size) and every block header are checked here first: a block above
 * the maximum the descriptor declares is refused as Kafka refuses it, and the
 * largest output the blocks could produce is computed, so a frame that could
 * expand past the limit is refused without being decompressed. lz4-napi then
 * decodes it (linked blocks included) and checks block and content checksums.
 *
 * Example: decodeLz4Frame(<the 35 bytes `printf 'hello' | lz4 -c` writes>,
 * 1 << 20) -> Buffer 'hello'; with a frame whose blocks could expand past the
 * limit it throws before decompressing anything.
 */
import { lz4 } from './native.js';

export const LZ4_FRAME_MAGIC = 0x184d2204;

const FLG_VERSION_MASK = 0xc0;
const FLG_VERSION_01 = 0x40;
const FLG_BLOCK_CHECKSUM = 0x10;
const FLG_CONTENT_SIZE = 0x08;
const FLG_CONTENT_CHECKSUM = 0x04;
const FLG_DICT_ID = 0x01;
const FLG_RESERVED = 0x02;
/** Set in a block's size word when the block is stored uncompressed. */
const BLOCK_UNCOMPRESSED = 0x80000000;
/** A sequence can expand a compressed byte at most this much: a run of 255-valued length bytes. */
const MAX_EXPANSION = 255;

/** The decoded frame; throws Error with a short reason on anything malformed or too large. */
export function decodeLz4Frame(frame: Buffer, maxOutput: number): Buffer {
  const header = readHeader(frame, maxOutput);
  const bound = blockBound(frame, header, maxOutput);
  const out = lz4().decompressFrameSync(frame);
  if (out.length > bound) throw new Error(`LZ4 frame expanded to ${out.length} bytes, past what its blocks can hold`);
  if (header.contentSize !== null && header.contentSize !== out.length) {
    throw new Error(`LZ4 frame declares ${header.contentSize} bytes but holds ${out.length}`);
  }
  return out;
}

interface FrameHeader {
  /** Where the first block starts. */
  dataStart: number;
  maxBlockSize: number;
  blockChecksum: boolean;
  contentChecksum: boolean;
  contentSize: number | null;
}

function readHeader(frame: Buffer, maxOutput: number): FrameHeader {
  if (frame.length < 7 || frame.readUInt32LE(0) !== LZ4_FRAME_MAGIC) throw new Error('not an LZ4 frame');
  const flg = frame[4]!;
  const bd = frame[5]!;
  if ((flg & FLG_VERSION_MASK) !== FLG_VERSION_01) throw new Error(`unsupported LZ4 frame version ${flg >> 6}`);
  if ((flg & FLG_RESERVED) !== 0 || (bd & 0x8f) !== 0) throw new Error('LZ4 frame descriptor has reserved bits set');
  const blockSizeId = (bd >> 4) & 7;
  if (blockSizeId < 4) throw new Error(`LZ4 block maximum size id ${blockSizeId} is not defined`);
  let at = 6;
  let contentSize: number | null = null;
  if ((flg & FLG_CONTENT_SIZE) !== 0) {
    if (frame.length < at + 8 + 1) throw new Error('LZ4 frame descriptor is cut short');
    const declared = frame.readBigUInt64LE(at);
    if (declared > BigInt(maxOutput)) throw new Error(`LZ4 frame declares ${declared} decompressed bytes, more than ${maxOutput}`);
    contentSize = Number(declared);
    at += 8;
  }
  if ((flg & FLG_DICT_ID) !== 0) throw new Error('LZ4 frames with a dictionary are not supported');
  if (frame.length < at + 1) throw new Error('LZ4 frame descriptor is cut short');
  if (frame[at] !== ((xxh32(frame, 4, at, 0) >>> 8) & 0xff)) throw new Error('LZ4 frame descriptor checksum mismatch');
  return {
    dataStart: at + 1,
    maxBlockSize: 1 << (8 + 2 * blockSizeId),
    blockChecksum: (flg & FLG_BLOCK_CHECKSUM) !== 0,
    contentChecksum: (flg & FLG_CONTENT_CHECKSUM) !== 0,
    contentSize,
  };
}

/**
 * The largest output the frame's blocks can produce, never above `maxOutput`:
 * walks the block headers to the end mark, refusing blocks above the frame's
 * maximum, blocks cut short, and a frame that ends early.
 */
function blockBound(frame: Buffer, header: FrameHeader, maxOutput: number): number {
  let bound = 0;
  let at = header.dataStart;
  const checksum = header.blockChecksum ? 4 : 0;
  for (;;) {
    if (frame.length < at + 4) throw new Error('LZ4 frame ends before its end mark');
    const word = frame.readUInt32LE(at);
    at += 4;
    if (word === 0) break;
    const compressed = (word & BLOCK_UNCOMPRESSED) === 0;
    const size = word & ~BLOCK_UNCOMPRESSED;
    if (size > header.maxBlockSize) throw new Error(`LZ4 block of ${size} bytes exceeds the frame's maximum ${header.maxBlockSize}`);
    if (frame.length < at + size + checksum) throw new Error('LZ4 block is cut short');
    bound += compressed ? Math.min(header.maxBlockSize, size * MAX_EXPANSION) : size;
    if (bound > maxOutput) throw new Error(`LZ4 frame may expand past ${maxOutput} bytes`);
    at += size + checksum;
  }
  if (header.contentChecksum && frame.length < at + 4) throw new Error('LZ4 frame ends before its content checksum');
  if (header.contentSize !== null && header.contentSize > bound) {
    throw new Error(`LZ4 frame declares ${header.contentSize} bytes, more than its blocks can hold`);
  }
  return bound;
}

const PRIME1 = 0x9e3779b1;
const PRIME2 = 0x85ebca77;
const PRIME3 = 0xc2b2ae3d;
const PRIME4 = 0x27d4eb2f;
const PRIME5 = 0x165667b1;

/** The little-endian uint32 at buf[p], as an int32; byte arithmetic is about three times faster here than readInt32LE. */
function lane(buf: Buffer, p: number): number {
  return buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16) | (buf[p + 3]! << 24);
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function round(acc: number, input: number): number {
  return Math.imul(rotl((acc + Math.imul(input, PRIME2)) | 0, 13), PRIME1);
}

/** XXH32 of buf[start, end) with `seed`, as an unsigned 32-bit number. */
export function xxh32(buf: Buffer, start: number, end: number, seed: number): number {
  let p = start;
  let h: number;
  if (end - start >= 16) {
    let v1 = (seed + PRIME1 + PRIME2) | 0;
    let v2 = (seed + PRIME2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - PRIME1) | 0;
    const limit = end - 16;
    while (p <= limit) {
      v1 = round(v1, lane(buf, p));
      v2 = round(v2, lane(buf, p + 4));
      v3 = round(v3, lane(buf, p + 8));
      v4 = round(v4, lane(buf, p + 12));
      p += 16;
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
  } else {
    h = (seed + PRIME5) | 0;
  }
  h = (h + (end - start)) | 0;
  while (p + 4 <= end) {
    h = Math.imul(rotl((h + Math.imul(lane(buf, p), PRIME3)) | 0, 17), PRIME4);
    p += 4;
  }
  while (p < end) {
    h = Math.imul(rotl((h + Math.imul(buf[p]!, PRIME5)) | 0, 11), PRIME1);
    p++;
  }
  h = Math.imul(h ^ (h >>> 15), PRIME2);
  h = Math.imul(h ^ (h >>> 13), PRIME3);
  return (h ^ (h >>> 16)) >>> 0;
}

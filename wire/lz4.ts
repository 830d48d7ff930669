/**
 * LZ4 frame decoding (the frame format of lz4 1.5+, which every Kafka client
 * writes for compression type 3), with the output bounded before it is
 * allocated.
 *
 * Kafka's reader checks the frame descriptor's header checksum, the block
 * checksums when the frame has them, the content checksum when present, and
 * refuses a block larger than the maximum the descriptor declares; so does this
 * one. Blocks are decoded into one contiguous output, so frames with linked
 * blocks (matches reaching into earlier blocks) decode as well.
 *
 * Example: decodeLz4Frame(<the 35 bytes `printf 'hello' | lz4 -c` writes>,
 * 1 << 20) -> Buffer 'hello'; with a frame whose blocks could expand past the
 * limit it throws before allocating anything.
 */

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
const MIN_MATCH = 4;

/** The decoded frame; throws Error with a short reason on anything malformed or too large. */
export function decodeLz4Frame(frame: Buffer, maxOutput: number): Buffer {
  const header = readHeader(frame, maxOutput);
  const blocks = walkBlocks(frame, header, maxOutput);
  // The bound can be far above the real size (a 4 MiB block maximum for a few
  // KiB of records), so start from a guess and grow, never past the bound.
  const sink: Sink = {
    buf: Buffer.allocUnsafe(header.contentSize ?? Math.min(blocks.bound, Math.max(INITIAL_OUTPUT, frame.length * 4))),
    bound: blocks.bound,
  };
  let op = 0;
  for (let i = 0; i < blocks.starts.length; i++) {
    const start = blocks.starts[i]!;
    const size = blocks.sizes[i]!;
    if (blocks.compressed[i]) {
      op = decodeBlock(frame, start, start + size, sink, op, op + header.maxBlockSize);
    } else {
      reserve(sink, op + size);
      frame.copy(sink.buf, op, start, start + size);
      op += size;
    }
  }
  if (header.contentSize !== null && header.contentSize !== op) {
    throw new Error(`LZ4 frame declares ${header.contentSize} bytes but holds ${op}`);
  }
  if (header.contentChecksum && xxh32(sink.buf, 0, op, 0) !== frame.readUInt32LE(blocks.end)) {
    throw new Error('LZ4 content checksum mismatch');
  }
  return sink.buf.subarray(0, op);
}

/** First output allocation when the frame does not declare its size. */
const INITIAL_OUTPUT = 16 * 1024;

/** The output being written, grown on demand up to `bound`. */
interface Sink {
  buf: Buffer;
  bound: number;
}

/** Makes sink.buf at least `end` bytes long; `end` never passes the bound (checked by the caller). */
function reserve(sink: Sink, end: number): void {
  if (end <= sink.buf.length) return;
  const grown = Buffer.allocUnsafe(Math.min(sink.bound, Math.max(end, sink.buf.length * 2)));
  sink.buf.copy(grown, 0, 0, sink.buf.length);
  sink.buf = grown;
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

interface Blocks {
  starts: number[];
  sizes: number[];
  compressed: boolean[];
  /** Largest output the blocks can produce, never above the caller's limit. */
  bound: number;
  /** Where the end mark's content checksum (if any) starts. */
  end: number;
}

/** Finds every block, checks block checksums, and bounds the output before anything is decoded. */
function walkBlocks(frame: Buffer, header: FrameHeader, maxOutput: number): Blocks {
  const blocks: Blocks = { starts: [], sizes: [], compressed: [], bound: 0, end: 0 };
  let at = header.dataStart;
  for (;;) {
    if (frame.length < at + 4) throw new Error('LZ4 frame ends before its end mark');
    const word = frame.readUInt32LE(at);
    at += 4;
    if (word === 0) break;
    const compressed = (word & BLOCK_UNCOMPRESSED) === 0;
    const size = word & ~BLOCK_UNCOMPRESSED;
    if (size > header.maxBlockSize) throw new Error(`LZ4 block of ${size} bytes exceeds the frame's maximum ${header.maxBlockSize}`);
    if (frame.length < at + size + (header.blockChecksum ? 4 : 0)) throw new Error('LZ4 block is cut short');
    if (header.blockChecksum && xxh32(frame, at, at + size, 0) !== frame.readUInt32LE(at + size)) {
      throw new Error('LZ4 block checksum mismatch');
    }
    blocks.starts.push(at);
    blocks.sizes.push(size);
    blocks.compressed.push(compressed);
    blocks.bound += compressed ? Math.min(header.maxBlockSize, size * MAX_EXPANSION) : size;
    if (blocks.bound > maxOutput) throw new Error(`LZ4 frame may expand past ${maxOutput} bytes`);
    at += size + (header.blockChecksum ? 4 : 0);
  }
  if (header.contentChecksum && frame.length < at + 4) throw new Error('LZ4 frame ends before its content checksum');
  if (header.contentSize !== null) {
    if (header.contentSize > blocks.bound) throw new Error(`LZ4 frame declares ${header.contentSize} bytes, more than its blocks can hold`);
    blocks.bound = header.contentSize;
  }
  blocks.end = at;
  return blocks;
}

/**
 * Decodes one LZ4 block src[sp, send) into the sink from `op`, writing nothing
 * at or past `oend` (the block maximum); returns the new output position.
 * Match offsets may reach back to the start of the output (linked blocks).
 */
function decodeBlock(src: Buffer, sp: number, send: number, sink: Sink, op: number, oend: number): number {
  let out = sink.buf;
  for (;;) {
    // A block ends with a sequence of literals only; running out after a match is malformed.
    if (sp >= send) throw new Error('LZ4 block ends after a match');
    const token = src[sp++]!;
    let literals = token >>> 4;
    if (literals === 15) {
      let b: number;
      do {
        if (sp >= send) throw new Error('LZ4 literal length runs past the block');
        b = src[sp++]!;
        literals += b;
      } while (b === 255);
    }
    if (sp + literals > send) throw new Error('LZ4 literals run past the block');
    if (op + literals > oend) throw new Error('LZ4 block expands past its maximum size');
    if (op + literals > out.length) {
      reserve(sink, op + literals);
      out = sink.buf;
    }
    if (literals < 64) {
      for (let i = 0; i < literals; i++) out[op + i] = src[sp + i]!;
    } else {
      src.copy(out, op, sp, sp + literals);
    }
    sp += literals;
    op += literals;
    if (sp === send) return op;

    if (sp + 2 > send) throw new Error('LZ4 match offset runs past the block');
    const offset = src[sp]! | (src[sp + 1]! << 8);
    sp += 2;
    if (offset === 0 || offset > op) throw new Error(`LZ4 match offset ${offset} points before the output`);
    let length = (token & 15) + MIN_MATCH;
    if ((token & 15) === 15) {
      let b: number;
      do {
        if (sp >= send) throw new Error('LZ4 match length runs past the block');
        b = src[sp++]!;
        length += b;
      } while (b === 255);
    }
    if (op + length > oend) throw new Error('LZ4 block expands past its maximum size');
    if (op + length > out.length) {
      reserve(sink, op + length);
      out = sink.buf;
    }
    const from = op - offset;
    // Buffer's copy and fill calls cost more than a byte loop below a few hundred bytes.
    if (length < 256) {
      // A forward byte copy, which also repeats the last `offset` bytes when the match overlaps its own output.
      for (let i = 0; i < length; i++) out[op + i] = out[from + i]!;
    } else if (offset >= length) {
      out.copyWithin(op, from, from + length);
    } else if (offset === 1) {
      out.fill(out[from]!, op, op + length);
    } else {
      // An overlapping match repeats a period of `offset` bytes: copy whole periods,
      // doubling each time, so every source byte is final before it is read.
      let copied = 0;
      while (copied < length) {
        const n = Math.min(offset + copied, length - copied);
        out.copyWithin(op + copied, from, from + n);
        copied += n;
      }
    }
    op += length;
  }
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

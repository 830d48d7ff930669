import { compressFrameSync } from 'lz4-napi';
import { describe, expect, it } from 'vitest';
import { decodeLz4Frame, xxh32 } from './lz4.js';
import { seededRandom } from './seeded-random.js';

const LIMIT = 1 << 20;
const TEXT = 'gregor gregor gregor gregor gregor lz4 frame\n';

// Frames below were written by the lz4 command-line tool (lz4 1.9) from
// printf 'gregor gregor gregor gregor gregor lz4 frame\n' with the options named.
const CLI_DEFAULT = '04224d186440a7160000007f677265676f7220070009a06c7a34206672616d650a00000000c34cf742'; // -B7
const CLI_ALL_CHECKS =
  '04224d187c402d0000000000000063160000007f677265676f7220070009a06c7a34206672616d650a0643e6c300000000c34cf742'; // -BD -BX --content-size
const CLI_BLOCK_CHECKSUM_ONLY = '04224d187040ad160000007f677265676f7220070009a06c7a34206672616d650a0643e6c300000000'; // --no-frame-crc -BX
// yes 'gregor linked blocks' | head -c 70000 | lz4 -B4 -BD: two 64 KiB-max blocks, the second
// opening with a match that reaches back into the first.
const CLI_LINKED = `04224d1844405e20010000ff06677265676f72206c696e6b656420626c6f636b730a1500${'ff'.repeat(256)}d350656420626c1b0000000ff0${'ff'.repeat(18)}695065676f7220000000002d5b8422`;

function hex(s: string): Buffer {
  return Buffer.from(s, 'hex');
}

/** A frame descriptor with a correct header checksum, for hand-built frames. */
function descriptor(flg: number, bd: number, contentSize?: bigint): Buffer {
  const parts = [Buffer.from([0x04, 0x22, 0x4d, 0x18, flg, bd])];
  if (contentSize !== undefined) {
    const size = Buffer.alloc(8);
    size.writeBigUInt64LE(contentSize);
    parts.push(size);
  }
  const head = Buffer.concat(parts);
  return Buffer.concat([head, Buffer.from([(xxh32(head, 4, head.length, 0) >>> 8) & 0xff])]);
}

function block(payload: Buffer, uncompressed = false): Buffer {
  const size = Buffer.alloc(4);
  size.writeUInt32LE((payload.length | (uncompressed ? 0x80000000 : 0)) >>> 0);
  return Buffer.concat([size, payload]);
}

const END_MARK = Buffer.alloc(4);

describe('xxh32', () => {
  it('matches the reference values', () => {
    // Published XXH32 test vectors: empty input and 'abc', seed 0.
    expect(xxh32(Buffer.alloc(0), 0, 0, 0)).toBe(0x02cc5d05);
    expect(xxh32(Buffer.from('abc'), 0, 3, 0)).toBe(0x32d153ff);
    // A range inside a larger buffer hashes like the same bytes on their own.
    const long = Buffer.from('x'.repeat(7) + 'Nobody inspects the spammish repetition' + 'y'.repeat(5));
    const alone = Buffer.from('Nobody inspects the spammish repetition');
    expect(xxh32(long, 7, 7 + alone.length, 0)).toBe(xxh32(alone, 0, alone.length, 0));
    expect(xxh32(alone, 0, alone.length, 0)).toBe(0xe2293b2f);
  });
});

describe('decodeLz4Frame', () => {
  it('decodes frames written by the lz4 CLI, with and without checksums and content size', () => {
    for (const frame of [CLI_DEFAULT, CLI_ALL_CHECKS, CLI_BLOCK_CHECKSUM_ONLY]) {
      expect(decodeLz4Frame(hex(frame), LIMIT).toString()).toBe(TEXT);
    }
  });

  it('decodes linked blocks whose matches reach into the previous block', () => {
    const out = decodeLz4Frame(hex(CLI_LINKED), LIMIT);
    expect(out.length).toBe(70000);
    expect(out.equals(Buffer.from('gregor linked blocks\n'.repeat(4000).slice(0, 70000)))).toBe(true);
  });

  it('refuses a frame whose descriptor checksum is wrong', () => {
    const frame = hex(CLI_DEFAULT);
    frame[6] ^= 0xff;
    expect(() => decodeLz4Frame(frame, LIMIT)).toThrow(/descriptor checksum/);
  });

  it('refuses a frame whose block checksum or content checksum is wrong', () => {
    const blockBad = hex(CLI_ALL_CHECKS);
    blockBad[16 + 4 + 3] ^= 1; // a byte inside the block payload
    expect(() => decodeLz4Frame(blockBad, LIMIT)).toThrow(/BlockChecksum/);
    const contentBad = hex(CLI_DEFAULT);
    contentBad[contentBad.length - 1] ^= 1;
    expect(() => decodeLz4Frame(contentBad, LIMIT)).toThrow(/ContentChecksum/);
  });

  it('refuses cut frames and bad match offsets', () => {
    const frame = hex(CLI_DEFAULT);
    for (const cut of [3, 6, 8, 12, frame.length - 5, frame.length - 1]) {
      expect(() => decodeLz4Frame(frame.subarray(0, cut), LIMIT), `cut at ${cut}`).toThrow();
    }
    // One sequence: token 0x10 (1 literal, match 4), literal 'a', offset 5 > the 1 byte written.
    const badOffset = Buffer.concat([descriptor(0x60, 0x40), block(Buffer.from([0x10, 0x61, 0x05, 0x00, 0x00])), END_MARK]);
    expect(() => decodeLz4Frame(badOffset, LIMIT)).toThrow(/Offset/);
    // A block that ends right after a match, without its closing literals.
    const noTail = Buffer.concat([descriptor(0x60, 0x40), block(Buffer.from([0x10, 0x61, 0x01, 0x00])), END_MARK]);
    expect(() => decodeLz4Frame(noTail, LIMIT)).toThrow(/ExpectedAnotherByte/);
  });

  it('refuses blocks larger than the frame maximum and blocks that expand past it', () => {
    // BD 0x40: blocks of at most 64 KiB.
    const tooBig = Buffer.concat([descriptor(0x60, 0x40), block(Buffer.alloc(65537), true), END_MARK]);
    expect(() => decodeLz4Frame(tooBig, 1 << 30)).toThrow(/exceeds the frame's maximum/);
    // One sequence: 1 literal, then a match of about 70,000 bytes at offset 1.
    const runLength = [0x1f, 0x61, 0x01, 0x00, ...Array(274).fill(255), 0x00, 0x00];
    const expanding = Buffer.concat([descriptor(0x60, 0x40), block(Buffer.from(runLength)), END_MARK]);
    expect(() => decodeLz4Frame(expanding, 1 << 30)).toThrow(/OutputTooSmall/);
  });

  it('bounds the output before decoding: refuses a frame that may expand past the limit, or declares more', () => {
    // 65 compressed blocks of 16,448 bytes under a 4 MiB block maximum could expand to 260 MiB.
    const blocks = Array.from({ length: 65 }, () => block(Buffer.alloc(16448)));
    const bomb = Buffer.concat([descriptor(0x60, 0x70), ...blocks, END_MARK]);
    expect(() => decodeLz4Frame(bomb, 256 << 20)).toThrow(/may expand past/);
    const declared = Buffer.concat([descriptor(0x68, 0x40, 1n << 40n), block(Buffer.from('abc'), true), END_MARK]);
    expect(() => decodeLz4Frame(declared, LIMIT)).toThrow(/declares/);
  });

  it('checks a declared content size against what the blocks hold', () => {
    const ok = Buffer.concat([descriptor(0x68, 0x40, 3n), block(Buffer.from('abc'), true), END_MARK]);
    expect(decodeLz4Frame(ok, LIMIT).toString()).toBe('abc');
    const wrong = Buffer.concat([descriptor(0x68, 0x40, 2n), block(Buffer.from('abc'), true), END_MARK]);
    expect(() => decodeLz4Frame(wrong, LIMIT)).toThrow(/ContentLength/);
  });

  it('decodes what another LZ4 encoder (lz4-napi) writes, for inputs from random to highly repetitive', () => {
    const rand = seededRandom(42);
    for (let n = 0; n < 60; n++) {
      const length = Math.floor(rand() * 200_000);
      const alphabet = 1 + Math.floor(rand() * 255);
      const runs = rand() < 0.5;
      const data = Buffer.alloc(length);
      for (let i = 0; i < length; ) {
        const run = runs ? 1 + Math.floor(rand() * 300) : 1;
        data.fill(Math.floor(rand() * alphabet), i, Math.min(length, i + run));
        i += run;
      }
      expect(decodeLz4Frame(compressFrameSync(data), 1 << 20).equals(data), `case ${n}`).toBe(true);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { Compression, MAX_DECOMPRESSED_BYTES, compress, decompress } from './compression.js';

const codecs = [Compression.None, Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd];

function rawSnappyLiteral(text: string): Buffer {
  // A raw snappy block of one literal: uvarint length, tag (len-1)<<2, bytes.
  const bytes = Buffer.from(text);
  if (bytes.length > 60) throw new Error('short literals only');
  return Buffer.concat([Buffer.from([bytes.length, (bytes.length - 1) << 2]), bytes]);
}

function xerial(...blocks: Buffer[]): Buffer {
  const header = Buffer.from('82534e41505059000000000100000001', 'hex');
  const parts: Buffer[] = [header];
  for (const b of blocks) {
    const len = Buffer.alloc(4);
    len.writeInt32BE(b.length);
    parts.push(len, b);
  }
  return Buffer.concat(parts);
}

describe('compress / decompress', () => {
  const samples = [
    Buffer.alloc(0),
    Buffer.from('a'),
    Buffer.from('the quick brown fox '.repeat(5000)),
    Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919) & 0xff)),
  ];
  for (const codec of codecs) {
    it(`round-trips ${Compression[codec]}`, () => {
      for (const s of samples) expect(decompress(codec, compress(codec, s)).equals(s)).toBe(true);
    });
  }

  it('writes snappy in xerial framing, in blocks of 32 KiB', () => {
    const data = Buffer.from('x'.repeat(70_000));
    const out = compress(Compression.Snappy, data);
    expect(out.subarray(0, 8).toString('hex')).toBe('82534e4150505900');
    let blocks = 0;
    for (let at = 16; at < out.length; at += 4 + out.readInt32BE(at)) blocks++;
    expect(blocks).toBe(3);
  });

  it('decodes gzip written by the gzip CLI', () => {
    // printf 'hello gregor gzip\n' | gzip -c -n
    const bytes = Buffer.from('1f8b0800000000000003cb48cdc9c957482f4a4dcf2f5248afca2ce00200dc60f1c712000000', 'hex');
    expect(decompress(Compression.Gzip, bytes).toString()).toBe('hello gregor gzip\n');
  });

  it('decodes zstd written by the zstd CLI from a pipe (no content size in the frame)', () => {
    // printf 'hello gregor zstd\n' | zstd -c -q
    const bytes = Buffer.from('28b52ffd045891000068656c6c6f20677265676f72207a7374640a3645229b', 'hex');
    expect(decompress(Compression.Zstd, bytes).toString()).toBe('hello gregor zstd\n');
  });

  it('decodes an LZ4 frame written by the lz4 CLI', () => {
    // printf 'hello gregor lz4\n' | lz4 -c -q
    const bytes = Buffer.from('04224d186440a71100008068656c6c6f20677265676f72206c7a340a00000000b0d3a20f', 'hex');
    expect(decompress(Compression.Lz4, bytes).toString()).toBe('hello gregor lz4\n');
  });

  it('writes the LZ4 frame format', () => {
    expect(compress(Compression.Lz4, Buffer.from('abc')).readUInt32LE(0)).toBe(0x184d2204);
  });

  it('decodes raw snappy and hand-built xerial framing of several blocks', () => {
    expect(decompress(Compression.Snappy, rawSnappyLiteral('hello')).toString()).toBe('hello');
    const framed = xerial(rawSnappyLiteral('hello, '), rawSnappyLiteral('xerial'));
    expect(decompress(Compression.Snappy, framed).toString()).toBe('hello, xerial');
  });

  it('throws on corrupt input', () => {
    const garbage = Buffer.from('definitely not compressed at all');
    for (const codec of [Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd]) {
      expect(() => decompress(codec, garbage), Compression[codec]).toThrow();
    }
    expect(() => decompress(Compression.Lz4, Buffer.from('nope'))).toThrow();
    const framed = xerial(rawSnappyLiteral('hello'));
    expect(() => decompress(Compression.Snappy, framed.subarray(0, framed.length - 2))).toThrow();
    expect(() => decompress(Compression.Snappy, framed.subarray(0, 12))).toThrow();
    const gz = compress(Compression.Gzip, Buffer.from('some text to compress'));
    expect(() => decompress(Compression.Gzip, gz.subarray(0, gz.length - 5))).toThrow();
    expect(() => decompress(7 as Compression, garbage)).toThrow();
  });
});

describe('decompression limits', () => {
  const big = Buffer.alloc(MAX_DECOMPRESSED_BYTES + 1024);
  it.each([Compression.Gzip, Compression.Snappy])('codec %i refuses a payload that expands past the limit', (codec) => {
    expect(() => decompress(codec, compress(codec, big))).toThrow();
  });

  it('refuses LZ4 and zstd frames that declare a content size past the limit', () => {
    const size = Buffer.alloc(8);
    size.writeBigUInt64LE(BigInt(MAX_DECOMPRESSED_BYTES + 1));
    // LZ4: magic, FLG (version 01, content-size flag), BD, content size, header checksum.
    const lz4 = Buffer.concat([Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x48, 0x40]), size, Buffer.from([0])]);
    expect(() => decompress(Compression.Lz4, lz4)).toThrow(/declares/);
    // zstd: magic, descriptor (8-byte content size), window descriptor, content size.
    const zstd = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xc0, 0x58]), size]);
    expect(() => decompress(Compression.Zstd, zstd)).toThrow(/declares/);
  });

  /** A zstd frame without a content size (descriptor 0, window descriptor 0x58) of hand-built blocks. */
  function zstdFrame(blocks: Buffer[]): Buffer {
    return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58]), ...blocks]);
  }
  /** A block header (3 bytes, little-endian: last flag, type, size) and its payload. */
  function zstdBlock(type: 'raw' | 'rle', content: Buffer | { byte: number; count: number }, last: boolean): Buffer {
    const size = Buffer.isBuffer(content) ? content.length : content.count;
    const header = (last ? 1 : 0) | ((type === 'raw' ? 0 : 1) << 1) | (size << 3);
    const head = Buffer.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff]);
    return Buffer.concat([head, Buffer.isBuffer(content) ? content : Buffer.from([content.byte])]);
  }

  it('reads zstd frames without a content size through their block headers', () => {
    const frame = zstdFrame([zstdBlock('rle', { byte: 0x61, count: 10 }, false), zstdBlock('raw', Buffer.from('bc'), true)]);
    expect(decompress(Compression.Zstd, frame).toString()).toBe('aaaaaaaaaabc');
  });

  it('refuses a zstd frame without a content size whose blocks expand past the limit, before decoding it', () => {
    // 2,100 RLE blocks of 128 KiB each: 8 KiB of input standing for 275 MB.
    const blocks = Array.from({ length: 2100 }, (_, i) => zstdBlock('rle', { byte: 0, count: 128 * 1024 }, i === 2099));
    expect(() => decompress(Compression.Zstd, zstdFrame(blocks))).toThrow(/may expand past/);
  });

  it('refuses zstd frames cut inside a block header or with a reserved block type', () => {
    const frame = zstdFrame([zstdBlock('raw', Buffer.from('abc'), true)]);
    expect(() => decompress(Compression.Zstd, frame.subarray(0, 7))).toThrow();
    const reserved = Buffer.from(frame);
    reserved[6] = reserved[6]! | 0x06;
    expect(() => decompress(Compression.Zstd, reserved)).toThrow(/reserved/);
  });
});

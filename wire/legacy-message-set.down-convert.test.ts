import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { downConvertCases } from '../compat-tests/capture/down-convert/cases.js';
import { Compression, decompress } from './compression.js';
import { downConvert, downConvertAll, parseMessageSet } from './legacy-message-set.js';
import { xxh32 } from './lz4.js';
import { buildBatch, CONTROL, decodeRecords, writeBatchCrc, ATTRIBUTES } from './record-batch.js';

interface Entry {
  offset: bigint;
  magic: number;
  attributes: number;
  timestamp: bigint | null;
  key: Buffer | null;
  value: Buffer | null;
}

/** The entries of a magic 0/1 message set, read by hand (no CRC or codec checks). */
function entries(buf: Buffer): Entry[] {
  const out: Entry[] = [];
  let at = 0;
  while (at + 12 <= buf.length) {
    const size = buf.readInt32BE(at + 8);
    if (at + 12 + size > buf.length) break;
    let p = at + 16;
    const magic = buf[p++]!;
    const attributes = buf[p++]!;
    let timestamp: bigint | null = null;
    if (magic === 1) {
      timestamp = buf.readBigInt64BE(p);
      p += 8;
    }
    const kl = buf.readInt32BE(p);
    p += 4;
    const key = kl < 0 ? null : buf.subarray(p, p + kl);
    p += Math.max(kl, 0);
    const vl = buf.readInt32BE(p);
    p += 4;
    const value = vl < 0 ? null : buf.subarray(p, p + vl);
    out.push({ offset: buf.readBigInt64BE(at), magic, attributes, timestamp, key, value });
    at += 12 + size;
  }
  return out;
}

function golden(name: string): { stored: Buffer; kafka: Buffer } {
  const text = readFileSync(join(import.meta.dirname, 'golden/kafka-down-convert', `${name}.hex`), 'utf8').split('\n');
  const mark = text.findIndex((l) => l.startsWith('# kafka-clients'));
  return {
    stored: Buffer.from(text.slice(1, mark).join(''), 'hex'),
    kafka: Buffer.from(text.slice(mark + 1).join(''), 'hex'),
  };
}

/** An LZ4 frame with the header checksum recomputed the standard way (magic 0 frames carry Kafka's old one). */
function properLz4(frame: Buffer): Buffer {
  const fixed = Buffer.from(frame);
  fixed[6] = (xxh32(fixed, 4, 6, 0) >>> 8) & 0xff;
  return fixed;
}

describe('down-conversion against Kafka 4.0.2 MemoryRecords.downConvert (wire/golden/kafka-down-convert)', () => {
  for (const c of downConvertCases()) {
    it(c.name, () => {
      const { stored, kafka } = golden(c.name);
      expect(stored.equals(c.batches)).toBe(true);
      const ours = downConvertAll(stored, c.toMagic, c.firstOffset);
      const codec = entries(kafka)[0]!.attributes & 7;
      if (codec === Compression.None) {
        // Uncompressed messages are fully determined: byte for byte.
        expect(ours.toString('hex')).toBe(kafka.toString('hex'));
        return;
      }
      // Compressors differ between zlib/snappy/lz4 builds, so compare the wrapper and what it holds.
      const [a, b] = [entries(ours), entries(kafka)];
      expect(a.length).toBe(b.length);
      for (let i = 0; i < a.length; i++) {
        expect({ ...a[i], value: null }).toEqual({ ...b[i], value: null });
        let av = a[i]!.value!;
        let bv = b[i]!.value!;
        if (codec === Compression.Lz4) {
          // The frame header (including Kafka's checksum quirk for magic 0) is the same; the blocks may not be.
          expect(av.subarray(0, 7).toString('hex')).toBe(bv.subarray(0, 7).toString('hex'));
          av = properLz4(av);
          bv = properLz4(bv);
        }
        if (codec === Compression.Gzip) expect(av.subarray(0, 10).toString('hex')).toBe(bv.subarray(0, 10).toString('hex'));
        expect(decompress(codec, av).toString('hex')).toBe(decompress(codec, bv).toString('hex'));
      }
    });
  }

  it('reads back through the legacy parser as the stored records', () => {
    for (const c of downConvertCases()) {
      // Magic 0 LZ4 keeps Kafka's old frame checksum, which the parser accepts as Kafka does.
      const converted = downConvertAll(c.batches, c.toMagic, c.firstOffset);
      const parsed = parseMessageSet(converted);
      if (!parsed.ok) throw new Error(`${c.name}: ${parsed.error}`);
      const decoded = decodeAll(c.batches);
      const compressed = (c.batches.readInt16BE(ATTRIBUTES) & 7) !== 0;
      const expected = decoded.filter((r) => compressed || r.offset >= c.firstOffset);
      expect(parsed.messages.map((m) => [m.key?.toString() ?? null, m.value?.toString() ?? null]), c.name).toEqual(
        expected.map((r) => [r.key, r.value]),
      );
      expect(parsed.messages.every((m) => m.magic === c.toMagic)).toBe(true);
      if (c.toMagic === 1) expect(parsed.messages.map((m) => m.timestamp)).toEqual(expected.map((r) => r.timestamp));
    }
  });
});

function decodeAll(batches: Buffer): { offset: bigint; key: string | null; value: string | null; timestamp: bigint }[] {
  const out: { offset: bigint; key: string | null; value: string | null; timestamp: bigint }[] = [];
  let at = 0;
  while (at < batches.length) {
    const size = batches.readInt32BE(at + 8) + 12;
    const b = batches.subarray(at, at + size);
    const d = decodeRecords(b);
    if (!d.ok) throw new Error(d.error);
    const lat = (b.readInt16BE(ATTRIBUTES) & 8) !== 0;
    for (const r of d.records) {
      out.push({
        offset: b.readBigInt64BE(0) + BigInt(r.offsetDelta),
        key: r.key?.toString() ?? null,
        value: r.value?.toString() ?? null,
        timestamp: lat ? b.readBigInt64BE(35) : b.readBigInt64BE(27) + r.timestampDelta,
      });
    }
    at += size;
  }
  return out;
}

function batchAt(baseOffset: bigint, n: number, compression = Compression.None, value = 'v'): Buffer {
  return buildBatch({
    baseOffset,
    compression,
    records: Array.from({ length: n }, (_, i) => ({ key: 'k', value, timestamp: 1000n + BigInt(i) })),
  });
}

describe('downConvert sizes the answer as Kafka lazy down-conversion does', () => {
  it('pads a conversion shorter than the stored bytes with an overflow filler', () => {
    const stored = batchAt(0n, 3);
    const out = downConvert(stored, 1, 1n);
    if (!out.ok) throw new Error(out.unsupportedCompression);
    expect(out.records.length).toBe(stored.length);
    const messages = entries(out.records);
    expect(messages.map((m) => m.offset)).toEqual([1n, 2n]);
    // The filler: offset -1 and a size that runs past the end.
    const fillAt = messages.length * (12 + 22 + 2);
    expect(out.records.readBigInt64BE(fillAt)).toBe(-1n);
    expect(out.records.readInt32BE(fillAt + 8)).toBeGreaterThan(out.records.length - fillAt - 12);
    const parsed = parseMessageSet(out.records.subarray(0, fillAt));
    expect(parsed.ok).toBe(true);
  });

  it('cuts later messages at the stored size, keeping the first batch whole even when it grew', () => {
    // Tiny records grow from v2 (about 9 bytes each) to magic 0 (28 bytes each).
    const first = batchAt(0n, 40);
    const second = batchAt(40n, 1);
    const stored = Buffer.concat([first, second]);
    const out = downConvert(stored, 0, 0n);
    if (!out.ok) throw new Error(out.unsupportedCompression);
    const firstConverted = downConvertAll(first, 0, 0n);
    expect(firstConverted.length).toBeGreaterThan(stored.length);
    expect(out.records.equals(firstConverted)).toBe(true);
    // With room to spare, the next batch follows and is cut where the answer ends.
    const big = Buffer.concat([batchAt(0n, 1, Compression.None, 'x'.repeat(400)), batchAt(1n, 10)]);
    const out2 = downConvert(big, 1, 0n);
    if (!out2.ok) throw new Error('unexpected');
    expect(out2.records.length).toBe(big.length);
    const whole = downConvertAll(big, 1, 0n);
    expect(out2.records.equals(whole.subarray(0, big.length))).toBe(true);
  });

  it('refuses zstd at the start (UNSUPPORTED_COMPRESSION_TYPE) and fills in for it later', () => {
    const zstd = batchAt(3n, 2, Compression.Zstd);
    expect(downConvert(zstd, 1, 3n).ok).toBe(false);
    const stored = Buffer.concat([batchAt(0n, 3), zstd]);
    const out = downConvert(stored, 1, 0n);
    if (!out.ok) throw new Error('unexpected');
    expect(out.records.length).toBe(stored.length);
    expect(entries(out.records).filter((m) => m.offset >= 0n).map((m) => m.offset)).toEqual([0n, 1n, 2n]);
  });

  it('answers a read of only control batches with a bare 12-byte filler, and nothing with nothing', () => {
    const control = batchAt(0n, 1);
    control.writeInt16BE(CONTROL, ATTRIBUTES);
    writeBatchCrc(control, 0, control.length);
    const out = downConvert(control, 1, 0n);
    if (!out.ok) throw new Error('unexpected');
    expect(out.records.toString('hex')).toBe('ffffffffffffffff0000003d');
    const none = downConvert(Buffer.alloc(0), 0, 0n);
    expect(none.ok && none.records.length).toBe(0);
  });
});

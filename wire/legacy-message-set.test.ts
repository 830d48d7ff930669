import { createRequire } from 'node:module';
import CRC32 from 'crc-32';
import { describe, expect, it } from 'vitest';
import { Compression, compress } from './compression.js';
import { legacyToBatch, parseMessageSet } from './legacy-message-set.js';
import { ATTRIBUTES, batchCrcValid, decodeRecords, readBatchHeader } from './record-batch.js';

/** One message-set entry, laid out by hand: offset, size, crc, magic, attributes, [timestamp], key, value. */
function entry(opts: { magic: 0 | 1; attributes?: number; timestamp?: bigint; key: Buffer | null; value: Buffer | null; offset?: bigint }): Buffer {
  const body: Buffer[] = [Buffer.from([opts.magic, opts.attributes ?? 0])];
  if (opts.magic === 1) {
    const ts = Buffer.alloc(8);
    ts.writeBigInt64BE(opts.timestamp ?? -1n);
    body.push(ts);
  }
  for (const b of [opts.key, opts.value]) {
    const len = Buffer.alloc(4);
    len.writeInt32BE(b === null ? -1 : b.length);
    body.push(len);
    if (b !== null) body.push(b);
  }
  const content = Buffer.concat(body);
  const head = Buffer.alloc(16);
  head.writeBigInt64BE(opts.offset ?? 0n, 0);
  head.writeInt32BE(content.length + 4, 8);
  head.writeUInt32BE(CRC32.buf(content) >>> 0, 12);
  return Buffer.concat([head, content]);
}

const b = (s: string) => Buffer.from(s);

function records(batch: Buffer) {
  const decoded = decodeRecords(batch);
  if (!decoded.ok) throw new Error(decoded.error);
  return decoded.records.map((r) => ({
    key: r.key?.toString() ?? null,
    value: r.value?.toString() ?? null,
    timestampDelta: r.timestampDelta,
  }));
}

describe('legacyToBatch', () => {
  it('converts a magic 0 set, with timestamp -1', () => {
    const set = Buffer.concat([
      entry({ magic: 0, key: b('k1'), value: b('v1') }),
      entry({ magic: 0, key: null, value: b('v2'), offset: 1n }),
      entry({ magic: 0, key: b('k3'), value: null, offset: 2n }),
    ]);
    const out = legacyToBatch(set);
    if (!out.ok) throw new Error(out.error);
    const h = readBatchHeader(out.batch);
    expect(h).toMatchObject({ magic: 2, baseTimestamp: -1n, maxTimestamp: -1n, recordCount: 3, lastOffsetDelta: 2, attributes: 0 });
    expect(batchCrcValid(out.batch, 0, out.batch.length)).toBe(true);
    expect(records(out.batch)).toEqual([
      { key: 'k1', value: 'v1', timestampDelta: 0n },
      { key: null, value: 'v2', timestampDelta: 0n },
      { key: 'k3', value: null, timestampDelta: 0n },
    ]);
  });

  it('converts a magic 1 set, keeping timestamps', () => {
    const set = Buffer.concat([
      entry({ magic: 1, timestamp: 5000n, key: b('a'), value: b('1') }),
      entry({ magic: 1, timestamp: 7000n, key: b('b'), value: b('2') }),
      entry({ magic: 1, timestamp: 6000n, key: b('c'), value: b('3') }),
    ]);
    const out = legacyToBatch(set);
    if (!out.ok) throw new Error(out.error);
    expect(readBatchHeader(out.batch)).toMatchObject({ baseTimestamp: 5000n, maxTimestamp: 7000n, recordCount: 3 });
    expect(records(out.batch).map((r) => r.timestampDelta)).toEqual([0n, 2000n, 1000n]);
  });

  it('flattens a gzip wrapper and keeps gzip for the converted batch', () => {
    const inner = Buffer.concat([
      entry({ magic: 1, timestamp: 10n, key: null, value: b('x'), offset: 0n }),
      entry({ magic: 1, timestamp: 11n, key: null, value: b('y'), offset: 1n }),
    ]);
    const wrapper = entry({ magic: 1, attributes: Compression.Gzip, timestamp: 11n, key: null, value: compress(Compression.Gzip, inner), offset: 1n });
    const plain = entry({ magic: 1, timestamp: 12n, key: null, value: b('z') });
    const out = legacyToBatch(Buffer.concat([wrapper, plain]));
    if (!out.ok) throw new Error(out.error);
    expect(out.batch.readInt16BE(ATTRIBUTES) & 7).toBe(Compression.Gzip);
    expect(records(out.batch).map((r) => r.value)).toEqual(['x', 'y', 'z']);
  });

  it('gives inner messages the wrapper time when the broker set it (LogAppendTime bit)', () => {
    const inner = entry({ magic: 1, timestamp: 10n, key: null, value: b('x') });
    const wrapper = entry({ magic: 1, attributes: Compression.Gzip | 0x08, timestamp: 99n, key: null, value: compress(Compression.Gzip, inner) });
    const parsed = parseMessageSet(wrapper);
    expect(parsed.ok && parsed.messages[0]!.timestamp).toBe(99n);
  });

  it('reads message sets written by kafkajs (Produce v2 layout, gzip and plain)', async () => {
    const require = createRequire(import.meta.url);
    const MessageSet = require('kafkajs/src/protocol/messageSet');
    const { Types, lookupCodec } = require('kafkajs/src/protocol/message/compression');
    const messages = [
      { key: 'k1', value: 'hello', timestamp: 1_700_000_000_000 },
      { key: null, value: 'world', timestamp: 1_700_000_000_005 },
    ];
    const plain: Buffer = MessageSet({ messageVersion: 1, compression: Types.None, entries: messages }).buffer;
    const inner = MessageSet({ messageVersion: 1, compression: Types.GZIP, entries: messages });
    const value: Buffer = await lookupCodec(Types.GZIP).compress(inner);
    const gz: Buffer = MessageSet({ messageVersion: 1, entries: [{ compression: Types.GZIP, timestamp: messages[0]!.timestamp, value }] }).buffer;
    for (const set of [plain, gz]) {
      const out = legacyToBatch(set);
      if (!out.ok) throw new Error(out.error);
      expect(readBatchHeader(out.batch)).toMatchObject({ baseTimestamp: 1_700_000_000_000n, maxTimestamp: 1_700_000_000_005n });
      expect(records(out.batch)).toEqual([
        { key: 'k1', value: 'hello', timestampDelta: 0n },
        { key: null, value: 'world', timestampDelta: 5n },
      ]);
    }
  });

  it('refuses bad CRCs, bad sizes, nested wrappers and empty sets', () => {
    const good = entry({ magic: 1, timestamp: 1n, key: b('k'), value: b('v') });
    const badCrc = Buffer.from(good);
    badCrc[badCrc.length - 1]! ^= 1;
    expect(legacyToBatch(badCrc)).toMatchObject({ ok: false, error: expect.stringContaining('CRC') });
    expect(legacyToBatch(good.subarray(0, good.length - 1))).toMatchObject({ ok: false });
    expect(legacyToBatch(Buffer.concat([good, good.subarray(0, 5)]))).toMatchObject({ ok: false });
    expect(legacyToBatch(Buffer.alloc(0))).toMatchObject({ ok: false });
    const wrapped = entry({ magic: 1, attributes: Compression.Gzip, key: null, value: compress(Compression.Gzip, good) });
    const nested = entry({ magic: 1, attributes: Compression.Gzip, key: null, value: compress(Compression.Gzip, wrapped) });
    expect(legacyToBatch(wrapped).ok).toBe(true);
    expect(legacyToBatch(nested)).toMatchObject({ ok: false, error: expect.stringContaining('nested') });
    const corruptInner = entry({ magic: 1, attributes: Compression.Gzip, key: null, value: compress(Compression.Gzip, badCrc) });
    expect(legacyToBatch(corruptInner)).toMatchObject({ ok: false, error: expect.stringContaining('CRC') });
    const notGzip = entry({ magic: 1, attributes: Compression.Gzip, key: null, value: b('not gzip') });
    expect(legacyToBatch(notGzip)).toMatchObject({ ok: false, error: expect.stringContaining('decompress') });
    const magic5 = Buffer.from(good);
    magic5[16] = 5;
    expect(legacyToBatch(magic5)).toMatchObject({ ok: false });
  });
});

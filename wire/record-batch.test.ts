import { describe, expect, it } from 'vitest';
import {
  wholeBatches,
  ATTRIBUTES,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH,
  Compression,
  CONTROL,
  LOG_OVERHEAD,
  RECORD_COUNT,
  TRANSACTIONAL,
  batchCrcValid,
  buildBatch,
  decodeRecords,
  fastScan,
  readBatchHeader,
  scanRecords,
  scanRecordsFast,
  writeBatchCrc,
} from './record-batch.js';
import { seededRandom } from './seeded-random.js';

const codecs = [Compression.None, Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd];

/**
 * A one-record batch (no key, no value, no headers) whose timestampDelta is
 * encoded as the given varlong bytes, however long.
 */
function withTimestampBytes(varlong: number[]): Buffer {
  const body = Buffer.from([0, ...varlong, 0, 1, 1, 0]);
  const header = buildBatch({ records: [{ timestamp: 0n }] }).subarray(0, BATCH_HEADER_SIZE);
  const batch = Buffer.concat([header, Buffer.from([body.length * 2]), body]);
  batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH);
  writeBatchCrc(batch, 0, batch.length);
  return batch;
}

describe('buildBatch', () => {
  it('writes the header a producer would', () => {
    const batch = buildBatch({
      baseOffset: 7n,
      records: [
        { key: 'a', value: 'one', timestamp: 1000n },
        { key: null, value: 'two', timestamp: 1500n },
        { value: null, timestamp: 1200n },
      ],
      producerId: 42n,
      producerEpoch: 3,
      baseSequence: 9,
      transactional: true,
      partitionLeaderEpoch: 5,
    });
    const h = readBatchHeader(batch);
    expect(h).toMatchObject({
      baseOffset: 7n,
      batchLength: batch.length - 12,
      partitionLeaderEpoch: 5,
      magic: 2,
      attributes: TRANSACTIONAL,
      lastOffsetDelta: 2,
      baseTimestamp: 1000n,
      maxTimestamp: 1500n,
      producerId: 42n,
      producerEpoch: 3,
      baseSequence: 9,
      recordCount: 3,
    });
    expect(batchCrcValid(batch, 0, batch.length)).toBe(true);
  });

  it('encodes one small record to the bytes of the format', () => {
    const batch = buildBatch({ records: [{ key: 'k', value: 'v', timestamp: 1000n }] });
    // length 8 (zigzag 16), attributes 0, timestampDelta 0, offsetDelta 0,
    // key length 1 (zigzag 2) 'k', value length 1 'v', no headers.
    expect(batch.subarray(BATCH_HEADER_SIZE).toString('hex')).toBe('1000000002' + '6b' + '02' + '76' + '00');
    expect(batch.length).toBe(BATCH_HEADER_SIZE + 9);
  });

  it('sets the control bit and compression codec', () => {
    const batch = buildBatch({ records: [{ value: 'x' }], control: true, compression: Compression.Zstd });
    expect(batch.readInt16BE(ATTRIBUTES)).toBe(CONTROL | Compression.Zstd);
  });
});

describe('wholeBatches', () => {
  it('yields each whole batch and stops at a truncated one', () => {
    const a = buildBatch({ baseOffset: 0n, records: [{ value: 'a', timestamp: 1n }] });
    const b = buildBatch({ baseOffset: 1n, records: [{ value: 'bb', timestamp: 2n }, { value: 'c', timestamp: 3n }] });
    const c = buildBatch({ baseOffset: 3n, records: [{ value: 'd', timestamp: 4n }] });
    const views = [...wholeBatches(Buffer.concat([a, b, c.subarray(0, c.length - 1)]))];
    expect(views.map((v) => v.readBigInt64BE(0))).toEqual([0n, 1n]);
    expect(views[1]!.equals(b)).toBe(true);
    expect([...wholeBatches(Buffer.alloc(0))]).toEqual([]);
  });
});

describe('decodeRecords', () => {
  for (const codec of codecs) {
    it(`reads back what buildBatch wrote (${Compression[codec]})`, () => {
      const records = Array.from({ length: 50 }, (_, i) => ({
        key: i % 5 === 0 ? null : `key-${i}`,
        value: i % 7 === 0 ? null : Buffer.from(`value ${i} `.repeat(i)),
        headers: i % 3 === 0 ? [{ key: 'h', value: Buffer.from([i]) }, { key: 'empty', value: null }] : [],
        timestamp: 1_700_000_000_000n + BigInt(i * 10 - 200),
      }));
      const batch = buildBatch({ records, compression: codec });
      expect(batch.readInt16BE(ATTRIBUTES) & 7).toBe(codec);
      const decoded = decodeRecords(batch);
      if (!decoded.ok) throw new Error(decoded.error);
      expect(decoded.records).toHaveLength(50);
      decoded.records.forEach((r, i) => {
        expect(r.offsetDelta).toBe(i);
        expect(r.timestampDelta).toBe(BigInt(i * 10));
        expect(r.key?.toString() ?? null).toBe(records[i]!.key);
        expect(r.value === null ? null : r.value.equals(records[i]!.value!)).toBe(records[i]!.value === null ? null : true);
        expect(r.headers.map((h) => [h.key, h.value?.[0] ?? null])).toEqual(
          records[i]!.headers.map((h) => [h.key, h.value?.[0] ?? null]),
        );
      });
    });
  }

  it('gives back any int64 timestamps: a delta past int64 wraps, as in Kafka', () => {
    const min = -(2n ** 63n);
    const max = 2n ** 63n - 1n;
    const batch = buildBatch({ records: [{ timestamp: min }, { timestamp: max }, { timestamp: 0n }] });
    expect(readBatchHeader(batch)).toMatchObject({ baseTimestamp: min, maxTimestamp: max });
    const decoded = decodeRecords(batch);
    if (!decoded.ok) throw new Error(decoded.error);
    expect(decoded.records.map((r) => r.timestampDelta)).toEqual([0n, -1n, min]);
    expect(decoded.records.map((r) => BigInt.asIntN(64, min + r.timestampDelta))).toEqual([min, max, 0n]);
  });

  it('keeps 64-bit timestamp deltas exact', () => {
    const batch = buildBatch({ records: [{ timestamp: -(2n ** 61n) }, { timestamp: 2n ** 61n }] });
    const decoded = decodeRecords(batch);
    expect(decoded.ok && decoded.records[1]!.timestampDelta).toBe(2n ** 62n);
  });

  it('reads a 10-byte timestamp varlong as Kafka does: only the low bit of the 10th byte counts', () => {
    // ByteUtils.readVarlong shifts the 10th byte left by 63, so a Java long keeps
    // its lowest bit alone; zigzag then maps 2^63 to 2^62.
    const pad = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80];
    const table: [number, bigint][] = [
      [0x00, 0n],
      [0x01, 2n ** 62n],
      [0x7e, 0n],
      [0x7f, 2n ** 62n],
    ];
    for (const [last, delta] of table) {
      const batch = withTimestampBytes([...pad, last]);
      const decoded = decodeRecords(batch);
      expect(decoded.ok && decoded.records[0]!.timestampDelta).toBe(delta);
      // Too wide for the scans' doubles, but well formed.
      expect(scanRecords(batch, BATCH_HEADER_SIZE, batch.length, 1, false)).toMatchObject({ error: null, maxTimestampDelta: null });
    }
    // An 11th byte is past what Kafka reads.
    const long = withTimestampBytes([...pad, 0x80, 0x00]);
    expect(decodeRecords(long)).toMatchObject({ ok: false });
    expect(scanRecords(long, BATCH_HEADER_SIZE, long.length, 1, false).error).toMatch(/longer than 64 bits/);
  });

  it('reports bad input as a value', () => {
    const batch = buildBatch({ records: [{ key: 'k', value: 'v' }, { key: 'k2', value: 'v2' }] });
    expect(decodeRecords(batch.subarray(0, 30)).ok).toBe(false);
    const short = Buffer.from(batch);
    short.writeInt32BE(short.length, BATCH_LENGTH);
    expect(decodeRecords(short)).toMatchObject({ ok: false });
    const moreRecords = Buffer.from(batch);
    moreRecords.writeInt32BE(3, RECORD_COUNT);
    expect(decodeRecords(moreRecords)).toMatchObject({ ok: false });
    const fewerRecords = Buffer.from(batch);
    fewerRecords.writeInt32BE(1, RECORD_COUNT);
    expect(decodeRecords(fewerRecords)).toMatchObject({ ok: false, error: expect.stringContaining('after the last') });
    const badCodec = Buffer.from(batch);
    badCodec.writeInt16BE(Compression.Gzip, ATTRIBUTES);
    expect(decodeRecords(badCodec)).toMatchObject({ ok: false, error: expect.stringContaining('decompress') });
    const codec7 = Buffer.from(batch);
    codec7.writeInt16BE(7, ATTRIBUTES);
    expect(decodeRecords(codec7)).toMatchObject({ ok: false, error: expect.stringContaining('unknown') });
  });

  it('never throws on random corruption (seeded)', () => {
    const rand = seededRandom(20240601);
    const seeds = codecs.map((compression) =>
      buildBatch({
        compression,
        records: Array.from({ length: 8 }, (_, i) => ({ key: `k${i}`, value: `v${i}`.repeat(i), headers: [{ key: 'h', value: 'x' }] })),
      }),
    );
    for (let n = 0; n < 3000; n++) {
      const src = seeds[n % seeds.length]!;
      let buf = Buffer.from(src);
      const flips = 1 + Math.floor(rand() * 4);
      for (let f = 0; f < flips; f++) {
        const at = BATCH_HEADER_SIZE - 4 + Math.floor(rand() * (buf.length - BATCH_HEADER_SIZE + 4));
        buf[at]! ^= 1 << Math.floor(rand() * 8);
      }
      if (rand() < 0.2) buf = buf.subarray(0, Math.floor(rand() * buf.length));
      expect(() => decodeRecords(buf)).not.toThrow();
    }
  });
});

describe('scanRecords', () => {
  it('agrees with decodeRecords on valid batches and finds null keys', () => {
    const batch = buildBatch({
      records: [
        { key: 'a', value: 'x', timestamp: 100n },
        { key: null, value: 'y', timestamp: 300n, headers: [{ key: 'h', value: 'z' }] },
        { key: 'c', value: null, timestamp: 300n },
        { key: null, value: 'w', timestamp: 50n },
      ],
    });
    const scan = scanRecords(batch, BATCH_HEADER_SIZE, batch.length, 4, true);
    expect(scan).toMatchObject({ error: null, maxTimestampDelta: 200, minTimestampDelta: -50, offsetDeltaOfMax: 1, nullKeys: [1, 3] });
  });

  it('reports the smallest and largest deltas from the fast scan too', () => {
    const batch = buildBatch({
      baseTimestamp: 1000n,
      records: [300n, 1000n, 20n, 5000n, 20n].map((timestamp, i) => ({ key: `k${i}`, value: 'v', timestamp })),
    });
    expect(scanRecordsFast(batch, BATCH_HEADER_SIZE, batch.length, 5, true)).toBe(true);
    expect(fastScan).toEqual({ maxTimestampDelta: 4000, minTimestampDelta: -980, offsetDeltaOfMax: 3 });
    expect(scanRecords(batch, BATCH_HEADER_SIZE, batch.length, 5, true)).toMatchObject({ maxTimestampDelta: 4000, minTimestampDelta: -980 });
  });

  it('flags out-of-order offset deltas as invalid, not corrupt', () => {
    const batch = buildBatch({ records: [{ value: 'a' }, { value: 'b' }] });
    // Second record: length, attributes, timestampDelta, then offsetDelta.
    const second = BATCH_HEADER_SIZE + 1 + (batch[BATCH_HEADER_SIZE]! >> 1);
    batch[second + 3] = 4; // zigzag 2
    writeBatchCrc(batch, 0, batch.length);
    expect(scanRecords(batch, BATCH_HEADER_SIZE, batch.length, 2, false)).toMatchObject({ invalid: true, errorIndex: 1 });
  });

  it('returns null maxTimestampDelta for deltas too wide for a double', () => {
    const batch = buildBatch({ records: [{ timestamp: 0n }, { timestamp: 2n ** 60n }] });
    expect(scanRecords(batch, BATCH_HEADER_SIZE, batch.length, 2, false)).toMatchObject({ error: null, maxTimestampDelta: null });
  });
});

/**
 * compression.type on the validator: a topic that names a codec stores every
 * batch with it, re-encoding the others as Kafka's LogValidator rebuilds them
 * (buildRecordsAndAssignOffsets); 'producer' never re-encodes.
 *
 * What Kafka 4.4.0 stores, recorded from the reference broker with a raw
 * Produce v9 / Fetch v12 built on gregor's codec: an idempotent gzip batch of
 * three records at t+5, t+1, t+3 (baseTimestamp t-10, headers on two of
 * them) sent to a compression.type=lz4 topic comes back as one lz4 batch,
 * baseTimestamp t+5 (the first record's), timestamp deltas 0, -4, -2,
 * maxTimestamp t+5, producer id, epoch and base sequence as sent, keys,
 * values and headers as sent; to an uncompressed topic the same with
 * attributes 0; to an lz4 LogAppendTime topic the same with attributes 11
 * (lz4 | LogAppendTime) and maxTimestamp the broker's clock.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decompress } from '../wire/compression.js';
import {
  ATTRIBUTES,
  COMPRESSION_MASK,
  Compression,
  RECORDS,
  TIMESTAMP_TYPE_LOG_APPEND,
  TRANSACTIONAL,
  batchCrcValid,
  buildBatch,
  decodeRecords,
  readBatchHeader,
  type BuildRecord,
} from '../wire/record-batch.js';
import { logConfig, type CompressionType, type LogConfig } from './log-config.js';
import { validateAndAssignOffsets, type ValidationContext, type ValidationResult } from './log-validator.js';
import { legacyEntry } from './test-support.js';

const NOW = 1_700_000_100_000;

function ctx(config: Partial<LogConfig> = {}, nextOffset = 10n): ValidationContext {
  return { nextOffset, leaderEpoch: 4, now: NOW, config: logConfig(config) };
}

function ok(r: ValidationResult): Extract<ValidationResult, { ok: true }> {
  if (!r.ok) throw new Error(`${r.errorCode}: ${r.message}`);
  return r;
}

const T = 1_700_000_000_000n;

/** The records of the reference run: out of time order, null key, null value, headers (one with a null value). */
const RECORDS_SENT: BuildRecord[] = [
  { key: 'k0', value: 'v0', timestamp: T + 5n, headers: [{ key: 'h', value: Buffer.from('x') }] },
  { key: null, value: 'v1', timestamp: T + 1n },
  { key: 'k2', value: null, timestamp: T + 3n, headers: [{ key: 'a', value: null }, { key: 'b', value: Buffer.from('y') }] },
];

const CODECS: readonly [CompressionType, Compression][] = [
  ['uncompressed', Compression.None],
  ['gzip', Compression.Gzip],
  ['snappy', Compression.Snappy],
  ['lz4', Compression.Lz4],
  ['zstd', Compression.Zstd],
];

/** Every record of a v2 batch as absolute values, for comparing what went in with what is stored. */
function contents(batch: Buffer): { key: string | null; value: string | null; timestamp: bigint; headers: [string, string | null][] }[] {
  const decoded = decodeRecords(batch);
  if (!decoded.ok) throw new Error(decoded.error);
  const h = readBatchHeader(batch);
  return decoded.records.map((r) => ({
    key: r.key?.toString() ?? null,
    value: r.value?.toString() ?? null,
    timestamp: (h.attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0 ? h.maxTimestamp : BigInt.asIntN(64, h.baseTimestamp + r.timestampDelta),
    headers: r.headers.map((x) => [x.key, x.value?.toString() ?? null] as [string, string | null]),
  }));
}

const codecOf = (batch: Buffer, at = 0): number => batch.readInt16BE(at + ATTRIBUTES) & COMPRESSION_MASK;

describe('LogValidator: compression.type', () => {
  it('stores a gzip batch sent to an lz4 topic as one lz4 batch, as Kafka 4.4.0 does', () => {
    const input = buildBatch({ records: RECORDS_SENT, baseTimestamp: T - 10n, compression: Compression.Gzip, producerId: 4242n, producerEpoch: 3, baseSequence: 7 });
    const before = Buffer.from(input);
    const r = ok(validateAndAssignOffsets(input, ctx({ compressionType: 'lz4' })));
    expect(input.equals(before)).toBe(true);
    expect(r).toMatchObject({ firstOffset: 10n, lastOffset: 12n, maxTimestamp: T + 5n, offsetOfMaxTimestamp: 10n, logAppendTime: -1n, recordCount: 3 });
    expect(r.appended).toEqual([{ baseOffset: 10n, lastOffset: 12n, maxTimestamp: T + 5n, position: 0, size: r.batches.length }]);
    const h = readBatchHeader(r.batches);
    expect(h).toMatchObject({
      baseOffset: 10n,
      batchLength: r.batches.length - 12,
      partitionLeaderEpoch: 4,
      magic: 2,
      attributes: Compression.Lz4,
      lastOffsetDelta: 2,
      baseTimestamp: T + 5n,
      maxTimestamp: T + 5n,
      producerId: 4242n,
      producerEpoch: 3,
      baseSequence: 7,
      recordCount: 3,
    });
    expect(batchCrcValid(r.batches, 0, r.batches.length)).toBe(true);
    const decoded = decodeRecords(r.batches);
    if (!decoded.ok) throw new Error(decoded.error);
    expect(decoded.records.map((x) => [x.offsetDelta, x.timestampDelta])).toEqual([
      [0, 0n],
      [1, -4n],
      [2, -2n],
    ]);
    expect(contents(r.batches)).toEqual(contents(input));
  });

  it('stores an uncompressed topic\'s batches uncompressed', () => {
    for (const [, source] of CODECS.filter(([, c]) => c !== Compression.None)) {
      const input = buildBatch({ records: RECORDS_SENT, compression: source });
      const r = ok(validateAndAssignOffsets(input, ctx({ compressionType: 'uncompressed' })));
      expect(codecOf(r.batches), Compression[source]).toBe(Compression.None);
      expect(r.batches.equals(buildBatch({ records: RECORDS_SENT, baseOffset: 10n, partitionLeaderEpoch: 4 }))).toBe(true);
      expect(contents(r.batches)).toEqual(contents(input));
    }
  });

  it('re-encodes from every codec to every other, keeping the records; a batch already in the topic\'s codec is stored as sent', () => {
    for (const [type, target] of CODECS) {
      for (const [, source] of CODECS) {
        const input = buildBatch({ records: RECORDS_SENT, compression: source, transactional: true, producerId: 9n, producerEpoch: 1, baseSequence: 0 });
        const r = ok(validateAndAssignOffsets(input, ctx({ compressionType: type })));
        const label = `${Compression[source]} -> ${type}`;
        expect(codecOf(r.batches), label).toBe(target);
        expect(contents(r.batches), label).toEqual(contents(input));
        expect(r.batches.readInt16BE(ATTRIBUTES) & TRANSACTIONAL, label).toBe(TRANSACTIONAL);
        expect(batchCrcValid(r.batches, 0, r.batches.length), label).toBe(true);
        if (source === target) expect(r.batches.subarray(ATTRIBUTES).equals(input.subarray(ATTRIBUTES)), label).toBe(true);
      }
    }
  });

  it('never re-encodes with compression.type=producer', () => {
    for (const [, source] of CODECS) {
      const input = buildBatch({ records: RECORDS_SENT, compression: source });
      const r = ok(validateAndAssignOffsets(input, ctx({ compressionType: 'producer' })));
      expect(r.batches.subarray(ATTRIBUTES).equals(input.subarray(ATTRIBUTES)), Compression[source]).toBe(true);
    }
  });

  it('on a LogAppendTime topic stamps the re-encoded batch and keeps the records\' own times under it, as Kafka 4.4.0 does', () => {
    const input = buildBatch({ records: RECORDS_SENT, compression: Compression.Gzip });
    const r = ok(validateAndAssignOffsets(input, ctx({ compressionType: 'lz4', messageTimestampType: 'LogAppendTime' })));
    const h = readBatchHeader(r.batches);
    expect(h.attributes).toBe(Compression.Lz4 | TIMESTAMP_TYPE_LOG_APPEND);
    expect([h.baseTimestamp, h.maxTimestamp]).toEqual([T + 5n, BigInt(NOW)]);
    const decoded = decodeRecords(r.batches);
    if (!decoded.ok) throw new Error(decoded.error);
    expect(decoded.records.map((x) => x.timestampDelta)).toEqual([0n, -4n, -2n]);
    expect(r).toMatchObject({ logAppendTime: BigInt(NOW), maxTimestamp: BigInt(NOW), offsetOfMaxTimestamp: 10n });
    expect(r.appended[0]!.maxTimestamp).toBe(BigInt(NOW));
  });

  it('gives every record of a batch a client marked LogAppendTime that batch\'s maxTimestamp, as Kafka reads them', () => {
    const input = buildBatch({ records: RECORDS_SENT, compression: Compression.Gzip, logAppendTime: true });
    const r = ok(validateAndAssignOffsets(input, ctx({ compressionType: 'uncompressed', messageTimestampAfterMaxMs: Number.MAX_SAFE_INTEGER })));
    const h = readBatchHeader(r.batches);
    expect(h.attributes & TIMESTAMP_TYPE_LOG_APPEND).toBe(0);
    expect(contents(r.batches).map((x) => x.timestamp)).toEqual([T + 5n, T + 5n, T + 5n]);
  });

  it('checks the records before it re-encodes them', () => {
    const input = buildBatch({ records: RECORDS_SENT, compression: Compression.Gzip });
    const r = validateAndAssignOffsets(input, ctx({ compressionType: 'lz4', cleanupPolicy: ['compact'] }));
    expect(r).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_RECORD, recordErrors: [{ batchIndex: 1 }] });
    const late = validateAndAssignOffsets(input, ctx({ compressionType: 'lz4', messageTimestampBeforeMaxMs: 1000 }));
    expect(late).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_TIMESTAMP });
  });

  it('checks max.message.bytes and segment.bytes again on what it re-encoded', () => {
    const big: BuildRecord[] = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: 'x'.repeat(2000), timestamp: T }));
    const input = buildBatch({ records: big, compression: Compression.Zstd });
    expect(input.length).toBeLessThan(2000);
    const tooBig = validateAndAssignOffsets(input, ctx({ compressionType: 'uncompressed', maxMessageBytes: 50_000 }));
    expect(tooBig).toMatchObject({ ok: false, errorCode: ErrorCode.MESSAGE_TOO_LARGE });
    const tooLong = validateAndAssignOffsets(input, ctx({ compressionType: 'uncompressed', segmentBytes: 50_000 }));
    expect(tooLong).toMatchObject({ ok: false, errorCode: ErrorCode.RECORD_LIST_TOO_LARGE });
    expect(ok(validateAndAssignOffsets(input, ctx({ compressionType: 'uncompressed' }))).batches.length).toBeGreaterThan(100_000);
  });

  it('re-encodes only the batches in another codec when a partition holds several (Produce v0-v2)', () => {
    const gzip = buildBatch({ records: RECORDS_SENT, compression: Compression.Gzip, producerId: 1n, producerEpoch: 0, baseSequence: 0 });
    const lz4 = buildBatch({ records: RECORDS_SENT.slice(0, 2), compression: Compression.Lz4, producerId: 2n, producerEpoch: 0, baseSequence: 0 });
    const r = ok(validateAndAssignOffsets(Buffer.concat([gzip, lz4]), ctx({ compressionType: 'lz4' })));
    expect(r.appended.map((a) => [a.baseOffset, a.lastOffset])).toEqual([
      [10n, 12n],
      [13n, 14n],
    ]);
    const second = r.batches.subarray(r.appended[1]!.position);
    expect(second.length).toBe(lz4.length);
    expect(second.subarray(ATTRIBUTES).equals(lz4.subarray(ATTRIBUTES))).toBe(true);
    const first = r.batches.subarray(0, r.appended[0]!.size);
    expect([codecOf(first), readBatchHeader(first).producerId]).toEqual([Compression.Lz4, 1n]);
    expect(contents(first)).toEqual(contents(gzip));
  });

  it('stores a legacy message set in the topic\'s codec', () => {
    const legacy = Buffer.concat([legacyEntry(1000n, 'a'), legacyEntry(1200n, 'b')]);
    const r = ok(validateAndAssignOffsets(legacy, ctx({ compressionType: 'zstd', messageTimestampBeforeMaxMs: Number.MAX_SAFE_INTEGER })));
    expect(codecOf(r.batches)).toBe(Compression.Zstd);
    expect(contents(r.batches).map((x) => [x.value, x.timestamp])).toEqual([
      ['a', 1000n],
      ['b', 1200n],
    ]);
  });

  it('honours compression.gzip.level and compression.zstd.level, and takes compression.lz4.level without effect', () => {
    const text: BuildRecord[] = Array.from({ length: 200 }, (_, i) => ({ key: `key-${i}`, value: `value ${i} ${'lorem ipsum dolor sit amet '.repeat(8)} ${i * 7919}`, timestamp: T }));
    const input = buildBatch({ records: text });
    const stored = (config: Partial<LogConfig>): Buffer => ok(validateAndAssignOffsets(input, ctx(config))).batches;
    const gzip1 = stored({ compressionType: 'gzip', compressionGzipLevel: 1 });
    const gzip9 = stored({ compressionType: 'gzip', compressionGzipLevel: 9 });
    const gzipDefault = stored({ compressionType: 'gzip' });
    expect(gzip9.length).toBeLessThan(gzip1.length);
    expect(gzipDefault.subarray(RECORDS).equals(stored({ compressionType: 'gzip', compressionGzipLevel: 6 }).subarray(RECORDS))).toBe(true);
    const zstd1 = stored({ compressionType: 'zstd', compressionZstdLevel: 1 });
    const zstd19 = stored({ compressionType: 'zstd', compressionZstdLevel: 19 });
    expect(zstd19.subarray(RECORDS).equals(zstd1.subarray(RECORDS))).toBe(false);
    expect(stored({ compressionType: 'zstd', compressionZstdLevel: -5 }).length).toBeGreaterThan(zstd19.length);
    // lz4-napi has one compressor: every level gives the same frame.
    expect(stored({ compressionType: 'lz4', compressionLz4Level: 1 }).equals(stored({ compressionType: 'lz4', compressionLz4Level: 17 }))).toBe(true);
    for (const b of [gzip1, gzip9, zstd1, zstd19]) {
      expect(decompress(codecOf(b), b.subarray(RECORDS)).equals(input.subarray(RECORDS))).toBe(true);
      expect(contents(b)).toEqual(contents(input));
    }
  });
});

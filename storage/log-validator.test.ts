import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import {
  ATTRIBUTES,
  BASE_OFFSET,
  BASE_TIMESTAMP,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH,
  Compression,
  LAST_OFFSET_DELTA,
  MAX_TIMESTAMP,
  PARTITION_LEADER_EPOCH,
  RECORD_COUNT,
  TIMESTAMP_TYPE_LOG_APPEND,
  batchCrcValid,
  buildBatch,
  decodeRecords,
  readBatchHeader,
  writeBatchCrc,
  type BuildRecord,
} from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { logConfig, type LogConfig } from './log-config.js';
import { validateAndAssignOffsets, type ValidationContext, type ValidationResult } from './log-validator.js';
import { legacyEntry } from './test-support.js';

function ctx(config: Partial<LogConfig> = {}, nextOffset = 10n, now = 5000): ValidationContext {
  return { nextOffset, leaderEpoch: 4, now, config: logConfig(config) };
}

function ok(r: ValidationResult): Extract<ValidationResult, { ok: true }> {
  if (!r.ok) throw new Error(`${r.errorCode}: ${r.message}`);
  return r;
}

function rec(n: number, t = 1000n): BuildRecord[] {
  return Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `v${i}`, timestamp: t + BigInt(i) }));
}

/** A copy of `batch` with `edit` applied and its CRC made valid again. */
function edited(batch: Buffer, edit: (b: Buffer) => void): Buffer {
  const b = Buffer.from(batch);
  edit(b);
  writeBatchCrc(b, 0, b.length);
  return b;
}

/** A batch encoded by kafkajs's own RecordBatch and Record encoders, as its Produce v3+ request does. */
async function kafkajsBatch(compression: 'none' | 'gzip', messages: { key: string | null; value: string; timestamp: number; headers?: Record<string, string> }[]): Promise<Buffer> {
  const require = createRequire(import.meta.url);
  const { Types } = require('kafkajs/src/protocol/message/compression');
  const Record = require('kafkajs/src/protocol/recordBatch/record/v0');
  const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0');
  const first = Math.min(...messages.map((m) => m.timestamp));
  const max = Math.max(...messages.map((m) => m.timestamp));
  const records = messages.map((m, i) => Record({ ...m, offsetDelta: i, timestampDelta: m.timestamp - first }));
  const batch = await RecordBatch({
    compression: compression === 'gzip' ? Types.GZIP : Types.None,
    records,
    firstTimestamp: first,
    maxTimestamp: max,
    lastOffsetDelta: records.length - 1,
  });
  return batch.buffer as Buffer;
}

describe('validateAndAssignOffsets: worked examples', () => {
  it('assigns offsets and reports the max timestamp (CreateTime)', () => {
    const input = buildBatch({
      records: [
        { key: 'a', value: '1', timestamp: 100n },
        { key: 'b', value: '2', timestamp: 300n },
        { key: 'c', value: '3', timestamp: 200n },
      ],
    });
    const before = Buffer.from(input);
    const r = ok(validateAndAssignOffsets(input, ctx()));
    expect(r).toMatchObject({ firstOffset: 10n, lastOffset: 12n, maxTimestamp: 300n, offsetOfMaxTimestamp: 11n, logAppendTime: -1n, recordCount: 3 });
    expect(r.appended).toEqual([{ baseOffset: 10n, lastOffset: 12n, maxTimestamp: 300n, position: 0, size: input.length }]);
    expect(input.equals(before)).toBe(true);
    expect(r.batches.readBigInt64BE(BASE_OFFSET)).toBe(10n);
    expect(r.batches.readInt32BE(PARTITION_LEADER_EPOCH)).toBe(4);
    // Nothing under the CRC changed.
    expect(r.batches.subarray(16).equals(input.subarray(16))).toBe(true);
  });

  it('stamps LogAppendTime: attribute bit, maxTimestamp = now, CRC recomputed, baseTimestamp kept', () => {
    const input = buildBatch({ records: [{ value: 'a', timestamp: 100n }, { value: 'b', timestamp: 300n }] });
    const r = ok(validateAndAssignOffsets(input, ctx({ messageTimestampType: 'LogAppendTime' })));
    expect(r).toMatchObject({ maxTimestamp: 5000n, offsetOfMaxTimestamp: 10n, logAppendTime: 5000n });
    const h = readBatchHeader(r.batches);
    expect(h.attributes & TIMESTAMP_TYPE_LOG_APPEND).toBe(TIMESTAMP_TYPE_LOG_APPEND);
    expect(h).toMatchObject({ maxTimestamp: 5000n, baseTimestamp: 100n, baseOffset: 10n });
    expect(batchCrcValid(r.batches, 0, r.batches.length)).toBe(true);
    expect(r.appended[0]!.maxTimestamp).toBe(5000n);
  });

  it('assigns offsets across several batches, compressed and not', () => {
    const batches = [
      buildBatch({ records: rec(3, 100n) }),
      buildBatch({ records: rec(2, 900n), compression: Compression.Zstd }),
      buildBatch({ records: rec(4, 500n), compression: Compression.Snappy }),
    ];
    const input = Buffer.concat(batches);
    const r = ok(validateAndAssignOffsets(input, ctx({}, 0n)));
    expect(r).toMatchObject({ firstOffset: 0n, lastOffset: 8n, recordCount: 9, maxTimestamp: 901n, offsetOfMaxTimestamp: 4n });
    expect(r.appended.map((a) => [a.baseOffset, a.lastOffset, a.position, a.size])).toEqual([
      [0n, 2n, 0, batches[0]!.length],
      [3n, 4n, batches[0]!.length, batches[1]!.length],
      [5n, 8n, batches[0]!.length + batches[1]!.length, batches[2]!.length],
    ]);
    for (const a of r.appended) {
      expect(r.batches.readBigInt64BE(a.position)).toBe(a.baseOffset);
      expect(batchCrcValid(r.batches, a.position, a.size)).toBe(true);
    }
  });

  it('corrects a maxTimestamp that disagrees with the records, as Kafka does', () => {
    const input = edited(buildBatch({ records: rec(2, 100n) }), (b) => b.writeBigInt64BE(999n, MAX_TIMESTAMP));
    const r = ok(validateAndAssignOffsets(input, ctx()));
    expect(readBatchHeader(r.batches).maxTimestamp).toBe(101n);
    expect(batchCrcValid(r.batches, 0, r.batches.length)).toBe(true);
  });

  it('keeps a batch with no timestamps at -1', () => {
    const r = ok(validateAndAssignOffsets(buildBatch({ records: [{ value: 'x', timestamp: -1n }] }), ctx()));
    expect(r).toMatchObject({ maxTimestamp: -1n, offsetOfMaxTimestamp: -1n });
  });

  it('accepts batches written by kafkajs, plain and gzip, storing them verbatim', async () => {
    for (const codec of ['none', 'gzip'] as const) {
      const input = await kafkajsBatch(codec, [
        { key: 'user-1', value: 'hello', timestamp: 1_700_000_000_000, headers: { trace: 'abc' } },
        { key: null, value: 'world', timestamp: 1_700_000_000_007 },
      ]);
      const r = ok(validateAndAssignOffsets(input, ctx({}, 10n, 1_700_000_000_100)));
      expect(r).toMatchObject({ firstOffset: 10n, lastOffset: 11n, maxTimestamp: 1_700_000_000_007n, offsetOfMaxTimestamp: 11n });
      expect(r.batches.subarray(16).equals(input.subarray(16))).toBe(true);
      const decoded = decodeRecords(r.batches);
      expect(decoded.ok && decoded.records[0]!.headers[0]!.key).toBe('trace');
    }
  });

  it('converts a legacy magic 1 message set and assigns its offsets', () => {
    const legacy = Buffer.concat([legacyEntry(1000n, 'a'), legacyEntry(1200n, 'b')]);
    const r = ok(validateAndAssignOffsets(legacy, ctx()));
    expect(r).toMatchObject({ firstOffset: 10n, lastOffset: 11n, maxTimestamp: 1200n, offsetOfMaxTimestamp: 11n, recordCount: 2 });
    expect(readBatchHeader(r.batches)).toMatchObject({ magic: 2, baseOffset: 10n, partitionLeaderEpoch: 4 });
    expect(batchCrcValid(r.batches, 0, r.batches.length)).toBe(true);
    const bad = Buffer.from(legacy);
    bad[bad.length - 1]! ^= 0xff;
    expect(validateAndAssignOffsets(bad, ctx())).toMatchObject({ ok: false, errorCode: ErrorCode.CORRUPT_MESSAGE });
  });
});

describe('validateAndAssignOffsets: rules', () => {
  const good = buildBatch({ records: rec(3) });
  const gz = buildBatch({ records: rec(3), compression: Compression.Gzip });
  const cases: { name: string; input: Buffer; config?: Partial<LogConfig>; code: number; recordErrors?: number[] }[] = [
    { name: 'empty input', input: Buffer.alloc(0), code: ErrorCode.INVALID_RECORD },
    { name: 'fewer bytes than a header', input: good.subarray(0, 10), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'batchLength below 49', input: edited(good, (b) => b.writeInt32BE(48, BATCH_LENGTH)), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'batchLength past the end', input: edited(good, (b) => b.writeInt32BE(b.length, BATCH_LENGTH)), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'trailing partial batch', input: Buffer.concat([good, good.subarray(0, 30)]), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'batch cut short', input: good.subarray(0, good.length - 1), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'magic 1 after a v2 batch', input: Buffer.concat([good, legacyEntry(1n, 'x')]), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'bad CRC', input: (() => { const b = Buffer.from(good); b[b.length - 1]! ^= 1; return b; })(), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'too large', input: good, config: { maxMessageBytes: good.length - 1 }, code: ErrorCode.MESSAGE_TOO_LARGE },
    { name: 'larger than a segment', input: good, config: { segmentBytes: good.length - 1 }, code: ErrorCode.RECORD_LIST_TOO_LARGE },
    { name: 'record count 0', input: edited(good, (b) => { b.writeInt32BE(0, RECORD_COUNT); b.writeInt32BE(-1, LAST_OFFSET_DELTA); }), code: ErrorCode.INVALID_RECORD },
    { name: 'count and lastOffsetDelta disagree', input: edited(good, (b) => b.writeInt32BE(1, LAST_OFFSET_DELTA)), code: ErrorCode.INVALID_RECORD },
    // Kafka 4.4.0 answered INVALID_RECORD to these record-count mismatches (compat-tests corrupt-batch).
    { name: 'count larger than the records', input: edited(good, (b) => { b.writeInt32BE(4, RECORD_COUNT); b.writeInt32BE(3, LAST_OFFSET_DELTA); }), code: ErrorCode.INVALID_RECORD },
    { name: 'count smaller than the records', input: edited(good, (b) => { b.writeInt32BE(2, RECORD_COUNT); b.writeInt32BE(1, LAST_OFFSET_DELTA); }), code: ErrorCode.INVALID_RECORD },
    { name: 'compressed count disagrees', input: edited(gz, (b) => { b.writeInt32BE(2, RECORD_COUNT); b.writeInt32BE(1, LAST_OFFSET_DELTA); }), code: ErrorCode.INVALID_RECORD },
    { name: 'offset deltas out of order', input: buildOutOfOrder(), code: ErrorCode.INVALID_RECORD, recordErrors: [1] },
    { name: 'control batch from a client', input: buildBatch({ records: rec(1), control: true }), code: ErrorCode.INVALID_RECORD },
    { name: 'idempotent batch without a sequence', input: buildBatch({ records: rec(1), producerId: 5n, producerEpoch: 0, baseSequence: -1 }), code: ErrorCode.INVALID_RECORD },
    { name: 'compressed payload that does not decompress', input: edited(gz, (b) => b.fill(0x55, BATCH_HEADER_SIZE + 10, BATCH_HEADER_SIZE + 20)), code: ErrorCode.CORRUPT_MESSAGE },
    { name: 'unknown codec', input: edited(good, (b) => b.writeInt16BE(6, ATTRIBUTES)), code: ErrorCode.CORRUPT_MESSAGE },
    {
      name: 'compacted topic, records without a key',
      input: buildBatch({ records: [{ key: 'a', value: '1', timestamp: 1000n }, { key: null, value: '2', timestamp: 1000n }, { key: null, value: null, timestamp: 1000n }] }),
      config: { cleanupPolicy: ['compact', 'delete'] },
      code: ErrorCode.INVALID_RECORD,
      recordErrors: [1, 2],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = validateAndAssignOffsets(c.input, ctx(c.config));
      expect(r).toMatchObject({ ok: false, errorCode: c.code });
      if (c.recordErrors && !r.ok) expect(r.recordErrors.map((e) => e.batchIndex)).toEqual(c.recordErrors);
    });
  }

  it('counts record error indexes from the first record of the input', () => {
    const input = Buffer.concat([buildBatch({ records: rec(3) }), buildBatch({ records: [{ key: 'k', value: 'v', timestamp: 1000n }, { key: null, value: 'v', timestamp: 1000n }] })]);
    const r = validateAndAssignOffsets(input, ctx({ cleanupPolicy: ['compact'] }));
    expect(r).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_RECORD, recordErrors: [{ batchIndex: 4 }] });
  });

  it('accepts keyed records on a compacted topic, compressed too', () => {
    for (const compression of [Compression.None, Compression.Lz4]) {
      ok(validateAndAssignOffsets(buildBatch({ records: rec(5), compression }), ctx({ cleanupPolicy: ['compact'] })));
    }
  });
});

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
/** A configured bound standing for Kafka's Long.MAX_VALUE: no bound. */
const NO_BOUND = Number.MAX_SAFE_INTEGER;

/**
 * A batch whose records sit at `baseTimestamp` + each delta, keyed k0, k1, ...;
 * buildBatch cannot hold sums past int64, so the base is written afterwards.
 */
function atDeltas(baseTimestamp: bigint, deltas: bigint[], compression = Compression.None): Buffer {
  const batch = buildBatch({ baseTimestamp: 0n, compression, records: deltas.map((d, i) => ({ key: `k${i}`, value: `v${i}`, timestamp: d })) });
  return edited(batch, (b) => b.writeBigInt64BE(baseTimestamp, BASE_TIMESTAMP));
}

/** `batch` marked LogAppendTime by its producer, with the given batch maxTimestamp. */
function markedLogAppendTime(batch: Buffer, maxTimestamp: bigint): Buffer {
  return edited(batch, (b) => {
    b.writeInt16BE(b.readInt16BE(ATTRIBUTES) | TIMESTAMP_TYPE_LOG_APPEND, ATTRIBUTES);
    b.writeBigInt64BE(maxTimestamp, MAX_TIMESTAMP);
  });
}

describe('validateAndAssignOffsets: record timestamps as Kafka 4.0 computes and checks them', () => {
  // now is 5000 unless a case says otherwise. Kafka computes each record timestamp
  // as a Java long sum (DefaultRecord.readFrom), so it wraps; LogValidator then
  // refuses, on a CreateTime topic, t != -1 with (now - t) > before.max.ms or
  // -(now - t) > after.max.ms, again in wrapping long arithmetic.
  const ts = (...t: bigint[]): BuildRecord[] => t.map((timestamp, i) => ({ key: `k${i}`, value: `v${i}`, timestamp }));
  const cases: {
    name: string;
    input: Buffer;
    config?: Partial<LogConfig>;
    now?: number;
    /** Accepted with this maxTimestamp and offset delta of its record (-1: none). */
    max?: [bigint, number];
    /** Refused with this error code and record errors at these indexes. */
    refused?: [number, number[]];
  }[] = [
    {
      name: 'baseTimestamp near INT64_MAX plus a positive delta wraps to INT64_MIN + 3; without an after bound both records pass',
      input: atDeltas(INT64_MAX - 1n, [0n, 5n]),
      config: { messageTimestampAfterMaxMs: NO_BOUND },
      max: [INT64_MAX - 1n, 0],
    },
    {
      name: 'the largest delta is not the largest timestamp once a sum wraps',
      input: atDeltas(INT64_MAX - 1n, [5n, 0n], Compression.Lz4),
      config: { messageTimestampAfterMaxMs: NO_BOUND },
      max: [INT64_MAX - 1n, 1],
    },
    {
      name: 'a sum below INT64_MIN wraps to the top and becomes the max',
      input: atDeltas(INT64_MIN + 2n, [0n, -5n]),
      config: { messageTimestampAfterMaxMs: NO_BOUND },
      max: [INT64_MAX - 2n, 1],
    },
    {
      name: 'with the 4.0 default after.max.ms (1 hour) both are refused: the wrapped one because now - t wraps too',
      input: atDeltas(INT64_MAX - 1n, [0n, 5n]),
      refused: [ErrorCode.INVALID_TIMESTAMP, [0, 1]],
    },
    {
      name: 'a timestamp of INT64_MIN counts as ahead of the clock (now - t wraps negative)',
      input: atDeltas(INT64_MIN, [0n]),
      refused: [ErrorCode.INVALID_TIMESTAMP, [0]],
    },
    {
      name: 'a timestamp of INT64_MIN with no after bound is accepted, and is no max',
      input: atDeltas(INT64_MIN, [0n]),
      config: { messageTimestampAfterMaxMs: NO_BOUND },
      max: [-1n, -1],
    },
    { name: 'exactly after.max.ms ahead is accepted', input: buildBatch({ records: ts(1000n, 3_605_000n) }), max: [3_605_000n, 1] },
    {
      name: 'one ms further is refused, for that record only',
      input: buildBatch({ records: ts(1000n, 3_605_001n, 2000n, 3_700_000n) }),
      refused: [ErrorCode.INVALID_TIMESTAMP, [1, 3]],
    },
    {
      name: 'after.max.ms set lower',
      input: buildBatch({ records: ts(5010n, 5011n) }),
      config: { messageTimestampAfterMaxMs: 10 },
      refused: [ErrorCode.INVALID_TIMESTAMP, [1]],
    },
    {
      name: 'before.max.ms: a record older than that is refused',
      input: buildBatch({ records: ts(4000n, 3999n) }),
      config: { messageTimestampBeforeMaxMs: 1000 },
      refused: [ErrorCode.INVALID_TIMESTAMP, [1]],
    },
    {
      name: 'a record without a timestamp (-1) is exempt from the bounds',
      input: buildBatch({ records: ts(-1n, 4500n) }),
      config: { messageTimestampBeforeMaxMs: 1000 },
      max: [4500n, 1],
    },
    {
      name: 'the default before bound is Long.MAX_VALUE: a record from long ago is accepted',
      input: buildBatch({ records: ts(-(2n ** 62n), 4000n) }),
      max: [4000n, 1],
    },
    {
      name: 'a before bound just under MAX_SAFE_INTEGER is a bound',
      input: buildBatch({ records: ts(-(2n ** 62n), 4000n) }),
      config: { messageTimestampBeforeMaxMs: NO_BOUND - 1 },
      refused: [ErrorCode.INVALID_TIMESTAMP, [0]],
    },
    {
      name: 'a real clock: a producer 2 hours fast is refused',
      input: buildBatch({ records: ts(1_700_007_200_000n) }),
      now: 1_700_000_000_000,
      refused: [ErrorCode.INVALID_TIMESTAMP, [0]],
    },
    {
      name: 'LogAppendTime topic: the bounds do not apply',
      input: buildBatch({ records: ts(10n ** 15n) }),
      config: { messageTimestampType: 'LogAppendTime' },
      max: [5000n, 0],
    },
    {
      name: 'LogAppendTime topic: a batch its producer marked LogAppendTime is refused, every record',
      input: markedLogAppendTime(buildBatch({ records: rec(3) }), 1000n),
      config: { messageTimestampType: 'LogAppendTime' },
      refused: [ErrorCode.INVALID_TIMESTAMP, [0, 1, 2]],
    },
    {
      name: 'CreateTime topic: every record of a batch marked LogAppendTime takes the batch maxTimestamp',
      input: markedLogAppendTime(buildBatch({ records: ts(100n, 300n, 200n) }), 4000n),
      max: [4000n, 0],
    },
    {
      name: 'CreateTime topic: a batch marked LogAppendTime with maxTimestamp -1 is refused, every record',
      input: markedLogAppendTime(buildBatch({ records: ts(100n, 300n) }), -1n),
      refused: [ErrorCode.INVALID_TIMESTAMP, [0, 1]],
    },
    {
      name: 'CreateTime topic: a batch marked LogAppendTime is held to the bounds through its maxTimestamp',
      input: markedLogAppendTime(buildBatch({ records: ts(100n, 300n), compression: Compression.Gzip }), 10n ** 13n),
      refused: [ErrorCode.INVALID_TIMESTAMP, [0, 1]],
    },
    {
      name: 'compressed batch, same rule',
      input: buildBatch({ records: ts(1000n, 2000n, 10n ** 13n), compression: Compression.Zstd }),
      refused: [ErrorCode.INVALID_TIMESTAMP, [2]],
    },
    {
      name: 'compacted topic: a missing key is that record error, the others are judged on their timestamp',
      input: buildBatch({
        records: [
          { key: null, value: 'a', timestamp: 10n ** 13n },
          { key: 'b', value: 'b', timestamp: 10n ** 13n },
          { key: null, value: 'c', timestamp: 1000n },
          { key: 'd', value: 'd', timestamp: 1000n },
        ],
      }),
      config: { cleanupPolicy: ['compact'] },
      refused: [ErrorCode.INVALID_TIMESTAMP, [0, 1, 2]],
    },
    {
      name: 'a magic 1 message set spanning the whole int64 range converts and keeps its timestamps (the delta wraps)',
      input: Buffer.concat([legacyEntry(INT64_MIN, 'a'), legacyEntry(INT64_MAX, 'b')]),
      config: { messageTimestampAfterMaxMs: NO_BOUND },
      max: [INT64_MAX, 1],
    },
    {
      name: 'record errors count from the first record of the input',
      input: Buffer.concat([buildBatch({ records: ts(1000n, 1001n, 1002n) }), buildBatch({ records: ts(1000n, 10n ** 13n) })]),
      refused: [ErrorCode.INVALID_TIMESTAMP, [4]],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = validateAndAssignOffsets(c.input, ctx(c.config, 10n, c.now));
      if (c.refused) {
        const [code, indexes] = c.refused;
        expect(r).toMatchObject({ ok: false, errorCode: code });
        if (!r.ok) expect(r.recordErrors.map((e) => e.batchIndex)).toEqual(indexes);
        return;
      }
      const [max, ofMax] = c.max!;
      const v = ok(r);
      expect(v.maxTimestamp).toBe(max);
      expect(v.offsetOfMaxTimestamp).toBe(ofMax < 0 ? -1n : 10n + BigInt(ofMax));
      const h = readBatchHeader(v.batches);
      expect(h.maxTimestamp).toBe(max);
      expect(h.attributes & TIMESTAMP_TYPE_LOG_APPEND).toBe(c.config?.messageTimestampType === 'LogAppendTime' ? TIMESTAMP_TYPE_LOG_APPEND : 0);
      expect(batchCrcValid(v.batches, 0, v.batches.length)).toBe(true);
    });
  }

  it('says which rule each record broke', () => {
    const input = buildBatch({
      records: [
        { key: null, value: 'a', timestamp: 10n ** 13n },
        { key: 'b', value: 'b', timestamp: 10n ** 13n },
        { key: 'c', value: 'c', timestamp: 3000n },
      ],
    });
    const r = validateAndAssignOffsets(input, ctx({ cleanupPolicy: ['compact'], messageTimestampBeforeMaxMs: 1000 }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.recordErrors.map((e) => e.message)).toEqual([
      'a compacted topic needs a key on every record',
      'timestamp 10000000000000 is more than 3600000 ms after the broker time 5000',
      'timestamp 3000 is more than 1000 ms before the broker time 5000',
    ]);
  });

  it('a missing key alone is INVALID_RECORD', () => {
    const input = buildBatch({ records: [{ key: null, value: 'a', timestamp: 10n ** 13n }, { key: 'b', value: 'b', timestamp: 1000n }] });
    expect(validateAndAssignOffsets(input, ctx({ cleanupPolicy: ['compact'] }))).toMatchObject({
      ok: false,
      errorCode: ErrorCode.INVALID_RECORD,
      recordErrors: [{ batchIndex: 0 }],
    });
  });
});

function buildOutOfOrder(): Buffer {
  return edited(buildBatch({ records: [{ value: 'a' }, { value: 'b' }] }), (b) => {
    // Second record: length varint (1 byte), attributes, timestampDelta (1 byte), offsetDelta.
    const second = BATCH_HEADER_SIZE + 1 + (b[BATCH_HEADER_SIZE]! >> 1);
    b[second + 3] = 4; // zigzag for 2
  });
}

describe('validateAndAssignOffsets: seeded fuzz', () => {
  it('returns a value for any corruption, and never ok with a wrong CRC', () => {
    const rand = seededRandom(0x5eed);
    const seeds = [
      buildBatch({ records: rec(5) }),
      Buffer.concat([buildBatch({ records: rec(2) }), buildBatch({ records: rec(3), compression: Compression.Gzip })]),
      buildBatch({ records: rec(4), compression: Compression.Snappy }),
      buildBatch({ records: rec(4), compression: Compression.Lz4 }),
      buildBatch({ records: rec(4), compression: Compression.Zstd }),
      Buffer.concat([legacyEntry(1n, 'abc'), legacyEntry(2n, 'def')]),
    ];
    let oks = 0;
    for (let n = 0; n < 4000; n++) {
      const src = seeds[n % seeds.length]!;
      let buf = Buffer.from(src);
      const flips = Math.floor(rand() * 4);
      for (let f = 0; f < flips; f++) buf[Math.floor(rand() * buf.length)]! ^= 1 << Math.floor(rand() * 8);
      // Some inputs get a fixed CRC so that corruption reaches the record checks.
      if (rand() < 0.5 && buf[16] === 2 && buf.length === src.length) writeBatchCrc(buf, 0, Math.min(buf.length, src.length));
      if (rand() < 0.2) buf = buf.subarray(0, Math.floor(rand() * buf.length));
      const r = validateAndAssignOffsets(buf, ctx({ cleanupPolicy: n % 3 === 0 ? ['compact'] : ['delete'] }));
      expect(r.ok || r.errorCode !== ErrorCode.UNKNOWN_SERVER_ERROR).toBe(true);
      if (!r.ok) continue;
      oks++;
      for (const a of r.appended) {
        expect(batchCrcValid(r.batches, a.position, a.size)).toBe(true);
        expect(decodeRecords(r.batches.subarray(a.position, a.position + a.size)).ok).toBe(true);
        // A v2 input must itself have carried a valid CRC for every batch it accepted.
        if (buf[16] === 2) expect(batchCrcValid(buf, a.position, a.size)).toBe(true);
      }
    }
    expect(oks).toBeGreaterThan(0);
  });
});

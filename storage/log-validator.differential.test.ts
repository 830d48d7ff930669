/**
 * Differential test of the record scan behind the validator: the allocation-free
 * scanRecordsFast, the validator built on it, and the exact decoder
 * (decodeRecords) must agree on which batches are acceptable, over seeded random
 * valid batches (some with unusual but legal encodings) and corruptions of them.
 * The validator's timestamp verdict is checked against Kafka's rule written out
 * plainly in int64 (`kafkaVerdict`), over random clocks, bounds and base
 * timestamps, some near the ends of the int64 range so that sums wrap.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import {
  ATTRIBUTES,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH,
  LAST_OFFSET_DELTA,
  LOG_OVERHEAD,
  MAGIC_V2,
  MAX_TIMESTAMP,
  RECORD_COUNT,
  RECORDS,
  TIMESTAMP_TYPE_LOG_APPEND,
  decodeRecords,
  fastScan,
  scanRecords,
  scanRecordsFast,
  writeBatchCrc,
} from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { logConfig } from './log-config.js';
import { validateAndAssignOffsets } from './log-validator.js';

type Rand = () => number;

const int = (rand: Rand, lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));

/**
 * Unsigned LEB128 of `u` (a non-negative bigint), padded with `pad` redundant
 * continuation bytes: a longer but legal encoding of the same value.
 */
function leb(u: bigint, pad: number): number[] {
  const out: number[] = [];
  do {
    out.push(Number(u & 0x7fn));
    u >>= 7n;
  } while (u > 0n);
  for (let i = 0; i < pad; i++) out.push(0);
  for (let i = 0; i < out.length - 1; i++) out[i]! |= 0x80;
  return out;
}

const zigzag = (v: bigint): bigint => (v >= 0n ? v << 1n : (-v << 1n) - 1n);

interface Field {
  /** Padding bytes for each varint; 0 gives the canonical encoding. */
  pad: () => number;
}

function varint(v: number, f: Field): number[] {
  const bytes = leb(zigzag(BigInt(v)), 0).length;
  return leb(zigzag(BigInt(v)), Math.min(f.pad(), 5 - bytes));
}

function varlong(v: bigint, f: Field): number[] {
  const bytes = leb(zigzag(v), 0).length;
  return leb(zigzag(v), Math.min(f.pad(), 10 - bytes));
}

function bytesField(b: Buffer | null, f: Field): Buffer {
  return b === null ? Buffer.from(varint(-1, f)) : Buffer.concat([Buffer.from(varint(b.length, f)), b]);
}

interface RandomRecord {
  timestampDelta: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: { key: Buffer; value: Buffer | null }[];
}

function randomBytes(rand: Rand): Buffer | null {
  const r = rand();
  if (r < 0.15) return null;
  // Lengths around the one-, two- and three-byte varint boundaries.
  const n = r < 0.6 ? int(rand, 0, 70) : r < 0.9 ? int(rand, 60, 300) : int(rand, 8180, 8200);
  return Buffer.alloc(n, int(rand, 0, 255));
}

function randomDelta(rand: Rand): bigint {
  const r = rand();
  const sign = rand() < 0.3 ? -1n : 1n;
  if (r < 0.5) return BigInt(int(rand, 0, 200)) * sign;
  if (r < 0.7) return BigInt(int(rand, 0, 2 ** 30)) * sign;
  if (r < 0.8) return BigInt(int(rand, 0, 2 ** 48)) * 32n * sign;
  // Around the limit of a safe integer, and beyond it.
  const edges = [2n ** 52n - 1n, 2n ** 52n, 2n ** 52n + 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 56n, 2n ** 62n, 2n ** 63n - 1n];
  const e = edges[int(rand, 0, edges.length - 1)]!;
  return sign < 0n && e === 2n ** 63n - 1n ? -(2n ** 63n) : e * sign;
}

function randomRecords(rand: Rand, count: number, requireKey: boolean): RandomRecord[] {
  return Array.from({ length: count }, () => ({
    timestampDelta: rand() < 0.15 ? randomDelta(rand) : BigInt(int(rand, -5, 150)),
    key: requireKey && rand() < 0.9 ? Buffer.from(`k${int(rand, 0, 1e6)}`) : randomBytes(rand),
    value: randomBytes(rand),
    headers: Array.from({ length: rand() < 0.7 ? 0 : int(rand, 1, 3) }, () => ({
      key: Buffer.from(`h${int(rand, 0, 1e3)}`),
      value: randomBytes(rand),
    })),
  }));
}

/** The records region of a batch, encoded with padded varints when `f` says so. */
function encodeRecords(records: RandomRecord[], f: Field): Buffer {
  const parts: Buffer[] = [];
  records.forEach((r, i) => {
    const fields = [
      Buffer.from([0, ...varlong(r.timestampDelta, f), ...varint(i, f)]),
      bytesField(r.key, f),
      bytesField(r.value, f),
      Buffer.from(varint(r.headers.length, f)),
    ];
    for (const h of r.headers) fields.push(bytesField(h.key, f), bytesField(h.value, f));
    const body = Buffer.concat(fields);
    parts.push(Buffer.from(varint(body.length, f)), body);
  });
  return Buffer.concat(parts);
}

function wrap(records: Buffer, count: number, baseTimestamp: bigint, attributes = 0, maxTimestamp = baseTimestamp): Buffer {
  const out = Buffer.alloc(BATCH_HEADER_SIZE + records.length);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH);
  out.writeInt32BE(-1, 12);
  out.writeInt8(MAGIC_V2, 16);
  out.writeInt16BE(attributes, ATTRIBUTES);
  out.writeInt32BE(count - 1, LAST_OFFSET_DELTA);
  out.writeBigInt64BE(baseTimestamp, 27);
  out.writeBigInt64BE(maxTimestamp, MAX_TIMESTAMP);
  out.writeBigInt64BE(-1n, 43);
  out.writeInt16BE(-1, 51);
  out.writeInt32BE(-1, 53);
  out.writeInt32BE(count, RECORD_COUNT);
  records.copy(out, RECORDS);
  writeBatchCrc(out, 0, out.length);
  return out;
}

/** A random change to the records region (and sometimes the count), the CRC kept valid. */
function corrupt(rand: Rand, batch: Buffer): Buffer {
  let b = Buffer.from(batch);
  const region = (): number => int(rand, RECORDS, b.length - 1);
  const kind = int(rand, 0, 6);
  if (kind === 0) b[region()]! ^= 1 << int(rand, 0, 7);
  else if (kind === 1) b[region()] = int(rand, 0, 255);
  else if (kind === 2) b[region()] = rand() < 0.5 ? 0x80 : 0xff;
  else if (kind === 3 || kind === 4) {
    // Insert or delete one byte, keeping batchLength consistent with the size.
    const at = region();
    b = kind === 3 ? Buffer.concat([b.subarray(0, at), Buffer.from([int(rand, 0, 255)]), b.subarray(at)]) : Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
    b.writeInt32BE(b.length - LOG_OVERHEAD, BATCH_LENGTH);
  } else if (kind === 5) {
    const count = b.readInt32BE(RECORD_COUNT) + (rand() < 0.5 ? -1 : 1);
    b.writeInt32BE(count, RECORD_COUNT);
    b.writeInt32BE(count - 1, LAST_OFFSET_DELTA);
  } else {
    for (let i = int(rand, 2, 6); i > 0; i--) b[region()] = int(rand, 0, 255);
  }
  writeBatchCrc(b, 0, b.length);
  return b;
}

interface Reference {
  /** The records decode and carry offset deltas 0..count-1. */
  wellFormed: boolean;
  /** Every record has a key. */
  keyed: boolean;
  /** Every timestamp delta is zigzag-encoded as a safe integer (within -2^52..2^52-1). */
  safe: boolean;
  maxDelta: bigint;
  offsetOfMaxDelta: number;
  minDelta: bigint;
}

/** What the exact decoder makes of `batch`. */
function reference(batch: Buffer): Reference {
  const count = batch.readInt32BE(RECORD_COUNT);
  const d = decodeRecords(batch);
  const r: Reference = { wellFormed: false, keyed: true, safe: true, maxDelta: 0n, offsetOfMaxDelta: -1, minDelta: 0n };
  if (!d.ok || d.records.length !== count || count <= 0) return r;
  r.wellFormed = d.records.every((rec, i) => rec.offsetDelta === i);
  r.keyed = d.records.every((rec) => rec.key !== null);
  r.safe = d.records.every((rec) => zigzag(rec.timestampDelta) <= 2n ** 53n - 1n);
  d.records.forEach((rec, i) => {
    if (r.offsetOfMaxDelta < 0 || rec.timestampDelta > r.maxDelta) {
      r.maxDelta = rec.timestampDelta;
      r.offsetOfMaxDelta = i;
    }
    if (i === 0 || rec.timestampDelta < r.minDelta) r.minDelta = rec.timestampDelta;
  });
  return r;
}

const LONG = (v: bigint): bigint => BigInt.asIntN(64, v);
const LONG_MAX = 2n ** 63n - 1n;

interface Topic {
  createTime: boolean;
  requireKey: boolean;
  now: bigint;
  before: bigint;
  after: bigint;
}

interface Verdict {
  /** Indexes of the refused records; empty when the batch is accepted. */
  errors: number[];
  code: number;
  maxTimestamp: bigint;
  offsetDeltaOfMax: number;
  /** Some base + delta fell outside int64. */
  wrapped: boolean;
}

/**
 * Kafka 4.0's LogValidator on a well-formed batch, as plainly as it reads in
 * Java: record timestamp = baseTimestamp + delta as a long (or the batch
 * maxTimestamp in a batch marked LogAppendTime), a missing key on a compacted
 * topic first, then validateTimestamp; max over timestamps above -1.
 */
function kafkaVerdict(batch: Buffer, topic: Topic): Verdict {
  const d = decodeRecords(batch);
  if (!d.ok) throw new Error(d.error);
  const base = batch.readBigInt64BE(27);
  const logAppendBatch = (batch.readInt16BE(ATTRIBUTES) & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
  const v: Verdict = { errors: [], code: ErrorCode.INVALID_RECORD, maxTimestamp: -1n, offsetDeltaOfMax: -1, wrapped: false };
  d.records.forEach((rec, i) => {
    if (LONG(base + rec.timestampDelta) !== base + rec.timestampDelta) v.wrapped = true;
    const t = logAppendBatch ? batch.readBigInt64BE(MAX_TIMESTAMP) : LONG(base + rec.timestampDelta);
    if (topic.requireKey && rec.key === null) v.errors.push(i);
    else if (topic.createTime && t !== -1n) {
      const diff = LONG(topic.now - t);
      if (diff > topic.before || LONG(-1n * diff) > topic.after) {
        v.errors.push(i);
        v.code = ErrorCode.INVALID_TIMESTAMP;
      }
    } else if (logAppendBatch) {
      v.errors.push(i);
      v.code = ErrorCode.INVALID_TIMESTAMP;
    }
    if (t > v.maxTimestamp) {
      v.maxTimestamp = t;
      v.offsetDeltaOfMax = i;
    }
  });
  return v;
}

describe('scanRecordsFast and the validator against decodeRecords', () => {
  it('agree on accept and reject over random valid and corrupted batches', () => {
    const rand = seededRandom(0xd1ff);
    const tally = { valid: 0, fastAccepted: 0, validatorAccepted: 0, rejected: 0, fallback: 0, timestampRefused: 0, wrapped: 0, wrappedAccepted: 0 };
    for (let n = 0; n < 6000; n++) {
      const requireKey = n % 4 === 0;
      const count = rand() < 0.1 ? 1 : int(rand, 1, 30);
      const padded = rand() < 0.25;
      const f: Field = { pad: () => (padded && rand() < 0.3 ? int(rand, 1, 5) : 0) };
      const r0 = rand();
      const baseTimestamp =
        r0 < 0.1
          ? -1n
          : r0 < 0.2
            ? BigInt(int(rand, -(2 ** 40), 2 ** 40)) * 2n ** 20n
            : r0 < 0.27
              ? // Near the ends of int64, where base + delta wraps.
                rand() < 0.5
                ? LONG_MAX - BigInt(int(rand, 0, 300))
                : -LONG_MAX - 1n + BigInt(int(rand, 0, 300))
              : r0 < 0.32
                ? // Just inside the validator's double-precision range (|base| < 2^52).
                  (rand() < 0.5 ? 1n : -1n) * (2n ** 52n - BigInt(int(rand, 1, 1000)))
                : 1_700_000_000_000n + BigInt(int(rand, 0, 1e9));
      // Some batches are marked LogAppendTime by their producer, which Kafka
      // refuses unless every record can take the batch maxTimestamp.
      const marked = rand() < 0.05;
      const markedMax = [-1n, baseTimestamp, 1_700_000_000_000n, 2n ** 62n][int(rand, 0, 3)]!;
      let batch = wrap(encodeRecords(randomRecords(rand, count, requireKey), f), count, baseTimestamp, marked ? TIMESTAMP_TYPE_LOG_APPEND : 0, marked ? markedMax : baseTimestamp);
      const corrupted = rand() < 0.6;
      if (corrupted) batch = corrupt(rand, batch);
      const batchCount = batch.readInt32BE(RECORD_COUNT);
      const ref = reference(batch);
      if (ref.wellFormed) tally.valid++;

      // scanRecords (the fast path, else the exact walk) finds every well-formed
      // batch well formed. A timestamp varlong too wide for a double (a large
      // delta, or a small one padded past 8 bytes) is left to the caller's exact
      // decode, which may still reject the batch (a varlong past 64 bits).
      const scan = scanRecords(batch, RECORDS, batch.length, batchCount, requireKey);
      const wide = scan.error === null && scan.maxTimestampDelta === null;
      if (batchCount > 0) {
        if (ref.wellFormed) expect(scan.error, `batch ${n}`).toBeNull();
        else expect(scan.error !== null || wide, `batch ${n}`).toBe(true);
        if (scan.error === null) expect(scan.nullKeys.length === 0, `batch ${n}`).toBe(ref.keyed || !requireKey);
        if (scan.error === null && !wide) {
          expect(BigInt(scan.maxTimestampDelta!), `batch ${n}`).toBe(ref.maxDelta);
          expect(scan.offsetDeltaOfMax, `batch ${n}`).toBe(ref.offsetOfMaxDelta);
        }
        if (wide && ref.wellFormed) tally.fallback++;
      }

      // The fast scan accepts exactly the well-formed batches with keys (when
      // required) and timestamp deltas that fit a double, and finds the same
      // maximum; canonical encodings of safe deltas never need the exact walk.
      const fast = scanRecordsFast(batch, RECORDS, batch.length, batchCount, requireKey);
      const accept = ref.wellFormed && (ref.keyed || !requireKey);
      expect(fast, `batch ${n}`).toBe(accept && ref.safe && !wide);
      if (!padded && !corrupted && accept && ref.safe) expect(fast, `batch ${n}`).toBe(true);
      if (fast) {
        tally.fastAccepted++;
        expect(BigInt(fastScan.maxTimestampDelta), `batch ${n}`).toBe(ref.maxDelta);
        expect(BigInt(fastScan.minTimestampDelta), `batch ${n}`).toBe(ref.minDelta);
        expect(fastScan.offsetDeltaOfMax, `batch ${n}`).toBe(ref.offsetOfMaxDelta);
      }

      // The validator accepts the well-formed batches that Kafka's record
      // checks pass, refuses the others with Kafka's code and record errors,
      // and reports Kafka's maximum, wrapped sums included.
      const r1 = rand();
      const now = r1 < 0.7 ? 1_700_000_000_000 + int(rand, -1e6, 2e9) : r1 < 0.9 ? 5000 : int(rand, -1e9, 1e9);
      // Bounds: none (Long.MAX_VALUE), Kafka 4.0's one hour, anything, or just
      // under 2^53 where the validator's doubles round.
      const bound = (): number => {
        const b = rand();
        return b < 0.45 ? Number.MAX_SAFE_INTEGER : b < 0.65 ? 3_600_000 : b < 0.9 ? int(rand, 0, 2e9) : Number.MAX_SAFE_INTEGER - int(rand, 1, 3);
      };
      const topic: Topic = {
        createTime: rand() < 0.8,
        requireKey,
        now: BigInt(now),
        before: 0n,
        after: 0n,
      };
      const config = logConfig({
        maxMessageBytes: 1 << 26,
        segmentBytes: 1 << 30,
        messageTimestampType: topic.createTime ? 'CreateTime' : 'LogAppendTime',
        messageTimestampBeforeMaxMs: bound(),
        messageTimestampAfterMaxMs: bound(),
        ...(requireKey ? { cleanupPolicy: ['compact'] } : {}),
      });
      const asLong = (ms: number): bigint => (ms >= Number.MAX_SAFE_INTEGER ? LONG_MAX : BigInt(ms));
      topic.before = asLong(config.messageTimestampBeforeMaxMs);
      topic.after = asLong(config.messageTimestampAfterMaxMs);
      const v = validateAndAssignOffsets(batch, { nextOffset: 100n, leaderEpoch: 1, now, config });
      if (!ref.wellFormed) {
        expect(v.ok, `batch ${n}`).toBe(false);
        tally.rejected++;
        continue;
      }
      const kafka = kafkaVerdict(batch, topic);
      if (kafka.wrapped) tally.wrapped++;
      expect(v.ok, `batch ${n}: ${v.ok ? '' : v.message}`).toBe(kafka.errors.length === 0);
      if (v.ok) {
        tally.validatorAccepted++;
        if (kafka.wrapped) tally.wrappedAccepted++;
        expect(v.maxTimestamp, `batch ${n}`).toBe(topic.createTime ? kafka.maxTimestamp : BigInt(now));
        if (topic.createTime) expect(v.offsetOfMaxTimestamp, `batch ${n}`).toBe(kafka.offsetDeltaOfMax < 0 ? -1n : 100n + BigInt(kafka.offsetDeltaOfMax));
        expect(v.lastOffset).toBe(100n + BigInt(batchCount - 1));
      } else {
        tally.rejected++;
        if (kafka.code === ErrorCode.INVALID_TIMESTAMP) tally.timestampRefused++;
        expect(v.errorCode, `batch ${n}: ${v.message}`).toBe(kafka.code);
        expect(v.recordErrors.map((e) => e.batchIndex), `batch ${n}`).toEqual(kafka.errors);
      }
    }
    // The mix reaches every outcome.
    expect(tally.valid).toBeGreaterThan(1000);
    expect(tally.fastAccepted).toBeGreaterThan(1000);
    expect(tally.rejected).toBeGreaterThan(1000);
    expect(tally.fallback).toBeGreaterThan(50);
    expect(tally.timestampRefused).toBeGreaterThan(300);
    expect(tally.wrapped).toBeGreaterThan(100);
    expect(tally.wrappedAccepted).toBeGreaterThan(20);
  });
});

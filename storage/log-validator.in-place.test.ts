import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import {
  BASE_OFFSET,
  BATCH_HEADER_SIZE,
  Compression,
  MAX_TIMESTAMP,
  RECORD_COUNT,
  buildBatch,
  writeBatchCrc,
  type BuildRecord,
} from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { logConfig, type LogConfig } from './log-config.js';
import { validateAndAssignOffsets, type ValidationContext, type ValidationResult } from './log-validator.js';
import { PartitionLog } from './log.js';
import { segmentFileName } from './segment.js';
import { legacyEntry } from './test-support.js';

const CODECS = [Compression.None, Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd];

function ctx(config: Partial<LogConfig>, nextOffset: bigint, leaderEpoch = 4, now = 5000): ValidationContext {
  // Random batches here are stamped up to 2e12, ahead of these clocks: no after.max.ms bound.
  return { nextOffset, leaderEpoch, now, config: logConfig({ messageTimestampAfterMaxMs: Number.MAX_SAFE_INTEGER, ...config }) };
}

/** The result without its buffer, for comparing two results field by field. */
function fields(r: ValidationResult): unknown {
  if (!r.ok) return r;
  const { batches: _batches, ...rest } = r;
  return rest;
}

/** One random valid v2 batch: codec, record count, keys, timestamps and header fields vary. */
function randomBatch(rand: () => number, mayMarkLogAppendTime = true): Buffer {
  const count = 1 + Math.floor(rand() * 6);
  const base = BigInt(Math.floor(rand() * 2_000_000_000_000));
  const records: BuildRecord[] = Array.from({ length: count }, (_, i) => ({
    key: `k${i}-${Math.floor(rand() * 1000)}`,
    value: Buffer.alloc(Math.floor(rand() * 200), i),
    // Timestamps out of order and some at -1, so the max is not always the last.
    timestamp: rand() < 0.1 ? -1n : base + BigInt(Math.floor(rand() * 10_000) - 5000),
    headers: rand() < 0.3 ? [{ key: 'h', value: Buffer.from('x') }] : [],
  }));
  const batch = buildBatch({
    records,
    compression: CODECS[Math.floor(rand() * CODECS.length)]!,
    // Kafka refuses a marked batch whose maxTimestamp is -1 (its records have none).
    logAppendTime: mayMarkLogAppendTime && records.some((r) => r.timestamp !== -1n) && rand() < 0.2,
    baseTimestamp: base,
  });
  // Clients send arbitrary baseOffsets, and some a maxTimestamp the records disagree with.
  batch.writeBigInt64BE(BigInt(Math.floor(rand() * 1000)), BASE_OFFSET);
  if (rand() < 0.3) batch.writeBigInt64BE(BigInt(Math.floor(rand() * 1e12)), MAX_TIMESTAMP);
  writeBatchCrc(batch, 0, batch.length);
  return batch;
}

describe('validateAndAssignOffsets in place', () => {
  it('produces the copying result byte for byte, in the input itself (seeded random valid inputs)', () => {
    const rand = seededRandom(0x1a9ace);
    for (let n = 0; n < 600; n++) {
      const logAppendTopic = rand() < 0.5;
      // Kafka refuses a batch its producer marked LogAppendTime on a LogAppendTime topic.
      const input = Buffer.concat(Array.from({ length: 1 + Math.floor(rand() * 4) }, () => randomBatch(rand, !logAppendTopic)));
      const config: Partial<LogConfig> = {
        messageTimestampType: logAppendTopic ? 'LogAppendTime' : 'CreateTime',
        cleanupPolicy: rand() < 0.3 ? ['compact'] : ['delete'],
      };
      const c = ctx(config, BigInt(Math.floor(rand() * 1e9)), Math.floor(rand() * 100), 1_700_000_000_000 + n);
      const snapshot = Buffer.from(input);

      const copied = validateAndAssignOffsets(input, c);
      expect(copied.ok).toBe(true);
      if (!copied.ok) continue;
      expect(input.equals(snapshot)).toBe(true);
      expect(copied.batches.buffer === input.buffer && copied.batches.byteOffset === input.byteOffset).toBe(false);

      // The input as a view into a larger frame, as Produce passes it.
      const frame = Buffer.concat([Buffer.from('head'), input, Buffer.from('tail')]);
      const owned = frame.subarray(4, 4 + input.length);
      const inPlace = validateAndAssignOffsets(owned, c, { inPlace: true });
      expect(inPlace.ok).toBe(true);
      if (!inPlace.ok) continue;
      expect(inPlace.batches).toBe(owned);
      expect(owned.equals(copied.batches)).toBe(true);
      expect(fields(inPlace)).toEqual(fields(copied));
      expect(frame.subarray(0, 4).toString()).toBe('head');
      expect(frame.subarray(4 + input.length).toString()).toBe('tail');
    }
  });

  it('converts a legacy message set into a new buffer and leaves the input alone', () => {
    const legacy = Buffer.concat([legacyEntry(1000n, 'a'), legacyEntry(1200n, 'b')]);
    const snapshot = Buffer.from(legacy);
    const copied = validateAndAssignOffsets(Buffer.from(legacy), ctx({}, 10n));
    const inPlace = validateAndAssignOffsets(legacy, ctx({}, 10n), { inPlace: true });
    expect(inPlace.ok && copied.ok).toBe(true);
    if (!inPlace.ok || !copied.ok) return;
    expect(legacy.equals(snapshot)).toBe(true);
    expect(inPlace.batches.equals(copied.batches)).toBe(true);
    expect(fields(inPlace)).toEqual(fields(copied));
  });

  it('leaves the input unchanged when a later batch is rejected', () => {
    const good = () => buildBatch({ records: [{ key: 'a', value: 'x', timestamp: 100n }, { key: 'b', value: 'y', timestamp: 50n }] });
    const badCrc = good();
    badCrc[badCrc.length - 1]! ^= 0xff;
    const badCount = good();
    badCount.writeInt32BE(5, RECORD_COUNT);
    writeBatchCrc(badCount, 0, badCount.length);
    const nullKey = buildBatch({ records: [{ key: 'k', value: 'v' }, { key: null, value: 'v' }], compression: Compression.Lz4 });
    const outOfOrder = good();
    // Second record: length varint (1 byte), attributes, timestampDelta (1 byte), offsetDelta.
    outOfOrder[BATCH_HEADER_SIZE + 1 + (outOfOrder[BATCH_HEADER_SIZE]! >> 1) + 3] = 4;
    writeBatchCrc(outOfOrder, 0, outOfOrder.length);
    const cases: [string, Buffer, Partial<LogConfig>, number][] = [
      ['CRC mismatch', badCrc, {}, ErrorCode.CORRUPT_MESSAGE],
      ['record count', badCount, {}, ErrorCode.INVALID_RECORD],
      ['null key on a compacted topic', nullKey, { cleanupPolicy: ['compact'] }, ErrorCode.INVALID_RECORD],
      ['offset delta out of order', outOfOrder, {}, ErrorCode.INVALID_RECORD],
    ];
    for (const [what, bad, config, errorCode] of cases) {
      for (const logAppend of [false, true]) {
        const full = { ...config, messageTimestampType: logAppend ? ('LogAppendTime' as const) : ('CreateTime' as const) };
        // Two good batches first: their headers would be rewritten if the validator wrote early.
        const input = Buffer.concat([good(), good(), bad]);
        const snapshot = Buffer.from(input);
        const r = validateAndAssignOffsets(input, ctx(full, 77n, 9, 123_456), { inPlace: true });
        expect(r, what).toMatchObject({ ok: false, errorCode });
        expect(input.equals(snapshot), what).toBe(true);
        // The good prefix alone is accepted and does get rewritten in place.
        const prefix = input.subarray(0, good().length * 2);
        expect(validateAndAssignOffsets(prefix, ctx(full, 77n, 9, 123_456), { inPlace: true }).ok).toBe(true);
        expect(prefix.equals(snapshot.subarray(0, prefix.length))).toBe(false);
      }
    }
  });

  it('never changes a rejected input and matches the copying result on an accepted one (seeded corruption)', () => {
    const rand = seededRandom(0xc0ffee);
    let rejected = 0;
    for (let n = 0; n < 1500; n++) {
      const src = Buffer.concat(Array.from({ length: 2 + Math.floor(rand() * 3) }, () => randomBatch(rand)));
      const input = Buffer.from(src);
      const flips = 1 + Math.floor(rand() * 3);
      for (let f = 0; f < flips; f++) input[Math.floor(rand() * input.length)]! ^= 1 << Math.floor(rand() * 8);
      const config: Partial<LogConfig> = { messageTimestampType: n % 2 ? 'LogAppendTime' : 'CreateTime', cleanupPolicy: n % 3 ? ['delete'] : ['compact'] };
      const copied = validateAndAssignOffsets(Buffer.from(input), ctx(config, 1000n));
      const snapshot = Buffer.from(input);
      const inPlace = validateAndAssignOffsets(input, ctx(config, 1000n), { inPlace: true });
      expect(fields(inPlace)).toEqual(fields(copied));
      if (!inPlace.ok) {
        rejected++;
        expect(input.equals(snapshot)).toBe(true);
      } else if (copied.ok) {
        expect(input.equals(copied.batches)).toBe(true);
      }
    }
    expect(rejected).toBeGreaterThan(0);
  });
});

describe('PartitionLog.append in place', () => {
  const dirs: string[] = [];
  const logs: PartitionLog[] = [];
  afterEach(() => {
    for (const l of logs.splice(0)) l.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  function open(): { log: PartitionLog; dir: string } {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-inplace-'));
    dirs.push(dir);
    const log = PartitionLog.open(dir, logConfig({ messageTimestampAfterMaxMs: Number.MAX_SAFE_INTEGER }), { now: () => 5000 });
    logs.push(log);
    return { log, dir };
  }

  it('writes the same segment bytes as a copying append, and copies by default', () => {
    const rand = seededRandom(7);
    const inputs = Array.from({ length: 20 }, () => Buffer.concat([randomBatch(rand), randomBatch(rand)]));
    const copying = open();
    const inPlace = open();
    for (const input of inputs) {
      const snapshot = Buffer.from(input);
      expect(copying.log.append(input, 2).ok).toBe(true);
      expect(input.equals(snapshot)).toBe(true);
      const r = inPlace.log.append(input, 2, true);
      expect(r.ok).toBe(true);
    }
    const file = (d: string) => readFileSync(join(d, segmentFileName(0n, '.log')));
    expect(file(inPlace.dir).equals(file(copying.dir))).toBe(true);
    expect(inPlace.log.logEndOffset).toBe(copying.log.logEndOffset);
  });

  it('appends nothing and leaves the input unchanged when a batch is rejected', () => {
    const { log } = open();
    const bad = buildBatch({ records: [{ value: 'z' }] });
    bad[bad.length - 1]! ^= 1;
    const input = Buffer.concat([buildBatch({ records: [{ value: 'a' }] }), bad]);
    const snapshot = Buffer.from(input);
    expect(log.append(input, 2, true)).toMatchObject({ ok: false, errorCode: ErrorCode.CORRUPT_MESSAGE });
    expect(input.equals(snapshot)).toBe(true);
    expect(log.logEndOffset).toBe(0n);
  });
});

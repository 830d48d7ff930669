import { cpSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Compression } from '../wire/compression.js';
import {
  ATTRIBUTES,
  type BuildRecord,
  CONTROL,
  DELETE_HORIZON,
  TIMESTAMP_TYPE_LOG_APPEND,
  buildBatch,
  decodeRecords,
  deleteHorizonMs,
  readBatchHeader,
  writeBatchCrc,
} from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { LogCleaner } from './cleaner.js';
import { FaultyFs } from './fs.js';
import { type LogConfig, logConfig } from './log-config.js';
import { CLEAN_SHUTDOWN_FILE, PartitionLog, StorageError, swapFileName } from './log.js';
import { segmentFileName } from './segment.js';
import { logFixtures, servedBatches } from './test-support.js';

const { tempDir, open, cleanup } = logFixtures('gregor-cleaner-');
afterEach(cleanup);

type KV = [key: string, value: string | null];

function append(log: PartitionLog, records: KV[], ts = 1000n, compression = Compression.None): void {
  const r = log.append(buildBatch({ records: records.map(([key, value]): BuildRecord => ({ key, value, timestamp: ts })), compression }), 0);
  if (!r.ok) throw new Error(r.message);
}

interface Stored {
  offset: bigint;
  key: string;
  value: string | null;
  /** As a consumer reads it: baseTimestamp + timestampDelta, or the batch's LogAppendTime. */
  timestamp: bigint;
}

/**
 * Every record the log serves from its start, in order, with the batches' base
 * offsets, and the delete horizon of each record whose batch carries one.
 */
function readAll(log: PartitionLog): { records: Stored[]; batches: { base: bigint; last: bigint; codec: number }[]; horizons: Map<bigint, bigint> } {
  const records: Stored[] = [];
  const batches: { base: bigint; last: bigint; codec: number }[] = [];
  const horizons = new Map<bigint, bigint>();
  for (const { header: h, bytes } of servedBatches(log)) {
    batches.push({ base: h.baseOffset, last: h.baseOffset + BigInt(h.lastOffsetDelta), codec: h.attributes & 7 });
    const d = decodeRecords(bytes);
    if (!d.ok) throw new Error(d.error);
    const horizon = deleteHorizonMs(bytes);
    if ((h.attributes & CONTROL) === 0) {
      for (const r of d.records) {
        const offset = h.baseOffset + BigInt(r.offsetDelta);
        const timestamp = (h.attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0 ? h.maxTimestamp : h.baseTimestamp + r.timestampDelta;
        records.push({ offset, key: r.key!.toString(), value: r.value?.toString() ?? null, timestamp });
        if (horizon !== null) horizons.set(offset, horizon);
      }
    }
  }
  return { records, batches, horizons };
}

/** The batch holding `offset`, as served. */
function batchAt(log: PartitionLog, offset: bigint): { header: ReturnType<typeof readBatchHeader>; bytes: Buffer } {
  for (const b of servedBatches(log)) if (b.header.baseOffset <= offset && offset <= b.header.baseOffset + BigInt(b.header.lastOffsetDelta)) return b;
  throw new Error(`no batch holds ${offset}`);
}

const values = (log: PartitionLog) => readAll(log).records.map((r) => `${r.key}@${r.offset}=${r.value}`);

const compact = (o: Partial<LogConfig> = {}) =>
  logConfig({ cleanupPolicy: ['compact'], deleteRetentionMs: 1000, minCompactionLagMs: 0, ...o });

describe('LogCleaner worked examples', () => {
  it('keys a,b,a,c,b keep their latest records at their original offsets', () => {
    const log = open(tempDir(), compact());
    for (const [k, v] of [['a', '1'], ['b', '2'], ['a', '3'], ['c', '4'], ['b', '5']] as KV[]) append(log, [[k, v]]);
    log.roll();
    log.updateHighWatermark(5n);
    const cleaner = new LogCleaner(log);
    expect(cleaner.cleanAll(10_000)).toBe(1);
    expect(values(log)).toEqual(['a@2=3', 'c@3=4', 'b@4=5']);
    // A read from an old offset returns the batch of the next surviving record.
    expect(readBatchHeader(log.readBuffer(0n, 1)!, 0).baseOffset).toBe(2n);
    expect(readBatchHeader(log.readBuffer(1n, 1)!, 0).baseOffset).toBe(2n);
    expect([log.logStartOffset, log.logEndOffset]).toEqual([0n, 5n]);
    expect(cleaner.firstDirtyOffset).toBe(5n);
    expect(cleaner.step(10_000)).toBe('idle');
    append(log, [['a', '6']]);
    expect(log.logEndOffset).toBe(6n);
  });

  it('rebuilds a batch with its base offset, offset deltas, last offset and codec', () => {
    const log = open(tempDir(), compact());
    append(log, [['a', '1'], ['b', '2'], ['a', '3'], ['c', '4'], ['b', '5']], 1000n, Compression.Gzip);
    append(log, [['x', '1'], ['y', '2']], 2000n, Compression.Lz4);
    log.roll();
    log.updateHighWatermark(7n);
    new LogCleaner(log).cleanAll(10_000);
    const { records, batches } = readAll(log);
    expect(records.map((r) => `${r.key}@${r.offset}`)).toEqual(['a@2', 'c@3', 'b@4', 'x@5', 'y@6']);
    expect(batches).toEqual([
      { base: 0n, last: 4n, codec: Compression.Gzip },
      { base: 5n, last: 6n, codec: Compression.Lz4 },
    ]);
  });

  it('cleans neither the active segment nor anything reaching the high watermark, nor segments younger than min.compaction.lag.ms', () => {
    const log = open(tempDir(), compact({ minCompactionLagMs: 5000 }));
    append(log, [['a', '1'], ['a', '2']], 1000n);
    log.roll();
    append(log, [['a', '3'], ['a', '4']], 9000n);
    log.roll();
    append(log, [['a', '5'], ['a', '6']], 9000n); // active
    const cleaner = new LogCleaner(log);
    log.updateHighWatermark(3n); // inside segment 2
    expect(cleaner.cleanAll(10_000)).toBe(1);
    expect(values(log)).toEqual(['a@1=2', 'a@2=3', 'a@3=4', 'a@4=5', 'a@5=6']);
    log.updateHighWatermark(6n);
    // Segment 2 is now committed but its records are 1000 ms old, under the 5000 ms lag.
    expect(cleaner.cleanAll(10_000)).toBe(0);
    expect(cleaner.cleanAll(14_001)).toBe(1); // segments 0 and 2 merge
    expect(values(log)).toEqual(['a@3=4', 'a@4=5', 'a@5=6']);
  });

  it('keeps a tombstone for delete.retention.ms after the first pass that keeps it, stamping the delete horizon on its batch', () => {
    const log = open(tempDir(), compact({ deleteRetentionMs: 1000 }));
    append(log, [['a', '1'], ['b', '1']], 1000n);
    // Older than delete.retention.ms already, but no pass has kept it yet: a consumer may not have seen it.
    append(log, [['a', null]], 2000n);
    log.roll();
    log.updateHighWatermark(3n);
    const cleaner = new LogCleaner(log);
    expect(cleaner.cleanAll(10_000)).toBe(1);
    expect(values(log)).toEqual(['b@1=1', 'a@2=null']);

    // The tombstone's batch: horizon bit set, baseTimestamp = now + delete.retention.ms,
    // the record's timestamp (base + delta) and the batch's maxTimestamp unchanged.
    const tomb = batchAt(log, 2n);
    expect(tomb.header.attributes & DELETE_HORIZON).toBe(DELETE_HORIZON);
    expect(tomb.header.baseTimestamp).toBe(11_000n);
    expect(deleteHorizonMs(tomb.bytes)).toBe(11_000n);
    expect(tomb.header.maxTimestamp).toBe(2000n);
    expect(readAll(log).records.find((r) => r.offset === 2n)).toEqual({ offset: 2n, key: 'a', value: null, timestamp: 2000n });
    // A batch without a tombstone gets no horizon, even when rebuilt (a@0 went from this one).
    expect(deleteHorizonMs(batchAt(log, 1n).bytes)).toBeNull();
    // ListOffsets by time walks the records by base + delta and still finds the tombstone at its own time.
    expect(log.offsetForTimestamp(1500n)).toEqual({ offset: 2n, timestamp: 2000n });

    // A pass before the horizon keeps the tombstone and its batch byte for byte: no second stamp.
    const stampedBytes = Buffer.from(tomb.bytes);
    append(log, [['c', '1']], 10_500n);
    log.roll();
    log.updateHighWatermark(4n);
    expect(cleaner.cleanAll(10_999)).toBe(1);
    expect(values(log)).toEqual(['b@1=1', 'a@2=null', 'c@3=1']);
    expect(batchAt(log, 2n).bytes.equals(stampedBytes)).toBe(true);
    expect(cleaner.step(10_999)).toBe('idle');

    // From the horizon on, a pass is due without dirty data, and it drops the tombstone.
    expect(cleaner.cleanAll(11_000)).toBe(1);
    expect(values(log)).toEqual(['b@1=1', 'c@3=1']);
    expect(cleaner.step(1e9)).toBe('idle');
  });

  it('stamps a compressed batch with its codec and other records kept, and a later rebuild keeps the horizon', () => {
    const log = open(tempDir(), compact({ deleteRetentionMs: 1000 }));
    append(log, [['a', '1'], ['b', null], ['c', '1']], 5000n, Compression.Gzip);
    append(log, [['x', '1']], 5000n);
    log.roll();
    log.updateHighWatermark(4n);
    const cleaner = new LogCleaner(log);
    cleaner.cleanAll(10_000);
    const all = () => readAll(log).records.map((r) => `${r.key}@${r.offset}=${r.value}/${r.timestamp}`);
    expect(all()).toEqual(['a@0=1/5000', 'b@1=null/5000', 'c@2=1/5000', 'x@3=1/5000']);
    let batch = batchAt(log, 0n);
    expect([batch.header.attributes & 7, deleteHorizonMs(batch.bytes), batch.header.lastOffsetDelta]).toEqual([Compression.Gzip, 11_000n, 2]);
    expect(deleteHorizonMs(batchAt(log, 3n).bytes)).toBeNull();

    // a@0 is superseded: the batch is rebuilt without it, keeping its horizon (Kafka does not restamp).
    append(log, [['a', '2']], 10_200n);
    log.roll();
    log.updateHighWatermark(5n);
    cleaner.cleanAll(10_500);
    expect(all()).toEqual(['b@1=null/5000', 'c@2=1/5000', 'x@3=1/5000', 'a@4=2/10200']);
    expect(deleteHorizonMs(batchAt(log, 1n).bytes)).toBe(11_000n);

    // At the horizon the tombstone goes; what is left of the batch still carries the horizon, as in Kafka.
    cleaner.cleanAll(11_000);
    expect(all()).toEqual(['c@2=1/5000', 'x@3=1/5000', 'a@4=2/10200']);
    batch = batchAt(log, 2n);
    expect([batch.header.baseOffset, batch.header.lastOffsetDelta, batch.header.attributes & 7, deleteHorizonMs(batch.bytes)]).toEqual([0n, 2, Compression.Gzip, 11_000n]);
  });

  it('like Kafka, trusts a horizon bit a producer set itself: such a tombstone goes at the first pass past its baseTimestamp', () => {
    // Kafka's LogValidator neither refuses nor clears the bit (its in-place path keeps the attributes).
    const log = open(tempDir(), compact({ deleteRetentionMs: 1_000_000 }));
    append(log, [['a', '1']], 1000n);
    const batch = buildBatch({ records: [{ key: 'a', value: null, timestamp: 2000n }] });
    batch.writeInt16BE(batch.readInt16BE(ATTRIBUTES) | DELETE_HORIZON, ATTRIBUTES);
    writeBatchCrc(batch, 0, batch.length);
    const r = log.append(batch, 0);
    if (!r.ok) throw new Error(r.message);
    expect(deleteHorizonMs(batchAt(log, 1n).bytes)).toBe(2000n);
    log.roll();
    log.updateHighWatermark(2n);
    new LogCleaner(log).cleanAll(10_000);
    expect(values(log)).toEqual([]);
  });

  it('resumes from a checkpointed first dirty offset, which counts from the log start and is not trusted past the log end', () => {
    const log = open(tempDir(), compact());
    append(log, [['a', '1'], ['b', '1']]);
    log.roll();
    append(log, [['a', '2']]);
    log.roll();
    log.updateHighWatermark(3n);
    const first = new LogCleaner(log);
    first.cleanAll(10_000);
    expect(first.firstDirtyOffset).toBe(3n);

    // What the LogManager hands a cleaner after a restart: nothing is dirty, so no pass.
    const resumed = new LogCleaner(log, 3n);
    expect(resumed.firstDirtyOffset).toBe(3n);
    expect(resumed.step(10_000)).toBe('idle');
    // Without it, the whole log is dirty again.
    expect(new LogCleaner(log).step(10_000)).toBe('mapped');
    // Past the log end (data lost at its end): the whole log is dirty again.
    const past = new LogCleaner(log, 99n);
    expect(past.firstDirtyOffset).toBe(0n);
    expect(past.step(10_000)).toBe('mapped');
    // Below the log start: counted from the log start.
    expect(log.deleteRecordsBefore(2n)).toEqual({ ok: true, lowWatermark: 2n });
    expect(new LogCleaner(log, 1n).firstDirtyOffset).toBe(2n);
  });

  it('keeps control batches as they are', () => {
    const log = open(tempDir(), compact());
    append(log, [['a', '1']]);
    const marker = buildBatch({ records: [{ key: Buffer.from([0, 0, 0, 0]), value: Buffer.from([0, 0, 0, 0, 0, 0]) }], control: true, transactional: true, producerId: 7n, producerEpoch: 0, baseOffset: 1n });
    log.appendValidated(marker, {
      firstOffset: 1n,
      lastOffset: 1n,
      maxTimestamp: 1000n,
      offsetOfMaxTimestamp: 1n,
      appended: [{ baseOffset: 1n, lastOffset: 1n, maxTimestamp: 1000n, position: 0, size: marker.length }],
    });
    append(log, [['a', '2']]);
    log.roll();
    log.updateHighWatermark(3n);
    new LogCleaner(log).cleanAll(10_000);
    expect(readAll(log).batches.map((b) => b.base)).toEqual([1n, 2n]);
  });

  it("keeps an idempotent producer's last batch whole even when every record in it is superseded", () => {
    const log = open(tempDir(), compact());
    const idempotent = (seq: number, key: string, value: string) =>
      log.append(buildBatch({ producerId: 9n, producerEpoch: 0, baseSequence: seq, records: [{ key, value, timestamp: 1000n }] }), 0);
    expect(idempotent(0, 'a', '1').ok).toBe(true); // 0: superseded, and not the producer's last
    expect(idempotent(1, 'b', '2').ok).toBe(true); // 1: superseded, the producer's last
    append(log, [['a', '3']]); // 2
    append(log, [['b', '4']]); // 3
    log.roll();
    log.updateHighWatermark(4n);
    new LogCleaner(log).cleanAll(10_000);
    expect(readAll(log).batches.map((b) => b.base)).toEqual([1n, 2n, 3n]);
    expect(values(log)).toEqual(['b@1=2', 'a@2=3', 'b@3=4']);
    // A retry of that batch is still known as a duplicate after an unclean reopen that rebuilds producer state from the log.
    log.close();
    for (const f of readdirSync(log.dir)) if (f.endsWith('.snapshot') || f === CLEAN_SHUTDOWN_FILE) rmSync(join(log.dir, f));
    const again = open(log.dir, compact());
    expect(again.append(buildBatch({ producerId: 9n, producerEpoch: 0, baseSequence: 1, records: [{ key: 'b', value: '2', timestamp: 1000n }] }), 0)).toMatchObject({ ok: true, duplicate: true, firstOffset: 1n });
  });

  it('merges small segments into one group up to segment.bytes', () => {
    const one = buildBatch({ records: [{ key: 'k0', value: 'v', timestamp: 1000n }] }).length;
    const log = open(tempDir(), compact({ segmentBytes: one * 4 }));
    for (let i = 0; i < 12; i++) {
      append(log, [[`k${i % 2}`, 'v']]);
      if (i % 2 === 1) log.roll();
    }
    log.updateHighWatermark(12n);
    expect(log.segmentBaseOffsets()).toEqual([0n, 2n, 4n, 6n, 8n, 10n, 12n]);
    const cleaner = new LogCleaner(log);
    expect(cleaner.cleanAll(10_000)).toBe(3); // [0,2] [4,6] [8,10]: two segments of 2 batches fill segment.bytes
    expect(log.segmentBaseOffsets()).toEqual([0n, 4n, 8n, 12n]);
    expect(values(log)).toEqual(['k0@10=v', 'k1@11=v']);
    // Now small: one group.
    append(log, [['k2', 'v']]);
    log.roll();
    log.updateHighWatermark(13n);
    expect(cleaner.cleanAll(10_000)).toBe(1);
    expect(log.segmentBaseOffsets()).toEqual([0n, 13n]);
  });

  it('does nothing without the compact policy', () => {
    const log = open(tempDir(), logConfig({ cleanupPolicy: ['delete'] }));
    append(log, [['a', '1']]);
    append(log, [['a', '2']]);
    log.roll();
    log.updateHighWatermark(2n);
    expect(new LogCleaner(log).step(10_000)).toBe('idle');
    expect(values(log)).toEqual(['a@0=1', 'a@1=2']);
  });

  it('compact,delete: compaction and retention both apply', () => {
    let now = 10_000;
    const log = open(tempDir(), compact({ cleanupPolicy: ['compact', 'delete'], retentionMs: 5000 }), { now: () => now });
    append(log, [['a', '1'], ['b', '1']], 1000n);
    log.roll();
    append(log, [['a', '2']], 8000n);
    log.roll();
    append(log, [['c', '1']], 9000n);
    log.updateHighWatermark(4n);
    const cleaner = new LogCleaner(log);
    cleaner.cleanAll(now); // segments 0 and 2 merge into one group
    expect(values(log)).toEqual(['b@1=1', 'a@2=2', 'c@3=1']);
    expect(log.segmentBaseOffsets()).toEqual([0n, 3n]);
    // The merged segment's largest timestamp is 8000: it goes once that is older than retention.ms.
    expect(log.deleteOldSegments(13_000)).toBe(0);
    now = 13_001;
    expect(log.deleteOldSegments()).toBe(1);
    expect(values(log)).toEqual(['c@3=1']);
    expect(log.logStartOffset).toBe(3n);
  });

  it('starts over after a truncation', () => {
    const log = open(tempDir(), compact());
    append(log, [['a', '1']]);
    append(log, [['a', '2']]);
    append(log, [['a', '3']]);
    log.roll();
    log.updateHighWatermark(3n);
    const cleaner = new LogCleaner(log);
    expect(cleaner.step(10_000)).toBe('mapped');
    log.truncateTo(2n); // a@2 is gone: the map's "latest a at 2" must not be used
    append(log, [['b', '9']]);
    log.roll();
    log.updateHighWatermark(3n);
    cleaner.cleanAll(10_000);
    expect(values(log)).toEqual(['a@1=2', 'b@2=9']);
  });
});

describe('LogCleaner crash safety', () => {
  /** A closed log of 3 segments and an empty active one, with repeated keys. */
  function seedLog(dir: string, config: LogConfig): Stored[] {
    const log = PartitionLog.open(dir, config);
    let i = 0;
    for (let seg = 0; seg < 3; seg++) {
      for (let b = 0; b < 4; b++, i++) append(log, [[`k${i % 5}`, `v${i}`], [`k${(i * 3) % 7}`, i % 6 === 0 ? null : `w${i}`]]);
      log.roll();
    }
    log.updateHighWatermark(log.logEndOffset);
    const records = readAll(log).records;
    log.close();
    return records;
  }

  function latest(records: Stored[]): Map<string, Stored> {
    const m = new Map<string, Stored>();
    for (const r of records) m.set(r.key, r);
    return m;
  }

  function expectConsistent(log: PartitionLog, original: Stored[]): void {
    const { records } = readAll(log);
    const byOffset = new Map(original.map((r) => [r.offset, r]));
    for (let i = 0; i < records.length; i++) {
      expect(records[i]).toEqual(byOffset.get(records[i]!.offset));
      if (i > 0) expect(records[i]!.offset).toBeGreaterThan(records[i - 1]!.offset);
    }
    // Tombstones are young here (deleteRetentionMs is large), so every key's latest record survives.
    expect(latest(records)).toEqual(latest(original));
  }

  it('a crash at any step of writing and swapping leaves a consistent log, which the next pass finishes', () => {
    const config = compact({ deleteRetentionMs: 1e12, segmentBytes: 1 << 20 });
    const template = tempDir();
    const original = seedLog(template, config);
    const reference = tempDir();
    cpSync(template, reference, { recursive: true });
    const refLog = open(reference, config);
    new LogCleaner(refLog).cleanAll(10_000);
    const compacted = values(refLog);
    expect(compacted.length).toBeLessThan(original.length);

    let completed = false;
    const leftBehind = new Set<string>();
    for (let n = 0; !completed && n < 500; n++) {
      const dir = tempDir();
      cpSync(template, dir, { recursive: true });
      const fs = new FaultyFs();
      const log = PartitionLog.open(dir, config, { fs });
      log.updateHighWatermark(log.logEndOffset);
      fs.failAfterMutations(n);
      try {
        new LogCleaner(log).cleanAll(10_000);
        completed = true;
        fs.failAfterMutations(null);
        log.close();
      } catch (err) {
        expect(err).toBeInstanceOf(StorageError);
        // Reads still go on through the segments as they were before the failed step.
        expectConsistent(log, original);
        fs.crash();
        for (const f of readdirSync(dir)) if (/\.(cleaned|swap)$/.test(f)) leftBehind.add(f.replace(/^\d+/, ''));
      }
      const again = open(dir, config);
      expect(readdirSync(dir).filter((f) => f.endsWith('.cleaned') || f.endsWith('.swap'))).toEqual([]);
      expect(again.logEndOffset).toBe(24n);
      expectConsistent(again, original);
      again.updateHighWatermark(again.logEndOffset);
      new LogCleaner(again).cleanAll(10_000);
      expect(values(again)).toEqual(compacted);
    }
    expect(completed).toBe(true);
    // Crashes landed both before the swap was decided and after.
    expect([...leftBehind].sort()).toEqual(['.log.00000000000000000024.swap', '.log.cleaned']);
  });

  it('open removes a leftover .cleaned file and keeps the old segments', () => {
    const config = compact();
    const dir = tempDir();
    const original = seedLog(dir, config);
    writeFileSync(join(dir, segmentFileName(0n, '.log') + '.cleaned'), Buffer.alloc(50, 7));
    const log = open(dir, config);
    expect(existsSync(join(dir, segmentFileName(0n, '.log') + '.cleaned'))).toBe(false);
    expect(readAll(log).records).toEqual(original);
  });

  it('open completes a swap whose old segments are still there', () => {
    const config = compact({ deleteRetentionMs: 1e12 });
    const dir = tempDir();
    const original = seedLog(dir, config);
    // Build the swap the cleaner would have made, in a copy, then put it next to the old segments.
    const copy = tempDir();
    cpSync(dir, copy, { recursive: true });
    const cleanedLog = open(copy, config);
    cleanedLog.updateHighWatermark(cleanedLog.logEndOffset);
    new LogCleaner(cleanedLog).cleanAll(10_000);
    expect(cleanedLog.segmentBaseOffsets()).toEqual([0n, 24n]);
    const want = values(cleanedLog);
    cleanedLog.close();
    cpSync(join(copy, segmentFileName(0n, '.log')), join(dir, swapFileName(0n, 24n)));
    const log = open(dir, config);
    expect(log.segmentBaseOffsets()).toEqual([0n, 24n]);
    expect(values(log)).toEqual(want);
    expect(readAll(log).records.length).toBeLessThan(original.length);
    expect(readdirSync(dir).some((f) => f.endsWith('.swap'))).toBe(false);
  });
});

describe('LogCleaner against a model (seeded)', () => {
  for (const seed of Array.from({ length: 12 }, (_, i) => i + 1)) {
    it(`seed ${seed}`, () => {
      const rnd = seededRandom(seed);
      const int = (n: number) => Math.floor(rnd() * n);
      const dir = tempDir();
      let now = 100_000;
      const config = compact({
        segmentBytes: 300 + int(1500),
        indexIntervalBytes: 1 + int(200),
        deleteRetentionMs: int(3) === 0 ? 0 : 50_000,
        cleanupPolicy: int(4) === 0 ? ['compact', 'delete'] : ['compact'],
        retentionMs: 1e9,
      });
      let log = open(dir, config, { now: () => now });
      let cleaner = new LogCleaner(log);
      const appended = new Map<bigint, Stored>();
      const keys = 3 + int(10);
      const codecs = [Compression.None, Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd];

      /** Delete horizon of each tombstone seen in a stamped batch, by offset. */
      const seenHorizons = new Map<bigint, bigint>();
      let shown = new Set<bigint>();

      const check = () => {
        const { records, horizons } = readAll(log);
        for (let i = 0; i < records.length; i++) {
          expect(records[i]).toEqual(appended.get(records[i]!.offset));
          if (i > 0) expect(records[i]!.offset).toBeGreaterThan(records[i - 1]!.offset);
        }
        const model = new Map<string, Stored>();
        for (const r of [...appended.values()].sort((a, b) => (a.offset < b.offset ? -1 : 1))) model.set(r.key, r);
        const got = new Map<string, Stored>();
        for (const r of records) got.set(r.key, r);
        for (const [key, want] of model) {
          // A key's latest record survives, unless it is a tombstone that was dropped:
          // only from its delete horizon on, or, if it was stamped and dropped between
          // two checks, at least delete.retention.ms after it was written.
          if (want.value === null && !got.has(key)) {
            if (shown.has(want.offset)) {
              const h = seenHorizons.get(want.offset);
              if (h !== undefined) expect(BigInt(now)).toBeGreaterThanOrEqual(h);
              else expect(BigInt(now) - want.timestamp).toBeGreaterThanOrEqual(BigInt(config.deleteRetentionMs));
            }
            continue;
          }
          expect(got.get(key), key).toEqual(want);
        }
        // A horizon, once stamped, never moves; every tombstone below the cleaned point is stamped.
        for (const r of records) {
          const h = horizons.get(r.offset);
          if (r.value !== null || (h === undefined && r.offset >= cleaner.firstDirtyOffset)) continue;
          expect(h, `tombstone ${r.key}@${r.offset} below ${cleaner.firstDirtyOffset}`).toBeDefined();
          expect(seenHorizons.get(r.offset) ?? h).toBe(h);
          seenHorizons.set(r.offset, h!);
        }
        shown = new Set(records.map((r) => r.offset));
        // Below the cleaned point, each key appears at most once.
        const seen = new Set<string>();
        for (const r of records) {
          if (r.offset >= cleaner.firstDirtyOffset) break;
          expect(seen.has(r.key), `${r.key} twice below ${cleaner.firstDirtyOffset}`).toBe(false);
          seen.add(r.key);
        }
      };

      for (let step = 0; step < 120; step++) {
        const op = int(100);
        now += int(2000);
        if (op < 55) {
          const n = 1 + int(5);
          const recs: KV[] = Array.from({ length: n }, () => [`k${int(keys)}`, int(8) === 0 ? null : `v${step}-${int(1000)}`]);
          const first = log.logEndOffset;
          append(log, recs, BigInt(now), codecs[int(codecs.length)]!);
          recs.forEach(([key, value], i) => appended.set(first + BigInt(i), { offset: first + BigInt(i), key, value, timestamp: BigInt(now) }));
        } else if (op < 65) {
          log.roll();
        } else if (op < 75) {
          log.updateHighWatermark(log.logStartOffset + BigInt(int(Number(log.logEndOffset - log.logStartOffset) + 1)));
        } else if (op < 88) {
          for (let i = 0; i < 1 + int(6); i++) cleaner.step(now);
        } else if (op < 94) {
          cleaner.cleanAll(now);
        } else {
          log.close();
          log = open(dir, config, { now: () => now });
          cleaner = new LogCleaner(log);
        }
        check();
      }
      log.updateHighWatermark(log.logEndOffset);
      log.roll();
      cleaner.cleanAll(now);
      check();
    });
  }
});

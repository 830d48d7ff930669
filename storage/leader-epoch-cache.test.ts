import { existsSync, readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBatch } from '../wire/record-batch.js';
import { FaultyFs, nodeFs } from './fs.js';
import {
  LEADER_EPOCH_CHECKPOINT_FILE,
  LeaderEpochCache,
  formatLeaderEpochCheckpoint,
  parseLeaderEpochCheckpoint,
} from './leader-epoch-cache.js';
import { logConfig } from './log-config.js';
import { CLEAN_SHUTDOWN_FILE, type PartitionLog } from './log.js';
import { segmentFileName } from './segment.js';
import { logFixtures } from './test-support.js';

const { tempDir, open, cleanup } = logFixtures('gregor-epochs-');
afterEach(cleanup);

const config = logConfig({});

/** A cache over an empty directory, with the given entries assigned in order. */
function cacheWith(entries: [number, bigint][], fs = nodeFs): LeaderEpochCache {
  const dir = tempDir();
  const { cache } = LeaderEpochCache.load(fs, dir);
  for (const [epoch, start] of entries) cache.assign(epoch, start);
  return cache;
}

const pairs = (c: { entries: readonly { epoch: number; startOffset: bigint }[] }): [number, bigint][] =>
  c.entries.map((e) => [e.epoch, e.startOffset]);

function checkpointText(dir: string): string {
  return readFileSync(join(dir, LEADER_EPOCH_CHECKPOINT_FILE), 'utf8');
}

/** One batch of `n` records with timestamps ts, ts + 1, ... */
function batch(n: number, ts = 1000n): Buffer {
  return buildBatch({ records: Array.from({ length: n }, (_, i) => ({ value: `v${i}`, timestamp: ts + BigInt(i) })) });
}

function append(log: PartitionLog, records: Buffer, epoch: number): void {
  const r = log.append(records, epoch);
  if (!r.ok) throw new Error(r.message);
  log.updateHighWatermark(log.logEndOffset);
}

describe('leader-epoch-checkpoint text', () => {
  it("is Kafka's: version line, count line, one 'epoch startOffset' line per entry", () => {
    const text = formatLeaderEpochCheckpoint([
      { epoch: 0, startOffset: 6n },
      { epoch: 2, startOffset: 8n },
    ]).toString();
    expect(text).toBe('0\n2\n0 6\n2 8\n');
    expect(parseLeaderEpochCheckpoint(text)).toEqual([
      { epoch: 0, startOffset: 6n },
      { epoch: 2, startOffset: 8n },
    ]);
    expect(formatLeaderEpochCheckpoint([]).toString()).toBe('0\n0\n');
  });

  it('reads an empty file (Kafka creates it so) as no entries, and tolerates extra blanks between fields', () => {
    expect(parseLeaderEpochCheckpoint('')).toEqual([]);
    expect(parseLeaderEpochCheckpoint('0\n1\n4   9\n')).toEqual([{ epoch: 4, startOffset: 9n }]);
  });

  it.each([
    ['another version', '1\n0\n'],
    ['count mismatch', '0\n2\n0 0\n'],
    ['one field', '0\n1\n0\n'],
    ['negative epoch', '0\n1\n-1 0\n'],
    ['not a number', '0\n1\nx 0\n'],
    ['no count', '0\n'],
  ])('reads as unreadable: %s', (_, text) => {
    expect(parseLeaderEpochCheckpoint(text)).toBeNull();
  });
});

describe('LeaderEpochCache', () => {
  it('assigns an epoch once; a later start of the same epoch changes nothing', () => {
    const c = cacheWith([
      [0, 0n],
      [0, 5n],
      [2, 8n],
      [2, 9n],
    ]);
    expect(pairs(c)).toEqual([
      [0, 0n],
      [2, 8n],
    ]);
    expect(c.assign(2, 10n)).toBe(false);
    expect(c.assign(3, 10n)).toBe(true);
  });

  it('drops the entries a new one conflicts with, as Kafka does', () => {
    // A new epoch at the start offset of the latest replaces it (a leader that took no data).
    expect(pairs(cacheWith([[0, 0n], [2, 8n], [4, 8n]]))).toEqual([[0, 0n], [4, 8n]]);
    // An older epoch, or one starting earlier, cuts back everything from there.
    expect(pairs(cacheWith([[0, 0n], [2, 8n], [1, 9n]]))).toEqual([[0, 0n], [1, 9n]]);
    expect(pairs(cacheWith([[0, 0n], [2, 8n], [3, 4n]]))).toEqual([[0, 0n], [3, 4n]]);
    expect(() => cacheWith([[-1, 0n]])).toThrow(RangeError);
  });

  it.each([
    // [requested epoch, expected epoch, expected end offset] on [(2, 10), (5, 20)], log end 30
    [5, 5, 30n], // the latest: the log end
    [3, 2, 20n], // between known ones: the largest below, ending where the next starts
    [2, 2, 20n],
    [1, 1, 10n], // below every known one: itself, ending where the first known starts
    [6, -1, -1n], // above every known one: UNDEFINED
    [-1, -1, -1n], // UNDEFINED asked
  ])('endOffsetFor(%i) -> (%i, %i)', (requested, epoch, endOffset) => {
    const c = cacheWith([
      [2, 10n],
      [5, 20n],
    ]);
    expect(c.endOffsetFor(requested, 30n)).toEqual({ epoch, endOffset });
  });

  it('answers UNDEFINED for everything but -1 when empty... and -1 too', () => {
    const c = cacheWith([]);
    expect(c.endOffsetFor(0, 7n)).toEqual({ epoch: -1, endOffset: -1n });
    expect(c.latestEntry()).toBeUndefined();
  });

  it('gives the epoch of an offset', () => {
    const c = cacheWith([
      [0, 0n],
      [3, 5n],
    ]);
    expect([0n, 4n, 5n, 99n].map((o) => c.epochForOffset(o))).toEqual([0, 0, 3, 3]);
    expect(cacheWith([[3, 5n]]).epochForOffset(4n)).toBeUndefined();
  });

  it('truncates from the end and from the start as Kafka does', () => {
    const c = cacheWith([
      [0, 0n],
      [3, 5n],
      [4, 9n],
    ]);
    c.truncateFromEnd(9n);
    expect(pairs(c)).toEqual([[0, 0n], [3, 5n]]);
    c.truncateFromEnd(100n);
    expect(pairs(c)).toEqual([[0, 0n], [3, 5n]]);
    c.assign(4, 9n);
    c.truncateFromStart(6n);
    expect(pairs(c)).toEqual([[3, 6n], [4, 9n]]);
    c.truncateFromStart(9n);
    expect(pairs(c)).toEqual([[4, 9n]]);
    c.truncateFromStart(2n);
    expect(pairs(c)).toEqual([[4, 9n]]);
    c.clear();
    expect(pairs(c)).toEqual([]);
  });

  it('writes every change to the checkpoint and reads it back', () => {
    const dir = tempDir();
    const { cache, found } = LeaderEpochCache.load(nodeFs, dir);
    expect(found).toBe(false);
    expect(existsSync(join(dir, LEADER_EPOCH_CHECKPOINT_FILE))).toBe(false);
    cache.assign(0, 0n);
    cache.assign(2, 8n);
    expect(checkpointText(dir)).toBe('0\n2\n0 0\n2 8\n');
    cache.truncateFromStart(3n);
    expect(checkpointText(dir)).toBe('0\n2\n0 3\n2 8\n');
    const again = LeaderEpochCache.load(nodeFs, dir);
    expect(again.found).toBe(true);
    expect(pairs(again.cache)).toEqual([[0, 3n], [2, 8n]]);
  });

  it('keeps the old checkpoint whole when a write fails half-way', () => {
    const dir = tempDir();
    const fs = new FaultyFs();
    const { cache } = LeaderEpochCache.load(fs, dir);
    cache.assign(0, 0n);
    fs.failNextRename('EIO');
    expect(() => cache.assign(1, 4n)).toThrow(/EIO/);
    expect(checkpointText(dir)).toBe('0\n1\n0 0\n');
    fs.tearNextWrite(3);
    expect(() => cache.assign(2, 6n)).toThrow(/EIO/);
    expect(checkpointText(dir)).toBe('0\n1\n0 0\n');
  });
});

describe('PartitionLog leader epochs', () => {
  it('adds an entry when a batch carries a new epoch, and writes the checkpoint then only', () => {
    const dir = tempDir();
    const log = open(dir, config);
    append(log, batch(3), 0);
    append(log, batch(2), 0);
    expect(checkpointText(dir)).toBe('0\n1\n0 0\n');
    append(log, batch(4), 3);
    expect(pairs(log.leaderEpochs)).toEqual([[0, 0n], [3, 5n]]);
    expect(checkpointText(dir)).toBe('0\n2\n0 0\n3 5\n');
    expect(log.endOffsetForEpoch(0)).toEqual({ epoch: 0, endOffset: 5n });
    expect(log.endOffsetForEpoch(2)).toEqual({ epoch: 0, endOffset: 5n });
    expect(log.endOffsetForEpoch(3)).toEqual({ epoch: 3, endOffset: 9n });
    expect(log.endOffsetForEpoch(4)).toBeNull();
    expect([0n, 4n, 5n, 8n, 9n].map((o) => log.batchLeaderEpochAt(o))).toEqual([0, 0, 3, 3, -1]);
  });

  it('records the epoch a new leader starts at before it takes data', () => {
    const log = open(tempDir(), config);
    append(log, batch(8), 0);
    log.maybeAssignEpochStartOffset(2, log.logEndOffset);
    log.maybeAssignEpochStartOffset(2, log.logEndOffset);
    expect(pairs(log.leaderEpochs)).toEqual([[0, 0n], [2, 8n]]);
    expect(log.endOffsetForEpoch(0)).toEqual({ epoch: 0, endOffset: 8n });
    append(log, batch(1), 2);
    expect(pairs(log.leaderEpochs)).toEqual([[0, 0n], [2, 8n]]);
  });

  it('follows truncation at the end, DeleteRecords, retention and a fresh start', () => {
    let now = 10_000;
    const log = open(tempDir(), logConfig({ segmentBytes: 200, retentionMs: 1000 }), { now: () => now });
    append(log, batch(3, 1000n), 0); // 0..2
    append(log, batch(3, 1000n), 1); // 3..5
    append(log, batch(3, 9500n), 2); // 6..8
    append(log, batch(3, 9500n), 4); // 9..11
    expect(pairs(log.leaderEpochs)).toEqual([[0, 0n], [1, 3n], [2, 6n], [4, 9n]]);
    log.truncateTo(10n);
    expect(pairs(log.leaderEpochs)).toEqual([[0, 0n], [1, 3n], [2, 6n], [4, 9n]]);
    log.truncateTo(9n);
    expect(pairs(log.leaderEpochs)).toEqual([[0, 0n], [1, 3n], [2, 6n]]);
    expect(log.deleteRecordsBefore(4n)).toEqual({ ok: true, lowWatermark: 4n });
    expect(pairs(log.leaderEpochs)).toEqual([[1, 4n], [2, 6n]]);
    now = 10_400; // the segment of timestamps 1000.. is past retention.ms, that of 9500.. not yet
    expect(log.deleteOldSegments()).toBeGreaterThan(0);
    expect(log.logStartOffset).toBe(6n);
    expect(pairs(log.leaderEpochs)).toEqual([[2, 6n]]);
    log.truncateFullyAndStartAt(50n);
    expect(pairs(log.leaderEpochs)).toEqual([]);
    expect(checkpointText(log.dir)).toBe('0\n0\n');
  });

  it('reopens with the same entries after a clean close, an epoch without data yet included', () => {
    const dir = tempDir();
    const log = open(dir, config);
    append(log, batch(3), 0);
    append(log, batch(3), 5);
    log.maybeAssignEpochStartOffset(7, 6n);
    log.close();
    expect(pairs(open(dir, config).leaderEpochs)).toEqual([[0, 0n], [5, 3n], [7, 6n]]);
  });

  it('survives an unclean restart: a stale entry past the torn end goes, a lost checkpoint is rebuilt', () => {
    const dir = tempDir();
    const fs = new FaultyFs();
    const log = open(dir, config, { fs });
    append(log, batch(3), 0); // 0..2
    append(log, batch(3), 5); // 3..5
    const segment = join(dir, segmentFileName(0n, '.log'));
    const firstTwo = readFileSync(segment).length;
    append(log, batch(3), 7); // 6..8
    fs.crash();
    expect(existsSync(join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
    // The last batch never reached the disk; its epoch did.
    truncateSync(segment, firstTwo);
    expect(checkpointText(dir)).toBe('0\n3\n0 0\n5 3\n7 6\n');
    const reopened = open(dir, config, { fs: new FaultyFs() });
    expect(reopened.logEndOffset).toBe(6n);
    expect(pairs(reopened.leaderEpochs)).toEqual([[0, 0n], [5, 3n]]);
    expect(checkpointText(dir)).toBe('0\n2\n0 0\n5 3\n');

    // A checkpoint lost or damaged with the crash comes back from the batches.
    const fs2 = new FaultyFs();
    reopened.close();
    const third = open(dir, config, { fs: fs2 });
    append(third, batch(2), 9); // 6..7
    fs2.crash();
    unlinkSync(join(dir, LEADER_EPOCH_CHECKPOINT_FILE));
    expect(pairs(open(dir, config).leaderEpochs)).toEqual([[0, 0n], [5, 3n], [9, 6n]]);
  });

  it('rebuilds an unreadable checkpoint from the batches, clamped to the log start', () => {
    const dir = tempDir();
    const log = open(dir, config);
    append(log, batch(3), 0);
    append(log, batch(3), 5);
    expect(log.deleteRecordsBefore(4n).ok).toBe(true);
    log.close();
    writeFileSync(join(dir, LEADER_EPOCH_CHECKPOINT_FILE), '0\n7\n0 0\n');
    const reopened = open(dir, config);
    expect(pairs(reopened.leaderEpochs)).toEqual([[5, 4n]]);
    expect(checkpointText(dir)).toBe('0\n1\n5 4\n');
  });
});

describe('PartitionLog.offsetForMaxTimestamp', () => {
  it('is null for a log without batches', () => {
    expect(open(tempDir(), config).offsetForMaxTimestamp()).toBeNull();
  });

  it('finds the first record of the first batch holding the largest timestamp, with its epoch', () => {
    const log = open(tempDir(), logConfig({ segmentBytes: 150 }));
    const n = 1_000_000_000_000n;
    append(log, buildBatch({ records: [n + 10n, n + 1000n, n + 20n].map((timestamp) => ({ value: 'x', timestamp })) }), 0); // 0..2
    append(log, buildBatch({ records: [n + 5n, n + 6n].map((timestamp) => ({ value: 'x', timestamp })) }), 1); // 3..4
    append(log, buildBatch({ records: [{ value: 'x', timestamp: n + 1000n }] }), 2); // 5, a tie: the first one wins
    expect(log.segmentBaseOffsets()).toEqual([0n, 3n]);
    expect(log.offsetForMaxTimestamp()).toEqual({ offset: 1n, timestamp: n + 1000n, leaderEpoch: 0 });
  });

  it('does not consult the log start offset, as Kafka does not', () => {
    const log = open(tempDir(), config);
    const n = 1_000_000_000_000n;
    append(log, buildBatch({ records: [n + 10n, n + 1000n, n + 20n].map((timestamp) => ({ value: 'x', timestamp })) }), 0);
    append(log, batch(2, n), 0);
    expect(log.deleteRecordsBefore(2n).ok).toBe(true);
    expect(log.offsetForMaxTimestamp()).toEqual({ offset: 1n, timestamp: n + 1000n, leaderEpoch: 0 });
  });

  it('answers the first record of a LogAppendTime batch', () => {
    const now = 1_700_000_000_000;
    const log = open(tempDir(), logConfig({ messageTimestampType: 'LogAppendTime' }), { now: () => now });
    append(log, batch(3, 5n), 0);
    append(log, batch(2, 5n), 0);
    expect(log.offsetForMaxTimestamp()).toEqual({ offset: 0n, timestamp: BigInt(now), leaderEpoch: 0 });
  });
});

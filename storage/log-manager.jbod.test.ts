import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBatch } from '../wire/record-batch.js';
import { logConfig } from './log-config.js';
import { DuplicateLogError, LogManager, type LogManagerOptions } from './log-manager.js';
import type { PartitionLog } from './log.js';
import { servedBatches } from './test-support.js';

const dirs: string[] = [];
const managers: LogManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-jbod-'));
  dirs.push(d);
  return d;
}

function open(paths: string[], opts: Partial<LogManagerOptions> = {}): LogManager {
  const m = LogManager.open(paths, { defaults: logConfig({ fileDeleteDelayMs: 0 }), ...opts });
  managers.push(m);
  return m;
}

async function close(m: LogManager): Promise<void> {
  managers.splice(managers.indexOf(m), 1);
  await m.close();
}

function put(log: PartitionLog, value: string, extra: Partial<Parameters<typeof buildBatch>[0]> = {}): void {
  const r = log.append(buildBatch({ records: [{ key: value, value, timestamp: 1000n }], ...extra }), 0);
  if (!r.ok) throw new Error(r.message);
}

/** Every record the log serves, as `value@offset`, control batches as `marker@offset`. */
function served(log: PartitionLog): string[] {
  const out: string[] = [];
  for (const { header, bytes } of servedBatches(log)) {
    if ((header.attributes & 0x20) !== 0) {
      out.push(`marker@${header.baseOffset}`);
      continue;
    }
    for (let o = header.baseOffset; o <= header.baseOffset + BigInt(header.lastOffsetDelta); o++) out.push(`${bytes.length}@${o}`);
  }
  return out;
}

/** Runs the background copy to its end, as the timer would. */
function finishMoves(m: LogManager): void {
  for (let i = 0; i < 1000 && m.moveStep(); i++);
}

describe('LogManager with several log directories', () => {
  it('places new partitions in the directory holding the fewest, and finds each in its own directory after a restart', async () => {
    const [a, b, c] = [tempDir(), tempDir(), tempDir()];
    const m = open([a, b, c]);
    m.getOrCreate('t', 0);
    m.getOrCreate('t', 1);
    m.getOrCreate('t', 2);
    m.getOrCreate('u', 0);
    expect(['t/0', 't/1', 't/2', 'u/0'].map((k) => m.logDirOf(k.split('/')[0]!, Number(k.split('/')[1])))).toEqual([a, b, c, a]);
    put(m.get('t', 1)!, 'x');
    await close(m);
    expect(existsSync(join(b, 't-1'))).toBe(true);
    const again = open([a, b, c]);
    expect(again.logDirOf('t', 1)).toBe(b);
    expect(again.get('t', 1)!.logEndOffset).toBe(1n);
    // Directory c holds one partition, a two: the next goes to b or c, the first of the fewest.
    again.getOrCreate('v', 0);
    expect(again.logDirOf('v', 0)).toBe(b);
  });

  it('refuses to open a partition found in two directories, naming both', () => {
    const [a, b] = [tempDir(), tempDir()];
    const m = LogManager.open([a], { defaults: logConfig() });
    m.getOrCreate('t', 0);
    void m.close();
    const n = LogManager.open([b], { defaults: logConfig() });
    n.getOrCreate('t', 0);
    void n.close();
    expect(() => LogManager.open([a, b], { defaults: logConfig() })).toThrow(DuplicateLogError);
    expect(() => LogManager.open([a, b], { defaults: logConfig() })).toThrow(new RegExp(`${join(a, 't-0')}.*${join(b, 't-0')}`));
  });

  it('opens without a directory it cannot use, which stays offline; fails only when none is left', () => {
    const a = tempDir();
    const broken = join(tempDir(), 'not-a-directory');
    writeFileSync(broken, 'x');
    const m = open([broken, a]);
    expect(m.logDirs().map((d) => [d.path, d.failure !== null])).toEqual([
      [broken, true],
      [a, false],
    ]);
    m.getOrCreate('t', 0);
    expect(m.logDirOf('t', 0)).toBe(a);
    expect(m.describeDirs()[0]).toMatchObject({ path: broken, failure: expect.any(String), logs: [] });
    expect(() => LogManager.open([broken], { defaults: logConfig() })).toThrow();
  });

  it('moves a log to another directory while it takes appends, keeping offsets, transactions, epochs and watermarks', async () => {
    const [a, b] = [tempDir(), tempDir()];
    const m = open([a, b]);
    const log = m.getOrCreate('t', 0);
    expect(m.logDirOf('t', 0)).toBe(a);
    for (let i = 0; i < 20; i++) put(log, `v${i}`);
    log.roll();
    put(log, 'txn', { producerId: 7n, producerEpoch: 0, baseSequence: 0, transactional: true });
    expect(log.appendControlMarker({ producerId: 7n, producerEpoch: 0, coordinatorEpoch: 1, commit: false }, 0)).toMatchObject({ ok: true });
    log.updateHighWatermark(log.logEndOffset);
    expect(log.deleteRecordsBefore(3n)).toMatchObject({ ok: true });
    log.maybeAssignEpochStartOffset(4, log.logEndOffset);
    const before = served(log);

    expect(m.moveLog('t', 0, b)).toBe('moving');
    expect(m.moveLog('t', 0, b)).toBe('moving');
    // A copy has begun in b, shown as a future log behind the current one.
    m.moveStep(1);
    const [inA, inB] = m.describeDirs();
    expect(inA!.logs).toEqual([expect.objectContaining({ topic: 't', partition: 0, isFuture: false })]);
    expect(inB!.logs).toEqual([expect.objectContaining({ topic: 't', partition: 0, isFuture: true, offsetLag: expect.any(BigInt) })]);
    expect(inB!.logs[0]!.offsetLag).toBeGreaterThan(0n);
    expect(readdirSync(b).some((n) => /^t-0\.[0-9a-f]{32}-future$/.test(n))).toBe(true);
    // Appends go on to the current log meanwhile.
    m.get('t', 0)!.append(buildBatch({ records: [{ value: 'late', timestamp: 2000n }] }), 4);
    m.get('t', 0)!.updateHighWatermark(m.get('t', 0)!.logEndOffset);
    const expected = served(m.get('t', 0)!);
    expect(expected.length).toBe(before.length + 1);

    finishMoves(m);
    expect(m.logDirOf('t', 0)).toBe(b);
    const moved = m.get('t', 0)!;
    expect(moved.dir).toBe(join(b, 't-0'));
    expect(served(moved)).toEqual(expected);
    expect([moved.logStartOffset, moved.highWatermark, moved.logEndOffset]).toEqual([3n, 23n, 23n]);
    expect(moved.collectAbortedTransactions(0n, 23n)).toEqual([{ producerId: 7n, firstOffset: 20n }]);
    expect(moved.leaderEpochs.latestEntry()).toEqual({ epoch: 4, startOffset: 22n });
    expect(m.describeDirs().map((d) => d.logs.length)).toEqual([0, 1]);
    // The old copy goes (file.delete.delay.ms 0 here), once the manager runs its timers.
    m.start();
    await expect.poll(() => readdirSync(a).filter((n) => n.startsWith('t-0')), { timeout: 5000 }).toEqual([]);
    // And it is found in b after a restart.
    await close(m);
    const again = open([a, b]);
    expect(again.logDirOf('t', 0)).toBe(b);
    expect(served(again.get('t', 0)!)).toEqual(expected);
  });

  it('resumes a move after a restart, and finishes a swap a restart interrupted', async () => {
    const [a, b] = [tempDir(), tempDir()];
    const m = open([a, b]);
    const log = m.getOrCreate('t', 0);
    for (let i = 0; i < 10; i++) put(log, `v${i}`);
    log.updateHighWatermark(10n);
    m.moveLog('t', 0, b);
    m.moveStep(1);
    await close(m);

    const resumed = open([a, b]);
    expect(resumed.logDirOf('t', 0)).toBe(a);
    expect(resumed.describeDirs()[1]!.logs).toEqual([expect.objectContaining({ isFuture: true })]);
    finishMoves(resumed);
    expect(resumed.logDirOf('t', 0)).toBe(b);
    expect(resumed.get('t', 0)!.logEndOffset).toBe(10n);
    await close(resumed);

    // A restart between the two renames of a swap: the old log is renamed for deletion, the future one not yet in place.
    const c = tempDir();
    const n = open([b, c]);
    n.moveLog('t', 0, c);
    finishMoves(n);
    const future = readdirSync(c).find((x) => x === 't-0')!;
    await close(n);
    renameSync(join(c, future), join(c, `t-0.${'ab'.repeat(16)}-future`));
    const promoted = open([b, c]);
    expect(promoted.logDirOf('t', 0)).toBe(c);
    expect(promoted.get('t', 0)!.logEndOffset).toBe(10n);
  });

  it('answers what a move cannot do, and remembers the directory of a partition it does not have yet', () => {
    const [a, b] = [tempDir(), tempDir()];
    const m = open([a, b]);
    m.getOrCreate('t', 0);
    expect(m.moveLog('t', 0, '/nowhere')).toBe('unknown-dir');
    expect(m.moveLog('t', 0, a)).toBe('here');
    m.getOrCreate('u', 0);
    m.getOrCreate('w', 0);
    expect([m.logDirOf('u', 0), m.logDirOf('w', 0)]).toEqual([b, a]);
    // Directory b holds the fewest now, but the one named for a partition not created yet wins.
    expect(m.moveLog('new', 0, a)).toBe('preferred');
    m.getOrCreate('new', 0);
    expect(m.logDirOf('new', 0)).toBe(a);
    // A move under way elsewhere is dropped when the log is sent back where it is.
    expect(m.moveLog('t', 0, b)).toBe('moving');
    expect(m.moveLog('t', 0, a)).toBe('here');
    expect(m.describeDirs()[1]!.logs.filter((l) => l.isFuture)).toEqual([]);
    finishMoves(m);
    expect(m.logDirOf('t', 0)).toBe(a);
  });
});

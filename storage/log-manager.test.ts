import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildBatch, decodeRecords } from '../wire/record-batch.js';
import { CLEANER_OFFSET_CHECKPOINT_FILE, PARTITION_CHECKPOINT_FILE, parseTopicPartitionCheckpoint } from './checkpoint.js';
import { FaultyFs } from './fs.js';
import { logConfig } from './log-config.js';
import { LogManager, type LogManagerLogger, type LogManagerOptions, parsePartitionDirName } from './log-manager.js';
import { CLEAN_SHUTDOWN_FILE, type PartitionLog } from './log.js';
import { servedBatches } from './test-support.js';

const dirs: string[] = [];
const managers: LogManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-log-manager-'));
  dirs.push(d);
  return d;
}

interface Logged {
  level: 'warn' | 'info';
  msg: string;
  obj: Record<string, unknown>;
}

function recorder(): LogManagerLogger & { lines: Logged[] } {
  const lines: Logged[] = [];
  return {
    lines,
    warn: (obj, msg) => void lines.push({ level: 'warn', msg, obj: obj as Record<string, unknown> }),
    info: (obj, msg) => void lines.push({ level: 'info', msg, obj: obj as Record<string, unknown> }),
  };
}

function open(dataDir: string, opts: Partial<LogManagerOptions> = {}): LogManager {
  const m = LogManager.open(dataDir, { defaults: logConfig(), ...opts });
  managers.push(m);
  return m;
}

type KV = [key: string, value: string | null];

function append(log: PartitionLog, records: KV[], ts = 1000n): void {
  const r = log.append(buildBatch({ records: records.map(([key, value]) => ({ key, value, timestamp: ts })) }), 0);
  if (!r.ok) throw new Error(r.message);
}

/** `key@offset` for every record the log serves from its start. */
function contents(log: PartitionLog): string[] {
  const out: string[] = [];
  for (const { header, bytes } of servedBatches(log)) {
    const d = decodeRecords(bytes);
    if (!d.ok) throw new Error(d.error);
    for (const r of d.records) out.push(`${r.key!.toString()}@${header.baseOffset + BigInt(r.offsetDelta)}`);
  }
  return out;
}

/** Segments of 10 records each, the i-th with timestamps times[i]..times[i]+9, high watermark at the end. */
function segments(log: PartitionLog, times: bigint[]): void {
  times.forEach((ts, i) => {
    const r = log.append(
      buildBatch({ records: Array.from({ length: 10 }, (_, k) => ({ key: `k${k}`, value: 'v', timestamp: ts + BigInt(k) })) }),
      0,
    );
    if (!r.ok) throw new Error(r.message);
    if (i < times.length - 1) log.roll();
  });
  log.updateHighWatermark(log.logEndOffset);
}

const sorted = (m: LogManager) =>
  m
    .all()
    .map(({ topic, partition }) => `${topic}/${partition}`)
    .sort();

describe('partition directory names', () => {
  it('splits at the last dash and refuses what is not a partition directory', () => {
    expect(parsePartitionDirName('orders-0')).toEqual({ topic: 'orders', partition: 0 });
    expect(parsePartitionDirName('my-topic-12')).toEqual({ topic: 'my-topic', partition: 12 });
    expect(parsePartitionDirName('a-1-0')).toEqual({ topic: 'a-1', partition: 0 });
    expect(parsePartitionDirName('orders-0.0123456789abcdef0123456789abcdef-delete')).toBeNull();
    expect(parsePartitionDirName('orders')).toBeNull();
    expect(parsePartitionDirName('orders-01')).toBeNull();
    expect(parsePartitionDirName('-0')).toBeNull();
    expect(parsePartitionDirName('bad topic-0')).toBeNull();
    expect(parsePartitionDirName('meta.properties')).toBeNull();
  });
});

describe('LogManager open, create, reopen', () => {
  it('finds the logs it created again after a restart, with their data', async () => {
    const dataDir = join(tempDir(), 'data'); // created by open
    const first = LogManager.open(dataDir, { defaults: logConfig() });
    expect(first.all()).toEqual([]);
    const log = first.getOrCreate('orders', 0);
    expect(first.getOrCreate('orders', 0)).toBe(log);
    expect(first.get('orders', 0)).toBe(log);
    expect(first.get('orders', 1)).toBeUndefined();
    append(log, [['a', '1'], ['b', '2']]);
    append(first.getOrCreate('orders', 1), [['c', '3']]);
    log.updateHighWatermark(2n);
    await first.close();

    const logger = recorder();
    const second = open(dataDir, { log: logger });
    expect(sorted(second)).toEqual(['orders/0', 'orders/1']);
    const again = second.get('orders', 0)!;
    expect(again.logEndOffset).toBe(2n);
    expect(again.highWatermark).toBe(2n);
    expect(contents(again)).toEqual(['a@0', 'b@1']);
    expect(contents(second.get('orders', 1)!)).toEqual(['c@0']);
    // Both were closed cleanly: nothing to recover.
    expect(logger.lines.filter((l) => l.msg.includes('recovered'))).toEqual([]);
  });

  it('recovers a log that was not closed', () => {
    const dataDir = tempDir();
    const running = open(dataDir);
    append(running.getOrCreate('t', 0), [['a', '1']]);
    // What a process that died now leaves behind: no clean-shutdown marker.
    const copy = tempDir();
    cpSync(dataDir, copy, { recursive: true });

    const logger = recorder();
    const m = open(copy, { log: logger });
    expect(m.get('t', 0)!.logEndOffset).toBe(1n);
    expect(logger.lines.filter((l) => l.msg.includes('recovered')).map((l) => [l.obj.topic, l.obj.partition])).toEqual([['t', 0]]);
  });

  it('parses topic names with dashes and dots, and leaves other entries alone', async () => {
    const dataDir = tempDir();
    const m1 = LogManager.open(dataDir, { defaults: logConfig() });
    append(m1.getOrCreate('my-topic', 0), [['x', '1']]);
    append(m1.getOrCreate('my-topic', 12), [['y', '1'], ['y', '2']]);
    append(m1.getOrCreate('a-1', 0), [['z', '1'], ['z', '2'], ['z', '3']]);
    m1.getOrCreate('a', 10);
    m1.getOrCreate('x.y_z', 3);
    await m1.close();
    writeFileSync(join(dataDir, 'meta.properties'), 'version=1\n');
    writeFileSync(join(dataDir, 'junk-0'), 'a file, not a directory');
    mkdirSync(join(dataDir, 'no-partition'));
    mkdirSync(join(dataDir, 'bad topic-0'));

    const m2 = open(dataDir);
    expect(sorted(m2)).toEqual(['a-1/0', 'a/10', 'my-topic/0', 'my-topic/12', 'x.y_z/3']);
    expect(m2.get('my-topic', 0)!.logEndOffset).toBe(1n);
    expect(m2.get('my-topic', 12)!.logEndOffset).toBe(2n);
    expect(m2.get('a-1', 0)!.logEndOffset).toBe(3n);
    expect(m2.get('a', 10)!.logEndOffset).toBe(0n);
    expect(existsSync(join(dataDir, 'junk-0'))).toBe(true);
  });

  it('refuses names that are not topic names or partition numbers', () => {
    const m = open(tempDir());
    expect(() => m.getOrCreate('../escape', 0)).toThrow(RangeError);
    expect(() => m.getOrCreate('', 0)).toThrow(RangeError);
    expect(() => m.getOrCreate('..', 0)).toThrow(RangeError);
    expect(() => m.getOrCreate('ok', -1)).toThrow(RangeError);
    expect(() => m.getOrCreate('ok', 1.5)).toThrow(RangeError);
  });

  it('gives new logs the topic config, else the defaults, unless one is passed', () => {
    const compact = logConfig({ cleanupPolicy: ['compact'] });
    const defaults = logConfig({ retentionMs: 1234 });
    const m = open(tempDir(), { defaults, topicConfigs: new Map([['keyed', compact]]) });
    expect(m.getOrCreate('keyed', 0).config).toBe(compact);
    expect(m.getOrCreate('plain', 0).config).toBe(defaults);
    const own = logConfig({ retentionMs: 1 });
    expect(m.getOrCreate('plain', 1, own).config).toBe(own);
  });

  it('accepts a pino logger', () => {
    const logger: LogManagerLogger = pino({ enabled: false });
    open(tempDir(), { log: logger }).getOrCreate('t', 0);
  });
});

describe('LogManager.delete', () => {
  it('renames the directory at once and removes it in the background', async () => {
    const dataDir = tempDir();
    const logger = recorder();
    const m = open(dataDir, { defaults: logConfig({ fileDeleteDelayMs: 0 }), log: logger });
    append(m.getOrCreate('to-go', 0), [['a', '1']]);
    m.getOrCreate('to-go', 1);
    expect(m.delete('to-go', 0)).toBe(true);
    expect(m.delete('to-go', 0)).toBe(false);
    expect(m.delete('never', 0)).toBe(false);
    expect(m.get('to-go', 0)).toBeUndefined();
    expect(existsSync(join(dataDir, 'to-go-0'))).toBe(false);
    expect(readdirSync(dataDir).filter((n) => /^to-go-0\.[0-9a-f]{32}-delete$/.test(n))).toHaveLength(1);
    await vi.waitFor(() => expect(readdirSync(dataDir).sort()).toEqual(['to-go-1']), { timeout: 5000, interval: 10 });
    // The removal is logged once it has finished, which can be a moment after the directory is gone.
    await vi.waitFor(() => expect(logger.lines.some((l) => l.msg === 'deleted log directory')).toBe(true), { timeout: 5000, interval: 10 });
    // The name is free for a new, empty log.
    expect(m.getOrCreate('to-go', 0).logEndOffset).toBe(0n);
  });

  it('waits file.delete.delay.ms; what a restart finds renamed is removed once started', async () => {
    const dataDir = tempDir();
    const m1 = LogManager.open(dataDir, { defaults: logConfig({ fileDeleteDelayMs: 60000 }) });
    append(m1.getOrCreate('t', 0), [['a', '1']]);
    m1.delete('t', 0);
    await new Promise((r) => setTimeout(r, 50));
    const renamed = readdirSync(dataDir).filter((n) => n.endsWith('-delete'));
    expect(renamed).toHaveLength(1);
    await m1.close();
    expect(readdirSync(dataDir)).toEqual(renamed);

    const m2 = open(dataDir);
    expect(m2.all()).toEqual([]);
    expect(readdirSync(dataDir)).toEqual(renamed);
    m2.start();
    await vi.waitFor(() => expect(readdirSync(dataDir)).toEqual([]), { timeout: 5000, interval: 10 });
  });
});

describe('LogManager background work', () => {
  const fast = { 'log.retention.check.interval.ms': 10, 'log.cleaner.backoff.ms': 10, 'log.flush.offset.checkpoint.interval.ms': 10, 'log.flush.scheduler.interval.ms': 10 };

  it('deletes expired segments on the retention timer, by the injected clock', async () => {
    let now = 5500;
    const m = open(tempDir(), { defaults: logConfig({ retentionMs: 1000 }), now: () => now, ...fast });
    const expiring = m.getOrCreate('expiring', 0);
    segments(expiring, [5000n, 6000n, 7000n]);
    const forever = m.getOrCreate('forever', 0, logConfig({ retentionMs: -1 }));
    segments(forever, [5000n, 6000n, 7000n]);
    m.start();
    await new Promise((r) => setTimeout(r, 50));
    expect(expiring.logStartOffset).toBe(0n);

    now = 6500; // segment 0 (largest timestamp 5009) has expired, segment 10 (6009) not yet
    await vi.waitFor(() => expect(expiring.logStartOffset).toBe(10n), { timeout: 5000, interval: 10 });
    expect(expiring.segmentBaseOffsets()).toEqual([10n, 20n]);
    now = 100000;
    await vi.waitFor(() => expect(expiring.logStartOffset).toBe(30n), { timeout: 5000, interval: 10 });
    expect(forever.logStartOffset).toBe(0n);
    expect(forever.segmentBaseOffsets()).toEqual([0n, 10n, 20n]);
  });

  it('compacts only the topics whose cleanup.policy includes compact, a step at a time', async () => {
    const m = open(tempDir(), { ...fast, cleanerStepsPerTick: 1 });
    const compacted = m.getOrCreate('keyed', 0, logConfig({ cleanupPolicy: ['compact', 'delete'], retentionMs: -1 }));
    const plain = m.getOrCreate('plain', 0, logConfig({ retentionMs: -1 }));
    for (const log of [compacted, plain]) {
      append(log, [['a', '1'], ['b', '1']]);
      log.roll();
      append(log, [['a', '2'], ['b', '2']]);
      log.roll();
      append(log, [['a', '3']]);
      log.updateHighWatermark(log.logEndOffset);
    }
    m.start();
    await vi.waitFor(() => expect(contents(compacted)).toEqual(['a@2', 'b@3', 'a@4']), { timeout: 5000, interval: 10 });
    expect(compacted.segmentBaseOffsets()).toEqual([0n, 4n]); // the two cleaned segments merged
    await new Promise((r) => setTimeout(r, 50));
    expect(contents(plain)).toEqual(['a@0', 'b@1', 'a@2', 'b@3', 'a@4']);
    expect(plain.segmentBaseOffsets()).toEqual([0n, 2n, 4n]);
  });

  it('compacts with the config that updateConfig gives a topic, at once', async () => {
    const m = open(tempDir(), { ...fast, defaults: logConfig({ retentionMs: -1 }) });
    const before = m.getOrCreate('t', 0);
    append(before, [['a', '1']]);
    before.roll();
    append(before, [['a', '2']]);
    before.roll();
    before.updateHighWatermark(before.logEndOffset);
    m.start();
    await new Promise((r) => setTimeout(r, 50));
    expect(contents(m.get('t', 0)!)).toEqual(['a@0', 'a@1']);

    const compact = logConfig({ cleanupPolicy: ['compact'] });
    m.updateConfig('t', compact);
    const after = m.get('t', 0)!;
    expect(after.config).toBe(compact);
    expect(after.highWatermark).toBe(2n);
    await vi.waitFor(() => expect(contents(after)).toEqual(['a@1']), { timeout: 5000, interval: 10 });
    expect(m.getOrCreate('t', 1).config).toBe(compact);
    // The same config again changes nothing.
    m.updateConfig('t', logConfig({ cleanupPolicy: ['compact'] }));
    expect(m.get('t', 0)).toBe(after);
  });

  it('flushes logs with a finite flush.ms when it is due', async () => {
    let now = 0;
    const fs = new FaultyFs();
    const m = open(tempDir(), { fs, now: () => now, defaults: logConfig({ flushMs: 100 }), ...fast, 'log.flush.offset.checkpoint.interval.ms': 600000 });
    const log = m.getOrCreate('t', 0);
    m.start();
    append(log, [['a', '1']]);
    const fsyncs = fs.fsyncs;
    now = 50;
    await new Promise((r) => setTimeout(r, 50));
    expect(fs.fsyncs).toBe(fsyncs);
    now = 100;
    await vi.waitFor(() => expect(fs.fsyncs).toBeGreaterThan(fsyncs), { timeout: 5000, interval: 10 });
  });

  it('writes checkpoints on its timer', async () => {
    const dataDir = tempDir();
    const m = open(dataDir, fast);
    const log = m.getOrCreate('t', 0);
    append(log, [['a', '1'], ['b', '2']]);
    log.updateHighWatermark(2n); // in memory only, until a checkpoint
    m.start();
    await new Promise((r) => setTimeout(r, 50));
    const copy = tempDir();
    cpSync(dataDir, copy, { recursive: true });
    const reopened = open(copy);
    expect(reopened.get('t', 0)!.highWatermark).toBe(2n);
  });

  it('takes the directory of a log that meets an I/O error offline, goes on with the other directories, and says so once', async () => {
    let now = 5500;
    const fs = new FaultyFs();
    const logger = recorder();
    const [d1, d2] = [tempDir(), tempDir()];
    const failedDirs: string[] = [];
    const m = LogManager.open([d1, d2], { fs, now: () => now, log: logger, defaults: logConfig({ retentionMs: 1000 }), onDirFailure: (p) => void failedDirs.push(p), ...fast });
    managers.push(m);
    // Placement alternates between the two directories (fewest partitions first).
    const bad = m.getOrCreate('bad', 0);
    const good = m.getOrCreate('good', 0);
    const neighbour = m.getOrCreate('neighbour', 0);
    expect([m.logDirOf('bad', 0), m.logDirOf('good', 0), m.logDirOf('neighbour', 0)]).toEqual([d1, d2, d1]);
    segments(bad, [5000n, 6000n]);
    segments(good, [5000n, 6000n]);
    segments(neighbour, [5000n, 6000n]);
    fs.failNextWrite('EIO', (path) => path.includes(`${sep}bad-0${sep}`));
    m.start();
    await vi.waitFor(() => expect(bad.isOffline).toBe(true), { timeout: 5000, interval: 10 });
    // The whole directory went with it: its other log refuses writes too.
    await vi.waitFor(() => expect(neighbour.isOffline).toBe(true), { timeout: 5000, interval: 10 });
    expect(() => append(neighbour, [['x', '1']])).toThrow(/failed in/);

    now = 6500;
    await vi.waitFor(() => expect(good.logStartOffset).toBe(10n), { timeout: 5000, interval: 10 });
    await new Promise((r) => setTimeout(r, 50));
    expect(bad.logStartOffset).toBe(0n);
    expect(neighbour.logStartOffset).toBe(0n);
    const dirLines = logger.lines.filter((l) => l.level === 'warn' && l.obj.logDir === d1);
    expect(dirLines).toHaveLength(1);
    expect(dirLines[0]!.msg).toContain('log directory failed');
    expect(dirLines[0]!.obj.partitions).toBe(2);
    expect(logger.lines.filter((l) => l.level === 'warn' && l.obj.topic === 'neighbour')).toEqual([]);
    expect(logger.lines.some((l) => l.level === 'warn' && (l.obj.topic === 'good' || l.obj.logDir === d2))).toBe(false);
    expect(m.logDirs().map((d) => d.failure !== null)).toEqual([true, false]);
    expect(failedDirs).toEqual([d1]);
    // New partitions go to the directory still online.
    m.getOrCreate('later', 0);
    expect(m.logDirOf('later', 0)).toBe(d2);
    // Reads go on; the offline logs still close their files.
    expect(contents(bad)).toHaveLength(20);
    await m.close();
    expect(fs.openCount()).toBe(0);
  });

  it('stops compacting a log whose data the cleaner cannot read, and cleans the others', async () => {
    const logger = recorder();
    const m = open(tempDir(), { ...fast, log: logger, defaults: logConfig({ cleanupPolicy: ['compact'] }) });
    const broken = m.getOrCreate('broken', 0);
    const fine = m.getOrCreate('fine', 0);
    for (const log of [broken, fine]) {
      append(log, [['a', '1']]);
      append(log, [['a', '2']]);
      log.roll();
      log.updateHighWatermark(log.logEndOffset);
    }
    // A segment the cleaner fails on, as if its bytes had gone bad after they were indexed.
    const seg = broken.segmentsForCleaning()[0]!;
    const spy = vi.spyOn(seg, 'size', 'get').mockReturnValue(seg.size + 7);
    m.start();
    await vi.waitFor(() => expect(contents(fine)).toEqual(['a@1']), { timeout: 5000, interval: 10 });
    await vi.waitFor(() => expect(logger.lines.some((l) => l.level === 'warn' && l.obj.topic === 'broken')).toBe(true), {
      timeout: 5000,
      interval: 10,
    });
    expect(logger.lines.find((l) => l.level === 'warn' && l.obj.topic === 'broken')!.msg).toMatch(/compaction failed/);
    spy.mockRestore();
    expect(broken.isOffline).toBe(false);
    await new Promise((r) => setTimeout(r, 50));
    expect(logger.lines.filter((l) => l.level === 'warn' && l.obj.topic === 'broken')).toHaveLength(1);
    expect(contents(broken)).toEqual(['a@0', 'a@1']);
  });
});

describe('LogManager cleaner checkpoint', () => {
  const fast = { 'log.retention.check.interval.ms': 10, 'log.cleaner.backoff.ms': 10, 'log.flush.offset.checkpoint.interval.ms': 10, 'log.flush.scheduler.interval.ms': 10 };
  const compacted = logConfig({ cleanupPolicy: ['compact'] });
  const checkpointText = (dataDir: string) => readFileSync(join(dataDir, CLEANER_OFFSET_CHECKPOINT_FILE), 'utf8');
  const passes = (logger: ReturnType<typeof recorder>) => logger.lines.filter((l) => l.msg === 'compaction pass done');

  /** keyed-0 holding a=1 b=1 | a=2 | (active, empty), committed; compacted by one pass, then closed. */
  async function compactedDataDir(): Promise<string> {
    const dataDir = tempDir();
    const logger = recorder();
    const m = open(dataDir, { ...fast, log: logger, defaults: compacted });
    const log = m.getOrCreate('keyed', 0);
    append(log, [['a', '1'], ['b', '1']]);
    log.roll();
    append(log, [['a', '2']]);
    log.roll();
    log.updateHighWatermark(log.logEndOffset);
    m.start();
    await vi.waitFor(() => expect(passes(logger)).toHaveLength(1), { timeout: 5000, interval: 10 });
    expect(contents(log)).toEqual(['b@1', 'a@2']);
    await m.close();
    return dataDir;
  }

  it('records each pass in cleaner-offset-checkpoint, Kafka\'s layout, and resumes from it after a restart', async () => {
    const dataDir = await compactedDataDir();
    expect(checkpointText(dataDir)).toBe('0\n1\nkeyed 0 3\n');

    // Nothing new since the checkpoint: no pass after the restart.
    const logger = recorder();
    const m = open(dataDir, { ...fast, log: logger, defaults: compacted }).start();
    await new Promise((r) => setTimeout(r, 100));
    expect(passes(logger)).toEqual([]);

    // New dirty data: the next pass starts from the checkpoint and moves it on.
    const log = m.get('keyed', 0)!;
    append(log, [['b', '2']]);
    log.roll();
    log.updateHighWatermark(log.logEndOffset);
    await vi.waitFor(() => expect(checkpointText(dataDir)).toBe('0\n1\nkeyed 0 4\n'), { timeout: 5000, interval: 10 });
    expect(passes(logger).map((l) => l.obj.firstDirtyOffset)).toEqual(['4']);
    expect(contents(log)).toEqual(['a@2', 'b@3']);
  });

  it('without the checkpoint, the first pass after a restart treats the whole log as dirty', async () => {
    const dataDir = await compactedDataDir();
    unlinkSync(join(dataDir, CLEANER_OFFSET_CHECKPOINT_FILE));
    const logger = recorder();
    open(dataDir, { ...fast, log: logger, defaults: compacted }).start();
    await vi.waitFor(() => expect(passes(logger)).toHaveLength(1), { timeout: 5000, interval: 10 });
    expect(checkpointText(dataDir)).toBe('0\n1\nkeyed 0 3\n');
  });

  it('at open drops the entries of partitions it has no log for and of logs ending below them, and raises one below the log start', async () => {
    const dataDir = tempDir();
    const first = LogManager.open(dataDir, { defaults: compacted });
    for (const [topic, n] of [['keyed', 3], ['short', 2], ['trimmed', 6]] as const) {
      const log = first.getOrCreate(topic, 0);
      for (let i = 0; i < n; i++) append(log, [[`k${i}`, 'v']]);
      log.updateHighWatermark(log.logEndOffset);
    }
    expect(first.get('trimmed', 0)!.deleteRecordsBefore(4n)).toEqual({ ok: true, lowWatermark: 4n });
    await first.close();
    writeFileSync(join(dataDir, CLEANER_OFFSET_CHECKPOINT_FILE), '0\n4\nkeyed 0 3\ngone 0 5\nshort 0 50\ntrimmed 0 1\n');
    const logger = recorder();
    const m = open(dataDir, { defaults: compacted, log: logger });
    expect(checkpointText(dataDir)).toBe('0\n2\nkeyed 0 3\ntrimmed 0 4\n');
    expect(logger.lines.some((l) => l.level === 'warn' && l.obj.topic === 'short' && /past the log end/.test(l.msg))).toBe(true);

    // A deleted partition's entry goes with it (Kafka's updateCheckpoints on delete).
    m.delete('keyed', 0);
    expect(parseTopicPartitionCheckpoint(checkpointText(dataDir))).toEqual([{ topic: 'trimmed', partition: 0, offset: 4n }]);
  });

  it('logs a failed checkpoint write, keeps the log online, and writes the checkpoint with the next pass', async () => {
    const fs = new FaultyFs();
    const logger = recorder();
    const dataDir = tempDir();
    const m = open(dataDir, { ...fast, fs, log: logger, defaults: compacted });
    const log = m.getOrCreate('keyed', 0);
    append(log, [['a', '1'], ['b', '1']]);
    log.roll();
    append(log, [['a', '2']]);
    log.roll();
    log.updateHighWatermark(log.logEndOffset);
    fs.failNextWrite('EIO', (path) => path.includes(CLEANER_OFFSET_CHECKPOINT_FILE));
    m.start();
    await vi.waitFor(() => expect(logger.lines.some((l) => l.level === 'warn' && /cleaner checkpoint/.test(l.msg))).toBe(true), { timeout: 5000, interval: 10 });
    expect(log.isOffline).toBe(false);
    expect(contents(log)).toEqual(['b@1', 'a@2']);
    expect(existsSync(join(dataDir, CLEANER_OFFSET_CHECKPOINT_FILE))).toBe(false);
    append(log, [['b', '2']]);
    log.roll();
    log.updateHighWatermark(log.logEndOffset);
    await vi.waitFor(() => expect(checkpointText(dataDir)).toBe('0\n1\nkeyed 0 4\n'), { timeout: 5000, interval: 10 });
  });

  it('drops the entry of a log truncated since it was written: the whole log is dirty again', async () => {
    const dataDir = await compactedDataDir();
    const m = open(dataDir, { ...fast, defaults: compacted }).start();
    const log = m.get('keyed', 0)!;
    log.truncateTo(2n);
    await vi.waitFor(() => expect(checkpointText(dataDir)).toBe('0\n0\n'), { timeout: 5000, interval: 10 });
    // And when the manager closes before a tick has seen the truncation.
    append(log, [['c', '1']]);
    log.roll();
    log.updateHighWatermark(log.logEndOffset);
    await vi.waitFor(() => expect(checkpointText(dataDir)).toBe(`0\n1\nkeyed 0 ${log.logEndOffset}\n`), { timeout: 5000, interval: 10 });
    log.truncateTo(2n);
    await m.close();
    expect(checkpointText(dataDir)).toBe('0\n0\n');
  });
});

describe('LogManager.close', () => {
  it('closes every log cleanly: clean-shutdown markers and checkpoints', async () => {
    const dataDir = tempDir();
    const m = LogManager.open(dataDir, { defaults: logConfig() }).start();
    append(m.getOrCreate('a', 0), [['k', 'v']]);
    m.getOrCreate('b-c', 3);
    for (const name of ['a-0', 'b-c-3']) expect(existsSync(join(dataDir, name, CLEAN_SHUTDOWN_FILE))).toBe(false);
    await m.close();
    for (const name of ['a-0', 'b-c-3']) {
      expect(existsSync(join(dataDir, name, CLEAN_SHUTDOWN_FILE))).toBe(true);
      expect(existsSync(join(dataDir, name, PARTITION_CHECKPOINT_FILE))).toBe(true);
    }
    expect(m.all()).toEqual([]);
    expect(() => m.getOrCreate('a', 0)).toThrow(/closed/);
    expect(() => m.start()).toThrow(/closed/);
    await m.close(); // twice is fine
  });
});

describe('producer expiration', () => {
  it('removes idle producers from every log on its own timer, with the configured expiration', async () => {
    let now = 10_000;
    const m = open(tempDir(), { now: () => now, producerIdExpirationMs: 1000, producerIdExpirationCheckIntervalMs: 10 });
    const log = m.getOrCreate('idem', 0);
    const r = log.append(buildBatch({ records: [{ key: 'k', value: 'v', timestamp: 10_000n }], producerId: 7n, producerEpoch: 0, baseSequence: 0 }), 0);
    expect(r.ok).toBe(true);
    m.start();
    await new Promise((res) => setTimeout(res, 50));
    expect(log.activeProducers().map((p) => p.producerId)).toEqual([7n]);
    now = 11_000;
    await vi.waitFor(() => expect(log.activeProducers()).toEqual([]), { timeout: 5000, interval: 10 });
  });

  it('refuses a producer expiration that is not a positive number', () => {
    expect(() => open(tempDir(), { producerIdExpirationMs: 0 })).toThrow(RangeError);
  });
});

describe('LogManager.getOrCreateMany', () => {
  /** Counts directory syncs and can fail the next one. */
  class DirSyncFs extends FaultyFs {
    dirSyncs: string[] = [];
    failDirSync = false;
    override syncDir(path: string): void {
      if (this.failDirSync) {
        this.failDirSync = false;
        throw new Error('simulated directory sync failure');
      }
      this.dirSyncs.push(path);
      super.syncDir(path);
    }
  }

  it('creates many logs with one sync of the data directory, and returns existing ones as they are', () => {
    const dataDir = tempDir();
    const fs = new DirSyncFs();
    const m = open(dataDir, { fs });
    const existing = m.getOrCreate('t', 0);
    fs.dirSyncs = [];
    const parts = Array.from({ length: 50 }, (_, i) => ({ topic: 't', partition: i }));
    const logs = m.getOrCreateMany(parts);
    expect(logs[0]).toBe(existing);
    expect(logs.every((l) => !(l instanceof Error))).toBe(true);
    expect(fs.dirSyncs.filter((d) => d === dataDir)).toHaveLength(1);
    for (let i = 0; i < 50; i++) expect(m.get('t', i)).toBe(logs[i]);
  });

  it('answers every new log with the error when that sync fails, and lists none of them', () => {
    const fs = new DirSyncFs();
    const m = open(tempDir(), { fs });
    const kept = m.getOrCreate('t', 0);
    fs.failDirSync = true;
    const r = m.getOrCreateMany([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }, { topic: 't', partition: 2 }]);
    expect(r[0]).toBe(kept);
    expect(r[1]).toBeInstanceOf(Error);
    expect((r[2] as Error).message).toContain('simulated directory sync failure');
    expect(m.get('t', 1)).toBeUndefined();
    expect(m.get('t', 2)).toBeUndefined();
    // A later attempt creates it.
    expect(m.getOrCreate('t', 1).logEndOffset).toBe(0n);
  });
});

/**
 * Storage benchmark: the partition log (storage/log.ts) measured against plain
 * file I/O on the same machine, in the same run.
 *
 *   npm run build && node dist/bench/storage.js [--quick | --full]
 *
 * Figures:
 *   - append: PartitionLog.append of pre-built batches (three shapes, one
 *     compressed) into a fresh log, against fs.writeSync of the same bytes in
 *     the same chunks into a fresh file; MB/s, batches/s and their ratio; in
 *     place (fresh copies of the batches made before the clock starts, as
 *     Produce appends its request bytes) and with the validator copying;
 *   - sequential read: the whole log in fetch-sized read() calls (1 MiB
 *     maxBytes), the bytes copied out with readRanges, against fs.readSync of
 *     the same segment file in 1 MiB chunks; MB/s and their ratio;
 *   - read latency: median and p99 of a 1 MiB read at random offsets while one
 *     log grows to 10 MB, 100 MB, 1 GB (and 10 GB with --full), sizes that do
 *     not fit the free disk space being skipped; against plain 4 KiB and 1 MiB
 *     preads of the segment file at the positions the reads answer from, so
 *     the cost of touching a page is measured beside the log's.
 * Nothing is fsynced inside a timed section: appends and plain writes both go
 * to the page cache, and reads come from it while the log fits in memory.
 * Goals are reported, never enforced. MB means 10^6 bytes, MiB 2^20.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { arch, cpus, platform, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { logConfig } from '../storage/log-config.js';
import { validateAndAssignOffsets } from '../storage/log-validator.js';
import { PartitionLog, readRanges } from '../storage/log.js';
import { segmentFileName } from '../storage/segment.js';
import { BATCH_LENGTH, Compression, LAST_OFFSET_DELTA, LOG_OVERHEAD, buildBatch } from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';

const MB = 1e6;
const MiB = 1 << 20;
const FETCH_BYTES = MiB;
const GOAL_APPEND_RATIO = 0.8;
/** Free space kept on the disk beyond what a phase writes. */
const DISK_MARGIN = 512 * MiB;
const POOL_SIZE = 256;

interface Mode {
  name: string;
  /** Bytes appended (and written plainly) per timed run. */
  throughputBytes: number;
  runs: number;
  growthSizes: number[];
  latencySamples: number;
}

const MODES: Record<'quick' | 'default' | 'full', Mode> = {
  quick: { name: 'quick', throughputBytes: 32 * MB, runs: 3, growthSizes: [10 * MB, 100 * MB], latencySamples: 200 },
  default: { name: 'default', throughputBytes: 256 * MB, runs: 3, growthSizes: [10 * MB, 100 * MB, 1000 * MB], latencySamples: 500 },
  full: {
    name: 'full',
    throughputBytes: 512 * MB,
    runs: 5,
    growthSizes: [10 * MB, 100 * MB, 1000 * MB, 10000 * MB],
    latencySamples: 1000,
  },
};

interface Workload {
  name: string;
  records: number;
  valueBytes: number;
  compression: Compression;
}

const WORKLOADS: Workload[] = [
  { name: '100 x 100 B', records: 100, valueBytes: 100, compression: Compression.None },
  { name: '10 x 1 KB', records: 10, valueBytes: 1000, compression: Compression.None },
  { name: '100 x 100 B lz4', records: 100, valueBytes: 100, compression: Compression.Lz4 },
];

// ---------------------------------------------------------------- temp dirs and signals

const openLogs = new Set<PartitionLog>();
let root: string | null = null;

function cleanup(): void {
  for (const log of openLogs) {
    try {
      log.close();
    } catch {
      // the directory goes anyway
    }
  }
  openLogs.clear();
  if (root) rmSync(root, { recursive: true, force: true });
  root = null;
}

process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    console.error(`\nbench/storage: ${sig}, removing temporary files`);
    cleanup();
    process.exit(130);
  });
}

/** Lets a pending signal handler run between (never inside) timed sections. */
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

let dirSeq = 0;
function freshDir(what: string): string {
  return join(root!, `${what}-${dirSeq++}`);
}

function freeBytes(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}

function openLog(dir: string): PartitionLog {
  const log = PartitionLog.open(dir, logConfig());
  openLogs.add(log);
  return log;
}

function closeLog(log: PartitionLog): void {
  openLogs.delete(log);
  log.close();
}

// ---------------------------------------------------------------- data

const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo'.split(' ');

/** Text of `n` bytes made of words: compresses about as well as typical JSON payloads. */
function text(rand: () => number, n: number): Buffer {
  const parts: string[] = [];
  let len = 0;
  while (len < n) {
    const w = rand() < 0.2 ? String(Math.floor(rand() * 1e6)) : WORDS[Math.floor(rand() * WORDS.length)]!;
    parts.push(w);
    len += w.length + 1;
  }
  return Buffer.from(parts.join(' ').slice(0, n), 'latin1');
}

function batchPool(w: Workload, seed: number): Buffer[] {
  const rand = seededRandom(seed);
  const ts = BigInt(Date.now());
  return Array.from({ length: POOL_SIZE }, (_, b) =>
    buildBatch({
      compression: w.compression,
      records: Array.from({ length: w.records }, (_, i) => ({
        key: `key-${b}-${i}`,
        value: text(rand, w.valueBytes),
        timestamp: ts + BigInt(i),
      })),
    }),
  );
}

/** Enough batches from the pool, cycling, to reach `bytes`. */
function batchCount(pool: Buffer[], bytes: number): number {
  const avg = pool.reduce((s, b) => s + b.length, 0) / pool.length;
  return Math.max(1, Math.ceil(bytes / avg));
}

/** The offset after the last batch of `buf` (whole batches back to back). */
function nextOffsetAfter(buf: Buffer): bigint {
  let at = 0;
  let last = -1n;
  while (at < buf.length) {
    last = buf.readBigInt64BE(at) + BigInt(buf.readInt32BE(at + LAST_OFFSET_DELTA));
    at += buf.readInt32BE(at + BATCH_LENGTH) + LOG_OVERHEAD;
  }
  return last + 1n;
}

// ---------------------------------------------------------------- timed sections

interface Timed {
  seconds: number;
  bytes: number;
  batches: number;
}

/**
 * Appends `count` batches cycling through the pool. In place (as Produce
 * appends a view into its request frame), each call gets a fresh copy of its
 * batch, all of them made before the clock starts; copying, the pool itself.
 */
function appendRun(dir: string, pool: Buffer[], count: number, inPlace: boolean): { timed: Timed; log: PartitionLog } {
  const log = openLog(dir);
  let inputs = pool;
  if (inPlace) {
    const frame = Buffer.concat(Array.from({ length: count }, (_, i) => pool[i % pool.length]!));
    inputs = [];
    for (let i = 0, at = 0; i < count; i++) {
      const size = pool[i % pool.length]!.length;
      inputs.push(frame.subarray(at, at + size));
      at += size;
    }
  }
  let bytes = 0;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const b = inputs[i % inputs.length]!;
    const r = log.append(b, undefined, inPlace);
    if (!r.ok) throw new Error(`append failed: ${r.message}`);
    bytes += b.length;
  }
  const seconds = (performance.now() - t0) / 1000;
  if (log.size !== bytes) throw new Error(`log holds ${log.size} bytes after appending ${bytes}`);
  return { timed: { seconds, bytes, batches: count }, log };
}

function plainWriteRun(path: string, pool: Buffer[], count: number): Timed {
  const fd = openSync(path, 'w');
  try {
    let pos = 0;
    const t0 = performance.now();
    for (let i = 0; i < count; i++) {
      const b = pool[i % pool.length]!;
      pos += writeSync(fd, b, 0, b.length, pos);
    }
    return { seconds: (performance.now() - t0) / 1000, bytes: pos, batches: count };
  } finally {
    closeSync(fd);
  }
}

/** The validator alone (no write): the part of append's cost that is checking and copying. */
function validateRun(pool: Buffer[], count: number): Timed {
  const config = logConfig();
  let next = 0n;
  let bytes = 0;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const b = pool[i % pool.length]!;
    const r = validateAndAssignOffsets(b, { nextOffset: next, leaderEpoch: 0, now: Date.now(), config });
    if (!r.ok) throw new Error(`validation failed: ${r.message}`);
    next = r.lastOffset + 1n;
    bytes += b.length;
  }
  return { seconds: (performance.now() - t0) / 1000, bytes, batches: count };
}

function logReadRun(log: PartitionLog): Timed {
  let offset = log.logStartOffset;
  let bytes = 0;
  let batches = 0;
  const t0 = performance.now();
  for (;;) {
    const r = log.read(offset, FETCH_BYTES);
    if (!r.ok) throw new Error(`read at ${offset} failed with error ${r.errorCode}`);
    if (r.size === 0) break;
    const buf = readRanges(r.records);
    offset = nextOffsetAfter(buf);
    bytes += buf.length;
    batches++;
  }
  const seconds = (performance.now() - t0) / 1000;
  if (bytes !== log.size) throw new Error(`sequential read returned ${bytes} bytes of ${log.size}`);
  return { seconds, bytes, batches };
}

function plainReadRun(path: string): Timed {
  const fd = openSync(path, 'r');
  try {
    let pos = 0;
    let chunks = 0;
    const t0 = performance.now();
    for (;;) {
      const buf = Buffer.allocUnsafe(FETCH_BYTES);
      const n = readSync(fd, buf, 0, FETCH_BYTES, pos);
      if (n === 0) break;
      pos += n;
      chunks++;
    }
    return { seconds: (performance.now() - t0) / 1000, bytes: pos, batches: chunks };
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------- statistics and printing

function median(xs: readonly number[]): number {
  const v = [...xs].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** Nearest-rank percentile. */
function percentile(xs: readonly number[], p: number): number {
  const v = [...xs].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))]!;
}

const mbps = (t: Timed): number => t.bytes / MB / t.seconds;
const perSec = (t: Timed): number => t.batches / t.seconds;
const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';
const pct = (r: number): string => (Number.isFinite(r) ? `${(r * 100).toFixed(0)} %` : 'n/a');
const size = (bytes: number): string => (bytes >= 1e9 ? `${fmt(bytes / 1e9, bytes % 1e9 ? 1 : 0)} GB` : `${fmt(bytes / MB)} MB`);

function table(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(headers));
  for (const r of rows) console.log(line(r));
}

/** The run whose MB/s is the median of the runs (the lower middle one for an even count). */
function medianRun(runs: Timed[]): Timed {
  const sorted = [...runs].sort((a, b) => mbps(a) - mbps(b));
  return sorted[(sorted.length - 1) >> 1]!;
}

// ---------------------------------------------------------------- phases

interface ThroughputRow {
  workload: Workload;
  batchBytes: number;
  /** In place, as Produce appends. */
  append: Timed;
  /** The validator copying its input, as append does by default. */
  copyingAppend: Timed;
  plain: Timed;
  validate: Timed;
  logRead: Timed;
  plainRead: Timed;
}

async function throughput(w: Workload, mode: Mode, seed: number): Promise<ThroughputRow> {
  const pool = batchPool(w, seed);
  const count = batchCount(pool, mode.throughputBytes);
  const warmCount = batchCount(pool, Math.min(mode.throughputBytes, 16 * MB));
  // Warm-up, untimed: JIT, codec libraries, allocation pools.
  {
    for (const inPlace of [false, true]) {
      const dir = freshDir('warm');
      const { log } = appendRun(dir, pool, warmCount, inPlace);
      closeLog(log);
      rmSync(dir, { recursive: true, force: true });
    }
    const file = join(root!, 'warm.plain');
    plainWriteRun(file, pool, warmCount);
    rmSync(file, { force: true });
    validateRun(pool, warmCount);
  }
  const appends: Timed[] = [];
  const copyingAppends: Timed[] = [];
  const plains: Timed[] = [];
  const validates: Timed[] = [];
  let kept: { log: PartitionLog; dir: string } | null = null;
  // Alternate the subjects so both see the same machine state.
  for (let run = 0; run < mode.runs; run++) {
    await tick();
    const file = join(root!, `plain-${run}`);
    plains.push(plainWriteRun(file, pool, count));
    rmSync(file, { force: true });
    await tick();
    const copyDir = freshDir('append-copying');
    const copying = appendRun(copyDir, pool, count, false);
    copyingAppends.push(copying.timed);
    closeLog(copying.log);
    rmSync(copyDir, { recursive: true, force: true });
    await tick();
    const dir = freshDir('append');
    const { timed, log } = appendRun(dir, pool, count, true);
    appends.push(timed);
    if (run === mode.runs - 1) kept = { log, dir };
    else {
      closeLog(log);
      rmSync(dir, { recursive: true, force: true });
    }
    validates.push(validateRun(pool, count));
  }
  // Sequential reads of the last appended log and of its segment file, alternated.
  const { log, dir } = kept!;
  const segments = log.segmentBaseOffsets();
  if (segments.length !== 1) throw new Error(`expected one segment, found ${segments.length}`);
  const segmentPath = join(dir, segmentFileName(segments[0]!, '.log'));
  logReadRun(log);
  plainReadRun(segmentPath);
  const logReads: Timed[] = [];
  const plainReads: Timed[] = [];
  for (let run = 0; run < mode.runs; run++) {
    await tick();
    plainReads.push(plainReadRun(segmentPath));
    logReads.push(logReadRun(log));
  }
  closeLog(log);
  rmSync(dir, { recursive: true, force: true });
  return {
    workload: w,
    batchBytes: pool.reduce((s, b) => s + b.length, 0) / pool.length,
    append: medianRun(appends),
    copyingAppend: medianRun(copyingAppends),
    plain: medianRun(plains),
    validate: medianRun(validates),
    logRead: medianRun(logReads),
    plainRead: medianRun(plainReads),
  };
}

interface LatencyRow {
  target: number;
  logBytes: number;
  segments: number;
  /** Microseconds: read() alone (index lookup and batch walk), timed before anything else at its position. */
  lookup: number[];
  /** Microseconds: read() plus readRanges (the 1 MiB copied out), same samples as `lookup`. */
  total: number[];
  /** Microseconds: fs.readSync of 4 KiB at the answer's file position, timed before anything else at its position. */
  plainPage: number[];
  /** Microseconds: fs.readSync of 1 MiB at that position, right after `plainPage`. */
  plainFetch: number[];
  /** Microseconds: read() at the positions of `plainPage`, right after the two plain reads touched its pages. */
  lookupWarm: number[];
  skipped?: string;
}

/** Where an appended chunk of batches went: its first offset, its segment and its position in that segment's file. */
interface Placed {
  firstOffset: number;
  chunk: number;
  segment: number;
  position: number;
}

const PAGE_BYTES = 4096;
const WARMUP_READS = 20;

async function growth(mode: Mode, seed: number, maxSizes: number[]): Promise<LatencyRow[]> {
  const w: Workload = { name: 'growth', records: 10, valueBytes: 1000, compression: Compression.None };
  const pool = batchPool(w, seed + 1);
  // Appends of 32 batches per call: the log is filled, not measured, here.
  const chunks = Array.from({ length: POOL_SIZE / 32 }, (_, c) => Buffer.concat(pool.slice(c * 32, c * 32 + 32)));
  // Start of each batch within its chunk; every batch holds w.records offsets.
  const batchStarts = Array.from({ length: chunks.length }, (_, c) => {
    const starts: number[] = [];
    for (let b = 0, at = 0; b < 32; b++) {
      starts.push(at);
      at += pool[c * 32 + b]!.length;
    }
    return starts;
  });
  const dir = freshDir('growth');
  const log = openLog(dir);
  const rand = seededRandom(seed + 2);
  const rows: LatencyRow[] = [];
  // Every appended chunk, so the file position of an offset is known without touching the files.
  const placed: Placed[] = [];
  const plainFds = new Map<string, number>();
  let chunk = 0;
  let segmentCount = log.segmentBaseOffsets().length;
  let segmentEnd = log.size;
  /** The segment file and position of the batch holding `offset`: where read()'s answer starts. */
  const locate = (offset: number): { path: string; position: number } => {
    let lo = 0;
    let hi = placed.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (placed[mid]!.firstOffset <= offset) lo = mid;
      else hi = mid - 1;
    }
    const p = placed[lo]!;
    const batch = Math.floor((offset - p.firstOffset) / w.records);
    const base = log.segmentBaseOffsets()[p.segment]!;
    return { path: join(dir, segmentFileName(base, '.log')), position: p.position + batchStarts[p.chunk]![batch]! };
  };
  const plainFd = (path: string): number => {
    let fd = plainFds.get(path);
    if (fd === undefined) {
      fd = openSync(path, 'r');
      plainFds.set(path, fd);
    }
    return fd;
  };
  const page = Buffer.allocUnsafe(PAGE_BYTES);
  try {
    for (const target of maxSizes) {
      const need = target - log.size + DISK_MARGIN;
      const free = freeBytes(root!);
      if (need > free) {
        rows.push({
          target,
          logBytes: log.size,
          segments: 0,
          lookup: [],
          total: [],
          plainPage: [],
          plainFetch: [],
          lookupWarm: [],
          skipped: `needs ${size(need)} free, ${size(free)} available`,
        });
        continue;
      }
      let sinceTick = 0;
      while (log.size < target) {
        const c = chunk++ % chunks.length;
        const bytes = chunks[c]!;
        const r = log.append(bytes);
        if (!r.ok) throw new Error(`append failed: ${r.message}`);
        const segments = log.segmentBaseOffsets().length;
        if (segments !== segmentCount) {
          segmentCount = segments;
          segmentEnd = 0;
        }
        placed.push({ firstOffset: Number(r.firstOffset), chunk: c, segment: segments - 1, position: segmentEnd });
        segmentEnd += bytes.length;
        sinceTick += bytes.length;
        if (sinceTick >= 64 * MB) {
          sinceTick = 0;
          await tick();
          if (process.stderr.isTTY) process.stderr.write(`filling the log: ${size(log.size)} of ${size(target)}\r`);
        }
      }
      if (process.stderr.isTTY) process.stderr.write(' '.repeat(60) + '\r');
      await tick();
      const start = Number(log.logStartOffset);
      const span = Number(log.logEndOffset) - start;
      const row: LatencyRow = {
        target,
        logBytes: log.size,
        segments: log.segmentBaseOffsets().length,
        lookup: [],
        total: [],
        plainPage: [],
        plainFetch: [],
        lookupWarm: [],
      };
      // Every position is read by both the log and the plain preads. Whichever
      // goes first may pay for bringing the page into the page cache, and the
      // other then finds it there, so they take turns going first and each
      // one's figures come from the positions where it went first: twice the
      // positions, `latencySamples` first reads each, after untimed warm-ups.
      for (let i = 0; i < WARMUP_READS + 2 * mode.latencySamples; i++) {
        const offset = start + Math.floor(rand() * span);
        const { path, position } = locate(offset);
        const fd = plainFd(path);
        const timeLog = (): { lookup: number; total: number } => {
          const t0 = performance.now();
          const r = log.read(BigInt(offset), FETCH_BYTES);
          const t1 = performance.now();
          if (!r.ok || r.size === 0) throw new Error(`random read at ${offset} returned nothing`);
          const buf = readRanges(r.records);
          const t2 = performance.now();
          if (buf.length !== r.size) throw new Error(`read at ${offset}: ${buf.length} bytes copied of ${r.size}`);
          const first = r.records[0]!;
          if (first.file.path !== path || first.position !== position) {
            throw new Error(`read at ${offset} answered from ${first.file.path} at ${first.position}, expected ${path} at ${position}`);
          }
          return { lookup: (t1 - t0) * 1000, total: (t2 - t0) * 1000 };
        };
        const timePlain = (): { page: number; fetch: number } => {
          const t0 = performance.now();
          const n = readSync(fd, page, 0, PAGE_BYTES, position);
          const t1 = performance.now();
          const buf = Buffer.allocUnsafe(FETCH_BYTES);
          const m = readSync(fd, buf, 0, FETCH_BYTES, position);
          const t2 = performance.now();
          if (n === 0 || m === 0) throw new Error(`${path}: nothing at ${position}`);
          return { page: (t1 - t0) * 1000, fetch: (t2 - t1) * 1000 };
        };
        const logFirst = i % 2 === 0;
        if (logFirst) {
          const l = timeLog();
          timePlain();
          if (i >= WARMUP_READS) {
            row.lookup.push(l.lookup);
            row.total.push(l.total);
          }
        } else {
          const p = timePlain();
          const l = timeLog();
          if (i >= WARMUP_READS) {
            row.plainPage.push(p.page);
            row.plainFetch.push(p.fetch);
            row.lookupWarm.push(l.lookup);
          }
        }
      }
      rows.push(row);
    }
  } finally {
    for (const fd of plainFds.values()) closeSync(fd);
    closeLog(log);
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

// ---------------------------------------------------------------- main

function parseArgs(argv: readonly string[]): Mode {
  let mode = MODES.default;
  for (const arg of argv) {
    if (arg === '--quick') mode = MODES.quick;
    else if (arg === '--full') mode = MODES.full;
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: node dist/bench/storage.js [--quick | --full]   (temporary files go to $TMPDIR or /tmp)');
      process.exit(0);
    } else throw new Error(`unknown argument "${arg}"; usage: node dist/bench/storage.js [--quick | --full]`);
  }
  return mode;
}

async function main(): Promise<void> {
  const mode = parseArgs(process.argv.slice(2));
  const seed = 20240601;
  root = mkdtempSync(join(tmpdir(), 'gregor-bench-storage-'));
  const cpu = cpus();
  console.log(
    `gregor storage benchmark, ${mode.name} mode: ${size(mode.throughputBytes)} per throughput run, ${mode.runs} runs each (medians), ` +
      `read latency at ${mode.growthSizes.map(size).join(', ')}`,
  );
  console.log(
    `node ${process.version}, ${platform()} ${arch()}, ${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown'}), ` +
      `${(totalmem() / 2 ** 30).toFixed(1)} GiB memory; temporary files in ${root} (${size(freeBytes(root))} free)`,
  );
  const t0 = performance.now();

  const rows: ThroughputRow[] = [];
  for (const w of WORKLOADS) {
    const need = 2 * mode.throughputBytes + DISK_MARGIN;
    if (freeBytes(root) < need) {
      console.log(`skipping throughput of ${w.name}: needs ${size(need)} free, ${size(freeBytes(root))} available`);
      continue;
    }
    if (process.stderr.isTTY) process.stderr.write(`throughput: ${w.name}...\r`);
    rows.push(await throughput(w, mode, seed));
  }
  if (process.stderr.isTTY) process.stderr.write(' '.repeat(60) + '\r');

  console.log('');
  console.log(
    `append (PartitionLog.append in place, as Produce does, one batch per call) vs plain write (fs.writeSync of the same bytes, same chunks); page cache, no fsync`,
  );
  console.log(`copying: PartitionLog.append with the validator copying its input (the default)`);
  table(
    ['workload', 'batch B', 'append MB/s', 'batches/s', 'plain MB/s', 'batches/s', 'append/plain', 'copying MB/s', 'copying/plain', 'validator alone MB/s'],
    rows.map((r) => [
      r.workload.name,
      fmt(r.batchBytes),
      fmt(mbps(r.append)),
      fmt(perSec(r.append)),
      fmt(mbps(r.plain)),
      fmt(perSec(r.plain)),
      pct(mbps(r.append) / mbps(r.plain)),
      fmt(mbps(r.copyingAppend)),
      pct(mbps(r.copyingAppend) / mbps(r.plain)),
      fmt(mbps(r.validate)),
    ]),
  );

  console.log('');
  console.log(`sequential read of the whole log: read(offset, 1 MiB) + readRanges vs fs.readSync of the segment file in 1 MiB chunks`);
  table(
    ['workload', 'log MB', 'log read MB/s', 'fetches/s', 'plain read MB/s', 'log/plain'],
    rows.map((r) => [
      r.workload.name,
      fmt(r.logRead.bytes / MB),
      fmt(mbps(r.logRead)),
      fmt(perSec(r.logRead)),
      fmt(mbps(r.plainRead)),
      pct(mbps(r.logRead) / mbps(r.plainRead)),
    ]),
  );

  const latency = await growth(mode, seed, mode.growthSizes);
  console.log('');
  console.log(
    `read latency at random offsets as the log grows (10 x 1 KB batches, 1 MiB maxBytes), microseconds; ${2 * mode.latencySamples} random positions per size, ` +
      `each read by the log and by plain preads of its segment file, the two taking turns going first; each figure is over the ${mode.latencySamples} positions where its subject went first`,
  );
  console.log(
    `4K pread: fs.readSync of 4 KiB at the file position read() answers from; 1M pread: 1 MiB there, right after; read() warm: read() right after those two; read()/4K: ratio of medians`,
  );
  table(
    [
      'log size',
      'segments',
      'read() median',
      'read() p99',
      'read+copy median',
      'read+copy p99',
      '4K pread median',
      '4K pread p99',
      '1M pread median',
      '1M pread p99',
      'read()/4K',
      'read+copy/1M',
      'read() warm median',
    ],
    latency.map((l) =>
      l.skipped
        ? [size(l.target), '-', 'skipped:', l.skipped, '', '', '', '', '', '', '', '', '']
        : [
            size(l.logBytes),
            String(l.segments),
            fmt(median(l.lookup), 1),
            fmt(percentile(l.lookup, 99), 1),
            fmt(median(l.total), 1),
            fmt(percentile(l.total, 99), 1),
            fmt(median(l.plainPage), 1),
            fmt(percentile(l.plainPage, 99), 1),
            fmt(median(l.plainFetch), 1),
            fmt(percentile(l.plainFetch, 99), 1),
            fmt(median(l.lookup) / median(l.plainPage), 1),
            fmt(median(l.total) / median(l.plainFetch), 2),
            fmt(median(l.lookupWarm), 1),
          ],
    ),
  );

  console.log('');
  for (const r of rows) {
    const ratio = mbps(r.append) / mbps(r.plain);
    console.log(
      `goal: append at least ${pct(GOAL_APPEND_RATIO)} of plain write, ${r.workload.name}: ${pct(ratio)} ${ratio >= GOAL_APPEND_RATIO ? 'meets the goal' : 'MISSES the goal'}`,
    );
  }
  const measured = latency.filter((l) => !l.skipped);
  if (measured.length >= 2) {
    const first = measured[0]!;
    const last = measured[measured.length - 1]!;
    console.log(
      `read() median at ${size(last.logBytes)} / at ${size(first.logBytes)}: ${fmt(median(last.lookup) / median(first.lookup), 2)}x ` +
        `(read+copy ${fmt(median(last.total) / median(first.total), 2)}x) for a log ${fmt(last.logBytes / first.logBytes)}x larger; ` +
        `plain 4 KiB pread ${fmt(median(last.plainPage) / median(first.plainPage), 2)}x, read() warm ${fmt(median(last.lookupWarm) / median(first.lookupWarm), 2)}x`,
    );
    console.log(
      `read()/4K pread (medians): ${measured.map((l) => `${fmt(median(l.lookup) / median(l.plainPage), 1)} at ${size(l.logBytes)}`).join(', ')}`,
    );
  }
  if (mode.name === 'full' && measured.some((l) => l.logBytes > totalmem() / 2)) {
    console.log('note: the largest log does not fit in half the memory; its random reads may have gone to the disk');
  }
  console.log(`total time ${fmt((performance.now() - t0) / 1000, 1)} s`);
}

main().then(
  () => cleanup(),
  (err: unknown) => {
    cleanup();
    console.error(`bench/storage: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);

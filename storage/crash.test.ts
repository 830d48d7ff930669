/**
 * Crash torture of the partition log with real processes.
 *
 * Each round starts dist/storage/crash-child.js (build first), which opens a
 * PartitionLog and appends seeded batches as fast as it can, printing an ack
 * line after every append() that returned. After a random 50-400 ms the child
 * gets SIGKILL; sometimes a second child is started on the same directory and
 * killed too, so its own recovery runs on top of the first crash. Then the log
 * is reopened here, without the clean-shutdown marker, and checked:
 *   - every acked append is there, at the offsets it was acked with, and its
 *     records are the ones sent (digest of keys, values, headers, timestamps);
 *   - the log end offset is past the last ack;
 *   - read() from offset 0 to the end serves only whole batches with valid
 *     CRCs, that decode, with consecutive offsets;
 *   - more appends land at the log end, and the log closes cleanly.
 * Rounds alternate between a fresh directory and one directory kept for the
 * whole run, so recovery also runs over logs that earlier rounds recovered,
 * appended to and closed. Configs vary: flush.messages 1 or the default, the
 * default or small segments (many rolls), and small index caps.
 *
 * SIGKILL ends the process but not the kernel: every write() that returned is
 * in the page cache and reaches the file. So this checks process crashes, not
 * power loss or torn writes on the disk (storage/log.test.ts covers those with
 * a faulty file system); a lost unsynced write cannot happen here.
 *
 *   CRASH_SEED=1234 npx vitest run storage/crash.test.ts         # replay a seed's choices
 *   CRASH_ROUNDS=200 CRASH_BUDGET_MS=300000 npx vitest run storage/crash.test.ts
 *
 * The seed fixes each round's config, child seeds and kill delays; where the
 * kill lands inside the child's work still depends on timing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../wire/seeded-random.js';
import {
  BATCH_HEADER_SIZE,
  BATCH_LENGTH,
  LAST_OFFSET_DELTA,
  LOG_OVERHEAD,
  MAGIC,
  RECORD_COUNT,
  batchCrcValid,
  decodeRecords,
} from '../wire/record-batch.js';
import { type CrashChildOptions, appendDigest, appendGenerator, batchDigest, crashChildConfig, splitBatches } from './crash-child.js';
import type { LogConfig } from './log-config.js';
import { CLEAN_SHUTDOWN_FILE, PartitionLog, readRanges } from './log.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CHILD = join(ROOT, 'dist', 'storage', 'crash-child.js');
const SEED = process.env.CRASH_SEED !== undefined ? Number(process.env.CRASH_SEED) >>> 0 : (Date.now() ^ (process.pid << 16)) >>> 0;
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 20);
/** No new round starts after this long. */
const BUDGET_MS = Number(process.env.CRASH_BUDGET_MS ?? 25000);
/** A child stops by itself after this long, should the kill never come. */
const CHILD_MAX_MS = 10000;
const READY_LIMIT_MS = 10000;

const where = (extra: string): string => `seed ${SEED} (replay with CRASH_SEED=${SEED}), ${extra}`;

interface Ack {
  first: bigint;
  last: bigint;
  digest: string;
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-crash-'));
  dirs.push(d);
  return d;
}

/** Why the built child cannot be used, or null: it is missing or older than the sources it runs. */
function distProblem(): string | null {
  if (!existsSync(CHILD)) return `${CHILD} is missing; run \`npm run build\` first`;
  const sources = [
    ...readdirSync(join(ROOT, 'storage'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => join('storage', f)),
    join('wire', 'record-batch.ts'),
  ];
  for (const src of sources) {
    const built = join(ROOT, 'dist', src.replace(/\.ts$/, '.js'));
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(join(ROOT, src)).mtimeMs) {
      return `${built} is missing or older than ${src}; run \`npm run build\` first`;
    }
  }
  return null;
}

interface ChildRun {
  acks: Ack[];
  readyEnd: bigint | null;
  signal: NodeJS.Signals | null;
  code: number | null;
  stderr: string;
}

/** Starts a child on `dir`, SIGKILLs it `killAfterMs` after it reports ready, and collects its acks. */
function runChild(dir: string, opts: CrashChildOptions, killAfterMs: number): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CHILD, dir, JSON.stringify(opts)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    let out = '';
    let stderr = '';
    let readyEnd: bigint | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    const readyTimer = setTimeout(() => proc.kill('SIGKILL'), READY_LIMIT_MS);
    proc.stdout!.setEncoding('latin1');
    proc.stdout!.on('data', (chunk: string) => {
      if (readyEnd === null) {
        const m = /^ready (\d+)\n/.exec(out + chunk);
        if (m) {
          readyEnd = BigInt(m[1]!);
          clearTimeout(readyTimer);
          killTimer = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
        }
      }
      out += chunk;
    });
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      clearTimeout(readyTimer);
      clearTimeout(killTimer);
      children.delete(proc);
      const acks: Ack[] = [];
      // A line without its newline was cut by the kill and never counts.
      for (const text of out.split('\n').slice(0, -1)) {
        const m = /^ack (\d+) (\d+) ([0-9a-f]{64})$/.exec(text);
        if (m) acks.push({ first: BigInt(m[1]!), last: BigInt(m[2]!), digest: m[3]! });
        else if (!/^(ready \d+|done)$/.test(text)) {
          reject(new Error(`unexpected line from the child: ${JSON.stringify(text)}`));
          return;
        }
      }
      resolve({ acks, readyEnd, signal, code, stderr });
    });
  });
}

interface BatchSeen {
  last: bigint;
  digest: string;
}

/**
 * Reads the whole log through read() in fetch-sized steps and checks every
 * batch it serves. Returns the batches by base offset.
 */
function readWholeLog(log: PartitionLog, ctx: string): Map<bigint, BatchSeen> {
  const seen = new Map<bigint, BatchSeen>();
  expect(log.logStartOffset, ctx).toBe(0n);
  let offset = 0n;
  const end = log.logEndOffset;
  for (let fetches = 0; offset < end; fetches++) {
    if (fetches > 1_000_000) throw new Error(`${ctx}: read() made no progress at offset ${offset}`);
    const r = log.read(offset, 1 << 20);
    if (!r.ok) throw new Error(`${ctx}: read(${offset}) failed with error ${r.errorCode}`);
    if (r.size === 0) throw new Error(`${ctx}: read(${offset}) returned nothing below the log end ${end}`);
    const buf = readRanges(r.records);
    for (let at = 0; at < buf.length; ) {
      const here = `${ctx}: batch at offset ${offset} (byte ${at} of a ${buf.length}-byte read)`;
      if (buf.length - at < BATCH_HEADER_SIZE) throw new Error(`${here}: only ${buf.length - at} bytes left`);
      const size = buf.readInt32BE(at + BATCH_LENGTH) + LOG_OVERHEAD;
      if (size < BATCH_HEADER_SIZE || size > buf.length - at) throw new Error(`${here}: size ${size} does not fit`);
      if (buf.readInt8(at + MAGIC) !== 2) throw new Error(`${here}: magic ${buf.readInt8(at + MAGIC)}`);
      if (!batchCrcValid(buf, at, size)) throw new Error(`${here}: CRC mismatch`);
      const base = buf.readBigInt64BE(at);
      if (base !== offset) throw new Error(`${here}: base offset ${base}, expected ${offset} (offsets not consecutive)`);
      const last = base + BigInt(buf.readInt32BE(at + LAST_OFFSET_DELTA));
      const batch = buf.subarray(at, at + size);
      const decoded = decodeRecords(batch);
      if (!decoded.ok) throw new Error(`${here}: ${decoded.error}`);
      const count = buf.readInt32BE(at + RECORD_COUNT);
      if (decoded.records.length !== count || BigInt(count) !== last - base + 1n) {
        throw new Error(`${here}: ${decoded.records.length} records, count ${count}, offsets ${base}..${last}`);
      }
      decoded.records.forEach((rec, i) => {
        if (rec.offsetDelta !== i) throw new Error(`${here}: record ${i} has offset delta ${rec.offsetDelta}`);
      });
      seen.set(base, { last, digest: batchDigest(batch) });
      offset = last + 1n;
      at += size;
    }
  }
  expect(offset, `${ctx}: reading ended past the log end`).toBe(end);
  return seen;
}

/** Every ack must be served whole: batches tiling [first, last] whose digests match. */
function checkAcks(seen: Map<bigint, BatchSeen>, acks: readonly Ack[], ctx: string): void {
  for (const ack of acks) {
    const digests: string[] = [];
    let offset = ack.first;
    while (offset <= ack.last) {
      const b = seen.get(offset);
      if (!b) throw new Error(`${ctx}: acked append ${ack.first}..${ack.last} has no batch starting at ${offset}`);
      digests.push(b.digest);
      offset = b.last + 1n;
    }
    if (offset !== ack.last + 1n) throw new Error(`${ctx}: acked append ${ack.first}..${ack.last} ends inside a batch ending at ${offset - 1n}`);
    if (appendDigest(digests) !== ack.digest) throw new Error(`${ctx}: acked append ${ack.first}..${ack.last} holds other records than were sent`);
  }
}

/** Reopens after the crash, checks everything, appends a little and closes cleanly. */
function verifyAndContinue(dir: string, config: LogConfig, acks: Ack[], seed: number, ctx: string): { end: bigint; batches: number } {
  expect(existsSync(join(dir, CLEAN_SHUTDOWN_FILE)), `${ctx}: clean-shutdown marker after SIGKILL`).toBe(false);
  const log = PartitionLog.open(dir, config);
  try {
    const lastAcked = acks.reduce((m, a) => (a.last > m ? a.last : m), -1n);
    expect(log.logEndOffset >= lastAcked + 1n, `${ctx}: log end ${log.logEndOffset} but offset ${lastAcked} was acked`).toBe(true);
    const seen = readWholeLog(log, ctx);
    checkAcks(seen, acks, ctx);
    // The log takes appends again, right at its end.
    const next = appendGenerator(seed, `parent-${seed}`);
    for (let appended = 0; appended < 5; ) {
      const records = next();
      // As in the child: an append larger than a segment is refused by design, not by damage.
      if (records.length > config.segmentBytes) continue;
      appended++;
      const end = log.logEndOffset;
      const r = log.append(records);
      if (!r.ok) throw new Error(`${ctx}: append after recovery refused: ${r.message}`);
      expect(r.firstOffset, ctx).toBe(end);
      acks.push({ first: r.firstOffset, last: r.lastOffset, digest: appendDigest(splitBatches(records).map(batchDigest)) });
    }
    checkAcks(readWholeLog(log, `${ctx}, after more appends`), acks.slice(-5), `${ctx}, after more appends`);
    return { end: log.logEndOffset, batches: seen.size };
  } finally {
    log.close();
    expect(existsSync(join(dir, CLEAN_SHUTDOWN_FILE)), `${ctx}: no clean-shutdown marker after close`).toBe(true);
  }
}

describe('partition log survives SIGKILL', () => {
  it(
    'keeps every acknowledged append across repeated kills and recoveries',
    async () => {
      const problem = distProblem();
      if (problem) throw new Error(problem);
      const rand = seededRandom(SEED);
      const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
      const shared = tempDir();
      const sharedAcks: Ack[] = [];
      const started = performance.now();
      const stats = { rounds: 0, kills: 0, acks: 0, roundsWithAcks: 0 };
      for (let round = 0; round < ROUNDS && performance.now() - started < BUDGET_MS; round++) {
        const reuse = round % 2 === 1;
        const dir = reuse ? shared : tempDir();
        const acks = reuse ? sharedAcks : [];
        const opts: CrashChildOptions = {
          seed: int(0, 0x7fffffff),
          tag: `r${round}`,
          maxMs: CHILD_MAX_MS,
          ...(rand() < 0.25 ? { flushMessages: 1 } : {}),
          ...(rand() < 0.4 ? { segmentBytes: int(20_000, 400_000) } : {}),
          ...(rand() < 0.2 ? { segmentIndexBytes: 8 * int(2, 20) } : {}),
        };
        const config = crashChildConfig(opts);
        const kills = rand() < 0.25 ? 2 : 1;
        let roundAcks = 0;
        for (let k = 0; k < kills; k++) {
          const delay = int(50, 400);
          const ctx = where(`round ${round} (${reuse ? 'reused' : 'fresh'} dir ${dir}), child ${k + 1} of ${kills}, options ${JSON.stringify(opts)}, kill after ${delay} ms`);
          const run = await runChild(dir, { ...opts, seed: opts.seed + k, tag: `${opts.tag}k${k}` }, delay);
          if (run.signal !== 'SIGKILL') throw new Error(`${ctx}: child ended with ${run.code ?? run.signal} instead of SIGKILL; stderr: ${run.stderr}`);
          if (run.readyEnd === null) throw new Error(`${ctx}: child never reported ready; stderr: ${run.stderr}`);
          // The child opened the log where the previous process (or this test) left it.
          const expectedStart = acks.length ? acks.reduce((m, a) => (a.last > m ? a.last : m), -1n) + 1n : 0n;
          expect(run.readyEnd >= expectedStart, `${ctx}: child opened at ${run.readyEnd}, below ${expectedStart}`).toBe(true);
          acks.push(...run.acks);
          roundAcks += run.acks.length;
          stats.kills++;
        }
        const ctx = where(`round ${round} (${reuse ? 'reused' : 'fresh'} dir ${dir}), options ${JSON.stringify(opts)}`);
        verifyAndContinue(dir, config, acks, opts.seed ^ 0x5a5a5a5a, ctx);
        stats.rounds++;
        stats.acks += roundAcks;
        if (roundAcks > 0) stats.roundsWithAcks++;
        if (!reuse) rmSync(dir, { recursive: true, force: true });
      }
      console.log(
        `crash torture: ${where(`${stats.rounds} rounds, ${stats.kills} kills, ${stats.acks} acked appends checked`)}, ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
      expect(stats.rounds).toBeGreaterThan(0);
      // A kill that always lands before the first append would test nothing.
      expect(stats.roundsWithAcks, where('rounds in which the child acked anything')).toBeGreaterThan(stats.rounds / 2);
    },
    120_000,
  );
});

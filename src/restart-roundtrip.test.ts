/**
 * What a real client wrote survives a restart of the real broker process:
 * kcat (librdkafka 2.0.2, acks=all) writes keyed records with headers to two
 * partitions of a `bin/gregor start` process on 127.0.0.1, one codec per
 * partition; the broker is stopped with SIGTERM and started again on the same
 * data directory, and kcat reads back every record at the same offset with the
 * same key, value, headers and timestamp. Then more records are appended,
 * acknowledged, and the broker is SIGKILLed straight after the last
 * acknowledgement; after a restart every acknowledged record is there too, at
 * the offsets that follow the first round's.
 *
 * SIGKILL keeps the kernel's page cache, so this checks a process crash, not a
 * power loss (see produce-crash.test.ts and storage's crash tests for torn and
 * unsynced writes). Fails with an install hint when /usr/bin/kcat is missing.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTRIBUTES, BATCH_LENGTH, COMPRESSION_MASK, Compression, LOG_OVERHEAD, readBatchHeader } from '../wire/record-batch.js';
import { DEFAULT_LOG_CONFIG } from '../storage/log-config.js';
import { PartitionLog } from '../storage/log.js';
import { BrokerProcess, bundleProblem } from './test-utils.js';

const KCAT = '/usr/bin/kcat';
const TOPIC = 'restart';
const KCAT_MS = 20_000;

/** Runs kcat without blocking the event loop; rejects on a non-zero exit or after KCAT_MS. */
function kcat(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(KCAT, args, { timeout: KCAT_MS, encoding: 'utf8', maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kcat ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
    child.stdin!.end(input ?? '');
  });
}

interface Message {
  partition: number;
  offset: number;
  key: string;
  value: string;
  /** Name, value pairs flattened as kcat's JSON gives them; a null value stays null. */
  headers: (string | null)[] | null;
}

/** One kcat run's worth of messages: the headers kcat -H puts on each. */
interface Group {
  headers: [string, string | null][];
  count: number;
}

/**
 * Header sets, one kcat run each: none, one, a repeated name (order kept), an
 * empty and a null value, a non-ASCII name and value.
 */
const GROUPS = (count: number): Group[] => [
  { headers: [], count },
  { headers: [['trace', 'abc']], count },
  { headers: [['dup', 'first'], ['dup', 'second'], ['other', 'x']], count },
  { headers: [['empty', ''], ['nullv', null]], count },
  { headers: [['ключ', 'значение']], count },
];

/** Values of varied length and content, some empty; never ':' (kcat's key delimiter) or a newline. */
function value(round: number, partition: number, i: number): string {
  if (i % 97 === 13) return '';
  const filler = ((i * 2654435761) >>> 0).toString(16);
  return `v${round}.${partition}.${i} ${filler.repeat(1 + (i % 23))}${'z'.repeat(i % 300)}`;
}

/**
 * Produces `perGroup` messages per header group to `partition` with `codec`,
 * acks=all, one kcat run per group, and returns what each should read back as,
 * offsets counted on from `firstOffset`.
 */
async function produce(bootstrap: string, round: number, partition: number, codec: string, perGroup: number, firstOffset: number): Promise<Message[]> {
  const sent: Message[] = [];
  let offset = firstOffset;
  for (const [g, group] of GROUPS(perGroup).entries()) {
    const lines: string[] = [];
    for (let i = 0; i < group.count; i++) {
      const n = g * perGroup + i;
      const m: Message = {
        partition,
        offset: offset++,
        key: `key-${round}-${partition}-${n}`,
        value: value(round, partition, n),
        headers: group.headers.length > 0 ? group.headers.flat() : null,
      };
      sent.push(m);
      lines.push(`${m.key}:${m.value}`);
    }
    const headerArgs = group.headers.flatMap(([k, v]) => ['-H', v === null ? k : `${k}=${v}`]);
    await kcat(
      ['-P', '-b', bootstrap, '-t', TOPIC, '-p', String(partition), '-K', ':', '-z', codec, '-X', 'acks=all', '-X', 'linger.ms=20', ...headerArgs],
      lines.join('\n') + '\n',
    );
  }
  return sent;
}

interface Consumed extends Message {
  tstype: string;
  ts: number;
}

/** Everything in `partition` from the beginning to its end, as kcat -J prints it. */
async function consume(bootstrap: string, partition: number): Promise<Consumed[]> {
  const out = await kcat(['-C', '-b', bootstrap, '-t', TOPIC, '-p', String(partition), '-o', 'beginning', '-e', '-J', '-q']);
  return out
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const j = JSON.parse(l) as { partition: number; offset: number; key: string; payload: string; headers?: (string | null)[]; tstype: string; ts: number };
      return { partition: j.partition, offset: j.offset, key: j.key, value: j.payload, headers: j.headers ?? null, tstype: j.tstype, ts: j.ts };
    });
}

const withoutTime = ({ tstype: _t, ts: _s, ...m }: Consumed): Message => m;

/**
 * How many records of `partition`'s log below and from `split` each codec
 * holds, by stored batch; the broker must be stopped. Offsets must run without
 * a gap from the log start to its end.
 */
function storedCodecs(dataDir: string, partition: number, split: bigint): { below: Map<number, number>; from: Map<number, number> } {
  const log = PartitionLog.open(join(dataDir, `${TOPIC}-${partition}`), DEFAULT_LOG_CONFIG);
  const below = new Map<number, number>();
  const from = new Map<number, number>();
  try {
    let offset = log.logStartOffset;
    while (offset < log.logEndOffset) {
      const buf = log.readBuffer(offset, 4 << 20);
      if (buf === null || buf.length === 0) throw new Error(`partition ${partition}: nothing to read at ${offset}`);
      for (let pos = 0; pos + LOG_OVERHEAD <= buf.length; ) {
        const size = LOG_OVERHEAD + buf.readInt32BE(pos + BATCH_LENGTH);
        if (pos + size > buf.length) break;
        const h = readBatchHeader(buf, pos);
        if (h.baseOffset !== offset) throw new Error(`partition ${partition}: batch at ${h.baseOffset} where ${offset} was next`);
        const counts = h.baseOffset < split ? below : from;
        const codec = buf.readInt16BE(pos + ATTRIBUTES) & COMPRESSION_MASK;
        counts.set(codec, (counts.get(codec) ?? 0) + h.recordCount);
        offset = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n;
        pos += size;
      }
    }
  } finally {
    log.close();
  }
  return { below, from };
}

/**
 * librdkafka sends a batch uncompressed when compressing would not make it
 * smaller (a lone small record, say), so a few records may be stored without a
 * codec; the rest must be in the one asked for.
 */
function expectCodec(counts: Map<number, number>, codec: Compression, total: number): void {
  expect([...counts.keys()].filter((c) => c !== codec && c !== Compression.None)).toEqual([]);
  expect((counts.get(codec) ?? 0) + (counts.get(Compression.None) ?? 0)).toBe(total);
  expect(counts.get(codec) ?? 0).toBeGreaterThanOrEqual(total * 0.9);
}

describe('kcat records across a broker restart', () => {
  beforeAll(() => {
    if (!existsSync(KCAT)) throw new Error('this test drives kcat: apt-get install kcat (.ci/run does)');
  });
  const dirs: string[] = [];
  const live: BrokerProcess[] = [];

  beforeAll(() => {
    const problem = bundleProblem();
    if (problem) throw new Error(problem);
  });

  afterAll(async () => {
    await Promise.all(live.map((b) => b.stop('SIGKILL').catch(() => {})));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('keeps offsets, keys, values, headers and timestamps over SIGTERM, and every acknowledged record over SIGKILL', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gregor-restart-'));
    dirs.push(dataDir);
    const start = async (): Promise<{ broker: BrokerProcess; bootstrap: string }> => {
      const broker = new BrokerProcess(dataDir, { 'num.partitions': '2' });
      live.push(broker);
      return { broker, bootstrap: await broker.ready() };
    };
    const consumeAll = async (bootstrap: string): Promise<Consumed[]> => [...(await consume(bootstrap, 0)), ...(await consume(bootstrap, 1))];

    // Round 1: 2 partitions x 5 groups x 500 = 5,000 records, gzip in partition 0, lz4 in 1.
    let { broker, bootstrap } = await start();
    const t0 = Date.now();
    const round1 = [...(await produce(bootstrap, 1, 0, 'gzip', 500, 0)), ...(await produce(bootstrap, 1, 1, 'lz4', 500, 0))];
    const t1 = Date.now();
    const before = await consumeAll(bootstrap);
    expect(before.map(withoutTime)).toEqual(round1);
    for (const m of before) {
      expect(m.tstype).toBe('create');
      expect(m.ts).toBeGreaterThanOrEqual(t0 - 1000);
      expect(m.ts).toBeLessThanOrEqual(t1 + 1000);
    }
    expect(await broker.stop('SIGTERM'), broker.output()).toBe(0);

    ({ broker, bootstrap } = await start());
    // A clean stop leaves nothing to recover.
    expect(broker.loaded()).toEqual({ logs: 2, recovered: 0 });
    const afterTerm = await consumeAll(bootstrap);
    expect(afterTerm.length).toBe(before.length);
    expect(afterTerm).toEqual(before);

    // Round 2 appends 2 x 5 x 200 = 2,000 more, snappy and zstd, and the broker is killed as soon as kcat has its last ack.
    const t2 = Date.now();
    const round2 = [...(await produce(bootstrap, 2, 0, 'snappy', 200, 2500)), ...(await produce(bootstrap, 2, 1, 'zstd', 200, 2500))];
    const t3 = Date.now();
    expect(await broker.stop('SIGKILL')).toBe(null);

    ({ broker, bootstrap } = await start());
    expect(broker.loaded()).toEqual({ logs: 2, recovered: 2 });
    const afterKill = await consumeAll(bootstrap);
    const old = afterKill.filter((m) => m.offset < 2500);
    const added = afterKill.filter((m) => m.offset >= 2500);
    expect(old).toEqual(before);
    expect(added.map(withoutTime)).toEqual(round2);
    for (const m of added) {
      expect(m.tstype).toBe('create');
      expect(m.ts).toBeGreaterThanOrEqual(t2 - 1000);
      expect(m.ts).toBeLessThanOrEqual(t3 + 1000);
    }
    expect(await broker.stop('SIGTERM'), broker.output()).toBe(0);

    // The codecs really were used, and the batches written before and after the kill meet at offset 2500.
    const p0 = storedCodecs(dataDir, 0, 2500n);
    const p1 = storedCodecs(dataDir, 1, 2500n);
    expectCodec(p0.below, Compression.Gzip, 2500);
    expectCodec(p0.from, Compression.Snappy, 1000);
    expectCodec(p1.below, Compression.Lz4, 2500);
    expectCodec(p1.from, Compression.Zstd, 1000);
  }, 30_000);
});

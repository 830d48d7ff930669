/**
 * The process that storage/crash.test.ts kills. Run from dist/ (`npm run build`):
 *
 *   node dist/storage/crash-child.js <dir> <json options>
 *
 * options: { seed, tag, flushMessages?, segmentBytes?, segmentIndexBytes?, maxMs }
 *
 * Opens the PartitionLog in <dir> (recovering it when the last process was
 * killed) and appends seeded batches of mixed sizes and codecs, one to four
 * batches per call, as fast as it can until it is killed or maxMs pass. It
 * writes to stdout:
 *
 *   ready <logEndOffset>                       once the log is open
 *   ack <firstOffset> <lastOffset> <digest>    after each append() returned
 *
 * An ack line is written with a synchronous write after append() returned, so
 * the parent only ever hears of appends the log reported done. `digest` is
 * appendDigest() of the batches as sent; the parent recomputes it from what
 * the reopened log serves for [firstOffset, lastOffset].
 */
import { createHash } from 'node:crypto';
import { writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { BATCH_LENGTH, Compression, LOG_OVERHEAD, buildBatch, decodeRecords, readBatchHeader } from '../wire/record-batch.js';
import { seededRandom } from '../wire/seeded-random.js';
import { logConfig } from './log-config.js';
import { PartitionLog } from './log.js';

export interface CrashChildOptions {
  seed: number;
  /** Goes into every key, so a batch can be traced to the process that wrote it. */
  tag: string;
  flushMessages?: number;
  segmentBytes?: number;
  segmentIndexBytes?: number;
  /** The child stops appending and exits on its own after this long. */
  maxMs: number;
}

/** The log config a child with these options runs with; the parent reopens with the same. */
export function crashChildConfig(o: CrashChildOptions): ReturnType<typeof logConfig> {
  return logConfig({
    ...(o.flushMessages !== undefined ? { flushMessages: o.flushMessages } : {}),
    ...(o.segmentBytes !== undefined ? { segmentBytes: o.segmentBytes } : {}),
    ...(o.segmentIndexBytes !== undefined ? { segmentIndexBytes: o.segmentIndexBytes } : {}),
  });
}

/**
 * SHA-256 (hex) of what a batch says, independent of where it sits in a log:
 * codec, record count, base timestamp and, per record, offset delta,
 * timestamp delta, key, value and headers. Base offset, leader epoch and CRC
 * are left out, since the log assigns them. Throws on a batch that does not decode.
 */
export function batchDigest(batch: Buffer): string {
  const h = readBatchHeader(batch);
  const decoded = decodeRecords(batch);
  if (!decoded.ok) throw new Error(`batch at offset ${h.baseOffset} does not decode: ${decoded.error}`);
  const hash = createHash('sha256');
  const num = (n: number | bigint): void => void hash.update(`${n};`);
  const bytes = (b: Buffer | null): void => {
    if (b === null) num(-1);
    else {
      num(b.length);
      hash.update(b);
    }
  };
  num(h.attributes & 0x07);
  num(h.recordCount);
  num(h.baseTimestamp);
  num(decoded.records.length);
  for (const r of decoded.records) {
    num(r.offsetDelta);
    num(r.timestampDelta);
    bytes(r.key);
    bytes(r.value);
    num(r.headers.length);
    for (const hd of r.headers) {
      bytes(Buffer.from(hd.key, 'utf8'));
      bytes(hd.value);
    }
  }
  return hash.digest('hex');
}

/** The digest of one append: of the batch digests, in order. */
export function appendDigest(batchDigests: readonly string[]): string {
  return createHash('sha256').update(batchDigests.join(',')).digest('hex');
}

/** Splits back-to-back batches. */
export function splitBatches(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < buf.length; ) {
    const size = buf.readInt32BE(at + BATCH_LENGTH) + LOG_OVERHEAD;
    out.push(buf.subarray(at, at + size));
    at += size;
  }
  return out;
}

const CODECS = [Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd];

/**
 * A seeded generator of appends: mostly small batches, some mid-sized, a few
 * of tens of kilobytes, about one in five compressed, one to four batches per append.
 */
export function appendGenerator(seed: number, tag: string): () => Buffer {
  const rand = seededRandom(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
  let seq = 0;
  const oneBatch = (): Buffer => {
    const kind = rand();
    const [count, lo, hi] = kind < 0.6 ? [int(1, 5), 0, 200] : kind < 0.95 ? [int(10, 60), 20, 600] : [int(1, 6), 4000, 40000];
    const compression = rand() < 0.2 ? CODECS[int(0, CODECS.length - 1)]! : Compression.None;
    const ts = BigInt(Date.now());
    const fill = int(0, 255);
    const records = Array.from({ length: count }, (_, i) => {
      const value = Buffer.alloc(int(lo, hi), fill ^ i);
      // Some variety inside the value, so codecs and CRCs see more than one byte value.
      for (let j = 0; j < value.length; j += 97) value[j] = int(0, 255);
      return {
        key: rand() < 0.1 ? null : `${tag}-${seq}-${i}`,
        value: rand() < 0.05 ? null : value,
        headers: rand() < 0.2 ? [{ key: 'h', value: `${seq}` }] : [],
        timestamp: ts + BigInt(int(0, 5)),
      };
    });
    seq++;
    return buildBatch({ records, compression });
  };
  return () => {
    const n = rand() < 0.8 ? 1 : int(2, 4);
    return n === 1 ? oneBatch() : Buffer.concat(Array.from({ length: n }, oneBatch));
  };
}

function line(text: string): void {
  const buf = Buffer.from(text + '\n');
  let done = 0;
  while (done < buf.length) done += writeSync(1, buf, done, buf.length - done);
}

function main(): void {
  const [dir, json] = process.argv.slice(2);
  if (!dir || !json) throw new Error('usage: crash-child.js <dir> <json options>');
  const opts = JSON.parse(json) as CrashChildOptions;
  const config = crashChildConfig(opts);
  const log = PartitionLog.open(dir, config);
  line(`ready ${log.logEndOffset}`);
  const next = appendGenerator(opts.seed, opts.tag);
  const deadline = performance.now() + opts.maxMs;
  while (performance.now() < deadline) {
    const records = next();
    // The log refuses an append larger than a segment; small-segment runs skip those.
    if (records.length > config.segmentBytes) continue;
    const digest = appendDigest(splitBatches(records).map(batchDigest));
    const r = log.append(records);
    if (!r.ok) throw new Error(`append refused: ${r.message}`);
    line(`ack ${r.firstOffset} ${r.lastOffset} ${digest}`);
  }
  log.close();
  line('done');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main();
  } catch (err) {
    process.stderr.write(`crash-child: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  }
}

/**
 * Offset checkpoint files, in the text layout Kafka uses for its
 * recovery-point, log-start-offset and replication-offset checkpoints: a
 * version line (0), a count line, then one `key offset` line per entry.
 *
 * gregor keeps one such file per partition directory, with the three offsets
 * of that partition as its entries, rather than one file per log directory
 * listing every partition. A partition log then owns everything it needs to
 * reopen, and truncation or DeleteRecords can make its own offsets durable at
 * once without coordinating with the other partitions; the cost is one small
 * atomic write per partition when a periodic checkpoint runs.
 *
 * A file that does not parse reads as absent: the log then falls back to the
 * safe choices (recover every segment, start at the first segment).
 */
import { join } from 'node:path';
import { type Fs, readWholeFile, writeFileAtomic } from './fs.js';

const VERSION = 0;

export function formatOffsetCheckpoint(entries: ReadonlyMap<string, bigint>): Buffer {
  const lines = [String(VERSION), String(entries.size)];
  for (const [key, offset] of entries) {
    if (/\s/.test(key) || key === '') throw new Error(`checkpoint key ${JSON.stringify(key)} must be one word`);
    lines.push(`${key} ${offset}`);
  }
  return Buffer.from(lines.join('\n') + '\n');
}

/** The entries of a checkpoint, or null when the text is not a checkpoint of this version. */
export function parseOffsetCheckpoint(text: string): Map<string, bigint> | null {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (lines.length < 2 || lines[0] !== String(VERSION)) return null;
  const count = Number(lines[1]);
  if (!Number.isInteger(count) || count < 0 || lines.length !== count + 2) return null;
  const out = new Map<string, bigint>();
  for (const line of lines.slice(2)) {
    const m = /^(\S+) (-?\d+)$/.exec(line);
    if (!m) return null;
    out.set(m[1]!, BigInt(m[2]!));
  }
  return out;
}

export function writeOffsetCheckpoint(fs: Fs, path: string, entries: ReadonlyMap<string, bigint>): void {
  writeFileAtomic(fs, path, formatOffsetCheckpoint(entries));
}

export function readOffsetCheckpoint(fs: Fs, path: string): Map<string, bigint> | null {
  const bytes = readWholeFile(fs, path);
  return bytes === null ? null : parseOffsetCheckpoint(bytes.toString('utf8'));
}

export const PARTITION_CHECKPOINT_FILE = 'partition.checkpoint';

export interface PartitionCheckpoint {
  /** Every offset below it is on disk (fsynced) with its indexes. */
  recoveryPoint: bigint;
  logStartOffset: bigint;
  highWatermark: bigint;
}

const KEYS = { recoveryPoint: 'recovery-point', logStartOffset: 'log-start-offset', highWatermark: 'high-watermark' } as const;

export function writePartitionCheckpoint(fs: Fs, dir: string, cp: PartitionCheckpoint): void {
  writeOffsetCheckpoint(
    fs,
    join(dir, PARTITION_CHECKPOINT_FILE),
    new Map([
      [KEYS.recoveryPoint, cp.recoveryPoint],
      [KEYS.logStartOffset, cp.logStartOffset],
      [KEYS.highWatermark, cp.highWatermark],
    ]),
  );
}

/** The partition's checkpoint, or null when it is missing or unreadable. */
export function readPartitionCheckpoint(fs: Fs, dir: string): PartitionCheckpoint | null {
  const entries = readOffsetCheckpoint(fs, join(dir, PARTITION_CHECKPOINT_FILE));
  if (!entries) return null;
  const recoveryPoint = entries.get(KEYS.recoveryPoint);
  const logStartOffset = entries.get(KEYS.logStartOffset);
  const highWatermark = entries.get(KEYS.highWatermark);
  if (recoveryPoint === undefined || logStartOffset === undefined || highWatermark === undefined) return null;
  return { recoveryPoint, logStartOffset, highWatermark };
}

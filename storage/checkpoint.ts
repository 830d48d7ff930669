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
 * The cleaner's progress is the exception: like Kafka, it lives in one
 * `cleaner-offset-checkpoint` per log directory, with `topic partition
 * offset` lines, since the log manager, not the partition log, owns the
 * cleaner and writes it once per compaction pass, not per partition.
 *
 * A file that does not parse reads as absent: the log then falls back to the
 * safe choices (recover every segment, start at the first segment; for the
 * cleaner, treat the whole log as dirty).
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

export const CLEANER_OFFSET_CHECKPOINT_FILE = 'cleaner-offset-checkpoint';

export interface TopicPartitionOffset {
  topic: string;
  partition: number;
  offset: bigint;
}

/**
 * Kafka's per-log-directory checkpoint layout: the version line, the count
 * line, then `topic partition offset` per entry.
 *
 * Example: [{ topic: 'orders', partition: 3, offset: 120n }] -> "0\n1\norders 3 120\n".
 */
export function formatTopicPartitionCheckpoint(entries: readonly TopicPartitionOffset[]): Buffer {
  const lines = [String(VERSION), String(entries.length)];
  for (const { topic, partition, offset } of entries) {
    if (/\s/.test(topic) || topic === '') throw new Error(`checkpoint topic ${JSON.stringify(topic)} must be one word`);
    lines.push(`${topic} ${partition} ${offset}`);
  }
  return Buffer.from(lines.join('\n') + '\n');
}

/** The entries of a topic-partition checkpoint, or null when the text is not one of this version. */
export function parseTopicPartitionCheckpoint(text: string): TopicPartitionOffset[] | null {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (lines.length < 2 || lines[0] !== String(VERSION)) return null;
  const count = Number(lines[1]);
  if (!Number.isInteger(count) || count < 0 || lines.length !== count + 2) return null;
  const out: TopicPartitionOffset[] = [];
  for (const line of lines.slice(2)) {
    const m = /^(\S+)\s+(\d{1,10})\s+(-?\d+)$/.exec(line);
    if (!m) return null;
    out.push({ topic: m[1]!, partition: Number(m[2]), offset: BigInt(m[3]!) });
  }
  return out;
}

/** Writes `<dataDir>/cleaner-offset-checkpoint` atomically. */
export function writeCleanerOffsetCheckpoint(fs: Fs, dataDir: string, entries: readonly TopicPartitionOffset[]): void {
  writeFileAtomic(fs, join(dataDir, CLEANER_OFFSET_CHECKPOINT_FILE), formatTopicPartitionCheckpoint(entries));
}

/** The cleaner checkpoint of a log directory, or null when it is missing or unreadable. */
export function readCleanerOffsetCheckpoint(fs: Fs, dataDir: string): TopicPartitionOffset[] | null {
  const bytes = readWholeFile(fs, join(dataDir, CLEANER_OFFSET_CHECKPOINT_FILE));
  return bytes === null ? null : parseTopicPartitionCheckpoint(bytes.toString('utf8'));
}

/**
 * A partition's leader epochs: for each epoch in which the log took data (or
 * whose leader this broker became), the first offset of that epoch. Kept in
 * `leader-epoch-checkpoint` in the partition directory, in Kafka's text layout:
 * a version line (0), a count line, then one `epoch startOffset` line per
 * entry, oldest first. The file is rewritten atomically (temp file, fsync,
 * rename, directory fsync) whenever an entry is added or truncation changes
 * the entries, so it never lacks an entry for data that reached the log.
 *
 * Invariant: entries grow strictly in both epoch and start offset. An entry
 * that would break it removes the entries it conflicts with, as in Kafka: a
 * new epoch starting at or before the start of older ones replaces them.
 *
 * Example: appends stamped epoch 0 at offsets 0..4 and epoch 3 from 5 give
 * entries [(0, 0), (3, 5)]; the file reads "0\n2\n0 0\n3 5\n". With the log
 * ending at 9, endOffsetFor(0, 9n) is { epoch: 0, endOffset: 5n } and
 * endOffsetFor(3, 9n) is { epoch: 3, endOffset: 9n }.
 */
import { join } from 'node:path';
import { type Fs, readWholeFile, writeFileAtomic } from './fs.js';

export const LEADER_EPOCH_CHECKPOINT_FILE = 'leader-epoch-checkpoint';

/** Kafka's answer for an epoch it knows nothing about (OffsetForLeaderEpoch). */
export const UNDEFINED_EPOCH = -1;
export const UNDEFINED_EPOCH_OFFSET = -1n;

const VERSION = 0;

export interface EpochEntry {
  readonly epoch: number;
  readonly startOffset: bigint;
}

export interface EpochEndOffset {
  readonly epoch: number;
  readonly endOffset: bigint;
}

/** Example: [{ epoch: 0, startOffset: 0n }, { epoch: 3, startOffset: 5n }] -> "0\n2\n0 0\n3 5\n". */
export function formatLeaderEpochCheckpoint(entries: readonly EpochEntry[]): Buffer {
  const lines = [String(VERSION), String(entries.length)];
  for (const e of entries) lines.push(`${e.epoch} ${e.startOffset}`);
  return Buffer.from(lines.join('\n') + '\n');
}

/**
 * The entries of a checkpoint, or null when the text is not one of this
 * version. An empty file is an empty cache: Kafka creates the file empty.
 */
export function parseLeaderEpochCheckpoint(text: string): EpochEntry[] | null {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (lines.length < 2 || lines[0]!.trim() !== String(VERSION)) return null;
  const count = Number(lines[1]!.trim());
  if (!Number.isInteger(count) || count < 0 || lines.length !== count + 2) return null;
  const out: EpochEntry[] = [];
  for (const line of lines.slice(2)) {
    const m = /^\s*(\d{1,10})\s+(\d{1,19})\s*$/.exec(line);
    if (!m) return null;
    const epoch = Number(m[1]);
    if (epoch > 0x7fffffff) return null;
    out.push({ epoch, startOffset: BigInt(m[2]!) });
  }
  return out;
}

/** What readers of a partition's epochs may ask; the log owns every change. */
export interface LeaderEpochs {
  readonly entries: readonly EpochEntry[];
  latestEntry(): EpochEntry | undefined;
  earliestEntry(): EpochEntry | undefined;
  epochEntry(epoch: number): EpochEntry | undefined;
  epochForOffset(offset: bigint): number | undefined;
  endOffsetFor(requestedEpoch: number, logEndOffset: bigint): EpochEndOffset;
}

export class LeaderEpochCache implements LeaderEpochs {
  private list: EpochEntry[] = [];
  private deferWrites = false;
  private dirty = false;

  private constructor(
    private readonly fs: Fs,
    readonly path: string,
  ) {}

  /**
   * The cache of the partition in `dir`, read from its checkpoint. `found` is
   * false when the file is missing or does not parse; the cache is then empty
   * and the caller rebuilds it from the log's batches.
   */
  static load(fs: Fs, dir: string): { cache: LeaderEpochCache; found: boolean } {
    const cache = new LeaderEpochCache(fs, join(dir, LEADER_EPOCH_CHECKPOINT_FILE));
    const bytes = readWholeFile(fs, cache.path);
    const parsed = bytes === null ? null : parseLeaderEpochCheckpoint(bytes.toString('utf8'));
    if (parsed !== null) {
      // Reading is not a change: a file whose entries conflict is rewritten by the next change.
      cache.deferWrites = true;
      for (const e of parsed) cache.assign(e.epoch, e.startOffset);
      cache.deferWrites = false;
      cache.dirty = false;
    }
    return { cache, found: parsed !== null };
  }

  get entries(): readonly EpochEntry[] {
    return this.list;
  }

  /**
   * Records that `epoch` starts at `startOffset`, unless the latest entry is
   * already that epoch starting no later. Entries at or above `epoch`, or
   * starting at or after `startOffset`, go first. Returns whether anything
   * changed (the file is then rewritten).
   *
   * Example: on [(0, 0), (2, 8)], assign(2, 9) changes nothing; assign(4, 8)
   * leaves [(0, 0), (4, 8)].
   */
  assign(epoch: number, startOffset: bigint): boolean {
    if (epoch < 0 || startOffset < 0n) throw new RangeError(`invalid leader epoch entry (${epoch}, ${startOffset})`);
    const latest = this.latestEntry();
    if (latest !== undefined && latest.epoch === epoch && latest.startOffset <= startOffset) return false;
    while (this.list.length > 0) {
      const last = this.list[this.list.length - 1]!;
      if (last.epoch < epoch && last.startOffset < startOffset) break;
      this.list.pop();
    }
    this.list.push({ epoch, startOffset });
    this.changed();
    return true;
  }

  latestEntry(): EpochEntry | undefined {
    return this.list[this.list.length - 1];
  }

  earliestEntry(): EpochEntry | undefined {
    return this.list[0];
  }

  epochEntry(epoch: number): EpochEntry | undefined {
    return this.list.find((e) => e.epoch === epoch);
  }

  /**
   * The epoch the record at `offset` was written in: that of the last entry
   * starting at or before it. Example: on [(0, 0), (3, 5)], epochForOffset(4n)
   * -> 0, epochForOffset(5n) -> 3; on [(3, 5)], epochForOffset(4n) -> undefined.
   */
  epochForOffset(offset: bigint): number | undefined {
    let found: number | undefined;
    for (const e of this.list) {
      if (e.startOffset > offset) break;
      found = e.epoch;
    }
    return found;
  }

  /**
   * OffsetForLeaderEpoch as Kafka answers it from its cache: the largest known
   * epoch at most `requestedEpoch` and the offset where it ended (the start of
   * the next known epoch, or `logEndOffset` for the latest). A requested epoch
   * below every known one ends where the first known one starts; one above
   * the latest, or -1, is UNDEFINED (-1, -1).
   *
   * Example, on [(2, 10), (5, 20)] with the log ending at 30: endOffsetFor(5)
   * -> (5, 30); endOffsetFor(3) -> (2, 20); endOffsetFor(1) -> (1, 10);
   * endOffsetFor(6) -> (-1, -1).
   */
  endOffsetFor(requestedEpoch: number, logEndOffset: bigint): EpochEndOffset {
    const undefinedAnswer = { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET };
    if (requestedEpoch === UNDEFINED_EPOCH) return undefinedAnswer;
    const latest = this.latestEntry();
    if (latest !== undefined && latest.epoch === requestedEpoch) return { epoch: requestedEpoch, endOffset: logEndOffset };
    const higher = this.list.findIndex((e) => e.epoch > requestedEpoch);
    if (higher < 0) return undefinedAnswer;
    const next = this.list[higher]!;
    if (higher === 0) return { epoch: requestedEpoch, endOffset: next.startOffset };
    return { epoch: this.list[higher - 1]!.epoch, endOffset: next.startOffset };
  }

  /**
   * Drops the entries starting at or after `endOffset` (the log was cut
   * there). Example: on [(0, 0), (3, 5)], truncateFromEnd(5n) leaves [(0, 0)].
   */
  truncateFromEnd(endOffset: bigint): void {
    const keep = this.list.findIndex((e) => e.startOffset >= endOffset);
    if (endOffset < 0n || keep < 0) return;
    this.list.length = keep;
    this.changed();
  }

  /**
   * The log now starts at `startOffset`: entries starting at or before it go,
   * and the last of them comes back starting there. Example: on [(0, 0),
   * (3, 5), (4, 9)], truncateFromStart(6n) leaves [(3, 6), (4, 9)].
   */
  truncateFromStart(startOffset: bigint): void {
    let removed = 0;
    while (removed < this.list.length && this.list[removed]!.startOffset <= startOffset) removed++;
    if (removed === 0) return;
    const last = this.list[removed - 1]!;
    if (removed === 1 && last.startOffset === startOffset) return;
    this.list.splice(0, removed, { epoch: last.epoch, startOffset });
    this.changed();
  }

  /** Forgets every entry (the log restarted empty at some offset). */
  clear(): void {
    if (this.list.length === 0) return;
    this.list = [];
    this.changed();
  }

  /** Runs `fn` with writes held back, then writes once if anything changed. */
  batch(fn: () => void): void {
    const outer = this.deferWrites;
    this.deferWrites = true;
    try {
      fn();
    } finally {
      this.deferWrites = outer;
    }
    if (!outer && this.dirty) this.write();
  }

  private changed(): void {
    this.dirty = true;
    if (!this.deferWrites) this.write();
  }

  private write(): void {
    writeFileAtomic(this.fs, this.path, formatLeaderEpochCheckpoint(this.list));
    this.dirty = false;
  }
}

/**
 * A partition's log on disk: an ordered run of segments, the last one active,
 * plus the offsets that frame it.
 *
 * Invariant on the offsets, in words: the log start offset is never above the
 * high watermark, and the high watermark is never above the log end offset.
 * The high watermark only moves forward, by the replica layer, except that
 * truncation takes it down with the log end when the offsets it covered are
 * gone. The recovery point is never above the log end offset either; every
 * segment wholly below it has been fsynced together with its indexes, so a
 * restart after a crash trusts those and rescans only from the segment that
 * holds the recovery point.
 *
 * Everything is synchronous (see fs.ts): an operation that returns has done
 * its writes, and nothing else runs in between.
 */
import { join } from 'node:path';
import { ErrorCode } from '../wire/errors.js';
import { readPartitionCheckpoint, writePartitionCheckpoint } from './checkpoint.js';
import { type Fs, nodeFs, writeFileAtomic, writeFully } from './fs.js';
import type { LogConfig } from './log-config.js';
import { type ValidationResult, validateAndAssignOffsets } from './log-validator.js';
import { type EpochEndOffset, LeaderEpochCache, type LeaderEpochs, UNDEFINED_EPOCH_OFFSET } from './leader-epoch-cache.js';
import {
  type AppendedBatch,
  BatchCursor,
  CorruptRecordError,
  type FileRange,
  LOG_SUFFIX,
  LogSegment,
  type TimestampAndOffset,
  parseSegmentFileName,
  readRanges,
  segmentFileName,
} from './segment.js';
import {
  ATTRIBUTES,
  BASE_SEQUENCE,
  BASE_TIMESTAMP,
  CONTROL,
  LAST_OFFSET_DELTA,
  PARTITION_LEADER_EPOCH,
  PRODUCER_EPOCH,
  PRODUCER_ID,
  TIMESTAMP_TYPE_LOG_APPEND,
  TRANSACTIONAL,
  buildEndTxnMarkerBatch,
  decodeRecords,
  readEndTxnMarker,
} from '../wire/record-batch.js';
import {
  type AppendOrigin,
  type BatchMetadata,
  type CompletedTxn,
  DEFAULT_PRODUCER_ID_EXPIRATION_MS,
  type ProducerAppendInfo,
  type ProducerStateError,
  type ProducerStateLogger,
  ProducerStateManager,
  batchFirstOffset,
  incrementSequence,
} from './producer-state.js';
import { TXN_INDEX_SUFFIX, encodeAbortedTxns } from './txn-index.js';

export { type AppendedBatch, CorruptRecordError, type FileRange, type TimestampAndOffset, readRanges } from './segment.js';

export const CLEAN_SHUTDOWN_FILE = '.clean-shutdown';

/** A cleaned segment being written: removed at open, the segments it was to replace stay. */
export const CLEANED_SUFFIX = '.cleaned';

/**
 * `<base>.log.<end>.swap`: a cleaned segment, complete and fsynced, that
 * replaces every segment whose base offset lies in [base, end). The end is
 * in the name because cleaning may drop the group's last batches, so the
 * data alone cannot say which later segments the swap covers.
 */
export function swapFileName(base: bigint, end: bigint): string {
  return `${segmentFileName(base, LOG_SUFFIX)}.${end.toString().padStart(20, '0')}.swap`;
}

function parseSwapFileName(name: string): { base: bigint; end: bigint } | null {
  const m = /^(\d{20})\.log\.(\d{20})\.swap$/.exec(name);
  return m ? { base: BigInt(m[1]!), end: BigInt(m[2]!) } : null;
}

/**
 * `<base>.txnindex.swap`: the aborted-transaction entries of the segments a
 * cleaned segment replaces, named so before the `.log` swap file, and
 * taking its final name with it. Without a `.log` swap it is a leftover of
 * a swap that never happened.
 */
function txnIndexSwapFileName(base: bigint): string {
  return segmentFileName(base, TXN_INDEX_SUFFIX) + '.swap';
}

/**
 * Finishes the swaps a crash interrupted: a swap file was only ever named
 * after it was whole and fsynced, so it wins over the segments it replaces,
 * which go (with every index in its range) before it takes its final name.
 */
function completeSwaps(fs: Fs, dir: string, names: readonly string[]): void {
  let changed = false;
  for (const name of names) {
    const swap = parseSwapFileName(name);
    if (!swap) continue;
    for (const other of names) {
      const m = /^(\d{20})\.(log|index|timeindex|txnindex)$/.exec(other);
      if (!m) continue;
      const base = BigInt(m[1]!);
      // The swap is renamed over the first segment's log file itself.
      if (base < swap.base || base >= swap.end || (base === swap.base && m[2] === 'log')) continue;
      if (fs.exists(join(dir, other))) fs.unlink(join(dir, other));
    }
    const txnSwap = join(dir, txnIndexSwapFileName(swap.base));
    if (fs.exists(txnSwap)) fs.rename(txnSwap, join(dir, segmentFileName(swap.base, TXN_INDEX_SUFFIX)));
    fs.rename(join(dir, name), join(dir, segmentFileName(swap.base, LOG_SUFFIX)));
    changed = true;
  }
  if (changed) fs.syncDir(dir);
}

/**
 * The leader-epoch cache of a log being opened, consistent with its data.
 * After a clean shutdown the checkpoint is (every change was written as it
 * happened), down to an epoch a leader started at the log end without data
 * yet. After a crash, entries from the log end on (a torn tail's) go, and
 * each segment that was just rescanned adds the epochs its batches carry, as
 * Kafka's segment recovery does. A missing or unreadable checkpoint is
 * rebuilt from every segment. Then the log start offset clamps the front.
 * One write at most.
 */
function loadLeaderEpochs(
  fs: Fs,
  dir: string,
  clean: boolean,
  segments: readonly LogSegment[],
  recovered: readonly LogSegment[],
  logStartOffset: bigint,
  logEndOffset: bigint,
): LeaderEpochCache {
  const { cache, found } = LeaderEpochCache.load(fs, dir);
  cache.batch(() => {
    cache.truncateFromEnd(clean ? logEndOffset + 1n : logEndOffset);
    for (const seg of found ? segments.filter((s) => recovered.includes(s)) : segments) {
      const cursor = new BatchCursor(seg.file, 0, seg.size, false);
      while (cursor.next()) {
        const epoch = cursor.buf.readInt32BE(cursor.at + PARTITION_LEADER_EPOCH);
        const latest = cache.latestEntry();
        if (epoch >= 0 && (latest === undefined || epoch > latest.epoch)) cache.assign(epoch, cursor.baseOffset);
      }
    }
    cache.truncateFromStart(logStartOffset);
  });
  return cache;
}

/** What the validator learned about batches whose offsets it assigned. */
export interface AppendInfo {
  firstOffset: bigint;
  lastOffset: bigint;
  maxTimestamp: bigint;
  offsetOfMaxTimestamp: bigint;
  appended: readonly AppendedBatch[];
}

/**
 * The AppendInfo of batches that already carry their offsets (copied from a
 * leader, or from another log of the partition), given in order with their
 * positions in the buffer: positions become relative to the first batch,
 * which is where appendValidated's buffer starts.
 *
 * Example: batches 10..12 (max timestamp 5 at position 40) and 13..14
 * (max timestamp 9 at position 130) -> { firstOffset: 10n, lastOffset: 14n,
 * maxTimestamp: 9n, offsetOfMaxTimestamp: 14n, appended: [positions 0 and 90] }.
 */
export function appendInfoFor(batches: readonly AppendedBatch[]): AppendInfo {
  const first = batches[0]!;
  let maxTimestamp = -1n;
  let offsetOfMaxTimestamp = first.baseOffset;
  for (const b of batches) {
    if (b.maxTimestamp > maxTimestamp) {
      maxTimestamp = b.maxTimestamp;
      offsetOfMaxTimestamp = b.lastOffset;
    }
  }
  return {
    firstOffset: first.baseOffset,
    lastOffset: batches[batches.length - 1]!.lastOffset,
    maxTimestamp,
    offsetOfMaxTimestamp,
    appended: batches.map((b) => ({ baseOffset: b.baseOffset, lastOffset: b.lastOffset, maxTimestamp: b.maxTimestamp, position: b.position - first.position, size: b.size })),
  };
}

/** The log could not write or sync: the partition answers KAFKA_STORAGE_ERROR until the log is reopened. */
export class StorageError extends Error {
  readonly errorCode = ErrorCode.KAFKA_STORAGE_ERROR;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageError';
  }
}

export type ReadResult =
  | {
      ok: true;
      /** Whole batches, in offset order; empty when there is nothing to return yet. */
      records: FileRange[];
      /** Total bytes of `records`. */
      size: number;
      logStartOffset: bigint;
      logEndOffset: bigint;
      highWatermark: bigint;
    }
  | { ok: false; errorCode: typeof ErrorCode.OFFSET_OUT_OF_RANGE; logStartOffset: bigint; logEndOffset: bigint };

/**
 * What `append` and `appendControlMarker` answer. `duplicate` is set when
 * the batch repeats one of its producer's last five: nothing was written,
 * and firstOffset, lastOffset and logAppendTime are the original batch's
 * (logAppendTime its stored max timestamp, as Kafka answers a duplicate).
 */
export type AppendResult = (Extract<ValidationResult, { ok: true }> & { logStartOffset: bigint; duplicate?: boolean }) | (Extract<ValidationResult, { ok: false }> & { logStartOffset: bigint });

/** A transaction coordinator's COMMIT or ABORT for one producer (WriteTxnMarkers). */
export interface ControlMarker {
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
  commit: boolean;
  /** The transaction's version (WriteTxnMarkers v2): 2 for transactions v2, whose marker carries the bumped epoch; 0 when absent. */
  transactionVersion?: number;
}

/** One producer as DescribeProducers reports it. */
export interface ActiveProducer {
  producerId: bigint;
  producerEpoch: number;
  lastSequence: number;
  lastTimestamp: bigint;
  coordinatorEpoch: number;
  /** First offset of the open transaction, -1n when none. */
  currentTxnStartOffset: bigint;
}

export interface OpenOptions {
  fs?: Fs;
  /** Milliseconds since the epoch; tests inject a clock. */
  now?: () => number;
  /** Stamped on batches that `append` accepts. */
  leaderEpoch?: number;
  /**
   * producer.id.expiration.ms: a producer with no open transaction whose
   * last timestamp is this old is forgotten by removeExpiredProducers (and
   * not loaded from a snapshot). Kafka's default: 86400000 (one day).
   */
  producerIdExpirationMs?: number;
  /** Where a corrupt producer snapshot is reported; a pino logger fits. */
  log?: ProducerStateLogger;
  /** Called once, when an I/O error first takes the log offline (its directory's disk has likely failed). */
  onOffline?: (cause: StorageError) => void;
}

/** The producer-state changes of one append, applied once its batches are written. */
interface ProducerUpdate {
  infos: ProducerAppendInfo[];
  completed: CompletedTxn[];
}

type ProducerAnalysis =
  | { kind: 'update'; update: ProducerUpdate }
  | { kind: 'duplicate'; batch: BatchMetadata }
  | { kind: 'error'; error: ProducerStateError };

/** True when some batch in `batches` (laid out as `appended` says) has a producer id. */
function hasProducerIds(batches: Buffer, appended: readonly AppendedBatch[]): boolean {
  // The sign of an int64 is the sign of its high 32 bits.
  for (const b of appended) if (batches.readInt32BE(b.position + PRODUCER_ID) >= 0) return true;
  return false;
}

/**
 * Feeds one stored batch (its header at `buf[at]`) to `info`, its
 * producer's pending update: a control batch ends the producer's
 * transaction as its marker says (`marker` reads it; an emptied control
 * batch changes nothing), a data batch extends the producer's sequence
 * and may begin a transaction. The refusal, or the transaction the batch
 * completed (null when none).
 */
function feedBatch(
  info: ProducerAppendInfo,
  buf: Buffer,
  at: number,
  batch: { baseOffset: bigint; lastOffset: bigint; maxTimestamp: bigint },
  marker: () => ReturnType<typeof readEndTxnMarker>,
): { error: ProducerStateError } | { completed: CompletedTxn | null } {
  const epoch = buf.readInt16BE(at + PRODUCER_EPOCH);
  const attributes = buf.readInt16BE(at + ATTRIBUTES);
  if ((attributes & CONTROL) !== 0) {
    const m = marker();
    if (m === null) return { completed: null };
    const r = info.appendEndTxnMarker(m.commit, m.coordinatorEpoch, epoch, batch.baseOffset, batch.maxTimestamp);
    return r.ok ? { completed: r.completed ?? null } : { error: r.error };
  }
  const baseSeq = buf.readInt32BE(at + BASE_SEQUENCE);
  const lastSeq = baseSeq < 0 ? -1 : incrementSequence(baseSeq, buf.readInt32BE(at + LAST_OFFSET_DELTA));
  const error = info.appendDataBatch(epoch, baseSeq, lastSeq, batch.maxTimestamp, batch.baseOffset, batch.lastOffset, (attributes & TRANSACTIONAL) !== 0);
  return error ? { error } : { completed: null };
}

export class PartitionLog {
  private readonly segments: LogSegment[];
  private _logStartOffset: bigint;
  private _highWatermark: bigint;
  private recoveryPoint: bigint;
  private offlineCause: StorageError | null = null;
  private closed = false;
  /** What the checkpoint file holds, as last written by this log; null before its first write. */
  private checkpointed: { recoveryPoint: bigint; logStartOffset: bigint; highWatermark: bigint } | null = null;
  /**
   * Rolled segments whose fsync runs in the background (see rollAt), each with
   * a token of its roll: a segment rolled again (after a truncation made it
   * active) must wait for its second fsync, not be marked synced by the first.
   */
  private readonly rolledUnsynced = new Map<LogSegment, object>();
  private unflushedMessages = 0;
  private oldestUnflushedMs: number | null = null;
  private readonly fs: Fs;
  private readonly now: () => number;
  private readonly leaderEpoch: number;
  private readonly onOffline: ((cause: StorageError) => void) | undefined;
  private _truncations = 0;
  /** The first unstable offset as the LSO uses it: never below the log start; null without transactions in doubt. */
  private _firstUnstableOffset: bigint | null = null;

  private constructor(
    readonly dir: string,
    readonly config: LogConfig,
    opts: OpenOptions,
    segments: LogSegment[],
    start: { logStartOffset: bigint; highWatermark: bigint; recoveryPoint: bigint },
    private readonly epochs: LeaderEpochCache,
    private readonly producers: ProducerStateManager,
  ) {
    this.fs = opts.fs ?? nodeFs;
    this.now = opts.now ?? Date.now;
    this.leaderEpoch = opts.leaderEpoch ?? 0;
    this.onOffline = opts.onOffline;
    this.segments = segments;
    this._logStartOffset = start.logStartOffset;
    this._highWatermark = start.highWatermark;
    this.recoveryPoint = start.recoveryPoint;
  }

  /**
   * Opens the log in `dir`, creating it when empty. After a clean shutdown
   * (the marker file is there) segments are trusted and only their index
   * tails are read; otherwise every segment from the one holding the
   * recovery point on is rescanned: batch sizes and CRCs verified, a torn or
   * corrupt tail cut off (with every later segment), indexes rebuilt.
   *
   * Example: a log closed at end offset 120 with checkpointed high watermark
   * 100 reopens with logEndOffset 120n and highWatermark 100n; the same log
   * after a crash that tore its last batch reopens at the end of the last
   * whole batch, say 110n, with highWatermark min(100n, 110n) = 100n.
   */
  static open(dir: string, config: LogConfig, opts: OpenOptions = {}): PartitionLog {
    const fs = opts.fs ?? nodeFs;
    const nowMs = (opts.now ?? Date.now)();
    fs.mkdir(dir);
    let names = fs.readdir(dir);
    for (const name of names) if (name.endsWith('.tmp') || name.endsWith(CLEANED_SUFFIX)) fs.unlink(join(dir, name));
    if (names.some((n) => parseSwapFileName(n) !== null)) {
      completeSwaps(fs, dir, names);
      names = fs.readdir(dir);
    }
    for (const name of names) if (/^\d{20}\.txnindex\.swap$/.test(name)) fs.unlink(join(dir, name));
    const bases = names
      .map(parseSegmentFileName)
      .filter((b): b is bigint => b !== null)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const markerPath = join(dir, CLEAN_SHUTDOWN_FILE);
    const clean = fs.exists(markerPath);
    const checkpoint = readPartitionCheckpoint(fs, dir);

    const segments: LogSegment[] = [];
    try {
      for (const base of bases) segments.push(LogSegment.open(fs, dir, base, config, nowMs));
      if (segments.length === 0) {
        segments.push(LogSegment.create(fs, dir, checkpoint?.logStartOffset ?? 0n, config, nowMs));
      }
      // Without a clean shutdown and a checkpoint, nothing is known to be on disk. A log
      // that had no segment file holds nothing to recover: its new empty segment needs no sync.
      const recoveryPoint = clean || bases.length === 0 ? null : (checkpoint?.recoveryPoint ?? -1n);
      let firstToRecover = segments.length;
      if (recoveryPoint !== null) {
        firstToRecover = 0;
        for (let i = 0; i < segments.length; i++) if (segments[i]!.baseOffset <= recoveryPoint) firstToRecover = i;
      }
      const recovered: LogSegment[] = [];
      for (let i = 0; i < segments.length; i++) {
        const seg = segments[i]!;
        // A trusted segment whose indexes do not match its data is rescanned all the same.
        if (i < firstToRecover && seg.loadTail() === null) continue;
        recovered.push(seg);
        const cut = seg.recover();
        const nextBase = segments[i + 1]?.baseOffset;
        if (cut > 0 || (nextBase !== undefined && seg.nextOffset > nextBase)) {
          // Data after a damaged batch cannot be trusted to follow on from it.
          for (const later of segments.splice(i + 1)) later.delete();
        }
      }
      if (recovered.length > 0) {
        for (const seg of recovered) if (segments.includes(seg)) seg.flush();
        fs.syncDir(dir);
      }
      const active = segments[segments.length - 1]!;
      const logEndOffset = active.nextOffset;
      const first = segments[0]!.baseOffset;
      let logStartOffset = checkpoint && checkpoint.logStartOffset > first ? checkpoint.logStartOffset : first;
      if (logStartOffset > logEndOffset) logStartOffset = logEndOffset;
      let highWatermark = checkpoint?.highWatermark ?? logStartOffset;
      if (highWatermark < logStartOffset) highWatermark = logStartOffset;
      if (highWatermark > logEndOffset) highWatermark = logEndOffset;
      const epochs = loadLeaderEpochs(fs, dir, clean, segments, recovered, logStartOffset, logEndOffset);
      const producers = new ProducerStateManager(fs, dir, opts.producerIdExpirationMs ?? DEFAULT_PRODUCER_ID_EXPIRATION_MS, opts.log ?? null);
      const log = new PartitionLog(
        dir,
        config,
        opts,
        segments,
        {
          logStartOffset,
          highWatermark,
          recoveryPoint: logEndOffset, // clean, or everything above was just verified and fsynced
        },
        epochs,
        producers,
      );
      log.loadProducerState(clean, recovered.filter((seg) => segments.includes(seg)));
      // What the file holds: after a clean shutdown, the first periodic checkpoint has nothing to write.
      log.checkpointed = checkpoint;
      if (clean) {
        // From here on a crash must lead to recovery.
        fs.unlink(markerPath);
        fs.syncDir(dir);
      }
      return log;
    } catch (err) {
      for (const seg of segments) seg.close();
      throw err;
    }
  }

  /** The first offset a consumer can read. Example: 0n for a new log; 50n after deleteRecordsBefore(50n). */
  get logStartOffset(): bigint {
    return this._logStartOffset;
  }

  /** One past the last stored offset. Example: 3n after appending a 3-record batch to a new log. */
  get logEndOffset(): bigint {
    return this.segments[this.segments.length - 1]!.nextOffset;
  }

  /** Offsets below it are committed (replicated to the ISR). Example: 0n until updateHighWatermark is called. */
  get highWatermark(): bigint {
    return this._highWatermark;
  }

  /**
   * The last stable offset: every offset below it is decided (not part of
   * an open transaction, nor of one whose marker the high watermark has not
   * passed), so read_committed consumers may read up to it. The first
   * unstable offset when it is below the high watermark, else the high
   * watermark. Example: a transaction opened at 10n with the high watermark
   * at 20n -> 10n; after its COMMIT marker at 20 and the high watermark at
   * 21n -> 21n.
   */
  get lastStableOffset(): bigint {
    const fuo = this._firstUnstableOffset;
    return fuo !== null && fuo < this._highWatermark ? fuo : this._highWatermark;
  }

  /**
   * The earliest offset of a transaction that is open or whose marker is
   * not yet below the high watermark, never below the log start; null when
   * there is none. Example: null on a log without transactions; 10n while
   * the transaction begun at 10 is open.
   */
  get firstUnstableOffset(): bigint | null {
    return this._firstUnstableOffset;
  }

  /** True after an I/O error: appends fail with StorageError, reads go on. Example: false for a healthy log. */
  get isOffline(): boolean {
    return this.offlineCause !== null;
  }

  /**
   * Takes the log offline as an I/O error of its own would (its directory
   * failed through another log): writes fail with `cause` from now on.
   * Example: takeOffline(new StorageError('disk gone')) -> isOffline true.
   */
  takeOffline(cause: StorageError): void {
    this.setOffline(cause);
  }

  /** Base offsets of the segments, oldest first. Example: [0n, 1000n] after one roll at offset 1000. */
  segmentBaseOffsets(): bigint[] {
    return this.segments.map((s) => s.baseOffset);
  }

  /** Total bytes of the segment files. Example: 0 for a new log. */
  get size(): number {
    let total = 0;
    for (const s of this.segments) total += s.size;
    return total;
  }

  /**
   * Validates `records` (the validator assigns offsets from the log end and
   * stamps `leaderEpoch`), then appends them. A validation failure appends
   * nothing and is returned as is; an I/O failure throws StorageError.
   *
   * Example: on a new log, append(<one batch of 3 records>, 5) returns
   * { ok: true, firstOffset: 0n, lastOffset: 2n, logStartOffset: 0n, ... }
   * and logEndOffset becomes 3n.
   *
   * With `inPlace` the caller hands `records` over: the validator rewrites the
   * batch headers in it rather than in a copy (see validateAndAssignOffsets),
   * and a failed validation still leaves it unchanged.
   */
  append(records: Buffer, leaderEpoch: number = this.leaderEpoch, inPlace = false, origin: Exclude<AppendOrigin, 'replication'> = 'client'): AppendResult {
    this.checkWritable();
    const result = validateAndAssignOffsets(
      records,
      {
        nextOffset: this.logEndOffset,
        leaderEpoch,
        now: this.now(),
        config: this.config,
        origin,
      },
      { inPlace },
    );
    if (!result.ok) return { ...result, logStartOffset: this._logStartOffset };
    let update: ProducerUpdate | null = null;
    if (hasProducerIds(result.batches, result.appended)) {
      const analysis = this.analyzeProducers(result.batches, result.appended, origin);
      if (analysis.kind === 'error') {
        return { ok: false, errorCode: analysis.error.errorCode, message: analysis.error.message, recordErrors: [], logStartOffset: this._logStartOffset };
      }
      if (analysis.kind === 'duplicate') {
        const dup = analysis.batch;
        return {
          ...result,
          firstOffset: batchFirstOffset(dup),
          lastOffset: dup.lastOffset,
          logAppendTime: dup.timestamp,
          appended: [],
          duplicate: true,
          logStartOffset: this._logStartOffset,
        };
      }
      update = analysis.update;
    }
    this.writeBatches(result.batches, result, update);
    return { ...result, logStartOffset: this._logStartOffset };
  }

  /**
   * Writes a transaction marker for one producer (WriteTxnMarkers): one
   * control batch at the log end, transactional and control attributes set,
   * the producer's id and epoch, base sequence -1, timestamps now, one record
   * holding the COMMIT or ABORT marker with the coordinator epoch (see
   * buildEndTxnMarkerBatch). Refused, writing nothing, with
   * INVALID_PRODUCER_EPOCH when the producer epoch is older than the
   * producer's, and TRANSACTION_COORDINATOR_FENCED when the coordinator
   * epoch is older than the last one that wrote a marker for it. The
   * producer's open transaction ends: an ABORT adds its range to the active
   * segment's aborted-transaction index. A marker for a producer with no
   * open transaction is written all the same, as Kafka does.
   *
   * Example: a producer 7 (epoch 0) whose transactional batch sits at 10..12:
   * appendControlMarker({ producerId: 7n, producerEpoch: 0, coordinatorEpoch:
   * 1, commit: false }, 5) -> { ok: true, firstOffset: 13n, lastOffset: 13n,
   * ... }; collectAbortedTransactions(0n, 14n) -> [{ producerId: 7n,
   * firstOffset: 10n }], and the LSO moves past 13 once the high watermark does.
   */
  appendControlMarker(marker: ControlMarker, leaderEpoch: number = this.leaderEpoch): AppendResult {
    this.checkWritable();
    const offset = this.logEndOffset;
    const now = BigInt(Math.trunc(this.now()));
    const info = this.producers.prepareUpdate(marker.producerId, 'coordinator');
    const checked = info.appendEndTxnMarker(marker.commit, marker.coordinatorEpoch, marker.producerEpoch, offset, now, marker.transactionVersion ?? 0);
    if (!checked.ok) {
      return { ok: false, errorCode: checked.error.errorCode, message: checked.error.message, recordErrors: [], logStartOffset: this._logStartOffset };
    }
    const logAppendTime = this.config.messageTimestampType === 'LogAppendTime';
    const batch = buildEndTxnMarkerBatch({
      baseOffset: offset,
      producerId: marker.producerId,
      producerEpoch: marker.producerEpoch,
      coordinatorEpoch: marker.coordinatorEpoch,
      commit: marker.commit,
      timestamp: now,
      partitionLeaderEpoch: leaderEpoch,
      logAppendTime,
    });
    const appended: AppendedBatch[] = [{ baseOffset: offset, lastOffset: offset, maxTimestamp: now, position: 0, size: batch.length }];
    const result = {
      ok: true as const,
      batches: batch,
      firstOffset: offset,
      lastOffset: offset,
      maxTimestamp: now,
      offsetOfMaxTimestamp: offset,
      logAppendTime: logAppendTime ? now : -1n,
      appended,
      recordCount: 1,
    };
    this.writeBatches(batch, result, { infos: [info], completed: checked.completed ? [checked.completed] : [] });
    return { ...result, logStartOffset: this._logStartOffset };
  }

  /**
   * The aborted transactions a read_committed fetch from `fetchOffset` must
   * be told about when it returns data below `upperBoundOffset` (Kafka's
   * collectAbortedTransactions): those whose range (first batch to marker)
   * overlaps [fetchOffset, upperBoundOffset), from the aborted-transaction
   * indexes of the segment holding fetchOffset and the later ones, until an
   * entry's LSO shows that no later segment can add one.
   *
   * Example: producer 7 aborted a transaction spanning 10..13 (marker at
   * 13): collectAbortedTransactions(0n, 11n) -> [{ producerId: 7n,
   * firstOffset: 10n }]; collectAbortedTransactions(14n, 20n) -> [];
   * collectAbortedTransactions(0n, 10n) -> [].
   */
  collectAbortedTransactions(fetchOffset: bigint, upperBoundOffset: bigint): { producerId: bigint; firstOffset: bigint }[] {
    const out: { producerId: bigint; firstOffset: bigint }[] = [];
    for (let i = this.segmentIndexFor(fetchOffset); i < this.segments.length; i++) {
      const found = this.segments[i]!.txnIndex.collectAbortedTxns(fetchOffset, upperBoundOffset);
      for (const t of found.abortedTransactions) out.push({ producerId: t.producerId, firstOffset: t.firstOffset });
      if (found.isComplete) break;
    }
    return out;
  }

  /**
   * The last offset of each producer's last data batch, which compaction
   * keeps (Kafka's cleaner keeps those batches too, so that producer state
   * rebuilt from the log still knows the producer's last sequence).
   * Example: producer 7's batches at 0..1 and 5..6 -> Set { 6n }.
   */
  producerLastBatchOffsets(): Set<bigint> {
    const out = new Set<bigint>();
    for (const e of this.producers.activeProducers().values()) if (e.lastDataOffset >= 0n) out.add(e.lastDataOffset);
    return out;
  }

  /**
   * Where the segment holding `offset` ends: the next segment's base
   * offset, or the log end offset for the active segment. A read from
   * `offset` returns nothing beyond it. Example: segments at 0 and 100, log
   * end 150: segmentEndOffset(5n) -> 100n, segmentEndOffset(120n) -> 150n.
   */
  segmentEndOffset(offset: bigint): bigint {
    return this.segments[this.segmentIndexFor(offset) + 1]?.baseOffset ?? this.logEndOffset;
  }

  /**
   * Whether `producerId` has a transaction open in this log at `producerEpoch`
   * (a data batch of it since its last marker): a later batch of that
   * transaction needs no verification with its coordinator, as in Kafka's
   * UnifiedLog.hasOngoingTransaction. Example: after a transactional batch of
   * producer 7, epoch 0 -> (7n, 0) true, (7n, 1) false; after its COMMIT
   * marker -> false.
   */
  hasOngoingTransaction(producerId: bigint, producerEpoch: number): boolean {
    const e = this.producers.lastEntry(producerId);
    return e !== undefined && e.currentTxnFirstOffset >= 0n && e.producerEpoch === producerEpoch;
  }

  /**
   * Every producer the log knows (DescribeProducers): its epoch, last
   * sequence (-1 when no batch of its current epoch is remembered), last
   * timestamp, coordinator epoch and open transaction's first offset (-1n
   * none). Example: after one idempotent batch of producer 7, epoch 0,
   * sequences 0..2 -> [{ producerId: 7n, producerEpoch: 0, lastSequence: 2,
   * lastTimestamp: <its max timestamp>, coordinatorEpoch: -1, currentTxnStartOffset: -1n }].
   */
  activeProducers(): ActiveProducer[] {
    return [...this.producers.activeProducers().values()].map((e) => ({
      producerId: e.producerId,
      producerEpoch: e.producerEpoch,
      lastSequence: e.lastSeq,
      lastTimestamp: e.lastTimestamp,
      coordinatorEpoch: e.coordinatorEpoch,
      currentTxnStartOffset: e.currentTxnFirstOffset,
    }));
  }

  /**
   * Forgets the producers with no open transaction whose last timestamp is
   * producer.id.expiration.ms or more before `nowMs` (Kafka's
   * isProducerExpired); a later batch of theirs is then taken with any
   * sequence. Returns how many went. Example: expiration 1000 and a producer
   * whose last batch had max timestamp 5000: removeExpiredProducers(5999) ->
   * 0, removeExpiredProducers(6000) -> 1.
   */
  removeExpiredProducers(nowMs: number = this.now()): number {
    return this.producers.removeExpiredProducers(nowMs);
  }

  /**
   * Writes batches whose offsets are already assigned (by the validator on a
   * leader, by the leader on a follower), in one write at the end of the
   * active segment, rolling first when Kafka's roll rule says so. Offsets may
   * skip ahead of the log end but never go back.
   *
   * Example: on a log ending at 10n, appendValidated(<batches 10..12 and
   * 13..14>, { firstOffset: 10n, lastOffset: 14n, appended: [<10..12 at 0,
   * 90 bytes>, <13..14 at 90, 80 bytes>], ... }) makes logEndOffset 15n.
   */
  appendValidated(batches: Buffer, info: AppendInfo): void {
    this.checkWritable();
    if (info.firstOffset < this.logEndOffset) {
      throw new RangeError(`append at offset ${info.firstOffset} is below the log end offset ${this.logEndOffset}`);
    }
    if (batches.length === 0) return;
    let update: ProducerUpdate | null = null;
    if (hasProducerIds(batches, info.appended)) {
      const analysis = this.analyzeProducers(batches, info.appended, 'replication');
      // Nothing refuses a replicated batch: the leader already took it.
      if (analysis.kind === 'update') update = analysis.update;
    }
    this.writeBatches(batches, info, update);
  }

  /**
   * Checks the batches that carry a producer id against the producer state
   * (Kafka's analyzeAndValidateProducerState), batch by batch in order: a
   * client's batch repeating one of its producer's last five (same epoch,
   * same first and last sequence) makes the whole append a duplicate; the
   * first refusal ends the check. Changes nothing.
   */
  private analyzeProducers(batches: Buffer, appended: readonly AppendedBatch[], origin: AppendOrigin): ProducerAnalysis {
    const psm = this.producers;
    const infos = new Map<bigint, ProducerAppendInfo>();
    const completed: CompletedTxn[] = [];
    for (const b of appended) {
      const at = b.position;
      const producerId = batches.readBigInt64BE(at + PRODUCER_ID);
      if (producerId < 0n) continue;
      if (origin === 'client' && (batches.readInt16BE(at + ATTRIBUTES) & CONTROL) === 0) {
        const baseSeq = batches.readInt32BE(at + BASE_SEQUENCE);
        const lastSeq = baseSeq < 0 ? -1 : incrementSequence(baseSeq, batches.readInt32BE(at + LAST_OFFSET_DELTA));
        const dup = psm.lastEntry(producerId)?.findDuplicateBatch(batches.readInt16BE(at + PRODUCER_EPOCH), baseSeq, lastSeq);
        if (dup) return { kind: 'duplicate', batch: dup };
      }
      let info = infos.get(producerId);
      if (!info) {
        info = psm.prepareUpdate(producerId, origin);
        infos.set(producerId, info);
      }
      const r = feedBatch(info, batches, at, b, () => readEndTxnMarker(batches.subarray(at, at + b.size)));
      if ('error' in r) return { kind: 'error', error: r.error };
      if (r.completed) completed.push(r.completed);
    }
    return { kind: 'update', update: { infos: [...infos.values()], completed } };
  }

  /**
   * Writes batches whose offsets are assigned and whose producer changes
   * (if any) are checked, then applies those changes: producer entries,
   * transactions begun and ended (an ABORT adding its entry to the active
   * segment's aborted-transaction index) and the first unstable offset.
   */
  private writeBatches(batches: Buffer, info: AppendInfo, update: ProducerUpdate | null): void {
    this.guard('append', () => {
      if (this.active.shouldRoll(batches.length, info.maxTimestamp, info.lastOffset, this.now())) this.rollAt(info.firstOffset);
      this.active.append(batches, info.appended, info.lastOffset);
      this.active.lastModifiedMs = this.now();
      for (const b of info.appended) {
        const epoch = batches.readInt32BE(b.position + PARTITION_LEADER_EPOCH);
        if (epoch >= 0) this.epochs.assign(epoch, b.baseOffset);
      }
      if (update !== null) this.applyProducerUpdate(update, this.active, true);
      this.producers.updateMapEndOffset(info.lastOffset + 1n);
    });
    if (update !== null) this.updateFirstUnstableOffset();
    this.unflushedMessages += Number(info.lastOffset - info.firstOffset + 1n);
    this.oldestUnflushedMs ??= this.now();
    this.flushIfDue();
  }

  /**
   * Whole batches from the one holding `fetchOffset`, at most `maxBytes` of
   * them except that the first is returned even when larger (KIP-74, unless
   * minOneMessage is false), none reaching `maxOffset` (exclusive; the high
   * watermark for consumers). The batches come from one segment; the next
   * read continues in the next. The ranges point into the segment files:
   * send them or copy them with `readRanges` before the log changes shape.
   *
   * Example: batches 0..2 (100 bytes) and 3..5 (100 bytes): read(1n, 150)
   * returns one range of 100 bytes (batch 0..2, which the client trims to
   * offset 1); read(0n, 50) returns that batch too (KIP-74); read(0n, 1000,
   * { maxOffset: 3n }) only the first batch; read(6n, 1000) nothing (the log
   * end); read(7n, 1000) { ok: false, errorCode: OFFSET_OUT_OF_RANGE }.
   */
  read(fetchOffset: bigint, maxBytes: number, opts: { maxOffset?: bigint; minOneMessage?: boolean } = {}): ReadResult {
    const logEndOffset = this.logEndOffset;
    if (fetchOffset < this._logStartOffset || fetchOffset > logEndOffset) {
      return { ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE, logStartOffset: this._logStartOffset, logEndOffset };
    }
    const records: FileRange[] = [];
    let size = 0;
    const maxOffset = opts.maxOffset;
    if (fetchOffset < logEndOffset && (maxOffset === undefined || fetchOffset < maxOffset)) {
      for (let i = this.segmentIndexFor(fetchOffset); i < this.segments.length; i++) {
        const range = this.segments[i]!.read(fetchOffset, maxBytes, maxOffset, opts.minOneMessage ?? true);
        if (range === null) continue;
        if (range.size > 0) {
          records.push(range);
          size = range.size;
        }
        break;
      }
    }
    return { ok: true, records, size, logStartOffset: this._logStartOffset, logEndOffset, highWatermark: this._highWatermark };
  }

  /** `read` with the bytes copied into one Buffer. Example: readBuffer(0n, 1 << 20).length === log.size on a one-segment log. */
  readBuffer(fetchOffset: bigint, maxBytes: number, opts: { maxOffset?: bigint; minOneMessage?: boolean } = {}): Buffer | null {
    const r = this.read(fetchOffset, maxBytes, opts);
    return r.ok ? readRanges(r.records) : null;
  }

  /**
   * ListOffsets by time, as Kafka's UnifiedLog answers it: the first record,
   * in offset order and at or after the log start, whose timestamp is at
   * least `timestamp`, with that record's timestamp (a LogAppendTime batch's
   * max timestamp for each of its records); null when there is none. The
   * special targets (-1 latest, -2 earliest, ...) are the caller's.
   *
   * Like Kafka, only the first segment whose largest timestamp (its max batch
   * timestamp, or its last-modified time when no batch carries one) reaches
   * `timestamp` is searched, so when that segment holds no such record at or
   * after the log start (say its only later records sit below the log start)
   * the answer is null even if a later segment has one.
   *
   * Example: records at offsets 0, 1, 2 with timestamps 100, 200, 300, in one
   * batch, compressed or not: offsetForTimestamp(150n) -> { offset: 1n,
   * timestamp: 200n }; offsetForTimestamp(301n) -> null. Had the batch
   * LogAppendTime 500: offsetForTimestamp(150n) -> { offset: 0n, timestamp: 500n }.
   * Throws CorruptRecordError when the batch holding the answer does not decode.
   */
  offsetForTimestamp(timestamp: bigint): TimestampAndOffset | null {
    for (let i = this.segmentIndexFor(this._logStartOffset); i < this.segments.length; i++) {
      const seg = this.segments[i]!;
      const reaches = seg.maxTimestamp >= 0n ? seg.maxTimestamp >= timestamp : seg.lastModifiedMs >= timestamp;
      if (reaches) return seg.findOffsetByTimestamp(timestamp, this._logStartOffset);
    }
    return null;
  }

  /**
   * ListOffsets v0 by the log, as Kafka 3.x's UnifiedLog.legacyFetchOffsetsBefore
   * answers it: offsets a reader could start from, newest first, at most
   * `maxNumOffsets` of them (none when it is 0 or less).
   *
   * The candidates, oldest first, are each segment's base offset (raised to
   * the log start offset) paired with the segment's last-modified time, and,
   * when the active segment holds data, the log end offset paired with the
   * clock's time now. LATEST (-1n) takes them from the last candidate back,
   * EARLIEST (-2n) from the first (so it answers the log start offset
   * alone); any other target is a time, and takes them from the newest
   * candidate at or before it (none when every candidate is newer). Records'
   * own timestamps play no part. A segment's last-modified time is the time
   * of its last append or, for one not written since the log opened, the
   * time it was opened (see LogSegment.lastModifiedMs); Kafka reads the
   * file's modification time instead, which survives a restart.
   *
   * Example: a segment based at 0 last appended at time 1000, one based at
   * 10 last appended at 2000 and holding offsets 10..14, the clock at 3000:
   * legacyOffsetsBefore(-1n, 10) -> [15n, 10n, 0n]; (-1n, 2) -> [15n, 10n];
   * (-2n, 10) -> [0n]; (2500n, 10) -> [10n, 0n]; (1000n, 10) -> [0n];
   * (999n, 10) -> []; after deleteRecordsBefore(3n), (-2n, 10) -> [3n].
   */
  legacyOffsetsBefore(timestamp: bigint, maxNumOffsets: number): bigint[] {
    const start = this._logStartOffset;
    const candidates = this.segments.map((seg) => ({ offset: seg.baseOffset > start ? seg.baseOffset : start, time: BigInt(seg.lastModifiedMs) }));
    if (this.active.size > 0) candidates.push({ offset: this.logEndOffset, time: BigInt(this.now()) });
    let from: number;
    if (timestamp === -1n) from = candidates.length - 1;
    else if (timestamp === -2n) from = 0;
    else {
      from = candidates.length - 1;
      while (from >= 0 && candidates[from]!.time > timestamp) from--;
    }
    // Candidates' offsets never decrease, so walking back gives them newest first.
    const out: bigint[] = [];
    for (let i = from; i >= 0 && out.length < maxNumOffsets; i--) out.push(candidates[i]!.offset);
    return out;
  }

  /** The partition's leader epochs, read-only: the log changes them as it appends and truncates. */
  get leaderEpochs(): LeaderEpochs {
    return this.epochs;
  }

  /**
   * Records that `epoch` starts at `startOffset` unless the latest known
   * epoch already is `epoch` (Kafka's maybeAssignEpochStartOffset): what a
   * broker does on becoming leader, so that the previous epoch's end is known
   * before the new leader takes any data. Throws StorageError when the
   * checkpoint cannot be written.
   *
   * Example: on a log ending at 8n whose batches are all of epoch 0,
   * maybeAssignEpochStartOffset(2, 8n) makes endOffsetForEpoch(0) answer
   * { epoch: 0, endOffset: 8n }.
   */
  maybeAssignEpochStartOffset(epoch: number, startOffset: bigint): void {
    this.checkWritable();
    this.guard('leader epoch checkpoint', () => void this.epochs.assign(epoch, startOffset));
  }

  /**
   * The largest epoch at most `epoch` and where it ended (the log end for the
   * latest), or null where Kafka answers UNDEFINED (see
   * LeaderEpochCache.endOffsetFor). Example: epochs [(0, 0), (2, 8)], log end
   * 12n: endOffsetForEpoch(1) -> { epoch: 0, endOffset: 8n }; endOffsetForEpoch(3) -> null.
   */
  endOffsetForEpoch(epoch: number): EpochEndOffset | null {
    const found = this.epochs.endOffsetFor(epoch, this.logEndOffset);
    return found.endOffset === UNDEFINED_EPOCH_OFFSET ? null : found;
  }

  /**
   * ListOffsets MAX_TIMESTAMP (-3) as Kafka's UnifiedLog answers it: in the
   * first segment holding the largest batch max timestamp, the first batch
   * whose max timestamp is that, and in it the first record carrying it
   * (every record, for a LogAppendTime batch), with the batch's leader epoch
   * (-1 when it has none). Null for a log without batches. Like Kafka, the
   * log start offset is not consulted: after DeleteRecords the answer may lie
   * below it.
   *
   * Example: batches 0..2 (timestamps 10, 1000, 20) and 3..4 (5, 6):
   * offsetForMaxTimestamp() -> { offset: 1n, timestamp: 1000n, leaderEpoch: 0 }.
   * Throws CorruptRecordError when that batch does not decode.
   */
  offsetForMaxTimestamp(): (TimestampAndOffset & { leaderEpoch: number }) | null {
    let seg = this.segments[0]!;
    for (const s of this.segments) if (s.maxTimestamp > seg.maxTimestamp) seg = s;
    const target = seg.maxTimestamp;
    const from = seg.findBatch(seg.offsetOfMaxTimestamp)?.position ?? 0;
    const cursor = new BatchCursor(seg.file, from, seg.size, true);
    while (cursor.next()) {
      if (cursor.maxTimestamp !== target) continue;
      const batch = cursor.buf.subarray(cursor.at, cursor.at + cursor.size);
      const decoded = decodeRecords(batch);
      if (!decoded.ok) throw new CorruptRecordError(`${seg.file.path}: batch at ${cursor.position}: ${decoded.error}`);
      const logAppendTime = (batch.readInt16BE(ATTRIBUTES) & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
      const baseTimestamp = batch.readBigInt64BE(BASE_TIMESTAMP);
      const record = decoded.records.find((r) => logAppendTime || BigInt.asIntN(64, baseTimestamp + r.timestampDelta) === target);
      if (!record) return null;
      const epoch = batch.readInt32BE(PARTITION_LEADER_EPOCH);
      return { offset: cursor.baseOffset + BigInt(record.offsetDelta), timestamp: target, leaderEpoch: epoch >= 0 ? epoch : -1 };
    }
    if (cursor.problem) throw new CorruptRecordError(`${seg.file.path}: ${cursor.problem}`);
    return null;
  }

  /**
   * The partition leader epoch stamped on the batch holding `offset`, -1 when
   * no stored batch holds it. Example: after append(<batch of 3>, 5) on a new
   * log, batchLeaderEpochAt(2n) -> 5 and batchLeaderEpochAt(3n) -> -1.
   */
  batchLeaderEpochAt(offset: bigint): number {
    if (offset < 0n || offset >= this.logEndOffset) return -1;
    const seg = this.segments[this.segmentIndexFor(offset)]!;
    const found = seg.findBatch(offset);
    if (!found || found.baseOffset > offset) return -1;
    const b = Buffer.allocUnsafe(4);
    if (seg.file.read(b, 0, 4, found.position + PARTITION_LEADER_EPOCH) !== 4) return -1;
    const epoch = b.readInt32BE(0);
    return epoch >= 0 ? epoch : -1;
  }

  /**
   * Moves the high watermark forward, never past the log end offset and never
   * back. Returns the high watermark after the call.
   *
   * Example: with logEndOffset 10n and highWatermark 4n: updateHighWatermark(7n)
   * -> 7n; updateHighWatermark(5n) -> 7n; updateHighWatermark(99n) -> 10n.
   */
  updateHighWatermark(offset: bigint): bigint {
    const end = this.logEndOffset;
    const next = offset > end ? end : offset;
    if (next > this._highWatermark) {
      this._highWatermark = next;
      if (this.producers.hasUnreplicatedTransactions) {
        this.producers.onHighWatermarkUpdated(next);
        this.updateFirstUnstableOffset();
      }
    }
    return this._highWatermark;
  }

  /**
   * Drops every offset at and after `offset` (a follower matching its leader),
   * leaving logEndOffset = offset. A batch that straddles `offset` goes
   * whole. The high watermark and recovery point come down with the end;
   * truncating to the log start or below starts the log afresh there.
   *
   * Example: batches 0..2, 3..5, 6..8 (end 9n): truncateTo(6n) leaves 0..5 and
   * logEndOffset 6n; truncateTo(20n) changes nothing.
   */
  truncateTo(offset: bigint): void {
    this.checkWritable();
    if (offset >= this.logEndOffset) return;
    if (offset <= this._logStartOffset) {
      this.truncateFullyAndStartAt(offset);
      return;
    }
    this._truncations++;
    this.guard('truncate', () => {
      while (this.segments.length > 1 && this.active.baseOffset >= offset) {
        const gone = this.segments.pop()!;
        gone.delete();
        this.producers.removeSnapshot(gone.baseOffset);
      }
      this.active.truncateTo(offset);
      this.epochs.truncateFromEnd(offset);
      if (this._highWatermark > offset) this._highWatermark = offset;
      if (this.recoveryPoint > offset) this.recoveryPoint = offset;
      this.writeCheckpoint();
      // As Kafka: reload from the newest snapshot at or below the new end and replay the rest.
      this.rebuildProducerState(offset, false);
      this.producers.onHighWatermarkUpdated(this._highWatermark);
    });
    this.updateFirstUnstableOffset();
  }

  /**
   * Deletes every segment and starts an empty log at `offset`, which becomes
   * log start, log end and high watermark (a follower too far behind its
   * leader's log start).
   *
   * Example: truncateFullyAndStartAt(500n) on any log -> logStartOffset,
   * logEndOffset and highWatermark all 500n, one empty segment 500.
   */
  truncateFullyAndStartAt(offset: bigint): void {
    this.checkWritable();
    this._truncations++;
    this.guard('truncate', () => {
      const fresh = LogSegment.create(this.fs, this.dir, offset, this.config, this.now());
      for (const seg of this.segments.splice(0)) if (seg.baseOffset !== offset) seg.delete();
      else seg.close();
      this.segments.push(fresh);
      this._logStartOffset = offset;
      this._highWatermark = offset;
      this.recoveryPoint = offset;
      this.epochs.clear();
      this.producers.truncateFullyAndStartAt(offset);
      this._firstUnstableOffset = null;
      this.unflushedMessages = 0;
      this.oldestUnflushedMs = null;
      fresh.flush();
      this.fs.syncDir(this.dir);
      this.writeCheckpoint();
    });
  }

  /**
   * DeleteRecords: moves the log start offset up to `offset` (at most the high
   * watermark) and deletes the segments wholly below it. Batches straddling
   * the new start stay on disk but offsets below it are no longer served.
   *
   * Example: segments 0 and 100, high watermark 150n: deleteRecordsBefore(120n)
   * -> { ok: true, lowWatermark: 120n }, segment 0 deleted; read(110n, ..)
   * is OFFSET_OUT_OF_RANGE. deleteRecordsBefore(151n) -> { ok: false,
   * errorCode: OFFSET_OUT_OF_RANGE }.
   */
  deleteRecordsBefore(
    offset: bigint,
  ): { ok: true; lowWatermark: bigint } | { ok: false; errorCode: typeof ErrorCode.OFFSET_OUT_OF_RANGE } {
    this.checkWritable();
    if (offset > this._highWatermark) return { ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE };
    if (offset <= this._logStartOffset) return { ok: true, lowWatermark: this._logStartOffset };
    this.guard('delete records', () => {
      this._logStartOffset = offset;
      if (this.active.size > 0 && this.active.nextOffset <= offset) this.rollAt(this.logEndOffset);
      while (this.segments.length > 1 && this.segments[1]!.baseOffset <= offset) {
        const gone = this.segments.shift()!;
        gone.delete();
        this.producers.removeSnapshot(gone.baseOffset);
      }
      this.writeCheckpoint();
      this.epochs.truncateFromStart(offset);
      this.producers.onLogStartOffsetIncremented(offset);
    });
    this.updateFirstUnstableOffset();
    return { ok: true, lowWatermark: this._logStartOffset };
  }

  /**
   * The retention pass a background task runs: deletes whole segments from
   * the front of the log, in Kafka's three passes, and returns how many went.
   *
   * - Segments wholly below the log start offset (left behind by
   *   DeleteRecords or by a deletion that failed half-way) go for any
   *   cleanup policy.
   * - With cleanup.policy including `delete`: segments whose largest
   *   timestamp is more than retention.ms before `now` (-1 keeps them), and
   *   then, while the log is larger than retention.bytes (-1: no limit), the
   *   oldest segments as long as removing a whole one still leaves the log at
   *   or above that size.
   *
   * Deletion stops at the first segment that fails its rule, so only a
   * prefix goes. A segment goes only when every offset in it is below the
   * high watermark (for the last segment: the high watermark has reached the
   * log end), so nothing a consumer cannot yet read is ever removed. The
   * active segment is never deleted in place: when every segment, the
   * non-empty active one included, qualifies, the log rolls first and the
   * empty new segment stays. The log start offset moves to the base of the
   * first remaining segment and is checkpointed before any file goes, so a
   * crash or a failed unlink leaves at worst files below the log start, which
   * the next pass removes.
   *
   * Example: retention.ms 1000, segments 0 (largest timestamp 5000), 10
   * (6000) and active 20 (7000, end 25), high watermark 25n: at now 6500,
   * deleteOldSegments() -> 1 and logStartOffset 10n; at now 8001 -> 2 more,
   * after a roll, leaving one empty segment 25 and logStartOffset 25n. With
   * the high watermark at 15n instead, only segment 0 could ever go.
   */
  deleteOldSegments(now: number = this.now()): number {
    this.checkWritable();
    let deleted = this.deleteSegmentsWhile((_, next) => next !== undefined && next.baseOffset <= this._logStartOffset);
    if (this.config.cleanupPolicy.includes('delete')) {
      const retentionMs = this.config.retentionMs;
      if (retentionMs >= 0) deleted += this.deleteSegmentsWhile((seg) => now - seg.largestTimestamp > retentionMs);
      const retentionBytes = this.config.retentionBytes;
      if (retentionBytes >= 0) {
        let excess = this.size - retentionBytes;
        deleted += this.deleteSegmentsWhile((seg) => {
          if (excess < seg.size) return false;
          excess -= seg.size;
          return true;
        });
      }
    }
    return deleted;
  }

  /**
   * Deletes the longest prefix of segments that `shouldDelete` accepts and
   * that lies wholly below the high watermark; an empty active segment ends
   * the prefix. `shouldDelete` is called in order and only for candidates.
   */
  private deleteSegmentsWhile(shouldDelete: (seg: LogSegment, next: LogSegment | undefined) => boolean): number {
    let count = 0;
    while (count < this.segments.length) {
      const seg = this.segments[count]!;
      const next = this.segments[count + 1];
      if (next === undefined && seg.size === 0) break;
      if ((next?.baseOffset ?? this.logEndOffset) > this._highWatermark) break;
      if (!shouldDelete(seg, next)) break;
      count++;
    }
    if (count === 0) return 0;
    this.guard('delete segments', () => {
      if (count === this.segments.length) this.rollAt(this.logEndOffset);
      const gone = this.segments.splice(0, count);
      const first = this.segments[0]!.baseOffset;
      if (first > this._logStartOffset) this._logStartOffset = first;
      this.writeCheckpoint();
      this.epochs.truncateFromStart(this._logStartOffset);
      this.producers.onLogStartOffsetIncremented(this._logStartOffset);
      for (const seg of gone) seg.close();
      for (const seg of gone) seg.delete();
      for (const seg of gone) this.producers.removeSnapshot(seg.baseOffset);
      this.fs.syncDir(this.dir);
    });
    this.updateFirstUnstableOffset();
    return count;
  }

  /**
   * How many times the log has been truncated at its end since it was
   * opened. A cleaner that learned about offsets in a range compares it
   * before trusting what it learned: truncation may have replaced them.
   * Example: 0 for a freshly opened log; 1 after truncateTo(5n) on a log ending at 9n.
   */
  get truncations(): number {
    return this._truncations;
  }

  /**
   * The segments as they stand, oldest first, the active one last; for the
   * cleaner, which reads the non-active ones. The array is a copy; the
   * segments are live and valid until the log next changes shape.
   * Example: on a log rolled once at 1000, two segments with baseOffset 0n and 1000n.
   */
  segmentsForCleaning(): readonly LogSegment[] {
    return [...this.segments];
  }

  /**
   * Replaces `group`, consecutive non-active segments of this log, by one
   * segment at the group's base offset holding what `fill` writes (whole
   * batches, offsets inside the group's range and growing), crash-safely:
   *
   * 1. the bytes go to `<base>.log.cleaned`, which is fsynced;
   * 2. it is renamed to `<base>.log.<end>.swap` and the directory synced:
   *    from here on the swap is decided (an open completes it, see
   *    completeSwaps; before it, an open deletes the `.cleaned` file and the
   *    old segments stand);
   * 3. the old segments' files are unlinked (their descriptors stay open, so
   *    reads go on through them until the new segment is in), the swap file
   *    is renamed over `<base>.log`, the directory synced;
   * 4. the new segment is opened, its indexes rebuilt and fsynced, and it
   *    takes the group's place in the log.
   *
   * An I/O error takes the log offline (reads still see the old segments);
   * the next open rolls the swap back or forward. Appends only touch the
   * active segment, which is never in a group.
   *
   * Example: segments 0, 100, 200 (active): replaceSegments([<0>, <100>],
   * w => w(<batches 3..5 and 150..150>)) leaves segments 0 and 200, and
   * read(6n, ..) returns the batch 150..150.
   */
  replaceSegments(group: readonly LogSegment[], fill: (write: (bytes: Buffer) => void) => void): void {
    this.checkWritable();
    const first = group.length > 0 ? this.segments.indexOf(group[0]!) : -1;
    if (first < 0 || first + group.length >= this.segments.length || group.some((seg, k) => this.segments[first + k] !== seg)) {
      throw new RangeError('replaceSegments: the group is not a run of non-active segments of this log');
    }
    const base = group[0]!.baseOffset;
    const end = this.segments[first + group.length]!.baseOffset;
    const cleanedPath = join(this.dir, segmentFileName(base, LOG_SUFFIX) + CLEANED_SUFFIX);
    const swapPath = join(this.dir, swapFileName(base, end));
    // Cleaning keeps every transactional and control batch, so the group's aborted transactions stand as they were.
    const abortedTxns = group.flatMap((seg) => seg.txnIndex.entries);
    const txnCleanedPath = join(this.dir, segmentFileName(base, TXN_INDEX_SUFFIX) + CLEANED_SUFFIX);
    const txnSwapPath = join(this.dir, txnIndexSwapFileName(base));
    let committed = false;
    try {
      this.guard('clean', () => {
        const fd = this.fs.open(cleanedPath, 'create');
        try {
          this.fs.ftruncate(fd, 0);
          let position = 0;
          fill((bytes) => {
            writeFully(this.fs, fd, bytes, position);
            position += bytes.length;
          });
          this.fs.fsync(fd);
        } finally {
          this.fs.close(fd);
        }
        if (abortedTxns.length > 0) {
          writeFileAtomic(this.fs, txnCleanedPath, encodeAbortedTxns(abortedTxns));
          this.fs.rename(txnCleanedPath, txnSwapPath);
        }
        this.fs.rename(cleanedPath, swapPath);
        this.fs.syncDir(this.dir);
        committed = true;
        group.forEach((seg, k) => seg.unlinkFiles(k > 0));
        if (abortedTxns.length > 0) this.fs.rename(txnSwapPath, join(this.dir, segmentFileName(base, TXN_INDEX_SUFFIX)));
        this.fs.rename(swapPath, group[0]!.file.path);
        this.fs.syncDir(this.dir);
        const fresh = LogSegment.open(this.fs, this.dir, base, this.config, this.now());
        // Retention judges a segment without timestamps by its last append, which cleaning is not.
        fresh.lastModifiedMs = Math.max(...group.map((seg) => seg.lastModifiedMs));
        try {
          fresh.recover();
          fresh.flush();
        } catch (err) {
          fresh.close();
          throw err;
        }
        this.segments.splice(first, group.length, fresh);
        for (const seg of group) seg.close();
        // As Kafka: the snapshots at the bases of segments that went, go with them.
        for (const seg of group) if (seg.baseOffset !== base) this.producers.removeSnapshot(seg.baseOffset);
      });
    } catch (err) {
      if (!committed) {
        try {
          for (const p of [cleanedPath, txnCleanedPath, txnSwapPath]) if (this.fs.exists(p)) this.fs.unlink(p);
        } catch {
          // The next open removes it.
        }
      }
      throw err;
    }
  }

  /**
   * Starts a new active segment at the log end offset, after syncing the old
   * one; an empty active segment is kept as is. Returns the new base offset.
   *
   * Example: on a log ending at 42n, roll() -> 42n, and segmentBaseOffsets()
   * ends with 42n.
   */
  roll(): bigint {
    this.checkWritable();
    if (this.active.size > 0) this.guard('roll', () => this.rollAt(this.logEndOffset, true));
    return this.active.baseOffset;
  }

  /**
   * Fsyncs the active segment and its indexes, and any rolled segment whose
   * background sync has not finished; the recovery point becomes the log end
   * offset.
   *
   * Example: after appends up to 10n with flush.messages at its default,
   * flush() makes offsets 0..9 survive a power cut.
   */
  flush(): void {
    this.checkWritable();
    this.guard('flush', () => {
      this.syncRolled();
      this.active.flush();
    });
    this.recoveryPoint = this.logEndOffset;
    this.unflushedMessages = 0;
    this.oldestUnflushedMs = null;
  }

  /**
   * Flushes when flush.messages messages are unflushed or the oldest unflushed
   * append is flush.ms old; called after each append and meant for a periodic
   * timer too. Returns whether it flushed.
   *
   * Example: with flushMs 1000, an append at t=0 and flushIfDue() at t=1000
   * -> true.
   */
  flushIfDue(): boolean {
    if (this.oldestUnflushedMs === null || this.offlineCause) return false;
    if (
      this.unflushedMessages >= this.config.flushMessages ||
      this.now() - this.oldestUnflushedMs >= this.config.flushMs
    ) {
      this.flush();
      return true;
    }
    return false;
  }

  /**
   * Writes the recovery point, log start offset and high watermark
   * checkpoint; for a periodic timer (the high watermark is otherwise only
   * written when a rolled segment's sync completes, on truncation,
   * DeleteRecords and close). Nothing is written when the file already holds
   * these values.
   *
   * Example: after updateHighWatermark(7n), checkpoint() and a crash, the log
   * reopens with highWatermark 7n.
   */
  checkpoint(): void {
    this.checkWritable();
    // An idle partition's checkpoint is already on disk: with thousands of partitions, rewriting
    // each (two fsyncs, about half a millisecond) would stall the event loop for seconds per tick.
    const last = this.checkpointed;
    if (last !== null && last.recoveryPoint === this.recoveryPoint && last.logStartOffset === this._logStartOffset && last.highWatermark === this._highWatermark) return;
    this.guard('checkpoint', () => this.writeCheckpoint());
  }

  /**
   * Syncs everything, writes the checkpoint and the clean-shutdown marker and
   * closes the files, so the next open skips recovery. An offline log only
   * closes its files: the next open recovers it.
   *
   * Example: close() then PartitionLog.open(dir, config) reads no batch data
   * except from the last index entry of each segment.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      if (!this.offlineCause) {
        this.active.onBecomeInactive();
        this.syncRolled();
        this.active.flush();
        this.recoveryPoint = this.logEndOffset;
        // A snapshot at the log end spares the next open a replay of the log.
        this.producers.takeSnapshot();
        this.writeCheckpoint();
        const marker = this.fs.open(join(this.dir, CLEAN_SHUTDOWN_FILE), 'create');
        try {
          this.fs.fsync(marker);
        } finally {
          this.fs.close(marker);
        }
        this.fs.syncDir(this.dir);
      }
    } finally {
      for (const seg of this.segments) seg.close();
    }
  }

  private get active(): LogSegment {
    return this.segments[this.segments.length - 1]!;
  }

  /**
   * Producer state at open (Kafka's LogLoader): stray snapshots go, then
   * the state is rebuilt up to the log end. Segments that were just
   * rescanned get their aborted-transaction indexes rebuilt too, by a
   * replay from the newest snapshot at or below the first of them (Kafka
   * recovers each such segment with the producer state at its base).
   */
  private loadProducerState(clean: boolean, recovered: readonly LogSegment[]): void {
    this.producers.removeStraySnapshots(this.segments.map((s) => s.baseOffset));
    for (const seg of recovered) seg.txnIndex.reset();
    this.rebuildProducerState(this.logEndOffset, clean, recovered.length > 0 ? new Set(recovered) : null);
    this.producers.onHighWatermarkUpdated(this._highWatermark);
    this.updateFirstUnstableOffset();
    for (const seg of recovered) seg.txnIndex.flush();
  }

  /**
   * Kafka's rebuildProducerState: producer state up to `lastOffset` from the
   * newest snapshot at or below it (at or below `indexFrom` when given)
   * plus a replay of the batches after it; snapshots are taken at the bases
   * of the last two segments passed and at `lastOffset`. Two shortcuts, as
   * Kafka: a log shut down cleanly without any snapshot (written before
   * producer state was kept) gets empty snapshots instead of a scan, and a
   * state with no producer that already reached `lastOffset` stays empty
   * (a log no idempotent producer ever wrote to is never scanned). With
   * `rebuilt` (segments whose aborted-transaction indexes were emptied), the
   * replay starts at or below the first of them and writes the ABORT entries
   * it finds into theirs; the indexes of the other segments it passes stay
   * as they are.
   */
  private rebuildProducerState(lastOffset: bigint, reloadFromCleanShutdown: boolean, rebuilt: ReadonlySet<LogSegment> | null = null): void {
    const psm = this.producers;
    let indexFrom: bigint | null = null;
    for (const seg of rebuilt ?? []) if (indexFrom === null || seg.baseOffset < indexFrom) indexFrom = seg.baseOffset;
    const segs = this.segments;
    const offsetsToSnapshot = new Set<bigint>([segs[segs.length - 1]!.baseOffset, lastOffset]);
    if (segs.length > 1) offsetsToSnapshot.add(segs[segs.length - 2]!.baseOffset);
    if (indexFrom === null && reloadFromCleanShutdown && psm.latestSnapshotOffset() === null) {
      for (const o of [...offsetsToSnapshot].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
        psm.updateMapEndOffset(o);
        psm.takeSnapshot();
      }
      return;
    }
    const isEmptyBeforeTruncation = indexFrom === null && psm.isEmpty && psm.mapEndOffset >= lastOffset;
    psm.truncateAndReload(this._logStartOffset, indexFrom ?? lastOffset, this.now());
    if (lastOffset > psm.mapEndOffset && !isEmptyBeforeTruncation) {
      for (let i = this.segmentIndexFor(psm.mapEndOffset); i < segs.length; i++) {
        const seg = segs[i]!;
        if (seg.baseOffset >= lastOffset) break;
        let start = seg.baseOffset;
        if (psm.mapEndOffset > start) start = psm.mapEndOffset;
        if (this._logStartOffset > start) start = this._logStartOffset;
        psm.updateMapEndOffset(start);
        if (offsetsToSnapshot.has(seg.baseOffset)) psm.takeSnapshot();
        this.replaySegment(seg, start, lastOffset, rebuilt?.has(seg) ?? false);
      }
    }
    psm.updateMapEndOffset(lastOffset);
    psm.takeSnapshot();
  }

  /**
   * Feeds the batches of `seg` holding offsets in [from, lastOffset) to the
   * producer state as replicated data (nothing refused). Only headers are
   * read, and the one record of a control batch.
   */
  private replaySegment(seg: LogSegment, from: bigint, lastOffset: bigint, writeIndex: boolean): void {
    const psm = this.producers;
    const cursor = new BatchCursor(seg.file, seg.offsetIndex.lookup(from).position, seg.size, false);
    while (cursor.next()) {
      if (cursor.lastOffset < from) continue;
      if (cursor.baseOffset >= lastOffset) break;
      const producerId = cursor.buf.readBigInt64BE(cursor.at + PRODUCER_ID);
      if (producerId < 0n) continue;
      const info = psm.prepareUpdate(producerId, 'replication');
      // Only a marker is read whole: the cursor holds headers.
      const marker = (): ReturnType<typeof readEndTxnMarker> => {
        const whole = Buffer.allocUnsafe(cursor.size);
        return seg.file.read(whole, 0, cursor.size, cursor.position) === cursor.size ? readEndTxnMarker(whole) : null;
      };
      const r = feedBatch(info, cursor.buf, cursor.at, cursor, marker);
      psm.update(info);
      if ('completed' in r && r.completed) this.applyProducerUpdate({ infos: [], completed: [r.completed] }, seg, writeIndex);
    }
  }

  /**
   * Applies checked producer changes whose batches are in `seg`; an ABORT
   * goes into the segment's aborted-transaction index (with the LSO it
   * leaves) when `writeIndex`.
   */
  private applyProducerUpdate(update: ProducerUpdate, seg: LogSegment, writeIndex: boolean): void {
    const psm = this.producers;
    for (const info of update.infos) psm.update(info);
    for (const txn of update.completed) {
      const lastStableOffset = psm.lastStableOffset(txn);
      if (txn.isAborted && writeIndex) {
        seg.txnIndex.append({ producerId: txn.producerId, firstOffset: txn.firstOffset, lastOffset: txn.lastOffset, lastStableOffset });
      }
      psm.completeTxn(txn);
    }
  }

  /** The first unstable offset from the producer state, raised to the log start (Kafka's maybeIncrementFirstUnstableOffset). */
  private updateFirstUnstableOffset(): void {
    const fuo = this.producers.firstUnstableOffset();
    this._firstUnstableOffset = fuo === null ? null : fuo < this._logStartOffset ? this._logStartOffset : fuo;
  }

  /** Index of the segment holding `offset`: the last one whose base is not above it. */
  private segmentIndexFor(offset: bigint): number {
    let lo = 0;
    let hi = this.segments.length - 1;
    let found = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.segments[mid]!.baseOffset <= offset) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /**
   * Starts the segment at `baseOffset`. With `syncOld` the old one is synced
   * first; otherwise it is synced off the event loop, as Kafka flushes a
   * rolled segment on its scheduler thread: an fsync of up to segment.bytes
   * of dirty pages took 0.6 s on this loop for a 1 GB segment, stalling every
   * partition. The recovery point moves once it is done.
   */
  private rollAt(baseOffset: bigint, syncOld = false): void {
    const old = this.active;
    old.onBecomeInactive();
    if (syncOld) {
      // The recovery point below moves past every older segment too.
      this.syncRolled();
      old.flush();
    }
    const fresh = LogSegment.create(this.fs, this.dir, baseOffset, this.config, this.now());
    this.segments.push(fresh);
    // The producer state at the new base, so that recovering the new segment need not replay older ones.
    this.producers.updateMapEndOffset(baseOffset);
    this.producers.takeSnapshot();
    this.fs.syncDir(this.dir);
    if (!syncOld && !this.syncInBackground(old)) return;
    // The old segment was synced in full: everything below the new one is durable.
    this.recoveryPoint = old.nextOffset;
    this.writeCheckpoint();
  }

  /**
   * Starts the fsync of a rolled segment off the event loop (rolledSynced
   * finishes it). An Fs without a background fsync calls back at once: then
   * the sync is done here, errors thrown, and the result is true.
   */
  private syncInBackground(old: LogSegment): boolean {
    let inline = true;
    let inlineResult: { err: Error | null } | null = null;
    const token = {};
    old.fsyncLogAsync((err) => {
      if (inline) inlineResult = { err };
      else this.rolledSynced(old, token, err);
    });
    inline = false;
    if (inlineResult === null) {
      this.rolledUnsynced.set(old, token);
      return false;
    }
    const { err } = inlineResult as { err: Error | null };
    if (err !== null) throw err;
    old.flushIndexes();
    return true;
  }

  /** The background fsync of a rolled segment is done: its indexes follow, then the recovery point. */
  private rolledSynced(seg: LogSegment, token: object, err: Error | null): void {
    const current = this.rolledUnsynced.get(seg) === token;
    if (current) this.rolledUnsynced.delete(seg);
    const ours = this.segments.includes(seg);
    if (err !== null) {
      // Linux reports a writeback error once per open file: a later fsync of this segment would
      // succeed over the lost pages. So the error counts even when a flush synced the segment since.
      if (!ours || this.offlineCause !== null) return;
      this.setOffline(new StorageError(`background flush of ${seg.file.path} failed in ${this.dir}: ${err.message}`, { cause: err }));
      // Closed already: without the clean-shutdown marker the next open checks the segments.
      if (this.closed) {
        try {
          const marker = join(this.dir, CLEAN_SHUTDOWN_FILE);
          if (this.fs.exists(marker)) this.fs.unlink(marker);
        } catch {
          // The directory is gone or unwritable: the disk has failed anyway.
        }
      }
      return;
    }
    if (this.closed || this.offlineCause !== null) return;
    try {
      this.guard('flush', () => {
        // Rolled again since (its newer fsync decides), synced by a flush, active again, or gone:
        // only the recovery point may move, past segments that are out of the way.
        if (current && ours && seg !== this.active) seg.flushIndexes();
        this.advanceRecoveryPoint();
      });
    } catch {
      // The log is offline now (guard); the next append reports it.
    }
  }

  /** Everything below the oldest segment not known to be synced is durable. */
  private advanceRecoveryPoint(): void {
    let upTo = this.active.baseOffset;
    for (const seg of this.rolledUnsynced.keys()) if (seg.baseOffset < upTo && this.segments.includes(seg)) upTo = seg.baseOffset;
    if (upTo <= this.recoveryPoint) return;
    this.recoveryPoint = upTo;
    this.writeCheckpoint();
  }

  /** Syncs the rolled segments whose background fsync has not finished (before a flush, close or explicit roll). */
  private syncRolled(): void {
    for (const seg of this.rolledUnsynced.keys()) if (seg !== this.active && this.segments.includes(seg)) seg.flush();
    this.rolledUnsynced.clear();
  }

  private writeCheckpoint(): void {
    const cp = { recoveryPoint: this.recoveryPoint, logStartOffset: this._logStartOffset, highWatermark: this._highWatermark };
    writePartitionCheckpoint(this.fs, this.dir, cp);
    this.checkpointed = cp;
  }

  private checkWritable(): void {
    if (this.closed) throw new Error(`log ${this.dir} is closed`);
    if (this.offlineCause) throw this.offlineCause;
  }

  /**
   * Runs an operation that writes; an I/O error takes the log offline for
   * good (until reopened), since after a failed write or fsync what the
   * disk holds is no longer known.
   */
  private guard(what: string, op: () => void): void {
    try {
      op();
    } catch (err) {
      if (err instanceof RangeError) throw err;
      const cause = this.offlineCause ?? new StorageError(`${what} failed in ${this.dir}: ${(err as Error).message}`, { cause: err });
      this.setOffline(cause);
      throw cause;
    }
  }

  private setOffline(cause: StorageError): void {
    if (this.offlineCause !== null) return;
    this.offlineCause = cause;
    this.onOffline?.(cause);
  }
}

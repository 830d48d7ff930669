/**
 * Producer state of one partition, as Kafka's ProducerStateManager keeps
 * it: for every producer id that wrote to the log, its epoch, the metadata
 * of its last five batches (duplicate detection), its coordinator epoch and
 * the first offset of its open transaction; the open transactions in offset
 * order, and the completed ones whose marker the high watermark has not yet
 * passed. The earliest first offset among those two is the first unstable
 * offset, which bounds the last stable offset (LSO).
 *
 * Invariants: `ongoingTxns` holds one entry per producer whose
 * currentTxnFirstOffset is set, at that offset; both transaction lists are
 * sorted by first offset. `mapEndOffset` is the offset the state describes
 * the log up to (exclusive); a snapshot file `<offset>.snapshot` holds the
 * producers as they stood at that offset.
 *
 * Checking a batch never changes the state: a ProducerAppendInfo collects
 * the changes (Kafka's), and `update` applies them once the batch is written.
 */
import { ErrorCode } from '../wire/errors.js';
import { crc32c } from '../wire/record-batch.js';
import { type Fs, readWholeFile, writeFileAtomic } from './fs.js';
import { join } from 'node:path';

/** Batches per producer remembered for duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN). */
export const NUM_BATCHES_TO_RETAIN = 5;
export const SNAPSHOT_SUFFIX = '.snapshot';
/** Kafka's default producer.id.expiration.ms: one day. */
export const DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86400000;

const INT32_MAX = 0x7fffffff;
const NO_SEQUENCE = -1;
const NO_PRODUCER_EPOCH = -1;
const MAX_PRODUCER_EPOCH = 32767;
const SNAPSHOT_VERSION = 1;
/** version int16 + crc uint32; the CRC covers everything after it. */
const SNAPSHOT_HEADER = 6;
/** producerId int64, epoch int16, lastSequence int32, lastOffset int64, offsetDelta int32, timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64. */
const SNAPSHOT_ENTRY = 46;

/**
 * Where an append comes from, which decides how much is checked (Kafka's
 * AppendOrigin): a client's batches get every check and duplicate
 * detection; the coordinator's (offset commits, markers) no sequence check;
 * replicated and recovered batches none that could refuse them.
 */
export type AppendOrigin = 'client' | 'coordinator' | 'replication';

/** Why producer state refuses an append: a Kafka error code and a message. */
export interface ProducerStateError {
  errorCode: number;
  message: string;
}

/** One of a producer's recent batches (Kafka's BatchMetadata). */
export interface BatchMetadata {
  lastSeq: number;
  lastOffset: bigint;
  /** lastOffset - firstOffset of the batch. */
  offsetDelta: number;
  /** The batch's max timestamp as stored. */
  timestamp: bigint;
}

/** The first offset of a remembered batch. Example: { lastOffset: 14n, offsetDelta: 4 } -> 10n. */
export function batchFirstOffset(b: BatchMetadata): bigint {
  return b.lastOffset - BigInt(b.offsetDelta);
}

/** The first sequence of a remembered batch, wrapping as Kafka's decrementSequence. Example: { lastSeq: 1, offsetDelta: 3 } -> 2147483646. */
export function batchFirstSeq(b: BatchMetadata): number {
  return decrementSequence(b.lastSeq, b.offsetDelta);
}

/** `sequence + increment`, wrapping past Integer.MAX_VALUE to 0 (Kafka's DefaultRecordBatch.incrementSequence). Example: (2147483647, 1) -> 0. */
export function incrementSequence(sequence: number, increment: number): number {
  if (sequence > INT32_MAX - increment) return increment - (INT32_MAX - sequence) - 1;
  return sequence + increment;
}

/** `sequence - decrement`, the inverse of incrementSequence. Example: (0, 1) -> 2147483647. */
export function decrementSequence(sequence: number, decrement: number): number {
  if (sequence < decrement) return INT32_MAX - (decrement - sequence) + 1;
  return sequence - decrement;
}

/** What one producer id has written (Kafka's ProducerStateEntry). */
export class ProducerStateEntry {
  /** Oldest first, at most NUM_BATCHES_TO_RETAIN, all of `producerEpoch`. */
  readonly batches: BatchMetadata[] = [];

  constructor(
    readonly producerId: bigint,
    public producerEpoch: number,
    public coordinatorEpoch: number,
    public lastTimestamp: bigint,
    /** First offset of the open transaction, -1n when none. */
    public currentTxnFirstOffset: bigint,
    first?: BatchMetadata,
  ) {
    if (first) this.batches.push(first);
  }

  static empty(producerId: bigint): ProducerStateEntry {
    return new ProducerStateEntry(producerId, NO_PRODUCER_EPOCH, -1, -1n, -1n);
  }

  get isEmpty(): boolean {
    return this.batches.length === 0;
  }

  get lastSeq(): number {
    return this.batches.length === 0 ? NO_SEQUENCE : this.batches[this.batches.length - 1]!.lastSeq;
  }

  get lastDataOffset(): bigint {
    return this.batches.length === 0 ? -1n : this.batches[this.batches.length - 1]!.lastOffset;
  }

  get lastOffsetDelta(): number {
    return this.batches.length === 0 ? 0 : this.batches[this.batches.length - 1]!.offsetDelta;
  }

  /** The same producer without remembered batches: where an append starts collecting changes. */
  withoutBatches(): ProducerStateEntry {
    return new ProducerStateEntry(this.producerId, this.producerEpoch, this.coordinatorEpoch, this.lastTimestamp, this.currentTxnFirstOffset);
  }

  addBatch(producerEpoch: number, lastSeq: number, lastOffset: bigint, offsetDelta: number, timestamp: bigint): void {
    this.maybeUpdateProducerEpoch(producerEpoch);
    this.addBatchMetadata({ lastSeq, lastOffset, offsetDelta, timestamp });
    this.lastTimestamp = timestamp;
  }

  /** A new epoch forgets the batches of the old one. */
  maybeUpdateProducerEpoch(producerEpoch: number): boolean {
    if (this.producerEpoch === producerEpoch) return false;
    this.batches.length = 0;
    this.producerEpoch = producerEpoch;
    return true;
  }

  /** Takes on what an append collected in `next` (Kafka's update(nextEntry)). */
  update(next: ProducerStateEntry): void {
    this.maybeUpdateProducerEpoch(next.producerEpoch);
    for (const b of next.batches) this.addBatchMetadata(b);
    this.coordinatorEpoch = next.coordinatorEpoch;
    this.currentTxnFirstOffset = next.currentTxnFirstOffset;
    this.lastTimestamp = next.lastTimestamp;
  }

  /** What a transaction marker leaves: the epoch, the coordinator's epoch, no open transaction. */
  endTransaction(producerEpoch: number, coordinatorEpoch: number, timestamp: bigint): void {
    this.maybeUpdateProducerEpoch(producerEpoch);
    this.coordinatorEpoch = coordinatorEpoch;
    this.currentTxnFirstOffset = -1n;
    this.lastTimestamp = timestamp;
  }

  /** The remembered batch with exactly this epoch and sequence range, if any. */
  findDuplicateBatch(producerEpoch: number, firstSeq: number, lastSeq: number): BatchMetadata | undefined {
    if (producerEpoch !== this.producerEpoch) return undefined;
    return this.batches.find((b) => b.lastSeq === lastSeq && batchFirstSeq(b) === firstSeq);
  }

  private addBatchMetadata(b: BatchMetadata): void {
    if (this.batches.length === NUM_BATCHES_TO_RETAIN) this.batches.shift();
    this.batches.push(b);
  }
}

/** A transaction of one producer: open while lastOffset is null, else ended by the marker at lastOffset. */
export interface TxnMetadata {
  producerId: bigint;
  firstOffset: bigint;
  lastOffset: bigint | null;
}

/** A transaction a marker ended (Kafka's CompletedTxn). */
export interface CompletedTxn {
  producerId: bigint;
  firstOffset: bigint;
  /** The marker's offset. */
  lastOffset: bigint;
  isAborted: boolean;
}

function epochError(producerId: bigint, epoch: number, current: number, offset: bigint): ProducerStateError {
  return {
    errorCode: ErrorCode.INVALID_PRODUCER_EPOCH,
    message: `producer ${producerId} has epoch ${epoch} at offset ${offset}, older than its current epoch ${current}`,
  };
}

function outOfOrder(message: string): ProducerStateError {
  return { errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, message };
}

/**
 * Checks the batches one producer appends against its state and collects
 * the changes they make (Kafka's ProducerAppendInfo), without touching the
 * manager: `ProducerStateManager.update` applies them after the write.
 *
 * Example: a producer whose last batch had epoch 0 and sequences 0..4:
 * appendDataBatch(0, 5, 9, ...) -> null (in sequence); appendDataBatch(0,
 * 7, 9, ...) -> OUT_OF_ORDER_SEQUENCE_NUMBER; appendDataBatch(1, 0, 0, ...)
 * -> null (a new epoch starts at 0).
 */
export class ProducerAppendInfo {
  readonly updatedEntry: ProducerStateEntry;
  readonly startedTransactions: TxnMetadata[] = [];

  constructor(
    readonly producerId: bigint,
    private readonly currentEntry: ProducerStateEntry,
    readonly origin: AppendOrigin,
  ) {
    this.updatedEntry = currentEntry.withoutBatches();
  }

  /**
   * One data batch: epoch check (refused unless replicated), sequence check
   * for a client, then the batch is remembered; a transactional batch opens
   * a transaction when none is, and a plain one while one is open is
   * INVALID_TXN_STATE. Returns the refusal, or null.
   */
  appendDataBatch(
    epoch: number,
    firstSeq: number,
    lastSeq: number,
    lastTimestamp: bigint,
    firstOffset: bigint,
    lastOffset: bigint,
    isTransactional: boolean,
  ): ProducerStateError | null {
    const current = this.updatedEntry.producerEpoch;
    if (epoch < current && this.origin !== 'replication') return epochError(this.producerId, epoch, current, firstOffset);
    if (this.origin === 'client') {
      const problem = this.checkSequence(epoch, firstSeq, firstOffset);
      if (problem) return problem;
    }
    this.updatedEntry.addBatch(epoch, lastSeq, lastOffset, Number(lastOffset - firstOffset), lastTimestamp);
    const open = this.updatedEntry.currentTxnFirstOffset >= 0n;
    if (open && !isTransactional) {
      // Replicated and recovered data is already in the log: take it as it is.
      if (this.origin === 'replication') return null;
      return {
        errorCode: ErrorCode.INVALID_TXN_STATE,
        message: `producer ${this.producerId} wrote a non-transactional batch at offset ${firstOffset} inside its open transaction`,
      };
    }
    if (!open && isTransactional) {
      this.updatedEntry.currentTxnFirstOffset = firstOffset;
      this.startedTransactions.push({ producerId: this.producerId, firstOffset, lastOffset: null });
    }
    return null;
  }

  /**
   * One COMMIT or ABORT marker at `offset`: refused (unless replicated) when
   * its producer epoch is older than the producer's (INVALID_PRODUCER_EPOCH)
   * or its coordinator epoch older than the last one seen
   * (TRANSACTION_COORDINATOR_FENCED). Ends the open transaction, returned as
   * completed; a marker without one completes nothing.
   *
   * A marker of transactions v2 (`transactionVersion` 2, KIP-890) carries the
   * epoch the coordinator bumped at the end of the transaction, so it must be
   * newer than the data's: one at the producer's current epoch is refused
   * while a transaction is open (it is a late marker of an earlier one), and
   * taken again, as a retry, when none is or the epoch is the last there is.
   *
   * Example: data of producer 7 at epoch 3 open; a v2 marker at epoch 3 ->
   * INVALID_PRODUCER_EPOCH, at epoch 4 -> ends the transaction and the
   * producer goes on at epoch 4 (sequence 0).
   */
  appendEndTxnMarker(
    commit: boolean,
    coordinatorEpoch: number,
    producerEpoch: number,
    offset: bigint,
    timestamp: bigint,
    transactionVersion = 0,
  ): { ok: true; completed: CompletedTxn | null } | { ok: false; error: ProducerStateError } {
    const entry = this.updatedEntry;
    if (this.origin !== 'replication') {
      const tv2 = transactionVersion >= 2;
      const stale = tv2 ? producerEpoch <= entry.producerEpoch : producerEpoch < entry.producerEpoch;
      const retry = tv2 && producerEpoch === entry.producerEpoch && (entry.currentTxnFirstOffset < 0n || producerEpoch === MAX_PRODUCER_EPOCH);
      if (stale && !retry) {
        if (producerEpoch < entry.producerEpoch) return { ok: false, error: epochError(this.producerId, producerEpoch, entry.producerEpoch, offset) };
        return {
          ok: false,
          error: {
            errorCode: ErrorCode.INVALID_PRODUCER_EPOCH,
            message: `transactions v2 marker for producer ${this.producerId} at offset ${offset} has epoch ${producerEpoch}, the epoch of its open transaction; it must be newer`,
          },
        };
      }
    }
    if (entry.coordinatorEpoch > coordinatorEpoch && this.origin !== 'replication') {
      return {
        ok: false,
        error: {
          errorCode: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
          message: `marker for producer ${this.producerId} at offset ${offset} has coordinator epoch ${coordinatorEpoch}, older than ${entry.coordinatorEpoch}`,
        },
      };
    }
    const completed =
      entry.currentTxnFirstOffset >= 0n
        ? { producerId: this.producerId, firstOffset: entry.currentTxnFirstOffset, lastOffset: offset, isAborted: !commit }
        : null;
    entry.endTransaction(producerEpoch, coordinatorEpoch, timestamp);
    return { ok: true, completed };
  }

  private checkSequence(epoch: number, firstSeq: number, offset: bigint): ProducerStateError | null {
    const updated = this.updatedEntry;
    if (epoch !== updated.producerEpoch) {
      if (firstSeq !== 0 && updated.producerEpoch !== NO_PRODUCER_EPOCH) {
        return outOfOrder(
          `producer ${this.producerId} starts its new epoch ${epoch} at offset ${offset} with sequence ${firstSeq}, not 0 (current epoch ${updated.producerEpoch})`,
        );
      }
      return null;
    }
    let currentLastSeq: number;
    if (!updated.isEmpty) currentLastSeq = updated.lastSeq;
    else if (epoch === this.currentEntry.producerEpoch) currentLastSeq = this.currentEntry.lastSeq;
    else currentLastSeq = NO_SEQUENCE;
    // A producer with no known epoch (its batches gone with retention or DeleteRecords) may go on from any sequence.
    if (this.currentEntry.producerEpoch === NO_PRODUCER_EPOCH || inSequence(currentLastSeq, firstSeq)) return null;
    return outOfOrder(
      `producer ${this.producerId} sent sequence ${firstSeq} at offset ${offset}, but its last sequence is ${currentLastSeq}`,
    );
  }
}

function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === INT32_MAX);
}

/** `<20-digit offset>.snapshot`. */
export function snapshotFileName(offset: bigint): string {
  return offset.toString().padStart(20, '0') + SNAPSHOT_SUFFIX;
}

function parseSnapshotFileName(name: string): bigint | null {
  const m = /^(\d{20})\.snapshot$/.exec(name);
  return m ? BigInt(m[1]!) : null;
}

/**
 * Kafka's producer snapshot layout (ProducerStateManager.writeSnapshot):
 * version int16 (1), crc uint32 (CRC-32C of everything after it), then an
 * int32 count and per producer: producerId int64, epoch int16, lastSequence
 * int32, lastOffset int64, offsetDelta int32, timestamp int64,
 * coordinatorEpoch int32, currentTxnFirstOffset int64 (-1 none). Only a
 * producer's last batch is kept.
 *
 * Example: no producers -> 10 bytes: 00 01, the CRC of 00 00 00 00, 00 00 00 00.
 */
export function encodeProducerSnapshot(entries: Iterable<ProducerStateEntry>): Buffer {
  const list = [...entries];
  const out = Buffer.alloc(SNAPSHOT_HEADER + 4 + list.length * SNAPSHOT_ENTRY);
  out.writeInt16BE(SNAPSHOT_VERSION, 0);
  out.writeInt32BE(list.length, SNAPSHOT_HEADER);
  let at = SNAPSHOT_HEADER + 4;
  for (const e of list) {
    out.writeBigInt64BE(e.producerId, at);
    out.writeInt16BE(e.producerEpoch, at + 8);
    out.writeInt32BE(e.lastSeq, at + 10);
    out.writeBigInt64BE(e.lastDataOffset, at + 14);
    out.writeInt32BE(e.lastOffsetDelta, at + 22);
    out.writeBigInt64BE(e.lastTimestamp, at + 26);
    out.writeInt32BE(e.coordinatorEpoch, at + 34);
    out.writeBigInt64BE(e.currentTxnFirstOffset, at + 38);
    at += SNAPSHOT_ENTRY;
  }
  out.writeUInt32BE(crc32c(out, SNAPSHOT_HEADER), 2);
  return out;
}

/** The producers of a snapshot file's bytes, or why they cannot be trusted. Example: decode(encode([])) -> []. */
export function decodeProducerSnapshot(bytes: Buffer): ProducerStateEntry[] | string {
  if (bytes.length < SNAPSHOT_HEADER + 4) return `${bytes.length} bytes are too few for a snapshot`;
  const version = bytes.readInt16BE(0);
  if (version !== SNAPSHOT_VERSION) return `unknown snapshot version ${version}`;
  const stored = bytes.readUInt32BE(2);
  const computed = crc32c(bytes, SNAPSHOT_HEADER);
  if (stored !== computed) return `CRC ${stored} does not match the computed ${computed}`;
  const count = bytes.readInt32BE(SNAPSHOT_HEADER);
  if (count < 0 || bytes.length !== SNAPSHOT_HEADER + 4 + count * SNAPSHOT_ENTRY) return `${count} entries do not fill ${bytes.length} bytes`;
  const out: ProducerStateEntry[] = [];
  let at = SNAPSHOT_HEADER + 4;
  for (let i = 0; i < count; i++, at += SNAPSHOT_ENTRY) {
    const lastOffset = bytes.readBigInt64BE(at + 14);
    const timestamp = bytes.readBigInt64BE(at + 26);
    const currentTxnFirstOffset = bytes.readBigInt64BE(at + 38);
    const batch: BatchMetadata | undefined =
      lastOffset >= 0n ? { lastSeq: bytes.readInt32BE(at + 10), lastOffset, offsetDelta: bytes.readInt32BE(at + 22), timestamp } : undefined;
    out.push(
      new ProducerStateEntry(
        bytes.readBigInt64BE(at),
        bytes.readInt16BE(at + 8),
        bytes.readInt32BE(at + 34),
        timestamp,
        currentTxnFirstOffset >= 0n ? currentTxnFirstOffset : -1n,
        batch,
      ),
    );
  }
  return out;
}

/** The little of a logger producer state needs; a pino logger fits. */
export interface ProducerStateLogger {
  warn(obj: object, msg: string): void;
}

function insertByFirstOffset(list: TxnMetadata[], txn: TxnMetadata): void {
  let i = list.length;
  while (i > 0 && list[i - 1]!.firstOffset > txn.firstOffset) i--;
  list.splice(i, 0, txn);
}

/**
 * The producer state of one log directory and its snapshot files (Kafka's
 * ProducerStateManager). Everything is synchronous; file writes go through
 * `fs` and throw on I/O errors, which the log turns into going offline.
 *
 * Example: prepareUpdate(7n, 'client') -> info; info.appendDataBatch(0, 0,
 * 2, 1000n, 10n, 12n, true) -> null; update(info) makes
 * firstUnstableOffset() 10n until completeTxn({ producerId: 7n,
 * firstOffset: 10n, lastOffset: 13n, isAborted: false }) and
 * onHighWatermarkUpdated(14n).
 */
export class ProducerStateManager {
  private readonly producers = new Map<bigint, ProducerStateEntry>();
  private readonly ongoingTxns: TxnMetadata[] = [];
  private readonly unreplicatedTxns: TxnMetadata[] = [];
  /** Offsets of the snapshot files on disk, ascending. */
  private snapshots: bigint[];
  private lastMapOffset = 0n;
  private lastSnapOffset = 0n;

  constructor(
    private readonly fs: Fs,
    readonly dir: string,
    readonly producerIdExpirationMs: number = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    private readonly logger: ProducerStateLogger | null = null,
  ) {
    this.snapshots = this.listSnapshots();
  }

  private listSnapshots(): bigint[] {
    return this.fs
      .readdir(this.dir)
      .map(parseSnapshotFileName)
      .filter((o): o is bigint => o !== null)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /**
   * Deletes the snapshots whose offset is no segment's base offset, except
   * the newest such one when it lies above every segment (the one written at
   * the log end on close), as Kafka's removeStraySnapshots.
   */
  removeStraySnapshots(segmentBaseOffsets: readonly bigint[]): void {
    const bases = new Set(segmentBaseOffsets);
    let maxBase: bigint | null = null;
    for (const b of segmentBaseOffsets) if (maxBase === null || b > maxBase) maxBase = b;
    const strays = this.snapshots.filter((o) => !bases.has(o));
    const keep = strays.length > 0 && maxBase !== null && strays[strays.length - 1]! > maxBase ? strays[strays.length - 1]! : null;
    for (const o of strays) if (o !== keep) this.removeSnapshot(o);
  }

  /** Offsets of the snapshot files, ascending. Example: [0n, 1000n, 1042n]. */
  snapshotOffsets(): readonly bigint[] {
    return this.snapshots;
  }

  latestSnapshotOffset(): bigint | null {
    return this.snapshots.length === 0 ? null : this.snapshots[this.snapshots.length - 1]!;
  }

  /**
   * The earliest first offset of a transaction that is open, or completed
   * with its marker not yet below the high watermark; null when none.
   */
  firstUnstableOffset(): bigint | null {
    const undecided = this.ongoingTxns[0]?.firstOffset;
    const unreplicated = this.unreplicatedTxns[0]?.firstOffset;
    if (undecided === undefined) return unreplicated ?? null;
    if (unreplicated === undefined) return undecided;
    return undecided < unreplicated ? undecided : unreplicated;
  }

  /** Forgets completed transactions whose marker is below `highWatermark`. Example: a marker at 13 goes at 14n. */
  onHighWatermarkUpdated(highWatermark: bigint): void {
    this.removeUnreplicatedTransactions(highWatermark);
  }

  get hasUnreplicatedTransactions(): boolean {
    return this.unreplicatedTxns.length > 0;
  }

  /** The offset the state describes the log up to (exclusive). */
  get mapEndOffset(): bigint {
    return this.lastMapOffset;
  }

  activeProducers(): ReadonlyMap<bigint, ProducerStateEntry> {
    return this.producers;
  }

  get isEmpty(): boolean {
    return this.producers.size === 0 && this.unreplicatedTxns.length === 0;
  }

  lastEntry(producerId: bigint): ProducerStateEntry | undefined {
    return this.producers.get(producerId);
  }

  hasOngoingTransaction(producerId: bigint): boolean {
    const e = this.producers.get(producerId);
    return e !== undefined && e.currentTxnFirstOffset >= 0n;
  }

  /**
   * Kafka's truncateAndReload: deletes the snapshots above `logEndOffset`
   * or at or below `logStartOffset`; unless the state already ends at
   * `logEndOffset`, forgets everything and loads the newest snapshot left
   * (a corrupt one is deleted and the next tried), leaving mapEndOffset at
   * its offset (the log start when none), from where the caller replays.
   */
  truncateAndReload(logStartOffset: bigint, logEndOffset: bigint, nowMs: number): void {
    for (const o of [...this.snapshots]) if (o > logEndOffset || o <= logStartOffset) this.removeSnapshot(o);
    if (logEndOffset !== this.lastMapOffset) {
      this.producers.clear();
      this.ongoingTxns.length = 0;
      this.unreplicatedTxns.length = 0;
      this.loadFromSnapshot(logStartOffset, nowMs);
    } else {
      this.onLogStartOffsetIncremented(logStartOffset);
    }
  }

  private loadFromSnapshot(logStartOffset: bigint, nowMs: number): void {
    for (;;) {
      const latest = this.latestSnapshotOffset();
      if (latest === null) {
        this.lastSnapOffset = logStartOffset;
        this.lastMapOffset = logStartOffset;
        return;
      }
      const path = join(this.dir, snapshotFileName(latest));
      const bytes = readWholeFile(this.fs, path);
      const decoded = bytes === null ? 'the file is gone' : decodeProducerSnapshot(bytes);
      if (typeof decoded === 'string') {
        this.logger?.warn({ path, problem: decoded }, 'cannot load producer snapshot; deleting it');
        this.removeSnapshot(latest);
        continue;
      }
      for (const entry of decoded) if (!this.isProducerExpired(nowMs, entry)) this.loadProducerEntry(entry);
      this.lastSnapOffset = latest;
      this.lastMapOffset = latest;
      return;
    }
  }

  private loadProducerEntry(entry: ProducerStateEntry): void {
    this.producers.set(entry.producerId, entry);
    if (entry.currentTxnFirstOffset >= 0n) {
      insertByFirstOffset(this.ongoingTxns, { producerId: entry.producerId, firstOffset: entry.currentTxnFirstOffset, lastOffset: null });
    }
  }

  private isProducerExpired(nowMs: number, entry: ProducerStateEntry): boolean {
    return entry.currentTxnFirstOffset < 0n && BigInt(Math.trunc(nowMs)) - entry.lastTimestamp >= BigInt(this.producerIdExpirationMs);
  }

  /**
   * Removes the producers with no open transaction whose last timestamp is
   * producer.id.expiration.ms or more before `nowMs`; returns how many.
   * Example: expiration 1000, a producer last seen at 5000: at 5999 -> 0, at 6000 -> 1.
   */
  removeExpiredProducers(nowMs: number): number {
    let removed = 0;
    for (const [id, entry] of this.producers) {
      if (this.isProducerExpired(nowMs, entry)) {
        this.producers.delete(id);
        removed++;
      }
    }
    return removed;
  }

  /** Starts checking the appends of one producer against its current state. */
  prepareUpdate(producerId: bigint, origin: AppendOrigin): ProducerAppendInfo {
    return new ProducerAppendInfo(producerId, this.producers.get(producerId) ?? ProducerStateEntry.empty(producerId), origin);
  }

  /** Applies what `info` collected, once its batches are written. */
  update(info: ProducerAppendInfo): void {
    const current = this.producers.get(info.producerId);
    if (current) current.update(info.updatedEntry);
    else this.producers.set(info.producerId, info.updatedEntry);
    for (const txn of info.startedTransactions) insertByFirstOffset(this.ongoingTxns, { ...txn });
  }

  updateMapEndOffset(offset: bigint): void {
    this.lastMapOffset = offset;
  }

  /**
   * Writes `<mapEndOffset>.snapshot` (atomically) unless the last snapshot
   * taken or loaded is already at that offset or beyond. Returns whether it wrote.
   */
  takeSnapshot(): boolean {
    if (this.lastMapOffset <= this.lastSnapOffset) return false;
    const offset = this.lastMapOffset;
    writeFileAtomic(this.fs, join(this.dir, snapshotFileName(offset)), encodeProducerSnapshot(this.producers.values()));
    if (!this.snapshots.includes(offset)) {
      this.snapshots.push(offset);
      this.snapshots.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    }
    this.lastSnapOffset = offset;
    return true;
  }

  /**
   * After the log start moved up (DeleteRecords, retention): completed
   * transactions wholly below it are forgotten, and the state is taken to
   * describe the log from there.
   */
  onLogStartOffsetIncremented(logStartOffset: bigint): void {
    this.removeUnreplicatedTransactions(logStartOffset);
    if (this.lastMapOffset < logStartOffset) this.lastMapOffset = logStartOffset;
    this.lastSnapOffset = this.latestSnapshotOffset() ?? logStartOffset;
  }

  private removeUnreplicatedTransactions(offset: bigint): void {
    if (this.unreplicatedTxns.length === 0) return;
    for (let i = this.unreplicatedTxns.length - 1; i >= 0; i--) {
      const last = this.unreplicatedTxns[i]!.lastOffset;
      if (last !== null && last < offset) this.unreplicatedTxns.splice(i, 1);
    }
  }

  /** Forgets every producer and transaction and deletes every snapshot; the state then describes an empty log ending at `offset`. */
  truncateFullyAndStartAt(offset: bigint): void {
    this.producers.clear();
    this.ongoingTxns.length = 0;
    this.unreplicatedTxns.length = 0;
    for (const o of [...this.snapshots]) this.removeSnapshot(o);
    this.lastSnapOffset = 0n;
    this.lastMapOffset = offset;
  }

  /**
   * The LSO to record with a completed transaction in the index: the first
   * offset of the earliest transaction of another producer still open, else
   * one past the marker. Call before completeTxn.
   */
  lastStableOffset(completed: CompletedTxn): bigint {
    for (const txn of this.ongoingTxns) if (txn.producerId !== completed.producerId) return txn.firstOffset;
    return completed.lastOffset + 1n;
  }

  /** Moves a transaction from open to completed-but-unreplicated. Throws when it was not open. */
  completeTxn(completed: CompletedTxn): void {
    const i = this.ongoingTxns.findIndex((t) => t.firstOffset === completed.firstOffset);
    if (i < 0) throw new Error(`transaction of producer ${completed.producerId} at ${completed.firstOffset} was not open`);
    const [txn] = this.ongoingTxns.splice(i, 1);
    insertByFirstOffset(this.unreplicatedTxns, { ...txn!, lastOffset: completed.lastOffset });
  }

  /** Deletes the snapshot at `offset` (that of a segment that went), if there is one. */
  removeSnapshot(offset: bigint): void {
    const i = this.snapshots.indexOf(offset);
    if (i < 0) return;
    this.snapshots.splice(i, 1);
    const path = join(this.dir, snapshotFileName(offset));
    if (this.fs.exists(path)) this.fs.unlink(path);
  }

  /** Deletes the snapshots below `offset`. */
  deleteSnapshotsBefore(offset: bigint): void {
    for (const o of [...this.snapshots]) if (o < offset) this.removeSnapshot(o);
  }
}

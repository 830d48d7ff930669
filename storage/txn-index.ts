/**
 * The aborted-transaction index of one segment (`<base>.txnindex`), in
 * Kafka's layout: one 34-byte entry per transaction whose ABORT marker sits
 * in the segment, in marker order: version int16 (0), producerId int64,
 * firstOffset int64 (the transaction's first batch), lastOffset int64 (the
 * marker), lastStableOffset int64 (the log's LSO once the marker was
 * written). A read_committed fetch asks the segments from the one holding
 * its fetch offset for the entries overlapping what it returns, so the
 * consumer can drop the aborted batches.
 *
 * Invariant: entries' lastOffset grow strictly. The file is created by the
 * first append (most segments never see an abort, and have none); entries
 * are written as they are appended and fsynced with the segment.
 */
import { type Fs, readWholeFile, writeFully } from './fs.js';

export const TXN_INDEX_SUFFIX = '.txnindex';
/** Bytes of one entry. */
export const ABORTED_TXN_SIZE = 34;
const VERSION = 0;

/** One aborted transaction (Kafka's AbortedTxn). */
export interface AbortedTxn {
  producerId: bigint;
  firstOffset: bigint;
  lastOffset: bigint;
  lastStableOffset: bigint;
}

/** Entries of one segment that overlap a fetch, and whether a later segment may hold more. */
export interface TxnIndexSearchResult {
  abortedTransactions: AbortedTxn[];
  /** True when no later segment can hold an entry the fetch needs. */
  isComplete: boolean;
}

/** Kafka's wire/disk layout of `entries`. Example: one entry -> 34 bytes starting 00 00. */
export function encodeAbortedTxns(entries: readonly AbortedTxn[]): Buffer {
  const out = Buffer.allocUnsafe(entries.length * ABORTED_TXN_SIZE);
  entries.forEach((e, i) => {
    const at = i * ABORTED_TXN_SIZE;
    out.writeInt16BE(VERSION, at);
    out.writeBigInt64BE(e.producerId, at + 2);
    out.writeBigInt64BE(e.firstOffset, at + 10);
    out.writeBigInt64BE(e.lastOffset, at + 18);
    out.writeBigInt64BE(e.lastStableOffset, at + 26);
  });
  return out;
}

/**
 * The entries of a `.txnindex` file's bytes, or a message saying why they
 * cannot be read (a length that is not a whole number of entries, an
 * unknown version). Example: decodeAbortedTxns(encodeAbortedTxns([e])) -> [e].
 */
export function decodeAbortedTxns(bytes: Buffer): AbortedTxn[] | string {
  if (bytes.length % ABORTED_TXN_SIZE !== 0) return `length ${bytes.length} is not a whole number of ${ABORTED_TXN_SIZE}-byte entries`;
  const out: AbortedTxn[] = [];
  for (let at = 0; at < bytes.length; at += ABORTED_TXN_SIZE) {
    const version = bytes.readInt16BE(at);
    if (version !== VERSION) return `entry at ${at} has version ${version}`;
    out.push({
      producerId: bytes.readBigInt64BE(at + 2),
      firstOffset: bytes.readBigInt64BE(at + 10),
      lastOffset: bytes.readBigInt64BE(at + 18),
      lastStableOffset: bytes.readBigInt64BE(at + 26),
    });
  }
  return out;
}

/**
 * One segment's `.txnindex`, its entries read on first use.
 *
 * Example: after append({ producerId: 7n, firstOffset: 10n, lastOffset: 14n,
 * lastStableOffset: 15n }), collectAbortedTxns(12n, 15n) -> that entry,
 * isComplete true; collectAbortedTxns(12n, 20n) -> that entry, isComplete
 * false (a later segment may hold more); collectAbortedTxns(15n, 20n) -> none.
 */
export class TransactionIndex {
  private loaded: AbortedTxn[] | null = null;
  private fd: number | null = null;
  private dirty = false;

  constructor(
    private readonly fs: Fs,
    readonly path: string,
  ) {}

  /** Every entry, oldest first; an unreadable file counts as empty (see sanityProblem). */
  get entries(): readonly AbortedTxn[] {
    return this.load();
  }

  /** Why the file on disk cannot be trusted, or null (also when there is none). */
  sanityProblem(): string | null {
    const bytes = readWholeFile(this.fs, this.path);
    if (bytes === null) return null;
    const decoded = decodeAbortedTxns(bytes);
    if (typeof decoded === 'string') return decoded;
    this.loaded = decoded;
    return null;
  }

  /**
   * Adds an entry at the end of the file. Throws RangeError when its
   * lastOffset does not follow the last entry's (as Kafka refuses it).
   */
  append(txn: AbortedTxn): void {
    const entries = this.load();
    const last = entries[entries.length - 1];
    if (last !== undefined && txn.lastOffset <= last.lastOffset) {
      throw new RangeError(`aborted transaction ending at ${txn.lastOffset} does not follow the one ending at ${last.lastOffset} in ${this.path}`);
    }
    const fd = this.open();
    writeFully(this.fs, fd, encodeAbortedTxns([txn]), entries.length * ABORTED_TXN_SIZE);
    entries.push({ ...txn });
    this.dirty = true;
  }

  /**
   * Kafka's TransactionIndex.collectAbortedTxns: the entries whose
   * transaction overlaps [fetchOffset, upperBoundOffset), i.e. lastOffset >=
   * fetchOffset and firstOffset < upperBoundOffset; complete once an entry's
   * lastStableOffset reaches upperBoundOffset (every transaction a later
   * segment records ends after a marker at or above it).
   */
  collectAbortedTxns(fetchOffset: bigint, upperBoundOffset: bigint): TxnIndexSearchResult {
    const out: AbortedTxn[] = [];
    for (const txn of this.load()) {
      if (txn.lastOffset >= fetchOffset && txn.firstOffset < upperBoundOffset) out.push({ ...txn });
      if (txn.lastStableOffset >= upperBoundOffset) return { abortedTransactions: out, isComplete: true };
    }
    return { abortedTransactions: out, isComplete: false };
  }

  /** Drops the entries whose marker is at or after `offset`. */
  truncateTo(offset: bigint): void {
    const entries = this.load();
    let keep = entries.length;
    while (keep > 0 && entries[keep - 1]!.lastOffset >= offset) keep--;
    if (keep === entries.length) return;
    entries.length = keep;
    this.fs.ftruncate(this.open(), keep * ABORTED_TXN_SIZE);
    this.dirty = true;
  }

  /** Forgets every entry (for a segment being rebuilt from its batches). */
  reset(): void {
    this.loaded = [];
    if (this.fd !== null || this.fs.exists(this.path)) {
      this.fs.ftruncate(this.open(), 0);
      this.dirty = true;
    }
  }

  flush(): void {
    if (this.fd !== null && this.dirty) {
      this.fs.fsync(this.fd);
      this.dirty = false;
    }
  }

  close(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    this.fs.close(fd);
  }

  /** Closes and removes the file. */
  delete(): void {
    this.close();
    if (this.fs.exists(this.path)) this.fs.unlink(this.path);
    this.loaded = [];
  }

  private load(): AbortedTxn[] {
    if (this.loaded !== null) return this.loaded;
    const bytes = this.fd === null ? readWholeFile(this.fs, this.path) : null;
    const decoded = bytes === null ? [] : decodeAbortedTxns(bytes);
    this.loaded = typeof decoded === 'string' ? [] : decoded;
    return this.loaded;
  }

  private open(): number {
    if (this.fd === null) {
      this.load();
      this.fd = this.fs.open(this.path, 'create');
    }
    return this.fd;
  }
}

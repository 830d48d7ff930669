/**
 * RecordBatch v2 (magic 2) as stored on disk and sent on the wire. Offsets below
 * are byte positions in the 61-byte batch header; records follow it, compressed
 * as one block when the codec bits are set.
 */
import { crc32c as nativeCrc32c } from '@node-rs/crc32';

export const BASE_OFFSET = 0;
export const BATCH_LENGTH = 8;
export const PARTITION_LEADER_EPOCH = 12;
export const MAGIC = 16;
export const CRC = 17;
export const ATTRIBUTES = 21;
export const LAST_OFFSET_DELTA = 23;
export const BASE_TIMESTAMP = 27;
export const MAX_TIMESTAMP = 35;
export const PRODUCER_ID = 43;
export const PRODUCER_EPOCH = 51;
export const BASE_SEQUENCE = 53;
export const RECORD_COUNT = 57;
export const RECORDS = 61;
export const BATCH_HEADER_SIZE = 61;
/** baseOffset and batchLength: the part of the header not counted in batchLength. */
export const LOG_OVERHEAD = 12;

export const COMPRESSION_MASK = 0x07;
export const TIMESTAMP_TYPE_LOG_APPEND = 0x08;
export const TRANSACTIONAL = 0x10;
export const CONTROL = 0x20;
export const DELETE_HORIZON = 0x40;

export enum Compression {
  None = 0,
  Gzip = 1,
  Snappy = 2,
  Lz4 = 3,
  Zstd = 4,
}

export interface BatchHeader {
  baseOffset: bigint;
  /** Bytes after the batchLength field; the whole batch is batchLength + 12. */
  batchLength: number;
  partitionLeaderEpoch: number;
  magic: number;
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  maxTimestamp: bigint;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

/** Reads the header of the batch at `at`; the caller checks that 61 bytes are there. */
export function readBatchHeader(buf: Buffer, at = 0): BatchHeader {
  return {
    baseOffset: buf.readBigInt64BE(at + BASE_OFFSET),
    batchLength: buf.readInt32BE(at + BATCH_LENGTH),
    partitionLeaderEpoch: buf.readInt32BE(at + PARTITION_LEADER_EPOCH),
    magic: buf.readInt8(at + MAGIC),
    crc: buf.readUInt32BE(at + CRC),
    attributes: buf.readInt16BE(at + ATTRIBUTES),
    lastOffsetDelta: buf.readInt32BE(at + LAST_OFFSET_DELTA),
    baseTimestamp: buf.readBigInt64BE(at + BASE_TIMESTAMP),
    maxTimestamp: buf.readBigInt64BE(at + MAX_TIMESTAMP),
    producerId: buf.readBigInt64BE(at + PRODUCER_ID),
    producerEpoch: buf.readInt16BE(at + PRODUCER_EPOCH),
    baseSequence: buf.readInt32BE(at + BASE_SEQUENCE),
    recordCount: buf.readInt32BE(at + RECORD_COUNT),
  };
}

/** CRC-32C (Castagnoli) of buf[start, end), as RecordBatch v2 uses from byte 21 to its end. */
export function crc32c(buf: Buffer, start = 0, end = buf.length): number {
  return nativeCrc32c(start === 0 && end === buf.length ? buf : buf.subarray(start, end)) >>> 0;
}

/** True when the stored CRC of the batch at `at` (of `size` bytes in all) matches its bytes. */
export function batchCrcValid(buf: Buffer, at: number, size: number): boolean {
  return buf.readUInt32BE(at + CRC) === crc32c(buf, at + ATTRIBUTES, at + size);
}

/** Rewrites the CRC of the batch at `at` after its attributes or later bytes changed. */
export function writeBatchCrc(buf: Buffer, at: number, size: number): void {
  buf.writeUInt32BE(crc32c(buf, at + ATTRIBUTES, at + size), at + CRC);
}

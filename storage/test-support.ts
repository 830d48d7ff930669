/** Helpers the storage tests share. */
import CRC32 from 'crc-32';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BatchHeader, readBatchHeader } from '../wire/record-batch.js';
import { type LogConfig } from './log-config.js';
import { PartitionLog } from './log.js';

export interface LogFixtures {
  /** A new empty directory, removed by `cleanup`. */
  tempDir(): string;
  /** Opens a log that `cleanup` closes, unless the test already has. */
  open(dir: string, config: LogConfig, opts?: Parameters<typeof PartitionLog.open>[2]): PartitionLog;
  /** Closes the logs and removes the directories made since the last call; pass it to afterEach. */
  cleanup(): void;
}

/** Temporary directories named `<tmp>/<prefix>XXXXXX` and the logs opened in them. */
export function logFixtures(prefix: string): LogFixtures {
  const dirs: string[] = [];
  const logs: PartitionLog[] = [];
  return {
    tempDir() {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    open(dir, config, opts = {}) {
      const log = PartitionLog.open(dir, config, opts);
      logs.push(log);
      return log;
    },
    cleanup() {
      for (const l of logs.splice(0)) {
        try {
          l.close();
        } catch {
          // already offline or closed by the test
        }
      }
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** Every batch the log serves from its start, in order: its header and its bytes. */
export function* servedBatches(log: PartitionLog): Generator<{ header: BatchHeader; bytes: Buffer }> {
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const buf = log.readBuffer(offset, 1 << 20)!;
    if (buf.length === 0) break;
    for (let at = 0; at < buf.length; ) {
      const header = readBatchHeader(buf, at);
      const size = header.batchLength + 12;
      yield { header, bytes: buf.subarray(at, at + size) };
      at += size;
      offset = header.baseOffset + BigInt(header.lastOffsetDelta) + 1n;
    }
  }
}

/** One legacy magic 1 message holding `value`, offset 0, no key. */
export function legacyEntry(timestamp: bigint, value: string): Buffer {
  const content = Buffer.alloc(2 + 8 + 4 + 4 + value.length);
  content.writeInt8(1, 0);
  content.writeBigInt64BE(timestamp, 2);
  content.writeInt32BE(-1, 10);
  content.writeInt32BE(value.length, 14);
  content.write(value, 18);
  const head = Buffer.alloc(16);
  head.writeInt32BE(content.length + 4, 8);
  head.writeUInt32BE(CRC32.buf(content) >>> 0, 12);
  return Buffer.concat([head, content]);
}

import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { crc32c } from '../wire/record-batch.js';
import { nodeFs } from './fs.js';
import {
  ProducerStateEntry,
  ProducerStateManager,
  decodeProducerSnapshot,
  decrementSequence,
  encodeProducerSnapshot,
  incrementSequence,
  snapshotFileName,
} from './producer-state.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-psm-'));
  dirs.push(d);
  return d;
}

describe('sequences', () => {
  it('wrap at Integer.MAX_VALUE both ways', () => {
    expect(incrementSequence(2147483647, 1)).toBe(0);
    expect(incrementSequence(2147483646, 3)).toBe(1);
    expect(decrementSequence(1, 3)).toBe(2147483646);
    expect(decrementSequence(10, 3)).toBe(7);
  });
});

describe('ProducerAppendInfo', () => {
  const psm = (): ProducerStateManager => new ProducerStateManager(nodeFs, tempDir());

  it('takes any first sequence from an unknown producer, then demands the next one', () => {
    const m = psm();
    const info = m.prepareUpdate(7n, 'client');
    expect(info.appendDataBatch(0, 5, 6, 1n, 0n, 1n, false)).toBeNull();
    m.update(info);
    const next = m.prepareUpdate(7n, 'client');
    expect(next.appendDataBatch(0, 8, 8, 1n, 2n, 2n, false)).toMatchObject({ errorCode: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER });
    expect(next.appendDataBatch(0, 7, 7, 1n, 2n, 2n, false)).toBeNull();
    m.update(next);
    expect(m.lastEntry(7n)!.lastSeq).toBe(7);
  });

  it('skips the sequence check for the coordinator and every check for replication', () => {
    const m = psm();
    const first = m.prepareUpdate(7n, 'client');
    first.appendDataBatch(3, 0, 0, 1n, 0n, 0n, false);
    m.update(first);
    expect(m.prepareUpdate(7n, 'coordinator').appendDataBatch(3, -1, -1, 1n, 1n, 1n, false)).toBeNull();
    expect(m.prepareUpdate(7n, 'coordinator').appendDataBatch(2, -1, -1, 1n, 1n, 1n, false)).toMatchObject({ errorCode: ErrorCode.INVALID_PRODUCER_EPOCH });
    expect(m.prepareUpdate(7n, 'replication').appendDataBatch(2, 9, 9, 1n, 1n, 1n, false)).toBeNull();
  });

  it('computes the LSO recorded with an abort from the other producers still open', () => {
    const m = psm();
    for (const [pid, offset] of [[7n, 10n], [8n, 12n]] as const) {
      const info = m.prepareUpdate(pid, 'client');
      info.appendDataBatch(0, 0, 0, 1n, offset, offset, true);
      m.update(info);
    }
    expect(m.firstUnstableOffset()).toBe(10n);
    const done = { producerId: 7n, firstOffset: 10n, lastOffset: 13n, isAborted: true };
    expect(m.lastStableOffset(done)).toBe(12n);
    m.completeTxn(done);
    expect(m.firstUnstableOffset()).toBe(10n); // unreplicated until the high watermark passes 13
    m.onHighWatermarkUpdated(14n);
    expect(m.firstUnstableOffset()).toBe(12n);
  });
});

describe('snapshots', () => {
  it("uses Kafka's layout: version 1, CRC-32C of the rest, count, 46-byte entries", () => {
    const e = new ProducerStateEntry(7n, 2, 5, 1234n, 40n, { lastSeq: 9, lastOffset: 44n, offsetDelta: 3, timestamp: 1234n });
    const bytes = encodeProducerSnapshot([e]);
    expect(bytes.length).toBe(10 + 46);
    expect(bytes.readInt16BE(0)).toBe(1);
    expect(bytes.readUInt32BE(2)).toBe(crc32c(bytes, 6));
    expect(bytes.readInt32BE(6)).toBe(1);
    expect([bytes.readBigInt64BE(10), bytes.readInt16BE(18), bytes.readInt32BE(20), bytes.readBigInt64BE(24)]).toEqual([7n, 2, 9, 44n]);
    expect([bytes.readInt32BE(32), bytes.readBigInt64BE(36), bytes.readInt32BE(44), bytes.readBigInt64BE(48)]).toEqual([3, 1234n, 5, 40n]);
    const [back] = decodeProducerSnapshot(bytes) as ProducerStateEntry[];
    expect(back).toMatchObject({ producerId: 7n, producerEpoch: 2, coordinatorEpoch: 5, lastTimestamp: 1234n, currentTxnFirstOffset: 40n });
    expect(back!.batches).toEqual([{ lastSeq: 9, lastOffset: 44n, offsetDelta: 3, timestamp: 1234n }]);
    bytes[30]! ^= 1;
    expect(typeof decodeProducerSnapshot(bytes)).toBe('string');
    expect(encodeProducerSnapshot([]).length).toBe(10);
  });

  it('loads the newest snapshot at or below the end, deleting corrupt ones and those out of range', () => {
    const dir = tempDir();
    const m = new ProducerStateManager(nodeFs, dir);
    const info = m.prepareUpdate(7n, 'client');
    info.appendDataBatch(0, 0, 0, 1n, 0n, 0n, true);
    m.update(info);
    m.updateMapEndOffset(5n);
    expect(m.takeSnapshot()).toBe(true);
    expect(m.takeSnapshot()).toBe(false);
    m.updateMapEndOffset(9n);
    m.takeSnapshot();
    writeFileSync(join(dir, snapshotFileName(20n)), encodeProducerSnapshot([]));
    const again = new ProducerStateManager(nodeFs, dir);
    writeFileSync(join(dir, snapshotFileName(9n)), Buffer.from('torn'));
    again.truncateAndReload(0n, 10n, 0);
    expect(again.mapEndOffset).toBe(5n);
    expect(again.firstUnstableOffset()).toBe(0n);
    expect(readdirSync(dir).sort()).toEqual([snapshotFileName(5n)]);
  });
});

import { describe, expect, it } from 'vitest';
import { buildBatch } from '../../wire/record-batch.js';
import { followerBatches } from './replica-fetcher.js';

const batch = (baseOffset: bigint, n: number, ts: bigint): Buffer =>
  buildBatch({ baseOffset, records: Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`v${i}`), timestamp: ts + BigInt(i) })) });

describe('the batches a follower takes from a fetch', () => {
  it('takes every whole batch with its offsets, last offset and max timestamp', () => {
    const a = batch(10n, 3, 1000n);
    const b = batch(13n, 2, 2000n);
    const { batches, corrupt } = followerBatches(Buffer.concat([a, b]));
    expect(corrupt).toBe(false);
    expect(batches).toEqual([
      { baseOffset: 10n, lastOffset: 12n, maxTimestamp: 1002n, position: 0, size: a.length },
      { baseOffset: 13n, lastOffset: 14n, maxTimestamp: 2001n, position: a.length, size: b.length },
    ]);
  });

  it('leaves out a batch the fetch cut short, which the next fetch brings whole', () => {
    const a = batch(0n, 2, 1n);
    const b = batch(2n, 5, 1n);
    const { batches, corrupt } = followerBatches(Buffer.concat([a, b.subarray(0, b.length - 7)]));
    expect(corrupt).toBe(false);
    expect(batches.map((x) => x.baseOffset)).toEqual([0n]);
  });

  it('stops at a batch whose CRC does not match, and says so', () => {
    const a = batch(0n, 2, 1n);
    const b = Buffer.from(batch(2n, 2, 1n));
    b[b.length - 1] ^= 0xff;
    const { batches, corrupt } = followerBatches(Buffer.concat([a, b, batch(4n, 1, 1n)]));
    expect(corrupt).toBe(true);
    expect(batches.map((x) => x.baseOffset)).toEqual([0n]);
  });
});

import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { DeliveryState } from './persister.js';
import { AcknowledgeType, SharePartition, type SharePartitionLimits } from './share-partition.js';
import { mergeStateBatches } from './state-batches.js';

const LIMITS: SharePartitionLimits = { lockDurationMs: 1000, deliveryCountLimit: 3, maxInFlightRecords: 100 };
const batches = (...ranges: [number, number][]) => ranges.map(([a, b]) => ({ baseOffset: BigInt(a), lastOffset: BigInt(b) }));
const ack = (first: number, last: number, ...types: number[]) => ({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: types });

describe('SharePartition', () => {
  it('gives each available record to one member at a time, with its delivery count', () => {
    const sp = new SharePartition(0, 0n, [], 0);
    expect(sp.acquire('a', batches([0, 4], [5, 9]), 6, true, LIMITS, 0)).toEqual([{ firstOffset: 0n, lastOffset: 9n, deliveryCount: 1 }]);
    // Everything is taken: another member gets nothing from the same batches.
    expect(sp.acquire('b', batches([0, 4], [5, 9]), 10, true, LIMITS, 0)).toEqual([]);
    expect(sp.nextFetchOffset(LIMITS)).toBe(10n);
  });

  it('stops at max records in record-limit mode, and finishes a started batch in batch-optimized mode', () => {
    const strict = new SharePartition(0, 0n, [], 0);
    expect(strict.acquire('a', batches([0, 4], [5, 9]), 3, false, LIMITS, 0)).toEqual([{ firstOffset: 0n, lastOffset: 2n, deliveryCount: 1 }]);
    const whole = new SharePartition(0, 0n, [], 0);
    expect(whole.acquire('a', batches([0, 4], [5, 9]), 3, true, LIMITS, 0)).toEqual([{ firstOffset: 0n, lastOffset: 4n, deliveryCount: 1 }]);
  });

  it('accepts, releases and rejects only what the member holds, all or nothing, and moves the start offset past what is done', () => {
    const sp = new SharePartition(0, 0n, [], 0);
    sp.acquire('a', batches([0, 5]), 10, true, LIMITS, 0);
    // Member b holds nothing: the whole acknowledgement is refused and nothing changes.
    expect(sp.acknowledge('b', [ack(0, 1, AcknowledgeType.ACCEPT)], LIMITS, 0)).toMatchObject({ errorCode: ErrorCode.INVALID_RECORD_STATE, errorMessage: 'Member is not the owner of batch record' });
    // Past anything acquired: a bad request, as Kafka answers it.
    expect(sp.acknowledge('a', [ack(0, 1, AcknowledgeType.ACCEPT), ack(6, 6, AcknowledgeType.ACCEPT)], LIMITS, 0)).toMatchObject({
      errorCode: ErrorCode.INVALID_REQUEST,
      errorMessage: 'Batch record not found. The first offset in request is past acquired records.',
    });
    expect(sp.stateOf(0n).state).toBe('acquired');
    const r = sp.acknowledge('a', [ack(0, 5, AcknowledgeType.ACCEPT, AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.GAP, AcknowledgeType.ACCEPT)], LIMITS, 0);
    expect(r.errorCode).toBe(ErrorCode.NONE);
    expect(sp.startOffset).toBe(2n);
    expect(r.change!.startOffset).toBe(2n);
    expect(r.change!.stateBatches).toEqual([
      { firstOffset: 2n, lastOffset: 2n, deliveryState: DeliveryState.AVAILABLE, deliveryCount: 1 },
      { firstOffset: 3n, lastOffset: 4n, deliveryState: DeliveryState.ARCHIVED, deliveryCount: 1 },
      { firstOffset: 5n, lastOffset: 5n, deliveryState: DeliveryState.ACKNOWLEDGED, deliveryCount: 1 },
    ]);
    // The released record goes out again, counted twice; acknowledging it twice is refused.
    expect(sp.acquire('b', batches([0, 5]), 10, true, LIMITS, 0)).toEqual([{ firstOffset: 2n, lastOffset: 2n, deliveryCount: 2 }]);
    expect(sp.acknowledge('b', [ack(2, 2, AcknowledgeType.ACCEPT)], LIMITS, 0).errorCode).toBe(ErrorCode.NONE);
    expect(sp.startOffset).toBe(6n);
    // Behind the start offset now: acknowledging it again changes nothing and is not an error, as in Kafka.
    expect(sp.acknowledge('b', [ack(2, 2, AcknowledgeType.ACCEPT)], LIMITS, 0)).toMatchObject({ errorCode: ErrorCode.NONE, change: null });
    // A record released is no longer held: acknowledging it is refused.
    expect(sp.acquire('a', batches([6, 7]), 10, true, LIMITS, 0)).toEqual([{ firstOffset: 6n, lastOffset: 7n, deliveryCount: 1 }]);
    expect(sp.acknowledge('a', [ack(7, 7, AcknowledgeType.RELEASE)], LIMITS, 0).errorCode).toBe(ErrorCode.NONE);
    expect(sp.acknowledge('a', [ack(6, 7, AcknowledgeType.ACCEPT)], LIMITS, 0)).toMatchObject({ errorCode: ErrorCode.INVALID_RECORD_STATE, errorMessage: 'The offset cannot be acknowledged. The offset is not acquired.' });
    expect(sp.acknowledge('a', [ack(6, 6, AcknowledgeType.ACCEPT)], LIMITS, 0).errorCode).toBe(ErrorCode.NONE);
    expect(sp.startOffset).toBe(7n);
    expect(sp.inFlightCount).toBe(1);
  });

  it('archives a record released or expired at the delivery limit', () => {
    const sp = new SharePartition(0, 0n, [], 0);
    for (let delivery = 1; delivery <= 3; delivery++) {
      expect(sp.acquire('a', batches([0, 0]), 10, true, LIMITS, 0)).toEqual([{ firstOffset: 0n, lastOffset: 0n, deliveryCount: delivery }]);
      if (delivery < 3) expect(sp.acknowledge('a', [ack(0, 0, AcknowledgeType.RELEASE)], LIMITS, 0).errorCode).toBe(ErrorCode.NONE);
    }
    // The third delivery's lock expires: archived, never delivered again.
    expect(sp.expireLocks(LIMITS, 999)).toBeNull();
    const change = sp.expireLocks(LIMITS, 1000);
    expect(change!.startOffset).toBe(1n);
    expect(sp.acquire('a', batches([0, 0]), 10, true, LIMITS, 2000)).toEqual([]);
  });

  it('makes a record whose lock expired available again, and a renewal keeps the lock', () => {
    const sp = new SharePartition(0, 0n, [], 0);
    sp.acquire('a', batches([0, 1]), 10, true, LIMITS, 0);
    expect(sp.acknowledge('a', [ack(1, 1, AcknowledgeType.RENEW)], LIMITS, 500).change).toBeNull();
    sp.expireLocks(LIMITS, 1000);
    expect(sp.stateOf(0n)).toMatchObject({ state: 'available', deliveryCount: 1 });
    expect(sp.stateOf(1n)).toMatchObject({ state: 'acquired', memberId: 'a' });
    expect(sp.nextLockExpiry()).toBe(1500);
  });

  it('never has more records in flight than the limit', () => {
    const sp = new SharePartition(0, 0n, [], 0);
    const small = { ...LIMITS, maxInFlightRecords: 4 };
    expect(sp.acquire('a', batches([0, 9]), 100, true, small, 0)).toEqual([{ firstOffset: 0n, lastOffset: 3n, deliveryCount: 1 }]);
    expect(sp.nextFetchOffset(small)).toBeNull();
    sp.acknowledge('a', [ack(0, 1, AcknowledgeType.ACCEPT)], small, 0);
    expect(sp.acquire('a', batches([0, 9]), 100, true, small, 0)).toEqual([{ firstOffset: 4n, lastOffset: 5n, deliveryCount: 1 }]);
  });

  it('starts from persisted state: acquired records were persisted as available with their count', () => {
    const sp = new SharePartition(3, 10n, [
      { firstOffset: 10n, lastOffset: 11n, deliveryState: DeliveryState.ACKNOWLEDGED, deliveryCount: 1 },
      { firstOffset: 12n, lastOffset: 12n, deliveryState: DeliveryState.AVAILABLE, deliveryCount: 2 },
      { firstOffset: 13n, lastOffset: 13n, deliveryState: DeliveryState.ARCHIVED, deliveryCount: 1 },
    ], 0);
    expect(sp.startOffset).toBe(12n);
    expect(sp.acquire('a', batches([10, 15]), 10, true, LIMITS, 0)).toEqual([
      { firstOffset: 12n, lastOffset: 12n, deliveryCount: 3 },
      { firstOffset: 14n, lastOffset: 15n, deliveryCount: 1 },
    ]);
  });

  it('undoes a change whose persisting failed', () => {
    const sp = new SharePartition(0, 0n, [], 0);
    sp.acquire('a', batches([0, 2]), 10, true, LIMITS, 0);
    const r = sp.acknowledge('a', [ack(0, 2, AcknowledgeType.ACCEPT)], LIMITS, 0);
    expect(sp.startOffset).toBe(3n);
    r.change!.rollback();
    expect(sp.startOffset).toBe(0n);
    expect(sp.stateOf(1n)).toMatchObject({ state: 'acquired', memberId: 'a' });
  });
});

describe('mergeStateBatches', () => {
  it('lays updates over the state, cuts it at the start offset and joins equal neighbours', () => {
    const A = DeliveryState.AVAILABLE;
    const K = DeliveryState.ACKNOWLEDGED;
    expect(mergeStateBatches([{ firstOffset: 0n, lastOffset: 9n, deliveryState: A, deliveryCount: 1 }], [{ firstOffset: 3n, lastOffset: 4n, deliveryState: K, deliveryCount: 1 }], 2n)).toEqual([
      { firstOffset: 2n, lastOffset: 2n, deliveryState: A, deliveryCount: 1 },
      { firstOffset: 3n, lastOffset: 4n, deliveryState: K, deliveryCount: 1 },
      { firstOffset: 5n, lastOffset: 9n, deliveryState: A, deliveryCount: 1 },
    ]);
    expect(mergeStateBatches([{ firstOffset: 0n, lastOffset: 1n, deliveryState: A, deliveryCount: 1 }], [{ firstOffset: 2n, lastOffset: 3n, deliveryState: A, deliveryCount: 1 }], 0n)).toEqual([
      { firstOffset: 0n, lastOffset: 3n, deliveryState: A, deliveryCount: 1 },
    ]);
  });
});

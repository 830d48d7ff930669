import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { ZERO_UUID } from '../../wire/uuid.js';
import {
  FETCH_SESSION_CACHE_SHARDS,
  FetchSessionCache,
  INVALID_SESSION_ID,
  nextEpoch,
  partitionKey,
  type FetchPartitionKey,
  type FetchRequestPartition,
} from './fetch-session.js';

function fetchData(n: number, topic = 't'): Map<string, FetchRequestPartition> {
  const m = new Map<string, FetchRequestPartition>();
  for (let i = 0; i < n; i++) {
    const key: FetchPartitionKey = { topicId: ZERO_UUID, topic, partition: i };
    m.set(partitionKey(key), { key, data: { fetchOffset: 0n, logStartOffset: -1n, maxBytes: 1000, currentLeaderEpoch: -1, lastFetchedEpoch: -1 } });
  }
  return m;
}

const answer = (key: FetchPartitionKey) => ({
  key,
  outcome: { errorCode: 0, highWatermark: 0n, logStartOffset: 0n, recordsSize: 0, preferredReadReplica: -1, divergingEpoch: false },
});

/** A full fetch of `size` partitions; returns the new session id (0 when none was made). */
function open(cache: FetchSessionCache, size: number, follower = false): number {
  const data = fetchData(size);
  const ctx = cache.newContext(12, 0, 0, follower, data, [], () => undefined);
  return ctx.updateAndGenerateResponse([...data.values()].map((p) => answer(p.key))).sessionId;
}

/** One session per shard: with 8 slots each shard holds one, and the ninth session goes to shard 0 again. */
function fill(cache: FetchSessionCache, size: number, follower = false): number[] {
  return Array.from({ length: FETCH_SESSION_CACHE_SHARDS }, () => open(cache, size, follower));
}

describe('fetch session epochs', () => {
  it('advance by one, wrap to 1 after the largest int32, and -1 stays -1', () => {
    expect(nextEpoch(0)).toBe(1);
    expect(nextEpoch(41)).toBe(42);
    expect(nextEpoch(2147483647)).toBe(1);
    expect(nextEpoch(-1)).toBe(-1);
  });
});

describe('FetchSessionCache eviction (Kafka FetchSessionCacheShard)', () => {
  it('gives each shard slots/8 sessions, ids in the shard range', () => {
    let now = 0;
    const cache = new FetchSessionCache({ maxSlots: 8, now: () => now });
    const ids = fill(cache, 2);
    const range = Math.floor(2147483647 / 8);
    ids.forEach((id, shard) => {
      expect(id).toBeGreaterThanOrEqual(Math.max(1, shard * range));
      expect(id).toBeLessThan((shard + 1) * range);
    });
    expect(cache.size).toBe(8);
    // Shard 0 is full and its session is young: a consumer cannot evict it.
    now = 1000;
    expect(open(cache, 5)).toBe(INVALID_SESSION_ID);
    expect(new FetchSessionCache({ maxSlots: 7 }).maybeCreateSession(false, 1, false, () => new Map())).toBe(INVALID_SESSION_ID);
  });

  it('evicts a session unused for more than two minutes, whoever asks', () => {
    let now = 0;
    const cache = new FetchSessionCache({ maxSlots: 8, now: () => now });
    const [first] = fill(cache, 10);
    now = 120_001;
    const id = open(cache, 1);
    expect(id).not.toBe(INVALID_SESSION_ID);
    expect(cache.get(first!)).toBeUndefined();
  });

  it("lets a follower's session evict a young consumer session, but not a young follower session", () => {
    let now = 0;
    const cache = new FetchSessionCache({ maxSlots: 8, now: () => now });
    const [consumer] = fill(cache, 10);
    now = 10;
    expect(open(cache, 1, true)).not.toBe(INVALID_SESSION_ID);
    expect(cache.get(consumer!)).toBeUndefined();
    const followers = new FetchSessionCache({ maxSlots: 8, now: () => now });
    fill(followers, 1, true);
    expect(open(followers, 50, true)).toBe(INVALID_SESSION_ID);
  });

  it('lets a larger session evict a smaller one that was already old when last used, but not an equal one', () => {
    let now = 0;
    const make = () => {
      const cache = new FetchSessionCache({ maxSlots: 8, now: () => now });
      now = 0;
      const ids = fill(cache, 2);
      // Used again (incrementally) after two minutes of life: from then on it may be evicted by size.
      now = 130_000;
      for (const id of ids) cache.newContext(12, id, 1, false, new Map(), [], () => undefined).updateAndGenerateResponse([]);
      now = 130_001;
      return { cache, shard0: ids[0]! };
    };
    let { cache, shard0 } = make();
    expect(open(cache, 2)).toBe(INVALID_SESSION_ID);
    expect(cache.get(shard0)).toBeDefined();
    ({ cache, shard0 } = make());
    expect(open(cache, 3)).not.toBe(INVALID_SESSION_ID);
    expect(cache.get(shard0)).toBeUndefined();
  });
});

describe('FetchSessionCache contexts (Kafka FetchManager.newContext)', () => {
  it('hands out the context each session id and epoch call for', () => {
    const cache = new FetchSessionCache({ maxSlots: 1000 });
    expect(cache.newContext(12, 0, -1, false, fetchData(1), [], () => undefined).kind).toBe('sessionless');
    expect(cache.newContext(12, 0, 0, false, fetchData(1), [], () => undefined).kind).toBe('full');
    expect(cache.newContext(6, 0, -1, false, fetchData(1), [], () => undefined).kind).toBe('sessionless');
    const id = open(cache, 2);
    const inc = cache.newContext(12, id, 1, false, new Map(), [], () => undefined);
    expect(inc.kind).toBe('incremental');
    expect(cache.get(id)!.epoch).toBe(2);
    // The answer is generated against the epoch the request moved to; a duplicate in between spoils it.
    cache.newContext(12, id, 2, false, new Map(), [], () => undefined);
    expect(inc.updateAndGenerateResponse([]).errorCode).toBe(ErrorCode.INVALID_FETCH_SESSION_EPOCH);
    const err = cache.newContext(12, id, 9, false, new Map(), [], () => undefined);
    expect(err.updateAndGenerateResponse([])).toEqual({ errorCode: ErrorCode.INVALID_FETCH_SESSION_EPOCH, sessionId: 0, partitions: [] });
  });

  it('moves partitions that returned records to the back of the session', () => {
    const cache = new FetchSessionCache({ maxSlots: 1000 });
    const id = open(cache, 3);
    const ctx = cache.newContext(12, id, 1, false, new Map(), [], () => undefined);
    const parts = ctx.partitions();
    const withData = { ...answer(parts[0]!.key), outcome: { ...answer(parts[0]!.key).outcome, recordsSize: 10 } };
    const out = ctx.updateAndGenerateResponse([withData, answer(parts[1]!.key), answer(parts[2]!.key)]);
    expect(out.partitions.map((p) => p.key.partition)).toEqual([0]);
    expect(cache.newContext(12, id, 2, false, new Map(), [], () => undefined).partitions().map((p) => p.key.partition)).toEqual([1, 2, 0]);
  });
});

import { describe, expect, it } from 'vitest';
import type { PartitionState } from '../metadata/metadata-image.js';
import { ISR_RETRY_BACKOFF_MAX_MS, ISR_RETRY_BACKOFF_MS, Partition } from './partition.js';

const state = (isr: number[], leaderEpoch = 3): PartitionState => ({ partition: 0, leader: 1, leaderEpoch, replicas: [1, 2, 3], isr, offlineReplicas: [] });

describe('Partition', () => {
  it('counts the least log end of the ISR, and of members an ISR change would add, for the high watermark', () => {
    const p = new Partition('t', 0);
    p.makeLeader(state([1, 2]), 1, 1000);
    // Follower 2 has not fetched under this epoch: nothing is committed beyond what it is known to have.
    expect(p.highWatermarkCandidate(state([1, 2]), 1, 10n)).toBe(-1n);
    p.updateFollowerFetchState(2, 7n, 10n, 1001);
    p.updateFollowerFetchState(3, 5n, 10n, 1001);
    expect(p.highWatermarkCandidate(state([1, 2]), 1, 10n)).toBe(7n);
    // 3 is being added: until the image shows the outcome, it counts.
    expect(p.beginIsrChange(state([1, 2]), [1, 2, 3], 1002)).toEqual([1, 2, 3]);
    expect(p.highWatermarkCandidate(state([1, 2]), 1, 10n)).toBe(5n);
    p.endIsrChange('done', 1003);
    expect(p.highWatermarkCandidate(state([1, 2]), 1, 10n)).toBe(5n);
    p.settlePendingIsr(state([1, 2, 3]), 1);
    expect(p.pendingIsrMembers).toBeNull();
    // A pending change of an older epoch does not count.
    expect(p.beginIsrChange(state([1, 2, 3]), [1, 2], 1004)).toEqual([1, 2]);
    expect(p.highWatermarkCandidate(state([1, 2], 4), 1, 10n)).toBe(7n);
  });

  it('sees a follower caught up when it has what the leader had, now or at its previous fetch; lagging ones after the lag time', () => {
    const p = new Partition('t', 0);
    p.makeLeader(state([1, 2, 3]), 1, 0);
    p.updateFollowerFetchState(2, 10n, 10n, 100);
    p.updateFollowerFetchState(3, 4n, 10n, 100);
    // 2 is behind the leader's new end, but has what the leader had at its previous fetch.
    p.updateFollowerFetchState(2, 10n, 15n, 200);
    expect(p.follower(2)!.lastCaughtUpMs).toBe(100);
    expect(p.follower(3)!.lastCaughtUpMs).toBe(0);
    expect(p.laggingReplicas(state([1, 2, 3]), 1, 25_050, 25_000)).toEqual([3]);
    // A new leadership forgets the followers; its ISR members start as caught up.
    expect(p.makeLeader(state([1, 2, 3], 4), 1, 30_000)).toBe(true);
    expect(p.follower(3)).toMatchObject({ leo: -1n, lastCaughtUpMs: 30_000 });
    expect(p.makeLeader(state([1, 2, 3], 4), 1, 31_000)).toBe(false);
  });

  it('asks one ISR change at a time, keeps what an earlier one proposed, and backs off after the store failed', () => {
    const p = new Partition('t', 0);
    p.makeLeader(state([1]), 1, 0);
    expect(p.beginIsrChange(state([1]), [1, 2], 0)).toEqual([1, 2]);
    expect(p.beginIsrChange(state([1]), [1, 3], 1)).toBeNull();
    p.endIsrChange('unavailable', 10);
    expect(p.beginIsrChange(state([1]), [1, 3], 10 + ISR_RETRY_BACKOFF_MS - 1)).toBeNull();
    // The earlier proposal may have landed: it stays part of the next one.
    expect(p.beginIsrChange(state([1]), [1, 3], 10 + ISR_RETRY_BACKOFF_MS)).toEqual([1, 2, 3]);
    // Each failure in a row doubles the wait, up to the cap; a success resets it.
    let now = 1000;
    let waited = 0;
    for (let i = 0; i < 10; i++) {
      p.endIsrChange('unavailable', now);
      let t = now;
      while (p.beginIsrChange(state([1]), [1, 2], t) === null) t += 50;
      waited = t - now;
      now = t;
    }
    expect(waited).toBeGreaterThanOrEqual(ISR_RETRY_BACKOFF_MAX_MS);
    expect(waited).toBeLessThan(ISR_RETRY_BACKOFF_MAX_MS + 50);
    p.endIsrChange('conflict', now);
    expect(p.beginIsrChange(state([1]), [1, 2], now)).not.toBeNull();
  });

  it('lets a marker void a transaction verification under way, and is idle once nothing is left', () => {
    const p = new Partition('t', 0);
    expect(p.idle).toBe(true);
    const g = p.startVerification(7n);
    expect(p.idle).toBe(false);
    p.voidVerification(7n);
    expect(p.claimVerification(g)).toBe(false);
    const h = p.startVerification(7n);
    expect(p.claimVerification(h)).toBe(true);
    expect(p.claimVerification(h)).toBe(false);
    expect(p.idle).toBe(true);
    p.makeLeader(state([1]), 1, 0);
    expect(p.idle).toBe(false);
    p.resign();
    expect(p.idle).toBe(true);
  });
});

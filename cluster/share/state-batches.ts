/**
 * Operations on lists of state batches (offset ranges with one delivery
 * state and count), as the share coordinator keeps them: sorted by first
 * offset, not overlapping, nothing before the start offset.
 */
import type { StateBatch } from './persister.js';

/**
 * `current` with `updates` laid over it (an update wins on every offset it
 * covers), cut at `startOffset`, and neighbours with the same state and
 * count joined.
 *
 * Example: merge([{0..9 available, 1}], [{3..4 acknowledged, 1}], 2n)
 * -> [{2..2 available 1}, {3..4 acknowledged 1}, {5..9 available 1}].
 */
export function mergeStateBatches(current: readonly StateBatch[], updates: readonly StateBatch[], startOffset: bigint): StateBatch[] {
  let pieces: StateBatch[] = [...current];
  for (const u of updates) {
    if (u.lastOffset < u.firstOffset) continue;
    const next: StateBatch[] = [];
    for (const b of pieces) {
      if (b.lastOffset < u.firstOffset || b.firstOffset > u.lastOffset) {
        next.push(b);
        continue;
      }
      if (b.firstOffset < u.firstOffset) next.push({ ...b, lastOffset: u.firstOffset - 1n });
      if (b.lastOffset > u.lastOffset) next.push({ ...b, firstOffset: u.lastOffset + 1n });
    }
    next.push(u);
    pieces = next;
  }
  return normalize(pieces, startOffset);
}

/** Sorted, cut at `startOffset`, neighbours with equal state and count joined. */
export function normalize(batches: readonly StateBatch[], startOffset: bigint): StateBatch[] {
  const sorted = batches
    .filter((b) => b.lastOffset >= startOffset && b.lastOffset >= b.firstOffset)
    .map((b) => (b.firstOffset < startOffset ? { ...b, firstOffset: startOffset } : b))
    .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  const out: StateBatch[] = [];
  for (const b of sorted) {
    const last = out[out.length - 1];
    if (last && last.lastOffset + 1n === b.firstOffset && last.deliveryState === b.deliveryState && last.deliveryCount === b.deliveryCount) {
      out[out.length - 1] = { ...last, lastOffset: b.lastOffset };
    } else {
      out.push({ firstOffset: b.firstOffset, lastOffset: b.lastOffset, deliveryState: b.deliveryState, deliveryCount: b.deliveryCount });
    }
  }
  return out;
}

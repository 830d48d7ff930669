import { describe, expect, it } from 'vitest';
import { simpleAssign, type ShareAssignorMember } from './share-assignor.js';

const T = 'topic-t';
const U = 'topic-u';

function members(n: number, topics: readonly string[] = [T], previous: Record<string, Record<string, number[]>> = {}): ShareAssignorMember[] {
  return Array.from({ length: n }, (_, i) => {
    const id = `m${i}`;
    return { memberId: id, topics, previous: new Map(Object.entries(previous[id] ?? {}).map(([t, ps]) => [t, new Set(ps)])) };
  });
}

const all = () => true;

/** Each member's partitions of `topic`, in member order. */
function counts(result: Map<string, Map<string, Set<number>>>, topic = T): number[] {
  return [...result.values()].map((a) => a.get(topic)?.size ?? 0);
}

/** How many members hold each partition of `topic`. */
function sharing(result: Map<string, Map<string, Set<number>>>, partitions: number, topic = T): number[] {
  const out = new Array<number>(partitions).fill(0);
  for (const a of result.values()) for (const p of a.get(topic) ?? []) out[p]!++;
  return out;
}

describe('the simple share group assignor (Kafka 4.4 SimpleAssignor)', () => {
  it.each([
    // [members, partitions, partitions per member, members per partition]
    [1, 3, [3], [1, 1, 1]],
    [2, 3, [2, 1], [1, 1, 1]],
    [3, 3, [1, 1, 1], [1, 1, 1]],
    [4, 6, [2, 1, 2, 1], [1, 1, 1, 1, 1, 1]],
    [3, 2, [2, 1, 1], [2, 2]],
    [4, 2, [1, 1, 1, 1], [2, 2]],
    [5, 2, [2, 1, 1, 1, 1], [3, 3]],
    [3, 1, [1, 1, 1], [3]],
  ])('%i members, %i partitions: each member gets Kafka\'s count and each partition Kafka\'s sharing', (m, p, perMember, perPartition) => {
    const r = simpleAssign(members(m), () => p, all);
    expect(counts(r)).toEqual(perMember);
    expect(sharing(r, p)).toEqual(perPartition);
  });

  it('assigns only partitions whose share state is initialized', () => {
    const r = simpleAssign(members(2), () => 4, (_t, p) => p < 2);
    expect([...r.values()].map((a) => [...(a.get(T) ?? [])].sort())).toEqual([[0], [1]]);
    expect(counts(simpleAssign(members(2), () => 4, () => false))).toEqual([0, 0]);
  });

  it('keeps what members had where the counts allow, moving only the rest', () => {
    // m0 had everything; a second member arrives: m0 keeps two of its partitions, m1 gets the one it gave up.
    const r = simpleAssign(members(2, [T], { m0: { [T]: [0, 1, 2] } }), () => 3, all);
    expect(counts(r)).toEqual([2, 1]);
    expect(sharing(r, 3)).toEqual([1, 1, 1]);
    // A member with a previous assignment keeps it while a new one fills in.
    const again = simpleAssign(members(3, [T], { m0: { [T]: [0, 1] }, m1: { [T]: [2] } }), () => 3, all);
    expect(counts(again)).toEqual([1, 1, 1]);
    expect([...again.get('m1')!.get(T)!]).toEqual([2]);
  });

  it('balances each topic among its own subscribers when subscriptions differ, and drops unsubscribed topics', () => {
    const ms: ShareAssignorMember[] = [
      { memberId: 'a', topics: [T], previous: new Map([[U, new Set([0])]]) },
      { memberId: 'b', topics: [T, U], previous: new Map() },
    ];
    const r = simpleAssign(ms, (t) => (t === T ? 2 : 3), all);
    expect(r.get('a')!.has(U)).toBe(false);
    expect(counts(r, T)).toEqual([1, 1]);
    expect([...r.get('b')!.get(U)!].sort()).toEqual([0, 1, 2]);
  });

  it('gives nothing to members of a group subscribed to no existing topic', () => {
    const r = simpleAssign(members(2, []), () => 0, all);
    expect([...r.values()].map((a) => a.size)).toEqual([0, 0]);
  });
});

/**
 * The "simple" assignor of share groups (KIP-932), as Kafka 4.4's
 * SimpleAssignor computes the target assignment. Unlike a consumer group's,
 * a partition may go to several members at once: records of a share
 * partition are handed out one acquisition at a time, so members sharing a
 * partition do not see the same records.
 *
 * For a set of assignable partitions P and the members M subscribing to
 * them, each partition goes to `desiredSharing = ceil(M / P)` members, and
 * member i (in member order) to `ceil(x * (i + 1)) - ceil(x * i)`
 * partitions, where x = desiredSharing * P / M; so with more members than
 * partitions, members share partitions evenly, and with fewer, each member
 * gets P / M of them (the remainder spread one by one). A member keeps what
 * it had, up to its count and as long as no partition is over-shared; only
 * the rest moves. When every member subscribes to the same topics all their
 * partitions are balanced together, otherwise each topic among its own
 * subscribers.
 *
 * Only partitions whose share-partition state is initialized are assignable
 * (`assignable`), as Kafka assigns them.
 *
 * Example: topic t with 2 partitions, 3 members a, b, c -> sharing 2, counts
 * 2, 1, 1: a {t-0, t-1}, b {t-0}, c {t-1}. With 6 partitions and 4 members:
 * counts 2, 1, 2, 1.
 */
import type { TargetAssignment } from './consumer-group.js';

export const SIMPLE_ASSIGNOR = 'simple';

export interface ShareAssignorMember {
  readonly memberId: string;
  /** Topic ids the member subscribes to that exist. */
  readonly topics: readonly string[];
  /** Its part of the current target. */
  readonly previous: TargetAssignment;
}

type Assignment = Map<string, Set<number>>;

const key = (topicId: string, partition: number): string => `${topicId}\u0000${partition}`;

function copy(a: TargetAssignment): Assignment {
  return new Map([...a].map(([t, ps]) => [t, new Set(ps)]));
}

/** Each member's count of partitions: ceil(x * (i + 1)) - ceil(x * i) with x = sharing * partitions / members. */
function desiredCounts(members: number, partitions: number, sharing: number): number[] {
  const precise = (sharing * partitions) / members;
  const out: number[] = [];
  for (let i = 0; i < members; i++) out.push(Math.ceil(precise * (i + 1)) - Math.ceil(precise * i));
  return out;
}

/**
 * The target assignment of every member, by member id. Members come in
 * `members` order (the coordinator passes them sorted by member id).
 * `partitionCount` gives each topic id's partitions; `assignable` whether a
 * partition's share state is initialized.
 */
export function simpleAssign(
  members: readonly ShareAssignorMember[],
  partitionCount: (topicId: string) => number,
  assignable: (topicId: string, partition: number) => boolean,
): Map<string, TargetAssignment> {
  const out = new Map<string, TargetAssignment>();
  if (members.length === 0) return out;
  const first = [...members[0]!.topics].sort().join(',');
  const homogeneous = members.every((m) => [...m.topics].sort().join(',') === first);
  const next = homogeneous ? homogeneousAssign(members, partitionCount, assignable) : heterogeneousAssign(members, partitionCount, assignable);
  for (const m of members) out.set(m.memberId, next.get(m.memberId) ?? copy(m.previous));
  return out;
}

/** Every member subscribes to the same topics: their partitions are balanced together. */
function homogeneousAssign(
  members: readonly ShareAssignorMember[],
  partitionCount: (topicId: string) => number,
  assignable: (topicId: string, partition: number) => boolean,
): Map<string, Assignment> {
  const subscribed = new Set(members[0]!.topics);
  const result = new Map<string, Assignment>(members.map((m) => [m.memberId, new Map()]));
  if (subscribed.size === 0) return result;
  const targets: [string, number][] = [];
  for (const t of [...subscribed].sort()) for (let p = 0; p < partitionCount(t); p++) if (assignable(t, p)) targets.push([t, p]);
  const sharing = targets.length === 0 ? 0 : Math.ceil(members.length / targets.length);
  const counts = desiredCounts(members.length, targets.length, sharing);
  // Who holds each partition, and what each member holds, starting from the previous target.
  const byPartition = new Map<string, { topicId: string; partition: number; holders: Set<number> }>();
  const byMember: Set<string>[] = members.map(() => new Set());
  const next: Assignment[] = members.map(() => new Map());
  const hold = (i: number, t: string, p: number) => {
    const k = key(t, p);
    let e = byPartition.get(k);
    if (!e) byPartition.set(k, (e = { topicId: t, partition: p, holders: new Set() }));
    e.holders.add(i);
    byMember[i]!.add(k);
    let ps = next[i]!.get(t);
    if (!ps) next[i]!.set(t, (ps = new Set()));
    ps.add(p);
  };
  const release = (i: number, t: string, p: number) => {
    const k = key(t, p);
    byPartition.get(k)?.holders.delete(i);
    byMember[i]!.delete(k);
    const ps = next[i]!.get(t);
    ps?.delete(p);
    if (ps && ps.size === 0) next[i]!.delete(t);
  };
  const unfilled = new Set<number>();
  members.forEach((m, i) => {
    for (const [t, ps] of m.previous) {
      if (!subscribed.has(t)) continue;
      for (const p of [...ps].sort((a, b) => a - b)) hold(i, t, p);
    }
    if (byMember[i]!.size < counts[i]!) unfilled.add(i);
  });
  // A member over its count gives back its extra partitions.
  members.forEach((_, i) => {
    for (const k of [...byMember[i]!]) {
      if (byMember[i]!.size <= counts[i]!) break;
      const e = byPartition.get(k)!;
      release(i, e.topicId, e.partition);
    }
  });
  // A partition held by more members than the sharing gives up the extra ones.
  for (const e of byPartition.values()) {
    for (const i of [...e.holders]) {
      if (e.holders.size <= sharing) break;
      release(i, e.topicId, e.partition);
      unfilled.add(i);
    }
  }
  for (const [t, p] of targets) if (!byPartition.has(key(t, p))) byPartition.set(key(t, p), { topicId: t, partition: p, holders: new Set() });
  fillRemaining(byPartition, byMember, counts, sharing, unfilled, (i, t, p) => hold(i, t, p));
  return new Map(members.map((m, i) => [m.memberId, next[i]!]));
}

/** Members subscribe to different topics: each topic is balanced among its subscribers. */
function heterogeneousAssign(
  members: readonly ShareAssignorMember[],
  partitionCount: (topicId: string) => number,
  assignable: (topicId: string, partition: number) => boolean,
): Map<string, Assignment> {
  const next: Assignment[] = members.map((m) => {
    const mine = new Set(m.topics);
    // Topics the member no longer subscribes to leave its assignment.
    return new Map([...copy(m.previous)].filter(([t]) => mine.has(t)));
  });
  const topics = [...new Set(members.flatMap((m) => m.topics))].sort();
  for (const t of topics) {
    const subscribers = members.map((m, i) => (m.topics.includes(t) ? i : -1)).filter((i) => i >= 0);
    const targets: number[] = [];
    for (let p = 0; p < partitionCount(t); p++) if (assignable(t, p)) targets.push(p);
    const sharing = targets.length === 0 ? 0 : Math.ceil(subscribers.length / targets.length);
    const perSubscriber = desiredCounts(subscribers.length, targets.length, sharing);
    const counts: number[] = members.map(() => 0);
    subscribers.forEach((i, n) => (counts[i] = perSubscriber[n]!));
    const byPartition = new Map<string, { topicId: string; partition: number; holders: Set<number> }>();
    const byMember: Set<string>[] = members.map(() => new Set());
    const hold = (i: number, p: number) => {
      const k = key(t, p);
      let e = byPartition.get(k);
      if (!e) byPartition.set(k, (e = { topicId: t, partition: p, holders: new Set() }));
      e.holders.add(i);
      byMember[i]!.add(k);
      let ps = next[i]!.get(t);
      if (!ps) next[i]!.set(t, (ps = new Set()));
      ps.add(p);
    };
    const release = (i: number, p: number) => {
      const k = key(t, p);
      byPartition.get(k)?.holders.delete(i);
      byMember[i]!.delete(k);
      next[i]!.get(t)?.delete(p);
    };
    for (const i of subscribers) for (const p of [...(next[i]!.get(t) ?? [])].sort((a, b) => a - b)) hold(i, p);
    for (const i of subscribers) {
      for (const k of [...byMember[i]!]) {
        if (byMember[i]!.size <= counts[i]!) break;
        release(i, byPartition.get(k)!.partition);
      }
    }
    for (const e of byPartition.values()) {
      for (const i of [...e.holders]) {
        if (e.holders.size <= sharing) break;
        release(i, e.partition);
      }
    }
    for (const p of targets) if (!byPartition.has(key(t, p))) byPartition.set(key(t, p), { topicId: t, partition: p, holders: new Set() });
    const unfilled = new Set(subscribers.filter((i) => byMember[i]!.size < counts[i]!));
    fillRemaining(byPartition, byMember, counts, sharing, unfilled, (i, _t, p) => hold(i, p));
    // An emptied topic entry is not kept.
    for (const a of next) if (a.get(t)?.size === 0) a.delete(t);
  }
  return new Map(members.map((m, i) => [m.memberId, next[i]!]));
}

/**
 * Gives each partition held by fewer than `sharing` members more holders,
 * going round the members still under their count (a member leaves the round
 * once it reaches its count); stops when no member is under its count, or a
 * whole round placed nothing.
 */
function fillRemaining(
  byPartition: Map<string, { topicId: string; partition: number; holders: Set<number> }>,
  byMember: Set<string>[],
  counts: readonly number[],
  sharing: number,
  unfilled: Set<number>,
  hold: (i: number, topicId: string, partition: number) => void,
): void {
  const order = () => [...unfilled].sort((a, b) => a - b);
  let round = order();
  let at = 0;
  let placedThisRound = false;
  for (const e of byPartition.values()) {
    if (unfilled.size === 0) break;
    let missing = sharing - e.holders.size;
    while (missing > 0) {
      if (at >= round.length) {
        if (!placedThisRound) break;
        round = order();
        at = 0;
        placedThisRound = false;
        if (round.length === 0) break;
      }
      const i = round[at++]!;
      if (!unfilled.has(i) || e.holders.has(i)) continue;
      hold(i, e.topicId, e.partition);
      missing--;
      placedThisRound = true;
      if (byMember[i]!.size >= counts[i]!) unfilled.delete(i);
    }
  }
}

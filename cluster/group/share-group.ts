/**
 * A share group (KIP-932) as Kafka 4.4's group coordinator keeps one: members
 * that each name the topics they subscribe to, a target assignment computed
 * by the broker (the simple assignor, share-assignor.ts), and each member's
 * current assignment. Share groups have no revocation phase: a member moves
 * to its new target as soon as it heartbeats, since a partition may be
 * shared by several members anyway.
 *
 * The epochs work as in a consumer group: the group epoch rises with every
 * change of membership, subscription or subscribed topics, or when
 * partitions whose share state got initialized can be assigned; the
 * assignment epoch is the group epoch the target was computed at; a member's
 * epoch is the assignment epoch it has been given.
 *
 * The group also records which topics' share-partition state (kept by the
 * share coordinator, reached through the Persister) is being initialized,
 * is initialized, or is being deleted: only initialized partitions are
 * assigned, and deleting the group deletes their state.
 *
 * Everything here is state and its records; nothing touches the log. The
 * coordinator (share-groups.ts) computes a change as records, writes them,
 * and applies them with `replayShareRecord`, the same path that loads them.
 */
import type { TargetAssignment } from './consumer-group.js';
import type { CoordinatorRecord, ShareGroupRecord } from './group-records.js';

export type ShareGroupState = 'Empty' | 'Stable';

export interface ShareMember {
  readonly memberId: string;
  readonly rackId: string | null;
  readonly clientId: string;
  readonly clientHost: string;
  /** Sorted, without duplicates. */
  readonly subscribedTopicNames: readonly string[];
  readonly memberEpoch: number;
  readonly previousMemberEpoch: number;
  /** Always 0 (stable): share members never wait for a revocation. */
  readonly state: number;
  /** topic id -> partitions. */
  readonly assigned: TargetAssignment;
}

/** A topic whose share-partition state is initializing or initialized: its name, partitions, and when they were last asked for. */
export interface InitTopic {
  readonly name: string;
  readonly partitions: ReadonlySet<number>;
  readonly timestamp: number;
}

/** Which topics' share-partition state the group has, by topic id (ShareGroupStatePartitionMetadataValue). */
export interface StatePartitions {
  readonly initializing: ReadonlyMap<string, InitTopic>;
  readonly initialized: ReadonlyMap<string, InitTopic>;
  /** topic id -> name */
  readonly deleting: ReadonlyMap<string, string>;
}

export const EMPTY_STATE_PARTITIONS: StatePartitions = { initializing: new Map(), initialized: new Map(), deleting: new Map() };

export class ShareGroup {
  groupEpoch = 1;
  metadataHash = 0n;
  assignmentEpoch = 1;
  /** When the target assignment was last computed (ms); 0 for never. */
  assignmentTimestamp = 0;
  readonly members = new Map<string, ShareMember>();
  /** Each member's share of the target assignment. */
  readonly target = new Map<string, TargetAssignment>();
  /** null until a ShareGroupStatePartitionMetadata record is written. */
  statePartitions: StatePartitions | null = null;

  constructor(readonly groupId: string) {}

  get state(): ShareGroupState {
    return this.members.size === 0 ? 'Empty' : 'Stable';
  }

  /** Topic names any member subscribes to. */
  subscribedTopicNames(): Set<string> {
    const out = new Set<string>();
    for (const m of this.members.values()) for (const t of m.subscribedTopicNames) out.add(t);
    return out;
  }
}

export function newShareMember(memberId: string): ShareMember {
  return { memberId, rackId: null, clientId: '', clientHost: '', subscribedTopicNames: [], memberEpoch: 0, previousMemberEpoch: 0, state: 0, assigned: new Map() };
}

export function sameAssignment(a: TargetAssignment, b: TargetAssignment): boolean {
  const flat = (x: TargetAssignment) => [...x].flatMap(([t, ps]) => [...ps].map((p) => `${t}:${p}`)).sort().join(',');
  return flat(a) === flat(b);
}

export function sameMemberMetadata(a: ShareMember, b: ShareMember): boolean {
  return a.rackId === b.rackId && a.clientId === b.clientId && a.clientHost === b.clientHost && a.subscribedTopicNames.join('\u0000') === b.subscribedTopicNames.join('\u0000');
}

/** Merges init maps: partitions are unioned; the name and timestamp come from `b` where it has the topic. */
export function combineInitTopics(a: ReadonlyMap<string, InitTopic>, b: ReadonlyMap<string, InitTopic>): Map<string, InitTopic> {
  const out = new Map<string, InitTopic>();
  for (const id of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(id);
    const y = b.get(id);
    out.set(id, { name: y?.name ?? x?.name ?? 'UNKNOWN', partitions: new Set([...(x?.partitions ?? []), ...(y?.partitions ?? [])]), timestamp: y?.timestamp ?? x?.timestamp ?? -1 });
  }
  return out;
}

// ---- records ------------------------------------------------------------------------------

const sortedPartitions = (ps: Iterable<number>): number[] => [...ps].sort((a, b) => a - b);

export function shareMemberRecord(groupId: string, m: ShareMember): ShareGroupRecord {
  return {
    kind: 'share',
    type: 10,
    groupId,
    memberId: m.memberId,
    value: { rackId: m.rackId, clientId: m.clientId, clientHost: m.clientHost, subscribedTopicNames: [...m.subscribedTopicNames] },
  };
}

export function shareEpochRecord(groupId: string, epoch: number, metadataHash: bigint): ShareGroupRecord {
  return { kind: 'share', type: 11, groupId, value: { epoch, metadataHash } };
}

export function shareTargetMetadataRecord(groupId: string, assignmentEpoch: number, timestamp: number): ShareGroupRecord {
  return { kind: 'share', type: 12, groupId, value: { assignmentEpoch, assignmentTimestamp: BigInt(timestamp) } };
}

export function shareTargetMemberRecord(groupId: string, memberId: string, t: TargetAssignment): ShareGroupRecord {
  return { kind: 'share', type: 13, groupId, memberId, value: { topicPartitions: [...t].map(([topicId, ps]) => ({ topicId, partitions: sortedPartitions(ps) })) } };
}

export function shareCurrentAssignmentRecord(groupId: string, m: ShareMember): ShareGroupRecord {
  return {
    kind: 'share',
    type: 14,
    groupId,
    memberId: m.memberId,
    value: {
      memberEpoch: m.memberEpoch,
      previousMemberEpoch: m.previousMemberEpoch,
      state: m.state,
      assignedPartitions: [...m.assigned].map(([topicId, ps]) => ({ topicId, partitions: sortedPartitions(ps) })),
    },
  };
}

export function statePartitionsRecord(groupId: string, s: StatePartitions): ShareGroupRecord {
  const infos = (m: ReadonlyMap<string, InitTopic>) => [...m].map(([topicId, v]) => ({ topicId, topicName: v.name, partitions: sortedPartitions(v.partitions) }));
  return {
    kind: 'share',
    type: 15,
    groupId,
    value: { initializingTopics: infos(s.initializing), initializedTopics: infos(s.initialized), deletingTopics: [...s.deleting].map(([topicId, topicName]) => ({ topicId, topicName })) },
  };
}

/** What removing a member writes, in Kafka's order: its current assignment, its target, its metadata. */
export function shareMemberTombstones(groupId: string, memberId: string): ShareGroupRecord[] {
  return [
    { kind: 'share', type: 14, groupId, memberId, value: null },
    { kind: 'share', type: 13, groupId, memberId, value: null },
    { kind: 'share', type: 10, groupId, memberId, value: null },
  ];
}

/** What deleting an empty group writes, in Kafka's order (ShareGroup.createGroupTombstoneRecords). */
export function shareGroupTombstones(groupId: string): ShareGroupRecord[] {
  return [
    { kind: 'share', type: 12, groupId, value: null },
    { kind: 'share', type: 15, groupId, value: null },
    { kind: 'share', type: 11, groupId, value: null },
  ];
}

export function isShareRecord(r: CoordinatorRecord): r is ShareGroupRecord {
  return r.kind === 'share';
}

/**
 * Applies one share group record to `groups` (those of one partition of
 * __consumer_offsets), as it is read back or right after it was written. A
 * tombstone of the group's epoch deletes the group; a record of a group not
 * yet known creates it; `now` stamps initializing topics, whose retry
 * interval starts over on load as in Kafka.
 */
export function replayShareRecord(groups: Map<string, ShareGroup>, r: ShareGroupRecord, now: number): void {
  let group = groups.get(r.groupId);
  if (!group) {
    if (r.value === null) return;
    group = new ShareGroup(r.groupId);
    groups.set(r.groupId, group);
  }
  switch (r.type) {
    case 10: {
      if (r.value === null) {
        group.members.delete(r.memberId);
        return;
      }
      const m = group.members.get(r.memberId) ?? newShareMember(r.memberId);
      group.members.set(r.memberId, {
        ...m,
        rackId: r.value.rackId,
        clientId: r.value.clientId,
        clientHost: r.value.clientHost,
        subscribedTopicNames: [...new Set(r.value.subscribedTopicNames)].sort(),
      });
      return;
    }
    case 11:
      if (r.value === null) {
        groups.delete(r.groupId);
        return;
      }
      group.groupEpoch = r.value.epoch;
      group.metadataHash = r.value.metadataHash;
      return;
    case 12:
      group.assignmentEpoch = r.value === null ? -1 : r.value.assignmentEpoch;
      group.assignmentTimestamp = r.value === null ? 0 : Number(r.value.assignmentTimestamp);
      return;
    case 13:
      if (r.value === null) group.target.delete(r.memberId);
      else group.target.set(r.memberId, new Map(r.value.topicPartitions.map((t) => [t.topicId, new Set(t.partitions)])));
      return;
    case 14: {
      const m = group.members.get(r.memberId);
      if (r.value === null) {
        if (m) group.members.set(r.memberId, { ...m, memberEpoch: -1, previousMemberEpoch: -1, assigned: new Map() });
        return;
      }
      const v = r.value;
      group.members.set(r.memberId, {
        ...(m ?? newShareMember(r.memberId)),
        memberEpoch: v.memberEpoch,
        previousMemberEpoch: v.previousMemberEpoch,
        state: v.state,
        assigned: new Map(v.assignedPartitions.map((t) => [t.topicId, new Set(t.partitions)])),
      });
      return;
    }
    case 15: {
      if (r.value === null) {
        group.statePartitions = null;
        return;
      }
      const init = (list: readonly { topicId: string; topicName: string; partitions: number[] }[]) =>
        new Map(list.map((t) => [t.topicId, { name: t.topicName, partitions: new Set(t.partitions), timestamp: now }]));
      group.statePartitions = {
        initializing: init(r.value.initializingTopics),
        initialized: init(r.value.initializedTopics),
        deleting: new Map(r.value.deletingTopics.map((t) => [t.topicId, t.topicName])),
      };
      return;
    }
  }
}

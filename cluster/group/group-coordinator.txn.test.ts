import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { ATTRIBUTES, BASE_SEQUENCE, PRODUCER_EPOCH, PRODUCER_ID, TRANSACTIONAL, buildBatch } from '../../wire/record-batch.js';
import { harness, joinParams, type Harness } from './group-test-support.js';
import type { TxnOffsetCommitParams } from './group-coordinator.js';
import { partitionFor } from '../coordinator/partition-for.js';
import { batchesIn } from './group-records.js';

const PID = 7n;
const PARTITIONS = 4;
const partitionOf = (groupId: string): number => partitionFor(groupId, PARTITIONS);

function txnCommit(h: Harness, over: Partial<TxnOffsetCommitParams> = {}, offset = 50n) {
  return h.coordinator.commitTransactionalOffsets({
    transactionalId: 'tx',
    groupId: 'g',
    producerId: PID,
    producerEpoch: 0,
    generationId: -1,
    memberId: '',
    groupInstanceId: null,
    topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: 2, committedMetadata: 'txn' }] }],
    ...over,
  });
}

function plainCommit(h: Harness, offset: bigint, groupId = 'g') {
  return h.coordinator.commitOffsets({
    groupId,
    generationId: -1,
    memberId: '',
    groupInstanceId: null,
    retentionTimeMs: -1n,
    groupIdNotFoundKnown: true,
    topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: 'plain' }] }],
  });
}

/** g's t-0 as OffsetFetch answers it: its offset and error. */
function fetch0(h: Harness, requireStable = false, groupId = 'g'): { offset: bigint; errorCode: number } {
  const p = h.coordinator.fetchOffsets(groupId, [{ name: 't', partitionIndexes: [0] }], requireStable).topics[0]!.partitions[0]!;
  return { offset: p.committedOffset, errorCode: p.errorCode };
}

/** The COMMIT (or ABORT) control batch the transaction coordinator has the partition leader append. */
function marker(producerId: bigint, commit: boolean): Buffer {
  const key = Buffer.from([0, 0, 0, commit ? 1 : 0]);
  const value = Buffer.from([0, 0, 0, 0, 0, 3]);
  return buildBatch({ producerId, producerEpoch: 0, transactional: true, control: true, records: [{ key, value }] });
}

/** Appends the marker as the partition's leader would, then tells the coordinator. */
function endTransaction(h: Harness, commit: boolean, groupId = 'g', producerId = PID): void {
  expect(h.store.append(partitionOf(groupId), marker(producerId, commit)).errorCode).toBe(ErrorCode.NONE);
  h.coordinator.completeTransaction(partitionOf(groupId), producerId, commit);
}

/** One dynamic member (static when `groupInstanceId` is set) through its first rebalance: its id and generation. */
async function stableGroupOfOne(h: Harness, groupInstanceId: string | null = null): Promise<{ memberId: string; generation: number }> {
  const join = h.coordinator.joinGroup(joinParams({ requireKnownMemberId: false, groupInstanceId }));
  h.timer.advance(0);
  const j = await join;
  expect(j.errorCode).toBe(ErrorCode.NONE);
  const sync = await h.coordinator.syncGroup({
    groupId: 'g',
    generationId: j.generationId,
    memberId: j.memberId,
    groupInstanceId,
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: [{ memberId: j.memberId, assignment: Buffer.from('a') }],
  });
  expect(sync.errorCode).toBe(ErrorCode.NONE);
  return { memberId: j.memberId, generation: j.generationId };
}

describe('transactional offset commits', () => {
  it('keeps them pending until the transaction commits, then answers them', () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    plainCommit(h, 10n);
    expect(txnCommit(h)).toEqual([{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 0 }] }]);
    expect(fetch0(h)).toEqual({ offset: 10n, errorCode: 0 });
    expect(fetch0(h, true)).toEqual({ offset: -1n, errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT });
    endTransaction(h, true);
    expect(h.coordinator.fetchOffsets('g', [{ name: 't', partitionIndexes: [0] }], true).topics[0]!.partitions[0]).toEqual({
      partitionIndex: 0,
      committedOffset: 50n,
      committedLeaderEpoch: 2,
      metadata: 'txn',
      errorCode: 0,
    });
  });

  it('drops them when the transaction aborts, leaving the committed offset', () => {
    const h = harness();
    plainCommit(h, 10n);
    txnCommit(h);
    endTransaction(h, false);
    expect(fetch0(h, true)).toEqual({ offset: 10n, errorCode: 0 });
    // A later commit marker of the same producer finds nothing left to commit.
    endTransaction(h, true);
    expect(fetch0(h)).toEqual({ offset: 10n, errorCode: 0 });
  });

  it('answers UNSTABLE_OFFSET_COMMIT only for the partitions with a pending offset, also when every offset is asked', () => {
    const h = harness();
    h.coordinator.commitOffsets({
      groupId: 'g',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      groupIdNotFoundKnown: true,
      topics: [{ name: 't', partitions: [0, 1].map((partitionIndex) => ({ partitionIndex, committedOffset: 3n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null })) }],
    });
    txnCommit(h);
    const asked = h.coordinator.fetchOffsets('g', [{ name: 't', partitionIndexes: [0, 1] }], true);
    expect(asked.errorCode).toBe(0);
    expect(asked.topics[0]!.partitions.map((p) => [p.committedOffset, p.errorCode])).toEqual([
      [-1n, ErrorCode.UNSTABLE_OFFSET_COMMIT],
      [3n, 0],
    ]);
    const all = h.coordinator.fetchOffsets('g', null, true);
    expect(all.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode])).toEqual([
      [0, ErrorCode.UNSTABLE_OFFSET_COMMIT],
      [1, 0],
    ]);
  });

  it('writes a transactional batch of the producer, and commits only pending offsets newer than the committed one', () => {
    const h = harness();
    txnCommit(h, {}, 50n);
    const batches = h.store.partitions.get(partitionOf('g'))!;
    const last = batches.at(-1)!;
    expect(last.readInt16BE(ATTRIBUTES) & TRANSACTIONAL).toBe(TRANSACTIONAL);
    expect(last.readBigInt64BE(PRODUCER_ID)).toBe(PID);
    expect(last.readInt16BE(PRODUCER_EPOCH)).toBe(0);
    expect(last.readInt32BE(BASE_SEQUENCE)).toBe(-1);
    // A plain commit written after the transactional one wins over it at the commit.
    plainCommit(h, 60n);
    endTransaction(h, true);
    expect(fetch0(h)).toEqual({ offset: 60n, errorCode: 0 });
    // Written after the plain commit, the transactional one replaces it.
    txnCommit(h, {}, 70n);
    endTransaction(h, true);
    expect(fetch0(h)).toEqual({ offset: 70n, errorCode: 0 });
    // And a reload from the log comes to the same.
    expect(fetch0(h.restart())).toEqual({ offset: 70n, errorCode: 0 });
  });

  it('creates the group empty for a commit without generation, and refuses an unknown group with one', () => {
    const h = harness();
    txnCommit(h, { groupId: 'new' });
    expect(h.coordinator.groupState('new')).toBe('Empty');
    expect(txnCommit(h, { groupId: 'other', generationId: 3, memberId: 'm' })[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(h.coordinator.groupState('other')).toBeUndefined();
    expect(txnCommit(h, { groupId: '' })[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  it('checks member, generation and static instance from v3, and takes a commit without them into a group with members', async () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    const { memberId, generation } = await stableGroupOfOne(h, 'instance-1');
    const errorOf = (over: Partial<TxnOffsetCommitParams>) => txnCommit(h, over)[0]!.partitions[0]!.errorCode;
    expect(errorOf({ generationId: generation, memberId: 'nobody' })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(errorOf({ generationId: generation + 1, memberId, groupInstanceId: 'instance-1' })).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(errorOf({ generationId: generation, memberId: 'someone-else', groupInstanceId: 'instance-1' })).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(errorOf({ generationId: generation, memberId, groupInstanceId: 'unknown-instance' })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(fetch0(h, true)).toEqual({ offset: -1n, errorCode: 0 });
    expect(errorOf({ generationId: generation, memberId, groupInstanceId: 'instance-1' })).toBe(ErrorCode.NONE);
    // v0-v2 carry no member: the group's membership is not checked.
    expect(errorOf({})).toBe(ErrorCode.NONE);
  });

  it('answers OFFSET_METADATA_TOO_LARGE per partition and keeps the rest pending', () => {
    const h = harness({ offsetMetadataMaxBytes: 3 });
    const r = txnCommit(h, {
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: 'abcd' },
            { partitionIndex: 1, committedOffset: 2n, committedLeaderEpoch: -1, committedMetadata: null },
          ],
        },
      ],
    });
    expect(r[0]!.partitions).toEqual([
      { partitionIndex: 0, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE },
      { partitionIndex: 1, errorCode: 0 },
    ]);
    endTransaction(h, true);
    expect(h.coordinator.fetchOffsets('g', null).topics).toEqual([{ name: 't', partitions: [{ partitionIndex: 1, committedOffset: 2n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 }] }]);
  });

  it('maps a failed append to the answer and keeps nothing pending', () => {
    const h = harness();
    h.store.failures.push(ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS);
    expect(txnCommit(h)[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect(txnCommit(h)[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(txnCommit(h)[0]!.partitions[0]!.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(h.coordinator.groupState('g')).toBeUndefined();
    plainCommit(h, 1n);
    expect(fetch0(h, true)).toEqual({ offset: 1n, errorCode: 0 });
  });

  it('answers NOT_COORDINATOR for a group of a partition this broker does not lead', () => {
    const h = harness();
    h.metadata.set(PARTITIONS, 2);
    expect(txnCommit(h)[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_COORDINATOR);
  });
});

describe('loading transactional offset commits', () => {
  it('commits a transaction whose marker is in the log, and drops an aborted one', () => {
    const h = harness();
    plainCommit(h, 10n);
    plainCommit(h, 10n, 'g2');
    txnCommit(h, {}, 50n);
    h.store.append(partitionOf('g'), marker(PID, true));
    txnCommit(h, { groupId: 'g2', producerId: 8n }, 80n);
    h.store.append(partitionOf('g2'), marker(8n, false));
    const r = h.restart();
    expect(fetch0(r, true)).toEqual({ offset: 50n, errorCode: 0 });
    expect(fetch0(r, true, 'g2')).toEqual({ offset: 10n, errorCode: 0 });
  });

  it('keeps a transaction without its marker pending, until the marker comes', () => {
    const h = harness();
    plainCommit(h, 10n);
    txnCommit(h, {}, 50n);
    const r = h.restart();
    expect(fetch0(r)).toEqual({ offset: 10n, errorCode: 0 });
    expect(fetch0(r, true)).toEqual({ offset: -1n, errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT });
    endTransaction(r, true);
    expect(fetch0(r, true)).toEqual({ offset: 50n, errorCode: 0 });
  });

  it('reads the batches of a partition with their producer and the markers that end transactions', () => {
    const h = harness();
    plainCommit(h, 10n);
    txnCommit(h, {}, 50n);
    h.store.append(partitionOf('g'), marker(PID, true));
    const bytes = Buffer.concat(h.store.partitions.get(partitionOf('g'))!);
    const batches = [...batchesIn(bytes, () => {})];
    expect(batches.map((b) => (b.kind === 'data' ? [b.kind, b.lastOffset, b.producerId, b.transactional, b.records.length] : [b.kind, b.lastOffset, b.producerId, b.commit]))).toEqual([
      ['data', 0n, -1n, false, 1],
      ['data', 1n, PID, true, 1],
      ['control', 2n, PID, true],
    ]);
  });
});

describe('pending offsets and group administration', () => {
  it('deletes an empty group with its pending offsets, which its transaction then cannot bring back', () => {
    const h = harness();
    txnCommit(h);
    expect(h.coordinator.deleteGroup('g')).toBe(ErrorCode.NONE);
    expect(h.coordinator.groupState('g')).toBeUndefined();
    endTransaction(h, true);
    expect(fetch0(h, true)).toEqual({ offset: -1n, errorCode: 0 });
    // A group of the same name, made again after a reload, starts without the deleted offsets.
    const r = h.restart();
    r.coordinator.commitOffsets({
      groupId: 'g',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      groupIdNotFoundKnown: true,
      topics: [{ name: 't', partitions: [{ partitionIndex: 1, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
    });
    expect(fetch0(r, true)).toEqual({ offset: -1n, errorCode: 0 });
  });

  it('refuses to delete a group with members even with pending offsets', async () => {
    const h = harness({ initialRebalanceDelayMs: 0 });
    const { memberId, generation } = await stableGroupOfOne(h);
    txnCommit(h, { generationId: generation, memberId });
    expect(h.coordinator.deleteGroup('g')).toBe(ErrorCode.NON_EMPTY_GROUP);
    endTransaction(h, true);
    expect(fetch0(h)).toEqual({ offset: 50n, errorCode: 0 });
  });

  it('OffsetDelete removes a partition with only a pending offset, durably', () => {
    const h = harness();
    txnCommit(h);
    expect(h.coordinator.deleteOffsets('g', [{ name: 't', partitions: [0] }])).toEqual({ errorCode: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 0 }] }] });
    expect(fetch0(h, true)).toEqual({ offset: -1n, errorCode: 0 });
    endTransaction(h, true);
    expect(fetch0(h)).toEqual({ offset: -1n, errorCode: 0 });
    expect(fetch0(h.restart())).toEqual({ offset: -1n, errorCode: 0 });
  });

  it('does not expire an offset with a pending commit, nor a group with an open transaction', () => {
    const h = harness({ offsetsRetentionMs: 60_000, offsetsRetentionCheckIntervalMs: 10_000 });
    plainCommit(h, 10n);
    txnCommit(h, { groupId: 'only-pending' });
    txnCommit(h, {}, 50n);
    h.timer.advance(120_000);
    expect(h.coordinator.groupState('only-pending')).toBe('Empty');
    expect(fetch0(h)).toEqual({ offset: 10n, errorCode: 0 });
    endTransaction(h, false, 'only-pending');
    endTransaction(h, false);
    h.timer.advance(10_000);
    expect(h.coordinator.groupState('only-pending')).toBeUndefined();
    expect(fetch0(h)).toEqual({ offset: -1n, errorCode: 0 });
  });

  it('drops pending offsets of a deleted topic', () => {
    const h = harness();
    h.metadata.set(PARTITIONS, 1, ['t']);
    txnCommit(h);
    h.metadata.set(PARTITIONS, 1, []);
    endTransaction(h, true);
    expect(fetch0(h)).toEqual({ offset: -1n, errorCode: 0 });
  });
});

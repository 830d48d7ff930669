import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { decode, encode } from '../wire/codec.js';
import { ATTRIBUTES, PRODUCER_EPOCH, PRODUCER_ID, TRANSACTIONAL } from '../wire/record-batch.js';
import { partitionFor } from '../cluster/coordinator/partition-for.js';
import { batchesIn } from '../cluster/group/group-records.js';
import { TxnOffsetCommitRequest } from '../wire/messages/txn-offset-commit-request.js';
import { TxnOffsetCommitResponse } from '../wire/messages/txn-offset-commit-response.js';
import { offsetFetch } from './offset-fetch.js';
import { txnOffsetCommit } from './txn-offset-commit.js';
import { findCoordinator } from './find-coordinator.js';
import { groupServices, joinAlone, type GroupServices } from './group-test-support.js';
import { callAt, ctxFor } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(): Promise<GroupServices> {
  const s = await groupServices();
  open.push(s);
  return s;
}

const str = (s: string): Buffer => {
  const b = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(2);
  len.writeInt16BE(b.length);
  return Buffer.concat([len, b]);
};
const int16 = (n: number): Buffer => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const int32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const int64 = (n: bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
};

/**
 * Starts a transaction of 'tx' (making __transaction_state first) that
 * added group g's offsets, as AddOffsetsToTxn does: its producer id and epoch.
 */
async function begin(s: GroupServices, addOffsets = true): Promise<{ producerId: bigint; producerEpoch: number }> {
  if (!s.metadata.image().topics.has('__transaction_state')) await findCoordinator.handle({ key: 'tx', keyType: 1, coordinatorKeys: [] }, ctxFor(s, 1));
  const r = await s.transactions.initProducerId({ transactionalId: 'tx', transactionTimeoutMs: 60_000, expected: null });
  expect(r.errorCode).toBe(ErrorCode.NONE);
  if (addOffsets) expect(s.transactions.addOffsets('tx', r.producerId, r.producerEpoch, 'g', 3)).toBe(ErrorCode.NONE);
  return r;
}

/** Ends the transaction and waits for its markers, which reach the group coordinator through __consumer_offsets. */
async function end(s: GroupServices, p: { producerId: bigint; producerEpoch: number }, commit: boolean): Promise<void> {
  expect(s.transactions.endTransaction('tx', p.producerId, p.producerEpoch, commit)).toBe(ErrorCode.NONE);
  await s.transactions.markersSettled();
}

/** g's t-1 as OffsetFetch v7 answers it. */
async function fetched(s: GroupServices, requireStable: boolean): Promise<{ offset: bigint; errorCode: number }> {
  const r = await callAt(offsetFetch, 7, { groupId: 'g', topics: [{ name: 't', partitionIndexes: [1] }], groups: [], requireStable }, s);
  const p = r.topics[0]!.partitions[0]!;
  return { offset: p.committedOffset, errorCode: p.errorCode };
}

describe('TxnOffsetCommit', () => {
  it('takes a v0 request off the wire, keeps the offset pending until the transaction commits, and answers in v0 layout', async () => {
    const s = await services();
    const txn = await begin(s);
    // transactional_id, group_id, producer_id, producer_epoch, then [topic [partition, offset, metadata]].
    const request = Buffer.concat([
      str('tx'),
      str('g'),
      int64(txn.producerId),
      int16(txn.producerEpoch),
      int32(2),
      str('t'),
      int32(1),
      int32(1),
      int64(42n),
      str('md'),
      str('missing'),
      int32(1),
      int32(0),
      int64(1n),
      int16(-1),
    ]);
    const decoded = decode<TxnOffsetCommitRequest>(TxnOffsetCommitRequest, 0, request);
    if (!decoded.ok) throw new Error(decoded.error);
    const response = await txnOffsetCommit.handle(decoded.value, ctxFor(s, 0));
    const bytes = encode(TxnOffsetCommitResponse, 0, response as TxnOffsetCommitResponse);
    // throttle_time_ms, then [topic [partition, error_code]].
    expect(bytes.toString('hex')).toBe(
      Buffer.concat([int32(0), int32(2), str('t'), int32(1), int32(1), int16(0), str('missing'), int32(1), int32(0), int16(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]).toString('hex'),
    );

    expect(await fetched(s, false)).toEqual({ offset: -1n, errorCode: 0 });
    expect(await fetched(s, true)).toEqual({ offset: -1n, errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT });

    const log = s.replicas.logFor('__consumer_offsets', partitionFor('g', 3))!;
    const batches = [...batchesIn(log.readBuffer(0n, 1 << 20)!, () => {})];
    const stored = batches.find((b) => b.kind === 'data' && b.transactional);
    expect(stored).toMatchObject({ producerId: txn.producerId, transactional: true });
    const raw = log.readBuffer(stored!.lastOffset, 1 << 20)!;
    expect(raw.readInt16BE(ATTRIBUTES) & TRANSACTIONAL).toBe(TRANSACTIONAL);
    expect(raw.readBigInt64BE(PRODUCER_ID)).toBe(txn.producerId);
    expect(raw.readInt16BE(PRODUCER_EPOCH)).toBe(txn.producerEpoch);

    await end(s, txn, true);
    expect(await fetched(s, true)).toEqual({ offset: 42n, errorCode: 0 });
  });

  it('checks the member and generation at v3, and drops the offsets of an aborted transaction', async () => {
    const s = await services();
    const { join } = await joinAlone(s, 5);
    const txn = await begin(s);
    const request = (generationId: number, memberId: string, offset: bigint): TxnOffsetCommitRequest => ({
      transactionalId: 'tx',
      groupId: 'g',
      producerId: txn.producerId,
      producerEpoch: txn.producerEpoch,
      generationIdOrMemberEpoch: generationId,
      memberId,
      groupInstanceId: null,
      topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 1, committedOffset: offset, committedLeaderEpoch: 4, committedMetadata: null }] }],
    });
    const errorOf = async (req: TxnOffsetCommitRequest) => (await callAt(txnOffsetCommit, 3, req, s)).topics[0]!.partitions[0]!.errorCode;
    expect(await errorOf(request(join.generationId + 1, join.memberId, 5n))).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(await errorOf(request(join.generationId, 'stranger', 5n))).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await errorOf(request(join.generationId, join.memberId, 5n))).toBe(ErrorCode.NONE);
    await end(s, txn, false);
    expect(await fetched(s, true)).toEqual({ offset: -1n, errorCode: 0 });
    expect(s.transactions.addOffsets('tx', txn.producerId, txn.producerEpoch, 'g', 3)).toBe(ErrorCode.NONE);
    expect(await errorOf(request(join.generationId, join.memberId, 9n))).toBe(ErrorCode.NONE);
    await end(s, txn, true);
    const r = await callAt(offsetFetch, 7, { groupId: 'g', topics: [{ name: 't', partitionIndexes: [1] }], groups: [], requireStable: true }, s);
    expect(r.topics[0]!.partitions[0]).toEqual({ partitionIndex: 1, committedOffset: 9n, committedLeaderEpoch: 4, metadata: '', errorCode: 0 });
  });

  it('answers INVALID_PRODUCER_EPOCH to a producer fenced by a newer epoch, whose transaction was aborted', async () => {
    const s = await services();
    const old = await begin(s);
    const request = (producerEpoch: number, offset: bigint): TxnOffsetCommitRequest => ({
      transactionalId: 'tx',
      groupId: 'g',
      producerId: old.producerId,
      producerEpoch,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 1, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: null }] }],
    });
    expect((await callAt(txnOffsetCommit, 3, request(old.producerEpoch, 10n), s)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    // A new producer with the same transactional id aborts the open transaction and fences the old epoch.
    const fencing = await s.transactions.initProducerId({ transactionalId: 'tx', transactionTimeoutMs: 60_000, expected: null });
    expect(fencing.errorCode).toBe(ErrorCode.CONCURRENT_TRANSACTIONS);
    await s.transactions.markersSettled();
    expect((await callAt(txnOffsetCommit, 3, request(old.producerEpoch, 20n), s)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect(await fetched(s, true)).toEqual({ offset: -1n, errorCode: 0 });
  });

  it('refuses offsets of a transaction that did not add the group: INVALID_TXN_STATE, TRANSACTION_ABORTABLE from v4', async () => {
    const s = await services();
    const txn = await begin(s, false);
    const log = s.replicas.logFor('__consumer_offsets', partitionFor('g', 3))!;
    const end = log.logEndOffset;
    const request: TxnOffsetCommitRequest = {
      transactionalId: 'tx',
      groupId: 'g',
      producerId: txn.producerId,
      producerEpoch: txn.producerEpoch,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [{ name: 't', topicId: ZERO_UUID, partitions: [0, 1].map((partitionIndex) => ({ partitionIndex, committedOffset: 3n, committedLeaderEpoch: -1, committedMetadata: null })) }],
    };
    expect((await callAt(txnOffsetCommit, 3, request, s)).topics[0]!.partitions.map((p) => p.errorCode)).toEqual([ErrorCode.INVALID_TXN_STATE, ErrorCode.INVALID_TXN_STATE]);
    expect((await callAt(txnOffsetCommit, 4, request, s)).topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.TRANSACTION_ABORTABLE,
      ErrorCode.TRANSACTION_ABORTABLE,
    ]);
    expect(log.logEndOffset).toBe(end);
    expect(log.firstUnstableOffset).toBeNull();
  });

  it('answers COORDINATOR_NOT_AVAILABLE for every partition once the coordinator has shut down', async () => {
    const s = await services();
    const txn = await begin(s);
    s.groups.shutdown();
    const r = await callAt(
      txnOffsetCommit,
      2,
      {
        transactionalId: 'tx',
        groupId: 'g',
        producerId: txn.producerId,
        producerEpoch: txn.producerEpoch,
        generationIdOrMemberEpoch: -1,
        memberId: '',
        groupInstanceId: null,
        topics: [{ name: 't', topicId: ZERO_UUID, partitions: [0, 2].map((partitionIndex) => ({ partitionIndex, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null })) }],
      },
      s,
    );
    expect(r.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE]);
  });
});

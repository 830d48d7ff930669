import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { ATTRIBUTES, PRODUCER_EPOCH, PRODUCER_ID, TRANSACTIONAL } from '../wire/record-batch.js';
import { partitionFor } from '../cluster/group-partition.js';
import { batchesIn } from '../cluster/group-records.js';
import { TxnOffsetCommitRequest } from '../wire/messages/txn-offset-commit-request.js';
import { TxnOffsetCommitResponse } from '../wire/messages/txn-offset-commit-response.js';
import { offsetFetch } from './offset-fetch.js';
import { txnOffsetCommit } from './txn-offset-commit.js';
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

/** g's t-1 as OffsetFetch v7 answers it. */
async function fetched(s: GroupServices, requireStable: boolean): Promise<{ offset: bigint; errorCode: number }> {
  const r = await callAt(offsetFetch, 7, { groupId: 'g', topics: [{ name: 't', partitionIndexes: [1] }], groups: [], requireStable }, s);
  const p = r.topics[0]!.partitions[0]!;
  return { offset: p.committedOffset, errorCode: p.errorCode };
}

describe('TxnOffsetCommit', () => {
  it('takes a v0 request off the wire, keeps the offset pending until the transaction commits, and answers in v0 layout', async () => {
    const s = await services();
    // transactional_id, group_id, producer_id, producer_epoch, then [topic [partition, offset, metadata]].
    const request = Buffer.concat([
      str('tx'),
      str('g'),
      int64(1000n),
      int16(3),
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
    const txn = batches.find((b) => b.kind === 'data' && b.transactional);
    expect(txn).toMatchObject({ producerId: 1000n, transactional: true });
    const raw = log.readBuffer(txn!.lastOffset, 1 << 20)!;
    expect(raw.readInt16BE(ATTRIBUTES) & TRANSACTIONAL).toBe(TRANSACTIONAL);
    expect(raw.readBigInt64BE(PRODUCER_ID)).toBe(1000n);
    expect(raw.readInt16BE(PRODUCER_EPOCH)).toBe(3);

    s.groups.completeTransaction(partitionFor('g', 3), 1000n, true);
    expect(await fetched(s, true)).toEqual({ offset: 42n, errorCode: 0 });
  });

  it('checks the member and generation at v3, and drops the offsets of an aborted transaction', async () => {
    const s = await services();
    const { join } = await joinAlone(s, 5);
    const request = (generationId: number, memberId: string, offset: bigint): TxnOffsetCommitRequest => ({
      transactionalId: 'tx',
      groupId: 'g',
      producerId: 2000n,
      producerEpoch: 0,
      generationId,
      memberId,
      groupInstanceId: null,
      topics: [{ name: 't', partitions: [{ partitionIndex: 1, committedOffset: offset, committedLeaderEpoch: 4, committedMetadata: null }] }],
    });
    const errorOf = async (req: TxnOffsetCommitRequest) => (await callAt(txnOffsetCommit, 3, req, s)).topics[0]!.partitions[0]!.errorCode;
    expect(await errorOf(request(join.generationId + 1, join.memberId, 5n))).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(await errorOf(request(join.generationId, 'stranger', 5n))).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await errorOf(request(join.generationId, join.memberId, 5n))).toBe(ErrorCode.NONE);
    s.groups.completeTransaction(partitionFor('g', 3), 2000n, false);
    expect(await fetched(s, true)).toEqual({ offset: -1n, errorCode: 0 });
    expect(await errorOf(request(join.generationId, join.memberId, 9n))).toBe(ErrorCode.NONE);
    s.groups.completeTransaction(partitionFor('g', 3), 2000n, true);
    const r = await callAt(offsetFetch, 7, { groupId: 'g', topics: [{ name: 't', partitionIndexes: [1] }], groups: [], requireStable: true }, s);
    expect(r.topics[0]!.partitions[0]).toEqual({ partitionIndex: 1, committedOffset: 9n, committedLeaderEpoch: 4, metadata: '', errorCode: 0 });
  });

  it('answers INVALID_PRODUCER_EPOCH to a producer fenced by a newer epoch, and keeps nothing of its commit', async () => {
    const s = await services();
    const request = (producerEpoch: number, offset: bigint): TxnOffsetCommitRequest => ({
      transactionalId: 'tx',
      groupId: 'g',
      producerId: 3000n,
      producerEpoch,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [{ name: 't', partitions: [{ partitionIndex: 1, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: null }] }],
    });
    expect((await callAt(txnOffsetCommit, 3, request(5, 10n), s)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect((await callAt(txnOffsetCommit, 3, request(4, 20n), s)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    s.groups.completeTransaction(partitionFor('g', 3), 3000n, true);
    expect(await fetched(s, true)).toEqual({ offset: 10n, errorCode: 0 });
  });

  it('answers COORDINATOR_NOT_AVAILABLE for every partition once the coordinator has shut down', async () => {
    const s = await services();
    s.groups.shutdown();
    const r = await callAt(
      txnOffsetCommit,
      2,
      {
        transactionalId: 'tx',
        groupId: 'g',
        producerId: 1n,
        producerEpoch: 0,
        generationId: -1,
        memberId: '',
        groupInstanceId: null,
        topics: [{ name: 't', partitions: [0, 2].map((partitionIndex) => ({ partitionIndex, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null })) }],
      },
      s,
    );
    expect(r.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE]);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { offsetCommit } from './offset-commit.js';
import { offsetFetch } from './offset-fetch.js';
import { partitionFor } from '../cluster/coordinator/partition-for.js';
import { groupServices, type GroupServices } from './group-test-support.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function withCommit(): Promise<GroupServices> {
  const s = await groupServices();
  open.push(s);
  await callAt(
    offsetCommit,
    6,
    {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 5, commitTimestamp: -1n, committedMetadata: 'meta' }] }],
    },
    s,
  );
  return s;
}

const ask = (groupId: string, topics: { name: string; partitionIndexes: number[] }[] | null) => ({ groupId, topics, groups: [], requireStable: false });

describe('OffsetFetch', () => {
  it('answers committed offsets, and -1 without error for the rest, at v0-v7', async () => {
    const s = await withCommit();
    for (let v = 0; v <= 7; v++) {
      const r = await callAt(offsetFetch, v, ask('g', [{ name: 't', partitionIndexes: [0, 1] }]), s);
      expect(r.topics).toEqual([
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: v >= 5 ? 5 : -1, metadata: 'meta', errorCode: 0 },
            { partitionIndex: 1, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 },
          ],
        },
      ]);
      expect(r.errorCode).toBe(0);
    }
  });

  it('answers every committed offset for a null topic list (v2+)', async () => {
    const s = await withCommit();
    const r = await callAt(offsetFetch, 2, ask('g', null), s);
    expect(r.topics).toEqual([{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: -1, metadata: 'meta', errorCode: 0 }] }]);
    expect((await callAt(offsetFetch, 6, ask('unknown', null), s)).topics).toEqual([]);
  });

  it('answers several groups at once from v8', async () => {
    const s = await withCommit();
    for (const v of [8, 9]) {
      const r = await callAt(
        offsetFetch,
        v,
        {
          groupId: '',
          topics: [],
          requireStable: true,
          groups: [
            { groupId: 'g', memberId: null, memberEpoch: -1, topics: [{ name: 't', topicId: ZERO_UUID, partitionIndexes: [0] }] },
            { groupId: 'other', memberId: null, memberEpoch: -1, topics: null },
          ],
        },
        s,
      );
      expect(r.groups).toEqual([
        { groupId: 'g', errorCode: 0, topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 5, metadata: 'meta', errorCode: 0 }] }] },
        { groupId: 'other', errorCode: 0, topics: [] },
      ]);
    }
  });

  it('puts a group error on each partition before v2, and at the top from v2', async () => {
    const s = testServices();
    open.push(s);
    const v1 = await callAt(offsetFetch, 1, ask('g', [{ name: 't', partitionIndexes: [0] }]), s);
    expect(v1.topics[0]!.partitions[0]).toEqual({ partitionIndex: 0, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.NOT_COORDINATOR });
    const v2 = await callAt(offsetFetch, 2, ask('g', [{ name: 't', partitionIndexes: [0] }]), s);
    expect(v2).toMatchObject({ errorCode: ErrorCode.NOT_COORDINATOR, topics: [] });
    const v8 = await callAt(offsetFetch, 8, { groupId: '', topics: [], requireStable: false, groups: [{ groupId: 'g', memberId: null, memberEpoch: -1, topics: [{ name: 't', topicId: ZERO_UUID, partitionIndexes: [0] }] }] }, s);
    expect(v8.groups).toEqual([{ groupId: 'g', errorCode: ErrorCode.NOT_COORDINATOR, topics: [] }]);
  });

  it('answers UNSTABLE_OFFSET_COMMIT with require_stable for a partition with a pending transactional offset, and the committed offset without it', async () => {
    const s = await withCommit();
    const pending = s.groups.commitTransactionalOffsets({
      transactionalId: 'tx',
      groupId: 'g',
      producerId: 5n,
      producerEpoch: 0,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 99n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    });
    expect(pending[0]!.partitions[0]!.errorCode).toBe(0);
    const stable = (v: number, requireStable: boolean) => callAt(offsetFetch, v, { ...ask('g', [{ name: 't', partitionIndexes: [0, 1] }]), requireStable }, s);
    const unstable = { partitionIndex: 0, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT };
    const other = { partitionIndex: 1, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 };
    expect((await stable(7, true)).topics[0]!.partitions).toEqual([unstable, other]);
    expect((await stable(7, true)).errorCode).toBe(0);
    expect((await stable(7, false)).topics[0]!.partitions[0]).toMatchObject({ committedOffset: 42n, errorCode: 0 });
    // Before v7 the request cannot ask for stable offsets.
    expect((await stable(6, true)).topics[0]!.partitions[0]).toMatchObject({ committedOffset: 42n, errorCode: 0 });
    const v8 = await callAt(offsetFetch, 8, { groupId: '', topics: [], requireStable: true, groups: [{ groupId: 'g', memberId: null, memberEpoch: -1, topics: null }] }, s);
    expect(v8.groups).toEqual([{ groupId: 'g', errorCode: 0, topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ ...unstable }] }] }]);
    s.groups.completeTransaction(partitionFor('g', 3), 5n, true);
    expect((await stable(7, true)).topics[0]!.partitions[0]).toMatchObject({ committedOffset: 99n, errorCode: 0 });
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { offsetCommit } from './offset-commit.js';
import { offsetDelete } from './offset-delete.js';
import { offsetFetch } from './offset-fetch.js';
import { groupServices, joinAlone, type GroupServices } from './group-test-support.js';
import { callAt } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const del = (groupId: string, topics: { name: string; partitions: number[] }[]) => ({
  groupId,
  topics: topics.map((t) => ({ name: t.name, partitions: t.partitions.map((partitionIndex) => ({ partitionIndex })) })),
});

describe('OffsetDelete', () => {
  it('deletes an empty group\'s offsets, and answers unknown partitions and groups', async () => {
    const s = await groupServices();
    open.push(s);
    await callAt(
      offsetCommit,
      8,
      {
        groupId: 'g',
        generationIdOrMemberEpoch: -1,
        memberId: '',
        groupInstanceId: null,
        retentionTimeMs: -1n,
        topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 3n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
      },
      s,
    );
    const r = await callAt(offsetDelete, 0, del('g', [{ name: 't', partitions: [0, 9] }, { name: 'missing', partitions: [0] }]), s);
    expect(r).toEqual({
      errorCode: 0,
      throttleTimeMs: 0,
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, errorCode: 0 },
            { partitionIndex: 9, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION },
          ],
        },
        { name: 'missing', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }] },
      ],
    });
    const fetched = await callAt(offsetFetch, 7, { groupId: 'g', topics: null, groups: [], requireStable: false }, s);
    expect(fetched.topics).toEqual([]);
    expect(await callAt(offsetDelete, 0, del('nope', [{ name: 't', partitions: [0] }]), s)).toEqual({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, throttleTimeMs: 0, topics: [] });
  });

  it('refuses offsets of topics a live consumer group subscribes to', async () => {
    const s = await groupServices();
    open.push(s);
    await joinAlone(s, 5);
    const r = await callAt(offsetDelete, 0, del('g', [{ name: 't', partitions: [0] }]), s);
    expect(r.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC);
  });
});

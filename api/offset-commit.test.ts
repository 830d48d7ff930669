import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { recordsIn } from '../cluster/group/group-records.js';
import { partitionFor } from '../cluster/coordinator/partition-for.js';
import type { OffsetCommitRequest } from '../wire/messages/offset-commit-request.js';
import { offsetCommit } from './offset-commit.js';
import { offsetFetch } from './offset-fetch.js';
import { groupServices, joinAlone, type GroupServices } from './group-test-support.js';
import { callAt } from './test-services.js';

const open: GroupServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(dir?: string): Promise<GroupServices> {
  const s = await groupServices({}, dir);
  open.push(s);
  return s;
}

function commitRequest(over: Partial<OffsetCommitRequest> = {}, offset = 10n): OffsetCommitRequest {
  return {
    groupId: 'g',
    generationIdOrMemberEpoch: -1,
    memberId: '',
    groupInstanceId: null,
    retentionTimeMs: -1n,
    topics: [{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 1, committedOffset: offset, committedLeaderEpoch: 0, commitTimestamp: -1n, committedMetadata: 'md' }] }],
    ...over,
  };
}

async function committed(s: GroupServices, groupId = 'g', partition = 1): Promise<bigint> {
  const r = await callAt(offsetFetch, 7, { groupId, topics: [{ name: 't', partitionIndexes: [partition] }], groups: [], requireStable: true }, s);
  return r.topics[0]!.partitions[0]!.committedOffset;
}

describe('OffsetCommit', () => {
  it('takes simple commits at every version', async () => {
    const s = await services();
    for (let v = 0; v <= 9; v++) {
      const groupId = `simple-${v}`;
      const r = await callAt(offsetCommit, v, commitRequest({ groupId }, BigInt(100 + v)), s);
      expect(r.topics).toEqual([{ name: 't', topicId: ZERO_UUID, partitions: [{ partitionIndex: 1, errorCode: 0 }] }]);
      expect(await committed(s, groupId)).toBe(BigInt(100 + v));
    }
  });

  it('answers UNKNOWN_TOPIC_OR_PARTITION for topics and partitions that do not exist, and commits the rest', async () => {
    const s = await services();
    const r = await callAt(
      offsetCommit,
      8,
      commitRequest({
        topics: [
          { name: 'missing', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] },
          {
            name: 't',
            topicId: ZERO_UUID,
            partitions: [
              { partitionIndex: 7, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null },
              { partitionIndex: 2, committedOffset: 5n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null },
            ],
          },
        ],
      }),
      s,
    );
    expect(r.topics).toEqual([
      { name: 'missing', topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }] },
      {
        name: 't',
        topicId: ZERO_UUID,
        partitions: [
          { partitionIndex: 7, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION },
          { partitionIndex: 2, errorCode: 0 },
        ],
      },
    ]);
    expect(await committed(s, 'g', 2)).toBe(5n);
  });

  it('checks a member\'s commit against its generation, and answers an unknown group by version', async () => {
    const s = await services();
    const { join } = await joinAlone(s, 5);
    const asMember = (v: number, generation: number) => callAt(offsetCommit, v, commitRequest({ generationIdOrMemberEpoch: generation, memberId: join.memberId }), s);
    expect((await asMember(5, 1)).topics[0]!.partitions[0]!.errorCode).toBe(0);
    expect((await asMember(5, 2)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect((await callAt(offsetCommit, 0, commitRequest(), s)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    const unknown = (v: number) => callAt(offsetCommit, v, commitRequest({ groupId: 'other', generationIdOrMemberEpoch: 3, memberId: 'm' }), s);
    expect((await unknown(8)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect((await unknown(9)).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  it('stores commits as OffsetCommit records, with an expire timestamp for a v2-v4 retention time', async () => {
    const s = await services();
    await callAt(offsetCommit, 2, commitRequest({ retentionTimeMs: 60_000n }), s);
    await callAt(offsetCommit, 6, commitRequest({ groupId: 'g' }, 11n), s);
    const log = s.replicas.logFor('__consumer_offsets', partitionFor('g', 3))!;
    const records = [...recordsIn(log.readBuffer(0n, 1 << 20)!, () => {})].map((r) => r.record);
    const offsets = records.filter((r) => r.kind === 'offset');
    expect(offsets.map((r) => [r.key, r.value?.offset, r.value?.expireTimestamp !== -1n])).toEqual([
      [{ group: 'g', topic: 't', partition: 1 }, 10n, true],
      [{ group: 'g', topic: 't', partition: 1 }, 11n, false],
    ]);
  });

  it('keeps committed offsets and groups across a restart', async () => {
    const s = await services();
    const { join } = await joinAlone(s, 5);
    await callAt(offsetCommit, 7, commitRequest({ generationIdOrMemberEpoch: 1, memberId: join.memberId }, 123n), s);
    await callAt(offsetCommit, 3, commitRequest({ groupId: 'simple' }, 7n), s);
    open.splice(open.indexOf(s), 1);
    await s.close();
    const again = await services(s.dataDir);
    expect(await committed(again, 'g')).toBe(123n);
    expect(await committed(again, 'simple')).toBe(7n);
    expect(again.groups.groupState('g')).toBe('Stable');
    expect(again.groups.group('g')!.members.has(join.memberId)).toBe(true);
  });
});

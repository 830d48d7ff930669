import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import type { AlterPartitionReassignmentsResponse } from '../wire/messages/alter-partition-reassignments-response.js';
import { alterPartitionReassignments } from './alter-partition-reassignments.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(): Promise<TestServices> {
  const s = testServices();
  open.push(s);
  await s.metadata.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
  return s;
}

const codes = (r: AlterPartitionReassignmentsResponse): [string, number, number][] =>
  r.responses.flatMap((t) => t.partitions.map((p): [string, number, number] => [t.name, p.partitionIndex, p.errorCode]));

describe('AlterPartitionReassignments on a broker of its own', () => {
  it('takes its own node id, refuses any other broker, and has nothing to cancel', async () => {
    const s = await services();
    const r = await callAt(
      alterPartitionReassignments,
      0,
      {
        timeoutMs: 1000,
        allowReplicationFactorChange: true,
        topics: [
          {
            name: 't',
            partitions: [
              { partitionIndex: 0, replicas: [1] },
              { partitionIndex: 0, replicas: [1, 2] },
              { partitionIndex: 0, replicas: null },
              { partitionIndex: 3, replicas: [1] },
            ],
          },
          { name: 'nope', partitions: [{ partitionIndex: 0, replicas: [1] }] },
        ],
      },
      s,
    );
    expect(r.errorCode).toBe(ErrorCode.NONE);
    expect(codes(r)).toEqual([
      ['t', 0, ErrorCode.NONE],
      ['t', 0, ErrorCode.INVALID_REPLICA_ASSIGNMENT],
      ['t', 0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS],
      ['t', 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ['nope', 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
  });

  it('refuses the whole request with REQUEST_TIMED_OUT for a timeout of 0 or less', async () => {
    const s = await services();
    const r = await callAt(alterPartitionReassignments, 0, { timeoutMs: 0, allowReplicationFactorChange: true, topics: [{ name: 't', partitions: [{ partitionIndex: 0, replicas: [1] }] }] }, s);
    expect(r.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(codes(r)).toEqual([['t', 0, ErrorCode.REQUEST_TIMED_OUT]]);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { buildBatch } from '../wire/record-batch.js';
import type { DescribeProducersResponse } from '../wire/messages/describe-producers-response.js';
import { describeProducers } from './describe-producers.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function ask(s: TestServices, topics: [string, number[]][]): Promise<DescribeProducersResponse> {
  return (await describeProducers.handle({ topics: topics.map(([name, partitionIndexes]) => ({ name, partitionIndexes })) }, ctxFor(s, 0))) as DescribeProducersResponse;
}

describe('DescribeProducers', () => {
  it('lists the idempotent and transactional producers of a partition with their last sequence and open transaction', async () => {
    const s = testServices({});
    open.push(s);
    await s.metadata.createTopic({ name: 't', numPartitions: 2, replicationFactor: 1 });
    const records = [{ value: 'a', timestamp: 1000n }, { value: 'b', timestamp: 1500n }];
    expect(s.replicas.appendRecords('t', 0, buildBatch({ records, producerId: 40n, producerEpoch: 3, baseSequence: 0 }), -1).errorCode).toBe(0);
    // A plain producer leaves no state; a transactional one shows where its transaction began.
    expect(s.replicas.appendRecords('t', 0, buildBatch({ records }), -1).errorCode).toBe(0);
    expect(s.replicas.appendRecords('t', 0, buildBatch({ records, producerId: 41n, producerEpoch: 0, baseSequence: 0, transactional: true }), -1).errorCode).toBe(0);

    const res = await ask(s, [['t', [0, 1, 7]], ['missing', [0]]]);
    const [p0, p1, p7] = res.topics[0]!.partitions;
    expect(p0!.errorCode).toBe(ErrorCode.NONE);
    expect([...p0!.activeProducers].sort((a, b) => Number(a.producerId - b.producerId))).toEqual([
      { producerId: 40n, producerEpoch: 3, lastSequence: 1, lastTimestamp: 1500n, coordinatorEpoch: -1, currentTxnStartOffset: -1n },
      { producerId: 41n, producerEpoch: 0, lastSequence: 1, lastTimestamp: 1500n, coordinatorEpoch: -1, currentTxnStartOffset: 4n },
    ]);
    expect(p1).toMatchObject({ errorCode: ErrorCode.NONE, activeProducers: [] });
    expect(p7).toMatchObject({ errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, activeProducers: [] });
    expect(res.topics[1]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import type { ElectLeadersResponse } from '../wire/messages/elect-leaders-response.js';
import { electLeaders } from './elect-leaders.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(): Promise<TestServices> {
  const s = testServices();
  open.push(s);
  await s.metadata.createTopic({ name: 't', numPartitions: 2, replicationFactor: 1 });
  return s;
}

const codes = (r: ElectLeadersResponse): [string, number, number][] =>
  r.replicaElectionResults.flatMap((t) => t.partitionResult.map((p): [string, number, number] => [t.topic, p.partitionId, p.errorCode]));

describe('ElectLeaders on a broker of its own', () => {
  it('answers ELECTION_NOT_NEEDED for its partitions, preferred or unclean, at every version', async () => {
    const s = await services();
    for (let v = 0; v <= 2; v++) {
      for (const electionType of v === 0 ? [0] : [0, 1]) {
        const r = await callAt(electLeaders, v, { electionType, topicPartitions: [{ topic: 't', partitions: [0, 1] }], timeoutMs: 1000 }, s);
        expect(codes(r)).toEqual([
          ['t', 0, ErrorCode.ELECTION_NOT_NEEDED],
          ['t', 1, ErrorCode.ELECTION_NOT_NEEDED],
        ]);
      }
    }
  });

  it('answers UNKNOWN_TOPIC_OR_PARTITION for what does not exist, once per partition named', async () => {
    const s = await services();
    const r = await callAt(electLeaders, 2, { electionType: 0, topicPartitions: [{ topic: 't', partitions: [5, 5] }, { topic: 'nope', partitions: [0] }], timeoutMs: 1000 }, s);
    expect(codes(r)).toEqual([
      ['t', 5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ['nope', 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
  });

  it('lists nothing when asked for every partition and none needs an election', async () => {
    const s = await services();
    const r = await callAt(electLeaders, 2, { electionType: 0, topicPartitions: null, timeoutMs: 1000 }, s);
    expect(r.errorCode).toBe(ErrorCode.NONE);
    expect(r.replicaElectionResults).toEqual([]);
  });

  it('refuses an election type it does not know with INVALID_REQUEST', async () => {
    const s = await services();
    const r = await callAt(electLeaders, 1, { electionType: 7, topicPartitions: [{ topic: 't', partitions: [0] }], timeoutMs: 1000 }, s);
    expect(r.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    expect(codes(r)).toEqual([['t', 0, ErrorCode.INVALID_REQUEST]]);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import type { CreatePartitionsRequest, CreatePartitionsTopic } from '../wire/messages/create-partitions-request.js';
import { CreatePartitionsResponse as CreatePartitionsResponseDecl, type CreatePartitionsResponse } from '../wire/messages/create-partitions-response.js';
import { createPartitions } from './create-partitions.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(): TestServices {
  const s = testServices();
  open.push(s);
  return s;
}

const grow = (name: string, count: number, assignments: number[][] | null = null): CreatePartitionsTopic => ({
  name,
  count,
  assignments: assignments && assignments.map((brokerIds) => ({ brokerIds })),
});

function req(topics: CreatePartitionsTopic[], extra: Partial<CreatePartitionsRequest> = {}): CreatePartitionsRequest {
  return { topics, timeoutMs: 30000, validateOnly: false, ...extra };
}

async function ask(s: TestServices, request: CreatePartitionsRequest, version = 3): Promise<CreatePartitionsResponse> {
  return (await createPartitions.handle(request, ctxFor(s, version))) as CreatePartitionsResponse;
}

const outcomes = (res: CreatePartitionsResponse) => res.results.map((r) => [r.name, r.errorCode, r.errorMessage]);
const partitionsOf = (s: TestServices, name: string) => s.metadata.image().topics.get(name)?.partitions.length;

describe('CreatePartitions', () => {
  it('adds partitions that Metadata lists at once, each with its log, keeping the topic id', async () => {
    const s = services();
    const before = await s.metadata.createTopic({ name: 'grow', numPartitions: 2, replicationFactor: 1 });
    expect(outcomes(await ask(s, req([grow('grow', 5)])))).toEqual([['grow', 0, null]]);
    const after = s.metadata.image().topics.get('grow')!;
    expect(after.topicId).toBe(before.topicId);
    expect(after.partitions.map((p) => [p.partition, p.leader, p.leaderEpoch, p.replicas, p.isr])).toEqual([
      [0, 1, 0, [1], [1]],
      [1, 1, 0, [1], [1]],
      [2, 1, 0, [1], [1]],
      [3, 1, 0, [1], [1]],
      [4, 1, 0, [1], [1]],
    ]);
    for (let p = 0; p < 5; p++) expect(s.logs.get('grow', p)).toBeDefined();
  });

  it('only grows a topic, with Kafka\'s messages', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 't', numPartitions: 3, replicationFactor: 1 });
    for (const [count, message] of [
      [3, 'Topic already has 3 partition(s).'],
      [2, 'The topic t currently has 3 partition(s); 2 would not be an increase.'],
      [0, 'The topic t currently has 3 partition(s); 0 would not be an increase.'],
      [-1, 'The topic t currently has 3 partition(s); -1 would not be an increase.'],
    ] as const) {
      expect(outcomes(await ask(s, req([grow('t', count)])))).toEqual([['t', ErrorCode.INVALID_PARTITIONS, message]]);
    }
    expect(partitionsOf(s, 't')).toBe(3);
  });

  it('checks assignments: one per new partition, registered brokers, none twice, as many replicas as before', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    const cases: [number[][], string][] = [
      [[[1], [1]], 'Attempted to add 1 additional partition(s), but only 2 assignment(s) were specified.'],
      [[], 'Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.'],
      [[[2]], 'The manual partition assignment includes broker 2, but no such broker is registered.'],
      [[[1, 1]], 'The manual partition assignment includes the broker 1 more than once.'],
      [[[]], 'The manual partition assignment includes an empty replica list.'],
    ];
    for (const [assignments, message] of cases) {
      expect(outcomes(await ask(s, req([grow('t', 2, assignments)])))).toEqual([['t', ErrorCode.INVALID_REPLICA_ASSIGNMENT, message]]);
    }
    expect(partitionsOf(s, 't')).toBe(1);
    expect(outcomes(await ask(s, req([grow('t', 3, [[1], [1]])])))).toEqual([['t', 0, null]]);
    expect(s.metadata.image().topics.get('t')!.partitions.map((p) => p.replicas)).toEqual([[1], [1], [1]]);
  });

  it('answers unknown topics, and names given twice (once, first), as Kafka does', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 'known', numPartitions: 1, replicationFactor: 1 });
    const res = await ask(s, req([grow('known', 2), grow('nope', 2), grow('bad name', 2), grow('known', 3)]));
    expect(outcomes(res)).toEqual([
      ['known', ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'],
      ['nope', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null],
      ['bad name', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null],
    ]);
    expect(partitionsOf(s, 'known')).toBe(1);
  });

  it('validate_only checks and changes nothing', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    expect(outcomes(await ask(s, req([grow('t', 4), grow('t2', 2)], { validateOnly: true })))).toEqual([
      ['t', 0, null],
      ['t2', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null],
    ]);
    expect(partitionsOf(s, 't')).toBe(1);
    expect(s.logs.get('t', 1)).toBeUndefined();
  });

  it('answers REQUEST_TIMED_OUT and changes nothing when timeout_ms <= 0', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    expect(outcomes(await ask(s, req([grow('t', 2)], { timeoutMs: 0 })))).toEqual([['t', ErrorCode.REQUEST_TIMED_OUT, null]]);
    expect(partitionsOf(s, 't')).toBe(1);
  });

  it('fails the topic that takes a request past 10000 new partitions with UNKNOWN_SERVER_ERROR', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    expect(outcomes(await ask(s, req([grow('t', 10002)], { validateOnly: true })))).toEqual([['t', ErrorCode.UNKNOWN_SERVER_ERROR, null]]);
    expect(outcomes(await ask(s, req([grow('t', 10001)], { validateOnly: true })))).toEqual([['t', 0, null]]);
  });

  it('encodes its answer at every version', async () => {
    const s = services();
    await s.metadata.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    for (let v = 0; v <= 3; v++) {
      const res = await ask(s, req([grow('t', 2 + v), grow('nope', 1)]), v);
      expect(outcomes(res)).toEqual([
        ['t', 0, null],
        ['nope', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null],
      ]);
      const back = decode<CreatePartitionsResponse>(CreatePartitionsResponseDecl, v, encode(CreatePartitionsResponseDecl, v, res));
      expect(back.ok && back.value.results).toEqual(res.results);
    }
    expect(partitionsOf(s, 't')).toBe(5);
  });
});

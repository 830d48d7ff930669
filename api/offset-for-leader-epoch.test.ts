import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import type { OffsetForLeaderEpochRequest, OffsetForLeaderPartition } from '../wire/messages/offset-for-leader-epoch-request.js';
import {
  OffsetForLeaderEpochResponse as ResponseDecl,
  type OffsetForLeaderEpochResponse,
} from '../wire/messages/offset-for-leader-epoch-response.js';
import { FaultyFs } from '../storage/fs.js';
import { LEADER_EPOCH_CHECKPOINT_FILE } from '../storage/leader-epoch-cache.js';
import { offsetForLeaderEpoch } from './offset-for-leader-epoch.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(...args: Parameters<typeof testServices>): TestServices {
  const s = testServices(...args);
  open.push(s);
  return s;
}

async function restart(s: TestServices): Promise<TestServices> {
  open.splice(open.indexOf(s), 1);
  await s.close();
  return services({}, s.dataDir);
}

function ask(partition: number, leaderEpoch: number, currentLeaderEpoch = -1): OffsetForLeaderPartition {
  return { partition, currentLeaderEpoch, leaderEpoch };
}

async function send(s: TestServices, partitions: OffsetForLeaderPartition[], opts: { topic?: string; version?: number; replicaId?: number } = {}) {
  const request: OffsetForLeaderEpochRequest = { replicaId: opts.replicaId ?? -2, topics: [{ topic: opts.topic ?? 't1', partitions }] };
  const res = (await offsetForLeaderEpoch.handle(request, ctxFor(s, opts.version ?? 4))) as OffsetForLeaderEpochResponse;
  return res.topics[0]!.partitions.map((p) => [p.partition, p.errorCode, p.leaderEpoch, p.endOffset]);
}

function produce(s: TestServices, topic: string, partition: number, count: number): void {
  const r = s.replicas.appendRecords(topic, partition, buildBatch({ records: Array.from({ length: count }, () => ({ value: 'v' })) }), -1);
  expect(r.errorCode).toBe(ErrorCode.NONE);
}

async function withTopic(s: TestServices): Promise<void> {
  await s.metadata.createTopic({ name: 't1', numPartitions: 2, replicationFactor: 1 });
}

describe('OffsetForLeaderEpoch (answers checked against Kafka 4.4.0)', () => {
  it('serves v2-v4, as Kafka 4.0 advertises', () => {
    expect([offsetForLeaderEpoch.minVersion, offsetForLeaderEpoch.maxVersion]).toEqual([2, 4]);
  });

  it('answers the current epoch with the log end, others as UNDEFINED, repeats included', async () => {
    const s = services();
    await withTopic(s);
    produce(s, 't1', 0, 6);
    expect(await send(s, [ask(0, -1), ask(0, 0), ask(0, 1), ask(0, 5), ask(1, 0), ask(1, 1), ask(0, 0)])).toEqual([
      [0, 0, -1, -1n],
      [0, 0, 0, 6n],
      [0, 0, -1, -1n],
      [0, 0, -1, -1n],
      [1, 0, 0, 0n],
      [1, 0, -1, -1n],
      [0, 0, 0, 6n],
    ]);
  });

  it("after a restart answers the previous epoch's end offset", async () => {
    let s = services();
    await withTopic(s);
    produce(s, 't1', 0, 8);
    s = await restart(s);
    expect(readFileSync(join(s.dataDir, 't1-0', LEADER_EPOCH_CHECKPOINT_FILE), 'utf8')).toBe('0\n2\n0 0\n2 8\n');
    // The empty partition's epoch 0 started where epoch 2 does, so only epoch 2 is left.
    expect(readFileSync(join(s.dataDir, 't1-1', LEADER_EPOCH_CHECKPOINT_FILE), 'utf8')).toBe('0\n1\n2 0\n');
    produce(s, 't1', 0, 4);
    expect(await send(s, [0, 1, 2, 3].map((e) => ask(0, e)))).toEqual([
      [0, 0, 0, 8n],
      [0, 0, 0, 8n],
      [0, 0, 2, 12n],
      [0, 0, -1, -1n],
    ]);
    // Below every known epoch: the epoch asked for, ending where the first known one starts.
    expect(await send(s, [0, 1, 2, 3].map((e) => ask(1, e)))).toEqual([
      [1, 0, 0, 0n],
      [1, 0, 1, 0n],
      [1, 0, 2, 0n],
      [1, 0, -1, -1n],
    ]);
    s = await restart(s);
    expect(await send(s, [2, 3, 4].map((e) => ask(0, e)))).toEqual([
      [0, 0, 2, 12n],
      [0, 0, 2, 12n],
      [0, 0, 4, 12n],
    ]);
  });

  it('fences by current_leader_epoch', async () => {
    let s = services();
    await withTopic(s);
    expect(await send(s, [ask(0, 0, 1), ask(0, 0, 0)])).toEqual([
      [0, ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1n],
      [0, 0, 0, 0n],
    ]);
    s = await restart(s);
    expect(await send(s, [ask(0, 0, 0), ask(0, 0, 2), ask(0, 0, 3)])).toEqual([
      [0, ErrorCode.FENCED_LEADER_EPOCH, -1, -1n],
      [0, 0, 0, 0n],
      [0, ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1n],
    ]);
  });

  it('answers the same whatever the replica id, and reports unknown topics and partitions', async () => {
    const s = services();
    await withTopic(s);
    produce(s, 't1', 0, 3);
    for (const replicaId of [-2, -1, 1, 7]) expect(await send(s, [ask(0, 0)], { replicaId, version: 3 })).toEqual([[0, 0, 0, 3n]]);
    expect(await send(s, [ask(9, 0)])).toEqual([[9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1n]]);
    expect(await send(s, [ask(0, 0)], { topic: 'nope' })).toEqual([[0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1n]]);
  });

  it('answers KAFKA_STORAGE_ERROR for a log that went offline', async () => {
    const fs = new FaultyFs();
    const s = services({}, undefined, { fs });
    await withTopic(s);
    fs.failNextWrite('EIO', (path) => path.includes('t1-0') && path.endsWith('.log'));
    expect(s.replicas.appendRecords('t1', 0, buildBatch({ records: [{ value: 'x' }] }), -1).errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    expect(await send(s, [ask(0, 0), ask(1, 0)])).toEqual([
      [0, ErrorCode.KAFKA_STORAGE_ERROR, -1, -1n],
      [1, 0, 0, 0n],
    ]);
  });

  it('round-trips its answer through every version it serves', async () => {
    const s = services();
    await withTopic(s);
    const res = (await offsetForLeaderEpoch.handle({ replicaId: -2, topics: [{ topic: 't1', partitions: [ask(0, 0)] }] }, ctxFor(s, 2))) as OffsetForLeaderEpochResponse;
    for (const version of [2, 3, 4]) {
      const back = decode<OffsetForLeaderEpochResponse>(ResponseDecl, version, encode(ResponseDecl, version, res));
      expect(back.ok && back.value.topics[0]!.partitions[0]).toEqual({ errorCode: 0, partition: 0, leaderEpoch: 0, endOffset: 0n });
    }
  });
});

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import {
  OffsetForLeaderEpochRequest as RequestDecl,
  type OffsetForLeaderEpochRequest,
  type OffsetForLeaderPartition,
} from '../wire/messages/offset-for-leader-epoch-request.js';
import {
  OffsetForLeaderEpochResponse as ResponseDecl,
  type OffsetForLeaderEpochResponse,
} from '../wire/messages/offset-for-leader-epoch-response.js';
import { FaultyFs } from '../storage/fs.js';
import { LEADER_EPOCH_CHECKPOINT_FILE } from '../storage/leader-epoch-cache.js';
import { offsetForLeaderEpoch } from './offset-for-leader-epoch.js';
import { callAt, ctxFor, testServices, type TestServices } from './test-services.js';

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
  it('serves v0-v4: Kafka 4.0 advertises v2-v4, Kafka 3.x served v0-v1 too', () => {
    expect([offsetForLeaderEpoch.minVersion, offsetForLeaderEpoch.maxVersion]).toEqual([0, 4]);
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
    for (const version of [0, 1, 2, 3, 4]) {
      const back = decode<OffsetForLeaderEpochResponse>(ResponseDecl, version, encode(ResponseDecl, version, res));
      // v0 carries no leader epoch: it decodes as the default, -1.
      const leaderEpoch = version === 0 ? -1 : 0;
      expect(back.ok && back.value.topics[0]!.partitions[0]).toEqual({ errorCode: 0, partition: 0, leaderEpoch, endOffset: 0n });
    }
  });
});

describe('OffsetForLeaderEpoch v0 and v1 (served as Kafka 3.x served them)', () => {
  /** [partition, errorCode, leaderEpoch, endOffset] as a client at `version` reads the answer. */
  async function sendAt(s: TestServices, version: number, partitions: OffsetForLeaderPartition[], topic = 't1') {
    const res = await callAt(offsetForLeaderEpoch, version, { replicaId: -2, topics: [{ topic, partitions }] }, s);
    return res.topics[0]!.partitions.map((p) => [p.partition, p.errorCode, p.leaderEpoch, p.endOffset]);
  }

  it('answers the end offset of each epoch asked, with the epoch found from v1 only', async () => {
    let s = services();
    await withTopic(s);
    produce(s, 't1', 0, 8);
    s = await restart(s);
    produce(s, 't1', 0, 4);
    // Epoch 0 ended at 8; epoch 1 was never led, so it answers as epoch 0; epoch 2 is current (log end 12).
    const asks = [0, 1, 2, 3, 0].map((e) => ask(0, e));
    expect(await sendAt(s, 1, asks)).toEqual([
      [0, 0, 0, 8n],
      [0, 0, 0, 8n],
      [0, 0, 2, 12n],
      [0, 0, -1, -1n],
      [0, 0, 0, 8n],
    ]);
    // v0 has no leader epoch in its answer: the client reads the default, -1.
    expect(await sendAt(s, 0, asks)).toEqual([
      [0, 0, -1, 8n],
      [0, 0, -1, 8n],
      [0, 0, -1, 12n],
      [0, 0, -1, -1n],
      [0, 0, -1, 8n],
    ]);
  });

  it('fences nothing, since the request carries no current leader epoch', async () => {
    let s = services();
    await withTopic(s);
    produce(s, 't1', 0, 3);
    s = await restart(s);
    // At v2 a stale current epoch is fenced; at v0 and v1 the field is not sent, so the same ask is answered.
    expect(await sendAt(s, 2, [ask(0, 0, 0)])).toEqual([[0, ErrorCode.FENCED_LEADER_EPOCH, -1, -1n]]);
    expect(await sendAt(s, 1, [ask(0, 0, 0)])).toEqual([[0, 0, 0, 3n]]);
    expect(await sendAt(s, 0, [ask(0, 0, 0)])).toEqual([[0, 0, -1, 3n]]);
  });

  it('reports unknown topics and partitions and offline logs per partition', async () => {
    const fs = new FaultyFs();
    // Partition 0 in the first log directory, 1 in the second: only the first fails.
    const s = services({}, undefined, { fs, moreLogDirs: [mkdtempSync(join(tmpdir(), 'gregor-second-dir-'))] });
    await withTopic(s);
    fs.failNextWrite('EIO', (path) => path.includes('t1-0') && path.endsWith('.log'));
    expect(s.replicas.appendRecords('t1', 0, buildBatch({ records: [{ value: 'x' }] }), -1).errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    for (const version of [0, 1]) {
      expect(await sendAt(s, version, [ask(0, 0), ask(1, 0), ask(9, 0)])).toEqual([
        [0, ErrorCode.KAFKA_STORAGE_ERROR, -1, -1n],
        [1, 0, version === 0 ? -1 : 0, 0n],
        [9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1n],
      ]);
      expect(await sendAt(s, version, [ask(0, 0)], 'nope')).toEqual([[0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1n]]);
    }
  });

  it('reads and writes the v0 and v1 layouts of the October 2024 definitions', () => {
    // The request is the same at v0 and v1: no replica id, no current leader epoch, no tagged fields.
    const request: OffsetForLeaderEpochRequest = { replicaId: -2, topics: [{ topic: 't', partitions: [ask(3, 5)] }] };
    const requestHex = '00000001' + '000174' + '00000001' + '00000003' + '00000005';
    for (const version of [0, 1]) {
      expect(encode(RequestDecl, version, request).toString('hex')).toBe(requestHex);
      expect(decode<OffsetForLeaderEpochRequest>(RequestDecl, version, Buffer.from(requestHex, 'hex'))).toEqual({ ok: true, value: request });
    }
    // The answer: error code, partition, (v1: leader epoch,) end offset; no throttle time.
    const response: OffsetForLeaderEpochResponse = { throttleTimeMs: 0, topics: [{ topic: 't', partitions: [{ errorCode: 0, partition: 3, leaderEpoch: 4, endOffset: 9n }] }] };
    const head = '00000001' + '000174' + '00000001' + '0000' + '00000003';
    expect(encode(ResponseDecl, 0, response).toString('hex')).toBe(head + '0000000000000009');
    expect(encode(ResponseDecl, 1, response).toString('hex')).toBe(head + '00000004' + '0000000000000009');
  });
});

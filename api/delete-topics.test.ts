import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { buildBatch } from '../wire/record-batch.js';
import type { DeleteTopicsRequest } from '../wire/messages/delete-topics-request.js';
import { DeleteTopicsResponse as DeleteTopicsResponseDecl, type DeleteTopicsResponse } from '../wire/messages/delete-topics-response.js';
import { logConfig } from '../storage/log-config.js';
import { deleteTopics } from './delete-topics.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** Services whose deleted log directories are removed at once (file.delete.delay.ms 0). */
function services(): TestServices {
  const s = testServices({}, undefined, { logDefaults: logConfig({ fileDeleteDelayMs: 0 }) });
  open.push(s);
  return s;
}

async function createTopic(s: TestServices, name: string, numPartitions = 1): Promise<string> {
  return (await s.metadata.createTopic({ name, numPartitions, replicationFactor: 1 })).topicId;
}

const byName = (...names: string[]): DeleteTopicsRequest => ({ topics: names.map((name) => ({ name, topicId: ZERO_UUID })), topicNames: names, timeoutMs: 30000 });
const byId = (...ids: string[]): DeleteTopicsRequest => ({ topics: ids.map((topicId) => ({ name: null, topicId })), topicNames: [], timeoutMs: 30000 });

async function del(s: TestServices, request: DeleteTopicsRequest, version = 6): Promise<DeleteTopicsResponse> {
  return (await deleteTopics.handle(request, ctxFor(s, version))) as DeleteTopicsResponse;
}

type Answer = [name: string | null, topicId: string, errorCode: number, errorMessage: string | null];

const sorted = (list: Answer[]): Answer[] => [...list].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

/** [name, id, error code, message] of each answer, sorted (Kafka answers in no particular order). */
function answers(res: DeleteTopicsResponse): Answer[] {
  return sorted(res.responses.map((r): Answer => [r.name, r.topicId, r.errorCode, r.errorMessage]));
}

async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('DeleteTopics', () => {
  it('deletes by name: Metadata stops listing the topic at once and its data leaves the disk', async () => {
    const s = services();
    const id = await createTopic(s, 'orders', 2);
    s.replicas.appendRecords('orders', 0, buildBatch({ records: [{ key: 'k', value: 'v', timestamp: 1n }] }), -1);
    expect(existsSync(join(s.dataDir, 'orders-0'))).toBe(true);

    const res = await del(s, byName('orders'));
    expect(answers(res)).toEqual([['orders', id, ErrorCode.NONE, null]]);
    expect(s.metadata.image().topics.has('orders')).toBe(false);
    expect(s.logs.get('orders', 0)).toBeUndefined();
    expect(s.logs.get('orders', 1)).toBeUndefined();
    // Renamed out of the way at once, removed after file.delete.delay.ms (0 here).
    expect(existsSync(join(s.dataDir, 'orders-0'))).toBe(false);
    await until(() => readdirSync(s.dataDir).every((n) => !n.startsWith('orders-')), 'the renamed directories to go');
  });

  it('deletes by topic id (v6)', async () => {
    const s = services();
    const id = await createTopic(s, 'by-id');
    expect(answers(await del(s, byId(id)))).toEqual([['by-id', id, ErrorCode.NONE, null]]);
    expect(s.metadata.image().topicsById.has(id)).toBe(false);
  });

  it('gives a topic deleted and created again a new id and empty logs', async () => {
    const s = services();
    const first = await createTopic(s, 'again');
    s.replicas.appendRecords('again', 0, buildBatch({ records: [{ key: 'k', value: 'old', timestamp: 1n }] }), -1);
    expect(s.logs.get('again', 0)!.logEndOffset).toBe(1n);
    await del(s, byName('again'));
    const second = await createTopic(s, 'again');
    expect(second).not.toBe(first);
    expect(s.logs.get('again', 0)!.logEndOffset).toBe(0n);
    expect(s.logs.get('again', 0)!.highWatermark).toBe(0n);
  });

  it('answers unknown names and ids as Kafka does, with its messages from v5', async () => {
    const s = services();
    const res = await del(s, { topics: [{ name: 'nope', topicId: ZERO_UUID }, { name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg' }], topicNames: [], timeoutMs: 30000 });
    expect(answers(res)).toEqual(sorted([
      ['nope', ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.'],
      [null, 'AAAAAAAAAAAAAAAAAAAAAg', ErrorCode.UNKNOWN_TOPIC_ID, 'This server does not host this topic ID.'],
    ]));
  });

  it('refuses entries with neither or both of name and id, and names or ids given twice', async () => {
    const s = services();
    const a = await createTopic(s, 'a');
    await createTopic(s, 'b');
    const c = await createTopic(s, 'c');
    const res = await del(s, {
      topics: [
        { name: null, topicId: ZERO_UUID },
        { name: 'a', topicId: a },
        { name: 'b', topicId: ZERO_UUID },
        { name: 'b', topicId: ZERO_UUID },
        { name: null, topicId: c },
        { name: null, topicId: c },
      ],
      topicNames: [],
      timeoutMs: 30000,
    });
    expect(answers(res)).toEqual(sorted([
      ['a', a, ErrorCode.INVALID_REQUEST, 'You may not specify both topic name and topic id.'],
      ['b', ZERO_UUID, ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'],
      [null, ZERO_UUID, ErrorCode.INVALID_REQUEST, 'Neither topic name nor id were specified.'],
      [null, c, ErrorCode.INVALID_REQUEST, 'Duplicate topic id.'],
    ]));
    expect([...s.metadata.image().topics.keys()].sort()).toEqual(['a', 'b', 'c']);
  });

  it('deletes neither when one topic is named by name and by id in one request', async () => {
    const s = services();
    const id = await createTopic(s, 'both');
    const res = await del(s, { topics: [{ name: 'both', topicId: ZERO_UUID }, { name: null, topicId: id }], topicNames: [], timeoutMs: 30000 });
    expect(answers(res)).toEqual([['both', id, ErrorCode.INVALID_REQUEST, 'The provided topic name maps to an ID that was already supplied.']]);
    expect(s.metadata.image().topics.has('both')).toBe(true);
  });

  it('answers REQUEST_TIMED_OUT for every topic and deletes nothing when timeout_ms <= 0', async () => {
    const s = services();
    await createTopic(s, 'stays');
    const res = await del(s, { ...byName('stays', 'nope'), timeoutMs: 0 }, 3);
    expect(res.responses.map((r) => [r.name, r.errorCode])).toEqual([
      ['stays', ErrorCode.REQUEST_TIMED_OUT],
      ['nope', ErrorCode.REQUEST_TIMED_OUT],
    ]);
    expect(s.metadata.image().topics.has('stays')).toBe(true);
  });

  it('deletes internal topics, as Kafka 4.0\'s broker does', async () => {
    const s = services();
    await createTopic(s, '__consumer_offsets', 3);
    expect((await del(s, byName('__consumer_offsets'), 1)).responses[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(s.logs.all()).toEqual([]);
  });

  it('reads names from topic_names before v6 and encodes its answer at every version', async () => {
    const s = services();
    for (let v = 0; v <= 6; v++) {
      const id = await createTopic(s, `t${v}`);
      const res = await del(s, byName(`t${v}`, 'nope'), v);
      expect(res.responses.map((r) => [r.name, r.errorCode])).toEqual(
        expect.arrayContaining([
          ['nope', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
          [`t${v}`, ErrorCode.NONE],
        ]),
      );
      expect(res.responses).toHaveLength(2);
      const back = decode<DeleteTopicsResponse>(DeleteTopicsResponseDecl, v, encode(DeleteTopicsResponseDecl, v, res));
      expect(back.ok).toBe(true);
      if (back.ok && v >= 6) expect(back.value.responses.find((r) => r.name === `t${v}`)!.topicId).toBe(id);
    }
  });
});

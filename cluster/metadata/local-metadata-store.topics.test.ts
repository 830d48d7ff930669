import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalMetadataStore } from './local-metadata-store.js';
import { UnknownTopicError, type MetadataImage } from './metadata-image.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-store-'));
  dirs.push(d);
  return d;
}

const self = { nodeId: 1, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }] };
const open = (d: string) => new LocalMetadataStore(d, 'cluster-id', self);

describe('LocalMetadataStore: deleting topics and adding partitions', () => {
  it('deletes a topic by name or by id, for good: a reopened store does not list it', async () => {
    const d = dir();
    const store = open(d);
    const a = await store.createTopic({ name: 'a', numPartitions: 1, replicationFactor: 1 });
    const b = await store.createTopic({ name: 'b', numPartitions: 1, replicationFactor: 1 });
    expect(await store.deleteTopic({ name: 'a' })).toEqual(a);
    expect(await store.deleteTopic({ topicId: b.topicId })).toEqual(b);
    expect(store.image().topics.size).toBe(0);
    expect(store.image().topicsById.size).toBe(0);
    expect(open(d).image().topics.size).toBe(0);
  });

  it('refuses to delete what does not exist with UnknownTopicError', async () => {
    const store = open(dir());
    await expect(store.deleteTopic({ name: 'nope' })).rejects.toBeInstanceOf(UnknownTopicError);
    await expect(store.deleteTopic({ topicId: 'AAAAAAAAAAAAAAAAAAAAAg' })).rejects.toBeInstanceOf(UnknownTopicError);
  });

  it('shows every listener the image without the topic before deleteTopic resolves', async () => {
    const store = open(dir());
    await store.createTopic({ name: 'gone', numPartitions: 1, replicationFactor: 1 });
    const seen: MetadataImage[] = [];
    store.subscribe((image) => seen.push(image));
    const deleting = store.deleteTopic({ name: 'gone' });
    expect(seen.map((i) => i.topics.has('gone'))).toEqual([false]);
    await deleting;
  });

  it('gives a topic created again under a deleted name a new id', async () => {
    const store = open(dir());
    const first = await store.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    await store.deleteTopic({ name: 't' });
    const second = await store.createTopic({ name: 't', numPartitions: 1, replicationFactor: 1 });
    expect(second.topicId).not.toBe(first.topicId);
  });

  it('adds partitions after the existing ones, keeping their epochs and the topic id, and persists them', async () => {
    const d = dir();
    const store = open(d);
    const t = await store.createTopic({ name: 't', numPartitions: 2, replicationFactor: 1 });
    const grown = await store.createPartitions('t', 4);
    expect(grown.topicId).toBe(t.topicId);
    expect(grown.partitions.map((p) => [p.partition, p.leader, p.replicas, p.isr])).toEqual([
      [0, 1, [1], [1]],
      [1, 1, [1], [1]],
      [2, 1, [1], [1]],
      [3, 1, [1], [1]],
    ]);
    expect(open(d).image().topics.get('t')!.partitions).toHaveLength(4);
  });

  it('takes the replicas of new partitions (and of a new topic) from assignments', async () => {
    const store = open(dir());
    const t = await store.createTopic({ name: 't', numPartitions: -1, replicationFactor: -1, assignments: [[1], [1]] });
    expect(t.partitions.map((p) => p.replicas)).toEqual([[1], [1]]);
    expect((await store.createPartitions('t', 3, [[1]])).partitions.map((p) => p.partition)).toEqual([0, 1, 2]);
  });

  it('refuses a count that is not an increase, assignments that do not fit it, and unknown topics', async () => {
    const store = open(dir());
    await store.createTopic({ name: 't', numPartitions: 2, replicationFactor: 1 });
    await expect(store.createPartitions('t', 2)).rejects.toBeInstanceOf(RangeError);
    await expect(store.createPartitions('t', 1)).rejects.toBeInstanceOf(RangeError);
    await expect(store.createPartitions('t', 4, [[1]])).rejects.toBeInstanceOf(RangeError);
    await expect(store.createPartitions('nope', 4)).rejects.toBeInstanceOf(UnknownTopicError);
    expect(store.image().topics.get('t')!.partitions).toHaveLength(2);
  });
});

import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBatch } from '../../wire/record-batch.js';
import { DEFAULT_LOG_CONFIG, logConfig } from '../../storage/log-config.js';
import { LogManager } from '../../storage/log-manager.js';
import { LocalMetadataStore } from '../metadata/local-metadata-store.js';
import { buildImage, type MetadataImage, type MetadataStore, type TopicImage } from '../metadata/metadata-image.js';
import { ReplicaManager } from './replica-manager.js';

const quiet = { warn: () => {}, info: () => {} };
const self = { nodeId: 1, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }] };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-rm-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A log manager whose deleted directories go at once, closed after the test. */
function logsIn(d: string): LogManager {
  const logs = LogManager.open(d, { defaults: logConfig({ fileDeleteDelayMs: 0 }), log: quiet });
  cleanups.push(() => logs.close());
  return logs;
}

function started(store: MetadataStore, logs: LogManager): ReplicaManager {
  const rm = new ReplicaManager(1, store, logs, quiet).start();
  cleanups.push(() => rm.stop());
  return rm;
}

const record = () => buildBatch({ records: [{ key: 'k', value: 'v', timestamp: 1n }] });
const partitionDirs = (d: string) => readdirSync(d).filter((n) => /-\d+$/.test(n)).sort();

/** A store that hands out whatever image the test sets, as a cluster store could. */
class ScriptedStore {
  private listeners: ((image: MetadataImage) => void)[] = [];
  constructor(private current: MetadataImage) {}
  image(): MetadataImage {
    return this.current;
  }
  subscribe(l: (image: MetadataImage) => void): () => void {
    this.listeners.push(l);
    return () => (this.listeners = this.listeners.filter((x) => x !== l));
  }
  set(image: MetadataImage): void {
    this.current = image;
    for (const l of this.listeners) l(image);
  }
}

function topicImage(name: string, topicId: string, partitions: number): TopicImage {
  return {
    name,
    topicId,
    internal: false,
    configs: {},
    partitions: Array.from({ length: partitions }, (_, partition) => ({ partition, leader: 1, leaderEpoch: 0, replicas: [1], isr: [1], offlineReplicas: [] })),
  };
}

const imageOf = (...topics: TopicImage[]) => buildImage('c', 1, [self], topics);

describe('ReplicaManager: topics that go away', () => {
  it('closes and deletes the logs of a topic the image drops, and leaves the others alone', async () => {
    const d = dir();
    const store = new LocalMetadataStore(d, 'c', self);
    const logs = logsIn(d);
    const rm = started(store, logs);
    await store.createTopic({ name: 'gone', numPartitions: 2, replicationFactor: 1 });
    await store.createTopic({ name: 'kept', numPartitions: 1, replicationFactor: 1 });
    rm.appendRecords('gone', 0, record(), -1);
    const log = rm.logFor('gone', 0)!;
    await store.deleteTopic({ name: 'gone' });
    expect(rm.logFor('gone', 0)).toBeUndefined();
    expect(rm.logFor('gone', 1)).toBeUndefined();
    expect(() => log.append(record())).toThrow();
    expect(partitionDirs(d)).toEqual(['kept-0']);
    expect(rm.appendRecords('gone', 0, record(), -1).errorCode).toBe(3);
  });

  it('answers a fetch parked on a deleted partition at once', async () => {
    const d = dir();
    const store = new LocalMetadataStore(d, 'c', self);
    const rm = started(store, logsIn(d));
    await store.createTopic({ name: 'gone', numPartitions: 1, replicationFactor: 1 });
    const parked = rm.awaitFetchable([{ topic: 'gone', partition: 0 }], () => rm.logFor('gone', 0) === undefined, 60000);
    await store.deleteTopic({ name: 'gone' });
    expect(await parked).toBe('satisfied');
  });

  it('replaces the logs of a topic that comes back under its name with a new id', () => {
    const d = dir();
    const store = new ScriptedStore(imageOf(topicImage('t', 'AAAAAAAAAAAAAAAAAAAAAg', 1)));
    const logs = logsIn(d);
    const rm = started(store as unknown as MetadataStore, logs);
    rm.appendRecords('t', 0, record(), -1);
    expect(rm.logFor('t', 0)!.logEndOffset).toBe(1n);
    store.set(imageOf(topicImage('t', 'AAAAAAAAAAAAAAAAAAAAAw', 1)));
    expect(rm.logFor('t', 0)!.logEndOffset).toBe(0n);
  });

  it('at start, deletes the logs the image has no partition for (a deletion a crash cut short)', () => {
    const d = dir();
    // Logs left on disk: a deleted topic's, a partition beyond its topic's count, and one that belongs.
    const before = LogManager.open(d, { defaults: DEFAULT_LOG_CONFIG, log: quiet });
    for (const [t, p] of [['deleted', 0], ['kept', 0], ['kept', 5]] as const) before.getOrCreate(t, p).append(record());
    void before.close();
    const store = new ScriptedStore(imageOf(topicImage('kept', 'AAAAAAAAAAAAAAAAAAAAAg', 1)));
    const logs = logsIn(d);
    const rm = started(store as unknown as MetadataStore, logs);
    expect(partitionDirs(d)).toEqual(['kept-0']);
    expect(rm.logFor('kept', 0)!.logEndOffset).toBe(1n);
    expect(logs.all().map((l) => `${l.topic}-${l.partition}`)).toEqual(['kept-0']);
  });

  it('describes its log directory: every partition log with its size, and the disk', async () => {
    const d = dir();
    const store = new LocalMetadataStore(d, 'c', self);
    const rm = started(store, logsIn(d));
    await store.createTopic({ name: 't', numPartitions: 2, replicationFactor: 1 });
    rm.appendRecords('t', 1, record(), -1);
    const [described, ...others] = rm.describeLogDirs();
    expect(others).toEqual([]);
    expect(described!.logDir).toBe(d);
    expect(described!.failure).toBeNull();
    expect([...described!.partitions].sort((a, b) => a.partition - b.partition)).toEqual([
      { topic: 't', partition: 0, sizeBytes: 0, isFuture: false, offsetLag: 0n },
      { topic: 't', partition: 1, sizeBytes: rm.logFor('t', 1)!.size, isFuture: false, offsetLag: 0n },
    ]);
    expect(described!.totalBytes).toBeGreaterThan(0n);
    expect(existsSync(d)).toBe(true);
  });
});

describe('ReplicaManager: log directories that fail', () => {
  it('does not create empty logs, after a restart, for replicas that may be in an offline directory; a topic created later gets logs', async () => {
    const [a, b] = [dir(), dir()];
    const store = new ScriptedStore(imageOf(topicImage('t', 'AAAAAAAAAAAAAAAAAAAAAg', 2)));
    const logs = LogManager.open([a, b], { defaults: logConfig(), log: quiet });
    const rm = new ReplicaManager(1, store as unknown as MetadataStore, logs, quiet).start();
    expect(rm.appendRecords('t', 1, record(), -1).errorCode).toBe(0);
    expect(logs.logDirOf('t', 1)).toBe(b);
    rm.stop();
    await logs.close();

    // The second directory is unusable at the next start.
    const again = LogManager.open([a, b], { defaults: logConfig(), log: quiet, unusableDirs: new Map([[b, new Error('disk failed')]]) });
    cleanups.push(() => again.close());
    const reported: string[][] = [];
    const store2 = Object.assign(new ScriptedStore(imageOf(topicImage('t', 'AAAAAAAAAAAAAAAAAAAAAg', 2))), {
      reportOfflineReplicas: async (r: readonly string[]) => void reported.push([...r]),
    });
    const rm2 = new ReplicaManager(1, store2 as unknown as MetadataStore, again, quiet).start();
    cleanups.push(() => rm2.stop());
    expect(again.get('t', 0)).toBeDefined();
    expect(again.get('t', 1)).toBeUndefined();
    expect(rm2.appendRecords('t', 1, record(), -1).errorCode).toBe(56); // KAFKA_STORAGE_ERROR, nothing created
    expect(again.get('t', 1)).toBeUndefined();
    expect(partitionDirs(a)).toEqual(['t-0']);
    expect(reported).toEqual([['AAAAAAAAAAAAAAAAAAAAAg:1']]);
    // A topic that appears after the start is new: its logs are made in the directory still online.
    store2.set(imageOf(topicImage('t', 'AAAAAAAAAAAAAAAAAAAAAg', 2), topicImage('later', 'AAAAAAAAAAAAAAAAAAAAAw', 1)));
    expect(again.logDirOf('later', 0)).toBe(a);
    expect(reported).toEqual([['AAAAAAAAAAAAAAAAAAAAAg:1']]);
  });
});

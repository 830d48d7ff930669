import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { buildBatch } from '../wire/record-batch.js';
import type { AlterReplicaLogDirsRequest } from '../wire/messages/alter-replica-log-dirs-request.js';
import type { AlterReplicaLogDirsResponse } from '../wire/messages/alter-replica-log-dirs-response.js';
import type { DescribeLogDirsResponse } from '../wire/messages/describe-log-dirs-response.js';
import { alterReplicaLogDirs } from './alter-replica-log-dirs.js';
import { describeLogDirs } from './describe-log-dirs.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-alter-dirs-'));
  dirs.push(d);
  return d;
}

/** A broker with log directories a and b, and topic t of 2 partitions (t-0 in a, t-1 in b), 5 records in t-0. */
async function twoDirs(extra: string[] = []): Promise<{ s: TestServices; a: string; b: string }> {
  const [a, b] = [tempDir(), tempDir()];
  const s = testServices({}, a, { moreLogDirs: [b, ...extra] });
  open.push(s);
  await s.metadata.createTopic({ name: 't', numPartitions: 2, replicationFactor: 1 });
  for (let i = 0; i < 5; i++) s.replicas.appendRecords('t', 0, buildBatch({ records: [{ value: `v${i}`, timestamp: 1n }] }), -1);
  return { s, a, b };
}

async function alter(s: TestServices, req: AlterReplicaLogDirsRequest, version = 2): Promise<Map<string, number>> {
  const res = await callAt<AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse>(alterReplicaLogDirs, version, req, s);
  return new Map(res.results.flatMap((t) => t.partitions.map((p) => [`${t.topicName}-${p.partitionIndex}`, p.errorCode] as [string, number])));
}

/** "dir: topic-partition[future]" per log, per directory in order. */
async function layout(s: TestServices): Promise<{ dir: string; errorCode: number; logs: string[] }[]> {
  const res = await callAt<{ topics: null }, DescribeLogDirsResponse>(describeLogDirs, 5, { topics: null }, s);
  return res.results.map((r) => ({
    dir: r.logDir,
    errorCode: r.errorCode,
    logs: r.topics.flatMap((t) => t.partitions.map((p) => `${t.name}-${p.partitionIndex}${p.isFutureKey ? ' future' : ''}`)),
  }));
}

describe('AlterReplicaLogDirs', () => {
  it('moves a partition to another log directory, which DescribeLogDirs then lists it under, with its records', async () => {
    const { s, a, b } = await twoDirs();
    expect(await layout(s)).toEqual([
      { dir: a, errorCode: 0, logs: ['t-0'] },
      { dir: b, errorCode: 0, logs: ['t-1'] },
    ]);
    expect(await alter(s, { dirs: [{ path: b, topics: [{ name: 't', partitions: [0] }] }] })).toEqual(new Map([['t-0', ErrorCode.NONE]]));
    // The copy runs in the background (the test services do not start the log manager's timers).
    for (let i = 0; i < 100 && s.logs.moveStep(); i++);
    expect(await layout(s)).toEqual([
      { dir: a, errorCode: 0, logs: [] },
      { dir: b, errorCode: 0, logs: ['t-0', 't-1'] },
    ]);
    expect(s.logs.get('t', 0)!.logEndOffset).toBe(5n);
    expect(s.logs.get('t', 0)!.dir).toBe(join(b, 't-0'));
    // Appends go on in the new directory.
    expect(s.replicas.appendRecords('t', 0, buildBatch({ records: [{ value: 'after', timestamp: 1n }] }), -1).errorCode).toBe(0);
    expect(s.logs.get('t', 0)!.logEndOffset).toBe(6n);
  });

  it('answers each partition with Kafka\'s error codes', async () => {
    const { s, a, b } = await twoDirs();
    const res = await alter(s, {
      dirs: [
        { path: join(a, 'elsewhere'), topics: [{ name: 't', partitions: [0] }] },
        { path: b, topics: [{ name: 'unknown', partitions: [0] }, { name: 't', partitions: [1, 9] }, { name: 'x'.repeat(240), partitions: [0] }] },
      ],
    });
    expect(res).toEqual(
      new Map([
        ['t-0', ErrorCode.LOG_DIR_NOT_FOUND],
        ['unknown-0', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
        ['t-1', ErrorCode.NONE], // already there
        ['t-9', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
        [`${'x'.repeat(240)}-0`, ErrorCode.INVALID_TOPIC_EXCEPTION],
      ]),
    );
    // Nothing moved.
    expect((await layout(s)).map((d) => d.logs)).toEqual([['t-0'], ['t-1']]);
  });

  it('moves a partition named under two directories to the last one', async () => {
    const { s, a, b } = await twoDirs();
    const res = await alter(s, {
      dirs: [
        { path: b, topics: [{ name: 't', partitions: [1] }] },
        { path: a, topics: [{ name: 't', partitions: [1] }] },
      ],
    });
    expect(res).toEqual(new Map([['t-1', ErrorCode.NONE]]));
    for (let i = 0; i < 100 && s.logs.moveStep(); i++);
    expect((await layout(s)).map((d) => d.logs)).toEqual([['t-0', 't-1'], []]);
  });

  it('reports an offline directory with KAFKA_STORAGE_ERROR and refuses moves into it', async () => {
    const broken = join(tempDir(), 'file');
    writeFileSync(broken, 'not a directory');
    const { s, a, b } = await twoDirs([broken]);
    expect(await layout(s)).toEqual([
      { dir: a, errorCode: 0, logs: ['t-0'] },
      { dir: b, errorCode: 0, logs: ['t-1'] },
      { dir: broken, errorCode: ErrorCode.KAFKA_STORAGE_ERROR, logs: [] },
    ]);
    const res = await callAt<{ topics: null }, DescribeLogDirsResponse>(describeLogDirs, 5, { topics: null }, s);
    expect([res.results[2]!.totalBytes, res.results[2]!.usableBytes]).toEqual([-1n, -1n]);
    expect(await alter(s, { dirs: [{ path: broken, topics: [{ name: 't', partitions: [0] }] }] })).toEqual(new Map([['t-0', ErrorCode.KAFKA_STORAGE_ERROR]]));
    // No future log is made while any directory is offline, as in Kafka.
    expect(await alter(s, { dirs: [{ path: b, topics: [{ name: 't', partitions: [0] }] }] })).toEqual(new Map([['t-0', ErrorCode.KAFKA_STORAGE_ERROR]]));
  });

  it('is served at v0 and v1 too', async () => {
    const { s, b } = await twoDirs();
    for (const v of [0, 1]) expect(await alter(s, { dirs: [{ path: b, topics: [{ name: 't', partitions: [1] }] }] }, v)).toEqual(new Map([['t-1', ErrorCode.NONE]]));
  });
});

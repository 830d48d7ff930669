import { statfsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import type { DescribeLogDirsRequest } from '../wire/messages/describe-log-dirs-request.js';
import { DescribeLogDirsResponse as DescribeLogDirsResponseDecl, type DescribeLogDirsResponse } from '../wire/messages/describe-log-dirs-response.js';
import { describeLogDirs } from './describe-log-dirs.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(): Promise<TestServices> {
  const s = testServices();
  open.push(s);
  await s.metadata.createTopic({ name: 'b', numPartitions: 2, replicationFactor: 1 });
  await s.metadata.createTopic({ name: 'a', numPartitions: 1, replicationFactor: 1 });
  for (let i = 0; i < 3; i++) s.replicas.appendRecords('b', 1, buildBatch({ records: [{ key: 'k', value: 'v', timestamp: 1n }] }), -1);
  return s;
}

async function ask(s: TestServices, topics: DescribeLogDirsRequest['topics'], version = 4): Promise<DescribeLogDirsResponse> {
  return (await describeLogDirs.handle({ topics }, ctxFor(s, version))) as DescribeLogDirsResponse;
}

/** "topic/partition:size" of the one log dir, in answer order. */
const listed = (res: DescribeLogDirsResponse) => res.results[0]!.topics.flatMap((t) => t.partitions.map((p) => `${t.name}/${p.partitionIndex}:${p.partitionSize}`));

describe('DescribeLogDirs', () => {
  it('describes the one log dir: every partition with its size on disk, no lag, never a future log', async () => {
    const s = await services();
    const res = await ask(s, null);
    expect(res.errorCode).toBe(0);
    expect(res.results).toHaveLength(1);
    const [dir] = res.results;
    expect(dir!.logDir).toBe(s.dataDir);
    expect(dir!.errorCode).toBe(0);
    const size = BigInt(s.logs.get('b', 1)!.size);
    expect(size).toBeGreaterThan(0n);
    expect(listed(res)).toEqual(['a/0:0', 'b/0:0', `b/1:${size}`]);
    for (const t of dir!.topics) for (const p of t.partitions) expect([p.offsetLag, p.isFutureKey]).toEqual([0n, false]);
  });

  it('answers the file system\'s total and usable bytes (v4)', async () => {
    const s = await services();
    const fs = statfsSync(s.dataDir, { bigint: true });
    const [dir] = (await ask(s, null)).results;
    expect(dir!.totalBytes).toBe(fs.blocks * fs.bsize);
    // Other processes write meanwhile; the answer is a recent reading.
    expect(dir!.usableBytes).toBeGreaterThan(0n);
    expect(dir!.usableBytes).toBeLessThanOrEqual(dir!.totalBytes);
  });

  it('answers only the named partitions that have a log here; an empty list names none', async () => {
    const s = await services();
    expect(listed(await ask(s, [{ topic: 'b', partitions: [1, 7] }, { topic: 'nope', partitions: [0] }]))).toEqual([expect.stringMatching(/^b\/1:\d+$/)]);
    expect((await ask(s, [])).results[0]!.topics).toEqual([]);
  });

  it('encodes its answer at every version', async () => {
    const s = await services();
    for (let v = 0; v <= 4; v++) {
      const res = await ask(s, null, v);
      const back = decode<DescribeLogDirsResponse>(DescribeLogDirsResponseDecl, v, encode(DescribeLogDirsResponseDecl, v, res));
      expect(back.ok).toBe(true);
      if (back.ok) expect(back.value.results[0]!.topics).toEqual(res.results[0]!.topics);
      if (back.ok) expect(back.value.results[0]!.totalBytes).toBe(v >= 4 ? res.results[0]!.totalBytes : -1n);
    }
  });
});

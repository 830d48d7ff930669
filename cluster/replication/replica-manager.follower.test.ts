/**
 * ReplicaManager as a follower: taking the batches fetched from the leader
 * (appendAsFollower) and starting over within the leader's range after
 * OFFSET_OUT_OF_RANGE (resetFollower), as Kafka's follower does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { buildBatch } from '../../wire/record-batch.js';
import { logConfig } from '../../storage/log-config.js';
import { LogManager } from '../../storage/log-manager.js';
import { buildImage, type MetadataStore } from '../metadata/metadata-image.js';
import { followerBatches } from './replica-fetcher.js';
import { ReplicaManager } from './replica-manager.js';

const quiet = { warn: () => {}, info: () => {} };
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

const broker = (nodeId: number) => ({ nodeId, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9090 + nodeId }] });

/** Broker 2, following broker 1 for partition t-0. */
function follower(): { rm: ReplicaManager; logs: LogManager } {
  const d = mkdtempSync(join(tmpdir(), 'gregor-rm-follower-'));
  const image = buildImage('c', 1, [broker(1), broker(2)], [
    { name: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: false, configs: {}, partitions: [{ partition: 0, leader: 1, leaderEpoch: 3, replicas: [1, 2], isr: [1], offlineReplicas: [] }] },
  ]);
  const store = { image: () => image, subscribe: () => () => {} } as unknown as MetadataStore;
  const logs = LogManager.open(d, { defaults: logConfig({}), log: quiet });
  const rm = new ReplicaManager(2, store, logs, quiet).start();
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  cleanups.push(() => {
    rm.stop();
    void logs.close();
  });
  return { rm, logs };
}

const batch = (baseOffset: bigint, n: number): Buffer =>
  buildBatch({ baseOffset, partitionLeaderEpoch: 3, records: Array.from({ length: n }, (_, i) => ({ value: `v${baseOffset + BigInt(i)}`, timestamp: 1000n + BigInt(i) })) });

function take(rm: ReplicaManager, records: Buffer, hw: bigint): { errorCode: number; logEndOffset: bigint } {
  return rm.appendAsFollower('t', 0, followerBatches(records).batches, records, hw);
}

describe('a follower taking what its leader sent', () => {
  it("moves its log start up to the leader's, as far as its own high watermark", () => {
    const { rm, logs } = follower();
    const log = logs.get('t', 0)!;
    expect(rm.appendAsFollower('t', 0, followerBatches(batch(0n, 10)).batches, batch(0n, 10), 6n, 0n).errorCode).toBe(ErrorCode.NONE);
    expect(log.logStartOffset).toBe(0n);
    // The leader deleted records before 4: so does the follower.
    expect(rm.appendAsFollower('t', 0, [], Buffer.alloc(0), 6n, 4n).errorCode).toBe(ErrorCode.NONE);
    expect(log.logStartOffset).toBe(4n);
    // Never past its own high watermark, never back.
    rm.appendAsFollower('t', 0, [], Buffer.alloc(0), 6n, 8n);
    expect(log.logStartOffset).toBe(4n);
    rm.appendAsFollower('t', 0, [], Buffer.alloc(0), 10n, 2n);
    expect(log.logStartOffset).toBe(4n);
    rm.appendAsFollower('t', 0, [], Buffer.alloc(0), 10n, 8n);
    expect(log.logStartOffset).toBe(8n);
  });

  it('appends the leader batches as they are, skips what it has, and follows the leader high watermark up to its own end', () => {
    const { rm, logs } = follower();
    expect(rm.followerPosition('t', 0)).toEqual({ logEndOffset: 0n, logStartOffset: 0n });
    const a = batch(0n, 3);
    const b = batch(3n, 2);
    expect(take(rm, Buffer.concat([a, b]), 100n)).toEqual({ errorCode: ErrorCode.NONE, logEndOffset: 5n });
    const log = logs.get('t', 0)!;
    expect(log.highWatermark).toBe(5n);
    // The same bytes again (a fetch answered twice): nothing new is written.
    expect(take(rm, Buffer.concat([a, b, batch(5n, 1)]), 4n)).toEqual({ errorCode: ErrorCode.NONE, logEndOffset: 6n });
    expect(log.highWatermark).toBe(5n);
    // The segment holds the leader's bytes, nothing twice.
    expect(log.readBuffer(0n, 1 << 20)).toEqual(Buffer.concat([a, b, batch(5n, 1)]));
  });

  it('starts an empty log at a batch that begins before it (a log start inside a batch), but refuses one across a non-empty end', () => {
    const { rm, logs } = follower();
    rm.resetFollower('t', 0, 4n, 10n);
    expect(rm.followerPosition('t', 0)).toEqual({ logEndOffset: 4n, logStartOffset: 4n });
    expect(take(rm, batch(3n, 3), 6n)).toEqual({ errorCode: ErrorCode.NONE, logEndOffset: 6n });
    expect(logs.get('t', 0)!.logStartOffset).toBe(3n);
    expect(take(rm, batch(5n, 3), 6n).errorCode).toBe(ErrorCode.CORRUPT_MESSAGE);
    expect(rm.followerPosition('t', 0)!.logEndOffset).toBe(6n);
  });

  it('starts over within the leader range: from its log start when behind it, cut to its end when ahead, never at a negative offset', () => {
    const { rm } = follower();
    take(rm, batch(0n, 5), 5n);
    rm.resetFollower('t', 0, -1n, -1n);
    expect(rm.followerPosition('t', 0)).toEqual({ logEndOffset: 5n, logStartOffset: 0n });
    rm.resetFollower('t', 0, 0n, 2n);
    expect(rm.followerPosition('t', 0)).toEqual({ logEndOffset: 2n, logStartOffset: 0n });
    rm.resetFollower('t', 0, 50n, 80n);
    expect(rm.followerPosition('t', 0)).toEqual({ logEndOffset: 50n, logStartOffset: 50n });
  });

  it('takes nothing for a partition it leads or does not replicate', () => {
    const { rm } = follower();
    expect(rm.appendAsFollower('u', 0, [], Buffer.alloc(0), 0n).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  });
});

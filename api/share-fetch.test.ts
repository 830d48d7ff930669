import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { buildBatch, decodeRecords, wholeBatches } from '../wire/record-batch.js';
import type { ShareFetchRequest } from '../wire/messages/share-fetch-request.js';
import type { ShareFetchResponse } from '../wire/messages/share-fetch-response.js';
import { shareAcknowledge } from './share-acknowledge.js';
import { shareFetch } from './share-fetch.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function withTopic(dir?: string): Promise<{ s: TestServices; topicId: string }> {
  const s = testServices({}, dir);
  open.push(s);
  if (!s.metadata.image().topics.has('jobs')) await s.metadata.createTopic({ name: 'jobs', numPartitions: 1, replicationFactor: 1 });
  return { s, topicId: s.metadata.image().topics.get('jobs')!.topicId };
}

function produce(s: TestServices, n: number, from = 0): void {
  const r = s.replicas.appendRecords('jobs', 0, buildBatch({ records: Array.from({ length: n }, (_, i) => ({ key: null, value: `job-${from + i}`, timestamp: 1000n })) }), -1);
  expect(r.errorCode).toBe(ErrorCode.NONE);
}

function request(topicId: string, memberId: string, epoch: number, acks: { first: number; last: number; type: number }[] = [], extra: Partial<ShareFetchRequest> = {}): ShareFetchRequest {
  return {
    groupId: 'workers',
    memberId,
    shareSessionEpoch: epoch,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    maxRecords: 500,
    batchSize: 500,
    shareAcquireMode: 0,
    isRenewAck: false,
    topics: [{ topicId, partitions: [{ partitionIndex: 0, partitionMaxBytes: 0, acknowledgementBatches: acks.map((a) => ({ firstOffset: BigInt(a.first), lastOffset: BigInt(a.last), acknowledgeTypes: [a.type] })) }] }],
    forgottenTopicsData: [],
    ...extra,
  };
}

/** The values of the acquired records, picked out of the batches as a client does. */
function values(res: ShareFetchResponse): string[] {
  const out: string[] = [];
  for (const t of res.responses) for (const p of t.partitions) {
    const held = (o: bigint) => p.acquiredRecords.some((a) => a.firstOffset <= o && o <= a.lastOffset);
    for (const b of wholeBatches(p.records ?? Buffer.alloc(0))) {
      const d = decodeRecords(b);
      const base = b.readBigInt64BE(0);
      if (d.ok) for (const r of d.records) if (held(base + BigInt(r.offsetDelta))) out.push(r.value!.toString());
    }
  }
  return out;
}

const acquired = (res: ShareFetchResponse) => res.responses.flatMap((t) => t.partitions.flatMap((p) => p.acquiredRecords.map((a) => [Number(a.firstOffset), Number(a.lastOffset), a.deliveryCount])));

describe('ShareFetch and ShareAcknowledge', () => {
  it('delivers each record to one member, redelivers what is released, and never what was accepted', async () => {
    const { s, topicId } = await withTopic();
    // share.auto.offset.reset is latest: records before the first fetch are not delivered.
    produce(s, 2);
    const a0 = await callAt(shareFetch, 2, request(topicId, 'member-a', 0), s);
    expect(a0.errorCode).toBe(ErrorCode.NONE);
    expect(a0.acquisitionLockTimeoutMs).toBe(30000);
    expect(acquired(a0)).toEqual([]);
    produce(s, 4, 2);
    const a1 = await callAt(shareFetch, 2, request(topicId, 'member-a', 1), s);
    expect(acquired(a1)).toEqual([[2, 5, 1]]);
    expect(values(a1)).toEqual(['job-2', 'job-3', 'job-4', 'job-5']);
    // Another member gets nothing while a holds them all.
    const b0 = await callAt(shareFetch, 2, request(topicId, 'member-b', 0), s);
    expect(acquired(b0)).toEqual([]);
    // a accepts 2-3 and releases 4-5, in its next fetch.
    const a2 = await callAt(shareFetch, 2, request(topicId, 'member-a', 2, [{ first: 2, last: 3, type: 1 }, { first: 4, last: 5, type: 2 }]), s);
    expect(a2.responses[0]!.partitions[0]!.acknowledgeErrorCode).toBe(ErrorCode.NONE);
    // ...and the released ones come straight back to it, counted twice.
    expect(acquired(a2)).toEqual([[4, 5, 2]]);
    // b cannot acknowledge what a holds.
    const notOwner = await callAt(shareAcknowledge, 2, { groupId: 'workers', memberId: 'member-b', shareSessionEpoch: 1, isRenewAck: false, topics: [{ topicId, partitions: [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: 4n, lastOffset: 5n, acknowledgeTypes: [1] }] }] }] }, s);
    expect(notOwner.responses[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.INVALID_RECORD_STATE, errorMessage: 'Member is not the owner of batch record' });
  });

  it('checks share session epochs as Kafka does', async () => {
    const { s, topicId } = await withTopic();
    expect((await callAt(shareFetch, 1, request(topicId, 'm', 1), s)).errorCode).toBe(ErrorCode.SHARE_SESSION_NOT_FOUND);
    expect((await callAt(shareFetch, 1, request(topicId, 'm', 0, [{ first: 0, last: 0, type: 1 }]), s)).errorCode).toBe(ErrorCode.INVALID_REQUEST);
    expect((await callAt(shareFetch, 1, request(topicId, 'm', 0), s)).errorCode).toBe(ErrorCode.NONE);
    expect((await callAt(shareFetch, 1, request(topicId, 'm', 5), s)).errorCode).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH);
    expect((await callAt(shareFetch, 1, request(topicId, 'm', 1), s)).errorCode).toBe(ErrorCode.NONE);
    const ack0 = await callAt(shareAcknowledge, 1, { groupId: 'workers', memberId: 'm', shareSessionEpoch: 0, isRenewAck: false, topics: [] }, s);
    expect(ack0.errorCode).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH);
    // -1 closes the session; it is gone afterwards.
    expect((await callAt(shareAcknowledge, 1, { groupId: 'workers', memberId: 'm', shareSessionEpoch: -1, isRenewAck: false, topics: [] }, s)).errorCode).toBe(ErrorCode.NONE);
    expect((await callAt(shareFetch, 1, request(topicId, 'm', 2), s)).errorCode).toBe(ErrorCode.SHARE_SESSION_NOT_FOUND);
    // An unknown topic id is answered for that partition.
    const unknown = await callAt(shareFetch, 1, request('AAAAAAAAAAAAAAAAAAAAAQ', 'm', 0), s);
    expect(unknown.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID);
  });

  it('ends a share session with its connection, releasing what its member held', async () => {
    const { s, topicId } = await withTopic();
    const closers: (() => void)[] = [];
    const conn = { onConnectionClose: (cb: () => void) => closers.push(cb) };
    await callAt(shareFetch, 2, request(topicId, 'gone', 0), s, conn);
    produce(s, 3);
    expect(acquired(await callAt(shareFetch, 2, request(topicId, 'gone', 1), s, conn))).toEqual([[0, 2, 1]]);
    expect(closers).toHaveLength(1);
    closers[0]!();
    await new Promise((r) => setTimeout(r, 50));
    // Released at once, not after the 30 s lock: another member gets them, counted twice.
    expect(acquired(await callAt(shareFetch, 2, request(topicId, 'other', 0), s))).toEqual([[0, 2, 2]]);
    expect((await callAt(shareFetch, 2, request(topicId, 'gone', 2), s)).errorCode).toBe(ErrorCode.SHARE_SESSION_NOT_FOUND);
  });

  it('waits up to MaxWaitMs for records, and answers as soon as some arrive', async () => {
    const { s, topicId } = await withTopic();
    await callAt(shareFetch, 2, request(topicId, 'm', 0), s);
    const started = Date.now();
    const pending = callAt(shareFetch, 2, request(topicId, 'm', 1, [], { maxWaitMs: 5000 }), s);
    setTimeout(() => produce(s, 1), 100);
    const r = await pending;
    expect(acquired(r)).toEqual([[0, 0, 1]]);
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('keeps what was acknowledged across a restart and delivers again what was only acquired', async () => {
    const first = await withTopic();
    await callAt(shareFetch, 2, request(first.topicId, 'm', 0), first.s);
    produce(first.s, 4);
    expect(acquired(await callAt(shareFetch, 2, request(first.topicId, 'm', 1), first.s))).toEqual([[0, 3, 1]]);
    await callAt(shareAcknowledge, 2, { groupId: 'workers', memberId: 'm', shareSessionEpoch: 2, isRenewAck: false, topics: [{ topicId: first.topicId, partitions: [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: 0n, lastOffset: 0n, acknowledgeTypes: [1] }, { firstOffset: 2n, lastOffset: 2n, acknowledgeTypes: [3] }] }] }] }, first.s);
    const dir = first.s.dataDir;
    await first.s.close();
    open.splice(open.indexOf(first.s), 1);
    const again = await withTopic(dir);
    // 0 accepted and 2 rejected stay done; 1 and 3 were held, unacknowledged, and come back (an
    // acquisition alone is not persisted, so their first delivery is counted once).
    const after = await callAt(shareFetch, 2, request(again.topicId, 'n', 0), again.s);
    expect(acquired(after)).toEqual([[1, 1, 1], [3, 3, 1]]);
    expect(values(after)).toEqual(['job-1', 'job-3']);
  });
});

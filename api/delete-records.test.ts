import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { buildBatch } from '../wire/record-batch.js';
import type { DeleteRecordsRequest } from '../wire/messages/delete-records-request.js';
import { DeleteRecordsResponse as DeleteRecordsResponseDecl, type DeleteRecordsResponse } from '../wire/messages/delete-records-response.js';
import { logConfig } from '../storage/log-config.js';
import type { ListOffsetsResponse } from '../wire/messages/list-offsets-response.js';
import { deleteRecords } from './delete-records.js';
import { listOffsets } from './list-offsets.js';
import { ctxFor, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(dir?: string): TestServices {
  const s = testServices({}, dir);
  open.push(s);
  return s;
}

/** A topic whose partition 0 holds `records` records, one batch each, and whose partition 1 is empty. */
async function withRecords(s: TestServices, name: string, records: number): Promise<void> {
  await s.metadata.createTopic({ name, numPartitions: 2, replicationFactor: 1 });
  for (let i = 0; i < records; i++) {
    expect(s.replicas.appendRecords(name, 0, buildBatch({ records: [{ key: `k${i}`, value: `v${i}`, timestamp: 1000n }] }), -1).errorCode).toBe(0);
  }
}

function req(topics: [name: string, partitions: [index: number, offset: bigint][]][]): DeleteRecordsRequest {
  return { topics: topics.map(([name, ps]) => ({ name, partitions: ps.map(([partitionIndex, offset]) => ({ partitionIndex, offset })) })), timeoutMs: 30000 };
}

async function ask(s: TestServices, request: DeleteRecordsRequest, version = 2): Promise<DeleteRecordsResponse> {
  return (await deleteRecords.handle(request, ctxFor(s, version))) as DeleteRecordsResponse;
}

/** "topic/partition" -> [low watermark, error code]. */
function outcomes(res: DeleteRecordsResponse): Record<string, [bigint, number]> {
  const out: Record<string, [bigint, number]> = {};
  for (const t of res.topics) for (const p of t.partitions) out[`${t.name}/${p.partitionIndex}`] = [p.lowWatermark, p.errorCode];
  return out;
}

describe('DeleteRecords', () => {
  it('moves the log start offset and answers it as the low watermark; it never goes back', async () => {
    const s = services();
    await withRecords(s, 't', 10);
    expect(outcomes(await ask(s, req([['t', [[0, 3n], [1, 0n]]]])))).toEqual({ 't/0': [3n, 0], 't/1': [0n, 0] });
    expect(s.replicas.logFor('t', 0)!.logStartOffset).toBe(3n);
    // ListOffsets earliest (-2) answers it at once.
    const earliest = (await listOffsets.handle(
      { replicaId: -1, isolationLevel: 0, timeoutMs: 1000, topics: [{ name: 't', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -2n, maxNumOffsets: 1 }] }] },
      ctxFor(s, 5),
    )) as ListOffsetsResponse;
    expect(earliest.topics[0]!.partitions[0]).toMatchObject({ errorCode: 0, offset: 3n });
    expect(outcomes(await ask(s, req([['t', [[0, 2n]]]])))).toEqual({ 't/0': [3n, 0] });
    expect(s.replicas.logFor('t', 0)!.read(0n, 1 << 20)).toMatchObject({ ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE });
  });

  it('takes -1 for the high watermark, and refuses offsets beyond it or negative with OFFSET_OUT_OF_RANGE', async () => {
    const s = services();
    await withRecords(s, 't', 10);
    expect(outcomes(await ask(s, req([['t', [[0, 11n]]]])))).toEqual({ 't/0': [-1n, ErrorCode.OFFSET_OUT_OF_RANGE] });
    expect(outcomes(await ask(s, req([['t', [[0, -2n]]]])))).toEqual({ 't/0': [-1n, ErrorCode.OFFSET_OUT_OF_RANGE] });
    expect(outcomes(await ask(s, req([['t', [[1, 1n]]]])))).toEqual({ 't/1': [-1n, ErrorCode.OFFSET_OUT_OF_RANGE] });
    expect(outcomes(await ask(s, req([['t', [[0, -1n]]]])))).toEqual({ 't/0': [10n, 0] });
    expect(s.replicas.logFor('t', 0)!.logStartOffset).toBe(10n);
  });

  it('answers unknown topics and partitions with UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const s = services();
    await withRecords(s, 't', 1);
    expect(outcomes(await ask(s, req([['t', [[5, 0n]]], ['nope', [[0, 0n]]], ['bad name', [[0, 0n]]]])))).toEqual({
      't/5': [-1n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      'nope/0': [-1n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      'bad name/0': [-1n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    });
  });

  it('refuses compacted topics (POLICY_VIOLATION) and internal topics (INVALID_TOPIC_EXCEPTION)', async () => {
    const s = services();
    await withRecords(s, 'keyed', 2);
    s.logs.updateConfig('keyed', logConfig({ cleanupPolicy: ['compact'] }));
    await withRecords(s, '__consumer_offsets', 2);
    expect(outcomes(await ask(s, req([['keyed', [[0, 1n]]], ['__consumer_offsets', [[0, 1n]]]])))).toEqual({
      'keyed/0': [-1n, ErrorCode.POLICY_VIOLATION],
      '__consumer_offsets/0': [-1n, ErrorCode.INVALID_TOPIC_EXCEPTION],
    });
    // compact,delete does allow it.
    s.logs.updateConfig('keyed', logConfig({ cleanupPolicy: ['compact', 'delete'] }));
    expect(outcomes(await ask(s, req([['keyed', [[0, 1n]]]])))).toEqual({ 'keyed/0': [1n, 0] });
  });

  it('answers a partition named twice once, for the last offset', async () => {
    const s = services();
    await withRecords(s, 't', 10);
    const res = await ask(s, req([['t', [[0, 8n], [0, 4n]]], ['t', [[1, 0n]]]]));
    expect(res.topics).toEqual([
      {
        name: 't',
        partitions: [
          { partitionIndex: 0, lowWatermark: 4n, errorCode: 0 },
          { partitionIndex: 1, lowWatermark: 0n, errorCode: 0 },
        ],
      },
    ]);
  });

  it('keeps the new log start offset across a restart', async () => {
    const s = services();
    await withRecords(s, 't', 5);
    await ask(s, req([['t', [[0, 4n]]]]));
    await s.close();
    const again = services(s.dataDir);
    expect(again.replicas.logFor('t', 0)!.logStartOffset).toBe(4n);
  });

  it('encodes its answer at every version', async () => {
    const s = services();
    await withRecords(s, 't', 3);
    for (let v = 0; v <= 2; v++) {
      const res = await ask(s, req([['t', [[0, BigInt(v)]]], ['nope', [[0, 0n]]]]), v);
      const back = decode<DeleteRecordsResponse>(DeleteRecordsResponseDecl, v, encode(DeleteRecordsResponseDecl, v, res));
      expect(back.ok && back.value).toEqual(res);
    }
  });
});

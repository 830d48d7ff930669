import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { buildBatch } from '../wire/record-batch.js';
import { decode, encode } from '../wire/codec.js';
import { WriteTxnMarkersRequest, type WriteTxnMarkersRequest as Request } from '../wire/messages/write-txn-markers-request.js';
import { WriteTxnMarkersResponse as ResponseDecl, type WriteTxnMarkersResponse } from '../wire/messages/write-txn-markers-response.js';
import { writeTxnMarkers } from './write-txn-markers.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function setup(): Promise<TestServices> {
  const s = testServices({});
  open.push(s);
  await s.metadata.createTopic({ name: 't', numPartitions: 2, replicationFactor: 1 });
  for (const partition of [0, 1]) {
    const batch = buildBatch({ producerId: 7n, producerEpoch: 0, baseSequence: 0, transactional: true, records: [{ value: 'a', timestamp: 1000n }] });
    expect(s.replicas.appendRecords('t', partition, batch, -1).errorCode).toBe(ErrorCode.NONE);
  }
  return s;
}

function marker(commit: boolean, coordinatorEpoch: number, partitions: number[], topic = 't') {
  return { producerId: 7n, producerEpoch: 0, transactionResult: commit, coordinatorEpoch, topics: [{ name: topic, partitionIndexes: partitions }] };
}

function codes(res: WriteTxnMarkersResponse): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of res.markers) for (const t of m.topics) for (const p of t.partitions) out[`${t.name}-${p.partitionIndex}`] = p.errorCode;
  return out;
}

describe('WriteTxnMarkers', () => {
  it('ends the producer\'s transaction in every partition it names, moving the last stable offset', async () => {
    const s = await setup();
    expect(s.replicas.logFor('t', 0)!.lastStableOffset).toBe(0n);
    const res = (await callAt(writeTxnMarkers, 1, { markers: [marker(true, 0, [0, 1])] }, s)) as WriteTxnMarkersResponse;
    expect(codes(res)).toEqual({ 't-0': ErrorCode.NONE, 't-1': ErrorCode.NONE });
    // One data record and the marker: the transaction is closed, so everything is stable.
    for (const p of [0, 1]) expect(s.replicas.logFor('t', p)!.lastStableOffset).toBe(2n);
    expect(s.replicas.describeProducers('t', 0).producers[0]!.currentTxnStartOffset).toBe(-1n);
  });

  it('answers each partition on its own: unknown partitions, and a coordinator epoch older than one already seen', async () => {
    const s = await setup();
    // A coordinator at epoch 3 aborts partition 0; a stale one (epoch 2) may no longer write there.
    expect(codes((await callAt(writeTxnMarkers, 1, { markers: [marker(false, 3, [0])] }, s)) as WriteTxnMarkersResponse)).toEqual({ 't-0': ErrorCode.NONE });
    const res = (await callAt(writeTxnMarkers, 1, { markers: [marker(true, 2, [0, 1, 9]), marker(true, 2, [0], 'missing')] }, s)) as WriteTxnMarkersResponse;
    expect(codes(res)).toEqual({
      't-0': ErrorCode.TRANSACTION_COORDINATOR_FENCED,
      't-1': ErrorCode.NONE,
      't-9': ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      'missing-0': ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    });
    expect(res.markers.map((m) => m.producerId)).toEqual([7n, 7n]);
  });
});

describe('WriteTxnMarkers v0 (v1 without the flexible encoding, as Kafka 3.x served it)', () => {
  it('commits and aborts as v1 does, answering each partition', async () => {
    const s = await setup();
    const res = (await callAt(writeTxnMarkers, 0, { markers: [marker(true, 0, [0]), marker(false, 0, [1, 9])] }, s)) as WriteTxnMarkersResponse;
    expect(res.markers.map((m) => codes({ markers: [m] }))).toEqual([{ 't-0': ErrorCode.NONE }, { 't-1': ErrorCode.NONE, 't-9': ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }]);
    // Both transactions are closed: the data record and its marker are stable in each partition.
    for (const p of [0, 1]) expect(s.replicas.logFor('t', p)!.lastStableOffset).toBe(2n);
    // A stale coordinator is fenced at v0 too.
    const stale = (await callAt(writeTxnMarkers, 0, { markers: [marker(true, 3, [0]), marker(true, 2, [0])] }, s)) as WriteTxnMarkersResponse;
    expect(stale.markers.map((m) => codes({ markers: [m] }))).toEqual([{ 't-0': ErrorCode.NONE }, { 't-0': ErrorCode.TRANSACTION_COORDINATOR_FENCED }]);
  });

  it('reads and writes the v0 layout of the October 2024 definitions: int32 array lengths, int16 string lengths, no tagged fields', () => {
    const request: Request = { markers: [{ ...marker(true, 5, [0, 2]), transactionVersion: 0 }] };
    const requestHex = [
      '00000001', // markers
      '0000000000000007', // producer_id
      '0000', // producer_epoch
      '01', // transaction_result: COMMIT
      '00000001', // topics
      '00017400000002', // name 't', partition_indexes: 2 of them
      '0000000000000002',
      '00000005', // coordinator_epoch
    ].join('');
    expect(encode(WriteTxnMarkersRequest, 0, request).toString('hex')).toBe(requestHex);
    expect(decode<Request>(WriteTxnMarkersRequest, 0, Buffer.from(requestHex, 'hex'))).toEqual({ ok: true, value: request });
    const response: WriteTxnMarkersResponse = {
      markers: [{ producerId: 7n, topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 0 }, { partitionIndex: 2, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER }] }] }],
    };
    const responseHex = ['00000001', '0000000000000007', '00000001', '000174', '00000002', '000000000000', '000000020006'].join('');
    expect(encode(ResponseDecl, 0, response).toString('hex')).toBe(responseHex);
    expect(decode<WriteTxnMarkersResponse>(ResponseDecl, 0, Buffer.from(responseHex, 'hex'))).toEqual({ ok: true, value: response });
  });
});

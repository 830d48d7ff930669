import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import CRC32 from 'crc-32';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { decode, encode } from '../wire/codec.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { buildBatch, Compression, readBatchHeader } from '../wire/record-batch.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import { ProduceResponse as ProduceResponseDecl, type ProduceResponse } from '../wire/messages/produce-response.js';
import { FaultyFs } from '../storage/fs.js';
import { logConfig } from '../storage/log-config.js';
import { NO_RESPONSE } from './handler.js';
import { produce } from './produce.js';
import { ctxFor, testServices, txnServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function services(...args: Parameters<typeof testServices>): TestServices {
  const s = testServices(...args);
  open.push(s);
  return s;
}

function batch(n: number, tag = 'v'): Buffer {
  return buildBatch({ records: Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `${tag}${i}`, timestamp: 1000n + BigInt(i) })) });
}

function req(topic: string, parts: { index: number; records: Buffer | null }[], acks = -1, topicId = ZERO_UUID): ProduceRequest {
  return { transactionalId: null, acks, timeoutMs: 1000, topicData: [{ name: topic, topicId, partitionData: parts }] };
}

async function send(s: TestServices, version: number, request: ProduceRequest): Promise<ProduceResponse> {
  const res = await produce.handle(request, ctxFor(s, version));
  if (res === NO_RESPONSE) throw new Error('no response');
  return res;
}

/** A topic that exists, with the default 3 partitions. */
async function withTopic(s: TestServices, name = 'orders'): Promise<void> {
  await s.metadata.createTopic({ name, numPartitions: 3, replicationFactor: 1 });
}

/** A magic 0 message set of one message with offset 0 (what v0-v1 clients of old sent). */
function legacyMessage(value: string): Buffer {
  const v = Buffer.from(value);
  const body = Buffer.alloc(1 + 1 + 4 + 4 + v.length);
  body.writeInt8(0, 0); // magic
  body.writeInt8(0, 1); // attributes
  body.writeInt32BE(-1, 2); // null key
  body.writeInt32BE(v.length, 6);
  v.copy(body, 10);
  const out = Buffer.alloc(12 + 4 + body.length);
  out.writeBigInt64BE(0n, 0);
  out.writeInt32BE(4 + body.length, 8);
  out.writeUInt32BE(CRC32.buf(body) >>> 0, 12);
  body.copy(out, 16);
  return out;
}

describe('Produce', () => {
  it('appends and answers consecutive base offsets, the log start offset and log_append_time -1', async () => {
    const s = services();
    await withTopic(s);
    const a = await send(s, 9, req('orders', [{ index: 0, records: batch(3) }]));
    expect(a.responses[0]!.partitionResponses[0]).toMatchObject({ index: 0, errorCode: 0, baseOffset: 0n, logAppendTimeMs: -1n, logStartOffset: 0n });
    const b = await send(s, 9, req('orders', [{ index: 0, records: batch(2) }, { index: 2, records: batch(1) }]));
    expect(b.responses[0]!.partitionResponses.map((p) => [p.index, p.errorCode, p.baseOffset])).toEqual([
      [0, 0, 3n],
      [2, 0, 0n],
    ]);
    const log = s.replicas.logFor('orders', 0)!;
    expect(log.logEndOffset).toBe(5n);
    // The broker is the whole ISR: what is appended is committed.
    expect(log.highWatermark).toBe(5n);
  });

  it('stores the batch as sent except its base offset and leader epoch', async () => {
    const s = services();
    await withTopic(s);
    const sent = batch(4);
    await send(s, 9, req('orders', [{ index: 1, records: batch(1) }]));
    await send(s, 9, req('orders', [{ index: 1, records: sent }]));
    const stored = s.replicas.logFor('orders', 1)!.readBuffer(1n, 1 << 20)!;
    expect(readBatchHeader(stored).baseOffset).toBe(1n);
    expect(stored.subarray(17)).toEqual(sent.subarray(17)); // from magic on (CRC included)
  });

  it('auto-creates an unknown topic, answering UNKNOWN_TOPIC_OR_PARTITION for that request', async () => {
    const s = services({ config: { 'num.partitions': 2 } });
    const first = await send(s, 9, req('fresh', [{ index: 0, records: batch(1) }, { index: 1, records: batch(1) }]));
    expect(first.responses[0]!.partitionResponses.map((p) => p.errorCode)).toEqual([ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]);
    expect(s.metadata.image().topics.get('fresh')!.partitions).toHaveLength(2);
    // The logs exist as soon as the topic does, and nothing of the first request went in.
    expect(existsSync(join(s.dataDir, 'fresh-0'))).toBe(true);
    expect(existsSync(join(s.dataDir, 'fresh-1'))).toBe(true);
    expect(s.replicas.logFor('fresh', 0)!.logEndOffset).toBe(0n);
    const second = await send(s, 9, req('fresh', [{ index: 0, records: batch(1) }]));
    expect(second.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 0n });
  });

  it('does not create a topic when auto.create.topics.enable is false, or for an illegal name', async () => {
    const off = services({ config: { 'auto.create.topics.enable': false } });
    const r = await send(off, 9, req('nope', [{ index: 0, records: batch(1) }]));
    expect(r.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect(off.metadata.image().topics.has('nope')).toBe(false);
    const on = services();
    const bad = await send(on, 9, req('bad/name', [{ index: 0, records: batch(1) }]));
    expect(bad.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect(on.metadata.image().topics.size).toBe(0);
  });

  it('answers UNKNOWN_TOPIC_OR_PARTITION for a partition out of range, and serves the others', async () => {
    const s = services();
    await withTopic(s);
    const r = await send(s, 9, req('orders', [{ index: 3, records: batch(1) }, { index: -1, records: batch(1) }, { index: 0, records: batch(1) }]));
    expect(r.responses[0]!.partitionResponses.map((p) => p.errorCode)).toEqual([ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0]);
    expect(existsSync(join(s.dataDir, 'orders-3'))).toBe(false);
  });

  it('answers a retried idempotent batch with its first offsets and writes it once', async () => {
    const s = services();
    await withTopic(s);
    const idempotent = (seq: number): Buffer => buildBatch({ producerId: 3n, producerEpoch: 0, baseSequence: seq, records: [{ value: `r${seq}`, timestamp: 1000n }, { value: 'x', timestamp: 1000n }] });
    const first = await send(s, 9, req('orders', [{ index: 0, records: idempotent(0) }]));
    await send(s, 9, req('orders', [{ index: 0, records: idempotent(2) }]));
    const retried = await send(s, 9, req('orders', [{ index: 0, records: idempotent(0) }]));
    expect(retried.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: first.responses[0]!.partitionResponses[0]!.baseOffset });
    const gap = await send(s, 9, req('orders', [{ index: 0, records: idempotent(7) }]));
    expect(gap.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(4n);
  });

  it('takes transactional batches only with a transactional id, from one producer, to partitions the transaction added', async () => {
    const s = await txnServices();
    open.push(s);
    const { producerId, producerEpoch } = await s.transactions.initProducerId({ transactionalId: 'tx', transactionTimeoutMs: 60_000, expected: null });
    const txn = (pid = producerId): Buffer => buildBatch({ producerId: pid, producerEpoch, baseSequence: 0, transactional: true, records: [{ value: 'a', timestamp: 1000n }] });
    const codes = (r: ProduceResponse): number[] => r.responses.flatMap((t) => t.partitionResponses.map((p) => p.errorCode));
    const ask = (transactionalId: string | null, parts: { index: number; records: Buffer }[]) => send(s, 9, { ...req('t', parts), transactionalId });
    expect(codes(await ask(null, [{ index: 0, records: txn() }, { index: 1, records: batch(1) }]))).toEqual([
      ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
      ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ]);
    expect(codes(await ask('tx', [{ index: 0, records: txn() }, { index: 1, records: txn(producerId + 1n) }]))).toEqual([
      ErrorCode.INVALID_PRODUCER_ID_MAPPING,
      ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    ]);
    expect(codes(await ask('tx', [{ index: 0, records: txn() }]))).toEqual([ErrorCode.INVALID_TXN_STATE]);
    // Produce v11 knows TRANSACTION_ABORTABLE, which Kafka 4.0 answers it instead.
    const v11 = await send(s, 11, { ...req('t', [{ index: 0, records: txn() }]), transactionalId: 'tx' });
    expect(codes(v11)).toEqual([ErrorCode.TRANSACTION_ABORTABLE]);
    expect(s.transactions.addPartitions('tx', producerId, producerEpoch, [{ topic: 't', partition: 0 }])).toBe(ErrorCode.NONE);
    expect(codes(await ask('tx', [{ index: 0, records: txn() }]))).toEqual([ErrorCode.NONE]);
    // transaction.partition.verification.enable=false lets a partition the transaction did not add be written, as in Kafka.
    await s.metadata.alterBrokerConfigs(null, { 'transaction.partition.verification.enable': 'false' });
    const unverified = buildBatch({ producerId, producerEpoch, baseSequence: 0, transactional: true, records: [{ value: 'b', timestamp: 1000n }] });
    expect(codes(await ask('tx', [{ index: 2, records: unverified }]))).toEqual([ErrorCode.NONE]);
    expect(s.replicas.logFor('t', 2)!.logEndOffset).toBe(1n);
    expect(s.replicas.logFor('t', 0)!.firstUnstableOffset).toBe(0n);
    expect(s.replicas.logFor('t', 1)!.logEndOffset).toBe(0n);
  });

  it('refuses client writes to the internal topics with INVALID_TOPIC_EXCEPTION, as Kafka does', async () => {
    const s = services();
    await s.metadata.createTopic({ name: '__consumer_offsets', numPartitions: 1, replicationFactor: 1 });
    const r = await send(s, 9, req('__consumer_offsets', [{ index: 0, records: batch(1) }]));
    expect(r.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: ErrorCode.INVALID_TOPIC_EXCEPTION, errorMessage: 'Cannot append to internal topic __consumer_offsets' });
    expect(s.replicas.logFor('__consumer_offsets', 0)?.logEndOffset ?? 0n).toBe(0n);
    // Kafka's own admin client id may.
    const admin = await produce.handle(req('__consumer_offsets', [{ index: 0, records: batch(1) }]), { ...ctxFor(s, 9), clientId: '__admin_client' });
    expect(admin !== NO_RESPONSE && admin.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
  });

  it('appends with acks=0 and sends no response', async () => {
    const s = services();
    await withTopic(s);
    const res = await produce.handle(req('orders', [{ index: 0, records: batch(2) }], 0), ctxFor(s, 9));
    expect(res).toBe(NO_RESPONSE);
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(2n);
  });

  it('refuses acks other than -1, 0 and 1 with INVALID_REQUIRED_ACKS and appends nothing', async () => {
    const s = services();
    await withTopic(s);
    for (const acks of [2, -2, 5]) {
      const r = await send(s, 9, req('orders', [{ index: 0, records: batch(1) }], acks));
      expect(r.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUIRED_ACKS);
    }
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(0n);
  });

  it('refuses two batches in one partition from v3 on, and accepts them before', async () => {
    const s = services();
    await withTopic(s);
    const two = Buffer.concat([batch(2), batch(3)]);
    for (const v of [3, 7, 11]) {
      const r = await send(s, v, req('orders', [{ index: 0, records: two }]));
      expect(r.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.INVALID_RECORD);
    }
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(0n);
    const old = await send(s, 2, req('orders', [{ index: 0, records: two }]));
    expect(old.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 0n });
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(5n);
  });

  it('converts a legacy message set sent with v0-v2, and refuses one from v3 on', async () => {
    const s = services();
    await withTopic(s);
    const r0 = await send(s, 0, req('orders', [{ index: 0, records: legacyMessage('hello') }], 1));
    expect(r0.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 0n });
    const r3 = await send(s, 3, req('orders', [{ index: 0, records: legacyMessage('again') }], 1));
    expect(r3.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.INVALID_RECORD);
    const stored = s.replicas.logFor('orders', 0)!.readBuffer(0n, 1 << 20)!;
    expect(stored.readInt8(16)).toBe(2);
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(1n);
  });

  it('refuses zstd before v7', async () => {
    const s = services();
    await withTopic(s);
    const z = buildBatch({ records: [{ value: 'zz' }], compression: Compression.Zstd });
    const r = await send(s, 6, req('orders', [{ index: 0, records: z }]));
    expect(r.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
    const ok = await send(s, 7, req('orders', [{ index: 0, records: z }]));
    expect(ok.responses[0]!.partitionResponses[0]!.errorCode).toBe(0);
  });

  it('passes validator errors on with their message (v8+), appending nothing', async () => {
    const s = services();
    await withTopic(s);
    const bad = batch(2);
    bad[bad.length - 1] ^= 0xff; // breaks the CRC
    const r = await send(s, 8, req('orders', [{ index: 0, records: bad }, { index: 1, records: null }]));
    const [p0, p1] = r.responses[0]!.partitionResponses;
    expect(p0!.errorCode).toBe(ErrorCode.CORRUPT_MESSAGE);
    expect(p0!.errorMessage).toMatch(/CRC/);
    expect(p0!.baseOffset).toBe(-1n);
    expect(p1!.errorCode).not.toBe(0);
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(0n);
    // The answer encodes and decodes in that version with the message in it.
    const back = decode<ProduceResponse>(ProduceResponseDecl, 8, encode(ProduceResponseDecl, 8, r));
    expect(back.ok && back.value.responses[0]!.partitionResponses[0]!.errorMessage).toMatch(/CRC/);
  });

  it('reports the time it stamped on a LogAppendTime log', async () => {
    const s = services({}, undefined, { logDefaults: logConfig({ messageTimestampType: 'LogAppendTime' }) });
    await withTopic(s);
    const before = BigInt(Date.now());
    const r = await send(s, 9, req('orders', [{ index: 0, records: batch(1) }]));
    expect(r.responses[0]!.partitionResponses[0]!.logAppendTimeMs).toBeGreaterThanOrEqual(before);
  });

  it('answers KAFKA_STORAGE_ERROR when the disk fails, and the partition stays failed; a partition in another log directory goes on', async () => {
    const fs = new FaultyFs();
    // Partitions 0 and 2 in the first directory, 1 in the second.
    const s = services({}, undefined, { fs, moreLogDirs: [mkdtempSync(join(tmpdir(), 'gregor-second-dir-'))] });
    await withTopic(s);
    fs.failNextWrite('EIO', (p) => p.endsWith('.log'));
    const r = await send(s, 9, req('orders', [{ index: 0, records: batch(1) }]));
    expect(r.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    const again = await send(s, 9, req('orders', [{ index: 0, records: batch(1) }, { index: 1, records: batch(1) }]));
    expect(again.responses[0]!.partitionResponses.map((p) => p.errorCode)).toEqual([ErrorCode.KAFKA_STORAGE_ERROR, 0]);
  });

  it('keeps what it acknowledged across a clean reopen of the same directory', async () => {
    const s = testServices();
    await withTopic(s);
    await send(s, 9, req('orders', [{ index: 0, records: batch(3) }]));
    await s.close();
    const again = services({}, s.dataDir);
    expect(again.replicas.logFor('orders', 0)!.logEndOffset).toBe(3n);
    const r = await send(again, 9, req('orders', [{ index: 0, records: batch(1) }]));
    expect(r.responses[0]!.partitionResponses[0]!.baseOffset).toBe(3n);
  });

  it('encodes its answer in every version it serves', async () => {
    const s = services();
    await withTopic(s);
    // From v13 the topic is named by its id.
    const topicId = s.metadata.image().topics.get('orders')!.topicId;
    for (let v = produce.minVersion; v <= produce.maxVersion; v++) {
      const r = await send(s, v, req('orders', [{ index: 0, records: batch(1) }], 1, topicId));
      expect(r.responses[0]!.partitionResponses[0]!.errorCode).toBe(0);
      const back = decode<ProduceResponse>(ProduceResponseDecl, v, encode(ProduceResponseDecl, v, r));
      expect(back.ok).toBe(true);
    }
    expect(s.replicas.logFor('orders', 0)!.logEndOffset).toBe(BigInt(produce.maxVersion - produce.minVersion + 1));
    expect([produce.minVersion, produce.maxVersion]).toEqual([0, 13]);
  });

  it('answers UNKNOWN_TOPIC_ID at v13 for an id no topic has, under that id, and creates nothing', async () => {
    const s = services({ config: { 'auto.create.topics.enable': true } });
    await withTopic(s);
    const unknown = 'AAAAAAAAAAAAAAAAAAAAAQ';
    const r = await send(s, 13, req('', [{ index: 0, records: batch(1) }], 1, unknown));
    expect(r.responses.map((t) => [t.topicId, t.partitionResponses.map((p) => p.errorCode)])).toEqual([[unknown, [ErrorCode.UNKNOWN_TOPIC_ID]]]);
    expect([...s.metadata.image().topics.keys()]).toEqual(['orders']);
  });

  it('answers every partition with the code when the request fails as a whole', () => {
    const s = services();
    const r = produce.errorResponse(req('orders', [{ index: 0, records: null }, { index: 4, records: null }]), ErrorCode.UNKNOWN_SERVER_ERROR, ctxFor(s, 9));
    expect(r.responses[0]!.partitionResponses.map((p) => [p.index, p.errorCode])).toEqual([
      [0, ErrorCode.UNKNOWN_SERVER_ERROR],
      [4, ErrorCode.UNKNOWN_SERVER_ERROR],
    ]);
  });
});

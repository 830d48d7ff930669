import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { initProducerId } from './init-producer-id.js';
import { callAt, txnServices, type TxnServices } from './test-services.js';

const open: TxnServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function services(): Promise<TxnServices> {
  const s = await txnServices();
  open.push(s);
  return s;
}

const request = (transactionalId: string | null, over: { timeoutMs?: number; producerId?: bigint; producerEpoch?: number } = {}) => ({
  transactionalId,
  transactionTimeoutMs: over.timeoutMs ?? 60_000,
  producerId: over.producerId ?? -1n,
  producerEpoch: over.producerEpoch ?? -1,
  enable2Pc: false,
  keepPreparedTxn: false,
});

describe('InitProducerId', () => {
  it('hands an idempotent producer a new producer id at every version', async () => {
    const s = await services();
    const seen = new Set<bigint>();
    for (let v = 0; v <= 5; v++) {
      const res = await callAt(initProducerId, v, request(null), s);
      expect(res).toMatchObject({ errorCode: 0, producerEpoch: 0 });
      seen.add(res.producerId);
    }
    expect(seen.size).toBe(6);
  });

  it('gives a transactional id its producer id and a higher epoch on each call', async () => {
    const s = await services();
    const first = await callAt(initProducerId, 1, request('tx'), s);
    expect(first).toMatchObject({ errorCode: 0, producerEpoch: 0 });
    const second = await callAt(initProducerId, 4, request('tx'), s);
    expect(second).toEqual({ throttleTimeMs: 0, errorCode: 0, producerId: first.producerId, producerEpoch: 1, ongoingTxnProducerId: -1n, ongoingTxnProducerEpoch: -1 });
    expect(s.transactions.describeTransaction('tx')).toMatchObject({ transactionState: 'Empty', producerEpoch: 1 });
  });

  it('refuses a timeout above transaction.max.timeout.ms and a producer id without an epoch', async () => {
    const s = await services();
    expect(await callAt(initProducerId, 2, request('tx', { timeoutMs: 900_001 }), s)).toEqual({ throttleTimeMs: 0, errorCode: ErrorCode.INVALID_TRANSACTION_TIMEOUT, producerId: -1n, producerEpoch: -1, ongoingTxnProducerId: -1n, ongoingTxnProducerEpoch: -1 });
    expect((await callAt(initProducerId, 3, request('tx', { producerId: 5n }), s)).errorCode).toBe(ErrorCode.INVALID_REQUEST);
    expect((await callAt(initProducerId, 3, request('', {}), s)).errorCode).toBe(ErrorCode.INVALID_REQUEST);
  });

  it('fences a KIP-360 producer whose epoch is stale: INVALID_PRODUCER_EPOCH before v4, PRODUCER_FENCED from v4', async () => {
    const s = await services();
    const { producerId } = await callAt(initProducerId, 4, request('tx'), s);
    await callAt(initProducerId, 4, request('tx'), s);
    const stale = request('tx', { producerId, producerEpoch: 0 });
    expect((await callAt(initProducerId, 3, stale, s)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect((await callAt(initProducerId, 4, stale, s)).errorCode).toBe(ErrorCode.PRODUCER_FENCED);
    expect(await callAt(initProducerId, 4, request('tx', { producerId, producerEpoch: 1 }), s)).toMatchObject({ errorCode: 0, producerId, producerEpoch: 2 });
  });
});

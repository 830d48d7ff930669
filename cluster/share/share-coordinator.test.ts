import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import { testServices, type TestServices } from '../../api/test-services.js';
import { DeliveryState } from './persister.js';
import { deserializeShareRecord, serializeShareRecord, SHARE_STATE_TOPIC } from './share-coordinator.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const key = { groupId: 'g', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partition: 3 };
const batch = (first: bigint, last: bigint, deliveryState: number, deliveryCount: number) => ({ firstOffset: first, lastOffset: last, deliveryState, deliveryCount });

describe('ShareCoordinator', () => {
  it('writes ShareSnapshot and ShareUpdate records in Kafka 4.4 layouts that read back as written', () => {
    const snapshot = { type: 0 as const, key, value: { snapshotEpoch: 1, stateEpoch: 2, leaderEpoch: 3, startOffset: 10n, deliveryCompleteCount: 1, createTimestamp: 5n, writeTimestamp: 6n, stateBatches: [batch(11n, 12n, DeliveryState.ACKNOWLEDGED, 1)] } };
    const { key: k, value: v } = serializeShareRecord(snapshot);
    // Key: record type 0, then the key struct at version 0 (group, topic id, partition).
    expect(k.readInt16BE(0)).toBe(0);
    expect(v!.readInt16BE(0)).toBe(0);
    expect(deserializeShareRecord(k, v)).toEqual(snapshot);
    const tombstone = serializeShareRecord({ type: 1, key, value: null });
    expect(tombstone.key.readInt16BE(0)).toBe(1);
    expect(deserializeShareRecord(tombstone.key, null)).toEqual({ type: 1, key, value: null });
    expect(deserializeShareRecord(Buffer.from([0, 9, 1]), null)).toEqual({ skipped: 'record type 9 is not a share state record' });
  });

  it('fences older leader and state epochs, and rebuilds the state from its partition after a restart', async () => {
    const s = testServices({}, undefined);
    open.push(s);
    const c = s.shares.coordinator;
    const p = s.shares.persister;
    // The persister creates __share_group_state on first use.
    expect((await p.initialize(key, 1, -1n)).errorCode).toBe(ErrorCode.NONE);
    expect(s.metadata.image().topics.get(SHARE_STATE_TOPIC)?.partitions.length).toBe(50);
    expect((await p.initialize(key, 1, 0n)).errorCode).toBe(ErrorCode.FENCED_STATE_EPOCH);
    expect(await p.read(key, 4)).toMatchObject({ errorCode: ErrorCode.NONE, stateEpoch: 1, startOffset: -1n, stateBatches: [] });
    // Leader epoch 4 read it: a write from epoch 3 is a former leader's.
    expect((await p.write(key, { stateEpoch: 1, leaderEpoch: 3, startOffset: 0n, deliveryCompleteCount: 0, stateBatches: [] })).errorCode).toBe(ErrorCode.FENCED_LEADER_EPOCH);
    expect((await p.write(key, { stateEpoch: 0, leaderEpoch: 4, startOffset: 0n, deliveryCompleteCount: 0, stateBatches: [] })).errorCode).toBe(ErrorCode.FENCED_STATE_EPOCH);
    expect((await p.write(key, { stateEpoch: 1, leaderEpoch: 4, startOffset: 5n, deliveryCompleteCount: 0, stateBatches: [batch(5n, 9n, DeliveryState.AVAILABLE, 1)] })).errorCode).toBe(ErrorCode.NONE);
    expect((await p.write(key, { stateEpoch: 1, leaderEpoch: 4, startOffset: 7n, deliveryCompleteCount: 1, stateBatches: [batch(8n, 8n, DeliveryState.ACKNOWLEDGED, 1)] })).errorCode).toBe(ErrorCode.NONE);
    const expected = { errorCode: ErrorCode.NONE, stateEpoch: 1, startOffset: 7n, stateBatches: [batch(7n, 7n, DeliveryState.AVAILABLE, 1), batch(8n, 8n, DeliveryState.ACKNOWLEDGED, 1), batch(9n, 9n, DeliveryState.AVAILABLE, 1)] };
    expect(await p.read(key, 4)).toMatchObject(expected);
    expect(await p.readSummary(key, 4)).toMatchObject({ errorCode: ErrorCode.NONE, startOffset: 7n, deliveryCompleteCount: 1, leaderEpoch: 4 });
    expect(c.loadedPartitions.length).toBe(50);
    const dir = s.dataDir;
    await s.close();
    open.pop();
    const again = testServices({}, dir);
    open.push(again);
    expect(await again.shares.persister.read(key, 4)).toMatchObject(expected);
    expect((await again.shares.persister.delete(key)).errorCode).toBe(ErrorCode.NONE);
    expect((await again.shares.persister.read(key, 4)).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  });
});

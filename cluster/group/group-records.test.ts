import { describe, expect, it } from 'vitest';
import { ZERO_UUID } from '../../wire/uuid.js';
import { deserializeRecord, groupMetadataRecord, offsetCommitRecord, recordsBatch, recordsIn, serializeRecord, subscribedTopicsOf } from './group-records.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('__consumer_offsets record layouts', () => {
  // Byte layouts written out field by field from group-coordinator/OffsetCommitKey.json and friends.
  it('writes an offset commit as key version 1 and value version 3', () => {
    const r = offsetCommitRecord('g1', 't', 3, { offset: 42n, leaderEpoch: 5, metadata: 'm', commitTimestamp: 1000n, expireTimestamp: -1n, topicId: ZERO_UUID });
    const { key, value } = serializeRecord(r);
    expect(key).toEqual(hex('0001 0002 6731 0001 74 00000003'));
    expect(value).toEqual(hex('0003 000000000000002a 00000005 0001 6d 00000000000003e8'));
    expect(deserializeRecord(key, value)).toEqual(r);
  });

  it('writes a commit with an expire timestamp (OffsetCommit v2-v4 retention) as value version 1', () => {
    const r = offsetCommitRecord('g1', 't', 3, { offset: 42n, leaderEpoch: -1, metadata: '', commitTimestamp: 1000n, expireTimestamp: 2000n, topicId: ZERO_UUID });
    expect(serializeRecord(r).value).toEqual(hex('0001 000000000000002a 0000 00000000000003e8 00000000000007d0'));
  });

  it('writes group metadata as key version 2 and value version 3', () => {
    const r = groupMetadataRecord('g', {
      protocolType: 'consumer',
      generation: 7,
      protocol: 'range',
      leader: 'm',
      currentStateTimestamp: 5n,
      members: [{ memberId: 'm', groupInstanceId: null, clientId: 'c', clientHost: '/h', rebalanceTimeout: 300, sessionTimeout: 100, subscription: hex('aa'), assignment: hex('bbcc') }],
    });
    const { key, value } = serializeRecord(r);
    expect(key).toEqual(hex('0002 0001 67'));
    expect(value).toEqual(
      hex(`0003 0008 ${Buffer.from('consumer').toString('hex')} 00000007 0005 ${Buffer.from('range').toString('hex')} 0001 6d 0000000000000005
           00000001 0001 6d ffff 0001 63 0002 2f68 0000012c 00000064 00000001 aa 00000002 bbcc`),
    );
    expect(deserializeRecord(key, value)).toEqual(r);
  });

  it('reads tombstones, old offset keys, and skips records of other kinds', () => {
    expect(deserializeRecord(hex('0002 0001 67'), null)).toEqual({ kind: 'group', key: { group: 'g' }, value: null });
    expect(deserializeRecord(hex('0000 0002 6731 0001 74 00000003'), null)).toEqual({ kind: 'offset', key: { group: 'g1', topic: 't', partition: 3 }, value: null });
    expect(deserializeRecord(hex('0003 0001 67'), hex('0000'))).toMatchObject({ kind: 'skipped' });
    expect(deserializeRecord(hex('0001 00'), null)).toMatchObject({ kind: 'skipped' });
    expect(deserializeRecord(null, null)).toMatchObject({ kind: 'skipped' });
  });

  it('round-trips records through a stored batch', () => {
    const records = [offsetCommitRecord('g', 't', 0, { offset: 1n, leaderEpoch: -1, metadata: '', commitTimestamp: 9n, expireTimestamp: -1n, topicId: ZERO_UUID }), groupMetadataRecord('g', null)];
    const batch = recordsBatch(records, 9);
    batch.writeBigInt64BE(10n, 0);
    expect([...recordsIn(batch, () => {})]).toEqual([
      { offset: 10n, record: records[0] },
      { offset: 11n, record: records[1] },
    ]);
  });

  it("reads the topics of a ConsumerProtocol subscription, whatever its version's later fields", () => {
    expect(subscribedTopicsOf(hex('0003 00000002 0001 61 0001 62 ffffffff 00000000'))).toEqual(new Set(['a', 'b']));
    expect(subscribedTopicsOf(hex('0000 7fffffff'))).toBeNull();
  });
});

/**
 * The records the group coordinator keeps in __consumer_offsets, in Kafka's
 * layouts (kafka-protocol/group-coordinator/*.json), so that Kafka's tools
 * reading that topic understand them and gregor understands Kafka's.
 *
 * A record's key is an int16 record type followed by the key struct: 0 or
 * 1 an offset commit, 2 a classic group's metadata, 3 and 5-8 the records of
 * a consumer group (KIP-848: its epoch, each member's metadata, the target
 * assignment's epoch and each member's part of it, each member's current
 * assignment); 10-15 the records of a share group (KIP-932: each member's
 * metadata, the group's epoch, the target assignment's epoch and each
 * member's part of it, each member's current assignment, and which topics'
 * share-partition state is initializing, initialized or being deleted);
 * 17 and 19-23 those of a streams group (streams-records.ts); other types
 * (regular expressions) are skipped. Its value is an int16 version
 * followed by the value struct, or null: a tombstone, which deletes what the
 * key names. As Kafka 4.0 writes them: offset keys at version 1, group keys
 * at 2, group values at 3, offset values at 3, or at 1 when the commit
 * carries an expire timestamp (OffsetCommit v2-v4 with a retention time).
 */
import { decode, encode } from '../../wire/codec.js';
import { Reader } from '../../wire/reader.js';
import { CONTROL, LAST_OFFSET_DELTA, MAGIC, MAGIC_V2, ATTRIBUTES, PRODUCER_ID, TRANSACTIONAL, buildBatch, decodeRecords, readEndTxnMarker, wholeBatches } from '../../wire/record-batch.js';
import { GroupMetadataKey } from '../../wire/messages/group-metadata-key.js';
import { GroupMetadataValue } from '../../wire/messages/group-metadata-value.js';
import { OffsetCommitKey } from '../../wire/messages/offset-commit-key.js';
import { OffsetCommitValue } from '../../wire/messages/offset-commit-value.js';
import type { GroupMetadataKey as GroupMetadataKeyT } from '../../wire/messages/group-metadata-key.js';
import type { GroupMetadataValue as GroupMetadataValueT, MemberMetadata } from '../../wire/messages/group-metadata-value.js';
import type { OffsetCommitKey as OffsetCommitKeyT } from '../../wire/messages/offset-commit-key.js';
import type { OffsetCommitValue as OffsetCommitValueT } from '../../wire/messages/offset-commit-value.js';
import type { MessageDecl } from '../../wire/schema.js';
import { ConsumerGroupMetadataKey } from '../../wire/messages/consumer-group-metadata-key.js';
import { ConsumerGroupMetadataValue } from '../../wire/messages/consumer-group-metadata-value.js';
import { ConsumerGroupMemberMetadataKey } from '../../wire/messages/consumer-group-member-metadata-key.js';
import { ConsumerGroupMemberMetadataValue } from '../../wire/messages/consumer-group-member-metadata-value.js';
import { ConsumerGroupPartitionMetadataKey } from '../../wire/messages/consumer-group-partition-metadata-key.js';
import { ConsumerGroupPartitionMetadataValue } from '../../wire/messages/consumer-group-partition-metadata-value.js';
import type { ConsumerGroupPartitionMetadataValue as ConsumerGroupPartitionMetadataValueT } from '../../wire/messages/consumer-group-partition-metadata-value.js';
import { ConsumerGroupTargetAssignmentMetadataKey } from '../../wire/messages/consumer-group-target-assignment-metadata-key.js';
import { ConsumerGroupTargetAssignmentMetadataValue } from '../../wire/messages/consumer-group-target-assignment-metadata-value.js';
import { ConsumerGroupTargetAssignmentMemberKey } from '../../wire/messages/consumer-group-target-assignment-member-key.js';
import { ConsumerGroupTargetAssignmentMemberValue } from '../../wire/messages/consumer-group-target-assignment-member-value.js';
import { ConsumerGroupCurrentMemberAssignmentKey } from '../../wire/messages/consumer-group-current-member-assignment-key.js';
import { ConsumerGroupCurrentMemberAssignmentValue } from '../../wire/messages/consumer-group-current-member-assignment-value.js';
import type { ConsumerGroupMetadataValue as ConsumerGroupMetadataValueT } from '../../wire/messages/consumer-group-metadata-value.js';
import type { ConsumerGroupMemberMetadataValue as ConsumerGroupMemberMetadataValueT } from '../../wire/messages/consumer-group-member-metadata-value.js';
import type { ConsumerGroupTargetAssignmentMetadataValue as ConsumerGroupTargetAssignmentMetadataValueT } from '../../wire/messages/consumer-group-target-assignment-metadata-value.js';
import type { ConsumerGroupTargetAssignmentMemberValue as ConsumerGroupTargetAssignmentMemberValueT } from '../../wire/messages/consumer-group-target-assignment-member-value.js';
import type { ConsumerGroupCurrentMemberAssignmentValue as ConsumerGroupCurrentMemberAssignmentValueT } from '../../wire/messages/consumer-group-current-member-assignment-value.js';
import { ShareGroupMemberMetadataKey } from '../../wire/messages/share-group-member-metadata-key.js';
import { ShareGroupMemberMetadataValue } from '../../wire/messages/share-group-member-metadata-value.js';
import { ShareGroupMetadataKey } from '../../wire/messages/share-group-metadata-key.js';
import { ShareGroupMetadataValue } from '../../wire/messages/share-group-metadata-value.js';
import { ShareGroupTargetAssignmentMetadataKey } from '../../wire/messages/share-group-target-assignment-metadata-key.js';
import { ShareGroupTargetAssignmentMetadataValue } from '../../wire/messages/share-group-target-assignment-metadata-value.js';
import { ShareGroupTargetAssignmentMemberKey } from '../../wire/messages/share-group-target-assignment-member-key.js';
import { ShareGroupTargetAssignmentMemberValue } from '../../wire/messages/share-group-target-assignment-member-value.js';
import { ShareGroupCurrentMemberAssignmentKey } from '../../wire/messages/share-group-current-member-assignment-key.js';
import { ShareGroupCurrentMemberAssignmentValue } from '../../wire/messages/share-group-current-member-assignment-value.js';
import { ShareGroupStatePartitionMetadataKey } from '../../wire/messages/share-group-state-partition-metadata-key.js';
import { ShareGroupStatePartitionMetadataValue } from '../../wire/messages/share-group-state-partition-metadata-value.js';
import type { ShareGroupMemberMetadataValue as ShareGroupMemberMetadataValueT } from '../../wire/messages/share-group-member-metadata-value.js';
import type { ShareGroupMetadataValue as ShareGroupMetadataValueT } from '../../wire/messages/share-group-metadata-value.js';
import type { ShareGroupTargetAssignmentMetadataValue as ShareGroupTargetAssignmentMetadataValueT } from '../../wire/messages/share-group-target-assignment-metadata-value.js';
import type { ShareGroupTargetAssignmentMemberValue as ShareGroupTargetAssignmentMemberValueT } from '../../wire/messages/share-group-target-assignment-member-value.js';
import type { ShareGroupCurrentMemberAssignmentValue as ShareGroupCurrentMemberAssignmentValueT } from '../../wire/messages/share-group-current-member-assignment-value.js';
import type { ShareGroupStatePartitionMetadataValue as ShareGroupStatePartitionMetadataValueT } from '../../wire/messages/share-group-state-partition-metadata-value.js';
import { STREAMS_RECORD_DECLS, isStreamsRecordType, type StreamsGroupRecord } from './streams-records.js';

export type { MemberMetadata };
export type OffsetCommitKeyData = OffsetCommitKeyT;
export type OffsetCommitValueData = OffsetCommitValueT;
export type GroupMetadataKeyData = GroupMetadataKeyT;
export type GroupMetadataValueData = GroupMetadataValueT;

/**
 * A key starts with its record type (Kafka 4.4's coordinator-key apiKey; 0
 * and 1 are both offset commits, 2 a classic group), followed by the key's
 * fields in schema version 0.
 */
const OFFSET_COMMIT_KEY_VERSION = 1;
const GROUP_METADATA_KEY_VERSION = 2;
const KEY_SCHEMA_VERSION = 0;
const GROUP_METADATA_VALUE_VERSION = 3;
const OFFSET_COMMIT_VALUE_VERSION = 3;
const OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1;

/** The records of a consumer group (KIP-848), by record type. */
export type ConsumerGroupRecord =
  | { readonly kind: 'consumer'; readonly type: 3; readonly groupId: string; readonly value: ConsumerGroupMetadataValueT | null }
  | { readonly kind: 'consumer'; readonly type: 4; readonly groupId: string; readonly value: ConsumerGroupPartitionMetadataValueT | null }
  | { readonly kind: 'consumer'; readonly type: 5; readonly groupId: string; readonly memberId: string; readonly value: ConsumerGroupMemberMetadataValueT | null }
  | { readonly kind: 'consumer'; readonly type: 6; readonly groupId: string; readonly value: ConsumerGroupTargetAssignmentMetadataValueT | null }
  | { readonly kind: 'consumer'; readonly type: 7; readonly groupId: string; readonly memberId: string; readonly value: ConsumerGroupTargetAssignmentMemberValueT | null }
  | { readonly kind: 'consumer'; readonly type: 8; readonly groupId: string; readonly memberId: string; readonly value: ConsumerGroupCurrentMemberAssignmentValueT | null };

export type ConsumerGroupMetadataValueData = ConsumerGroupMetadataValueT;
export type ConsumerGroupMemberMetadataValueData = ConsumerGroupMemberMetadataValueT;
export type ConsumerGroupCurrentMemberAssignmentValueData = ConsumerGroupCurrentMemberAssignmentValueT;

const CONSUMER_RECORD_DECLS: Readonly<Record<3 | 4 | 5 | 6 | 7 | 8, { key: MessageDecl; value: MessageDecl; member: boolean }>> = {
  3: { key: ConsumerGroupMetadataKey, value: ConsumerGroupMetadataValue, member: false },
  // Subscription metadata: no longer kept (the group's metadata hash replaced it), only written as a tombstone.
  4: { key: ConsumerGroupPartitionMetadataKey, value: ConsumerGroupPartitionMetadataValue, member: false },
  5: { key: ConsumerGroupMemberMetadataKey, value: ConsumerGroupMemberMetadataValue, member: true },
  6: { key: ConsumerGroupTargetAssignmentMetadataKey, value: ConsumerGroupTargetAssignmentMetadataValue, member: false },
  7: { key: ConsumerGroupTargetAssignmentMemberKey, value: ConsumerGroupTargetAssignmentMemberValue, member: true },
  8: { key: ConsumerGroupCurrentMemberAssignmentKey, value: ConsumerGroupCurrentMemberAssignmentValue, member: true },
};
const CONSUMER_VALUE_VERSION = 0;

/** The records of a share group (KIP-932), by record type. */
export type ShareGroupRecord =
  | { readonly kind: 'share'; readonly type: 10; readonly groupId: string; readonly memberId: string; readonly value: ShareGroupMemberMetadataValueT | null }
  | { readonly kind: 'share'; readonly type: 11; readonly groupId: string; readonly value: ShareGroupMetadataValueT | null }
  | { readonly kind: 'share'; readonly type: 12; readonly groupId: string; readonly value: ShareGroupTargetAssignmentMetadataValueT | null }
  | { readonly kind: 'share'; readonly type: 13; readonly groupId: string; readonly memberId: string; readonly value: ShareGroupTargetAssignmentMemberValueT | null }
  | { readonly kind: 'share'; readonly type: 14; readonly groupId: string; readonly memberId: string; readonly value: ShareGroupCurrentMemberAssignmentValueT | null }
  | { readonly kind: 'share'; readonly type: 15; readonly groupId: string; readonly value: ShareGroupStatePartitionMetadataValueT | null };

export type ShareGroupStatePartitionMetadataValueData = ShareGroupStatePartitionMetadataValueT;

const SHARE_RECORD_DECLS: Readonly<Record<10 | 11 | 12 | 13 | 14 | 15, { key: MessageDecl; value: MessageDecl; member: boolean }>> = {
  10: { key: ShareGroupMemberMetadataKey, value: ShareGroupMemberMetadataValue, member: true },
  11: { key: ShareGroupMetadataKey, value: ShareGroupMetadataValue, member: false },
  12: { key: ShareGroupTargetAssignmentMetadataKey, value: ShareGroupTargetAssignmentMetadataValue, member: false },
  13: { key: ShareGroupTargetAssignmentMemberKey, value: ShareGroupTargetAssignmentMemberValue, member: true },
  14: { key: ShareGroupCurrentMemberAssignmentKey, value: ShareGroupCurrentMemberAssignmentValue, member: true },
  15: { key: ShareGroupStatePartitionMetadataKey, value: ShareGroupStatePartitionMetadataValue, member: false },
};

export type CoordinatorRecord =
  | { readonly kind: 'offset'; readonly key: OffsetCommitKeyT; readonly value: OffsetCommitValueT | null }
  | { readonly kind: 'group'; readonly key: GroupMetadataKeyT; readonly value: GroupMetadataValueT | null }
  | ConsumerGroupRecord
  | ShareGroupRecord
  | StreamsGroupRecord;

/** A record of a kind this coordinator does not keep (KIP-848, share groups), or one it cannot read. */
export interface SkippedRecord {
  readonly kind: 'skipped';
  readonly reason: string;
}

export function offsetCommitRecord(group: string, topic: string, partition: number, value: OffsetCommitValueT | null): CoordinatorRecord {
  return { kind: 'offset', key: { group, topic, partition }, value };
}

export function groupMetadataRecord(group: string, value: GroupMetadataValueT | null): CoordinatorRecord {
  return { kind: 'group', key: { group }, value };
}

function versioned(version: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(2 + body.length);
  out.writeInt16BE(version, 0);
  body.copy(out, 2);
  return out;
}

/** The key and value bytes of a record as they go into __consumer_offsets. */
export function serializeRecord(r: CoordinatorRecord): { key: Buffer; value: Buffer | null } {
  if (r.kind === 'consumer' || r.kind === 'share' || r.kind === 'streams') {
    const decls = r.kind === 'consumer' ? CONSUMER_RECORD_DECLS[r.type] : r.kind === 'share' ? SHARE_RECORD_DECLS[r.type] : STREAMS_RECORD_DECLS[r.type];
    const keyFields = 'memberId' in r ? { groupId: r.groupId, memberId: r.memberId } : { groupId: r.groupId };
    const key = versioned(r.type, encode(decls.key, KEY_SCHEMA_VERSION, keyFields));
    return { key, value: r.value === null ? null : versioned(CONSUMER_VALUE_VERSION, encode(decls.value, CONSUMER_VALUE_VERSION, r.value)) };
  }
  if (r.kind === 'offset') {
    const key = versioned(OFFSET_COMMIT_KEY_VERSION, encode(OffsetCommitKey, KEY_SCHEMA_VERSION, r.key));
    if (r.value === null) return { key, value: null };
    const v = r.value.expireTimestamp !== -1n ? OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY : OFFSET_COMMIT_VALUE_VERSION;
    return { key, value: versioned(v, encode(OffsetCommitValue, v, r.value)) };
  }
  const key = versioned(GROUP_METADATA_KEY_VERSION, encode(GroupMetadataKey, KEY_SCHEMA_VERSION, r.key));
  if (r.value === null) return { key, value: null };
  return { key, value: versioned(GROUP_METADATA_VALUE_VERSION, encode(GroupMetadataValue, GROUP_METADATA_VALUE_VERSION, r.value)) };
}

/**
 * Reads one record of __consumer_offsets back. Never throws: what it cannot
 * read comes back as skipped, with the reason.
 *
 * Example: the key 0001 0002 6731 0001 74 00000003 (version 1, group "g1",
 * topic "t", partition 3) with a null value -> an offset tombstone for g1 t-3.
 */
export function deserializeRecord(key: Buffer | null, value: Buffer | null): CoordinatorRecord | SkippedRecord {
  if (key === null || key.length < 2) return { kind: 'skipped', reason: 'record without a versioned key' };
  const keyVersion = key.readInt16BE(0);
  if (keyVersion === 0 || keyVersion === 1) {
    const k = decode<OffsetCommitKeyT>(OffsetCommitKey, KEY_SCHEMA_VERSION, key.subarray(2));
    if (!k.ok) return { kind: 'skipped', reason: k.error };
    if (value === null) return { kind: 'offset', key: k.value, value: null };
    const v = decodeValue<OffsetCommitValueT>(OffsetCommitValue, value);
    return typeof v === 'string' ? { kind: 'skipped', reason: v } : { kind: 'offset', key: k.value, value: v };
  }
  if (keyVersion === 2) {
    const k = decode<GroupMetadataKeyT>(GroupMetadataKey, KEY_SCHEMA_VERSION, key.subarray(2));
    if (!k.ok) return { kind: 'skipped', reason: k.error };
    if (value === null) return { kind: 'group', key: k.value, value: null };
    const v = decodeValue<GroupMetadataValueT>(GroupMetadataValue, value);
    return typeof v === 'string' ? { kind: 'skipped', reason: v } : { kind: 'group', key: k.value, value: v };
  }
  if (keyVersion in CONSUMER_RECORD_DECLS) {
    const type = keyVersion as 3 | 4 | 5 | 6 | 7 | 8;
    const decls = CONSUMER_RECORD_DECLS[type];
    const k = decode<{ groupId: string; memberId?: string }>(decls.key, KEY_SCHEMA_VERSION, key.subarray(2));
    if (!k.ok) return { kind: 'skipped', reason: k.error };
    const v = value === null ? null : decodeValue<object>(decls.value, value);
    if (typeof v === 'string') return { kind: 'skipped', reason: v };
    const base = decls.member ? { groupId: k.value.groupId, memberId: k.value.memberId ?? '' } : { groupId: k.value.groupId };
    return { kind: 'consumer', type, ...base, value: v } as ConsumerGroupRecord;
  }
  if (keyVersion in SHARE_RECORD_DECLS) {
    const type = keyVersion as 10 | 11 | 12 | 13 | 14 | 15;
    const decls = SHARE_RECORD_DECLS[type];
    const k = decode<{ groupId: string; memberId?: string }>(decls.key, KEY_SCHEMA_VERSION, key.subarray(2));
    if (!k.ok) return { kind: 'skipped', reason: k.error };
    const v = value === null ? null : decodeValue<object>(decls.value, value);
    if (typeof v === 'string') return { kind: 'skipped', reason: v };
    const base = decls.member ? { groupId: k.value.groupId, memberId: k.value.memberId ?? '' } : { groupId: k.value.groupId };
    return { kind: 'share', type, ...base, value: v } as ShareGroupRecord;
  }
  if (isStreamsRecordType(keyVersion)) {
    const decls = STREAMS_RECORD_DECLS[keyVersion];
    const k = decode<{ groupId: string; memberId?: string }>(decls.key, KEY_SCHEMA_VERSION, key.subarray(2));
    if (!k.ok) return { kind: 'skipped', reason: k.error };
    const v = value === null ? null : decodeValue<object>(decls.value, value);
    if (typeof v === 'string') return { kind: 'skipped', reason: v };
    const base = decls.member ? { groupId: k.value.groupId, memberId: k.value.memberId ?? '' } : { groupId: k.value.groupId };
    return { kind: 'streams', type: keyVersion, ...base, value: v } as StreamsGroupRecord;
  }
  return { kind: 'skipped', reason: `record type ${keyVersion} is not a group record gregor keeps` };
}

function decodeValue<T>(decl: MessageDecl, value: Buffer): T | string {
  if (value.length < 2) return 'value shorter than its version';
  const version = value.readInt16BE(0);
  if (version < decl.versions[0] || version > decl.versions[1]) return `${decl.name} version ${version} is unknown`;
  const d = decode<T>(decl, version, value.subarray(2));
  return d.ok ? d.value : d.error;
}

/** The producer of a transactional batch: TxnOffsetCommit's producer id and epoch. */
export interface TransactionalProducer {
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

/**
 * One v2 batch holding `records`, as the coordinator appends them; with a
 * producer, a transactional batch of that producer (no sequence number: the
 * coordinator writes one batch per TxnOffsetCommit, not a producer's stream).
 *
 * Example: recordsBatch([offsetCommitRecord('g', 't', 0, value)], now, { producerId: 7n, producerEpoch: 2 })
 * -> a batch with attributes 0x10, producerId 7, producerEpoch 2, baseSequence -1.
 */
export function recordsBatch(records: readonly CoordinatorRecord[], now: number, producer?: TransactionalProducer): Buffer {
  return buildBatch({
    baseTimestamp: BigInt(now),
    ...(producer ? { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: -1, transactional: true } : {}),
    records: records.map((r) => {
      const { key, value } = serializeRecord(r);
      return { key, value, timestamp: BigInt(now) };
    }),
  });
}

/**
 * A stored batch of __consumer_offsets as the loader needs it: the records
 * of a data batch with the producer that wrote them (-1 outside
 * transactions), or a control batch; `lastOffset` is the batch's last offset.
 * A control batch's `commit` is true for a COMMIT marker, false for an
 * ABORT one, null for other control records (which end no transaction).
 */
export type OffsetsBatch =
  | {
      readonly kind: 'data';
      readonly lastOffset: bigint;
      readonly producerId: bigint;
      readonly transactional: boolean;
      readonly records: readonly { readonly offset: bigint; readonly record: CoordinatorRecord | SkippedRecord }[];
    }
  | { readonly kind: 'control'; readonly lastOffset: bigint; readonly producerId: bigint; readonly commit: boolean | null };

/**
 * Every batch in `bytes` (whole stored batches, as a log read returns them),
 * in offset order. A truncated last batch is passed over; a batch that does
 * not decode is reported through `onBadBatch` and skipped.
 *
 * Example: a transactional batch of producer 7 holding one offset commit at
 * offset 4, then producer 7's COMMIT marker at 5 -> { kind: 'data',
 * lastOffset: 4n, producerId: 7n, transactional: true, records: [...] },
 * { kind: 'control', lastOffset: 5n, producerId: 7n, commit: true }.
 */
export function* batchesIn(bytes: Buffer, onBadBatch: (baseOffset: bigint, error: string) => void): Generator<OffsetsBatch> {
  for (const batch of wholeBatches(bytes)) {
    const baseOffset = batch.readBigInt64BE(0);
    if (batch.length <= MAGIC || batch[MAGIC] !== MAGIC_V2) {
      onBadBatch(baseOffset, `magic ${batch[MAGIC]} is not 2`);
      continue;
    }
    const decoded = decodeRecords(batch);
    if (!decoded.ok) {
      onBadBatch(baseOffset, decoded.error);
      continue;
    }
    const attributes = batch.readInt16BE(ATTRIBUTES);
    const lastOffset = baseOffset + BigInt(batch.readInt32BE(LAST_OFFSET_DELTA));
    const producerId = batch.readBigInt64BE(PRODUCER_ID);
    if ((attributes & CONTROL) !== 0) {
      yield { kind: 'control', lastOffset, producerId, commit: readEndTxnMarker(batch)?.commit ?? null };
      continue;
    }
    yield {
      kind: 'data',
      lastOffset,
      producerId,
      transactional: (attributes & TRANSACTIONAL) !== 0,
      records: decoded.records.map((r) => ({ offset: baseOffset + BigInt(r.offsetDelta), record: deserializeRecord(r.key, r.value) })),
    };
  }
}

/**
 * Every coordinator record in `bytes`, in offset order, with the offset of
 * each, whatever producer wrote it. Control batches (transaction markers)
 * and a truncated last batch are passed over; a batch that does not decode
 * is reported through `onBadBatch` and skipped.
 */
export function* recordsIn(
  bytes: Buffer,
  onBadBatch: (baseOffset: bigint, error: string) => void,
): Generator<{ offset: bigint; record: CoordinatorRecord | SkippedRecord }> {
  for (const batch of batchesIn(bytes, onBadBatch)) {
    if (batch.kind === 'data') for (const { offset, record } of batch.records) yield { offset, record };
  }
}

/**
 * The topics a consumer subscribes to, read from its ConsumerProtocol
 * subscription (the metadata of protocol type "consumer"): an int16 version
 * and then, in every version, the topic names first. null when the bytes do
 * not hold that prefix.
 */
export function subscribedTopicsOf(metadata: Buffer): Set<string> | null {
  const r = new Reader(metadata);
  r.int16();
  const n = r.int32();
  if (r.error || n < 0 || n > r.remaining / 2) return null;
  const topics = new Set<string>();
  for (let i = 0; i < n; i++) {
    const s = r.string();
    if (r.error || s === null) return null;
    topics.add(s);
  }
  return topics;
}

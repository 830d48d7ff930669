/**
 * The records of a streams group (KIP-1071) in __consumer_offsets, in Kafka
 * 4.4's layouts (kafka-protocol/group-coordinator/StreamsGroup*.json): record
 * types 17 (the group's epoch and metadata hash), 19 (a member's metadata),
 * 20 (the target assignment's epoch), 21 (a member's part of the target
 * assignment), 22 (a member's current assignment) and 23 (the topology).
 * Keys and values are at version 0; a null value is a tombstone.
 */
import type { MessageDecl } from '../../wire/schema.js';
import { StreamsGroupMetadataKey } from '../../wire/messages/streams-group-metadata-key.js';
import { StreamsGroupMetadataValue } from '../../wire/messages/streams-group-metadata-value.js';
import { StreamsGroupMemberMetadataKey } from '../../wire/messages/streams-group-member-metadata-key.js';
import { StreamsGroupMemberMetadataValue } from '../../wire/messages/streams-group-member-metadata-value.js';
import { StreamsGroupTargetAssignmentMetadataKey } from '../../wire/messages/streams-group-target-assignment-metadata-key.js';
import { StreamsGroupTargetAssignmentMetadataValue } from '../../wire/messages/streams-group-target-assignment-metadata-value.js';
import { StreamsGroupTargetAssignmentMemberKey } from '../../wire/messages/streams-group-target-assignment-member-key.js';
import { StreamsGroupTargetAssignmentMemberValue } from '../../wire/messages/streams-group-target-assignment-member-value.js';
import { StreamsGroupCurrentMemberAssignmentKey } from '../../wire/messages/streams-group-current-member-assignment-key.js';
import { StreamsGroupCurrentMemberAssignmentValue } from '../../wire/messages/streams-group-current-member-assignment-value.js';
import { StreamsGroupTopologyKey } from '../../wire/messages/streams-group-topology-key.js';
import { StreamsGroupTopologyValue } from '../../wire/messages/streams-group-topology-value.js';
import type { StreamsGroupMetadataValue as MetadataValueT } from '../../wire/messages/streams-group-metadata-value.js';
import type { StreamsGroupMemberMetadataValue as MemberMetadataValueT } from '../../wire/messages/streams-group-member-metadata-value.js';
import type { StreamsGroupTargetAssignmentMetadataValue as TargetMetadataValueT } from '../../wire/messages/streams-group-target-assignment-metadata-value.js';
import type { StreamsGroupTargetAssignmentMemberValue as TargetMemberValueT } from '../../wire/messages/streams-group-target-assignment-member-value.js';
import type { StreamsGroupCurrentMemberAssignmentValue as CurrentAssignmentValueT } from '../../wire/messages/streams-group-current-member-assignment-value.js';
import type { StreamsGroupTopologyValue as TopologyValueT } from '../../wire/messages/streams-group-topology-value.js';

export type StreamsGroupMetadataValueData = MetadataValueT;
export type StreamsGroupMemberMetadataValueData = MemberMetadataValueT;
export type StreamsGroupTargetAssignmentMemberValueData = TargetMemberValueT;
export type StreamsGroupCurrentMemberAssignmentValueData = CurrentAssignmentValueT;
export type StreamsGroupTopologyValueData = TopologyValueT;

export type StreamsGroupRecord =
  | { readonly kind: 'streams'; readonly type: 17; readonly groupId: string; readonly value: MetadataValueT | null }
  | { readonly kind: 'streams'; readonly type: 19; readonly groupId: string; readonly memberId: string; readonly value: MemberMetadataValueT | null }
  | { readonly kind: 'streams'; readonly type: 20; readonly groupId: string; readonly value: TargetMetadataValueT | null }
  | { readonly kind: 'streams'; readonly type: 21; readonly groupId: string; readonly memberId: string; readonly value: TargetMemberValueT | null }
  | { readonly kind: 'streams'; readonly type: 22; readonly groupId: string; readonly memberId: string; readonly value: CurrentAssignmentValueT | null }
  | { readonly kind: 'streams'; readonly type: 23; readonly groupId: string; readonly value: TopologyValueT | null };

export type StreamsRecordType = StreamsGroupRecord['type'];

export const STREAMS_RECORD_DECLS: Readonly<Record<StreamsRecordType, { key: MessageDecl; value: MessageDecl; member: boolean }>> = {
  17: { key: StreamsGroupMetadataKey, value: StreamsGroupMetadataValue, member: false },
  19: { key: StreamsGroupMemberMetadataKey, value: StreamsGroupMemberMetadataValue, member: true },
  20: { key: StreamsGroupTargetAssignmentMetadataKey, value: StreamsGroupTargetAssignmentMetadataValue, member: false },
  21: { key: StreamsGroupTargetAssignmentMemberKey, value: StreamsGroupTargetAssignmentMemberValue, member: true },
  22: { key: StreamsGroupCurrentMemberAssignmentKey, value: StreamsGroupCurrentMemberAssignmentValue, member: true },
  23: { key: StreamsGroupTopologyKey, value: StreamsGroupTopologyValue, member: false },
};

export function isStreamsRecordType(type: number): type is StreamsRecordType {
  return type in STREAMS_RECORD_DECLS;
}

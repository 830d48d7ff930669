/**
 * The share-partition state of KIP-932 as its users see it: the share
 * coordinator keeps, for each (group, topic id, partition), the share-partition
 * start offset and the delivery state of the in-flight records after it, in
 * __share_group_state (ShareSnapshot and ShareUpdate records). The broker
 * leading a partition reads and writes its state through a Persister; the
 * group coordinator initializes, summarizes and deletes it.
 *
 * Whether the coordinator of a key is this broker or another one (reached
 * with the inter-broker Read/Write/Initialize/DeleteShareGroupState APIs) is
 * the implementation's business.
 */

/** Delivery states as persisted (and as ShareSnapshot/ShareUpdate carry them). */
export const DeliveryState = {
  AVAILABLE: 0,
  ACQUIRED: 1,
  ACKNOWLEDGED: 2,
  ARCHIVED: 4,
} as const;

export interface StateBatch {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly deliveryState: number;
  readonly deliveryCount: number;
}

export interface SharePartitionKey {
  readonly groupId: string;
  readonly topicId: string;
  readonly partition: number;
}

export interface PersisterResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export interface ReadStateResult extends PersisterResult {
  readonly stateEpoch: number;
  /** -1n: initialized with no start offset yet (the share partition applies share.auto.offset.reset). */
  readonly startOffset: bigint;
  readonly stateBatches: readonly StateBatch[];
}

export interface ReadSummaryResult extends PersisterResult {
  readonly stateEpoch: number;
  readonly leaderEpoch: number;
  readonly startOffset: bigint;
  /** Records at or after the start offset already acknowledged or archived; -1 when unknown. */
  readonly deliveryCompleteCount: number;
}

export interface WriteStateParams {
  readonly stateEpoch: number;
  readonly leaderEpoch: number;
  readonly startOffset: bigint;
  readonly deliveryCompleteCount: number;
  readonly stateBatches: readonly StateBatch[];
}

export interface Persister {
  /** Sets a new state epoch and start offset (-1n: apply the reset policy), dropping the in-flight state. */
  initialize(key: SharePartitionKey, stateEpoch: number, startOffset: bigint): Promise<PersisterResult>;
  /** The state as the share-partition leader loads it; UNKNOWN_TOPIC_OR_PARTITION when never initialized. */
  read(key: SharePartitionKey, leaderEpoch: number): Promise<ReadStateResult>;
  /** Merges the given batches into the state; FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH when stale. */
  write(key: SharePartitionKey, params: WriteStateParams): Promise<PersisterResult>;
  readSummary(key: SharePartitionKey, leaderEpoch: number): Promise<ReadSummaryResult>;
  delete(key: SharePartitionKey): Promise<PersisterResult>;
}

/**
 * What every API handler exports. The registry of handlers is both the dispatch
 * table and the source of the ApiVersions answer, so the broker advertises
 * exactly the versions some handler serves.
 */
import type { ShareCoordinator } from '../cluster/share/share-coordinator.js';
import type { Persister } from '../cluster/share/persister.js';
import type { ShareStateTopicSettings } from '../cluster/share/coordinator-persister.js';
import type { LatestOffsetLookup } from '../cluster/share/latest-offsets.js';
import type { ShareGroupSettings, ShareManager } from '../cluster/share/share-manager.js';
import type { Logger } from 'pino';
import type { MessageDecl } from '../wire/schema.js';
import type { StaticBrokerConfig } from '../cluster/metadata/broker-configs.js';
import type { MetadataImage, MetadataStore } from '../cluster/metadata/metadata-image.js';
import { BrokerConfigs, NO_STATIC_CONFIG } from '../cluster/metadata/broker-configs.js';
import { effectiveGroupConfig } from '../cluster/group/group-configs.js';
import type { ReplicaManager } from '../cluster/replication/replica-manager.js';
import type { GroupCoordinator, GroupCoordinatorConfig } from '../cluster/group/group-coordinator.js';
import type { TransactionCoordinator, TransactionCoordinatorConfig } from '../cluster/txn/txn-coordinator.js';
import type { TransactionVerifier } from '../cluster/txn/txn-verifier.js';
import { DEFAULT_STREAMS_GROUPS_CONFIG } from '../cluster/group/streams-coordinator.js';

export interface BrokerSettings {
  readonly nodeId: number;
  readonly autoCreateTopicsEnable: boolean;
  readonly numPartitions: number;
  readonly defaultReplicationFactor: number;
  /** fetch.max.bytes; Fetch uses Kafka's default when absent. */
  readonly fetchMaxBytes?: number;
  /** max.incremental.fetch.session.cache.slots; Fetch uses Kafka's default when absent. */
  readonly maxIncrementalFetchSessionCacheSlots?: number;
  /** max.request.partition.size.limit; DescribeTopicPartitions uses Kafka's default (2000) when absent. */
  readonly maxRequestPartitionSizeLimit?: number;
  /** offsets.topic.* and transaction.state.log.*: the internal topics FindCoordinator creates; Kafka's defaults when absent. */
  readonly offsetsTopicNumPartitions?: number;
  readonly offsetsTopicReplicationFactor?: number;
  readonly offsetsTopicSegmentBytes?: number;
  readonly transactionStateLogNumPartitions?: number;
  readonly transactionStateLogReplicationFactor?: number;
  readonly transactionStateLogMinIsr?: number;
  readonly transactionStateLogSegmentBytes?: number;
  /** group.* and offset settings of the group coordinator; Kafka's defaults when absent. */
  readonly groupInitialRebalanceDelayMs?: number;
  readonly groupMinSessionTimeoutMs?: number;
  readonly groupMaxSessionTimeoutMs?: number;
  readonly groupMaxSize?: number;
  readonly groupConsumerSessionTimeoutMs?: number;
  readonly groupConsumerHeartbeatIntervalMs?: number;
  readonly groupConsumerMaxSize?: number;
  readonly groupConsumerAssignors?: readonly ('uniform' | 'range')[];
  readonly groupConsumerAssignmentIntervalMs?: number;
  readonly groupConsumerMigrationPolicy?: 'disabled' | 'upgrade' | 'downgrade' | 'bidirectional';
  /** group.share.* (KIP-932); Kafka's defaults when absent. */
  readonly groupShareSessionTimeoutMs?: number;
  readonly groupShareHeartbeatIntervalMs?: number;
  readonly groupShareMaxSize?: number;
  readonly groupShareAssignmentIntervalMs?: number;
  /** share.coordinator.state.topic.*: __share_group_state as FindCoordinator creates it; Kafka's defaults when absent. */
  readonly shareCoordinatorStateTopicNumPartitions?: number;
  readonly shareCoordinatorStateTopicReplicationFactor?: number;
  readonly shareCoordinatorStateTopicMinIsr?: number;
  readonly shareCoordinatorStateTopicSegmentBytes?: number;
  readonly groupStreamsSessionTimeoutMs?: number;
  readonly groupStreamsHeartbeatIntervalMs?: number;
  readonly groupStreamsNumStandbyReplicas?: number;
  readonly groupStreamsInitialRebalanceDelayMs?: number;
  readonly offsetsRetentionMinutes?: number;
  readonly offsetsRetentionCheckIntervalMs?: number;
  readonly offsetMetadataMaxBytes?: number;
  readonly offsetsCommitTimeoutMs?: number;
  /** transactional.id.expiration.ms and transaction.* settings of the transaction coordinator; Kafka's defaults when absent. */
  readonly transactionalIdExpirationMs?: number;
  readonly transactionMaxTimeoutMs?: number;
  readonly transactionAbortTimedOutTransactionCleanupIntervalMs?: number;
  readonly transactionRemoveExpiredTransactionCleanupIntervalMs?: number;
  /**
   * What the operator set at start and gregor's own config keys, for
   * DescribeConfigs and the broker-wide topic config defaults; none set
   * when absent (handler tests).
   */
  readonly staticConfig?: StaticBrokerConfig;
}

/** What a handler may reach: the cluster's services, never sockets or files. */
export interface BrokerServices {
  readonly settings: BrokerSettings;
  readonly metadata: MetadataStore;
  /** The partitions this broker holds: the only way to their logs. */
  readonly replicas: ReplicaManager;
  /** The groups whose partition of __consumer_offsets this broker leads, and their committed offsets. */
  readonly groups: GroupCoordinator;
  /** The transactional ids whose partition of __transaction_state this broker leads, and producer ids for all. */
  readonly transactions: TransactionCoordinator;
  /** Share groups' data path: the share partitions this broker leads, their sessions, and the share coordinator. */
  readonly shares: ShareServices;
  /** Asks the coordinator of a transaction, on whichever broker, whether a partition is in it. */
  readonly verifier: TransactionVerifier;
  readonly log: Logger;
  /** The advertised versions table, built from the registry. */
  readonly apiVersions: readonly ApiVersionRange[];
}

/** The share coordinator (__share_group_state), the persister that reaches it from anywhere, and the share partitions led here. */
export interface ShareServices {
  readonly coordinator: ShareCoordinator;
  readonly persister: Persister;
  readonly manager: ShareManager;
  /** A partition's high watermark, from its leader wherever it is (the lag of share groups). */
  readonly latestOffset: LatestOffsetLookup;
}

/** Kafka 4.4's broker defaults for share groups' partitions. */
export const SHARE_GROUP_DEFAULTS: ShareGroupSettings = {
  lockDurationMs: 30_000,
  deliveryCountLimit: 5,
  maxInFlightRecords: 2000,
  autoOffsetReset: 'latest',
  isolationLevel: 'read_uncommitted',
};

/**
 * What a share group's partitions follow: its group configs (the GROUP
 * config resource) over the broker's group.share.* settings over Kafka's
 * defaults, read at the current image.
 */
export function shareGroupSettings(settings: BrokerSettings, metadata: MetadataStore): (groupId: string) => ShareGroupSettings {
  let image: MetadataImage | null = null;
  let view: BrokerConfigs | null = null;
  return (groupId) => {
    const now = metadata.image();
    if (now !== image || view === null) {
      image = now;
      view = BrokerConfigs.of(now, settings.staticConfig ?? NO_STATIC_CONFIG, settings.nodeId);
    }
    const overrides = metadata.groupConfigOverrides(groupId);
    const g = effectiveGroupConfig(overrides, view);
    const locks = Number((overrides.get('share.partition.max.record.locks') ?? view.value('group.share.partition.max.record.locks') ?? '').trim());
    return {
      lockDurationMs: g.shareRecordLockDurationMs,
      deliveryCountLimit: g.shareDeliveryCountLimit,
      maxInFlightRecords: Number.isInteger(locks) && locks > 0 ? locks : SHARE_GROUP_DEFAULTS.maxInFlightRecords,
      autoOffsetReset: g.shareAutoOffsetReset,
      isolationLevel: g.shareIsolationLevel,
    };
  };
}

/** How __share_group_state is created, from the share.coordinator.state.topic.* settings given. */
export function shareStateTopicSettings(settings: BrokerSettings): Partial<ShareStateTopicSettings> {
  const t: { -readonly [K in keyof ShareStateTopicSettings]?: ShareStateTopicSettings[K] } = {};
  if (settings.shareCoordinatorStateTopicNumPartitions !== undefined) t.numPartitions = settings.shareCoordinatorStateTopicNumPartitions;
  if (settings.shareCoordinatorStateTopicReplicationFactor !== undefined) t.replicationFactor = settings.shareCoordinatorStateTopicReplicationFactor;
  if (settings.shareCoordinatorStateTopicMinIsr !== undefined) t.minIsr = settings.shareCoordinatorStateTopicMinIsr;
  if (settings.shareCoordinatorStateTopicSegmentBytes !== undefined) t.segmentBytes = settings.shareCoordinatorStateTopicSegmentBytes;
  return t;
}

/** The coordinator settings given in `settings`, by their GroupCoordinatorConfig names. */
export function groupCoordinatorConfig(settings: BrokerSettings): Partial<GroupCoordinatorConfig> {
  const c: { -readonly [K in keyof GroupCoordinatorConfig]?: GroupCoordinatorConfig[K] } = {};
  if (settings.groupInitialRebalanceDelayMs !== undefined) c.initialRebalanceDelayMs = settings.groupInitialRebalanceDelayMs;
  if (settings.groupMinSessionTimeoutMs !== undefined) c.minSessionTimeoutMs = settings.groupMinSessionTimeoutMs;
  if (settings.groupMaxSessionTimeoutMs !== undefined) c.maxSessionTimeoutMs = settings.groupMaxSessionTimeoutMs;
  if (settings.groupMaxSize !== undefined) c.maxSize = settings.groupMaxSize;
  if (settings.groupConsumerSessionTimeoutMs !== undefined) c.consumerSessionTimeoutMs = settings.groupConsumerSessionTimeoutMs;
  if (settings.groupConsumerHeartbeatIntervalMs !== undefined) c.consumerHeartbeatIntervalMs = settings.groupConsumerHeartbeatIntervalMs;
  if (settings.groupConsumerMaxSize !== undefined) c.consumerMaxSize = settings.groupConsumerMaxSize;
  if (settings.groupConsumerAssignors !== undefined) c.consumerAssignors = settings.groupConsumerAssignors;
  if (settings.groupConsumerAssignmentIntervalMs !== undefined) c.consumerAssignmentIntervalMs = settings.groupConsumerAssignmentIntervalMs;
  if (settings.groupConsumerMigrationPolicy !== undefined) c.consumerMigrationPolicy = settings.groupConsumerMigrationPolicy;
  if (settings.groupShareSessionTimeoutMs !== undefined) c.shareSessionTimeoutMs = settings.groupShareSessionTimeoutMs;
  if (settings.groupShareHeartbeatIntervalMs !== undefined) c.shareHeartbeatIntervalMs = settings.groupShareHeartbeatIntervalMs;
  if (settings.groupShareMaxSize !== undefined) c.shareMaxSize = settings.groupShareMaxSize;
  if (settings.groupShareAssignmentIntervalMs !== undefined) c.shareAssignmentIntervalMs = settings.groupShareAssignmentIntervalMs;
  c.streams = {
    ...DEFAULT_STREAMS_GROUPS_CONFIG,
    ...(settings.groupStreamsSessionTimeoutMs !== undefined ? { sessionTimeoutMs: settings.groupStreamsSessionTimeoutMs } : {}),
    ...(settings.groupStreamsHeartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: settings.groupStreamsHeartbeatIntervalMs } : {}),
    ...(settings.groupStreamsNumStandbyReplicas !== undefined ? { numStandbyReplicas: settings.groupStreamsNumStandbyReplicas } : {}),
    ...(settings.groupStreamsInitialRebalanceDelayMs !== undefined ? { initialRebalanceDelayMs: settings.groupStreamsInitialRebalanceDelayMs } : {}),
  };
  if (settings.offsetsRetentionMinutes !== undefined) c.offsetsRetentionMs = settings.offsetsRetentionMinutes * 60_000;
  if (settings.offsetsRetentionCheckIntervalMs !== undefined) c.offsetsRetentionCheckIntervalMs = settings.offsetsRetentionCheckIntervalMs;
  if (settings.offsetMetadataMaxBytes !== undefined) c.offsetMetadataMaxBytes = settings.offsetMetadataMaxBytes;
  if (settings.offsetsCommitTimeoutMs !== undefined) c.offsetCommitTimeoutMs = settings.offsetsCommitTimeoutMs;
  return c;
}

/** The transaction coordinator settings given in `settings`, by their TransactionCoordinatorConfig names. */
export function transactionCoordinatorConfig(settings: BrokerSettings): Partial<TransactionCoordinatorConfig> {
  const c: { -readonly [K in keyof TransactionCoordinatorConfig]?: TransactionCoordinatorConfig[K] } = {};
  if (settings.transactionalIdExpirationMs !== undefined) c.transactionalIdExpirationMs = settings.transactionalIdExpirationMs;
  if (settings.transactionMaxTimeoutMs !== undefined) c.transactionMaxTimeoutMs = settings.transactionMaxTimeoutMs;
  if (settings.transactionAbortTimedOutTransactionCleanupIntervalMs !== undefined) {
    c.abortTimedOutTransactionCleanupIntervalMs = settings.transactionAbortTimedOutTransactionCleanupIntervalMs;
  }
  if (settings.transactionRemoveExpiredTransactionCleanupIntervalMs !== undefined) {
    c.removeExpiredTransactionalIdCleanupIntervalMs = settings.transactionRemoveExpiredTransactionCleanupIntervalMs;
  }
  return c;
}

export interface RequestContext {
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
  /** Listener the connection came in on, to answer with the matching advertised address. */
  readonly listener: string;
  readonly clientHost: string;
  readonly services: BrokerServices;
  /** Runs `cb` once when the client's connection closes (share sessions end with their connection); absent in tests. */
  readonly onConnectionClose?: (cb: () => void) => void;
}

export interface ApiVersionRange {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** Returned by a handler whose request gets no response (Produce with acks=0). */
export const NO_RESPONSE: unique symbol = Symbol('no response');

export interface ApiHandler<Req = any, Res = any> {
  readonly apiKey: number;
  readonly name: string;
  readonly request: MessageDecl;
  readonly response: MessageDecl;
  /**
   * 0, the oldest version the declaration describes, so that old clients
   * keep their features (see CLIENT-MATRIX traps 1 and 2). That includes the
   * versions Kafka 4.0 removed (KIP-896), which gregor serves as Kafka 3.x
   * did. The exception is a v0 no release ever served: ShareGroupHeartbeat,
   * ShareGroupDescribe, ShareFetch and ShareAcknowledge start at v1, as in
   * Kafka 4.4 (their v0 was KIP-932's early access).
   */
  readonly minVersion: number;
  readonly maxVersion: number;
  handle(req: Req, ctx: RequestContext): Promise<Res | typeof NO_RESPONSE> | Res | typeof NO_RESPONSE;
  /** The response that reports `errorCode` for the whole request, used when `handle` fails unexpectedly. */
  errorResponse(req: Req, errorCode: number, ctx: RequestContext): Res;
}

export function defineHandler<Req, Res>(h: ApiHandler<Req, Res>): ApiHandler<Req, Res> {
  return h;
}

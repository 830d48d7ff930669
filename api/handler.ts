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
import type { ConfigReader } from '../cluster/metadata/broker-config-registry.js';
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
  /** The broker's config keys as set at start, else their defaults, by Kafka name (config.int('num.partitions')). */
  readonly config: ConfigReader;
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

/** How __share_group_state is created: the share.coordinator.state.topic.* settings. */
export function shareStateTopicSettings(settings: BrokerSettings): Partial<ShareStateTopicSettings> {
  return {
    numPartitions: settings.config.int('share.coordinator.state.topic.num.partitions'),
    replicationFactor: settings.config.int('share.coordinator.state.topic.replication.factor'),
    minIsr: settings.config.int('share.coordinator.state.topic.min.isr'),
    segmentBytes: settings.config.int('share.coordinator.state.topic.segment.bytes'),
  };
}

/** The group coordinator's settings from the broker config, by their GroupCoordinatorConfig names. */
export function groupCoordinatorConfig(settings: BrokerSettings): Partial<GroupCoordinatorConfig> {
  return {
    initialRebalanceDelayMs: settings.config.int('group.initial.rebalance.delay.ms'),
    minSessionTimeoutMs: settings.config.int('group.min.session.timeout.ms'),
    maxSessionTimeoutMs: settings.config.int('group.max.session.timeout.ms'),
    maxSize: settings.config.int('group.max.size'),
    consumerSessionTimeoutMs: settings.config.int('group.consumer.session.timeout.ms'),
    consumerHeartbeatIntervalMs: settings.config.int('group.consumer.heartbeat.interval.ms'),
    consumerMaxSize: settings.config.int('group.consumer.max.size'),
    consumerAssignors: settings.config.list('group.consumer.assignors') as ('uniform' | 'range')[],
    consumerAssignmentIntervalMs: settings.config.int('group.consumer.assignment.interval.ms'),
    consumerMigrationPolicy: settings.config.value('group.consumer.migration.policy')!.toLowerCase() as GroupCoordinatorConfig['consumerMigrationPolicy'],
    shareSessionTimeoutMs: settings.config.int('group.share.session.timeout.ms'),
    shareHeartbeatIntervalMs: settings.config.int('group.share.heartbeat.interval.ms'),
    shareMaxSize: settings.config.int('group.share.max.size'),
    shareAssignmentIntervalMs: settings.config.int('group.share.assignment.interval.ms'),
    streams: {
      ...DEFAULT_STREAMS_GROUPS_CONFIG,
      sessionTimeoutMs: settings.config.int('group.streams.session.timeout.ms'),
      heartbeatIntervalMs: settings.config.int('group.streams.heartbeat.interval.ms'),
      numStandbyReplicas: settings.config.int('group.streams.num.standby.replicas'),
      initialRebalanceDelayMs: settings.config.int('group.streams.initial.rebalance.delay.ms'),
    },
    offsetsRetentionMs: settings.config.int('offsets.retention.minutes') * 60_000,
    offsetsRetentionCheckIntervalMs: settings.config.int('offsets.retention.check.interval.ms'),
    offsetMetadataMaxBytes: settings.config.int('offset.metadata.max.bytes'),
    offsetCommitTimeoutMs: settings.config.int('offsets.commit.timeout.ms'),
  };
}

/** The transaction coordinator's settings from the broker config, by their TransactionCoordinatorConfig names. */
export function transactionCoordinatorConfig(settings: BrokerSettings): Partial<TransactionCoordinatorConfig> {
  return {
    transactionalIdExpirationMs: settings.config.int('transactional.id.expiration.ms'),
    transactionMaxTimeoutMs: settings.config.int('transaction.max.timeout.ms'),
    abortTimedOutTransactionCleanupIntervalMs: settings.config.int('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
    removeExpiredTransactionalIdCleanupIntervalMs: settings.config.int('transaction.remove.expired.transaction.cleanup.interval.ms'),
  };
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
  /** The SASL exchange of a connection on a SASL listener, until it has authenticated; absent elsewhere. */
  readonly sasl?: SaslExchange;
}

/** One connection's SASL authentication (SaslHandshake, then SaslAuthenticate). */
export interface SaslExchange {
  /** The mechanisms the listener takes, in its order (sasl.enabled.mechanisms). */
  readonly mechanisms: readonly string[];
  /** Picks `mechanism` for this connection; false when the listener does not take it. */
  handshake(mechanism: string): boolean;
  /**
   * Checks one client token of the picked mechanism. Done: the connection is
   * authenticated as `principal`. Failed: the answer carries `message` and the
   * connection then closes.
   */
  authenticate(token: Buffer): { readonly done: true; readonly principal: string } | { readonly done: false; readonly message: string };
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

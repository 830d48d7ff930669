/**
 * Broker configuration, with Kafka's names and defaults. Values come from a
 * server.properties-style file, then the environment, then command-line flags;
 * a later source overrides an earlier one. Every broker config key of Kafka is
 * taken (checked against Kafka's type and validator); those that concern only
 * Kafka's JVM, its KRaft quorum or ZooKeeper are listed as not applying. A key
 * neither Kafka nor gregor knows is an error that names the nearest known key,
 * so a typo never silently falls back to a default.
 */
import { readFileSync } from 'node:fs';
import { resolve as resolvePath, sep } from 'node:path';
import { parseProperties } from '../storage/atomic-file.js';
import { checkConfigValue } from '../storage/topic-config.js';
import { kafkaBrokerConfig, KAFKA_LIST_ORDER, LISTED_BROKER_CONFIGS } from '../cluster/metadata/broker-config-catalog.js';

type Kind = 'int' | 'long' | 'bool' | 'string' | 'list';

interface Def {
  readonly kind: Kind;
  readonly default: string | null;
  readonly doc: string;
  readonly min?: number;
  readonly max?: number;
}

/** The keys gregor understands. README's configuration table is built from this. */
export const CONFIG_DEFS = {
  'listeners': { kind: 'list', default: 'PLAINTEXT://127.0.0.1:9092', doc: 'Addresses to listen on, NAME://HOST:PORT, comma-separated. Port 0 picks a free port.' },
  'advertised.listeners': { kind: 'list', default: null, doc: 'Addresses given to clients in Metadata, per listener name. Defaults to the bound listeners.' },
  'log.dirs': { kind: 'list', default: null, doc: 'Log directories, comma-separated (JBOD): new partitions go to the one holding the fewest; the first also keeps the broker\'s own files. Overrides log.dir.' },
  'log.dir': { kind: 'string', default: './data', doc: 'Data directory when log.dirs is not set.' },
  'node.id': { kind: 'int', default: '1', doc: 'This broker\'s id.', min: 0 },
  'broker.id': { kind: 'int', default: null, doc: 'Older name of node.id; used when node.id is not set.', min: 0 },
  'broker.rack': { kind: 'string', default: null, doc: 'Rack of this broker, reported in Metadata; in a cluster, new partitions spread their replicas over the racks.' },
  'metadata.store': { kind: 'string', default: 'local', doc: 'Where cluster metadata lives: local (this broker alone, in its data directory) or etcd://HOST:PORT[,HOST:PORT...] (a cluster of brokers sharing that etcd).' },
  'metadata.etcd.root': { kind: 'string', default: '/gregor/', doc: 'The etcd key prefix of this cluster\'s metadata; clusters sharing one etcd each need their own.' },
  'replica.lag.time.max.ms': { kind: 'long', default: '30000', doc: 'A follower that has not caught up with its leader for this long leaves the ISR; one that catches up joins it again.', min: 1, max: 2147483647 },
  'broker.session.timeout.ms': { kind: 'int', default: '9000', doc: 'With etcd: a broker that stops renewing its registration for this long (whole seconds) counts as gone, and its partitions get new leaders.', min: 1000 },
  'num.partitions': { kind: 'int', default: '1', doc: 'Partitions of an auto-created topic.', min: 1 },
  'default.replication.factor': { kind: 'int', default: '1', doc: 'Replication factor of an auto-created topic.', min: 1 },
  'auto.create.topics.enable': { kind: 'bool', default: 'true', doc: 'Create a topic when a client asks for an unknown one and allows it.' },
  'socket.request.max.bytes': { kind: 'int', default: '104857600', doc: 'Largest request frame accepted; a larger one closes the connection.', min: 1 },
  'max.connections': { kind: 'int', default: '2147483647', doc: 'Open client connections allowed; more are closed at once.', min: 0 },
  'connections.max.idle.ms': { kind: 'long', default: '600000', doc: 'Idle connections are closed after this long.', min: 1, max: 2147483647 },
  'queued.max.requests': { kind: 'int', default: '500', doc: 'Requests read ahead on one connection before reading pauses.', min: 1 },
  'auto.leader.rebalance.enable': { kind: 'bool', default: 'true', doc: 'In a cluster, the controller gives partitions back to their preferred replica (the first) when it is in sync again.' },
  'leader.imbalance.check.interval.seconds': { kind: 'int', default: '300', doc: 'How often the controller looks for partitions whose preferred replica should lead again.', min: 1 },
  'controlled.shutdown.enable': { kind: 'bool', default: 'true', doc: 'In a cluster, move partition leadership to the other in-sync replicas before a broker stops (within shutdown.timeout.ms).' },
  'shutdown.timeout.ms': { kind: 'long', default: '30000', doc: 'Longest a graceful shutdown takes: the controlled shutdown, then the requests in flight.', min: 0, max: 2147483647 },
  'fetch.max.bytes': { kind: 'int', default: '57671680', doc: 'Most record bytes one Fetch response returns, whatever the request asks (the first batch still goes out whole).', min: 0 },
  'max.incremental.fetch.session.cache.slots': { kind: 'int', default: '1000', doc: 'Incremental fetch sessions (KIP-227) the broker keeps.', min: 0 },
  'max.request.partition.size.limit': { kind: 'int', default: '2000', doc: 'Most partitions one DescribeTopicPartitions answer describes, whatever the request asks; the client pages through the rest.', min: 1 },
  'offsets.topic.num.partitions': { kind: 'int', default: '50', doc: 'Partitions of __consumer_offsets, made when a group first needs a coordinator.', min: 1 },
  'offsets.topic.replication.factor': { kind: 'int', default: '3', doc: 'Replication factor of __consumer_offsets, capped by the brokers alive when it is made.', min: 1, max: 32767 },
  'offsets.topic.segment.bytes': { kind: 'int', default: '104857600', doc: 'segment.bytes of __consumer_offsets.', min: 1 },
  'transaction.state.log.num.partitions': { kind: 'int', default: '50', doc: 'Partitions of __transaction_state, made when a transactional id first needs a coordinator.', min: 1 },
  'transaction.state.log.replication.factor': { kind: 'int', default: '3', doc: 'Replication factor of __transaction_state, capped by the brokers alive when it is made.', min: 1, max: 32767 },
  'transaction.state.log.min.isr': { kind: 'int', default: '2', doc: 'min.insync.replicas of __transaction_state.', min: 1 },
  'transaction.state.log.segment.bytes': { kind: 'int', default: '104857600', doc: 'segment.bytes of __transaction_state.', min: 1 },
  'transaction.max.timeout.ms': { kind: 'int', default: '900000', doc: 'Largest transaction.timeout.ms a transactional producer may ask for; more is INVALID_TRANSACTION_TIMEOUT.', min: 1 },
  'transactional.id.expiration.ms': { kind: 'int', default: '604800000', doc: 'A transactional id with no transaction for this long is forgotten.', min: 1 },
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': { kind: 'int', default: '10000', doc: 'How often transactions open longer than their timeout are looked for and aborted.', min: 1 },
  'transaction.remove.expired.transaction.cleanup.interval.ms': { kind: 'int', default: '3600000', doc: 'How often expired transactional ids are looked for.', min: 1 },
  'producer.id.expiration.ms': { kind: 'int', default: '86400000', doc: 'A partition forgets an idempotent producer that wrote nothing for this long and has no open transaction.', min: 1 },
  'producer.id.expiration.check.interval.ms': { kind: 'int', default: '600000', doc: 'How often partitions look for expired producers.', min: 1 },
  'group.initial.rebalance.delay.ms': { kind: 'int', default: '3000', doc: 'How long a new group waits for more members before its first rebalance completes.' },
  'group.min.session.timeout.ms': { kind: 'int', default: '6000', doc: 'Smallest session timeout a JoinGroup may ask for.' },
  'group.max.session.timeout.ms': { kind: 'int', default: '1800000', doc: 'Largest session timeout a JoinGroup may ask for.' },
  'group.max.size': { kind: 'int', default: '2147483647', doc: 'Most members one classic group takes; more get GROUP_MAX_SIZE_REACHED.', min: 1 },
  'group.consumer.session.timeout.ms': { kind: 'int', default: '45000', doc: 'A member of a consumer-protocol group (KIP-848) not heard from this long is removed from it.', min: 1 },
  'group.consumer.heartbeat.interval.ms': { kind: 'int', default: '5000', doc: 'How often members of a consumer-protocol group are told to heartbeat.', min: 1 },
  'group.consumer.max.size': { kind: 'int', default: '2147483647', doc: 'Most members one consumer-protocol group takes; more get GROUP_MAX_SIZE_REACHED.', min: 1 },
  'group.consumer.assignors': { kind: 'list', default: 'uniform,range', doc: 'Server-side assignors of consumer-protocol groups (uniform, range); the first is the default.' },
  'group.consumer.assignment.interval.ms': { kind: 'int', default: '1000', doc: 'Least time between two target assignments of a consumer-protocol group; 0 assigns at every change.', min: 0 },
  'group.consumer.migration.policy': { kind: 'string', default: 'bidirectional', doc: 'Which online conversions of a group with members between the classic and the consumer protocol are allowed: disabled, upgrade (classic to consumer), downgrade (consumer to classic) or bidirectional (case-insensitive).' },
  'group.consumer.min.session.timeout.ms': { kind: 'int', default: '45000', doc: 'Smallest consumer.session.timeout.ms a group may set for itself.', min: 1 },
  'group.consumer.max.session.timeout.ms': { kind: 'int', default: '60000', doc: 'Largest consumer.session.timeout.ms a group may set for itself.', min: 1 },
  'group.consumer.min.heartbeat.interval.ms': { kind: 'int', default: '5000', doc: 'Smallest consumer.heartbeat.interval.ms a group may set for itself.', min: 1 },
  'group.consumer.max.heartbeat.interval.ms': { kind: 'int', default: '15000', doc: 'Largest consumer.heartbeat.interval.ms a group may set for itself.', min: 1 },
  'group.consumer.min.assignment.interval.ms': { kind: 'int', default: '0', doc: 'Smallest consumer.assignment.interval.ms a group may set for itself.', min: 0 },
  'group.consumer.max.assignment.interval.ms': { kind: 'int', default: '15000', doc: 'Largest consumer.assignment.interval.ms a group may set for itself.', min: 0 },
  'group.share.session.timeout.ms': { kind: 'int', default: '45000', doc: 'A member of a share group (KIP-932) not heard from this long is removed from it; a group may set its own share.session.timeout.ms.', min: 1 },
  'group.share.min.session.timeout.ms': { kind: 'int', default: '45000', doc: 'Smallest share.session.timeout.ms a group may set for itself.', min: 1 },
  'group.share.max.session.timeout.ms': { kind: 'int', default: '60000', doc: 'Largest share.session.timeout.ms a group may set for itself.', min: 1 },
  'group.share.heartbeat.interval.ms': { kind: 'int', default: '5000', doc: 'How often members of a share group are told to heartbeat; a group may set its own share.heartbeat.interval.ms.', min: 1 },
  'group.share.min.heartbeat.interval.ms': { kind: 'int', default: '5000', doc: 'Smallest share.heartbeat.interval.ms a group may set for itself.', min: 1 },
  'group.share.max.heartbeat.interval.ms': { kind: 'int', default: '15000', doc: 'Largest share.heartbeat.interval.ms a group may set for itself.', min: 1 },
  'group.share.max.size': { kind: 'int', default: '200', doc: 'Most members one share group takes; more get GROUP_MAX_SIZE_REACHED.', min: 1, max: 1000 },
  'group.share.assignment.interval.ms': { kind: 'int', default: '1000', doc: 'Least time between two target assignments of a share group; a group may set its own share.assignment.interval.ms.', min: 0 },
  'group.share.min.assignment.interval.ms': { kind: 'int', default: '0', doc: 'Smallest share.assignment.interval.ms a group may set for itself.', min: 0 },
  'group.share.max.assignment.interval.ms': { kind: 'int', default: '15000', doc: 'Largest share.assignment.interval.ms a group may set for itself.', min: 0 },
  'group.share.record.lock.duration.ms': { kind: 'int', default: '30000', doc: 'How long a record delivered to a share group member stays locked to it before it may be delivered again; a group may set its own share.record.lock.duration.ms.', min: 1000, max: 3600000 },
  'group.share.min.record.lock.duration.ms': { kind: 'int', default: '15000', doc: 'Smallest share.record.lock.duration.ms a group may set for itself.', min: 1000, max: 30000 },
  'group.share.max.record.lock.duration.ms': { kind: 'int', default: '60000', doc: 'Largest share.record.lock.duration.ms a group may set for itself.', min: 30000, max: 3600000 },
  'group.share.delivery.count.limit': { kind: 'int', default: '5', doc: 'Deliveries of one record to a share group before it is archived as undeliverable; a group may set its own share.delivery.count.limit.', min: 2, max: 10 },
  'group.share.min.delivery.count.limit': { kind: 'int', default: '2', doc: 'Smallest share.delivery.count.limit a group may set for itself.', min: 2, max: 5 },
  'group.share.max.delivery.count.limit': { kind: 'int', default: '10', doc: 'Largest share.delivery.count.limit a group may set for itself.', min: 5, max: 25 },
  'group.share.partition.max.record.locks': { kind: 'int', default: '2000', doc: 'Most records of one partition locked to the members of a share group at once; a group may set its own share.partition.max.record.locks.', min: 100, max: 10000 },
  'group.share.min.partition.max.record.locks': { kind: 'int', default: '100', doc: 'Smallest share.partition.max.record.locks a group may set for itself.', min: 100, max: 2000 },
  'group.share.max.partition.max.record.locks': { kind: 'int', default: '4000', doc: 'Largest share.partition.max.record.locks a group may set for itself.', min: 2000, max: 10000 },
  'group.streams.session.timeout.ms': { kind: 'int', default: '45000', doc: 'A member of a streams group (KIP-1071) not heard from this long is removed from it; a group may set its own streams.session.timeout.ms.', min: 1 },
  'group.streams.min.session.timeout.ms': { kind: 'int', default: '45000', doc: 'Smallest streams.session.timeout.ms a group may set for itself.', min: 1 },
  'group.streams.max.session.timeout.ms': { kind: 'int', default: '60000', doc: 'Largest streams.session.timeout.ms a group may set for itself.', min: 1 },
  'group.streams.heartbeat.interval.ms': { kind: 'int', default: '5000', doc: 'How often members of a streams group are told to heartbeat; a group may set its own streams.heartbeat.interval.ms.', min: 1 },
  'group.streams.min.heartbeat.interval.ms': { kind: 'int', default: '5000', doc: 'Smallest streams.heartbeat.interval.ms a group may set for itself.', min: 1 },
  'group.streams.max.heartbeat.interval.ms': { kind: 'int', default: '15000', doc: 'Largest streams.heartbeat.interval.ms a group may set for itself.', min: 1 },
  'group.streams.max.size': { kind: 'int', default: '2147483647', doc: 'Most members one streams group takes; more get GROUP_MAX_SIZE_REACHED.', min: 1 },
  'group.streams.num.standby.replicas': { kind: 'int', default: '0', doc: 'Standby copies of each stateful task of a streams group; a group may set its own streams.num.standby.replicas.', min: 0 },
  'group.streams.max.standby.replicas': { kind: 'int', default: '2', doc: 'Largest streams.num.standby.replicas a group may set for itself.', min: 0 },
  'group.streams.initial.rebalance.delay.ms': { kind: 'int', default: '3000', doc: 'How long a new streams group waits for more members before its first assignment; a group may set its own streams.initial.rebalance.delay.ms.', min: 0 },
  'group.streams.assignment.interval.ms': { kind: 'int', default: '1000', doc: 'Least time between two target assignments of a streams group; a group may set its own streams.assignment.interval.ms.', min: 0 },
  'group.streams.min.assignment.interval.ms': { kind: 'int', default: '0', doc: 'Smallest streams.assignment.interval.ms a group may set for itself.', min: 0 },
  'group.streams.max.assignment.interval.ms': { kind: 'int', default: '15000', doc: 'Largest streams.assignment.interval.ms a group may set for itself.', min: 0 },
  'group.streams.assignors': { kind: 'list', default: 'sticky', doc: 'Task assignors of streams groups (sticky); the first is the one a group uses unless it sets streams.assignor.name.' },
  'group.streams.rack.aware.assignment.tags': { kind: 'list', default: '', doc: 'Client tag keys over which the standby tasks of streams groups are spread; a group may set its own streams.rack.aware.assignment.tags.' },
  'share.coordinator.state.topic.num.partitions': { kind: 'int', default: '50', doc: 'Partitions of __share_group_state, made when a share coordinator is first looked for.', min: 1 },
  'share.coordinator.state.topic.replication.factor': { kind: 'int', default: '3', doc: 'Replication factor of __share_group_state, capped by the brokers alive when it is made.', min: 1, max: 32767 },
  'share.coordinator.state.topic.min.isr': { kind: 'int', default: '2', doc: 'min.insync.replicas of __share_group_state.', min: 1, max: 32767 },
  'share.coordinator.state.topic.segment.bytes': { kind: 'int', default: '104857600', doc: 'segment.bytes of __share_group_state.', min: 1 },
  'offsets.retention.minutes': { kind: 'int', default: '10080', doc: 'Committed offsets of a group expire this long after it became empty (or after the commit, for groups that only commit).', min: 1 },
  'offsets.retention.check.interval.ms': { kind: 'long', default: '600000', doc: 'How often expired offsets are looked for.', min: 1 },
  'offset.metadata.max.bytes': { kind: 'int', default: '4096', doc: 'Longest metadata an offset commit may carry.' },
  'offsets.commit.timeout.ms': { kind: 'int', default: '5000', doc: 'How long an offset commit waits for every in-sync replica of its __consumer_offsets partition before it is answered COORDINATOR_NOT_AVAILABLE.', min: 1 },
} as const satisfies Record<string, Def>;

export type ConfigKey = keyof typeof CONFIG_DEFS;

export class ConfigError extends Error {}

export interface ListenerSpec {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

/** The typed configuration the rest of the broker reads. */
export interface BrokerConfig {
  /** Every key the operator set (file, environment, flags), by Kafka name. */
  readonly raw: ReadonlyMap<string, string>;
  /** Keys set that are Kafka's but do not apply to gregor (KRaft quorum, JVM, ZooKeeper, ...), in the order given. */
  readonly notApplying: readonly string[];
  /** The listeners gregor serves: every one of `listeners` but the controller listeners (controller.listener.names). */
  readonly listeners: readonly ListenerSpec[];
  /** The listener brokers of a cluster use to reach each other: inter.broker.listener.name, else the first listener. */
  readonly interBrokerListener: string;
  readonly advertisedListeners: readonly ListenerSpec[] | null;
  /** The first of logDirs: the broker's own files (meta.properties, the local metadata store) live there. */
  readonly dataDir: string;
  /** log.dirs (or log.dir), in order. */
  readonly logDirs: readonly string[];
  readonly nodeId: number;
  readonly rack: string | null;
  readonly metadata: MetadataStoreSpec;
  readonly brokerSessionTimeoutMs: number;
  readonly replicaLagTimeMaxMs: number;
  readonly numPartitions: number;
  readonly defaultReplicationFactor: number;
  readonly autoCreateTopicsEnable: boolean;
  readonly socketRequestMaxBytes: number;
  readonly maxConnections: number;
  readonly connectionsMaxIdleMs: number;
  readonly queuedMaxRequests: number;
  readonly shutdownTimeoutMs: number;
  readonly controlledShutdownEnable: boolean;
  readonly autoLeaderRebalanceEnable: boolean;
  readonly leaderImbalanceCheckIntervalSeconds: number;
  readonly fetchMaxBytes: number;
  readonly maxIncrementalFetchSessionCacheSlots: number;
  readonly maxRequestPartitionSizeLimit: number;
  readonly offsetsTopicNumPartitions: number;
  readonly offsetsTopicReplicationFactor: number;
  readonly offsetsTopicSegmentBytes: number;
  readonly transactionStateLogNumPartitions: number;
  readonly transactionStateLogReplicationFactor: number;
  readonly transactionStateLogMinIsr: number;
  readonly transactionStateLogSegmentBytes: number;
  readonly transactionMaxTimeoutMs: number;
  readonly transactionalIdExpirationMs: number;
  readonly transactionAbortTimedOutTransactionCleanupIntervalMs: number;
  readonly transactionRemoveExpiredTransactionCleanupIntervalMs: number;
  readonly producerIdExpirationMs: number;
  readonly producerIdExpirationCheckIntervalMs: number;
  readonly groupInitialRebalanceDelayMs: number;
  readonly groupMinSessionTimeoutMs: number;
  readonly groupMaxSessionTimeoutMs: number;
  readonly groupMaxSize: number;
  readonly groupConsumerSessionTimeoutMs: number;
  readonly groupConsumerHeartbeatIntervalMs: number;
  readonly groupConsumerMaxSize: number;
  readonly groupConsumerAssignors: readonly ('uniform' | 'range')[];
  readonly groupConsumerAssignmentIntervalMs: number;
  readonly groupConsumerMigrationPolicy: 'disabled' | 'upgrade' | 'downgrade' | 'bidirectional';
  readonly groupShareSessionTimeoutMs: number;
  readonly groupShareHeartbeatIntervalMs: number;
  readonly groupShareMaxSize: number;
  readonly groupShareAssignmentIntervalMs: number;
  readonly shareCoordinatorStateTopicNumPartitions: number;
  readonly shareCoordinatorStateTopicReplicationFactor: number;
  readonly shareCoordinatorStateTopicMinIsr: number;
  readonly shareCoordinatorStateTopicSegmentBytes: number;
  readonly groupStreamsSessionTimeoutMs: number;
  readonly groupStreamsHeartbeatIntervalMs: number;
  readonly groupStreamsNumStandbyReplicas: number;
  readonly groupStreamsInitialRebalanceDelayMs: number;
  readonly offsetsRetentionMinutes: number;
  readonly offsetsRetentionCheckIntervalMs: number;
  readonly offsetMetadataMaxBytes: number;
  readonly offsetsCommitTimeoutMs: number;
}

/** metadata.store: the local file store, or etcd at these HOST:PORT endpoints under `root`. */
export type MetadataStoreSpec = { readonly kind: 'local' } | { readonly kind: 'etcd'; readonly endpoints: readonly string[]; readonly root: string };

export type ConfigSource = { origin: string; values: Iterable<[string, string]> };

/** Reads a server.properties-style file. */
export function fileSource(path: string): ConfigSource {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  return { origin: path, values: parseProperties(text) };
}

/**
 * GREGOR_LOG_DIRS=... sets log.dirs: after the prefix, '_' stands for '.', '__'
 * for '_' and '___' for '-' (the convention of Kafka's container images).
 */
export function envSource(env: NodeJS.ProcessEnv, prefix = 'GREGOR_'): ConfigSource {
  const values: [string, string][] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(prefix) || value === undefined) continue;
    const key = name
      .slice(prefix.length)
      .toLowerCase()
      .replace(/___/g, '\u0001')
      .replace(/__/g, '\u0002')
      .replace(/_/g, '.')
      .replace(/\u0001/g, '-')
      .replace(/\u0002/g, '_');
    values.push([key, value]);
  }
  return { origin: 'environment', values };
}

export function parseListener(spec: string, what: string): ListenerSpec {
  const trimmed = spec.trim();
  const m = /^(?:([A-Za-z_][A-Za-z0-9_]*):\/\/)?(\[[^\]]*\]|[^:]*):(\d+)$/.exec(trimmed);
  if (!m) throw new ConfigError(`${what}: "${trimmed}" is not NAME://HOST:PORT or HOST:PORT`);
  const port = Number(m[3]);
  if (port > 65535) throw new ConfigError(`${what}: port ${port} is out of range`);
  let host = m[2]!;
  if (host.startsWith('[')) host = host.slice(1, -1);
  return { name: (m[1] ?? 'PLAINTEXT').toUpperCase(), host, port };
}

function checkValue(key: ConfigKey, value: string, origin: string): void {
  const def: Def = CONFIG_DEFS[key];
  const where = `${key}=${value} (from ${origin})`;
  switch (def.kind) {
    case 'int':
    case 'long': {
      if (!/^-?\d+$/.test(value.trim())) throw new ConfigError(`${where}: expected a whole number`);
      const n = Number(value);
      if (def.kind === 'int' && (n > 2147483647 || n < -2147483648)) throw new ConfigError(`${where}: out of int range`);
      if (def.min !== undefined && n < def.min) throw new ConfigError(`${where}: must be at least ${def.min}`);
      if (def.max !== undefined && n > def.max) throw new ConfigError(`${where}: must be at most ${def.max}`);
      break;
    }
    case 'bool':
      if (!/^(true|false)$/i.test(value.trim())) throw new ConfigError(`${where}: expected true or false`);
      break;
    default:
      break;
  }
}

/**
 * Keys of Kafka's that its 4.x broker no longer defines but that server.properties files
 * written for ZooKeeper-era Kafka still carry; taken and listed as not applying, as are all
 * zookeeper.* keys.
 */
const LEGACY_KAFKA_KEYS: ReadonlySet<string> = new Set([
  'broker.id.generation.enable', 'reserved.broker.max.id', 'inter.broker.protocol.version', 'log.message.format.version',
  'log.message.downconversion.enable', 'control.plane.listener.name', 'host.name', 'port', 'advertised.host.name', 'advertised.port',
  'offsets.commit.required.acks', 'offsets.topic.compression.codec', 'metadata.migration.enable',
]);

/** Keys Kafka's StandardAuthorizer reads from the broker config (not in the broker's own definitions). */
const AUTHORIZER_KEYS: ReadonlySet<string> = new Set(['super.users', 'allow.everyone.if.no.acl.found']);

/** Kafka keys gregor reads besides its own (CONFIG_DEFS) and the topic-config defaults (LISTED_BROKER_CONFIGS). */
const LISTENER_KEYS: ReadonlySet<string> = new Set(['listener.security.protocol.map', 'controller.listener.names', 'inter.broker.listener.name', 'security.inter.broker.protocol']);

/** Kafka's default listener.security.protocol.map: each security protocol's name maps to itself. */
const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'];

/** Levenshtein distance of a and b. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The known key nearest to `key`, or null when none is near (more than a third of its
 * letters different). Example: nearestKey('log.retention.hour') -> 'log.retention.hours'.
 */
export function nearestKey(key: string): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of [...Object.keys(CONFIG_DEFS), ...KAFKA_LIST_ORDER.keys(), ...AUTHORIZER_KEYS]) {
    const d = editDistance(key, name);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : null;
}

/**
 * How gregor takes a key it is given: 'gregor' (its own keys, with its own checks), 'kafka'
 * (a Kafka broker key, checked against Kafka's type and validator), 'other' (a Kafka key
 * without definitions gregor can check: listener-prefixed, authorizer and ZooKeeper-era
 * keys), or undefined for a key nobody knows.
 */
function keyKind(key: string): 'gregor' | 'kafka' | 'other' | undefined {
  if (key in CONFIG_DEFS) return 'gregor';
  if (kafkaBrokerConfig(key) !== undefined) return 'kafka';
  if (key.startsWith('listener.name.') || key.startsWith('zookeeper.') || AUTHORIZER_KEYS.has(key) || LEGACY_KAFKA_KEYS.has(key)) return 'other';
  return undefined;
}

/** Whether gregor acts on a key it takes; the others are listed once at start as not applying. */
function applies(key: string): boolean {
  return key in CONFIG_DEFS || LISTED_BROKER_CONFIGS.includes(key) || LISTENER_KEYS.has(key);
}

/** listener.security.protocol.map, e.g. 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT' -> Map { CONTROLLER => PLAINTEXT, PLAINTEXT => PLAINTEXT }. */
function protocolMap(value: string | null): Map<string, string> {
  if (value === null) return new Map(SECURITY_PROTOCOLS.map((p) => [p, p]));
  const map = new Map<string, string>();
  for (const entry of value.split(',').map((e) => e.trim()).filter((e) => e !== '')) {
    const m = /^([^:]+):([^:]+)$/.exec(entry);
    if (!m) throw new ConfigError(`listener.security.protocol.map: "${entry}" is not LISTENER_NAME:SECURITY_PROTOCOL`);
    const protocol = m[2]!.trim().toUpperCase();
    if (!SECURITY_PROTOCOLS.includes(protocol)) throw new ConfigError(`listener.security.protocol.map: ${protocol} is not a security protocol (${SECURITY_PROTOCOLS.join(', ')})`);
    map.set(m[1]!.trim().toUpperCase(), protocol);
  }
  return map;
}

/** Merges the sources in order and validates every key and value. */
export function resolveConfig(sources: readonly ConfigSource[]): BrokerConfig {
  const raw = new Map<string, string>();
  for (const src of sources) {
    for (const [key, value] of src.values) {
      const kind = keyKind(key);
      if (kind === undefined) {
        const near = nearestKey(key);
        throw new ConfigError(`unknown config key "${key}" (from ${src.origin})${near ? `; did you mean "${near}"?` : ''} See the configuration table in README.md`);
      }
      if (kind === 'gregor') checkValue(key as ConfigKey, value, src.origin);
      else if (kind === 'kafka') {
        const def = kafkaBrokerConfig(key)!;
        const problem = checkConfigValue(key, def.type, value.trim(), def.check);
        if (problem !== null) throw new ConfigError(`${problem} (from ${src.origin})`);
      }
      // The last source to set a key decides, and the key stays where it was first given.
      raw.set(key, value.trim());
    }
  }
  const get = (k: ConfigKey): string | null => raw.get(k) ?? CONFIG_DEFS[k].default;
  const int = (k: ConfigKey): number => Number(get(k));
  const bool = (k: ConfigKey): boolean => get(k)!.toLowerCase() === 'true';
  const notApplying = [...raw.keys()].filter((k) => !applies(k));

  const protocols = protocolMap(raw.get('listener.security.protocol.map') ?? null);
  const controllerNames = new Set((raw.get('controller.listener.names') ?? '').split(',').map((n) => n.trim().toUpperCase()).filter((n) => n !== ''));
  const allListeners = get('listeners')!.split(',').filter((s) => s.trim() !== '').map((s) => parseListener(s, 'listeners'));
  const names = new Set<string>();
  for (const l of allListeners) {
    if (names.has(l.name)) throw new ConfigError(`listeners: listener name ${l.name} appears twice`);
    names.add(l.name);
  }
  const listeners = allListeners.filter((l) => !controllerNames.has(l.name));
  if (listeners.length === 0) throw new ConfigError('listeners: at least one listener that is not a controller listener (controller.listener.names) is needed');
  for (const l of listeners) {
    const protocol = protocols.get(l.name);
    if (protocol === undefined) {
      throw new ConfigError(`listeners: listener ${l.name} has no security protocol; map it in listener.security.protocol.map, e.g. ${l.name}:PLAINTEXT`);
    }
    if (protocol !== 'PLAINTEXT') {
      throw new ConfigError(`listeners: listener ${l.name} asks for ${protocol}, which gregor does not serve; it would serve plaintext where clients expect ${protocol}. Use a PLAINTEXT listener`);
    }
  }
  const adv = get('advertised.listeners');
  const advertisedListeners =
    adv === null ? null : adv.split(',').filter((s) => s.trim() !== '').map((s) => parseListener(s, 'advertised.listeners')).filter((a) => !controllerNames.has(a.name));
  for (const a of advertisedListeners ?? []) {
    if (!names.has(a.name)) throw new ConfigError(`advertised.listeners: ${a.name} is not one of the listeners (${[...names].join(', ')})`);
    if (a.host === '' || a.host === '0.0.0.0' || a.host === '::') throw new ConfigError(`advertised.listeners: ${a.name} needs a host clients can reach, not "${a.host}"`);
  }
  let interBrokerListener = listeners[0]!.name;
  const interName = raw.get('inter.broker.listener.name')?.toUpperCase();
  if (interName !== undefined) {
    if (raw.has('security.inter.broker.protocol')) throw new ConfigError('inter.broker.listener.name and security.inter.broker.protocol are both set; set only inter.broker.listener.name');
    if (!listeners.some((l) => l.name === interName)) throw new ConfigError(`inter.broker.listener.name: ${interName} is not one of the listeners (${listeners.map((l) => l.name).join(', ')})`);
    interBrokerListener = interName;
  } else if (raw.has('security.inter.broker.protocol')) {
    const wanted = raw.get('security.inter.broker.protocol')!.toUpperCase();
    const found = listeners.find((l) => protocols.get(l.name) === wanted);
    if (found === undefined) throw new ConfigError(`security.inter.broker.protocol: no listener uses ${wanted}`);
    interBrokerListener = found.name;
  }
  const dirs = get('log.dirs');
  const logDirs = dirs !== null ? dirs.split(',').map((d) => d.trim()).filter((d) => d !== '') : [get('log.dir')!];
  if (logDirs.length === 0) throw new ConfigError('log.dirs: no directory given; e.g. log.dirs=/var/lib/gregor/d1,/var/lib/gregor/d2');
  const resolvedDirs = logDirs.map((d) => resolvePath(d));
  const twice = resolvedDirs.find((d, i) => resolvedDirs.indexOf(d) !== i);
  if (twice !== undefined) throw new ConfigError(`log.dirs: ${twice} is listed twice; list each directory once`);
  const nested = resolvedDirs.find((d) => resolvedDirs.some((o) => o !== d && d.startsWith(o.endsWith(sep) ? o : o + sep)));
  if (nested !== undefined) throw new ConfigError(`log.dirs: ${nested} is inside another of the log directories; give directories that do not contain each other`);
  const dataDir = logDirs[0]!;
  if (raw.has('node.id') && raw.has('broker.id') && int('node.id') !== int('broker.id')) {
    throw new ConfigError(`node.id=${raw.get('node.id')} and broker.id=${raw.get('broker.id')} differ; set only node.id`);
  }
  const nodeId = raw.has('node.id') || !raw.has('broker.id') ? int('node.id') : int('broker.id');
  checkGroupBounds(int);
  return {
    raw,
    notApplying,
    listeners,
    interBrokerListener,
    advertisedListeners,
    dataDir,
    logDirs,
    nodeId,
    rack: get('broker.rack'),
    metadata: parseMetadataStore(get('metadata.store')!, get('metadata.etcd.root')!),
    brokerSessionTimeoutMs: int('broker.session.timeout.ms'),
    replicaLagTimeMaxMs: int('replica.lag.time.max.ms'),
    numPartitions: int('num.partitions'),
    defaultReplicationFactor: int('default.replication.factor'),
    autoCreateTopicsEnable: bool('auto.create.topics.enable'),
    socketRequestMaxBytes: int('socket.request.max.bytes'),
    maxConnections: int('max.connections'),
    connectionsMaxIdleMs: int('connections.max.idle.ms'),
    queuedMaxRequests: int('queued.max.requests'),
    shutdownTimeoutMs: int('shutdown.timeout.ms'),
    controlledShutdownEnable: bool('controlled.shutdown.enable'),
    autoLeaderRebalanceEnable: bool('auto.leader.rebalance.enable'),
    leaderImbalanceCheckIntervalSeconds: int('leader.imbalance.check.interval.seconds'),
    fetchMaxBytes: int('fetch.max.bytes'),
    maxIncrementalFetchSessionCacheSlots: int('max.incremental.fetch.session.cache.slots'),
    maxRequestPartitionSizeLimit: int('max.request.partition.size.limit'),
    offsetsTopicNumPartitions: int('offsets.topic.num.partitions'),
    offsetsTopicReplicationFactor: int('offsets.topic.replication.factor'),
    offsetsTopicSegmentBytes: int('offsets.topic.segment.bytes'),
    transactionStateLogNumPartitions: int('transaction.state.log.num.partitions'),
    transactionStateLogReplicationFactor: int('transaction.state.log.replication.factor'),
    transactionStateLogMinIsr: int('transaction.state.log.min.isr'),
    transactionStateLogSegmentBytes: int('transaction.state.log.segment.bytes'),
    transactionMaxTimeoutMs: int('transaction.max.timeout.ms'),
    transactionalIdExpirationMs: int('transactional.id.expiration.ms'),
    transactionAbortTimedOutTransactionCleanupIntervalMs: int('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
    transactionRemoveExpiredTransactionCleanupIntervalMs: int('transaction.remove.expired.transaction.cleanup.interval.ms'),
    producerIdExpirationMs: int('producer.id.expiration.ms'),
    producerIdExpirationCheckIntervalMs: int('producer.id.expiration.check.interval.ms'),
    groupInitialRebalanceDelayMs: int('group.initial.rebalance.delay.ms'),
    groupMinSessionTimeoutMs: int('group.min.session.timeout.ms'),
    groupMaxSessionTimeoutMs: int('group.max.session.timeout.ms'),
    groupMaxSize: int('group.max.size'),
    groupConsumerSessionTimeoutMs: int('group.consumer.session.timeout.ms'),
    groupConsumerHeartbeatIntervalMs: int('group.consumer.heartbeat.interval.ms'),
    groupConsumerMaxSize: int('group.consumer.max.size'),
    groupConsumerAssignors: assignorList(get('group.consumer.assignors')!),
    groupConsumerAssignmentIntervalMs: int('group.consumer.assignment.interval.ms'),
    groupConsumerMigrationPolicy: migrationPolicy(get('group.consumer.migration.policy')!),
    groupShareSessionTimeoutMs: int('group.share.session.timeout.ms'),
    groupShareHeartbeatIntervalMs: int('group.share.heartbeat.interval.ms'),
    groupShareMaxSize: int('group.share.max.size'),
    groupShareAssignmentIntervalMs: int('group.share.assignment.interval.ms'),
    shareCoordinatorStateTopicNumPartitions: int('share.coordinator.state.topic.num.partitions'),
    shareCoordinatorStateTopicReplicationFactor: int('share.coordinator.state.topic.replication.factor'),
    shareCoordinatorStateTopicMinIsr: int('share.coordinator.state.topic.min.isr'),
    shareCoordinatorStateTopicSegmentBytes: int('share.coordinator.state.topic.segment.bytes'),
    groupStreamsSessionTimeoutMs: int('group.streams.session.timeout.ms'),
    groupStreamsHeartbeatIntervalMs: int('group.streams.heartbeat.interval.ms'),
    groupStreamsNumStandbyReplicas: int('group.streams.num.standby.replicas'),
    groupStreamsInitialRebalanceDelayMs: int('group.streams.initial.rebalance.delay.ms'),
    offsetsRetentionMinutes: int('offsets.retention.minutes'),
    offsetsRetentionCheckIntervalMs: int('offsets.retention.check.interval.ms'),
    offsetMetadataMaxBytes: int('offset.metadata.max.bytes'),
    offsetsCommitTimeoutMs: int('offsets.commit.timeout.ms'),
  };
}

/**
 * The broker's group settings that bound the ones groups may set for
 * themselves (group configs) must fit together, as Kafka checks them at
 * start: each default within its min and max, and each heartbeat interval
 * below its session timeout.
 */
function checkGroupBounds(int: (k: ConfigKey) => number): void {
  const triples: [string, string][] = [
    ['group.consumer', 'heartbeat.interval.ms'],
    ['group.consumer', 'session.timeout.ms'],
    ['group.consumer', 'assignment.interval.ms'],
    ['group.share', 'heartbeat.interval.ms'],
    ['group.share', 'session.timeout.ms'],
    ['group.share', 'assignment.interval.ms'],
    ['group.share', 'record.lock.duration.ms'],
    ['group.share', 'delivery.count.limit'],
    ['group.share', 'partition.max.record.locks'],
    ['group.streams', 'heartbeat.interval.ms'],
    ['group.streams', 'session.timeout.ms'],
    ['group.streams', 'assignment.interval.ms'],
  ];
  for (const [prefix, what] of triples) {
    const key = `${prefix}.${what}` as ConfigKey;
    const min = `${prefix}.min.${what}` as ConfigKey;
    const max = `${prefix}.max.${what}` as ConfigKey;
    if (int(max) < int(min)) throw new ConfigError(`${max} must be greater than or equal to ${min}`);
    if (int(key) < int(min)) throw new ConfigError(`${key} must be greater than or equal to ${min}`);
    if (int(key) > int(max)) throw new ConfigError(`${key} must be less than or equal to ${max}`);
  }
  for (const prefix of ['group.consumer', 'group.share', 'group.streams']) {
    const heartbeat = `${prefix}.heartbeat.interval.ms` as ConfigKey;
    const session = `${prefix}.session.timeout.ms` as ConfigKey;
    if (int(heartbeat) >= int(session)) throw new ConfigError(`${heartbeat} must be less than ${session}`);
  }
  if (int('group.streams.num.standby.replicas') > int('group.streams.max.standby.replicas')) {
    throw new ConfigError('group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas');
  }
}

/**
 * metadata.store and metadata.etcd.root. Example: ('etcd://10.0.0.1:2379,10.0.0.2:2379', '/gregor/') ->
 * { kind: 'etcd', endpoints: ['10.0.0.1:2379', '10.0.0.2:2379'], root: '/gregor/' }.
 */
export function parseMetadataStore(value: string, root: string): MetadataStoreSpec {
  if (value === 'local') return { kind: 'local' };
  const m = /^etcd:\/\/(.+)$/.exec(value);
  if (!m) throw new ConfigError(`metadata.store: "${value}" is neither local nor etcd://HOST:PORT[,HOST:PORT...]`);
  const endpoints = m[1]!.split(',').map((e) => e.trim());
  for (const e of endpoints) {
    if (!/^(\[[^\]]+\]|[^:/\s]+):\d+$/.test(e)) throw new ConfigError(`metadata.store: "${e}" is not HOST:PORT`);
  }
  if (!root.startsWith('/') || !root.endsWith('/')) throw new ConfigError(`metadata.etcd.root: "${root}" must start and end with "/"`);
  return { kind: 'etcd', endpoints, root };
}

/** group.consumer.migration.policy: one of Kafka's four values, in any case. */
function migrationPolicy(value: string): 'disabled' | 'upgrade' | 'downgrade' | 'bidirectional' {
  const v = value.trim().toLowerCase();
  if (v === 'disabled' || v === 'upgrade' || v === 'downgrade' || v === 'bidirectional') return v;
  throw new ConfigError(`group.consumer.migration.policy: "${value}" is not one of disabled, upgrade, downgrade, bidirectional`);
}

/** group.consumer.assignors: names of the server-side assignors gregor has, at least one. */
function assignorList(value: string): ('uniform' | 'range')[] {
  const names = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const bad = names.filter((n) => n !== 'uniform' && n !== 'range');
  if (names.length === 0 || bad.length > 0) {
    throw new ConfigError(`group.consumer.assignors: ${bad.length > 0 ? `unknown assignor ${bad.join(', ')}` : 'no assignor'}; use uniform and/or range, e.g. group.consumer.assignors=uniform,range`);
  }
  return names as ('uniform' | 'range')[];
}

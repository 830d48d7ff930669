/**
 * The registry of gregor's broker config keys: each declared once, with one
 * line of documentation (README's configuration table is generated from
 * it). A key Kafka's broker also defines takes its type, default and value
 * check from Kafka's facts (kafka-broker-configs.ts) unless the declaration
 * says otherwise (gregor's own default, or a narrower range); gregor's own
 * keys declare all of it. Code reads the values through a ConfigReader, by
 * Kafka name.
 */
import { kafkaBrokerConfig } from './broker-config-catalog.js';
import type { ConfigType, ValueCheck } from '../../storage/topic-config.js';

export type ConfigKind = 'int' | 'long' | 'bool' | 'string' | 'list';

interface Declaration {
  readonly doc: string;
  readonly kind?: ConfigKind;
  /** gregor's default where it differs from Kafka's; null for none. */
  readonly default?: string | null;
  readonly min?: number;
  readonly max?: number;
}

export const CONFIG_DEFS = {
  'listeners': { default: 'PLAINTEXT://127.0.0.1:9092', doc: 'Addresses to listen on, NAME://HOST:PORT, comma-separated. Port 0 picks a free port.' },
  'advertised.listeners': { doc: 'Addresses given to clients in Metadata, per listener name. Defaults to the bound listeners.' },
  'log.dirs': { doc: 'Log directories, comma-separated (JBOD): new partitions go to the one holding the fewest; the first also keeps the broker\'s own files. Overrides log.dir.' },
  'log.dir': { kind: 'string', default: './data', doc: 'Data directory when log.dirs is not set.' },
  'node.id': { default: '1', doc: 'This broker\'s id.' },
  'broker.id': { default: null, min: 0, doc: 'Older name of node.id; used when node.id is not set.' },
  'broker.rack': { doc: 'Rack of this broker, reported in Metadata; in a cluster, new partitions spread their replicas over the racks.' },
  'metadata.store': { kind: 'string', default: 'local', doc: 'Where cluster metadata lives: local (this broker alone, in its data directory) or etcd://HOST:PORT[,HOST:PORT...] (a cluster of brokers sharing that etcd).' },
  'metadata.etcd.root': { kind: 'string', default: '/gregor/', doc: 'The etcd key prefix of this cluster\'s metadata; clusters sharing one etcd each need their own.' },
  'replica.lag.time.max.ms': { min: 1, max: 2147483647, doc: 'A follower that has not caught up with its leader for this long leaves the ISR; one that catches up joins it again.' },
  'broker.session.timeout.ms': { min: 1000, doc: 'With etcd: a broker that stops renewing its registration for this long (whole seconds) counts as gone, and its partitions get new leaders.' },
  'num.partitions': { doc: 'Partitions of an auto-created topic.' },
  'default.replication.factor': { min: 1, doc: 'Replication factor of an auto-created topic.' },
  'auto.create.topics.enable': { doc: 'Create a topic when a client asks for an unknown one and allows it.' },
  'socket.request.max.bytes': { doc: 'Largest request frame accepted; a larger one closes the connection.' },
  'max.connections': { doc: 'Open client connections allowed; more are closed at once.' },
  'connections.max.idle.ms': { min: 1, max: 2147483647, doc: 'Idle connections are closed after this long.' },
  'queued.max.requests': { doc: 'Requests read ahead on one connection before reading pauses.' },
  'auto.leader.rebalance.enable': { doc: 'In a cluster, the controller gives partitions back to their preferred replica (the first) when it is in sync again.' },
  'leader.imbalance.check.interval.seconds': { doc: 'How often the controller looks for partitions whose preferred replica should lead again.' },
  'controlled.shutdown.enable': { doc: 'In a cluster, move partition leadership to the other in-sync replicas before a broker stops (within shutdown.timeout.ms).' },
  'shutdown.timeout.ms': { kind: 'long', default: '30000', min: 0, max: 2147483647, doc: 'Longest a graceful shutdown takes: the controlled shutdown, then the requests in flight.' },
  'fetch.max.bytes': { doc: 'Most record bytes one Fetch response returns, whatever the request asks (the first batch still goes out whole).' },
  'max.incremental.fetch.session.cache.slots': { doc: 'Incremental fetch sessions (KIP-227) the broker keeps.' },
  'max.request.partition.size.limit': { doc: 'Most partitions one DescribeTopicPartitions answer describes, whatever the request asks; the client pages through the rest.' },
  'offsets.topic.num.partitions': { doc: 'Partitions of __consumer_offsets, made when a group first needs a coordinator.' },
  'offsets.topic.replication.factor': { doc: 'Replication factor of __consumer_offsets, capped by the brokers alive when it is made.' },
  'offsets.topic.segment.bytes': { doc: 'segment.bytes of __consumer_offsets.' },
  'transaction.state.log.num.partitions': { doc: 'Partitions of __transaction_state, made when a transactional id first needs a coordinator.' },
  'transaction.state.log.replication.factor': { doc: 'Replication factor of __transaction_state, capped by the brokers alive when it is made.' },
  'transaction.state.log.min.isr': { doc: 'min.insync.replicas of __transaction_state.' },
  'transaction.state.log.segment.bytes': { doc: 'segment.bytes of __transaction_state.' },
  'transaction.max.timeout.ms': { doc: 'Largest transaction.timeout.ms a transactional producer may ask for; more is INVALID_TRANSACTION_TIMEOUT.' },
  'transactional.id.expiration.ms': { doc: 'A transactional id with no transaction for this long is forgotten.' },
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': { doc: 'How often transactions open longer than their timeout are looked for and aborted.' },
  'transaction.remove.expired.transaction.cleanup.interval.ms': { doc: 'How often expired transactional ids are looked for.' },
  'producer.id.expiration.ms': { doc: 'A partition forgets an idempotent producer that wrote nothing for this long and has no open transaction.' },
  'producer.id.expiration.check.interval.ms': { doc: 'How often partitions look for expired producers.' },
  'group.initial.rebalance.delay.ms': { doc: 'How long a new group waits for more members before its first rebalance completes.' },
  'group.min.session.timeout.ms': { doc: 'Smallest session timeout a JoinGroup may ask for.' },
  'group.max.session.timeout.ms': { doc: 'Largest session timeout a JoinGroup may ask for.' },
  'group.max.size': { doc: 'Most members one classic group takes; more get GROUP_MAX_SIZE_REACHED.' },
  'group.consumer.session.timeout.ms': { doc: 'A member of a consumer-protocol group (KIP-848) not heard from this long is removed from it.' },
  'group.consumer.heartbeat.interval.ms': { doc: 'How often members of a consumer-protocol group are told to heartbeat.' },
  'group.consumer.max.size': { doc: 'Most members one consumer-protocol group takes; more get GROUP_MAX_SIZE_REACHED.' },
  'group.consumer.assignors': { doc: 'Server-side assignors of consumer-protocol groups (uniform, range); the first is the default.' },
  'group.consumer.assignment.interval.ms': { doc: 'Least time between two target assignments of a consumer-protocol group; 0 assigns at every change.' },
  'group.consumer.migration.policy': { doc: 'Which online conversions of a group with members between the classic and the consumer protocol are allowed: disabled, upgrade (classic to consumer), downgrade (consumer to classic) or bidirectional (case-insensitive).' },
  'group.consumer.min.session.timeout.ms': { doc: 'Smallest consumer.session.timeout.ms a group may set for itself.' },
  'group.consumer.max.session.timeout.ms': { doc: 'Largest consumer.session.timeout.ms a group may set for itself.' },
  'group.consumer.min.heartbeat.interval.ms': { doc: 'Smallest consumer.heartbeat.interval.ms a group may set for itself.' },
  'group.consumer.max.heartbeat.interval.ms': { doc: 'Largest consumer.heartbeat.interval.ms a group may set for itself.' },
  'group.consumer.min.assignment.interval.ms': { doc: 'Smallest consumer.assignment.interval.ms a group may set for itself.' },
  'group.consumer.max.assignment.interval.ms': { doc: 'Largest consumer.assignment.interval.ms a group may set for itself.' },
  'group.share.session.timeout.ms': { doc: 'A member of a share group (KIP-932) not heard from this long is removed from it; a group may set its own share.session.timeout.ms.' },
  'group.share.min.session.timeout.ms': { doc: 'Smallest share.session.timeout.ms a group may set for itself.' },
  'group.share.max.session.timeout.ms': { doc: 'Largest share.session.timeout.ms a group may set for itself.' },
  'group.share.heartbeat.interval.ms': { doc: 'How often members of a share group are told to heartbeat; a group may set its own share.heartbeat.interval.ms.' },
  'group.share.min.heartbeat.interval.ms': { doc: 'Smallest share.heartbeat.interval.ms a group may set for itself.' },
  'group.share.max.heartbeat.interval.ms': { doc: 'Largest share.heartbeat.interval.ms a group may set for itself.' },
  'group.share.max.size': { doc: 'Most members one share group takes; more get GROUP_MAX_SIZE_REACHED.' },
  'group.share.assignment.interval.ms': { doc: 'Least time between two target assignments of a share group; a group may set its own share.assignment.interval.ms.' },
  'group.share.min.assignment.interval.ms': { doc: 'Smallest share.assignment.interval.ms a group may set for itself.' },
  'group.share.max.assignment.interval.ms': { doc: 'Largest share.assignment.interval.ms a group may set for itself.' },
  'group.share.record.lock.duration.ms': { doc: 'How long a record delivered to a share group member stays locked to it before it may be delivered again; a group may set its own share.record.lock.duration.ms.' },
  'group.share.min.record.lock.duration.ms': { doc: 'Smallest share.record.lock.duration.ms a group may set for itself.' },
  'group.share.max.record.lock.duration.ms': { doc: 'Largest share.record.lock.duration.ms a group may set for itself.' },
  'group.share.delivery.count.limit': { doc: 'Deliveries of one record to a share group before it is archived as undeliverable; a group may set its own share.delivery.count.limit.' },
  'group.share.min.delivery.count.limit': { doc: 'Smallest share.delivery.count.limit a group may set for itself.' },
  'group.share.max.delivery.count.limit': { doc: 'Largest share.delivery.count.limit a group may set for itself.' },
  'group.share.partition.max.record.locks': { doc: 'Most records of one partition locked to the members of a share group at once; a group may set its own share.partition.max.record.locks.' },
  'group.share.min.partition.max.record.locks': { doc: 'Smallest share.partition.max.record.locks a group may set for itself.' },
  'group.share.max.partition.max.record.locks': { doc: 'Largest share.partition.max.record.locks a group may set for itself.' },
  'group.streams.session.timeout.ms': { doc: 'A member of a streams group (KIP-1071) not heard from this long is removed from it; a group may set its own streams.session.timeout.ms.' },
  'group.streams.min.session.timeout.ms': { doc: 'Smallest streams.session.timeout.ms a group may set for itself.' },
  'group.streams.max.session.timeout.ms': { doc: 'Largest streams.session.timeout.ms a group may set for itself.' },
  'group.streams.heartbeat.interval.ms': { doc: 'How often members of a streams group are told to heartbeat; a group may set its own streams.heartbeat.interval.ms.' },
  'group.streams.min.heartbeat.interval.ms': { doc: 'Smallest streams.heartbeat.interval.ms a group may set for itself.' },
  'group.streams.max.heartbeat.interval.ms': { doc: 'Largest streams.heartbeat.interval.ms a group may set for itself.' },
  'group.streams.max.size': { doc: 'Most members one streams group takes; more get GROUP_MAX_SIZE_REACHED.' },
  'group.streams.num.standby.replicas': { doc: 'Standby copies of each stateful task of a streams group; a group may set its own streams.num.standby.replicas.' },
  'group.streams.max.standby.replicas': { doc: 'Largest streams.num.standby.replicas a group may set for itself.' },
  'group.streams.initial.rebalance.delay.ms': { doc: 'How long a new streams group waits for more members before its first assignment; a group may set its own streams.initial.rebalance.delay.ms.' },
  'group.streams.assignment.interval.ms': { doc: 'Least time between two target assignments of a streams group; a group may set its own streams.assignment.interval.ms.' },
  'group.streams.min.assignment.interval.ms': { doc: 'Smallest streams.assignment.interval.ms a group may set for itself.' },
  'group.streams.max.assignment.interval.ms': { doc: 'Largest streams.assignment.interval.ms a group may set for itself.' },
  'group.streams.assignors': { doc: 'Task assignors of streams groups (sticky); the first is the one a group uses unless it sets streams.assignor.name.' },
  'group.streams.rack.aware.assignment.tags': { doc: 'Client tag keys over which the standby tasks of streams groups are spread; a group may set its own streams.rack.aware.assignment.tags.' },
  'share.coordinator.state.topic.num.partitions': { doc: 'Partitions of __share_group_state, made when a share coordinator is first looked for.' },
  'share.coordinator.state.topic.replication.factor': { doc: 'Replication factor of __share_group_state, capped by the brokers alive when it is made.' },
  'share.coordinator.state.topic.min.isr': { doc: 'min.insync.replicas of __share_group_state.' },
  'share.coordinator.state.topic.segment.bytes': { doc: 'segment.bytes of __share_group_state.' },
  'offsets.retention.minutes': { doc: 'Committed offsets of a group expire this long after it became empty (or after the commit, for groups that only commit).' },
  'offsets.retention.check.interval.ms': { doc: 'How often expired offsets are looked for.' },
  'offset.metadata.max.bytes': { doc: 'Longest metadata an offset commit may carry.' },
  'offsets.commit.timeout.ms': { doc: 'How long an offset commit waits for every in-sync replica of its __consumer_offsets partition before it is answered COORDINATOR_NOT_AVAILABLE.' },
} as const satisfies Record<string, Declaration>;

export type ConfigKey = keyof typeof CONFIG_DEFS;

/** A key's complete definition: its declaration over Kafka's facts. */
export interface ConfigDef {
  readonly kind: ConfigKind;
  readonly default: string | null;
  readonly doc: string;
  readonly min?: number;
  readonly max?: number;
  /** The type DescribeConfigs reports. */
  readonly type: ConfigType;
  /** Kafka's value check, when Kafka defines the key. */
  readonly check?: ValueCheck;
}

const KIND_OF_TYPE: Readonly<Record<ConfigType, ConfigKind>> = {
  int: 'int',
  short: 'int',
  long: 'long',
  boolean: 'bool',
  string: 'string',
  class: 'string',
  password: 'string',
  list: 'list',
  double: 'string',
};
const TYPE_OF_KIND: Readonly<Record<ConfigKind, ConfigType>> = { int: 'int', long: 'long', bool: 'boolean', string: 'string', list: 'list' };

const DEFS: ReadonlyMap<string, ConfigDef> = new Map(
  Object.entries(CONFIG_DEFS).map(([name, d]: [string, Declaration]): [string, ConfigDef] => {
    const kafka = kafkaBrokerConfig(name);
    if (kafka === undefined && (d.kind === undefined || d.default === undefined)) {
      throw new Error(`config ${name}: Kafka does not define it, so its declaration needs kind and default`);
    }
    const kind = d.kind ?? KIND_OF_TYPE[kafka!.type];
    return [
      name,
      {
        kind,
        default: d.default !== undefined ? d.default : kafka!.default,
        doc: d.doc,
        ...(d.min !== undefined ? { min: d.min } : {}),
        ...(d.max !== undefined ? { max: d.max } : {}),
        type: kafka?.type ?? TYPE_OF_KIND[kind],
        ...(kafka?.check ? { check: kafka.check } : {}),
      },
    ];
  }),
);

/** The definition of one of gregor's keys. Example: configDef('group.max.size').default -> '2147483647'. */
export function configDef(key: ConfigKey): ConfigDef {
  return DEFS.get(key)!;
}

/** Whether `name` is one of gregor's keys. */
export function isConfigKey(name: string): name is ConfigKey {
  return DEFS.has(name);
}

/** Every key with its definition, in declaration order. */
export function configDefs(): IterableIterator<[string, ConfigDef]> {
  return DEFS.entries();
}

/**
 * Typed reads of gregor's keys: what the operator set, else the default.
 * Example: configReader(new Map([['num.partitions', '3']])).int('num.partitions') -> 3.
 */
export interface ConfigReader {
  /** The value as set (trimmed), else the default; null when neither. */
  value(key: ConfigKey): string | null;
  int(key: ConfigKey): number;
  bool(key: ConfigKey): boolean;
  /** The elements of a list value, trimmed, without empty ones. */
  list(key: ConfigKey): string[];
}

export function configReader(values: ReadonlyMap<string, string>): ConfigReader {
  const value = (key: ConfigKey): string | null => values.get(key)?.trim() ?? configDef(key).default;
  const kindOf = (key: ConfigKey, ...kinds: ConfigKind[]): void => {
    if (!kinds.includes(configDef(key).kind)) throw new Error(`config ${key} is a ${configDef(key).kind}, not read as ${kinds.join(' or ')}`);
  };
  return {
    value,
    int(key) {
      kindOf(key, 'int', 'long');
      return Number(value(key));
    },
    bool(key) {
      kindOf(key, 'bool');
      return value(key)?.toLowerCase() === 'true';
    },
    list(key) {
      kindOf(key, 'list', 'string');
      return (value(key) ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
    },
  };
}

/** The defaults alone: what a broker started with no config reads. */
export const DEFAULT_CONFIG: ConfigReader = configReader(new Map());

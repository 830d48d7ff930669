/**
 * Facts about Kafka 4.4's broker configs, for start-up, DescribeConfigs and
 * dynamic changes (AlterConfigs, IncrementalAlterConfigs on a broker
 * resource): every name Kafka's broker defines, its type, its default,
 * whether and how it can be changed at run time, and its value check. The
 * facts are generated from Kafka's own definitions into
 * kafka-broker-configs.ts; the checks are read off the validators as Kafka
 * prints them.
 *
 * Also here: gregor's choices on top of those facts, i.e. which broker
 * configs a broker resource lists and which dynamic changes gregor takes
 * (see dynamicMode).
 */
import {
  atLeast,
  between,
  GZIP_LEVEL,
  listOf,
  oneOf,
  topicConfigDef,
  TOPIC_CONFIGS_BY_SERVER_NAME,
  type ConfigType,
  type ParsedValue,
  type ValueCheck,
} from '../../storage/topic-config.js';
import { KAFKA_BROKER_CONFIG_ROWS } from './kafka-broker-configs.js';

const CONFIG_TYPES: ReadonlySet<string> = new Set(['boolean', 'string', 'int', 'short', 'long', 'double', 'list', 'class', 'password']);

function shown(v: ParsedValue): string {
  return Array.isArray(v) ? v.join(',') : String(v);
}

/**
 * The value check a Kafka validator stands for, from the text Kafka prints
 * for it; undefined for validators without a printed form (they check
 * nothing gregor can tell). Examples: '[1,...]' -> at least 1;
 * '[0,...,10]' -> 0 to 10; '[compact, delete]' on a list -> each element one
 * of them; '(case insensitive) [A, B]' -> A or B in any case.
 */
export function validatorCheck(type: ConfigType, spec: string | null): ValueCheck | undefined {
  if (spec === null) return undefined;
  let m = /^\[(-?[\d.]+),\.\.\.\]$/.exec(spec);
  if (m) return atLeast(Number(m[1]));
  m = /^\[(-?[\d.]+),\.\.\.,(-?[\d.]+)\]$/.exec(spec);
  if (m) return between(Number(m[1]), Number(m[2]));
  if (spec === '[1,...,9] or -1') return GZIP_LEVEL;
  m = /^\(case insensitive\) \[(.*)\]$/.exec(spec);
  if (m) {
    const allowed = m[1]!.split(', ');
    const upper = new Set(allowed.map((a) => a.toUpperCase()));
    return (v) => (typeof v === 'string' && upper.has(v.toUpperCase()) ? null : { shown: shown(v), reason: `String must be one of (case insensitive): ${allowed.join(', ')}` });
  }
  m = /^\[(.*)\]$/.exec(spec);
  if (m) {
    const allowed = m[1]!.split(', ');
    return type === 'list' ? listOf(...allowed) : oneOf(...allowed);
  }
  if (spec === 'non-empty string') return (v) => (typeof v === 'string' && v.trim() !== '' ? null : { shown: shown(v), reason: 'String may not be empty' });
  if (spec === 'non-empty list') return (v) => (Array.isArray(v) && v.length > 0 ? null : { shown: shown(v), reason: 'Empty list not allowed' });
  return undefined;
}

/** Every broker config of Kafka, in the order its DescribeConfigs lists them. */
const KAFKA_BROKER_CONFIGS = KAFKA_BROKER_CONFIG_ROWS.map(([name, type, dflt, mode, internal, validator]) => {
  if (!CONFIG_TYPES.has(type)) throw new Error(`kafka-broker-configs.ts: ${name} has unknown type ${type}`);
  return { name, type: type as ConfigType, dflt: dflt ?? null, mode, internal, check: validatorCheck(type as ConfigType, validator) };
});

export type DynamicMode = 'read-only' | 'cluster-wide' | 'per-broker';

export interface BrokerConfigDef {
  readonly name: string;
  readonly type: ConfigType;
  /** Kafka's default, as DescribeConfigs shows it; null when there is none. */
  readonly default: string | null;
  /** How Kafka lets it change at run time. */
  readonly kafkaMode: DynamicMode;
  /** Kafka's internal configs, which its DescribeConfigs never lists. */
  readonly internal: boolean;
  readonly check?: ValueCheck;
}

const KAFKA_DEFS: ReadonlyMap<string, BrokerConfigDef> = new Map(
  KAFKA_BROKER_CONFIGS.map(({ name, type, dflt, mode, internal, check }): [string, BrokerConfigDef] => [
    name,
    { name, type, default: dflt, kafkaMode: mode === 'c' ? 'cluster-wide' : mode === 'b' ? 'per-broker' : 'read-only', internal, ...(check ? { check } : {}) },
  ]),
);

/** Kafka's facts about a broker config, or undefined for a name Kafka's broker does not define. */
export function kafkaBrokerConfig(name: string): BrokerConfigDef | undefined {
  return KAFKA_DEFS.get(name);
}

/** Kafka's order of broker configs, for listing: a name's position, or Infinity for names Kafka does not list. */
export const KAFKA_LIST_ORDER: ReadonlyMap<string, number> = new Map(KAFKA_BROKER_CONFIGS.map(({ name }, i) => [name, i]));

/**
 * Broker configs that are several names for one setting: the value of the
 * first one set wins, and DescribeConfigs lists them as synonyms of each
 * other, in this order.
 */
const SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ['log.retention.ms', 'log.retention.minutes', 'log.retention.hours'],
  ['log.roll.ms', 'log.roll.hours'],
  ['log.roll.jitter.ms', 'log.roll.jitter.hours'],
];

/**
 * The broker configs DescribeConfigs considers synonyms of `name`, in Kafka's
 * order: its group (SYNONYM_GROUPS), log.flush.interval.ms with the
 * scheduler interval it falls back to, else the name alone.
 *
 * Example: brokerSynonyms('log.retention.hours') -> ['log.retention.ms',
 * 'log.retention.minutes', 'log.retention.hours'].
 */
export function brokerSynonyms(name: string): readonly string[] {
  for (const group of SYNONYM_GROUPS) if (group.includes(name)) return group;
  if (name === 'log.flush.interval.ms') return ['log.flush.interval.ms', 'log.flush.scheduler.interval.ms'];
  return [name];
}

/**
 * Broker configs of the log manager that gregor runs with Kafka's defaults,
 * listed for a broker beside the topic-config defaults. Our own words.
 */
const LOG_MANAGER_DOCS: ReadonlyMap<string, string> = new Map([
  ['log.retention.check.interval.ms', 'How often every log is checked for segments past retention.'],
  ['log.cleaner.enable', 'Whether logs with cleanup.policy compact are compacted.'],
  ['log.cleaner.backoff.ms', 'How long the log cleaner sleeps when no log needs compacting.'],
  ['log.flush.offset.checkpoint.interval.ms', 'How often each log writes its recovery checkpoint.'],
]);

/** Every broker config Kafka's DescribeConfigs lists (all but its internal ones), in its order. */
export const DESCRIBED_BROKER_CONFIGS: readonly string[] = KAFKA_BROKER_CONFIGS.filter((c) => !c.internal).map((c) => c.name);

/**
 * The Kafka broker configs gregor acts on besides its own keys
 * (src/config.ts): the broker-wide default of every topic config, and the
 * log manager settings above.
 */
export const LISTED_BROKER_CONFIGS: readonly string[] = [...new Set([...TOPIC_CONFIGS_BY_SERVER_NAME.keys(), ...LOG_MANAGER_DOCS.keys()])];

const UNIT_NOTE: ReadonlyMap<string, string> = new Map([
  ['log.retention.minutes', ' In minutes; used when log.retention.ms is not set.'],
  ['log.retention.hours', ' In hours; used when log.retention.ms and log.retention.minutes are not set.'],
  ['log.roll.hours', ' In hours; used when log.roll.ms is not set.'],
  ['log.roll.jitter.hours', ' In hours; used when log.roll.jitter.ms is not set.'],
  ['log.flush.scheduler.interval.ms', ' Used for flush.ms when log.flush.interval.ms is not set.'],
]);

/**
 * gregor's description of a Kafka broker config it lists: a topic config
 * default says which topic config it gives; null for the rest.
 *
 * Example: brokerConfigDoc('log.retention.hours') -> 'Default of retention.ms
 * for topics without their own: ... In hours; used when ...'.
 */
export function brokerConfigDoc(name: string): string | null {
  const topics = TOPIC_CONFIGS_BY_SERVER_NAME.get(name);
  if (topics !== undefined) {
    const first = topicConfigDef(topics[0]!)!;
    return `Default of ${topics.join(', ')} for topics without their own: ${first.doc}${UNIT_NOTE.get(name) ?? ''}`;
  }
  return LOG_MANAGER_DOCS.get(name) ?? null;
}

/** The TLS configs Kafka changes at run time only under a listener prefix (listener.name.NAME.ssl...). */
export const LISTENER_PREFIXED_SECURITY_CONFIGS: ReadonlySet<string> = new Set([
  'ssl.keystore.type', 'ssl.keystore.location', 'ssl.keystore.password', 'ssl.key.password', 'ssl.truststore.type', 'ssl.truststore.location',
  'ssl.truststore.password', 'ssl.keystore.certificate.chain', 'ssl.keystore.key', 'ssl.truststore.certificates',
]);

/** Kafka's per-broker configs gregor does not take at run time: it binds its listeners once, at start. */
const BOUND_AT_START: ReadonlySet<string> = new Set(['listeners', 'advertised.listeners', 'listener.security.protocol.map']);

/** Kafka's dynamic configs among gregor's own keys that gregor also applies at run time; its others it reads at start only. */
const APPLIED_AT_RUN_TIME: ReadonlySet<string> = new Set(['max.connections']);

/** Kafka's dynamic log manager configs gregor reads at start only. */
const READ_AT_START: ReadonlySet<string> = new Set(['log.cleaner.backoff.ms']);

/**
 * How gregor lets `name` change at run time: as Kafka does (cluster-wide
 * configs at the cluster default or on one broker, per-broker ones on one
 * broker only), except that what gregor reads at start only stays
 * read-only: the listeners, and its own keys (`staticKeys`) but
 * max.connections. A name neither Kafka nor gregor knows is 'unknown':
 * taken and stored, as Kafka does.
 *
 * Example: dynamicMode('log.retention.ms', keys) -> 'cluster-wide';
 * dynamicMode('sasl.kerberos.min.time.before.relogin', keys) -> 'per-broker';
 * dynamicMode('num.partitions', keys) -> 'read-only'; dynamicMode('x.y', keys) -> 'unknown'.
 */
export function dynamicMode(name: string, staticKeys: ReadonlySet<string>): DynamicMode | 'unknown' {
  const kafka = KAFKA_DEFS.get(name);
  if (BOUND_AT_START.has(name) || name.startsWith('listener.name.')) return 'read-only';
  if (kafka === undefined) return staticKeys.has(name) ? 'read-only' : 'unknown';
  if (TOPIC_CONFIGS_BY_SERVER_NAME.has(name)) return kafka.kafkaMode;
  if ((staticKeys.has(name) || READ_AT_START.has(name)) && !APPLIED_AT_RUN_TIME.has(name)) return 'read-only';
  return kafka.kafkaMode;
}

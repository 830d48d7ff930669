/**
 * Topic configs: the catalog of names Kafka 4.0 accepts on a topic (types,
 * defaults, broker-level synonyms), the check applied by CreateTopics,
 * AlterConfigs and IncrementalAlterConfigs, and the mapping from a topic's
 * effective values to the LogConfig its partition logs run with.
 *
 * Values are parsed as Kafka's ConfigDef parses them (trimmed; booleans in
 * any case; lists split on commas with the spaces around them dropped; an
 * empty list is allowed), and errors read as Kafka's do:
 * `Invalid value abc for configuration retention.ms: Not a number of type LONG`.
 *
 * Kafka 4.0.2 (the reference) still takes segment.bytes down to 14 bytes on a
 * topic; the 1 MiB floor is the broker's log.segment.bytes only, so that is
 * what is checked here too.
 */
import { ErrorCode } from '../wire/errors.js';
import { DEFAULT_LOG_CONFIG, type CompressionType, type LogConfig } from './log-config.js';

export type TopicConfigCheck = { ok: true } | { ok: false; errorCode: number; message: string };

/** Kafka's ConfigDef types. */
export type ConfigType = 'boolean' | 'string' | 'int' | 'short' | 'long' | 'double' | 'list' | 'class' | 'password';

/** The config_type ids of DescribeConfigs v3+ (0 is UNKNOWN). */
export const CONFIG_TYPE_IDS: Readonly<Record<ConfigType, number>> = {
  boolean: 1,
  string: 2,
  int: 3,
  short: 4,
  long: 5,
  double: 6,
  list: 7,
  class: 8,
  password: 9,
};

export type ParsedValue = bigint | number | boolean | string | readonly string[];

/**
 * A check of a parsed value: null when it is fine, else the value as the
 * error shows it and why it is refused.
 */
export type ValueCheck = (value: ParsedValue) => { shown: string; reason: string } | null;

const INT_RANGES: Readonly<Record<'int' | 'short' | 'long', readonly [bigint, bigint]>> = {
  short: [-32768n, 32767n],
  int: [-2147483648n, 2147483647n],
  long: [-9223372036854775808n, 9223372036854775807n],
};

/** Java's Long.MAX_VALUE, the "no limit" of many configs. */
export const LONG_MAX = 9223372036854775807n;

const JAVA_DOUBLE = /^[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)$/;

/**
 * Double.toString as Java writes it, which is how Kafka shows a DOUBLE:
 * 0.5 -> "0.5", 1 -> "1.0", 1e7 -> "1.0E7", Number.MAX_VALUE ->
 * "1.7976931348623157E308".
 */
export function javaDoubleString(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  if (n === 0) return Object.is(n, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(n);
  if (abs >= 1e-3 && abs < 1e7) {
    const s = String(n);
    return s.includes('.') ? s : `${s}.0`;
  }
  const [mantissa, exponent] = n.toExponential().split('e') as [string, string];
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${Number(exponent)}`;
}

function shownValue(value: ParsedValue): string {
  if (typeof value === 'number') return javaDoubleString(value);
  if (Array.isArray(value)) return `[${value.join(', ')}]`;
  return String(value);
}

function numeric(value: ParsedValue): number | bigint {
  return typeof value === 'bigint' || typeof value === 'number' ? value : Number.NaN;
}

function below(value: number | bigint, bound: number): boolean {
  return typeof value === 'bigint' ? value < BigInt(bound) : value < bound;
}

function above(value: number | bigint, bound: number): boolean {
  return typeof value === 'bigint' ? value > BigInt(bound) : value > bound;
}

/** A number at least `min`. */
export function atLeast(min: number): ValueCheck {
  return (v) => (below(numeric(v), min) ? { shown: shownValue(v), reason: `Value must be at least ${min}` } : null);
}

/** A number from `min` to `max`, both included. */
export function between(min: number, max: number): ValueCheck {
  return (v) => {
    const n = numeric(v);
    if (below(n, min)) return { shown: shownValue(v), reason: `Value must be at least ${min}` };
    if (above(n, max)) return { shown: shownValue(v), reason: `Value must be no more than ${max}` };
    return null;
  };
}

/** One of `allowed`, exactly as written. */
export function oneOf(...allowed: string[]): ValueCheck {
  return (v) => (typeof v === 'string' && allowed.includes(v) ? null : { shown: shownValue(v), reason: `String must be one of: ${allowed.join(', ')}` });
}

/** A list whose every element is one of `allowed`; the first other element is the one shown. */
export function listOf(...allowed: string[]): ValueCheck {
  return (v) => {
    const bad = (v as readonly string[]).find((e) => !allowed.includes(e));
    return bad === undefined ? null : { shown: bad, reason: `String must be one of: ${allowed.join(', ')}` };
  };
}

/** compression.gzip.level: 1 to 9, or -1 for the codec's own default. */
export const GZIP_LEVEL: ValueCheck = (v) => {
  const n = numeric(v);
  return n === -1n || (!below(n, 1) && !above(n, 9)) ? null : { shown: shownValue(v), reason: 'Value must be between 1 and 9 or equal to -1' };
};

/** Throttled replicas: '*' or partition:broker pairs. */
function throttledReplicas(name: string): ValueCheck {
  return (v) => {
    const list = v as readonly string[];
    if (list.join('').trim() === '*' || list.every((e) => /^(?:\d+:\d+)?$/.test(e.trim()))) return null;
    return { shown: shownValue(v), reason: `${name} takes '*' or a comma-separated list of partitionId:brokerId pairs` };
  };
}

export type ParseResult = { ok: true; value: ParsedValue } | { ok: false; message: string };

/** The error Kafka gives for a value of config `name`: `Invalid value <shown> for configuration <name>: <reason>`. */
export function invalidValueMessage(name: string, shown: string, reason: string): string {
  return `Invalid value ${shown} for configuration ${name}: ${reason}`;
}

/**
 * Parses `raw` as a value of `type`, as Kafka's ConfigDef does.
 *
 * Example: parseConfigValue('cleanup.policy', 'list', ' compact , delete ')
 * -> { ok: true, value: ['compact', 'delete'] }; parseConfigValue('retention.ms',
 * 'long', 'abc') -> { ok: false, message: 'Invalid value abc for configuration
 * retention.ms: Not a number of type LONG' }.
 */
export function parseConfigValue(name: string, type: ConfigType, raw: string): ParseResult {
  const trimmed = raw.trim();
  switch (type) {
    case 'boolean': {
      const lower = trimmed.toLowerCase();
      if (lower === 'true' || lower === 'false') return { ok: true, value: lower === 'true' };
      return { ok: false, message: invalidValueMessage(name, raw, 'Expected value to be either true or false') };
    }
    case 'int':
    case 'short':
    case 'long': {
      const [lo, hi] = INT_RANGES[type];
      if (/^[+-]?\d+$/.test(trimmed)) {
        const n = BigInt(trimmed);
        if (n >= lo && n <= hi) return { ok: true, value: n };
      }
      return { ok: false, message: invalidValueMessage(name, raw, `Not a number of type ${type.toUpperCase()}`) };
    }
    case 'double':
      if (JAVA_DOUBLE.test(trimmed)) return { ok: true, value: Number(trimmed.replace(/[fFdD]$/, '')) };
      return { ok: false, message: invalidValueMessage(name, raw, 'Not a number of type DOUBLE') };
    case 'list':
      return { ok: true, value: trimmed === '' ? [] : trimmed.split(/\s*,\s*/) };
    default:
      return { ok: true, value: trimmed };
  }
}

/**
 * A parsed value as Kafka writes it back (ConfigDef.convertToString): lists
 * joined with ',', doubles as Java prints them.
 */
export function configValueString(value: ParsedValue): string {
  if (typeof value === 'number') return javaDoubleString(value);
  if (Array.isArray(value)) return value.join(',');
  return String(value);
}

/**
 * `raw` parsed and written back, or `raw` itself when it does not parse.
 * Example: normalizeConfigValue('list', ' compact , delete ') -> 'compact,delete'.
 */
export function normalizeConfigValue(type: ConfigType, raw: string): string {
  const parsed = parseConfigValue('', type, raw);
  return parsed.ok ? configValueString(parsed.value) : raw;
}

/**
 * Parses and checks one value. Example: checkConfigValue('min.insync.replicas',
 * 'int', '0', atLeast(1)) -> 'Invalid value 0 for configuration min.insync.replicas:
 * Value must be at least 1'; a good value -> null.
 */
export function checkConfigValue(name: string, type: ConfigType, raw: string, check: ValueCheck | undefined): string | null {
  const parsed = parseConfigValue(name, type, raw);
  if (!parsed.ok) return parsed.message;
  const problem = check?.(parsed.value);
  return problem ? invalidValueMessage(name, problem.shown, problem.reason) : null;
}

export interface TopicConfigDef {
  readonly name: string;
  readonly type: ConfigType;
  /** Kafka 4.0's default, as DescribeConfigs shows it. */
  readonly default: string;
  readonly check?: ValueCheck;
  /**
   * The broker configs a topic without its own value takes it from, in
   * order (the first one set wins), each with the factor from its unit to the
   * topic config's: retention.ms falls back to log.retention.ms, then
   * log.retention.minutes x 60000, then log.retention.hours x 3600000. The
   * first is Kafka's "server config name" of the topic config.
   */
  readonly serverDefaults: readonly (readonly [name: string, factor: bigint])[];
  readonly doc: string;
}

const HOUR = 3600000n;

function def(
  name: string,
  type: ConfigType,
  dflt: string,
  serverDefaults: readonly (readonly [string, bigint])[] | string | null,
  check: ValueCheck | undefined,
  doc: string,
): TopicConfigDef {
  const synonyms = serverDefaults === null ? [] : typeof serverDefaults === 'string' ? [[serverDefaults, 1n] as const] : serverDefaults;
  return { name, type, default: dflt, serverDefaults: synonyms, doc, ...(check ? { check } : {}) };
}

const LONG_MAX_STRING = String(LONG_MAX);

/** Every topic config of Kafka 4.0, in Kafka's definition order (the order its checks run in). */
export const TOPIC_CONFIGS: readonly TopicConfigDef[] = [
  def('segment.bytes', 'int', '1073741824', 'log.segment.bytes', atLeast(14), 'Size at which the active segment of a partition is closed and a new one started.'),
  def('segment.ms', 'long', '604800000', [['log.roll.ms', 1n], ['log.roll.hours', HOUR]], atLeast(1), 'Age of the first record of the active segment at which a new segment is started, even if the segment is not full.'),
  def('segment.jitter.ms', 'long', '0', [['log.roll.jitter.ms', 1n], ['log.roll.jitter.hours', HOUR]], atLeast(0), 'Largest random amount taken off segment.ms per segment, so that many partitions do not roll at once.'),
  def('segment.index.bytes', 'int', '10485760', 'log.index.size.max.bytes', atLeast(4), 'Size of the offset and time indexes of a segment; a full index closes the segment.'),
  def('flush.messages', 'long', LONG_MAX_STRING, 'log.flush.interval.messages', atLeast(1), 'Records appended between two forced fsyncs of the log; the maximum leaves syncing to the operating system.'),
  def('flush.ms', 'long', LONG_MAX_STRING, [['log.flush.interval.ms', 1n], ['log.flush.scheduler.interval.ms', 1n]], atLeast(0), 'Longest time appended data may wait for a forced fsync; the maximum leaves syncing to the operating system.'),
  def('retention.bytes', 'long', '-1', 'log.retention.bytes', undefined, 'Size a partition may reach before its oldest segments are deleted (cleanup.policy delete); -1 sets no size limit.'),
  def(
    'retention.ms',
    'long',
    '604800000',
    [['log.retention.ms', 1n], ['log.retention.minutes', 60000n], ['log.retention.hours', HOUR]],
    atLeast(-1),
    'How long a segment is kept after its newest record before it is deleted (cleanup.policy delete); -1 keeps data forever.',
  ),
  def('max.message.bytes', 'int', '1048588', 'message.max.bytes', atLeast(0), 'Largest record batch the partition accepts, after compression.'),
  def('index.interval.bytes', 'int', '4096', 'log.index.interval.bytes', atLeast(0), 'Bytes of records between two entries of the offset index.'),
  def('delete.retention.ms', 'long', '86400000', 'log.cleaner.delete.retention.ms', atLeast(0), 'How long a tombstone survives compaction, so consumers that lag can still see the deletion.'),
  def('min.compaction.lag.ms', 'long', '0', 'log.cleaner.min.compaction.lag.ms', atLeast(0), 'Youngest a record may be and still be compacted away.'),
  def('max.compaction.lag.ms', 'long', LONG_MAX_STRING, 'log.cleaner.max.compaction.lag.ms', atLeast(1), 'Longest a record may stay uncompacted once newer records with its key exist.'),
  def('file.delete.delay.ms', 'long', '60000', 'log.segment.delete.delay.ms', atLeast(0), 'Delay between removing a segment from a log and deleting its files.'),
  def('min.cleanable.dirty.ratio', 'double', '0.5', 'log.cleaner.min.cleanable.ratio', between(0, 1), 'Share of the log not yet compacted above which the cleaner compacts it.'),
  def('cleanup.policy', 'list', 'delete', 'log.cleanup.policy', listOf('compact', 'delete'), 'What happens to old segments: delete (by retention.ms and retention.bytes), compact (keep the last record per key), or both.'),
  def('unclean.leader.election.enable', 'boolean', 'false', 'unclean.leader.election.enable', undefined, 'Whether a replica outside the ISR may become leader, at the cost of losing records.'),
  def('min.insync.replicas', 'int', '1', 'min.insync.replicas', atLeast(1), 'In-sync replicas needed for a produce with acks=all to succeed.'),
  def(
    'compression.type',
    'string',
    'producer',
    'compression.type',
    oneOf('uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer'),
    'Codec batches are stored with: producer keeps what the producer sent; the others recompress to that codec.',
  ),
  def('compression.gzip.level', 'int', '-1', 'compression.gzip.level', GZIP_LEVEL, 'Level used when the broker compresses with gzip; -1 is the codec default.'),
  def('compression.lz4.level', 'int', '9', 'compression.lz4.level', between(1, 17), 'Level used when the broker compresses with lz4.'),
  def('compression.zstd.level', 'int', '3', 'compression.zstd.level', between(-131072, 22), 'Level used when the broker compresses with zstd.'),
  def('preallocate', 'boolean', 'false', 'log.preallocate', undefined, 'Whether a new segment file is allocated at full size up front.'),
  def('message.timestamp.type', 'string', 'CreateTime', 'log.message.timestamp.type', oneOf('CreateTime', 'LogAppendTime'), 'Whether record timestamps are the producer\'s (CreateTime) or the broker\'s clock at append (LogAppendTime).'),
  def('message.timestamp.before.max.ms', 'long', LONG_MAX_STRING, 'log.message.timestamp.before.max.ms', atLeast(0), 'On a CreateTime topic, how far behind the broker\'s clock a record timestamp may be.'),
  def('message.timestamp.after.max.ms', 'long', '3600000', 'log.message.timestamp.after.max.ms', atLeast(0), 'On a CreateTime topic, how far ahead of the broker\'s clock a record timestamp may be.'),
  def('leader.replication.throttled.replicas', 'list', '', null, throttledReplicas('leader.replication.throttled.replicas'), 'Replicas whose replication is throttled on the leader side: partition:broker pairs, or * for all.'),
  def('follower.replication.throttled.replicas', 'list', '', null, throttledReplicas('follower.replication.throttled.replicas'), 'Replicas whose replication is throttled on the follower side: partition:broker pairs, or * for all.'),
  def('remote.storage.enable', 'boolean', 'false', null, undefined, 'Whether the topic uses tiered storage; gregor has none, so only false is accepted.'),
  def('local.retention.ms', 'long', '-2', 'log.local.retention.ms', atLeast(-2), 'With tiered storage, how long segments stay on local disk; -2 follows retention.ms.'),
  def('local.retention.bytes', 'long', '-2', 'log.local.retention.bytes', atLeast(-2), 'With tiered storage, how many bytes stay on local disk; -2 follows retention.bytes.'),
  def('remote.log.copy.disable', 'boolean', 'false', null, undefined, 'With tiered storage, stops copying segments to remote storage.'),
  def('remote.log.delete.on.disable', 'boolean', 'false', null, undefined, 'With tiered storage, deletes remote data when tiering is turned off.'),
];

const BY_NAME: ReadonlyMap<string, TopicConfigDef> = new Map(TOPIC_CONFIGS.map((d) => [d.name, d]));

/** The order in which Kafka 4.0 lists a topic's configs in DescribeConfigs. */
export const TOPIC_CONFIG_DESCRIBE_ORDER: readonly string[] = [
  'compression.type', 'remote.log.delete.on.disable', 'leader.replication.throttled.replicas', 'remote.storage.enable',
  'min.insync.replicas', 'segment.jitter.ms', 'remote.log.copy.disable', 'local.retention.ms', 'cleanup.policy', 'flush.ms',
  'follower.replication.throttled.replicas', 'compression.lz4.level', 'segment.bytes', 'retention.ms', 'compression.gzip.level',
  'flush.messages', 'compression.zstd.level', 'max.compaction.lag.ms', 'file.delete.delay.ms', 'max.message.bytes',
  'min.compaction.lag.ms', 'message.timestamp.type', 'local.retention.bytes', 'preallocate', 'min.cleanable.dirty.ratio',
  'index.interval.bytes', 'unclean.leader.election.enable', 'retention.bytes', 'delete.retention.ms',
  'message.timestamp.after.max.ms', 'message.timestamp.before.max.ms', 'segment.ms', 'segment.index.bytes',
];

/** The catalog entry of a topic config, or undefined for a name Kafka does not know on a topic. */
export function topicConfigDef(name: string): TopicConfigDef | undefined {
  return BY_NAME.get(name);
}

/** Broker config name -> the topic configs whose default it gives. Example: 'log.retention.hours' -> ['retention.ms']. */
export const TOPIC_CONFIGS_BY_SERVER_NAME: ReadonlyMap<string, readonly string[]> = (() => {
  const m = new Map<string, string[]>();
  for (const d of TOPIC_CONFIGS) for (const [server] of d.serverDefaults) m.set(server, [...(m.get(server) ?? []), d.name]);
  return m;
})();

const invalid = (message: string): TopicConfigCheck => ({ ok: false, errorCode: ErrorCode.INVALID_CONFIG, message });

/**
 * Checks topic config overrides as Kafka does when a topic is created or its
 * configs are altered: every name known, every value of the right type and in
 * range (checked in Kafka's definition order, so the same value is reported
 * first), then the checks across configs. A null value (remove the override)
 * is always acceptable here; CreateTopics refuses nulls itself.
 *
 * `inherited` gives the value a config not among `configs` takes (the
 * broker's default for it); by default Kafka's own defaults. The checks
 * across configs use it.
 *
 * Example: checkTopicConfigs({ 'retention.ms': '-2' }) -> { ok: false,
 * errorCode: INVALID_CONFIG, message: 'Invalid value -2 for configuration
 * retention.ms: Value must be at least -1' }; checkTopicConfigs({ 'nope': '1' })
 * -> message 'Unknown topic config name: nope'.
 */
export function checkTopicConfigs(
  configs: Readonly<Record<string, string | null>>,
  inherited: (name: string) => string = (name) => BY_NAME.get(name)?.default ?? '',
): TopicConfigCheck {
  const unknown = Object.keys(configs).filter((n) => !BY_NAME.has(n)).sort();
  if (unknown.length > 0) return invalid(`Unknown topic config name: ${unknown[0]}`);
  for (const d of TOPIC_CONFIGS) {
    const raw = configs[d.name];
    if (raw === undefined || raw === null) continue;
    const problem = checkConfigValue(d.name, d.type, raw, d.check);
    if (problem !== null) return invalid(problem);
  }
  const value = (name: string): string => configs[name] ?? inherited(name);
  const minLag = BigInt(normalizeConfigValue('long', value('min.compaction.lag.ms')));
  const maxLag = BigInt(normalizeConfigValue('long', value('max.compaction.lag.ms')));
  if (minLag > maxLag) return invalid(`conflict topic config setting min.compaction.lag.ms (${minLag}) > max.compaction.lag.ms (${maxLag})`);
  if (normalizeConfigValue('boolean', value('remote.storage.enable')) === 'true') {
    return invalid('Tiered storage is not available on this broker, so remote.storage.enable cannot be true.');
  }
  return { ok: true };
}

/**
 * The value a topic config takes: the topic's own, else the first broker
 * config of its serverDefaults that `brokerValue` has (times its factor),
 * else Kafka's default. Written back as Kafka shows it.
 *
 * Example: with no override and brokerValue('log.retention.hours') = '1'
 * (log.retention.ms and .minutes unset), topicConfigValue(retention.ms, {},
 * brokerValue) -> '3600000'.
 */
export function topicConfigValue(
  d: TopicConfigDef,
  overrides: Readonly<Record<string, string>>,
  brokerValue: (name: string) => string | null,
): string {
  // Stored values were checked when written; one that does not parse (an edited file) counts as unset.
  const own = overrides[d.name];
  const ownParsed = own === undefined ? null : parseConfigValue(d.name, d.type, own);
  if (ownParsed?.ok) return configValueString(ownParsed.value);
  for (const [server, factor] of d.serverDefaults) {
    const raw = brokerValue(server);
    if (raw === null) continue;
    const parsed = parseConfigValue(server, factor === 1n ? d.type : 'long', raw);
    if (!parsed.ok) continue;
    if (factor === 1n) {
      const v = configValueString(parsed.value);
      // Kafka's broker turns any negative log.retention.* into -1.
      return d.name === 'retention.ms' && (parsed.value as bigint) < 0n ? '-1' : v;
    }
    const ms = (parsed.value as bigint) * factor;
    return d.name === 'retention.ms' && ms < 0n ? '-1' : String(ms);
  }
  return d.default;
}

/** A long config as a JS number: anything past 2^53 (Long.MAX_VALUE: no limit) becomes Number.MAX_SAFE_INTEGER. */
function longOf(value: string): number {
  const n = BigInt(value);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) return Number.MAX_SAFE_INTEGER;
  if (n < BigInt(Number.MIN_SAFE_INTEGER)) return Number.MIN_SAFE_INTEGER;
  return Number(n);
}

/**
 * The LogConfig of a topic whose configs have the values `value` gives
 * (already resolved: see topicConfigValue). Fields LogConfig has that no
 * topic config sets keep their defaults.
 *
 * Example: toLogConfig((n) => n === 'retention.ms' ? '1000' : <default>) ->
 * a LogConfig with retentionMs 1000.
 */
export function toLogConfig(value: (name: string) => string): LogConfig {
  const list = (name: string): string[] => {
    const parsed = parseConfigValue(name, 'list', value(name));
    return parsed.ok ? [...(parsed.value as readonly string[])] : [];
  };
  return {
    ...DEFAULT_LOG_CONFIG,
    segmentBytes: longOf(value('segment.bytes')),
    segmentMs: longOf(value('segment.ms')),
    segmentIndexBytes: longOf(value('segment.index.bytes')),
    indexIntervalBytes: longOf(value('index.interval.bytes')),
    retentionMs: longOf(value('retention.ms')),
    retentionBytes: longOf(value('retention.bytes')),
    cleanupPolicy: list('cleanup.policy').filter((p): p is 'delete' | 'compact' => p === 'delete' || p === 'compact'),
    deleteRetentionMs: longOf(value('delete.retention.ms')),
    minCompactionLagMs: longOf(value('min.compaction.lag.ms')),
    maxMessageBytes: longOf(value('max.message.bytes')),
    messageTimestampType: value('message.timestamp.type') === 'LogAppendTime' ? 'LogAppendTime' : 'CreateTime',
    messageTimestampBeforeMaxMs: longOf(value('message.timestamp.before.max.ms')),
    messageTimestampAfterMaxMs: longOf(value('message.timestamp.after.max.ms')),
    flushMessages: longOf(value('flush.messages')),
    flushMs: longOf(value('flush.ms')),
    fileDeleteDelayMs: longOf(value('file.delete.delay.ms')),
    compressionType: compressionTypeOf(value('compression.type')),
    compressionGzipLevel: longOf(value('compression.gzip.level')),
    compressionLz4Level: longOf(value('compression.lz4.level')),
    compressionZstdLevel: longOf(value('compression.zstd.level')),
    minInSyncReplicas: longOf(value('min.insync.replicas')),
  };
}

const COMPRESSION_TYPES: ReadonlySet<string> = new Set<CompressionType>(['producer', 'uncompressed', 'gzip', 'snappy', 'lz4', 'zstd']);

/** A compression.type value; one the catalog would refuse (an edited file) counts as 'producer', which changes nothing. */
function compressionTypeOf(value: string): CompressionType {
  return COMPRESSION_TYPES.has(value) ? (value as CompressionType) : 'producer';
}

/**
 * The LogConfig of a topic with `overrides` on a broker whose config values
 * `brokerValue` gives (null: not set anywhere, no default).
 *
 * Example: topicLogConfig({ 'cleanup.policy': 'compact' }, () => null)
 * -> DEFAULT_LOG_CONFIG with cleanupPolicy ['compact'].
 */
export function topicLogConfig(overrides: Readonly<Record<string, string>>, brokerValue: (name: string) => string | null): LogConfig {
  return toLogConfig((name) => topicConfigValue(BY_NAME.get(name)!, overrides, brokerValue));
}

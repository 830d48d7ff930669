/**
 * Group configs (KIP-848, KIP-932, KIP-1071): the settings one group may
 * override, the GROUP config resource of DescribeConfigs and
 * IncrementalAlterConfigs. Every key of Kafka 4.4.0's GroupConfig is here,
 * in Kafka's definition order (the order its value checks run in), with its
 * type, default, value check, and the broker config it falls back to.
 *
 * A group without an override of a key runs with the broker config of the
 * same meaning (share.record.lock.duration.ms with
 * group.share.record.lock.duration.ms, ...), else with the key's own default.
 * An override must lie within the bounds the broker sets for it
 * (group.share.min.record.lock.duration.ms to ...max...), checked when it is
 * set; should the bounds change later, the group runs with the override
 * moved into them, as Kafka does.
 *
 * The documentation strings are gregor's own words.
 */
import { ErrorCode } from '../../wire/errors.js';
import {
  atLeast,
  checkConfigValue,
  normalizeConfigValue,
  oneOf,
  parseConfigValue,
  type ConfigType,
  type ValueCheck,
} from '../../storage/topic-config.js';

/**
 * Where a group falls back to the broker's settings: anything that gives the
 * value of a broker config by Kafka name, through the broker's layers
 * (dynamic, static, default). cluster/metadata/broker-configs.ts's
 * BrokerConfigs is one (its `value`).
 */
export interface BrokerConfigLookup {
  value(name: string): string | null;
}

/**
 * A lookup over broker configs given by Kafka name, for callers that hold
 * the broker's settings as values rather than a BrokerConfigs (unset names
 * fall back to Kafka's defaults in effectiveGroupConfig and the checks).
 *
 * Example: effectiveGroupConfig(overrides, brokerConfigLookup({
 * 'group.share.record.lock.duration.ms': 20000 })).shareRecordLockDurationMs
 * -> 20000 for a group without its own.
 */
export function brokerConfigLookup(values: Readonly<Record<string, string | number | undefined>>): BrokerConfigLookup {
  return {
    value: (name) => {
      const v = values[name];
      return v === undefined ? null : String(v);
    },
  };
}

/** A broker config that bounds a group config: its name and the value Kafka uses when the broker has none (internal configs). */
type Bound = readonly [brokerName: string, fallback: number];

export interface GroupConfigDef {
  readonly name: string;
  readonly type: ConfigType;
  /** Kafka's GroupConfig default; null when there is none. */
  readonly default: string | null;
  readonly check?: ValueCheck;
  /** Kafka hides internal configs from DescribeConfigs unless the group overrides them. */
  readonly internal: boolean;
  /** The broker config a group without its own value takes it from; null when the key has none. */
  readonly brokerSynonym: string | null;
  /** The broker configs an override must lie between (either may be absent). */
  readonly min?: Bound;
  readonly max?: Bound;
  readonly doc: string;
}

/** Kafka's share.auto.offset.reset check: earliest, latest, or by_duration: and a non-negative ISO-8601 duration. */
const AUTO_OFFSET_RESET: ValueCheck = (v) => {
  const s = String(v);
  return isShareAutoOffsetReset(s)
    ? null
    : {
        shown: s,
        reason: `Invalid value \`${s}\` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.`,
      };
};

/**
 * Whether Kafka takes `value` as a share group's offset reset strategy
 * (names are case-sensitive; the duration is Java's Duration.parse form and
 * must not be negative).
 *
 * Example: 'earliest' -> true; 'by_duration:PT1H' -> true; 'by_duration:-PT1H' -> false; 'none' -> false.
 */
export function isShareAutoOffsetReset(value: string): boolean {
  if (value === 'earliest' || value === 'latest') return true;
  if (!value.startsWith('by_duration:')) return false;
  const ms = parseIsoDurationMs(value.slice('by_duration:'.length));
  return ms !== null && ms >= 0;
}

/**
 * A duration in Java's Duration.parse form (PnDTnHnMn.nS, each part signed,
 * the whole optionally signed), in milliseconds; null when it does not parse.
 *
 * Example: 'PT1H30M' -> 5400000; 'P1D' -> 86400000; '-PT1S' -> -1000; 'PT' -> null.
 */
export function parseIsoDurationMs(text: string): number | null {
  const m = /^([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$/i.exec(text);
  if (!m) return null;
  const [, sign, d, t, h, min, s, frac] = m;
  if (d === undefined && t === undefined) return null;
  if (t !== undefined && h === undefined && min === undefined && s === undefined) return null;
  const n = (x: string | undefined): number => (x === undefined ? 0 : Number(x));
  let ms = n(d) * 86_400_000 + n(h) * 3_600_000 + n(min) * 60_000 + n(s) * 1000;
  if (frac !== undefined && frac !== '') {
    const fracMs = Number(frac.padEnd(9, '0')) / 1e6;
    ms += s !== undefined && s.startsWith('-') ? -fracMs : fracMs;
  }
  return sign === '-' ? -ms : ms;
}

function def(
  name: string,
  type: ConfigType,
  dflt: string | null,
  check: ValueCheck | undefined,
  brokerSynonym: string | null,
  doc: string,
  more: { internal?: boolean; min?: Bound; max?: Bound } = {},
): GroupConfigDef {
  return {
    name,
    type,
    default: dflt,
    ...(check ? { check } : {}),
    internal: more.internal ?? false,
    brokerSynonym,
    ...(more.min ? { min: more.min } : {}),
    ...(more.max ? { max: more.max } : {}),
    doc,
  };
}

const range = (prefix: string, what: string, min: number, max: number): { min: Bound; max: Bound } => ({
  min: [`${prefix}.min.${what}`, min],
  max: [`${prefix}.max.${what}`, max],
});

/** Every group config of Kafka 4.4.0, in Kafka's definition order. */
export const GROUP_CONFIGS: readonly GroupConfigDef[] = [
  def('consumer.session.timeout.ms', 'int', '45000', atLeast(1), 'group.consumer.session.timeout.ms', 'A member of this consumer group (consumer protocol) not heard from for this long is removed from it.', range('group.consumer', 'session.timeout.ms', 45000, 60000)),
  def('consumer.heartbeat.interval.ms', 'int', '5000', atLeast(1), 'group.consumer.heartbeat.interval.ms', 'How often members of this consumer group are told to heartbeat.', range('group.consumer', 'heartbeat.interval.ms', 5000, 15000)),
  def('consumer.assignment.interval.ms', 'int', '1000', atLeast(0), 'group.consumer.assignment.interval.ms', 'Least time between two target assignments of this consumer group.', range('group.consumer', 'assignment.interval.ms', 0, 15000)),
  def('consumer.assignor.offload.enable', 'boolean', 'true', undefined, 'group.consumer.assignor.offload.enable', 'Whether this consumer group\'s assignments are computed off the coordinator\'s request path.', { internal: true }),
  def('share.session.timeout.ms', 'int', '45000', atLeast(1), 'group.share.session.timeout.ms', 'A member of this share group not heard from for this long is removed from it.', range('group.share', 'session.timeout.ms', 45000, 60000)),
  def('share.heartbeat.interval.ms', 'int', '5000', atLeast(1), 'group.share.heartbeat.interval.ms', 'How often members of this share group are told to heartbeat.', range('group.share', 'heartbeat.interval.ms', 5000, 15000)),
  def('share.record.lock.duration.ms', 'int', '30000', atLeast(1000), 'group.share.record.lock.duration.ms', 'How long a record delivered to a member of this share group stays locked to it before it can be delivered again.', range('group.share', 'record.lock.duration.ms', 15000, 60000)),
  def('share.delivery.count.limit', 'int', '5', atLeast(2), 'group.share.delivery.count.limit', 'How many times a record is delivered to this share group before it is archived as undeliverable.', range('group.share', 'delivery.count.limit', 2, 10)),
  def('share.partition.max.record.locks', 'int', '2000', atLeast(100), 'group.share.partition.max.record.locks', 'Most records of one partition locked to members of this share group at once.', range('group.share', 'partition.max.record.locks', 100, 4000)),
  def('share.auto.offset.reset', 'string', 'latest', AUTO_OFFSET_RESET, null, 'Where this share group starts reading a partition it has no position in: latest, earliest, or by_duration:<ISO-8601 duration> (the first record at most that long before now).'),
  def('share.isolation.level', 'string', 'read_uncommitted', oneOf('read_committed', 'read_uncommitted'), null, 'read_committed: this share group is given only records of committed transactions; read_uncommitted: every record.'),
  def('share.renew.acknowledge.enable', 'boolean', 'true', undefined, null, 'Whether members of this share group may renew the lock of records they hold.'),
  def('share.assignment.interval.ms', 'int', '1000', atLeast(0), 'group.share.assignment.interval.ms', 'Least time between two target assignments of this share group.', range('group.share', 'assignment.interval.ms', 0, 15000)),
  def('share.assignor.offload.enable', 'boolean', 'true', undefined, 'group.share.assignor.offload.enable', 'Whether this share group\'s assignments are computed off the coordinator\'s request path.', { internal: true }),
  def('streams.session.timeout.ms', 'int', '45000', atLeast(1), 'group.streams.session.timeout.ms', 'A member of this streams group not heard from for this long is removed from it.', range('group.streams', 'session.timeout.ms', 45000, 60000)),
  def('streams.heartbeat.interval.ms', 'int', '5000', atLeast(1), 'group.streams.heartbeat.interval.ms', 'How often members of this streams group are told to heartbeat.', range('group.streams', 'heartbeat.interval.ms', 5000, 15000)),
  def('streams.num.standby.replicas', 'int', '0', atLeast(0), 'group.streams.num.standby.replicas', 'Standby copies of each stateful task of this streams group.', { max: ['group.streams.max.standby.replicas', 2] }),
  def('streams.initial.rebalance.delay.ms', 'int', '3000', atLeast(0), 'group.streams.initial.rebalance.delay.ms', 'How long a new streams group waits for more members before its first assignment.'),
  def('streams.assignment.interval.ms', 'int', '1000', atLeast(0), 'group.streams.assignment.interval.ms', 'Least time between two target assignments of this streams group.', range('group.streams', 'assignment.interval.ms', 0, 15000)),
  def('streams.assignor.offload.enable', 'boolean', 'true', undefined, 'group.streams.assignor.offload.enable', 'Whether this streams group\'s assignments are computed off the coordinator\'s request path.', { internal: true }),
  def('streams.task.offset.interval.ms', 'int', '60000', atLeast(1), 'group.streams.task.offset.interval.ms', 'How often members of this streams group report the changelog offsets of their warm-up tasks.', { internal: true, min: ['group.streams.min.task.offset.interval.ms', 15000] }),
  def('streams.num.warmup.replicas', 'int', '2', atLeast(0), 'group.streams.num.warmup.replicas', 'Most warm-up copies of tasks this streams group has at once.', { internal: true, max: ['group.streams.max.warmup.replicas', 20] }),
  def('streams.rack.aware.assignment.tags', 'list', '', undefined, 'group.streams.rack.aware.assignment.tags', 'Client tag keys over which the standby tasks of this streams group are spread.'),
  def('streams.acceptable.recovery.lag', 'long', '10000', atLeast(0), 'group.streams.acceptable.recovery.lag', 'Most offsets a member of this streams group may lag behind a task\'s changelog and still be given it as active.', { internal: true }),
  def('streams.assignor.name', 'string', null, undefined, 'group.streams.assignors', 'The task assignor of this streams group, one of the broker\'s group.streams.assignors; the first of those when not set.'),
  def('errors.deadletterqueue.topic.name', 'string', '', undefined, null, 'The dead-letter topic of this share group; empty for none.'),
  def('errors.deadletterqueue.copy.record.enable', 'boolean', 'false', undefined, null, 'Whether a record written to this share group\'s dead-letter topic carries a copy of the original record, not only its context headers.'),
];

const BY_NAME: ReadonlyMap<string, GroupConfigDef> = new Map(GROUP_CONFIGS.map((d) => [d.name, d]));

export function groupConfigDef(name: string): GroupConfigDef | undefined {
  return BY_NAME.get(name);
}

/**
 * The order in which Kafka 4.4.0's DescribeConfigs lists a group's configs
 * (the iteration order of the Java hash map that holds them): the keys that
 * are not internal. Internal keys a group overrides come first.
 */
export const GROUP_CONFIG_DESCRIBE_ORDER: readonly string[] = [
  'consumer.session.timeout.ms',
  'streams.assignor.name',
  'consumer.assignment.interval.ms',
  'errors.deadletterqueue.copy.record.enable',
  'share.auto.offset.reset',
  'streams.rack.aware.assignment.tags',
  'share.renew.acknowledge.enable',
  'streams.initial.rebalance.delay.ms',
  'share.session.timeout.ms',
  'streams.assignment.interval.ms',
  'share.heartbeat.interval.ms',
  'streams.heartbeat.interval.ms',
  'share.delivery.count.limit',
  'errors.deadletterqueue.topic.name',
  'consumer.heartbeat.interval.ms',
  'share.record.lock.duration.ms',
  'share.assignment.interval.ms',
  'share.isolation.level',
  'streams.session.timeout.ms',
  'share.partition.max.record.locks',
  'streams.num.standby.replicas',
];

/** The streams task assignors the broker has (group.streams.assignors), in order. */
function streamsAssignors(broker: BrokerConfigLookup): string[] {
  return (broker.value('group.streams.assignors') ?? 'sticky')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function boundValue(broker: BrokerConfigLookup, bound: Bound): number {
  const raw = broker.value(bound[0]);
  const n = raw === null ? Number.NaN : Number(raw.trim());
  return Number.isFinite(n) ? n : bound[1];
}

/**
 * The value a group without its own `name` runs with, as the broker gives
 * it (not normalized); null when there is none (streams.assignor.name on a
 * broker without assignors). Internal keys fall back to their own default.
 *
 * Example: brokerDefault(def('share.record.lock.duration.ms'), broker with
 * group.share.record.lock.duration.ms=20000) -> '20000'.
 */
export function brokerDefault(d: GroupConfigDef, broker: BrokerConfigLookup): string | null {
  if (d.name === 'streams.assignor.name') return streamsAssignors(broker)[0] ?? null;
  if (d.brokerSynonym === null || d.internal) return d.default;
  return broker.value(d.brokerSynonym) ?? d.default;
}

export type GroupConfigCheck = { ok: true } | { ok: false; errorCode: number; message: string };

const invalid = (message: string): GroupConfigCheck => ({ ok: false, errorCode: ErrorCode.INVALID_CONFIG, message });

/** Kafka splits a list on commas with the spaces around them. */
function rawList(value: string): string[] {
  const trimmed = value.trim();
  return trimmed === '' ? [] : trimmed.split(/\s*,\s*/);
}

/**
 * Checks the complete set of overrides a group would have after a change,
 * in Kafka 4.4's order: every name known, no tag key twice, each value of its
 * type and within the key's own range, each within the broker's bounds for
 * it, a streams assignor the broker has, every session timeout above its
 * heartbeat interval (the broker's value standing in for the one not set),
 * and no dead-letter topic named like an internal one. Every refusal is
 * INVALID_CONFIG with Kafka's message.
 *
 * Example: checkGroupConfigs({ 'share.record.lock.duration.ms': '5000' }, broker
 * with Kafka's defaults) -> { ok: false, errorCode: INVALID_CONFIG, message:
 * 'share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.' }.
 */
export function checkGroupConfigs(configs: Readonly<Record<string, string>>, broker: BrokerConfigLookup): GroupConfigCheck {
  for (const name of Object.keys(configs)) {
    if (!BY_NAME.has(name)) return invalid(`Unknown group config name: ${name}`);
  }
  const tags = configs['streams.rack.aware.assignment.tags'];
  if (tags !== undefined) {
    const list = rawList(tags);
    if (new Set(list).size !== list.length) return invalid('streams.rack.aware.assignment.tags must not contain duplicate tag keys.');
  }
  const parsed = new Map<string, string | number>();
  for (const d of GROUP_CONFIGS) {
    const raw = configs[d.name];
    if (raw === undefined) continue;
    const problem = checkConfigValue(d.name, d.type, raw, d.check);
    if (problem !== null) return invalid(problem);
    if (d.type === 'list' && rawList(raw).some((e) => e === '')) return invalid(`Configuration '${d.name}' values must not be empty.`);
    const value = parseConfigValue(d.name, d.type, raw);
    if (value.ok) parsed.set(d.name, typeof value.value === 'bigint' ? Number(value.value) : String(value.value));
  }
  const num = (name: string): number | undefined => parsed.get(name) as number | undefined;
  // Kafka checks the bounds in this order, heartbeat before session.
  const bounded = [
    'consumer.heartbeat.interval.ms',
    'consumer.session.timeout.ms',
    'consumer.assignment.interval.ms',
    'share.heartbeat.interval.ms',
    'share.session.timeout.ms',
    'share.record.lock.duration.ms',
    'share.delivery.count.limit',
    'share.partition.max.record.locks',
    'share.assignment.interval.ms',
    'streams.heartbeat.interval.ms',
    'streams.session.timeout.ms',
    'streams.num.standby.replicas',
    'streams.assignment.interval.ms',
    'streams.task.offset.interval.ms',
    'streams.num.warmup.replicas',
  ];
  for (const name of bounded) {
    const v = num(name);
    if (v === undefined) continue;
    const d = BY_NAME.get(name)!;
    const lo = d.min ? boundValue(broker, d.min) : undefined;
    const hi = d.max ? boundValue(broker, d.max) : undefined;
    if (lo !== undefined && hi !== undefined) {
      if (v < lo || v > hi) return invalid(`${name} must be in the range ${lo} to ${hi} inclusive.`);
    } else if (hi !== undefined) {
      if (v > hi) return invalid(`${name} must be less than or equal to ${hi}`);
    } else if (lo !== undefined && v < lo) {
      return invalid(`${name} must be greater than or equal to ${lo}`);
    }
  }
  const assignor = parsed.get('streams.assignor.name');
  if (assignor !== undefined) {
    const registered = streamsAssignors(broker);
    if (!registered.includes(String(assignor))) {
      return invalid(`streams.assignor.name '${assignor}' is not a registered task assignor. Registered assignors are: [${registered.join(', ')}].`);
    }
  }
  for (const kind of ['consumer', 'share', 'streams']) {
    const sessionKey = `${kind}.session.timeout.ms`;
    const heartbeatKey = `${kind}.heartbeat.interval.ms`;
    if (!parsed.has(sessionKey) && !parsed.has(heartbeatKey)) continue;
    const session = num(sessionKey) ?? Number(brokerDefault(BY_NAME.get(sessionKey)!, broker));
    const heartbeat = num(heartbeatKey) ?? Number(brokerDefault(BY_NAME.get(heartbeatKey)!, broker));
    if (session <= heartbeat) return invalid(`${sessionKey} must be greater than ${heartbeatKey}`);
  }
  const dlq = parsed.get('errors.deadletterqueue.topic.name');
  if (typeof dlq === 'string' && dlq.startsWith('__')) return invalid("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'");
  return { ok: true };
}

/** One group config as DescribeConfigs shows it: the value, and whether the group sets it. */
export interface GroupConfigValue {
  readonly def: GroupConfigDef;
  /** Normalized as Kafka writes values back; null when there is none. */
  readonly value: string | null;
  readonly overridden: boolean;
}

/**
 * The configs DescribeConfigs lists for a group with `overrides`, in Kafka's
 * order: internal keys the group overrides, then every other key.
 *
 * Example: describeGroupConfigs(new Map([['share.auto.offset.reset',
 * 'earliest']]), broker)[4] -> { def: share.auto.offset.reset, value:
 * 'earliest', overridden: true }.
 */
export function describeGroupConfigs(overrides: ReadonlyMap<string, string>, broker: BrokerConfigLookup): GroupConfigValue[] {
  const internal = GROUP_CONFIGS.filter((d) => d.internal && overrides.has(d.name)).map((d) => d.name);
  return [...internal, ...GROUP_CONFIG_DESCRIBE_ORDER].map((name) => {
    const d = BY_NAME.get(name)!;
    const own = overrides.get(name);
    const raw = own ?? brokerDefault(d, broker);
    return { def: d, value: raw === null ? null : normalizeConfigValue(d.type, raw), overridden: own !== undefined };
  });
}

/** What a group runs with: its overrides, else the broker's settings, else Kafka's defaults. */
export interface EffectiveGroupConfig {
  readonly consumerSessionTimeoutMs: number;
  readonly consumerHeartbeatIntervalMs: number;
  readonly shareSessionTimeoutMs: number;
  readonly shareHeartbeatIntervalMs: number;
  readonly shareRecordLockDurationMs: number;
  /** 'latest' | 'earliest' | 'by_duration:PT...' */
  readonly shareAutoOffsetReset: string;
  readonly shareIsolationLevel: 'read_uncommitted' | 'read_committed';
  readonly shareDeliveryCountLimit: number;
  readonly streamsSessionTimeoutMs: number;
  readonly streamsHeartbeatIntervalMs: number;
  readonly streamsNumStandbyReplicas: number;
}

/**
 * The settings a group with `overrides` runs with. An override outside the
 * broker's current bounds is moved to the nearest bound (the bounds may
 * have changed since it was set); a value that does not parse (never
 * stored by gregor) is ignored.
 *
 * Example: effectiveGroupConfig(new Map([['share.record.lock.duration.ms',
 * '15000']]), broker with Kafka's defaults) -> { shareRecordLockDurationMs:
 * 15000, shareDeliveryCountLimit: 5, shareAutoOffsetReset: 'latest', ... }.
 */
export function effectiveGroupConfig(overrides: ReadonlyMap<string, string>, brokerDefaults: BrokerConfigLookup): EffectiveGroupConfig {
  const int = (name: string): number => {
    const d = BY_NAME.get(name)!;
    const fallback = Number(d.default);
    const fromBroker = Number(brokerDefault(d, brokerDefaults)?.trim());
    const base = Number.isInteger(fromBroker) ? fromBroker : fallback;
    const own = overrides.get(name);
    if (own === undefined || !/^\s*[+-]?\d+\s*$/.test(own)) return base;
    let v = Number(own.trim());
    if (d.min) v = Math.max(v, boundValue(brokerDefaults, d.min));
    if (d.max) v = Math.min(v, boundValue(brokerDefaults, d.max));
    return v;
  };
  const reset = overrides.get('share.auto.offset.reset')?.trim();
  const isolation = overrides.get('share.isolation.level')?.trim();
  return {
    consumerSessionTimeoutMs: int('consumer.session.timeout.ms'),
    consumerHeartbeatIntervalMs: int('consumer.heartbeat.interval.ms'),
    shareSessionTimeoutMs: int('share.session.timeout.ms'),
    shareHeartbeatIntervalMs: int('share.heartbeat.interval.ms'),
    shareRecordLockDurationMs: int('share.record.lock.duration.ms'),
    shareAutoOffsetReset: reset !== undefined && isShareAutoOffsetReset(reset) ? reset : 'latest',
    shareIsolationLevel: isolation === 'read_committed' ? 'read_committed' : 'read_uncommitted',
    shareDeliveryCountLimit: int('share.delivery.count.limit'),
    streamsSessionTimeoutMs: int('streams.session.timeout.ms'),
    streamsHeartbeatIntervalMs: int('streams.heartbeat.interval.ms'),
    streamsNumStandbyReplicas: int('streams.num.standby.replicas'),
  };
}

/** Kafka's limit on one config value's length (the controller refuses longer ones). */
export const MAX_CONFIG_VALUE_LENGTH = 32767;

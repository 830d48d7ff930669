/**
 * A broker's config as DescribeConfigs shows it and as its logs run with it:
 * four layers, the first set winning, as in Kafka:
 *
 *   1. this broker's dynamic configs        DYNAMIC_BROKER_CONFIG (2)
 *   2. the cluster-wide dynamic defaults    DYNAMIC_DEFAULT_BROKER_CONFIG (3)
 *   3. what the operator set at start       STATIC_BROKER_CONFIG (4)
 *      (file, environment or flags)
 *   4. the default                          DEFAULT_CONFIG (5)
 *      (gregor's for its own keys, else Kafka's)
 *
 * A topic config takes the topic's own value (TOPIC_CONFIG, 1), else the
 * value of its broker synonyms through those layers (retention.ms from
 * log.retention.ms, .minutes, .hours: see storage/topic-config.ts), else
 * Kafka's default.
 *
 * Synonyms are listed as Kafka lists them: for each layer in the order above,
 * each synonym name set there, then everything before the config's own name
 * (the first synonym of a topic config) dropped. So retention.ms lists no
 * synonym at all on a broker with only log.retention.hours at its default,
 * exactly as Kafka 4.0 does.
 */
import type { LogManager } from '../../storage/log-manager.js';
import type { LogConfig } from '../../storage/log-config.js';
import {
  checkConfigValue,
  normalizeConfigValue,
  parseConfigValue,
  topicConfigDef,
  topicConfigValue,
  topicLogConfig,
  TOPIC_CONFIG_DESCRIBE_ORDER,
  type ConfigType,
} from '../../storage/topic-config.js';
import {
  brokerConfigDoc,
  brokerSynonyms,
  DESCRIBED_BROKER_CONFIGS,
  dynamicMode,
  kafkaBrokerConfig,
  KAFKA_LIST_ORDER,
  LISTED_BROKER_CONFIGS,
  LISTENER_PREFIXED_SECURITY_CONFIGS,
} from './broker-config-catalog.js';
import { ErrorCode } from '../../wire/errors.js';
import type { DynamicBrokerConfigs, MetadataImage, MetadataStore } from './metadata-image.js';

/** Where a config value comes from, as DescribeConfigs v1+ and CreateTopics v5+ number it. */
export const ConfigSource = {
  UNKNOWN: 0,
  TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
  DYNAMIC_BROKER_LOGGER_CONFIG: 6,
  CLIENT_METRICS_CONFIG: 7,
  /** A group's own override (the admin client's DYNAMIC_GROUP_CONFIG). */
  GROUP_CONFIG: 8,
} as const;

/** One of gregor's own config keys (src/config.ts). */
export interface StaticConfigKey {
  readonly type: ConfigType;
  /** gregor's default; null when the key has none. It replaces Kafka's default where both exist. */
  readonly default: string | null;
  readonly doc: string;
}

/** The broker's config as it started. */
export interface StaticBrokerConfig {
  /** What the operator set (file, environment, flags), by Kafka name. */
  readonly values: ReadonlyMap<string, string>;
  /** Every key gregor's config knows. */
  readonly keys: ReadonlyMap<string, StaticConfigKey>;
}

export const NO_STATIC_CONFIG: StaticBrokerConfig = { values: new Map(), keys: new Map() };

export interface ConfigSynonym {
  readonly name: string;
  readonly value: string | null;
  readonly source: number;
}

/** One config of a DescribeConfigs answer, free of wire types. */
export interface ConfigEntry {
  readonly name: string;
  readonly value: string | null;
  readonly source: number;
  readonly readOnly: boolean;
  readonly sensitive: boolean;
  /** null for a name whose type is not known (answered as config_type 0). */
  readonly type: ConfigType | null;
  readonly documentation: string | null;
  readonly synonyms: readonly ConfigSynonym[];
}

export interface DescribeOptions {
  /** Only these names; null or empty means every one. */
  readonly keys: readonly string[] | null;
  readonly includeSynonyms: boolean;
  readonly includeDocumentation: boolean;
}

export type ConfigChangeCheck = { ok: true } | { ok: false; errorCode: number; message: string };

/** Java's String.hashCode of `s`. */
function javaHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/**
 * `names` as Java prints a HashSet of them, the way Kafka's messages name a
 * set of configs: in the order of the hash table's buckets.
 *
 * Example: javaSetString(['num.partitions']) -> '[num.partitions]'.
 */
export function javaSetString(names: readonly string[]): string {
  let capacity = 16;
  while (names.length > capacity * 0.75) capacity *= 2;
  const bucket = (n: string): number => {
    const h = javaHash(n);
    return (h ^ (h >>> 16)) & (capacity - 1);
  };
  const ordered = names.map((n, i) => ({ n, i, b: bucket(n) })).sort((x, y) => x.b - y.b || x.i - y.i);
  return `[${ordered.map((x) => x.n).join(', ')}]`;
}

function wanted(keys: readonly string[] | null): (name: string) => boolean {
  if (keys === null || keys.length === 0) return () => true;
  const set = new Set(keys);
  return (name) => set.has(name);
}

/**
 * One broker's view of the config layers at one image. Cheap to make: build
 * one per request or per image.
 */
export class BrokerConfigs {
  private readonly staticKeys: ReadonlySet<string>;

  constructor(
    readonly staticConfig: StaticBrokerConfig,
    readonly dynamic: DynamicBrokerConfigs,
    readonly nodeId: number,
  ) {
    this.staticKeys = new Set(staticConfig.keys.keys());
  }

  static of(image: MetadataImage, staticConfig: StaticBrokerConfig, nodeId: number): BrokerConfigs {
    return new BrokerConfigs(staticConfig, image.dynamicBrokerConfigs, nodeId);
  }

  private get own(): Readonly<Record<string, string>> {
    return this.dynamic.perBroker.get(this.nodeId) ?? {};
  }

  /**
   * The default of a broker config: gregor's for its own keys, else Kafka's;
   * null when there is none (gregor's keys without a default, such as
   * broker.id, keep Kafka's).
   */
  defaultValue(name: string): string | null {
    return this.staticConfig.keys.get(name)?.default ?? kafkaBrokerConfig(name)?.default ?? null;
  }

  /**
   * The type of a broker config: Kafka's for Kafka's names (gregor reads
   * listeners as a list where Kafka declares a string), else gregor's; null
   * for a name neither defines.
   */
  typeOf(name: string): ConfigType | null {
    return kafkaBrokerConfig(name)?.type ?? this.staticConfig.keys.get(name)?.type ?? null;
  }

  /**
   * The value of a broker config through the layers, as it was given (not
   * normalized); null when no layer sets it and it has no default.
   *
   * Example: with log.retention.ms set to 3600000 at the cluster default,
   * value('log.retention.ms') -> '3600000' and value('log.retention.hours') -> '168'.
   */
  value = (name: string): string | null => {
    const own = this.own[name];
    if (own !== undefined) return own;
    const clusterDefault = this.dynamic.clusterDefault[name];
    if (clusterDefault !== undefined) return clusterDefault;
    return this.staticConfig.values.get(name) ?? this.defaultValue(name);
  };

  /** The synonyms of `name` among `group`, layer by layer, from `name` on (Kafka's configSynonyms). */
  private synonyms(name: string, group: readonly string[], sensitive: boolean): ConfigSynonym[] {
    const out: ConfigSynonym[] = [];
    const add = (source: number, get: (n: string) => string | null | undefined): void => {
      for (const n of group) {
        const v = get(n);
        if (v !== undefined && v !== null) out.push({ name: n, value: sensitive ? null : v, source });
      }
    };
    add(ConfigSource.DYNAMIC_BROKER_CONFIG, (n) => this.own[n]);
    add(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, (n) => this.dynamic.clusterDefault[n]);
    add(ConfigSource.STATIC_BROKER_CONFIG, (n) => this.staticConfig.values.get(n));
    add(ConfigSource.DEFAULT_CONFIG, (n) => this.defaultValue(n));
    const from = out.findIndex((s) => s.name === name);
    return from < 0 ? [] : out.slice(from);
  }

  /**
   * The synonyms DescribeConfigs lists for broker config `name` where
   * another config falls back to it (a group config without an override):
   * each layer that sets it, in order, down to its default.
   *
   * Example: on a broker started with group.share.record.lock.duration.ms=20000,
   * fallbackSynonyms('group.share.record.lock.duration.ms') -> [{ value: '20000',
   * source: STATIC_BROKER_CONFIG }, { value: '30000', source: DEFAULT_CONFIG }] (names left out).
   */
  fallbackSynonyms(name: string): ConfigSynonym[] {
    return this.synonyms(name, brokerSynonyms(name), this.typeOf(name) === 'password');
  }

  /**
   * Whether DescribeConfigs shows `name` as read-only: unless it can change at
   * run time (see dynamicMode), which names nobody knows cannot, as in Kafka,
   * though they are stored when set.
   */
  readOnly(name: string): boolean {
    const mode = dynamicMode(name, this.staticKeys);
    return mode !== 'cluster-wide' && mode !== 'per-broker';
  }

  private brokerEntry(name: string, perBroker: boolean, opts: DescribeOptions): ConfigEntry {
    const type = this.typeOf(name);
    const sensitive = type === null || type === 'password';
    // The cluster default resource shows what is set there, not what this broker ends up with.
    const raw = perBroker ? this.value(name) : (this.dynamic.clusterDefault[name] ?? null);
    const all = this.synonyms(name, brokerSynonyms(name), sensitive).filter((s) => perBroker || s.source === ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
    return {
      name,
      value: sensitive || raw === null ? null : normalizeConfigValue(type, raw),
      source: all[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
      readOnly: this.readOnly(name),
      sensitive,
      type,
      documentation: opts.includeDocumentation && type !== null ? (this.staticConfig.keys.get(name)?.doc ?? brokerConfigDoc(name)) : null,
      synonyms: opts.includeSynonyms ? all : [],
    };
  }

  /**
   * The configs of this broker (`perBroker`) or of the cluster default
   * resource (the broker resource named ""), which lists only what is set
   * there, as Kafka does. A broker lists every config Kafka's broker lists,
   * gregor's own keys, and any name set at start or dynamically; in Kafka's
   * order, gregor's own keys after.
   *
   * Example: on a broker started with no config, describeBroker(true,
   * { keys: ['log.retention.hours'], includeSynonyms: true, ... }) ->
   * [{ name: 'log.retention.hours', value: '168', source: DEFAULT_CONFIG,
   * readOnly: true, synonyms: [{ name: 'log.retention.hours', value: '168',
   * source: DEFAULT_CONFIG }], ... }].
   */
  describeBroker(perBroker: boolean, opts: DescribeOptions): ConfigEntry[] {
    const names = perBroker
      ? new Set([...DESCRIBED_BROKER_CONFIGS, ...LISTED_BROKER_CONFIGS, ...this.staticConfig.keys.keys(), ...this.staticConfig.values.keys(), ...Object.keys(this.dynamic.clusterDefault), ...Object.keys(this.own)])
      : new Set(Object.keys(this.dynamic.clusterDefault));
    const order = (n: string): number => KAFKA_LIST_ORDER.get(n) ?? Number.POSITIVE_INFINITY;
    const keep = wanted(opts.keys);
    return [...names]
      .filter(keep)
      .map((name, i) => ({ name, i }))
      .sort((a, b) => order(a.name) - order(b.name) || a.i - b.i)
      .map(({ name }) => this.brokerEntry(name, perBroker, opts));
  }

  /**
   * Every topic config of a topic with `overrides`, in Kafka's order: its
   * value, where it comes from, and its synonyms (the override first, then
   * the broker configs it falls back to).
   *
   * Example: describeTopic({ 'retention.ms': '1000' }, { keys: ['retention.ms'],
   * includeSynonyms: true, ... }) -> [{ name: 'retention.ms', value: '1000',
   * source: TOPIC_CONFIG, synonyms: [{ name: 'retention.ms', value: '1000',
   * source: TOPIC_CONFIG }], ... }] on a broker with log.retention.* at their defaults.
   */
  describeTopic(overrides: Readonly<Record<string, string>>, opts: DescribeOptions): ConfigEntry[] {
    const keep = wanted(opts.keys);
    return TOPIC_CONFIG_DESCRIBE_ORDER.filter(keep).map((name) => {
      const d = topicConfigDef(name)!;
      const value = topicConfigValue(d, overrides, this.value);
      const server = d.serverDefaults[0]?.[0];
      const fromBroker = server === undefined ? [] : this.synonyms(server, brokerSynonyms(server), false);
      const own = overrides[name];
      const all = own !== undefined && parseConfigValue(name, d.type, own).ok ? [{ name, value, source: ConfigSource.TOPIC_CONFIG }, ...fromBroker] : fromBroker;
      return {
        name,
        value,
        source: all[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
        readOnly: false,
        sensitive: false,
        type: d.type,
        documentation: opts.includeDocumentation ? d.doc : null,
        synonyms: opts.includeSynonyms ? all : [],
      };
    });
  }

  /** The value every topic config takes on a topic with `overrides`. Example: topicValue({}, 'cleanup.policy') -> 'delete'. */
  topicValue(overrides: Readonly<Record<string, string>>, name: string): string | undefined {
    const d = topicConfigDef(name);
    return d === undefined ? undefined : topicConfigValue(d, overrides, this.value);
  }

  /** The LogConfig of a topic with `overrides` on this broker. */
  logConfigFor(overrides: Readonly<Record<string, string>>): LogConfig {
    return topicLogConfig(overrides, this.value);
  }

  /** The LogConfig of a topic with no overrides: the broker's log defaults. */
  logDefaults(): LogConfig {
    return this.logConfigFor({});
  }

  /**
   * Checks the whole set of dynamic configs one level (one broker when
   * `perBroker`, else the cluster default) would have after a change, as
   * Kafka's broker does, in its order: names it cannot change at run time,
   * TLS configs without a listener prefix, each value against its type and
   * range, then (at the cluster default) names Kafka changes per broker only.
   * Each is INVALID_REQUEST, naming the configs as a Java set.
   *
   * Example: checkDynamicChange({ 'num.partitions': '3' }, true) -> { ok: false,
   * errorCode: INVALID_REQUEST, message: 'Cannot update these configs
   * dynamically: [num.partitions]' }.
   */
  checkDynamicChange(configs: Readonly<Record<string, string>>, perBroker: boolean): ConfigChangeCheck {
    const names = Object.keys(configs);
    const refuse = (what: string, which: readonly string[]): ConfigChangeCheck => ({ ok: false, errorCode: ErrorCode.INVALID_REQUEST, message: `${what}: ${javaSetString(which)}` });
    const fixed = names.filter((n) => dynamicMode(n, this.staticKeys) === 'read-only');
    if (fixed.length > 0) return refuse('Cannot update these configs dynamically', fixed);
    const unprefixed = names.filter((n) => LISTENER_PREFIXED_SECURITY_CONFIGS.has(n));
    if (unprefixed.length > 0) return refuse('These security configs can be dynamically updated only per-listener using the listener prefix', unprefixed);
    for (const name of names) {
      const type = this.typeOf(name);
      if (type === null) continue;
      const problem = checkConfigValue(name, type, configs[name]!, kafkaBrokerConfig(name)?.check);
      if (problem !== null) return { ok: false, errorCode: ErrorCode.INVALID_REQUEST, message: problem };
    }
    const perBrokerOnly = names.filter((n) => dynamicMode(n, this.staticKeys) === 'per-broker');
    if (!perBroker && perBrokerOnly.length > 0) return refuse('Cannot update these configs at default cluster level, broker id must be specified', perBrokerOnly);
    return { ok: true };
  }

  /** The value a broker config of list type starts from for APPEND and SUBTRACT when the level does not set it: its default. */
  listDefault(name: string): string {
    return this.defaultValue(name) ?? '';
  }
}

/**
 * The LogConfig of every topic in `image`, by name, for LogManager.open.
 * Example: an image with topic 'orders' whose configs set retention.ms 1000
 * -> Map { 'orders' => LogConfig with retentionMs 1000 }.
 */
export function topicLogConfigs(image: MetadataImage, staticConfig: StaticBrokerConfig, nodeId: number): Map<string, LogConfig> {
  const view = BrokerConfigs.of(image, staticConfig, nodeId);
  return new Map([...image.topics.values()].map((t) => [t.name, view.logConfigFor(t.configs)]));
}

/**
 * Keeps every topic's logs on the LogConfig its configs and the broker's
 * (dynamic) defaults give: at once for the current image, then for every new
 * image, before the change that made it is reported. Only topics whose
 * LogConfig changed are touched, and LogManager.updateConfig itself leaves
 * alone a log already on that config. Subscribe it before the replica
 * manager, so a new topic's logs open with their config rather than being
 * reopened with it. Returns the function that stops it.
 *
 * Example: after store.alterTopicConfigs('orders', { 'retention.ms': '1000' })
 * resolves, logs.get('orders', 0).config.retentionMs is 1000.
 */
export function followTopicLogConfigs(store: MetadataStore, logs: LogManager, staticConfig: StaticBrokerConfig, nodeId: number): () => void {
  let applied = new Map<string, string>();
  const apply = (image: MetadataImage): void => {
    const next = new Map<string, string>();
    for (const [name, config] of topicLogConfigs(image, staticConfig, nodeId)) {
      const key = JSON.stringify(config);
      next.set(name, key);
      if (applied.get(name) !== key) logs.updateConfig(name, config);
    }
    applied = next;
  };
  apply(store.image());
  return store.subscribe(apply);
}

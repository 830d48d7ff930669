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
import { CONFIG_DEFS, configDef, configReader, type ConfigKey, type ConfigReader } from '../cluster/metadata/broker-config-registry.js';

export { CONFIG_DEFS, type ConfigKey } from '../cluster/metadata/broker-config-registry.js';

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
  /** Each served listener's security protocol (listener.security.protocol.map): PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. */
  readonly securityProtocols: ReadonlyMap<string, string>;
  readonly advertisedListeners: readonly ListenerSpec[] | null;
  /** The first of logDirs: the broker's own files (meta.properties, the local metadata store) live there. */
  readonly dataDir: string;
  /** log.dirs (or log.dir), in order. */
  readonly logDirs: readonly string[];
  readonly nodeId: number;
  readonly rack: string | null;
  readonly metadata: MetadataStoreSpec;
  /** Every key's value, as set or by default, read by Kafka name: config.values.int('group.max.size'). */
  readonly values: ConfigReader;
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
  const def = configDef(key);
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

/** The TLS and SASL keys gregor reads for its SSL and SASL listeners (src/tls.ts, src/sasl.ts), also under a listener prefix. */
const SECURITY_KEYS: ReadonlySet<string> = new Set([
  'ssl.keystore.type', 'ssl.keystore.location', 'ssl.keystore.password', 'ssl.key.password', 'ssl.keystore.certificate.chain', 'ssl.keystore.key',
  'ssl.truststore.type', 'ssl.truststore.location', 'ssl.truststore.certificates', 'ssl.truststore.password', 'ssl.client.auth',
  'sasl.enabled.mechanisms', 'sasl.jaas.config', 'plain.sasl.jaas.config',
]);

/** Whether gregor acts on a key it takes; the others are listed once at start as not applying. */
function applies(key: string): boolean {
  const unprefixed = /^listener\.name\.[^.]+\.(.+)$/.exec(key)?.[1] ?? key;
  return key in CONFIG_DEFS || LISTED_BROKER_CONFIGS.includes(key) || LISTENER_KEYS.has(key) || SECURITY_KEYS.has(unprefixed);
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
      if (kind === 'gregor' || kind === 'kafka') {
        const def = kafkaBrokerConfig(key);
        const problem = def === undefined ? null : checkConfigValue(key, def.type, value.trim(), def.check);
        if (problem !== null) throw new ConfigError(`${problem} (from ${src.origin})`);
      }
      // The last source to set a key decides, and the key stays where it was first given.
      raw.set(key, value.trim());
    }
  }
  const values = configReader(raw);
  const get = values.value;
  const int = values.int;
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
  const metadata = parseMetadataStore(get('metadata.store')!, get('metadata.etcd.root')!);
  if (metadata.kind === 'etcd' && protocols.get(interBrokerListener) !== 'PLAINTEXT') {
    throw new ConfigError(`inter.broker.listener.name: brokers of a cluster reach each other in plaintext; name a PLAINTEXT listener (${interBrokerListener} is ${protocols.get(interBrokerListener)})`);
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
  assignorList(get('group.consumer.assignors')!);
  migrationPolicy(get('group.consumer.migration.policy')!);
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
    metadata,
    securityProtocols: new Map(listeners.map((l) => [l.name, protocols.get(l.name)!])),
    values,
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

/**
 * What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: the
 * resource types, the broker id of a broker resource, the broker's config
 * layers as the request sees them, the broker logger, and the checks and
 * writes of a resource's new set of configs.
 *
 * Messages follow Kafka 4.0's wording where clients may show them.
 *
 * A resource's change is read, computed and written without yielding in
 * between (the local store commits before its promise is made), so two
 * requests altering one resource at once cannot lose each other's changes.
 * A store that commits asynchronously must compare-and-set instead.
 */
import { BrokerConfigs, NO_STATIC_CONFIG } from '../cluster/metadata/broker-configs.js';
import { ConcurrentChangeError, UnknownTopicError } from '../cluster/metadata/metadata-image.js';
import { checkTopicConfigs } from '../storage/topic-config.js';
import { ErrorCode } from '../wire/errors.js';
import { invalidTopicNameMessage } from './create-topics.js';
import type { BrokerServices, RequestContext } from './handler.js';

/** Kafka's ConfigResource types. */
export const ResourceType = {
  TOPIC: 2,
  BROKER: 4,
  BROKER_LOGGER: 8,
  CLIENT_METRICS: 16,
  GROUP: 32,
} as const;

export interface ResourceOutcome {
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export const OK: ResourceOutcome = { errorCode: ErrorCode.NONE, errorMessage: null };

export const fail = (errorCode: number, errorMessage: string | null): ResourceOutcome => ({ errorCode, errorMessage });

/** The one logger gregor has, as a broker logger resource lists it. */
export const ROOT_LOGGER = 'root';

/** The levels Kafka 4.0 accepts for a logger, in its order, with the pino level each stands for. */
const LOG_LEVELS: ReadonlyMap<string, string> = new Map([
  ['DEBUG', 'debug'],
  ['ERROR', 'error'],
  ['FATAL', 'fatal'],
  ['INFO', 'info'],
  ['TRACE', 'trace'],
  ['WARN', 'warn'],
]);

/** The root logger's level as Kafka names levels: pino's 'silent' is OFF. */
export function rootLogLevel(services: BrokerServices): string {
  const level = services.log.level;
  return level === 'silent' ? 'OFF' : level.toUpperCase();
}

/** The pino level of a Kafka level name, or undefined when Kafka would refuse it (names are case-sensitive). */
export function pinoLevel(kafkaLevel: string): string | undefined {
  return LOG_LEVELS.get(kafkaLevel);
}

export function invalidLogLevelMessage(logger: string, level: string): string {
  return `Cannot set the log level of ${logger} to ${level} as it is not a supported log level. Valid log levels are ${[...LOG_LEVELS.keys()].join(', ')}`;
}

/** A broker id as Java's Integer.parseInt reads it, or null when it is not one. */
export function parseBrokerId(name: string): number | null {
  if (!/^[+-]?\d+$/.test(name)) return null;
  const n = Number(name);
  return n >= -2147483648 && n <= 2147483647 ? n : null;
}

/** The broker's config layers at the current image. */
export function brokerConfigs(ctx: RequestContext): BrokerConfigs {
  const { metadata, settings } = ctx.services;
  return BrokerConfigs.of(metadata.image(), settings.staticConfig ?? NO_STATIC_CONFIG, settings.nodeId);
}

/**
 * transaction.partition.verification.enable at the current image (Kafka's
 * default: true; AlterConfigs may change it cluster-wide or per broker):
 * whether Produce and TxnOffsetCommit check with the transaction
 * coordinator that a transactional write's partition is in its transaction.
 */
export function verificationEnabled(ctx: RequestContext): boolean {
  return brokerConfigs(ctx).value('transaction.partition.verification.enable')?.trim().toLowerCase() !== 'false';
}

/** Keys of resources given more than once: Kafka refuses every copy. */
export function repeatedResources(resources: readonly { resourceType: number; resourceName: string }[]): Set<string> {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const r of resources) {
    const key = resourceKey(r);
    if (seen.has(key)) repeated.add(key);
    seen.add(key);
  }
  return repeated;
}

export function resourceKey(r: { resourceType: number; resourceName: string }): string {
  return `${r.resourceType}:${r.resourceName}`;
}

/**
 * The answer for a resource type the alter APIs do not take: Kafka's
 * "unknown" for types it does not know (and BROKER_LOGGER in AlterConfigs),
 * and a plain refusal for Kafka's client-metrics configs, which gregor does
 * not have.
 */
export function unsupportedResourceType(type: number): ResourceOutcome {
  if (type === ResourceType.CLIENT_METRICS) {
    return fail(ErrorCode.INVALID_REQUEST, `gregor does not support config resources of type ${type}`);
  }
  return fail(ErrorCode.INVALID_REQUEST, `Unknown resource type ${type}`);
}

export const REPEATED_RESOURCE = fail(ErrorCode.INVALID_REQUEST, 'Each resource must appear at most once.');

type Resource = { resourceType: number; resourceName: string };

/**
 * The body of an AlterConfigs or IncrementalAlterConfigs answer: every
 * resource in request order, altered by `alterOne` one after the other, a
 * resource named twice answered REPEATED_RESOURCE without being altered.
 */
export async function alterEach<R extends Resource>(
  resources: readonly R[],
  alterOne: (r: R) => Promise<ResourceOutcome>,
): Promise<{ throttleTimeMs: number; responses: (ResourceOutcome & Resource)[] }> {
  const repeated = repeatedResources(resources);
  const responses: (ResourceOutcome & Resource)[] = [];
  for (const r of resources) {
    const outcome = repeated.has(resourceKey(r)) ? REPEATED_RESOURCE : await alterOne(r);
    responses.push({ ...outcome, resourceType: r.resourceType, resourceName: r.resourceName });
  }
  return { throttleTimeMs: 0, responses };
}

/** The same answer when the request fails as a whole: `errorCode` for every resource. */
export function alterErrorBody(resources: readonly Resource[], errorCode: number): { throttleTimeMs: number; responses: (ResourceOutcome & Resource)[] } {
  return {
    throttleTimeMs: 0,
    responses: resources.map((r) => ({ errorCode, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName })),
  };
}

/**
 * The checks every altered resource gets first, as Kafka's broker makes them
 * before looking at the resource: a config named twice, then values missing
 * where the operation needs one.
 */
export function checkConfigList(configs: readonly { name: string; value: string | null; needsValue: boolean }[]): ResourceOutcome | null {
  const names = new Set<string>();
  for (const c of configs) {
    if (names.has(c.name)) return fail(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys');
    names.add(c.name);
  }
  const nulls = configs.filter((c) => c.needsValue && c.value === null).map((c) => c.name);
  if (nulls.length > 0) return fail(ErrorCode.INVALID_REQUEST, `Null value not supported for : ${nulls.join(', ')}`);
  return null;
}

/** The topic of a topic resource, or why it cannot be altered. */
export function alterableTopic(ctx: RequestContext, name: string): { ok: true; configs: Readonly<Record<string, string>> } | { ok: false; outcome: ResourceOutcome } {
  if (name === '') return { ok: false, outcome: fail(ErrorCode.INVALID_REQUEST, 'Default topic resources are not allowed.') };
  const badName = invalidTopicNameMessage(name);
  if (badName !== null) return { ok: false, outcome: fail(ErrorCode.INVALID_TOPIC_EXCEPTION, badName) };
  const topic = ctx.services.metadata.image().topics.get(name);
  if (!topic) return { ok: false, outcome: fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${name}' does not exist.`) };
  return { ok: true, configs: topic.configs };
}

/**
 * The level of a broker resource: null for the cluster default (""), this
 * broker's id for itself, or why it is refused.
 */
export function alterableBroker(ctx: RequestContext, name: string): { ok: true; nodeId: number | null } | { ok: false; outcome: ResourceOutcome } {
  if (name === '') return { ok: true, nodeId: null };
  const id = parseBrokerId(name);
  if (id === null) return { ok: false, outcome: fail(ErrorCode.INVALID_REQUEST, `Node id must be an integer, but it is: ${name}`) };
  const own = ctx.services.settings.nodeId;
  if (id !== own) return { ok: false, outcome: fail(ErrorCode.INVALID_REQUEST, `Unexpected broker id, expected ${own}, but received ${name}`) };
  return { ok: true, nodeId: id };
}

/** The broker configs set at one level: the cluster default (null) or this broker. */
export function dynamicConfigsAt(ctx: RequestContext, nodeId: number | null): Readonly<Record<string, string>> {
  const dynamic = ctx.services.metadata.image().dynamicBrokerConfigs;
  return nodeId === null ? dynamic.clusterDefault : (dynamic.perBroker.get(nodeId) ?? {});
}

/**
 * Checks a topic's complete new set of overrides and, unless validateOnly,
 * makes it the topic's. Values inherited from the broker take part in the
 * checks across configs.
 */
export async function writeTopicConfigs(ctx: RequestContext, name: string, configs: Record<string, string>, validateOnly: boolean): Promise<ResourceOutcome> {
  const view = brokerConfigs(ctx);
  const check = checkTopicConfigs(configs, (n) => view.topicValue({}, n) ?? '');
  if (!check.ok) return fail(check.errorCode, check.message);
  if (validateOnly) return OK;
  try {
    await ctx.services.metadata.alterTopicConfigs(name, configs);
  } catch (err) {
    if (err instanceof UnknownTopicError) return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${name}' does not exist.`);
    // Kafka has no code for it; the message says what to do.
    if (err instanceof ConcurrentChangeError) return fail(ErrorCode.UNKNOWN_SERVER_ERROR, err.message);
    throw err;
  }
  ctx.services.log.info({ topic: name, configs }, 'topic configs altered');
  return OK;
}

/**
 * Checks the complete new set of dynamic configs of one broker level and,
 * unless validateOnly, stores it. The logs take the new defaults at once.
 */
export async function writeBrokerConfigs(ctx: RequestContext, nodeId: number | null, configs: Record<string, string>, validateOnly: boolean): Promise<ResourceOutcome> {
  const check = brokerConfigs(ctx).checkDynamicChange(configs, nodeId !== null);
  if (!check.ok) return fail(check.errorCode, check.message);
  if (validateOnly) return OK;
  try {
    await ctx.services.metadata.alterBrokerConfigs(nodeId, configs);
  } catch (err) {
    if (err instanceof ConcurrentChangeError) return fail(ErrorCode.UNKNOWN_SERVER_ERROR, err.message);
    throw err;
  }
  // Names only: a dynamic config may be a secret.
  ctx.services.log.info({ broker: nodeId ?? 'cluster default', names: Object.keys(configs) }, 'dynamic broker configs altered');
  return OK;
}

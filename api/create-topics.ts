/**
 * CreateTopics (key 19), versions 0-7.
 * v1 adds validate_only and per-topic error messages; v2 adds throttle_time_ms;
 * v4 lets num_partitions and replication_factor be -1 for the broker's
 * num.partitions and default.replication.factor (KIP-464; accepted at every
 * version, as Kafka 4.0 does); v5 is flexible and answers each new topic's
 * partition count, replication factor and configs; v7 answers its topic id.
 *
 * Checks come in the order of Kafka 4.0's controller, so a topic with several
 * problems gets the same error: a name used twice in the request (every copy
 * refused, answered once at the end), a total above 10000 partitions (the
 * whole request refused), the name, collision with an existing topic, the
 * topic existing, the configs, then the assignment or partition count and
 * replication factor. timeout_ms <= 0 refuses the whole request with
 * REQUEST_TIMED_OUT before anything is created, as Kafka 4.0's controller
 * does with a deadline already past.
 *
 * One deliberate difference: two new names that collide ('a.b' and 'a_b')
 * in one request are not both created; the second is refused as colliding,
 * as it would be in a later request. (Kafka 4.0 checks collisions against
 * existing topics only, and creates both.)
 *
 * The configs answered from v5 are every topic config with its value and
 * source on this broker, dynamic broker defaults included, as Kafka 4.0's
 * controller answers them (see createdTopicConfigs).
 */
import { CreateTopicsRequest, type CreatableTopic } from '../wire/messages/create-topics-request.js';
import { CreateTopicsResponse, type CreatableTopicConfigs, type CreatableTopicResult } from '../wire/messages/create-topics-response.js';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID, randomUuid } from '../wire/uuid.js';
import type { MetadataImage } from '../cluster/metadata/metadata-image.js';
import { MAX_TOPIC_NAME_LENGTH, collisionKey, topicNameProblem } from '../cluster/metadata/topic-names.js';
import { BrokerConfigs, ConfigSource, NO_STATIC_CONFIG } from '../cluster/metadata/broker-configs.js';
import { checkTopicConfigs, parseConfigValue, topicConfigDef, topicConfigValue, TOPIC_CONFIGS } from '../storage/topic-config.js';
import { MAX_RECORDS_PER_REQUEST, manualAssignmentProblem, placementProblem } from './replica-assignment.js';
import { defineHandler, type BrokerSettings, type RequestContext } from './handler.js';

/** KRaft's own metadata log: never a topic a client may create. */
const CLUSTER_METADATA_TOPIC = '__cluster_metadata';

/**
 * The configs of a new topic with `overrides`, as Kafka 4.0's controller
 * answers them in CreateTopics v5+ (KafkaConfigSchema's effective topic
 * configs): every topic config, sorted by name, never read-only or
 * sensitive, each taken from the first of
 *
 *   1. the request's override, as written          DYNAMIC_TOPIC_CONFIG (1)
 *   2. this broker's dynamic configs               DYNAMIC_BROKER_CONFIG (2)
 *   3. the cluster-wide dynamic defaults           DYNAMIC_DEFAULT_BROKER_CONFIG (3)
 *   4. the broker's static config                  STATIC_BROKER_CONFIG (4)
 *   5. the value the topic's logs run with         DEFAULT_CONFIG (5)
 *
 * where levels 2-4 look at each broker synonym of the config in order
 * (retention.ms: log.retention.ms, .minutes, .hours), converted to the
 * config's unit. This is the value DescribeConfigs shows, and its source too
 * except in one case where Kafka's two answers differ and this one follows
 * Kafka's CreateTopics: a synonym after the first one set (log.retention.hours
 * but not log.retention.ms), which DescribeConfigs calls DEFAULT_CONFIG.
 *
 * Example: on a broker with log.retention.ms=3600000 set dynamically at the
 * cluster default, createdTopicConfigs(configs, { 'cleanup.policy': ' compact ' })
 * lists 33 entries, among them { name: 'cleanup.policy', value: ' compact ',
 * configSource: 1 }, { name: 'retention.ms', value: '3600000', configSource: 3 }
 * and { name: 'segment.ms', value: '604800000', configSource: 5 }.
 */
export function createdTopicConfigs(configs: BrokerConfigs, overrides: Readonly<Record<string, string>>): CreatableTopicConfigs[] {
  const perBroker = configs.dynamic.perBroker.get(configs.nodeId) ?? {};
  const levels: readonly (readonly [source: number, get: (name: string) => string | undefined])[] = [
    [ConfigSource.DYNAMIC_BROKER_CONFIG, (n) => perBroker[n]],
    [ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, (n) => configs.dynamic.clusterDefault[n]],
    [ConfigSource.STATIC_BROKER_CONFIG, (n) => configs.staticConfig.values.get(n)],
  ];
  const entry = (name: string, value: string, configSource: number): CreatableTopicConfigs => ({ name, value, readOnly: false, configSource, isSensitive: false });
  return TOPIC_CONFIGS.map((d) => d.name)
    .sort()
    .map((name) => {
      const own = overrides[name];
      if (own !== undefined) return entry(name, own, ConfigSource.TOPIC_CONFIG);
      const d = topicConfigDef(name)!;
      for (const [source, get] of levels) {
        for (const [server, factor] of d.serverDefaults) {
          const raw = get(server);
          if (raw !== undefined) return entry(name, factor === 1n ? raw : inUnitsOf(raw, factor), source);
        }
      }
      return entry(name, topicConfigValue(d, {}, configs.value), ConfigSource.DEFAULT_CONFIG);
    });
}

/** A synonym's value (hours, minutes) in the topic config's unit, as Kafka converts it: one that does not parse counts as 0. */
function inUnitsOf(raw: string, factor: bigint): string {
  const parsed = parseConfigValue('', 'long', raw);
  return String(parsed.ok ? (parsed.value as bigint) * factor : 0n);
}

/** The INVALID_TOPIC_EXCEPTION message Kafka gives for an illegal name, or null for a legal one. */
export function invalidTopicNameMessage(name: string): string | null {
  if (topicNameProblem(name) === null) return null;
  if (name.length === 0) return 'Topic name is invalid: the empty string is not allowed';
  if (name === '.' || name === '..') return `Topic name is invalid: '${name}' is not allowed`;
  if (name.length > MAX_TOPIC_NAME_LENGTH) {
    return `Topic name is invalid: the length of '${name}' is longer than the max allowed length ${MAX_TOPIC_NAME_LENGTH}`;
  }
  return `Topic name is invalid: '${name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'`;
}

/** An existing topic whose name differs from `name` only by '.' against '_', if any. */
function collidingTopic(name: string, names: Iterable<string>): string | undefined {
  if (!/[._]/.test(name)) return undefined;
  const key = collisionKey(name);
  for (const other of names) if (other !== name && collisionKey(other) === key) return other;
  return undefined;
}

/** A topic that passed every check, with what it will be created with. */
interface Plan {
  readonly name: string;
  readonly configs: Record<string, string>;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  /** The client's replica lists by partition, when it chose them. */
  readonly assignments?: number[][];
}

type Checked = { ok: true; plan: Plan } | { ok: false; errorCode: number; message: string | null };

const refuse = (errorCode: number, message: string | null): Checked => ({ ok: false, errorCode, message });

/** Every check Kafka's controller makes on one topic, in its order. */
function check(topic: CreatableTopic, image: MetadataImage, settings: BrokerSettings): Checked {
  const { name } = topic;
  const badName = invalidTopicNameMessage(name);
  if (badName !== null) return refuse(ErrorCode.INVALID_TOPIC_EXCEPTION, badName);
  if (image.topics.has(name)) return refuse(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${name}' already exists.`);
  const clash = collidingTopic(name, image.topics.keys());
  if (clash !== undefined) return refuse(ErrorCode.INVALID_TOPIC_EXCEPTION, `Topic '${name}' collides with existing topic: ${clash}`);

  const nulls = topic.configs.filter((c) => c.value === null).map((c) => c.name);
  if (nulls.length > 0) return refuse(ErrorCode.INVALID_CONFIG, `Null value not supported for topic configs: ${nulls.join(',')}`);
  // A name given twice keeps its last value, as Kafka's map of the configs does.
  const configs: Record<string, string> = {};
  for (const c of topic.configs) configs[c.name] = c.value!;
  const configCheck = checkTopicConfigs(configs);
  if (!configCheck.ok) return refuse(configCheck.errorCode, configCheck.message);

  if (topic.assignments.length > 0) {
    if (topic.replicationFactor !== -1) {
      return refuse(ErrorCode.INVALID_REQUEST, 'A manual partition assignment was specified, but replication factor was not set to -1.');
    }
    if (topic.numPartitions !== -1) {
      return refuse(ErrorCode.INVALID_REQUEST, 'A manual partition assignment was specified, but numPartitions was not set to -1.');
    }
    const byPartition = new Map<number, number[]>();
    let replicationFactor: number | null = null;
    for (const a of topic.assignments) {
      if (byPartition.has(a.partitionIndex)) {
        return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Found multiple manual partition assignments for partition ${a.partitionIndex}`);
      }
      const problem = manualAssignmentProblem(a.brokerIds, image, replicationFactor);
      if (problem !== null) return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem);
      replicationFactor = a.brokerIds.length;
      byPartition.set(a.partitionIndex, a.brokerIds);
    }
    const assignments: number[][] = [];
    for (let p = 0; p < byPartition.size; p++) {
      const replicas = byPartition.get(p);
      if (!replicas) return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'partitions should be a consecutive 0-based integer sequence');
      assignments.push(replicas);
    }
    return { ok: true, plan: { name, configs, numPartitions: assignments.length, replicationFactor: replicationFactor!, assignments } };
  }
  if (topic.replicationFactor < -1 || topic.replicationFactor === 0) {
    return refuse(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0, or -1 to use the default value.');
  }
  if (topic.numPartitions < -1 || topic.numPartitions === 0) {
    return refuse(ErrorCode.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.');
  }
  const numPartitions = topic.numPartitions === -1 ? settings.config.int('num.partitions') : topic.numPartitions;
  const replicationFactor = topic.replicationFactor === -1 ? settings.config.int('default.replication.factor') : topic.replicationFactor;
  const unplaceable = placementProblem(replicationFactor, image);
  if (unplaceable !== null) return refuse(ErrorCode.INVALID_REPLICATION_FACTOR, unplaceable);
  return { ok: true, plan: { name, configs, numPartitions, replicationFactor } };
}

/** Partitions the request asks for, counted as Kafka's controller counts them before anything else. */
function requestedPartitions(topics: readonly CreatableTopic[], settings: BrokerSettings): number {
  let total = 0;
  for (const t of topics) {
    if (t.assignments.length > 0) total += t.assignments.length;
    else if (t.numPartitions === -1) total += settings.config.int('num.partitions');
    else if (t.numPartitions > 0) total += t.numPartitions;
  }
  return total;
}

function failed(name: string, errorCode: number, errorMessage: string | null): CreatableTopicResult {
  return {
    name,
    topicId: ZERO_UUID,
    errorCode,
    errorMessage,
    topicConfigErrorCode: ErrorCode.NONE,
    numPartitions: -1,
    replicationFactor: -1,
    configs: [],
  };
}

function created(plan: Plan, topicId: string, configs: BrokerConfigs): CreatableTopicResult {
  return {
    name: plan.name,
    topicId,
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    topicConfigErrorCode: ErrorCode.NONE,
    numPartitions: plan.numPartitions,
    replicationFactor: plan.replicationFactor,
    configs: createdTopicConfigs(configs, plan.configs),
  };
}

export const createTopics = defineHandler<CreateTopicsRequest, CreateTopicsResponse>({
  apiKey: 19,
  name: 'CreateTopics',
  request: CreateTopicsRequest,
  response: CreateTopicsResponse,
  minVersion: 0,
  maxVersion: 7,
  async handle(req, ctx) {
    if (req.timeoutMs <= 0) return errorBody(req, ErrorCode.REQUEST_TIMED_OUT, ctx);
    const { settings, metadata: store, log } = ctx.services;
    const counts = new Map<string, number>();
    for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const unique = req.topics.filter((t) => counts.get(t.name) === 1);
    const duplicates = [...counts].filter(([, n]) => n > 1).map(([name]) => name);
    const wanted = unique.filter((t) => t.name !== CLUSTER_METADATA_TOPIC);
    if (requestedPartitions(wanted, settings) > MAX_RECORDS_PER_REQUEST) {
      return errorBody(req, ErrorCode.POLICY_VIOLATION, ctx, 'Excessively large number of partitions per request.');
    }

    const image = store.image();
    const results = new Map<string, CreatableTopicResult>();
    const plans: Plan[] = [];
    // Collision keys of the topics this request creates, to refuse a second one that collides.
    const accepted = new Map<string, string>();
    for (const t of unique) {
      if (t.name === CLUSTER_METADATA_TOPIC) {
        results.set(t.name, failed(t.name, ErrorCode.INVALID_REQUEST, `Creation of internal topic ${CLUSTER_METADATA_TOPIC} is prohibited.`));
        continue;
      }
      const checked = check(t, image, settings);
      if (!checked.ok) {
        results.set(t.name, failed(t.name, checked.errorCode, checked.message));
        continue;
      }
      const earlier = accepted.get(collisionKey(t.name));
      if (earlier !== undefined) {
        results.set(t.name, failed(t.name, ErrorCode.INVALID_TOPIC_EXCEPTION, `Topic '${t.name}' collides with existing topic: ${earlier}`));
        continue;
      }
      accepted.set(collisionKey(t.name), t.name);
      plans.push(checked.plan);
    }
    // Kafka's controller writes a record per topic, per config and per partition,
    // and refuses a request that needs more than it writes at once.
    const records = plans.reduce((n, p) => n + 1 + Object.keys(p.configs).length + p.numPartitions, 0);
    if (records > MAX_RECORDS_PER_REQUEST) {
      return errorBody(req, ErrorCode.POLICY_VIOLATION, ctx, 'Unable to perform excessively large batch operation.');
    }

    // (config-resources.ts has brokerConfigs(ctx), but imports this file.)
    const configs = BrokerConfigs.of(store.image(), settings.staticConfig ?? NO_STATIC_CONFIG, settings.nodeId);
    for (const plan of plans) {
      if (req.validateOnly) {
        // Kafka answers a validated topic with the id it would have had.
        results.set(plan.name, created(plan, randomUuid(), configs));
        continue;
      }
      try {
        const topic = await store.createTopic({
          name: plan.name,
          numPartitions: plan.numPartitions,
          replicationFactor: plan.replicationFactor,
          configs: plan.configs,
          ...(plan.assignments ? { assignments: plan.assignments } : {}),
        });
        results.set(plan.name, created(plan, topic.topicId, configs));
        log.info({ topic: plan.name, topicId: topic.topicId, partitions: plan.numPartitions, configs: plan.configs }, 'created topic');
      } catch (err) {
        // Only a creation that raced this request (between its checks and now) lands here.
        const now = store.image();
        const clash = collidingTopic(plan.name, now.topics.keys());
        if (now.topics.has(plan.name)) {
          results.set(plan.name, failed(plan.name, ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${plan.name}' already exists.`));
        } else if (clash !== undefined) {
          results.set(plan.name, failed(plan.name, ErrorCode.INVALID_TOPIC_EXCEPTION, `Topic '${plan.name}' collides with existing topic: ${clash}`));
        } else {
          log.warn({ topic: plan.name, err }, 'topic creation failed');
          results.set(plan.name, failed(plan.name, ErrorCode.UNKNOWN_SERVER_ERROR, null));
        }
      }
    }
    const topics = unique.map((t) => results.get(t.name)!);
    for (const name of duplicates) topics.push(failed(name, ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'));
    return { throttleTimeMs: 0, topics };
  },
  errorResponse: (req, errorCode, ctx) => errorBody(req, errorCode, ctx),
});

/** Every topic of the request (duplicates too, each time) with `errorCode`. */
function errorBody(req: CreateTopicsRequest, errorCode: number, _ctx: RequestContext, message: string | null = null): CreateTopicsResponse {
  return { throttleTimeMs: 0, topics: req.topics.map((t) => failed(t.name, errorCode, message)) };
}

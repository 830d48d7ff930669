/**
 * DescribeConfigs (key 32), versions 0-4.
 * v0 marks each config is_default; v1 replaces that with config_source and
 * adds synonyms (include_synonyms); v2 changes nothing on the wire; v3 adds
 * config_type and documentation (include_documentation); v4 is flexible.
 * Kafka 4.0 dropped v0 (KIP-896); gregor keeps it, with is_default meaning
 * the value is the default (DEFAULT_CONFIG), as Kafka answered it.
 *
 * Resources, as Kafka 4.0 answers them:
 * - TOPIC: the topic's every config (its overrides, else the broker-wide
 *   defaults, else Kafka's), with sources and synonyms (cluster/metadata/broker-configs.ts).
 *   An illegal name is INVALID_TOPIC_EXCEPTION, a missing topic
 *   UNKNOWN_TOPIC_OR_PARTITION.
 * - BROKER named by this broker's id: gregor's config keys, the broker-wide
 *   defaults of the topic configs, the log manager settings and anything set
 *   at run time. Named "": the cluster-wide dynamic defaults only. Another id
 *   or a name that is not a number is INVALID_REQUEST.
 * - BROKER_LOGGER named by this broker's id: the root logger and its level
 *   (gregor has no other logger).
 * - GROUP: a group's configs (api/group-config-resource.ts), whether or not
 *   the group exists; "" is INVALID_REQUEST.
 * - CLIENT_METRICS (client metrics subscriptions) is not supported:
 *   INVALID_REQUEST.
 * A resource type Kafka does not know fails the whole request with
 * INVALID_REQUEST. configuration_keys null or empty means every config;
 * unknown names are left out. Results come in request order; a successful
 * one carries the empty error message, as Kafka's does.
 *
 * Documentation (v3+, when asked) is gregor's own text.
 */
import { DescribeConfigsRequest, type DescribeConfigsResource } from '../wire/messages/describe-configs-request.js';
import {
  DescribeConfigsResponse,
  type DescribeConfigsResourceResult,
  type DescribeConfigsResult,
} from '../wire/messages/describe-configs-response.js';
import { ErrorCode } from '../wire/errors.js';
import { ConfigSource, type ConfigEntry, type DescribeOptions } from '../cluster/metadata/broker-configs.js';
import { CONFIG_TYPE_IDS } from '../storage/topic-config.js';
import { brokerConfigs, parseBrokerId, ResourceType, ROOT_LOGGER, rootLogLevel } from './config-resources.js';
import { invalidTopicNameMessage } from './create-topics.js';
import { describeGroup } from './group-config-resource.js';
import { defineHandler, type RequestContext } from './handler.js';

const KNOWN_TYPES: ReadonlySet<number> = new Set(Object.values(ResourceType));

function wireEntry(e: ConfigEntry): DescribeConfigsResourceResult {
  return {
    name: e.name,
    value: e.value,
    readOnly: e.readOnly,
    isDefault: e.source === ConfigSource.DEFAULT_CONFIG,
    configSource: e.source,
    isSensitive: e.sensitive,
    synonyms: e.synonyms.map((s) => ({ name: s.name, value: s.value, source: s.source })),
    configType: e.type === null ? 0 : CONFIG_TYPE_IDS[e.type],
    documentation: e.documentation,
  };
}

function result(r: DescribeConfigsResource, errorCode: number, errorMessage: string | null, configs: DescribeConfigsResourceResult[] = []): DescribeConfigsResult {
  return { errorCode, errorMessage, resourceType: r.resourceType, resourceName: r.resourceName, configs };
}

function describeOne(r: DescribeConfigsResource, opts: DescribeOptions, ctx: RequestContext): DescribeConfigsResult {
  const { nodeId } = ctx.services.settings;
  const ok = (entries: ConfigEntry[]): DescribeConfigsResult => result(r, ErrorCode.NONE, '', entries.map(wireEntry));
  switch (r.resourceType) {
    case ResourceType.TOPIC: {
      const badName = invalidTopicNameMessage(r.resourceName);
      if (badName !== null) return result(r, ErrorCode.INVALID_TOPIC_EXCEPTION, badName);
      const topic = ctx.services.metadata.image().topics.get(r.resourceName);
      if (!topic) return result(r, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, '');
      return ok(brokerConfigs(ctx).describeTopic(topic.configs, opts));
    }
    case ResourceType.BROKER: {
      if (r.resourceName === '') return ok(brokerConfigs(ctx).describeBroker(false, opts));
      const id = parseBrokerId(r.resourceName);
      if (id === null) return result(r, ErrorCode.INVALID_REQUEST, `Broker id must be an integer, but it is: ${r.resourceName}`);
      if (id !== nodeId) return result(r, ErrorCode.INVALID_REQUEST, `Unexpected broker id, expected ${nodeId} or empty string, but received ${r.resourceName}`);
      return ok(brokerConfigs(ctx).describeBroker(true, opts));
    }
    case ResourceType.BROKER_LOGGER: {
      if (r.resourceName === '') return result(r, ErrorCode.INVALID_REQUEST, 'Broker id must not be empty');
      const id = parseBrokerId(r.resourceName);
      if (id === null) return result(r, ErrorCode.INVALID_REQUEST, `Broker id must be an integer, but it is: ${r.resourceName}`);
      if (id !== nodeId) return result(r, ErrorCode.INVALID_REQUEST, `Unexpected broker id, expected ${nodeId} but received ${r.resourceName}`);
      const keys = opts.keys;
      if (keys !== null && keys.length > 0 && !keys.includes(ROOT_LOGGER)) return ok([]);
      return ok([
        {
          name: ROOT_LOGGER,
          value: rootLogLevel(ctx.services),
          source: ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
          readOnly: false,
          sensitive: false,
          type: null,
          documentation: null,
          synonyms: [],
        },
      ]);
    }
    case ResourceType.GROUP:
      if (r.resourceName === '') return result(r, ErrorCode.INVALID_REQUEST, 'Group name must not be empty');
      return ok(describeGroup(ctx, r.resourceName, opts));
    default:
      return result(r, ErrorCode.INVALID_REQUEST, `gregor does not support config resources of type ${r.resourceType}`);
  }
}

export const describeConfigs = defineHandler<DescribeConfigsRequest, DescribeConfigsResponse>({
  apiKey: 32,
  name: 'DescribeConfigs',
  request: DescribeConfigsRequest,
  response: DescribeConfigsResponse,
  minVersion: 0,
  maxVersion: 4,
  handle(req, ctx) {
    const unknown = req.resources.find((r) => !KNOWN_TYPES.has(r.resourceType));
    if (unknown !== undefined) return errorBody(req, ErrorCode.INVALID_REQUEST, `Unknown resource type ${unknown.resourceType}`);
    const opts = (r: DescribeConfigsResource): DescribeOptions => ({
      keys: r.configurationKeys,
      includeSynonyms: ctx.apiVersion >= 1 && req.includeSynonyms,
      includeDocumentation: ctx.apiVersion >= 3 && req.includeDocumentation,
    });
    return { throttleTimeMs: 0, results: req.resources.map((r) => describeOne(r, opts(r), ctx)) };
  },
  errorResponse: (req, errorCode) => errorBody(req, errorCode, null),
});

function errorBody(req: DescribeConfigsRequest, errorCode: number, message: string | null): DescribeConfigsResponse {
  return { throttleTimeMs: 0, results: req.resources.map((r) => result(r, errorCode, message)) };
}

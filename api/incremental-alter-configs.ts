/**
 * IncrementalAlterConfigs (key 44), versions 0-1.
 * v1 is flexible.
 *
 * Each config names an operation: SET (0) a value, DELETE (1) the override
 * (back to the inherited value), APPEND (2) or SUBTRACT (3) comma-separated
 * elements to or from a list config, starting from the current override or,
 * without one, the config's default. Operations apply in request order.
 * As in Kafka 4.0, resource by resource:
 * - any resource: a config named twice, or a null value for an operation
 *   other than DELETE, is INVALID_REQUEST; an operation id that is none of
 *   the four is UNKNOWN_SERVER_ERROR;
 * - TOPIC: as AlterConfigs, and APPEND or SUBTRACT on a config that is not a
 *   list is INVALID_CONFIG ("Can't APPEND to key ...");
 * - BROKER: as AlterConfigs, and APPEND or SUBTRACT on a config that is not a
 *   list is INVALID_CONFIG ("Config value append is not allowed ...");
 * - BROKER_LOGGER (this broker's id): SET a level of the root logger (DEBUG,
 *   ERROR, FATAL, INFO, TRACE, WARN), which takes effect at once and lasts
 *   until restart; DELETE of root, APPEND and SUBTRACT are INVALID_REQUEST;
 *   any other logger name INVALID_CONFIG (gregor has one logger);
 * - GROUP: SET and DELETE of a group's configs (api/group-config-resource.ts);
 *   APPEND or SUBTRACT is INVALID_CONFIG ("Can't APPEND to key ..."), as no
 *   group config is a list to Kafka's controller;
 * - CLIENT_METRICS is not supported, other types unknown: INVALID_REQUEST.
 * validate_only runs every check and changes nothing. A resource given twice
 * is refused (INVALID_REQUEST) in every copy.
 */
import {
  IncrementalAlterConfigsRequest,
  type AlterableConfig,
  type AlterConfigsResource,
} from '../wire/messages/incremental-alter-configs-request.js';
import { IncrementalAlterConfigsResponse } from '../wire/messages/incremental-alter-configs-response.js';
import { ErrorCode } from '../wire/errors.js';
import { topicConfigDef } from '../storage/topic-config.js';
import {
  alterEach,
  alterErrorBody,
  alterableBroker,
  alterableTopic,
  brokerConfigs,
  checkConfigList,
  dynamicConfigsAt,
  fail,
  invalidLogLevelMessage,
  OK,
  parseBrokerId,
  pinoLevel,
  ResourceType,
  ROOT_LOGGER,
  unsupportedResourceType,
  writeBrokerConfigs,
  writeTopicConfigs,
  type ResourceOutcome,
} from './config-resources.js';
import { groupOverrides, writeGroupConfigs } from './group-config-resource.js';
import { defineHandler, type RequestContext } from './handler.js';

export const OpType = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

const OP_NAMES = ['SET', 'DELETE', 'APPEND', 'SUBTRACT'] as const;

/** How a list config is treated by APPEND and SUBTRACT on one kind of resource. */
interface ListRules {
  isList(name: string): boolean;
  /** The value a list starts from when the resource does not set it. */
  base(name: string): string;
  /** The refusal of APPEND or SUBTRACT on a config that is not a list. */
  notAList(op: 'APPEND' | 'SUBTRACT', name: string): string;
}

function parts(value: string): string[] {
  return value.split(',').filter((p) => p !== '');
}

/**
 * Applies the operations to a resource's current overrides, in order.
 *
 * Example: applyOps({}, [{ name: 'cleanup.policy', configOperation: APPEND,
 * value: 'compact' }], topic rules) -> { ok: true, configs: { 'cleanup.policy':
 * 'delete,compact' } }: the list starts from the default, delete.
 */
export function applyOps(
  current: Readonly<Record<string, string>>,
  ops: readonly AlterableConfig[],
  rules: ListRules,
): { ok: true; configs: Record<string, string> } | { ok: false; outcome: ResourceOutcome } {
  // Without a prototype, so that a config named '__proto__' is a name like any other (and refused as unknown).
  const next: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, current);
  for (const { name, configOperation, value } of ops) {
    switch (configOperation) {
      case OpType.SET:
        next[name] = value!;
        break;
      case OpType.DELETE:
        delete next[name];
        break;
      case OpType.APPEND:
      case OpType.SUBTRACT: {
        const op = OP_NAMES[configOperation];
        if (!rules.isList(name)) return { ok: false, outcome: fail(ErrorCode.INVALID_CONFIG, rules.notAList(op, name)) };
        const list = parts(next[name] ?? rules.base(name));
        for (const element of value!.split(',')) {
          if (op === 'APPEND') {
            if (!list.includes(element)) list.push(element);
          } else {
            const at = list.indexOf(element);
            if (at >= 0) list.splice(at, 1);
          }
        }
        next[name] = list.join(',');
        break;
      }
    }
  }
  return { ok: true, configs: next };
}

function alterLogger(r: AlterConfigsResource, validateOnly: boolean, ctx: RequestContext): ResourceOutcome {
  const own = ctx.services.settings.nodeId;
  const id = parseBrokerId(r.resourceName);
  if (id === null) return fail(ErrorCode.INVALID_REQUEST, `Node id must be an integer, but it is: ${r.resourceName}`);
  if (id !== own) return fail(ErrorCode.INVALID_REQUEST, `Unexpected node id. Expected ${own}, but received ${r.resourceName}`);
  let level: string | undefined;
  for (const c of r.configs) {
    if (c.configOperation === OpType.APPEND || c.configOperation === OpType.SUBTRACT) {
      return fail(ErrorCode.INVALID_REQUEST, `${OP_NAMES[c.configOperation]} operation is not allowed for the BROKER_LOGGER resource`);
    }
    if (c.name !== ROOT_LOGGER) return fail(ErrorCode.INVALID_CONFIG, `Logger ${c.name} does not exist!`);
    if (c.configOperation === OpType.DELETE) return fail(ErrorCode.INVALID_REQUEST, 'Removing the log level of the root logger is not allowed');
    level = pinoLevel(c.value!);
    if (level === undefined) return fail(ErrorCode.INVALID_CONFIG, invalidLogLevelMessage(c.name, c.value!));
  }
  if (!validateOnly && level !== undefined) {
    ctx.services.log.level = level;
    ctx.services.log.info({ level }, 'root log level changed');
  }
  return OK;
}

async function alterOne(r: AlterConfigsResource, validateOnly: boolean, ctx: RequestContext): Promise<ResourceOutcome> {
  const listProblem = checkConfigList(r.configs.map((c) => ({ name: c.name, value: c.value, needsValue: c.configOperation !== OpType.DELETE })));
  if (listProblem !== null) return listProblem;
  if (r.configs.some((c) => !Object.values(OpType).includes(c.configOperation as 0))) return fail(ErrorCode.UNKNOWN_SERVER_ERROR, null);
  switch (r.resourceType) {
    case ResourceType.TOPIC: {
      const topic = alterableTopic(ctx, r.resourceName);
      if (!topic.ok) return topic.outcome;
      const applied = applyOps(topic.configs, r.configs, {
        isList: (name) => topicConfigDef(name)?.type === 'list',
        base: (name) => topicConfigDef(name)?.default ?? '',
        notAList: (op, name) => `Can't ${op} to key ${name} because its type is not LIST.`,
      });
      if (!applied.ok) return applied.outcome;
      return writeTopicConfigs(ctx, r.resourceName, applied.configs, validateOnly);
    }
    case ResourceType.BROKER: {
      const broker = alterableBroker(ctx, r.resourceName);
      if (!broker.ok) return broker.outcome;
      const view = brokerConfigs(ctx);
      const applied = applyOps(dynamicConfigsAt(ctx, broker.nodeId), r.configs, {
        isList: (name) => view.typeOf(name) === 'list',
        base: (name) => view.listDefault(name),
        notAList: (op, name) => `Config value ${op.toLowerCase()} is not allowed for config key: ${name}`,
      });
      if (!applied.ok) return applied.outcome;
      return writeBrokerConfigs(ctx, broker.nodeId, applied.configs, validateOnly);
    }
    case ResourceType.BROKER_LOGGER:
      return alterLogger(r, validateOnly, ctx);
    case ResourceType.GROUP: {
      const current = groupOverrides(ctx, r.resourceName);
      const applied = applyOps(current, r.configs, {
        isList: () => false,
        base: () => '',
        notAList: (op, name) => `Can't ${op} to key ${name} because its type is not LIST.`,
      });
      if (!applied.ok) return applied.outcome;
      return writeGroupConfigs(ctx, r.resourceName, current, applied.configs, validateOnly);
    }
    default:
      return unsupportedResourceType(r.resourceType);
  }
}

export const incrementalAlterConfigs = defineHandler<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>({
  apiKey: 44,
  name: 'IncrementalAlterConfigs',
  request: IncrementalAlterConfigsRequest,
  response: IncrementalAlterConfigsResponse,
  minVersion: 0,
  maxVersion: 1,
  handle: (req, ctx) => alterEach(req.resources, (r) => alterOne(r, req.validateOnly, ctx)),
  errorResponse: (req, errorCode) => alterErrorBody(req.resources, errorCode),
});

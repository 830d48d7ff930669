/**
 * The GROUP config resource (Kafka 4.4) as DescribeConfigs, AlterConfigs and
 * IncrementalAlterConfigs see it: a group's overrides of the group configs
 * (cluster/group/group-configs.ts), kept in the metadata store so every
 * broker sees them. A group need not exist to have configs, and deleting a
 * group leaves them, as in Kafka.
 *
 * As Kafka 4.4 answers:
 * - describe: "" is INVALID_REQUEST; otherwise every config that is not
 *   internal (and internal ones the group overrides), in Kafka's order. An
 *   override is GROUP_CONFIG (the admin client's DYNAMIC_GROUP_CONFIG), else
 *   the source of the broker config it falls back to (DEFAULT_CONFIG,
 *   STATIC_BROKER_CONFIG, ...), else DEFAULT_CONFIG; synonyms are the
 *   override, then that broker config's layers (or the key's own default).
 * - alter: the group's complete new set of overrides is checked; a value
 *   longer than 32767 characters, an unknown name and a bad value are
 *   INVALID_CONFIG, the "" group INVALID_REQUEST.
 */
import { ConfigSource, type ConfigEntry, type ConfigSynonym, type DescribeOptions } from '../cluster/metadata/broker-configs.js';
import { ConcurrentChangeError } from '../cluster/metadata/metadata-image.js';
import { checkGroupConfigs, describeGroupConfigs, MAX_CONFIG_VALUE_LENGTH } from '../cluster/group/group-configs.js';
import { ErrorCode } from '../wire/errors.js';
import { brokerConfigs, fail, OK, type ResourceOutcome } from './config-resources.js';
import type { RequestContext } from './handler.js';

/**
 * The configs of group `groupId` as DescribeConfigs lists them.
 *
 * Example: for a group with share.auto.offset.reset=earliest on a broker with
 * Kafka's defaults, the entry of share.auto.offset.reset is { value:
 * 'earliest', source: GROUP_CONFIG, synonyms: [{ name:
 * 'share.auto.offset.reset', value: 'earliest', source: GROUP_CONFIG }, {
 * name: 'share.auto.offset.reset', value: 'latest', source: DEFAULT_CONFIG }] }.
 */
export function describeGroup(ctx: RequestContext, groupId: string, opts: DescribeOptions): ConfigEntry[] {
  const view = brokerConfigs(ctx);
  const overrides = ctx.services.metadata.groupConfigOverrides(groupId);
  const keys = opts.keys === null || opts.keys.length === 0 ? null : new Set(opts.keys);
  return describeGroupConfigs(overrides, view)
    .filter((c) => keys === null || keys.has(c.def.name))
    .map(({ def, value, overridden }) => {
      const fallback: ConfigSynonym[] =
        def.brokerSynonym !== null
          ? view.fallbackSynonyms(def.brokerSynonym)
          : def.default !== null
            ? [{ name: def.name, value: def.default, source: ConfigSource.DEFAULT_CONFIG }]
            : [];
      const all = overridden ? [{ name: def.name, value, source: ConfigSource.GROUP_CONFIG }, ...fallback] : fallback;
      return {
        name: def.name,
        value,
        source: all[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
        readOnly: false,
        sensitive: false,
        type: def.type,
        documentation: opts.includeDocumentation ? def.doc : null,
        synonyms: opts.includeSynonyms ? all : [],
      };
    });
}

/** The current overrides of a group, as a record to change. */
export function groupOverrides(ctx: RequestContext, groupId: string): Record<string, string> {
  return Object.fromEntries(ctx.services.metadata.groupConfigOverrides(groupId));
}

/**
 * Checks a group's complete new set of overrides (`configs`, made from
 * `current`) and, unless validateOnly, makes it the group's.
 */
export async function writeGroupConfigs(
  ctx: RequestContext,
  groupId: string,
  current: Readonly<Record<string, string>>,
  configs: Record<string, string>,
  validateOnly: boolean,
): Promise<ResourceOutcome> {
  const changed = Object.entries(configs).filter(([name, value]) => current[name] !== value);
  if (changed.some(([, value]) => value.length > MAX_CONFIG_VALUE_LENGTH)) {
    return fail(ErrorCode.INVALID_CONFIG, 'The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes.');
  }
  if (groupId === '') return fail(ErrorCode.INVALID_REQUEST, 'Default group resources are not allowed.');
  const check = checkGroupConfigs(configs, brokerConfigs(ctx));
  if (!check.ok) return fail(check.errorCode, check.message);
  const removed = Object.keys(current).some((name) => configs[name] === undefined);
  if (validateOnly || (changed.length === 0 && !removed)) return OK;
  try {
    await ctx.services.metadata.alterGroupConfigs(groupId, configs);
  } catch (err) {
    if (err instanceof ConcurrentChangeError) return fail(ErrorCode.UNKNOWN_SERVER_ERROR, err.message);
    throw err;
  }
  ctx.services.log.info({ group: groupId, configs }, 'group configs altered');
  return OK;
}

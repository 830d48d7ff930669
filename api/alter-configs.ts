/**
 * AlterConfigs (key 33), versions 0-2.
 * v1 changes nothing on the wire; v2 is flexible.
 *
 * Each resource's configs become its whole set of overrides: a name left out
 * loses its override (IncrementalAlterConfigs changes single names). As in
 * Kafka 4.0, resource by resource:
 * - any resource: a config named twice, or with a null value, is INVALID_REQUEST;
 * - TOPIC: "" is INVALID_REQUEST, an illegal name INVALID_TOPIC_EXCEPTION, a
 *   missing topic UNKNOWN_TOPIC_OR_PARTITION; an unknown config name or a
 *   bad value INVALID_CONFIG (storage/topic-config.ts);
 * - BROKER: "" is the cluster-wide default, else this broker's id; configs
 *   gregor cannot change at run time, and bad values, are INVALID_REQUEST
 *   (cluster/metadata/broker-configs.ts). Names Kafka does not know are stored, as
 *   Kafka stores them;
 * - GROUP: the group's configs, as IncrementalAlterConfigs sets them
 *   (api/group-config-resource.ts);
 * - BROKER_LOGGER is INVALID_REQUEST here (IncrementalAlterConfigs sets log
 *   levels), as is any type other than TOPIC, BROKER and GROUP.
 * validate_only runs every check and changes nothing. A resource given twice
 * is refused (INVALID_REQUEST) in every copy; Kafka 4.0 fails such a request
 * as a whole.
 *
 * A topic's new configs reach its open logs before the answer goes out
 * (retention, segment size, max.message.bytes, cleanup.policy, timestamps);
 * so do new broker-wide defaults for every topic that does not override them.
 */
import { AlterConfigsRequest, type AlterConfigsResource } from '../wire/messages/alter-configs-request.js';
import { AlterConfigsResponse } from '../wire/messages/alter-configs-response.js';
import {
  alterEach,
  alterErrorBody,
  alterableBroker,
  alterableTopic,
  checkConfigList,
  ResourceType,
  unsupportedResourceType,
  writeBrokerConfigs,
  writeTopicConfigs,
  type ResourceOutcome,
} from './config-resources.js';
import { groupOverrides, writeGroupConfigs } from './group-config-resource.js';
import { defineHandler, type RequestContext } from './handler.js';

async function alterOne(r: AlterConfigsResource, validateOnly: boolean, ctx: RequestContext): Promise<ResourceOutcome> {
  const listProblem = checkConfigList(r.configs.map((c) => ({ name: c.name, value: c.value, needsValue: true })));
  if (listProblem !== null) return listProblem;
  const configs: Record<string, string> = Object.fromEntries(r.configs.map((c) => [c.name, c.value!]));
  switch (r.resourceType) {
    case ResourceType.TOPIC: {
      const topic = alterableTopic(ctx, r.resourceName);
      if (!topic.ok) return topic.outcome;
      return writeTopicConfigs(ctx, r.resourceName, configs, validateOnly);
    }
    case ResourceType.BROKER: {
      const broker = alterableBroker(ctx, r.resourceName);
      if (!broker.ok) return broker.outcome;
      return writeBrokerConfigs(ctx, broker.nodeId, configs, validateOnly);
    }
    case ResourceType.GROUP:
      return writeGroupConfigs(ctx, r.resourceName, groupOverrides(ctx, r.resourceName), configs, validateOnly);
    default:
      return unsupportedResourceType(r.resourceType);
  }
}

export const alterConfigs = defineHandler<AlterConfigsRequest, AlterConfigsResponse>({
  apiKey: 33,
  name: 'AlterConfigs',
  request: AlterConfigsRequest,
  response: AlterConfigsResponse,
  minVersion: 0,
  maxVersion: 2,
  handle: (req, ctx) => alterEach(req.resources, (r) => alterOne(r, req.validateOnly, ctx)),
  errorResponse: (req, errorCode) => alterErrorBody(req.resources, errorCode),
});

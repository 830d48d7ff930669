/**
 * ListConfigResources (key 74), versions 0-1, as Kafka 4.4.0 answers them.
 *
 * - v0 was ListClientMetricsResources (KIP-714): it takes no filter and lists the
 *   client-metrics resources by name.
 * - v1 (KIP-1142) takes the resource types to list and names each resource's
 *   type. The types a version knows are CLIENT_METRICS in v0, and TOPIC, BROKER,
 *   BROKER_LOGGER, CLIENT_METRICS and GROUP in v1; an empty list means all of
 *   them, and a type the version does not know fails the whole request with
 *   UNSUPPORTED_VERSION and lists nothing. A type named twice is listed once.
 * - Resources come type by type in Kafka's order whatever the request's order:
 *   groups, client metrics, broker loggers, brokers, topics. Brokers and broker
 *   loggers are every registered broker reachable on the client's listener, by
 *   node id; topics are every topic, internal ones too (in name order here; Kafka
 *   gives no order).
 * - GROUP lists every group that has configs (whether or not the group
 *   exists), by id (sorted here; Kafka gives no order). gregor has no
 *   client-metrics subscriptions, so CLIENT_METRICS lists nothing, and v0
 *   always answers an empty list.
 * - No authorizer: Kafka's cluster DESCRIBE_CONFIGS check always passes.
 */
import { ListConfigResourcesRequest } from '../wire/messages/list-config-resources-request.js';
import { ListConfigResourcesResponse, type ConfigResource } from '../wire/messages/list-config-resources-response.js';
import { ErrorCode } from '../wire/errors.js';
import { endpointFor } from '../cluster/metadata/metadata-image.js';
import { ResourceType } from './config-resources.js';
import { defineHandler } from './handler.js';

/** The resource types each version lists, by Kafka's ConfigResource type id. */
const TYPES_BY_VERSION: readonly (readonly number[])[] = [
  [ResourceType.CLIENT_METRICS],
  [ResourceType.TOPIC, ResourceType.BROKER, ResourceType.BROKER_LOGGER, ResourceType.CLIENT_METRICS, ResourceType.GROUP],
];

export const listConfigResources = defineHandler<ListConfigResourcesRequest, ListConfigResourcesResponse>({
  apiKey: 74,
  name: 'ListConfigResources',
  request: ListConfigResourcesRequest,
  response: ListConfigResourcesResponse,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const known = TYPES_BY_VERSION[ctx.apiVersion]!;
    // v0 has no filter field: the decoder leaves it empty, which means every type v0 knows.
    const asked = new Set(req.resourceTypes.length === 0 ? known : req.resourceTypes);
    if ([...asked].some((t) => !known.includes(t))) return errorBody(ErrorCode.UNSUPPORTED_VERSION);

    const image = ctx.services.metadata.image();
    const brokerIds = [...image.brokers.values()]
      .filter((b) => endpointFor(b, ctx.listener) !== undefined)
      .map((b) => String(b.nodeId))
      .sort((a, b) => Number(a) - Number(b));
    const listed: ConfigResource[] = [];
    const add = (resourceType: number, names: Iterable<string>): void => {
      for (const resourceName of names) listed.push({ resourceName, resourceType });
    };
    if (asked.has(ResourceType.GROUP)) add(ResourceType.GROUP, [...image.groupConfigs.keys()].sort());
    // CLIENT_METRICS would come next in Kafka's order; gregor has none.
    if (asked.has(ResourceType.BROKER_LOGGER)) add(ResourceType.BROKER_LOGGER, brokerIds);
    if (asked.has(ResourceType.BROKER)) add(ResourceType.BROKER, brokerIds);
    if (asked.has(ResourceType.TOPIC)) add(ResourceType.TOPIC, [...image.topics.keys()].sort());
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, configResources: listed };
  },
  errorResponse: (_req, errorCode) => errorBody(errorCode),
});

function errorBody(errorCode: number): ListConfigResourcesResponse {
  return { throttleTimeMs: 0, errorCode, configResources: [] };
}

/**
 * DescribeCluster (key 60), versions 0-2, flexible in all.
 * v1 adds endpoint_type: clients ask brokers for type 1 (BROKER). A broker
 * asked for controllers (2) answers MISMATCHED_ENDPOINT_TYPE, and for any
 * other type UNSUPPORTED_ENDPOINT_TYPE, with Kafka 4.0's messages, an empty
 * cluster id and controller id -1. v2 adds include_fenced_brokers and each
 * broker's is_fenced: a gregor broker is listed while it is registered and
 * alive, so none is fenced.
 *
 * The brokers are those reachable on the listener the client came in on,
 * with that listener's advertised address, as in Metadata. Without an
 * authorizer every operation is allowed: the cluster's authorized
 * operations (when asked for) are all those Kafka defines on a cluster.
 */
import { DescribeClusterRequest } from '../wire/messages/describe-cluster-request.js';
import { DescribeClusterResponse, type DescribeClusterBroker } from '../wire/messages/describe-cluster-response.js';
import { ErrorCode } from '../wire/errors.js';
import { endpointFor } from '../cluster/metadata/metadata-image.js';
import { defineHandler, type RequestContext } from './handler.js';
import { CLUSTER_OPERATIONS } from './metadata.js';

const ENDPOINT_TYPE_BROKER = 1;
const ENDPOINT_TYPE_CONTROLLER = 2;

/** The cluster's operations without an authorizer, shared with Metadata. */
export const CLUSTER_AUTHORIZED_OPERATIONS = CLUSTER_OPERATIONS;
const OPERATIONS_NOT_REQUESTED = -2147483648;

export const describeCluster = defineHandler<DescribeClusterRequest, DescribeClusterResponse>({
  apiKey: 60,
  name: 'DescribeCluster',
  request: DescribeClusterRequest,
  response: DescribeClusterResponse,
  minVersion: 0,
  maxVersion: 2,
  handle(req, ctx) {
    // v0 has no endpoint_type; the decoder leaves its default, BROKER.
    if (req.endpointType === ENDPOINT_TYPE_CONTROLLER) {
      return errorBody(ErrorCode.MISMATCHED_ENDPOINT_TYPE, 'The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER');
    }
    if (req.endpointType !== ENDPOINT_TYPE_BROKER) {
      return errorBody(ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, `Unsupported endpoint type ${req.endpointType}`);
    }
    const image = ctx.services.metadata.image();
    const brokers: DescribeClusterBroker[] = [];
    for (const b of image.brokers.values()) {
      const ep = endpointFor(b, ctx.listener);
      if (ep) brokers.push({ brokerId: b.nodeId, host: ep.host, port: ep.port, rack: b.rack, isFenced: false });
    }
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      endpointType: ENDPOINT_TYPE_BROKER,
      clusterId: image.clusterId,
      controllerId: image.controllerId,
      brokers,
      clusterAuthorizedOperations: req.includeClusterAuthorizedOperations ? CLUSTER_AUTHORIZED_OPERATIONS : OPERATIONS_NOT_REQUESTED,
    };
  },
  errorResponse: (_req, errorCode, _ctx: RequestContext) => errorBody(errorCode, null),
});

function errorBody(errorCode: number, errorMessage: string | null): DescribeClusterResponse {
  return {
    throttleTimeMs: 0,
    errorCode,
    errorMessage,
    endpointType: ENDPOINT_TYPE_BROKER,
    clusterId: '',
    controllerId: -1,
    brokers: [],
    clusterAuthorizedOperations: OPERATIONS_NOT_REQUESTED,
  };
}

/**
 * ApiVersions (key 18), versions 0-4.
 * v1 adds throttle_time_ms; v3 is flexible and carries the client's software name
 * and version; v3+ may also carry feature tags, which gregor leaves empty.
 * A request at a version above 4 is answered in the v0 layout with
 * UNSUPPORTED_VERSION and the full table (KIP-511); that path lives in the
 * connection code because it must not depend on decoding the request.
 */
import { ApiVersionsRequest } from '../wire/messages/api-versions-request.js';
import { ApiVersionsResponse } from '../wire/messages/api-versions-response.js';
import { ErrorCode } from '../wire/errors.js';
import { defineHandler, type RequestContext } from './handler.js';

/** Kafka accepts only names and versions of this shape from v3 clients. */
const SOFTWARE_FIELD = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

export function apiVersionsBody(errorCode: number, ctx: Pick<RequestContext, 'services'>): ApiVersionsResponse {
  return {
    errorCode,
    apiKeys: ctx.services.apiVersions.map((v) => ({ apiKey: v.apiKey, minVersion: v.minVersion, maxVersion: v.maxVersion })),
    throttleTimeMs: 0,
    supportedFeatures: [],
    finalizedFeaturesEpoch: -1n,
    finalizedFeatures: [],
    zkMigrationReady: false,
  };
}

export const apiVersions = defineHandler<ApiVersionsRequest, ApiVersionsResponse>({
  apiKey: 18,
  name: 'ApiVersions',
  request: ApiVersionsRequest,
  response: ApiVersionsResponse,
  minVersion: 0,
  maxVersion: 4,
  handle(req, ctx) {
    if (ctx.apiVersion >= 3 && !(SOFTWARE_FIELD.test(req.clientSoftwareName) && SOFTWARE_FIELD.test(req.clientSoftwareVersion))) {
      // Kafka answers a malformed client name with INVALID_REQUEST and no table; clients then retry with v0.
      return { ...apiVersionsBody(ErrorCode.INVALID_REQUEST, ctx), apiKeys: [] };
    }
    return apiVersionsBody(ErrorCode.NONE, ctx);
  },
  errorResponse: (_req, code, ctx) => apiVersionsBody(code, ctx),
});

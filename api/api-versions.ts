/**
 * ApiVersions (key 18), versions 0-5.
 * v1 adds throttle_time_ms; v3 is flexible, carries the client's software name
 * and version, and answers the feature levels (cluster/metadata/features.ts):
 * supported ranges (v3 leaves out those starting at level 0, which v3 clients
 * cannot read: KAFKA-17011, fixed by v4) and the finalized levels above 0.
 * v5 (KIP-1242) lets a client say which cluster and node it means to reach:
 * both or neither must be given (else INVALID_REQUEST), and a mismatch is
 * REBOOTSTRAP_REQUIRED, each without the table, as Kafka 4.4 answers.
 * A request at a version above 5 is answered in the v0 layout with
 * UNSUPPORTED_VERSION and the full table (KIP-511); that path lives in the
 * connection code because it must not depend on decoding the request.
 */
import { ApiVersionsRequest } from '../wire/messages/api-versions-request.js';
import { ApiVersionsResponse } from '../wire/messages/api-versions-response.js';
import { ErrorCode } from '../wire/errors.js';
import { FEATURES, FINALIZED_FEATURES_EPOCH } from '../cluster/metadata/features.js';
import { defineHandler, type RequestContext } from './handler.js';

const FEATURE_MIN_ZERO_VERSION = 4;
const TARGET_CHECK_VERSION = 5;

/** Kafka accepts only names and versions of this shape from v3 clients. */
const SOFTWARE_FIELD = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

export function apiVersionsBody(errorCode: number, ctx: Pick<RequestContext, 'services'> & Partial<Pick<RequestContext, 'apiVersion'>>): ApiVersionsResponse {
  const version = ctx.apiVersion ?? 0;
  return {
    errorCode,
    apiKeys: ctx.services.apiVersions.map((v) => ({ apiKey: v.apiKey, minVersion: v.minVersion, maxVersion: v.maxVersion })),
    throttleTimeMs: 0,
    supportedFeatures: FEATURES.filter((f) => version >= FEATURE_MIN_ZERO_VERSION || f.minSupported > 0).map((f) => ({
      name: f.name,
      minVersion: f.minSupported,
      maxVersion: f.maxSupported,
    })),
    finalizedFeaturesEpoch: FINALIZED_FEATURES_EPOCH,
    finalizedFeatures: FEATURES.filter((f) => f.level > 0).map((f) => ({ name: f.name, maxVersionLevel: f.level, minVersionLevel: f.level })),
    zkMigrationReady: false,
  };
}

export const apiVersions = defineHandler<ApiVersionsRequest, ApiVersionsResponse>({
  apiKey: 18,
  name: 'ApiVersions',
  request: ApiVersionsRequest,
  response: ApiVersionsResponse,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    if (ctx.apiVersion >= 3 && !(SOFTWARE_FIELD.test(req.clientSoftwareName) && SOFTWARE_FIELD.test(req.clientSoftwareVersion))) {
      // Kafka answers a malformed client name with INVALID_REQUEST and no table; clients then retry with v0.
      return { ...apiVersionsBody(ErrorCode.INVALID_REQUEST, ctx), apiKeys: [] };
    }
    if (ctx.apiVersion >= TARGET_CHECK_VERSION && (req.clusterId !== null || req.nodeId !== -1)) {
      if (req.clusterId === null || req.nodeId === -1) return { ...apiVersionsBody(ErrorCode.INVALID_REQUEST, ctx), apiKeys: [] };
      const here = ctx.services.metadata.image().clusterId === req.clusterId && ctx.services.settings.nodeId === req.nodeId;
      if (!here) return { ...apiVersionsBody(ErrorCode.REBOOTSTRAP_REQUIRED, ctx), apiKeys: [] };
    }
    return apiVersionsBody(ErrorCode.NONE, ctx);
  },
  errorResponse: (_req, code, ctx) => apiVersionsBody(code, ctx),
});

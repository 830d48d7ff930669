/**
 * UpdateFeatures (key 57), versions 0-2: what `kafka-features upgrade`,
 * `downgrade` and `disable` send. gregor's feature levels are those of its
 * software (cluster/metadata/features.ts) and do not change at run time, so
 * an update naming the level a feature is at succeeds and changes nothing,
 * and any other is refused as Kafka refuses an update it cannot make: the
 * whole request INVALID_UPDATE_VERSION, naming the first feature that failed
 * (an unknown feature, a level outside the supported range, a lower level
 * without a downgrade type, with Kafka's messages; a level gregor could take
 * but does not switch to, saying so). v0 has allow_downgrade where v1 has
 * upgrade_type (1 upgrade, 2 safe downgrade, 3 unsafe downgrade); v2 answers
 * no per-feature results on success.
 */
import { ErrorCode } from '../wire/errors.js';
import { UpdateFeaturesRequest } from '../wire/messages/update-features-request.js';
import { UpdateFeaturesResponse } from '../wire/messages/update-features-response.js';
import { FEATURES } from '../cluster/metadata/features.js';
import { defineHandler } from './handler.js';

const UPGRADE = 1;
const NO_RESULTS_VERSION = 2;

export const updateFeatures = defineHandler<UpdateFeaturesRequest, UpdateFeaturesResponse>({
  apiKey: 57,
  name: 'UpdateFeatures',
  request: UpdateFeaturesRequest,
  response: UpdateFeaturesResponse,
  minVersion: 0,
  maxVersion: 2,
  handle(req, ctx) {
    const nodeId = ctx.services.settings.nodeId;
    for (const u of req.featureUpdates) {
      const problem = updateProblem(u.feature, u.maxVersionLevel, ctx.apiVersion === 0 ? !u.allowDowngrade : u.upgradeType === UPGRADE, nodeId);
      if (problem !== null) {
        return {
          throttleTimeMs: 0,
          errorCode: ErrorCode.INVALID_UPDATE_VERSION,
          errorMessage: `The update failed for all features since the following feature had an error: Invalid update version ${u.maxVersionLevel} for feature ${u.feature}. ${problem}`,
          results: [],
        };
      }
    }
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      results: ctx.apiVersion >= NO_RESULTS_VERSION ? [] : req.featureUpdates.map((u) => ({ feature: u.feature, errorCode: ErrorCode.NONE, errorMessage: 'NONE' })),
    };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, errorMessage: null, results: [] }),
});

/** Why setting `feature` to `level` cannot be done, or null when it is already there. */
function updateProblem(feature: string, level: number, upgradeOnly: boolean, nodeId: number): string | null {
  const f = FEATURES.find((x) => x.name === feature);
  if (!f) return `Local controller ${nodeId} does not support this feature.`;
  if (level < f.minSupported || level > f.maxSupported) return `Local controller ${nodeId} only supports versions ${f.minSupported}-${f.maxSupported}`;
  if (level < f.level && upgradeOnly) {
    return "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.";
  }
  if (level !== f.level) return `This broker runs ${feature} at level ${f.level}, fixed by its software; it cannot change it.`;
  return null;
}

/**
 * ShareAcknowledge (key 79), versions 1-2: a member of a share group
 * acknowledges records it was given without fetching more: accept (1),
 * release for redelivery (2), reject (3), a gap in the log (0), and in v2
 * renew the acquisition lock (4, with IsRenewAck). A share session epoch
 * of -1 closes the session after the acknowledgements; 0 is refused, since
 * only ShareFetch opens a session. Version 0 (early access) is not served.
 */
import { ErrorCode } from '../wire/errors.js';
import { ShareAcknowledgeRequest } from '../wire/messages/share-acknowledge-request.js';
import { ShareAcknowledgeResponse } from '../wire/messages/share-acknowledge-response.js';
import { defineHandler } from './handler.js';
import { acknowledgementsOf, byTopic, hasRenew, leaderEndpoints } from './share-results.js';

export const shareAcknowledge = defineHandler<ShareAcknowledgeRequest, ShareAcknowledgeResponse>({
  apiKey: 79,
  name: 'ShareAcknowledge',
  request: ShareAcknowledgeRequest,
  response: ShareAcknowledgeResponse,
  minVersion: 1,
  maxVersion: 2,
  async handle(req, ctx) {
    const acknowledgements = acknowledgementsOf(req.topics);
    if (hasRenew(acknowledgements) && !(ctx.apiVersion >= 2 && req.isRenewAck)) return failure(ErrorCode.INVALID_REQUEST, 'Renew acknowledgements need IsRenewAck.');
    const r = await ctx.services.shares.manager.acknowledge({
      groupId: req.groupId,
      memberId: req.memberId,
      shareSessionEpoch: req.shareSessionEpoch,
      acknowledgements,
    });
    return {
      throttleTimeMs: 0,
      errorCode: r.errorCode,
      errorMessage: r.errorMessage,
      acquisitionLockTimeoutMs: r.acquisitionLockTimeoutMs,
      responses: byTopic(r.partitions, (p) => ({
        partitionIndex: p.partition,
        errorCode: p.errorCode,
        errorMessage: p.errorMessage,
        currentLeader: { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch },
      })),
      nodeEndpoints: leaderEndpoints(r.partitions, ctx),
    };
  },
  errorResponse: (_req, errorCode) => failure(errorCode, null),
});

function failure(errorCode: number, errorMessage: string | null): ShareAcknowledgeResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage, acquisitionLockTimeoutMs: 0, responses: [], nodeEndpoints: [] };
}

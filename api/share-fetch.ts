/**
 * ShareFetch (key 78), versions 1-2: a member of a share group (KIP-932)
 * fetches records from the partitions of its share session and
 * acknowledges those it was given. The records it gets are acquired for it
 * under a lock of group.share.record.lock.duration.ms (the answer's
 * AcquisitionLockTimeoutMs), each with its delivery count. v2 adds the
 * record-limit acquire mode (ShareAcquireMode 1: never more than
 * MaxRecords) and renew acknowledgements (type 4, with IsRenewAck, which
 * fetch nothing). Version 0 was an early-access protocol of Kafka 4.0 that
 * Kafka 4.1 removed; it is not served.
 *
 * The leader of each partition answers for it (see cluster/share/share-manager.ts);
 * a partition led elsewhere is answered NOT_LEADER_OR_FOLLOWER with its
 * leader and that leader's endpoint.
 */
import { ErrorCode } from '../wire/errors.js';
import { ShareFetchRequest } from '../wire/messages/share-fetch-request.js';
import { ShareFetchResponse } from '../wire/messages/share-fetch-response.js';
import { defineHandler } from './handler.js';
import { acknowledgementsOf, byTopic, hasRenew, leaderEndpoints } from './share-results.js';

const RECORD_LIMIT_MODE = 1;

export const shareFetch = defineHandler<ShareFetchRequest, ShareFetchResponse>({
  apiKey: 78,
  name: 'ShareFetch',
  request: ShareFetchRequest,
  response: ShareFetchResponse,
  minVersion: 1,
  maxVersion: 2,
  async handle(req, ctx) {
    const acknowledgements = acknowledgementsOf(req.topics);
    const renewing = ctx.apiVersion >= 2 && req.isRenewAck;
    if (hasRenew(acknowledgements) && !renewing) return failure(ErrorCode.INVALID_REQUEST, 'Renew acknowledgements need IsRenewAck.');
    if (renewing) {
      // A renewal fetches nothing, so it must not ask to wait or read.
      const wrong = [
        ['maxBytes', req.maxBytes],
        ['minBytes', req.minBytes],
        ['maxRecords', req.maxRecords],
        ['maxWaitMs', req.maxWaitMs],
      ].filter(([, v]) => v !== 0);
      if (wrong.length > 0) return failure(ErrorCode.INVALID_REQUEST, `${wrong.map(([n]) => `${n} must be set to 0, `).join('')}if isRenewAck is true.`);
    }
    const fetch = renewing ? [] : req.topics.flatMap((t) => t.partitions.map((p) => ({ topicId: t.topicId, partition: p.partitionIndex })));
    const r = await ctx.services.shares.manager.fetch({
      groupId: req.groupId,
      memberId: req.memberId,
      shareSessionEpoch: req.shareSessionEpoch,
      maxWaitMs: renewing ? 0 : req.maxWaitMs,
      minBytes: req.minBytes,
      maxBytes: req.maxBytes,
      maxRecords: req.maxRecords,
      wholeBatches: !(ctx.apiVersion >= 2 && req.shareAcquireMode === RECORD_LIMIT_MODE),
      fetch,
      acknowledgements,
      ...(ctx.onConnectionClose ? { onConnectionClose: ctx.onConnectionClose } : {}),
      forget: req.forgottenTopicsData.flatMap((t) => t.partitions.map((partition) => ({ topicId: t.topicId, partition }))),
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
        acknowledgeErrorCode: p.acknowledgeErrorCode,
        acknowledgeErrorMessage: p.acknowledgeErrorMessage,
        currentLeader: { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch },
        records: p.records,
        acquiredRecords: p.acquired.map((a) => ({ firstOffset: a.firstOffset, lastOffset: a.lastOffset, deliveryCount: a.deliveryCount })),
      })),
      nodeEndpoints: leaderEndpoints(r.partitions, ctx),
    };
  },
  errorResponse: (_req, errorCode) => failure(errorCode, null),
});

function failure(errorCode: number, errorMessage: string | null): ShareFetchResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage, acquisitionLockTimeoutMs: 0, responses: [], nodeEndpoints: [] };
}

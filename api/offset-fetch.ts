/**
 * OffsetFetch (key 9), versions 0-9.
 * v1 reads offsets from __consumer_offsets (v0 from ZooKeeper in old Kafka;
 * here the same store); v2 allows a null topic list, meaning every
 * committed offset of the group, and adds a top-level error; v3 the
 * throttle time; v5 the committed leader epoch; v6 is flexible; v7 adds
 * require_stable; v8 asks for several groups at once, each answered on its
 * own; v9 adds member id and epoch (KIP-848; a classic group ignores them).
 *
 * A partition without a commit, and every partition of a group this broker
 * does not know, answers offset -1, empty metadata and no error. Offsets
 * of a transaction still open (TxnOffsetCommit) are never answered: without
 * require_stable a partition answers its last committed offset; with it,
 * a partition that has a pending transactional offset answers
 * UNSTABLE_OFFSET_COMMIT (per partition, from v7, as Kafka's coordinator
 * does), and the client retries. A group's error (NOT_COORDINATOR, ...)
 * goes to each of its partitions before v2; from v2 it is the group's error
 * code alone, without topics, as Kafka's OffsetFetchResponse.groupError
 * builds it.
 */
import { ErrorCode } from '../wire/errors.js';
import { OffsetFetchRequest } from '../wire/messages/offset-fetch-request.js';
import { OffsetFetchResponse, type OffsetFetchResponseGroup } from '../wire/messages/offset-fetch-response.js';
import type { OffsetFetchResult } from '../cluster/group/group-coordinator.js';
import { defineHandler, type RequestContext } from './handler.js';

const TOP_LEVEL_ERROR_VERSION = 2;
const REQUIRE_STABLE_VERSION = 7;
const MULTI_GROUP_VERSION = 8;

interface GroupAsk {
  groupId: string;
  topics: { name: string; partitionIndexes: number[] }[] | null;
}

function asks(req: OffsetFetchRequest, version: number): GroupAsk[] {
  if (version >= MULTI_GROUP_VERSION) return req.groups.map((g) => ({ groupId: g.groupId, topics: g.topics }));
  return [{ groupId: req.groupId, topics: req.topics }];
}

function failed(ask: GroupAsk, errorCode: number): OffsetFetchResult {
  return {
    errorCode,
    topics: (ask.topics ?? []).map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode })),
    })),
  };
}

/** A group's topics as the version carries them: from v2 a group's error comes alone, before v2 on each partition. */
function topicsOf(result: OffsetFetchResult, version: number): OffsetFetchResult['topics'] {
  return result.errorCode !== ErrorCode.NONE && version >= TOP_LEVEL_ERROR_VERSION ? [] : result.topics;
}

function body(groups: { ask: GroupAsk; result: OffsetFetchResult }[], version: number): OffsetFetchResponse {
  if (version >= MULTI_GROUP_VERSION) {
    const out: OffsetFetchResponseGroup[] = groups.map(({ ask, result }) => ({ groupId: ask.groupId, errorCode: result.errorCode, topics: topicsOf(result, version) }));
    return { throttleTimeMs: 0, topics: [], errorCode: ErrorCode.NONE, groups: out };
  }
  const { result } = groups[0]!;
  return { throttleTimeMs: 0, topics: topicsOf(result, version), errorCode: result.errorCode, groups: [] };
}

export const offsetFetch = defineHandler<OffsetFetchRequest, OffsetFetchResponse>({
  apiKey: 9,
  name: 'OffsetFetch',
  request: OffsetFetchRequest,
  response: OffsetFetchResponse,
  minVersion: 0,
  maxVersion: 9,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const requireStable = v >= REQUIRE_STABLE_VERSION && req.requireStable;
    const groups = asks(req, v).map((ask) => ({ ask, result: ctx.services.groups.fetchOffsets(ask.groupId, ask.topics, requireStable) }));
    return body(groups, v);
  },
  errorResponse: (req: OffsetFetchRequest, errorCode: number, ctx: RequestContext) =>
    body(
      asks(req, ctx.apiVersion).map((ask) => ({ ask, result: failed(ask, errorCode) })),
      ctx.apiVersion,
    ),
});

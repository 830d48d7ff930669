/**
 * OffsetFetch (key 9), versions 0-10.
 * v1 reads offsets from __consumer_offsets (v0 from ZooKeeper in old Kafka;
 * here the same store); v2 allows a null topic list, meaning every
 * committed offset of the group, and adds a top-level error; v3 the
 * throttle time; v5 the committed leader epoch; v6 is flexible; v7 adds
 * require_stable; v8 asks for several groups at once, each answered on its
 * own; v9 adds member id and epoch (KIP-848: a member of a consumer group must
 * name itself at its current epoch, else the group's error is UNKNOWN_MEMBER_ID
 * or STALE_MEMBER_EPOCH; a classic group ignores them);
 * v10 names topics by id, both ways: an id no topic has is answered
 * UNKNOWN_TOPIC_ID on its partitions, and committed offsets of a topic that
 * no longer exists are left out of an answer listing every topic.
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
import { ZERO_UUID } from '../wire/uuid.js';
import { defineHandler, type RequestContext } from './handler.js';

const TOP_LEVEL_ERROR_VERSION = 2;
const REQUIRE_STABLE_VERSION = 7;
const MULTI_GROUP_VERSION = 8;

const TOPIC_ID_VERSION = 10;
const MEMBER_VERSION = 9;

interface GroupAsk {
  groupId: string;
  topics: { name: string; topicId: string; partitionIndexes: number[] }[] | null;
  /** v9+: the member asking, checked against a consumer group (KIP-848). */
  member: { memberId: string | null; memberEpoch: number } | null;
}

function asks(req: OffsetFetchRequest, version: number, ctx: Pick<RequestContext, 'services'>): GroupAsk[] {
  if (version >= MULTI_GROUP_VERSION) {
    const byId = version >= TOPIC_ID_VERSION ? ctx.services.metadata.image().topicsById : null;
    return req.groups.map((g) => ({
      groupId: g.groupId,
      member: version >= MEMBER_VERSION ? { memberId: g.memberId, memberEpoch: g.memberEpoch } : null,
      topics: g.topics === null ? null : g.topics.map((t) => ({ name: byId ? (byId.get(t.topicId)?.name ?? '') : t.name, topicId: t.topicId, partitionIndexes: t.partitionIndexes })),
    }));
  }
  return [{ groupId: req.groupId, member: null, topics: req.topics === null ? null : req.topics.map((t) => ({ ...t, topicId: ZERO_UUID })) }];
}

/** The coordinator's answer with each topic's id; from v10, topics asked by an unknown id get UNKNOWN_TOPIC_ID. */
type Answer = { errorCode: number; topics: { name: string; topicId: string; partitions: OffsetFetchResult['topics'][number]['partitions'] }[] };

function withIds(ask: GroupAsk, result: OffsetFetchResult, version: number, ctx: Pick<RequestContext, 'services'>): Answer {
  const topics = ctx.services.metadata.image().topics;
  if (version < TOPIC_ID_VERSION) return { ...result, topics: result.topics.map((t) => ({ ...t, topicId: topics.get(t.name)?.topicId ?? ZERO_UUID })) };
  if (ask.topics === null) {
    return { ...result, topics: result.topics.flatMap((t) => { const id = topics.get(t.name)?.topicId; return id ? [{ ...t, topicId: id }] : []; }) };
  }
  return {
    ...result,
    topics: ask.topics.map((t, i) => {
      const got = result.topics[i]!;
      if (t.name !== '') return { ...got, topicId: t.topicId };
      return { name: '', topicId: t.topicId, partitions: got.partitions.map((p) => ({ ...p, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.UNKNOWN_TOPIC_ID })) };
    }),
  };
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
function topicsOf(result: Answer, version: number): Answer['topics'] {
  return result.errorCode !== ErrorCode.NONE && version >= TOP_LEVEL_ERROR_VERSION ? [] : result.topics;
}

function body(groups: { ask: GroupAsk; result: Answer }[], version: number): OffsetFetchResponse {
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
  maxVersion: 10,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const requireStable = v >= REQUIRE_STABLE_VERSION && req.requireStable;
    const groups = asks(req, v, ctx).map((ask) => ({ ask, result: withIds(ask, ctx.services.groups.fetchOffsets(ask.groupId, ask.topics, requireStable, ask.member), v, ctx) }));
    return body(groups, v);
  },
  errorResponse: (req: OffsetFetchRequest, errorCode: number, ctx: RequestContext) =>
    body(
      asks(req, ctx.apiVersion, ctx).map((ask) => ({ ask, result: withIds(ask, failed(ask, errorCode), ctx.apiVersion, ctx) })),
      ctx.apiVersion,
    ),
});

/**
 * Fetch (key 1), versions 0-18, as Kafka 4.4 serves consumers (and, for
 * reading, followers).
 * v0-v1 get magic 0 message sets and v2-v3 magic 1 ones, down-converted from
 * the stored batches; before v3 the byte limits are hard (no KIP-74 first
 * batch); v3 adds the response-wide max_bytes; v4 isolation_level,
 * last_stable_offset and aborted_transactions; v5 log_start_offset; v7
 * incremental fetch sessions (KIP-227) and a top-level error code; v9
 * current_leader_epoch (fencing); v11 rack_id and preferred_read_replica
 * (always -1: no replica selector); v12 is flexible, with last_fetched_epoch
 * and the tagged diverging_epoch / current_leader / snapshot_id; v13 names
 * topics by id; v15 moves replica_id into the tagged replica_state; v16 adds
 * node_endpoints for partitions that answer NOT_LEADER_OR_FOLLOWER or
 * FENCED_LEADER_EPOCH; v17 the follower's directory id (ignored); v18 the
 * tagged high_watermark a KRaft voter reports (KIP-1166; ignored).
 *
 * The long poll: when the first read finds fewer than min_bytes and nothing
 * went wrong, the request parks in the replica manager and is re-checked on
 * every append to one of its partitions, answering as soon as enough is
 * there, at max_wait_ms, or at shutdown, and then reads again.
 *
 * Not implemented: last_fetched_epoch divergence checks (this broker never
 * truncates a leader's log), quotas and throttling, the per-topic
 * compression.type and message.downconversion.enable checks (no such topic
 * configs yet), and follower bookkeeping (a replica's fetch reads to the log
 * end and moves nothing).
 */
import { FetchRequest } from '../wire/messages/fetch-request.js';
import { FetchResponse, type FetchableTopicResponse, type NodeEndpoint, type PartitionData } from '../wire/messages/fetch-response.js';
import { ErrorCode } from '../wire/errors.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { downConvert } from '../wire/legacy-message-set.js';
import { fetchBuffers } from '../wire/buffer-pool.js';
import { readRanges } from '../storage/log.js';
import { endpointFor, hasPartition } from '../cluster/metadata/metadata-image.js';
import {
  FetchSessionCache,
  partitionKey,
  type FetchContext,
  type FetchPartitionKey,
  type FetchPartitionOutcome,
  type FetchRequestPartition,
  type FetchResponsePartition,
} from '../cluster/replication/fetch-session.js';
import { readError, type FetchIsolation, type LogReadResult } from '../cluster/replication/replica-manager.js';
import { defineHandler, type BrokerServices, type RequestContext } from './handler.js';

/** fetch.max.bytes: Kafka's default cap on a whole response, 55 MiB. */
export const DEFAULT_FETCH_MAX_BYTES = 57671680;
/** max.incremental.fetch.session.cache.slots default. */
export const DEFAULT_FETCH_SESSION_CACHE_SLOTS = 1000;
const INT32_MAX = 2147483647;
const READ_COMMITTED = 1;
const EMPTY = Buffer.alloc(0);

const sessionCaches = new WeakMap<BrokerServices, FetchSessionCache>();

/** The broker's fetch session cache: one per set of services, made on first use. */
export function fetchSessionsOf(services: BrokerServices): FetchSessionCache {
  let cache = sessionCaches.get(services);
  if (!cache) {
    cache = new FetchSessionCache({ maxSlots: services.settings.config.int('max.incremental.fetch.session.cache.slots') ?? DEFAULT_FETCH_SESSION_CACHE_SLOTS });
    sessionCaches.set(services, cache);
  }
  return cache;
}

interface Outcome extends FetchPartitionOutcome {
  readonly data: PartitionData;
}

function outcome(data: PartitionData): Outcome {
  return {
    data,
    errorCode: data.errorCode,
    highWatermark: data.highWatermark,
    logStartOffset: data.logStartOffset,
    recordsSize: data.records?.length ?? 0,
    preferredReadReplica: data.preferredReadReplica,
    divergingEpoch: false,
  };
}

/** A partition answered with only an error, as Kafka's FetchResponse.partitionResponse builds one. */
function partitionError(partitionIndex: number, errorCode: number): PartitionData {
  return {
    partitionIndex,
    errorCode,
    highWatermark: -1n,
    lastStableOffset: -1n,
    logStartOffset: -1n,
    divergingEpoch: { epoch: -1, endOffset: -1n },
    currentLeader: { leaderId: -1, leaderEpoch: -1 },
    snapshotId: { endOffset: -1n, epoch: -1 },
    abortedTransactions: null,
    preferredReadReplica: -1,
    records: null,
  };
}


/** Partitions in response order, grouped into topics the way Kafka does: consecutive runs of one topic. */
function groupByTopic(parts: FetchResponsePartition<Outcome>[]): FetchableTopicResponse[] {
  const out: FetchableTopicResponse[] = [];
  let last: FetchableTopicResponse | undefined;
  for (const { key, outcome: o } of parts) {
    const topic = key.topic ?? '';
    if (!last || last.topic !== topic || last.topicId !== key.topicId) {
      last = { topic, topicId: key.topicId, partitions: [] };
      out.push(last);
    }
    last.partitions.push({ ...o.data, partitionIndex: key.partition });
  }
  return out;
}

interface Read {
  readonly p: FetchRequestPartition;
  readonly r: LogReadResult;
}

export const fetch = defineHandler<FetchRequest, FetchResponse>({
  apiKey: 1,
  name: 'Fetch',
  request: FetchRequest,
  response: FetchResponse,
  minVersion: 0,
  maxVersion: 18,
  async handle(req, ctx) {
    const v = ctx.apiVersion;
    const { services } = ctx;
    const { replicas, settings } = services;
    const replicaId = v >= 15 ? req.replicaState.replicaId : req.replicaId;
    const isFollower = replicaId >= 0;
    let image = services.metadata.image();
    const topicName = (id: string): string | undefined => image.topicsById.get(id)?.name;

    const fetchData = new Map<string, FetchRequestPartition>();
    for (const t of req.topics) {
      const topicId = v >= 13 ? t.topicId : ZERO_UUID;
      const topic = v >= 13 ? (topicName(t.topicId) ?? null) : t.topic;
      for (const p of t.partitions) {
        const key: FetchPartitionKey = { topicId, topic, partition: p.partition };
        fetchData.set(partitionKey(key), {
          key,
          data: {
            fetchOffset: p.fetchOffset,
            logStartOffset: p.logStartOffset,
            maxBytes: p.partitionMaxBytes,
            currentLeaderEpoch: v >= 9 ? p.currentLeaderEpoch : -1,
            lastFetchedEpoch: v >= 12 ? p.lastFetchedEpoch : -1,
          },
        });
      }
    }
    const toForget: FetchPartitionKey[] = [];
    for (const t of req.forgottenTopicsData) {
      const topicId = v >= 13 ? t.topicId : ZERO_UUID;
      const topic = v >= 13 ? (topicName(t.topicId) ?? null) : t.topic;
      for (const partition of t.partitions) toForget.push({ topicId, topic, partition });
    }

    const context = fetchSessionsOf(services).newContext(v, req.sessionId, req.sessionEpoch, isFollower, fetchData, toForget, topicName);

    const unknownIds: FetchResponsePartition<Outcome>[] = [];
    const unknownPartitions: FetchResponsePartition<Outcome>[] = [];
    const interesting: FetchRequestPartition[] = [];
    for (const p of context.partitions()) {
      if (p.key.topic === null) unknownIds.push({ key: p.key, outcome: outcome(partitionError(p.key.partition, ErrorCode.UNKNOWN_TOPIC_ID)) });
      else if (!isFollower && !hasPartition(image, p.key.topic, p.key.partition)) {
        unknownPartitions.push({ key: p.key, outcome: outcome(partitionError(p.key.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)) });
      } else interesting.push(p);
    }
    const erroneous = [...unknownIds, ...unknownPartitions];
    // A follower's fetch offset is its log end: the leader learns from it what the follower has.
    if (isFollower) for (const p of interesting) replicas.recordFollowerFetch(p.key.topic!, p.key.partition, replicaId, p.data.fetchOffset, p.data.currentLeaderEpoch);

    const fetchMaxBytes = Math.min(v >= 3 ? req.maxBytes : INT32_MAX, settings.config.int('fetch.max.bytes') ?? DEFAULT_FETCH_MAX_BYTES);
    const fetchMinBytes = Math.min(req.minBytes, fetchMaxBytes);
    let reads: Read[] = [];
    if (interesting.length > 0) {
      if (req.isolationLevel !== 0 && req.isolationLevel !== READ_COMMITTED) {
        // Kafka fails the whole request on an isolation level it does not know.
        throw new RangeError(`unknown isolation level ${req.isolationLevel}`);
      }
      const isolation: FetchIsolation = isFollower ? 'logEnd' : v >= 4 && req.isolationLevel === READ_COMMITTED ? 'txnCommitted' : 'highWatermark';
      // Consumers before v11 carry no client metadata, and so may read only from the leader.
      const fetchOnlyLeader = isFollower || v < 11;
      const readAll = (): Read[] => {
        let limit = fetchMaxBytes;
        // Before v3 the limits are hard: a first batch larger than them is not returned.
        let minOneMessage = v >= 3;
        return interesting.map((p) => {
          const r = replicas.readForFetch(
            p.key.topic!,
            p.key.partition,
            { fetchOffset: p.data.fetchOffset, maxBytes: Math.min(p.data.maxBytes, limit), currentLeaderEpoch: p.data.currentLeaderEpoch, minOneMessage },
            isolation,
            fetchOnlyLeader,
          );
          if (r.size > 0) minOneMessage = false;
          limit = Math.max(0, limit - r.size);
          return { p, r };
        });
      };
      reads = readAll();
      const readable = reads.reduce((n, x) => n + x.r.size, 0);
      const failed = reads.some((x) => x.r.errorCode !== ErrorCode.NONE);
      if (req.maxWaitMs > 0 && readable < fetchMinBytes && !failed) {
        const tryComplete = (): boolean => {
          let available = 0;
          for (const { key, data } of interesting) {
            const b = replicas.fetchableBytes(key.topic!, key.partition, data.fetchOffset, data.maxBytes, data.currentLeaderEpoch, isolation, fetchOnlyLeader);
            if (b === 'complete') return true;
            available += b;
          }
          return available >= fetchMinBytes;
        };
        const parked = interesting.map(({ key }) => ({ topic: key.topic!, partition: key.partition }));
        await replicas.awaitFetchable(parked, tryComplete, req.maxWaitMs);
        image = services.metadata.image();
        reads = readAll();
      }
    }

    const nodeEndpoints = new Map<number, NodeEndpoint>();
    const answers: FetchResponsePartition<Outcome>[] = reads.map(({ p, r }) => {
      let records: Buffer;
      let errorCode = r.errorCode;
      try {
        records = r.size > 0 ? readRanges(r.records, takeFetchBuffer) : EMPTY;
      } catch (err) {
        services.log.warn({ err, topic: p.key.topic, partition: p.key.partition }, 'fetch read failed');
        records = EMPTY;
        r = readError(ErrorCode.KAFKA_STORAGE_ERROR);
        errorCode = r.errorCode;
      }
      // Clients before v6 do not know KAFKA_STORAGE_ERROR; this one makes them refresh metadata and retry.
      if (errorCode === ErrorCode.KAFKA_STORAGE_ERROR && v <= 5) errorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER;
      const data: PartitionData = {
        partitionIndex: p.key.partition,
        errorCode,
        highWatermark: r.highWatermark,
        lastStableOffset: r.lastStableOffset,
        logStartOffset: r.logStartOffset,
        divergingEpoch: { epoch: -1, endOffset: -1n },
        currentLeader: { leaderId: -1, leaderEpoch: -1 },
        snapshotId: { endOffset: -1n, epoch: -1 },
        abortedTransactions: r.abortedTransactions,
        preferredReadReplica: -1,
        records,
      };
      if (v >= 16 && (errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER || errorCode === ErrorCode.FENCED_LEADER_EPOCH)) {
        const state = image.topics.get(p.key.topic!)?.partitions.find((x) => x.partition === p.key.partition);
        data.currentLeader = { leaderId: state?.leader ?? -1, leaderEpoch: state?.leaderEpoch ?? -1 };
        const broker = state ? image.brokers.get(state.leader) : undefined;
        const ep = broker ? endpointFor(broker, ctx.listener) : undefined;
        if (broker && ep) nodeEndpoints.set(broker.nodeId, { nodeId: broker.nodeId, host: ep.host, port: ep.port, rack: broker.rack });
      }
      return { key: p.key, outcome: outcome(data) };
    });
    answers.push(...erroneous);

    const generated = context.updateAndGenerateResponse(answers);
    const partitions = generated.partitions.map((x) => ({ key: x.key, outcome: outcome(finalPartition(x.key, x.outcome.data, v, context, ctx.services)) }));
    return {
      throttleTimeMs: 0,
      errorCode: generated.errorCode,
      sessionId: generated.sessionId,
      responses: groupByTopic(partitions),
      nodeEndpoints: [...nodeEndpoints.values()],
    };
  },
  errorResponse: errorBody,
});

/**
 * The partition as it goes out: every partition carries a record set (empty
 * on error), and v0-v3 get theirs down-converted from the fetch offset.
 */
/** Log bytes for an answer come from the pool; the connection gives them back once sent. */
const takeFetchBuffer = (size: number): Buffer => fetchBuffers.take(size);

function finalPartition(key: FetchPartitionKey, data: PartitionData, version: number, context: FetchContext, services: BrokerServices): PartitionData {
  // Clients older than Fetch v10 cannot read zstd: Kafka refuses them on a topic whose compression.type is zstd.
  if (version < 10 && key.topic !== null && services.replicas.logFor(key.topic, key.partition)?.config.compressionType === 'zstd') {
    if (data.records) fetchBuffers.release(data.records);
    return partitionError(key.partition, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
  }
  const records = data.records ?? EMPTY;
  if (version > 3 || records.length === 0) return { ...data, records };
  const converted = downConvert(records, version <= 1 ? 0 : 1, context.fetchOffset(key) ?? 0n);
  fetchBuffers.release(records);
  if (!converted.ok) return partitionError(key.partition, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
  return { ...data, records: converted.records };
}

/**
 * The answer when the request fails as a whole (Kafka's getErrorResponse):
 * from v13 only the top-level code; before, every requested partition too.
 */
function errorBody(req: FetchRequest, errorCode: number, ctx: RequestContext): FetchResponse {
  const responses: FetchableTopicResponse[] =
    ctx.apiVersion >= 13
      ? []
      : req.topics.map((t) => ({ topic: t.topic, topicId: t.topicId, partitions: t.partitions.map((p) => partitionError(p.partition, errorCode)) }));
  return { throttleTimeMs: 0, errorCode, sessionId: req.sessionId, responses, nodeEndpoints: [] };
}

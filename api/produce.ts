/**
 * Produce (key 0), versions 0-13.
 * v0-v2 carry legacy message sets (magic 0/1), which the log validator converts to
 * one v2 batch; v2 adds log_append_time to the answer; v3 adds transactional_id and
 * requires exactly one magic-2 batch per partition; v5 adds log_start_offset; v7 is
 * the first that may carry zstd; v8 adds record_errors and error_message; v9 is
 * flexible; v10 adds the tagged current_leader and node_endpoints (left at their
 * defaults: this broker leads every partition it answers for); v11 may answer
 * TRANSACTION_ABORTABLE; v12 is v11 from a producer of transactions v2, whose
 * batches add their partitions to the transaction themselves; v13 names topics
 * by id (UNKNOWN_TOPIC_ID for an id no topic has, and no auto-creation).
 *
 * acks=0 appends and sends nothing back (the client expects no response); acks=1
 * answers after the append; acks=-1 once every ISR member has the records (the
 * high watermark reached them), or REQUEST_TIMED_OUT after the request's
 * timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
 * min.insync.replicas meanwhile, NOT_LEADER_OR_FOLLOWER when leadership moved
 * (see ReplicaManager.waitForReplication). acks=-1 to a partition whose ISR is
 * below min.insync.replicas (capped at its replica count, as Kafka 4.0 caps
 * it) appends nothing and answers NOT_ENOUGH_REPLICAS; see
 * ReplicaManager.appendRecords. A topic whose compression.type names a codec
 * stores every batch with it, re-encoding those that came otherwise (see
 * storage/log-validator.ts). Batches of idempotent and transactional producers
 * are checked against the producer's state in the partition (duplicates
 * answered with their first offsets, sequence gaps and old epochs refused),
 * and a transactional batch only goes to a partition its transaction added
 * (see unverified) unless transaction.partition.verification.enable is false.
 * From v12 the producer uses transactions v2 and sends no AddPartitionsToTxn:
 * this broker asks the coordinator to add the partition (retrying for up to
 * 100 ms while it answers CONCURRENT_TRANSACTIONS, which the client then
 * gets and retries).
 */
import { ProduceRequest } from '../wire/messages/produce-request.js';
import { ProduceResponse, type PartitionProduceResponse, type TopicProduceResponse } from '../wire/messages/produce-response.js';
import { ErrorCode, errorName } from '../wire/errors.js';
import { ATTRIBUTES, BATCH_LENGTH, COMPRESSION_MASK, Compression, LOG_OVERHEAD, MAGIC, MAGIC_V2, PRODUCER_EPOCH, PRODUCER_ID, BATCH_HEADER_SIZE, TRANSACTIONAL } from '../wire/record-batch.js';
import { appendError, type PartitionAppendResult, type VerificationGuard } from '../cluster/replication/replica-manager.js';
import { verificationError } from '../cluster/txn/txn-verifier.js';
import { INTERNAL_TOPICS } from '../cluster/metadata/topic-names.js';
import { hasPartition } from '../cluster/metadata/metadata-image.js';
import { autoCreateTopic } from './auto-create.js';
import { verificationEnabled } from './config-resources.js';
import { NO_RESPONSE, defineHandler, type RequestContext } from './handler.js';

const EMPTY = Buffer.alloc(0);
/** Produce v12+: a transactions v2 producer, whose partitions its coordinator adds when the leader asks. */
const TRANSACTION_V2_VERSION = 12;
/** How long a leader asks again while the coordinator answers CONCURRENT_TRANSACTIONS (Kafka's add.partitions.to.txn.retry.backoff.max.ms), and how often. */
const ADD_RETRY_MAX_MS = 100;
const ADD_RETRY_BACKOFF_MS = 20;
/** The client id Kafka lets write to internal topics (its AdminUtils.ADMIN_CLIENT_ID). */
const ADMIN_CLIENT_ID = '__admin_client';

function partitionResponse(index: number, r: PartitionAppendResult): PartitionProduceResponse {
  return {
    index,
    errorCode: r.errorCode,
    baseOffset: r.baseOffset,
    logAppendTimeMs: r.logAppendTimeMs,
    logStartOffset: r.logStartOffset,
    recordErrors: r.recordErrors.map((e) => ({ batchIndex: e.batchIndex, batchIndexErrorMessage: e.message })),
    errorMessage: r.errorMessage,
    currentLeader: { leaderId: -1, leaderEpoch: -1 },
  };
}

/**
 * What a request of this version may not carry, checked before the log sees the
 * bytes: from v3 on, a partition holds exactly one batch and it has magic 2;
 * before v7, no zstd. Truncated or malformed input is left to the validator.
 *
 * Example: two v2 batches back to back in a v9 request -> INVALID_RECORD; the same
 * bytes in a v2 request are not refused here.
 */
export function versionProblem(records: Buffer, version: number): PartitionAppendResult | null {
  if (records.length <= MAGIC) return null;
  const magic = records[MAGIC]!;
  if (version >= 3) {
    if (magic !== MAGIC_V2) {
      return appendError(ErrorCode.INVALID_RECORD, `Produce v${version} accepts only record batches of magic 2, not magic ${magic}`);
    }
    // Kafka parses the partition's bytes into batches first: a batch that claims more
    // bytes than are present leaves no complete batch, which is not exactly one.
    const first = records.length >= LOG_OVERHEAD ? LOG_OVERHEAD + records.readInt32BE(BATCH_LENGTH) : records.length;
    if (first > LOG_OVERHEAD && first !== records.length) {
      return appendError(ErrorCode.INVALID_RECORD, `a Produce v${version} partition must contain exactly one record batch`);
    }
  }
  if (version < 7 && magic === MAGIC_V2 && records.length > ATTRIBUTES + 1) {
    if ((records.readInt16BE(ATTRIBUTES) & COMPRESSION_MASK) === Compression.Zstd) {
      return appendError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `zstd needs Produce v7 or later, not v${version}`);
    }
  }
  return null;
}

/**
 * What refuses a whole request with transactional batches, as Kafka does
 * before looking at any partition: TRANSACTIONAL_ID_AUTHORIZATION_FAILED when
 * it names no transactional id, INVALID_PRODUCER_ID_MAPPING when they come
 * from more than one producer id or epoch. null otherwise.
 *
 * Example: a transactional batch of producer 7 in a request whose
 * transactional_id is null -> TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
 */
function transactionalProblem(req: ProduceRequest): number | null {
  let producer: string | null = null;
  for (const topic of req.topicData) {
    for (const p of topic.partitionData) {
      const records = p.records;
      // From v3 on a partition holds one batch; legacy message sets carry no transactions.
      if (!records || records.length < BATCH_HEADER_SIZE || records[MAGIC] !== MAGIC_V2) continue;
      if ((records.readInt16BE(ATTRIBUTES) & TRANSACTIONAL) === 0 || records.readBigInt64BE(PRODUCER_ID) < 0n) continue;
      if (req.transactionalId === null) return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
      const id = `${records.readBigInt64BE(PRODUCER_ID)}:${records.readInt16BE(PRODUCER_EPOCH)}`;
      if (producer !== null && producer !== id) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
      producer = id;
    }
  }
  return null;
}

/**
 * The producer of a transactional batch in `records`, or null: only those
 * batches need their partition verified with the transaction's coordinator
 * (Kafka's transaction verification, KIP-890), and only when
 * transaction.partition.verification.enable is on.
 */
function transactionalProducer(records: Buffer): { producerId: bigint; producerEpoch: number } | null {
  if (records.length < BATCH_HEADER_SIZE || records[MAGIC] !== MAGIC_V2) return null;
  if ((records.readInt16BE(ATTRIBUTES) & TRANSACTIONAL) === 0) return null;
  const producerId = records.readBigInt64BE(PRODUCER_ID);
  return producerId < 0n ? null : { producerId, producerEpoch: records.readInt16BE(PRODUCER_EPOCH) };
}

/**
 * A partition's answer when its coordinator did not confirm it is in the
 * transaction, as Kafka answers it: not added, INVALID_TXN_STATE before v11
 * and TRANSACTION_ABORTABLE from v11 on; the coordinator's transient errors
 * become NOT_ENOUGH_REPLICAS, which producers retry. null when verified.
 *
 * Example: a batch of producer 7, epoch 0, to orders-1 after
 * AddPartitionsToTxn added only orders-0, in a v9 request -> INVALID_TXN_STATE.
 */
function unverified(code: number, version: number): PartitionAppendResult | null {
  const translated = verificationError(code, version >= 11);
  switch (translated) {
    case ErrorCode.NONE:
      return null;
    case ErrorCode.INVALID_TXN_STATE:
      return appendError(translated, 'Partition was not added to the transaction');
    case ErrorCode.CONCURRENT_TRANSACTIONS:
      // A transactions v2 producer retries it (the previous transaction's markers are still on their way).
      if (version >= TRANSACTION_V2_VERSION) return appendError(translated);
      return appendError(ErrorCode.NOT_ENOUGH_REPLICAS, `Unable to verify the partition has been added to the transaction: ${errorName(translated)}`);
    case ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
    case ErrorCode.COORDINATOR_NOT_AVAILABLE:
    case ErrorCode.NOT_COORDINATOR:
      return appendError(ErrorCode.NOT_ENOUGH_REPLICAS, `Unable to verify the partition has been added to the transaction: ${errorName(translated)}`);
    default:
      return appendError(translated);
  }
}

/** One partition of the request that passed the checks made before its append. */
interface PendingAppend {
  readonly topic: string;
  readonly index: number;
  readonly records: Buffer;
  readonly response: PartitionProduceResponse;
  /** Set when its transactional batch waits on the coordinator's verification. */
  guard: VerificationGuard | null;
}

export const produce = defineHandler<ProduceRequest, ProduceResponse>({
  apiKey: 0,
  name: 'Produce',
  request: ProduceRequest,
  response: ProduceResponse,
  minVersion: 0,
  maxVersion: 13,
  async handle(req, ctx) {
    const { acks } = req;
    if (acks !== -1 && acks !== 0 && acks !== 1) {
      return errorBody(req, ErrorCode.INVALID_REQUIRED_ACKS, ctx);
    }
    const refused = transactionalProblem(req);
    if (refused !== null) return acks === 0 ? NO_RESPONSE : errorBody(req, refused, ctx);
    const { replicas, metadata, verifier } = ctx.services;
    // Topics this request created: every partition of theirs in this request is answered as unknown.
    const createdNow = new Set<string>();
    const responses: TopicProduceResponse[] = [];
    const pending: PendingAppend[] = [];
    for (const requested of req.topicData) {
      const partitionResponses: PartitionProduceResponse[] = [];
      const byId = ctx.apiVersion >= 13;
      const known = byId ? metadata.image().topicsById.get(requested.topicId) : metadata.image().topics.get(requested.name);
      const topic = { name: byId ? (known?.name ?? '') : requested.name, partitionData: requested.partitionData };
      responses.push({ name: topic.name, topicId: known?.topicId ?? requested.topicId, partitionResponses });
      if (byId && !known) {
        for (const p of topic.partitionData) partitionResponses.push(partitionResponse(p.index, appendError(ErrorCode.UNKNOWN_TOPIC_ID)));
        continue;
      }
      let usable = !createdNow.has(topic.name) && known !== undefined;
      if (!usable && !createdNow.has(topic.name)) {
        const outcome = await autoCreateTopic(topic.name, true, ctx.services);
        if (outcome.kind === 'created') createdNow.add(topic.name);
        usable = outcome.kind === 'exists';
      }
      const image = usable ? metadata.image() : null;
      // The coordinators own what the internal topics hold.
      const internal = INTERNAL_TOPICS.has(topic.name);
      for (const p of topic.partitionData) {
        // An unknown partition is reported before anything about its records, as Kafka does.
        const records = p.records ?? EMPTY;
        const refused = !image || !hasPartition(image, topic.name, p.index)
          ? appendError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
          : internal && ctx.clientId !== ADMIN_CLIENT_ID
            ? appendError(ErrorCode.INVALID_TOPIC_EXCEPTION, `Cannot append to internal topic ${topic.name}`)
            : versionProblem(records, ctx.apiVersion);
        const response = partitionResponse(p.index, refused ?? appendError(ErrorCode.NONE));
        partitionResponses.push(response);
        if (!refused) pending.push({ topic: topic.name, index: p.index, records, response, guard: null });
      }
    }
    // Transactional batches: the partitions not yet in the producer's open transaction here are verified
    // with its coordinator first (one producer per request: see transactionalProblem).
    const producer = req.transactionalId === null ? null : (pending.map((a) => transactionalProducer(a.records)).find((x) => x !== null) ?? null);
    const toVerify: PendingAppend[] = [];
    // Transactions v2: the coordinator adds the partitions (whatever transaction.partition.verification.enable says).
    const v2 = ctx.apiVersion >= TRANSACTION_V2_VERSION;
    if (producer && (v2 || verificationEnabled(ctx))) {
      for (const a of pending) {
        if (!transactionalProducer(a.records)) continue;
        a.guard = replicas.startTransactionVerification(a.topic, a.index, producer.producerId, producer.producerEpoch, v2);
        if (a.guard) toVerify.push(a);
      }
    }
    const appendAll = (): Promise<void>[] => {
      const replicated: Promise<void>[] = [];
      for (const a of pending) {
        const result = replicas.appendRecords(a.topic, a.index, a.records, acks, 'client', a.guard);
        Object.assign(a.response, partitionResponse(a.index, result));
        // acks=-1: the answer waits until every ISR member has the records (at once when the ISR is the leader alone).
        if (acks === -1 && result.errorCode === ErrorCode.NONE && result.replicatedAt !== undefined) {
          replicated.push(
            replicas.waitForReplication(a.topic, a.index, result.replicatedAt, req.timeoutMs).then((code) => {
              if (code !== ErrorCode.NONE) a.response.errorCode = code;
            }),
          );
        }
      }
      return replicated;
    };
    let replicated: Promise<void>[];
    const before = producer ? verifier.pending(producer.producerId) : undefined;
    if (!producer || (toVerify.length === 0 && !before)) {
      replicated = appendAll();
    } else {
      const work = (async () => {
        await before;
        if (toVerify.length > 0) {
          const ask = () => verifier.verify(req.transactionalId!, producer.producerId, producer.producerEpoch, toVerify.map((a) => ({ topic: a.topic, partition: a.index })), v2);
          let answers = await ask();
          // The previous transaction of a v2 producer may still be writing its markers: ask again for a little while.
          for (let waited = 0; v2 && waited < ADD_RETRY_MAX_MS && answers.some((r) => r.errorCode === ErrorCode.CONCURRENT_TRANSACTIONS); waited += ADD_RETRY_BACKOFF_MS) {
            await new Promise((resolve) => setTimeout(resolve, ADD_RETRY_BACKOFF_MS));
            answers = await ask();
          }
          const codes = new Map(answers.map((r) => [`${r.topic}\u0000${r.partition}`, r.errorCode]));
          for (const a of toVerify) {
            const refused = unverified(codes.get(`${a.topic}\u0000${a.index}`) ?? ErrorCode.COORDINATOR_NOT_AVAILABLE, ctx.apiVersion);
            if (!refused) continue;
            replicas.abandonTransactionVerification(a.topic, a.index, a.guard!);
            Object.assign(a.response, partitionResponse(a.index, refused));
            pending.splice(pending.indexOf(a), 1);
          }
        }
        return appendAll();
      })();
      verifier.track(producer.producerId, work);
      replicated = await work;
    }
    if (replicated.length > 0) await Promise.all(replicated);
    if (acks === 0) return NO_RESPONSE;
    return { responses, throttleTimeMs: 0, nodeEndpoints: [] };
  },
  errorResponse: errorBody,
});

/** Every partition of the request with `errorCode`. */
function errorBody(req: ProduceRequest, errorCode: number, _ctx?: RequestContext): ProduceResponse {
  return {
    responses: req.topicData.map((t) => ({
      name: t.name,
      topicId: t.topicId,
      partitionResponses: t.partitionData.map((p) => partitionResponse(p.index, appendError(errorCode))),
    })),
    throttleTimeMs: 0,
    nodeEndpoints: [],
  };
}

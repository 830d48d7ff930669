/**
 * AddPartitionsToTxn (key 24), versions 0-5.
 * v1 is v0 again; v2 may answer PRODUCER_FENCED (KIP-588), which older
 * versions get as INVALID_PRODUCER_EPOCH; v3 is flexible; v4 is the form
 * brokers send (KIP-890): several transactions in one request, each
 * answered on its own, and verify_only, which asks whether the partitions
 * are in the transaction without adding them. A v4+ addition (not
 * verify_only) comes from a partition leader on behalf of a transactions v2
 * producer (KIP-890), whose transaction is then marked as such; v5 is v4
 * again.
 *
 * A transaction naming a partition that does not exist adds nothing: those
 * partitions answer UNKNOWN_TOPIC_OR_PARTITION and the others
 * OPERATION_NOT_ATTEMPTED. Otherwise every partition of the transaction
 * carries the coordinator's answer (see cluster/txn/txn-coordinator.ts).
 *
 * Not implemented: authorization (Kafka's TRANSACTIONAL_ID and TOPIC ACLs,
 * and CLUSTER_ACTION for v4+).
 */
import { ErrorCode } from '../wire/errors.js';
import { AddPartitionsToTxnRequest, type AddPartitionsToTxnTopic, type AddPartitionsToTxnTransaction } from '../wire/messages/add-partitions-to-txn-request.js';
import {
  AddPartitionsToTxnResponse,
  type AddPartitionsToTxnResult,
  type AddPartitionsToTxnTopicResult,
} from '../wire/messages/add-partitions-to-txn-response.js';
import { hasPartition } from '../cluster/metadata/metadata-image.js';
import { TRANSACTION_V2 } from '../cluster/txn/txn-state.js';
import { defineHandler, type RequestContext } from './handler.js';

const PRODUCER_FENCED_VERSION = 2;
const BATCHED_VERSION = 4;

export const addPartitionsToTxn = defineHandler<AddPartitionsToTxnRequest, AddPartitionsToTxnResponse>({
  apiKey: 24,
  name: 'AddPartitionsToTxn',
  request: AddPartitionsToTxnRequest,
  response: AddPartitionsToTxnResponse,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    const results = await Promise.all(transactionsOf(req, ctx.apiVersion).map((t) => durableResult(resultFor(t, ctx), t, ctx)));
    return respond(results, ctx.apiVersion);
  },
  errorResponse: (req, errorCode, ctx) =>
    respond(
      transactionsOf(req, ctx.apiVersion).map((t) => result(t.transactionalId, partitionsOf(t.topics), () => errorCode)),
      ctx.apiVersion,
    ),
});

/** The transactions of a request: one, in the fields of v0-v3, or the v4+ list. */
function transactionsOf(req: AddPartitionsToTxnRequest, version: number): AddPartitionsToTxnTransaction[] {
  if (version >= BATCHED_VERSION) return req.transactions;
  return [
    {
      transactionalId: req.v3AndBelowTransactionalId,
      producerId: req.v3AndBelowProducerId,
      producerEpoch: req.v3AndBelowProducerEpoch,
      verifyOnly: false,
      topics: req.v3AndBelowTopics,
    },
  ];
}

function respond(results: AddPartitionsToTxnResult[], version: number): AddPartitionsToTxnResponse {
  if (version >= BATCHED_VERSION) return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, resultsByTransaction: results, resultsByTopicV3AndBelow: [] };
  return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, resultsByTransaction: [], resultsByTopicV3AndBelow: results[0]?.topicResults ?? [] };
}

/** The distinct partitions named, by topic, in request order. */
function partitionsOf(topics: readonly AddPartitionsToTxnTopic[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const t of topics) {
    const list = out.get(t.name) ?? [];
    for (const p of t.partitions) if (!list.includes(p)) list.push(p);
    out.set(t.name, list);
  }
  return out;
}

function result(transactionalId: string, partitions: Map<string, number[]>, code: (topic: string, partition: number) => number): AddPartitionsToTxnResult {
  const topicResults: AddPartitionsToTxnTopicResult[] = [...partitions].map(([name, ps]) => ({
    name,
    resultsByPartition: ps.map((partitionIndex) => ({ partitionIndex, partitionErrorCode: code(name, partitionIndex) })),
  }));
  return { transactionalId, topicResults };
}


/** `r` once the partitions it added are on every in-sync replica of the id's partition of __transaction_state; verifications wrote nothing. */
async function durableResult(r: AddPartitionsToTxnResult, t: AddPartitionsToTxnTransaction, ctx: RequestContext): Promise<AddPartitionsToTxnResult> {
  if (t.verifyOnly && ctx.apiVersion >= BATCHED_VERSION) return r;
  const added = r.topicResults.some((tr) => tr.resultsByPartition.some((p) => p.partitionErrorCode === ErrorCode.NONE));
  if (!added) return r;
  const durable = await ctx.services.transactions.replicated(t.transactionalId);
  if (durable === ErrorCode.NONE) return r;
  return result(t.transactionalId, partitionsOf(t.topics), () => durable);
}

function resultFor(t: AddPartitionsToTxnTransaction, ctx: RequestContext): AddPartitionsToTxnResult {
  const partitions = partitionsOf(t.topics);
  const image = ctx.services.metadata.image();
  const missing = [...partitions].some(([topic, ps]) => ps.some((p) => !hasPartition(image, topic, p)));
  if (missing) {
    return result(t.transactionalId, partitions, (topic, p) => (hasPartition(image, topic, p) ? ErrorCode.OPERATION_NOT_ATTEMPTED : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
  }
  const list = [...partitions].flatMap(([topic, ps]) => ps.map((partition) => ({ topic, partition })));
  const coordinator = ctx.services.transactions;
  if (t.verifyOnly && ctx.apiVersion >= BATCHED_VERSION) {
    const verified = new Map(coordinator.verifyPartitions(t.transactionalId, t.producerId, t.producerEpoch, list).map((r) => [`${r.topic}\u0000${r.partition}`, r.errorCode]));
    return result(t.transactionalId, partitions, (topic, p) => verified.get(`${topic}\u0000${p}`) ?? ErrorCode.UNKNOWN_SERVER_ERROR);
  }
  const clientTransactionVersion = ctx.apiVersion >= BATCHED_VERSION ? TRANSACTION_V2 : 0;
  let code = coordinator.addPartitions(t.transactionalId, t.producerId, t.producerEpoch, list, clientTransactionVersion);
  if (ctx.apiVersion < PRODUCER_FENCED_VERSION && code === ErrorCode.PRODUCER_FENCED) code = ErrorCode.INVALID_PRODUCER_EPOCH;
  return result(t.transactionalId, partitions, () => code);
}

/**
 * TxnOffsetCommit (key 28), versions 0-6.
 * A transactional producer commits a consumer group's offsets as part of
 * its transaction (KafkaProducer.sendOffsetsToTransaction). v1 is v0; v2
 * adds the committed leader epoch; v3 adds the group's generation, member
 * id and group instance id, so that a zombie member is fenced
 * (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID), and is
 * flexible; v4 lets the client know TRANSACTION_ABORTABLE; v5 is a producer
 * of transactions v2 (KIP-890), which sends no AddOffsetsToTxn: the
 * transaction coordinator adds the group's partition when this broker asks
 * (and CONCURRENT_TRANSACTIONS, while the previous transaction's markers are
 * on their way, is answered for the client to retry); v6 names topics by id
 * (UNKNOWN_TOPIC_ID for an id no topic has).
 *
 * First the transaction coordinator must know the group's partition of
 * __consumer_offsets as part of the producer's ongoing transaction
 * (AddOffsetsToTxn), as Kafka 4.0 verifies it: otherwise every partition
 * is answered INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v4), a fenced
 * producer INVALID_PRODUCER_EPOCH, an unknown one INVALID_PRODUCER_ID_MAPPING,
 * and the coordinator's transient errors COORDINATOR_NOT_AVAILABLE, which
 * the client retries. Without that check a late commit would open a
 * transaction in __consumer_offsets that no marker ever ends. As in Kafka,
 * transaction.partition.verification.enable=false turns the check off.
 *
 * As Kafka's broker does, partitions of unknown topics, and partitions a
 * topic does not have, are answered UNKNOWN_TOPIC_OR_PARTITION here; the
 * rest go to the group coordinator, which writes them to the group's
 * partition of __consumer_offsets as a transactional batch of the
 * producer. They stay invisible to OffsetFetch until the transaction's
 * COMMIT marker reaches that partition, and are dropped on ABORT. A group
 * unknown to the coordinator is created empty for a commit without a
 * generation, as for a plain commit. A producer whose epoch is old is
 * answered INVALID_PRODUCER_EPOCH, which the client treats as fenced.
 *
 * Not implemented: authorization (TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
 * GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED).
 */
import { ErrorCode } from '../wire/errors.js';
import { TxnOffsetCommitRequest, type TxnOffsetCommitRequestTopic } from '../wire/messages/txn-offset-commit-request.js';
import { TxnOffsetCommitResponse, type TxnOffsetCommitResponseTopic } from '../wire/messages/txn-offset-commit-response.js';
import { hasPartition } from '../cluster/metadata/metadata-image.js';
import { GROUP_METADATA_TOPIC, partitionFor } from '../cluster/coordinator/partition-for.js';
import { defineHandler, type RequestContext } from './handler.js';
import { verificationEnabled } from './config-resources.js';
import { verificationError } from '../cluster/txn/txn-verifier.js';

const MEMBER_FIELDS_VERSION = 3;
const LEADER_EPOCH_VERSION = 2;
const ABORTABLE_VERSION = 4;
const TOPIC_ID_VERSION = 6;
/** TxnOffsetCommit v5+: a transactions v2 producer, whose coordinator adds the group's partition when asked. */
const TRANSACTION_V2_VERSION = 5;


export const txnOffsetCommit = defineHandler<TxnOffsetCommitRequest, TxnOffsetCommitResponse>({
  apiKey: 28,
  name: 'TxnOffsetCommit',
  request: TxnOffsetCommitRequest,
  response: TxnOffsetCommitResponse,
  minVersion: 0,
  maxVersion: 6,
  async handle(req, ctx) {
    const v = ctx.apiVersion;
    const image = ctx.services.metadata.image();
    // v6 names topics by id: each is answered under its id, committed under its name.
    const names = req.topics.map((t) => (v >= TOPIC_ID_VERSION ? (image.topicsById.get(t.topicId)?.name ?? null) : t.name));
    const known: TxnOffsetCommitRequestTopic[] = [];
    req.topics.forEach((t, i) => {
      const name = names[i];
      if (name === null || name === undefined) return;
      const partitions = t.partitions.filter((p) => hasPartition(image, name, p.partitionIndex));
      if (partitions.length > 0) known.push({ name, topicId: t.topicId, partitions });
    });
    const answered = new Map<string, number>();
    if (known.length > 0) {
      const refused = await unverified(req, ctx);
      if (refused !== null) return errorBody(req, refused);
      const withMember = v >= MEMBER_FIELDS_VERSION;
      const results = ctx.services.groups.commitTransactionalOffsets({
        transactionalId: req.transactionalId,
        groupId: req.groupId,
        producerId: req.producerId,
        producerEpoch: req.producerEpoch,
        generationId: withMember ? req.generationIdOrMemberEpoch : -1,
        memberId: withMember ? req.memberId : '',
        groupInstanceId: withMember ? req.groupInstanceId : null,
        staleMemberEpochKnown: v >= TOPIC_ID_VERSION,
        topics: known.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            committedOffset: p.committedOffset,
            committedLeaderEpoch: v >= LEADER_EPOCH_VERSION ? p.committedLeaderEpoch : -1,
            committedMetadata: p.committedMetadata,
          })),
        })),
      });
      const written = results.some((t) => t.partitions.some((p) => p.errorCode === ErrorCode.NONE));
      const durable = written ? await ctx.services.groups.replicated(req.groupId) : ErrorCode.NONE;
      for (const t of results) {
        for (const p of t.partitions) answered.set(JSON.stringify([t.name, p.partitionIndex]), p.errorCode === ErrorCode.NONE ? durable : p.errorCode);
      }
    }
    const topics: TxnOffsetCommitResponseTopic[] = req.topics.map((t, i) => ({
      name: t.name,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: names[i] === null
          ? ErrorCode.UNKNOWN_TOPIC_ID
          : (answered.get(JSON.stringify([names[i], p.partitionIndex])) ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
      })),
    }));
    return { throttleTimeMs: 0, topics };
  },
  errorResponse: (req, errorCode) => errorBody(req, errorCode),
});

function errorBody(req: TxnOffsetCommitRequest, errorCode: number): TxnOffsetCommitResponse {
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({ name: t.name, topicId: t.topicId, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) })),
  };
}

/**
 * Why the transaction may not commit offsets of this group (see the file
 * comment), or null, asked of the transaction's coordinator on whichever
 * broker it is, unless the producer's transaction is open in the group's
 * partition already. The answer holds only if no marker for the producer
 * reached the partition meanwhile (then INVALID_TXN_STATE); null is
 * answered in the turn of the event loop the commit is written in. Example:
 * a producer whose transaction never added the group -> INVALID_TXN_STATE at
 * v3, TRANSACTION_ABORTABLE at v4.
 */
async function unverified(req: TxnOffsetCommitRequest, ctx: RequestContext): Promise<number | null> {
  const offsets = ctx.services.metadata.image().topics.get(GROUP_METADATA_TOPIC);
  // Transactions v2: the coordinator adds the group's partition (whatever transaction.partition.verification.enable says).
  const v2 = ctx.apiVersion >= TRANSACTION_V2_VERSION;
  // Without the topic the group coordinator answers (NOT_COORDINATOR).
  if (!offsets || !(v2 || verificationEnabled(ctx))) return null;
  const partition = partitionFor(req.groupId, offsets.partitions.length);
  const { replicas, verifier } = ctx.services;
  const guard = replicas.startTransactionVerification(GROUP_METADATA_TOPIC, partition, req.producerId, req.producerEpoch, v2);
  if (!guard) return null;
  const [answer] = await verifier.verify(req.transactionalId, req.producerId, req.producerEpoch, [{ topic: GROUP_METADATA_TOPIC, partition }], v2);
  const code = verificationError(answer?.errorCode ?? ErrorCode.COORDINATOR_NOT_AVAILABLE, ctx.apiVersion >= ABORTABLE_VERSION);
  if (code !== ErrorCode.NONE) {
    replicas.abandonTransactionVerification(GROUP_METADATA_TOPIC, partition, guard);
    // A transactions v2 producer retries CONCURRENT_TRANSACTIONS (the previous transaction's markers are on their way).
    if (v2 && code === ErrorCode.CONCURRENT_TRANSACTIONS) return code;
    switch (code) {
      case ErrorCode.CONCURRENT_TRANSACTIONS:
      case ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
      case ErrorCode.NOT_COORDINATOR:
      case ErrorCode.COORDINATOR_NOT_AVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE;
      default:
        return code;
    }
  }
  return replicas.claimTransactionVerification(GROUP_METADATA_TOPIC, partition, guard) ? null : ErrorCode.INVALID_TXN_STATE;
}

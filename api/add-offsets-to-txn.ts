/**
 * AddOffsetsToTxn (key 25), versions 0-4.
 * v1 is v0 again; v2 may answer PRODUCER_FENCED (KIP-588), which older
 * versions get as INVALID_PRODUCER_EPOCH; v3 is flexible; v4 is v3 again.
 *
 * Adds to the transaction the partition of __consumer_offsets that holds
 * the group's offsets (the group coordinator's partitionFor), so that the
 * transaction's markers reach the offsets TxnOffsetCommit writes there.
 *
 * Not implemented: authorization (TRANSACTIONAL_ID write, GROUP read).
 */
import { ErrorCode } from '../wire/errors.js';
import { AddOffsetsToTxnRequest } from '../wire/messages/add-offsets-to-txn-request.js';
import { AddOffsetsToTxnResponse } from '../wire/messages/add-offsets-to-txn-response.js';
import { GROUP_METADATA_TOPIC } from '../cluster/coordinator/partition-for.js';
import { defineHandler } from './handler.js';

const PRODUCER_FENCED_VERSION = 2;
/** offsets.topic.num.partitions when neither the topic nor the setting says otherwise. */
const DEFAULT_OFFSETS_TOPIC_PARTITIONS = 50;

export const addOffsetsToTxn = defineHandler<AddOffsetsToTxnRequest, AddOffsetsToTxnResponse>({
  apiKey: 25,
  name: 'AddOffsetsToTxn',
  request: AddOffsetsToTxnRequest,
  response: AddOffsetsToTxnResponse,
  minVersion: 0,
  maxVersion: 4,
  async handle(req, ctx) {
    const { metadata, settings, transactions } = ctx.services;
    const offsetsPartitions =
      metadata.image().topics.get(GROUP_METADATA_TOPIC)?.partitions.length ?? settings.config.int('offsets.topic.num.partitions') ?? DEFAULT_OFFSETS_TOPIC_PARTITIONS;
    let errorCode = transactions.addOffsets(req.transactionalId, req.producerId, req.producerEpoch, req.groupId, offsetsPartitions);
    if (ctx.apiVersion < PRODUCER_FENCED_VERSION && errorCode === ErrorCode.PRODUCER_FENCED) errorCode = ErrorCode.INVALID_PRODUCER_EPOCH;
    if (errorCode === ErrorCode.NONE) errorCode = await transactions.replicated(req.transactionalId);
    return { throttleTimeMs: 0, errorCode };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode }),
});

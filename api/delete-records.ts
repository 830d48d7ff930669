/**
 * DeleteRecords (key 21), versions 0-2.
 * v1 changes nothing on the wire (throttling behaviour only); v2 is flexible.
 *
 * Each partition's log start offset moves up to the requested offset (-1: the
 * high watermark); the answer's low_watermark is the log start offset after
 * it, so ListOffsets earliest and Fetch see it at once. An offset beyond the
 * high watermark, or negative other than -1, is OFFSET_OUT_OF_RANGE; an
 * unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; an internal topic
 * INVALID_TOPIC_EXCEPTION; a topic without `delete` in its cleanup.policy
 * POLICY_VIOLATION (see ReplicaManager.deleteRecords). A partition named twice
 * is answered once, for the last offset given, as Kafka's map of them does.
 *
 * timeout_ms bounds Kafka's wait for followers to move their own log start;
 * with this broker as the only replica there is nothing to wait for.
 */
import { DeleteRecordsRequest } from '../wire/messages/delete-records-request.js';
import { DeleteRecordsResponse, type DeleteRecordsTopicResult } from '../wire/messages/delete-records-response.js';
import { defineHandler } from './handler.js';

export const deleteRecords = defineHandler<DeleteRecordsRequest, DeleteRecordsResponse>({
  apiKey: 21,
  name: 'DeleteRecords',
  request: DeleteRecordsRequest,
  response: DeleteRecordsResponse,
  minVersion: 0,
  maxVersion: 2,
  handle(req, ctx) {
    const { replicas, log } = ctx.services;
    // Last offset per partition, topics and partitions in first-seen order.
    const wanted = new Map<string, Map<number, bigint>>();
    for (const t of req.topics) {
      let partitions = wanted.get(t.name);
      if (!partitions) wanted.set(t.name, (partitions = new Map()));
      for (const p of t.partitions) partitions.set(p.partitionIndex, p.offset);
    }
    const topics: DeleteRecordsTopicResult[] = [];
    for (const [name, partitions] of wanted) {
      topics.push({
        name,
        partitions: [...partitions].map(([partitionIndex, offset]) => {
          const r = replicas.deleteRecords(name, partitionIndex, offset);
          if (r.errorCode === 0) log.info({ topic: name, partition: partitionIndex, logStartOffset: String(r.lowWatermark) }, 'deleted records');
          return { partitionIndex, lowWatermark: r.lowWatermark, errorCode: r.errorCode };
        }),
      });
    }
    return { throttleTimeMs: 0, topics };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, lowWatermark: -1n, errorCode })),
    })),
  }),
});

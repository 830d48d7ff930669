/**
 * DescribeLogDirs (key 35), versions 0-5.
 * v1 changes nothing on the wire; v2 is flexible; v3 adds a top-level
 * error_code; v4 adds each directory's total_bytes and usable_bytes (of the
 * file system holding it); v5 adds is_cordoned (KIP-1066), false here: a
 * directory is never cordoned.
 *
 * Every log directory of the broker (log.dirs) is answered, in order. An
 * online one lists its partition logs, each with its size on disk; a future
 * log (AlterReplicaLogDirs moving the partition there) has is_future_key true
 * and offset_lag how far it is behind the current log's end; a current log
 * has offset_lag 0. An offline directory answers KAFKA_STORAGE_ERROR with no
 * topics and -1 bytes, as Kafka does. A null topic list asks for every
 * partition; otherwise only the named partitions are answered, and a topic
 * with none in a directory is left out of it, as in Kafka.
 */
import { DescribeLogDirsRequest } from '../wire/messages/describe-log-dirs-request.js';
import { DescribeLogDirsResponse, type DescribeLogDirsTopic } from '../wire/messages/describe-log-dirs-response.js';
import { ErrorCode } from '../wire/errors.js';
import { defineHandler } from './handler.js';

export const describeLogDirs = defineHandler<DescribeLogDirsRequest, DescribeLogDirsResponse>({
  apiKey: 35,
  name: 'DescribeLogDirs',
  request: DescribeLogDirsRequest,
  response: DescribeLogDirsResponse,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    const asked = req.topics === null ? null : new Map(req.topics.map((t) => [t.topic, new Set(t.partitions)]));
    const results = ctx.services.replicas.describeLogDirs().map((dir) => {
      if (dir.failure !== null) {
        return { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, logDir: dir.logDir, topics: [], totalBytes: -1n, usableBytes: -1n, isCordoned: false };
      }
      const byTopic = new Map<string, DescribeLogDirsTopic>();
      const partitions = [...dir.partitions].sort((a, b) =>
        a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition !== b.partition ? a.partition - b.partition : Number(a.isFuture) - Number(b.isFuture),
      );
      for (const { topic, partition, sizeBytes, isFuture, offsetLag } of partitions) {
        if (asked !== null && !asked.get(topic)?.has(partition)) continue;
        let entry = byTopic.get(topic);
        if (!entry) byTopic.set(topic, (entry = { name: topic, partitions: [] }));
        entry.partitions.push({ partitionIndex: partition, partitionSize: BigInt(sizeBytes), offsetLag, isFutureKey: isFuture });
      }
      return {
        errorCode: ErrorCode.NONE,
        logDir: dir.logDir,
        topics: [...byTopic.values()],
        totalBytes: dir.totalBytes,
        usableBytes: dir.usableBytes,
        isCordoned: false,
      };
    });
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, results };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, results: [] }),
});

/**
 * DescribeLogDirs (key 35), versions 0-5.
 * v1 changes nothing on the wire; v2 is flexible; v3 adds a top-level
 * error_code; v4 adds each directory's total_bytes and usable_bytes (of the
 * file system holding it); v5 adds is_cordoned (KIP-1066), false here: a
 * directory is never cordoned.
 *
 * The broker has one log directory. Each of its partition logs is reported
 * with its size on disk, offset_lag 0 (it is the leader's own log) and
 * is_future_key false (logs are never moved between directories). A null
 * topic list asks for every partition; otherwise only the named partitions
 * that have a log here are answered, and a topic with none is left out, as in
 * Kafka.
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
    const dir = ctx.services.replicas.describeLogDir();
    const asked = req.topics === null ? null : new Map(req.topics.map((t) => [t.topic, new Set(t.partitions)]));
    const byTopic = new Map<string, DescribeLogDirsTopic>();
    const partitions = [...dir.partitions].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
    for (const { topic, partition, sizeBytes } of partitions) {
      if (asked !== null && !asked.get(topic)?.has(partition)) continue;
      let entry = byTopic.get(topic);
      if (!entry) byTopic.set(topic, (entry = { name: topic, partitions: [] }));
      entry.partitions.push({ partitionIndex: partition, partitionSize: BigInt(sizeBytes), offsetLag: 0n, isFutureKey: false });
    }
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      results: [
        {
          errorCode: ErrorCode.NONE,
          logDir: dir.logDir,
          topics: [...byTopic.values()],
          totalBytes: dir.totalBytes,
          usableBytes: dir.usableBytes,
          isCordoned: false,
        },
      ],
    };
  },
  errorResponse: (_req, errorCode) => ({ throttleTimeMs: 0, errorCode, results: [] }),
});

/**
 * AlterReplicaLogDirs (key 34), versions 0-2 (v0 from the 2024 definitions;
 * v1 changes nothing on the wire; v2 is flexible).
 *
 * Moves this broker's replicas of the named partitions to other log
 * directories (log.dirs) while they go on serving: the log is copied into
 * the target directory in the background and takes the old one's place once
 * it has caught up (see LogManager.moveLog); DescribeLogDirs shows the copy
 * as a future log until then. Each partition is answered as Kafka's
 * ReplicaManager answers it (see ReplicaManager.alterReplicaLogDir): NONE
 * once the move is started (or the log already is there), LOG_DIR_NOT_FOUND
 * for a path that is not one of log.dirs as an absolute path,
 * KAFKA_STORAGE_ERROR for an offline directory, UNKNOWN_TOPIC_OR_PARTITION,
 * and REPLICA_NOT_AVAILABLE for a partition with no replica here (which is
 * then created in that directory if it comes). A partition named under two
 * directories is moved to the last, as Kafka's map of them does.
 */
import { AlterReplicaLogDirsRequest } from '../wire/messages/alter-replica-log-dirs-request.js';
import { AlterReplicaLogDirsResponse, type AlterReplicaLogDirTopicResult } from '../wire/messages/alter-replica-log-dirs-response.js';
import { defineHandler } from './handler.js';

export const alterReplicaLogDirs = defineHandler<AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse>({
  apiKey: 34,
  name: 'AlterReplicaLogDirs',
  request: AlterReplicaLogDirsRequest,
  response: AlterReplicaLogDirsResponse,
  minVersion: 0,
  maxVersion: 2,
  handle(req, ctx) {
    const { replicas, log } = ctx.services;
    // Target directory per partition, topics and partitions in first-seen order.
    const wanted = new Map<string, Map<number, string>>();
    for (const d of req.dirs) {
      for (const t of d.topics) {
        let partitions = wanted.get(t.name);
        if (!partitions) wanted.set(t.name, (partitions = new Map()));
        for (const p of t.partitions) partitions.set(p, d.path);
      }
    }
    const results: AlterReplicaLogDirTopicResult[] = [];
    for (const [topicName, partitions] of wanted) {
      results.push({
        topicName,
        partitions: [...partitions].map(([partitionIndex, path]) => {
          const errorCode = replicas.alterReplicaLogDir(topicName, partitionIndex, path);
          log.info({ topic: topicName, partition: partitionIndex, logDir: path, errorCode }, 'AlterReplicaLogDirs');
          return { partitionIndex, errorCode };
        }),
      });
    }
    return { throttleTimeMs: 0, results };
  },
  errorResponse: (req, errorCode) => ({
    throttleTimeMs: 0,
    results: req.dirs.flatMap((d) => d.topics.map((t) => ({ topicName: t.name, partitions: t.partitions.map((partitionIndex) => ({ partitionIndex, errorCode })) }))),
  }),
});

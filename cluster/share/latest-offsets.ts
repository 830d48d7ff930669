/**
 * A partition's high watermark wherever it is led: from this broker's
 * replica when it leads the partition, else by ListOffsets (LATEST,
 * read_uncommitted) to its leader, as Kafka's group coordinator asks the
 * leaders for the lag of share groups (DescribeShareGroupOffsets).
 */
import { ErrorCode } from '../../wire/errors.js';
import type { ListOffsetsResponse } from '../../wire/messages/list-offsets-response.js';
import type { InterBrokerClient } from '../inter-broker/broker-channel.js';
import { api } from '../inter-broker/kafka-connection.js';
import type { MetadataStore } from '../metadata/metadata-image.js';
import type { ReplicaManager } from '../replication/replica-manager.js';
import { SpecialTimestamp } from '../replication/replica-manager.js';

const LIST_OFFSETS_VERSION = 9;
const TIMEOUT_MS = 5_000;

export type LatestOffsetLookup = (topic: string, partition: number) => Promise<{ errorCode: number; offset: bigint }>;

export function latestOffsets(nodeId: number, metadata: MetadataStore, replicas: ReplicaManager, channel: InterBrokerClient | null): LatestOffsetLookup {
  return async (topic, partition) => {
    const leader = metadata.image().topics.get(topic)?.partitions.find((p) => p.partition === partition)?.leader ?? -1;
    if (leader === nodeId || leader < 0 || channel === null) {
      const r = replicas.fetchOffsetForTimestamp(topic, partition, SpecialTimestamp.LATEST, 'highWatermark', -1, true);
      return { errorCode: r.errorCode, offset: r.offset };
    }
    try {
      const { response } = await channel.request<ListOffsetsResponse>(
        leader,
        api('ListOffsets'),
        LIST_OFFSETS_VERSION,
        { replicaId: -1, isolationLevel: 0, topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: SpecialTimestamp.LATEST, maxNumOffsets: 1 }] }], timeoutMs: TIMEOUT_MS },
        { timeoutMs: TIMEOUT_MS },
      );
      const p = response.topics[0]?.partitions[0];
      return p ? { errorCode: p.errorCode, offset: p.offset } : { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, offset: -1n };
    } catch {
      return { errorCode: ErrorCode.LEADER_NOT_AVAILABLE, offset: -1n };
    }
  };
}

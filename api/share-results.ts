/**
 * What ShareFetch and ShareAcknowledge answer beyond their partitions: the
 * partitions grouped by topic, and the endpoints of the leaders a client
 * was told to move to (on the listener it came in on).
 */
import { ErrorCode } from '../wire/errors.js';
import { endpointFor } from '../cluster/metadata/metadata-image.js';
import type { PartitionResult } from '../cluster/share/share-manager.js';
import type { AckRequestPartition } from '../cluster/share/share-manager.js';
import type { RequestContext } from './handler.js';

export function byTopic<T>(partitions: readonly PartitionResult[], shape: (p: PartitionResult) => T): { topicId: string; partitions: T[] }[] {
  const topics = new Map<string, T[]>();
  for (const p of partitions) {
    let list = topics.get(p.topicId);
    if (!list) topics.set(p.topicId, (list = []));
    list.push(shape(p));
  }
  return [...topics].map(([topicId, parts]) => ({ topicId, partitions: parts }));
}

export function leaderEndpoints(partitions: readonly PartitionResult[], ctx: RequestContext): { nodeId: number; host: string; port: number; rack: string | null }[] {
  const image = ctx.services.metadata.image();
  const out = new Map<number, { nodeId: number; host: string; port: number; rack: string | null }>();
  for (const p of partitions) {
    if (p.errorCode !== ErrorCode.NOT_LEADER_OR_FOLLOWER && p.errorCode !== ErrorCode.FENCED_LEADER_EPOCH) continue;
    if (p.leaderId < 0 || out.has(p.leaderId)) continue;
    const broker = image.brokers.get(p.leaderId);
    const ep = broker && endpointFor(broker, ctx.listener);
    if (broker && ep) out.set(p.leaderId, { nodeId: broker.nodeId, host: ep.host, port: ep.port, rack: broker.rack });
  }
  return [...out.values()];
}

/** The acknowledgements of a request, by partition; types 4 (renew) only when the request says it renews. */
export function acknowledgementsOf(
  topics: readonly { topicId: string; partitions: readonly { partitionIndex: number; acknowledgementBatches: readonly { firstOffset: bigint; lastOffset: bigint; acknowledgeTypes: number[] }[] }[] }[],
): AckRequestPartition[] {
  const out: AckRequestPartition[] = [];
  for (const t of topics) {
    for (const p of t.partitions) {
      out.push({ topicId: t.topicId, partition: p.partitionIndex, batches: p.acknowledgementBatches });
    }
  }
  return out;
}

/** Whether an acknowledgement asks for a renewal (type 4), which only a renewing request may. */
export function hasRenew(acks: readonly AckRequestPartition[]): boolean {
  return acks.some((a) => a.batches.some((b) => b.acknowledgeTypes.includes(4)));
}

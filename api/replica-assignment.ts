/**
 * Checks shared by CreateTopics and CreatePartitions: replica assignments
 * chosen by the client, and replicas placed by the broker. The messages are
 * the ones Kafka 4.0's controller answers with, since admin tools show them
 * to their users as they are.
 */
import type { MetadataImage } from '../cluster/metadata/metadata-image.js';

/**
 * Why one partition's replica list cannot be used, or null when it can: it
 * must name at least one broker, only registered brokers, none twice, and
 * (when `replicationFactor` is given) as many as the partitions before it.
 *
 * Example: with broker 1 alone, manualAssignmentProblem([1, 1], image, null)
 * -> 'The manual partition assignment includes the broker 1 more than once.'
 */
export function manualAssignmentProblem(brokerIds: readonly number[], image: MetadataImage, replicationFactor: number | null): string | null {
  if (brokerIds.length === 0) return 'The manual partition assignment includes an empty replica list.';
  // Kafka looks at the ids in ascending order, so the smallest bad id is the one named.
  const sorted = [...brokerIds].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i++) {
    const id = sorted[i]!;
    if (!image.brokers.has(id)) return `The manual partition assignment includes broker ${id}, but no such broker is registered.`;
    if (i > 0 && sorted[i - 1] === id) return `The manual partition assignment includes the broker ${id} more than once.`;
  }
  if (replicationFactor !== null && sorted.length !== replicationFactor) {
    return (
      `The manual partition assignment includes a partition with ${sorted.length} replica(s), but this is not ` +
      `consistent with previous partitions, which have ${replicationFactor} replica(s).`
    );
  }
  return null;
}

/**
 * Why the broker cannot place `replicationFactor` replicas of a partition, or
 * null when it can: each replica needs a broker of its own.
 *
 * Example: with one broker, placementProblem(3, image) -> 'Unable to replicate
 * the partition 3 time(s): The target replication factor of 3 cannot be
 * reached because only 1 broker(s) are registered.'
 */
export function placementProblem(replicationFactor: number, image: MetadataImage): string | null {
  const brokers = image.brokers.size;
  if (replicationFactor <= brokers) return null;
  return (
    `Unable to replicate the partition ${replicationFactor} time(s): The target replication factor of ` +
    `${replicationFactor} cannot be reached because only ${brokers} broker(s) are registered.`
  );
}

/** More new partitions (or metadata records) than this in one request, and Kafka's controller refuses the request. */
export const MAX_RECORDS_PER_REQUEST = 10000;

/**
 * Which partition of __consumer_offsets owns a group: Kafka's rule, shared by
 * FindCoordinator (which broker to name) and the group coordinator (which
 * partition's log holds the group's records).
 */

export const GROUP_METADATA_TOPIC = '__consumer_offsets';

/** Java's String.hashCode over UTF-16 code units, as an int32. */
export function javaStringHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/**
 * The partition of an internal topic that owns `key`: Kafka's
 * Utils.abs(hashCode) % partitions, where abs(Integer.MIN_VALUE) is 0.
 *
 * Example: partitionFor('my-group', 50) -> 12 (its hashCode is -1906497762).
 */
export function partitionFor(key: string, partitions: number): number {
  const h = javaStringHashCode(key);
  return (h === -2147483648 ? 0 : Math.abs(h)) % partitions;
}

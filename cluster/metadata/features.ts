/**
 * The feature levels (KIP-584) this broker reports in ApiVersions: for each
 * feature, the range of levels the software supports and the level the
 * cluster runs at. A feature at level 0 is off and, as Kafka does, is not
 * listed among the finalized ones. Clients decide from these which protocol
 * to use: transaction.version 2 turns on transactions v2 (KIP-890) in the
 * Java client, group.version 1 the consumer group protocol (KIP-848),
 * streams.version 1 the streams group protocol (KIP-1071), share.version 1 or
 * more share groups (KIP-932; 2 adds their dead-letter queues), which Kafka
 * 4.4 finalizes at 2 for a new cluster.
 *
 * Levels follow Apache Kafka 4.4.0's defaults for the features gregor
 * implements; a feature gregor does not implement stays at 0.
 */
export interface Feature {
  readonly name: string;
  readonly minSupported: number;
  readonly maxSupported: number;
  /** The level the cluster runs at; 0 is off. */
  readonly level: number;
}

/** metadata.version 33 is Kafka 4.4.0's latest production level (4.4-IV0). */
export const METADATA_VERSION_LEVEL = 33;

export const FEATURES: readonly Feature[] = [
  { name: 'metadata.version', minSupported: METADATA_VERSION_LEVEL, maxSupported: METADATA_VERSION_LEVEL, level: METADATA_VERSION_LEVEL },
  { name: 'transaction.version', minSupported: 0, maxSupported: 2, level: 2 },
  { name: 'group.version', minSupported: 0, maxSupported: 1, level: 1 },
  { name: 'share.version', minSupported: 0, maxSupported: 2, level: 2 },
  { name: 'streams.version', minSupported: 0, maxSupported: 1, level: 1 },
  { name: 'eligible.leader.replicas.version', minSupported: 0, maxSupported: 0, level: 0 },
];

/** The finalized levels change only with the software, so their epoch is constant. */
export const FINALIZED_FEATURES_EPOCH = 1n;

export function featureLevel(name: string): number {
  return FEATURES.find((f) => f.name === name)?.level ?? 0;
}

/**
 * A partition log's settings, with Kafka's topic config names and defaults. The
 * broker builds one from its own defaults (log.* names) and the topic's overrides.
 */
export interface LogConfig {
  /** segment.bytes */
  readonly segmentBytes: number;
  /** segment.ms: roll the active segment when its first batch is this old. */
  readonly segmentMs: number;
  /** segment.index.bytes: an index this full rolls the segment. */
  readonly segmentIndexBytes: number;
  /** index.interval.bytes: bytes between two offset-index entries. */
  readonly indexIntervalBytes: number;
  /** retention.ms; -1 keeps data forever. */
  readonly retentionMs: number;
  /** retention.bytes; -1 means no size limit. */
  readonly retentionBytes: number;
  /** cleanup.policy */
  readonly cleanupPolicy: readonly ('delete' | 'compact')[];
  /** delete.retention.ms: how long tombstones survive compaction. */
  readonly deleteRetentionMs: number;
  /** min.compaction.lag.ms */
  readonly minCompactionLagMs: number;
  /** max.message.bytes: largest batch accepted (after compression). */
  readonly maxMessageBytes: number;
  /** message.timestamp.type */
  readonly messageTimestampType: 'CreateTime' | 'LogAppendTime';
  /**
   * message.timestamp.before.max.ms: on a CreateTime topic, a record stamped more
   * than this before the broker's clock is refused. MAX stands for Kafka's
   * Long.MAX_VALUE, no bound (Kafka's default).
   */
  readonly messageTimestampBeforeMaxMs: number;
  /**
   * message.timestamp.after.max.ms: on a CreateTime topic, a record stamped more
   * than this after the broker's clock is refused. MAX stands for Long.MAX_VALUE;
   * Kafka 4.0 made the default one hour (KIP-1030).
   */
  readonly messageTimestampAfterMaxMs: number;
  /** flush.messages: fsync after this many appended messages; MAX means never. */
  readonly flushMessages: number;
  /** flush.ms: fsync when the last one is this old; MAX means never. */
  readonly flushMs: number;
  /** file.delete.delay.ms */
  readonly fileDeleteDelayMs: number;
  /**
   * compression.type: the codec batches are stored with. 'producer' keeps
   * each batch as the producer compressed it; any other value makes the
   * validator re-encode a batch whose codec differs ('uncompressed': none).
   */
  readonly compressionType: CompressionType;
  /** compression.gzip.level: 1 to 9, or -1 for the codec's default. */
  readonly compressionGzipLevel: number;
  /** compression.lz4.level: 1 to 17 (accepted, but see wire/compression.ts: not honoured). */
  readonly compressionLz4Level: number;
  /** compression.zstd.level: -131072 to 22. */
  readonly compressionZstdLevel: number;
  /**
   * min.insync.replicas: with acks=-1, a leader whose ISR is smaller than
   * this (or than the replica count, when that is smaller) appends nothing.
   */
  readonly minInSyncReplicas: number;
}

/** compression.type's values, as Kafka names them. */
export type CompressionType = 'producer' | 'uncompressed' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

const LONG_MAX = Number.MAX_SAFE_INTEGER;

export const DEFAULT_LOG_CONFIG: LogConfig = {
  segmentBytes: 1073741824,
  segmentMs: 604800000,
  segmentIndexBytes: 10485760,
  indexIntervalBytes: 4096,
  retentionMs: 604800000,
  retentionBytes: -1,
  cleanupPolicy: ['delete'],
  deleteRetentionMs: 86400000,
  minCompactionLagMs: 0,
  maxMessageBytes: 1048588,
  messageTimestampType: 'CreateTime',
  messageTimestampBeforeMaxMs: LONG_MAX,
  messageTimestampAfterMaxMs: 3600000,
  flushMessages: LONG_MAX,
  flushMs: LONG_MAX,
  fileDeleteDelayMs: 60000,
  compressionType: 'producer',
  compressionGzipLevel: -1,
  compressionLz4Level: 9,
  compressionZstdLevel: 3,
  minInSyncReplicas: 1,
};

export function logConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  return { ...DEFAULT_LOG_CONFIG, ...overrides };
}

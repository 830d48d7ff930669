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
}

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
};

export function logConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  return { ...DEFAULT_LOG_CONFIG, ...overrides };
}

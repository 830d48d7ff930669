/**
 * What a broker remembers of each client instance that uses client metrics
 * (KIP-714), shared by GetTelemetrySubscriptions and PushTelemetry, kept as
 * Kafka 4.4's ClientMetricsManager keeps it.
 *
 * gregor has no client-metrics subscriptions (the CLIENT_METRICS config
 * resources of kafka-client-metrics) and no metrics exporter: every client
 * instance gets the empty subscription (no metrics requested, pushed every
 * 300000 ms, Kafka's default interval), and metrics a client pushes anyway
 * are accepted and dropped. What is kept is what Kafka checks a push
 * against: the subscription id, the times of the last get and push (a get
 * sooner than one push interval after the last request, or a push sooner
 * than one interval after the last push unless a get came between, is
 * THROTTLING_QUOTA_EXCEEDED), and whether the client said it is terminating.
 * An instance not heard from for max(60000, 3 push intervals) ms is
 * forgotten; at most 16384 are kept, the least recently used going first.
 */
import { crc32c } from '../wire/record-batch.js';
import { randomUuid } from '../wire/uuid.js';
import type { BrokerServices } from './handler.js';

/** Kafka's default push interval when no subscription applies (ms). */
export const DEFAULT_PUSH_INTERVAL_MS = 300_000;
/** Kafka's telemetry.max.bytes default: the largest metrics payload a push may carry. */
export const TELEMETRY_MAX_BYTES = 1_048_576;
/** The compression types a push may use, in Kafka's order of preference: zstd, lz4, gzip, snappy. */
export const ACCEPTED_COMPRESSION_TYPES = [4, 3, 1, 2];
const CACHE_EXPIRY_MS = 60_000;
const CACHE_MAX = 16_384;
/** Kafka's reserved ids, never a client instance's: the zero id and the metadata topic's id (0, 1). */
export const RESERVED_IDS = new Set(['AAAAAAAAAAAAAAAAAAAAAA', 'AAAAAAAAAAAAAAAAAAAAAQ']);

export interface ClientInstance {
  readonly id: string;
  readonly subscriptionId: number;
  readonly pushIntervalMs: number;
  lastGetMs: number;
  lastPushMs: number;
  terminating: boolean;
  /** The error the last push got, or NONE: a get right after UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE is not throttled. */
  lastError: number;
  lastSeenMs: number;
}

/**
 * The subscription id Kafka computes: the CRC-32C of the requested metrics
 * as Java prints the set ("[]" for none) followed by the push interval,
 * XORed with the instance id's hash (the XOR of its four 32-bit words).
 */
export function subscriptionIdFor(instanceId: string, metrics: readonly string[], pushIntervalMs: number): number {
  const crc = crc32c(Buffer.from(`[${metrics.join(', ')}]${pushIntervalMs}`, 'utf8'));
  const id = Buffer.from(instanceId, 'base64url');
  const hash = id.readInt32BE(0) ^ id.readInt32BE(4) ^ id.readInt32BE(8) ^ id.readInt32BE(12);
  return (crc | 0) ^ hash;
}

const registries = new WeakMap<BrokerServices, ClientInstances>();

/** The client instances of one broker. */
export class ClientInstances {
  private readonly byId = new Map<string, ClientInstance>();

  static of(services: BrokerServices): ClientInstances {
    let r = registries.get(services);
    if (!r) registries.set(services, (r = new ClientInstances()));
    return r;
  }

  /** A new id no instance here has. */
  newId(): string {
    let id = randomUuid();
    while (this.byId.has(id) || RESERVED_IDS.has(id)) id = randomUuid();
    return id;
  }

  /** The instance with this id, made (with the empty subscription) when unknown or forgotten. */
  get(id: string, nowMs: number): ClientInstance {
    this.expire(nowMs);
    let c = this.byId.get(id);
    if (c) this.byId.delete(id); // re-inserted below: the map's order is the least recently used first
    else {
      c = { id, subscriptionId: subscriptionIdFor(id, [], DEFAULT_PUSH_INTERVAL_MS), pushIntervalMs: DEFAULT_PUSH_INTERVAL_MS, lastGetMs: 0, lastPushMs: 0, terminating: false, lastError: 0, lastSeenMs: nowMs };
      if (this.byId.size >= CACHE_MAX) this.byId.delete(this.byId.keys().next().value!);
    }
    c.lastSeenMs = nowMs;
    this.byId.set(id, c);
    return c;
  }

  private expire(nowMs: number): void {
    for (const c of this.byId.values()) {
      if (nowMs - c.lastSeenMs < Math.max(CACHE_EXPIRY_MS, 3 * c.pushIntervalMs)) break;
      this.byId.delete(c.id);
    }
  }
}

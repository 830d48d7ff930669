/**
 * The consumer's embedded protocol inside classic JoinGroup/SyncGroup
 * (protocol type "consumer"): an int16 version, then a
 * ConsumerProtocolSubscription or ConsumerProtocolAssignment of that
 * version. As Kafka's ConsumerProtocol reads them, a version newer than the
 * newest known (3) is read as 3 and bytes after the known fields are
 * ignored, so that newer clients stay readable.
 *
 * Used where a group moves between the classic and the consumer protocol
 * (KIP-848's online migration): the coordinator reads a classic member's
 * subscription (topics, owned partitions, rack) and assignment, and writes
 * the assignment the server-side assignor gave it.
 */
import { Reader } from '../../wire/reader.js';
import { codecFor, encode } from '../../wire/codec.js';
import { ConsumerProtocolSubscription } from '../../wire/messages/consumer-protocol-subscription.js';
import { ConsumerProtocolAssignment } from '../../wire/messages/consumer-protocol-assignment.js';
import type { ConsumerProtocolSubscription as SubscriptionT } from '../../wire/messages/consumer-protocol-subscription.js';
import type { ConsumerProtocolAssignment as AssignmentT } from '../../wire/messages/consumer-protocol-assignment.js';

const NEWEST_VERSION = 3;

export type ConsumerSubscription = SubscriptionT;
export type ConsumerAssignment = AssignmentT;

function read<T>(decl: typeof ConsumerProtocolSubscription, bytes: Buffer): T | null {
  if (bytes.length < 2) return null;
  const version = bytes.readInt16BE(0);
  if (version < 0) return null;
  const r = new Reader(bytes, 2);
  const value = codecFor<T>(decl, Math.min(version, NEWEST_VERSION)).decode(r);
  return r.error ? null : value;
}

/** A subscription read back, or null when the bytes do not hold one. */
export function readSubscription(bytes: Buffer): ConsumerSubscription | null {
  return read<ConsumerSubscription>(ConsumerProtocolSubscription, bytes);
}

/** An assignment read back, or null when the bytes do not hold one. */
export function readAssignment(bytes: Buffer): ConsumerAssignment | null {
  return read<ConsumerAssignment>(ConsumerProtocolAssignment, bytes);
}

/** The version a subscription (or assignment) was written with, or null for bytes too short. */
export function protocolVersion(bytes: Buffer): number | null {
  return bytes.length < 2 ? null : bytes.readInt16BE(0);
}

/**
 * An assignment of `partitions` (topic name -> partitions) written at
 * `version`, clamped to the versions Kafka knows (0-3), topics and
 * partitions in ascending order.
 *
 * Example: writeAssignment(1, new Map([['t', [2, 0]]])) -> 0001 00000001
 * 0001 74 00000002 00000000 00000002 ffffffff.
 */
export function writeAssignment(version: number, partitions: ReadonlyMap<string, readonly number[]>): Buffer {
  const v = Math.max(0, Math.min(version, NEWEST_VERSION));
  const value: ConsumerAssignment = {
    assignedPartitions: [...partitions]
      .filter(([, ps]) => ps.length > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([topic, ps]) => ({ topic, partitions: [...ps].sort((x, y) => x - y) })),
    userData: null,
  };
  const body = encode(ConsumerProtocolAssignment, v, value);
  const out = Buffer.allocUnsafe(2 + body.length);
  out.writeInt16BE(v, 0);
  body.copy(out, 2);
  return out;
}

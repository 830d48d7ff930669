/**
 * Helpers for the end-to-end tests of several brokers: waiting for a
 * condition, and reading the cluster straight from a broker with Metadata
 * v12. kafkajs cannot show a partition without a leader: it fails every
 * metadata call whose answer names one, as it does against Apache Kafka.
 */
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import type { MetadataRequest } from '../wire/messages/metadata-request.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import { ZERO_UUID } from '../wire/uuid.js';

/** Retries `probe` every 100 ms until it gives something truthy; fails after `ms` with the last error or answer. */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown = 'no answer yet';
  for (;;) {
    const got = await probe().catch((err: unknown) => {
      last = err;
      return null;
    });
    if (got) return got;
    if (got !== null) last = got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ClusterView {
  brokers: number[];
  controller: number;
  /** Each partition of the topic, by index: leader (-1 for none), leader epoch, ISR (sorted), offline replicas (sorted) and error code. */
  partitions: { leader: number; leaderEpoch: number; isr: number[]; offline: number[]; errorCode: number }[];
}

/** Metadata v12 for `topic` from the broker at `bootstrap` (HOST:PORT). */
export async function clusterView(bootstrap: string, topic: string): Promise<ClusterView> {
  const at = bootstrap.lastIndexOf(':');
  const conn = await WireConnection.open(bootstrap.slice(0, at), Number(bootstrap.slice(at + 1)));
  try {
    const md = await conn.request<MetadataResponse, MetadataRequest>(api('Metadata'), 12, {
      topics: [{ topicId: ZERO_UUID, name: topic }],
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
    const parts = [...(md.topics[0]?.partitions ?? [])].sort((a, b) => a.partitionIndex - b.partitionIndex);
    return {
      brokers: md.brokers.map((b) => b.nodeId).sort(),
      controller: md.controllerId,
      partitions: parts.map((p) => ({ leader: p.leaderId, leaderEpoch: p.leaderEpoch, isr: [...p.isrNodes].sort(), offline: [...p.offlineReplicas].sort(), errorCode: p.errorCode })),
    };
  } finally {
    conn.close();
  }
}

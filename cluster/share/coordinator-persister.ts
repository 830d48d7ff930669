/**
 * The Persister every broker uses: each call goes to the share coordinator
 * of its key, the leader of the key's partition of __share_group_state —
 * this broker's own ShareCoordinator, or another broker through the
 * inter-broker Initialize/Read/Write/Delete/ReadShareGroupState(Summary)
 * APIs. The topic is created on first use, as Kafka's persister does
 * through FindCoordinator. While the coordinator moves (NOT_COORDINATOR,
 * COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, an unreachable
 * broker) a call is tried again, for a bounded time.
 */
import { ErrorCode } from '../../wire/errors.js';
import type { InitializeShareGroupStateResponse } from '../../wire/messages/initialize-share-group-state-response.js';
import type { ReadShareGroupStateResponse } from '../../wire/messages/read-share-group-state-response.js';
import type { WriteShareGroupStateResponse } from '../../wire/messages/write-share-group-state-response.js';
import type { DeleteShareGroupStateResponse } from '../../wire/messages/delete-share-group-state-response.js';
import type { ReadShareGroupStateSummaryResponse } from '../../wire/messages/read-share-group-state-summary-response.js';
import { partitionFor } from '../coordinator/partition-for.js';
import type { InterBrokerClient } from '../inter-broker/broker-channel.js';
import { api } from '../inter-broker/kafka-connection.js';
import type { MetadataStore } from '../metadata/metadata-image.js';
import type { Persister, PersisterResult, ReadStateResult, ReadSummaryResult, SharePartitionKey, WriteStateParams } from './persister.js';
import { SHARE_STATE_TOPIC, shareCoordinatorKey, type ShareCoordinator } from './share-coordinator.js';

/** How __share_group_state is created: Kafka's share.coordinator.state.topic.* settings. */
export interface ShareStateTopicSettings {
  readonly numPartitions: number;
  readonly replicationFactor: number;
  readonly minIsr: number;
  readonly segmentBytes: number;
}

export const DEFAULT_SHARE_STATE_TOPIC: ShareStateTopicSettings = { numPartitions: 50, replicationFactor: 3, minIsr: 2, segmentBytes: 104857600 };

/** The topic's configs, as Kafka's share coordinator creates it. */
export function shareStateTopicConfigs(s: ShareStateTopicSettings): Record<string, string> {
  return {
    'cleanup.policy': 'delete',
    'compression.type': 'producer',
    'min.insync.replicas': String(s.minIsr),
    'retention.ms': '-1',
    'segment.bytes': String(s.segmentBytes),
  };
}

interface Logger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

const RETRIABLE = new Set<number>([
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.REQUEST_TIMED_OUT,
]);
const RETRY_BACKOFF_MS = 100;
const RETRY_FOR_MS = 15_000;
const REMOTE_TIMEOUT_MS = 10_000;

export class CoordinatorPersister implements Persister {
  private creating: Promise<void> | null = null;

  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    private readonly local: ShareCoordinator,
    private readonly channel: InterBrokerClient | null,
    private readonly topic: ShareStateTopicSettings,
    private readonly log: Logger,
  ) {}

  initialize(key: SharePartitionKey, stateEpoch: number, startOffset: bigint): Promise<PersisterResult> {
    return this.call(
      key,
      () => this.local.initialize(key, stateEpoch, startOffset),
      async (node) => {
        const { response } = await this.channel!.request<InitializeShareGroupStateResponse>(node, api('InitializeShareGroupState'), 0, {
          groupId: key.groupId,
          topics: [{ topicId: key.topicId, partitions: [{ partition: key.partition, stateEpoch, startOffset }] }],
        }, { timeoutMs: REMOTE_TIMEOUT_MS });
        const p = response.results[0]?.partitions[0];
        return p ? { errorCode: p.errorCode, errorMessage: p.errorMessage } : missing();
      },
      (errorCode, errorMessage) => ({ errorCode, errorMessage }),
    );
  }

  read(key: SharePartitionKey, leaderEpoch: number): Promise<ReadStateResult> {
    return this.call(
      key,
      () => this.local.read(key, leaderEpoch),
      async (node) => {
        const { response } = await this.channel!.request<ReadShareGroupStateResponse>(node, api('ReadShareGroupState'), 0, {
          groupId: key.groupId,
          topics: [{ topicId: key.topicId, partitions: [{ partition: key.partition, leaderEpoch }] }],
        }, { timeoutMs: REMOTE_TIMEOUT_MS });
        const p = response.results[0]?.partitions[0];
        if (!p) return { ...missing(), stateEpoch: -1, startOffset: -1n, stateBatches: [] };
        return { errorCode: p.errorCode, errorMessage: p.errorMessage, stateEpoch: p.stateEpoch, startOffset: p.startOffset, stateBatches: p.stateBatches };
      },
      (errorCode, errorMessage) => ({ errorCode, errorMessage, stateEpoch: -1, startOffset: -1n, stateBatches: [] }),
    );
  }

  write(key: SharePartitionKey, w: WriteStateParams): Promise<PersisterResult> {
    return this.call(
      key,
      () => this.local.write(key, w),
      async (node) => {
        const { response } = await this.channel!.request<WriteShareGroupStateResponse>(node, api('WriteShareGroupState'), 1, {
          groupId: key.groupId,
          topics: [{ topicId: key.topicId, partitions: [{ partition: key.partition, ...w, stateBatches: [...w.stateBatches] }] }],
        }, { timeoutMs: REMOTE_TIMEOUT_MS });
        const p = response.results[0]?.partitions[0];
        return p ? { errorCode: p.errorCode, errorMessage: p.errorMessage } : missing();
      },
      (errorCode, errorMessage) => ({ errorCode, errorMessage }),
    );
  }

  readSummary(key: SharePartitionKey, leaderEpoch: number): Promise<ReadSummaryResult> {
    return this.call(
      key,
      () => this.local.readSummary(key, leaderEpoch),
      async (node) => {
        const { response } = await this.channel!.request<ReadShareGroupStateSummaryResponse>(node, api('ReadShareGroupStateSummary'), 1, {
          groupId: key.groupId,
          topics: [{ topicId: key.topicId, partitions: [{ partition: key.partition, leaderEpoch }] }],
        }, { timeoutMs: REMOTE_TIMEOUT_MS });
        const p = response.results[0]?.partitions[0];
        if (!p) return { ...missing(), stateEpoch: -1, leaderEpoch: -1, startOffset: -1n, deliveryCompleteCount: -1 };
        return {
          errorCode: p.errorCode,
          errorMessage: p.errorMessage,
          stateEpoch: p.stateEpoch,
          leaderEpoch: p.leaderEpoch,
          startOffset: p.startOffset,
          deliveryCompleteCount: p.deliveryCompleteCount ?? -1,
        };
      },
      (errorCode, errorMessage) => ({ errorCode, errorMessage, stateEpoch: -1, leaderEpoch: -1, startOffset: -1n, deliveryCompleteCount: -1 }),
    );
  }

  delete(key: SharePartitionKey): Promise<PersisterResult> {
    return this.call(
      key,
      () => this.local.delete(key),
      async (node) => {
        const { response } = await this.channel!.request<DeleteShareGroupStateResponse>(node, api('DeleteShareGroupState'), 0, {
          groupId: key.groupId,
          topics: [{ topicId: key.topicId, partitions: [{ partition: key.partition }] }],
        }, { timeoutMs: REMOTE_TIMEOUT_MS });
        const p = response.results[0]?.partitions[0];
        return p ? { errorCode: p.errorCode, errorMessage: p.errorMessage } : missing();
      },
      (errorCode, errorMessage) => ({ errorCode, errorMessage }),
    );
  }

  /** Runs one call at the key's coordinator, trying again while the coordinator moves. */
  private async call<T extends PersisterResult>(
    key: SharePartitionKey,
    local: () => Promise<T>,
    remote: (node: number) => Promise<T>,
    failed: (errorCode: number, errorMessage: string) => T,
  ): Promise<T> {
    const deadline = Date.now() + RETRY_FOR_MS;
    let last: T = failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${SHARE_STATE_TOPIC} is not available`);
    for (;;) {
      const node = await this.coordinatorOf(key);
      if (node >= 0) {
        try {
          last = node === this.nodeId ? await local() : this.channel ? await remote(node) : failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'no way to reach the share coordinator');
        } catch (err) {
          last = failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, `share coordinator ${node} unreachable: ${(err as Error).message}`);
        }
        if (!RETRIABLE.has(last.errorCode)) return last;
      }
      if (Date.now() + RETRY_BACKOFF_MS > deadline) return last;
      await new Promise((r) => setTimeout(r, RETRY_BACKOFF_MS));
    }
  }

  /** The leader of the key's partition of __share_group_state (created when missing), or -1. */
  private async coordinatorOf(key: SharePartitionKey): Promise<number> {
    let topic = this.metadata.image().topics.get(SHARE_STATE_TOPIC);
    if (!topic) {
      await this.createTopic();
      topic = this.metadata.image().topics.get(SHARE_STATE_TOPIC);
      if (!topic) return -1;
    }
    const index = partitionFor(shareCoordinatorKey(key), topic.partitions.length);
    return topic.partitions.find((p) => p.partition === index)?.leader ?? -1;
  }

  private createTopic(): Promise<void> {
    this.creating ??= (async () => {
      try {
        await this.metadata.createTopic({
          name: SHARE_STATE_TOPIC,
          numPartitions: this.topic.numPartitions,
          replicationFactor: Math.min(this.topic.replicationFactor, this.metadata.image().brokers.size),
          configs: shareStateTopicConfigs(this.topic),
        });
        this.log.info({ topic: SHARE_STATE_TOPIC, partitions: this.topic.numPartitions }, 'created internal topic');
      } catch (err) {
        if (!this.metadata.image().topics.has(SHARE_STATE_TOPIC)) this.log.warn({ topic: SHARE_STATE_TOPIC, err: (err as Error).message }, 'cannot create internal topic');
      } finally {
        this.creating = null;
      }
    })();
    return this.creating;
  }
}

function missing(): PersisterResult {
  return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'the share coordinator answered without the partition' };
}

/** Starts what a broker needs for share groups: the share coordinator, the persister that reaches any coordinator, and the share partitions it leads. */
import { replicaOffsetsStore } from '../coordinator/state-log-store.js';
import type { InterBrokerClient } from '../inter-broker/broker-channel.js';
import type { MetadataStore } from '../metadata/metadata-image.js';
import type { ReplicaManager } from '../replication/replica-manager.js';
import { CoordinatorPersister, DEFAULT_SHARE_STATE_TOPIC, type ShareStateTopicSettings } from './coordinator-persister.js';
import { SHARE_STATE_TOPIC, ShareCoordinator } from './share-coordinator.js';
import { latestOffsets, type LatestOffsetLookup } from './latest-offsets.js';
import { ShareManager, type ShareGroupSettings, type ShareLogger } from './share-manager.js';

export interface StartedShares {
  readonly coordinator: ShareCoordinator;
  readonly persister: CoordinatorPersister;
  readonly manager: ShareManager;
  /** A partition's high watermark, from its leader wherever it is (the lag of share groups). */
  readonly latestOffset: LatestOffsetLookup;
  shutdown(): void;
}

export function startShares(
  nodeId: number,
  metadata: MetadataStore,
  replicas: ReplicaManager,
  channel: InterBrokerClient | null,
  groupSettings: (groupId: string) => ShareGroupSettings,
  log: ShareLogger,
  topic: Partial<ShareStateTopicSettings> = {},
): StartedShares {
  const coordinator = new ShareCoordinator(nodeId, metadata, replicaOffsetsStore(replicas, SHARE_STATE_TOPIC), log).start();
  const persister = new CoordinatorPersister(nodeId, metadata, coordinator, channel, { ...DEFAULT_SHARE_STATE_TOPIC, ...topic }, log);
  const manager = new ShareManager(nodeId, metadata, replicas, persister, groupSettings, log).start();
  return {
    coordinator,
    persister,
    manager,
    latestOffset: latestOffsets(nodeId, metadata, replicas, channel),
    shutdown() {
      manager.shutdown();
      coordinator.shutdown();
    },
  };
}

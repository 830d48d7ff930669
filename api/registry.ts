/**
 * Every API gregor serves. This array is the dispatch table and, through
 * `advertisedVersions`, the ApiVersions answer: adding a handler here is the only
 * way to advertise an API.
 */
import type { ApiHandler, ApiVersionRange } from './handler.js';
import { apiVersions } from './api-versions.js';
import { fetch } from './fetch.js';
import { findCoordinator } from './find-coordinator.js';
import { listOffsets } from './list-offsets.js';
import { offsetForLeaderEpoch } from './offset-for-leader-epoch.js';
import { createPartitions } from './create-partitions.js';
import { createTopics } from './create-topics.js';
import { deleteRecords } from './delete-records.js';
import { deleteTopics } from './delete-topics.js';
import { describeCluster } from './describe-cluster.js';
import { describeConfigs } from './describe-configs.js';
import { alterConfigs } from './alter-configs.js';
import { incrementalAlterConfigs } from './incremental-alter-configs.js';
import { describeLogDirs } from './describe-log-dirs.js';
import { alterReplicaLogDirs } from './alter-replica-log-dirs.js';
import { getTelemetrySubscriptions } from './get-telemetry-subscriptions.js';
import { pushTelemetry } from './push-telemetry.js';
import { metadata } from './metadata.js';
import { produce } from './produce.js';
import { offsetCommit } from './offset-commit.js';
import { offsetFetch } from './offset-fetch.js';
import { offsetDelete } from './offset-delete.js';
import { txnOffsetCommit } from './txn-offset-commit.js';
import { joinGroup } from './join-group.js';
import { heartbeat } from './heartbeat.js';
import { leaveGroup } from './leave-group.js';
import { syncGroup } from './sync-group.js';
import { describeGroups } from './describe-groups.js';
import { listGroups } from './list-groups.js';
import { deleteGroups } from './delete-groups.js';
import { initProducerId } from './init-producer-id.js';
import { addPartitionsToTxn } from './add-partitions-to-txn.js';
import { addOffsetsToTxn } from './add-offsets-to-txn.js';
import { endTxn } from './end-txn.js';
import { saslHandshake } from './sasl-handshake.js';
import { saslAuthenticate } from './sasl-authenticate.js';
import { describeTransactions } from './describe-transactions.js';
import { listTransactions } from './list-transactions.js';
import { describeProducers } from './describe-producers.js';
import { electLeaders } from './elect-leaders.js';
import { alterPartitionReassignments } from './alter-partition-reassignments.js';
import { listPartitionReassignments } from './list-partition-reassignments.js';
import { writeTxnMarkers } from './write-txn-markers.js';
import { consumerGroupHeartbeat } from './consumer-group-heartbeat.js';
import { consumerGroupDescribe } from './consumer-group-describe.js';
import { streamsGroupHeartbeat } from './streams-group-heartbeat.js';
import { streamsGroupDescribe } from './streams-group-describe.js';
import { updateFeatures } from './update-features.js';
import { unregisterBroker } from './unregister-broker.js';
import { listConfigResources } from './list-config-resources.js';
import { describeTopicPartitions } from './describe-topic-partitions.js';
import { shareFetch } from './share-fetch.js';
import { shareAcknowledge } from './share-acknowledge.js';
import { initializeShareGroupState } from './initialize-share-group-state.js';
import { readShareGroupState } from './read-share-group-state.js';
import { writeShareGroupState } from './write-share-group-state.js';
import { deleteShareGroupState } from './delete-share-group-state.js';
import { readShareGroupStateSummary } from './read-share-group-state-summary.js';
import { shareGroupHeartbeat } from './share-group-heartbeat.js';
import { shareGroupDescribe } from './share-group-describe.js';
import { describeShareGroupOffsets } from './describe-share-group-offsets.js';
import { alterShareGroupOffsets } from './alter-share-group-offsets.js';
import { deleteShareGroupOffsets } from './delete-share-group-offsets.js';

export const HANDLERS: readonly ApiHandler[] = [
  produce,
  fetch,
  listOffsets,
  offsetForLeaderEpoch,
  metadata,
  offsetCommit,
  offsetFetch,
  findCoordinator,
  joinGroup,
  heartbeat,
  leaveGroup,
  syncGroup,
  describeGroups,
  listGroups,
  apiVersions,
  createTopics,
  deleteTopics,
  deleteRecords,
  describeLogDirs,
  alterReplicaLogDirs,
  getTelemetrySubscriptions,
  pushTelemetry,
  createPartitions,
  describeCluster,
  describeConfigs,
  alterConfigs,
  incrementalAlterConfigs,
  deleteGroups,
  offsetDelete,
  initProducerId,
  addPartitionsToTxn,
  addOffsetsToTxn,
  endTxn,
  saslHandshake,
  saslAuthenticate,
  describeTransactions,
  listTransactions,
  describeProducers,
  txnOffsetCommit,
  writeTxnMarkers,
  electLeaders,
  alterPartitionReassignments,
  listPartitionReassignments,
  consumerGroupHeartbeat,
  consumerGroupDescribe,
  streamsGroupHeartbeat,
  streamsGroupDescribe,
  updateFeatures,
  unregisterBroker,
  listConfigResources,
  describeTopicPartitions,
  shareFetch,
  shareAcknowledge,
  initializeShareGroupState,
  readShareGroupState,
  writeShareGroupState,
  deleteShareGroupState,
  readShareGroupStateSummary,
  shareGroupHeartbeat,
  shareGroupDescribe,
  describeShareGroupOffsets,
  alterShareGroupOffsets,
  deleteShareGroupOffsets,
];

export function handlerTable(handlers: readonly ApiHandler[] = HANDLERS): Map<number, ApiHandler> {
  const table = new Map<number, ApiHandler>();
  for (const h of handlers) {
    if (table.has(h.apiKey)) throw new Error(`two handlers for api key ${h.apiKey}`);
    if (h.maxVersion > h.request.versions[1] || h.minVersion < h.request.versions[0]) {
      throw new Error(`${h.name} serves v${h.minVersion}-${h.maxVersion} beyond its declaration`);
    }
    table.set(h.apiKey, h);
  }
  return table;
}

export function advertisedVersions(handlers: readonly ApiHandler[] = HANDLERS): ApiVersionRange[] {
  return [...handlers]
    .sort((a, b) => a.apiKey - b.apiKey)
    .map((h) => ({ apiKey: h.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion }));
}

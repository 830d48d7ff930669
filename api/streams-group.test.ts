import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import type { StreamsGroupHeartbeatRequest } from '../wire/messages/streams-group-heartbeat-request.js';
import { describeConfigs } from './describe-configs.js';
import { groupServices, type GroupServices } from './group-test-support.js';
import { streamsGroupDescribe } from './streams-group-describe.js';
import { streamsGroupHeartbeat } from './streams-group-heartbeat.js';
import { callAt } from './test-services.js';

const request = (over: Partial<StreamsGroupHeartbeatRequest> = {}): StreamsGroupHeartbeatRequest => ({
  groupId: 'app',
  memberId: 'm1',
  memberEpoch: 0,
  endpointInformationEpoch: 0,
  instanceId: null,
  rackId: null,
  rebalanceTimeoutMs: 30_000,
  topology: {
    epoch: 0,
    subtopologies: [
      {
        subtopologyId: '0',
        sourceTopics: ['t'],
        sourceTopicRegex: [],
        stateChangelogTopics: [{ name: 'app-store-changelog', partitions: 0, replicationFactor: 0, topicConfigs: [{ key: 'cleanup.policy', value: 'compact' }] }],
        repartitionSinkTopics: [],
        repartitionSourceTopics: [],
        copartitionGroups: [],
      },
    ],
  },
  activeTasks: [],
  standbyTasks: [],
  warmupTasks: [],
  processId: 'p1',
  userEndpoint: null,
  clientTags: [],
  taskOffsets: null,
  taskEndOffsets: null,
  shutdownApplication: false,
  ...over,
});

describe('StreamsGroupHeartbeat and StreamsGroupDescribe', () => {
  let s: GroupServices;
  afterEach(async () => s?.close());

  it('creates the changelog topic the topology asks for, with its configs, then assigns the tasks', async () => {
    s = await groupServices({ config: { 'group.streams.initial.rebalance.delay.ms': 0 } });
    const first = await callAt(streamsGroupHeartbeat, 1, request(), s);
    expect([first.errorCode, first.memberEpoch, first.heartbeatIntervalMs, first.acceptableRecoveryLag, first.topologyDescriptionRequired]).toEqual([0, 1, 5000, 10000n, false]);
    expect(first.status!.map((x) => x.statusCode)).toEqual([3]);
    await new Promise((r) => setTimeout(r, 50));
    const changelog = s.metadata.image().topics.get('app-store-changelog');
    expect(changelog?.partitions.length).toBe(3);
    const configs = await describeConfigs.handle(
      { resources: [{ resourceType: 2, resourceName: 'app-store-changelog', configurationKeys: ['cleanup.policy'] }], includeSynonyms: false, includeDocumentation: false },
      { apiVersion: 4, correlationId: 1, clientId: 't', listener: 'PLAINTEXT', clientHost: '127.0.0.1', services: s },
    );
    expect((configs as { results: { configs: { name: string; value: string }[] }[] }).results[0]!.configs).toContainEqual(expect.objectContaining({ name: 'cleanup.policy', value: 'compact' }));
    const next = await callAt(streamsGroupHeartbeat, 1, request({ memberEpoch: 1, topology: null, rebalanceTimeoutMs: -1, processId: null, clientTags: null }), s);
    expect([next.errorCode, next.status, next.activeTasks]).toEqual([0, null, [{ subtopologyId: '0', partitions: [0, 1, 2] }]]);
    // v0 carries the recovery lag in the int32 field it had.
    const v0 = await callAt(streamsGroupHeartbeat, 0, request({ memberEpoch: next.memberEpoch, topology: null, rebalanceTimeoutMs: -1, processId: null, clientTags: null, activeTasks: next.activeTasks }), s);
    expect([v0.errorCode, v0.acceptableRecoveryLagLegacy]).toEqual([0, 10000]);

    const d = await callAt(streamsGroupDescribe, 1, { groupIds: ['app', 'nope'], includeAuthorizedOperations: false, includeTopologyDescription: true }, s);
    const [app, nope] = d.groups;
    expect([app!.errorCode, app!.groupState, app!.assignorName, app!.topologyDescriptionStatus, app!.members.map((m) => [m.memberId, m.processId, m.assignment.activeTasks])]).toEqual([
      0,
      'Stable',
      'sticky',
      1,
      [['m1', 'p1', [{ subtopologyId: '0', partitions: [0, 1, 2] }]]],
    ]);
    expect(app!.topology!.subtopologies![0]!.stateChangelogTopics[0]).toMatchObject({ name: 'app-store-changelog', partitions: 3 });
    expect([nope!.errorCode, nope!.errorMessage]).toEqual([ErrorCode.GROUP_ID_NOT_FOUND, 'Group nope not found.']);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { buildImage, type MetadataStore } from '../cluster/metadata/metadata-image.js';
import { listPartitionReassignments } from './list-partition-reassignments.js';
import { callAt, testServices, type TestServices } from './test-services.js';

const open: TestServices[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const broker = (nodeId: number) => ({ nodeId, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9090 + nodeId }] });

/** Services whose metadata shows topic 'moving' with partition 1 being moved from [1, 2] to [2, 3]. */
function services(): TestServices {
  const s = testServices();
  open.push(s);
  const image = buildImage('c', 1, [broker(1), broker(2), broker(3)], [
    {
      name: 'moving',
      topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
      internal: false,
      configs: {},
      partitions: [
        { partition: 0, leader: 1, leaderEpoch: 0, replicas: [1, 2], isr: [1, 2], offlineReplicas: [] },
        { partition: 1, leader: 2, leaderEpoch: 0, replicas: [2, 3, 1], isr: [1, 2], offlineReplicas: [], addingReplicas: [3], removingReplicas: [1] },
      ],
    },
  ]);
  const metadata = { ...s.metadata, image: () => image } as MetadataStore;
  return { ...s, metadata };
}

describe('ListPartitionReassignments', () => {
  const ongoing = { name: 'moving', partitions: [{ partitionIndex: 1, replicas: [2, 3, 1], addingReplicas: [3], removingReplicas: [1] }] };

  it('lists the partitions being moved, of every topic when none is named', async () => {
    const r = await callAt(listPartitionReassignments, 0, { timeoutMs: 1000, topics: null }, services());
    expect(r).toMatchObject({ errorCode: ErrorCode.NONE, topics: [ongoing] });
  });

  it('lists only the partitions named, and leaves out those not moving and those that do not exist', async () => {
    const s = services();
    expect((await callAt(listPartitionReassignments, 0, { timeoutMs: 1000, topics: [{ name: 'moving', partitionIndexes: [1, 1, 0, 7] }, { name: 'nope', partitionIndexes: [0] }] }, s)).topics).toEqual([ongoing]);
    expect((await callAt(listPartitionReassignments, 0, { timeoutMs: 1000, topics: [{ name: 'moving', partitionIndexes: [0] }] }, s)).topics).toEqual([]);
  });

  it('refuses a timeout of 0 or less with REQUEST_TIMED_OUT', async () => {
    const r = await callAt(listPartitionReassignments, 0, { timeoutMs: 0, topics: null }, services());
    expect(r).toMatchObject({ errorCode: ErrorCode.REQUEST_TIMED_OUT, topics: [] });
  });
});

import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../wire/errors.js';
import type { WriteTxnMarkersRequest } from '../../wire/messages/write-txn-markers-request.js';
import type { WriteTxnMarkersResponse } from '../../wire/messages/write-txn-markers-response.js';
import { FakeMetadataStore } from '../group/group-test-support.js';
import { BrokerRequestError, type InterBrokerClient } from '../inter-broker/broker-channel.js';
import type { ApiDecl } from '../inter-broker/kafka-connection.js';
import { buildImage, type TopicImage } from '../metadata/metadata-image.js';
import { TxnMarkerChannel } from './txn-marker-channel.js';
import type { TxnMarkerWriter } from './txn-coordinator.js';

type MarkerRequest = Parameters<TxnMarkerWriter['writeMarkers']>[0];

/** Topic t: partition 0 led by broker 1 (this one), 1 and 2 by broker 2, 3 by nobody, 4 by broker 4, which is not registered. */
function store(): FakeMetadataStore {
  const leaders = [1, 2, 2, -1, 4];
  const t: TopicImage = {
    name: 't',
    topicId: 'id-t',
    internal: false,
    configs: {},
    partitions: leaders.map((leader, partition) => ({ partition, leader, leaderEpoch: 0, replicas: [1, 2, 3], isr: [1, 2, 3], offlineReplicas: [] })),
  };
  const brokers = [1, 2, 3].map((nodeId) => ({ nodeId, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + nodeId }] }));
  return new FakeMetadataStore(buildImage('cluster', 1, brokers, [t]));
}

class LocalWriter implements TxnMarkerWriter {
  readonly calls: MarkerRequest[] = [];
  async writeMarkers(req: MarkerRequest) {
    this.calls.push(req);
    return req.partitions.map((p) => ({ ...p, errorCode: ErrorCode.NONE }));
  }
}

class FakeClient implements InterBrokerClient {
  readonly sent: { nodeId: number; apiKey: number; version: number; body: WriteTxnMarkersRequest }[] = [];
  answer: (body: WriteTxnMarkersRequest) => WriteTxnMarkersResponse = (body) => ({
    markers: body.markers.map((m) => ({
      producerId: m.producerId,
      topics: m.topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode: ErrorCode.NONE })) })),
    })),
  });
  async request<Res>(nodeId: number, decl: ApiDecl, maxVersion: number, body: unknown) {
    this.sent.push({ nodeId, apiKey: decl.apiKey, version: maxVersion, body: body as WriteTxnMarkersRequest });
    return { version: maxVersion, response: this.answer(body as WriteTxnMarkersRequest) as Res };
  }
}

const REQ: MarkerRequest = {
  producerId: 7n,
  producerEpoch: 2,
  coordinatorEpoch: 5,
  commit: true,
  transactionVersion: 0,
  partitions: [0, 1, 2, 3, 4].map((partition) => ({ topic: 't', partition })),
};

function byPartition(results: { partition: number; errorCode: number }[]): number[] {
  return [...results].sort((a, b) => a.partition - b.partition).map((r) => r.errorCode);
}

describe('TxnMarkerChannel', () => {
  it('writes the markers of partitions led here itself and sends one WriteTxnMarkers to each other leader', async () => {
    const local = new LocalWriter();
    const client = new FakeClient();
    const channel = new TxnMarkerChannel(1, store(), local, client, { warn: () => {} });
    const results = await channel.writeMarkers({ ...REQ, transactionVersion: 2 });
    expect(local.calls.map((c) => [c.partitions, c.transactionVersion])).toEqual([[[{ topic: 't', partition: 0 }], 2]]);
    // WriteTxnMarkers v2 carries the transaction's version, which the leader checks the marker's epoch by.
    expect(client.sent).toEqual([
      {
        nodeId: 2,
        apiKey: 27,
        version: 2,
        body: { markers: [{ producerId: 7n, producerEpoch: 2, transactionResult: true, coordinatorEpoch: 5, topics: [{ name: 't', partitionIndexes: [1, 2] }], transactionVersion: 2 }] },
      },
    ]);
    // Without a live leader the coordinator is told to retry.
    expect(byPartition(results)).toEqual([ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_LEADER_OR_FOLLOWER]);
  });

  it('passes on the leader\'s error per partition, and counts a partition it left out or a failed request as not written', async () => {
    const client = new FakeClient();
    const channel = new TxnMarkerChannel(1, store(), new LocalWriter(), client, { warn: () => {} });
    client.answer = (body) => ({
      markers: [{ producerId: body.markers[0]!.producerId, topics: [{ name: 't', partitions: [{ partitionIndex: 1, errorCode: ErrorCode.NOT_ENOUGH_REPLICAS }] }] }],
    });
    expect(byPartition(await channel.writeMarkers({ ...REQ, partitions: [1, 2].map((partition) => ({ topic: 't', partition })) }))).toEqual([
      ErrorCode.NOT_ENOUGH_REPLICAS,
      ErrorCode.REQUEST_TIMED_OUT,
    ]);
    client.answer = () => {
      throw new BrokerRequestError('connection refused', ErrorCode.REQUEST_TIMED_OUT);
    };
    expect(byPartition(await channel.writeMarkers({ ...REQ, partitions: [{ topic: 't', partition: 1 }] }))).toEqual([ErrorCode.REQUEST_TIMED_OUT]);
  });
});

/**
 * How the transaction coordinator's markers reach the partitions, as
 * Kafka's TransactionMarkerChannelManager sends them: each partition's
 * marker goes to the broker leading it now, written here when that is this
 * broker, and otherwise in a WriteTxnMarkers request to the leader, which
 * writes it as the partition's leader and answers once its in-sync replicas
 * have it. A partition without a live leader, or whose leader cannot be
 * reached, answers a retriable error (NOT_LEADER_OR_FOLLOWER,
 * REQUEST_TIMED_OUT): the coordinator asks again after its backoff, of the
 * leader the image names then.
 */
import { ErrorCode } from '../../wire/errors.js';
import type { WriteTxnMarkersRequest } from '../../wire/messages/write-txn-markers-request.js';
import type { WriteTxnMarkersResponse } from '../../wire/messages/write-txn-markers-response.js';
import { BrokerRequestError, type InterBrokerClient } from '../inter-broker/broker-channel.js';
import { api } from '../inter-broker/kafka-connection.js';
import type { MetadataStore } from '../metadata/metadata-image.js';
import type { TxnMarkerWriter } from './txn-coordinator.js';

/** WriteTxnMarkers v2 carries each marker's transaction version; a leader serving only v1 takes every marker as version 0. */
const WRITE_TXN_MARKERS_VERSION = 2;
const WRITE_TXN_MARKERS_MIN_VERSION = 1;
/**
 * The leader answers once its in-sync replicas have the markers, waiting up
 * to its own request.timeout.ms: this side waits a little longer, so that
 * the leader's own answer (a timeout included) comes first.
 */
const REMOTE_ANSWER_MARGIN_MS = 5_000;

export interface TxnMarkerChannelLogger {
  warn(obj: object, msg: string): void;
}

type MarkerRequest = Parameters<TxnMarkerWriter['writeMarkers']>[0];
type MarkerResult = { topic: string; partition: number; errorCode: number };

export class TxnMarkerChannel implements TxnMarkerWriter {
  constructor(
    private readonly nodeId: number,
    private readonly metadata: MetadataStore,
    /** Writes the markers of partitions this broker leads (the replica manager). */
    private readonly local: TxnMarkerWriter,
    private readonly channel: InterBrokerClient,
    private readonly log: TxnMarkerChannelLogger,
    private readonly requestTimeoutMs = 30_000,
  ) {}

  /**
   * Example: partitions orders-0 (led here) and orders-1 (led by broker 2):
   * orders-0's marker is written by the replica manager, orders-1's sent to
   * broker 2; both answers come back in one list, in no particular order.
   */
  async writeMarkers(req: MarkerRequest): Promise<MarkerResult[]> {
    const image = this.metadata.image();
    const byLeader = new Map<number, { topic: string; partition: number }[]>();
    const out: MarkerResult[] = [];
    for (const p of req.partitions) {
      const leader = image.topics.get(p.topic)?.partitions[p.partition]?.leader ?? -1;
      if (leader < 0 || (leader !== this.nodeId && !image.brokers.has(leader))) {
        out.push({ ...p, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER });
        continue;
      }
      const list = byLeader.get(leader) ?? [];
      list.push(p);
      byLeader.set(leader, list);
    }
    const answers = await Promise.all(
      [...byLeader].map(([leader, partitions]) => (leader === this.nodeId ? this.local.writeMarkers({ ...req, partitions }) : this.remote(leader, req, partitions))),
    );
    for (const a of answers) out.push(...a);
    return out;
  }

  private async remote(leader: number, req: MarkerRequest, partitions: readonly { topic: string; partition: number }[]): Promise<MarkerResult[]> {
    const topics = new Map<string, number[]>();
    for (const p of partitions) topics.set(p.topic, [...(topics.get(p.topic) ?? []), p.partition]);
    const body: WriteTxnMarkersRequest = {
      markers: [
        {
          producerId: req.producerId,
          producerEpoch: req.producerEpoch,
          transactionResult: req.commit,
          topics: [...topics].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
          coordinatorEpoch: req.coordinatorEpoch,
          transactionVersion: req.transactionVersion,
        },
      ],
    };
    try {
      const { response } = await this.channel.request<WriteTxnMarkersResponse>(leader, api('WriteTxnMarkers'), WRITE_TXN_MARKERS_VERSION, body, {
        minVersion: WRITE_TXN_MARKERS_MIN_VERSION,
        timeoutMs: this.requestTimeoutMs + REMOTE_ANSWER_MARGIN_MS,
      });
      const codes = new Map<string, number>();
      for (const m of response.markers) {
        if (m.producerId !== req.producerId) continue;
        for (const t of m.topics) for (const p of t.partitions) codes.set(`${t.name}\u0000${p.partitionIndex}`, p.errorCode);
      }
      // A partition the answer leaves out was not written, as far as this side knows.
      return partitions.map((p) => ({ ...p, errorCode: codes.get(`${p.topic}\u0000${p.partition}`) ?? ErrorCode.REQUEST_TIMED_OUT }));
    } catch (err) {
      const errorCode = err instanceof BrokerRequestError ? err.errorCode : ErrorCode.REQUEST_TIMED_OUT;
      this.log.warn({ leader, partitions: partitions.length, err: (err as Error).message }, 'transaction markers not delivered to the partition leader; the coordinator retries');
      return partitions.map((p) => ({ ...p, errorCode: errorCode === ErrorCode.UNSUPPORTED_VERSION ? ErrorCode.REQUEST_TIMED_OUT : errorCode }));
    }
  }
}

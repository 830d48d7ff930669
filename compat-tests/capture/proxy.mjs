// A loopback TCP proxy in front of a Kafka broker that forwards every byte unchanged
// and records the frames it sees, so golden bytes come from a real client talking to a
// real broker rather than from our own encoder.

import net from 'node:net';

// Indexed by api key; names as Kafka's message definitions spell them, minus "Request".
export const API_NAMES = [
  'Produce', 'Fetch', 'ListOffsets', 'Metadata', 'LeaderAndIsr', 'StopReplica',
  'UpdateMetadata', 'ControlledShutdown', 'OffsetCommit', 'OffsetFetch',
  'FindCoordinator', 'JoinGroup', 'Heartbeat', 'LeaveGroup', 'SyncGroup',
  'DescribeGroups', 'ListGroups', 'SaslHandshake', 'ApiVersions', 'CreateTopics',
  'DeleteTopics', 'DeleteRecords', 'InitProducerId', 'OffsetForLeaderEpoch',
  'AddPartitionsToTxn', 'AddOffsetsToTxn', 'EndTxn', 'WriteTxnMarkers',
  'TxnOffsetCommit', 'DescribeAcls', 'CreateAcls', 'DeleteAcls', 'DescribeConfigs',
  'AlterConfigs', 'AlterReplicaLogDirs', 'DescribeLogDirs', 'SaslAuthenticate',
  'CreatePartitions', 'CreateDelegationToken', 'RenewDelegationToken',
  'ExpireDelegationToken', 'DescribeDelegationToken', 'DeleteGroups', 'ElectLeaders',
  'IncrementalAlterConfigs', 'AlterPartitionReassignments',
  'ListPartitionReassignments', 'OffsetDelete', 'DescribeClientQuotas',
  'AlterClientQuotas', 'DescribeUserScramCredentials', 'AlterUserScramCredentials',
  'Vote', 'BeginQuorumEpoch', 'EndQuorumEpoch', 'DescribeQuorum', 'AlterPartition',
  'UpdateFeatures', 'Envelope', 'FetchSnapshot', 'DescribeCluster',
  'DescribeProducers', 'BrokerRegistration', 'BrokerHeartbeat', 'UnregisterBroker',
  'DescribeTransactions', 'ListTransactions', 'AllocateProducerIds',
  'ConsumerGroupHeartbeat', 'ConsumerGroupDescribe', 'ControllerRegistration',
  'GetTelemetrySubscriptions', 'PushTelemetry', 'AssignReplicasToDirs',
  'ListClientMetricsResources', 'DescribeTopicPartitions', 'ShareGroupHeartbeat',
  'ShareGroupDescribe', 'ShareFetch', 'ShareAcknowledge', 'AddRaftVoter',
  'RemoveRaftVoter', 'UpdateRaftVoter', 'InitializeShareGroupState',
  'ReadShareGroupState', 'WriteShareGroupState', 'DeleteShareGroupState',
  'ReadShareGroupStateSummary',
];

export function apiName(apiKey) {
  return API_NAMES[apiKey] ?? `ApiKey${apiKey}`;
}

// Above this a frame is still forwarded but no longer kept: a broker test never needs
// a golden that large, and a garbage size must not make the proxy allocate it.
const MAX_RECORDED_FRAME = 16 * 1024 * 1024;

/**
 * Splits a byte stream into size-prefixed frames. Calls onFrame(body) with the bytes
 * after the 4-byte size, or onFrame(null, size) for a frame too large to keep.
 */
class FrameSplitter {
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.chunks = [];
    this.buffered = 0;
    this.skip = 0;
  }
  push(chunk) {
    if (this.skip > 0) {
      const n = Math.min(this.skip, chunk.length);
      this.skip -= n;
      chunk = chunk.subarray(n);
      if (chunk.length === 0) return;
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.buffered < 4) return;
      const buf = this.flatten();
      const size = buf.readInt32BE(0);
      if (size < 0 || size > MAX_RECORDED_FRAME) {
        this.onFrame(null, size);
        const available = buf.length - 4;
        this.skip = Math.max(0, size - available);
        const rest = buf.subarray(4 + Math.min(Math.max(size, 0), available));
        this.chunks = rest.length ? [rest] : [];
        this.buffered = rest.length;
        if (size < 0) {
          // A negative size cannot be resynchronised; stop recording this direction.
          this.onFrame = () => {};
          this.chunks = [];
          this.buffered = 0;
          this.skip = Infinity;
          return;
        }
        continue;
      }
      if (buf.length < 4 + size) return;
      this.onFrame(Buffer.from(buf.subarray(4, 4 + size)));
      const rest = buf.subarray(4 + size);
      this.chunks = rest.length ? [rest] : [];
      this.buffered = rest.length;
    }
  }
  flatten() {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0];
  }
}

/**
 * Starts the proxy on 127.0.0.1 at an ephemeral port.
 *
 * frames() returns one entry per accepted connection, in accept order:
 *   { id, openedAt, closedAt, exchanges, unmatchedResponses }
 * where exchanges lists the requests in the order the client sent them:
 *   { index, apiKey, apiName, apiVersion, correlationId, request, response }
 * request and response are the frame bytes without the size prefix. A response is
 * paired with the oldest outstanding request carrying its correlation id; requests it
 * skips over (acks=0 Produce) keep response null with noResponse true.
 */
export async function startCaptureProxy({ upstreamHost = '127.0.0.1', upstreamPort, host = '127.0.0.1' }) {
  if (!upstreamPort) throw new Error('upstreamPort is required');
  const connections = [];
  const sockets = new Set();
  let nextId = 1;

  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const conn = {
      id: nextId++,
      openedAt: new Date().toISOString(),
      closedAt: null,
      exchanges: [],
      unmatchedResponses: [],
    };
    connections.push(conn);
    const pending = [];

    const upstream = net.connect({ host: upstreamHost, port: upstreamPort, allowHalfOpen: true });
    sockets.add(client);
    sockets.add(upstream);

    const requests = new FrameSplitter((frame, size) => {
      const exchange = {
        index: conn.exchanges.length + 1,
        apiKey: null,
        apiName: null,
        apiVersion: null,
        correlationId: null,
        request: frame,
        response: null,
      };
      if (frame === null) exchange.oversized = size;
      else if (frame.length >= 8) {
        exchange.apiKey = frame.readInt16BE(0);
        exchange.apiName = apiName(exchange.apiKey);
        exchange.apiVersion = frame.readInt16BE(2);
        exchange.correlationId = frame.readInt32BE(4);
      }
      conn.exchanges.push(exchange);
      pending.push(exchange);
    });
    const responses = new FrameSplitter((frame, size) => {
      if (frame === null || frame.length < 4) {
        // Without a correlation id the best pairing left is order.
        const exchange = pending.shift();
        if (exchange) {
          exchange.response = frame;
          if (frame === null) exchange.responseOversized = size;
        } else conn.unmatchedResponses.push(frame);
        return;
      }
      const correlationId = frame.readInt32BE(0);
      const at = pending.findIndex((e) => e.correlationId === correlationId);
      if (at < 0) {
        conn.unmatchedResponses.push(frame);
        return;
      }
      for (const skipped of pending.splice(0, at)) skipped.noResponse = true;
      pending.shift().response = frame;
    });

    relay(client, upstream, (chunk) => requests.push(chunk));
    relay(upstream, client, (chunk) => responses.push(chunk));

    let open = 2;
    const onClose = (socket) => () => {
      sockets.delete(socket);
      if (--open === 0) conn.closedAt = new Date().toISOString();
    };
    client.once('close', onClose(client));
    upstream.once('close', onClose(upstream));
    const fail = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', fail);
    upstream.on('error', fail);
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: 0 }, resolve);
  });

  return {
    port: server.address().port,
    host,
    frames: () => connections,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Forwards from → to with backpressure, showing each chunk to observe first. */
function relay(from, to, observe) {
  from.on('data', (chunk) => {
    try {
      observe(chunk);
    } catch {
      // Recording must never disturb the traffic it records.
    }
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  from.on('end', () => to.end());
}

/** Lowercase hex, 64 bytes (128 hex digits) per line, trailing newline. */
export function toHexLines(buf) {
  const hex = buf.toString('hex');
  const lines = [];
  for (let i = 0; i < hex.length; i += 128) lines.push(hex.slice(i, i + 128));
  return lines.join('\n') + '\n';
}

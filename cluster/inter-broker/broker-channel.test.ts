/**
 * BrokerChannel against a scripted peer: a loopback server that speaks the
 * Kafka framing with the project's codec, answers ApiVersions with the
 * versions it is given, and answers (or ignores) the other requests as the
 * test says.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { codecFor } from '../../wire/codec.js';
import { ErrorCode } from '../../wire/errors.js';
import { finishFrame, readHeaderRest, readHeaderStart, requestHeaderVersion, responseHeaderVersion, startResponse } from '../../wire/headers.js';
import type { ApiVersionsResponse } from '../../wire/messages/api-versions-response.js';
import type { DescribeClusterResponse } from '../../wire/messages/describe-cluster-response.js';
import { Reader } from '../../wire/reader.js';
import { Writer } from '../../wire/writer.js';
import { FakeMetadataStore } from '../group/group-test-support.js';
import { buildImage } from '../metadata/metadata-image.js';
import { BrokerChannel, BrokerRequestError } from './broker-channel.js';
import { api } from './kafka-connection.js';

interface Peer {
  port: number;
  /** Every request the peer read: api key and version. */
  seen: { apiKey: number; version: number }[];
  sockets: Set<Socket>;
  server: Server;
}

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A peer serving DescribeCluster v0-`describeMax` (answering unless `silent`) and ApiVersions. */
async function peer(describeMax: number, silent = false): Promise<Peer> {
  const seen: Peer['seen'] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const frame = buf.subarray(4, 4 + buf.readInt32BE(0));
        buf = buf.subarray(4 + frame.length);
        const r = new Reader(frame);
        const h = readHeaderStart(r);
        seen.push({ apiKey: h.apiKey, version: h.apiVersion });
        const decl = h.apiKey === 18 ? api('ApiVersions') : api('DescribeCluster');
        readHeaderRest(r, requestHeaderVersion(h.apiKey, h.apiVersion, decl.request));
        let body: unknown;
        if (h.apiKey === 18) {
          const answer: ApiVersionsResponse = {
            errorCode: 0,
            apiKeys: [
              { apiKey: 18, minVersion: 0, maxVersion: 3 },
              { apiKey: 60, minVersion: 0, maxVersion: describeMax },
            ],
            throttleTimeMs: 0,
            supportedFeatures: [],
            finalizedFeaturesEpoch: -1n,
            finalizedFeatures: [],
            zkMigrationReady: false,
          };
          body = answer;
        } else if (silent) {
          continue;
        } else {
          const answer: DescribeClusterResponse = {
            throttleTimeMs: 0,
            errorCode: 0,
            errorMessage: null,
            endpointType: 1,
            clusterId: 'scripted',
            controllerId: 2,
            brokers: [],
            clusterAuthorizedOperations: -2147483648,
          };
          body = answer;
        }
        const w = new Writer(256);
        const start = startResponse(w, h.correlationId, responseHeaderVersion(h.apiKey, h.apiVersion, decl.response));
        codecFor(decl.response, h.apiVersion).encode(w, body);
        finishFrame(w, start);
        socket.write(w.finish());
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { port, seen, sockets, server };
}

function channelTo(port: number, opts: { requestTimeoutMs?: number } = {}): BrokerChannel {
  const brokers = [{ nodeId: 2, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port }] }];
  const channel = new BrokerChannel(new FakeMetadataStore(buildImage('c', 2, brokers, [])), 'PLAINTEXT', opts);
  cleanups.push(() => channel.close());
  return channel;
}

const DESCRIBE = { includeClusterAuthorizedOperations: false, endpointType: 1 };

describe('BrokerChannel', () => {
  it('agrees each API\'s version with the peer\'s ApiVersions and reuses one connection', async () => {
    const p = await peer(0);
    const channel = channelTo(p.port);
    const first = await channel.request<DescribeClusterResponse>(2, api('DescribeCluster'), 1, DESCRIBE);
    expect(first).toMatchObject({ version: 0, response: { clusterId: 'scripted', controllerId: 2 } });
    await channel.request(2, api('DescribeCluster'), 1, DESCRIBE);
    expect(p.seen).toEqual([
      { apiKey: 18, version: 3 },
      { apiKey: 60, version: 0 },
      { apiKey: 60, version: 0 },
    ]);
    expect(p.sockets.size).toBe(1);
    // A version range the peer does not reach is refused before anything is sent.
    await expect(channel.request(2, api('DescribeCluster'), 1, DESCRIBE, { minVersion: 1 })).rejects.toMatchObject({ errorCode: ErrorCode.UNSUPPORTED_VERSION });
    expect(p.seen).toHaveLength(3);
  });

  it('fails a request to an unregistered broker at once, and one the peer leaves unanswered after the timeout, dropping that connection', async () => {
    const p = await peer(1, true);
    const channel = channelTo(p.port, { requestTimeoutMs: 300 });
    await expect(channel.request(5, api('DescribeCluster'), 1, DESCRIBE)).rejects.toMatchObject({ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER });
    const t0 = Date.now();
    const err = await channel.request(2, api('DescribeCluster'), 1, DESCRIBE).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BrokerRequestError);
    expect((err as BrokerRequestError).errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    // The next request opens a new connection (and asks ApiVersions again).
    await expect(channel.request(2, api('DescribeCluster'), 1, DESCRIBE, { timeoutMs: 300 })).rejects.toBeInstanceOf(BrokerRequestError);
    expect(p.seen.filter((s) => s.apiKey === 18)).toHaveLength(2);
  });

  it('opens a new connection when the peer closed the last one (an idle timeout, a restart)', async () => {
    const p = await peer(0);
    const channel = channelTo(p.port);
    await channel.request(2, api('DescribeCluster'), 1, DESCRIBE);
    for (const s of p.sockets) s.destroy();
    // The close reaches this side before the next request is made.
    await new Promise((r) => setTimeout(r, 50));
    await expect(channel.request(2, api('DescribeCluster'), 1, DESCRIBE)).resolves.toMatchObject({ response: { clusterId: 'scripted' } });
    expect(p.seen.filter((x) => x.apiKey === 18)).toHaveLength(2);
  });

  it('fails at once once closed', async () => {
    const p = await peer(1);
    const channel = channelTo(p.port);
    channel.close();
    await expect(channel.request(2, api('DescribeCluster'), 1, DESCRIBE)).rejects.toBeInstanceOf(BrokerRequestError);
    expect(p.seen).toEqual([]);
  });
});

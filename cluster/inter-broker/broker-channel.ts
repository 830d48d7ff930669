/**
 * The broker's own client for talking to the other brokers of its cluster,
 * as Kafka's NetworkClient is for its inter-broker requests: one pipelined
 * connection per broker (opened on first use, at the address the metadata
 * image gives for the inter-broker listener, and opened again when that
 * address changes or the connection fails), the versions of each API agreed
 * with the peer's ApiVersions answer, and a timeout per request, after which
 * the connection is dropped so that a hung peer never holds answers back.
 *
 * Retrying is the caller's: a request that failed may have reached the
 * peer, and only the caller knows whether sending it again is safe and
 * which broker to ask after a leadership change.
 *
 * Example:
 *   const channel = new BrokerChannel(store, 'PLAINTEXT');
 *   const { version, response } = await channel.request<WriteTxnMarkersResponse>(2, api('WriteTxnMarkers'), 1, body);
 */
import { ErrorCode } from '../../wire/errors.js';
import type { ApiVersionsRequest } from '../../wire/messages/api-versions-request.js';
import type { ApiVersionsResponse } from '../../wire/messages/api-versions-response.js';
import { endpointFor, type MetadataStore } from '../metadata/metadata-image.js';
import { type ApiDecl, WireConnection, api } from './kafka-connection.js';

export interface BrokerChannelOptions {
  /** request.timeout.ms for inter-broker requests: Kafka's default is 30 s. */
  readonly requestTimeoutMs?: number;
  /** How long opening a connection (and its ApiVersions exchange) may take. */
  readonly connectTimeoutMs?: number;
  /** The client software version sent in ApiVersions. */
  readonly softwareVersion?: string;
}

/** The request could not be sent, or no answer came: the peer may or may not have acted on it. */
export class BrokerRequestError extends Error {
  constructor(
    message: string,
    /** The Kafka error a caller may answer for it: NOT_LEADER_OR_FOLLOWER-like absence, or a timeout. */
    readonly errorCode: number,
  ) {
    super(message);
  }
}

/** What the coordinators need of the channel: one request to one broker (tests give a fake). */
export interface InterBrokerClient {
  request<Res>(
    nodeId: number,
    decl: ApiDecl,
    maxVersion: number,
    body: unknown,
    opts?: { minVersion?: number; timeoutMs?: number },
  ): Promise<{ version: number; response: Res }>;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const API_VERSIONS_VERSION = 3;

interface Peer {
  readonly host: string;
  readonly port: number;
  /** Settles once connected and the versions are known. */
  readonly ready: Promise<{ conn: WireConnection; versions: ReadonlyMap<number, { min: number; max: number }> }>;
  conn: WireConnection | null;
}

export class BrokerChannel implements InterBrokerClient {
  private readonly peers = new Map<number, Peer>();
  private closed = false;
  private readonly requestTimeoutMs: number;
  private readonly connectTimeoutMs: number;

  constructor(
    private readonly metadata: MetadataStore,
    /** The listener whose advertised address other brokers are reached at. */
    private readonly listener: string,
    private readonly opts: BrokerChannelOptions = {},
  ) {
    this.requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  }

  /**
   * Sends one request to broker `nodeId` at the highest version both sides
   * serve, at most `maxVersion` (`body` must carry the fields of every
   * version it may be sent at: the codec writes those of the chosen one).
   * Rejects with BrokerRequestError when the broker is not registered, has
   * no address for the listener, cannot be reached, serves no version of
   * the API in [`minVersion`, `maxVersion`], or does not answer within the
   * timeout.
   */
  async request<Res>(
    nodeId: number,
    decl: ApiDecl,
    maxVersion: number,
    body: unknown,
    opts: { minVersion?: number; timeoutMs?: number } = {},
  ): Promise<{ version: number; response: Res }> {
    if (this.closed) throw new BrokerRequestError('the broker is shutting down', ErrorCode.REQUEST_TIMED_OUT);
    const peer = this.peerFor(nodeId);
    const timeoutMs = opts.timeoutMs ?? this.requestTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.drop(nodeId, peer);
        reject(new BrokerRequestError(`broker ${nodeId} (${peer.host}:${peer.port}) did not answer ${decl.request.name} within ${timeoutMs} ms`, ErrorCode.REQUEST_TIMED_OUT));
      }, timeoutMs);
    });
    try {
      return await Promise.race([
        (async () => {
          let ready;
          try {
            ready = await peer.ready;
          } catch (err) {
            this.drop(nodeId, peer);
            throw new BrokerRequestError(`cannot reach broker ${nodeId} at ${peer.host}:${peer.port}: ${(err as Error).message}`, ErrorCode.REQUEST_TIMED_OUT);
          }
          const range = ready.versions.get(decl.apiKey);
          const version = Math.min(maxVersion, range?.max ?? -1);
          if (!range || version < (opts.minVersion ?? 0) || version < range.min) {
            throw new BrokerRequestError(`broker ${nodeId} serves no version of ${decl.request.name} this broker can send`, ErrorCode.UNSUPPORTED_VERSION);
          }
          try {
            return { version, response: await ready.conn.request<Res>(decl, version, body) };
          } catch (err) {
            this.drop(nodeId, peer);
            throw new BrokerRequestError(`${decl.request.name} to broker ${nodeId} failed: ${(err as Error).message}`, ErrorCode.REQUEST_TIMED_OUT);
          }
        })(),
        timedOut,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes every connection; later requests fail at once. */
  close(): void {
    this.closed = true;
    for (const [nodeId, peer] of [...this.peers]) this.drop(nodeId, peer);
  }

  /** The connection to `nodeId` at its current address, opened when there is none. */
  private peerFor(nodeId: number): Peer {
    const broker = this.metadata.image().brokers.get(nodeId);
    if (!broker) throw new BrokerRequestError(`broker ${nodeId} is not registered`, ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const endpoint = endpointFor(broker, this.listener);
    if (!endpoint) throw new BrokerRequestError(`broker ${nodeId} has no ${this.listener} listener`, ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const known = this.peers.get(nodeId);
    // A connection the peer closed (connections.max.idle.ms, a restart) is replaced before anything is sent on it.
    if (known && known.host === endpoint.host && known.port === endpoint.port && !known.conn?.closed) return known;
    if (known) this.drop(nodeId, known);
    const peer: Peer = { host: endpoint.host, port: endpoint.port, conn: null, ready: this.connect(endpoint.host, endpoint.port, () => peer) };
    // A connection that failed is dropped by the request that finds out; none is left unhandled meanwhile.
    peer.ready.catch(() => undefined);
    this.peers.set(nodeId, peer);
    return peer;
  }

  private async connect(host: string, port: number, self: () => Peer): Promise<{ conn: WireConnection; versions: ReadonlyMap<number, { min: number; max: number }> }> {
    const conn = await WireConnection.open(host, port, this.connectTimeoutMs);
    self().conn = conn;
    const body: ApiVersionsRequest = { clientSoftwareName: 'gregor-broker', clientSoftwareVersion: this.opts.softwareVersion ?? '0', clusterId: null, nodeId: -1 };
    const answer = await conn.request<ApiVersionsResponse>(api('ApiVersions'), API_VERSIONS_VERSION, body);
    if (answer.errorCode !== ErrorCode.NONE) {
      conn.close();
      throw new Error(`ApiVersions answered error ${answer.errorCode}`);
    }
    return { conn, versions: new Map(answer.apiKeys.map((k) => [k.apiKey, { min: k.minVersion, max: k.maxVersion }])) };
  }

  private drop(nodeId: number, peer: Peer): void {
    if (this.peers.get(nodeId) === peer) this.peers.delete(nodeId);
    peer.conn?.close();
  }
}

/**
 * A bare Kafka protocol connection for the benchmarks: requests encoded
 * with the project's own codecs (wire/), any number in flight on one socket
 * (answers come back in order and are matched by correlation id), and no
 * client library in between, so that what is measured is the broker.
 *
 * `frame` pre-encodes a request once; `sendFrame` sends pre-encoded bytes
 * with a fresh correlation id written into them, which is how a load
 * generator sends the same Produce request many times without encoding it
 * again.
 *
 * Example:
 *   const c = await WireConnection.open('127.0.0.1', 9092);
 *   const md = await c.request<MetadataResponse>(api('Metadata'), 12, { topics: null, ... });
 *   c.close();
 */
import { connect, type Socket } from 'node:net';
import { codecFor } from '../wire/codec.js';
import { finishFrame, requestHeaderVersion, responseHeaderVersion, skipTaggedFields, startRequest } from '../wire/headers.js';
import { API_MESSAGES } from '../wire/messages/index.js';
import { Reader } from '../wire/reader.js';
import type { MessageDecl } from '../wire/schema.js';
import { Writer } from '../wire/writer.js';

/** A request and response declaration pair, as wire/messages/index.ts lists them. */
export interface ApiDecl {
  readonly apiKey: number;
  readonly request: MessageDecl;
  readonly response: MessageDecl;
}

/** The declarations of one API by its name. Example: api('Produce').apiKey === 0. */
export function api(name: string): ApiDecl {
  const found = API_MESSAGES.find((m) => m.name === name);
  if (!found) throw new Error(`no API named ${name}`);
  return found;
}

/** A request encoded once: its bytes (size prefix included) and where its correlation id sits. */
export interface Frame {
  readonly bytes: Buffer;
  readonly api: ApiDecl;
  readonly version: number;
}

/** Offset of the correlation id in a request frame: size int32, api key int16, version int16. */
const CORRELATION_AT = 8;

/** Encodes `body` as a request of `api` at `version` (correlation id 0, to be replaced when sent). */
export function frame<T>(api: ApiDecl, version: number, body: T, clientId = 'gregor-bench'): Frame {
  const w = new Writer(1024);
  const start = startRequest(w, { apiKey: api.apiKey, apiVersion: version, correlationId: 0, clientId }, requestHeaderVersion(api.apiKey, version, api.request));
  codecFor<T>(api.request, version).encode(w, body);
  finishFrame(w, start);
  return { bytes: w.finish(), api, version };
}

interface Pending {
  readonly correlationId: number;
  readonly resolve: (body: Buffer) => void;
  readonly reject: (err: Error) => void;
  readonly headerVersion: number;
}

export class WireConnection {
  private nextCorrelationId = 1;
  private readonly pending: Pending[] = [];
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private closedWith: Error | null = null;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('connection closed')));
  }

  /** Connects to host:port; rejects after `timeoutMs`. */
  static open(host: string, port: number, timeoutMs = 5000): Promise<WireConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new WireConnection(socket));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** Requests waiting for their answer. */
  get inFlight(): number {
    return this.pending.length;
  }

  /** Encodes and sends one request; resolves with the decoded answer. */
  async request<Res, Req = unknown>(api: ApiDecl, version: number, body: Req): Promise<Res> {
    const f = frame(api, version, body);
    const raw = await this.sendFrame(f);
    const r = new Reader(raw);
    const decoded = codecFor<Res>(api.response, version).decode(r);
    if (r.error) throw new Error(`undecodable answer to api ${api.apiKey} v${version}: ${r.error}`);
    return decoded;
  }

  /**
   * Sends pre-encoded `f` with the next correlation id written into its bytes
   * (the socket may still hold those bytes until the answer comes: send a
   * frame again only after its answer, or keep one copy per request in
   * flight) and
   * resolves with the answer's body, header removed. With `noResponse`
   * (Produce acks=0) it resolves once the bytes are handed to the socket.
   */
  sendFrame(f: Frame, noResponse = false): Promise<Buffer> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const correlationId = this.nextCorrelationId++;
    f.bytes.writeInt32BE(correlationId, CORRELATION_AT);
    if (noResponse) {
      return new Promise((resolve, reject) => this.socket.write(f.bytes, (err) => (err ? reject(err) : resolve(Buffer.alloc(0)))));
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ correlationId, resolve, reject, headerVersion: responseHeaderVersion(f.api.apiKey, f.version, f.api.response) });
      this.socket.write(f.bytes);
    });
  }

  close(): void {
    this.socket.destroy();
    this.fail(new Error('connection closed by the benchmark'));
  }

  private onData(chunk: Buffer): void {
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    if (this.bufferedBytes < 4) return;
    // Join the chunks only once the first frame is whole: a large answer arrives in many chunks.
    const head = this.buffered[0]!.length >= 4 ? this.buffered[0]! : Buffer.concat(this.buffered, this.bufferedBytes);
    if (this.bufferedBytes < 4 + head.readInt32BE(0)) return;
    let data = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered, this.bufferedBytes);
    let at = 0;
    while (data.length - at >= 4) {
      const size = data.readInt32BE(at);
      if (data.length - at - 4 < size) break;
      this.answer(data.subarray(at + 4, at + 4 + size));
      at += 4 + size;
    }
    data = data.subarray(at);
    this.buffered = data.length > 0 ? [data] : [];
    this.bufferedBytes = data.length;
  }

  private answer(frameBody: Buffer): void {
    const p = this.pending.shift();
    if (!p) return this.fail(new Error('an answer came with no request waiting'));
    const r = new Reader(frameBody);
    const correlationId = r.int32();
    if (correlationId !== p.correlationId) {
      p.reject(new Error(`answer for correlation id ${correlationId} where ${p.correlationId} was next`));
      return this.fail(new Error('answers out of order'));
    }
    if (p.headerVersion >= 1) skipTaggedFields(r);
    p.resolve(frameBody.subarray(r.pos));
  }

  private fail(err: Error): void {
    if (this.closedWith) return;
    this.closedWith = err;
    for (const p of this.pending.splice(0)) p.reject(err);
  }
}

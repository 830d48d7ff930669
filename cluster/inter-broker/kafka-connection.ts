/**
 * A bare Kafka protocol connection: requests encoded with the project's own
 * codecs (wire/), any number in flight on one socket (answers come back in
 * order and are matched by correlation id), and no client library in
 * between. A follower fetches from its leader with it, and the benchmarks
 * load a broker with it, so that what they measure is the broker.
 *
 * `frame` pre-encodes a request once; `sendFrame` sends pre-encoded bytes
 * with a fresh correlation id written into them, which is how a load
 * generator sends the same Produce request many times without encoding it
 * again. LoadConnection is the same socket with callbacks instead of
 * promises, for load generators that keep thousands of requests going.
 *
 * Example:
 *   const c = await WireConnection.open('127.0.0.1', 9092);
 *   const md = await c.request<MetadataResponse>(api('Metadata'), 12, { topics: null, ... });
 *   c.close();
 */
import { connect, type Socket } from 'node:net';
import { codecFor } from '../../wire/codec.js';
import { finishFrame, requestHeaderVersion, responseHeaderVersion, skipTaggedFields, startRequest } from '../../wire/headers.js';
import { API_MESSAGES } from '../../wire/messages/index.js';
import { Reader } from '../../wire/reader.js';
import type { MessageDecl } from '../../wire/schema.js';
import { Writer } from '../../wire/writer.js';

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
export function frame<T>(api: ApiDecl, version: number, body: T, clientId = 'gregor'): Frame {
  const w = new Writer(1024);
  const start = startRequest(w, { apiKey: api.apiKey, apiVersion: version, correlationId: 0, clientId }, requestHeaderVersion(api.apiKey, version, api.request));
  codecFor<T>(api.request, version).encode(w, body);
  finishFrame(w, start);
  return { bytes: w.finish(), api, version };
}

type Answer = (body: Buffer | null, err: Error | null) => void;

/**
 * A pipelined socket for load: sends frames whose correlation id is written
 * in place, matches answers in order, and reassembles large answers with one
 * copy (chunks are kept until the whole frame is in).
 */
export class LoadConnection {
  private nextCorrelationId = 1;
  private readonly pending: { id: number; done: Answer; flexibleHeader: boolean }[] = [];
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  private closedWith: Error | null = null;

  /** Requests waiting for their answer. */
  get inFlight(): number {
    return this.pending.length;
  }

  /** Whether the socket is gone (closed by either side, or failed): nothing more can be sent on it. */
  get closed(): boolean {
    return this.closedWith !== null;
  }

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (c: Buffer) => this.onData(c));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('connection closed')));
  }

  static open(host: string, port: number, timeoutMs = 5000): Promise<LoadConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new LoadConnection(socket));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /**
   * Writes the next correlation id into `bytes` and sends them. `done` gets the
   * answer's body (header removed) or, with `noResponse`, null once the socket
   * has taken the bytes. The caller must not modify `bytes` before `done`.
   */
  send(bytes: Buffer, flexibleHeader: boolean, noResponse: boolean, done: Answer): void {
    if (this.closedWith) return done(null, this.closedWith);
    const id = this.nextCorrelationId++;
    bytes.writeInt32BE(id, CORRELATION_AT);
    if (noResponse) {
      this.socket.write(bytes, (err) => done(null, err ?? null));
      return;
    }
    this.pending.push({ id, done, flexibleHeader });
    this.socket.write(bytes);
  }

  close(): void {
    this.socket.destroy();
    this.fail(new Error('connection closed by its owner'));
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
    for (let guard = 0; guard < 1_000_000 && this.chunkBytes >= 4; guard++) {
      const first = this.chunks[0]!;
      const size = first.length >= 4 ? first.readInt32BE(0) : Buffer.concat(this.chunks, 4).readInt32BE(0);
      if (this.chunkBytes < 4 + size) return;
      let whole: Buffer;
      if (first.length >= 4 + size) {
        whole = first;
      } else {
        whole = Buffer.concat(this.chunks, this.chunkBytes);
        this.chunks = [whole];
      }
      this.answer(whole.subarray(4, 4 + size));
      const rest = whole.subarray(4 + size);
      if (rest.length > 0) this.chunks[0] = rest;
      else this.chunks.shift();
      this.chunkBytes -= 4 + size;
    }
  }

  private answer(body: Buffer): void {
    const p = this.pending.shift();
    if (!p) return this.fail(new Error('an answer came with no request waiting'));
    const id = body.readInt32BE(0);
    if (id !== p.id) {
      p.done(null, new Error(`answer for correlation id ${id} where ${p.id} was next`));
      return this.fail(new Error('answers out of order'));
    }
    let at = 4;
    if (p.flexibleHeader) {
      const r = new Reader(body, 4);
      skipTaggedFields(r);
      at = r.pos;
    }
    p.done(body.subarray(at), null);
  }

  private fail(err: Error): void {
    if (this.closedWith) return;
    this.closedWith = err;
    for (const p of this.pending.splice(0)) p.done(null, err);
  }
}

export class WireConnection {
  private constructor(private readonly conn: LoadConnection) {}

  /** Connects to host:port; rejects after `timeoutMs`. */
  static async open(host: string, port: number, timeoutMs = 5000): Promise<WireConnection> {
    return new WireConnection(await LoadConnection.open(host, port, timeoutMs));
  }

  /** Requests waiting for their answer. */
  get inFlight(): number {
    return this.conn.inFlight;
  }

  get closed(): boolean {
    return this.conn.closed;
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
   * flight) and resolves with the answer's body, header removed. With
   * `noResponse` (Produce acks=0) it resolves once the socket took the bytes.
   */
  sendFrame(f: Frame, noResponse = false): Promise<Buffer> {
    const flexibleHeader = responseHeaderVersion(f.api.apiKey, f.version, f.api.response) >= 1;
    return new Promise((resolve, reject) =>
      this.conn.send(f.bytes, flexibleHeader, noResponse, (body, err) => (err ? reject(err) : resolve(body ?? Buffer.alloc(0)))),
    );
  }

  close(): void {
    this.conn.close();
  }
}

/**
 * One client connection. Frames are parsed in arrival order and handled one at a
 * time, so requests on a connection take effect in the order they were sent and
 * responses go back in that order (as Kafka does by muting a channel while it
 * has a request in flight). Other connections are never blocked by this one.
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { Reader } from '../wire/reader.js';
import { Writer } from '../wire/writer.js';
import { codecFor } from '../wire/codec.js';
import { API_VERSIONS_KEY, finishFrame, readHeaderRest, readHeaderStart, requestHeaderVersion, responseHeaderVersion, startResponse } from '../wire/headers.js';
import { ErrorCode } from '../wire/errors.js';
import { NO_RESPONSE, type ApiHandler, type BrokerServices, type RequestContext, type SaslExchange } from '../api/handler.js';
import { saslExchange, type SaslListener } from './sasl.js';
import { apiVersionsBody } from '../api/api-versions.js';

const SASL_HANDSHAKE_KEY = 17;
const SASL_AUTHENTICATE_KEY = 36;
/** Kafka's sasl.server.max.receive.size default: the largest frame a connection may send before it has authenticated. */
const SASL_MAX_RECEIVE_BYTES = 524288;

/**
 * Array elements one request may decode into. Far above what real clients send
 * (a Fetch of 10,000 partitions is 10,000), yet it keeps a hostile frame within
 * socket.request.max.bytes from decoding into millions of objects.
 */
export const MAX_ELEMENTS_PER_REQUEST = 1_000_000;

export interface ConnectionLimits {
  readonly maxRequestBytes: number;
  readonly queuedMaxRequests: number;
  readonly idleMs: number;
}

export interface Dispatch {
  readonly handlers: ReadonlyMap<number, ApiHandler>;
  readonly services: BrokerServices;
}

/** The answer's frame in pieces (see Writer.finishChunks), nothing to send, or a reason to close. */
type Outcome = Answer | null | { close: string };

interface Answer {
  readonly chunks: Buffer[];
  /** Runs once the socket has taken the chunks (Writer.whenSent). */
  readonly sent: (() => void) | null;
}

export class Connection {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private readonly queue: Buffer[] = [];
  private busy = false;
  private closed = false;
  private paused = false;
  /** Set by finishInFlight: reading stays paused whatever the queue does. */
  private draining = false;
  private idleWaiters: (() => void)[] = [];
  /** Answers are held in the socket while several are written, then leave in one writev. */
  private corked = false;
  readonly remote: string;

  constructor(
    private readonly socket: Socket,
    private readonly listener: string,
    private readonly limits: ConnectionLimits,
    private readonly dispatch: Dispatch,
    private readonly log: Logger,
    sasl: SaslListener | null = null,
  ) {
    this.sasl = sasl === null ? null : saslExchange(sasl, (principal) => {
      this.principal = principal;
    });
    this.remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    socket.setNoDelay(true);
    socket.setTimeout(limits.idleMs, () => this.close('idle for connections.max.idle.ms'));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.log.debug({ remote: this.remote, err: err.message }, 'connection error'));
    socket.on('close', () => {
      this.closed = true;
      this.queue.length = 0;
      this.notifyIdle();
      for (const cb of this.closeCallbacks.splice(0)) {
        try {
          cb();
        } catch (err) {
          this.log.warn({ remote: this.remote, err: (err as Error).message }, 'a connection-close callback failed');
        }
      }
    });
  }

  private readonly closeCallbacks: (() => void)[] = [];
  /** On a SASL listener, the exchange until the client has authenticated; null once it has, or on other listeners. */
  private sasl: SaslExchange | null;
  /** Who the client authenticated as ('User:NAME'); ANONYMOUS without authentication, as in Kafka. */
  principal = 'User:ANONYMOUS';
  /** After a SaslHandshake v0, the next frame is the client's raw SASL token, not a request (Kafka 0.10.0's flow). */
  private saslRawTokenNext = false;

  /** Runs `cb` once when the connection closes (at once when it has). */
  onClose(cb: () => void): void {
    if (this.closed) cb();
    else if (!this.closeCallbacks.includes(cb)) this.closeCallbacks.push(cb);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private onData(chunk: Buffer): void {
    // While draining for shutdown, bytes that still arrive are requests never read: they are not in flight.
    if (this.closed || this.draining) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 4) {
      const size = this.peekSize();
      if (size < 0 || size > this.limits.maxRequestBytes) {
        this.close(`request size ${size} is outside 0..socket.request.max.bytes (${this.limits.maxRequestBytes})`, 'warn');
        return;
      }
      // Before authentication, frames are bounded by sasl.server.max.receive.size's default, as in Kafka.
      if (this.sasl !== null && size > SASL_MAX_RECEIVE_BYTES) {
        this.close(`request size ${size} before SASL authentication is above ${SASL_MAX_RECEIVE_BYTES} bytes`, 'warn');
        return;
      }
      if (this.buffered < 4 + size) break;
      this.queue.push(this.take(4 + size).subarray(4));
    }
    if (this.queue.length >= this.limits.queuedMaxRequests && !this.paused) {
      this.paused = true;
      this.socket.pause();
    }
    void this.pump();
  }

  private peekSize(): number {
    const first = this.chunks[0]!;
    if (first.length >= 4) return first.readInt32BE(0);
    return Buffer.concat(this.chunks, 4).readInt32BE(0);
  }

  /** Removes exactly n bytes from the front of the buffered chunks. */
  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let filled = 0;
      while (filled < n) {
        const c = this.chunks[0]!;
        const want = Math.min(c.length, n - filled);
        c.copy(out, filled, 0, want);
        filled += want;
        if (want === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(want);
      }
    }
    this.buffered -= n;
    return out;
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const frame = this.queue.shift()!;
        const outcome = await this.handleFrame(frame);
        if (this.closed) break;
        if (outcome !== null && 'close' in outcome) {
          this.close(outcome.close, 'warn');
          break;
        }
        if (outcome !== null) {
          this.cork();
          const { chunks, sent } = outcome;
          let room = true;
          for (let i = 0; i < chunks.length; i++) {
            room = i === chunks.length - 1 && sent !== null ? this.socket.write(chunks[i]!, sent) : this.socket.write(chunks[i]!);
          }
          if (!room) {
            this.uncork();
            await this.waitDrain();
          }
        }
        if (this.paused && !this.draining && this.queue.length < this.limits.queuedMaxRequests / 2) {
          this.paused = false;
          this.socket.resume();
        }
      }
    } finally {
      this.uncork();
      this.busy = false;
      this.notifyIdle();
    }
  }

  /**
   * Holds answers in the socket so that those of the requests queued together
   * go out in one system call: on loopback a write costs about as much as the
   * receiver's whole TCP processing, whatever its size. The answers leave when
   * the queue is empty, when the socket's buffer is full, or at the latest on
   * the next turn of the event loop (a handler that waits keeps nothing back).
   */
  private cork(): void {
    if (this.corked) return;
    this.corked = true;
    this.socket.cork();
    setImmediate(this.uncork);
  }

  private readonly uncork = (): void => {
    if (!this.corked) return;
    this.corked = false;
    this.socket.uncork();
  };

  private waitDrain(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.once('drain', done);
      this.socket.once('close', done);
    });
  }

  /** Decodes one frame, runs its handler and encodes the answer; never throws. */
  async handleFrame(frame: Buffer): Promise<Outcome> {
    if (this.saslRawTokenNext && this.sasl !== null) return this.rawSaslToken(frame);
    const r = new Reader(frame);
    r.elementBudget = MAX_ELEMENTS_PER_REQUEST;
    const { apiKey, apiVersion, correlationId } = readHeaderStart(r);
    if (r.error) return { close: `malformed request header: ${r.error}` };
    const handler = this.dispatch.handlers.get(apiKey);
    if (!handler) return { close: `unsupported api key ${apiKey}` };
    if (apiVersion < handler.minVersion || apiVersion > handler.maxVersion) {
      if (apiKey === API_VERSIONS_KEY) return this.unsupportedApiVersions(correlationId);
      return { close: `${handler.name} v${apiVersion} is not supported (serving v${handler.minVersion}-${handler.maxVersion})` };
    }
    // Before authentication a SASL listener serves ApiVersions and the SASL requests only, as Kafka does.
    if (this.sasl !== null && apiKey !== API_VERSIONS_KEY && apiKey !== SASL_HANDSHAKE_KEY && apiKey !== SASL_AUTHENTICATE_KEY) {
      return { close: `${handler.name} request before SASL authentication` };
    }
    const clientId = readHeaderRest(r, requestHeaderVersion(apiKey, apiVersion, handler.request));
    if (r.error) return { close: `malformed ${handler.name} v${apiVersion} header: ${r.error}` };
    const codec = codecFor(handler.request, apiVersion);
    const req = codec.decode(r);
    if (r.error) return { close: `malformed ${handler.name} v${apiVersion} request: ${r.error}` };
    // Kafka ignores bytes after the last field, and librdkafka 2.x relies on it: its
    // Metadata v9+ "all topics" request ends with three unused bytes.
    if (r.remaining !== 0) this.log.debug({ api: handler.name, version: apiVersion, trailing: r.remaining }, 'ignoring trailing request bytes');

    const ctx: RequestContext = {
      apiVersion,
      correlationId,
      clientId,
      listener: this.listener,
      clientHost: this.socket.remoteAddress ?? '',
      services: this.dispatch.services,
      onConnectionClose: (cb: () => void) => this.onClose(cb),
      ...(this.sasl !== null ? { sasl: this.sasl } : {}),
    };
    let res: unknown;
    try {
      res = await handler.handle(req, ctx);
    } catch (err) {
      this.log.error({ err, api: handler.name, version: apiVersion, clientId }, 'request failed; answering UNKNOWN_SERVER_ERROR');
      try {
        res = handler.errorResponse(req, ErrorCode.UNKNOWN_SERVER_ERROR, ctx);
      } catch (inner) {
        return { close: `${handler.name} failed: ${(inner as Error).message}` };
      }
    }
    if (res === NO_RESPONSE) return null;
    if (apiKey === SASL_HANDSHAKE_KEY && apiVersion === 0 && this.sasl !== null && (res as { errorCode: number }).errorCode === ErrorCode.NONE) this.saslRawTokenNext = true;
    // The end of a SASL exchange: authenticated, or answered and then closed.
    let thenClose: string | null = null;
    if (apiKey === SASL_AUTHENTICATE_KEY && this.sasl !== null) {
      const { errorCode, errorMessage } = res as { errorCode: number; errorMessage: string | null };
      if (errorCode === ErrorCode.NONE) {
        this.sasl = null;
        this.log.info({ remote: this.remote, listener: this.listener, principal: this.principal }, 'SASL authentication succeeded');
      } else {
        thenClose = `SASL authentication failed: ${errorMessage ?? errorCode}`;
      }
    }
    try {
      const w = new Writer(1024);
      const start = startResponse(w, correlationId, responseHeaderVersion(apiKey, apiVersion, handler.response));
      codecFor(handler.response, apiVersion).encode(w, res);
      finishFrame(w, start);
      const sent = w.whenSent();
      if (thenClose !== null) {
        const reason = thenClose;
        return {
          chunks: w.finishChunks(),
          sent: () => {
            sent?.();
            this.close(reason, 'info');
          },
        };
      }
      return { chunks: w.finishChunks(), sent };
    } catch (err) {
      this.log.error({ err, api: handler.name, version: apiVersion }, 'could not encode response');
      return { close: `${handler.name} v${apiVersion} response could not be encoded` };
    }
  }

  /**
   * A raw SASL token after SaslHandshake v0: authenticated, the answer is the server's (empty)
   * token, size-prefixed; refused, the connection closes without an answer, as in Kafka.
   */
  private rawSaslToken(token: Buffer): Outcome {
    this.saslRawTokenNext = false;
    const result = this.sasl!.authenticate(token);
    if (!result.done) return { close: `SASL authentication failed: ${result.message}` };
    this.sasl = null;
    this.log.info({ remote: this.remote, listener: this.listener, principal: this.principal }, 'SASL authentication succeeded');
    return { chunks: [Buffer.alloc(4)], sent: null };
  }

  /** KIP-511: a version we do not know still gets the table, in the v0 layout. */
  private unsupportedApiVersions(correlationId: number): Answer {
    const handler = this.dispatch.handlers.get(API_VERSIONS_KEY)!;
    const w = new Writer(512);
    const start = startResponse(w, correlationId, 0);
    codecFor(handler.response, 0).encode(w, apiVersionsBody(ErrorCode.UNSUPPORTED_VERSION, { services: this.dispatch.services }));
    finishFrame(w, start);
    return { chunks: w.finishChunks(), sent: null };
  }

  private notifyIdle(): void {
    if (this.busy && !this.closed) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Stops reading and resolves when the requests already read are answered. */
  finishInFlight(): Promise<void> {
    this.draining = true;
    if (!this.paused) this.socket.pause();
    this.paused = true;
    if (this.closed || (!this.busy && this.queue.length === 0)) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  close(reason: string, level: 'debug' | 'info' | 'warn' = 'debug'): void {
    if (this.closed) return;
    this.closed = true;
    this.log[level]({ remote: this.remote, reason }, 'closing connection');
    this.queue.length = 0;
    this.chunks = [];
    this.socket.end();
    this.socket.destroySoon?.();
    setTimeout(() => this.socket.destroy(), 1000).unref();
    this.notifyIdle();
  }
}

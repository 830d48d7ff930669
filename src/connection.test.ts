import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { MESSAGES } from '../wire/messages/index.js';
import { Writer } from '../wire/writer.js';
import { Reader } from '../wire/reader.js';
import { codecFor } from '../wire/codec.js';
import { finishFrame, startRequest } from '../wire/headers.js';
import { NO_RESPONSE, defineHandler, type ApiHandler } from '../api/handler.js';
import { testServices } from '../api/test-services.js';
import { Connection } from './connection.js';
import { fetchBuffers } from '../wire/buffer-pool.js';

/**
 * A stand-in API on key 3 (Metadata's schema): the requested topic name says how
 * long to take ("sleep:50") or to send nothing back ("silent").
 */
const scripted: ApiHandler = defineHandler<any, any>({
  apiKey: 3,
  name: 'Scripted',
  request: MESSAGES.MetadataRequest!,
  response: MESSAGES.MetadataResponse!,
  minVersion: 0,
  maxVersion: 12,
  async handle(req) {
    const cmd: string = req.topics[0].name;
    if (cmd === 'silent') return NO_RESPONSE;
    if (cmd.startsWith('sleep:')) await new Promise((r) => setTimeout(r, Number(cmd.slice(6))));
    if (cmd === 'throw') throw new Error('boom');
    return { brokers: [], topics: [{ name: cmd, errorCode: 0, partitions: [] }], clusterId: null, controllerId: 1 };
  },
  errorResponse: (req, errorCode) => ({ brokers: [], topics: [{ name: req.topics[0].name, errorCode, partitions: [] }] }),
});

let server: Server | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function serve(handlers: ApiHandler[], queuedMaxRequests = 100): Promise<number> {
  const services = testServices();
  server = createServer((socket) => {
    new Connection(socket, 'PLAINTEXT', { maxRequestBytes: 1 << 20, queuedMaxRequests, idleMs: 60_000 }, { handlers: new Map(handlers.map((h) => [h.apiKey, h])), services }, pino({ level: 'silent' }));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

function frame(correlationId: number, topic: string): Buffer {
  const w = new Writer();
  const start = startRequest(w, { apiKey: 3, apiVersion: 1, correlationId, clientId: 't' }, 1);
  codecFor(MESSAGES.MetadataRequest!, 1).encode(w, { topics: [{ name: topic }] });
  finishFrame(w, start);
  return Buffer.from(w.finish());
}

/** Collects response frames as [correlationId, first topic name, its error code]. */
function reader(socket: Socket): { frames: [number, string, number][]; waitFor(n: number, ms?: number): Promise<void> } {
  let buf = Buffer.alloc(0);
  const frames: [number, string, number][] = [];
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
      const body = buf.subarray(4, 4 + buf.readInt32BE(0));
      buf = buf.subarray(4 + body.length);
      const r = new Reader(body);
      const corr = r.int32();
      const res = codecFor<any>(MESSAGES.MetadataResponse!, 1).decode(r);
      frames.push([corr, res.topics[0].name, res.topics[0].errorCode]);
    }
  });
  return {
    frames,
    async waitFor(n, ms = 3000) {
      const until = Date.now() + ms;
      while (frames.length < n && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    },
  };
}

async function connect(port: number): Promise<Socket> {
  const s = createConnection({ host: '127.0.0.1', port });
  sockets.push(s);
  await new Promise<void>((r) => s.once('connect', () => r()));
  return s;
}

describe('Connection', () => {
  it('answers pipelined requests in request order even when an earlier one is slower', async () => {
    const port = await serve([scripted]);
    const s = await connect(port);
    const got = reader(s);
    s.write(Buffer.concat([frame(1, 'sleep:80'), frame(2, 'fast'), frame(3, 'sleep:10'), frame(4, 'fast')]));
    await got.waitFor(4);
    expect(got.frames.map((f) => f[0])).toEqual([1, 2, 3, 4]);
  });

  it('sends an answer at once even while the next request on the connection is still waiting', async () => {
    const port = await serve([scripted]);
    const s = await connect(port);
    const got = reader(s);
    const arrivals: number[] = [];
    const t0 = Date.now();
    s.on('data', () => arrivals.push(Date.now() - t0));
    // Answers of pipelined requests leave together, but not held behind a handler that waits.
    s.write(Buffer.concat([frame(1, 'fast'), frame(2, 'fast'), frame(3, 'sleep:1500')]));
    await got.waitFor(2, 1000);
    expect(got.frames.map((f) => f[0])).toEqual([1, 2]);
    expect(arrivals[0]).toBeLessThan(1000);
    await got.waitFor(3);
    expect(got.frames.map((f) => f[0])).toEqual([1, 2, 3]);
  });

  it('sends nothing for a request whose handler asks for no response, and goes on', async () => {
    const port = await serve([scripted]);
    const s = await connect(port);
    const got = reader(s);
    s.write(Buffer.concat([frame(1, 'a'), frame(2, 'silent'), frame(3, 'b')]));
    await got.waitFor(2);
    await new Promise((r) => setTimeout(r, 50));
    expect(got.frames.map((f) => f[0])).toEqual([1, 3]);
  });

  it('resumes reading after a burst of requests that get no response', async () => {
    const port = await serve([scripted], 2);
    const s = await connect(port);
    const got = reader(s);
    const silent = Array.from({ length: 50 }, (_, i) => frame(i + 1, 'silent'));
    s.write(Buffer.concat(silent));
    await new Promise((r) => setTimeout(r, 50));
    s.write(frame(99, 'last'));
    await got.waitFor(1);
    expect(got.frames).toEqual([[99, 'last', 0]]);
  });

  it('does not make other connections wait behind a slow request', async () => {
    const port = await serve([scripted]);
    const slow = await connect(port);
    const fast = await connect(port);
    const slowGot = reader(slow);
    const fastGot = reader(fast);
    slow.write(frame(1, 'sleep:500'));
    await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    fast.write(frame(7, 'quick'));
    await fastGot.waitFor(1);
    expect(fastGot.frames).toEqual([[7, 'quick', 0]]);
    expect(Date.now() - t0).toBeLessThan(400);
    expect(slowGot.frames).toEqual([]);
  });

  it('answers UNKNOWN_SERVER_ERROR when a handler fails, and keeps the connection', async () => {
    const port = await serve([scripted]);
    const s = await connect(port);
    const got = reader(s);
    s.write(Buffer.concat([frame(1, 'throw'), frame(2, 'after')]));
    await got.waitFor(2);
    expect(got.frames).toEqual([
      [1, 'throw', -1],
      [2, 'after', 0],
    ]);
  });

  it('reassembles frames split across arbitrary TCP chunks', async () => {
    const port = await serve([scripted]);
    const s = await connect(port);
    const got = reader(s);
    const bytes = Buffer.concat([frame(1, 'x'), frame(2, 'y'), frame(3, 'z')]);
    for (let i = 0; i < bytes.length; i += 3) {
      s.write(bytes.subarray(i, i + 3));
      await new Promise((r) => setImmediate(r));
    }
    await got.waitFor(3);
    expect(got.frames.map((f) => f[1])).toEqual(['x', 'y', 'z']);
  });

  it('closes the connection on a frame larger than the limit without waiting for its bytes', async () => {
    const port = await serve([scripted]);
    const s = await connect(port);
    const closed = new Promise<number>((r) => s.once('close', () => r(Date.now())));
    const head = Buffer.alloc(4);
    head.writeInt32BE((1 << 20) + 1);
    const t0 = Date.now();
    s.write(head);
    expect((await closed) - t0).toBeLessThan(1000);
  });
});

describe('Connection with trailing bytes', () => {
  it('ignores bytes after the last field, as Kafka does (librdkafka 2.x sends three after Metadata v12)', async () => {
    const port = await serve([scripted]);
    const s = await connect(port);
    const got = reader(s);
    const f = frame(1, 'x');
    const padded = Buffer.concat([f, Buffer.from([0, 0, 0])]);
    padded.writeInt32BE(f.length - 4 + 3, 0);
    s.write(Buffer.concat([padded, frame(2, 'y')]));
    await got.waitFor(2);
    expect(got.frames.map((fr) => fr[1])).toEqual(['x', 'y']);
  });
});

describe('Connection draining for shutdown', () => {
  it('answers what it has read, then neither reads nor runs anything new', async () => {
    const services = testServices();
    const handled: string[] = [];
    const recording: ApiHandler = { ...scripted, handle: async (req: any, ctx) => { handled.push(req.topics[0].name); return scripted.handle(req, ctx); } };
    let conn: Connection | undefined;
    server = createServer((socket) => {
      conn = new Connection(socket, 'PLAINTEXT', { maxRequestBytes: 1 << 20, queuedMaxRequests: 100, idleMs: 60_000 }, { handlers: new Map([[3, recording]]), services }, pino({ level: 'silent' }));
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const s = await connect((server.address() as { port: number }).port);
    const got = reader(s);
    s.write(frame(1, 'sleep:150'));
    await new Promise((r) => setTimeout(r, 30));
    const drained = conn!.finishInFlight();
    s.write(frame(2, 'late'));
    await drained;
    await new Promise((r) => setTimeout(r, 200));
    expect(got.frames.map((f) => f[0])).toEqual([1]);
    expect(handled).toEqual(['sleep:150']);
    conn!.close('test over');
  });
});

describe('Connection sending pooled fetch bytes', () => {
  it('gives the pooled bytes of an answer back only once the socket has taken them all, and they arrive intact', async () => {
    // A Fetch-shaped answer whose records are pooled pieces, as the Fetch handler makes
    // them: 16 MiB in all, more than loopback socket buffers take from a client not reading.
    const size = 1 << 20;
    const partitions = 16;
    const pieces: Buffer[] = [];
    const fetchLike: ApiHandler = defineHandler<any, any>({
      apiKey: 1,
      name: 'FetchLike',
      request: MESSAGES.FetchRequest!,
      response: MESSAGES.FetchResponse!,
      minVersion: 4,
      maxVersion: 4,
      handle() {
        const parts = Array.from({ length: partitions }, (_, p) => {
          const piece = fetchBuffers.take(size);
          for (let i = 0; i < size; i++) piece[i] = (i + p) % 251;
          pieces.push(piece);
          return { partitionIndex: p, highWatermark: 1n, lastStableOffset: 1n, abortedTransactions: null, records: piece };
        });
        return { throttleTimeMs: 0, responses: [{ topic: 't', partitions: parts }] };
      },
      errorResponse: () => ({ throttleTimeMs: 0, responses: [] }),
    });
    const port = await serve([fetchLike]);
    const s = await connect(port);
    s.pause(); // a client that does not read yet: the answer cannot all leave
    const w = new Writer();
    const start = startRequest(w, { apiKey: 1, apiVersion: 4, correlationId: 9, clientId: 't' }, 1);
    codecFor(MESSAGES.FetchRequest!, 4).encode(w, { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 30, isolationLevel: 0, topics: [] });
    finishFrame(w, start);
    s.write(w.finish());
    await new Promise((r) => setTimeout(r, 300));
    expect(pieces).toHaveLength(partitions);
    // Still queued in the socket: none is back in the pool, so nothing else can be read into them.
    for (const piece of pieces) expect(fetchBuffers.releaserOf(piece)).not.toBeNull();
    const chunks: Buffer[] = [];
    let total = 0;
    let expected = Infinity;
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      total += d.length;
      if (expected === Infinity && total >= 4) expected = 4 + Buffer.concat(chunks).readInt32BE(0);
    });
    s.resume();
    const until = Date.now() + 10_000;
    while (Date.now() < until && total < expected) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    for (const piece of pieces) expect(fetchBuffers.releaserOf(piece)).toBeNull();
    const frame = Buffer.concat(chunks);
    const res = codecFor<any>(MESSAGES.FetchResponse!, 4).decode(new Reader(frame.subarray(8))); // after size and correlation id
    expect(res.responses[0].partitions).toHaveLength(partitions);
    res.responses[0].partitions.forEach((p: { records: Buffer }, n: number) => {
      expect(p.records.length).toBe(size);
      expect(p.records.every((b, i) => b === (i + n) % 251)).toBe(true);
    });
  });
});

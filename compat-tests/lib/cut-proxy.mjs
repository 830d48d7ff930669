// A loopback TCP proxy that forwards a Kafka connection unchanged and, on a timer, cuts
// the connections of a client that is producing: the `idempotent-cut` scenario's tool.
//
// Clients connect to the broker address it advertises, not to their bootstrap address, so
// a proxy in front of an ordinary listener would be bypassed after the first Metadata. The
// matrix therefore starts each broker with a second listener, PROXIED, whose advertised
// address is a port where nothing listens until a scenario starts this proxy there
// (`proxiedListener()` below). Every connection a client opens through that port comes
// back through the proxy. On a cluster every broker has its own PROXIED listener, and the
// proxy listens on each advertised address (one route per broker), so that a client reaches
// every broker through it.
//
// A cut happens only while a Produce request is in flight, so that the client really has
// to resend something it cannot know the fate of. Every CUT_EVERY_MS the proxy arms; the
// next Produce request it forwards is then cut in one of two ways, taking turns:
//   - "response lost": the request reaches the broker, the broker's answer is dropped and
//     the client's connection is reset (the batch is in the log, the client never hears);
//   - "request cut": the client's connection is reset right after the request was handed
//     to the broker's socket (the broker may or may not have read it).
// Every other connection open at that moment is reset too.
//
//   import { startCutProxy } from '../lib/cut-proxy.mjs';
//   const proxy = await startCutProxy(proxiedListener());   // { listen, target }
//   ... produce through proxy.bootstrap, proxy.stopCutting(), consume ...
//   console.log(proxy.describe()); await proxy.stop();
//
// As a program (for the Python clients), it prints one JSON line when it listens and one
// per cut, stops cutting on "stop-cutting" read from stdin, and prints its totals and
// exits when stdin closes:
//   node cut-proxy.mjs [--every MS]    (the addresses come from the environment, as below)

import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.mjs';

export const CUT_EVERY_MS = 300;
const PRODUCE = 0;
// A frame size above this is garbage; the proxy stops parsing (still forwarding) that stream.
const MAX_FRAME = 256 * 1024 * 1024;

/**
 * Two free loopback ports for a broker's PROXIED listener: listenerPort, where the listener
 * is bound, and proxyPort, the address it advertises (free until a scenario's proxy binds it).
 *
 *   const proxied = await reserveProxiedListener();  // { listenerPort: 40111, proxyPort: 40112 }
 */
export async function reserveProxiedListener() {
  const listenerPort = await freePort('127.0.0.1');
  let proxyPort = await freePort('127.0.0.1');
  while (proxyPort === listenerPort) proxyPort = await freePort('127.0.0.1');
  return { listenerPort, proxyPort };
}

/**
 * `count` PROXIED listeners, one per broker of a cluster, with no port used twice.
 *
 *   await reserveProxiedListeners(3)  // [{ listenerPort, proxyPort }, ...] (6 distinct ports)
 */
export async function reserveProxiedListeners(count, avoid = []) {
  const taken = new Set(avoid);
  const ports = [];
  while (ports.length < count * 2) {
    const port = await freePort('127.0.0.1');
    if (taken.has(port)) continue;
    taken.add(port);
    ports.push(port);
  }
  return Array.from({ length: count }, (_, i) => ({ listenerPort: ports[2 * i], proxyPort: ports[2 * i + 1] }));
}

/**
 * `bin/gregor start` flags adding the PROXIED listener beside the PLAINTEXT one, on port 0
 * unless plaintextPort fixes it.
 */
export function gregorProxiedArgs({ listenerPort, proxyPort }, plaintextPort = 0) {
  return [
    '--override',
    `listeners=PLAINTEXT://127.0.0.1:${plaintextPort},PROXIED://127.0.0.1:${listenerPort}`,
    '--override',
    `advertised.listeners=PROXIED://127.0.0.1:${proxyPort}`,
    '--override',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT',
  ];
}

/**
 * The environment a scenario reads with proxiedListener(), for one broker's PROXIED listener
 * or a cluster's (an array, in broker order: comma-separated lists of the same length).
 */
export function proxiedEnv(proxied) {
  const list = Array.isArray(proxied) ? proxied : [proxied];
  return {
    COMPAT_PROXY_LISTEN: list.map((p) => `127.0.0.1:${p.proxyPort}`).join(','),
    COMPAT_PROXY_TARGET: list.map((p) => `127.0.0.1:${p.listenerPort}`).join(','),
  };
}

/**
 * The proxied listeners the matrix started the broker or cluster with, from the environment:
 * COMPAT_PROXY_LISTEN (host:port each broker advertises on its PROXIED listener, where the
 * scenario's proxy must listen) and COMPAT_PROXY_TARGET (host:port each PROXIED listener is
 * bound to, where the proxy forwards), comma-separated in the same broker order. listen and
 * target are the first broker's, the address to bootstrap from. Throws when they are missing.
 *
 *   proxiedListener()  // { listen: { host: '127.0.0.1', port: 40123 }, target: { ... },
 *                      //   routes: [{ listen, target }, ...] }
 */
export function proxiedListener(env = process.env) {
  const listens = String(env.COMPAT_PROXY_LISTEN ?? '').split(',').map(parseHostPort);
  const targets = String(env.COMPAT_PROXY_TARGET ?? '').split(',').map(parseHostPort);
  if (listens.length !== targets.length || [...listens, ...targets].some((a) => !a)) {
    throw new Error(
      'COMPAT_PROXY_LISTEN and COMPAT_PROXY_TARGET are not set (or not lists of host:port of the same ' +
        'length): this scenario needs a broker started with a PROXIED listener, as compat-tests/matrix.mjs starts them',
    );
  }
  const routes = listens.map((listen, i) => ({ listen, target: targets[i] }));
  return { listen: routes[0].listen, target: routes[0].target, routes };
}

function parseHostPort(text) {
  const m = /^(.+):(\d+)$/.exec(text ?? '');
  if (!m) return null;
  const port = Number(m[2]);
  return port > 0 && port < 65536 ? { host: m[1], port } : null;
}

/**
 * Reads size-prefixed frames from one direction of a connection and reports, for each,
 * its first 8 bytes (enough for a request's api key and correlation id, or a response's
 * correlation id). Bytes are never changed or held back here.
 */
class FrameWatcher {
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.need = 4; // bytes still wanted for the current header or body
    this.header = Buffer.alloc(0);
    this.inBody = false;
    this.bodyLeft = 0;
    this.broken = false;
  }
  push(chunk) {
    let at = 0;
    while (!this.broken && at < chunk.length) {
      if (!this.inBody) {
        const take = Math.min(4 - this.header.length, chunk.length - at);
        this.header = Buffer.concat([this.header, chunk.subarray(at, at + take)]);
        at += take;
        if (this.header.length < 4) return;
        const size = this.header.readInt32BE(0);
        this.header = Buffer.alloc(0);
        if (size < 4 || size > MAX_FRAME) {
          this.broken = true;
          return;
        }
        this.inBody = true;
        this.bodyLeft = size;
        this.start = Buffer.alloc(0);
      }
      const take = Math.min(this.bodyLeft, chunk.length - at);
      if (this.start.length < 8) this.start = Buffer.concat([this.start, chunk.subarray(at, at + Math.min(take, 8 - this.start.length))]);
      this.bodyLeft -= take;
      at += take;
      if (this.bodyLeft === 0) {
        this.inBody = false;
        this.onFrame(this.start);
      }
    }
  }
}

/**
 * Starts the proxy on listen ({ host, port }), forwarding to target, or on every route's
 * listen address, forwarding to that route's target (a cluster: see proxiedListener()).
 * bootstrap is the first route's. Cutting starts at once, over all routes together, and
 * stops with stopCutting(); stop() closes everything.
 *
 * @returns {Promise<{ bootstrap: string, stats: object, stopCutting(): void,
 *   describe(): string, stop(): Promise<void> }>}
 */
export async function startCutProxy({ listen, target, routes, everyMs = CUT_EVERY_MS, onCut = () => {} }) {
  const paths = routes?.length ? routes : [{ listen, target }];
  const stats = {
    connections: 0,
    produceRequests: 0,
    // cuts made while a Produce was in flight, by kind, and connections reset by them
    responseLost: 0,
    requestCut: 0,
    connectionsReset: 0,
    upstreamErrors: 0,
  };
  const live = new Set();
  let armed = false;
  let cutting = true;
  let nextKind = 'response lost';

  const resetPair = (pair) => {
    if (pair.closed) return;
    pair.closed = true;
    live.delete(pair);
    pair.client.resetAndDestroy();
    pair.upstream.destroy();
  };

  // Cuts the connection carrying the Produce and every other live one.
  const cut = (pair, kind) => {
    if (kind === 'response lost') stats.responseLost++;
    else stats.requestCut++;
    const others = [...live].filter((p) => p !== pair);
    resetPair(pair);
    for (const p of others) resetPair(p);
    stats.connectionsReset += 1 + others.length;
    onCut({ kind, reset: 1 + others.length, cuts: stats.responseLost + stats.requestCut });
  };

  const serve = (target) => (client) => {
    stats.connections++;
    const upstream = net.connect({ host: target.host, port: target.port, noDelay: true });
    const pair = { client, upstream, closed: false, dropResponseTo: null, responseReached: false, cutAfterWrite: false };
    live.add(pair);
    client.pause();
    upstream.once('connect', () => client.resume());

    const requests = new FrameWatcher((start) => {
      if (start.length < 8) return;
      const apiKey = start.readInt16BE(0);
      const correlationId = start.readInt32BE(4);
      if (apiKey !== PRODUCE) return;
      stats.produceRequests++;
      if (!armed || !cutting || pair.dropResponseTo !== null) return;
      armed = false;
      const kind = nextKind;
      nextKind = kind === 'response lost' ? 'request cut' : 'response lost';
      if (kind === 'response lost') pair.dropResponseTo = correlationId;
      else pair.cutAfterWrite = true;
    });
    const responses = new FrameWatcher((start) => {
      if (start.length >= 4 && start.readInt32BE(0) === pair.dropResponseTo) pair.responseReached = true;
    });

    client.on('data', (chunk) => {
      if (pair.closed) return;
      requests.push(chunk);
      upstream.write(chunk);
      // "request cut": the Produce's last bytes were just handed to the broker's socket, in
      // the same turn, so its answer cannot have reached the client.
      if (pair.cutAfterWrite) cut(pair, 'request cut');
    });
    upstream.on('data', (chunk) => {
      if (pair.closed) return;
      responses.push(chunk);
      // "response lost": the answer to the Produce ends in this chunk. The chunk is dropped
      // whole (answers come back in request order, so any before it in the chunk were to
      // requests still in flight too) and the client's connection is reset.
      if (pair.responseReached) cut(pair, 'response lost');
      else client.write(chunk);
    });
    const close = () => {
      if (pair.closed) return;
      pair.closed = true;
      live.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    client.on('close', close);
    upstream.on('error', () => {
      stats.upstreamErrors++;
      close();
    });
    upstream.on('close', close);
  };

  const servers = [];
  try {
    for (const route of paths) {
      const server = net.createServer({ noDelay: true }, serve(route.target));
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: route.listen.host, port: route.listen.port, exclusive: true }, resolve);
      });
      servers.push(server);
    }
  } catch (err) {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(() => resolve()))));
    throw err;
  }
  const timer = setInterval(() => {
    if (cutting) armed = true;
  }, everyMs);

  const cuts = () => stats.responseLost + stats.requestCut;
  return {
    bootstrap: `${paths[0].listen.host}:${paths[0].listen.port}`,
    stats,
    cuts,
    stopCutting() {
      cutting = false;
      armed = false;
      clearInterval(timer);
    },
    describe() {
      return (
        `proxy: ${stats.connections} connections, ${stats.produceRequests} Produce requests; ` +
        `${cuts()} cuts with a Produce in flight (${stats.responseLost} response lost, ${stats.requestCut} request cut), ` +
        `${stats.connectionsReset} connections reset`
      );
    },
    async stop() {
      this.stopCutting();
      for (const p of [...live]) resetPair(p);
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(() => resolve()))));
    },
  };
}

// As a program: see the header.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--every');
  const everyMs = i > 0 ? Number(process.argv[i + 1]) : CUT_EVERY_MS;
  const print = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
  try {
    const proxy = await startCutProxy({ ...proxiedListener(), everyMs, onCut: (c) => print({ event: 'cut', ...c }) });
    print({ event: 'listening', bootstrap: proxy.bootstrap });
    let input = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => {
      input += chunk;
      if (input.includes('stop-cutting')) proxy.stopCutting();
    });
    process.stdin.on('end', async () => {
      print({ event: 'stats', ...proxy.stats, cuts: proxy.cuts(), text: proxy.describe() });
      await proxy.stop();
      process.exit(0);
    });
  } catch (err) {
    print({ event: 'error', message: err.message });
    process.exit(1);
  }
}

// The cluster control endpoint: a small HTTP server on 127.0.0.1 through which a scenario
// kills a broker the matrix started, and starts it again. Its base URL is given to every
// scenario in COMPAT_CLUSTER_CONTROL, for every broker kind: a cluster lists its three
// brokers, a single broker (`gregor`, `kafka`) itself alone, under its node id (1).
//
//   GET  /brokers            -> 200 [{"id":1,"bootstrap":"127.0.0.1:40101","running":true}, ...]
//   POST /brokers/2/kill     -> 200 {"id":2,...,"running":false} once broker 2 has exited (SIGKILL)
//   POST /brokers/2/start    -> 200 {"id":2,...,"running":true} once it is ready on its old port and
//                               data, and every running broker lists it in Metadata
//   anything else            -> 4xx or 5xx with one line of text saying why
//
// Killing a broker that is not running, or starting one that is, changes nothing and
// answers 200. Requests for one broker are handled one after another.
//
//   const control = await startClusterControl(cluster);   // cluster: see clusterOps below
//   env.COMPAT_CLUSTER_CONTROL = control.url;              // 'http://127.0.0.1:40200'
//   await control.stop();

import http from 'node:http';
import { metadataBrokers } from './broker-requests.mjs';

const SETTLE_MS = 60_000;
const POLL_MS = 250;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The operations the endpoint needs, for a cluster of gregor brokers (lib/gregor-cluster.mjs,
 * which has them already) or of reference Kafka nodes (startReferenceKafkaCluster):
 * { brokers(): [{ id, bootstrap, running }], kill(id), start(id) }. start(id) resolves once
 * the broker answers and every running broker lists it in Metadata.
 */
export function clusterOps(cluster) {
  if (typeof cluster.brokers === 'function') return cluster;
  const nodes = cluster.nodes;
  const starting = new Map();
  const byId = (id) => {
    const n = nodes.find((x) => x.nodeId === Number(id));
    if (!n) throw Object.assign(new Error(`no broker ${id}; brokers are ${nodes.map((x) => x.nodeId).join(', ')}`), { status: 404 });
    return n;
  };
  const settle = async () => {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const up = nodes.filter((n) => n.running());
      const want = up.map((n) => n.nodeId).sort().join(',');
      const seen = await Promise.all(
        up.map((n) => metadataBrokers({ host: n.host, port: n.port }, 2_000).then(
          (list) => list.map((b) => b.nodeId).sort().join(','),
          (err) => `error: ${err.message}`,
        )),
      );
      const behind = up.filter((_, i) => seen[i] !== want);
      if (behind.length === 0) return;
      if (Date.now() > deadline) {
        throw new Error(`brokers [${want}] do not all list each other after ${SETTLE_MS / 1000} s: ${behind.map((n) => `broker ${n.nodeId} lists [${seen[up.indexOf(n)]}]`).join('; ')}`);
      }
      await sleep(POLL_MS);
    }
  };
  return {
    brokers: () => nodes.map((n) => ({ id: n.nodeId, bootstrap: n.bootstrap, running: n.running() && !starting.has(n.nodeId) })),
    async kill(id) {
      const n = byId(id);
      await starting.get(n.nodeId)?.catch(() => {});
      await n.kill();
    },
    start(id) {
      const n = byId(id);
      if (!starting.has(n.nodeId)) {
        const p = (async () => {
          try {
            if (!n.running()) await n.restart();
            await settle();
          } finally {
            starting.delete(n.nodeId);
          }
        })();
        starting.set(n.nodeId, p);
      }
      return starting.get(n.nodeId);
    },
    settle,
  };
}

/**
 * The same operations for one broker, the matrix's `gregor` (startRestartableGregor in
 * lib/gregor.mjs) or `kafka` (startReferenceKafka): `node` has bootstrap, host, port, running(),
 * kill() and restart(); `id` is its node id, which start(id) checks: it resolves once the
 * broker's Metadata lists exactly that id.
 */
export function singleBrokerOps(node, id = 1) {
  return clusterOps({
    nodes: [{
      nodeId: id,
      bootstrap: node.bootstrap,
      host: node.host,
      port: node.port,
      running: () => node.running(),
      kill: () => node.kill(),
      restart: () => node.restart(),
    }],
  });
}

/**
 * Restarts every broker of `ops` that is not running; resolves the ids it restarted.
 * Rejects with the first broker that did not come back.
 */
export async function restoreBrokers(ops) {
  const dead = ops.brokers().filter((b) => !b.running).map((b) => b.id);
  await Promise.all(dead.map((id) => ops.start(id)));
  return dead;
}

/** Serves the endpoint for `ops` (see clusterOps) on a free 127.0.0.1 port. */
export async function startClusterControl(ops) {
  const queues = new Map();
  // One operation at a time per broker, in arrival order.
  const serially = (id, fn) => {
    const prev = queues.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    queues.set(id, next.catch(() => {}));
    return next;
  };
  const reply = (res, status, body) => {
    const text = typeof body === 'string' ? `${body.split('\n')[0]}\n` : `${JSON.stringify(body)}\n`;
    res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json' });
    res.end(text);
  };
  const entry = (id) => ops.brokers().find((b) => b.id === id);

  const server = http.createServer((req, res) => {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://control');
    const parts = url.pathname.split('/').filter(Boolean);
    (async () => {
      if (parts[0] !== 'brokers' || parts.length > 3) return reply(res, 404, `no such resource ${url.pathname}; try GET /brokers`);
      if (parts.length === 1) {
        if (req.method !== 'GET') return reply(res, 405, `${req.method} /brokers: only GET`);
        return reply(res, 200, ops.brokers());
      }
      const id = Number(parts[1]);
      if (!Number.isInteger(id) || !entry(id)) {
        return reply(res, 404, `no broker ${parts[1]}; brokers are ${ops.brokers().map((b) => b.id).join(', ')}`);
      }
      if (parts.length === 2) {
        if (req.method !== 'GET') return reply(res, 405, `${req.method} /brokers/${id}: only GET`);
        return reply(res, 200, entry(id));
      }
      const action = parts[2];
      if (action !== 'kill' && action !== 'start') return reply(res, 404, `no action ${action}; use POST /brokers/${id}/kill or /start`);
      if (req.method !== 'POST') return reply(res, 405, `${req.method} /brokers/${id}/${action}: only POST`);
      await serially(id, () => (action === 'kill' ? ops.kill(id) : ops.start(id)));
      return reply(res, 200, entry(id));
    })().catch((err) => reply(res, err?.status ?? 500, `${err?.message ?? err}`));
  });
  // A start waits for the broker; the client's own timeout applies, not the server's.
  server.requestTimeout = 0;
  server.headersTimeout = 10_000;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

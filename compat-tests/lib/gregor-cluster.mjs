// A gregor cluster for compat tests: one etcd and N brokers (node ids 1..N), each with its
// own data directory and a fixed loopback port, so that a broker killed by a scenario comes
// back on the same address and data. Every broker's output goes, whole, to gregor.log in its
// folder, and to `onLine(brokerId, line)`.
//
//   const cluster = await startGregorCluster({ overrides: { 'default.replication.factor': '3' } });
//   cluster.bootstrap            // '127.0.0.1:40101,127.0.0.1:40102,127.0.0.1:40103'
//   await cluster.kill(2); await cluster.start(2);
//   await cluster.stop();

import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { metadataBrokers } from './broker-requests.mjs';
import { gregorProxiedArgs } from './cut-proxy.mjs';
import { startEtcd } from './etcd.mjs';
import { freePort } from './free-port.mjs';
import { startGregor } from './gregor.mjs';

// How long a started broker may take to show up in every running broker's Metadata, and a
// dynamic default to reach every broker.
const SETTLE_MS = 30_000;
const POLL_MS = 200;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts etcd, then `brokers` gregor brokers in parallel, and resolves once every broker is
 * ready and lists all of them in Metadata.
 *
 * @param {{ brokers?: number, overrides?: Record<string, string>,
 *   logDirs?: number,
 *   proxied?: { listenerPort: number, proxyPort: number }[],
 *   onLine?: (brokerId: number, line: string) => void }} [options]
 *   overrides become `--override KEY=VALUE` of every broker; proxied[i] is broker i+1's
 *   PROXIED listener (lib/cut-proxy.mjs); logDirs is each broker's number of log directories
 *   (see startGregor).
 */
export async function startGregorCluster({ brokers = 3, overrides = {}, logDirs = 1, proxied, onLine } = {}) {
  const root = await mkdtemp(path.join(tmpdir(), 'gregor-cluster-'));
  let etcd = null;
  const members = [];
  const stop = async () => {
    await Promise.all(members.map((m) => m.handle?.stop().catch(() => {})));
    await Promise.all(members.map((m) => new Promise((resolve) => m.log.end(resolve))));
    await etcd?.stop().catch(() => {});
    await rm(root, { recursive: true, force: true });
  };

  try {
    etcd = await startEtcd();
    const taken = new Set([etcd.clientPort, ...(proxied ?? []).flatMap((p) => [p.listenerPort, p.proxyPort])]);
    for (let id = 1; id <= brokers; id++) {
      let port = await freePort();
      while (taken.has(port)) port = await freePort();
      taken.add(port);
      const dir = path.join(root, `broker-${id}`);
      await mkdir(path.join(dir, 'data'), { recursive: true });
      const logFile = path.join(dir, 'gregor.log');
      members.push({ id, port, dir, logFile, log: createWriteStream(logFile, { flags: 'a' }), handle: null, pending: '', starting: null });
    }
  } catch (err) {
    await stop();
    throw err;
  }

  const argsOf = (m) => [
    '--broker-id', String(m.id),
    '--metadata', `etcd://${etcd.endpoint}`,
    ...(proxied ? gregorProxiedArgs(proxied[m.id - 1], m.port) : ['--listen', `127.0.0.1:${m.port}`]),
    ...Object.entries(overrides).flatMap(([k, v]) => ['--override', `${k}=${v}`]),
  ];

  const onOutput = (m) => (chunk, stream) => {
    m.log.write(chunk);
    if (stream !== 'stdout' || !onLine) return;
    m.pending += chunk;
    let nl;
    while ((nl = m.pending.indexOf('\n')) >= 0) {
      const line = m.pending.slice(0, nl);
      m.pending = m.pending.slice(nl + 1);
      if (line.trim()) onLine(m.id, line);
    }
  };

  const byId = (id) => {
    const m = members.find((x) => x.id === Number(id));
    if (!m) throw Object.assign(new Error(`no broker ${id}; brokers are ${members.map((x) => x.id).join(', ')}`), { status: 404 });
    return m;
  };
  const running = (m) => m.handle !== null && m.handle.running();
  const address = (m) => ({ host: '127.0.0.1', port: m.port });

  /** Waits until every running broker lists every running broker in Metadata. */
  const settle = async () => {
    const deadline = Date.now() + SETTLE_MS;
    let last = '';
    for (;;) {
      const up = members.filter(running);
      const want = up.map((m) => m.id).sort().join(',');
      const seen = await Promise.all(
        up.map((m) => metadataBrokers(address(m), 2_000).then(
          (list) => list.map((b) => b.nodeId).sort().join(','),
          (err) => `error: ${err.message}`,
        )),
      );
      const behind = up.filter((_, i) => seen[i] !== want);
      if (behind.length === 0) return;
      last = behind.map((m) => `broker ${m.id} lists [${seen[up.indexOf(m)]}]`).join('; ');
      if (Date.now() > deadline) throw new Error(`brokers [${want}] do not all list each other after ${SETTLE_MS / 1000} s: ${last}`);
      await sleep(POLL_MS);
    }
  };

  const launch = async (m) => {
    m.handle = null;
    m.pending = '';
    m.log.write(`--- broker ${m.id} starting ${new Date().toISOString()} ---\n`);
    m.handle = await startGregor({ dataDir: path.join(m.dir, 'data'), args: argsOf(m), logDirs, onOutput: onOutput(m) });
  };

  const start = (id) => {
    const m = byId(id);
    m.starting ??= (async () => {
      try {
        if (!running(m)) await launch(m);
        await settle();
      } finally {
        m.starting = null;
      }
    })();
    return m.starting;
  };

  const kill = async (id) => {
    const m = byId(id);
    if (m.starting) await m.starting.catch(() => {});
    if (m.handle) await m.handle.kill();
  };

  try {
    const started = await Promise.allSettled(members.map(launch));
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    await settle();
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    kind: 'gregor-cluster',
    bootstrap: members.map((m) => `127.0.0.1:${m.port}`).join(','),
    etcd: etcd.endpoint,
    root,
    members: members.map((m) => ({ id: m.id, port: m.port, dataDir: path.join(m.dir, 'data'), logFile: m.logFile })),
    brokers: () => members.map((m) => ({ id: m.id, bootstrap: `127.0.0.1:${m.port}`, running: running(m) && !m.starting })),
    kill,
    start,
    settle,
    /** The broker's in-memory output tail (the whole log is in its logFile). */
    output: (id) => byId(id).handle?.output() ?? '',
    stop,
  };
}

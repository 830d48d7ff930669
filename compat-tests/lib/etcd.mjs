// Starts a single-member etcd (Debian's etcd-server) on free loopback ports for tests, and stops it.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { killOnExit } from './children.mjs';
import { freePort } from './free-port.mjs';

const READY_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;
const TAIL_CHARS = 3_000;


/** The etcd binary: $ETCD, else `etcd` on PATH (Debian installs /usr/bin/etcd), or null when there is none. */
export function etcdBinary() {
  if (process.env.ETCD) return process.env.ETCD;
  try {
    return execFileSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/**
 * Spawns etcd with its data in a new temporary directory (or `dataDir`), listening for
 * clients and peers on free 127.0.0.1 ports, and resolves once it answers its health check.
 * Passing the `dataDir` and `clientPort` of an earlier run restarts that etcd on the same
 * address; `ownDataDir` then says whether stop() removes the directory.
 *
 * @param {{ dataDir?: string, clientPort?: number, ownDataDir?: boolean }} [options]
 * @returns {Promise<{ endpoint: string, clientPort: number, dataDir: string, pid: number,
 *   stop(signal?: string): Promise<void>, output(): string }>}
 */
export async function startEtcd({ dataDir, clientPort, ownDataDir } = {}) {
  const bin = etcdBinary();
  if (!bin) throw new Error('etcd is not installed: install Debian\'s etcd-server (apt-get install etcd-server) or set ETCD to its path');
  const ownsDir = ownDataDir ?? !dataDir;
  const dir = dataDir ?? (await mkdtemp(path.join(tmpdir(), 'gregor-etcd-')));
  const client = clientPort ?? (await freePort());
  const peer = await freePort();
  const clientUrl = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const child = spawn(
    bin,
    [
      '--name', 'gregor-test',
      '--data-dir', path.join(dir, 'etcd'),
      '--listen-client-urls', clientUrl,
      '--advertise-client-urls', clientUrl,
      '--listen-peer-urls', peerUrl,
      '--initial-advertise-peer-urls', peerUrl,
      '--initial-cluster', `gregor-test=${peerUrl}`,
      '--initial-cluster-state', 'new',
      '--log-level', 'warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  killOnExit(child);
  let out = '';
  const keep = (chunk) => {
    out = (out + chunk).slice(-64 * 1024);
  };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => {
    resolve(code ?? signal);
  }));

  const deadline = Date.now() + READY_TIMEOUT_MS;
  let healthy = false;
  let gone = false;
  exited.then(() => {
    gone = true;
  });
  while (!healthy && !gone && Date.now() < deadline) {
    try {
      const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
      healthy = res.ok && (await res.json()).health === 'true';
    } catch {
      // not listening yet
    }
    if (!healthy) await new Promise((r) => setTimeout(r, 100));
  }
  if (!healthy) {
    child.kill('SIGKILL');
    await exited;
    if (ownsDir) await rm(dir, { recursive: true, force: true });
    throw new Error(`etcd was not healthy within ${READY_TIMEOUT_MS} ms\n${out.slice(-TAIL_CHARS)}`);
  }

  let stopping = null;
  return {
    endpoint: `127.0.0.1:${client}`,
    clientPort: client,
    dataDir: dir,
    pid: child.pid,
    output: () => out,
    /** SIGTERM (or `signal`), then SIGKILL after a while; the data directory goes when this etcd owns it, unless `keepData`. */
    stop(signal = 'SIGTERM', { keepData = false } = {}) {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill(signal);
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          await exited;
          clearTimeout(timer);
        }
        if (ownsDir && !keepData) await rm(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

// Starts a gregor broker as a child process for compat tests and stops it again.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { killOnExit } from './children.mjs';
import { freePort } from './free-port.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const GREGOR_BIN = path.join(REPO, 'bin', 'gregor');

const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;
// The broker keeps logging after it is ready; keep only the tail for error reports.
const OUTPUT_LIMIT = 256 * 1024;
const TAIL_CHARS = 4_000;


function parseListen(listen) {
  const i = typeof listen === 'string' ? listen.lastIndexOf(':') : -1;
  if (i <= 0) return null;
  const host = listen.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  const port = Number(listen.slice(i + 1));
  if (!host || !Number.isInteger(port) || port <= 0) return null;
  return { host, port };
}

/**
 * Spawns `node bin/gregor start --listen 127.0.0.1:<port> --data-dir <dir> ...args` and resolves
 * once it logs its ready line. Rejects with the output tail if it exits or is not ready in time.
 * `port` defaults to 0 (the broker picks a free one); a `listeners` override in `args` comes
 * after `--listen` and wins over it, so a caller fixing the port there (gregorProxiedArgs in
 * lib/cut-proxy.mjs) gives the same port to both.
 *
 * `onOutput(chunk, stream)` sees everything the broker prints, from the start: the
 * in-memory output() keeps only a tail, so a caller that checks the whole log keeps it there.
 * kill() ends the broker with SIGKILL, as a crash would, and keeps its data directory
 * even when this function made it, so that it can be started again on it.
 *
 * `logDirs` (default 1) above 1 gives the broker that many log directories (JBOD), `d1`, `d2`,
 * ... inside the data directory, instead of the data directory itself.
 *
 * @param {{ dataDir?: string, port?: number, args?: string[], env?: Record<string, string>,
 *   logDirs?: number, onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void }} [options]
 * @returns {Promise<{ bootstrap: string, host: string, port: number, dataDir: string,
 *   pid: number, stop(): Promise<number>, kill(): Promise<number>, running(): boolean,
 *   output(): string }>}
 */
/** log.dirs for `count` directories in `dir`: `dir` itself for one, else `dir/d1,dir/d2,...`. */
export function logDirList(dir, count = 1) {
  if (!Number.isInteger(count) || count < 1) throw new Error(`logDirs ${count} is not a positive count`);
  return count === 1 ? dir : Array.from({ length: count }, (_, i) => path.join(dir, `d${i + 1}`)).join(',');
}

export async function startGregor({ dataDir, port = 0, args = [], env = {}, logDirs = 1, onOutput } = {}) {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`startGregor: port ${port} is not a port number`);
  const ownsDataDir = !dataDir;
  const dir = dataDir ?? (await mkdtemp(path.join(tmpdir(), 'gregor-compat-')));
  const removeOwnDir = async () => {
    if (ownsDataDir) await rm(dir, { recursive: true, force: true });
  };

  let child;
  try {
    child = spawn(
      process.execPath,
      [GREGOR_BIN, 'start', '--listen', `127.0.0.1:${port}`, '--data-dir', logDirList(dir, logDirs), ...args],
      { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
  } catch (err) {
    await removeOwnDir();
    throw err;
  }
  killOnExit(child);

  let stdout = '';
  let stderr = '';
  const append = (buf, chunk) => {
    const next = buf + chunk;
    return next.length > OUTPUT_LIMIT ? next.slice(next.length - OUTPUT_LIMIT) : next;
  };
  const output = () => (stderr ? `${stdout}\n--- stderr ---\n${stderr}` : stdout);
  const tail = () => {
    const parts = [];
    if (stderr.trim()) parts.push(`stderr:\n${stderr.slice(-TAIL_CHARS).trimEnd()}`);
    if (stdout.trim()) parts.push(`stdout:\n${stdout.slice(-TAIL_CHARS).trimEnd()}`);
    return parts.length ? parts.join('\n') : '(no output)';
  };

  let exitCode = null;
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      exitCode = code ?? 128 + (signal === 'SIGKILL' ? 9 : signal === 'SIGTERM' ? 15 : 0);
      resolve(exitCode);
    });
    // A process that never started emits 'error' and no 'exit'.
    child.once('error', () => {
      if (child.pid !== undefined || exitCode !== null) return;
      exitCode = 127;
      resolve(exitCode);
    });
  });

  const ready = new Promise((resolve, reject) => {
    let pending = '';
    const timer = setTimeout(() => {
      reject(new Error(`gregor was not ready within ${READY_TIMEOUT_MS} ms\n${tail()}`));
    }, READY_TIMEOUT_MS);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      stderr = append(stderr, chunk);
      onOutput?.(chunk, 'stderr');
    });
    child.stdout.on('data', (chunk) => {
      stdout = append(stdout, chunk);
      onOutput?.(chunk, 'stdout');
      pending += chunk;
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        let record;
        try {
          record = JSON.parse(line);
        } catch {
          continue;
        }
        if (record?.msg !== 'gregor ready') continue;
        clearTimeout(timer);
        const addr = parseListen(record.listen);
        if (addr) resolve(addr);
        else reject(new Error(`gregor ready line has no usable listen address: ${line}`));
        return;
      }
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`could not run ${GREGOR_BIN}: ${err.message}`));
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gregor exited with code ${code} before it was ready\n${tail()}`));
    });
  });

  let stopping = null;
  const stop = () => {
    stopping ??= (async () => {
      if (exitCode === null) {
        child.kill('SIGTERM');
        let killTimer;
        const killed = new Promise((resolve) => {
          killTimer = setTimeout(() => {
            child.kill('SIGKILL');
            resolve();
          }, STOP_TIMEOUT_MS);
        });
        await Promise.race([exited, killed]);
        clearTimeout(killTimer);
      }
      const code = await exited;
      await removeOwnDir();
      return code;
    })();
    return stopping;
  };

  let killing = null;
  const kill = () => {
    killing ??= (async () => {
      if (exitCode === null) child.kill('SIGKILL');
      return exited;
    })();
    return killing;
  };

  let addr;
  try {
    addr = await ready;
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    bootstrap: `${addr.host}:${addr.port}`,
    host: addr.host,
    port: addr.port,
    dataDir: dir,
    pid: child.pid,
    stop,
    kill,
    running: () => exitCode === null,
    output,
  };
}

/**
 * One gregor broker that can be killed and started again on the same port and data directory,
 * as a cluster's brokers can (lib/gregor-cluster.mjs): the matrix's single-broker kind. The
 * PLAINTEXT port is `port`, or a free loopback port that is none of `avoid` (another is tried
 * when that one turns out taken at the first start); `args(port)` gives the broker's flags for
 * it (gregorProxiedArgs(proxied, port) in lib/cut-proxy.mjs needs the port). The data directory
 * is made here: kill() and a failed restart keep it, stop() removes it.
 *
 *   const node = await startRestartableGregor({ args: (port) => gregorProxiedArgs(proxied, port) });
 *   await node.kill();      // SIGKILL, as a crash would; resolves once the process has exited
 *   await node.restart();   // the same bootstrap and data; resolves once it is ready
 *   await node.stop();      // SIGTERM, then the data directory is removed
 *
 * @param {{ port?: number, avoid?: number[], args?: (port: number) => string[],
 *   env?: Record<string, string>, logDirs?: number,
 *   onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void }} [options]
 * @returns {Promise<{ bootstrap: string, host: string, port: number, dataDir: string,
 *   readonly pid: number, running(): boolean, kill(): Promise<void>, restart(): Promise<void>,
 *   stop(): Promise<number>, output(): string }>} output() is the output tail of every start,
 *   the earlier ones first.
 */
export async function startRestartableGregor({ port, avoid = [], args = () => [], env = {}, logDirs = 1, onOutput } = {}) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'gregor-compat-'));
  const taken = new Set(avoid);
  let handle = null;
  let earlier = '';
  let chosen = port;
  const launch = (p) => startGregor({ dataDir, port: p, args: args(p), env, logDirs, onOutput });
  try {
    for (let attempt = 1; ; attempt++) {
      if (port === undefined) {
        chosen = await freePort('127.0.0.1');
        while (taken.has(chosen)) chosen = await freePort('127.0.0.1');
        taken.add(chosen);
      }
      try {
        handle = await launch(chosen);
        break;
      } catch (err) {
        if (port !== undefined || attempt >= 3 || !/EADDRINUSE/.test(err.message)) throw err;
      }
    }
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }

  let restarting = null;
  const running = () => handle !== null && handle.running();
  const kill = async () => {
    await restarting?.catch(() => {});
    if (handle) await handle.kill();
  };
  const restart = () => {
    restarting ??= (async () => {
      try {
        if (running()) return;
        if (handle) earlier = `${earlier}${handle.output()}\n--- restarted ${new Date().toISOString()} ---\n`.slice(-OUTPUT_LIMIT);
        handle = null;
        handle = await launch(chosen);
      } finally {
        restarting = null;
      }
    })();
    return restarting;
  };
  let stopping = null;
  const stop = () => {
    stopping ??= (async () => {
      await restarting?.catch(() => {});
      const code = handle ? await handle.stop() : 0;
      await rm(dataDir, { recursive: true, force: true });
      return code;
    })();
    return stopping;
  };
  return {
    bootstrap: handle.bootstrap,
    host: handle.host,
    port: handle.port,
    dataDir,
    get pid() {
      return handle?.pid;
    },
    running,
    kill,
    restart,
    stop,
    output: () => `${earlier}${handle?.output() ?? ''}`,
  };
}

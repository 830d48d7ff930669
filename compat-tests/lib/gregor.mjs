// Starts a gregor broker as a child process for compat tests and stops it again.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { killOnExit } from './children.mjs';

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
 * Spawns `node bin/gregor start --listen 127.0.0.1:0 --data-dir <dir> ...args` and resolves
 * once it logs its ready line. Rejects with the output tail if it exits or is not ready in time.
 *
 * `onOutput(chunk, stream)` sees everything the broker prints, from the start: the
 * in-memory output() keeps only a tail, so a caller that checks the whole log keeps it there.
 * kill() ends the broker with SIGKILL, as a crash would, and keeps its data directory
 * even when this function made it, so that it can be started again on it.
 *
 * @param {{ dataDir?: string, args?: string[], env?: Record<string, string>,
 *   onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void }} [options]
 * @returns {Promise<{ bootstrap: string, host: string, port: number, dataDir: string,
 *   pid: number, stop(): Promise<number>, kill(): Promise<number>, running(): boolean,
 *   output(): string }>}
 */
export async function startGregor({ dataDir, args = [], env = {}, onOutput } = {}) {
  const ownsDataDir = !dataDir;
  const dir = dataDir ?? (await mkdtemp(path.join(tmpdir(), 'gregor-compat-')));
  const removeOwnDir = async () => {
    if (ownsDataDir) await rm(dir, { recursive: true, force: true });
  };

  let child;
  try {
    child = spawn(
      process.execPath,
      [GREGOR_BIN, 'start', '--listen', '127.0.0.1:0', '--data-dir', dir, ...args],
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

#!/usr/bin/env node
// Records golden bytes: each ready compat client runs its `metadata` scenario against
// Apache Kafka through the capture proxy, and the frames of the client's first
// (bootstrap) connection are written to wire/golden/<client>/. Requests are the
// client's own bytes, responses the real broker's.
//
// Usage: node compat-tests/capture/capture-golden.mjs [client...]
//          [--upstream host:port]   use an already running reference broker
//          [--timeout seconds]      per scenario (default 180)

import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, accessSync, constants } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { referenceKafkaVersion, startReferenceKafka } from '../lib/reference-kafka.mjs';
import { startCaptureProxy, toHexLines } from './proxy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const COMPAT_DIR = path.resolve(here, '..');
const ROOT = path.resolve(COMPAT_DIR, '..');
const GOLDEN_DIR = path.join(ROOT, 'wire', 'golden');
const NOT_CLIENTS = new Set(['capture', 'lib', 'reference-kafka']);
const CHECK_TIMEOUT_MS = 60_000;

function parseArgs(argv) {
  const opts = { clients: [], upstream: null, timeoutMs: 180_000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--upstream') opts.upstream = argv[++i];
    else if (a === '--timeout') opts.timeoutMs = Number(argv[++i]) * 1000;
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else opts.clients.push(a);
  }
  if (!(opts.timeoutMs > 0)) throw new Error('--timeout needs a positive number of seconds');
  return opts;
}

function clientDirs() {
  return readdirSync(COMPAT_DIR)
    .filter((name) => !NOT_CLIENTS.has(name) && !name.startsWith('.'))
    .filter((name) => statSync(path.join(COMPAT_DIR, name)).isDirectory())
    .sort();
}

function runScript(client) {
  const script = path.join(COMPAT_DIR, client, 'run');
  if (!existsSync(script)) return { script: null, why: 'no run script' };
  try {
    accessSync(script, constants.X_OK);
  } catch {
    return { script: null, why: 'run script is not executable' };
  }
  return { script, why: null };
}

/** Runs a command in its own process group, killing the whole group on timeout. */
function runBounded(cmd, args, { timeoutMs, onLine }) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const lines = [];
    let timedOut = false;
    const collect = (stream) => {
      let partial = '';
      stream.on('data', (c) => {
        const parts = (partial + c.toString('utf8')).split('\n');
        partial = parts.pop();
        for (const l of parts) {
          lines.push(l);
          onLine?.(l);
        }
      });
      stream.on('end', () => {
        if (partial) {
          lines.push(partial);
          onLine?.(partial);
        }
      });
    };
    collect(child.stdout);
    collect(child.stderr);
    const kill = (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // group already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 5000).unref();
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, timedOut, lines: [...lines, String(err)] });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // Anything the scenario left behind in its group goes with it.
      kill('SIGKILL');
      resolve({ code: code ?? (signal ? 128 : null), signal, timedOut, lines });
    });
  });
}

const VERSION_RE = /\b(v?\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.]+)?)\b/;

function firstVersion(text) {
  // Link targets (URLs) are not where a README states its version.
  const m = VERSION_RE.exec(text.replace(/\]\([^)]*\)/g, ']'));
  return m ? m[1] : null;
}

/**
 * The client's pinned version: a `version` file, else its README's "Client:" entry, a
 * bold version, or the first version in its opening paragraph; else "unknown".
 */
function clientVersion(client) {
  const dir = path.join(COMPAT_DIR, client);
  for (const name of ['version', 'VERSION', 'version.txt']) {
    const file = path.join(dir, name);
    if (existsSync(file)) {
      const first = readFileSync(file, 'utf8').split('\n').map((l) => l.trim()).find(Boolean);
      if (first) return first;
    }
  }
  for (const name of ['README.md', 'README', 'readme.md']) {
    const file = path.join(dir, name);
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const paragraphs = text.split(/\n\s*\n/);
    const clientEntry = /(?:^|\n)\s*(?:[-*]\s*)?\**Client\**:([\s\S]*?)(?=\n\s*[-*]\s|\n\s*\n|$)/i.exec(text);
    const bold = /\*\*(v?\d+\.\d+[^*]*)\*\*/.exec(text);
    const opening = paragraphs.find((p) => p.trim() && !p.trim().startsWith('#'));
    const found =
      (clientEntry && firstVersion(clientEntry[1])) ??
      (bold && firstVersion(bold[1])) ??
      (opening && firstVersion(opening));
    if (found) return found;
  }
  return 'unknown';
}

async function writeGolden(client, connection, meta) {
  const dir = path.join(GOLDEN_DIR, client);
  await mkdir(dir, { recursive: true });
  for (const name of await readdir(dir)) {
    if (name.endsWith('.hex') || name === 'capture.json') await rm(path.join(dir, name));
  }
  const frames = [];
  const width = Math.max(2, String(connection.exchanges.length).length);
  for (const e of connection.exchanges) {
    const nn = String(e.index).padStart(width, '0');
    const stem = `${nn}-${e.apiName ?? 'Unknown'}-v${e.apiVersion ?? 'x'}`;
    const base = {
      apiKey: e.apiKey,
      apiName: e.apiName,
      apiVersion: e.apiVersion,
      correlationId: e.correlationId,
    };
    if (e.request) {
      const file = `${stem}-request.hex`;
      await writeFile(path.join(dir, file), toHexLines(e.request));
      frames.push({ file, ...base, direction: 'request', bytes: e.request.length });
    }
    if (e.response) {
      const file = `${stem}-response.hex`;
      await writeFile(path.join(dir, file), toHexLines(e.response));
      frames.push({ file, ...base, direction: 'response', bytes: e.response.length });
    }
  }
  const capture = {
    client,
    clientVersion: meta.clientVersion,
    // What the client's own `run check` reported, kept beside the pinned version.
    clientCheck: meta.clientCheck,
    broker: meta.broker,
    date: new Date().toISOString(),
    scenario: 'metadata',
    connection: 1,
    connectionsThroughProxy: meta.connectionsThroughProxy,
    frames,
  };
  await writeFile(path.join(dir, 'capture.json'), JSON.stringify(capture, null, 2) + '\n');
  return frames;
}

async function captureClient(client, script, checkLine, upstream, opts) {
  const proxy = await startCaptureProxy({ upstreamHost: upstream.host, upstreamPort: upstream.port });
  const bootstrap = `127.0.0.1:${proxy.port}`;
  console.log(`[${client}] scenario metadata ${bootstrap} (broker ${upstream.host}:${upstream.port})`);
  let result;
  try {
    result = await runBounded(script, ['scenario', 'metadata', bootstrap], {
      timeoutMs: opts.timeoutMs,
      onLine: (l) => console.log(`[${client}]   ${l}`),
    });
  } finally {
    // Let in-flight responses of a client that exits right after its last request land.
    await new Promise((r) => setTimeout(r, 200));
    await proxy.close();
  }
  const connections = proxy.frames();
  if (result.timedOut) return { client, status: 'fail', why: `timed out after ${opts.timeoutMs / 1000} s` };
  if (result.code === 3) return { client, status: 'skip', why: 'metadata scenario not implemented (exit 3)' };
  if (result.code !== 0) return { client, status: 'fail', why: `scenario exited ${result.code}` };
  const first = connections[0];
  if (!first || first.exchanges.length === 0) {
    return { client, status: 'fail', why: 'no request went through the proxy' };
  }
  const frames = await writeGolden(client, first, {
    clientVersion: clientVersion(client),
    clientCheck: checkLine,
    broker: `Apache Kafka ${upstream.version}`,
    connectionsThroughProxy: connections.length,
  });
  const summary = first.exchanges.map((e) => `${e.apiName}v${e.apiVersion}${e.response ? '' : '(no response)'}`).join(' → ');
  console.log(`[${client}] first connection: ${summary}`);
  console.log(`[${client}] wrote ${frames.length} frames to ${path.relative(ROOT, path.join(GOLDEN_DIR, client))}/`);
  return { client, status: 'captured', why: `${frames.length} frames, ${connections.length} connection(s) via proxy` };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const all = clientDirs();
  const wanted = opts.clients.length ? opts.clients : all;
  const results = [];
  const ready = [];

  for (const client of wanted) {
    if (!all.includes(client)) {
      results.push({ client, status: 'skip', why: 'no such folder under compat-tests' });
      continue;
    }
    const { script, why } = runScript(client);
    if (!script) {
      results.push({ client, status: 'skip', why });
      continue;
    }
    const check = await runBounded(script, ['check'], { timeoutMs: CHECK_TIMEOUT_MS });
    if (check.code !== 0) {
      const line = check.lines.find((l) => l.trim()) ?? `exit ${check.code}`;
      results.push({ client, status: 'skip', why: `run check: ${check.timedOut ? 'timed out' : line.trim()}` });
      continue;
    }
    // Paths are made relative so the committed capture.json does not name this machine.
    const checkLine = check.lines.find((l) => l.trim())?.trim().split(`${ROOT}/`).join('') ?? null;
    ready.push({ client, script, checkLine });
  }
  for (const r of results) console.log(`[${r.client}] skipped: ${r.why}`);

  if (ready.length > 0) {
    let kafka = null;
    let upstream;
    if (opts.upstream) {
      const [host, port] = opts.upstream.split(':');
      // Assumed to be the reference broker this checkout installs.
      upstream = { host, port: Number(port), version: referenceKafkaVersion() ?? 'unknown' };
    } else {
      console.log('starting reference Apache Kafka...');
      kafka = await startReferenceKafka();
      upstream = { host: kafka.host, port: kafka.port, version: kafka.version };
      console.log(`reference kafka ${kafka.version} ready ${kafka.bootstrap}`);
    }
    const stopKafka = async () => {
      if (kafka) {
        const k = kafka;
        kafka = null;
        await k.stop();
        console.log('reference kafka stopped');
      }
    };
    const onSignal = () => stopKafka().finally(() => process.exit(130));
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      for (const { client, script, checkLine } of ready) {
        try {
          results.push(await captureClient(client, script, checkLine, upstream, opts));
        } catch (err) {
          results.push({ client, status: 'fail', why: err.message });
        }
      }
    } finally {
      await stopKafka();
    }
  }

  console.log('summary:');
  for (const r of results) console.log(`  ${r.client.padEnd(24)} ${r.status.padEnd(8)} ${r.why}`);
  process.exit(results.some((r) => r.status === 'fail') ? 1 : 0);
}

main().catch((err) => {
  console.error(err.stack ?? String(err));
  process.exit(1);
});

// Starts Apache Kafka itself (resolved by compat-tests/reference-kafka/pom.xml) as a
// single-node KRaft broker+controller on loopback, for tests that compare gregor with
// the real thing or record the real broker's bytes; or as a cluster of such nodes
// (startReferenceKafkaCluster), for the cluster benchmark.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiVersions } from './broker-requests.mjs';
import { freePort } from './free-port.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REFERENCE_DIR = path.resolve(here, '..', 'reference-kafka');
const LIB_DIR = path.join(REFERENCE_DIR, 'target', 'lib');
const LIFELINE = path.join(REFERENCE_DIR, 'lifeline.sh');
const LOG_CONFIG = path.join(REFERENCE_DIR, 'log4j2.properties');

export const READY_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 20_000;
const FORMAT_TIMEOUT_MS = 60_000;
const TAIL_LINES = 80;

const HEAP = ['-Xms512m', '-Xmx1g'];
// Without the heap flags, which a caller may choose.
const JVM_FLAGS = [
  '-XX:+UseG1GC',
  '-XX:MaxGCPauseMillis=20',
  '-Djava.awt.headless=true',
  `-Dlog4j2.configurationFile=${LOG_CONFIG}`,
];

/** Version of the kafka_2.13 jar in target/lib, e.g. "4.4.0"; null when not installed. */
export function referenceKafkaVersion() {
  if (!existsSync(LIB_DIR)) return null;
  for (const name of readdirSync(LIB_DIR)) {
    const m = /^kafka_2\.13-(.+)\.jar$/.exec(name);
    if (m) return m[1];
  }
  return null;
}

function classpath() {
  if (referenceKafkaVersion() === null) {
    throw new Error(
      `reference Kafka jars missing in ${LIB_DIR}; run ${path.join(REFERENCE_DIR, 'run')} install`,
    );
  }
  return readdirSync(LIB_DIR)
    .filter((n) => n.endsWith('.jar'))
    .sort()
    .map((n) => path.join(LIB_DIR, n))
    .join(path.delimiter);
}

function serverProperties({ port, controllerPort, logDirs, proxied, nodeId = 1, voters = null, settings = {} }) {
  // A PROXIED listener (see lib/cut-proxy.mjs) is bound to one port and advertises another.
  const extra = proxied ? `,PROXIED://127.0.0.1:${proxied.listenerPort}` : '';
  const extraAdvertised = proxied ? `,PROXIED://127.0.0.1:${proxied.proxyPort}` : '';
  const props = {
    'process.roles': 'broker,controller',
    'node.id': String(nodeId),
    'controller.quorum.voters': voters ?? `${nodeId}@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port}${extra},CONTROLLER://127.0.0.1:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${port}${extraAdvertised}`,
    'listener.security.protocol.map': `PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${proxied ? ',PROXIED:PLAINTEXT' : ''}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': logDirs.join(','),
    'num.partitions': '1',
    'offsets.topic.replication.factor': '1',
    'transaction.state.log.replication.factor': '1',
    'transaction.state.log.min.isr': '1',
    'share.coordinator.state.topic.replication.factor': '1',
    'share.coordinator.state.topic.min.isr': '1',
    'group.initial.rebalance.delay.ms': '0',
    ...settings,
  };
  return Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n') + '\n';
}

/** Keeps the last lines a process printed, so a failure can show why. */
class Tail {
  constructor(limit = TAIL_LINES) {
    this.limit = limit;
    this.lines = [];
    this.partial = '';
  }
  push(chunk, onLine) {
    const text = this.partial + chunk.toString('utf8');
    const parts = text.split('\n');
    this.partial = parts.pop();
    for (const line of parts) {
      this.lines.push(line);
      if (this.lines.length > this.limit) this.lines.shift();
      onLine?.(line);
    }
  }
  text() {
    return [...this.lines, this.partial].filter((l) => l !== '').join('\n');
  }
}

function runJava(args, { timeoutMs, log }) {
  return new Promise((resolve, reject) => {
    const child = spawn('java', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const tail = new Tail();
    child.stdout.on('data', (c) => tail.push(c, log));
    child.stderr.on('data', (c) => tail.push(c, log));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output: tail.text() });
    });
  });
}

// Unref'd: a wait that loses a race must not keep the process alive.
const sleep = (ms) => new Promise((r) => setTimeout(r, ms).unref());

/**
 * Formats a fresh data dir and starts the broker. Resolves once ApiVersions v0 is
 * answered without error on the PLAINTEXT port; rejects after READY_TIMEOUT_MS with
 * the JVM's last output lines.
 *
 * @param {{ log?: (line: string) => void, port?: number,
 *   proxied?: { listenerPort: number, proxyPort: number },
 *   member?: { nodeId: number, voters: string, clusterId: string, controllerPort: number },
 *   settings?: Record<string, string>, heap?: string[], logDirs?: number }} [options]
 *   log receives every line the JVM prints; port fixes the PLAINTEXT port (default: a
 *   free one); proxied adds a listener PROXIED bound to listenerPort that advertises
 *   proxyPort (from reserveProxiedListener() in cut-proxy.mjs); member makes the node one
 *   of a cluster (see startReferenceKafkaCluster); settings are server.properties entries
 *   that replace or add to the defaults here; heap replaces the JVM's -Xms/-Xmx flags;
 *   logDirs above 1 gives the node that many log directories (JBOD), log/d1, log/d2, ...
 *
 * Besides stop(), which removes the data dir, the node has kill(), which ends the JVM with
 * SIGKILL as a crash would and keeps the data dir, restart(), which starts it again on the
 * same ports and data dir (resolving once it is ready again), and running().
 */
export async function startReferenceKafka({ log, port, proxied, member, settings, heap = HEAP, logDirs: logDirCount = 1 } = {}) {
  const cp = classpath();
  const host = '127.0.0.1';
  const plaintextPort = port ?? (await freePort(host));
  const taken = new Set([plaintextPort, proxied?.listenerPort, proxied?.proxyPort]);
  let controllerPort = member?.controllerPort ?? (await freePort(host));
  while (!member && taken.has(controllerPort)) controllerPort = await freePort(host);
  const flags = [...heap, ...JVM_FLAGS];

  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'gregor-ref-kafka-'));
  const logDir = path.join(dataDir, 'log');
  const logDirs = logDirCount > 1 ? Array.from({ length: logDirCount }, (_, i) => path.join(logDir, `d${i + 1}`)) : [logDir];
  const propsFile = path.join(dataDir, 'server.properties');
  let child = null;
  let exited = null;
  let exitedPromise = Promise.resolve();
  const tail = new Tail();

  const kill = async () => {
    if (child && exited === null) {
      killGroup(child.pid, 'SIGKILL');
      await Promise.race([exitedPromise, sleep(10_000)]);
    }
  };
  const stop = async () => {
    if (child && exited === null) {
      killGroup(child.pid, 'SIGTERM');
      const graceful = await Promise.race([exitedPromise.then(() => true), sleep(STOP_GRACE_MS).then(() => false)]);
      if (!graceful) {
        killGroup(child.pid, 'SIGKILL');
        await Promise.race([exitedPromise, sleep(5000)]);
      }
    }
    // The lifeline's watcher was in the same group and got the signal too; closing
    // our end of its pipe covers the case where it did not.
    child?.stdin?.destroy();
    process.off('exit', onParentExit);
    await rm(dataDir, { recursive: true, force: true });
  };
  // A synchronous last resort when the parent exits without calling stop().
  const onParentExit = () => {
    if (child && exited === null) killGroup(child.pid, 'SIGKILL');
  };

  // Starts the JVM on the formatted data dir and waits until it answers ApiVersions.
  const launch = async () => {
    exited = null;
    child = spawn(
      'bash',
      [LIFELINE, dataDir, ...flags, '-cp', cp, 'kafka.Kafka', propsFile],
      { stdio: ['pipe', 'pipe', 'pipe'], detached: true },
    );
    const current = child;
    exitedPromise = new Promise((resolve) => {
      current.once('exit', (code, signal) => {
        exited = { code, signal };
        resolve();
      });
    });
    current.stdout.on('data', (c) => tail.push(c, log));
    current.stderr.on('data', (c) => tail.push(c, log));
    await new Promise((resolve, reject) => {
      current.once('spawn', resolve);
      current.once('error', reject);
    });

    const deadline = Date.now() + READY_TIMEOUT_MS;
    let lastError = null;
    for (;;) {
      if (exited) {
        throw new Error(
          `reference Kafka exited before it was ready (${exited.code ?? exited.signal}):\n${tail.text()}`,
        );
      }
      if (Date.now() > deadline) {
        throw new Error(
          `reference Kafka not ready after ${READY_TIMEOUT_MS / 1000} s ` +
            `(last probe: ${lastError?.message ?? 'none'}):\n${tail.text()}`,
        );
      }
      try {
        // A parsed ApiVersions answer means the listener is really serving.
        const answer = await apiVersions({ host, port: plaintextPort }, 2000);
        if (answer.errorCode === 0 && answer.apiKeys.length > 0) break;
        lastError = new Error(`ApiVersions error code ${answer.errorCode}`);
      } catch (err) {
        lastError = err;
      }
      await sleep(250);
    }
  };

  try {
    await mkdir(logDir);
    await writeFile(
      propsFile,
      serverProperties({ port: plaintextPort, controllerPort, logDirs, proxied, nodeId: member?.nodeId, voters: member?.voters, settings }),
    );
    const clusterId = member?.clusterId ?? newClusterId();
    const formatted = await runJava(
      [...flags, '-cp', cp, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', propsFile],
      { timeoutMs: FORMAT_TIMEOUT_MS, log },
    );
    if (formatted.code !== 0) {
      throw new Error(
        `StorageTool format failed (${formatted.code ?? formatted.signal}):\n${formatted.output}`,
      );
    }
    process.on('exit', onParentExit);
    await launch();
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }

  let restarting = null;
  return {
    bootstrap: `${host}:${plaintextPort}`,
    host,
    port: plaintextPort,
    controllerPort,
    dataDir,
    version: referenceKafkaVersion(),
    get pid() {
      return child.pid;
    },
    proxied: proxied ?? null,
    outputTail: () => tail.text(),
    running: () => exited === null,
    kill,
    /** Starts a killed node again; a failed start leaves it killed, with the reason thrown. */
    restart() {
      restarting ??= (async () => {
        try {
          if (exited === null) return;
          // The old lifeline's stdin end is ours; close it so that its watcher (if it
          // outlived the SIGKILL) cannot remove the data dir later.
          child?.stdin?.destroy();
          await launch();
        } catch (err) {
          await kill();
          throw err;
        } finally {
          restarting = null;
        }
      })();
      return restarting;
    },
    stop,
  };
}

/** A KRaft cluster id: 16 random bytes, URL-safe base64. */
function newClusterId() {
  // An id starting with '-' would be read as an option by the formatter's argument parser.
  let id;
  do id = randomBytes(16).toString('base64url');
  while (id.startsWith('-'));
  return id;
}

/**
 * Starts `brokers` reference Kafka nodes, each a broker and a voter of one KRaft
 * quorum, on free loopback ports, with the single node's settings otherwise
 * (internal topics with one replica) unless `settings` says more. Resolves once every
 * node answers ApiVersions (a broker only listens once the quorum has it registered):
 * { nodes: [{ nodeId, bootstrap, host, port, pid, running(), kill(), restart() }],
 * bootstrap (all of them, comma-separated), version, stop() }.
 *
 * @param {{ brokers?: number, log?: (line: string) => void, settings?: Record<string, string>,
 *   heap?: string[], logDirs?: number, proxied?: { listenerPort: number, proxyPort: number }[] }} [options]
 *   settings, heap and logDirs apply to every node (see startReferenceKafka); proxied[i], when
 *   given, is node i+1's PROXIED listener.
 */
export async function startReferenceKafkaCluster({ brokers = 3, log, settings, heap, logDirs, proxied } = {}) {
  const host = '127.0.0.1';
  const taken = new Set((proxied ?? []).flatMap((p) => [p.listenerPort, p.proxyPort]));
  const ports = new Set();
  while (ports.size < brokers * 2) {
    const p = await freePort(host);
    if (!taken.has(p)) ports.add(p);
  }
  const [plaintext, controller] = [[...ports].slice(0, brokers), [...ports].slice(brokers)];
  const voters = controller.map((p, i) => `${i + 1}@${host}:${p}`).join(',');
  const clusterId = newClusterId();
  const started = await Promise.allSettled(
    plaintext.map((port, i) =>
      startReferenceKafka({
        log,
        port,
        settings,
        heap,
        logDirs,
        proxied: proxied?.[i],
        member: { nodeId: i + 1, voters, clusterId, controllerPort: controller[i] },
      }),
    ),
  );
  const nodes = started.filter((r) => r.status === 'fulfilled').map((r) => r.value);
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    nodes: nodes.map((n, i) => ({
      nodeId: i + 1,
      bootstrap: n.bootstrap,
      host: n.host,
      port: n.port,
      get pid() {
        return n.pid;
      },
      running: n.running,
      kill: n.kill,
      restart: n.restart,
      outputTail: n.outputTail,
    })),
    bootstrap: nodes.map((n) => n.bootstrap).join(','),
    version: referenceKafkaVersion(),
    stop,
  };
}

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

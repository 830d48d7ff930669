#!/usr/bin/env node
// Runs every compat client's scenarios against gregor and/or the reference Kafka broker,
// each as one broker or as a cluster of three.
// Usage: node compat-tests/matrix.mjs [--broker KIND[,KIND...]|both|all] [--clients a,b]
//                                     [--scenarios a,b] [--reference-clients a,b] [--reference-skip c:s,...] [--verbose]
// --reference-clients: on the Apache Kafka kinds (kafka, kafka-cluster), run only these clients
// --reference-skip: on the Apache Kafka kinds, leave out these client:scenario cells (long
// scenarios whose rules another client's scenario already compares with Kafka's answers)
// (the ones whose scenarios check Kafka's exact answers), to keep a run short.
// KIND: gregor, gregor-cluster, kafka, kafka-cluster; both = gregor,kafka; all = all four.
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { clusterOps, restoreBrokers, singleBrokerOps, startClusterControl } from './lib/cluster-control.mjs';
import { gregorProxiedArgs, proxiedEnv, reserveProxiedListener, reserveProxiedListeners } from './lib/cut-proxy.mjs';

// The one list of scenarios every client is asked to run.
export const SCENARIOS = [
  'admin', 'broker-configs', 'consumer-group-rules', 'corrupt-batch', 'feature-rules', 'group', 'group-admin', 'group-configs', 'group-consumer', 'group-migration', 'idempotent', 'idempotent-cut', 'log-dirs',
  'metadata', 'metadata-rules', 'produce', 'roundtrip', 'sasl-rules', 'share-group', 'share-group-rules',
  'streams-eos', 'streams-groups', 'topic-partitions', 'txn', 'txn-cluster',
];

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NOT_CLIENTS = new Set(['reference-kafka', 'capture', 'lib']);
const BROKER_NAMES = ['gregor', 'gregor-cluster', 'kafka', 'kafka-cluster'];
const BROKER_ALIASES = { both: ['gregor', 'kafka'], all: BROKER_NAMES };

// What each broker kind is, for the reports.
const BROKER_DESCRIPTIONS = {
  gregor: 'one gregor broker',
  'gregor-cluster': 'etcd and 3 gregor brokers; replication factor 3, min.insync.replicas 2',
  kafka: 'one Apache Kafka node (KRaft, broker and controller)',
  'kafka-cluster': '3 Apache Kafka nodes (KRaft, each broker and controller); replication factor 3, min.insync.replicas 2',
};

const CLUSTER_SIZE = 3;
// Every broker, gregor's and Kafka's, single or in a cluster, has two log directories (JBOD):
// partitions spread over them, and the log-dirs scenario moves replicas between them.
const LOG_DIRS = 2;
// Both clusters: user topics and the internal ones get 3 replicas and need 2 in sync.
// Leadership moves only when a scenario makes it (a broker killed and restarted): the periodic
// preferred-leader election (every 300 s) would otherwise move coordinators under whichever
// scenario happens to run then, a fault no scenario asked for.
const KAFKA_CLUSTER_SETTINGS = {
  'auto.leader.rebalance.enable': 'false',
  'default.replication.factor': '3',
  'min.insync.replicas': '2',
  'offsets.topic.replication.factor': '3',
  'transaction.state.log.replication.factor': '3',
  'transaction.state.log.min.isr': '2',
  // Kafka 4.4 turns share groups on by default (share.version 2), so their state topic is one
  // more internal topic a scenario could bring into being.
  'share.coordinator.state.topic.replication.factor': '3',
  'share.coordinator.state.topic.min.isr': '2',
};
// As the reference Kafka runs (lib/reference-kafka.mjs): a new group's first rebalance does not
// wait 3 s for more members.
const GREGOR_OVERRIDES = { 'group.initial.rebalance.delay.ms': '0' };
const GREGOR_CLUSTER_OVERRIDES = {
  ...GREGOR_OVERRIDES,
  'auto.leader.rebalance.enable': 'false',
  'default.replication.factor': '3',
  'offsets.topic.replication.factor': '3',
  'transaction.state.log.replication.factor': '3',
  'transaction.state.log.min.isr': '2',
  'min.insync.replicas': '2',
  // A killed broker's partitions move after 6 s instead of 9.
  'broker.session.timeout.ms': '6000',
};
const KAFKA_CLUSTER_HEAP = ['-Xms256m', '-Xmx512m'];

// Broker log records (pino JSON, level >= warn) that mean the cluster's metadata updates
// fought each other or an ISR change was lost: the gregor-cluster run fails on any of them.
const CLUSTER_LOG_PROBLEM = /compare-and-swap|lost \d+ times in a row|ISR change did not go through/;
const CLUSTER_LOG_ROW = 'cluster-log';
const CLUSTER_LOG_SHOWN = 5;

const CHECK_TIMEOUT_MS = 15_000;
const SCENARIO_TIMEOUT_MS = 60_000;
// Scenarios that need longer than SCENARIO_TIMEOUT_MS (their own bounds stay below these).
const SCENARIO_TIMEOUTS_MS = { 'streams-eos': 240_000, 'streams-groups': 240_000, 'txn-cluster': 120_000, 'group-consumer': 140_000, 'group-configs': 100_000, 'group-migration': 100_000, 'share-group': 160_000 };
const scenarioTimeout = (s) => SCENARIO_TIMEOUTS_MS[s] ?? SCENARIO_TIMEOUT_MS;
const BROKER_START_GUARD_MS = 180_000;
const OUTPUT_LIMIT = 64 * 1024;
const EXIT_DRAIN_MS = 1_000;

const EXIT_NOT_IMPLEMENTED = 3;
const CI = process.env.CI === 'true';

const PASS = 'pass';
const FAIL = 'FAIL';
const SKIPPED = 'skipped';
const NA = 'n/a';

// ---------------------------------------------------------------------------
// Arguments

function usage(message) {
  if (message) console.error(`matrix: ${message}`);
  console.error(
    'usage: node compat-tests/matrix.mjs [--broker KIND[,KIND...]|both|all] [--clients a,b] [--scenarios a,b] [--reference-clients a,b] [--reference-skip c:s,...] [--verbose]\n' +
      `  KIND: ${BROKER_NAMES.join(', ')}; both = gregor,kafka; all = all four`,
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { broker: 'gregor', clients: null, scenarios: null, referenceClients: null, referenceSkip: [], verbose: false };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const next = () => {
      if (value !== undefined) return value;
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      return argv[++i];
    };
    const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);
    switch (arg) {
      case '--broker':
        opts.broker = next();
        break;
      case '--clients':
        opts.clients = list(next());
        break;
      case '--scenarios':
        opts.scenarios = list(next());
        break;
      case '--reference-clients':
        opts.referenceClients = list(next());
        break;
      case '--reference-skip':
        opts.referenceSkip = list(next());
        if (opts.referenceSkip.some((cs) => !/^[^:]+:[^:]+$/.test(cs))) usage('--reference-skip takes client:scenario pairs');
        break;
      case '--verbose':
      case '-v':
        opts.verbose = true;
        break;
      case '--help':
      case '-h':
        usage();
        break;
      default:
        usage(`unknown argument ${arg}`);
    }
  }
  const kinds = opts.broker.split(',').map((x) => x.trim()).filter(Boolean).flatMap((k) => BROKER_ALIASES[k] ?? [k]);
  const unknown = kinds.filter((k) => !BROKER_NAMES.includes(k));
  if (kinds.length === 0 || unknown.length) {
    usage(`--broker takes a comma-separated list of ${BROKER_NAMES.join(', ')} (or both, all), not ${opts.broker}`);
  }
  opts.brokers = [...new Set(kinds)];
  return opts;
}

// ---------------------------------------------------------------------------
// Child processes

const running = new Set();

function indent(text, prefix = '    ') {
  return text
    .replace(/\s+$/, '')
    .split('\n')
    .map((l) => prefix + l)
    .join('\n');
}

/**
 * Runs a command in its own process group with a hard timeout; the whole group is killed
 * on timeout so a client's grandchildren (JVMs, python) cannot outlive it.
 */
function runCommand(file, args, { timeoutMs, cwd, env }) {
  return new Promise((resolve) => {
    const started = Date.now();
    let output = '';
    let timedOut = false;
    let child;
    try {
      // An undefined value removes the variable, so that none leaks in from the matrix's own environment.
      const childEnv = { ...process.env, ...env };
      for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
      child = spawn(file, args, { cwd, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ code: null, signal: null, timedOut, output: String(err.message), ms: 0 });
      return;
    }
    running.add(child);
    const collect = (chunk) => {
      output += chunk;
      if (output.length > OUTPUT_LIMIT) output = output.slice(output.length - OUTPUT_LIMIT);
    };
    child.stdout.setEncoding('utf8').on('data', collect);
    child.stderr.setEncoding('utf8').on('data', collect);
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGKILL');
    }, timeoutMs);
    let settled = false;
    const finish = (code, signal, extra = '') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      running.delete(child);
      // Grandchildren that ignored the parent's exit must not keep running.
      killGroup(child, 'SIGKILL');
      resolve({ code, signal, timedOut, output: output + extra, ms: Date.now() - started });
    };
    child.once('error', (err) => finish(null, null, `\n${err.message}`));
    child.once('close', (code, signal) => finish(code, signal));
    // A background grandchild can hold the output pipes open after the client exited;
    // give the pipes a moment to drain, then end the group and stop waiting for them.
    child.once('exit', (code, signal) => {
      setTimeout(() => {
        if (settled) return;
        killGroup(child, 'SIGKILL');
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, signal);
      }, EXIT_DRAIN_MS).unref();
    });
  });
}

function killGroup(child, signal) {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // group already gone
  }
}

function describeExit({ code, signal, timedOut }, timeoutMs) {
  if (timedOut) return `timed out after ${timeoutMs / 1000} s`;
  if (signal) return `killed by ${signal}`;
  return `exit ${code}`;
}

// ---------------------------------------------------------------------------
// Clients

function isExecutable(file) {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function discoverClients() {
  return readdirSync(HERE, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('.') && !NOT_CLIENTS.has(d.name))
    .filter((d) => isExecutable(path.join(HERE, d.name, 'run')))
    .map((d) => d.name)
    .sort();
}

async function checkClient(name) {
  const dir = path.join(HERE, name);
  const result = await runCommand(path.join(dir, 'run'), ['check'], { timeoutMs: CHECK_TIMEOUT_MS, cwd: dir });
  if (result.code === 0 && !result.timedOut) return { ok: true };
  const firstLine = result.output.split('\n').map((l) => l.trim()).find(Boolean);
  return { ok: false, reason: firstLine ?? `run check: ${describeExit(result, CHECK_TIMEOUT_MS)}` };
}

// ---------------------------------------------------------------------------
// Brokers

const liveBrokers = new Set();

async function withStartGuard(label, promise) {
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label} did not start within ${BROKER_START_GUARD_MS / 1000} s`)), BROKER_START_GUARD_MS);
  });
  try {
    return await Promise.race([promise, guard]);
  } catch (err) {
    // A broker that comes up after the guard fired must still be stopped.
    promise.then((b) => b?.stop?.()).catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts a broker, or a cluster, with, beside each broker's PLAINTEXT listener, a PROXIED one
 * for scenarios that put a proxy between client and broker (lib/cut-proxy.mjs); env tells
 * them where. Each comes with `ops` (lib/cluster-control.mjs), through which the matrix and
 * the scenarios kill its brokers and start them again on their ports and data (a single broker
 * is a list of one).
 * @returns {Promise<{ broker?: object, env?: object, ops?: object, unavailable?: string, error?: string }>}
 */
async function startBroker(name, { onBrokerLine } = {}) {
  if (name === 'gregor') {
    const proxied = await reserveProxiedListener();
    const { startRestartableGregor } = await import(pathToFileURL(path.join(HERE, 'lib', 'gregor.mjs')).href);
    try {
      // A fixed PLAINTEXT port (not 0), so that a killed broker comes back at the same address.
      const broker = await withStartGuard('gregor', startRestartableGregor({
        avoid: [proxied.listenerPort, proxied.proxyPort],
        args: (port) => [...gregorProxiedArgs(proxied, port), ...Object.entries(GREGOR_OVERRIDES).flatMap(([k, v]) => ['--override', `${k}=${v}`])],
        logDirs: LOG_DIRS,
      }));
      return { broker, env: proxiedEnv(proxied), ops: singleBrokerOps(broker) };
    } catch (err) {
      return { error: err.message };
    }
  }
  if (name === 'gregor-cluster') {
    const { etcdBinary } = await import(pathToFileURL(path.join(HERE, 'lib', 'etcd.mjs')).href);
    if (!etcdBinary()) return { unavailable: 'etcd is not installed (Debian package etcd-server), or set ETCD to its path' };
    const proxied = await reserveProxiedListeners(CLUSTER_SIZE);
    const { startGregorCluster } = await import(pathToFileURL(path.join(HERE, 'lib', 'gregor-cluster.mjs')).href);
    try {
      const cluster = await withStartGuard('gregor cluster', startGregorCluster({
        brokers: CLUSTER_SIZE,
        overrides: GREGOR_CLUSTER_OVERRIDES,
        logDirs: LOG_DIRS,
        proxied,
        onLine: onBrokerLine,
      }));
      return { broker: clusterBroker(cluster), env: proxiedEnv(proxied), ops: clusterOps(cluster) };
    } catch (err) {
      return { error: err.message };
    }
  }
  const lib = path.join(HERE, 'lib', 'reference-kafka.mjs');
  if (!existsSync(lib)) return { unavailable: `${path.relative(process.cwd(), lib)} does not exist` };
  const refRun = path.join(HERE, 'reference-kafka', 'run');
  if (isExecutable(refRun)) {
    const check = await checkClient('reference-kafka');
    if (!check.ok) return { unavailable: check.reason };
  }
  try {
    const { startReferenceKafka, startReferenceKafkaCluster } = await import(pathToFileURL(lib).href);
    if (name === 'kafka-cluster') {
      if (typeof startReferenceKafkaCluster !== 'function') return { error: `${lib} does not export startReferenceKafkaCluster()` };
      const proxied = await reserveProxiedListeners(CLUSTER_SIZE);
      const cluster = await withStartGuard('reference Kafka cluster', startReferenceKafkaCluster({
        brokers: CLUSTER_SIZE,
        settings: KAFKA_CLUSTER_SETTINGS,
        heap: KAFKA_CLUSTER_HEAP,
        logDirs: LOG_DIRS,
        proxied,
      }));
      const ops = clusterOps(cluster);
      // A node answers ApiVersions before the others have it in their Metadata.
      try {
        await ops.settle();
      } catch (err) {
        await cluster.stop();
        throw err;
      }
      return { broker: clusterBroker(cluster), env: proxiedEnv(proxied), ops };
    }
    if (typeof startReferenceKafka !== 'function') return { error: `${lib} does not export startReferenceKafka()` };
    const proxied = await reserveProxiedListener();
    const broker = await withStartGuard('reference Kafka', startReferenceKafka({ proxied, logDirs: LOG_DIRS }));
    return { broker, env: proxiedEnv(proxied), ops: singleBrokerOps(broker) };
  } catch (err) {
    return { error: err.message };
  }
}

/**
 * The broker a scenario is given for a cluster: the first broker's address, since not every
 * client's `run scenario` takes a list (see README.md); `all` has every broker's.
 */
function clusterBroker(cluster) {
  const all = cluster.bootstrap;
  return { bootstrap: all.split(',')[0], all, cluster, stop: () => cluster.stop() };
}

async function stopBroker(name, broker) {
  try {
    const code = await broker.stop();
    liveBrokers.delete(broker);
    if (typeof code === 'number' && code !== 0) {
      console.log(`WARNING: ${name} exited with code ${code} when stopped`);
      if (typeof broker.output === 'function') console.log(indent(broker.output().slice(-4_000)));
    }
  } catch (err) {
    liveBrokers.delete(broker);
    console.log(`WARNING: stopping ${name} failed: ${err.message}`);
  }
}

// ---------------------------------------------------------------------------
// Reporting

function renderTable(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd()).join('\n');
}

function markdownTable(rows) {
  const [head, ...body] = rows;
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...body.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

// One row per client, then any rows the matrix adds itself (cluster-log).
function tableRows(scenarios, cells) {
  return [['client', ...scenarios], ...Object.keys(cells).map((c) => [c, ...scenarios.map((s) => cells[c][s]?.status ?? NA)])];
}

function summaryLine(counts) {
  return `compat: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
}

function writeReports({ opts, clients, scenarios, results, counts, notes }) {
  const when = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const sections = [
    `Run ${when} with Node ${process.version}: \`node compat-tests/matrix.mjs ${process.argv.slice(2).join(' ')}\``.replace(/ `$/, '`'),
  ];
  for (const [broker, cells] of results) {
    sections.push(`**Broker: ${broker}** (${BROKER_DESCRIPTIONS[broker]})`);
    sections.push(clients.length ? markdownTable(tableRows(scenarios, cells)) : '(no clients)');
    for (const n of notes.get(broker) ?? []) sections.push(`- ${n}`);
  }
  sections.push(`\`${summaryLine(counts)}\``);
  const body = sections.join('\n\n');

  writeFileSync(path.join(HERE, 'RESULTS.md'), `# Compat results\n\n${body}\n`);

  for (const readme of [path.join(HERE, '..', 'README.md'), path.join(HERE, 'README.md')]) {
    if (!existsSync(readme)) continue;
    const text = readFileSync(readme, 'utf8');
    const begin = '<!-- compat-table:begin -->';
    const end = '<!-- compat-table:end -->';
    const b = text.indexOf(begin);
    const e = text.indexOf(end);
    if (b < 0 || e < b) continue;
    const updated = `${text.slice(0, b + begin.length)}\n${body}\n${text.slice(e)}`;
    if (updated !== text) writeFileSync(readme, updated);
  }
}

// ---------------------------------------------------------------------------
// The gregor cluster's log check

/**
 * Reads a gregor cluster's log lines (pino JSON) as they come: counts the warn and error
 * records of each broker, and keeps the records at warn or above whose msg says the cluster's
 * metadata updates fought each other or an ISR change was lost (CLUSTER_LOG_PROBLEM), each
 * with the client and scenario running when it was logged.
 */
class ClusterLogWatch {
  constructor() {
    this.current = null; // null until the first scenario: start-up
    this.counts = new Map();
    this.problems = [];
    this.onLine = (id, line) => this.see(id, line);
  }

  label(client, scenario) {
    this.current = { client, scenario };
  }

  see(id, line) {
    if (!line.startsWith('{')) return;
    let rec;
    try {
      rec = JSON.parse(line);
    } catch {
      return;
    }
    const level = Number(rec?.level);
    if (!(level >= 40)) return;
    const count = this.counts.get(id) ?? { warn: 0, error: 0 };
    if (level >= 50) count.error++;
    else count.warn++;
    this.counts.set(id, count);
    if (typeof rec.msg === 'string' && CLUSTER_LOG_PROBLEM.test(rec.msg)) this.problems.push({ id, at: this.current, line });
  }

  /**
   * Adds the cluster-log row: in each scenario's column FAIL when a problem record was logged
   * while that scenario ran (for any client, including the restart of brokers it killed),
   * pass when none was, n/a when no client ran it. Records from the cluster's start-up count
   * in the first scenario that ran.
   */
  report({ cells, scenarios, record, notes, brokerName }) {
    const ran = (s) => Object.entries(cells).some(([c, byScenario]) => c !== CLUSTER_LOG_ROW && [PASS, FAIL].includes(byScenario[s]?.status));
    const first = scenarios.find(ran);
    const column = (p) => p.at?.scenario ?? first;
    cells[CLUSTER_LOG_ROW] = {};
    for (const s of scenarios) {
      if (!ran(s)) {
        record(cells, CLUSTER_LOG_ROW, s, NA);
        continue;
      }
      const found = this.problems.filter((p) => column(p) === s).length;
      record(cells, CLUSTER_LOG_ROW, s, found ? FAIL : PASS, `${found} problem records`);
    }
    const ids = [...this.counts.keys()].sort((a, b) => a - b);
    const perBroker = ids.length
      ? ids.map((id) => `broker ${id}: ${this.counts.get(id).warn} warn, ${this.counts.get(id).error} error`).join('; ')
      : 'no warn or error records';
    console.log(`[${brokerName}] broker logs: ${perBroker}`);
    notes.push(`broker logs: ${perBroker}`);
    if (this.problems.length === 0) {
      console.log(`[${brokerName}] ${CLUSTER_LOG_ROW}: pass (no record matching ${CLUSTER_LOG_PROBLEM})`);
      return;
    }
    const where = (p) => (p.at ? `during ${p.at.client} ${p.at.scenario}` : 'during start-up');
    const byCell = new Map();
    for (const p of this.problems) {
      const key = p.at ? `${p.at.client} ${p.at.scenario}` : 'start-up';
      byCell.set(key, (byCell.get(key) ?? 0) + 1);
    }
    const counted = [...byCell].map(([k, n]) => `${k}: ${n}`).join('; ');
    console.log(`[${brokerName}] ${CLUSTER_LOG_ROW}: FAIL: ${this.problems.length} record(s) matching ${CLUSTER_LOG_PROBLEM} (${counted}); the first ${Math.min(CLUSTER_LOG_SHOWN, this.problems.length)}:`);
    for (const p of this.problems.slice(0, CLUSTER_LOG_SHOWN)) console.log(indent(`broker ${p.id} ${where(p)}: ${p.line.slice(0, 600)}`));
    const bad = this.problems[0];
    notes.push(`${CLUSTER_LOG_ROW}: ${this.problems.length} record(s) matching ${CLUSTER_LOG_PROBLEM} (${counted}), the first from broker ${bad.id} ${where(bad)}: \`${bad.line.slice(0, 300).replace(/`/g, "'")}\``);
  }
}

// ---------------------------------------------------------------------------
// Main

let interrupted = false;

async function cleanup() {
  for (const child of running) killGroup(child, 'SIGKILL');
  await Promise.all([...liveBrokers].map((b) => Promise.resolve(b.stop()).catch(() => {})));
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    interrupted = true;
    console.log(`\nmatrix: ${sig}, stopping brokers and clients`);
    cleanup().finally(() => process.exit(130));
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const all = discoverClients();
  let clients = all;
  if (opts.clients) {
    const unknown = opts.clients.filter((c) => !all.includes(c));
    if (unknown.length) usage(`unknown client(s): ${unknown.join(', ')} (found: ${all.join(', ') || 'none'})`);
    clients = opts.clients;
  }
  const scenarios = opts.scenarios ?? SCENARIOS;
  const extra = scenarios.filter((s) => !SCENARIOS.includes(s));
  if (extra.length) console.log(`note: scenario(s) not in the known list: ${extra.join(', ')}`);

  console.log(
    `compat matrix: brokers ${opts.brokers.join(', ')}; clients ${clients.join(', ') || '(none)'}; scenarios ${scenarios.join(', ')}${CI ? '; CI=true' : ''}`,
  );
  if (opts.referenceClients) console.log(`on Apache Kafka only: ${clients.filter((c) => opts.referenceClients.includes(c)).join(', ') || '(none)'}`);
  const allClients = clients;

  const readiness = new Map();
  for (const c of clients) {
    const r = await checkClient(c);
    readiness.set(c, r);
    if (!r.ok) {
      if (CI) console.log(`FAILED ${c}: not installed under CI: ${r.reason}`);
      else console.log(`SKIPPED ${c}: ${r.reason}`);
    }
    if (interrupted) return 130;
  }

  // n/a cells (a client without that scenario) are neither run nor skipped.
  const counts = { passed: 0, failed: 0, skipped: 0, notApplicable: 0 };
  const results = new Map();
  const notes = new Map();
  const record = (cells, client, scenario, status, detail = '') => {
    cells[client][scenario] = { status, detail };
    if (status === PASS) counts.passed++;
    else if (status === FAIL) counts.failed++;
    else if (status === NA) counts.notApplicable++;
    else counts.skipped++;
  };

  if (opts.referenceClients) {
    const unknown = opts.referenceClients.filter((c) => !all.includes(c));
    if (unknown.length) usage(`unknown client(s) in --reference-clients: ${unknown.join(', ')}`);
  }
  for (const brokerName of opts.brokers) {
    const clients = opts.referenceClients && brokerName.startsWith('kafka') ? allClients.filter((c) => opts.referenceClients.includes(c)) : allClients;
    const cells = Object.fromEntries(clients.map((c) => [c, {}]));
    results.set(brokerName, cells);
    notes.set(brokerName, []);
    const ready = clients.filter((c) => readiness.get(c).ok);
    for (const c of clients.filter((c) => !readiness.get(c).ok)) {
      for (const s of scenarios) record(cells, c, s, CI ? FAIL : SKIPPED, readiness.get(c).reason);
    }
    if (ready.length === 0) continue;

    console.log(`\n== ${brokerName} ==`);
    const logWatch = brokerName === 'gregor-cluster' ? new ClusterLogWatch() : null;
    const started = await startBroker(brokerName, { onBrokerLine: logWatch?.onLine });
    if (interrupted) {
      if (started.broker) await stopBroker(brokerName, started.broker);
      return 130;
    }
    if (!started.broker) {
      const why = started.unavailable ?? started.error;
      const status = started.unavailable && !CI ? SKIPPED : FAIL;
      if (status === SKIPPED) console.log(`SKIPPED broker ${brokerName}: ${why}`);
      else if (started.unavailable) console.log(`FAILED broker ${brokerName}: unavailable under CI: ${why}`);
      else console.log(`FAILED broker ${brokerName} did not start:\n${indent(why)}`);
      notes.get(brokerName).push(`${brokerName} ${status === SKIPPED ? 'unavailable' : 'did not start'}: ${why.split('\n')[0]}`);
      for (const c of ready) for (const s of scenarios) record(cells, c, s, status, why);
      continue;
    }
    const broker = started.broker;
    liveBrokers.add(broker);
    const env = { ...started.env, COMPAT_CLUSTER_CONTROL: undefined };
    let control = null;
    if (started.ops) {
      control = await startClusterControl(started.ops);
      env.COMPAT_CLUSTER_CONTROL = control.url;
    }
    const controlNote = control ? `; cluster control ${control.url}` : '';
    if (broker.all) console.log(`${brokerName}: brokers ${broker.all}; scenarios bootstrap from ${broker.bootstrap}${controlNote}`);
    else console.log(`${brokerName} listening on ${broker.bootstrap}${controlNote}`);
    console.log(`${brokerName}: PROXIED listener ${env.COMPAT_PROXY_TARGET} advertised as ${env.COMPAT_PROXY_LISTEN}`);
    // Set when a killed broker does not come back: the cells after it are not run, and fail.
    let brokenCluster = null;
    try {
      for (const c of ready) {
        const dir = path.join(HERE, c);
        for (const s of scenarios) {
          if (interrupted) return 130;
          if (brokenCluster) {
            record(cells, c, s, FAIL, brokenCluster);
            continue;
          }
          if (brokerName.startsWith('kafka') && opts.referenceSkip.includes(`${c}:${s}`)) {
            record(cells, c, s, NA, 'left out on Apache Kafka (--reference-skip)');
            console.log(`[${brokerName}] ${c} ${s}: n/a (left out on Apache Kafka by --reference-skip)`);
            continue;
          }
          logWatch?.label(c, s);
          const timeoutMs = scenarioTimeout(s);
          const r = await runCommand(path.join(dir, 'run'), ['scenario', s, broker.bootstrap], { timeoutMs, cwd: dir, env });
          if (interrupted) return 130;
          let status;
          if (r.code === 0 && !r.timedOut) status = PASS;
          else if (r.code === EXIT_NOT_IMPLEMENTED && !r.timedOut) status = NA;
          else status = FAIL;
          const exit = describeExit(r, timeoutMs);
          record(cells, c, s, status, exit);
          const secs = (r.ms / 1000).toFixed(1);
          console.log(`[${brokerName}] ${c} ${s}: ${status}${status === FAIL ? ` (${exit})` : ''} ${secs} s`);
          if ((status === FAIL || opts.verbose) && r.output.trim()) console.log(indent(r.output));
          if (started.ops) {
            // The next scenario finds every broker running, whatever this one killed.
            try {
              const restarted = await restoreBrokers(started.ops);
              if (restarted.length) console.log(`[${brokerName}] restarted broker(s) ${restarted.join(', ')} after ${c} ${s}`);
            } catch (err) {
              brokenCluster = `after ${c} ${s}, a broker did not come back: ${err.message.split('\n')[0]}`;
              console.log(`[${brokerName}] FAILED: ${brokenCluster}; the scenarios after it fail without running\n${indent(err.message)}`);
              notes.get(brokerName).push(`${brokenCluster}; the scenarios after it failed without running`);
            }
          }
        }
      }
    } finally {
      await control?.stop();
      await stopBroker(brokerName, broker);
    }
    if (logWatch) logWatch.report({ cells, scenarios, record, notes: notes.get(brokerName), brokerName });
  }

  console.log('');
  for (const [brokerName, cells] of results) {
    console.log(`broker: ${brokerName} (${BROKER_DESCRIPTIONS[brokerName]})`);
    console.log(clients.length ? indent(renderTable(tableRows(scenarios, cells)), '  ') : '  (no clients)');
  }
  writeReports({ opts, clients, scenarios, results, counts, notes });
  console.log(summaryLine(counts));
  return counts.failed > 0 ? 1 : 0;
}

main().then(
  async (code) => {
    await cleanup();
    process.exit(code);
  },
  async (err) => {
    console.error(`matrix: ${err?.stack ?? err}`);
    await cleanup();
    process.exit(1);
  },
);

#!/usr/bin/env node
// Runs every compat client's scenarios against gregor and/or the reference Kafka broker.
// Usage: node compat-tests/matrix.mjs [--broker gregor|kafka|both] [--clients a,b]
//                                     [--scenarios a,b] [--verbose]
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gregorProxiedArgs, proxiedEnv, reserveProxiedListener } from './lib/cut-proxy.mjs';

// The one list of scenarios every client is asked to run.
export const SCENARIOS = [
  'admin', 'corrupt-batch', 'group', 'group-admin', 'idempotent', 'idempotent-cut', 'metadata', 'metadata-rules', 'produce', 'roundtrip', 'txn',
];

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NOT_CLIENTS = new Set(['reference-kafka', 'capture', 'lib']);
const BROKER_NAMES = ['gregor', 'kafka'];

const CHECK_TIMEOUT_MS = 15_000;
const SCENARIO_TIMEOUT_MS = 60_000;
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
    'usage: node compat-tests/matrix.mjs [--broker gregor|kafka|both] [--clients a,b] [--scenarios a,b] [--verbose]',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { broker: 'gregor', clients: null, scenarios: null, verbose: false };
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
  if (opts.broker === 'both') opts.brokers = [...BROKER_NAMES];
  else if (BROKER_NAMES.includes(opts.broker)) opts.brokers = [opts.broker];
  else usage(`--broker must be gregor, kafka or both, not ${opts.broker}`);
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
      child = spawn(file, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
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
 * Starts a broker with, beside its PLAINTEXT listener, a PROXIED one for scenarios that
 * put a proxy between client and broker (lib/cut-proxy.mjs); env tells them where.
 * @returns {Promise<{ broker?: object, env?: object, unavailable?: string, error?: string }>}
 */
async function startBroker(name) {
  const proxied = await reserveProxiedListener();
  const env = proxiedEnv(proxied);
  if (name === 'gregor') {
    const { startGregor } = await import(pathToFileURL(path.join(HERE, 'lib', 'gregor.mjs')).href);
    try {
      return { broker: await withStartGuard('gregor', startGregor({ args: gregorProxiedArgs(proxied) })), env };
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
    const { startReferenceKafka } = await import(pathToFileURL(lib).href);
    if (typeof startReferenceKafka !== 'function') return { error: `${lib} does not export startReferenceKafka()` };
    return { broker: await withStartGuard('reference Kafka', startReferenceKafka({ proxied })), env };
  } catch (err) {
    return { error: err.message };
  }
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

function tableRows(clients, scenarios, cells) {
  return [['client', ...scenarios], ...clients.map((c) => [c, ...scenarios.map((s) => cells[c][s].status)])];
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
    sections.push(`**Broker: ${broker}**`);
    sections.push(clients.length ? markdownTable(tableRows(clients, scenarios, cells)) : '(no clients)');
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

  for (const brokerName of opts.brokers) {
    const cells = Object.fromEntries(clients.map((c) => [c, {}]));
    results.set(brokerName, cells);
    notes.set(brokerName, []);
    const ready = clients.filter((c) => readiness.get(c).ok);
    for (const c of clients.filter((c) => !readiness.get(c).ok)) {
      for (const s of scenarios) record(cells, c, s, CI ? FAIL : SKIPPED, readiness.get(c).reason);
    }
    if (ready.length === 0) continue;

    console.log(`\n== ${brokerName} ==`);
    const started = await startBroker(brokerName);
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
    console.log(`${brokerName} listening on ${broker.bootstrap}; PROXIED listener ${started.env.COMPAT_PROXY_TARGET} advertised as ${started.env.COMPAT_PROXY_LISTEN}`);
    try {
      for (const c of ready) {
        const dir = path.join(HERE, c);
        for (const s of scenarios) {
          if (interrupted) return 130;
          const r = await runCommand(path.join(dir, 'run'), ['scenario', s, broker.bootstrap], {
            timeoutMs: SCENARIO_TIMEOUT_MS,
            cwd: dir,
            env: started.env,
          });
          if (interrupted) return 130;
          let status;
          if (r.code === 0 && !r.timedOut) status = PASS;
          else if (r.code === EXIT_NOT_IMPLEMENTED && !r.timedOut) status = NA;
          else status = FAIL;
          const exit = describeExit(r, SCENARIO_TIMEOUT_MS);
          record(cells, c, s, status, exit);
          const secs = (r.ms / 1000).toFixed(1);
          console.log(`[${brokerName}] ${c} ${s}: ${status}${status === FAIL ? ` (${exit})` : ''} ${secs} s`);
          if ((status === FAIL || opts.verbose) && r.output.trim()) console.log(indent(r.output));
        }
      }
    } finally {
      await stopBroker(brokerName, broker);
    }
  }

  console.log('');
  for (const [brokerName, cells] of results) {
    console.log(`broker: ${brokerName}`);
    console.log(clients.length ? indent(renderTable(tableRows(clients, scenarios, cells)), '  ') : '  (no clients)');
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

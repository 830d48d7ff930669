// Apache Kafka's own command-line tools (target/lib, resolved by `run install`) against a
// broker: each tool runs in its own JVM, as a person would run kafka-topics.sh or
// kafka-consumer-groups.sh, and its printed output is parsed and checked.
//
// Usage: node scenarios.mjs <scenario> <host:port>
//        node scenarios.mjs --archive     (run install: the class-data archives, see README.md)
//
// group-consumer: while kafka-console-consumer (group.protocol=consumer) holds a group,
// kafka-topics --describe, kafka-consumer-groups --describe (offsets, members, state) and
// --list must show the topic and the group as they are; then the consumer reads the rest
// and exits, and the group's committed offsets and lag must follow. See README.md.
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeBrokerConfigs, metadataBrokers, topicMetadata, waitForTopic } from '../lib/broker-requests.mjs';
import { expect, runScenarios, ScenarioFailure, settle } from '../lib/scenario.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const LIB = path.join(HERE, 'target', 'lib');
const VERSION = process.env.KAFKA_TOOLS_VERSION ?? '4.4.0';

const TOPIC_COMMAND = 'org.apache.kafka.tools.TopicCommand';
const GROUP_COMMAND = 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand';
const CONSOLE_PRODUCER = 'org.apache.kafka.tools.ConsoleProducer';
const CONSOLE_CONSUMER = 'org.apache.kafka.tools.consumer.ConsoleConsumer';
const GET_OFFSETS = 'org.apache.kafka.tools.GetOffsetShell';
const LOG_DIRS = 'org.apache.kafka.tools.LogDirsCommand';
const REASSIGN = 'org.apache.kafka.tools.reassign.ReassignPartitionsCommand';
const CONFIG_COMMAND = 'org.apache.kafka.tools.ConfigCommand';
const CONSOLE_SHARE_CONSUMER = 'org.apache.kafka.tools.consumer.ConsoleShareConsumer';
const SHARE_GROUP_COMMAND = 'org.apache.kafka.tools.consumer.group.ShareGroupCommand';

const PARTITIONS = 3;
// Records produced before the consumer starts, while it holds the group (it then exits
// having read FIRST + SECOND), and after it left (the lag the group must show).
const FIRST = 30;
const SECOND = 10;
const THIRD = 9;
const RETENTION_MS = '3600000';
const CLIENT_ID = 'compat-tools-consumer';
// One tool's JVM, from start to exit.
const TOOL_TIMEOUT_MS = 45_000;
// The admin tools' own bounds (--command-config), under TOOL_TIMEOUT_MS.
const ADMIN_TIMEOUT_MS = 15_000;
// The console consumer joining and reading FIRST; reading SECOND and exiting.
const JOIN_TIMEOUT_MS = 40_000;
const FINISH_TIMEOUT_MS = 30_000;
// The console consumer commits every AUTO_COMMIT_MS; the group is described again until its
// offsets are the expected ones, for up to COMMIT_TIMEOUT_MS.
const AUTO_COMMIT_MS = 500;
const COMMIT_TIMEOUT_MS = 15_000;
// The whole scenario, under run's 110 s and the matrix's 140 s for it.
const SCENARIO_TIMEOUT_MS = 100_000;

// Short-lived JVMs: the client compiler only, the serial collector, a small heap. The JVM's
// own warnings go to stderr, so that stdout carries only what the tool prints.
const JVM_FLAGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xms64m', '-Xmx256m', '-Xlog:disable', '-Xlog:all=warning:stderr'];
// Loading and verifying the tools' classes is most of a tool's start-up. `run install` leaves a
// class-data-sharing archive per tool class (target/cds, made by `node scenarios.mjs
// --archive`), which every run maps instead; where one is missing, the first run of that class
// that exits 0 writes it. A stale archive only costs that time again (the JVM warns on stderr).
const CDS_DIR = path.join(HERE, 'target', 'cds');

const started = Date.now();
// Inside wave(), each task's lines are kept and printed after the wave, task by task.
const buffered = new AsyncLocalStorage();
const say = (text) => {
  const lines = buffered.getStore();
  if (lines) lines.push(text);
  else console.log(text);
};
const log = (line) => say(`  +${((Date.now() - started) / 1000).toFixed(2)} s ${line}`);

/** Runs tasks side by side (tools that only read); prints their lines in task order; the first failure fails it. */
async function wave(tasks) {
  const outputs = tasks.map(() => []);
  const results = await Promise.allSettled(tasks.map((task, i) => buffered.run(outputs[i], task)));
  for (const lines of outputs) for (const line of lines) console.log(line);
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => r.value);
}
const indent = (text) => text.replace(/\s+$/, '').split('\n').map((l) => `    | ${l}`).join('\n');

/** The java command line for a tool class. */
function javaArgs(cls, args, cds) {
  return [...JVM_FLAGS, ...cds, `-Dlog4j2.configurationFile=${path.join(HERE, 'log4j2.properties')}`, '-cp', CLASSPATH, cls, ...args];
}

// The jars by name, in a fixed order: an archive is only used with the class path it was made with.
const CLASSPATH = readdirSync(LIB).filter((f) => f.endsWith('.jar')).sort().map((f) => path.join(LIB, f)).join(':');

// Tool classes whose archive a run of this process is writing: one at a time per class.
const archiving = new Set();

/** The archive options for a tool class, and what to do once it has exited (`keep` even on a non-zero exit). */
function cdsFor(cls, keep = false) {
  const archive = path.join(CDS_DIR, `${cls}.jsa`);
  if (existsSync(archive)) return { flags: [`-XX:SharedArchiveFile=${archive}`], done: () => {} };
  if (archiving.has(cls)) return { flags: [], done: () => {} };
  archiving.add(cls);
  mkdirSync(CDS_DIR, { recursive: true });
  // Written under another name and renamed once the tool has exited 0, so that no run maps a
  // half-written archive (two scenarios at once each write their own).
  const partial = `${archive}.${process.pid}.tmp`;
  return {
    flags: [`-XX:ArchiveClassesAtExit=${partial}`],
    done: (code) => {
      archiving.delete(cls);
      try {
        if ((code === 0 || keep) && existsSync(partial) && !existsSync(archive)) renameSync(partial, archive);
      } finally {
        rmSync(partial, { force: true });
      }
    },
  };
}

// Tools still running when this process exits (a failed or timed-out scenario) are killed.
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Starts a tool; `onLine(line)` sees each line of its stdout as it comes. */
function startTool(cls, args, { input, onLine, timeoutMs = TOOL_TIMEOUT_MS, archive = false, termAfterMs } = {}) {
  const cds = cdsFor(cls, archive);
  const child = spawn('java', javaArgs(cls, args, cds.flags), { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    stdout += chunk;
    if (!onLine) return;
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop();
    for (const line of lines) onLine(line);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk) => {
    stderr += chunk;
  });
  child.stdin.on('error', () => {});
  child.stdin.end(input ?? '');
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  // A tool that never gives up by itself (the console share consumer) is asked to stop, so that
  // it exits as after Ctrl-C, its shutdown hooks run and the JVM writes its archive.
  const term = termAfterMs === undefined ? null : setTimeout(() => child.kill('SIGTERM'), termAfterMs);
  term?.unref();
  const done = new Promise((resolve) => {
    child.once('error', (err) => {
      clearTimeout(timer);
      clearTimeout(term);
      resolve({ code: null, stdout, stderr: `${stderr}${err.message}\n`, timedOut });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      clearTimeout(term);
      cds.done(code);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
  live.add(child);
  child.once('close', () => live.delete(child));
  return { child, done, output: () => ({ stdout, stderr }) };
}

/** What a tool printed, for a failure message. */
function shown({ stdout, stderr }) {
  const parts = [];
  if (stdout.trim()) parts.push(`stdout:\n${indent(stdout.slice(-3000))}`);
  if (stderr.trim()) parts.push(`stderr:\n${indent(stderr.slice(-3000))}`);
  return parts.join('\n') || '(printed nothing)';
}

/** Runs a tool to its end; fails unless it exits 0. Returns its stdout and stderr. */
async function tool(name, cls, args, options = {}) {
  const t0 = Date.now();
  const result = await startTool(cls, args, options).done;
  if (result.timedOut) throw new ScenarioFailure(`${name}: no exit within ${options.timeoutMs ?? TOOL_TIMEOUT_MS} ms\n${shown(result)}`);
  if (result.code !== 0) throw new ScenarioFailure(`${name}: exit ${result.code}\n${shown(result)}`);
  log(`${name} (${Date.now() - t0} ms)`);
  return result;
}

/** Prints a tool's table, indented. */
function print(text) {
  const body = text.replace(/^\s*\n/, '').replace(/\s+$/, '');
  if (body) say(indent(body));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Rows of a whitespace-separated table whose header starts with `first`: [{ COLUMN: value }]. */
function table(text, first) {
  const lines = text.split('\n').filter((l) => l.trim());
  const at = lines.findIndex((l) => l.trim().split(/\s+/)[0] === first);
  if (at < 0) return null;
  const columns = lines[at].trim().split(/\s+/);
  return lines.slice(at + 1).map((line) => {
    const cells = line.trim().split(/\s+/);
    return Object.fromEntries(columns.map((c, i) => [c, cells[i]]));
  });
}

const nodes = (s) => (s === undefined || s === '' || s === 'N/A' ? [] : s.split(',').map(Number));
const sameSet = (a, b) => a.length === b.length && [...a].sort().join() === [...b].sort().join();

// ---------------------------------------------------------------------------

/** kafka-topics --describe: the topic line and one line per partition. */
function parseTopicDescription(text, topic) {
  const field = (line, name) => {
    const m = new RegExp(`(?:^|\\t)\\s*${name}: ?([^\\t]*)`).exec(line);
    return m ? m[1].trim() : undefined;
  };
  const lines = text.split('\n').filter((l) => l.includes(`Topic: ${topic}`));
  const head = lines.find((l) => !/\bPartition: /.test(l));
  expect(head, `kafka-topics --describe printed no line for topic ${topic}`);
  const partitions = lines
    .filter((l) => /\bPartition: /.test(l))
    .map((l) => ({
      partition: Number(field(l, 'Partition')),
      leader: Number(field(l, 'Leader')),
      replicas: nodes(field(l, 'Replicas')),
      isr: nodes(field(l, 'Isr')),
      elr: field(l, 'Elr'),
      lastKnownElr: field(l, 'LastKnownElr'),
    }));
  return {
    topicId: field(head, 'TopicId'),
    partitionCount: Number(field(head, 'PartitionCount')),
    replicationFactor: Number(field(head, 'ReplicationFactor')),
    configs: field(head, 'Configs') ?? '',
    partitions,
  };
}

async function checkTopicDescription(bootstrap, topic, admin, replicationFactor) {
  const { stdout } = await tool('kafka-topics --describe', TOPIC_COMMAND, [...admin, '--describe', '--topic', topic]);
  print(stdout);
  const d = parseTopicDescription(stdout, topic);
  expect(d.partitionCount === PARTITIONS, `PartitionCount ${d.partitionCount}, expected ${PARTITIONS}`);
  expect(d.replicationFactor === replicationFactor, `ReplicationFactor ${d.replicationFactor}, expected the broker's default.replication.factor ${replicationFactor}`);
  expect(/^[A-Za-z0-9_-]{22}$/.test(d.topicId ?? '') && d.topicId !== 'AAAAAAAAAAAAAAAAAAAAAA', `TopicId ${d.topicId}, expected a non-zero topic id`);
  expect(d.configs.split(',').includes(`retention.ms=${RETENTION_MS}`), `Configs "${d.configs}" lack retention.ms=${RETENTION_MS}`);
  const seen = d.partitions.map((p) => p.partition).sort((a, b) => a - b);
  expect(seen.join() === '0,1,2', `partition lines for [${seen}], expected [0,1,2]`);
  // The broker's own Metadata is what the tool must agree with.
  const meta = await topicMetadata(hostPort(bootstrap), topic, 5_000);
  for (const p of d.partitions) {
    const what = `partition ${p.partition}`;
    expect(p.replicas.length === replicationFactor && new Set(p.replicas).size === p.replicas.length,
      `${what}: Replicas ${p.replicas}, expected ${replicationFactor} distinct brokers`);
    expect(p.replicas.includes(p.leader), `${what}: Leader ${p.leader} is not one of Replicas ${p.replicas}`);
    // A new topic with every broker up has every replica in sync, and nothing else.
    expect(sameSet(p.isr, p.replicas), `${what}: Isr ${p.isr}, expected the replicas ${p.replicas}`);
    // Eligible leader replicas (KIP-966) are only ever replicas out of the ISR: none here. The
    // tool shows them empty from DescribeTopicPartitions and N/A where it had to fall back to
    // Metadata (a broker without DescribeTopicPartitions), which Kafka 4.4 is not.
    expect(p.elr === '' && p.lastKnownElr === '', `${what}: Elr "${p.elr}", LastKnownElr "${p.lastKnownElr}", expected both empty`);
    const m = meta.partitions.find((x) => x.partitionIndex === p.partition);
    expect(m, `${what}: not in the broker's Metadata`);
    expect(m.leaderId === p.leader, `${what}: Leader ${p.leader}, the broker's Metadata says ${m.leaderId}`);
    expect(sameSet(m.replicas, p.replicas) && sameSet(m.isr, p.isr),
      `${what}: Replicas ${p.replicas} Isr ${p.isr}, the broker's Metadata says ${m.replicas} and ${m.isr}`);
  }
  log(`topic: ${d.partitionCount} partitions, replication factor ${d.replicationFactor}, id ${d.topicId}, `
    + `leaders ${d.partitions.map((p) => `${p.partition}:${p.leader}`).join(' ')}, Elr shown as "${d.partitions[0].elr}"`);
}

function hostPort(bootstrap) {
  const i = bootstrap.lastIndexOf(':');
  return { host: bootstrap.slice(0, i), port: Number(bootstrap.slice(i + 1)) };
}

/** kafka-console-producer: keyed records key-i / tools-message-i for i in [from, to). */
async function produce(bootstrap, topic, from, to) {
  let input = '';
  for (let i = from; i < to; i++) input += `key-${i}:tools-message-${i}\n`;
  await tool(`kafka-console-producer ${from}..${to - 1}`, CONSOLE_PRODUCER, [
    '--bootstrap-server', bootstrap, '--topic', topic,
    '--command-property', 'acks=all', '--command-property', 'linger.ms=5',
    '--reader-property', 'parse.key=true', '--reader-property', 'key.separator=:',
  ], { input });
}

/** kafka-get-offsets: { partition: end offset }; their sum must be `total`. */
async function endOffsets(bootstrap, topic, total) {
  const { stdout } = await tool('kafka-get-offsets', GET_OFFSETS, ['--bootstrap-server', bootstrap, '--topic', topic]);
  const ends = {};
  for (const line of stdout.split('\n')) {
    const m = /^(.+):(\d+):(-?\d+)$/.exec(line.trim());
    if (m && m[1] === topic) ends[Number(m[2])] = Number(m[3]);
  }
  const sum = Object.values(ends).reduce((a, b) => a + b, 0);
  expect(Object.keys(ends).length === PARTITIONS && sum === total,
    `kafka-get-offsets gave ${JSON.stringify(ends)}, expected ${PARTITIONS} partitions ending at ${total} records in all`);
  log(`end offsets ${JSON.stringify(ends)}`);
  return ends;
}

/** kafka-consumer-groups --describe (offsets): its rows for `topic`, checked against `want`. */
function checkOffsets(text, group, topic, want, { active }) {
  const rows = (table(text, 'GROUP') ?? []).filter((r) => r.TOPIC === topic);
  const problems = [];
  if (rows.length !== PARTITIONS) problems.push(`${rows.length} rows for ${topic}, expected ${PARTITIONS}`);
  for (const r of rows) {
    const p = Number(r.PARTITION);
    const { committed, end } = want[p] ?? {};
    if (r.GROUP !== group) problems.push(`partition ${p}: GROUP ${r.GROUP}`);
    if (Number(r['CURRENT-OFFSET']) !== committed) problems.push(`partition ${p}: CURRENT-OFFSET ${r['CURRENT-OFFSET']}, expected ${committed}`);
    if (Number(r['LOG-END-OFFSET']) !== end) problems.push(`partition ${p}: LOG-END-OFFSET ${r['LOG-END-OFFSET']}, expected ${end}`);
    if (Number(r.LAG) !== end - committed) problems.push(`partition ${p}: LAG ${r.LAG}, expected ${end - committed}`);
    if (active) {
      if (!/^[A-Za-z0-9_-]{22}$/.test(r['CONSUMER-ID'] ?? '')) problems.push(`partition ${p}: CONSUMER-ID ${r['CONSUMER-ID']}, expected a member id`);
      if (r.HOST !== '/127.0.0.1') problems.push(`partition ${p}: HOST ${r.HOST}, expected /127.0.0.1`);
      if (r['CLIENT-ID'] !== CLIENT_ID) problems.push(`partition ${p}: CLIENT-ID ${r['CLIENT-ID']}, expected ${CLIENT_ID}`);
    } else if (r['CONSUMER-ID'] !== '-' || r.HOST !== '-' || r['CLIENT-ID'] !== '-') {
      problems.push(`partition ${p}: CONSUMER-ID ${r['CONSUMER-ID']} HOST ${r.HOST} CLIENT-ID ${r['CLIENT-ID']}, expected - - - (no member)`);
    }
  }
  const members = new Set(rows.map((r) => r['CONSUMER-ID']));
  if (active && members.size !== 1) problems.push(`CONSUMER-ID ${[...members].join(', ')}, expected one member holding every partition`);
  return { problems, memberId: [...members][0] };
}

/** Describes the group's offsets until they are `want` (auto commit runs every AUTO_COMMIT_MS). */
async function describeOffsets(admin, group, topic, want, opts) {
  const deadline = Date.now() + COMMIT_TIMEOUT_MS;
  for (;;) {
    const result = await tool('kafka-consumer-groups --describe', GROUP_COMMAND, [...admin, '--describe', '--group', group]);
    const got = checkOffsets(result.stdout, group, topic, want, opts);
    if (got.problems.length === 0 || Date.now() > deadline) {
      print(result.stdout);
      if (result.stderr.trim()) print(result.stderr);
      expect(got.problems.length === 0, `kafka-consumer-groups --describe --group ${group}:\n    ${got.problems.join('\n    ')}`);
      return { ...got, stderr: result.stderr };
    }
    await sleep(AUTO_COMMIT_MS);
  }
}

/** kafka-consumer-groups --describe --state: { coordinator: {host, port, id}, strategy, state, members }. */
async function describeState(admin, group) {
  const { stdout } = await tool('kafka-consumer-groups --describe --state', GROUP_COMMAND, [...admin, '--describe', '--group', group, '--state']);
  print(stdout);
  const line = stdout.split('\n').find((l) => l.trim().startsWith(`${group} `));
  const m = line && /^\S+\s+(\S+):(\d+)\s+\((-?\d+)\)\s+(\S*)\s+(\S+)\s+(\d+)\s*$/.exec(line.trim());
  expect(m, `kafka-consumer-groups --describe --state printed no parsable line for ${group}`);
  return { coordinator: { host: m[1], port: Number(m[2]), id: Number(m[3]) }, strategy: m[4], state: m[5], members: Number(m[6]) };
}

/** kafka-consumer-groups --list --type: { group: TYPE } for every group. */
async function listTypes(admin) {
  const { stdout } = await tool('kafka-consumer-groups --list --type', GROUP_COMMAND, [...admin, '--list', '--type']);
  return Object.fromEntries((table(stdout, 'GROUP') ?? []).map((r) => [r.GROUP, r.TYPE]));
}

async function scenarioGroupConsumer(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-tools-${stamp}`;
  const group = `compat-tools-${stamp}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'compat-tools-'));
  let consumer;
  try {
    // The admin tools' bounds, so that a broker that does not answer fails the tool, not the scenario.
    const adminConfig = path.join(dir, 'admin.properties');
    writeFileSync(adminConfig, `request.timeout.ms=${ADMIN_TIMEOUT_MS - 5_000}\ndefault.api.timeout.ms=${ADMIN_TIMEOUT_MS}\n`);
    const admin = ['--bootstrap-server', bootstrap, '--command-config', adminConfig];
    const brokers = await metadataBrokers(hostPort(bootstrap), 5_000);
    const first = brokers.find((b) => `${b.host}:${b.port}` === bootstrap) ?? brokers[0];
    const rf = Number((await describeBrokerConfigs(hostPort(bootstrap), first.nodeId, ['default.replication.factor'], 5_000)).get('default.replication.factor'));
    log(`${brokers.length} broker(s): ${brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}`).join(' ')}; default.replication.factor ${rf}`);
    log(`topic ${topic}, group ${group}`);

    // kafka-topics --create without a replication factor: the broker's default.
    const created = await tool('kafka-topics --create', TOPIC_COMMAND,
      [...admin, '--create', '--topic', topic, '--partitions', String(PARTITIONS), '--config', `retention.ms=${RETENTION_MS}`]);
    expect(created.stdout.includes(`Created topic ${topic}.`), `kafka-topics --create printed "${created.stdout.trim()}", expected "Created topic ${topic}."`);
    await waitForTopic(bootstrap, topic, PARTITIONS);

    await produce(bootstrap, topic, 0, FIRST);

    // The console consumer: a group member of the consumer protocol that reads FIRST + SECOND records and exits.
    const records = [];
    const consumerT0 = Date.now();
    consumer = startTool(CONSOLE_CONSUMER, [
      '--bootstrap-server', bootstrap, '--topic', topic, '--group', group,
      '--max-messages', String(FIRST + SECOND),
      '--command-property', 'group.protocol=consumer',
      '--command-property', 'auto.offset.reset=earliest',
      '--command-property', `client.id=${CLIENT_ID}`,
      '--command-property', `auto.commit.interval.ms=${AUTO_COMMIT_MS}`,
      '--formatter-property', 'print.partition=true', '--formatter-property', 'print.offset=true',
      '--formatter-property', 'print.key=true',
    ], { onLine: (line) => records.push(line), timeoutMs: SCENARIO_TIMEOUT_MS });
    const deadline = Date.now() + JOIN_TIMEOUT_MS;
    while (records.length < FIRST && consumer.child.exitCode === null) {
      if (Date.now() > deadline) {
        throw new ScenarioFailure(`kafka-console-consumer joining and reading: ${records.length} of ${FIRST} records within ${JOIN_TIMEOUT_MS} ms\n${shown(consumer.output())}`);
      }
      await sleep(50);
    }
    expect(consumer.child.exitCode === null, `kafka-console-consumer exited ${consumer.child.exitCode} after ${records.length} records\n${shown(consumer.output())}`);
    // Nothing else writes to the topic, so what it read, each partition from offset 0 without
    // a gap, is each partition's whole log.
    const firstEnds = checkRecords(records, FIRST);
    log(`kafka-console-consumer read ${records.length} records ${Date.now() - consumerT0} ms after it started: `
      + `end offsets ${JSON.stringify(firstEnds)}`);

    // While it holds the group: the topic, the group's offsets, members and state, the
    // listings. These tools only read, so their JVMs start side by side.
    const held = Object.fromEntries(Object.entries(firstEnds).map(([p, end]) => [p, { committed: end, end }]));
    const [, offsets, membersOut, state, types] = await wave([
      () => checkTopicDescription(bootstrap, topic, admin, rf),
      () => describeOffsets(admin, group, topic, held, { active: true }),
      async () => {
        const { stdout } = await tool('kafka-consumer-groups --describe --members --verbose', GROUP_COMMAND,
          [...admin, '--describe', '--group', group, '--members', '--verbose']);
        print(stdout);
        return stdout;
      },
      () => describeState(admin, group),
      () => listTypes(admin),
    ]);
    const { memberId } = offsets;
    log(`group ${group}: member ${memberId} has committed every partition's end offset, lag 0`);
    const members = table(membersOut, 'GROUP') ?? [];
    expect(members.length === 1, `--members --verbose lists ${members.length} members, expected 1`);
    const m = members[0];
    const assignment = `${topic}:0,1,2`;
    expect(m['CONSUMER-ID'] === memberId && m.HOST === '/127.0.0.1' && m['CLIENT-ID'] === CLIENT_ID && m['#PARTITIONS'] === '3',
      `--members: ${JSON.stringify(m)}, expected ${memberId} /127.0.0.1 ${CLIENT_ID} with 3 partitions`);
    expect(m['CURRENT-ASSIGNMENT'] === assignment && m['TARGET-ASSIGNMENT'] === assignment,
      `--members: CURRENT-ASSIGNMENT ${m['CURRENT-ASSIGNMENT']} TARGET-ASSIGNMENT ${m['TARGET-ASSIGNMENT']}, expected ${assignment} for both`);
    expect(Number(m['CURRENT-EPOCH']) > 0 && m['CURRENT-EPOCH'] === m['TARGET-EPOCH'],
      `--members: CURRENT-EPOCH ${m['CURRENT-EPOCH']} TARGET-EPOCH ${m['TARGET-EPOCH']}, expected the same epoch above 0`);
    log(`members: ${memberId} holds ${assignment} at epoch ${m['CURRENT-EPOCH']}, its target`);
    const coordinator = brokers.find((b) => b.nodeId === state.coordinator.id);
    expect(coordinator && coordinator.host === state.coordinator.host && coordinator.port === state.coordinator.port,
      `--state: COORDINATOR ${state.coordinator.host}:${state.coordinator.port} (${state.coordinator.id}) is not one of the brokers`);
    expect(state.strategy === 'uniform' && state.state === 'Stable' && state.members === 1,
      `--state: ${state.strategy} ${state.state} ${state.members}, expected uniform Stable 1`);
    log(`state: coordinator ${state.coordinator.id}, ${state.strategy}, ${state.state}, ${state.members} member`);

    expect(types[group] === 'Consumer', `kafka-consumer-groups --list --type shows ${group} with TYPE ${types[group]}, expected Consumer`);
    log(`listed: ${group} with TYPE ${types[group]}`);

    // The rest: the consumer reads SECOND more, reaches --max-messages and exits, committing on close.
    await produce(bootstrap, topic, FIRST, FIRST + SECOND);
    const finished = await Promise.race([consumer.done, sleep(FINISH_TIMEOUT_MS).then(() => null)]);
    expect(finished, `kafka-console-consumer did not exit within ${FINISH_TIMEOUT_MS} ms of the last records (${records.length} read)\n${shown(consumer.output())}`);
    expect(finished.code === 0, `kafka-console-consumer exited ${finished.code}\n${shown(finished)}`);
    expect(finished.stderr.includes(`Processed a total of ${FIRST + SECOND} messages`),
      `kafka-console-consumer did not say "Processed a total of ${FIRST + SECOND} messages"\n${shown(finished)}`);
    const ends = checkRecords(records, FIRST + SECOND);
    log(`kafka-console-consumer read all ${records.length} records, each once, in offset order per partition, and exited: `
      + `end offsets ${JSON.stringify(ends)}`);

    // After it left: the group is empty, its offsets are where the consumer stopped, THIRD more are its lag.
    await produce(bootstrap, topic, FIRST + SECOND, FIRST + SECOND + THIRD);
    const later = await endOffsets(bootstrap, topic, FIRST + SECOND + THIRD);
    for (const [p, end] of Object.entries(ends)) {
      expect(later[p] >= end, `kafka-get-offsets: partition ${p} ends at ${later[p]}, before the ${end} records the consumer read`);
    }
    const lagging = Object.fromEntries(Object.entries(later).map(([p, end]) => [p, { committed: ends[p], end }]));
    const [after, stateAfter] = await wave([
      () => describeOffsets(admin, group, topic, lagging, { active: false }),
      () => describeState(admin, group),
    ]);
    expect(after.stderr.includes(`Consumer group '${group}' has no active members.`),
      `kafka-consumer-groups --describe did not say "Consumer group '${group}' has no active members."`);
    expect(stateAfter.state === 'Empty' && stateAfter.members === 0 && stateAfter.coordinator.id === state.coordinator.id,
      `--state after the consumer left: ${stateAfter.state} ${stateAfter.members} coordinator ${stateAfter.coordinator.id}, expected Empty 0 ${state.coordinator.id}`);
    log(`after the consumer left: Empty, no members, committed ${JSON.stringify(ends)}, lag ${THIRD} in all`);
  } finally {
    consumer?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The console consumer's lines (Partition:P Offset:O key value): messages 0..total-1 each
 * once, each partition read from offset 0 in order without a gap. Returns { partition: the
 * offset after the last one read } for every partition.
 */
function checkRecords(lines, total) {
  const seen = new Map(); // message index -> "p@o"
  const perPartition = new Map();
  for (const line of lines) {
    const m = /^Partition:(\d+)\tOffset:(\d+)\tkey-(\d+)\ttools-message-(\d+)$/.exec(line);
    if (!m) throw new ScenarioFailure(`kafka-console-consumer printed "${line}", expected Partition:P<TAB>Offset:O<TAB>key-i<TAB>tools-message-i`);
    const [p, o, k, v] = m.slice(1).map(Number);
    expect(k === v, `record ${line}: key and value of different messages`);
    expect(!seen.has(v), `message ${v} read twice (${seen.get(v)} and ${p}@${o})`);
    seen.set(v, `${p}@${o}`);
    const offsets = perPartition.get(p) ?? [];
    offsets.push(o);
    perPartition.set(p, offsets);
  }
  for (let i = 0; i < total; i++) expect(seen.has(i), `message ${i} never read`);
  expect(seen.size === total, `kafka-console-consumer printed ${seen.size} messages, expected ${total}`);
  const ends = {};
  for (let p = 0; p < PARTITIONS; p++) {
    const offsets = perPartition.get(p) ?? [];
    expect(offsets.every((o, i) => o === i), `partition ${p}: offsets read ${offsets.join(',')}, expected 0, 1, 2, ... in order`);
    ends[p] = offsets.length;
  }
  return ends;
}

/**
 * `run install`: a class-data archive for each tool class the scenarios use, written by one
 * run of it against a loopback port where nothing listens (port 1). The tool gets as far as
 * its clients' first requests, which load most of the classes a real run does, gives up
 * within a few seconds (the timeouts below) and exits; the archive is kept whatever its exit.
 */
async function makeArchives() {
  const dir = mkdtempSync(path.join(tmpdir(), 'compat-tools-'));
  const nowhere = '127.0.0.1:1';
  try {
    const adminConfig = path.join(dir, 'admin.properties');
    writeFileSync(adminConfig, 'request.timeout.ms=1000\ndefault.api.timeout.ms=2000\n');
    const runs = [
      [TOPIC_COMMAND, ['--bootstrap-server', nowhere, '--command-config', adminConfig, '--describe', '--topic', 'none']],
      [GROUP_COMMAND, ['--bootstrap-server', nowhere, '--command-config', adminConfig, '--describe', '--group', 'none', '--timeout', '2000']],
      [GET_OFFSETS, ['--bootstrap-server', nowhere, '--command-config', adminConfig, '--topic', 'none']],
      [CONSOLE_PRODUCER, ['--bootstrap-server', nowhere, '--topic', 'none', '--command-property', 'max.block.ms=1000',
        '--reader-property', 'parse.key=true', '--reader-property', 'key.separator=:']],
      [CONSOLE_CONSUMER, ['--bootstrap-server', nowhere, '--topic', 'none', '--group', 'none', '--timeout-ms', '2000',
        '--command-property', 'group.protocol=consumer', '--command-property', 'default.api.timeout.ms=2000']],
      [LOG_DIRS, ['--bootstrap-server', nowhere, '--command-config', adminConfig, '--describe']],
      [REASSIGN, ['--bootstrap-server', nowhere, '--command-config', adminConfig, '--verify', '--reassignment-json-file', path.join(dir, 'none.json')]],
      [CONFIG_COMMAND, ['--bootstrap-server', nowhere, '--command-config', adminConfig, '--entity-type', 'groups', '--entity-name', 'none', '--describe']],
      [CONSOLE_SHARE_CONSUMER, ['--bootstrap-server', nowhere, '--topic', 'none', '--group', 'none', '--max-messages', '1'], 8_000],
      [SHARE_GROUP_COMMAND, ['--bootstrap-server', nowhere, '--command-config', adminConfig, '--describe', '--group', 'none', '--timeout', '2000']],
    ];
    for (const [cls, args, termAfterMs] of runs) {
      const t0 = Date.now();
      const result = await startTool(cls, args, { input: 'key:value\n', archive: true, timeoutMs: 60_000, termAfterMs }).done;
      const made = existsSync(path.join(CDS_DIR, `${cls}.jsa`));
      console.log(`kafka-tools: ${made ? 'archived' : 'could not archive'} ${cls} (${Date.now() - t0} ms${result.timedOut ? ', killed' : ''})`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** kafka-log-dirs --describe of `topic`: per broker, per directory, its error and the topic's partitions in it. */
async function describeLogDirs(admin, topic) {
  const { stdout } = await tool('kafka-log-dirs --describe', LOG_DIRS, [...admin, '--describe', '--topic-list', topic]);
  const json = stdout.split('\n').find((l) => l.trim().startsWith('{'));
  expect(json !== undefined, `kafka-log-dirs printed no JSON:\n${indent(stdout)}`);
  const parsed = JSON.parse(json);
  return parsed.brokers.map((b) => ({
    broker: b.broker,
    dirs: b.logDirs.map((d) => ({ dir: d.logDir, error: d.error, partitions: d.partitions.map((p) => ({ ...p })) })),
  }));
}

// log-dirs: kafka-log-dirs shows where a partition's replica lives, kafka-reassign-partitions with
// "log_dirs" moves it to the broker's other log directory (AlterReplicaLogDirs) and --verify sees
// the move complete, kafka-log-dirs then shows it there, and its records are all still there.
async function scenarioLogDirs(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-tools-dirs-${stamp}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'compat-tools-'));
  const RECORDS = 20;
  try {
    const adminConfig = path.join(dir, 'admin.properties');
    writeFileSync(adminConfig, `request.timeout.ms=${ADMIN_TIMEOUT_MS - 5_000}\ndefault.api.timeout.ms=${ADMIN_TIMEOUT_MS}\n`);
    const admin = ['--bootstrap-server', bootstrap, '--command-config', adminConfig];
    const created = await tool('kafka-topics --create', TOPIC_COMMAND, [...admin, '--create', '--topic', topic, '--partitions', '1', '--replication-factor', '1']);
    expect(created.stdout.includes(`Created topic ${topic}.`), `kafka-topics --create printed "${created.stdout.trim()}"`);
    await waitForTopic(bootstrap, topic, 1);
    let input = '';
    for (let i = 0; i < RECORDS; i++) input += `key-${i}:tools-message-${i}\n`;
    await tool(`kafka-console-producer 0..${RECORDS - 1}`, CONSOLE_PRODUCER, [
      '--bootstrap-server', bootstrap, '--topic', topic, '--command-property', 'acks=1',
      '--reader-property', 'parse.key=true', '--reader-property', 'key.separator=:',
    ], { input });

    const before = await describeLogDirs(admin, topic);
    const holder = before.find((b) => b.dirs.some((d) => d.partitions.some((p) => p.partition === `${topic}-0`)));
    expect(holder !== undefined, `kafka-log-dirs shows no broker with ${topic}-0: ${JSON.stringify(before)}`);
    expect(holder.dirs.length >= 2 && holder.dirs.every((d) => d.error === null), `broker ${holder.broker} needs two online log directories: ${JSON.stringify(holder.dirs)}`);
    const from = holder.dirs.find((d) => d.partitions.some((p) => p.partition === `${topic}-0`));
    const to = holder.dirs.find((d) => d !== from);
    log(`${topic}-0 on broker ${holder.broker} in ${from.dir}; moving it to ${to.dir}`);

    const plan = path.join(dir, 'move.json');
    writeFileSync(plan, JSON.stringify({ version: 1, partitions: [{ topic, partition: 0, replicas: [holder.broker], log_dirs: [to.dir] }] }));
    const executed = await tool('kafka-reassign-partitions --execute', REASSIGN, [...admin, '--execute', '--reassignment-json-file', plan]);
    print(executed.stdout);
    expect(executed.stdout.includes(`Successfully started moving log directory to ${to.dir} for replica ${topic}-0 with broker ${holder.broker}`),
      'kafka-reassign-partitions --execute did not start the move');
    const deadline = Date.now() + 20_000;
    for (;;) {
      const verified = await tool('kafka-reassign-partitions --verify', REASSIGN, [...admin, '--verify', '--reassignment-json-file', plan]);
      if (verified.stdout.includes(`Reassignment of replica ${topic}-0-${holder.broker} completed successfully`)) {
        print(verified.stdout);
        break;
      }
      expect(Date.now() < deadline, `the move did not complete within 20 s:\n${indent(verified.stdout)}`);
      await sleep(500);
    }

    const after = await describeLogDirs(admin, topic);
    const now = after.find((b) => b.broker === holder.broker).dirs;
    const moved = now.find((d) => d.dir === to.dir)?.partitions.find((p) => p.partition === `${topic}-0`);
    expect(moved !== undefined && moved.isFuture === false && moved.size > 0, `kafka-log-dirs shows ${topic}-0 in ${to.dir}: ${JSON.stringify(now)}`);
    expect(!now.find((d) => d.dir === from.dir).partitions.some((p) => p.partition === `${topic}-0`), `${topic}-0 is still listed in ${from.dir}`);
    log(`${topic}-0 in ${to.dir}, ${moved.size} bytes`);

    const { stdout } = await tool('kafka-get-offsets', GET_OFFSETS, ['--bootstrap-server', bootstrap, '--topic', topic]);
    expect(stdout.split('\n').some((l) => l.trim() === `${topic}:0:${RECORDS}`), `kafka-get-offsets after the move:\n${indent(stdout)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// share-group

/** Runs a tool that must fail: a non-zero exit within its time. Returns its stdout and stderr. */
async function toolFails(name, cls, args) {
  const t0 = Date.now();
  const result = await startTool(cls, args).done;
  if (result.timedOut) throw new ScenarioFailure(`${name}: no exit within ${TOOL_TIMEOUT_MS} ms\n${shown(result)}`);
  if (result.code === 0) throw new ScenarioFailure(`${name}: exit 0, expected it to fail\n${shown(result)}`);
  log(`${name}: exit ${result.code}, as expected (${Date.now() - t0} ms)`);
  return result;
}

/**
 * kafka-share-groups --describe (offsets): { rows: [{ partition, start, lag }], text }, the rows
 * of `topic`; `group` must be in each.
 */
async function describeShareOffsets(admin, group, topic) {
  const result = await tool('kafka-share-groups --describe', SHARE_GROUP_COMMAND, [...admin, '--describe', '--group', group]);
  const text = `${result.stdout}${result.stderr}`;
  const rows = (table(result.stdout, 'GROUP') ?? []).filter((r) => r.TOPIC === topic).map((r) => {
    expect(r.GROUP === group, `kafka-share-groups --describe: a row for group ${r.GROUP}, expected ${group}`);
    return { partition: Number(r.PARTITION), start: Number(r['START-OFFSET']), lag: Number(r.LAG) };
  }).sort((a, b) => a.partition - b.partition);
  return { rows, text, stdout: result.stdout };
}

/**
 * Describes the share group's offsets until every partition of `topic` has lag `lags[p]` and a
 * start offset between `minStart[p]` and its end offset `ends[p]` (Kafka shows the start offset
 * last written to __share_group_state, which trails what the acknowledgements completed).
 */
async function expectShareOffsets(admin, group, topic, { ends, lags, minStart }) {
  const deadline = Date.now() + COMMIT_TIMEOUT_MS;
  for (;;) {
    const got = await describeShareOffsets(admin, group, topic);
    const problems = [];
    if (got.rows.length !== PARTITIONS) problems.push(`${got.rows.length} rows for ${topic}, expected ${PARTITIONS}`);
    for (const r of got.rows) {
      const p = r.partition;
      if (r.lag !== lags[p]) problems.push(`partition ${p}: LAG ${r.lag}, expected ${lags[p]}`);
      if (!(r.start >= minStart[p] && r.start <= ends[p])) problems.push(`partition ${p}: START-OFFSET ${r.start}, expected ${minStart[p]} to ${ends[p]}`);
    }
    if (problems.length === 0 || Date.now() > deadline) {
      print(got.stdout);
      expect(problems.length === 0, `kafka-share-groups --describe --group ${group}:\n    ${problems.join('\n    ')}`);
      return got.rows;
    }
    await sleep(AUTO_COMMIT_MS);
  }
}

/** kafka-share-groups --describe --state --verbose: { coordinator: {host, port, id}, state, groupEpoch, assignmentEpoch, members }. */
async function describeShareState(admin, group) {
  const { stdout, stderr } = await tool('kafka-share-groups --describe --state --verbose', SHARE_GROUP_COMMAND,
    [...admin, '--describe', '--group', group, '--state', '--verbose']);
  print(stdout);
  const line = stdout.split('\n').find((l) => l.trim().startsWith(`${group} `));
  const m = line && /^\S+\s+(\S+):(\d+)\s+\((-?\d+)\)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$/.exec(line.trim());
  expect(m, `kafka-share-groups --describe --state --verbose printed no parsable line for ${group}:\n${indent(stdout)}`);
  expect(table(stdout, 'GROUP') && /^GROUP\s+COORDINATOR \(ID\)\s+STATE\s+GROUP-EPOCH\s+ASSIGNMENT-EPOCH\s+#MEMBERS$/.test(stdout.split('\n').find((l) => l.startsWith('GROUP')).trim()),
    `kafka-share-groups --describe --state --verbose: header ${stdout.split('\n').find((l) => l.startsWith('GROUP'))}`);
  return {
    coordinator: { host: m[1], port: Number(m[2]), id: Number(m[3]) },
    state: m[4],
    groupEpoch: Number(m[5]),
    assignmentEpoch: Number(m[6]),
    members: Number(m[7]),
    stderr,
  };
}

/** kafka-share-groups --list [--state]: { group: STATE or '' } for every share group. */
async function listShareGroups(admin, withState) {
  const { stdout } = await tool(`kafka-share-groups --list${withState ? ' --state' : ''}`, SHARE_GROUP_COMMAND,
    [...admin, '--list', ...(withState ? ['--state'] : [])]);
  if (withState) return Object.fromEntries((table(stdout, 'GROUP') ?? []).map((r) => [r.GROUP, r.STATE]));
  return Object.fromEntries(stdout.split('\n').map((l) => l.trim()).filter(Boolean).map((g) => [g, '']));
}

/**
 * The console share consumer's lines (Partition:P Offset:O Delivery:D key value): messages
 * 0..total-1 each once, each with delivery count 1, every partition's offsets 0..n-1 each once.
 * Returns { partition: n }.
 */
function checkShareRecords(lines, total) {
  const seen = new Map();
  const perPartition = new Map();
  for (const line of lines) {
    const m = /^Partition:(\d+)\tOffset:(\d+)\tDelivery:(\d+)\tkey-(\d+)\ttools-message-(\d+)$/.exec(line);
    if (!m) throw new ScenarioFailure(`kafka-console-share-consumer printed "${line}", expected Partition:P<TAB>Offset:O<TAB>Delivery:D<TAB>key-i<TAB>tools-message-i`);
    const [p, o, d, k, v] = m.slice(1).map(Number);
    expect(k === v, `record ${line}: key and value of different messages`);
    expect(d === 1, `record ${line}: delivery count ${d}, expected 1 (no record was released or timed out)`);
    expect(!seen.has(v), `message ${v} delivered twice (${seen.get(v)} and ${p}@${o})`);
    seen.set(v, `${p}@${o}`);
    const offsets = perPartition.get(p) ?? new Set();
    offsets.add(o);
    perPartition.set(p, offsets);
  }
  for (let i = 0; i < total; i++) expect(seen.has(i), `message ${i} never delivered`);
  expect(seen.size === total, `kafka-console-share-consumer printed ${seen.size} messages, expected ${total}`);
  const ends = {};
  for (let p = 0; p < PARTITIONS; p++) {
    const offsets = [...(perPartition.get(p) ?? [])].sort((a, b) => a - b);
    expect(offsets.every((o, i) => o === i), `partition ${p}: offsets delivered ${offsets.join(',')}, expected 0, 1, 2, ... each once`);
    ends[p] = offsets.length;
  }
  return ends;
}

// share-group: kafka-configs sets share.auto.offset.reset=earliest on a share group (and refuses a
// lock duration out of the broker's range); kafka-console-share-consumer then reads records
// produced before it started; while it is a member, kafka-share-groups --list, --describe
// (offsets, --members --verbose, --state --verbose) show it, and --reset-offsets and --delete
// are refused; once it has read the rest and left: Empty, lag 0, then the lag of new records,
// --reset-offsets --to-earliest, --delete-offsets and --delete. See README.md.
async function scenarioShareGroup(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-tools-share-${stamp}`;
  const group = `compat-tools-share-${stamp}`;
  const clientId = 'compat-tools-share-consumer';
  const dir = mkdtempSync(path.join(tmpdir(), 'compat-tools-'));
  let consumer;
  try {
    const adminConfig = path.join(dir, 'admin.properties');
    writeFileSync(adminConfig, `request.timeout.ms=${ADMIN_TIMEOUT_MS - 5_000}\ndefault.api.timeout.ms=${ADMIN_TIMEOUT_MS}\n`);
    const admin = ['--bootstrap-server', bootstrap, '--command-config', adminConfig];
    const brokers = await metadataBrokers(hostPort(bootstrap), 5_000);
    log(`${brokers.length} broker(s); topic ${topic}, share group ${group}`);

    const created = await tool('kafka-topics --create', TOPIC_COMMAND, [...admin, '--create', '--topic', topic, '--partitions', String(PARTITIONS)]);
    expect(created.stdout.includes(`Created topic ${topic}.`), `kafka-topics --create printed "${created.stdout.trim()}", expected "Created topic ${topic}."`);
    await waitForTopic(bootstrap, topic, PARTITIONS);
    await produce(bootstrap, topic, 0, FIRST);

    // The group's own configs: the reset the console share consumer will start from; a lock
    // duration below the broker's group.share.min.record.lock.duration.ms is refused.
    const configs = [...admin, '--entity-type', 'groups', '--entity-name', group];
    const altered = await tool('kafka-configs --alter', CONFIG_COMMAND, [...configs, '--alter', '--add-config', 'share.auto.offset.reset=earliest']);
    expect(altered.stdout.includes(`Completed updating config for group ${group}.`),
      `kafka-configs --alter printed "${altered.stdout.trim()}", expected "Completed updating config for group ${group}."`);
    const refused = await toolFails('kafka-configs --alter share.record.lock.duration.ms=1000', CONFIG_COMMAND,
      [...configs, '--alter', '--add-config', 'share.record.lock.duration.ms=1000']);
    const why = 'org.apache.kafka.common.errors.InvalidConfigurationException: share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.';
    expect(refused.stderr.includes(why) || refused.stdout.includes(why), `kafka-configs did not say "${why}"\n${shown(refused)}`);
    const described = await settle(async () => {
      const r = await tool('kafka-configs --describe', CONFIG_COMMAND, [...configs, '--describe']);
      const want = 'share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}';
      const lines = r.stdout.split('\n').map((l) => l.trim()).filter(Boolean);
      expect(lines[0] === `Dynamic configs for group ${group} are:` && lines.length === 2 && lines[1] === want,
        `kafka-configs --describe printed:\n${indent(r.stdout)}\nexpected "Dynamic configs for group ${group} are:" and "${want}" alone`);
      return r.stdout;
    });
    print(described);

    // The console share consumer: implicit acknowledgement; it must get the FIRST records that
    // were there before the group existed, then SECOND more, and exit.
    const records = [];
    const consumerT0 = Date.now();
    consumer = startTool(CONSOLE_SHARE_CONSUMER, [
      '--bootstrap-server', bootstrap, '--topic', topic, '--group', group,
      '--max-messages', String(FIRST + SECOND),
      '--command-property', `client.id=${clientId}`,
      '--formatter-property', 'print.partition=true', '--formatter-property', 'print.offset=true',
      '--formatter-property', 'print.delivery=true', '--formatter-property', 'print.key=true',
    ], { onLine: (line) => records.push(line), timeoutMs: SCENARIO_TIMEOUT_MS });
    const deadline = Date.now() + JOIN_TIMEOUT_MS;
    while (records.length < FIRST && consumer.child.exitCode === null) {
      if (Date.now() > deadline) {
        throw new ScenarioFailure(`kafka-console-share-consumer joining and reading: ${records.length} of ${FIRST} records within ${JOIN_TIMEOUT_MS} ms\n${shown(consumer.output())}`);
      }
      await sleep(50);
    }
    expect(consumer.child.exitCode === null, `kafka-console-share-consumer exited ${consumer.child.exitCode} after ${records.length} records\n${shown(consumer.output())}`);
    const firstEnds = checkShareRecords(records, FIRST);
    log(`kafka-console-share-consumer got the ${records.length} records produced before it started, each with delivery count 1, `
      + `${Date.now() - consumerT0} ms after it started: ${JSON.stringify(firstEnds)} per partition`);

    // While it is a member. Those that change something are refused, so all run side by side.
    const zero = Object.fromEntries(Object.keys(firstEnds).map((p) => [p, 0]));
    const [, membersOut, state, listed, states, resetRefused, deleteRefused] = await wave([
      () => expectShareOffsets(admin, group, topic, { ends: firstEnds, lags: zero, minStart: zero }),
      async () => {
        const { stdout } = await tool('kafka-share-groups --describe --members --verbose', SHARE_GROUP_COMMAND,
          [...admin, '--describe', '--group', group, '--members', '--verbose']);
        print(stdout);
        return stdout;
      },
      () => describeShareState(admin, group),
      () => listShareGroups(admin, false),
      () => listShareGroups(admin, true),
      () => toolFails('kafka-share-groups --reset-offsets --to-earliest --execute (a member is there)', SHARE_GROUP_COMMAND,
        [...admin, '--reset-offsets', '--to-earliest', '--execute', '--topic', topic, '--group', group]),
      async () => {
        const r = await tool('kafka-share-groups --delete (a member is there)', SHARE_GROUP_COMMAND, [...admin, '--delete', '--group', group]);
        return r;
      },
    ]);
    const members = table(membersOut, 'GROUP') ?? [];
    expect(members.length === 1, `--members --verbose lists ${members.length} members, expected 1:\n${indent(membersOut)}`);
    const m = members[0];
    const header = membersOut.split('\n').find((l) => l.startsWith('GROUP')).trim();
    expect(/^GROUP\s+CONSUMER-ID\s+HOST\s+CLIENT-ID\s+#PARTITIONS\s+MEMBER-EPOCH\s+ASSIGNMENT$/.test(header), `--members --verbose: header "${header}"`);
    expect(m.GROUP === group && /^[A-Za-z0-9_-]{22}$/.test(m['CONSUMER-ID'] ?? '') && m.HOST === '/127.0.0.1' && m['CLIENT-ID'] === clientId
      && m['#PARTITIONS'] === String(PARTITIONS) && Number(m['MEMBER-EPOCH']) > 0 && m.ASSIGNMENT === `${topic}:0,1,2`,
    `--members --verbose: ${JSON.stringify(m)}, expected a member id, /127.0.0.1, ${clientId}, ${PARTITIONS} partitions, an epoch above 0, ${topic}:0,1,2`);
    log(`member ${m['CONSUMER-ID']} at epoch ${m['MEMBER-EPOCH']} holds ${m.ASSIGNMENT}`);
    const coordinator = brokers.find((b) => b.nodeId === state.coordinator.id);
    expect(coordinator && coordinator.host === state.coordinator.host && coordinator.port === state.coordinator.port,
      `--state: COORDINATOR ${state.coordinator.host}:${state.coordinator.port} (${state.coordinator.id}) is not one of the brokers`);
    expect(state.state === 'Stable' && state.members === 1 && state.groupEpoch > 0 && state.assignmentEpoch === state.groupEpoch,
      `--state --verbose: ${state.state}, ${state.members} members, group epoch ${state.groupEpoch}, assignment epoch ${state.assignmentEpoch}; expected Stable, 1, the same epoch above 0`);
    log(`state: coordinator ${state.coordinator.id}, Stable, group epoch ${state.groupEpoch}, 1 member`);
    expect(group in listed, `kafka-share-groups --list does not list ${group}`);
    expect(states[group] === 'Stable', `kafka-share-groups --list --state shows ${group} as ${states[group]}, expected Stable`);
    const notEmpty = `Share group '${group}' is not empty.`;
    expect(`${resetRefused.stdout}${resetRefused.stderr}`.includes(notEmpty), `--reset-offsets with a member did not say "${notEmpty}"\n${shown(resetRefused)}`);
    const notDeleted = `Group '${group}' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: Share group '${group}' is not EMPTY.`;
    expect(`${deleteRefused.stdout}${deleteRefused.stderr}`.includes(notDeleted), `--delete with a member did not say "${notDeleted}"\n${shown(deleteRefused)}`);
    log('with a member: listed Stable; --reset-offsets and --delete refused');

    // The rest: SECOND more; the consumer reaches --max-messages, acknowledges and leaves.
    await produce(bootstrap, topic, FIRST, FIRST + SECOND);
    const finished = await Promise.race([consumer.done, sleep(FINISH_TIMEOUT_MS).then(() => null)]);
    expect(finished, `kafka-console-share-consumer did not exit within ${FINISH_TIMEOUT_MS} ms of the last records (${records.length} read)\n${shown(consumer.output())}`);
    expect(finished.code === 0, `kafka-console-share-consumer exited ${finished.code}\n${shown(finished)}`);
    expect(finished.stderr.includes(`Processed a total of ${FIRST + SECOND} messages`),
      `kafka-console-share-consumer did not say "Processed a total of ${FIRST + SECOND} messages"\n${shown(finished)}`);
    const ends = checkShareRecords(records, FIRST + SECOND);
    log(`kafka-console-share-consumer got all ${records.length} records, each once, and exited: ${JSON.stringify(ends)} per partition`);

    const [stateAfter] = await wave([
      () => describeShareState(admin, group),
      () => expectShareOffsets(admin, group, topic, { ends, lags: zero, minStart: zero }),
    ]);
    expect(stateAfter.state === 'Empty' && stateAfter.members === 0, `--state after the consumer left: ${stateAfter.state}, ${stateAfter.members} members; expected Empty, 0`);
    expect(stateAfter.stderr.includes(`Share group '${group}' has no active members.`),
      `--describe --state did not say "Share group '${group}' has no active members."\n${indent(stateAfter.stderr)}`);

    // THIRD more: the group's lag.
    await produce(bootstrap, topic, FIRST + SECOND, FIRST + SECOND + THIRD);
    const later = await endOffsets(bootstrap, topic, FIRST + SECOND + THIRD);
    const lag = Object.fromEntries(Object.entries(later).map(([p, end]) => [p, end - ends[p]]));
    await expectShareOffsets(admin, group, topic, { ends: later, lags: lag, minStart: zero });
    log(`after ${THIRD} more: lag ${JSON.stringify(lag)}`);

    // The group is empty: its start offsets go back to the beginning.
    const reset = await tool('kafka-share-groups --reset-offsets --to-earliest --execute', SHARE_GROUP_COMMAND,
      [...admin, '--reset-offsets', '--to-earliest', '--execute', '--topic', topic, '--group', group]);
    print(reset.stdout);
    const resetRows = (table(reset.stdout, 'GROUP') ?? []).filter((r) => r.TOPIC === topic);
    expect(resetRows.length === PARTITIONS && resetRows.every((r) => r.GROUP === group && r['NEW-OFFSET'] === '0'),
      `--reset-offsets --to-earliest printed:\n${indent(reset.stdout)}\nexpected GROUP TOPIC PARTITION NEW-OFFSET rows with 0 for the ${PARTITIONS} partitions`);
    await expectShareOffsets(admin, group, topic, { ends: later, lags: later, minStart: zero });
    log(`after --reset-offsets --to-earliest: start 0, lag ${JSON.stringify(later)}`);

    const deleted = await tool('kafka-share-groups --delete-offsets', SHARE_GROUP_COMMAND, [...admin, '--delete-offsets', '--topic', topic, '--group', group]);
    print(deleted.stdout);
    const deletedRows = table(deleted.stdout, 'TOPIC') ?? [];
    expect(deletedRows.length === 1 && deletedRows[0].TOPIC === topic && deletedRows[0].STATUS === 'Successful',
      `--delete-offsets printed:\n${indent(deleted.stdout)}\nexpected TOPIC STATUS and "${topic} Successful"`);
    const none = await describeShareOffsets(admin, group, topic);
    expect(none.rows.length === 0 && none.text.includes(`Share group '${group}' has no offset information.`),
      `--describe after --delete-offsets printed:\n${indent(none.text)}\nexpected "Share group '${group}' has no offset information."`);
    log('--delete-offsets: the group has no offset information');

    const gone = await tool('kafka-share-groups --delete', SHARE_GROUP_COMMAND, [...admin, '--delete', '--group', group]);
    expect(gone.stdout.includes(`Deletion of requested share groups ('${group}') was successful.`),
      `--delete printed:\n${indent(`${gone.stdout}${gone.stderr}`)}\nexpected "Deletion of requested share groups ('${group}') was successful."`);
    const after = await listShareGroups(admin, false);
    expect(!(group in after), `kafka-share-groups --list still lists ${group} after --delete`);
    log('--delete: the group is gone from --list');
  } finally {
    consumer?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

// group-configs: kafka-configs sets a group's configs (the group does not exist: Kafka allows
// it), --describe shows them as the group's own with their synonyms and --all shows every
// group config, --delete-config removes one, and a value out of the broker's bounds and an
// unknown name are refused with Kafka 4.4's messages, changing nothing.
async function scenarioGroupConfigs(bootstrap) {
  const group = `compat-tools-group-configs-${Date.now()}-${process.pid}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'compat-tools-'));
  try {
    const adminConfig = path.join(dir, 'admin.properties');
    writeFileSync(adminConfig, `request.timeout.ms=${ADMIN_TIMEOUT_MS - 5_000}\ndefault.api.timeout.ms=${ADMIN_TIMEOUT_MS}\n`);
    const configs = ['--bootstrap-server', bootstrap, '--command-config', adminConfig, '--entity-type', 'groups', '--entity-name', group];
    const alter = async (what, args) => {
      const { stdout } = await tool(`kafka-configs --alter ${what}`, CONFIG_COMMAND, [...configs, '--alter', ...args]);
      expect(stdout.trim() === `Completed updating config for group ${group}.`, `kafka-configs --alter printed "${stdout.trim()}"`);
    };
    // Another broker may answer the describe before it has seen the change: asked again, for a while.
    const describeUntil = async (what, args, want) => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const { stdout } = await tool(`kafka-configs --describe${args.length ? ' ' + args.join(' ') : ''}`, CONFIG_COMMAND, [...configs, '--describe', ...args]);
        const lines = stdout.split('\n').filter((l) => l.trim());
        if (want(lines)) {
          print(stdout);
          return lines;
        }
        expect(Date.now() < deadline, `kafka-configs --describe never showed ${what}:\n${indent(stdout)}`);
        await sleep(500);
      }
    };
    const refused = async (what, args, message) => {
      const t0 = Date.now();
      const result = await startTool(CONFIG_COMMAND, [...configs, '--alter', ...args]).done;
      expect(!result.timedOut && result.code === 1, `kafka-configs --alter ${what}: exit ${result.code}, expected 1\n${shown(result)}`);
      const cause = /InvalidConfigurationException: (.*)/.exec(result.stderr)?.[1];
      expect(cause === message, `kafka-configs --alter ${what} was refused with "${cause}", expected "${message}"\n${shown(result)}`);
      log(`kafka-configs --alter ${what} refused: ${cause} (${Date.now() - t0} ms)`);
    };

    await alter('--add-config', ['--add-config', 'share.auto.offset.reset=earliest,share.record.lock.duration.ms=15000']);
    const both = [
      `Dynamic configs for group ${group} are:`,
      '  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}',
      '  share.record.lock.duration.ms=15000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.record.lock.duration.ms=15000, DEFAULT_CONFIG:group.share.record.lock.duration.ms=30000}',
    ];
    await describeUntil('both configs', [], (lines) => JSON.stringify(lines) === JSON.stringify(both));

    const all = await describeUntil('every group config', ['--all'], (lines) => lines.some((l) => l.startsWith('  share.auto.offset.reset=earliest ')));
    const expected = {
      'consumer.session.timeout.ms': '45000', 'consumer.heartbeat.interval.ms': '5000', 'share.session.timeout.ms': '45000',
      'share.heartbeat.interval.ms': '5000', 'share.record.lock.duration.ms': '15000', 'share.delivery.count.limit': '5',
      'share.partition.max.record.locks': '2000', 'share.auto.offset.reset': 'earliest', 'share.isolation.level': 'read_uncommitted',
      'streams.session.timeout.ms': '45000', 'streams.heartbeat.interval.ms': '5000', 'streams.num.standby.replicas': '0',
      'streams.assignor.name': 'sticky', 'errors.deadletterqueue.topic.name': '',
    };
    expect(all[0] === `All configs for group ${group} are:`, `kafka-configs --describe --all began "${all[0]}"`);
    const shownValues = new Map(all.slice(1).map((l) => /^ {2}([^=]+)=(\S*) sensitive=/.exec(l)).filter(Boolean).map((m) => [m[1], m[2]]));
    expect(shownValues.size === 21, `kafka-configs --describe --all listed ${shownValues.size} configs, expected Kafka's 21`);
    for (const [name, value] of Object.entries(expected)) {
      expect(shownValues.get(name) === value, `kafka-configs --describe --all: ${name}=${shownValues.get(name)}, expected ${value}`);
    }

    await refused('share.record.lock.duration.ms=5000', ['--add-config', 'share.record.lock.duration.ms=5000'], 'share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.');
    await refused('share.auto.offset.reset=sometimes', ['--add-config', 'share.auto.offset.reset=sometimes'],
      "Invalid value sometimes for configuration share.auto.offset.reset: Invalid value `sometimes` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.");
    await refused('share.no.such.config=1', ['--add-config', 'share.no.such.config=1'], 'Unknown group config name: share.no.such.config');

    await alter('--delete-config', ['--delete-config', 'share.auto.offset.reset']);
    await describeUntil('only share.record.lock.duration.ms', [], (lines) => JSON.stringify(lines) === JSON.stringify([both[0], both[2]]));
    await alter('--delete-config', ['--delete-config', 'share.record.lock.duration.ms']);
    await describeUntil('that the group has no configs left', [], (lines) => lines.length === 1 && lines[0] === `The group '${group}' doesn't exist and doesn't have dynamic config.`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}


/**
 * kafka-configs --entity-type brokers: a cluster-wide default and a per-broker config set,
 * described on every broker, taking effect (a record over the new message.max.bytes is
 * refused), a per-broker config refused at the cluster default, then both deleted.
 */
async function scenarioBrokerConfigs(bootstrap) {
  const dir = mkdtempSync(path.join(tmpdir(), 'compat-tools-'));
  const topic = `compat-tools-broker-configs-${Date.now()}-${process.pid}`;
  try {
    const adminConfig = path.join(dir, 'admin.properties');
    writeFileSync(adminConfig, `request.timeout.ms=${ADMIN_TIMEOUT_MS - 5_000}\ndefault.api.timeout.ms=${ADMIN_TIMEOUT_MS}\n`);
    const ids = (await metadataBrokers(hostPort(bootstrap))).map((b) => b.nodeId).sort((a, b) => a - b);
    const first = ids[0];
    const base = ['--bootstrap-server', bootstrap, '--command-config', adminConfig, '--entity-type', 'brokers'];
    const defaults = [...base, '--entity-default'];
    const broker = (id) => [...base, '--entity-name', String(id)];
    const alter = async (what, args, printed) => {
      const { stdout } = await tool(`kafka-configs --alter ${what}`, CONFIG_COMMAND, [...args, '--alter', ...what.split(' ')]);
      expect(stdout.trim() === printed, `kafka-configs --alter ${what} printed "${stdout.trim()}", expected "${printed}"`);
    };
    // A broker applies a change when the metadata reaches it: asked again, for a while.
    const describeUntil = async (label, args, want) => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const { stdout } = await tool(`kafka-configs --describe ${label}`, CONFIG_COMMAND, [...args, '--describe']);
        // Kafka's storage format sets min.insync.replicas as a cluster default of a new cluster
        // (eligible leader replicas, KIP-966); gregor has no such step. That line is left out.
        const lines = stdout.split('\n').filter((l) => l.trim() && !/^ {2}min\.insync\.replicas=/.test(l));
        if (JSON.stringify(lines) === JSON.stringify(want)) {
          print(stdout);
          return;
        }
        expect(Date.now() < deadline, `kafka-configs --describe ${label} printed:\n${indent(stdout)}\nexpected:\n${indent(want.join('\n'))}`);
        await sleep(500);
      }
    };

    await alter('--add-config message.max.bytes=20000', defaults, 'Completed updating default config for brokers in the cluster.');
    await alter('--add-config sasl.kerberos.min.time.before.relogin=58000', broker(first), `Completed updating config for broker ${first}.`);
    const perBroker = '  sasl.kerberos.min.time.before.relogin=58000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:sasl.kerberos.min.time.before.relogin=58000, DEFAULT_CONFIG:sasl.kerberos.min.time.before.relogin=60000}';
    await describeUntil('--entity-default', defaults, ['Default configs for brokers in the cluster are:', '  message.max.bytes=20000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=20000}']);
    // A broker's own dynamic configs are listed without --all; the cluster default shows with it, on every broker.
    const allOf = async (id, want) => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const { stdout } = await tool(`kafka-configs --describe --all --entity-name ${id}`, CONFIG_COMMAND, [...broker(id), '--describe', '--all']);
        const lines = stdout.split('\n');
        const listed = new Map(lines.map((l) => /^ {2}([^=]+)=(\S*) sensitive=/.exec(l)).filter(Boolean).map((m) => [m[1], m[2]]));
        const wrong = Object.entries(want).filter(([name, value]) => listed.get(name) !== value);
        if (wrong.length === 0) {
          log(`kafka-configs --describe --all listed ${listed.size} configs of broker ${id}: ${Object.entries(want).map(([n, v]) => `${n}=${v}`).join(', ')}`);
          return lines;
        }
        expect(Date.now() < deadline, `kafka-configs --describe --all --entity-name ${id}: ${wrong.map(([n, v]) => `${n}=${listed.get(n)}, expected ${v}`).join('; ')}`);
        await sleep(500);
      }
    };
    for (const id of ids) {
      await describeUntil(`--entity-name ${id}`, broker(id), [`Dynamic configs for broker ${id} are:`, ...(id === first ? [perBroker] : [])]);
      const lines = await allOf(id, { 'message.max.bytes': '20000', 'sasl.kerberos.min.time.before.relogin': id === first ? '58000' : '60000', 'log.retention.hours': '168', 'num.io.threads': '8' });
      const line = lines.find((l) => l.startsWith('  message.max.bytes='));
      const want = '  message.max.bytes=20000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=20000, DEFAULT_CONFIG:message.max.bytes=1048588}';
      expect(line === want, `kafka-configs --describe --all --entity-name ${id}: "${line}", expected "${want}"`);
    }

    // The new default reaches the topics: a record over 20000 bytes is refused.
    await tool('kafka-topics --create', TOPIC_COMMAND, ['--bootstrap-server', bootstrap, '--command-config', adminConfig, '--create', '--topic', topic, '--partitions', '1']);
    await waitForTopic(bootstrap, topic, 1, 15_000);
    const big = await startTool(CONSOLE_PRODUCER, ['--bootstrap-server', bootstrap, '--topic', topic, '--command-property', 'acks=all', '--command-property', 'max.request.size=200000'], {
      input: `${'x'.repeat(30_000)}\n`,
    }).done;
    expect(/RecordTooLargeException/.test(big.stderr), `kafka-console-producer of a 30000-byte record: no RecordTooLargeException\n${shown(big)}`);
    log('kafka-console-producer of a 30000-byte record: RecordTooLargeException, as message.max.bytes=20000 asks');

    const refused = await startTool(CONFIG_COMMAND, [...defaults, '--alter', '--add-config', 'sasl.kerberos.min.time.before.relogin=1']).done;
    const cause = /InvalidRequestException: (.*)/.exec(refused.stderr)?.[1];
    const message = 'Cannot update these configs at default cluster level, broker id must be specified: [sasl.kerberos.min.time.before.relogin]';
    expect(refused.code === 1 && cause === message, `kafka-configs --entity-default --alter of a per-broker config: exit ${refused.code}, "${cause}", expected exit 1 and "${message}"\n${shown(refused)}`);
    log(`kafka-configs --entity-default --alter of a per-broker config refused: ${cause}`);

    await alter('--delete-config message.max.bytes', defaults, 'Completed updating default config for brokers in the cluster.');
    await alter('--delete-config sasl.kerberos.min.time.before.relogin', broker(first), `Completed updating config for broker ${first}.`);
    await describeUntil('--entity-default', defaults, ['Default configs for brokers in the cluster are:']);
    for (const id of ids) await describeUntil(`--entity-name ${id}`, broker(id), [`Dynamic configs for broker ${id} are:`]);
  } finally {
    await startTool(TOPIC_COMMAND, ['--bootstrap-server', bootstrap, '--delete', '--if-exists', '--topic', topic]).done.catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--archive') {
  await makeArchives();
} else {
  runScenarios({
    label: 'kafka-tools',
    banner: `kafka-tools ${VERSION}`,
    scenarios: { 'broker-configs': scenarioBrokerConfigs, 'group-configs': scenarioGroupConfigs, 'group-consumer': scenarioGroupConsumer, 'log-dirs': scenarioLogDirs, 'share-group': scenarioShareGroup },
    timeoutMs: SCENARIO_TIMEOUT_MS,
  });
}

// The kcat `group` scenario: the plan in ../lib/group.mjs with balanced consumers, one
// `kcat -G` process per member (librdkafka's range and roundrobin assignors, eager), and
// `kcat -P` producing keyed messages (librdkafka's consistent_random partitioner, a hash of
// the key). kcat cannot create topics, so the 6-partition topic is created with kafkajs
// (the repository's dev dependency, as for the kafkajs client). A member's holdings come
// from the "rebalanced ... assigned:" and "revoked:" lines kcat prints on stderr; its
// records from -f '%p %o %k %s\n' on stdout (-u: unbuffered). librdkafka commits what was
// read every 200 ms (auto commit) and once more when kcat, stopped with SIGTERM, closes the
// consumer and leaves the group. Usage: node group.mjs group <host:port>.
import { spawn } from 'node:child_process';
import { waitForTopic } from '../lib/broker-requests.mjs';
import * as G from '../lib/group.mjs';
import { ScenarioFailure, expect, runScenarios } from '../lib/scenario.mjs';

const METADATA_TIMEOUT_S = '8';
const PRODUCE_TIMEOUT_MS = 10_000;
const AUTO_COMMIT_INTERVAL_MS = 200;
// Time for the members' last auto commits before one leaves.
const COMMIT_SETTLE_MS = 3 * AUTO_COMMIT_INTERVAL_MS;
// How long a kcat may take to close its consumer after SIGTERM.
const STOP_TIMEOUT_MS = 8_000;

const REBALANCED = /^% Group \S+ rebalanced \(memberid [^)]*\): (assigned|revoked): ?(.*)$/;
const RECORD = /^(\d+) (\d+) (\S*) (\S*)$/;

async function createTopic(bootstrap, topic) {
  let kafkajs;
  try {
    kafkajs = (await import('kafkajs')).default;
  } catch (err) {
    throw new ScenarioFailure(`kafkajs, used to create the topic, cannot be loaded (run ../kafkajs/run install): ${err.message}`);
  }
  const admin = new kafkajs.Kafka({ clientId: 'gregor-compat-kcat', brokers: [bootstrap], connectionTimeout: 3_000, requestTimeout: 10_000, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    // kafkajs's own wait for leaders asks one broker and fails where that one has not heard of the topic yet.
    await admin.createTopics({ topics: [{ topic, numPartitions: G.PARTITIONS, replicationFactor: 1 }], waitForLeaders: false, timeout: 5_000 });
  } finally {
    await admin.disconnect().catch(() => {});
  }
  // In a cluster, each broker learns of the topic a moment after the one that made it.
  await waitForTopic(bootstrap, topic, G.PARTITIONS);
}

// kcat -P of keyed messages [from, to), one "key\tvalue" line each.
function produce(bootstrap, topic, check, from, to) {
  const lines = [];
  for (let i = from; i < to; i++) lines.push(`${G.messageKey(i)}\t${G.messageValue(i)}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', ['-P', '-b', bootstrap, '-t', topic, '-K', '\\t', '-m', METADATA_TIMEOUT_S, '-X', 'acks=all', '-X', 'linger.ms=5'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), PRODUCE_TIMEOUT_MS);
    child.on('error', (e) => reject(new ScenarioFailure(`kcat -P: ${e.message}`)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0 || /Delivery failed|ERROR/i.test(err)) {
        reject(new ScenarioFailure(`kcat -P of messages ${from}..${to - 1}: ${signal ? `killed by ${signal}` : `exit ${code}`}\n  kcat: ${err.trim().split('\n').slice(-4).join('\n  kcat: ')}`));
        return;
      }
      check.log(`produced messages ${from}..${to - 1}`);
      resolve();
    });
    child.stdin.on('error', () => {});
    child.stdin.end(lines.join(''));
  });
}

// Splits a stream into lines, calling onLine for each.
function lines(stream, onLine) {
  let partial = '';
  stream.setEncoding('utf8').on('data', (chunk) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop();
    for (const l of parts) onLine(l);
  });
}

// One `kcat -G` member. Its stderr lines other than rebalances and end-of-partition notes
// are kept for the failure report.
function startMember(bootstrap, topic, groupId, check, name) {
  const args = [
    '-b', bootstrap, '-G', groupId, topic, '-u', '-m', METADATA_TIMEOUT_S,
    '-f', '%p %o %k %s\\n',
    '-X', 'auto.offset.reset=earliest',
    '-X', `auto.commit.interval.ms=${AUTO_COMMIT_INTERVAL_MS}`,
    '-X', `session.timeout.ms=${G.SESSION_TIMEOUT_MS}`,
    '-X', `heartbeat.interval.ms=${G.HEARTBEAT_INTERVAL_MS}`,
    '-X', `max.poll.interval.ms=${G.REBALANCE_TIMEOUT_MS}`,
    '-X', 'fetch.wait.max.ms=100',
  ];
  const child = spawn('kcat', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const member = { name, child, notes: [], exited: null };
  member.done = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      member.exited = signal ? `killed by ${signal}` : `exit ${code}`;
      resolve();
    });
  });
  child.on('error', (e) => check.problem(`${name}: spawn kcat: ${e.message}`));
  lines(child.stdout, (l) => {
    const m = RECORD.exec(l);
    if (!m) {
      check.problem(`${name} printed ${JSON.stringify(l.slice(0, 80))}, not a record`);
      return;
    }
    check.consume(name, { partition: m[1], offset: m[2], key: m[3], value: m[4] });
  });
  lines(child.stderr, (l) => {
    const m = REBALANCED.exec(l);
    if (m) {
      const parts = [...m[2].matchAll(/\[(\d+)\]/g)].map((x) => Number(x[1]));
      if (m[1] === 'assigned') check.assign(name, parts);
      else check.assign(name, [], `revoked [${parts.join(',')}]; holds`);
    } else if (l.trim() && !l.startsWith('% Reached end of topic') && !l.startsWith('% Waiting for group rebalance')) {
      member.notes.push(l);
      check.log(`${name} kcat: ${l}`);
    }
  });
  return member;
}

// SIGTERM makes kcat close its consumer: a last commit, then LeaveGroup.
async function stopMember(check, member) {
  check.assign(member.name, [], 'stopping (SIGTERM); holds');
  if (member.exited === null) member.child.kill('SIGTERM');
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS);
  });
  const tooLate = await Promise.race([member.done.then(() => false), late]);
  clearTimeout(timer);
  if (tooLate) {
    member.child.kill('SIGKILL');
    throw new ScenarioFailure(`${member.name}: kcat did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM`);
  }
  check.log(`${member.name} kcat ${member.exited}`);
  expect(member.exited === 'exit 0', `${member.name}: kcat ${member.exited} after SIGTERM`);
}

async function group(bootstrap) {
  const stamp = `${Date.now()}-${process.pid}`;
  const topic = `compat-group-kcat-${stamp}`;
  const groupId = `compat-group-kcat-${stamp}`;
  const check = new G.GroupCheck();
  const members = new Map();
  const start = (name) => members.set(name, startMember(bootstrap, topic, groupId, check, name));
  const stop = async (name) => {
    const member = members.get(name);
    members.delete(name);
    await stopMember(check, member);
  };
  const alive = (names) => {
    for (const n of names) {
      const m = members.get(n);
      if (m?.exited) throw new ScenarioFailure(`${n}: kcat ${m.exited}${m.notes.length ? `\n  kcat: ${m.notes.slice(-4).join('\n  kcat: ')}` : ''}`);
    }
    return true;
  };
  const consumeStep = async (step, from, to, names) => {
    await G.waitFor(check, `${step}: reading messages ${from}..${to - 1}`, G.CONSUME_TIMEOUT_MS, () => alive(names) && check.countRead(from, to) === to - from,
      () => `${check.countRead(from, to)} read; ${check.describe(names)}`);
    return check.expectStep(step, from, to, names);
  };
  const pause = (ms) => new Promise((r) => setTimeout(r, ms));

  try {
    await createTopic(bootstrap, topic);
    check.log(`topic ${topic} with ${G.PARTITIONS} partitions (created with kafkajs); group ${groupId}`);

    start('A');
    start('B');
    await G.waitFor(check, 'A and B holding all partitions between them', G.JOIN_TIMEOUT_MS, () => alive(['A', 'B']) && check.split(['A', 'B']),
      () => check.describe(['A', 'B']));
    await produce(bootstrap, topic, check, 0, G.FIRST);
    await consumeStep('A and B', 0, G.FIRST, ['A', 'B']);
    check.expectSpread();

    await pause(COMMIT_SETTLE_MS);
    const leftAt = Date.now();
    await stop('B');
    await G.waitFor(check, 'A holding all partitions after B left', G.SESSION_TIMEOUT_MS, () => alive(['A']) && check.holds('A').size === G.PARTITIONS,
      () => check.describe(['A']));
    check.log(`A holds all ${G.PARTITIONS} partitions ${Date.now() - leftAt} ms after B was told to stop`);
    await produce(bootstrap, topic, check, G.FIRST, G.FIRST + G.SECOND);
    await consumeStep('A alone', G.FIRST, G.FIRST + G.SECOND, ['A']);

    await pause(COMMIT_SETTLE_MS);
    await stop('A');
    const end = G.FIRST + G.SECOND + G.THIRD;
    await produce(bootstrap, topic, check, G.FIRST + G.SECOND, end);
    start('C');
    await consumeStep('C after the commits', G.FIRST + G.SECOND, end, ['C']);
    // A partition C wrongly read from its start would show up as old messages by now.
    await pause(1_000);
    check.expectStep('whole run', 0, end, ['A', 'B', 'C']);
    expect(check.holds('C').size === G.PARTITIONS, `C holds ${check.describe(['C'])}, expected all ${G.PARTITIONS} partitions`);
    await stop('C');
  } finally {
    for (const member of members.values()) member.child.kill('SIGKILL');
  }
}

runScenarios({ label: 'kcat', banner: 'kcat (librdkafka 2.0.2)', scenarios: { group } });

/**
 * Failover under three real clients at once, three gregor broker processes
 * on one etcd: the Java client and confluent-kafka (librdkafka, Debian's
 * python3-confluent-kafka), both with acks=all and idempotence, and kafkajs
 * with acks=all, produce to a topic of three partitions and three replicas
 * while each partition's leader in turn is killed with SIGKILL and started
 * again, and a kafkajs consumer group reads along; meanwhile the Java client
 * also runs transactions of ten records each to a second topic of the same
 * shape. Afterwards every record a
 * client was told was written is in the log at the offset it was given, each
 * client's records are in the order it sent them in every partition, the
 * idempotent clients' records are there once, and the group went on
 * consuming after every failover; read_committed, the second topic holds
 * every record of every committed transaction once, at its offset, and
 * nothing of an aborted one. Needs etcd, java with the compat client
 * built (compat-tests/java-client/run install) and /usr/bin/python3 with
 * confluent_kafka; skipped without them, except under CI, where that fails
 * the run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterView, until } from './cluster-test-support.js';
import { TestCluster, hasEtcd } from './test-cluster.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..');
const JAR = join(ROOT, 'compat-tests', 'java-client', 'target', 'java-client-compat-all.jar');
const PY_LOOP = join(ROOT, 'compat-tests', 'confluent-kafka-debian', 'produce_loop.py');
const PYTHON = '/usr/bin/python3';
const PRODUCE_SECONDS = 45;
const TOPIC = 'chaos';
const TXN_TOPIC = 'chaos-txn';

const hasJava = existsSync(JAR) && spawnSync('java', ['-version']).status === 0;
const hasConfluent = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import confluent_kafka']).status === 0;
const runnable = hasEtcd && hasJava && hasConfluent;

let cluster: TestCluster;
let work: string;
const children: ChildProcess[] = [];

/** Runs a client's produce loop to its end; resolves its output, rejects when it fails. */
function produceLoop(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), (PRODUCE_SECONDS + 90) * 1000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise(out);
      else reject(new Error(`${cmd} ${args[0]} exited with ${code}: ${out.slice(-2000)}`));
    });
  });
}

interface Ack {
  partition: number;
  offset: bigint;
  value: string;
}

function readAcks(file: string): Ack[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const [partition, offset, value] = l.split(' ');
      return { partition: Number(partition), offset: BigInt(offset!), value: value! };
    });
}

describe.skipIf(!runnable && !process.env.CI)('failover under the Java client, confluent-kafka and kafkajs', () => {
  beforeAll(async () => {
    if (!runnable) throw new Error(`needs etcd (${hasEtcd}), the Java compat client built (${hasJava}) and ${PYTHON} with confluent_kafka (${hasConfluent})`);
    work = mkdtempSync(join(tmpdir(), 'gregor-chaos-out-'));
    // A broker comes back on its own port, as it would on its own machine: the clients' bootstrap list stays true.
    cluster = await TestCluster.start(
      [1, 2, 3],
      ['broker.session.timeout.ms=4000', 'transaction.state.log.replication.factor=3', 'transaction.state.log.min.isr=2', 'transaction.state.log.num.partitions=3'],
      { fixedPorts: true },
    );
  }, 60_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await cluster?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it('keeps every acknowledged record, in order, while leaders are killed again and again, and the group goes on consuming', async () => {
    const bootstrap = cluster.bootstraps();
    const kafka = new Kafka({ clientId: 'chaos-test', brokers: bootstrap, logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } });
    const admin = kafka.admin();
    await admin.connect();
    await until('three brokers', async () => (await admin.describeCluster()).brokers.length === 3);
    const configEntries = [{ name: 'min.insync.replicas', value: '2' }];
    await admin.createTopics({
      topics: [
        { topic: TOPIC, numPartitions: 3, replicationFactor: 3, configEntries },
        { topic: TXN_TOPIC, numPartitions: 3, replicationFactor: 3, configEntries },
      ],
      waitForLeaders: true,
    });
    const allInSync = async (): Promise<boolean> => {
      const v = await clusterView(cluster.any(), TOPIC);
      return v.partitions.length === 3 && v.partitions.every((p) => p.isr.length === 3 && p.leader >= 0);
    };
    await until('every ISR at three', allInSync);

    // A group reads along the whole time.
    let groupRead = 0;
    const group = kafka.consumer({ groupId: 'chaos-readers', sessionTimeout: 10_000 });
    await group.connect();
    await group.subscribe({ topic: TOPIC, fromBeginning: true });
    await group.run({ eachMessage: async () => void groupRead++ });

    const javaOut = join(work, 'java.acks');
    const pyOut = join(work, 'confluent.acks');
    const java = produceLoop('java', ['-jar', JAR, 'produce-loop', bootstrap.join(','), TOPIC, String(PRODUCE_SECONDS), javaOut]);
    const confluent = produceLoop(PYTHON, [PY_LOOP, bootstrap.join(','), TOPIC, String(PRODUCE_SECONDS), pyOut]);
    const txnOut = join(work, 'java-txn.outcomes');
    const javaTxn = produceLoop('java', ['-jar', JAR, 'txn-produce-loop', bootstrap.join(','), TXN_TOPIC, String(PRODUCE_SECONDS), txnOut]);
    const jsAcks: Ack[] = [];
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const stopAt = Date.now() + PRODUCE_SECONDS * 1000;
    const js = (async () => {
      for (let i = 0; Date.now() < stopAt; i++) {
        const value = `kafkajs-${i}`;
        try {
          const [md] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ value }] });
          jsAcks.push({ partition: md!.partition, offset: BigInt(md!.baseOffset!), value });
        } catch {
          // not acknowledged
        }
        await new Promise((r) => setTimeout(r, 2));
      }
    })();

    await until('the group reading', async () => groupRead >= 100, 30_000);
    // Each partition's leader in turn dies and comes back; the group reads more after each time.
    for (let round = 0; round < 3; round++) {
      const leader = (await clusterView(cluster.any(), TOPIC)).partitions[round]!.leader;
      await cluster.kill(leader);
      await new Promise((r) => setTimeout(r, 3000));
      const before = groupRead;
      await until(`the group reading after failover ${round + 1}`, async () => groupRead > before + 50, 30_000);
      await cluster.start(leader);
      await until(`every ISR at three after round ${round + 1}`, allInSync, 30_000);
    }

    const [javaSummary, pySummary, , txnSummary] = await Promise.all([java, confluent, js, javaTxn]);
    await producer.disconnect();
    const summary = (out: string): string => out.split('\n').find((l) => /produce-loop: (acknowledged|committed)/.test(l)) ?? out.slice(-500);
    console.log(`${summary(javaSummary)}; ${summary(pySummary)}; kafkajs acknowledged ${jsAcks.length}; ${summary(txnSummary)}`);
    expect(txnSummary).toMatch(/committed [1-9]\d* aborted/);
    expect(javaSummary).toMatch(/acknowledged [1-9]\d* failed/);
    expect(pySummary).toMatch(/acknowledged [1-9]\d* failed/);

    // The whole topic as stored, read by a fresh consumer up to the end of every partition.
    const ends = await admin.fetchTopicOffsets(TOPIC);
    await admin.disconnect();
    const log = new Map<number, Map<bigint, string>>([0, 1, 2].map((p) => [p, new Map()]));
    const reader = kafka.consumer({ groupId: 'chaos-check' });
    await reader.connect();
    await reader.subscribe({ topic: TOPIC, fromBeginning: true });
    await reader.run({ eachMessage: async ({ partition, message }) => void log.get(partition)!.set(BigInt(message.offset), message.value!.toString()) });
    await until(
      'the whole topic read',
      async () => ends.every((e) => log.get(e.partition)!.size >= Number(e.high) - Number(e.low)),
      60_000,
    );
    await group.disconnect();
    await reader.disconnect();

    const clients: [string, Ack[], boolean][] = [
      ['java', readAcks(javaOut), true],
      ['confluent', readAcks(pyOut), true],
      ['kafkajs', jsAcks, false],
    ];
    // The transactions, as a read_committed reader sees them: every committed record once, at its offset, nothing aborted.
    const outcomes = readFileSync(txnOut, 'utf8').split('\n').filter((l) => l.length > 0);
    const committedTxn = outcomes.filter((l) => l.startsWith('C ')).map((l) => l.split(' '));
    const abortedTxn = new Set(outcomes.filter((l) => l.startsWith('A ')).map((l) => l.slice(2)));
    expect(committedTxn.length).toBeGreaterThan(100);
    const txnLog = new Map<string, string[]>();
    const txnReader = kafka.consumer({ groupId: 'chaos-txn-check' });
    await txnReader.connect();
    await txnReader.subscribe({ topic: TXN_TOPIC, fromBeginning: true });
    await txnReader.run({
      eachMessage: async ({ partition, message }) => {
        const v = message.value!.toString();
        txnLog.set(v, [...(txnLog.get(v) ?? []), `${partition} ${message.offset}`]);
      },
    });
    await until('every committed transactional record read', async () => committedTxn.every(([, , , v]) => txnLog.has(v!)), 60_000).catch(() => undefined);
    // What an aborted transaction wrote would arrive with the rest.
    await new Promise((r) => setTimeout(r, 1000));
    await txnReader.disconnect();
    const notFound = committedTxn.filter(([, p, o, v]) => txnLog.get(v!)?.[0] !== `${p} ${o}`).map((c) => c.join(' '));
    expect(notFound.slice(0, 5), 'committed transactional records not read at their offsets').toEqual([]);
    expect([...txnLog].filter(([, at]) => at.length > 1).slice(0, 5), 'transactional records read twice').toEqual([]);
    expect([...txnLog.keys()].filter((v) => abortedTxn.has(v)).slice(0, 5), 'records of aborted transactions read committed').toEqual([]);

    for (const [name, acks, idempotent] of clients) {
      expect(acks.length, `${name} acknowledged records`).toBeGreaterThan(100);
      // Every acknowledged record is at the offset the client was given.
      const missing = acks.filter((a) => log.get(a.partition)!.get(a.offset) !== a.value);
      expect(missing.slice(0, 5), `${name}: acknowledged records not found at their offsets`).toEqual([]);
      // In each partition, this client's records are in the order it sent them.
      for (const [partition, records] of log) {
        const indexes = [...records.entries()]
          .sort((a, b) => (a[0] < b[0] ? -1 : 1))
          .map(([, v]) => v)
          .filter((v) => v.startsWith(`${name}-`))
          .map((v) => Number(v.slice(name.length + 1)));
        const outOfOrder = indexes.findIndex((n, i) => i > 0 && n < indexes[i - 1]!);
        expect(outOfOrder, `${name} partition ${partition}: record ${indexes[outOfOrder]} after ${indexes[outOfOrder - 1]}`).toBe(-1);
        if (idempotent) expect(new Set(indexes).size, `${name} partition ${partition}: a record stored twice`).toBe(indexes.length);
      }
    }
  }, 240_000);
});

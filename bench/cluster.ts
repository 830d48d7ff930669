/**
 * Cluster benchmark: three gregor brokers on one etcd (Debian's etcd-server),
 * each a process of its own on this machine, as `gregor dev-cluster` runs
 * them (broker.session.timeout.ms 2000).
 *
 *   node dist/bench/cluster.js [--quick | --full]
 *
 * - acks=all throughput: the load generator of the throughput benchmark
 *   (bench/load.ts: pre-encoded 16 KiB batches of 100 B records, 4
 *   connections x 8 in flight) produces with acks=-1 to a topic of 3
 *   partitions with 3 replicas each and min.insync.replicas 2, all led by
 *   broker 1, so that every append waits for both followers.
 * - Failover time: the leader of a partition with 3 in-sync replicas is
 *   killed with SIGKILL; the time from the kill to the first acks=-1 produce
 *   that the new leader acknowledges (one record, retried every 20 ms
 *   against whichever broker Metadata names). The killed broker is started
 *   again and back in the ISR before the next round.
 * - Transactions: a topic of 3 partitions with 3 replicas each and
 *   min.insync.replicas 2, led by brokers 1, 2 and 3; a transactional
 *   producer on bare connections (bench/txn-producer.ts) commits one
 *   transaction after another, each one acks=-1 batch to every partition,
 *   and times the commit (EndTxn), the whole transaction (AddPartitionsToTxn
 *   to the EndTxn answer) and the wait until a read_committed ListOffsets on
 *   every leader shows the records stable; p50 and p99 of 200 transactions
 *   after 20 of warm-up (quick: 20 after 5). The coordinator of the
 *   transactional id is another broker than at least one of the leaders.
 *
 * With --full (and unless --no-kafka), the acks=all and transaction
 * scenarios run the same way on three reference Apache Kafka nodes
 * (compat-tests/lib/reference-kafka.mjs: each a KRaft broker and voter, a
 * JVM of -Xms512m -Xmx1g, __transaction_state with 3 replicas and
 * min.insync.replicas 2 as gregor's), after gregor's brokers are stopped.
 * Without etcd the module reports that it was skipped.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode, errorName } from '../wire/errors.js';
import type { CreateTopicsRequest } from '../wire/messages/create-topics-request.js';
import type { CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import type { ProduceResponse } from '../wire/messages/produce-response.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import { clusterView, until } from '../src/cluster-test-support.js';
import { TestCluster, hasEtcd } from '../src/test-cluster.js';
import { repoRoot } from './brokers.js';
import { awaitWritable, benchBatch, describeErrors, produceLoad, recordsPerBatchFor, PRODUCE_VERSION } from './load.js';
import type { BenchModule, BenchRow } from './report.js';
import { runStandalone } from './report.js';
import { percentile, runTransactions, type TxnNode, type TxnRun, type TxnSettings } from './txn-producer.js';

const MODULE = 'cluster';
const BROKERS = 3;
const SESSION_MS = 2000;
const GOAL_FAILOVER_MS = 3000;
const GOAL_ACKS_ALL_RATE = 300_000;


async function lib<T>(name: string): Promise<T> {
  return (await import(pathToFileURL(join(repoRoot(), 'compat-tests', 'lib', name)).href)) as T;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function withConn<T>(g: { host: string; port: number }, fn: (c: WireConnection) => Promise<T>): Promise<T> {
  const c = await WireConnection.open(g.host, g.port);
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

async function createReplicated(g: { host: string; port: number }, topic: string, assignments: number[][]): Promise<void> {
  await withConn(g, async (c) => {
    const res = await c.request<CreateTopicsResponse, CreateTopicsRequest>(api('CreateTopics'), 7, {
      topics: [
        {
          name: topic,
          numPartitions: -1,
          replicationFactor: -1,
          assignments: assignments.map((brokerIds, partitionIndex) => ({ partitionIndex, brokerIds })),
          configs: [{ name: 'min.insync.replicas', value: '2' }],
        },
      ],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    const code = res.topics[0]?.errorCode ?? -1;
    if (code !== ErrorCode.NONE) throw new Error(`CreateTopics ${topic}: ${errorName(code)}`);
  });
}

/**
 * The acks=all load of this module against the broker at `g` (leader of
 * every partition of `topic`), once every partition takes a write (a broker
 * can name a leader before the leader takes writes).
 */
async function acksAllLoad(g: { host: string; port: number }, topic: string, durationMs: number): ReturnType<typeof produceLoad> {
  await awaitWritable(g.host, g.port, topic, 3, 100);
  return produceLoad(g.host, g.port, {
    connections: 4,
    depth: 8,
    recordSize: 100,
    recordsPerBatch: recordsPerBatchFor(100),
    acks: -1,
    targetRate: 0,
    topic,
    partitions: 3,
    warmupMs: 1000,
    durationMs,
  });
}

const ACKS_ALL_SCENARIO = 'produce acks=all 100 B, 3 partitions x 3 replicas';

function acksAllNote(p: Awaited<ReturnType<typeof produceLoad>>, processes: string): string {
  const errors = p.errors.size === 0 && p.failures.length === 0 ? 'no errors' : `errors: ${describeErrors(p.errors)} ${p.failures.slice(0, 1).join('')}`;
  return `${p.requests} requests in ${(p.elapsedMs / 1000).toFixed(1)} s; ${errors}; goal >= ${GOAL_ACKS_ALL_RATE.toLocaleString('en-US')}; ${processes} and the generator share 2 cores`;
}

const TXN_TOPIC = 'txn';
/** Partition p's replicas, its preferred leader first: partitions led by brokers 1, 2 and 3. */
const TXN_ASSIGNMENTS = [
  [1, 2, 3],
  [2, 3, 1],
  [3, 1, 2],
];
const TXN_SCENARIO = 'txn, 3 partitions on 3 leaders';

function txnSettings(quick: boolean): TxnSettings {
  return quick ? { warmup: 5, transactions: 20, records: 1, recordSize: 100 } : { warmup: 20, transactions: 200, records: 1, recordSize: 100 };
}

/**
 * Creates the transaction scenario's topic through `nodes[0]`, waits until
 * every partition is led by its preferred leader with all three in its ISR,
 * and runs the transactions: the scenario's rows for `subject`.
 */
async function transactionRows(nodes: readonly TxnNode[], subject: string, settings: TxnSettings, log: (line: string) => void): Promise<BenchRow[]> {
  const first = nodes[0]!;
  const bootstrap = `${first.host}:${first.port}`;
  await createReplicated(first, TXN_TOPIC, TXN_ASSIGNMENTS);
  const leaders = TXN_ASSIGNMENTS.map((replicas) => replicas[0]!);
  await until(
    `partitions of ${TXN_TOPIC} led by ${leaders.join(', ')} with all three in their ISRs`,
    async () => {
      const parts = (await clusterView(bootstrap, TXN_TOPIC)).partitions;
      return parts.length === leaders.length && parts.every((p, i) => p.leader === leaders[i] && p.isr.length === BROKERS);
    },
    60_000,
  );
  log(`${subject}: ${settings.transactions} transactions after ${settings.warmup} of warm-up, each ${settings.records} record of ${settings.recordSize} B to every partition`);
  const r = await runTransactions(nodes, TXN_TOPIC, leaders, 'bench-txn', settings);
  const led = r.leaders.map((l, p) => `partition ${p} by broker ${l}`).join(', ');
  const coordinatorLeads = r.leaders.flatMap((l, p) => (l === r.coordinator ? [p] : []));
  log(
    `${subject}: transactional id ${r.transactionalId} coordinated by broker ${r.coordinator} (${coordinatorLeads.length === 0 ? 'which leads none of the partitions' : `which also leads partition ${coordinatorLeads.join(', ')}`}); ${led}`,
  );
  log(
    `${subject}: CONCURRENT_TRANSACTIONS answers: ${r.concurrentTransactions} in the recorded transactions (${r.delayedTransactions} of them waited ${Math.round(r.delayedMs)} ms in all to start), ${r.warmupConcurrentTransactions} in the warm-up`,
  );
  return txnRows(r, subject);
}

function txnRows(r: TxnRun, subject: string): BenchRow[] {
  const n = r.commitMs.length;
  const where = `coordinator broker ${r.coordinator}, leaders ${r.leaders.join(', ')}`;
  const concurrent = `${r.concurrentTransactions} CONCURRENT_TRANSACTIONS answers (asked again every 2 ms) held up ${r.delayedTransactions} transactions for ${Math.round(r.delayedMs)} ms in all, counted in`;
  const figures: [string, number[], string][] = [
    ['commit (EndTxn sent -> answered)', r.commitMs, `${n} transactions; ${where}`],
    ['AddPartitionsToTxn sent -> EndTxn answered', r.endToEndMs, `${n} transactions; one acks=-1 Produce per leader; ${concurrent}`],
    ['EndTxn sent -> read_committed LSO past it on 3 leaders', r.visibleMs, `${n} transactions; ListOffsets every ~1 ms from the EndTxn answer; ${r.visibilityPolls} polls`],
  ];
  const rows: BenchRow[] = [];
  for (const [what, samples, note] of figures) {
    for (const p of [50, 99]) {
      const max = p === 99 && n < 100 ? ' (p99 of fewer than 100 is the maximum)' : '';
      rows.push({ module: MODULE, scenario: `${TXN_SCENARIO}: ${what} p${p}`, subject, value: percentile(samples, p), unit: 'ms', better: 'lower', note: note + max });
    }
  }
  return rows;
}

/**
 * The acks=all and transaction scenarios on three reference Kafka nodes;
 * empty when the reference broker is not installed.
 */
async function kafkaCluster(durationMs: number, settings: TxnSettings, log: (line: string) => void): Promise<BenchRow[]> {
  const ref = await lib<{
    referenceKafkaVersion(): string | null;
    startReferenceKafkaCluster(o: { brokers: number; settings?: Record<string, string> }): Promise<{ nodes: { nodeId: number; bootstrap: string; host: string; port: number }[]; version: string; stop(): Promise<void> }>;
  }>('reference-kafka.mjs');
  if (ref.referenceKafkaVersion() === null) {
    log('reference Kafka is not installed (compat-tests/reference-kafka/run install); its cluster is left out');
    return [];
  }
  log('starting 3 reference Kafka nodes');
  // The reference nodes' own default keeps __transaction_state on one replica; gregor's keeps 3.
  const k = await ref.startReferenceKafkaCluster({
    brokers: BROKERS,
    settings: { 'transaction.state.log.replication.factor': String(BROKERS), 'transaction.state.log.min.isr': '2' },
  });
  try {
    const one = k.nodes[0]!;
    await until('3 Kafka brokers in Metadata', async () => (await clusterView(one.bootstrap, 'none')).brokers.length === BROKERS, 60_000);
    await createReplicated(one, 'acks-all', [[1, 2, 3], [1, 3, 2], [1, 2, 3]]);
    await until('the Kafka ISRs to hold all three', async () => (await clusterView(one.bootstrap, 'acks-all')).partitions.every((p) => p.isr.length === BROKERS && p.leader === 1), 60_000);
    log(`kafka ${k.version}: acks=all produce to 3 partitions x 3 replicas for ${durationMs / 1000} s`);
    const p = await acksAllLoad(one, 'acks-all', durationMs);
    const subject = `kafka ${k.version} x3`;
    const rows: BenchRow[] = [{ module: MODULE, scenario: ACKS_ALL_SCENARIO, subject, value: p.recordsPerSec, unit: 'records/s', better: 'higher', note: acksAllNote(p, '3 JVMs') }];
    rows.push(...(await transactionRows(k.nodes, subject, settings, log)));
    return rows;
  } finally {
    await k.stop();
  }
}

/** One acks=-1 record to `partition` through `g`: the error code, or null when the broker could not be asked. */
async function produceOne(g: { host: string; port: number }, topic: string, partition: number): Promise<number | null> {
  const body: ProduceRequest = {
    transactionalId: null,
    acks: -1,
    timeoutMs: 5000,
    topicData: [{ name: topic, topicId: ZERO_UUID, partitionData: [{ index: partition, records: benchBatch(100, 1) }] }],
  };
  try {
    return await withConn(g, async (c) => {
      const res = await c.request<ProduceResponse, ProduceRequest>(api('Produce'), PRODUCE_VERSION, body);
      return res.responses[0]?.partitionResponses[0]?.errorCode ?? -1;
    });
  } catch {
    return null;
  }
}

/** Kills the leader of `topic`-0 and times until an acks=-1 produce is acknowledged again. */
async function failoverOnce(c: TestCluster, topic: string): Promise<{ ms: number; from: number; to: number }> {
  await until('all three in the ISR', async () => (await clusterView(c.any(), topic)).partitions[0]?.isr.length === BROKERS, 60_000);
  const from = (await clusterView(c.any(), topic)).partitions[0]!.leader;
  const t0 = performance.now();
  await c.kill(from);
  let to = -1;
  for (;;) {
    if (performance.now() - t0 > 60_000) throw new Error('no leader took over within 60 s');
    const survivor = c.anyBroker();
    const states = await clusterView(survivor.bootstrap, topic).catch(() => null);
    const leader = states?.partitions[0]?.leader ?? -1;
    const target = leader >= 0 && leader !== from ? c.running.get(leader) : undefined;
    if (target && (await produceOne(target, topic, 0)) === ErrorCode.NONE) {
      to = leader;
      break;
    }
    await sleep(20);
  }
  const ms = performance.now() - t0;
  await c.start(from);
  return { ms, from, to };
}

export const run: BenchModule = async (opts) => {
  const log = opts.log;
  if (!hasEtcd) {
    log('etcd is not installed (Debian: apt-get install etcd-server); the cluster benchmark is skipped');
    return [{ module: MODULE, scenario: 'cluster of 3 brokers', subject: 'gregor', value: NaN, unit: '', better: 'higher', note: 'skipped: etcd not installed' }];
  }
  const rows: BenchRow[] = [];
  const c = await TestCluster.start(Array.from({ length: BROKERS }, (_, i) => i + 1), [`broker.session.timeout.ms=${SESSION_MS}`]);
  try {
    // acks=all throughput: three partitions, every one led by broker 1 with both others following.
    const leaderOne = c.running.get(1)!;
    await createReplicated(leaderOne, 'acks-all', [[1, 2, 3], [1, 3, 2], [1, 2, 3]]);
    await until('the ISRs to hold all three', async () => (await clusterView(leaderOne.bootstrap, 'acks-all')).partitions.every((p) => p.isr.length === BROKERS && p.leader === 1), 60_000);
    const durationMs = opts.quick ? 3000 : 10_000;
    log(`acks=all produce to 3 partitions x 3 replicas for ${durationMs / 1000} s`);
    const p = await acksAllLoad(leaderOne, 'acks-all', durationMs);
    rows.push({ module: MODULE, scenario: ACKS_ALL_SCENARIO, subject: 'gregor', value: p.recordsPerSec, unit: 'records/s', better: 'higher', note: acksAllNote(p, '3 broker processes') });

    // Transactions over partitions led by three brokers, before failover moves leaders around.
    const nodes = [...c.running.entries()].map(([nodeId, g]) => ({ nodeId, host: g.host, port: g.port })).sort((a, b) => a.nodeId - b.nodeId);
    rows.push(...(await transactionRows(nodes, 'gregor', txnSettings(opts.quick), log)));

    // Failover.
    await createReplicated(c.anyBroker(), 'failover', [[1, 2, 3]]);
    const rounds = opts.quick ? 1 : 3;
    const times: number[] = [];
    const moves: string[] = [];
    for (let i = 0; i < rounds; i++) {
      const f = await failoverOnce(c, 'failover');
      log(`failover ${i + 1}/${rounds}: leader ${f.from} killed, ${f.to} took over, produce acknowledged after ${Math.round(f.ms)} ms`);
      times.push(f.ms);
      moves.push(`${f.from}->${f.to}`);
    }
    times.sort((a, b) => a - b);
    rows.push({
      module: MODULE,
      scenario: 'failover: leader SIGKILL -> acks=all produce acknowledged',
      subject: 'gregor',
      value: times[Math.floor(times.length / 2)]!,
      unit: 'ms',
      better: 'lower',
      note: `median of ${rounds} (${times.map((t) => Math.round(t)).join(', ')} ms; ${moves.join(', ')}); broker.session.timeout.ms ${SESSION_MS}; goal < ${GOAL_FAILOVER_MS}`,
    });
  } finally {
    await c.close();
  }
  if (opts.kafka && !opts.quick) rows.push(...(await kafkaCluster(10_000, txnSettings(false), log)));
  return rows;
};

runStandalone(MODULE, import.meta.url, run);

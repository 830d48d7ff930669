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
 *
 * With --full (and unless --no-kafka), the acks=all scenario runs the same
 * way on three reference Apache Kafka nodes (compat-tests/lib/reference-kafka.mjs:
 * each a KRaft broker and voter, a JVM of -Xms512m -Xmx1g), after gregor's
 * brokers are stopped. Without etcd the module reports that it was skipped.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode, errorName } from '../wire/errors.js';
import type { CreateTopicsRequest } from '../wire/messages/create-topics-request.js';
import type { CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import type { ProduceRequest } from '../wire/messages/produce-request.js';
import type { ProduceResponse } from '../wire/messages/produce-response.js';
import { WireConnection, api } from '../cluster/inter-broker/kafka-connection.js';
import { clusterView, until } from '../src/cluster-test-support.js';
import { TestCluster, hasEtcd } from '../src/test-cluster.js';
import { repoRoot } from './brokers.js';
import { awaitWritable, benchBatch, describeErrors, produceLoad, recordsPerBatchFor, PRODUCE_VERSION } from './load.js';
import type { BenchModule, BenchRow } from './report.js';
import { runStandalone } from './report.js';

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

/** The same acks=all scenario on three reference Kafka nodes; null when the reference broker is not installed. */
async function kafkaAcksAll(durationMs: number, log: (line: string) => void): Promise<BenchRow | null> {
  const ref = await lib<{
    referenceKafkaVersion(): string | null;
    startReferenceKafkaCluster(o: { brokers: number }): Promise<{ nodes: { nodeId: number; bootstrap: string; host: string; port: number }[]; version: string; stop(): Promise<void> }>;
  }>('reference-kafka.mjs');
  if (ref.referenceKafkaVersion() === null) {
    log('reference Kafka is not installed (compat-tests/reference-kafka/run install); its cluster is left out');
    return null;
  }
  log('starting 3 reference Kafka nodes');
  const k = await ref.startReferenceKafkaCluster({ brokers: BROKERS });
  try {
    const one = k.nodes[0]!;
    await until('3 Kafka brokers in Metadata', async () => (await clusterView(one.bootstrap, 'none')).brokers.length === BROKERS, 60_000);
    await createReplicated(one, 'acks-all', [[1, 2, 3], [1, 3, 2], [1, 2, 3]]);
    await until('the Kafka ISRs to hold all three', async () => (await clusterView(one.bootstrap, 'acks-all')).partitions.every((p) => p.isr.length === BROKERS && p.leader === 1), 60_000);
    log(`kafka ${k.version}: acks=all produce to 3 partitions x 3 replicas for ${durationMs / 1000} s`);
    const p = await acksAllLoad(one, 'acks-all', durationMs);
    return { module: MODULE, scenario: ACKS_ALL_SCENARIO, subject: `kafka ${k.version} x3`, value: p.recordsPerSec, unit: 'records/s', better: 'higher', note: acksAllNote(p, '3 JVMs') };
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
    topicData: [{ name: topic, partitionData: [{ index: partition, records: benchBatch(100, 1) }] }],
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
  if (opts.kafka && !opts.quick) {
    const k = await kafkaAcksAll(10_000, log);
    if (k) rows.splice(1, 0, k);
  }
  return rows;
};

runStandalone(MODULE, import.meta.url, run);

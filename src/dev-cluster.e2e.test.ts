/**
 * `bin/gregor dev-cluster` as a developer runs it: etcd and three brokers
 * come up, kafkajs 2.2.4 sees a cluster of three and uses it, one Ctrl-C
 * (SIGINT) stops every process. Skipped where etcd is not installed, except
 * under CI, where that fails the run.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a JavaScript test helper without type declarations.
import { etcdBinary } from '../compat-tests/lib/etcd.mjs';
import { parseDevClusterArgs, UsageError } from './cli.js';

const root = resolve(import.meta.dirname, '..');
const hasEtcd = etcdBinary() !== null;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Whether 127.0.0.1:port can be bound now. */
function free(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer();
    s.once('error', () => res(false));
    s.listen({ host: '127.0.0.1', port, exclusive: true }, () => s.close(() => res(true)));
  });
}

/** The first of `n` consecutive free ports, looked for from a random start in a high range. */
async function consecutiveFreePorts(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let i = 0; i < n && ok; i++) ok = await free(base + i);
    if (ok) return base;
  }
  throw new Error(`no ${n} consecutive free ports found`);
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('gregor dev-cluster arguments', () => {
  it('defaults to three brokers from 9092 under ./data/dev-cluster, and refuses what cannot work', () => {
    expect(parseDevClusterArgs([])).toMatchObject({ brokers: 3, port: 9092, dataDir: './data/dev-cluster', etcd: null });
    expect(parseDevClusterArgs(['--brokers', '5', '--port', '19092', '--data-dir', '/tmp/x', '--etcd', '127.0.0.1:2379'])).toMatchObject({
      brokers: 5,
      port: 19092,
      dataDir: '/tmp/x',
      etcd: '127.0.0.1:2379',
    });
    expect(() => parseDevClusterArgs(['--brokers', '0'])).toThrow(UsageError);
    expect(() => parseDevClusterArgs(['--port', '65535', '--brokers', '2'])).toThrow('leaves no room');
    expect(() => parseDevClusterArgs(['--etcd', 'nohostport'])).toThrow(UsageError);
    expect(() => parseDevClusterArgs(['--replicas', '2'])).toThrow('unknown option "--replicas"');
  });
});

describe.skipIf(!hasEtcd && !process.env.CI)('gregor dev-cluster', () => {
  it('starts etcd and three brokers that clients see as one cluster, and stops them all on Ctrl-C', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-dev-cluster-'));
    dirs.push(dir);
    const port = await consecutiveFreePorts(3);
    // In a process group of its own, as a terminal would run it: Ctrl-C goes to the whole group.
    const child = spawn(process.execPath, [join(root, 'bin', 'gregor'), 'dev-cluster', '--port', String(port), '--data-dir', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    let started: number[] = [];
    try {
      const ready = await new Promise<{ bootstrap: string; brokers: { pid: number }[]; etcdPid: number }>((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`no ready line within 60 s:\n${out}\n${err}`)), 60_000);
        const check = (): void => {
          const line = out.split('\n').find((l) => l.includes('dev cluster ready') && l.endsWith('}'));
          if (!line) return;
          clearTimeout(timer);
          try {
            res(JSON.parse(line));
          } catch (e) {
            rej(e);
          }
        };
        child.stdout.on('data', check);
        void exited.then((code) => rej(new Error(`dev-cluster exited with ${code}:\n${out}\n${err}`)));
      });
      started = [...ready.brokers.map((b) => b.pid), ready.etcdPid];
      expect(ready.bootstrap).toBe(`127.0.0.1:${port},127.0.0.1:${port + 1},127.0.0.1:${port + 2}`);

      const kafka = new Kafka({ clientId: 'dev-cluster-test', brokers: ready.bootstrap.split(','), logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      try {
        const cluster = await admin.describeCluster();
        expect(cluster.brokers.map((b) => [b.nodeId, b.port]).sort()).toEqual([
          [1, port],
          [2, port + 1],
          [3, port + 2],
        ]);
        await admin.createTopics({ topics: [{ topic: 'three', numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true });
        const md = await admin.fetchTopicMetadata({ topics: ['three'] });
        const parts = md.topics[0]!.partitions;
        // Kafka's placement: leaders on three different brokers, every broker a replica of every partition.
        expect(new Set(parts.map((p) => p.leader)).size).toBe(3);
        for (const p of parts) expect([...p.replicas].sort()).toEqual([1, 2, 3]);
      } finally {
        await admin.disconnect();
      }
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: 'three', acks: -1, messages: [0, 1, 2].map((partition) => ({ value: `m${partition}`, partition })) });
      await producer.disconnect();

      // Ctrl-C: SIGINT to the terminal's process group, which is the dev cluster's alone.
      process.kill(-child.pid!, 'SIGINT');
      expect(await exited).toBe(0);
      expect(started.filter(alive)).toEqual([]);
      // Every broker stopped cleanly (one signal, from the dev cluster), and wrote its log where it should.
      for (const i of [1, 2, 3]) {
        const log = readFileSync(join(dir, `broker-${i}.log`), 'utf8');
        expect(log).toContain('gregor ready');
        expect(log).toContain('"msg":"stopped"');
        expect(log).not.toContain('second signal');
      }
    } finally {
      // What a failed run left behind: the dev cluster's group, and its children's groups.
      for (const pid of [child.pid!, ...started]) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
  }, 120_000);
});

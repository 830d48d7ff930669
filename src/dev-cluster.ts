/**
 * `gregor dev-cluster`: a cluster on one machine for development. It starts
 * etcd (Debian's etcd-server, or any etcd on PATH or in $ETCD) and N brokers
 * on consecutive ports, each a `gregor start` process with its own data
 * directory under one folder, prints the bootstrap string once every broker
 * is ready, and stops them all (brokers first, then etcd) on Ctrl-C.
 *
 *   gregor dev-cluster [--brokers N] [--port P] [--data-dir DIR] [--etcd HOST:PORT]
 *
 * Broker i (1..N) is node i on 127.0.0.1:(P+i-1), with its data in DIR/broker-i
 * and its log in DIR/broker-i.log; etcd's data is DIR/etcd, so a dev cluster
 * started again on the same folder finds its topics. --etcd uses a running etcd
 * instead of starting one. A broker that dies is reported and the others go on,
 * so that failover can be tried by killing one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';

export interface DevClusterOptions {
  readonly brokers: number;
  readonly port: number;
  readonly dataDir: string;
  /** A running etcd's HOST:PORT, or null to start one. */
  readonly etcd: string | null;
  /** The gregor executable the brokers run (bin/gregor). */
  readonly gregorBin: string;
  /** broker.session.timeout.ms of every broker: short, so that failover shows within seconds. */
  readonly sessionTimeoutMs: number;
}

export const DEV_CLUSTER_DEFAULTS = { brokers: 3, port: 9092, dataDir: './data/dev-cluster', sessionTimeoutMs: 2000 } as const;

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

export class DevClusterError extends Error {}

interface Member {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | string>;
  stopping: boolean;
}

/** `n` different free loopback ports, from the kernel: all are held until all are known. */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Server>((res, rej) => {
          const s = createServer();
          s.once('error', rej);
          s.listen({ host: '127.0.0.1', port: 0 }, () => res(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((res) => s.close(res))));
  return ports;
}

/** Children still running when this process exits (a second Ctrl-C, a crash) are killed, not left behind. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) {
    try {
      c.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

function startMember(name: string, cmd: string, args: readonly string[], logPath: string, onLine?: (line: string) => void): Member {
  const out = createWriteStream(logPath, { flags: 'a' });
  out.on('error', () => {
    // A log that cannot be written (disk full) must not take the dev cluster down; the child runs on.
  });
  // A process group of its own: a Ctrl-C in the terminal reaches this process only, which stops
  // the brokers cleanly and then etcd, instead of every process at once.
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.add(child);
  let pending = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out.write(chunk);
    if (!onLine) return;
    pending += chunk.toString('utf8');
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      onLine(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => out.write(chunk));
  const exited = new Promise<number | string>((res) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      out.end();
      res(code ?? signal ?? 'unknown');
    });
    child.once('error', (err) => {
      running.delete(child);
      out.end();
      res(err.message);
    });
  });
  return { name, child, exited, stopping: false };
}

async function stopMember(m: Member): Promise<void> {
  m.stopping = true;
  if (m.child.exitCode !== null || m.child.signalCode !== null || m.child.pid === undefined) return;
  m.child.kill('SIGTERM');
  const timer = setTimeout(() => m.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await m.exited;
  clearTimeout(timer);
}

async function etcdHealthy(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(`http://${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok && ((await res.json()) as { health?: string }).health === 'true';
  } catch {
    return false;
  }
}

/**
 * Runs the dev cluster until `stop` resolves (the CLI passes the first
 * SIGINT or SIGTERM); resolves once everything it started has stopped.
 */
export async function runDevCluster(opts: DevClusterOptions, log: Logger, stop: Promise<unknown>): Promise<void> {
  const dir = resolve(opts.dataDir);
  mkdirSync(dir, { recursive: true });
  const members: Member[] = [];
  let etcdMember: Member | null = null;
  let stopped = false;
  let stopRequested = false;
  void stop.then(() => {
    stopRequested = true;
  });
  const stopAll = async (): Promise<void> => {
    stopped = true;
    await Promise.all(members.map(stopMember));
    if (etcdMember) await stopMember(etcdMember);
  };
  /** Once the cluster is up: a member that exits is reported, and the rest go on. */
  const watchExit = (m: Member, logPath: string): void => {
    void m.exited.then((code) => {
      if (m.stopping || stopped) return;
      if (m === etcdMember) log.error({ exit: code, log: logPath }, 'etcd stopped on its own; the brokers cannot change the cluster metadata until an etcd is back at the same address');
      else log.warn({ member: m.name, exit: code, log: logPath }, `${m.name} stopped on its own; the others go on`);
    });
  };
  try {
    let endpoint = opts.etcd;
    if (endpoint === null) {
      const bin = process.env.ETCD ?? 'etcd';
      const [client, peer] = (await freePorts(2)) as [number, number];
      endpoint = `127.0.0.1:${client}`;
      const logPath = join(dir, 'etcd.log');
      etcdMember = startMember(
        'etcd',
        bin,
        [
          '--name', 'gregor-dev',
          '--data-dir', join(dir, 'etcd'),
          '--listen-client-urls', `http://${endpoint}`,
          '--advertise-client-urls', `http://${endpoint}`,
          '--listen-peer-urls', `http://127.0.0.1:${peer}`,
          '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
          '--initial-cluster', `gregor-dev=http://127.0.0.1:${peer}`,
        ],
        logPath,
      );
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while (!(await etcdHealthy(endpoint))) {
        if (stopRequested) return;
        const notFound = etcdMember.child.pid === undefined;
        const gone = notFound || etcdMember.child.exitCode !== null || etcdMember.child.signalCode !== null;
        if (gone || Date.now() > deadline) {
          throw new DevClusterError(
            notFound
              ? `no etcd to run ("${bin}"): install Debian's etcd-server (apt-get install etcd-server), set ETCD to an etcd binary, or pass --etcd HOST:PORT of a running one`
              : `etcd did not start; its log is ${logPath}`,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const ready: Promise<string>[] = [];
    for (let i = 1; i <= opts.brokers; i++) {
      const name = `broker ${i}`;
      const logPath = join(dir, `broker-${i}.log`);
      let resolveReady!: (listen: string) => void;
      ready.push(new Promise((r) => (resolveReady = r)));
      const m = startMember(
        name,
        process.execPath,
        [
          opts.gregorBin, 'start',
          '--broker-id', String(i),
          '--listen', `127.0.0.1:${opts.port + i - 1}`,
          '--data-dir', join(dir, `broker-${i}`),
          '--metadata', `etcd://${endpoint}`,
          '--override', `broker.session.timeout.ms=${opts.sessionTimeoutMs}`,
        ],
        logPath,
        (line) => {
          if (!line.includes('"gregor ready"')) return;
          try {
            resolveReady((JSON.parse(line) as { listen: string }).listen);
          } catch {
            // Not the JSON ready line.
          }
        },
      );
      members.push(m);
      ready[i - 1] = Promise.race([
        ready[i - 1]!,
        m.exited.then((code) => {
          throw new DevClusterError(`${name} exited (${code}) before it was ready; see ${logPath}`);
        }),
        new Promise<string>((_, rej) => setTimeout(() => rej(new DevClusterError(`${name} was not ready within ${READY_TIMEOUT_MS} ms; see ${logPath}`)), READY_TIMEOUT_MS).unref()),
      ]);
    }
    const listens = await Promise.race([Promise.all(ready), stop.then(() => null)]);
    if (listens === null) return;
    if (etcdMember) watchExit(etcdMember, join(dir, 'etcd.log'));
    members.forEach((m, i) => watchExit(m, join(dir, `broker-${i + 1}.log`)));
    log.info(
      { bootstrap: listens.join(','), etcd: endpoint, dataDir: dir, brokers: members.map((m, i) => ({ nodeId: i + 1, pid: m.child.pid })), etcdPid: etcdMember?.child.pid ?? null },
      'dev cluster ready; Ctrl-C stops it',
    );
    await stop;
    log.info({}, 'stopping the dev cluster');
  } finally {
    await stopAll();
  }
}

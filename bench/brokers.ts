/**
 * The brokers a benchmark measures, started the way the compat harness
 * starts them: gregor as `bin/gregor start` on a free loopback port with a
 * fresh data directory (compat-tests/lib/gregor.mjs), and the reference
 * Apache Kafka broker, a single KRaft node from Maven Central with its
 * defaults apart from ports, data directory and replication factor 1 for its
 * internal topics (compat-tests/lib/reference-kafka.mjs; `compat-tests/reference-kafka/run
 * install` fetches it). Both stop with `stop()` and remove their data.
 *
 * franz-go's kfake, the in-memory fake broker, runs as bench/kfake/bin/kfake
 * (`bench/kfake/run install` builds it) with one broker on a free port.
 *
 * Example: const kafka = await startKafka(); ... kafka.bootstrap is
 * '127.0.0.1:PORT'; await kafka.stop().
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface RunningBroker {
  readonly name: string;
  readonly bootstrap: string;
  readonly host: string;
  readonly port: number;
  /** The broker's process id (Kafka's JVM, not its wrapper), for RSS and CPU figures; null when unknown. */
  readonly pid: number | null;
  stop(): Promise<unknown>;
}

/** VmRSS of a process in MB (10^6 bytes); NaN when /proc cannot tell. Example: rssMb(process.pid). */
export function rssMb(pid: number | null): number {
  if (pid === null) return NaN;
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? (Number(m[1]) * 1024) / 1e6 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * The process that is the broker: `broker.pid` itself, or, when that is a
 * wrapper script (the reference Kafka runs under a shell that watches its
 * parent), the first `java` process below it. Reads /proc; returns
 * `broker.pid` when it cannot tell.
 */
function brokerPid(broker: { pid: number | null }): number | null {
  if (broker.pid === null) return null;
  const comm = (pid: number): string => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      return '';
    }
  };
  if (comm(broker.pid) !== 'bash' && comm(broker.pid) !== 'sh') return broker.pid;
  const parents = new Map<number, number[]>();
  try {
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        // Fields after the command name, which is in parentheses and may hold spaces.
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        parents.set(ppid, [...(parents.get(ppid) ?? []), Number(name)]);
      } catch {
        // the process ended while we looked
      }
    }
  } catch {
    return broker.pid;
  }
  const queue = [...(parents.get(broker.pid) ?? [])];
  for (let i = 0; i < queue.length && i < 1000; i++) {
    const pid = queue[i]!;
    if (comm(pid) === 'java') return pid;
    queue.push(...(parents.get(pid) ?? []));
  }
  return broker.pid;
}

/** The repository root, from dist/bench/ or bench/. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'bin', 'gregor'))) return dir;
    dir = resolve(dir, '..');
  }
  throw new Error('cannot find the repository root (package.json and bin/gregor) above this script');
}

interface GregorLib {
  startGregor(o: { dataDir?: string; args?: string[]; env?: Record<string, string> }): Promise<{
    bootstrap: string;
    host: string;
    port: number;
    pid?: number;
    stop(): Promise<number>;
  }>;
}

interface KafkaLib {
  startReferenceKafka(o?: { log?: (line: string) => void }): Promise<{ bootstrap: string; host: string; port: number; pid: number; version: string; stop(): Promise<void> }>;
  referenceKafkaVersion(): string;
}

async function lib<T>(name: string): Promise<T> {
  return (await import(pathToFileURL(join(repoRoot(), 'compat-tests', 'lib', name)).href)) as T;
}

/**
 * What the reference broker is started with beyond Kafka's defaults, given
 * to gregor too so that both run the same configuration (internal topics
 * with one replica need nothing: gregor caps replication at the brokers it
 * has).
 */
const AS_THE_REFERENCE_BROKER: Readonly<Record<string, string>> = { 'group.initial.rebalance.delay.ms': '0' };

/**
 * gregor on a free loopback port with a fresh data directory, configured as
 * the reference broker is; `overrides` become --override key=value
 * arguments. Example: startGregor({ 'num.partitions': '8' }).
 */
export async function startGregor(overrides: Readonly<Record<string, string>> = {}): Promise<RunningBroker> {
  const { startGregor: start } = await lib<GregorLib>('gregor.mjs');
  const args = Object.entries({ ...AS_THE_REFERENCE_BROKER, ...overrides }).flatMap(([k, v]) => ['--override', `${k}=${v}`]);
  const g = await start({ args });
  return { name: 'gregor', bootstrap: g.bootstrap, host: g.host, port: g.port, pid: g.pid ?? null, stop: () => g.stop() };
}

/** The reference Apache Kafka broker; its version is in the name, e.g. 'kafka 4.4.0'. */
export async function startKafka(): Promise<RunningBroker> {
  const { startReferenceKafka } = await lib<KafkaLib>('reference-kafka.mjs');
  const k = await startReferenceKafka();
  // The JVM, not the shell that watches over it: its memory and files are the broker's.
  return { name: `kafka ${k.version}`, bootstrap: k.bootstrap, host: k.host, port: k.port, pid: brokerPid({ pid: k.pid }), stop: () => k.stop() };
}

/** How to get the kfake peer when it is missing. */
export const KFAKE_INSTALL = 'kfake not built: run `bash bench/kfake/run install` (needs Go)';

/** bench/kfake/bin/kfake when it is built, else null. */
export function kfakePath(): string | null {
  const bin = join(repoRoot(), 'bench', 'kfake', 'bin', 'kfake');
  return existsSync(bin) ? bin : null;
}

/**
 * franz-go's kfake as one broker on a free loopback port, or null when it is
 * not built (KFAKE_INSTALL says how). It holds every record in memory, so a
 * caller that produces gigabytes restarts it between scenarios. Its standard
 * input is its lifeline: it exits when this process does.
 */
export async function startKfake(timeoutMs = 10_000): Promise<RunningBroker | null> {
  const bin = kfakePath();
  if (!bin) return null;
  const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kfake did not start within ${timeoutMs} ms: ${output.trim()}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const m = /^listening (\S+)$/m.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`kfake exited (${signal ?? code}) before listening: ${output.trim()}`));
    });
  });
  child.stdout.resume();
  child.stderr.resume();
  const i = address.lastIndexOf(':');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name: 'kfake',
    bootstrap: address,
    host: address.slice(0, i),
    port: Number(address.slice(i + 1)),
    pid: child.pid ?? null,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

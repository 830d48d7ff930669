/**
 * The brokers a benchmark measures, started the way the compat harness
 * starts them: gregor as `bin/gregor start` on a free loopback port with a
 * fresh data directory (compat-tests/lib/gregor.mjs), and the reference
 * Apache Kafka broker, a single KRaft node from Maven Central with its
 * defaults apart from ports, data directory and replication factor 1 for its
 * internal topics (compat-tests/lib/reference-kafka.mjs; `compat-tests/reference-kafka/run
 * install` fetches it). Both stop with `stop()` and remove their data.
 *
 * Example: const kafka = await startKafka(); ... kafka.bootstrap is
 * '127.0.0.1:PORT'; await kafka.stop().
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface RunningBroker {
  readonly name: string;
  readonly bootstrap: string;
  readonly host: string;
  readonly port: number;
  /** The broker's process id, for RSS and CPU figures; null when unknown. */
  readonly pid: number | null;
  stop(): Promise<unknown>;
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
 * gregor on a free loopback port with a fresh data directory; `overrides`
 * become --override key=value arguments. Example: startGregor({ 'num.partitions': '8' }).
 */
export async function startGregor(overrides: Readonly<Record<string, string>> = {}): Promise<RunningBroker> {
  const { startGregor: start } = await lib<GregorLib>('gregor.mjs');
  const args = Object.entries(overrides).flatMap(([k, v]) => ['--override', `${k}=${v}`]);
  const g = await start({ args });
  return { name: 'gregor', bootstrap: g.bootstrap, host: g.host, port: g.port, pid: g.pid ?? null, stop: () => g.stop() };
}

/** The reference Apache Kafka broker; its version is in the name, e.g. 'kafka 4.0.2'. */
export async function startKafka(): Promise<RunningBroker> {
  const { startReferenceKafka } = await lib<KafkaLib>('reference-kafka.mjs');
  const k = await startReferenceKafka();
  return { name: `kafka ${k.version}`, bootstrap: k.bootstrap, host: k.host, port: k.port, pid: k.pid, stop: () => k.stop() };
}

/**
 * bin/gregor. The contract other tools rely on:
 *   gregor start [--config FILE] [--listen HOST:PORT] [--advertise HOST:PORT]
 *                [--data-dir DIR] [--broker-id N] [--metadata STORE] [--override key=value]...
 * It logs where it listens and where the data lives once it is ready. A bad flag,
 * an unknown config key or a port in use exits non-zero before anything starts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, envSource, fileSource, resolveConfig, type ConfigSource } from './config.js';
import { Broker, StartError } from './broker.js';
import { createLogger } from './logger.js';
import { missingNativeLibraries } from '../wire/native.js';
import { fileURLToPath } from 'node:url';
import { DEV_CLUSTER_DEFAULTS, DevClusterError, runDevCluster, type DevClusterOptions } from './dev-cluster.js';

const USAGE = `usage: gregor start [options]

  --config FILE          server.properties-style file (Kafka's config names)
  --listen HOST:PORT     listen address (sets listeners=PLAINTEXT://HOST:PORT); port 0 picks one
  --advertise HOST:PORT  address given to clients (sets advertised.listeners)
  --data-dir DIR         data directory (sets log.dirs)
  --broker-id N          broker id (sets node.id)
  --metadata STORE       local (default), or etcd://HOST:PORT[,HOST:PORT...] to join
                         the cluster whose metadata that etcd holds (sets metadata.store)
  --override KEY=VALUE   any config key; repeatable
  --log-level LEVEL      trace, debug, info, warn or error (default info)

Config precedence: file, then GREGOR_* environment variables (GREGOR_LOG_DIRS
sets log.dirs), then flags.

  gregor dev-cluster [--brokers N] [--port P] [--data-dir DIR] [--etcd HOST:PORT]
                         etcd and N brokers (default 3) on 127.0.0.1:P, P+1, ...
                         (default 9092), data under DIR (default ./data/dev-cluster);
                         --etcd uses a running etcd; Ctrl-C stops everything
  gregor version         print the version
  gregor help            this text`;

/** How long after start the broker checks that its native libraries are installed. */
const NATIVE_CHECK_DELAY_MS = 200;
/** After shutdown.timeout.ms and the bounded steps that follow it, a signalled broker exits whatever still runs. */
const SHUTDOWN_WATCHDOG_MARGIN_MS = 15_000;
/** How long a stopped broker's process may take to end by itself before it is ended. */
const EXIT_GRACE_MS = 2_000;

export class UsageError extends Error {}

export interface StartArgs {
  sources: ConfigSource[];
  logLevel: string | undefined;
}

export function parseStartArgs(argv: readonly string[], env: NodeJS.ProcessEnv): StartArgs {
  const flags: [string, string][] = [];
  let configFile: string | undefined;
  let logLevel: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : undefined;
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[++i];
      if (next === undefined || next.startsWith('--')) throw new UsageError(`${name} needs a value`);
      return next;
    };
    switch (name) {
      case '--config': configFile = value(); break;
      case '--listen': flags.push(['listeners', `PLAINTEXT://${hostPort(value(), name)}`]); break;
      case '--advertise': flags.push(['advertised.listeners', `PLAINTEXT://${hostPort(value(), name)}`]); break;
      case '--data-dir': flags.push(['log.dirs', value()]); break;
      case '--metadata': flags.push(['metadata.store', value()]); break;
      case '--broker-id': {
        const v = value();
        if (!/^\d+$/.test(v)) throw new UsageError(`--broker-id needs a non-negative whole number, not "${v}"`);
        flags.push(['node.id', v]);
        break;
      }
      case '--override': {
        const kv = value();
        const at = kv.indexOf('=');
        if (at <= 0) throw new UsageError(`--override needs KEY=VALUE, not "${kv}"`);
        flags.push([kv.slice(0, at), kv.slice(at + 1)]);
        break;
      }
      case '--log-level': {
        const v = value();
        if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(v)) throw new UsageError(`--log-level: unknown level "${v}"`);
        logLevel = v;
        break;
      }
      default:
        throw new UsageError(`unknown option "${arg}"`);
    }
  }
  const sources: ConfigSource[] = [];
  if (configFile !== undefined) sources.push(fileSource(configFile));
  sources.push(envSource(env), { origin: 'command line', values: flags });
  return { sources, logLevel };
}

function hostPort(v: string, flag: string): string {
  if (!/^(\[[^\]]+\]|[^:\s]*):\d+$/.test(v)) throw new UsageError(`${flag} needs HOST:PORT, not "${v}"`);
  return v;
}

/** Read from the nearest package.json above this module, which runs from dist/ or bundled. */
function version(): string {
  for (let dir = new URL('.', import.meta.url); ; dir = new URL('..', dir)) {
    const candidate = new URL('package.json', dir);
    if (existsSync(candidate)) return (JSON.parse(readFileSync(candidate, 'utf8')) as { version: string }).version;
    if (dir.pathname === '/') return 'unknown';
  }
}

/** The bin/gregor above this module (which runs from dist/ or bundled), for the brokers a dev cluster starts. */
function gregorBin(): string {
  for (let dir = new URL('.', import.meta.url); ; dir = new URL('..', dir)) {
    const candidate = new URL('bin/gregor', dir);
    if (existsSync(candidate)) return fileURLToPath(candidate);
    if (dir.pathname === '/') throw new Error('bin/gregor not found above the running module');
  }
}

export function parseDevClusterArgs(argv: readonly string[]): Omit<DevClusterOptions, 'gregorBin'> {
  const opts: { -readonly [K in keyof Omit<DevClusterOptions, 'gregorBin'>]: DevClusterOptions[K] } = { ...DEV_CLUSTER_DEFAULTS, etcd: null };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]!;
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined || next.startsWith('--')) throw new UsageError(`${name} needs a value`);
      return next;
    };
    const int = (v: string, min: number, max: number): number => {
      if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new UsageError(`${name} needs a whole number from ${min} to ${max}, not "${v}"`);
      return Number(v);
    };
    switch (name) {
      case '--brokers': opts.brokers = int(value(), 1, 32); break;
      case '--port': opts.port = int(value(), 1, 65535); break;
      case '--data-dir': opts.dataDir = value(); break;
      case '--etcd': opts.etcd = hostPort(value(), name); break;
      default: throw new UsageError(`unknown option "${name}"`);
    }
  }
  if (opts.port + opts.brokers - 1 > 65535) throw new UsageError(`--port ${opts.port} leaves no room for ${opts.brokers} brokers`);
  return opts;
}

async function devCluster(argv: readonly string[]): Promise<number> {
  let opts: DevClusterOptions;
  try {
    opts = { ...parseDevClusterArgs(argv), gregorBin: gregorBin() };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`gregor: ${err.message}`);
    return 2;
  }
  const log = createLogger({});
  const stop = new Promise<void>((resolveStop) => {
    let signals = 0;
    const onSignal = (): void => {
      if (++signals > 1) process.exit(1);
      resolveStop();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  try {
    await runDevCluster(opts, log, stop);
    return 0;
  } catch (err) {
    if (!(err instanceof DevClusterError)) throw err;
    console.error(`gregor: ${err.message}`);
    return 1;
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return 0;
  }
  if (command === 'version' || command === '--version') {
    console.log(version());
    return 0;
  }
  if (command === 'dev-cluster') return devCluster(rest);
  if (command !== 'start') {
    console.error(command === undefined ? USAGE : `gregor: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  let args: StartArgs;
  let config;
  try {
    args = parseStartArgs(rest, process.env);
    config = resolveConfig(args.sources);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError) {
      console.error(`gregor: ${err.message}`);
      return 2;
    }
    throw err;
  }
  const log = createLogger({ level: args.logLevel });
  let broker: Broker;
  try {
    broker = await Broker.start(config, log);
  } catch (err) {
    if (err instanceof StartError) {
      console.error(`gregor: ${err.message}`);
      return 1;
    }
    throw err;
  }
  return new Promise<number>((resolveExit) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (++signals > 1) {
        log.warn({ signal }, 'second signal; exiting now');
        process.exit(1);
      }
      log.info({ signal }, 'shutting down');
      // Every step of stop() is bounded by shutdown.timeout.ms; this catches whatever is not.
      setTimeout(() => {
        log.error({ shutdownTimeoutMs: broker.config.values.int('shutdown.timeout.ms') }, 'shutdown did not finish; exiting anyway');
        process.exit(1);
      }, broker.config.values.int('shutdown.timeout.ms') + SHUTDOWN_WATCHDOG_MARGIN_MS).unref();
      broker.stop().then(
        () => {
          log.info('stopped');
          // A signal during a stop for a fatal error does not turn the failure into a clean exit.
          exit(broker.failed ? 1 : 0);
        },
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          exit(1);
        },
      );
    };
    // Stopped: the process ends once nothing is left to run. Something left running (a client
    // library's retry timer) must not keep a stopped broker's process alive.
    const exit = (code: number): void => {
      resolveExit(code);
      setTimeout(() => {
        log.warn('the broker has stopped but something still holds the process; exiting');
        process.exit(code);
      }, EXIT_GRACE_MS).unref();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    broker.onFatal(() => exit(1));
    // Only now: a supervisor may signal the moment it reads the ready line.
    log.info(
      {
        listen: broker.listenAddress,
        advertise: broker.bootstrap,
        dataDir: broker.dataDir,
        clusterId: broker.clusterId,
        nodeId: config.nodeId,
        startupMs: Math.round(performance.now()),
      },
      'gregor ready',
    );
    // The native libraries load when first needed; a missing one is said soon after start rather than at its
    // first batch, though not before the first requests (resolving the four packages takes a few milliseconds).
    setTimeout(() => {
      const missing = missingNativeLibraries();
      if (missing.length > 0) log.warn({ missing }, "native libraries are missing, so batches that need them will fail; reinstall gregor's dependencies with npm install");
    }, NATIVE_CHECK_DELAY_MS).unref();
  });
}

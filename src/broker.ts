/**
 * The broker process: binds the listeners, opens the data directory, the
 * metadata store and the partition logs, serves connections, and shuts down
 * gracefully.
 */
import { startShares, type StartedShares } from '../cluster/share/share-services.js';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket, type TlsOptions } from 'node:tls';
import { serverTlsOptions, TlsConfigError } from './tls.js';
import { SaslConfigError, saslListener, type SaslListener } from './sasl.js';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { BrokerConfigs, followTopicLogConfigs, topicLogConfigs, type StaticBrokerConfig } from '../cluster/metadata/broker-configs.js';
import { LocalMetadataStore } from '../cluster/metadata/local-metadata-store.js';
import type { EtcdMetadataStore } from '../cluster/metadata/etcd-metadata-store.js';
import type { Endpoint, MetadataStore } from '../cluster/metadata/metadata-image.js';
import { randomUuid } from '../wire/uuid.js';
import { ReplicaFetchers } from '../cluster/replication/replica-fetcher.js';
import { ReplicaManager } from '../cluster/replication/replica-manager.js';
import { GroupCoordinator } from '../cluster/group/group-coordinator.js';
import { replicaOffsetsStore } from '../cluster/coordinator/state-log-store.js';
import { ProducerIdManager } from '../cluster/txn/producer-id-manager.js';
import { TRANSACTION_STATE_TOPIC, TransactionCoordinator } from '../cluster/txn/txn-coordinator.js';
import { TxnMarkerChannel } from '../cluster/txn/txn-marker-channel.js';
import { TransactionVerifier } from '../cluster/txn/txn-verifier.js';
import { BrokerChannel } from '../cluster/inter-broker/broker-channel.js';
import { LogManager, type LogManagerOptions } from '../storage/log-manager.js';
import { DataDirError, loadOrCreateIdentity, lockDataDir, type DirIdentity } from '../storage/data-dir.js';
import { HANDLERS, advertisedVersions, handlerTable } from '../api/registry.js';
import { groupCoordinatorConfig, shareGroupSettings, shareStateTopicSettings, transactionCoordinatorConfig, type BrokerServices, type BrokerSettings } from '../api/handler.js';
import { Connection, type Dispatch } from './connection.js';
import { fetchBuffers } from '../wire/buffer-pool.js';
import { type BrokerConfig, type ListenerSpec } from './config.js';
import { configDefs } from '../cluster/metadata/broker-config-registry.js';

export class StartError extends Error {}

interface Bound {
  readonly spec: ListenerSpec;
  readonly server: Server;
  readonly port: number;
  /**
   * Hands the connections to `accept`: first those that came while the broker was starting,
   * held unread until now (as Kafka's listen backlog holds them), then every new one.
   */
  serve(accept: (socket: Socket) => void): void;
  /** Closes the server and the connections it holds (a start that failed). */
  abandon(): void;
}

/** Free fetch-buffer slabs kept once nothing fetched for a trim interval (see BufferPool.trimIdle). */
const POOL_SLABS_KEPT_IDLE = 2;
const POOL_TRIM_INTERVAL_MS = 30_000;
/** How long the shutdown steps after the drain may take when shutdown.timeout.ms has already run out. */
const STOP_STEPS_GRACE_MS = 5_000;
/** The least time each of those steps gets. */
const STOP_STEP_MIN_MS = 1_000;

export class Broker {
  private readonly connections = new Set<Connection>();
  private readonly fatalListeners: ((err: Error) => void)[] = [];
  private failedWith: Error | null = null;
  private stopping: Promise<void> | null = null;
  /** Set once a stop no longer takes new connections (after the controlled shutdown). */
  private draining = false;
  /** max.connections as it is now: set at start, or changed at run time (a dynamic broker config). */
  private maxConnections: () => number = () => this.config.values.int('max.connections');
  /** Memory kept for a burst of fetches goes once consumers have been idle for a while. */
  private readonly poolTrim = setInterval(() => fetchBuffers.trimIdle(POOL_SLABS_KEPT_IDLE), POOL_TRIM_INTERVAL_MS);

  private constructor(
    readonly config: BrokerConfig,
    readonly log: Logger,
    readonly clusterId: string,
    readonly dataDir: string,
    private readonly bound: readonly Bound[],
    readonly advertised: readonly Endpoint[],
    private readonly store: MetadataStore,
    private readonly logs: LogManager,
    private readonly replicas: ReplicaManager,
    private readonly groups: GroupCoordinator,
    private readonly transactions: TransactionCoordinator,
    private readonly shares: StartedShares,
    private readonly fetchers: ReplicaFetchers,
    private readonly channel: BrokerChannel | null,
    private readonly unlock: () => void,
    private readonly saslListeners: ReadonlyMap<string, SaslListener> = new Map(),
  ) {
    this.poolTrim.unref();
  }

  /** host:port of the first listener as bound (the real port when 0 was asked for). */
  get listenAddress(): string {
    const b = this.bound[0]!;
    return formatHostPort(b.spec.host, b.port);
  }

  /** host:port clients are told to use on the first listener. */
  get bootstrap(): string {
    const a = this.advertised[0]!;
    return formatHostPort(a.host, a.port);
  }

  static async start(config: BrokerConfig, log: Logger): Promise<Broker> {
    if (config.notApplying.length > 0) {
      log.warn({ keys: config.notApplying }, 'these configs are Kafka\'s but do not apply to gregor (its JVM, KRaft quorum, ZooKeeper, thread pools, or features gregor does not have); they are accepted, shown by DescribeConfigs, and otherwise ignored');
    }
    const logDirs = config.logDirs.map((d) => resolve(d));
    const dataDir = logDirs[0]!;
    const unlocks: (() => void)[] = [];
    const unlock = (): void => {
      for (const u of unlocks.splice(0)) u();
    };
    // A log directory other than the first that cannot be used (a failed disk) is left offline, as in
    // Kafka; one that belongs to another broker or cluster, or is in use, stops the start.
    const unusableDirs = new Map<string, Error>();
    for (const [i, dir] of logDirs.entries()) {
      try {
        unlocks.push(lockDataDir(dir));
      } catch (err) {
        if (i > 0 && !(err instanceof DataDirError)) {
          unusableDirs.set(dir, err as Error);
          continue;
        }
        unlock();
        throw new StartError(`cannot use data directory ${dir}: ${(err as Error).message}`);
      }
    }
    // Bind before writing anything to the directory, so a start that fails leaves
    // nothing behind; on any failure the lock is released at once, because while
    // this process lives other processes would see it as held.
    const bound: Bound[] = [];
    // Until the broker exists, a fatal error of its store fails the start instead.
    let fatal: (err: Error) => void = () => {};
    let identity: DirIdentity;
    let advertised: Endpoint[];
    let store: MetadataStore | undefined;
    let etcd: EtcdMetadataStore | undefined;
    let logs: LogManager;
    // Set once the replica manager exists; a directory failing before then is only logged.
    let onDirFailure: (path: string) => void = () => {};
    const staticConfig = staticBrokerConfig(config);
    // What each SASL listener takes (mechanisms, PLAIN's users).
    const saslListeners = new Map<string, SaslListener>();
    try {
      for (const spec of config.listeners) {
        const protocol = config.securityProtocols.get(spec.name);
        let tlsOptions: TlsOptions | null = null;
        try {
          if (protocol === 'SSL' || protocol === 'SASL_SSL') tlsOptions = serverTlsOptions(spec.name, config.raw);
          if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') saslListeners.set(spec.name, saslListener(spec.name, config.raw));
        } catch (err) {
          if (err instanceof TlsConfigError || err instanceof SaslConfigError) throw new StartError(err.message);
          throw err;
        }
        bound.push(await listen(spec, config.values.int('max.connections'), tlsOptions, log));
      }
      advertised = bound.map(({ spec, port }): Endpoint => {
        const adv = config.advertisedListeners?.find((a) => a.name === spec.name);
        if (adv) return { listener: spec.name, host: adv.host, port: adv.port === 0 ? port : adv.port };
        const host = spec.host === '' || spec.host === '0.0.0.0' || spec.host === '::' ? hostname() : spec.host;
        return { listener: spec.name, host, port };
      });
      const self = { nodeId: config.nodeId, rack: config.rack, endpoints: advertised };
      if (config.metadata.kind === 'etcd') {
        // Loaded only here: a broker on the local store never pays for the etcd client.
        const { EtcdMetadataStore } = await import('../cluster/metadata/etcd-metadata-store.js');
        try {
          etcd = await EtcdMetadataStore.connect(
            {
              endpoints: config.metadata.endpoints,
              root: config.metadata.root,
              sessionTimeoutMs: config.values.int('broker.session.timeout.ms'),
              ...(config.values.bool('auto.leader.rebalance.enable') ? { leaderRebalanceIntervalMs: config.values.int('leader.imbalance.check.interval.seconds') * 1000 } : {}),
              log,
              onFatal: (err) => fatal(err),
            },
            randomUuid(),
          );
        } catch (err) {
          throw new StartError((err as Error).message);
        }
        store = etcd;
      }
      try {
        identity = loadOrCreateIdentity(dataDir, config.nodeId, etcd ? { clusterId: etcd.clusterId, store: 'etcd' } : {});
      } catch (err) {
        throw new StartError(`cannot use data directory ${dataDir}: ${(err as Error).message}`);
      }
      // Every other log directory belongs to the same cluster and node, each with its own directory id.
      for (const dir of logDirs.slice(1)) {
        if (unusableDirs.has(dir)) continue;
        try {
          loadOrCreateIdentity(dir, config.nodeId, { clusterId: identity.clusterId, store: etcd ? 'etcd' : 'local' });
        } catch (err) {
          if (!(err instanceof DataDirError)) {
            unusableDirs.set(dir, err as Error);
            continue;
          }
          throw new StartError(`cannot use data directory ${dir}: ${(err as Error).message}`);
        }
      }
      // Before any log opens: another broker with this node id would otherwise see its partitions served here.
      if (etcd) {
        try {
          await etcd.claimNodeId(config.nodeId, identity.directoryId);
        } catch (err) {
          throw new StartError((err as Error).message);
        }
      }
      try {
        store ??= new LocalMetadataStore(dataDir, identity.clusterId, self);
        // Logs that were not closed cleanly recover here, before any client is served,
        // each with its topic's config (static and dynamic broker defaults, topic overrides).
        const view = BrokerConfigs.of(store.image(), staticConfig, config.nodeId);
        logs = LogManager.open(logDirs, {
          onDirFailure: (path) => onDirFailure(path),
          unusableDirs,
          defaults: view.logDefaults(),
          topicConfigs: topicLogConfigs(store.image(), staticConfig, config.nodeId),
          log,
          producerIdExpirationMs: config.values.int('producer.id.expiration.ms'),
          producerIdExpirationCheckIntervalMs: config.values.int('producer.id.expiration.check.interval.ms'),
          ...logManagerSchedule(view),
        });
      } catch (err) {
        throw new StartError(`cannot use data directory ${dataDir}: ${(err as Error).message}`);
      }
      // The first directory keeps the broker's own files: without it the broker does not start, as
      // Kafka stops when its metadata log directory fails.
      const first = logs.logDirs()[0]!;
      if (first.failure !== null) {
        await logs.close();
        throw new StartError(`cannot use data directory ${dataDir}: ${first.failure.message}; it is the first of log.dirs and keeps the broker's own files`);
      }
    } catch (err) {
      for (const b of bound) b.abandon();
      await store?.close();
      unlock();
      throw err;
    }
    // Before the replica manager, so that a new topic's logs open with their config.
    followTopicLogConfigs(store, logs, staticConfig, config.nodeId);
    const replicas = new ReplicaManager(config.nodeId, store, logs, log, { replicaLagTimeMaxMs: config.values.int('replica.lag.time.max.ms') }).start();
    // Replicas in a failed log directory stop serving; in a cluster their leadership moves elsewhere.
    onDirFailure = () => replicas.onLogDirFailure();
    logs.start();
    const settings: BrokerSettings = { nodeId: config.nodeId, config: config.values, staticConfig };
    // Requests to the other brokers of a cluster (transaction markers, verifications, share state) go on the inter-broker listener, as followers' fetches do.
    const channel = etcd ? new BrokerChannel(store, config.interBrokerListener) : null;
    // Share groups: the share coordinator loads the partitions of __share_group_state it leads; the
    // group coordinator initializes and summarizes share-partition state through its persister.
    const shares = startShares(config.nodeId, store, replicas, channel, shareGroupSettings(settings, store), log, shareStateTopicSettings(settings));
    // After the replica manager: the coordinator loads its groups from the partition logs it opened.
    const groups = new GroupCoordinator(config.nodeId, store, replicaOffsetsStore(replicas), log, { config: groupCoordinatorConfig(settings), persister: shares.persister }).start();
    // A transaction marker in __consumer_offsets makes that producer's pending offsets visible, or drops them.
    replicas.onOffsetsTxnMarker = (partition, producerId, commit) => groups.completeTransaction(partition, producerId, commit);
    const transactions = new TransactionCoordinator(
      config.nodeId,
      store,
      replicaOffsetsStore(replicas, TRANSACTION_STATE_TOPIC),
      channel ? new TxnMarkerChannel(config.nodeId, store, replicas, channel, log) : replicas,
      new ProducerIdManager(store, log),
      log,
      { config: transactionCoordinatorConfig(settings) },
    ).start();
    // Followers copy their leaders' partitions (only brokers of a cluster follow anyone).
    const fetchers = new ReplicaFetchers(config.nodeId, store, replicas, log, { listener: config.interBrokerListener }).start();
    const broker = new Broker(config, log, identity.clusterId, dataDir, bound, advertised, store, logs, replicas, groups, transactions, shares, fetchers, channel, unlock, saslListeners);
    const live = store;
    broker.maxConnections = () => Number(BrokerConfigs.of(live.image(), staticConfig, config.nodeId).value('max.connections'));
    const services: BrokerServices = {
      settings,
      metadata: store,
      replicas,
      groups,
      transactions,
      shares,
      verifier: new TransactionVerifier(config.nodeId, store, transactions, channel, log),
      log,
      apiVersions: advertisedVersions(HANDLERS),
    };
    fatal = (err) => broker.fail(err);
    const dispatch: Dispatch = { handlers: handlerTable(HANDLERS), services };
    for (const b of bound) b.serve((socket) => broker.accept(socket, b.spec.name, dispatch));
    if (etcd) {
      // Last, once this broker serves: from now on the other brokers and the controller count on it.
      try {
        await etcd.register({ nodeId: config.nodeId, rack: config.rack, endpoints: advertised }, identity.directoryId);
      } catch (err) {
        await broker.stop();
        throw new StartError((err as Error).message);
      }
    }
    return broker;
  }

  /**
   * Calls `listener` once the broker has stopped on its own because it must
   * not go on (another broker registered under its node id). The process
   * should then exit non-zero.
   */
  onFatal(listener: (err: Error) => void): void {
    this.fatalListeners.push(listener);
  }

  /** Whether the broker stopped, or is stopping, because it could not go on (see onFatal). */
  get failed(): boolean {
    return this.failedWith !== null;
  }

  private fail(err: Error): void {
    this.failedWith ??= err;
    this.log.error({ err: err.message }, 'this broker cannot go on; stopping');
    void this.stop()
      .catch((stopErr: unknown) => this.log.error({ err: stopErr }, 'shutdown failed'))
      .finally(() => {
        for (const l of this.fatalListeners) l(err);
      });
  }

  private accept(socket: Socket, listener: string, dispatch: Dispatch): void {
    if (this.draining || this.connections.size >= this.maxConnections()) {
      this.log.warn({ remote: socket.remoteAddress, open: this.connections.size }, this.draining ? 'refusing connection during shutdown' : 'max.connections reached; closing new connection');
      socket.destroy();
      return;
    }
    const conn = new Connection(
      socket,
      listener,
      {
        maxRequestBytes: this.config.values.int('socket.request.max.bytes'),
        queuedMaxRequests: this.config.values.int('queued.max.requests'),
        idleMs: this.config.values.int('connections.max.idle.ms'),
      },
      dispatch,
      this.log,
      this.saslListeners.get(listener) ?? null,
    );
    this.connections.add(conn);
    socket.on('close', () => this.connections.delete(conn));
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * In a cluster, first moves leadership away (controlled shutdown, see
   * MetadataStore.controlledShutdown). Then stops accepting, lets every
   * connection finish the requests it has already read (bounded by
   * shutdown.timeout.ms), closes them, closes the partition logs, then
   * releases the data directory.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // One deadline for the whole shutdown: the handover, then the requests in flight.
      const deadline = Date.now() + this.config.values.int('shutdown.timeout.ms');
      if (this.store.controlledShutdown && this.config.values.bool('controlled.shutdown.enable')) {
        // Still serving, new connections too: clients are told NOT_LEADER_OR_FOLLOWER as leadership moves,
        // and followers of what this broker still leads keep fetching.
        const t0 = Date.now();
        const { leading, timedOut } = await this.store.controlledShutdown(this.config.values.int('shutdown.timeout.ms'));
        const ms = Date.now() - t0;
        if (leading === 0) this.log.info({ ms }, 'controlled shutdown: this broker leads no partition any more');
        else if (!timedOut) this.log.info({ ms, partitions: leading }, 'controlled shutdown: no other in-sync replica is alive to lead these partitions; they wait for one');
        else this.log.warn({ ms, partitions: leading }, 'controlled shutdown: shutdown.timeout.ms ran out before leadership moved; stopping anyway');
      }
      this.draining = true;
      clearInterval(this.poolTrim);
      const closed = Promise.all(this.bound.map((b) => new Promise<void>((res) => b.server.close(() => res()))));
      // Long-polling fetches answer now instead of holding the drain up to their max_wait_ms,
      // and so do parked JoinGroup and SyncGroup requests (NOT_COORDINATOR), whose timers stop.
      this.replicas.releaseFetchWaiters();
      // acks=-1 appends still waiting for followers are answered now, not after shutdown.timeout.ms.
      this.replicas.releaseReplicationWaiters();
      const fetchersStopped = this.fetchers.stop();
      this.groups.shutdown();
      this.transactions.shutdown();
      this.shares.shutdown();
      const finish = Promise.all([...this.connections].map((c) => c.finishInFlight()));
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((res) => {
        timer = setTimeout(() => res('timeout'), Math.max(0, deadline - Date.now()));
      });
      if ((await Promise.race([finish, timeout])) === 'timeout') {
        this.log.warn({ open: this.connections.size }, 'shutdown.timeout.ms passed with requests in flight; closing anyway');
      }
      clearTimeout(timer);
      for (const c of this.connections) c.close('broker shutting down');
      // Every step from here on is bounded too: a step that hangs (a peer that never answers, a store
      // that never lets go) is logged and passed, so that a signalled broker always exits.
      const stepsDeadline = Math.max(deadline, Date.now() + STOP_STEPS_GRACE_MS);
      await this.stopStep('closing the listeners', closed, stepsDeadline);
      await this.stopStep('stopping the replica fetchers', fetchersStopped, stepsDeadline);
      this.channel?.close();
      // No request runs any more: the logs close cleanly (synced, with their clean-shutdown marker).
      this.replicas.stop();
      let logsClosed = false;
      try {
        logsClosed = await this.stopStep('closing the partition logs', this.logs.close(), stepsDeadline);
      } finally {
        await this.stopStep('closing the metadata store', this.store.close(), stepsDeadline);
        // Logs still closing keep the data directory locked until the process ends (the lock names its pid).
        if (logsClosed) this.unlock();
      }
    })();
    return this.stopping;
  }

  /** Waits for one shutdown step until `deadline`; a step still running then is logged and left behind (false). */
  private async stopStep(step: string, work: Promise<unknown>, deadline: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((res) => {
      // A step that comes after a late one still gets a moment of its own.
      timer = setTimeout(() => res('late'), Math.max(deadline - Date.now(), STOP_STEP_MIN_MS));
    });
    try {
      if ((await Promise.race([work, late])) !== 'late') return true;
      this.log.warn({ step }, 'shutdown step still running after shutdown.timeout.ms; stopping without it');
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Binds one listener: plain TCP, or TLS when `tlsOptions` are given (an SSL listener), where a
 * connection counts once its handshake is done and a failed handshake is logged and closed.
 */
function listen(spec: ListenerSpec, maxHeld: number, tlsOptions: TlsOptions | null, log: Logger): Promise<Bound> {
  return new Promise((resolvePromise, reject) => {
    let server: Server;
    if (tlsOptions) {
      try {
        server = createTlsServer({ ...tlsOptions, noDelay: true });
      } catch (err) {
        reject(new StartError(`listener ${spec.name}: cannot use its TLS key and certificates: ${(err as Error).message}`));
        return;
      }
      server.on('tlsClientError', (err: Error, socket: TLSSocket) => {
        log.warn({ listener: spec.name, remote: socket.remoteAddress, err: err.message }, 'TLS handshake failed; connection closed');
        socket.destroy();
      });
    } else {
      server = createServer({ noDelay: true });
    }
    // From the first connection on, each is either served or held: one left to the server alone would
    // never be read nor closed, and would keep server.close() (and so the broker's stop) waiting for good.
    const held = new Set<Socket>();
    let accept: ((socket: Socket) => void) | null = null;
    const ignoreError = (): void => {};
    server.on(tlsOptions ? 'secureConnection' : 'connection', (socket: Socket) => {
      if (accept) return accept(socket);
      if (held.size >= maxHeld) return void socket.destroy();
      held.add(socket);
      socket.on('error', ignoreError);
      socket.once('close', () => held.delete(socket));
    });
    server.once('error', (err: NodeJS.ErrnoException) => {
      const where = formatHostPort(spec.host, spec.port);
      if (err.code === 'EADDRINUSE') reject(new StartError(`${where} is already in use; stop the other process or choose another port with --listen`));
      else if (err.code === 'EADDRNOTAVAIL') reject(new StartError(`cannot listen on ${where}: no such local address`));
      else reject(new StartError(`cannot listen on ${where}: ${err.message}`));
    });
    server.listen({ host: spec.host === '' ? undefined : spec.host, port: spec.port }, () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : spec.port;
      server.removeAllListeners('error');
      server.on('error', () => {});
      resolvePromise({
        spec,
        server,
        port,
        serve(fn) {
          accept = fn;
          const early = [...held];
          held.clear();
          for (const socket of early) {
            socket.removeListener('error', ignoreError);
            if (!socket.destroyed) fn(socket);
          }
        },
        abandon() {
          server.close();
          for (const socket of held) socket.destroy();
          held.clear();
        },
      });
    });
  });
}


/** What the operator set and every key gregor's config knows, for DescribeConfigs and the broker's topic config defaults. */
function staticBrokerConfig(config: BrokerConfig): StaticBrokerConfig {
  // Kafka's KRaft broker sets broker.id to the node id when it is not given.
  const values = new Map<string, string>(config.raw);
  if (!values.has('broker.id')) values.set('broker.id', String(config.nodeId));
  return {
    values,
    keys: new Map([...configDefs()].map(([name, d]) => [name, { type: d.type, default: d.default, doc: d.doc }])),
  };
}

/**
 * The log manager's schedule, by its Kafka names: Kafka's defaults unless the
 * broker config sets them (log.cleaner.backoff.ms, which Kafka can change at
 * run time, takes a dynamic value at the next start).
 */
function logManagerSchedule(view: BrokerConfigs): Partial<LogManagerOptions> {
  const positive = (name: string): number | undefined => {
    const n = Number(view.value(name));
    return Number.isFinite(n) && n > 0 ? n : undefined;
  };
  const schedule: Partial<LogManagerOptions> = { 'log.cleaner.enable': view.value('log.cleaner.enable')?.trim().toLowerCase() !== 'false' };
  for (const name of ['log.retention.check.interval.ms', 'log.cleaner.backoff.ms', 'log.flush.offset.checkpoint.interval.ms'] as const) {
    const ms = positive(name);
    if (ms !== undefined) schedule[name] = ms;
  }
  return schedule;
}

export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

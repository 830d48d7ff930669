/**
 * In-memory services for handler tests: a real local metadata store and real
 * partition logs, both in a temp dir.
 */
import { startShares } from '../cluster/share/share-services.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { followTopicLogConfigs, NO_STATIC_CONFIG, type StaticBrokerConfig } from '../cluster/metadata/broker-configs.js';
import { configReader, type ConfigKey } from '../cluster/metadata/broker-config-registry.js';
import { LocalMetadataStore } from '../cluster/metadata/local-metadata-store.js';
import { ReplicaManager } from '../cluster/replication/replica-manager.js';
import { GroupCoordinator } from '../cluster/group/group-coordinator.js';
import type { Persister } from '../cluster/share/persister.js';
import { replicaOffsetsStore } from '../cluster/coordinator/state-log-store.js';
import { ProducerIdManager } from '../cluster/txn/producer-id-manager.js';
import { TRANSACTION_STATE_TOPIC, TransactionCoordinator } from '../cluster/txn/txn-coordinator.js';
import { TransactionVerifier } from '../cluster/txn/txn-verifier.js';
import { ManualGroupTimer, type GroupTimer } from '../cluster/coordinator/timer.js';
import { DEFAULT_LOG_CONFIG, type LogConfig } from '../storage/log-config.js';
import { LogManager } from '../storage/log-manager.js';
import type { Fs } from '../storage/fs.js';
import { decode, encode } from '../wire/codec.js';
import { NO_RESPONSE, groupCoordinatorConfig, shareGroupSettings, shareStateTopicSettings, transactionCoordinatorConfig, type ApiHandler, type BrokerServices, type BrokerSettings, type RequestContext } from './handler.js';
import { HANDLERS, advertisedVersions } from './registry.js';
import { findCoordinator } from './find-coordinator.js';

export interface TestServices extends BrokerServices {
  readonly dataDir: string;
  readonly logs: LogManager;
  /** Closes the logs and the metadata store; the directory stays. */
  close(): Promise<void>;
}

/**
 * A test broker's settings: its node id (1 when absent), its config keys by
 * Kafka name (values as strings, numbers or booleans), and its static config
 * for DescribeConfigs. Unless `config` says otherwise, topics are
 * auto-created with 3 partitions.
 */
export interface TestSettings {
  readonly nodeId?: number;
  readonly config?: Partial<Record<ConfigKey, string | number | boolean>>;
  readonly staticConfig?: StaticBrokerConfig;
}

/** The BrokerSettings of `settings`. */
export function brokerSettings(settings: TestSettings = {}): BrokerSettings {
  const values = new Map<string, string>([['num.partitions', '3']]);
  for (const [k, v] of Object.entries(settings.config ?? {})) values.set(k, String(v));
  return { nodeId: settings.nodeId ?? 1, config: configReader(values), ...(settings.staticConfig ? { staticConfig: settings.staticConfig } : {}) };
}

export function testServices(
  settings: TestSettings = {},
  dir = mkdtempSync(join(tmpdir(), 'gregor-api-')),
  opts: {
    logDefaults?: LogConfig;
    fs?: Fs;
    /** The logs' clock (segments' last-modified times); the system's when absent. */
    now?: () => number;
    /**
     * Keep every topic's logs on the LogConfig its configs and the broker's
     * (dynamic) defaults give, as the broker does; logDefaults then only
     * serves logs of topics the metadata does not know.
     */
    followTopicConfigs?: boolean;
    /** The group coordinator's clock and timers; the system's (unref'd) when absent. */
    groupTimer?: GroupTimer;
    /** The transaction coordinator's clock and timers; the system's (unref'd) when absent. */
    txnTimer?: GroupTimer;
    /** What the group coordinator keeps share-partition state through; the broker's own share coordinator when absent, none (share groups off) when null. */
    persister?: Persister | null;
    /** More log directories after `dir` (JBOD). */
    moreLogDirs?: readonly string[];
  } = {},
): TestServices {
  const full = brokerSettings(settings);
  const log = pino({ level: 'silent' });
  const store = new LocalMetadataStore(dir, 'test-cluster-id-00000', {
    nodeId: full.nodeId,
    rack: null,
    endpoints: [
      { listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 },
      { listener: 'INTERNAL', host: 'broker-1.internal', port: 19092 },
    ],
  });
  const logs = LogManager.open([dir, ...(opts.moreLogDirs ?? [])], { defaults: opts.logDefaults ?? DEFAULT_LOG_CONFIG, log, ...(opts.fs ? { fs: opts.fs } : {}), ...(opts.now ? { now: opts.now } : {}) });
  // Before the replica manager, so that a new topic's logs open with their config.
  const unfollow = opts.followTopicConfigs ? followTopicLogConfigs(store, logs, full.staticConfig ?? NO_STATIC_CONFIG, full.nodeId) : () => {};
  const replicas = new ReplicaManager(full.nodeId, store, logs, log).start();
  const shares = startShares(full.nodeId, store, replicas, null, shareGroupSettings(full, store), log, { ...shareStateTopicSettings(full), replicationFactor: 1 });
  const groups = new GroupCoordinator(full.nodeId, store, replicaOffsetsStore(replicas), log, {
    config: groupCoordinatorConfig(full),
    ...(opts.persister === null ? {} : { persister: opts.persister ?? shares.persister }),
    ...(opts.groupTimer ? { timer: opts.groupTimer } : {}),
  }).start();
  replicas.onOffsetsTxnMarker = (partition, producerId, commit) => groups.completeTransaction(partition, producerId, commit);
  const transactions = new TransactionCoordinator(
    full.nodeId,
    store,
    replicaOffsetsStore(replicas, TRANSACTION_STATE_TOPIC),
    replicas,
    new ProducerIdManager(store, log),
    log,
    { config: transactionCoordinatorConfig(full), ...(opts.txnTimer ? { timer: opts.txnTimer } : {}) },
  ).start();
  return {
    settings: full,
    shares,
    metadata: store,
    replicas,
    groups,
    transactions,
    verifier: new TransactionVerifier(full.nodeId, store, transactions, null, log),
    log,
    apiVersions: advertisedVersions(HANDLERS),
    dataDir: dir,
    logs,
    async close() {
      shares.shutdown();
      transactions.shutdown();
      groups.shutdown();
      replicas.stop();
      unfollow();
      await logs.close();
      await store.close();
    },
  };
}

export function ctxFor(services: BrokerServices, apiVersion: number, listener = 'PLAINTEXT'): RequestContext {
  return { apiVersion, correlationId: 1, clientId: 'test', listener, clientHost: '127.0.0.1', services };
}

/**
 * Calls `handler` as a client at `version` would: the request is encoded
 * and decoded at that version first (so fields the version lacks come in
 * at their defaults), and the answer is encoded and decoded back, so that
 * an answer the version cannot carry fails the test.
 */
export async function callAt<Req, Res>(
  handler: ApiHandler<Req, Res>,
  version: number,
  req: Req,
  services: BrokerServices,
  ctx: Partial<RequestContext> = {},
): Promise<Res> {
  const sent = decode<Req>(handler.request, version, encode(handler.request, version, req));
  if (!sent.ok) throw new Error(sent.error);
  const res = await handler.handle(sent.value, { ...ctxFor(services, version), ...ctx });
  if (res === NO_RESPONSE) throw new Error(`${handler.name} gave no response`);
  const back = decode<Res>(handler.response, version, encode(handler.response, version, res));
  if (!back.ok) throw new Error(back.error);
  return back.value;
}

export interface TxnServices extends TestServices {
  readonly txnTimer: ManualGroupTimer;
}

/**
 * Services for the transaction API tests: __transaction_state (3
 * partitions) made through FindCoordinator, a topic `t` of 3 partitions,
 * and a manual timer for the transaction coordinator.
 */
export async function txnServices(settings: TestSettings = {}, dir?: string): Promise<TxnServices> {
  const txnTimer = new ManualGroupTimer();
  const s = testServices(
    { ...settings, config: { 'transaction.state.log.num.partitions': 3, 'transaction.state.log.replication.factor': 1, 'transaction.state.log.min.isr': 1, ...settings.config } },
    dir,
    { txnTimer },
  );
  await findCoordinator.handle({ key: 'tx', keyType: 1, coordinatorKeys: [] }, ctxFor(s, 1));
  if (!s.metadata.image().topics.has('t')) await s.metadata.createTopic({ name: 't', numPartitions: 3, replicationFactor: 1 });
  return Object.assign(s, { txnTimer });
}

/**
 * The metadata store of a cluster: the cluster's metadata lives in etcd (see
 * etcd-layout.ts for the keys), every broker keeps a copy by watching it, and
 * every change is an etcd transaction that compares the revisions of the keys
 * it rewrites, so two brokers changing one topic at once never both win.
 *
 * - A broker registers under an etcd lease of broker.session.timeout.ms: when
 *   it stops renewing it (it died, or lost etcd), etcd drops its registration.
 * - The controller is whichever live broker created the `controller` key under
 *   its lease first; when that key goes, the others race to create it again.
 *   The controller elects partition leaders when brokers go and come back.
 * - image() stays synchronous: it is the copy, rebuilt from each watch answer.
 *   A change resolves only once the watch has brought it back, so that, as with
 *   the local store, every listener has seen a change before its caller does.
 *   A refused change first waits for the watch to catch up with etcd (a write
 *   to this broker's barrier key), so a caller that reads image() after the
 *   refusal sees what refused it.
 */
import { once } from 'node:events';
import { createRequire } from 'node:module';
import type { Etcd3, IKeyValue, IWatchResponse, Lease, Watcher } from 'etcd3';
import { ErrorCode } from '../../wire/errors.js';
import { randomUuid } from '../../wire/uuid.js';
import {
  type Entry,
  EtcdLayout,
  type Reassignment,
  type StoredBroker,
  type StoredController,
  type StoredPartition,
  type StoredPartitionView,
  type StoredTopic,
  completeReassignment,
  electLeader,
  electLeaders,
  offlineReplicaSets,
  imageFromEntries,
  imbalancedPartitions,
  initialState,
  MAX_PARTITIONS_PER_TXN,
  placeReplicas,
  reassign,
} from './etcd-layout.js';
import {
  type BrokerRegistration,
  ConcurrentChangeError,
  type DynamicBrokerConfigs,
  groupConfigsIn,
  type MetadataImage,
  type MetadataStore,
  type NewTopic,
  type PartitionChangeResult,
  PRODUCER_ID_BLOCK_SIZE,
  type TopicImage,
  type TopicRef,
  TopicExistsError,
  UnknownTopicError,
} from './metadata-image.js';
import { collisionKey } from './topic-names.js';

/** The little of a logger the store needs; a pino logger fits. */
export interface EtcdStoreLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface EtcdStoreOptions {
  /** etcd client addresses, HOST:PORT. */
  readonly endpoints: readonly string[];
  /** Where the cluster's keys live; '/gregor/' unless several clusters share one etcd. */
  readonly root?: string;
  /** The lease of a broker's registration: broker.session.timeout.ms, in whole seconds (at least 1). */
  readonly sessionTimeoutMs: number;
  /** How long one etcd call, or the wait for the watch to bring a change back, may take before it fails. */
  readonly callTimeoutMs?: number;
  /**
   * auto.leader.rebalance.enable and leader.imbalance.check.interval.seconds
   * (in ms): how often the controller gives partitions back to their
   * preferred replicas; off when absent.
   */
  readonly leaderRebalanceIntervalMs?: number;
  readonly log: EtcdStoreLogger;
  /** Told when this broker must stop: another live broker registered under its node id. */
  readonly onFatal?: (err: Error) => void;
}

/** The store could not reach etcd or etcd refused: the change did not happen. */
export class MetadataUnavailableError extends Error {}

/** Another broker is registered with this node id. */
export class NodeIdInUseError extends Error {}

/** etcd3 is CommonJS, left out of the bundle (it reads its .proto files at run time) and loaded only by a broker on etcd. */
const load = createRequire(import.meta.url);

const DEFAULT_ROOT = '/gregor/';
const DEFAULT_CALL_TIMEOUT_MS = 5000;
/** How often a change that lost a compare-and-swap is tried again on the newer state. */
const CAS_ATTEMPTS = 10;
/** Between two tries to register again after the lease was lost, and to redo controller work that failed. */
const RETRY_DELAY_MS = 500;
const WATCH_BACKOFF_MIN_MS = 50;
/** Failed attempts to register or to read etcd again (RETRY_DELAY_MS apart) per warning: one every 5 s. */
const REGISTRATION_FAILURES_PER_WARNING = 10;
const WATCH_BACKOFF_MAX_MS = 1000;

const decode = (b: Buffer): string => b.toString('utf8');

/** A host policy of the etcd client that lets every call through (see connect()). */
const PASS_THROUGH = {
  execute<T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> {
    return Promise.resolve().then(() => fn({ signal: new AbortController().signal }));
  },
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * `work`'s outcome, or 'late' once `ms` have passed. etcd3 retries a call that runs past its
 * deadline (three times by default), so a stalled etcd holds one call for several deadlines;
 * a shutdown must not wait for that.
 */
async function within<T>(work: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), Math.max(0, ms))))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The etcd client's backoff shape: doubling from `duration` up to WATCH_BACKOFF_MAX_MS. */
class CappedBackoff {
  constructor(readonly duration: number) {}
  next(): CappedBackoff {
    return new CappedBackoff(Math.min(this.duration * 2, WATCH_BACKOFF_MAX_MS));
  }
}

export class EtcdMetadataStore implements MetadataStore {
  private readonly entries = new Map<string, Entry>();
  private current: MetadataImage;
  private applied = 0n;
  private readonly waiters: { revision: bigint; resolve: () => void; reject: (err: Error) => void; timer: NodeJS.Timeout }[] = [];
  private readonly listeners = new Set<(image: MetadataImage) => void>();
  private readonly callTimeoutMs: number;
  private watcher: Watcher | null = null;
  private reloading: Promise<void> | null = null;
  private lease: Lease | null = null;
  private registering: Promise<void> | null = null;
  private self: BrokerRegistration | null = null;
  private directoryId = '';
  /** This broker's replicas that cannot serve, as its registration publishes them. */
  private offlineReplicas: readonly string[] = [];
  private closed = false;
  /** Set by controlledShutdown(): never register again. */
  private leaving = false;
  private campaigning = false;
  private electing: Promise<void> | null = null;
  private electAgain = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private rebalanceTimer: NodeJS.Timeout | null = null;
  /** ISR changes waiting to be written, in the order asked (see alterPartitionIsr). */
  private readonly isrChanges: IsrChange[] = [];
  private isrWriting = false;

  private constructor(
    private readonly client: Etcd3,
    private readonly layout: EtcdLayout,
    private readonly opts: EtcdStoreOptions,
    readonly clusterId: string,
  ) {
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.current = this.build();
  }

  /**
   * Connects, reads the cluster id (writing `proposedClusterId` when etcd has
   * none yet), loads every key under the root and starts watching them. The
   * broker is not registered yet: see claimNodeId() and register().
   */
  static async connect(opts: EtcdStoreOptions, proposedClusterId: string): Promise<EtcdMetadataStore> {
    const { Etcd3 } = load('etcd3') as typeof import('etcd3');
    const callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const where = opts.endpoints.join(',');
    const client = new Etcd3({
      hosts: opts.endpoints.map((e) => `http://${e}`),
      dialTimeout: callTimeoutMs,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + callTimeoutMs }),
      // The watch comes back within a second of etcd, not after the client's default of up to 30 s; and with
      // one etcd address there is no other host to fail over to, so no circuit breaker holds calls back for
      // seconds after etcd returns (the callers' own retries are spaced out).
      faultHandling: { watchBackoff: new CappedBackoff(WATCH_BACKOFF_MIN_MS) as never, ...(opts.endpoints.length === 1 ? { host: () => PASS_THROUGH as never } : {}) },
    });
    const layout = new EtcdLayout(opts.root ?? DEFAULT_ROOT);
    let clusterId: string;
    try {
      const key = layout.clusterId();
      const res = await client.if(key, 'Create', '==', 0).then(client.put(key).value(proposedClusterId)).else(client.get(key)).commit();
      clusterId = res.succeeded ? proposedClusterId : decode(res.responses[0]!.response_range.kvs[0]!.value);
    } catch (err) {
      client.close();
      throw new MetadataUnavailableError(`cannot use etcd at ${where} (${(err as Error).message}); check that etcd runs there and takes plain-http clients`);
    }
    const store = new EtcdMetadataStore(client, layout, opts, clusterId);
    try {
      await store.loadAndWatch();
    } catch (err) {
      await store.close();
      throw new MetadataUnavailableError(`cannot read the cluster metadata from etcd at ${where} (${(err as Error).message})`);
    }
    return store;
  }

  image(): MetadataImage {
    return this.current;
  }

  subscribe(listener: (image: MetadataImage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Makes sure this broker may use `nodeId`, before it opens its logs: a
   * registration by another data directory is a broker still running (or
   * killed less than a session ago) and fails with NodeIdInUseError; this
   * directory's own, left by a run that ended without deregistering, is
   * removed with its lease (and whatever else that lease held, such as the
   * controller key).
   */
  async claimNodeId(nodeId: number, directoryId: string): Promise<void> {
    const key = this.layout.broker(nodeId);
    const got = await this.call(() => this.client.get(key).exec());
    const kv = got.kvs[0];
    if (!kv) return;
    let other: StoredBroker | null = null;
    try {
      other = JSON.parse(decode(kv.value)) as StoredBroker;
    } catch {
      // Not gregor's: treat as another broker's.
    }
    if (other?.directoryId !== directoryId) {
      const where = other ? other.endpoints.map((e) => `${e.host}:${e.port}`).join(', ') : 'unknown address';
      throw new NodeIdInUseError(
        `node.id ${nodeId} is registered in etcd by another broker (${where}); give this broker another node.id, or, if that broker was killed, wait broker.session.timeout.ms for its registration to expire`,
      );
    }
    await this.call(() => this.client.leaseClient.leaseRevoke({ ID: kv.lease }));
    await this.barrier();
  }

  /**
   * Registers this broker under a new lease and joins the race for controller;
   * resolves once the image lists the broker. Call claimNodeId() first.
   */
  async register(self: BrokerRegistration, directoryId: string): Promise<void> {
    this.self = self;
    this.directoryId = directoryId;
    await this.registerUnderNewLease();
    const every = this.opts.leaderRebalanceIntervalMs;
    if (every !== undefined && every > 0 && !this.rebalanceTimer) {
      this.rebalanceTimer = setInterval(() => {
        this.rebalanceLeaders().catch((err: unknown) => this.opts.log.warn({ err: (err as Error).message }, 'auto leader rebalance did not complete; trying again later'));
      }, every);
      this.rebalanceTimer.unref();
    }
  }

  /** This broker's registration as it is written. */
  private storedSelf(): StoredBroker {
    const self = this.self!;
    return { rack: self.rack, endpoints: self.endpoints, directoryId: this.directoryId, ...(this.offlineReplicas.length > 0 ? { offlineReplicas: this.offlineReplicas } : {}) };
  }

  /**
   * Rewrites this broker's registration (under its lease) with the replicas
   * that cannot serve; the controller sees them in the next image. Before
   * registration, or while the lease is being replaced, the list goes with
   * the next registration.
   */
  async reportOfflineReplicas(replicas: readonly string[]): Promise<void> {
    this.offlineReplicas = [...replicas];
    const lease = this.lease;
    if (!this.self || !lease || this.closed) return;
    const key = this.layout.broker(this.self.nodeId);
    await this.call(() => lease.put(key).value(JSON.stringify(this.storedSelf())).exec());
  }

  async createTopic(topic: NewTopic): Promise<TopicImage> {
    const name = topic.name;
    const live = [...this.current.brokers.values()];
    const replicas = topic.assignments
      ? topic.assignments.map((r) => [...r])
      : placeReplicas(live, topic.numPartitions, topic.replicationFactor, Math.floor(Math.random() * Math.max(1, live.length)), 0);
    let topicId = randomUuid();
    while (this.current.topicsById.has(topicId)) topicId = randomUuid();
    const stored: StoredTopic = { topicId, replicas };
    const topicKey = this.layout.topic(name);
    const nameKey = this.layout.topicName(collisionKey(name));
    const c = this.client;
    const liveIds = new Set(this.current.brokers.keys());
    const states = replicas.map((r) => initialState(r, liveIds));
    // Partition keys left by a creation of this name that was cut short would otherwise come back.
    if (!this.entries.has(topicKey) && [...this.entries.keys()].some((k) => k.startsWith(this.layout.partitionsPrefix(name)))) {
      await this.call(() => c.if(topicKey, 'Create', '==', 0).then(c.delete().prefix(this.layout.partitionsPrefix(name))).commit());
    }
    // The topic, and as many partitions as fit, in one transaction; the rest follow, each only while the topic is the one created.
    const first = Math.min(states.length, MAX_PARTITIONS_PER_TXN);
    const puts = [
      c.put(topicKey).value(JSON.stringify(stored)),
      c.put(nameKey).value(JSON.stringify({ name })),
      ...states.slice(0, first).map((st, i) => c.put(this.layout.partition(name, i)).value(JSON.stringify(st))),
    ];
    if (topic.configs && Object.keys(topic.configs).length > 0) puts.push(c.put(this.layout.topicConfigs(name)).value(JSON.stringify(topic.configs)));
    const res = await this.call(() => c.if(topicKey, 'Create', '==', 0).and(nameKey, 'Create', '==', 0).then(...puts).else(c.get(nameKey)).commit());
    if (!res.succeeded) {
      await this.barrier();
      const holder = res.responses[0]?.response_range.kvs[0];
      let clash = name;
      try {
        if (holder) clash = (JSON.parse(decode(holder.value)) as { name: string }).name;
      } catch {
        // Not gregor's value: report the name asked for.
      }
      throw new TopicExistsError(clash === name ? `Topic '${name}' already exists.` : `Topic '${name}' collides with existing topic '${clash}'.`);
    }
    const createdAt = res.header.revision;
    let revision = BigInt(createdAt);
    for (let from = first; from < states.length; from += MAX_PARTITIONS_PER_TXN) {
      const chunk = states.slice(from, from + MAX_PARTITIONS_PER_TXN);
      const more = await this.call(() =>
        c
          .if(topicKey, 'Create', '==', createdAt)
          .then(...chunk.map((st, i) => c.put(this.layout.partition(name, from + i)).value(JSON.stringify(st))))
          .commit(),
      );
      // Deleted meanwhile: what is left is the deletion's to answer.
      if (!more.succeeded) break;
      revision = BigInt(more.header.revision);
    }
    await this.caughtUp(revision);
    return this.topicNamed(name, topicId);
  }

  async deleteTopic(ref: TopicRef): Promise<TopicImage> {
    return this.withRetries(async () => {
      const gone = 'name' in ref ? this.current.topics.get(ref.name) : this.current.topicsById.get(ref.topicId);
      if (!gone) throw new UnknownTopicError('name' in ref ? `Topic '${ref.name}' does not exist.` : `Topic id ${ref.topicId} does not exist.`);
      const c = this.client;
      const topicKey = this.layout.topic(gone.name);
      const entry = this.entries.get(topicKey)!;
      const res = await this.call(() =>
        c
          .if(topicKey, 'Mod', '==', entry.modRevision)
          .then(
            c.delete().key(topicKey),
            c.delete().prefix(this.layout.partitionsPrefix(gone.name)),
            c.delete().key(this.layout.legacyPartitions(gone.name)),
            c.delete().key(this.layout.topicConfigs(gone.name)),
            c.delete().key(this.layout.topicName(collisionKey(gone.name))),
          )
          .commit(),
      );
      // The topic key existed: the deletion is an event under the root at this revision.
      return res.succeeded ? { done: gone, revision: BigInt(res.header.revision) } : null;
    });
  }

  async createPartitions(name: string, count: number, assignments?: readonly (readonly number[])[]): Promise<TopicImage> {
    const { topicId, added, createdAt, revision } = await this.withRetries(async () => {
      const topicKey = this.layout.topic(name);
      const topicEntry = this.entries.get(topicKey);
      if (!topicEntry) throw new UnknownTopicError(`Topic '${name}' does not exist.`);
      const stored = JSON.parse(topicEntry.value) as StoredTopic;
      const have = stored.replicas.length;
      if (!Number.isInteger(count) || count <= have) throw new RangeError(`topic '${name}' has ${have} partitions; ${count} is not an increase`);
      if (assignments && assignments.length !== count - have) throw new RangeError(`${count - have} new partitions but ${assignments.length} assignments`);
      const live = [...this.current.brokers.values()];
      // While partition 0 is reassigned, its replicas include those leaving.
      const rf = (stored.replicas[0]?.length ?? 1) - (stored.reassigning?.['0']?.removing.length ?? 0);
      const replicas = assignments
        ? assignments.map((r) => [...r])
        : placeReplicas(live, count - have, rf, Math.floor(Math.random() * Math.max(1, live.length)), have);
      const liveIds = new Set(this.current.brokers.keys());
      const states = replicas.map((r, i) => ({ partition: have + i, state: initialState(r, liveIds) }));
      const first = states.slice(0, MAX_PARTITIONS_PER_TXN);
      const c = this.client;
      const res = await this.call(() =>
        c
          .if(topicKey, 'Mod', '==', topicEntry.modRevision)
          .then(
            c.put(topicKey).value(JSON.stringify({ ...stored, replicas: [...stored.replicas, ...replicas] })),
            ...first.map((x) => c.put(this.layout.partition(name, x.partition)).value(JSON.stringify(x.state))),
          )
          .commit(),
      );
      const done = { topicId: stored.topicId, added: states.slice(first.length), createdAt: topicEntry.createRevision, revision: BigInt(res.header.revision) };
      return res.succeeded ? { done, revision: done.revision } : null;
    });
    // The partitions that did not fit in the first transaction, while the topic is the same one.
    let last = revision;
    for (let from = 0; from < added.length; from += MAX_PARTITIONS_PER_TXN) {
      const chunk = added.slice(from, from + MAX_PARTITIONS_PER_TXN);
      const c = this.client;
      const more = await this.call(() =>
        c
          .if(this.layout.topic(name), 'Create', '==', createdAt)
          .then(...chunk.map((x) => c.put(this.layout.partition(name, x.partition)).value(JSON.stringify(x.state))))
          .commit(),
      );
      if (!more.succeeded) break;
      last = BigInt(more.header.revision);
    }
    await this.caughtUp(last);
    return this.topicNamed(name, topicId);
  }

  /**
   * Replaces the topic's overrides with `configs`, which the caller made from
   * the overrides in image(): if they changed in etcd since (another broker,
   * another request), nothing is written and ConcurrentChangeError says so,
   * rather than one of the two changes being lost.
   */
  async alterTopicConfigs(name: string, configs: Readonly<Record<string, string>>): Promise<TopicImage> {
    const topicKey = this.layout.topic(name);
    const configsKey = this.layout.topicConfigs(name);
    // A topic this broker has not seen yet may exist all the same: caught up first.
    if (!this.entries.has(topicKey)) await this.barrier();
    const topicEntry = this.entries.get(topicKey);
    if (!topicEntry) throw new UnknownTopicError(`The topic '${name}' does not exist.`);
    const topicId = (JSON.parse(topicEntry.value) as StoredTopic).topicId;
    const c = this.client;
    const change = Object.keys(configs).length === 0 ? c.delete().key(configsKey) : c.put(configsKey).value(JSON.stringify(configs));
    const res = await this.call(() =>
      this.guardOn(configsKey, c.if(topicKey, 'Create', '==', topicEntry.createRevision)).then(change).commit(),
    );
    // A delete of overrides that were not there changes nothing under the root: confirm through the barrier.
    await this.barrier();
    if (!res.succeeded) {
      if (!this.current.topics.has(name)) throw new UnknownTopicError(`The topic '${name}' does not exist.`);
      throw new ConcurrentChangeError(`the configs of topic '${name}' were changed by another request meanwhile; send the change again`);
    }
    return this.topicNamed(name, topicId);
  }

  /** As alterTopicConfigs, for one level of dynamic broker configs. */
  async alterBrokerConfigs(nodeId: number | null, configs: Readonly<Record<string, string>>): Promise<DynamicBrokerConfigs> {
    const key = this.layout.brokerConfigs(nodeId);
    const c = this.client;
    const change = Object.keys(configs).length === 0 ? c.delete().key(key) : c.put(key).value(JSON.stringify(configs));
    const res = await this.call(() => this.guardOn(key, null).then(change).commit());
    await this.barrier();
    if (!res.succeeded) throw new ConcurrentChangeError('the dynamic broker configs were changed by another request meanwhile; send the change again');
    return this.current.dynamicBrokerConfigs;
  }

  groupConfigOverrides(groupId: string): ReadonlyMap<string, string> {
    return groupConfigsIn(this.current, groupId);
  }

  /** As alterBrokerConfigs, for one group's config overrides. */
  async alterGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>): Promise<void> {
    const key = this.layout.groupConfigs(groupId);
    const c = this.client;
    const change = Object.keys(configs).length === 0 ? c.delete().key(key) : c.put(key).value(JSON.stringify(configs));
    const res = await this.call(() => this.guardOn(key, null).then(change).commit());
    await this.barrier();
    if (!res.succeeded) throw new ConcurrentChangeError(`the configs of group '${groupId}' were changed by another request meanwhile; send the change again`);
  }

  /**
   * Asks for a new ISR of a partition this broker leads, made from
   * `baseIsr`. Changes asked at about the same time are written together, in
   * as few etcd transactions as they fit in, each comparing the revision of
   * every partition it rewrites: a broker's ISR changes after an outage cost
   * a handful of writes, not one per partition. A change whose partition
   * moved on meanwhile (another leader or epoch, or another ISR than
   * `baseIsr`) fails with ConcurrentChangeError once this copy shows why;
   * one etcd did not take fails with MetadataUnavailableError, and the
   * caller decides when to ask again.
   */
  alterPartitionIsr(topic: string, partition: number, leaderEpoch: number, baseIsr: readonly number[], isr: readonly number[]): Promise<void> {
    const gone = isr.filter((r) => !baseIsr.includes(r) && !this.current.brokers.has(r));
    if (gone.length > 0) return Promise.reject(new ConcurrentChangeError(`replicas ${gone.join(',')} are not live brokers; they cannot join the ISR`));
    if (this.closed) return Promise.reject(new MetadataUnavailableError('the metadata store is closed'));
    return new Promise((resolve, reject) => {
      this.isrChanges.push({ topic, partition, leaderEpoch, baseIsr: [...baseIsr], isr: [...isr], attempts: 0, resolve, reject });
      if (!this.isrWriting) {
        this.isrWriting = true;
        // Changes asked in the same turn of the event loop go in one batch.
        setImmediate(() => void this.writeIsrChanges());
      }
    });
  }

  /** Writes the queued ISR changes, a batch at a time, until none is left. */
  private async writeIsrChanges(): Promise<void> {
    try {
      while (this.isrChanges.length > 0) {
        const batch = this.isrChanges.splice(0, MAX_PARTITIONS_PER_TXN);
        if (this.closed) {
          for (const ch of batch) ch.reject(new MetadataUnavailableError('the metadata store is closed'));
          continue;
        }
        const compares: Compare[] = [];
        const puts: ReturnType<Etcd3['put']>[] = [];
        const writing: IsrChange[] = [];
        for (const ch of batch) {
          const stored = this.storedPartition(ch.topic, ch.partition);
          const s = stored?.state;
          if (!stored || !s) {
            ch.reject(new UnknownTopicError(`Topic '${ch.topic}' has no partition ${ch.partition}.`));
            continue;
          }
          if (s.leader !== this.self?.nodeId || s.leaderEpoch !== ch.leaderEpoch) {
            ch.reject(new ConcurrentChangeError(`partition ${ch.topic}-${ch.partition} is led by ${s.leader} at epoch ${s.leaderEpoch} now, not by this broker at ${ch.leaderEpoch}`));
            continue;
          }
          if (sameSet(s.isr, ch.isr)) {
            ch.resolve();
            continue;
          }
          // Made from an ISR that has changed since (the controller dropped a dead replica): the leader asks again from the new one.
          if (!sameSet(s.isr, ch.baseIsr)) {
            ch.reject(new ConcurrentChangeError(`the ISR of ${ch.topic}-${ch.partition} is [${s.isr.join(',')}] now, not [${ch.baseIsr.join(',')}]`));
            continue;
          }
          // A partition asked twice in one batch waits for the next one, made from what the first wrote.
          if (writing.some((w) => w.topic === ch.topic && w.partition === ch.partition)) {
            this.isrChanges.unshift(ch);
            continue;
          }
          compares.push(...stored.compares);
          puts.push(this.client.put(this.layout.partition(ch.topic, ch.partition)).value(JSON.stringify({ ...s, isr: ch.isr, partitionEpoch: s.partitionEpoch + 1 })));
          writing.push(ch);
        }
        if (writing.length === 0) continue;
        let res;
        try {
          res = await this.call(() => this.commitIf(compares, puts));
        } catch (err) {
          for (const ch of writing) ch.reject(err as Error);
          continue;
        }
        if (res.succeeded) {
          await this.caughtUp(BigInt(res.header.revision)).catch(() => undefined);
          for (const ch of writing) ch.resolve();
          continue;
        }
        // Some partition of the batch changed meanwhile: with this copy caught up, each change is judged again on its own.
        await this.barrier().catch(() => undefined);
        for (const ch of writing.reverse()) {
          if (++ch.attempts >= CAS_ATTEMPTS) ch.reject(new MetadataUnavailableError(`the ISR change of ${ch.topic}-${ch.partition} lost ${CAS_ATTEMPTS} compare-and-swaps in a row`));
          else this.isrChanges.unshift(ch);
        }
      }
    } finally {
      this.isrWriting = false;
      if (this.isrChanges.length > 0 && !this.closed) {
        this.isrWriting = true;
        setImmediate(() => void this.writeIsrChanges());
      }
    }
  }

  async alterPartitionReassignments(changes: readonly { topic: string; partition: number; replicas: readonly number[] | null }[]): Promise<PartitionChangeResult[]> {
    const answers = new Map<string, PartitionChangeResult>();
    const byTopic = new Map<string, { partition: number; replicas: readonly number[] | null }[]>();
    for (const c of changes) byTopic.set(c.topic, [...(byTopic.get(c.topic) ?? []), { partition: c.partition, replicas: c.replicas }]);
    for (const [topic, list] of byTopic) {
      const results = await this.changePartitions(topic, list.map((c) => c.partition), (view, i, live) => {
        const r = reassign(view, list[i]!.replicas, live);
        return 'errorCode' in r ? r : { view: r };
      });
      list.forEach((c, i) => answers.set(`${topic}\u0000${c.partition}`, { topic, partition: c.partition, ...results[i]! }));
    }
    const done = changes.map((c) => answers.get(`${c.topic}\u0000${c.partition}`)!);
    const started = done.filter((r) => r.errorCode === ErrorCode.NONE).length;
    if (started > 0) this.opts.log.info({ partitions: started }, 'partition reassignments changed');
    return done;
  }

  async electLeaders(type: 'preferred' | 'unclean', partitions: readonly { topic: string; partition: number }[] | null): Promise<PartitionChangeResult[]> {
    const all = partitions === null;
    const asked = partitions ?? [...this.current.topics.values()].flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partition })));
    const byTopic = new Map<string, number[]>();
    for (const p of asked) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
    const out: PartitionChangeResult[] = [];
    for (const [topic, list] of byTopic) {
      const results = await this.changePartitions(topic, list, (view, _i, live) => {
        const r = electLeader(view, type, live);
        return 'errorCode' in r ? r : { view: { ...view, state: r } };
      });
      list.forEach((partition, i) => {
        const r = results[i]!;
        // Asked for every partition, Kafka lists only those that needed an election.
        if (!all || r.errorCode !== ErrorCode.ELECTION_NOT_NEEDED) out.push({ topic, partition, ...r });
      });
    }
    const elected = out.filter((r) => r.errorCode === ErrorCode.NONE);
    if (elected.length > 0) this.opts.log.info({ type, partitions: elected.map((r) => `${r.topic}-${r.partition}`) }, 'elected partition leaders on request');
    return out;
  }

  /**
   * Changes some partitions of one topic in one etcd transaction that
   * compares the revisions of the topic and partition-state keys it read:
   * `decide` gets each asked partition as stored (with its index in `asked`)
   * and the live brokers, and gives the new view or the error to answer.
   * Unknown topics and partitions answer UNKNOWN_TOPIC_OR_PARTITION; a
   * partition asked twice is decided each time from what it was, and the
   * last decision is written. When etcd does
   * not take the change, every partition asked answers UNKNOWN_SERVER_ERROR
   * with the reason.
   */
  private async changePartitions(
    topic: string,
    asked: readonly number[],
    decide: (view: StoredPartitionView, index: number, live: ReadonlySet<number>) => { view: StoredPartitionView } | { errorCode: number; message: string },
  ): Promise<{ errorCode: number; message: string | null }[]> {
    const unknown = { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message: `Topic '${topic}' or the partition does not exist.` };
    const answers: { errorCode: number; message: string | null }[] = [];
    // In pieces that fit in one transaction each, every piece decided on the topic as etcd holds it then.
    for (let from = 0; from < asked.length; from += MAX_PARTITIONS_PER_TXN) {
      const piece = asked.slice(from, from + MAX_PARTITIONS_PER_TXN);
      try {
        answers.push(
          ...(await this.withRetries(async () => {
            const views = this.storedViews(topic);
            if (!views) throw new UnknownTopicError(unknown.message);
            const live = new Set(this.current.brokers.keys());
            const out: { errorCode: number; message: string | null }[] = [];
            const next = new Map<number, StoredPartitionView>();
            piece.forEach((p, k) => {
              const view = Number.isInteger(p) ? views.partitions[p]?.view : undefined;
              if (!view) {
                out.push(unknown);
                return;
              }
              const d = decide(view, from + k, live);
              if ('errorCode' in d) out.push(d);
              else {
                next.set(p, d.view);
                out.push({ errorCode: ErrorCode.NONE, message: null });
              }
            });
            const changed = [...next].filter(([p, v]) => v !== views.partitions[p]!.view);
            if (changed.length === 0) return { done: out, revision: this.applied };
            const c = this.client;
            const topicKey = this.layout.topic(topic);
            const compares: Compare[] = [[topicKey, 'Mod', views.topicEntry.modRevision], ...changed.flatMap(([p]) => views.partitions[p]!.compares)];
            const ops = changed.map(([p, v]) => c.put(this.layout.partition(topic, p)).value(JSON.stringify(v.state)));
            const moved = changed.filter(([p, v]) => v.replicas !== views.partitions[p]!.view!.replicas || v.reassigning !== views.partitions[p]!.view!.reassigning);
            if (moved.length > 0) {
              const replicas = [...views.stored.replicas];
              const reassigning: Record<string, Reassignment> = { ...views.stored.reassigning };
              for (const [p, v] of moved) {
                replicas[p] = v.replicas;
                if (v.reassigning) reassigning[String(p)] = v.reassigning;
                else delete reassigning[String(p)];
              }
              const newTopic: StoredTopic = { topicId: views.stored.topicId, replicas, ...(Object.keys(reassigning).length > 0 ? { reassigning } : {}) };
              ops.push(c.put(topicKey).value(JSON.stringify(newTopic)));
            }
            const res = await this.call(() => this.commitIf(dedupe(compares), ops));
            return res.succeeded ? { done: out, revision: BigInt(res.header.revision) } : null;
          })),
        );
      } catch (err) {
        if (err instanceof UnknownTopicError) {
          answers.push(...piece.map(() => unknown));
          continue;
        }
        // This topic's partitions answer the failure; the other topics of the request are done on their own.
        this.opts.log.warn({ topic, err: (err as Error).message }, 'partition change not written');
        answers.push(...piece.map(() => ({ errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, message: (err as Error).message })));
      }
    }
    return answers;
  }

  async allocateProducerIdBlock(): Promise<{ firstProducerId: bigint; size: number }> {
    const key = this.layout.producerIds();
    const c = this.client;
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      if (i > 0) await sleep(10 + Math.random() * 40 * i);
      const got = await this.call(() => c.get(key).exec());
      const kv = got.kvs[0];
      const first = kv ? BigInt(decode(kv.value)) : 0n;
      const next = String(first + BigInt(PRODUCER_ID_BLOCK_SIZE));
      const guard = kv ? c.if(key, 'Mod', '==', kv.mod_revision) : c.if(key, 'Create', '==', 0);
      const res = await this.call(() => guard.then(c.put(key).value(next)).commit());
      if (res.succeeded) return { firstProducerId: first, size: PRODUCER_ID_BLOCK_SIZE };
    }
    throw new MetadataUnavailableError(`producer id blocks: ${CAS_ATTEMPTS} attempts lost to other brokers`);
  }

  /**
   * Controlled shutdown, before the broker stops serving: deregisters (giving
   * up the controller's key too when this broker holds it), so the
   * controller elects new leaders from the other in-sync replicas and takes
   * this broker out of every ISR, then waits until no partition names this
   * broker its leader while another registered broker is in its ISR, or
   * `timeoutMs` passes. The copy of the metadata stays up to date meanwhile,
   * so the broker answers NOT_LEADER_OR_FOLLOWER for what moved. A partition
   * of which this broker is the only in-sync replica left has no leader until
   * this broker comes back. Resolves how many partitions still name it when
   * it stops waiting (0 when all moved), and whether `timeoutMs` ran out
   * while some could still have moved. Returns at once when the broker is not
   * registered or etcd cannot be reached: there is nobody to hand over to.
   */
  async controlledShutdown(timeoutMs: number): Promise<{ leading: number; timedOut: boolean }> {
    if (this.closed || !this.self) return { leading: 0, timedOut: false };
    // One budget for all of it, the etcd calls before the wait included.
    const deadline = Date.now() + timeoutMs;
    this.leaving = true;
    // A registration again in flight ends first (it gives its lease back on seeing `leaving`).
    const registered = this.registering ? await within(this.registering.catch(() => undefined), deadline - Date.now()) : undefined;
    const nodeId = this.self.nodeId;
    const leading = (image: MetadataImage): number => {
      let n = 0;
      for (const t of image.topics.values()) for (const p of t.partitions) if (p.leader === nodeId) n++;
      return n;
    };
    const movable = (image: MetadataImage): boolean => {
      for (const t of image.topics.values()) {
        for (const p of t.partitions) if (p.leader === nodeId && p.isr.some((r) => r !== nodeId && image.brokers.has(r))) return true;
      }
      return false;
    };
    if (registered === 'late') return { leading: leading(this.current), timedOut: true };
    const lease = this.lease;
    this.lease = null;
    const revoked = lease ? await within(lease.revoke().then(() => true, () => false), deadline - Date.now()) : false;
    if (revoked === 'late') return { leading: leading(this.current), timedOut: true };
    if (!revoked || !movable(this.current)) return { leading: leading(this.current), timedOut: false };
    return new Promise((resolve) => {
      const done = (timedOut: boolean): void => {
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve({ leading: leading(this.current), timedOut });
      };
      const check = (image: MetadataImage): void => {
        if (!movable(image)) done(false);
      };
      const timer = setTimeout(() => done(true), Math.max(0, deadline - Date.now()));
      this.listeners.add(check);
    });
  }

  /** Deregisters (other brokers see this broker go at once, not when its lease runs out) and disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.rebalanceTimer) clearInterval(this.rebalanceTimer);
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new MetadataUnavailableError('the metadata store was closed'));
    }
    // Not awaited: etcd3 waits for etcd to confirm a cancel, and etcd may be gone; close() ends the stream.
    void this.watcher?.cancel().catch(() => undefined);
    this.watcher = null;
    const lease = this.lease;
    this.lease = null;
    // An etcd that does not answer within one call's deadline gets the lease back by its expiry instead.
    if (lease) await within(lease.revoke().catch(() => undefined), this.callTimeoutMs);
    this.client.close();
  }

  // ------------------------------------------------------------ the copy

  private build(): MetadataImage {
    return imageFromEntries(this.layout, this.entries, (key) =>
      this.opts.log.error({ key }, 'an etcd key under the cluster root does not hold what gregor writes there; left out of the metadata'),
    );
  }

  /** Reads every key under the root, publishes them, and watches from there on. */
  private async loadAndWatch(): Promise<void> {
    const snapshot = await this.client.getAll().prefix(this.layout.root).exec();
    if (this.closed) return;
    this.entries.clear();
    for (const kv of snapshot.kvs) this.entries.set(decode(kv.key), entryOf(kv));
    const revision = BigInt(snapshot.header.revision);
    if (revision > this.applied) this.applied = revision;
    this.publish();
    this.settleWaiters();
    // Listeners first, then the stream: no event can come before they are in place.
    const watcher = this.client.watch().prefix(this.layout.root).startRevision(String(revision + 1n)).watcher();
    this.watcher = watcher;
    watcher.on('data', (res: IWatchResponse) => this.onWatch(res));
    watcher.on('disconnected', (err: Error) => this.rewatch(watcher, `lost the watch on etcd (${err.message})`));
    watcher.on('error', (err: Error) => this.rewatch(watcher, `etcd ended the watch (${err.message})`));
    let timer: NodeJS.Timeout | undefined;
    const failed = await Promise.race([
      once(watcher, 'connected').then(() => null),
      once(watcher, 'error').then(([e]) => e as Error),
      new Promise<Error>((resolve) => {
        timer = setTimeout(() => resolve(new Error(`no watch within ${this.callTimeoutMs} ms`)), this.callTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (failed) throw failed;
  }

  /**
   * The watch is gone or may have missed events (etcd3 resumes a dropped
   * stream from the revision it was told when it connected, which can skip
   * events): read everything again and watch anew. The image keeps its last
   * state meanwhile.
   */
  private rewatch(watcher: Watcher, why: string): void {
    if (this.closed || this.watcher !== watcher) return;
    this.watcher = null;
    void watcher.cancel().catch(() => undefined);
    this.opts.log.warn({ why }, 'reading the metadata from etcd again');
    this.reloading ??= (async () => {
      for (let attempt = 0; !this.closed; attempt++) {
        try {
          await this.loadAndWatch();
          this.opts.log.info({ attempts: attempt + 1 }, 'watching etcd again');
          return;
        } catch (err) {
          if (this.watcher) {
            const w = this.watcher;
            this.watcher = null;
            void w.cancel().catch(() => undefined);
          }
          if (attempt % REGISTRATION_FAILURES_PER_WARNING === 0) this.opts.log.warn({ err: (err as Error).message, attempts: attempt + 1 }, 'cannot read the metadata from etcd yet; trying again');
          await sleep(RETRY_DELAY_MS);
        }
      }
    })().finally(() => {
      this.reloading = null;
    });
  }

  private onWatch(res: IWatchResponse): void {
    if (this.closed) return;
    let changed = false;
    let revision = this.applied;
    for (const ev of res.events) {
      const key = decode(ev.kv.key);
      const rev = BigInt(ev.kv.mod_revision);
      if (rev > revision) revision = rev;
      if (this.layout.kindOf(key).kind === 'barrier') continue;
      if (ev.type === 'Put') this.entries.set(key, entryOf(ev.kv));
      else this.entries.delete(key);
      changed = true;
    }
    this.applied = revision;
    if (changed) this.publish();
    this.settleWaiters();
  }

  private publish(): void {
    this.current = this.build();
    const image = this.current;
    for (const l of [...this.listeners]) l(image);
    this.afterImage(image);
  }

  private settleWaiters(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (w.revision <= this.applied) {
        this.waiters.splice(i, 1);
        clearTimeout(w.timer);
        w.resolve();
      }
    }
  }

  /** Resolves once the watch has applied `revision`; fails after the call timeout (the watch is down). */
  private caughtUp(revision: bigint): Promise<void> {
    if (revision <= this.applied) return Promise.resolve();
    if (this.closed) return Promise.reject(new MetadataUnavailableError('the metadata store was closed'));
    return new Promise((resolve, reject) => {
      const w = {
        revision,
        resolve,
        reject,
        timer: setTimeout(() => {
          const i = this.waiters.indexOf(w);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(new MetadataUnavailableError(`the change was made in etcd, but its watch did not bring it back within ${this.callTimeoutMs} ms`));
        }, this.callTimeoutMs),
      };
      this.waiters.push(w);
    });
  }

  /** Writes this broker's barrier key and waits for the watch to bring it back: the copy is then as new as etcd was. */
  private async barrier(): Promise<void> {
    const id = this.self?.nodeId ?? 0;
    const res = await this.call(() => this.client.put(this.layout.barrier(id)).value(randomUuid()).exec());
    await this.caughtUp(BigInt(res.header.revision));
  }

  /** `builder` (or a new one) with the condition that `key` is as this copy has it: same revision, or absent. */
  private guardOn(key: string, builder: ReturnType<Etcd3['if']> | null): ReturnType<Etcd3['if']> {
    const entry = this.entries.get(key);
    const [column, value] = entry ? (['Mod', entry.modRevision] as const) : (['Create', 0] as const);
    return builder ? builder.and(key, column, '==', value) : this.client.if(key, column, '==', value);
  }

  /**
   * What etcd holds for one partition's state, with the compares that it is
   * still so: its own key, or, for a topic of the older layout, its element
   * of the topic's list (and the own key still absent). Null when the topic
   * is not in this copy; `state` undefined when the partition has no state
   * yet (a creation cut short).
   */
  private storedPartition(topic: string, partition: number): { state: StoredPartition | undefined; compares: Compare[] } | null {
    if (!this.entries.has(this.layout.topic(topic))) return null;
    const key = this.layout.partition(topic, partition);
    const own = this.entries.get(key);
    if (own) return { state: parseState(own.value), compares: [[key, 'Mod', own.modRevision]] };
    const legacyKey = this.layout.legacyPartitions(topic);
    const legacy = this.entries.get(legacyKey);
    if (!legacy) return { state: undefined, compares: [[key, 'Create', '0']] };
    let state: StoredPartition | undefined;
    try {
      state = (JSON.parse(legacy.value) as StoredPartition[])[partition];
    } catch {
      state = undefined;
    }
    return { state, compares: [[key, 'Create', '0'], [legacyKey, 'Mod', legacy.modRevision]] };
  }

  /** Each partition of a topic as etcd holds it (a partition without a state yet has none), or null for a topic not in this copy. */
  private storedViews(name: string): { stored: StoredTopic; topicEntry: Entry; partitions: { view: StoredPartitionView | null; compares: Compare[] }[] } | null {
    const topicEntry = this.entries.get(this.layout.topic(name));
    if (!topicEntry) return null;
    const stored = JSON.parse(topicEntry.value) as StoredTopic;
    const partitions = stored.replicas.map((replicas, i) => {
      const sp = this.storedPartition(name, i)!;
      return { view: sp.state ? { replicas, reassigning: stored.reassigning?.[String(i)] ?? null, state: sp.state } : null, compares: sp.compares };
    });
    return { stored, topicEntry, partitions };
  }

  /** An etcd transaction that applies `ops` if every compare holds. */
  private commitIf(compares: readonly Compare[], ops: ReturnType<Etcd3['put']>[] | Parameters<ReturnType<Etcd3['if']>['then']>): ReturnType<ReturnType<ReturnType<Etcd3['if']>['then']>['commit']> {
    const [first, ...rest] = compares;
    let b = this.client.if(first![0], first![1], '==', first![2]);
    for (const [key, column, value] of rest) b = b.and(key, column, '==', value);
    return b.then(...(ops as Parameters<ReturnType<Etcd3['if']>['then']>)).commit();
  }

  /** The topic `name` as the image has it, if it is still the topic `topicId`. */
  private topicNamed(name: string, topicId: string): TopicImage {
    const t = this.current.topics.get(name);
    if (!t || t.topicId !== topicId) throw new UnknownTopicError(`Topic '${name}' was deleted meanwhile.`);
    return t;
  }

  /**
   * Runs `attempt` until it commits (it returns what to resolve with and the
   * revision it wrote at) or throws; after each lost compare-and-swap the copy
   * first catches up with etcd, and so it does before an UnknownTopicError
   * stands.
   */
  private async withRetries<T>(attempt: () => Promise<{ done: T; revision: bigint } | null>): Promise<T> {
    let synced = false;
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      let r: { done: T; revision: bigint } | null;
      try {
        r = await attempt();
      } catch (err) {
        // A topic this broker has not seen yet may exist all the same: say it does not only once caught up.
        if (!(err instanceof UnknownTopicError) || synced) throw err;
        r = null;
      }
      if (r) {
        await this.caughtUp(r.revision);
        return r.done;
      }
      await this.barrier();
      synced = true;
    }
    throw new MetadataUnavailableError(`the change lost ${CAS_ATTEMPTS} times in a row to changes by other brokers`);
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    if (this.closed) throw new MetadataUnavailableError('the metadata store is closed');
    try {
      return await op();
    } catch (err) {
      if (err instanceof MetadataUnavailableError) throw err;
      throw new MetadataUnavailableError(`etcd did not complete the change (${(err as Error).message}); check that etcd is running and reachable`);
    }
  }

  // ------------------------------------------------------------ liveness and the controller

  /** Registers under a new lease; a failed attempt gives its lease back. */
  private async registerUnderNewLease(): Promise<void> {
    const self = this.self!;
    const ttl = Math.max(1, Math.ceil(this.opts.sessionTimeoutMs / 1000));
    const lease = this.client.lease(ttl);
    lease.on('lost', (err: Error) => {
      if (this.closed || this.lease !== lease) return;
      this.opts.log.error({ err: err.message }, 'lost the etcd lease: this broker is no longer registered; registering again');
      this.lease = null;
      void this.reregister();
    });
    const stored = this.storedSelf();
    const key = this.layout.broker(self.nodeId);
    try {
      const c = this.client;
      const value = JSON.stringify(stored);
      let res = await this.call(() => c.if(key, 'Create', '==', 0).then(lease.put(key).value(value)).else(c.get(key)).commit());
      if (!res.succeeded) {
        const kv = res.responses[0]?.response_range.kvs[0];
        let holder: StoredBroker | null = null;
        try {
          holder = kv ? (JSON.parse(decode(kv.value)) as StoredBroker) : null;
        } catch {
          // Not gregor's: another broker's, as far as this one can tell.
        }
        // Gone meanwhile (its lease ran out): the next attempt creates it.
        if (!kv) throw new Error('the registration key went away meanwhile');
        if (holder?.directoryId !== this.directoryId) {
          const where = holder ? holder.endpoints.map((e) => `${e.host}:${e.port}`).join(', ') : 'unknown address';
          throw new NodeIdInUseError(`node.id ${self.nodeId} is registered in etcd by another broker (${where}); give one of the two brokers another node.id`);
        }
        // This broker's own registration under the lease it lost (etcd keeps leases across its own restart):
        // moved to the new lease, with the controller key when that lease held it too, so that the other
        // brokers never see this one go.
        const controllerKey = this.layout.controller();
        const controller = (await this.call(() => c.get(controllerKey).exec())).kvs[0];
        const ours = controller !== undefined && controller.lease === kv.lease;
        let txn = c.if(key, 'Mod', '==', kv.mod_revision);
        if (ours) txn = txn.and(controllerKey, 'Mod', '==', controller.mod_revision);
        const puts = [lease.put(key).value(value)];
        if (ours) puts.push(lease.put(controllerKey).value(decode(controller.value)));
        res = await this.call(() => txn.then(...puts).commit());
        if (!res.succeeded) throw new Error('the registration left by the lost lease changed meanwhile');
        void this.client.leaseClient.leaseRevoke({ ID: kv.lease }).catch(() => undefined);
        this.opts.log.info({ nodeId: self.nodeId, controller: ours }, 'took over this broker\'s registration from its lost lease');
      }
      if (this.leaving) {
        // A controlled shutdown began meanwhile: this broker is leaving, not coming back.
        void lease.revoke().catch(() => undefined);
        return;
      }
      this.lease = lease;
      await this.caughtUp(BigInt(res.header.revision));
    } catch (err) {
      if (this.lease === lease) this.lease = null;
      void lease.revoke().catch(() => undefined);
      throw err;
    }
    await this.campaign();
  }

  /**
   * One loop at a time: registers again until it works. A registration by
   * another broker under this node id is fatal (onFatal): two brokers must
   * never serve as one.
   */
  private reregister(): Promise<void> {
    this.registering ??= (async () => {
      for (let attempt = 0; !this.closed && !this.leaving && !this.lease; attempt++) {
        try {
          await this.registerUnderNewLease();
          this.opts.log.info({ nodeId: this.self!.nodeId, attempts: attempt + 1 }, 'registered in etcd again');
        } catch (err) {
          if (err instanceof NodeIdInUseError) {
            this.opts.log.error({ err: err.message }, 'cannot register again: another broker has this node id; this broker stops');
            this.opts.onFatal?.(err);
            return;
          }
          // Said at the first failure and then every few seconds, not at every try.
          if (attempt % REGISTRATION_FAILURES_PER_WARNING === 0) this.opts.log.warn({ err: (err as Error).message, attempts: attempt + 1 }, 'cannot register in etcd yet; trying again');
          await sleep(RETRY_DELAY_MS);
        }
      }
    })().finally(() => {
      this.registering = null;
    });
    return this.registering;
  }

  /** Tries to become the controller: creates the controller key under this broker's lease if nobody holds it. */
  private async campaign(): Promise<void> {
    const lease = this.lease;
    if (!lease || this.campaigning || this.closed) return;
    this.campaigning = true;
    try {
      const key = this.layout.controller();
      const mine: StoredController = { nodeId: this.self!.nodeId };
      const res = await this.client.if(key, 'Create', '==', 0).then(lease.put(key).value(JSON.stringify(mine))).commit();
      if (res.succeeded) {
        await this.caughtUp(BigInt(res.header.revision));
        this.opts.log.info({ nodeId: mine.nodeId }, 'this broker is the controller');
      }
    } catch (err) {
      this.opts.log.warn({ err: (err as Error).message }, 'could not run for controller; trying again');
      this.retrySoon();
    } finally {
      this.campaigning = false;
    }
  }

  private afterImage(image: MetadataImage): void {
    if (!this.self || this.closed || !this.lease) return;
    if (image.controllerId === -1 && image.brokers.has(this.self.nodeId)) void this.campaign();
    if (image.controllerId === this.self.nodeId) this.elect();
  }

  /** Runs the controller's work again a little later: for when etcd refused it and no image change may come to trigger it. */
  private retrySoon(): void {
    if (this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.afterImage(this.current);
    }, RETRY_DELAY_MS);
    this.retryTimer.unref();
  }

  /** As the controller: elects leaders wherever the live brokers no longer match the partition states. One pass at a time. */
  private elect(): void {
    if (this.electing) {
      this.electAgain = true;
      return;
    }
    this.electing = this.electOnce()
      .catch((err: unknown) => {
        this.opts.log.warn({ err: (err as Error).message }, 'leader election did not complete; trying again');
        this.retrySoon();
      })
      .finally(() => {
        this.electing = null;
        if (this.electAgain && !this.closed) {
          this.electAgain = false;
          this.elect();
        }
      });
  }

  private async electOnce(): Promise<void> {
    const controller = this.entries.get(this.layout.controller());
    if (!controller) return;
    const live = new Set(this.current.brokers.keys());
    const down = offlineReplicaSets(this.current.brokers.values());
    for (const name of [...this.current.topics.keys()]) {
      const views = this.storedViews(name);
      if (!views) continue;
      const { stored } = views;
      // A partition without a state (its topic's creation was cut short) gets a new one.
      const before = views.partitions.map((p, i) => p.view?.state ?? initialState(stored.replicas[i]!, live));
      const offline = (partition: number, replica: number): boolean => down.get(replica)?.has(`${stored.topicId}:${partition}`) === true;
      const states = [...(electLeaders(before, stored.replicas, live, offline) ?? before)];
      // Reassignments whose target replicas are all in sync now: the replicas being removed go.
      const completedAs = new Map<number, StoredPartitionView>();
      for (const [key, moving] of Object.entries(stored.reassigning ?? {})) {
        const i = Number(key);
        const done = completeReassignment({ replicas: stored.replicas[i]!, reassigning: moving, state: states[i]! }, live);
        if (!done) continue;
        completedAs.set(i, done);
        states[i] = done.state;
      }
      // Written: what changed, what had no state, and what still sits in the older layout's list.
      const changed = states.flatMap((st, i) => (st !== views.partitions[i]!.view?.state || views.partitions[i]!.compares[0]![1] === 'Create' ? [i] : []));
      const c = this.client;
      const controllerGuard: Compare = [this.layout.controller(), 'Mod', controller.modRevision];
      const legacyKey = this.layout.legacyPartitions(name);
      const legacy = this.entries.get(legacyKey);
      if (changed.length === 0) {
        if (legacy) await this.commitIf([controllerGuard, [legacyKey, 'Mod', legacy.modRevision]], [c.delete().key(legacyKey)]);
        continue;
      }
      // A pass writes one transaction's worth per topic; the next pass (after the watch brings this one) the rest.
      const piece = changed.slice(0, MAX_PARTITIONS_PER_TXN - 1);
      if (piece.length < changed.length) this.electAgain = true;
      // Only while this broker still holds the controller key it read, and the keys are as it read them.
      const compares: Compare[] = [controllerGuard, ...piece.flatMap((i) => views.partitions[i]!.compares)];
      const ops = piece.map((i) => c.put(this.layout.partition(name, i)).value(JSON.stringify(states[i])));
      const completed = piece.filter((i) => completedAs.has(i));
      if (completed.length > 0) {
        const replicas = [...stored.replicas];
        const reassigning: Record<string, Reassignment> = { ...stored.reassigning };
        for (const i of completed) {
          replicas[i] = completedAs.get(i)!.replicas;
          delete reassigning[String(i)];
        }
        const topicKey = this.layout.topic(name);
        compares.push([topicKey, 'Mod', views.topicEntry.modRevision]);
        const newTopic: StoredTopic = { topicId: stored.topicId, replicas, ...(Object.keys(reassigning).length > 0 ? { reassigning } : {}) };
        ops.push(c.put(topicKey).value(JSON.stringify(newTopic)));
      }
      const res = await this.commitIf(dedupe(compares), ops);
      if (!res.succeeded) continue;
      const elected = piece.filter((i) => states[i]!.leader !== views.partitions[i]!.view?.state.leader);
      if (elected.length > 0) this.opts.log.info({ topic: name, partitions: elected, live: [...live] }, 'elected partition leaders');
      if (completed.length > 0) this.opts.log.info({ topic: name, partitions: completed }, 'partition reassignments completed');
    }
  }

  /** As the controller, every leader.imbalance.check.interval.seconds: preferred replicas in sync lead again. */
  private async rebalanceLeaders(): Promise<void> {
    if (this.closed || this.leaving || !this.lease || !this.self || this.current.controllerId !== this.self.nodeId) return;
    const live = new Set(this.current.brokers.keys());
    const topics: { name: string; partitions: StoredPartitionView[] }[] = [];
    const stateless: StoredPartitionView = { replicas: [], reassigning: null, state: { leader: -1, leaderEpoch: 0, partitionEpoch: 0, isr: [] } };
    for (const name of this.current.topics.keys()) {
      const views = this.storedViews(name);
      if (views) topics.push({ name, partitions: views.partitions.map((p) => p.view ?? stateless) });
    }
    const imbalanced = imbalancedPartitions(topics, live);
    if (imbalanced.length === 0) return;
    this.opts.log.info({ partitions: imbalanced.length }, 'auto leader rebalance: preferred replicas lead again');
    await this.electLeaders('preferred', imbalanced);
  }
}

/** A compare of an etcd transaction: the key, what of it, and the value it must equal. */
type Compare = [key: string, column: 'Mod' | 'Create', value: string];

interface IsrChange {
  readonly topic: string;
  readonly partition: number;
  readonly leaderEpoch: number;
  readonly baseIsr: readonly number[];
  readonly isr: readonly number[];
  /** Transactions it was in that lost a compare-and-swap (to another partition's change, or its own). */
  attempts: number;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

function sameSet(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((r) => b.includes(r));
}

/** `compares` without repeats of a key (several partitions of the older layout share its key). */
function dedupe(compares: readonly Compare[]): Compare[] {
  const seen = new Set<string>();
  return compares.filter(([key]) => !seen.has(key) && seen.add(key) !== undefined);
}

function parseState(value: string): StoredPartition | undefined {
  try {
    return JSON.parse(value) as StoredPartition;
  } catch {
    return undefined;
  }
}

function entryOf(kv: IKeyValue): Entry {
  return { value: decode(kv.value), createRevision: kv.create_revision, modRevision: kv.mod_revision, lease: kv.lease };
}

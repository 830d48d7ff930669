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
import { createRequire } from 'node:module';
import type { Etcd3, IKeyValue, IWatchResponse, Lease, Watcher } from 'etcd3';
import { randomUuid } from '../wire/uuid.js';
import {
  type Entry,
  EtcdLayout,
  type StoredBroker,
  type StoredController,
  type StoredPartition,
  type StoredTopic,
  assignReplicas,
  electLeaders,
  imageFromEntries,
} from './etcd-layout.js';
import {
  type BrokerRegistration,
  type DynamicBrokerConfigs,
  type MetadataImage,
  type MetadataStore,
  type NewTopic,
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
  /** How long one etcd call may take before it fails. */
  readonly callTimeoutMs?: number;
  readonly log: EtcdStoreLogger;
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
/** Between two tries to register again after the lease was lost. */
const REREGISTER_DELAY_MS = 500;

const WATCH_BACKOFF_MIN_MS = 50;
const WATCH_BACKOFF_MAX_MS = 1000;

const decode = (b: Buffer): string => b.toString('utf8');

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
  private readonly waiters: { revision: bigint; resolve: () => void }[] = [];
  private readonly listeners = new Set<(image: MetadataImage) => void>();
  private watcher: Watcher | null = null;
  private lease: Lease | null = null;
  private self: BrokerRegistration | null = null;
  private directoryId = '';
  private closed = false;
  private campaigning = false;
  private electing: Promise<void> | null = null;
  private electAgain = false;

  private constructor(
    private readonly client: Etcd3,
    private readonly layout: EtcdLayout,
    private readonly opts: EtcdStoreOptions,
    readonly clusterId: string,
  ) {
    this.current = imageFromEntries(layout, this.entries);
  }

  /**
   * Connects, reads the cluster id (writing `proposedClusterId` when etcd has
   * none yet), loads every key under the root and starts watching them. The
   * broker is not registered yet: see register().
   */
  static async connect(opts: EtcdStoreOptions, proposedClusterId: string): Promise<EtcdMetadataStore> {
    const { Etcd3 } = load('etcd3') as typeof import('etcd3');
    const callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const client = new Etcd3({
      hosts: opts.endpoints.map((e) => `http://${e}`),
      dialTimeout: callTimeoutMs,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + callTimeoutMs }),
      // The watch comes back within a second of etcd, not after the client's default of up to 30 s.
      faultHandling: { watchBackoff: new CappedBackoff(WATCH_BACKOFF_MIN_MS) as never },
    });
    const layout = new EtcdLayout(opts.root ?? DEFAULT_ROOT);
    try {
      const key = layout.clusterId();
      const res = await client.if(key, 'Create', '==', 0).then(client.put(key).value(proposedClusterId)).else(client.get(key)).commit();
      const clusterId = res.succeeded ? proposedClusterId : decode(res.responses[0]!.response_range.kvs[0]!.value);
      const store = new EtcdMetadataStore(client, layout, opts, clusterId);
      await store.loadAndWatch();
      return store;
    } catch (err) {
      client.close();
      throw unavailable(err, `cannot reach etcd at ${opts.endpoints.join(',')}`);
    }
  }

  image(): MetadataImage {
    return this.current;
  }

  subscribe(listener: (image: MetadataImage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Registers this broker under a new lease and joins the race for controller;
   * resolves once the image lists the broker. A registration left by this
   * broker's own earlier run (same data directory) is replaced; one by another
   * broker fails with NodeIdInUseError.
   */
  async register(self: BrokerRegistration, directoryId: string): Promise<void> {
    this.self = self;
    this.directoryId = directoryId;
    const key = this.layout.broker(self.nodeId);
    const existing = this.entries.get(key);
    if (existing) {
      const other = JSON.parse(existing.value) as StoredBroker;
      if (other.directoryId !== directoryId) {
        throw new NodeIdInUseError(
          `node.id ${self.nodeId} is already registered in etcd by a running broker (${other.endpoints.map((e) => `${e.host}:${e.port}`).join(', ')}); give this broker another node.id`,
        );
      }
      // Our own registration from before a restart, whose lease has not run out yet.
      await this.client.if(key, 'Mod', '==', existing.modRevision).then(this.client.delete().key(key)).commit();
    }
    await this.registerUnderNewLease();
  }

  async createTopic(topic: NewTopic): Promise<TopicImage> {
    const name = topic.name;
    const live = [...this.current.brokers.keys()];
    const replicas = topic.assignments
      ? topic.assignments.map((r) => [...r])
      : assignReplicas(live, topic.numPartitions, topic.replicationFactor, Math.floor(Math.random() * Math.max(1, live.length)), 0);
    let topicId = randomUuid();
    while (this.current.topicsById.has(topicId)) topicId = randomUuid();
    const stored: StoredTopic = { topicId, replicas };
    const topicKey = this.layout.topic(name);
    const nameKey = this.layout.topicName(collisionKey(name));
    const c = this.client;
    const puts = [
      c.put(topicKey).value(JSON.stringify(stored)),
      c.put(nameKey).value(JSON.stringify({ name })),
      c.put(this.layout.partitions(name)).value(JSON.stringify(replicas.map(initialState))),
    ];
    if (topic.configs && Object.keys(topic.configs).length > 0) puts.push(c.put(this.layout.topicConfigs(name)).value(JSON.stringify(topic.configs)));
    const res = await this.call(() => c.if(topicKey, 'Create', '==', 0).and(nameKey, 'Create', '==', 0).then(...puts).else(c.get(nameKey)).commit());
    if (!res.succeeded) {
      await this.barrier();
      const holder = res.responses[0]?.response_range.kvs[0];
      const clash = holder ? (JSON.parse(decode(holder.value)) as { name: string }).name : name;
      throw new TopicExistsError(clash === name ? `Topic '${name}' already exists.` : `Topic '${name}' collides with existing topic '${clash}'.`);
    }
    await this.caughtUp(BigInt(res.header.revision));
    return this.current.topics.get(name)!;
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
            c.delete().key(this.layout.partitions(gone.name)),
            c.delete().key(this.layout.topicConfigs(gone.name)),
            c.delete().key(this.layout.topicName(collisionKey(gone.name))),
          )
          .commit(),
      );
      return res.succeeded ? { done: gone, revision: BigInt(res.header.revision) } : null;
    });
  }

  async createPartitions(name: string, count: number, assignments?: readonly (readonly number[])[]): Promise<TopicImage> {
    return this.withRetries(async () => {
      const topicKey = this.layout.topic(name);
      const partsKey = this.layout.partitions(name);
      const topicEntry = this.entries.get(topicKey);
      const partsEntry = this.entries.get(partsKey);
      if (!topicEntry || !partsEntry) throw new UnknownTopicError(`Topic '${name}' does not exist.`);
      const stored = JSON.parse(topicEntry.value) as StoredTopic;
      const states = JSON.parse(partsEntry.value) as StoredPartition[];
      const have = stored.replicas.length;
      if (!Number.isInteger(count) || count <= have) throw new RangeError(`topic '${name}' has ${have} partitions; ${count} is not an increase`);
      if (assignments && assignments.length !== count - have) throw new RangeError(`${count - have} new partitions but ${assignments.length} assignments`);
      const live = [...this.current.brokers.keys()];
      const rf = stored.replicas[0]?.length ?? 1;
      const added = assignments
        ? assignments.map((r) => [...r])
        : assignReplicas(live, count - have, Math.min(rf, live.length), Math.floor(Math.random() * Math.max(1, live.length)), have);
      const c = this.client;
      const res = await this.call(() =>
        c
          .if(topicKey, 'Mod', '==', topicEntry.modRevision)
          .and(partsKey, 'Mod', '==', partsEntry.modRevision)
          .then(
            c.put(topicKey).value(JSON.stringify({ ...stored, replicas: [...stored.replicas, ...added] })),
            c.put(partsKey).value(JSON.stringify([...states, ...added.map(initialState)])),
          )
          .commit(),
      );
      return res.succeeded ? { done: name, revision: BigInt(res.header.revision) } : null;
    }).then((n) => this.current.topics.get(n)!);
  }

  async alterTopicConfigs(name: string, configs: Readonly<Record<string, string>>): Promise<TopicImage> {
    return this.withRetries(async () => {
      const topicKey = this.layout.topic(name);
      const topicEntry = this.entries.get(topicKey);
      if (!topicEntry) throw new UnknownTopicError(`The topic '${name}' does not exist.`);
      const c = this.client;
      const configsKey = this.layout.topicConfigs(name);
      const change = Object.keys(configs).length === 0 ? c.delete().key(configsKey) : c.put(configsKey).value(JSON.stringify(configs));
      const res = await this.call(() => c.if(topicKey, 'Mod', '==', topicEntry.modRevision).then(change).commit());
      return res.succeeded ? { done: name, revision: BigInt(res.header.revision) } : null;
    }).then((n) => this.current.topics.get(n)!);
  }

  async alterBrokerConfigs(nodeId: number | null, configs: Readonly<Record<string, string>>): Promise<DynamicBrokerConfigs> {
    const key = this.layout.brokerConfigs(nodeId);
    const c = this.client;
    const res = await this.call<{ header: { revision: string } }>(() =>
      Object.keys(configs).length === 0 ? c.delete().key(key).exec() : c.put(key).value(JSON.stringify(configs)).exec(),
    );
    await this.caughtUp(BigInt(res.header.revision));
    return this.current.dynamicBrokerConfigs;
  }

  async allocateProducerIdBlock(): Promise<{ firstProducerId: bigint; size: number }> {
    const key = this.layout.producerIds();
    const c = this.client;
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
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

  /** Deregisters (other brokers see this broker go at once, not when its lease runs out) and disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    for (const w of this.waiters.splice(0)) w.resolve();
    const watcher = this.watcher;
    this.watcher = null;
    await watcher?.cancel().catch(() => undefined);
    const lease = this.lease;
    this.lease = null;
    await lease?.revoke().catch(() => undefined);
    this.client.close();
  }

  // ------------------------------------------------------------ the copy

  private async loadAndWatch(): Promise<void> {
    const snapshot = await this.client.getAll().prefix(this.layout.root).exec();
    this.entries.clear();
    for (const kv of snapshot.kvs) this.entries.set(decode(kv.key), entryOf(kv));
    const revision = BigInt(snapshot.header.revision);
    if (revision > this.applied) this.applied = revision;
    this.publish();
    const watcher = await this.client.watch().prefix(this.layout.root).startRevision(String(revision + 1n)).create();
    if (this.closed) {
      await watcher.cancel();
      return;
    }
    this.watcher = watcher;
    watcher.on('data', (res: IWatchResponse) => this.onWatch(res));
    watcher.on('disconnected', (err: Error) => this.opts.log.warn({ err: err.message }, 'lost the watch on etcd; the metadata image stays as it was until it is back'));
    watcher.on('connected', () => this.opts.log.info({}, 'watching etcd'));
    watcher.on('error', (err: Error) => {
      // The watch was cancelled by etcd (its revision compacted away, for one): read everything again.
      this.opts.log.warn({ err: err.message }, 'the etcd watch ended; reading the metadata again');
      if (this.watcher === watcher) this.watcher = null;
      void watcher.cancel().catch(() => undefined);
      void this.reloadUntilDone();
    });
  }

  private async reloadUntilDone(): Promise<void> {
    while (!this.closed) {
      try {
        await this.loadAndWatch();
        return;
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message }, 'cannot read the metadata from etcd yet; trying again');
        await sleep(REREGISTER_DELAY_MS);
      }
    }
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
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (w.revision <= this.applied) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  private publish(): void {
    this.current = imageFromEntries(this.layout, this.entries);
    const image = this.current;
    for (const l of [...this.listeners]) l(image);
    this.afterImage(image);
  }

  /** Resolves once the watch has applied `revision`. */
  private caughtUp(revision: bigint): Promise<void> {
    if (revision <= this.applied || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ revision, resolve }));
  }

  /** Writes this broker's barrier key and waits for the watch to bring it back: the copy is then as new as etcd was. */
  private async barrier(): Promise<void> {
    const id = this.self?.nodeId ?? -1;
    const res = await this.call(() => this.client.put(this.layout.barrier(id < 0 ? 0 : id)).value(randomUuid()).exec());
    await this.caughtUp(BigInt(res.header.revision));
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
      throw unavailable(err, 'etcd did not complete the change');
    }
  }

  // ------------------------------------------------------------ liveness and the controller

  private async registerUnderNewLease(): Promise<void> {
    const self = this.self!;
    const ttl = Math.max(1, Math.ceil(this.opts.sessionTimeoutMs / 1000));
    const lease = this.client.lease(ttl);
    this.lease = lease;
    lease.on('lost', (err: Error) => {
      if (this.closed || this.lease !== lease) return;
      this.opts.log.error({ err: err.message }, 'lost the etcd lease: this broker is no longer registered; registering again');
      void this.reregister();
    });
    const stored: StoredBroker = { rack: self.rack, endpoints: self.endpoints, directoryId: this.directoryId };
    const key = this.layout.broker(self.nodeId);
    const res = await this.call(() =>
      this.client.if(key, 'Create', '==', 0).then(lease.put(key).value(JSON.stringify(stored))).commit(),
    );
    if (!res.succeeded) throw new NodeIdInUseError(`node.id ${self.nodeId} was registered in etcd by another broker just now; give this broker another node.id`);
    await this.caughtUp(BigInt(res.header.revision));
    await this.campaign();
  }

  private async reregister(): Promise<void> {
    while (!this.closed) {
      try {
        await this.registerUnderNewLease();
        this.opts.log.info({ nodeId: this.self!.nodeId }, 'registered in etcd again');
        return;
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message }, 'cannot register in etcd yet; trying again');
        await sleep(REREGISTER_DELAY_MS);
      }
    }
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
      this.opts.log.warn({ err: (err as Error).message }, 'could not run for controller; will try when the image changes');
    } finally {
      this.campaigning = false;
    }
  }

  private afterImage(image: MetadataImage): void {
    if (!this.self || this.closed) return;
    if (image.controllerId === -1 && image.brokers.has(this.self.nodeId)) void this.campaign();
    if (image.controllerId === this.self.nodeId) this.elect();
  }

  /** As the controller: elects leaders wherever the live brokers no longer match the partition states. One pass at a time. */
  private elect(): void {
    if (this.electing) {
      this.electAgain = true;
      return;
    }
    this.electing = this.electOnce()
      .catch((err: unknown) => this.opts.log.warn({ err: (err as Error).message }, 'leader election did not complete; will try when the image changes'))
      .finally(() => {
        this.electing = null;
        if (this.electAgain && !this.closed) {
          this.electAgain = false;
          this.elect();
        }
      });
  }

  private async electOnce(): Promise<void> {
    const live = new Set(this.current.brokers.keys());
    for (const name of this.current.topics.keys()) {
      const topicEntry = this.entries.get(this.layout.topic(name));
      const partsKey = this.layout.partitions(name);
      const partsEntry = this.entries.get(partsKey);
      if (!topicEntry || !partsEntry) continue;
      const stored = JSON.parse(topicEntry.value) as StoredTopic;
      const next = electLeaders(JSON.parse(partsEntry.value) as StoredPartition[], stored.replicas, live);
      if (!next) continue;
      const c = this.client;
      const res = await c.if(partsKey, 'Mod', '==', partsEntry.modRevision).then(c.put(partsKey).value(JSON.stringify(next))).commit();
      if (res.succeeded) this.opts.log.info({ topic: name, live: [...live] }, 'elected partition leaders');
    }
  }
}

/** A new partition's state: its first replica leads, alone in the ISR until followers replicate it. */
function initialState(replicas: readonly number[]): StoredPartition {
  return { leader: replicas[0] ?? -1, leaderEpoch: 0, partitionEpoch: 0, isr: replicas.length > 0 ? [replicas[0]!] : [] };
}

function entryOf(kv: IKeyValue): Entry {
  return { value: decode(kv.value), modRevision: kv.mod_revision };
}

function unavailable(err: unknown, what: string): Error {
  if (err instanceof MetadataUnavailableError || err instanceof NodeIdInUseError) return err;
  return new MetadataUnavailableError(`${what}: ${(err as Error).message}; check that etcd is running and reachable`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

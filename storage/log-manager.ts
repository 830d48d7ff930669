/**
 * The owner of every partition log in one data directory, in Kafka's layout:
 * partition `p` of topic `t` lives in the directory `<t>-<p>` (topic names
 * may contain '-', the partition is what follows the last one).
 *
 * Besides opening, creating and deleting logs, the manager runs the
 * background work Kafka's LogManager runs, each on its own unref'd timer
 * (started by `start()`, stopped by `close()`), with Kafka's broker config
 * names:
 *
 * - `log.retention.check.interval.ms`: deleteOldSegments on every log;
 * - `log.flush.scheduler.interval.ms`: flushIfDue on the logs whose flush.ms
 *   is finite (Kafka's default never runs the scheduler; here it ticks once
 *   a second, and a log with flush.ms at its default is never looked at);
 * - `log.cleaner.backoff.ms`: compaction of the logs whose cleanup.policy
 *   includes `compact`, a bounded number of cleaner steps per tick. While a
 *   pass has work left the next tick follows at once (after the event loop
 *   has served what waits), so appends are never held up for longer than
 *   those few steps; when nothing is left to clean the cleaner sleeps for
 *   the backoff;
 * - `log.flush.offset.checkpoint.interval.ms`: checkpoints every log;
 * - `producerIdExpirationCheckIntervalMs` (Kafka's
 *   producer.id.expiration.check.interval.ms): removeExpiredProducers on
 *   every log, forgetting producers idle for `producerIdExpirationMs`
 *   (producer.id.expiration.ms).
 *
 * The cleaner's progress survives restarts as in Kafka: each finished pass
 * records the log's first dirty offset in `cleaner-offset-checkpoint` in
 * the data directory (`topic partition offset` lines, written atomically),
 * and a cleaner made after a restart resumes from it (see LogCleaner's
 * constructor for the clamping). An entry goes when its partition is
 * deleted, and is dropped, leaving the whole log dirty, when the log is
 * found truncated since it was written (at the next cleaner tick, a config
 * change or close) or ends below it when opened.
 *
 * A log whose I/O fails goes offline (see PartitionLog): it is logged once,
 * skipped from then on, and never stops the timers or the other logs.
 *
 * Deleting a partition renames its directory to
 * `<t>-<p>.<uuid>-delete` at once, so the name is free for a new log, and
 * removes the renamed directory file.delete.delay.ms later, in the
 * background. Directories left with that suffix by an earlier run are
 * removed once `start()` is called.
 *
 * Everything but the removal of deleted directories is synchronous, like
 * the logs themselves: a timer tick runs between two requests, never inside
 * one.
 */
import { join } from 'node:path';
import { crypto, fsPromises } from '../wire/builtins.js';
import { readCleanerOffsetCheckpoint, type TopicPartitionOffset, writeCleanerOffsetCheckpoint } from './checkpoint.js';
import { LogCleaner, type CleanStep } from './cleaner.js';
import { type Fs, nodeFs } from './fs.js';
import type { LogConfig } from './log-config.js';
import { CLEAN_SHUTDOWN_FILE, type OpenOptions, PartitionLog, StorageError } from './log.js';

/** The little of a logger the manager needs; a pino logger fits. */
export interface LogManagerLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface LogManagerOptions {
  /** The config of a log whose topic has no config of its own (the broker's log.* settings). */
  defaults: LogConfig;
  /** Configs of topics known when the manager opens, by topic name; `updateConfig` changes them later. */
  topicConfigs?: ReadonlyMap<string, LogConfig>;
  fs?: Fs;
  /** Milliseconds since the epoch; tests inject a clock. */
  now?: () => number;
  log?: LogManagerLogger;
  /** How often retention runs over every log. Kafka's default: 300000. */
  'log.retention.check.interval.ms'?: number;
  /** How often logs with a finite flush.ms are checked for a due flush. Default here: 1000. */
  'log.flush.scheduler.interval.ms'?: number;
  /** How long the cleaner sleeps when no log has anything to clean. Kafka's default: 15000. */
  'log.cleaner.backoff.ms'?: number;
  /** Whether compaction runs at all. Kafka's default: true. */
  'log.cleaner.enable'?: boolean;
  /** How often every log writes its checkpoint. Kafka's default: 60000. */
  'log.flush.offset.checkpoint.interval.ms'?: number;
  /** Cleaner steps (one segment mapped or one group rewritten) per tick, over all logs. Default: 4. */
  cleanerStepsPerTick?: number;
  /** producer.id.expiration.ms for every log: how long an idle producer with no open transaction is remembered. Kafka's default: 86400000. */
  producerIdExpirationMs?: number;
  /** producer.id.expiration.check.interval.ms: how often expired producers are removed. Kafka's default: 600000. */
  producerIdExpirationCheckIntervalMs?: number;
}

export interface ManagedLog {
  readonly topic: string;
  readonly partition: number;
  readonly log: PartitionLog;
}

interface Entry {
  readonly key: string;
  readonly topic: string;
  readonly partition: number;
  readonly dir: string;
  log: PartitionLog;
  /** Created when the log is first compacted; dropped when the log is reopened. */
  cleaner: LogCleaner | null;
  /** log.truncations when the cleaner checkpoint last took this log into account. */
  cleanerTruncationsSeen: number;
  /** The cleaner failed on this log for a reason other than I/O; it is not cleaned again until reopened. */
  uncleanable: boolean;
  /** Its going offline has been logged. */
  offlineReported: boolean;
}

const LEGAL_TOPIC = /^[a-zA-Z0-9._-]+$/;
const MAX_TOPIC_LENGTH = 249;
const PARTITION_DIR = /^(.+)-(0|[1-9]\d{0,9})$/;
const DELETE_SUFFIX = '-delete';
const DELETE_DIR = /^(.+)-(0|[1-9]\d{0,9})\.([0-9a-f]{32})-delete$/;
const MAX_PARTITION = 0x7fffffff;

const noopLogger: LogManagerLogger = { warn: () => {}, info: () => {} };

function topicProblem(topic: string): string | null {
  if (topic.length === 0) return 'topic name is empty';
  if (topic === '.' || topic === '..') return `topic name cannot be "${topic}"`;
  if (topic.length > MAX_TOPIC_LENGTH) return `topic name is longer than ${MAX_TOPIC_LENGTH} characters`;
  if (!LEGAL_TOPIC.test(topic)) return `topic name "${topic}" may contain only ASCII letters, digits, '.', '_' and '-'`;
  return null;
}

function checkPartitionName(topic: string, partition: number): void {
  const problem = topicProblem(topic);
  if (problem !== null) throw new RangeError(problem);
  if (!Number.isInteger(partition) || partition < 0 || partition > MAX_PARTITION) {
    throw new RangeError(`partition ${partition} is not a partition number`);
  }
}

/**
 * The topic and partition a directory name stands for, or null when it is
 * not a partition directory. The partition is what follows the last '-'.
 *
 * Example: parsePartitionDirName('my-topic-12') -> { topic: 'my-topic',
 * partition: 12 }; parsePartitionDirName('t-0.0123...-delete') -> null.
 */
export function parsePartitionDirName(name: string): { topic: string; partition: number } | null {
  const m = PARTITION_DIR.exec(name);
  if (!m) return null;
  const partition = Number(m[2]);
  if (partition > MAX_PARTITION || topicProblem(m[1]!) !== null) return null;
  return { topic: m[1]!, partition };
}

/** The directory name of a partition. Example: partitionDirName('my-topic', 3) -> 'my-topic-3'. */
export function partitionDirName(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

function sameConfig(a: LogConfig, b: LogConfig): boolean {
  if (a === b) return true;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof LogConfig>;
  for (const k of keys) {
    const x = a[k];
    const y = b[k];
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length || x.some((v, i) => v !== y[i])) return false;
    } else if (x !== y) return false;
  }
  return true;
}

function flushMsFinite(config: LogConfig): boolean {
  return Number.isFinite(config.flushMs) && config.flushMs < Number.MAX_SAFE_INTEGER;
}

export class LogManager {
  private readonly entries = new Map<string, Entry>();
  private readonly topicConfigs: Map<string, LogConfig>;
  private readonly fs: Fs;
  private readonly now: () => number;
  private readonly logger: LogManagerLogger;
  private readonly retentionCheckMs: number;
  private readonly flushCheckMs: number;
  private readonly cleanerBackoffMs: number;
  private readonly cleanerEnabled: boolean;
  private readonly checkpointMs: number;
  private readonly cleanerStepsPerTick: number;
  private readonly producerIdExpirationMs: number;
  private readonly producerExpirationCheckMs: number;
  private readonly intervals: NodeJS.Timeout[] = [];
  private cleanerTimer: NodeJS.Timeout | null = null;
  /** The log the cleaner was working on when its last tick ran out of steps. */
  private cleanerResumeKey: string | null = null;
  /** The cleaner checkpoint as written: first dirty offset by partition directory name. */
  private readonly cleanerOffsets = new Map<string, bigint>();
  /** Renamed directories waiting for file.delete.delay.ms, by path. */
  private readonly delayedDeletes = new Map<string, NodeJS.Timeout>();
  /** Removals under way. */
  private readonly runningDeletes = new Set<Promise<void>>();
  /** `-delete` directories found at open, removed once started. */
  private leftoverDeletes: string[] = [];
  private started = false;
  private closed = false;

  private constructor(
    readonly dataDir: string,
    readonly defaults: LogConfig,
    opts: LogManagerOptions,
  ) {
    this.fs = opts.fs ?? nodeFs;
    this.now = opts.now ?? Date.now;
    this.logger = opts.log ?? noopLogger;
    this.topicConfigs = new Map(opts.topicConfigs ?? []);
    this.retentionCheckMs = positive(opts['log.retention.check.interval.ms'] ?? 300000, 'log.retention.check.interval.ms');
    this.flushCheckMs = positive(opts['log.flush.scheduler.interval.ms'] ?? 1000, 'log.flush.scheduler.interval.ms');
    this.cleanerBackoffMs = positive(opts['log.cleaner.backoff.ms'] ?? 15000, 'log.cleaner.backoff.ms');
    this.cleanerEnabled = opts['log.cleaner.enable'] ?? true;
    this.checkpointMs = positive(opts['log.flush.offset.checkpoint.interval.ms'] ?? 60000, 'log.flush.offset.checkpoint.interval.ms');
    this.cleanerStepsPerTick = Math.max(1, Math.floor(opts.cleanerStepsPerTick ?? 4));
    this.producerIdExpirationMs = opts.producerIdExpirationMs ?? 86400000;
    if (!Number.isFinite(this.producerIdExpirationMs) || this.producerIdExpirationMs <= 0) {
      throw new RangeError(`producerIdExpirationMs must be a positive number of milliseconds, not ${this.producerIdExpirationMs}`);
    }
    this.producerExpirationCheckMs = positive(opts.producerIdExpirationCheckIntervalMs ?? 600000, 'producerIdExpirationCheckIntervalMs');
  }

  /**
   * Opens every partition log in `dataDir` (creating the directory when
   * missing); a log that was not closed cleanly recovers. Entries that are
   * not partition directories are left alone. A log that cannot be opened
   * (an I/O error: recovery itself copes with torn and corrupt data) fails
   * the whole open, as a log directory with an unreadable log goes offline
   * in Kafka, after closing the logs opened so far.
   *
   * Example: a data directory holding `orders-0`, `my-topic-3` and
   * `meta.properties` opens with logs for ('orders', 0) and ('my-topic', 3).
   */
  static open(dataDir: string, opts: LogManagerOptions): LogManager {
    const manager = new LogManager(dataDir, opts.defaults, opts);
    const fs = manager.fs;
    fs.mkdir(dataDir);
    let recovered = 0;
    try {
      for (const name of fs.readdir(dataDir).sort()) {
        if (DELETE_DIR.test(name)) {
          manager.leftoverDeletes.push(join(dataDir, name));
          continue;
        }
        const parsed = parsePartitionDirName(name);
        if (parsed === null) continue;
        const dir = join(dataDir, name);
        if (!isDirectory(fs, dir)) continue;
        const clean = fs.exists(join(dir, CLEAN_SHUTDOWN_FILE));
        let log: PartitionLog;
        try {
          log = PartitionLog.open(dir, manager.configFor(parsed.topic), manager.openOptions());
        } catch (err) {
          throw new StorageError(`cannot open the log of ${name} in ${dataDir}: ${(err as Error).message}`, { cause: err });
        }
        if (!clean) {
          recovered++;
          manager.logger.info({ topic: parsed.topic, partition: parsed.partition, logEndOffset: String(log.logEndOffset) }, 'recovered log after unclean shutdown');
        }
        manager.add(parsed.topic, parsed.partition, dir, log);
      }
      manager.loadCleanerCheckpoint();
    } catch (err) {
      manager.closeLogs();
      throw err;
    }
    manager.logger.info({ dataDir, logs: manager.entries.size, recovered }, 'logs loaded');
    return manager;
  }

  /** The log of a partition, or undefined when this directory holds none. */
  get(topic: string, partition: number): PartitionLog | undefined {
    return this.entries.get(partitionDirName(topic, partition))?.log;
  }

  /**
   * The log of a partition, created empty when missing, with `config`, else
   * the topic's config (from `topicConfigs` or `updateConfig`), else the
   * defaults. An existing log keeps its config.
   *
   * Example: getOrCreate('orders', 0) on a new data directory creates
   * `orders-0` and returns a log with logEndOffset 0n; a second call
   * returns the same log.
   */
  getOrCreate(topic: string, partition: number, config?: LogConfig): PartitionLog {
    const r = this.getOrCreateMany([{ topic, partition, config }])[0]!;
    if (r instanceof Error) throw r;
    return r;
  }

  /**
   * getOrCreate for several partitions, with one sync of the data directory
   * for all the logs it creates rather than one each (creating a topic of
   * 10,000 partitions). Answers in order, each the log or why it could not be
   * opened; when that one sync fails, every log it created is closed again and
   * answered with the error.
   *
   * Example: getOrCreateMany([{ topic: 'orders', partition: 0 }, { topic:
   * 'orders', partition: 1 }]) -> two empty logs, one directory sync.
   */
  getOrCreateMany(parts: readonly { topic: string; partition: number; config?: LogConfig }[]): (PartitionLog | Error)[] {
    this.checkOpen();
    const out: (PartitionLog | Error)[] = [];
    const created: { index: number; name: string; dir: string; topic: string; partition: number }[] = [];
    for (const { topic, partition, config } of parts) {
      try {
        checkPartitionName(topic, partition);
        const name = partitionDirName(topic, partition);
        const existing = this.entries.get(name);
        if (existing) {
          out.push(existing.log);
          continue;
        }
        const dir = join(this.dataDir, name);
        const log = PartitionLog.open(dir, config ?? this.configFor(topic), this.openOptions());
        created.push({ index: out.length, name, dir, topic, partition });
        out.push(log);
        // Listed at once, so that a partition named twice gets the same log.
        this.add(topic, partition, dir, log);
      } catch (err) {
        out.push(err as Error);
      }
    }
    if (created.length === 0) return out;
    try {
      this.fs.syncDir(this.dataDir);
    } catch (err) {
      const failed = new Map<PartitionLog, StorageError>();
      for (const c of created) {
        const log = out[c.index] as PartitionLog;
        this.entries.delete(c.name);
        try {
          log.close();
        } catch {
          // already failing: the sync error is the one to report
        }
        failed.set(log, new StorageError(`cannot sync ${this.dataDir} after creating ${c.name}: ${(err as Error).message}`, { cause: err }));
      }
      // A partition named twice got the same new log at both places.
      return out.map((r) => (r instanceof Error ? r : (failed.get(r) ?? r)));
    }
    let cleanerChanged = false;
    // A checkpoint entry can only be a leftover of an earlier log of that name.
    for (const c of created) if (this.cleanerOffsets.delete(c.name)) cleanerChanged = true;
    if (cleanerChanged) this.writeCleanerCheckpoint();
    return out;
  }

  /** Every log, in no particular order. */
  all(): ManagedLog[] {
    return [...this.entries.values()].map(({ topic, partition, log }) => ({ topic, partition, log }));
  }

  /**
   * Closes the partition's log and renames its directory to
   * `<topic>-<partition>.<uuid>-delete` (the name is free again at once);
   * the renamed directory is removed file.delete.delay.ms later. Returns
   * false when there was no such log. A failed rename throws; the
   * directory then stays where it was and is opened again on restart.
   *
   * Example: delete('orders', 0) -> true; get('orders', 0) -> undefined,
   * and getOrCreate('orders', 0) makes a new empty log.
   */
  delete(topic: string, partition: number): boolean {
    this.checkOpen();
    const name = partitionDirName(topic, partition);
    const entry = this.entries.get(name);
    if (!entry) return false;
    this.entries.delete(name);
    if (this.cleanerResumeKey === name) this.cleanerResumeKey = null;
    const delayMs = entry.log.config.fileDeleteDelayMs;
    try {
      entry.log.close();
    } catch (err) {
      // The data is going; a log that cannot sync on its way out does not stop that.
      this.logger.warn({ topic, partition, err }, 'error closing a log being deleted');
    }
    const target = join(this.dataDir, `${name}.${crypto().randomUUID().replace(/-/g, '')}${DELETE_SUFFIX}`);
    try {
      this.fs.rename(entry.dir, target);
      this.fs.syncDir(this.dataDir);
    } catch (err) {
      throw new StorageError(`cannot rename ${entry.dir} for deletion: ${(err as Error).message}`, { cause: err });
    }
    this.logger.info({ topic, partition, dir: target }, 'log renamed for deletion');
    if (this.cleanerOffsets.delete(name)) this.writeCleanerCheckpoint();
    this.scheduleRemoval(target, delayMs);
    return true;
  }

  /**
   * Makes `config` the topic's config: its logs take it at once (each is
   * closed cleanly and reopened with it, which reads no data: hold the
   * manager rather than the PartitionLog object across a config change),
   * and partitions created later get it. An offline log keeps running as
   * it is; it takes the config when the directory is next opened.
   *
   * Example: updateConfig('orders', logConfig({ retentionMs: 1000 })): the
   * next retention check deletes the segments of every partition of
   * 'orders' whose records are older than one second.
   */
  updateConfig(topic: string, config: LogConfig): void {
    this.checkOpen();
    this.topicConfigs.set(topic, config);
    for (const entry of [...this.entries.values()]) {
      if (entry.topic !== topic || sameConfig(entry.log.config, config)) continue;
      if (entry.log.isOffline) continue;
      if (this.noteTruncation(entry)) this.writeCleanerCheckpoint();
      try {
        entry.log.close();
        entry.log = PartitionLog.open(entry.dir, config, this.openOptions());
        entry.cleanerTruncationsSeen = entry.log.truncations;
        entry.cleaner = null;
        entry.uncleanable = false;
        entry.offlineReported = false;
      } catch (err) {
        // Neither the old log (closed) nor a new one can serve: the partition
        // is gone from this manager until getOrCreate opens it again.
        this.entries.delete(entry.key);
        this.logger.warn({ topic, partition: entry.partition, err }, 'cannot reopen log with its new config; it is offline');
      }
    }
  }

  /** Starts the background work. Example: LogManager.open(dir, opts).start(). */
  start(): this {
    this.checkOpen();
    if (this.started) return this;
    this.started = true;
    this.every(this.retentionCheckMs, () => this.retentionTick());
    this.every(this.flushCheckMs, () => this.flushTick());
    this.every(this.checkpointMs, () => this.checkpointTick());
    this.every(this.producerExpirationCheckMs, () => this.producerExpirationTick());
    if (this.cleanerEnabled) this.scheduleCleaner(this.cleanerBackoffMs);
    for (const path of this.leftoverDeletes.splice(0)) this.scheduleRemoval(path, 0);
    return this;
  }

  /**
   * Stops the timers and closes every log cleanly (synced, checkpointed,
   * with its clean-shutdown marker), all before returning; the promise
   * settles once directory removals already under way are over. Removals
   * still waiting for their delay are left to the next start.
   */
  close(): Promise<void> {
    if (this.closed) return this.settleDeletes();
    this.closed = true;
    for (const t of this.intervals.splice(0)) clearInterval(t);
    if (this.cleanerTimer) clearTimeout(this.cleanerTimer);
    this.cleanerTimer = null;
    for (const t of this.delayedDeletes.values()) clearTimeout(t);
    this.delayedDeletes.clear();
    if (this.noteTruncations()) this.writeCleanerCheckpoint();
    this.closeLogs();
    return this.settleDeletes();
  }

  /** The config a new log of `topic` gets. */
  configFor(topic: string): LogConfig {
    return this.topicConfigs.get(topic) ?? this.defaults;
  }

  private add(topic: string, partition: number, dir: string, log: PartitionLog): void {
    const key = partitionDirName(topic, partition);
    this.entries.set(key, {
      key,
      topic,
      partition,
      dir,
      log,
      cleaner: null,
      cleanerTruncationsSeen: log.truncations,
      uncleanable: false,
      offlineReported: log.isOffline,
    });
  }

  private closeLogs(): void {
    for (const entry of this.entries.values()) {
      try {
        entry.log.close();
      } catch (err) {
        this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, 'error closing log; it will recover when opened');
      }
    }
    this.entries.clear();
  }

  private checkOpen(): void {
    if (this.closed) throw new Error(`log manager of ${this.dataDir} is closed`);
  }

  private every(ms: number, tick: () => void): void {
    const t = setInterval(tick, ms);
    t.unref();
    this.intervals.push(t);
  }

  /**
   * Runs one piece of background work on one log. An offline log is
   * skipped; an error is logged (once when it took the log offline) and
   * goes no further.
   */
  private onLog(entry: Entry, what: string, work: (log: PartitionLog) => void): void {
    if (entry.log.isOffline) {
      this.reportOffline(entry, what, undefined);
      return;
    }
    try {
      work(entry.log);
    } catch (err) {
      if (entry.log.isOffline) this.reportOffline(entry, what, err);
      else this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, `${what} failed`);
    }
  }

  private reportOffline(entry: Entry, what: string, err: unknown): void {
    if (entry.offlineReported) return;
    entry.offlineReported = true;
    this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, `log is offline (found during ${what}); it serves KAFKA_STORAGE_ERROR until reopened`);
  }

  private retentionTick(): void {
    const now = this.now();
    for (const entry of [...this.entries.values()]) {
      this.onLog(entry, 'retention', (log) => {
        const deleted = log.deleteOldSegments(now);
        if (deleted > 0) {
          this.logger.info({ topic: entry.topic, partition: entry.partition, segments: deleted, logStartOffset: String(log.logStartOffset) }, 'deleted old segments');
        }
      });
    }
  }

  private flushTick(): void {
    for (const entry of [...this.entries.values()]) {
      if (!flushMsFinite(entry.log.config)) continue;
      this.onLog(entry, 'flush', (log) => void log.flushIfDue());
    }
  }

  private openOptions(): OpenOptions {
    return { fs: this.fs, now: this.now, producerIdExpirationMs: this.producerIdExpirationMs, log: this.logger };
  }

  private producerExpirationTick(): void {
    const now = this.now();
    for (const entry of [...this.entries.values()]) this.onLog(entry, 'producer expiration', (log) => void log.removeExpiredProducers(now));
  }

  private checkpointTick(): void {
    for (const entry of [...this.entries.values()]) this.onLog(entry, 'checkpoint', (log) => log.checkpoint());
  }

  private scheduleCleaner(ms: number): void {
    if (this.closed) return;
    const t = setTimeout(() => this.cleanerTick(), ms);
    t.unref();
    this.cleanerTimer = t;
  }

  /**
   * Up to cleanerStepsPerTick steps over the compacted logs, each log
   * stepped until it has nothing left or the steps run out; the next tick
   * resumes with the log it stopped at, and comes at once while there is
   * work, after the backoff when there is none.
   */
  private cleanerTick(): void {
    this.cleanerTimer = null;
    if (this.noteTruncations()) this.writeCleanerCheckpoint();
    const candidates = [...this.entries.values()].filter(
      (e) => e.log.config.cleanupPolicy.includes('compact') && !e.uncleanable && !e.log.isOffline,
    );
    const first = Math.max(0, candidates.findIndex((e) => e.key === this.cleanerResumeKey));
    this.cleanerResumeKey = null;
    let budget = this.cleanerStepsPerTick;
    for (let k = 0; k < candidates.length; k++) {
      const entry = candidates[(first + k) % candidates.length]!;
      if (budget === 0) {
        this.cleanerResumeKey = entry.key;
        break;
      }
      let last: CleanStep = 'idle';
      while (budget > 0) {
        budget--;
        last = this.cleanStep(entry);
        if (last === 'idle' || last === 'done') break;
      }
      if (last === 'mapped' || last === 'cleaned') {
        this.cleanerResumeKey = entry.key;
        break;
      }
    }
    this.scheduleCleaner(this.cleanerResumeKey !== null ? 0 : this.cleanerBackoffMs);
  }

  private cleanStep(entry: Entry): CleanStep {
    if (entry.log.isOffline) {
      this.reportOffline(entry, 'compaction', undefined);
      return 'idle';
    }
    // cleanerTick has just dropped the entry of a log truncated since it was written.
    entry.cleaner ??= new LogCleaner(entry.log, this.cleanerOffsets.get(entry.key));
    let result: CleanStep;
    try {
      result = entry.cleaner.step(this.now());
    } catch (err) {
      if (entry.log.isOffline) this.reportOffline(entry, 'compaction', err);
      else {
        // Bad data rather than a bad disk: Kafka marks such a partition uncleanable.
        entry.uncleanable = true;
        this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, 'compaction failed; the log is not cleaned again until it is reopened');
      }
      return 'idle';
    }
    if (result === 'done') {
      const firstDirtyOffset = entry.cleaner.firstDirtyOffset;
      this.logger.info({ topic: entry.topic, partition: entry.partition, firstDirtyOffset: String(firstDirtyOffset) }, 'compaction pass done');
      // Kafka's doneCleaning: the pass is on disk (replaceSegments synced it), so its end may be recorded.
      entry.cleanerTruncationsSeen = entry.log.truncations;
      if (this.cleanerOffsets.get(entry.key) !== firstDirtyOffset) {
        this.cleanerOffsets.set(entry.key, firstDirtyOffset);
        this.writeCleanerCheckpoint();
      }
    }
    return result;
  }

  /**
   * Reads the cleaner checkpoint at open, keeping the entries of the logs
   * found, each at least its log start (Kafka resets one below it) and at
   * most its log end: a checkpoint past the end means data was lost at the
   * end of the log, and the whole log is dirty again. The file is rewritten
   * at once when anything changed, before appends could make a stale entry
   * look valid.
   */
  private loadCleanerCheckpoint(): void {
    const stored = readCleanerOffsetCheckpoint(this.fs, this.dataDir) ?? [];
    let changed = false;
    for (const { topic, partition, offset } of stored) {
      const key = partitionDirName(topic, partition);
      const log = this.entries.get(key)?.log;
      if (log === undefined) {
        changed = true;
        continue;
      }
      let firstDirty = offset;
      if (offset > log.logEndOffset) {
        this.logger.warn(
          { topic, partition, checkpointed: String(offset), logEndOffset: String(log.logEndOffset) },
          'cleaner checkpoint is past the log end; the whole log is dirty again',
        );
        changed = true;
        continue;
      }
      if (offset < log.logStartOffset) firstDirty = log.logStartOffset;
      if (firstDirty !== offset) changed = true;
      this.cleanerOffsets.set(key, firstDirty);
    }
    if (changed) this.writeCleanerCheckpoint();
  }

  /**
   * Drops the cleaner checkpoint entry of a log truncated since the entry was
   * taken into account. Kafka lowers it to the active segment's base at the
   * moment of truncation; noticed later, the cut is no longer known (the log
   * may have rolled past it since), so the whole log counts as dirty, as it
   * does for the cleaner itself. Returns whether the entry went.
   */
  private noteTruncation(entry: Entry): boolean {
    if (entry.log.truncations === entry.cleanerTruncationsSeen) return false;
    entry.cleanerTruncationsSeen = entry.log.truncations;
    return this.cleanerOffsets.delete(entry.key);
  }

  /** noteTruncation over every log; whether any entry went. */
  private noteTruncations(): boolean {
    let changed = false;
    for (const entry of this.entries.values()) if (this.noteTruncation(entry)) changed = true;
    return changed;
  }

  /**
   * Writes the cleaner checkpoint: the entries of the logs this manager
   * holds, as Kafka's updateCheckpoints keeps only partitions it has logs
   * for. A failure is logged, and the entries stay in memory for the next
   * write to try again.
   */
  private writeCleanerCheckpoint(): void {
    const out: TopicPartitionOffset[] = [];
    for (const [key, offset] of [...this.cleanerOffsets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const entry = this.entries.get(key);
      if (entry === undefined) this.cleanerOffsets.delete(key);
      else out.push({ topic: entry.topic, partition: entry.partition, offset });
    }
    try {
      writeCleanerOffsetCheckpoint(this.fs, this.dataDir, out);
    } catch (err) {
      this.logger.warn({ dataDir: this.dataDir, err }, 'cannot write the cleaner checkpoint; cleaning resumes from the previous one after a restart');
    }
  }

  private scheduleRemoval(path: string, delayMs: number): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.delayedDeletes.delete(path);
      const p = fsPromises().rm(path, { recursive: true, force: true }).then(
        () => this.logger.info({ dir: path }, 'deleted log directory'),
        (err: unknown) => this.logger.warn({ dir: path, err }, 'cannot remove deleted log directory; it is tried again on the next start'),
      );
      this.runningDeletes.add(p);
      void p.finally(() => this.runningDeletes.delete(p));
    }, Math.max(0, delayMs));
    t.unref();
    this.delayedDeletes.set(path, t);
  }

  private async settleDeletes(): Promise<void> {
    while (this.runningDeletes.size > 0) await Promise.all([...this.runningDeletes]);
  }
}

function positive(ms: number, name: string): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`${name} must be a positive number of milliseconds, not ${ms}`);
  // setInterval treats anything above 2^31-1 as 1.
  return Math.min(ms, 0x7fffffff);
}

/** Whether `path` is a directory, through the Fs (which has no stat). */
function isDirectory(fs: Fs, path: string): boolean {
  try {
    fs.readdir(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw err;
  }
}

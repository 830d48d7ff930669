/**
 * The owner of every partition log in the broker's log directories
 * (log.dirs), in Kafka's layout: partition `p` of topic `t` lives in the
 * directory `<t>-<p>` of one of them (topic names may contain '-', the
 * partition is what follows the last one).
 *
 * Several directories (JBOD), as Kafka runs them:
 * - a new partition goes to the online directory holding the fewest
 *   partitions (the first of those tied), unless `moveLog` named one for it
 *   before it existed;
 * - a directory is online or offline. One that cannot be read at open, or in
 *   which any log meets an I/O error later, goes offline with every log in it
 *   (they answer KAFKA_STORAGE_ERROR) until the broker restarts; the other
 *   directories go on. The open fails only when no directory is left online;
 * - `moveLog` moves a partition to another directory while it serves
 *   (AlterReplicaLogDirs): a future log `<t>-<p>.<uuid>-future` in the
 *   target directory copies the current one in the background, and once it
 *   has caught up it takes the current log's place in one step between two
 *   requests (the old directory renamed for deletion first, then the future
 *   one renamed to `<t>-<p>`). A move interrupted by a restart resumes; a
 *   future log found without its current one (the restart came between the
 *   two renames) becomes the partition's log, unless a directory is offline
 *   (the current log may be in it).
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
import { join, resolve } from 'node:path';
import { crypto, fsPromises } from '../wire/builtins.js';
import { readCleanerOffsetCheckpoint, type TopicPartitionOffset, writeCleanerOffsetCheckpoint } from './checkpoint.js';
import { LogCleaner, type CleanStep } from './cleaner.js';
import { type Fs, nodeFs } from './fs.js';
import type { LogConfig } from './log-config.js';
import { appendInfoFor, CLEAN_SHUTDOWN_FILE, type OpenOptions, PartitionLog, StorageError } from './log.js';

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
  /** Told the path of a log directory that has just gone offline. */
  onDirFailure?: (path: string) => void;
  /** Log directories found unusable before the logs open (by path): offline from the start, not read. */
  unusableDirs?: ReadonlyMap<string, Error>;
}

/** One partition has logs in two directories: the broker cannot tell which to serve. */
export class DuplicateLogError extends StorageError {}

export interface ManagedLog {
  readonly topic: string;
  readonly partition: number;
  readonly log: PartitionLog;
}

/** One of log.dirs. */
interface DirState {
  readonly path: string;
  /** Why the directory is offline; null while it is online. */
  failure: Error | null;
}

/** A partition on its way to another directory (AlterReplicaLogDirs). */
interface Move {
  readonly target: number;
  /** The future log's directory: `<t>-<p>.<uuid>-future` in the target. */
  readonly dir: string;
  readonly log: PartitionLog;
  /** The current log's truncations when the future log last matched it. */
  truncationsSeen: number;
}

/** What DescribeLogDirs reports of one directory. */
export interface LogDirReport {
  readonly path: string;
  /** null while online. */
  readonly failure: string | null;
  readonly logs: readonly { readonly topic: string; readonly partition: number; readonly size: number; readonly isFuture: boolean; readonly offsetLag: bigint }[];
}

/** How `moveLog` answered. */
export type MoveOutcome = 'moving' | 'here' | 'preferred' | 'unknown-dir' | 'offline-dir' | 'offline-log';

interface Entry {
  readonly key: string;
  readonly topic: string;
  readonly partition: number;
  dir: string;
  /** Index in log.dirs of the directory holding `dir`. */
  dirIndex: number;
  log: PartitionLog;
  move: Move | null;
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
const FUTURE_SUFFIX = '-future';
const FUTURE_DIR = /^(.+)-(0|[1-9]\d{0,9})\.([0-9a-f]{32})-future$/;
/** Bytes the background move copies per turn of the event loop, over all moves. */
const MOVE_BYTES_PER_TICK = 4 << 20;
/** How long the background move waits after a turn that could copy nothing. */
const MOVE_RETRY_MS = 100;
/** Batch header fields read when copying a log (RecordBatch v2 layout). */
const BATCH_BASE_OFFSET = 0;
const BATCH_LENGTH_AT = 8;
const BATCH_LAST_OFFSET_DELTA = 23;
const BATCH_MAX_TIMESTAMP = 35;
const BATCH_LOG_OVERHEAD = 12;
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
  private readonly dirs: DirState[];
  /** Directories named for partitions that had no log yet (AlterReplicaLogDirs before creation), by key. */
  private readonly preferredDirs = new Map<string, number>();
  private moverTimer: NodeJS.Timeout | null = null;
  /** Bytes copied to future logs so far. */
  private movedBytes = 0;
  private readonly onDirFailure: ((path: string) => void) | undefined;
  private started = false;
  private closed = false;

  private constructor(
    dirs: readonly string[],
    readonly defaults: LogConfig,
    opts: LogManagerOptions,
  ) {
    if (dirs.length === 0) throw new RangeError('at least one log directory is needed');
    this.dirs = dirs.map((path) => ({ path, failure: null }));
    this.onDirFailure = opts.onDirFailure;
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
   * Opens every partition log in the log directories `dataDirs` (one path or
   * several, each created when missing); a log that was not closed cleanly
   * recovers. Entries that are not partition directories are left alone. A
   * log that cannot be opened (an I/O error: recovery itself copes with torn
   * and corrupt data) takes its directory offline, as in Kafka, after
   * closing the logs opened there; the open fails when no directory is left
   * online, and when one partition has logs in two directories.
   *
   * Example: a data directory holding `orders-0`, `my-topic-3` and
   * `meta.properties` opens with logs for ('orders', 0) and ('my-topic', 3).
   */
  static open(dataDirs: string | readonly string[], opts: LogManagerOptions): LogManager {
    const paths = typeof dataDirs === 'string' ? [dataDirs] : dataDirs;
    const manager = new LogManager(paths, opts.defaults, opts);
    let recovered = 0;
    const futures: { dirIndex: number; name: string; topic: string; partition: number }[] = [];
    try {
      for (let i = 0; i < manager.dirs.length; i++) {
        const unusable = opts.unusableDirs?.get(manager.dirs[i]!.path);
        if (unusable) {
          manager.dropDirAtOpen(i, unusable);
          continue;
        }
        try {
          recovered += manager.openDir(i, futures);
        } catch (err) {
          if (err instanceof DuplicateLogError) throw err;
          manager.dropDirAtOpen(i, err as Error);
        }
      }
      if (manager.dirs.every((d) => d.failure !== null)) throw manager.dirs[0]!.failure!;
      manager.openFutures(futures);
      manager.loadCleanerCheckpoint();
    } catch (err) {
      manager.closeLogs();
      throw err;
    }
    manager.logger.info({ logDirs: paths, logs: manager.entries.size, recovered }, 'logs loaded');
    return manager;
  }

  /** The first log directory (where the broker keeps its own files). */
  get dataDir(): string {
    return this.dirs[0]!.path;
  }

  /** The log directories in order, each with why it is offline (null when online). */
  logDirs(): { path: string; failure: Error | null }[] {
    return this.dirs.map((d) => ({ path: d.path, failure: d.failure }));
  }

  /** Opens the logs of directory `i`; returns how many recovered. */
  private openDir(i: number, futures: { dirIndex: number; name: string; topic: string; partition: number }[]): number {
    const fs = this.fs;
    const dataDir = this.dirs[i]!.path;
    fs.mkdir(dataDir);
    let recovered = 0;
    for (const name of fs.readdir(dataDir).sort()) {
      if (DELETE_DIR.test(name)) {
        this.leftoverDeletes.push(join(dataDir, name));
        continue;
      }
      const future = FUTURE_DIR.exec(name);
      if (future) {
        const parsedFuture = parsePartitionDirName(`${future[1]}-${future[2]}`);
        if (parsedFuture !== null) futures.push({ dirIndex: i, name, ...parsedFuture });
        continue;
      }
      const parsed = parsePartitionDirName(name);
      if (parsed === null) continue;
      const dir = join(dataDir, name);
      if (!isDirectory(fs, dir)) continue;
      const other = this.entries.get(name);
      if (other) {
        throw new DuplicateLogError(
          `partition ${parsed.partition} of ${parsed.topic} has a log in both ${other.dir} and ${dir}; keep one of them (move the other out of log.dirs) and restart`,
        );
      }
      const clean = fs.exists(join(dir, CLEAN_SHUTDOWN_FILE));
      let log: PartitionLog;
      try {
        log = PartitionLog.open(dir, this.configFor(parsed.topic), this.openOptions(i));
      } catch (err) {
        throw new StorageError(`cannot open the log of ${name} in ${dataDir}: ${(err as Error).message}`, { cause: err });
      }
      if (!clean) {
        recovered++;
        this.logger.info({ topic: parsed.topic, partition: parsed.partition, logEndOffset: String(log.logEndOffset) }, 'recovered log after unclean shutdown');
      }
      this.add(parsed.topic, parsed.partition, dir, log, i);
    }
    return recovered;
  }

  /** A directory that could not be opened: its logs are closed and left out, and it stays offline. */
  private dropDirAtOpen(i: number, err: Error): void {
    const state = this.dirs[i]!;
    state.failure = err;
    for (const entry of [...this.entries.values()]) {
      if (entry.dirIndex !== i) continue;
      this.entries.delete(entry.key);
      try {
        entry.log.close();
      } catch {
        // the directory failed: nothing more to save
      }
    }
    this.leftoverDeletes = this.leftoverDeletes.filter((p) => !p.startsWith(join(state.path, '/')));
    if (this.dirs.length > 1) {
      this.logger.warn({ logDir: state.path, err }, 'log directory is offline: its partitions are not served until it is repaired and the broker restarted');
    }
  }

  /** Future logs found at open: each resumes its move, or becomes its partition's log when the move was swapping. */
  private openFutures(futures: readonly { dirIndex: number; name: string; topic: string; partition: number }[]): void {
    const anyOffline = this.dirs.some((d) => d.failure !== null);
    for (const f of futures) {
      const state = this.dirs[f.dirIndex]!;
      if (state.failure !== null) continue;
      const path = join(state.path, f.name);
      const key = partitionDirName(f.topic, f.partition);
      const entry = this.entries.get(key);
      try {
        if (entry && entry.dirIndex !== f.dirIndex && entry.move === null) {
          const log = PartitionLog.open(path, this.configFor(f.topic), this.openOptions(f.dirIndex));
          entry.move = { target: f.dirIndex, dir: path, log, truncationsSeen: -1 };
          this.logger.info({ topic: f.topic, partition: f.partition, logDir: state.path }, 'resuming the move of a log to another directory');
        } else if (!entry && !anyOffline) {
          const dir = join(state.path, key);
          this.fs.rename(path, dir);
          this.fs.syncDir(state.path);
          const log = PartitionLog.open(dir, this.configFor(f.topic), this.openOptions(f.dirIndex));
          this.add(f.topic, f.partition, dir, log, f.dirIndex);
          this.logger.info({ topic: f.topic, partition: f.partition, logDir: state.path }, 'finished moving a log to another directory');
        } else if (entry) {
          this.leftoverDeletes.push(path);
        }
      } catch (err) {
        throw new StorageError(`cannot open the future log ${path}: ${(err as Error).message}`, { cause: err });
      }
    }
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
  getOrCreate(topic: string, partition: number, config?: LogConfig, isNew = true): PartitionLog {
    const r = this.getOrCreateMany([{ topic, partition, config, isNew }])[0]!;
    if (r instanceof Error) throw r;
    return r;
  }

  /**
   * A partition that is not `isNew` (it existed before this broker started,
   * so its log should be here) is not created while a log directory is
   * offline: its log may be in that directory, and an empty one made
   * elsewhere would serve as if its records were gone (Kafka refuses the
   * same). It answers a StorageError instead.
   *
   * getOrCreate for several partitions, with one sync of the data directory
   * for all the logs it creates rather than one each (creating a topic of
   * 10,000 partitions). Answers in order, each the log or why it could not be
   * opened; when that one sync fails, every log it created is closed again and
   * answered with the error.
   *
   * Example: getOrCreateMany([{ topic: 'orders', partition: 0 }, { topic:
   * 'orders', partition: 1 }]) -> two empty logs, one directory sync.
   */
  getOrCreateMany(parts: readonly { topic: string; partition: number; config?: LogConfig; isNew?: boolean }[]): (PartitionLog | Error)[] {
    this.checkOpen();
    const out: (PartitionLog | Error)[] = [];
    const created: { index: number; name: string; dir: string; dirIndex: number; topic: string; partition: number }[] = [];
    for (const { topic, partition, config, isNew = true } of parts) {
      try {
        checkPartitionName(topic, partition);
        const name = partitionDirName(topic, partition);
        const existing = this.entries.get(name);
        if (existing) {
          out.push(existing.log);
          continue;
        }
        const offline = this.dirs.filter((d) => d.failure !== null);
        if (!isNew && offline.length > 0) {
          throw new StorageError(
            `no log of ${name} in the online log directories, and it may be in the offline ${offline.map((d) => d.path).join(', ')}: not created empty; repair the directory and restart`,
          );
        }
        const dirIndex = this.placeNew(name);
        const dir = join(this.dirs[dirIndex]!.path, name);
        const log = PartitionLog.open(dir, config ?? this.configFor(topic), this.openOptions(dirIndex));
        created.push({ index: out.length, name, dir, dirIndex, topic, partition });
        out.push(log);
        // Listed at once, so that a partition named twice gets the same log.
        this.add(topic, partition, dir, log, dirIndex);
        this.preferredDirs.delete(name);
      } catch (err) {
        out.push(err as Error);
      }
    }
    if (created.length === 0) return out;
    const failed = new Map<PartitionLog, StorageError>();
    for (const dirIndex of new Set(created.map((c) => c.dirIndex))) {
      const path = this.dirs[dirIndex]!.path;
      try {
        this.fs.syncDir(path);
      } catch (err) {
        for (const c of created) {
          if (c.dirIndex !== dirIndex) continue;
          const log = out[c.index] as PartitionLog;
          this.entries.delete(c.name);
          try {
            log.close();
          } catch {
            // already failing: the sync error is the one to report
          }
          failed.set(log, new StorageError(`cannot sync ${path} after creating ${c.name}: ${(err as Error).message}`, { cause: err }));
        }
      }
    }
    if (failed.size > 0) {
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
   * The directory a new partition goes to: the one named for it by moveLog
   * when online, else the online directory with the fewest partitions (future
   * logs included), the first of those tied. Throws StorageError when every
   * directory is offline.
   */
  private placeNew(key: string): number {
    const preferred = this.preferredDirs.get(key);
    if (preferred !== undefined && this.dirs[preferred]!.failure === null) return preferred;
    const counts = this.dirs.map(() => 0);
    for (const e of this.entries.values()) {
      counts[e.dirIndex]!++;
      if (e.move) counts[e.move.target]!++;
    }
    let best = -1;
    for (let i = 0; i < this.dirs.length; i++) {
      if (this.dirs[i]!.failure !== null) continue;
      if (best < 0 || counts[i]! < counts[best]!) best = i;
    }
    if (best < 0) throw new StorageError('every log directory is offline; repair the disks and restart the broker');
    return best;
  }

  /**
   * The log directory `path` is, as an index into log.dirs, or -1. Paths are
   * compared resolved, so a trailing '/' or a relative path still matches.
   */
  private dirIndexOf(path: string): number {
    const wanted = resolve(path);
    return this.dirs.findIndex((d) => resolve(d.path) === wanted);
  }

  /**
   * AlterReplicaLogDirs for one partition: starts moving its log to the log
   * directory `path` ('moving'; a move to another directory under way is
   * dropped first), or, for a partition with no log here yet, remembers
   * `path` as where it is created ('preferred'). 'here' when the log already
   * is there (a move under way elsewhere is dropped); 'unknown-dir' when
   * `path` is not one of log.dirs; 'offline-dir' when it is offline, or
   * another directory is (no future log is made then, as in Kafka);
   * 'offline-log' when the partition's own directory is offline.
   *
   * Example: with log.dirs /d1,/d2 and orders-0 in /d1, moveLog('orders', 0,
   * '/d2') -> 'moving'; a little later logDirOf('orders', 0) is '/d2'.
   */
  moveLog(topic: string, partition: number, path: string): MoveOutcome {
    this.checkOpen();
    const target = this.dirIndexOf(path);
    if (target < 0) return 'unknown-dir';
    if (this.dirs[target]!.failure !== null) return 'offline-dir';
    const key = partitionDirName(topic, partition);
    const entry = this.entries.get(key);
    if (!entry) {
      this.preferredDirs.set(key, target);
      return 'preferred';
    }
    if (this.dirs[entry.dirIndex]!.failure !== null || entry.log.isOffline) return 'offline-log';
    if (entry.move && entry.move.target !== target) this.abandonMove(entry, 'moved elsewhere');
    if (entry.dirIndex === target) return 'here';
    if (entry.move) return 'moving';
    if (this.dirs.some((d) => d.failure !== null)) return 'offline-dir';
    const dir = join(this.dirs[target]!.path, `${key}.${crypto().randomUUID().replace(/-/g, '')}${FUTURE_SUFFIX}`);
    const log = PartitionLog.open(dir, entry.log.config, this.openOptions(target));
    this.fs.syncDir(this.dirs[target]!.path);
    entry.move = { target, dir, log, truncationsSeen: -1 };
    this.logger.info({ topic, partition, from: this.dirs[entry.dirIndex]!.path, to: this.dirs[target]!.path }, 'moving a log to another directory');
    this.scheduleMover();
    return 'moving';
  }

  /** The log directory holding a partition's log, or undefined. Example: logDirOf('orders', 0) -> '/d1'. */
  logDirOf(topic: string, partition: number): string | undefined {
    const entry = this.entries.get(partitionDirName(topic, partition));
    return entry ? this.dirs[entry.dirIndex]!.path : undefined;
  }

  /**
   * Every directory with its logs, as DescribeLogDirs reports them: each
   * log's size, and for a future log (a move under way) isFuture with how far
   * it is behind the current log's end.
   */
  describeDirs(): LogDirReport[] {
    const logs = this.dirs.map(() => [] as { topic: string; partition: number; size: number; isFuture: boolean; offsetLag: bigint }[]);
    for (const e of this.entries.values()) {
      if (this.dirs[e.dirIndex]!.failure === null) logs[e.dirIndex]!.push({ topic: e.topic, partition: e.partition, size: e.log.size, isFuture: false, offsetLag: 0n });
      if (e.move && this.dirs[e.move.target]!.failure === null) {
        const lag = e.log.logEndOffset - e.move.log.logEndOffset;
        logs[e.move.target]!.push({ topic: e.topic, partition: e.partition, size: e.move.log.size, isFuture: true, offsetLag: lag > 0n ? lag : 0n });
      }
    }
    return this.dirs.map((d, i) => ({ path: d.path, failure: d.failure === null ? null : d.failure.message, logs: d.failure === null ? logs[i]! : [] }));
  }

  /**
   * Takes directory `i` offline for good (until a restart): every log in it
   * goes offline, moves into or out of it are dropped. Logged once.
   */
  private failDir(i: number, cause: Error): void {
    const state = this.dirs[i]!;
    if (state.failure !== null || this.closed) return;
    state.failure = cause;
    const err = cause instanceof StorageError ? cause : new StorageError(cause.message, { cause });
    let partitions = 0;
    for (const entry of this.entries.values()) {
      if (entry.move && (entry.move.target === i || entry.dirIndex === i)) this.abandonMove(entry, 'a directory failed', false);
      if (entry.dirIndex !== i) continue;
      partitions++;
      entry.offlineReported = true;
      entry.log.takeOffline(err);
    }
    const online = this.dirs.filter((d) => d.failure === null).length;
    this.logger.warn(
      { logDir: state.path, partitions, onlineDirs: online, err: cause },
      online > 0
        ? 'log directory failed: its partitions answer KAFKA_STORAGE_ERROR until the disk is repaired and the broker restarted; the other directories go on'
        : 'the last online log directory failed: no partition can be served until the disks are repaired and the broker restarted',
    );
    this.onDirFailure?.(state.path);
  }

  /** Drops a move: closes the future log and deletes its directory (when the disk allows). */
  private abandonMove(entry: Entry, why: string, remove = true): void {
    const move = entry.move;
    if (!move) return;
    entry.move = null;
    try {
      move.log.close();
    } catch {
      // its directory may have failed: nothing to save in a future log
    }
    if (remove && this.dirs[move.target]!.failure === null) this.scheduleRemoval(move.dir, 0);
    this.logger.info({ topic: entry.topic, partition: entry.partition, why }, 'stopped moving a log to another directory');
  }

  private scheduleMover(delayMs = 0): void {
    if (this.closed || !this.started || this.moverTimer !== null) return;
    const t = setTimeout(() => {
      this.moverTimer = null;
      const before = this.movedBytes;
      // A turn that copied nothing (a copy waiting on its source) tries again a little later rather than spinning.
      if (this.moveStep()) this.scheduleMover(this.movedBytes === before ? MOVE_RETRY_MS : 0);
    }, delayMs);
    t.unref();
    this.moverTimer = t;
  }

  /**
   * Copies up to MOVE_BYTES_PER_TICK from current logs to their future logs
   * and swaps each future log that has caught up. Returns whether moves remain.
   */
  moveStep(budget = MOVE_BYTES_PER_TICK): boolean {
    if (this.closed) return false;
    let remaining = false;
    for (const entry of [...this.entries.values()]) {
      if (!entry.move) continue;
      if (budget <= 0) {
        remaining = true;
        break;
      }
      try {
        const copied = this.copyToFuture(entry, budget);
        budget -= copied;
        this.movedBytes += copied;
        if (entry.move.log.logEndOffset === entry.log.logEndOffset) this.swapFuture(entry);
        else remaining = true;
      } catch (err) {
        if (entry.move && entry.move.log.isOffline) {
          this.failDir(entry.move.target, err as Error);
        } else if (entry.log.isOffline) {
          this.abandonMove(entry, 'the current log is offline', false);
        } else {
          this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, 'moving a log to another directory failed; the log stays where it was');
          this.abandonMove(entry, 'the copy failed');
        }
      }
    }
    return remaining;
  }

  /** Appends to the future log what the current log has beyond it; returns the bytes copied. */
  private copyToFuture(entry: Entry, budget: number): number {
    const src = entry.log;
    const move = entry.move!;
    const dst = move.log;
    if (move.truncationsSeen !== src.truncations || dst.logEndOffset > src.logEndOffset || dst.logEndOffset < src.logStartOffset) {
      // A truncated current log (or one past retention) is copied again from its start.
      if (dst.logEndOffset !== src.logStartOffset || dst.logStartOffset !== src.logStartOffset) dst.truncateFullyAndStartAt(src.logStartOffset);
      move.truncationsSeen = src.truncations;
    }
    let copied = 0;
    while (dst.logEndOffset < src.logEndOffset && copied < budget) {
      const bytes = src.readBuffer(dst.logEndOffset, Math.min(budget - copied, 1 << 20));
      if (bytes === null || bytes.length === 0) break;
      const appended: { baseOffset: bigint; lastOffset: bigint; maxTimestamp: bigint; position: number; size: number }[] = [];
      let at = 0;
      while (at + BATCH_LOG_OVERHEAD <= bytes.length) {
        const size = BATCH_LOG_OVERHEAD + bytes.readInt32BE(at + BATCH_LENGTH_AT);
        if (at + size > bytes.length) break;
        const baseOffset = bytes.readBigInt64BE(at + BATCH_BASE_OFFSET);
        appended.push({ baseOffset, lastOffset: baseOffset + BigInt(bytes.readInt32BE(at + BATCH_LAST_OFFSET_DELTA)), maxTimestamp: bytes.readBigInt64BE(at + BATCH_MAX_TIMESTAMP), position: at, size });
        at += size;
      }
      const fresh = appended.filter((b) => b.lastOffset >= dst.logEndOffset);
      if (fresh.length === 0) break;
      const first = fresh[0]!;
      // The log start may fall inside a batch: the future log starts at that batch, and at the log start once swapped.
      if (first.baseOffset < dst.logEndOffset) dst.truncateFullyAndStartAt(first.baseOffset);
      const last = fresh[fresh.length - 1]!;
      const chunk = bytes.subarray(first.position, last.position + last.size);
      dst.appendValidated(chunk, appendInfoFor(fresh));
      copied += chunk.length;
    }
    return copied;
  }

  /**
   * The future log has caught up: it takes the current log's place. Between
   * two requests, so nothing is appended meanwhile. The current log's
   * directory is renamed for deletion before the future one takes its name
   * (see the restart rules above).
   */
  private swapFuture(entry: Entry): void {
    const move = entry.move!;
    const src = entry.log;
    const dst = move.log;
    // Epochs begun after the last copied batch (a leader elected since) have no batch to bring them.
    const latest = dst.leaderEpochs.latestEntry()?.epoch ?? -1;
    for (const e of src.leaderEpochs.entries) if (e.epoch > latest && e.startOffset >= dst.logStartOffset) dst.maybeAssignEpochStartOffset(e.epoch, e.startOffset);
    dst.updateHighWatermark(src.highWatermark < dst.logEndOffset ? src.highWatermark : dst.logEndOffset);
    if (src.logStartOffset > dst.logStartOffset) dst.deleteRecordsBefore(src.logStartOffset);
    dst.close();
    const from = this.dirs[entry.dirIndex]!.path;
    const to = this.dirs[move.target]!.path;
    const finalDir = join(to, entry.key);
    const delayMs = src.config.fileDeleteDelayMs;
    try {
      src.close();
    } catch (err) {
      this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, 'error closing the log being replaced by its moved copy');
    }
    const aside = join(from, `${entry.key}.${crypto().randomUUID().replace(/-/g, '')}${DELETE_SUFFIX}`);
    entry.move = null;
    try {
      this.fs.rename(entry.dir, aside);
      try {
        this.fs.rename(move.dir, finalDir);
      } catch (err) {
        this.fs.rename(aside, entry.dir);
        throw err;
      }
      this.fs.syncDir(from);
      this.fs.syncDir(to);
    } catch (err) {
      // Both logs are closed: the current one serves again from where it was; the copy goes.
      this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, 'cannot swap a moved log into place; it stays where it was');
      this.scheduleRemoval(move.dir, 0);
      try {
        entry.log = PartitionLog.open(entry.dir, src.config, this.openOptions(entry.dirIndex));
      } catch (reopenErr) {
        this.failDir(entry.dirIndex, reopenErr as Error);
      }
      return;
    }
    entry.dir = finalDir;
    entry.dirIndex = move.target;
    entry.log = PartitionLog.open(finalDir, src.config, this.openOptions(move.target));
    entry.cleaner = null;
    entry.cleanerTruncationsSeen = entry.log.truncations;
    entry.uncleanable = false;
    entry.offlineReported = false;
    if (this.cleanerOffsets.has(entry.key)) this.writeCleanerCheckpoint();
    this.scheduleRemoval(aside, delayMs);
    this.logger.info({ topic: entry.topic, partition: entry.partition, from, to, logEndOffset: String(entry.log.logEndOffset) }, 'moved a log to another directory');
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
    this.preferredDirs.delete(name);
    if (this.cleanerResumeKey === name) this.cleanerResumeKey = null;
    this.abandonMove(entry, 'the partition is deleted');
    const delayMs = entry.log.config.fileDeleteDelayMs;
    try {
      entry.log.close();
    } catch (err) {
      // The data is going; a log that cannot sync on its way out does not stop that.
      this.logger.warn({ topic, partition, err }, 'error closing a log being deleted');
    }
    const parent = this.dirs[entry.dirIndex]!.path;
    const target = join(parent, `${name}.${crypto().randomUUID().replace(/-/g, '')}${DELETE_SUFFIX}`);
    try {
      this.fs.rename(entry.dir, target);
      this.fs.syncDir(parent);
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
        entry.log = PartitionLog.open(entry.dir, config, this.openOptions(entry.dirIndex));
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
    if ([...this.entries.values()].some((e) => e.move !== null)) this.scheduleMover();
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
    if (this.moverTimer) clearTimeout(this.moverTimer);
    this.moverTimer = null;
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

  private add(topic: string, partition: number, dir: string, log: PartitionLog, dirIndex: number): void {
    const key = partitionDirName(topic, partition);
    this.entries.set(key, {
      key,
      topic,
      partition,
      dir,
      dirIndex,
      log,
      move: null,
      cleaner: null,
      cleanerTruncationsSeen: log.truncations,
      uncleanable: false,
      offlineReported: log.isOffline,
    });
  }

  private closeLogs(): void {
    for (const entry of this.entries.values()) {
      if (entry.move) {
        try {
          entry.move.log.close();
        } catch (err) {
          this.logger.warn({ topic: entry.topic, partition: entry.partition, err }, 'error closing a future log; its copy starts again when opened');
        }
      }
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

  private openOptions(dirIndex: number): OpenOptions {
    return {
      fs: this.fs,
      now: this.now,
      producerIdExpirationMs: this.producerIdExpirationMs,
      log: this.logger,
      // Any I/O error takes the whole directory offline, as in Kafka; after the failing operation has unwound.
      onOffline: (cause) => queueMicrotask(() => this.failDir(dirIndex, cause)),
    };
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
    const stored: TopicPartitionOffset[] = [];
    for (const d of this.dirs) if (d.failure === null) stored.push(...(readCleanerOffsetCheckpoint(this.fs, d.path) ?? []));
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
    const out = this.dirs.map(() => [] as TopicPartitionOffset[]);
    for (const [key, offset] of [...this.cleanerOffsets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const entry = this.entries.get(key);
      if (entry === undefined) this.cleanerOffsets.delete(key);
      else out[entry.dirIndex]!.push({ topic: entry.topic, partition: entry.partition, offset });
    }
    for (let i = 0; i < this.dirs.length; i++) {
      const dataDir = this.dirs[i]!.path;
      if (this.dirs[i]!.failure !== null) continue;
      try {
        writeCleanerOffsetCheckpoint(this.fs, dataDir, out[i]!);
      } catch (err) {
        this.logger.warn({ dataDir, err }, 'cannot write the cleaner checkpoint; cleaning resumes from the previous one after a restart');
      }
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

/**
 * The file system as the partition log sees it, injectable so crash and
 * fsync-failure tests can run against a wrapper that fails on demand.
 *
 * Synchronous on purpose. All of a partition's state lives on one event loop;
 * with synchronous calls an append has written its bytes (write() returned)
 * before the log end offset moves, and no other request can observe a log
 * halfway through an append, roll or truncation, so the log needs no locks.
 * Writes go to the page cache and cost microseconds; positional reads of a
 * range are one pread. The price is that an fsync blocks the loop, which is
 * why flushing is left to the page cache unless flush.messages / flush.ms ask
 * for it, as in Kafka.
 */
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  fsync as fsyncCallback,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  readdirSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

/** `read`: read only; `readWrite`: the file must exist; `create`: read-write, created empty when missing, never truncated. */
export type OpenMode = 'read' | 'readWrite' | 'create';

export interface Fs {
  open(path: string, mode: OpenMode): number;
  close(fd: number): void;
  /** Writes at `position`; returns the bytes written, which may be fewer than `length`. */
  write(fd: number, buf: Buffer, offset: number, length: number, position: number): number;
  /** Reads at `position`; returns the bytes read, fewer at the end of the file. */
  read(fd: number, buf: Buffer, offset: number, length: number, position: number): number;
  fsync(fd: number): void;
  /**
   * Fsyncs off the calling thread and calls back when done. Optional: where it
   * is missing, callers fsync synchronously instead (fakes stay synchronous).
   */
  fsyncAsync?(fd: number, cb: (err: Error | null) => void): void;
  ftruncate(fd: number, length: number): void;
  size(fd: number): number;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  readdir(path: string): string[];
  /** Creates the directory and its parents; no error when it exists. */
  mkdir(path: string): void;
  exists(path: string): boolean;
  /** Makes renames and unlinks in the directory durable; a no-op where the platform refuses. */
  syncDir(path: string): void;
}

const OPEN_FLAGS: Record<OpenMode, number> = {
  read: constants.O_RDONLY,
  readWrite: constants.O_RDWR,
  create: constants.O_RDWR | constants.O_CREAT,
};

export const nodeFs: Fs = {
  open: (path, mode) => openSync(path, OPEN_FLAGS[mode], 0o644),
  close: (fd) => closeSync(fd),
  write: (fd, buf, offset, length, position) => writeSync(fd, buf, offset, length, position),
  read: (fd, buf, offset, length, position) => readSync(fd, buf, offset, length, position),
  fsync: (fd) => fsyncSync(fd),
  fsyncAsync: (fd, cb) => fsyncCallback(fd, (err) => cb(err)),
  ftruncate: (fd, length) => ftruncateSync(fd, length),
  size: (fd) => fstatSync(fd).size,
  rename: (from, to) => renameSync(from, to),
  unlink: (path) => unlinkSync(path),
  readdir: (path) => readdirSync(path),
  mkdir: (path) => void mkdirSync(path, { recursive: true }),
  exists: (path) => existsSync(path),
  syncDir: (path) => {
    let fd: number | undefined;
    try {
      fd = openSync(path, constants.O_RDONLY);
      fsyncSync(fd);
    } catch {
      // Some file systems refuse fsync on a directory; their renames are still atomic.
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  },
};

/** Writes all of `buf` at `position`, looping over short writes. */
export function writeFully(fs: Fs, fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) {
    const n = fs.write(fd, buf, done, buf.length - done, position + done);
    if (n <= 0) throw errnoError('EIO', 'write', 'write made no progress');
    done += n;
  }
}

/** Reads up to `length` bytes at `position`; the result is shorter only at the end of the file. */
export function readFully(fs: Fs, fd: number, buf: Buffer, offset: number, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    const n = fs.read(fd, buf, offset + done, length - done, position + done);
    if (n <= 0) break;
    done += n;
  }
  return done;
}

/** The whole file, or null when it does not exist. */
export function readWholeFile(fs: Fs, path: string): Buffer | null {
  if (!fs.exists(path)) return null;
  const fd = fs.open(path, 'read');
  try {
    const size = fs.size(fd);
    const buf = Buffer.allocUnsafe(size);
    return buf.subarray(0, readFully(fs, fd, buf, 0, size, 0));
  } finally {
    fs.close(fd);
  }
}

/**
 * Replaces `path` so that a reader, even after a crash, sees the old bytes or
 * the new ones and never a mix: temp file, fsync, rename, directory fsync.
 */
export function writeFileAtomic(fs: Fs, path: string, data: Buffer): void {
  const tmp = `${path}.tmp`;
  const fd = fs.open(tmp, 'create');
  try {
    fs.ftruncate(fd, 0);
    writeFully(fs, fd, data, 0);
    fs.fsync(fd);
  } finally {
    fs.close(fd);
  }
  fs.rename(tmp, path);
  fs.syncDir(dirname(path));
}

export function errnoError(code: string, syscall: string, message: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${code}: ${message}, ${syscall}`);
  err.code = code;
  err.syscall = syscall;
  return err;
}

/**
 * An Fs that fails on demand, for crash and disk-failure tests. Faults are
 * armed one at a time and fire on the next matching call; a full disk stays
 * full until `setFreeBytes(Infinity)`.
 */
export class FaultyFs implements Fs {
  private readonly paths = new Map<number, string>();
  private nextWriteFault: { code: string; tearBytes: number; match: (path: string) => boolean } | null = null;
  private nextFsyncFault: { code: string; match: (path: string) => boolean } | null = null;
  private nextUnlinkFault: { code: string; match: (path: string) => boolean } | null = null;
  private nextRenameFault: { code: string; match: (from: string, to: string) => boolean } | null = null;
  /** Mutating calls still allowed before every further one fails; null when unlimited. */
  private mutationsLeft: number | null = null;
  private freeBytes = Infinity;
  /** Every write and fsync seen, for tests that count syscalls. */
  writes = 0;
  fsyncs = 0;

  constructor(private readonly inner: Fs = nodeFs) {}

  /** The next write to a matching file fails with `code` and writes nothing. */
  failNextWrite(code = 'EIO', match: (path: string) => boolean = () => true): void {
    this.nextWriteFault = { code, tearBytes: 0, match };
  }

  /** The next write to a matching file writes only its first `bytes` bytes, then fails with EIO. */
  tearNextWrite(bytes: number, match: (path: string) => boolean = () => true): void {
    this.nextWriteFault = { code: 'EIO', tearBytes: bytes, match };
  }

  /** The next fsync of a matching file fails with `code`. */
  failNextFsync(code = 'EIO', match: (path: string) => boolean = () => true): void {
    this.nextFsyncFault = { code, match };
  }

  /** The next unlink of a matching path fails with `code` and removes nothing. */
  failNextUnlink(code = 'EIO', match: (path: string) => boolean = () => true): void {
    this.nextUnlinkFault = { code, match };
  }

  /** The next rename matching `match` fails with `code` and moves nothing. */
  failNextRename(code = 'EIO', match: (from: string, to: string) => boolean = () => true): void {
    this.nextRenameFault = { code, match };
  }

  /**
   * After `count` more writes, fsyncs, truncations, renames or unlinks, every
   * further one fails with EIO and changes nothing, as if the process had died
   * there; null lifts the limit. Stepping `count` up from 0 puts a crash at
   * each step of a multi-file operation.
   */
  failAfterMutations(count: number | null): void {
    this.mutationsLeft = count;
  }

  /** Writes past this many more bytes write what fits and fail with ENOSPC. */
  setFreeBytes(bytes: number): void {
    this.freeBytes = bytes;
  }

  /** Closes every file still open, as the death of the process would; nothing is flushed. */
  crash(): void {
    for (const fd of [...this.paths.keys()]) this.close(fd);
  }

  openCount(): number {
    return this.paths.size;
  }

  open(path: string, mode: OpenMode): number {
    const fd = this.inner.open(path, mode);
    this.paths.set(fd, path);
    return fd;
  }

  close(fd: number): void {
    this.paths.delete(fd);
    this.inner.close(fd);
  }

  write(fd: number, buf: Buffer, offset: number, length: number, position: number): number {
    this.writes++;
    const path = this.paths.get(fd) ?? '';
    this.mutation('write', path);
    const fault = this.nextWriteFault;
    if (fault && fault.match(path)) {
      this.nextWriteFault = null;
      if (fault.tearBytes > 0) this.inner.write(fd, buf, offset, Math.min(fault.tearBytes, length), position);
      throw errnoError(fault.code, 'write', `simulated failure writing ${path}`);
    }
    if (length > this.freeBytes) {
      const fits = Math.max(0, this.freeBytes);
      if (fits > 0) this.inner.write(fd, buf, offset, fits, position);
      this.freeBytes = 0;
      throw errnoError('ENOSPC', 'write', `no space left writing ${path}`);
    }
    const n = this.inner.write(fd, buf, offset, length, position);
    if (this.freeBytes !== Infinity) this.freeBytes -= n;
    return n;
  }

  read(fd: number, buf: Buffer, offset: number, length: number, position: number): number {
    return this.inner.read(fd, buf, offset, length, position);
  }

  fsync(fd: number): void {
    this.fsyncs++;
    const path = this.paths.get(fd) ?? '';
    this.mutation('fsync', path);
    const fault = this.nextFsyncFault;
    if (fault && fault.match(path)) {
      this.nextFsyncFault = null;
      throw errnoError(fault.code, 'fsync', `simulated failure syncing ${path}`);
    }
    this.inner.fsync(fd);
  }

  ftruncate(fd: number, length: number): void {
    this.mutation('ftruncate', this.paths.get(fd) ?? '');
    this.inner.ftruncate(fd, length);
  }
  size(fd: number): number {
    return this.inner.size(fd);
  }
  rename(from: string, to: string): void {
    this.mutation('rename', from);
    const fault = this.nextRenameFault;
    if (fault && fault.match(from, to)) {
      this.nextRenameFault = null;
      throw errnoError(fault.code, 'rename', `simulated failure renaming ${from}`);
    }
    this.inner.rename(from, to);
  }
  unlink(path: string): void {
    this.mutation('unlink', path);
    const fault = this.nextUnlinkFault;
    if (fault && fault.match(path)) {
      this.nextUnlinkFault = null;
      throw errnoError(fault.code, 'unlink', `simulated failure unlinking ${path}`);
    }
    this.inner.unlink(path);
  }
  readdir(path: string): string[] {
    return this.inner.readdir(path);
  }

  private mutation(syscall: string, path: string): void {
    if (this.mutationsLeft === null) return;
    if (this.mutationsLeft <= 0) throw errnoError('EIO', syscall, `simulated crash before ${syscall} of ${path}`);
    this.mutationsLeft--;
  }
  mkdir(path: string): void {
    this.inner.mkdir(path);
  }
  exists(path: string): boolean {
    return this.inner.exists(path);
  }
  syncDir(path: string): void {
    this.inner.syncDir(path);
  }
}

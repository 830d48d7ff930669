/**
 * The size of the file system a log directory lives on, as DescribeLogDirs v4
 * reports it (Kafka's FileStore total and usable space).
 */
import { statfsSync } from 'node:fs';

export interface DiskSpace {
  /** Bytes of the whole file system. */
  readonly totalBytes: bigint;
  /** Bytes this process may still write (what is free to unprivileged users). */
  readonly usableBytes: bigint;
}

/**
 * Example: diskSpace('/var/lib/gregor') -> { totalBytes: 270553174016n,
 * usableBytes: 84058169344n }; null when the file system cannot be asked
 * (the directory is gone, or an in-memory fs stands in for the disk).
 */
export function diskSpace(dir: string): DiskSpace | null {
  try {
    const s = statfsSync(dir, { bigint: true });
    return { totalBytes: s.blocks * s.bsize, usableBytes: s.bavail * s.bsize };
  } catch {
    return null;
  }
}

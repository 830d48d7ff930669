/**
 * Small files that must never be seen half-written (checkpoints, metadata):
 * written to a temporary file, fsynced, renamed over the old one, and the
 * directory fsynced so the rename itself survives a crash.
 */
import { closeSync, fsyncSync, openSync, renameSync, writeSync, readFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';

export function writeFileAtomic(path: string, data: string | Buffer): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncDir(dirname(path));
}

function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some file systems refuse fsync on directories; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export function readFileIfExists(path: string): string | null {
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}

/** Java-properties style `key=value` lines, as Kafka's meta.properties uses. */
export function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const m = /^([^=:\s]+)\s*[=:\s]\s*(.*)$/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
    else out.set(line, '');
  }
  return out;
}

export function formatProperties(entries: Iterable<[string, string]>): string {
  return [...entries].map(([k, v]) => `${k}=${v}`).join('\n') + '\n';
}

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirError, loadOrCreateIdentity, lockDataDir } from './data-dir.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-dir-'));
  dirs.push(d);
  return d;
}

/** A pid that no process has: higher than Linux's largest. */
const DEAD_PID = 4194304 + 17;

describe('data directory identity', () => {
  it('writes Kafka-style meta.properties once and reads it back', () => {
    const dir = tempDir();
    const first = loadOrCreateIdentity(dir, 3);
    expect(readFileSync(join(dir, 'meta.properties'), 'utf8')).toContain(`cluster.id=${first.clusterId}`);
    expect(loadOrCreateIdentity(dir, 3)).toEqual(first);
    expect(() => loadOrCreateIdentity(dir, 4)).toThrow(DataDirError);
  });

  it("takes a cluster's id when new, and refuses a directory of another cluster or of the other kind of store", () => {
    const dir = tempDir();
    const etcd = { clusterId: 'cluster-aaaaaaaaaaaaaa', store: 'etcd' as const };
    expect(loadOrCreateIdentity(dir, 2, etcd).clusterId).toBe('cluster-aaaaaaaaaaaaaa');
    expect(readFileSync(join(dir, 'meta.properties'), 'utf8')).toContain('metadata.store=etcd');
    expect(loadOrCreateIdentity(dir, 2, etcd).clusterId).toBe('cluster-aaaaaaaaaaaaaa');
    expect(() => loadOrCreateIdentity(dir, 2, { ...etcd, clusterId: 'cluster-bbbbbbbbbbbbbb' })).toThrow(/belongs to cluster cluster-aaaaaaaaaaaaaa/);
    // On the local store the etcd cluster's logs would all look stray: refused.
    expect(() => loadOrCreateIdentity(dir, 2)).toThrow(/metadata is in etcd; start with --metadata/);
    const local = tempDir();
    loadOrCreateIdentity(local, 2);
    expect(() => loadOrCreateIdentity(local, 2, { clusterId: 'x', store: 'etcd' })).toThrow(/own \(local\) metadata store/);
  });

  it('gives a directory without directory.id one, and keeps it', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'meta.properties'), 'version=1\ncluster.id=abcdefghijklmnopqrstuv\nnode.id=1\n');
    const a = loadOrCreateIdentity(dir, 1);
    expect(loadOrCreateIdentity(dir, 1).directoryId).toBe(a.directoryId);
  });
});

describe('data directory lock', () => {
  it('is taken once per process and released by its release function', () => {
    const dir = tempDir();
    const release = lockDataDir(dir);
    expect(() => lockDataDir(dir)).toThrow(/in use by another broker in this process/);
    release();
    expect(existsSync(join(dir, '.lock'))).toBe(false);
    lockDataDir(dir)();
  });

  it('takes over a lock left by a process that is gone, and an empty one', () => {
    const dir = tempDir();
    writeFileSync(join(dir, '.lock'), String(DEAD_PID));
    lockDataDir(dir)();
    writeFileSync(join(dir, '.lock'), '');
    lockDataDir(dir)();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a lock held by a live process', () => {
    const dir = tempDir();
    writeFileSync(join(dir, '.lock'), String(process.ppid));
    expect(() => lockDataDir(dir)).toThrow(new RegExp(`pid ${process.ppid}`));
  });

  it('goes to exactly one of several processes racing for a stale lock', async () => {
    const built = resolve(import.meta.dirname, '..', 'dist', 'storage', 'data-dir.js');
    expect(existsSync(built), `${built} missing: run npm run build first`).toBe(true);
    const script = `
      const { lockDataDir } = await import(${JSON.stringify(built)});
      try { lockDataDir(process.argv[1]); console.log('won'); await new Promise((r) => setTimeout(r, 1500)); }
      catch (e) { console.log('lost'); }`;
    for (let round = 0; round < 3; round++) {
      const dir = tempDir();
      writeFileSync(join(dir, '.lock'), String(DEAD_PID));
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, () => new Promise<string>((res) => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
          let out = '';
          child.stdout.on('data', (d: Buffer) => (out += d));
          child.on('close', () => res(out.trim()));
        })),
      );
      expect(outcomes.filter((o) => o === 'won'), `round ${round}: ${outcomes.join(',')}`).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'lost')).toHaveLength(5);
    }
  });
});

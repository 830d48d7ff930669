/**
 * A broker's data directory: its identity file (meta.properties, the same keys
 * Kafka writes) and a lock so two brokers never share one directory.
 */
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUuid } from '../wire/uuid.js';
import { formatProperties, parseProperties, readFileIfExists, writeFileAtomic } from './atomic-file.js';

export interface DirIdentity {
  clusterId: string;
  nodeId: number;
  directoryId: string;
}


export class DataDirError extends Error {}

const lockedHere = new Set<string>();

/** Where the cluster's metadata lives, as a data directory remembers it (meta.properties, metadata.store). */
export type MetadataStoreKind = 'local' | 'etcd';

/**
 * Reads meta.properties, or writes a new one on first start. A directory that
 * belongs to another node id is refused rather than silently adopted, and so
 * is one made with the other kind of metadata store (its logs would look
 * stray to the other and be deleted) or of another cluster than `clusterId`
 * (the id the cluster's metadata holds), which also becomes the id of a new
 * directory.
 */
export function loadOrCreateIdentity(dir: string, nodeId: number, cluster: { clusterId?: string; store?: MetadataStoreKind } = {}): DirIdentity {
  const store = cluster.store ?? 'local';
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'meta.properties');
  const text = readFileIfExists(path);
  if (text !== null) {
    const props = parseProperties(text);
    const stored = Number(props.get('node.id'));
    const storedCluster = props.get('cluster.id');
    if (!storedCluster || !Number.isInteger(stored)) {
      throw new DataDirError(`${path} is incomplete (needs cluster.id and node.id); restore it or point log.dirs at an empty directory`);
    }
    if (stored !== nodeId) {
      throw new DataDirError(`${dir} belongs to node.id ${stored}, but this broker is node.id ${nodeId}; use --broker-id ${stored} or another data directory`);
    }
    const storedStore = props.get('metadata.store') === 'etcd' ? 'etcd' : 'local';
    if (storedStore !== store) {
      throw new DataDirError(
        storedStore === 'etcd'
          ? `${dir} belongs to a cluster whose metadata is in etcd; start with --metadata etcd://HOST:PORT of that cluster (on the local store its logs would be deleted as unknown)`
          : `${dir} belongs to a broker on its own (local) metadata store; start without --metadata to serve it, or point log.dirs at an empty directory to join the etcd cluster`,
      );
    }
    if (cluster.clusterId !== undefined && storedCluster !== cluster.clusterId) {
      throw new DataDirError(
        `${dir} belongs to cluster ${storedCluster}, but the metadata in etcd is of cluster ${cluster.clusterId}; check metadata.store and metadata.etcd.root, or point log.dirs at an empty directory to join this cluster`,
      );
    }
    const directoryId = props.get('directory.id');
    if (directoryId) return { clusterId: storedCluster, nodeId, directoryId };
    // Older files lack directory.id; give the directory one and keep it.
    const identity: DirIdentity = { clusterId: storedCluster, nodeId, directoryId: randomUuid() };
    writeIdentity(path, identity, store);
    return identity;
  }
  const identity: DirIdentity = { clusterId: cluster.clusterId ?? randomUuid(), nodeId, directoryId: randomUuid() };
  writeIdentity(path, identity, store);
  return identity;
}

function writeIdentity(path: string, identity: DirIdentity, store: MetadataStoreKind): void {
  const props: [string, string][] = [
    ['version', '1'],
    ['cluster.id', identity.clusterId],
    ['node.id', String(identity.nodeId)],
    ['directory.id', identity.directoryId],
  ];
  // Kafka reads no such key; gregor writes it only for an etcd cluster's directories.
  if (store === 'etcd') props.push(['metadata.store', 'etcd']);
  writeFileAtomic(path, formatProperties(props));
}

/**
 * Takes `.lock` in the directory. The lock file is written whole under a private
 * name and then hard-linked into place, so it never exists empty and only one
 * process can create it. A lock left by a process that no longer runs is moved
 * aside under a unique name first (a rename only one contender can win) and
 * taken over only if what was moved is still that dead holder's lock.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, '.lock');
  // The pid in the file cannot tell two brokers of one process apart.
  if (lockedHere.has(path)) throw new DataDirError(`${dir} is in use by another broker in this process; choose another data directory`);
  const mine = `${path}.${process.pid}.${randomUuid()}`;
  writeFileSync(mine, String(process.pid));
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(mine, path);
        lockedHere.add(path);
        return () => {
          lockedHere.delete(path);
          removeIfPresent(path);
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = readHolder(path);
      if (holder === undefined) continue; // released meanwhile: try again
      if (holder !== process.pid && isAlive(holder)) {
        throw new DataDirError(`${dir} is in use by another gregor process (pid ${holder}); stop it or choose another data directory`);
      }
      const aside = `${path}.stale.${randomUuid()}`;
      try {
        renameSync(path, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // another contender moved it
        throw err;
      }
      const moved = readHolder(aside);
      if (moved !== holder) {
        // A live contender's fresh lock was moved: put it back and let it win.
        try {
          linkSync(aside, path);
        } catch {
          // someone holds the name again; the next attempt reads who
        }
      }
      removeIfPresent(aside);
    }
    throw new DataDirError(`could not lock ${dir}: other processes keep taking the lock`);
  } finally {
    removeIfPresent(mine);
  }
}

/** Deletes a file that may already be gone (unlinkSync: rmSync loads a module on first use). */
function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** The pid written in a lock file: undefined when the file is gone, 0 when it holds no valid pid. */
function readHolder(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function isAlive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A broker's data directory: its identity file (meta.properties, the same keys
 * Kafka writes) and a lock so two brokers never share one directory.
 */
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
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

/**
 * Reads meta.properties, or writes a new one on first start. A directory that
 * belongs to another node id is refused rather than silently adopted.
 */
export function loadOrCreateIdentity(dir: string, nodeId: number): DirIdentity {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'meta.properties');
  const text = readFileIfExists(path);
  if (text !== null) {
    const props = parseProperties(text);
    const stored = Number(props.get('node.id'));
    const clusterId = props.get('cluster.id');
    if (!clusterId || !Number.isInteger(stored)) {
      throw new DataDirError(`${path} is incomplete (needs cluster.id and node.id); restore it or point log.dirs at an empty directory`);
    }
    if (stored !== nodeId) {
      throw new DataDirError(`${dir} belongs to node.id ${stored}, but this broker is node.id ${nodeId}; use --broker-id ${stored} or another data directory`);
    }
    return { clusterId, nodeId, directoryId: props.get('directory.id') ?? randomUuid() };
  }
  const identity: DirIdentity = { clusterId: randomUuid(), nodeId, directoryId: randomUuid() };
  writeFileAtomic(
    path,
    formatProperties([
      ['version', '1'],
      ['cluster.id', identity.clusterId],
      ['node.id', String(nodeId)],
      ['directory.id', identity.directoryId],
    ]),
  );
  return identity;
}

/**
 * Takes `.lock` in the directory. A lock left by a process that no longer runs is
 * taken over; one held by a live process is an error.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, '.lock');
  // The pid in the file cannot tell two brokers of one process apart.
  if (lockedHere.has(path)) throw new DataDirError(`${dir} is in use by another broker in this process; choose another data directory`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      lockedHere.add(path);
      return () => {
        lockedHere.delete(path);
        try {
          unlinkSync(path);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new DataDirError(`${dir} is in use by another gregor process (pid ${holder}); stop it or choose another data directory`);
      }
      if (existsSync(path)) unlinkSync(path);
    }
  }
  throw new DataDirError(`could not lock ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

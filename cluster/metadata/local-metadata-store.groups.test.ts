import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalMetadataStore } from './local-metadata-store.js';
import type { MetadataImage } from './metadata-image.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-store-'));
  dirs.push(d);
  return d;
}

const self = { nodeId: 1, rack: null, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }] };
const open = (d: string) => new LocalMetadataStore(d, 'cluster-id', self);

describe('LocalMetadataStore: group config overrides', () => {
  it('keeps a group\'s overrides across a restart, tells listeners, and forgets them when emptied', async () => {
    const d = dir();
    const store = open(d);
    const seen: MetadataImage[] = [];
    store.subscribe((image) => seen.push(image));
    await store.alterGroupConfigs('g', { 'share.auto.offset.reset': 'earliest', 'share.record.lock.duration.ms': '15000' });
    expect(seen.at(-1)!.groupConfigs.get('g')).toEqual({ 'share.auto.offset.reset': 'earliest', 'share.record.lock.duration.ms': '15000' });
    expect(store.groupConfigOverrides('g')).toEqual(new Map([['share.auto.offset.reset', 'earliest'], ['share.record.lock.duration.ms', '15000']]));
    expect(store.groupConfigOverrides('other').size).toBe(0);

    const reopened = open(d);
    expect(reopened.groupConfigOverrides('g').get('share.record.lock.duration.ms')).toBe('15000');
    await reopened.alterGroupConfigs('g', {});
    expect(reopened.image().groupConfigs.has('g')).toBe(false);
    expect(open(d).groupConfigOverrides('g').size).toBe(0);
  });

  it('takes any group id, \'__proto__\' too', async () => {
    const d = dir();
    const store = open(d);
    await store.alterGroupConfigs('__proto__', { 'share.isolation.level': 'read_committed' });
    await store.alterGroupConfigs('constructor', { 'share.delivery.count.limit': '3' });
    expect([...store.image().groupConfigs.keys()].sort()).toEqual(['__proto__', 'constructor']);
    expect(open(d).groupConfigOverrides('__proto__').get('share.isolation.level')).toBe('read_committed');
  });
});

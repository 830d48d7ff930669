import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalMetadataStore } from '../metadata/local-metadata-store.js';
import { ProducerIdManager, ProducerIdsUnavailableError, type ProducerIdBlock } from './producer-id-manager.js';

const silent = { warn: () => {} };

class Blocks {
  next = 0n;
  requests = 0;
  fail = false;
  async allocateProducerIdBlock(): Promise<ProducerIdBlock> {
    this.requests++;
    if (this.fail) throw new Error('controller unavailable');
    const first = this.next;
    this.next += 10n;
    return { firstProducerId: first, size: 10 };
  }
}

describe('ProducerIdManager', () => {
  it('hands out ids from consecutive blocks, asking for the next one at 90%', async () => {
    const blocks = new Blocks();
    const ids = new ProducerIdManager(blocks, silent).start();
    const got: bigint[] = [];
    for (let i = 0; i < 9; i++) got.push(await ids.generateProducerId());
    expect(got).toEqual([0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
    expect(blocks.requests).toBe(1);
    got.push(await ids.generateProducerId());
    expect(blocks.requests).toBe(2);
    for (let i = 0; i < 5; i++) got.push(await ids.generateProducerId());
    expect(got.slice(9)).toEqual([9n, 10n, 11n, 12n, 13n, 14n]);
  });

  it('lets callers that wait for the same block share it, each with its own id', async () => {
    const blocks = new Blocks();
    const ids = new ProducerIdManager(blocks, silent);
    const got = await Promise.all(Array.from({ length: 5 }, () => ids.generateProducerId()));
    expect([...got].sort()).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(blocks.requests).toBe(1);
  });

  it('fails while no block can be had, and recovers after the backoff', async () => {
    const blocks = new Blocks();
    blocks.fail = true;
    let now = 0;
    const ids = new ProducerIdManager(blocks, silent, () => now).start();
    await expect(ids.generateProducerId()).rejects.toBeInstanceOf(ProducerIdsUnavailableError);
    blocks.fail = false;
    await expect(ids.generateProducerId()).rejects.toBeInstanceOf(ProducerIdsUnavailableError);
    now += 50;
    expect(await ids.generateProducerId()).toBe(0n);
  });

  it('gets blocks from the local metadata store that never repeat across restarts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-pid-'));
    const self = { nodeId: 1, rack: null, endpoints: [] };
    const first = new LocalMetadataStore(dir, 'cluster', self);
    expect(await first.allocateProducerIdBlock()).toEqual({ firstProducerId: 0n, size: 1000 });
    expect(await first.allocateProducerIdBlock()).toEqual({ firstProducerId: 1000n, size: 1000 });
    await first.close();
    const second = new LocalMetadataStore(dir, 'cluster', self);
    expect(await second.allocateProducerIdBlock()).toEqual({ firstProducerId: 2000n, size: 1000 });
    const ids = new ProducerIdManager(second, silent).start();
    expect(await ids.generateProducerId()).toBe(3000n);
    await second.close();
  });
});

import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeFs } from './fs.js';
import { OffsetIndex } from './offset-index.js';
import { TimeIndex } from './time-index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-idx-'));
  dirs.push(d);
  return d;
}

describe('OffsetIndex', () => {
  it('finds the last entry at or below an offset by binary search', () => {
    const idx = new OffsetIndex(nodeFs, join(tempDir(), 'x.index'), 100n, 1 << 20, false);
    for (let i = 1; i <= 1000; i++) idx.append(100n + BigInt(i * 10), i * 4096);
    expect(idx.lookup(99n)).toEqual({ offset: 100n, position: 0 });
    expect(idx.lookup(105n)).toEqual({ offset: 100n, position: 0 });
    expect(idx.lookup(110n)).toEqual({ offset: 110n, position: 4096 });
    expect(idx.lookup(5555n)).toEqual({ offset: 5550n, position: 545 * 4096 });
    expect(idx.lookup(1n << 40n)).toEqual({ offset: 10100n, position: 1000 * 4096 });
  });

  it('is full at segment.index.bytes / 8 entries; truncates; writes only at flush', () => {
    const path = join(tempDir(), 'x.index');
    const idx = new OffsetIndex(nodeFs, path, 0n, 24, false);
    idx.append(5n, 100);
    idx.append(9n, 200);
    expect(idx.isFull).toBe(false);
    idx.append(12n, 300);
    expect(idx.isFull).toBe(true);
    idx.flush();
    expect(statSync(path).size).toBe(24);
    idx.truncateTo(9n);
    expect(idx.lastEntry()).toEqual({ offset: 5n, position: 100 });
    idx.flush();
    expect(statSync(path).size).toBe(8);
    const loaded = new OffsetIndex(nodeFs, path, 0n, 24, true);
    expect(loaded.count).toBe(1);
    expect(loaded.sanityProblem(1000)).toBeNull();
    expect(loaded.sanityProblem(50)).toMatch(/outside/);
    expect(new OffsetIndex(nodeFs, path + '.gone', 0n, 24, true).sanityProblem(1000)).toMatch(/missing/);
  });
});

describe('TimeIndex', () => {
  it('keeps strictly rising timestamps and looks up the last entry at or below a time', () => {
    const idx = new TimeIndex(nodeFs, join(tempDir(), 'x.timeindex'), 0n, 1 << 20, false);
    idx.maybeAppend(1000n, 0n);
    idx.maybeAppend(1000n, 5n); // not later: ignored
    idx.maybeAppend(2000n, 10n);
    idx.maybeAppend(1500n, 20n); // earlier: ignored
    idx.maybeAppend(3000n, 30n);
    expect(idx.count).toBe(3);
    expect(idx.lookup(999n)).toBeNull();
    expect(idx.lookup(1000n)).toEqual({ timestamp: 1000n, offset: 0n });
    expect(idx.lookup(2999n)).toEqual({ timestamp: 2000n, offset: 10n });
    expect(idx.lookup(5000n)).toEqual({ timestamp: 3000n, offset: 30n });
    idx.truncateTo(10n);
    expect(idx.lastEntry()).toEqual({ timestamp: 1000n, offset: 0n });
    expect(idx.sanityProblem(1n)).toBeNull();
  });
});

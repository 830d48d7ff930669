import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PARTITION_CHECKPOINT_FILE,
  formatOffsetCheckpoint,
  parseOffsetCheckpoint,
  readPartitionCheckpoint,
  writePartitionCheckpoint,
} from './checkpoint.js';
import { nodeFs } from './fs.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('offset checkpoint files', () => {
  it('write a version line, a count line and one line per entry', () => {
    const text = formatOffsetCheckpoint(new Map([['recovery-point', 42n], ['high-watermark', 40n]])).toString();
    expect(text).toBe('0\n2\nrecovery-point 42\nhigh-watermark 40\n');
    expect(parseOffsetCheckpoint(text)).toEqual(new Map([['recovery-point', 42n], ['high-watermark', 40n]]));
  });

  it.each([
    ['wrong version', '1\n0\n'],
    ['count mismatch', '0\n2\na 1\n'],
    ['bad line', '0\n1\na b\n'],
    ['empty', ''],
  ])('read as absent when malformed: %s', (_, text) => {
    expect(parseOffsetCheckpoint(text)).toBeNull();
  });

  it('round-trip a partition checkpoint; a damaged file reads as none', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-ckpt-'));
    dirs.push(dir);
    expect(readPartitionCheckpoint(nodeFs, dir)).toBeNull();
    const cp = { recoveryPoint: 10n, logStartOffset: 2n, highWatermark: 9n };
    writePartitionCheckpoint(nodeFs, dir, cp);
    expect(readPartitionCheckpoint(nodeFs, dir)).toEqual(cp);
    writeFileSync(join(dir, PARTITION_CHECKPOINT_FILE), '0\n3\nrecovery-point 1');
    expect(readPartitionCheckpoint(nodeFs, dir)).toBeNull();
  });
});

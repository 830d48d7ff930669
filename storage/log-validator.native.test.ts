import { describe, expect, it, vi } from 'vitest';
import { ErrorCode } from '../wire/errors.js';
import { Compression, buildBatch } from '../wire/record-batch.js';
import { logConfig } from './log-config.js';
import { validateAndAssignOffsets } from './log-validator.js';

// The snappy library fails to load while `broken` is set, as on a broken installation.
const state = vi.hoisted(() => ({ broken: false }));
vi.mock('../wire/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../wire/native.js')>();
  return {
    ...real,
    snappy: () => {
      if (state.broken) throw new real.NativeLibraryError('the snappy library cannot be loaded (simulated); reinstall gregor\'s dependencies with npm install');
      return real.snappy();
    },
  };
});

describe('a codec library that cannot load', () => {
  it('fails the batch as a server error that names the library, not as a corrupt message', () => {
    const batch = buildBatch({ compression: Compression.Snappy, records: [{ key: 'k', value: 'v' }] });
    const ctx = { nextOffset: 0n, leaderEpoch: 0, now: Date.now(), config: logConfig() };
    expect(validateAndAssignOffsets(batch, ctx).ok).toBe(true);
    state.broken = true;
    try {
      const r = validateAndAssignOffsets(batch, ctx);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.errorCode).toBe(ErrorCode.UNKNOWN_SERVER_ERROR);
      expect(r.message).toContain('snappy library cannot be loaded');
    } finally {
      state.broken = false;
    }
  });
});

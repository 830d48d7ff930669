import { describe, expect, it } from 'vitest';
import { Histogram } from './histogram.js';

describe('Histogram', () => {
  it('answers exactly for small values', () => {
    const h = new Histogram();
    for (let v = 1; v <= 200; v++) h.record(v);
    expect(h.count).toBe(200);
    expect(h.percentile(50)).toBe(100);
    expect(h.percentile(99)).toBe(198);
    expect(h.percentile(100)).toBe(200);
    expect(h.min).toBe(1);
    expect(h.max).toBe(200);
    expect(h.mean).toBeCloseTo(100.5, 10);
  });

  it('stays within 1/128 above the true nearest-rank percentile for large values', () => {
    const h = new Histogram();
    const values: number[] = [];
    let x = 12345;
    for (let i = 0; i < 20000; i++) {
      // A spread over six orders of magnitude, from a fixed pseudo-random sequence.
      x = (x * 1103515245 + 12345) % 2147483648;
      const v = Math.floor(10 ** (1 + (x / 2147483648) * 6));
      values.push(v);
      h.record(v);
    }
    values.sort((a, b) => a - b);
    for (const p of [1, 25, 50, 90, 99, 99.9, 99.99]) {
      const exact = values[Math.ceil((p / 100) * values.length) - 1]!;
      const got = h.percentile(p);
      expect(got).toBeGreaterThanOrEqual(exact);
      expect(got).toBeLessThanOrEqual(exact * (1 + 1 / 128));
    }
    expect(h.percentile(100)).toBe(values[values.length - 1]);
    expect(h.max).toBe(values[values.length - 1]);
  });

  it('never reports a percentile above the maximum or below the minimum', () => {
    const h = new Histogram();
    h.record(1_000_001, 3);
    expect(h.percentile(1)).toBe(1_000_001);
    expect(h.percentile(99.9)).toBe(1_000_001);
  });

  it('counts weighted values and merges histograms', () => {
    const a = new Histogram();
    const b = new Histogram();
    a.record(10, 99);
    b.record(5000, 1);
    a.add(b);
    expect(a.count).toBe(100);
    expect(a.percentile(99)).toBe(10);
    expect(a.percentile(99.9)).toBe(5000);
    expect(a.min).toBe(10);
  });

  it('rounds fractions, records negatives as zero and is NaN when empty', () => {
    const h = new Histogram();
    expect(h.percentile(50)).toBeNaN();
    expect(h.max).toBe(0);
    h.record(2.6);
    h.record(-4);
    expect(h.min).toBe(0);
    expect(h.max).toBe(3);
  });

  it('handles values beyond 2^31 and clamps beyond 2^52', () => {
    const h = new Histogram();
    h.record(3 * 2 ** 40);
    const p = h.percentile(50);
    expect(p).toBe(3 * 2 ** 40);
    h.record(2 ** 60);
    expect(h.clamped).toBe(1);
    expect(h.max).toBe(2 ** 52 - 1);
  });
});

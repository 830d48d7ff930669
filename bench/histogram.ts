/**
 * A log-linear histogram of non-negative integer values (latencies in
 * microseconds, say) for the benchmarks: values below 256 are counted
 * exactly, and every power of two above that is split into 128 equal
 * buckets, so a reported value is never more than 1/128 (0.8 %) above
 * the value recorded. Memory is fixed (about 6,000 counters, up to 2^52),
 * recording is a few integer operations, and percentiles use the nearest
 * rank, as HdrHistogram does; the maximum and minimum are kept exactly.
 *
 * Example:
 *   const h = new Histogram();
 *   for (const us of [120, 130, 9000]) h.record(us);
 *   h.percentile(50); // 130
 *   h.max;            // 9000
 */

/** Linear buckets per power of two (2^SUB_BITS). */
const SUB_BITS = 7;
const SUB = 1 << SUB_BITS;
/** Largest value recorded as itself; larger ones are clamped to it (and counted in `clamped`). */
const MAX_VALUE = 2 ** 52 - 1;
const BUCKETS = (52 - SUB_BITS) * SUB + 2 * SUB;

/** Position of the highest set bit of a positive integer below 2^53. */
function highBit(v: number): number {
  if (v < 2 ** 31) return 31 - Math.clz32(v);
  return 31 + highBit(Math.floor(v / 2 ** 31));
}

/** The bucket a value falls in. Values below 2 * SUB are their own bucket. */
function bucketOf(v: number): number {
  if (v < 2 * SUB) return v;
  const shift = highBit(v) - SUB_BITS;
  return shift * SUB + Math.floor(v / 2 ** shift);
}

/** The largest value that falls in bucket `i`. */
function bucketTop(i: number): number {
  if (i < 2 * SUB) return i;
  const shift = Math.floor(i / SUB) - 1;
  const mantissa = i - shift * SUB;
  return (mantissa + 1) * 2 ** shift - 1;
}

export class Histogram {
  private readonly counts = new Float64Array(BUCKETS);
  private total = 0;
  private sum = 0;
  private lowest = Infinity;
  private highest = 0;
  /** Values above 2^52 - 1, recorded as that. */
  clamped = 0;

  /** Records `value` (rounded to an integer, negatives as 0) `count` times. */
  record(value: number, count = 1): void {
    let v = Math.round(value);
    if (!(v > 0)) v = 0;
    if (v > MAX_VALUE) {
      v = MAX_VALUE;
      this.clamped += count;
    }
    this.counts[bucketOf(v)]! += count;
    this.total += count;
    this.sum += v * count;
    if (v < this.lowest) this.lowest = v;
    if (v > this.highest) this.highest = v;
  }

  /** Adds every value recorded in `other`. */
  add(other: Histogram): void {
    for (let i = 0; i < BUCKETS; i++) this.counts[i]! += other.counts[i]!;
    this.total += other.total;
    this.sum += other.sum;
    this.clamped += other.clamped;
    if (other.total > 0) {
      this.lowest = Math.min(this.lowest, other.lowest);
      this.highest = Math.max(this.highest, other.highest);
    }
  }

  /** Values recorded. */
  get count(): number {
    return this.total;
  }

  /** The largest value recorded (exact); 0 when empty. */
  get max(): number {
    return this.highest;
  }

  /** The smallest value recorded (exact); 0 when empty. */
  get min(): number {
    return this.total === 0 ? 0 : this.lowest;
  }

  get mean(): number {
    return this.total === 0 ? 0 : this.sum / this.total;
  }

  /**
   * The nearest-rank `p`th percentile (0 < p <= 100): the smallest recorded
   * value that at least p % of the values are at or below, reported as the
   * top of its bucket (never above the maximum). NaN when empty.
   * Example: after recording 1..1000, percentile(99) is 990.
   */
  percentile(p: number): number {
    if (this.total === 0) return NaN;
    const rank = Math.max(1, Math.ceil((Math.min(100, Math.max(0, p)) / 100) * this.total));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.max(this.min, Math.min(bucketTop(i), this.highest));
    }
    return this.highest;
  }
}

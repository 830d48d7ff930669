/**
 * Reusable memory for the bytes a Fetch answer reads from the log. A fresh
 * large Buffer costs a page fault per 4 KiB the first time it is filled (a
 * 1 MiB read into a new buffer measured about three times as long as into a
 * reused one), so reads are carved out of slabs that come back once every
 * piece cut from them has been sent.
 *
 * Slabs are 8 MiB so that a partition read of up to 4 MiB (what the throughput
 * benchmark asks for per partition; clients default to 1 MiB) is pooled too: with 4 MiB slabs,
 * each such read took a fresh buffer, and a one-partition consume of 100 B
 * records ran at about 9-10M records/s against 16-18M pooled. Up to 16 free
 * slabs are kept, enough for four connections each fetching 32 MiB (64
 * partitions: 9.0-9.2M records/s with 4 kept, 9.3-11.0M with 16); the broker
 * trims them back with trimIdle() once consumers stop.
 *
 * A piece is released by whoever sends it, once the socket has taken its
 * bytes (see Writer.attach and the connection's write callback). A piece that
 * is never released is not an error: its slab is simply not reused and goes
 * to the garbage collector like any buffer.
 */

interface Slab {
  readonly mem: Buffer;
  /** Bytes handed out from the start of `mem`. */
  used: number;
  /** Pieces handed out and not yet released. */
  leases: number;
  /** No longer handing out pieces: back to the free list when `leases` reaches 0. */
  retired: boolean;
}

/** Pieces are cut at multiples of this, so that each starts aligned. */
const ALIGN = 64;

export class BufferPool {
  private current: Slab | null = null;
  private readonly free: Slab[] = [];
  private readonly releases = new WeakMap<Buffer, () => void>();
  /** Whether take() ran since the last trimIdle(). */
  private usedSinceTrim = false;

  /**
   * @param slabBytes size of each slab; a request above half of it gets a buffer of its own
   * @param maxFreeSlabs slabs kept for reuse when idle; more are left to the garbage collector
   */
  constructor(
    readonly slabBytes = 8 << 20,
    readonly maxFreeSlabs = 16,
  ) {}

  /** Slabs waiting for reuse (for tests and metrics). */
  get freeSlabs(): number {
    return this.free.length;
  }

  /**
   * `size` bytes of uninitialised memory. Give it back with `release(buf)`
   * once nothing reads it any more; until then it is never handed out again.
   */
  take(size: number): Buffer {
    if (size === 0 || size > this.slabBytes / 2) return Buffer.allocUnsafe(size);
    this.usedSinceTrim = true;
    let slab = this.current;
    if (slab === null || slab.used + size > this.slabBytes) {
      this.current = null;
      if (slab !== null) this.retire(slab);
      slab = this.free.pop() ?? { mem: Buffer.allocUnsafeSlow(this.slabBytes), used: 0, leases: 0, retired: false };
      slab.used = 0;
      slab.leases = 0;
      slab.retired = false;
      this.current = slab;
    }
    const buf = slab.mem.subarray(slab.used, slab.used + size);
    slab.used += Math.ceil(size / ALIGN) * ALIGN;
    slab.leases++;
    const owner = slab;
    let done = false;
    this.releases.set(buf, () => {
      if (done) return;
      done = true;
      owner.leases--;
      if (owner.leases > 0) return;
      if (owner.retired) this.recycle(owner);
      // Nothing cut from the slab in use is out any more: cut again from its start,
      // so that a consumer fetching one answer at a time keeps using the same memory.
      else if (this.current === owner) owner.used = 0;
    });
    return buf;
  }

  /** Gives back a buffer from `take`; the caller must not touch it afterwards. Other buffers and second calls are ignored. */
  release(buf: Buffer): void {
    const r = this.releases.get(buf);
    if (r === undefined) return;
    this.releases.delete(buf);
    r();
  }

  /** The function that releases `buf`, or null when it is not a piece of this pool. */
  releaserOf(buf: Buffer): (() => void) | null {
    return this.releases.has(buf) ? () => this.release(buf) : null;
  }

  /**
   * For a periodic timer: when nothing was taken since the previous call,
   * keeps at most `keep` free slabs and leaves the rest to the garbage
   * collector, so memory kept for a burst of consumers goes once they stop.
   */
  trimIdle(keep: number): void {
    if (this.usedSinceTrim) {
      this.usedSinceTrim = false;
      return;
    }
    if (this.free.length > keep) this.free.length = keep;
  }

  private retire(slab: Slab): void {
    slab.retired = true;
    if (slab.leases === 0) this.recycle(slab);
  }

  private recycle(slab: Slab): void {
    if (this.current === slab) return;
    if (this.free.length < this.maxFreeSlabs) this.free.push(slab);
  }
}

/** The pool Fetch answers read into; Writer.attach releases its pieces once they are sent. */
export const fetchBuffers = new BufferPool();

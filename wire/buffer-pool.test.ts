import { describe, expect, it } from 'vitest';
import { BufferPool, fetchBuffers } from './buffer-pool.js';
import { ATTACH_MIN_BYTES, Writer } from './writer.js';

describe('BufferPool', () => {
  it('never hands out memory that is still leased, and reuses a slab once all its pieces are back', () => {
    const pool = new BufferPool(1024, 2);
    // Pieces of 300 bytes take 320 (64-byte aligned): three fit a slab.
    const first = [pool.take(300), pool.take(300), pool.take(300)];
    first.forEach((p, i) => p.fill(i + 1));
    const d = pool.take(300); // a second slab
    expect(d.buffer).not.toBe(first[0]!.buffer);
    d.fill(9);
    first.forEach((p, i) => expect(p.every((x) => x === i + 1)).toBe(true));
    pool.release(first[0]!);
    pool.release(first[1]!);
    expect(pool.freeSlabs).toBe(0);
    pool.release(first[2]!);
    expect(pool.freeSlabs).toBe(1);
    // A second release of the same piece changes nothing.
    pool.release(first[2]!);
    expect(pool.freeSlabs).toBe(1);
    const more = [pool.take(300), pool.take(300)]; // fill the second slab
    expect(more.every((p) => p.buffer === d.buffer)).toBe(true);
    const g = pool.take(300); // the first slab comes back
    expect(pool.freeSlabs).toBe(0);
    expect(g.buffer).toBe(first[0]!.buffer);
    g.fill(5);
    expect(d.every((x) => x === 9)).toBe(true);
  });

  it('pools a 4 MiB partition read in the shared fetch pool, reusing its memory once it is given back', () => {
    const piece = fetchBuffers.take(4 << 20);
    expect(fetchBuffers.releaserOf(piece)).not.toBeNull();
    const memory = piece.buffer;
    fetchBuffers.release(piece);
    const again = fetchBuffers.take(4 << 20);
    expect(again.buffer).toBe(memory);
    fetchBuffers.release(again);
  });

  it('trimIdle keeps free slabs while pieces are being taken, and drops all but `keep` once idle', () => {
    const pool = new BufferPool(1024, 8);
    // Two pieces of 400 bytes (448 aligned) fit a slab: 17 fill eight slabs and start a ninth.
    const pieces = Array.from({ length: 17 }, () => pool.take(400));
    for (const p of pieces) pool.release(p);
    expect(pool.freeSlabs).toBe(8);
    pool.trimIdle(2); // pieces were taken since the last trim: nothing goes
    expect(pool.freeSlabs).toBe(8);
    pool.trimIdle(2);
    expect(pool.freeSlabs).toBe(2);
  });

  it('serves a consumer that gives each piece back before taking the next from one slab', () => {
    const pool = new BufferPool(1024, 2);
    const slabs = new Set<ArrayBufferLike>();
    for (let i = 0; i < 20; i++) {
      const piece = pool.take(300);
      slabs.add(piece.buffer);
      pool.release(piece);
    }
    expect(slabs.size).toBe(1);
  });

  it('reuses a full slab whose pieces all came back instead of allocating a new one', () => {
    const pool = new BufferPool(1024, 2);
    const a = pool.take(500);
    const b = pool.take(500);
    pool.release(a);
    pool.release(b); // the slab is still the one pieces are cut from
    const c = pool.take(500); // the slab is empty again: no new one
    expect(c.buffer).toBe(a.buffer);
  });

  it('gives requests above half a slab buffers of their own, which release ignores', () => {
    const pool = new BufferPool(1024, 2);
    const big = pool.take(600);
    expect(big.length).toBe(600);
    expect(pool.releaserOf(big)).toBeNull();
    pool.release(big);
    expect(pool.freeSlabs).toBe(0);
  });

  it('keeps at most maxFreeSlabs idle slabs', () => {
    const pool = new BufferPool(1024, 1);
    const pieces = [pool.take(600 - 100), pool.take(600 - 100), pool.take(600 - 100), pool.take(600 - 100)];
    for (const p of pieces) pool.release(p);
    expect(pool.freeSlabs).toBe(1);
  });
});

describe('Writer.attach with pooled buffers', () => {
  it('gives an attached piece back only when whenSent() runs', () => {
    const piece = fetchBuffers.take(ATTACH_MIN_BYTES * 4);
    const w = new Writer(16);
    w.int32(1).attach(piece);
    expect(w.finishChunks()).toContain(piece);
    expect(fetchBuffers.releaserOf(piece)).not.toBeNull();
    const sent = w.whenSent();
    expect(sent).not.toBeNull();
    sent!();
    expect(fetchBuffers.releaserOf(piece)).toBeNull();
  });

  it('gives a small piece back at once, as it is copied', () => {
    const piece = fetchBuffers.take(100);
    piece.fill(7);
    const w = new Writer(16);
    w.attach(piece);
    expect(fetchBuffers.releaserOf(piece)).toBeNull();
    expect(w.whenSent()).toBeNull();
    expect(w.finish().every((x) => x === 7)).toBe(true);
  });
});

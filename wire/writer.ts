import { fetchBuffers } from './buffer-pool.js';

/** Buffers shorter than this are copied by `attach`: a separate chunk costs more than copying them. */
export const ATTACH_MIN_BYTES = 4096;

/**
 * Growable big-endian writer. `finish()` returns a view of what was written;
 * `finishChunks()` returns it as pieces, with attached buffers (see `attach`)
 * among them uncopied.
 */
export class Writer {
  private buf: Buffer;
  /** Bytes written into the writer's own buffer; attached buffers are not counted. */
  pos = 0;
  /** Buffers attached by reference, each with the `pos` it goes before. */
  private attached: { at: number; buf: Buffer }[] = [];
  /** Gives pooled attached buffers back; run once the chunks are sent. */
  private releases: (() => void)[] = [];

  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  int8(v: number): this {
    this.ensure(1);
    this.buf.writeInt8(v, this.pos);
    this.pos += 1;
    return this;
  }

  bool(v: boolean): this {
    return this.int8(v ? 1 : 0);
  }

  int16(v: number): this {
    this.ensure(2);
    this.buf.writeInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  uint16(v: number): this {
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    this.ensure(4);
    this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  int64(v: bigint): this {
    this.ensure(8);
    this.buf.writeBigInt64BE(v, this.pos);
    this.pos += 8;
    return this;
  }

  float64(v: number): this {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
    return this;
  }

  uvarint(v: number): this {
    this.ensure(5);
    let n = v >>> 0;
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[this.pos++] = n;
    return this;
  }

  varint(v: number): this {
    return this.uvarint(((v << 1) ^ (v >> 31)) >>> 0);
  }

  varlong(v: bigint): this {
    this.ensure(10);
    let n = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
    while (n >= 0x80n) {
      this.buf[this.pos++] = Number(n & 0x7fn) | 0x80;
      n >>= 7n;
    }
    this.buf[this.pos++] = Number(n);
    return this;
  }

  uuid(v: string): this {
    const bytes = Buffer.from(v, 'base64url');
    if (bytes.length !== 16) throw new Error(`not a 16-byte uuid: ${v}`);
    return this.raw(bytes);
  }

  raw(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  string(v: string | null): this {
    if (v === null) return this.int16(-1);
    const len = Buffer.byteLength(v);
    this.int16(len);
    this.ensure(len);
    this.pos += this.buf.write(v, this.pos, 'utf8');
    return this;
  }

  compactString(v: string | null): this {
    if (v === null) return this.uvarint(0);
    const len = Buffer.byteLength(v);
    this.uvarint(len + 1);
    this.ensure(len);
    this.pos += this.buf.write(v, this.pos, 'utf8');
    return this;
  }

  bytes(v: Uint8Array | null): this {
    if (v === null) return this.int32(-1);
    return this.int32(v.length).raw(v);
  }

  compactBytes(v: Uint8Array | null): this {
    if (v === null) return this.uvarint(0);
    return this.uvarint(v.length + 1).raw(v);
  }

  /**
   * Appends `b` without copying it (large record sets in responses): the
   * caller hands it over and must not change it until the frame is sent.
   * Buffers under ATTACH_MIN_BYTES are copied as `raw` would. A buffer from
   * `fetchBuffers` goes back to the pool when the caller of finishChunks runs
   * `whenSent()`'s function (or at once when copied).
   */
  attach(b: Buffer): this {
    const release = fetchBuffers.releaserOf(b);
    if (b.length < ATTACH_MIN_BYTES) {
      this.raw(b);
      release?.();
      return this;
    }
    this.attached.push({ at: this.pos, buf: b });
    if (release !== null) this.releases.push(release);
    return this;
  }

  /** `bytes` with the value attached rather than copied. */
  bytesAttached(v: Buffer | null): this {
    if (v === null) return this.int32(-1);
    return this.int32(v.length).attach(v);
  }

  /** `compactBytes` with the value attached rather than copied. */
  compactBytesAttached(v: Buffer | null): this {
    if (v === null) return this.uvarint(0);
    return this.uvarint(v.length + 1).attach(v);
  }

  /**
   * Bytes written from `pos` position `start` on, counting the buffers
   * attached after that position (one attached right at `start` came before
   * whatever was then written there).
   */
  lengthSince(start: number): number {
    let n = this.pos - start;
    for (const a of this.attached) if (a.at > start) n += a.buf.length;
    return n;
  }

  /** Overwrites an int32 written earlier (e.g. a size prefix). */
  patchInt32(at: number, v: number): void {
    this.buf.writeInt32BE(v, at);
  }

  /** Forgets everything written, keeping the buffer for reuse. */
  reset(): void {
    this.pos = 0;
    this.attached = [];
    this.releases = [];
  }

  /** Everything written as one buffer: a view of the writer's own, or a copy when buffers were attached. */
  finish(): Buffer {
    if (this.attached.length === 0) return this.buf.subarray(0, this.pos);
    const joined = Buffer.concat(this.finishChunks());
    this.whenSent()?.();
    return joined;
  }

  /**
   * What to run once the chunks of finishChunks() have been handed to the
   * socket (its write callback): it gives the pooled buffers among them back.
   * Null when there are none.
   */
  whenSent(): (() => void) | null {
    if (this.releases.length === 0) return null;
    const releases = this.releases;
    this.releases = [];
    return () => {
      for (const r of releases) r();
    };
  }

  /** Everything written, in order: views of the writer's own buffer and the attached buffers themselves. */
  finishChunks(): Buffer[] {
    const out: Buffer[] = [];
    let from = 0;
    for (const a of this.attached) {
      if (a.at > from) out.push(this.buf.subarray(from, a.at));
      out.push(a.buf);
      from = a.at;
    }
    if (this.pos > from || out.length === 0) out.push(this.buf.subarray(from, this.pos));
    return out;
  }
}

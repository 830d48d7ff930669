/** Growable big-endian writer. `finish()` returns a view of what was written. */
export class Writer {
  private buf: Buffer;
  pos = 0;

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

  /** Overwrites an int32 written earlier (e.g. a size prefix). */
  patchInt32(at: number, v: number): void {
    this.buf.writeInt32BE(v, at);
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

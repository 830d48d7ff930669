import { ZERO_UUID } from './uuid.js';

export { ZERO_UUID };

/**
 * Bounds-checked reader over one frame. It never throws: the first failure is
 * remembered in `error`, the position jumps to the end, and every later read
 * returns a zero value, so decoders stay straight-line and check once at the end.
 */
export class Reader {
  pos: number;
  error: string | null = null;
  /**
   * Array elements this reader may still produce. Decoded elements cost far more
   * memory than their bytes, so a frame within the size limit could otherwise
   * exhaust the heap with millions of tiny elements.
   */
  elementBudget = Number.POSITIVE_INFINITY;

  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  fail(message: string): void {
    if (this.error === null) this.error = `${message} at byte ${this.pos}`;
    this.pos = this.end;
  }

  private take(n: number): number {
    const at = this.pos;
    if (n > this.end - at) {
      this.fail(`need ${n} bytes, have ${this.end - at}`);
      return -1;
    }
    this.pos = at + n;
    return at;
  }

  int8(): number {
    const at = this.take(1);
    return at < 0 ? 0 : this.buf.readInt8(at);
  }

  bool(): boolean {
    return this.int8() !== 0;
  }

  int16(): number {
    const at = this.take(2);
    return at < 0 ? 0 : this.buf.readInt16BE(at);
  }

  uint16(): number {
    const at = this.take(2);
    return at < 0 ? 0 : this.buf.readUInt16BE(at);
  }

  int32(): number {
    const at = this.take(4);
    return at < 0 ? 0 : this.buf.readInt32BE(at);
  }

  uint32(): number {
    const at = this.take(4);
    return at < 0 ? 0 : this.buf.readUInt32BE(at);
  }

  int64(): bigint {
    const at = this.take(8);
    return at < 0 ? 0n : this.buf.readBigInt64BE(at);
  }

  float64(): number {
    const at = this.take(8);
    return at < 0 ? 0 : this.buf.readDoubleBE(at);
  }

  /** Unsigned LEB128, at most 5 bytes (a 32-bit value). */
  uvarint(): number {
    let value = 0;
    for (let i = 0; i < 5; i++) {
      if (this.pos >= this.end) {
        this.fail('truncated varint');
        return 0;
      }
      const b = this.buf[this.pos++]!;
      value += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) {
        if (value > 0xffffffff) break;
        return value;
      }
    }
    this.fail('varint longer than 32 bits');
    return 0;
  }

  /** Zigzag-encoded signed varint (record fields). */
  varint(): number {
    const u = this.uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  /** Zigzag-encoded signed 64-bit varint. */
  varlong(): bigint {
    let value = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) {
        this.fail('truncated varlong');
        return 0n;
      }
      const b = this.buf[this.pos++]!;
      if (i === 9 && b > 1) break;
      value |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) return (value >> 1n) ^ -(value & 1n);
    }
    this.fail('varlong longer than 64 bits');
    return 0n;
  }

  uuid(): string {
    const at = this.take(16);
    return at < 0 ? ZERO_UUID : this.buf.toString('base64url', at, at + 16);
  }

  /** Raw bytes as a view into the frame (no copy). */
  raw(n: number): Buffer {
    const at = this.take(n);
    return at < 0 ? EMPTY : this.buf.subarray(at, at + n);
  }

  utf8(n: number): string {
    const at = this.take(n);
    return at < 0 ? '' : this.buf.toString('utf8', at, at + n);
  }

  /** Classic string: int16 length, -1 for null. */
  string(): string | null {
    const n = this.int16();
    if (n === -1) return null;
    if (n < -1) {
      this.fail(`negative string length ${n}`);
      return null;
    }
    return this.utf8(n);
  }

  /** Compact string: uvarint length + 1, 0 for null. */
  compactString(): string | null {
    const n = this.uvarint();
    return n === 0 ? null : this.utf8(n - 1);
  }

  /** Classic bytes: int32 length, -1 for null. */
  bytes(): Buffer | null {
    const n = this.int32();
    if (n === -1) return null;
    if (n < -1) {
      this.fail(`negative bytes length ${n}`);
      return null;
    }
    return this.raw(n);
  }

  compactBytes(): Buffer | null {
    const n = this.uvarint();
    return n === 0 ? null : this.raw(n - 1);
  }

  /**
   * Array length, classic (int32) or compact (uvarint + 1); -1 means null. A count
   * whose elements, at their smallest encoding, need more than the bytes left
   * cannot be honest, so it fails before anything is allocated for it.
   */
  arrayLength(compact: boolean, minElementSize = 1): number {
    const n = compact ? this.uvarint() - 1 : this.int32();
    if (n < -1) {
      this.fail(`negative array length ${n}`);
      return -1;
    }
    if (n > 0 && n * Math.max(minElementSize, 1) > this.end - this.pos) {
      this.fail(`array of ${n} elements in ${this.end - this.pos} bytes`);
      return -1;
    }
    if (n > 0 && (this.elementBudget -= n) < 0) {
      this.fail(`more array elements than one request may carry`);
      return -1;
    }
    return n;
  }
}

const EMPTY = Buffer.alloc(0);

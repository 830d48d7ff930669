/**
 * Turns a message declaration and a version into encode/decode functions. Each
 * (declaration, version) pair is compiled once into a chain of closures and cached,
 * so the per-request work is the field walk itself, not a schema interpretation.
 */
import { Reader, ZERO_UUID } from './reader.js';
import { Writer } from './writer.js';
import { inRange, type FieldDecl, type MessageDecl } from './schema.js';

export interface Codec<T = unknown> {
  encode(w: Writer, value: T): void;
  decode(r: Reader): T;
  /** A fresh value with every field at its default, as a decoder would produce. */
  defaults(): T;
  /** The fewest bytes any value takes in this version. */
  readonly minSize: number;
}

type Enc = (w: Writer, v: unknown) => void;
type Dec = (r: Reader) => unknown;
type Make = () => unknown;

interface FieldPlan {
  name: string;
  enc: Enc;
  dec: Dec;
  make: Make;
  isDefault: (v: unknown) => boolean;
  minSize: number;
}

interface StructPlan {
  regular: FieldPlan[];
  /** Sorted by tag; only populated in flexible versions. */
  tagged: (FieldPlan & { tag: number })[];
  /** Fields absent from this version: filled with defaults on decode. */
  absent: FieldPlan[];
  order: string[];
  flexible: boolean;
}

const cache = new WeakMap<MessageDecl, Map<number, Codec>>();

export function codecFor<T>(decl: MessageDecl, version: number): Codec<T> {
  let byVersion = cache.get(decl);
  if (!byVersion) {
    byVersion = new Map();
    cache.set(decl, byVersion);
  }
  let codec = byVersion.get(version);
  if (!codec) {
    if (!inRange(decl.versions, version)) {
      throw new RangeError(`${decl.name} has no version ${version} (valid ${decl.versions[0]}-${decl.versions[1]})`);
    }
    codec = compileStruct(decl.fields, version, inRange(decl.flexible, version));
    byVersion.set(version, codec);
  }
  return codec as Codec<T>;
}

/** True when this version of the message uses the flexible (KIP-482) encoding. */
export function isFlexible(decl: MessageDecl, version: number): boolean {
  return inRange(decl.flexible, version);
}

export function encode<T>(decl: MessageDecl, version: number, value: T): Buffer {
  const w = new Writer();
  codecFor<T>(decl, version).encode(w, value);
  return w.finish();
}

export type Decoded<T> = { ok: true; value: T } | { ok: false; error: string };

/** Decodes a whole buffer; trailing bytes are an error, as in Kafka. */
export function decode<T>(decl: MessageDecl, version: number, buf: Buffer): Decoded<T> {
  const r = new Reader(buf);
  const value = codecFor<T>(decl, version).decode(r);
  if (r.error) return { ok: false, error: `${decl.name} v${version}: ${r.error}` };
  if (r.remaining !== 0) return { ok: false, error: `${decl.name} v${version}: ${r.remaining} unexpected trailing bytes` };
  return { ok: true, value };
}

function compileStruct(fields: readonly FieldDecl[], version: number, flexible: boolean): Codec {
  const plan: StructPlan = { regular: [], tagged: [], absent: [], order: [], flexible };
  for (const f of fields) {
    plan.order.push(f.name);
    const isTagged = flexible && f.tag !== undefined && inRange(f.tagged, version);
    const present = isTagged || (inRange(f.versions, version) && f.tagged === undefined);
    const fp = compileField(f, version, flexible);
    if (isTagged) plan.tagged.push({ ...fp, tag: f.tag! });
    else if (present) plan.regular.push(fp);
    else plan.absent.push(fp);
  }
  plan.tagged.sort((a, b) => a.tag - b.tag);
  const make = (): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    for (const f of fields) o[f.name] = undefined;
    for (const fp of plan.regular) o[fp.name] = fp.make();
    for (const fp of plan.tagged) o[fp.name] = fp.make();
    for (const fp of plan.absent) o[fp.name] = fp.make();
    return o;
  };
  const minSize = plan.regular.reduce((sum, fp) => sum + fp.minSize, flexible ? 1 : 0);
  return {
    defaults: make,
    minSize,
    encode(w, value) {
      const v = value as Record<string, unknown>;
      for (const fp of plan.regular) fp.enc(w, v[fp.name]);
      if (plan.flexible) writeTagged(w, plan, v);
    },
    decode(r) {
      const o: Record<string, unknown> = {};
      for (const name of plan.order) o[name] = undefined;
      for (const fp of plan.regular) o[fp.name] = fp.dec(r);
      for (const fp of plan.absent) o[fp.name] = fp.make();
      for (const fp of plan.tagged) o[fp.name] = fp.make();
      if (plan.flexible) readTagged(r, plan, o);
      return o;
    },
  };
}

function writeTagged(w: Writer, plan: StructPlan, v: Record<string, unknown>): void {
  const present = plan.tagged.filter((fp) => v[fp.name] !== undefined && !fp.isDefault(v[fp.name]));
  w.uvarint(present.length);
  for (const fp of present) {
    const inner = new Writer(64);
    fp.enc(inner, v[fp.name]);
    const bytes = inner.finish();
    w.uvarint(fp.tag).uvarint(bytes.length).raw(bytes);
  }
}

/** Unknown tags are skipped: newer clients may send fields this version does not know. */
function readTagged(r: Reader, plan: StructPlan, o: Record<string, unknown>): void {
  const count = r.uvarint();
  if (count > r.remaining) {
    r.fail(`tagged field count ${count} exceeds the frame`);
    return;
  }
  for (let i = 0; i < count && !r.error; i++) {
    const tag = r.uvarint();
    const size = r.uvarint();
    if (size > r.remaining) {
      r.fail(`tagged field ${tag} of ${size} bytes exceeds the frame`);
      return;
    }
    const end = r.pos + size;
    const fp = plan.tagged.find((t) => t.tag === tag);
    if (fp) {
      const sub = new Reader(r.buf, r.pos, end);
      o[fp.name] = fp.dec(sub);
      if (sub.error) r.fail(`tagged field ${tag}: ${sub.error}`);
    }
    if (!r.error) r.pos = end;
  }
}

function compileField(f: FieldDecl, version: number, messageFlexible: boolean): FieldPlan {
  const flexible = f.flexible === undefined ? messageFlexible : inRange(f.flexible, version);
  const nullable = inRange(f.nullable, version);
  const label = f.name;
  let enc: Enc;
  let dec: Dec;
  let make: Make;
  let isDefault: (v: unknown) => boolean;

  if (f.array) {
    const elem = elementCodec(f, version, flexible, messageFlexible);
    const defaultsToNull = f.default === null;
    enc = (w, v) => {
      if (v === undefined) v = defaultsToNull && nullable ? null : [];
      if (v === null) {
        if (!nullable) throw new TypeError(`${label} is not nullable in this version`);
        return writeLength(w, flexible, -1);
      }
      const arr = v as unknown[];
      writeLength(w, flexible, arr.length);
      for (const item of arr) elem.enc(w, item);
    };
    dec = (r) => {
      const n = r.arrayLength(flexible, elem.minSize);
      if (n === -1) {
        if (!nullable && !r.error) r.fail(`${label} is null but not nullable`);
        return nullable ? null : [];
      }
      const out = new Array<unknown>(n);
      for (let i = 0; i < n && !r.error; i++) out[i] = elem.dec(r);
      return out;
    };
    make = defaultsToNull ? () => null : () => [];
    isDefault = defaultsToNull ? (v) => v === null : (v) => Array.isArray(v) && v.length === 0;
    return { name: f.name, enc, dec, make, isDefault, minSize: flexible ? 1 : 4 };
  }

  if (f.type === 'struct') {
    const inner = compileStruct(f.fields ?? [], version, messageFlexible);
    // As Kafka encodes them: a nullable struct's marker is an int8 (-1 null, 1 present), but inside a tagged
    // field an unsigned varint (0 null, 1 present); a tagged struct defaults to the empty struct, so that a
    // null one is written out.
    const tagged = messageFlexible && f.tag !== undefined && inRange(f.tagged, version);
    enc = (w, v) => {
      if (v === undefined && f.default === null && nullable && !tagged) v = null;
      if (nullable) {
        if (v === null) return void (tagged ? w.uvarint(0) : w.int8(-1));
        if (tagged) w.uvarint(1);
        else w.int8(1);
      } else if (v === null) throw new TypeError(`${label} is not nullable in this version`);
      inner.encode(w, v ?? inner.defaults());
    };
    dec = (r) => {
      if (nullable && (tagged ? r.uvarint() === 0 : r.int8() < 0)) return null;
      return inner.decode(r);
    };
    make = f.default === null && !tagged ? () => null : inner.defaults;
    // As Kafka does for tagged fields: a struct equal to its default is left out.
    let defaultBytes: Buffer | undefined;
    isDefault = (v) => {
      if (tagged && nullable) {
        if (v === null) return false;
      } else if (v === null || f.default === null) return v === null && f.default === null;
      defaultBytes ??= encodeWith(inner, inner.defaults());
      return encodeWith(inner, v).equals(defaultBytes);
    };
    return { name: f.name, enc, dec, make, isDefault, minSize: nullable ? 1 : inner.minSize };
  }

  const p = primitiveCodec(f, flexible, nullable);
  return { name: f.name, ...p };
}

function encodeWith(codec: Codec, value: unknown): Buffer {
  const w = new Writer(64);
  codec.encode(w, value);
  return w.finish();
}

function writeLength(w: Writer, compact: boolean, n: number): void {
  if (compact) w.uvarint(n + 1);
  else w.int32(n);
}

function elementCodec(
  f: FieldDecl,
  version: number,
  flexible: boolean,
  messageFlexible: boolean,
): { enc: Enc; dec: Dec; minSize: number } {
  if (f.type === 'struct') {
    const inner = compileStruct(f.fields ?? [], version, messageFlexible);
    return { enc: (w, v) => inner.encode(w, v ?? inner.defaults()), dec: (r) => inner.decode(r), minSize: inner.minSize };
  }
  const p = primitiveCodec({ ...f, array: false, default: undefined }, flexible, false);
  return { enc: p.enc, dec: p.dec, minSize: p.minSize };
}

function primitiveCodec(
  f: FieldDecl,
  flexible: boolean,
  nullable: boolean,
): { enc: Enc; dec: Dec; make: Make; isDefault: (v: unknown) => boolean; minSize: number } {
  const label = f.name;
  const size = FIXED_SIZES[f.type] ?? (f.type === 'string' ? (flexible ? 1 : 2) : flexible ? 1 : 4);
  const constant = <T>(value: T) => ({ make: () => value, isDefault: (v: unknown) => v === value, minSize: size });
  const notNull = (v: unknown): void => {
    if (v === null && !nullable) throw new TypeError(`${label} is not nullable in this version`);
  };
  switch (f.type) {
    case 'bool':
      return { enc: (w, v) => w.bool(Boolean(v ?? f.default ?? false)), dec: (r) => r.bool(), ...constant(f.default ?? false) };
    case 'int8':
      return { enc: (w, v) => w.int8(num(v, f)), dec: (r) => r.int8(), ...constant(f.default ?? 0) };
    case 'int16':
      return { enc: (w, v) => w.int16(num(v, f)), dec: (r) => r.int16(), ...constant(f.default ?? 0) };
    case 'uint16':
      return { enc: (w, v) => w.uint16(num(v, f)), dec: (r) => r.uint16(), ...constant(f.default ?? 0) };
    case 'int32':
      return { enc: (w, v) => w.int32(num(v, f)), dec: (r) => r.int32(), ...constant(f.default ?? 0) };
    case 'uint32':
      return { enc: (w, v) => w.uint32(num(v, f)), dec: (r) => r.uint32(), ...constant(f.default ?? 0) };
    case 'float64':
      return { enc: (w, v) => w.float64(num(v, f)), dec: (r) => r.float64(), ...constant(f.default ?? 0) };
    case 'int64': {
      const d = (f.default as bigint | undefined) ?? 0n;
      return { enc: (w, v) => w.int64((v as bigint | undefined) ?? d), dec: (r) => r.int64(), ...constant(d) };
    }
    case 'uuid':
      return { enc: (w, v) => w.uuid((v as string | undefined) ?? ZERO_UUID), dec: (r) => r.uuid(), ...constant(ZERO_UUID) };
    case 'string': {
      const d = f.default === undefined ? '' : (f.default as string | null);
      return {
        enc: flexible
          ? (w, v) => (notNull(v), w.compactString(v === undefined ? d : (v as string | null)))
          : (w, v) => (notNull(v), w.string(v === undefined ? d : (v as string | null))),
        dec: (r) => {
          const s = flexible ? r.compactString() : r.string();
          if (s === null && !nullable) r.fail(`${label} is null but not nullable`);
          return s;
        },
        ...constant(d),
      };
    }
    case 'bytes':
    case 'records': {
      const d = f.type === 'records' || f.default === null ? null : EMPTY;
      // Record sets (a Fetch answer's batches) are attached, not copied: they
      // come fresh from the log for this response and can be large.
      const records = f.type === 'records';
      return {
        enc: flexible
          ? records
            ? (w, v) => (notNull(v), w.compactBytesAttached(v === undefined ? d : (v as Buffer | null)))
            : (w, v) => (notNull(v), w.compactBytes(v === undefined ? d : (v as Buffer | null)))
          : records
            ? (w, v) => (notNull(v), w.bytesAttached(v === undefined ? d : (v as Buffer | null)))
            : (w, v) => (notNull(v), w.bytes(v === undefined ? d : (v as Buffer | null))),
        dec: (r) => {
          const b = flexible ? r.compactBytes() : r.bytes();
          if (b === null && !nullable) r.fail(`${label} is null but not nullable`);
          return b;
        },
        make: () => d,
        isDefault: (v) => (v === null ? d === null : d !== null && (v as Buffer).length === 0),
        minSize: size,
      };
    }
  }
  throw new Error(`unknown type ${String(f.type)}`);
}

function num(v: unknown, f: FieldDecl): number {
  return (v as number | undefined) ?? (f.default as number | undefined) ?? 0;
}

const EMPTY = Buffer.alloc(0);

const FIXED_SIZES: Partial<Record<FieldDecl['type'], number>> = {
  bool: 1, int8: 1, int16: 2, uint16: 2, int32: 4, uint32: 4, int64: 8, float64: 8, uuid: 16,
};

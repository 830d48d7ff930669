import { describe, expect, it } from 'vitest';
import { API_MESSAGES, MESSAGES } from './messages/index.js';
import { codecFor, decode, encode, isFlexible } from './codec.js';
import { Reader } from './reader.js';
import { Writer } from './writer.js';
import { inRange, type FieldDecl, type MessageDecl } from './schema.js';
import { seededRandom as rng } from './seeded-random.js';


const ZERO_UUID = Buffer.alloc(16).toString('base64url');

function isPresent(f: FieldDecl, version: number, flexible: boolean): boolean {
  if (f.tagged !== undefined) return flexible && inRange(f.tagged, version);
  return inRange(f.versions, version);
}

/** Kafka's defaults: zero values, empty strings, arrays and structs, unless declared otherwise. */
function defaultOf(f: FieldDecl, version: number, flexible: boolean): unknown {
  if (f.array) return f.default === null ? null : [];
  if (f.type === 'struct') return f.default === null ? null : structValue(f.fields!, version, flexible, null);
  if (f.default !== undefined) return f.default;
  switch (f.type) {
    case 'bool': return false;
    case 'int64': return 0n;
    case 'string': return '';
    case 'uuid': return ZERO_UUID;
    case 'bytes': return Buffer.alloc(0);
    case 'records': return null;
    default: return 0;
  }
}

function randomPrimitive(type: FieldDecl['type'], rand: () => number): unknown {
  const int = (bits: number) => Math.floor(rand() * 2 ** bits) - 2 ** (bits - 1);
  switch (type) {
    case 'bool': return rand() < 0.5;
    case 'int8': return int(8);
    case 'int16': return int(16);
    case 'uint16': return Math.floor(rand() * 65536);
    case 'int32': return int(32);
    case 'uint32': return Math.floor(rand() * 2 ** 32);
    case 'int64': return BigInt.asIntN(64, (BigInt(Math.floor(rand() * 2 ** 32)) << 32n) | BigInt(Math.floor(rand() * 2 ** 32)));
    case 'float64': return (rand() - 0.5) * 1e9;
    case 'uuid': return Buffer.from(Array.from({ length: 16 }, () => Math.floor(rand() * 256))).toString('base64url');
    case 'string': {
      const chars = 'abcXYZ._-0189 éü€';
      return Array.from({ length: Math.floor(rand() * 8) }, () => chars[Math.floor(rand() * chars.length)]).join('');
    }
    case 'bytes':
    case 'records':
      return Buffer.from(Array.from({ length: Math.floor(rand() * 12) }, () => Math.floor(rand() * 256)));
    default:
      throw new Error(`no generator for ${type}`);
  }
}

function structValue(
  fields: readonly FieldDecl[],
  version: number,
  flexible: boolean,
  rand: (() => number) | null,
): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const f of fields) {
    o[f.name] = rand && isPresent(f, version, flexible) ? randomField(f, version, flexible, rand) : defaultOf(f, version, flexible);
  }
  return o;
}

function randomField(f: FieldDecl, version: number, flexible: boolean, rand: () => number): unknown {
  if (inRange(f.nullable, version) && rand() < 0.2) return null;
  if (f.array) {
    const n = Math.floor(rand() * 3);
    return Array.from({ length: n }, () =>
      f.type === 'struct' ? structValue(f.fields!, version, flexible, rand) : randomPrimitive(f.type, rand),
    );
  }
  if (f.type === 'struct') return structValue(f.fields!, version, flexible, rand);
  return randomPrimitive(f.type, rand);
}

function versionsOf(decl: MessageDecl): number[] {
  const out: number[] = [];
  for (let v = decl.versions[0]; v <= decl.versions[1]; v++) out.push(v);
  return out;
}

const declared = Object.values(MESSAGES);

describe('declarations', () => {
  it('cover every API key with a request and a response', () => {
    for (const api of API_MESSAGES) {
      expect(api.request.kind).toBe('request');
      expect(api.response.kind).toBe('response');
      expect(api.request.apiKey).toBe(api.apiKey);
    }
    expect(API_MESSAGES.map((a) => a.name)).toContain('Metadata');
  });
});

describe('seeded round trip over every declared message and version', () => {
  for (const decl of declared) {
    it(`${decl.name} v${decl.versions[0]}-${decl.versions[1]}`, () => {
      for (const version of versionsOf(decl)) {
        const flexible = isFlexible(decl, version);
        for (let seed = 1; seed <= 8; seed++) {
          const rand = rng(seed * 7919 + version * 31 + (decl.apiKey ?? 0));
          const value = structValue(decl.fields, version, flexible, rand);
          const bytes = encode(decl, version, value);
          const back = decode(decl, version, bytes);
          if (!back.ok) throw new Error(`seed ${seed}: ${back.error}`);
          expect(back.value, `${decl.name} v${version} seed ${seed}`).toEqual(value);
          expect(encode(decl, version, back.value).equals(bytes)).toBe(true);
        }
      }
    });
  }
});

describe('decoders never throw on garbage', () => {
  it('every request version rejects or accepts random and truncated bytes without exceptions', () => {
    const rand = rng(42);
    for (const api of API_MESSAGES) {
      for (const version of versionsOf(api.request)) {
        const valid = encode(api.request, version, structValue(api.request.fields, version, isFlexible(api.request, version), rand));
        for (let i = 0; i < 6; i++) {
          const garbage = Buffer.from(Array.from({ length: Math.floor(rand() * 64) }, () => Math.floor(rand() * 256)));
          expect(() => decode(api.request, version, garbage)).not.toThrow();
          const cut = valid.subarray(0, Math.floor(rand() * valid.length));
          // A decoder is deterministic, so a strict prefix of a valid message can never decode whole.
          if (cut.length < valid.length) expect(decode(api.request, version, cut).ok).toBe(false);
        }
      }
    }
  });

  it('a huge array count fails before allocating', () => {
    const w = new Writer();
    w.int32(0x7fffffff);
    const res = decode(MESSAGES.MetadataRequest!, 1, w.finish());
    expect(res.ok).toBe(false);
    if (!res.ok) expect(res.error).toMatch(/array of 2147483647 elements/);
  });
});

describe('flexible encoding', () => {
  it('skips unknown tagged fields instead of rejecting them', () => {
    const decl = MESSAGES.ApiVersionsRequest!;
    const w = new Writer();
    w.compactString('gregor-test').compactString('1.0');
    // Two unknown tags (5 and 9) with arbitrary payloads.
    w.uvarint(2).uvarint(5).uvarint(3).raw(Buffer.from([1, 2, 3])).uvarint(9).uvarint(0);
    const res = decode<{ clientSoftwareName: string }>(decl, 3, w.finish());
    expect(res.ok).toBe(true);
    if (res.ok) expect(res.value.clientSoftwareName).toBe('gregor-test');
  });

  it('writes compact strings as length + 1 and null as 0', () => {
    const w = new Writer();
    w.compactString('ab').compactString(null);
    expect([...w.finish()]).toEqual([3, 0x61, 0x62, 0]);
  });

  it('reads and writes zigzag varints and varlongs', () => {
    const w = new Writer();
    for (const v of [0, -1, 1, -64, 63, 300, -2147483648, 2147483647]) w.varint(v);
    for (const v of [0n, -1n, 9223372036854775807n, -9223372036854775808n]) w.varlong(v);
    const r = new Reader(w.finish());
    for (const v of [0, -1, 1, -64, 63, 300, -2147483648, 2147483647]) expect(r.varint()).toBe(v);
    for (const v of [0n, -1n, 9223372036854775807n, -9223372036854775808n]) expect(r.varlong()).toBe(v);
    expect(r.error).toBeNull();
  });

  it('compiles each (message, version) once', () => {
    const decl = MESSAGES.MetadataResponse!;
    expect(codecFor(decl, 12)).toBe(codecFor(decl, 12));
  });
});

describe('hostile sizes', () => {
  it('rejects a count whose elements cannot fit in the bytes left, at their smallest encoding', () => {
    const w = new Writer();
    w.int32(1000); // Metadata v1 topics: each name takes at least 2 bytes
    w.raw(Buffer.alloc(1500));
    const res = decode(MESSAGES.MetadataRequest!, 1, w.finish());
    expect(res.ok).toBe(false);
    if (!res.ok) expect(res.error).toMatch(/array of 1000 elements in 1500 bytes/);
  });

  it('stops at a reader-wide element budget', () => {
    const value = { topics: Array.from({ length: 20 }, (_, i) => ({ name: `t${i}` })) };
    const bytes = encode(MESSAGES.MetadataRequest!, 1, value);
    const r = new Reader(bytes);
    r.elementBudget = 10;
    codecFor(MESSAGES.MetadataRequest!, 1).decode(r);
    expect(r.error).toMatch(/more array elements than one request may carry/);
    const ok = new Reader(bytes);
    ok.elementBudget = 20;
    codecFor(MESSAGES.MetadataRequest!, 1).decode(ok);
    expect(ok.error).toBeNull();
  });

  it('refuses a varlong beyond 64 bits', () => {
    const r = new Reader(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]));
    r.varlong();
    expect(r.error).toMatch(/varlong/);
  });
});

describe('defaults', () => {
  it('writes null for struct and array fields whose declared default is null', () => {
    const decl = MESSAGES.DescribeTopicPartitionsResponse!;
    const codec = codecFor<{ nextCursor: unknown }>(decl, 0);
    expect(codec.defaults().nextCursor).toBeNull();
    const bytes = encode(decl, 0, { throttleTimeMs: 0, topics: [] });
    // throttle (4) + empty compact array (1) + null cursor marker (-1) + no tags (0)
    expect([...bytes]).toEqual([0, 0, 0, 0, 1, 0xff, 0]);
  });

  it('leaves out a tagged struct equal to its default, as Kafka does', () => {
    const decl = MESSAGES.FetchResponse!;
    const withLeader = (leader: { leaderId: number; leaderEpoch: number }) =>
      encode(decl, 12, {
        responses: [{ topic: 't', partitions: [{ partitionIndex: 0, currentLeader: leader, records: null }] }],
      });
    const atDefault = withLeader({ leaderId: -1, leaderEpoch: -1 });
    const set = withLeader({ leaderId: 1, leaderEpoch: 3 });
    expect(set.length).toBeGreaterThan(atDefault.length);
    const back = decode<any>(decl, 12, atDefault);
    expect(back.ok && back.value.responses[0].partitions[0].currentLeader).toEqual({ leaderId: -1, leaderEpoch: -1 });
  });
});

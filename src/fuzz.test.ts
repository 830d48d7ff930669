/**
 * End-to-end fuzzing of frame and header decoding against a real broker process.
 *
 * One broker is started from dist/ (build first). Every round generates its cases
 * from a seeded PRNG, runs them on fresh connections, and checks a long-lived
 * "witness" connection before and after: the broker must answer each malformed
 * frame with a well-formed frame or close that connection, never hang, never die,
 * and keep serving everybody else.
 *
 *   FUZZ_SEED=1234 npx vitest run src/fuzz.test.ts   # replay a seed
 *   FUZZ_ROUNDS=5000 FUZZ_BUDGET_MS=600000 npx vitest run src/fuzz.test.ts  # fuzz longer
 *
 * A round's cases depend only on the seed, so a replay sends the same bytes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGES } from '../wire/messages/index.js';
import type { ApiVersionsResponse } from '../wire/messages/index.js';
import type { MetadataRequest } from '../wire/messages/metadata-request.js';
import { codecFor, decode } from '../wire/codec.js';
import { Reader, ZERO_UUID } from '../wire/reader.js';
import { Writer } from '../wire/writer.js';
import { finishFrame, requestHeaderVersion, skipTaggedFields, startRequest } from '../wire/headers.js';
import { seededRandom } from '../wire/seeded-random.js';
import { inRange } from '../wire/schema.js';
import { HANDLERS } from '../api/registry.js';
import { apiVersions as apiVersionsHandler } from '../api/api-versions.js';
import { metadata as metadataHandler } from '../api/metadata.js';

/** The newest versions served, above which a request is one the broker does not serve. */
const API_VERSIONS_MAX = apiVersionsHandler.maxVersion;
const METADATA_MAX = metadataHandler.maxVersion;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ENTRY = join(ROOT, 'dist', 'gregor.cjs');
const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) >>> 0 : (Date.now() ^ (process.pid << 16)) >>> 0;
const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 500);
/** No new round starts after this long, so a slow machine still finishes in time. */
const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 12000);
/** Kept small so oversized prefixes are cheap to produce. */
const MAX_REQUEST = 1048576;
/** Longest the broker may take to answer or close a connection. */
const SHORT_MS = 2000;
/** How soon a connection with an impossible size prefix must be closed. */
const PROMPT_MS = 1000;
const RSS_LIMIT_MB = 200;

const API_VERSIONS = 18;
const METADATA = 3;
const UNSUPPORTED_VERSION = 35;
const INVALID_REQUEST = 42;

const where = (extra = ''): string => `seed ${SEED} (replay with FUZZ_SEED=${SEED})${extra ? `, ${extra}` : ''}`;

// ---------------------------------------------------------------- randomness

type Rand = () => number;

const prng: (seed: number) => Rand = seededRandom;

const int = (rand: Rand, lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
const pick = <T>(rand: Rand, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const randomBytes = (rand: Rand, n: number): Buffer => {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rand() * 256);
  return b;
};

// ---------------------------------------------------------------- encoding helpers

const i16 = (v: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(v);
  return b;
};
const i32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v);
  return b;
};

/** Minimal unsigned LEB128 of a value up to 2^32 - 1. */
function uvarint(v: number): Buffer {
  const out: number[] = [];
  let n = v;
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Buffer.from(out);
}

/** The same value in exactly `len` bytes (non-minimal, still at most 5 bytes). */
function paddedUvarint(v: number, len: number): Buffer {
  const out: number[] = [];
  let n = v;
  for (let i = 0; i < len; i++) {
    const last = i === len - 1;
    out.push((n % 0x80) | (last ? 0 : 0x80));
    n = Math.floor(n / 0x80);
  }
  return Buffer.from(out);
}

const classicString = (s: string | null): Buffer =>
  s === null ? i16(-1) : Buffer.concat([i16(Buffer.byteLength(s)), Buffer.from(s)]);

const sized = (body: Buffer): Buffer => Buffer.concat([i32(body.length), body]);

/** Varints that a 32-bit unsigned varint reader must reject. */
const BAD_VARINTS: readonly Buffer[] = [
  Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), // six bytes
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), // eight bytes
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0x10]), // 2^32: one bit too many
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7f]), // 2^35 - 1
];

// ---------------------------------------------------------------- request templates

/** A request body as labelled pieces, so a mutation can aim at one of them. */
interface Piece {
  label: string;
  bytes: Buffer;
  /** Set on unsigned varints: the value they encode. */
  varint?: number;
  /** Set on the count of a tagged-field section. */
  tags?: true;
}

const vpiece = (label: string, v: number, tags?: true): Piece => ({ label, bytes: uvarint(v), varint: v, ...(tags ? { tags } : {}) });
const bpiece = (label: string, bytes: Buffer): Piece => ({ label, bytes });
function compactStringPieces(label: string, s: string | null): Piece[] {
  if (s === null) return [vpiece(`${label}.len`, 0)];
  const data = Buffer.from(s);
  return [vpiece(`${label}.len`, data.length + 1), bpiece(`${label}.data`, data)];
}

function headerPieces(apiKey: number, version: number, correlationId: number, clientId: string | null): Piece[] {
  return [
    bpiece('header.fixed', Buffer.concat([i16(apiKey), i16(version), i32(correlationId)])),
    bpiece('header.clientId', classicString(clientId)),
    vpiece('header.tags', 0, true),
  ];
}

function apiVersionsV3Pieces(correlationId: number): Piece[] {
  return [
    ...headerPieces(API_VERSIONS, 3, correlationId, 'fuzz'),
    ...compactStringPieces('body.softwareName', 'gregor-fuzz'),
    ...compactStringPieces('body.softwareVersion', '1.0.0'),
    vpiece('body.tags', 0, true),
  ];
}

function metadataV12Pieces(correlationId: number, names: readonly (string | null)[], rand: Rand): Piece[] {
  const pieces = [...headerPieces(METADATA, 12, correlationId, 'fuzz'), vpiece('body.topics.count', names.length + 1)];
  names.forEach((name, i) => {
    pieces.push(bpiece(`body.topics[${i}].id`, name === null ? randomBytes(rand, 16) : Buffer.alloc(16)));
    pieces.push(...compactStringPieces(`body.topics[${i}].name`, name));
    pieces.push(vpiece(`body.topics[${i}].tags`, 0, true));
  });
  pieces.push(bpiece('body.allowAutoTopicCreation', Buffer.from([0])));
  pieces.push(bpiece('body.includeTopicAuthorizedOperations', Buffer.from([0])));
  pieces.push(vpiece('body.tags', 0, true));
  return pieces;
}

const joinPieces = (pieces: readonly Piece[]): Buffer => sized(Buffer.concat(pieces.map((p) => p.bytes)));

/** A classic ApiVersions v0 request (header v1: key, version, correlation id, client id). */
function apiVersionsV0(correlationId: number, clientId = 'witness'): Buffer {
  return sized(Buffer.concat([i16(API_VERSIONS), i16(0), i32(correlationId), classicString(clientId)]));
}

/** ApiVersions at any version 0-4, through the broker's own codec. */
function apiVersionsRequest(version: number, correlationId: number): Buffer {
  const decl = MESSAGES.ApiVersionsRequest!;
  const w = new Writer(64);
  const start = startRequest(w, { apiKey: API_VERSIONS, apiVersion: version, correlationId, clientId: 'fuzz' }, requestHeaderVersion(API_VERSIONS, version, decl));
  codecFor(decl, version).encode(w, { clientSoftwareName: 'gregor-fuzz', clientSoftwareVersion: '1.0.0' });
  finishFrame(w, start);
  return Buffer.from(w.finish());
}

/** A valid Metadata request of any version 0-12 with a random topic selection. */
function metadataRequest(version: number, correlationId: number, rand: Rand): Buffer {
  const decl = MESSAGES.MetadataRequest!;
  const choices: (MetadataRequest['topics'])[] = [[], [{ name: 'fuzz-topic', topicId: ZERO_UUID }], [{ name: 'fuzz-a', topicId: ZERO_UUID }, { name: 'fuzz.b', topicId: ZERO_UUID }]];
  if (version >= 1) choices.push(null);
  if (version >= 10) choices.push([{ name: null, topicId: randomBytes(rand, 16).toString('base64url') }]);
  const req: MetadataRequest = {
    topics: pick(rand, choices),
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: rand() < 0.5,
    includeTopicAuthorizedOperations: rand() < 0.5,
  };
  const w = new Writer(128);
  const start = startRequest(w, { apiKey: METADATA, apiVersion: version, correlationId, clientId: rand() < 0.2 ? null : 'fuzz' }, requestHeaderVersion(METADATA, version, decl));
  codecFor(decl, version).encode(w, req);
  finishFrame(w, start);
  return Buffer.from(w.finish());
}

// ---------------------------------------------------------------- response checks

/** Splits bytes into frames the way the broker does. */
function frameModel(bytes: Buffer): { frames: Buffer[]; badPrefix: boolean; incomplete: boolean } {
  const frames: Buffer[] = [];
  let pos = 0;
  while (bytes.length - pos >= 4) {
    const size = bytes.readInt32BE(pos);
    if (size < 0 || size > MAX_REQUEST) return { frames, badPrefix: true, incomplete: false };
    if (bytes.length - pos - 4 < size) return { frames, badPrefix: false, incomplete: true };
    frames.push(bytes.subarray(pos + 4, pos + 4 + size));
    pos += 4 + size;
  }
  return { frames, badPrefix: false, incomplete: pos < bytes.length };
}

/**
 * Checks that `res` (a response frame without its size prefix) is a well-formed
 * answer to `req` (a request frame without its size prefix). Returns the problem,
 * or null. ApiVersions answers come back decoded for case-specific checks.
 */
function checkAnswer(req: Buffer, res: Buffer): { problem: string | null; apiVersions?: ApiVersionsResponse } {
  if (req.length < 8) return { problem: `answered a ${req.length}-byte frame that has no complete header` };
  const apiKey = req.readInt16BE(0);
  const version = req.readInt16BE(2);
  const correlationId = req.readInt32BE(4);
  if (res.length < 4) return { problem: `response of ${res.length} bytes has no correlation id` };
  if (res.readInt32BE(0) !== correlationId) return { problem: `correlation id ${res.readInt32BE(0)} answers request ${correlationId}` };
  if (apiKey === API_VERSIONS) {
    const supported = version >= 0 && version <= API_VERSIONS_MAX;
    const decoded = decode<ApiVersionsResponse>(MESSAGES.ApiVersionsResponse!, supported ? version : 0, res.subarray(4));
    if (!decoded.ok) return { problem: `undecodable ApiVersions v${supported ? version : 0} response: ${decoded.error}` };
    const body = decoded.value;
    if (!supported && body.errorCode !== UNSUPPORTED_VERSION) return { problem: `ApiVersions v${version} answered with error ${body.errorCode}, not ${UNSUPPORTED_VERSION}` };
    if (supported && body.errorCode !== 0 && body.errorCode !== INVALID_REQUEST) return { problem: `ApiVersions v${version} answered with error ${body.errorCode}` };
    // INVALID_REQUEST (a v3+ client name Kafka would refuse) comes without the table; every other answer has it.
    if (body.errorCode !== INVALID_REQUEST && body.apiKeys.length === 0) return { problem: 'ApiVersions answer has an empty api_keys array' };
    return { problem: null, apiVersions: body };
  }
  if (apiKey === METADATA && version >= 0 && version <= 12) {
    const r = new Reader(res, 4);
    if (version >= 9) skipTaggedFields(r);
    if (r.error) return { problem: `Metadata v${version} response header: ${r.error}` };
    const decoded = decode(MESSAGES.MetadataResponse!, version, res.subarray(r.pos));
    return { problem: decoded.ok ? null : `undecodable Metadata v${version} response: ${decoded.error}` };
  }
  // A flipped bit can turn the request into another API the broker serves; its answer must decode.
  const handler = HANDLERS.find((h) => h.apiKey === apiKey);
  if (handler && version >= handler.minVersion && version <= handler.maxVersion) {
    const r = new Reader(res, 4);
    if (inRange(handler.response.flexible, version)) skipTaggedFields(r);
    if (r.error) return { problem: `${handler.name} v${version} response header: ${r.error}` };
    const decoded = decode(handler.response, version, res.subarray(r.pos));
    return { problem: decoded.ok ? null : `undecodable ${handler.name} v${version} response: ${decoded.error}` };
  }
  return { problem: `answered api key ${apiKey} v${version}, which should have closed the connection` };
}

/** The fixed checks on an ApiVersions v0 answer to a well-formed request. */
function checkApiVersionsV0(res: Buffer, correlationId: number): string | null {
  if (res.length < 10) return `ApiVersions v0 response of ${res.length} bytes`;
  if (res.readInt32BE(0) !== correlationId) return `correlation id ${res.readInt32BE(0)}, expected ${correlationId}`;
  const errorCode = res.readInt16BE(4);
  if (errorCode !== 0) return `error code ${errorCode}`;
  const count = res.readInt32BE(6);
  if (count <= 0 || res.length !== 10 + count * 6) return `api_keys count ${count} in ${res.length} bytes`;
  const keys = new Map<number, [number, number]>();
  for (let i = 0; i < count; i++) keys.set(res.readInt16BE(10 + i * 6), [res.readInt16BE(12 + i * 6), res.readInt16BE(14 + i * 6)]);
  const av = keys.get(API_VERSIONS);
  const md = keys.get(METADATA);
  if (!av || av[0] !== 0 || av[1] < 4) return `ApiVersions advertised as ${JSON.stringify(av)}`;
  if (!md || md[0] !== 0 || md[1] < 12) return `Metadata advertised as ${JSON.stringify(md)}`;
  return null;
}

// ---------------------------------------------------------------- connections

/** A client connection that splits what it receives into frames. */
class Peer {
  readonly frames: Buffer[] = [];
  closed = false;
  closedAt = 0;
  problem: string | null = null;
  private pending: Buffer = Buffer.alloc(0);
  private listeners: (() => void)[] = [];

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
      while (this.pending.length >= 4) {
        const size = this.pending.readInt32BE(0);
        if (size < 0) {
          this.problem ??= `response size prefix ${size}`;
          this.pending = Buffer.alloc(0);
          break;
        }
        if (this.pending.length < 4 + size) break;
        this.frames.push(this.pending.subarray(4, 4 + size));
        this.pending = this.pending.subarray(4 + size);
      }
      this.changed();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.closedAt = performance.now();
      if (this.pending.length > 0) this.problem ??= `connection closed inside a response frame (${this.pending.length} bytes pending)`;
      this.changed();
    });
  }

  static open(port: number): Promise<Peer> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, noDelay: true });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new Peer(socket));
      });
      socket.once('error', reject);
    });
  }

  private changed(): void {
    const ls = this.listeners;
    this.listeners = [];
    for (const l of ls) l();
  }

  /** Resolves true once `cond` holds, false after `ms`. */
  until(cond: () => boolean, ms: number): Promise<boolean> {
    if (cond()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(cond()), ms);
      const check = (): void => {
        if (cond()) {
          clearTimeout(timer);
          resolve(true);
        } else this.listeners.push(check);
      };
      this.listeners.push(check);
    });
  }

  /** Writes in a few randomly split pieces, sometimes yielding between them. */
  async write(bytes: Buffer, rand: Rand): Promise<void> {
    let pos = 0;
    while (pos < bytes.length && !this.socket.destroyed) {
      const n = rand() < 0.5 ? bytes.length - pos : int(rand, 1, bytes.length - pos);
      this.socket.write(bytes.subarray(pos, pos + n));
      pos += n;
      if (pos < bytes.length && rand() < 0.3) await new Promise((r) => setImmediate(r));
    }
  }

  /** Half-closes our side; the broker must then close its side too. */
  async finish(): Promise<boolean> {
    if (!this.closed) this.socket.end();
    const ok = await this.until(() => this.closed, SHORT_MS);
    this.socket.destroy();
    return ok;
  }
}

// ---------------------------------------------------------------- cases

type Expect =
  /** Every frame answered (then optional extra checks), connection left open. */
  | { kind: 'answer'; check?: (answers: Buffer[]) => string | null }
  /** The broker closes by itself without answering, within `within` ms. */
  | { kind: 'close'; within: number }
  /** Each complete frame answered well-formed, or the connection closed. */
  | { kind: 'either' }
  /** An incomplete frame, then our side closes (`end`) or vanishes (`destroy`). */
  | { kind: 'truncated'; how: 'end' | 'destroy' };

interface Case {
  name: string;
  bytes: Buffer;
  expect: Expect;
}

interface Tally {
  answered: number;
  closed: number;
}

async function runCase(port: number, c: Case, rand: Rand, tally: Tally): Promise<void> {
  const hex = c.bytes.length <= 256 ? c.bytes.toString('hex') : `${c.bytes.subarray(0, 256).toString('hex')}... (${c.bytes.length} bytes)`;
  const fail = (msg: string): never => {
    const dead = alive() ? '' : `; THE BROKER PROCESS DIED, stderr: ${stderr.slice(-2000)}`;
    throw new Error(`${c.name}: ${msg}; ${where()}; sent ${hex}${dead}`);
  };
  const peer = await Peer.open(port);
  try {
    await peer.write(c.bytes, rand);
    const model = frameModel(c.bytes);
    const e = c.expect;
    switch (e.kind) {
      case 'truncated': {
        if (e.how === 'destroy') {
          peer.socket.destroy();
          return;
        }
        if (!(await peer.finish())) fail(`broker kept the connection open ${SHORT_MS} ms after the client closed its side`);
        if (peer.frames.length > 0) fail(`answered ${peer.frames.length} frame(s) to a truncated request`);
        tally.closed++;
        return;
      }
      case 'close': {
        const t0 = performance.now();
        if (!(await peer.until(() => peer.closed, e.within))) fail(`connection still open ${e.within} ms later (expected the broker to close it)`);
        if (peer.frames.length > 0) fail(`expected a close without an answer, got ${peer.frames.length} frame(s): ${peer.frames[0]!.toString('hex').slice(0, 120)}`);
        if (peer.closedAt - t0 > e.within) fail(`closed only after ${Math.round(peer.closedAt - t0)} ms`);
        tally.closed++;
        return;
      }
      case 'answer':
      case 'either': {
        const want = model.frames.length;
        const done = await peer.until(() => peer.closed || peer.frames.length >= want, SHORT_MS);
        if (!done) fail(`neither answered (${peer.frames.length}/${want} frames) nor closed within ${SHORT_MS} ms`);
        if (peer.problem) fail(peer.problem);
        if (peer.frames.length > want) fail(`got ${peer.frames.length} answers to ${want} frames`);
        peer.frames.forEach((res, i) => {
          const { problem } = checkAnswer(model.frames[i]!, res);
          if (problem) fail(`answer ${i}: ${problem}`);
        });
        if (model.badPrefix && !(await peer.until(() => peer.closed, PROMPT_MS))) fail(`size prefix out of range but the connection stayed open`);
        if (e.kind === 'answer') {
          if (peer.closed) fail(`closed after ${peer.frames.length}/${want} answers; every frame should be answered`);
          const problem = e.check?.(peer.frames);
          if (problem) fail(problem);
        }
        if (peer.closed) tally.closed++;
        else tally.answered++;
        if (!(await peer.finish())) fail(`broker kept the connection open ${SHORT_MS} ms after the client closed its side`);
        if (peer.problem) fail(peer.problem);
        return;
      }
    }
  } finally {
    peer.socket.destroy();
  }
}

function generateRound(round: number, rand: Rand): Case[] {
  const cases: Case[] = [];
  let corr = (round % 1000000) * 1000;
  const next = (): number => ++corr;
  const add = (name: string, bytes: Buffer, expect: Expect): void => {
    cases.push({ name: `round ${round} ${name}`, bytes, expect });
  };

  // Pure garbage: fully random, or random behind a size prefix that matches.
  for (let i = 0; i < 3; i++) {
    const len = rand() < 0.1 ? int(rand, 1000, 70000) : int(rand, 1, 64);
    const bytes = randomBytes(rand, len);
    if (rand() < 0.5 && len >= 4) bytes.writeInt32BE(len - 4, 0);
    if (rand() < 0.3 && len >= 8) bytes.writeInt16BE(pick(rand, [API_VERSIONS, METADATA]), 4);
    add(`garbage ${len} bytes`, bytes, { kind: 'either' });
  }

  // Valid frames cut short, then the client goes away.
  for (let i = 0; i < 3; i++) {
    const full = rand() < 0.5 ? apiVersionsRequest(int(rand, 0, 4), next()) : metadataRequest(int(rand, 0, 12), next(), rand);
    const cut = int(rand, 1, full.length - 1);
    add(`truncated at ${cut}/${full.length}`, full.subarray(0, cut), { kind: 'truncated', how: rand() < 0.7 ? 'end' : 'destroy' });
  }

  // Size prefixes the broker must refuse at once, without waiting for the bytes.
  {
    const big = pick(rand, [MAX_REQUEST + 1, int(rand, MAX_REQUEST + 2, 0x7ffffffe), 0x7fffffff, 104857600]);
    add(`size prefix ${big}`, Buffer.concat([i32(big), randomBytes(rand, int(rand, 0, 16))]), { kind: 'close', within: PROMPT_MS });
    const neg = pick(rand, [-1, -0x80000000, -int(rand, 2, 0x7fffffff)]);
    add(`size prefix ${neg}`, Buffer.concat([i32(neg), randomBytes(rand, int(rand, 0, 16))]), { kind: 'close', within: PROMPT_MS });
  }

  // A header naming an api key the broker does not serve.
  {
    let key: number;
    do key = pick(rand, [-1, -0x8000, 0, 1, 2, 17, 19, 67, 1000, 0x7fff, int(rand, -0x8000, 0x7fff)]);
    while (key === API_VERSIONS || key === METADATA);
    const body = Buffer.concat([i16(key), i16(int(rand, 0, 20)), i32(next()), classicString('fuzz'), randomBytes(rand, int(rand, 0, 32))]);
    add(`unknown api key ${key}`, sized(body), { kind: 'close', within: SHORT_MS });
  }

  // Supported keys at versions the broker does not serve.
  {
    const v = pick(rand, [METADATA_MAX + 1, METADATA_MAX + 2, 99, 0x7fff, -1, -0x8000, int(rand, METADATA_MAX + 1, 0x7fff), int(rand, -0x8000, -1)]);
    const body = Buffer.concat([i16(METADATA), i16(v), i32(next()), classicString('fuzz'), uvarint(0)]);
    add(`Metadata v${v}`, sized(body), { kind: 'close', within: SHORT_MS });
  }
  for (const v of [99, pick(rand, [API_VERSIONS_MAX + 1, 0x7fff, -1, -0x8000, int(rand, API_VERSIONS_MAX + 1, 0x7fff), int(rand, -0x8000, -1)])]) {
    const c1 = next();
    const c2 = next();
    // Clients send their newest version with a flexible header and body; the broker must not parse past the version.
    const body = Buffer.concat([i16(API_VERSIONS), i16(v), i32(c1), classicString('fuzz'), uvarint(0), randomBytes(rand, int(rand, 0, 24))]);
    add(`ApiVersions v${v} then v0`, Buffer.concat([sized(body), apiVersionsV0(c2)]), {
      kind: 'answer',
      check: ([first, second]) => {
        const { problem, apiVersions } = checkAnswer(body, first!);
        if (problem) return problem;
        if (apiVersions!.errorCode !== UNSUPPORTED_VERSION) return `error ${apiVersions!.errorCode}, expected ${UNSUPPORTED_VERSION}`;
        if (!apiVersions!.apiKeys.some((k) => k.apiKey === API_VERSIONS && k.minVersion === 0)) return 'api_keys lacks ApiVersions v0';
        const again = checkApiVersionsV0(second!, c2);
        return again && `follow-up ApiVersions v0 on the same connection: ${again}`;
      },
    });
  }

  // Classic (int32) array counts that cannot be honest, or are negative but not -1.
  {
    const v = int(rand, 0, 8);
    const count = pick(rand, [0x7fffffff, int(rand, 1000, 0x7ffffffe), -2, -0x80000000, int(rand, -0x80000000, -2)]);
    const body = Buffer.concat([i16(METADATA), i16(v), i32(next()), classicString('fuzz'), i32(count), classicString('fuzz-topic'), v >= 4 ? Buffer.from([0]) : Buffer.alloc(0), v >= 8 ? Buffer.from([0, 0]) : Buffer.alloc(0)]);
    add(`Metadata v${v} with topic count ${count}`, sized(body), { kind: 'close', within: SHORT_MS });
  }

  // Flexible requests with one aimed mutation each.
  for (let i = 0; i < 6; i++) cases.push(flexibleCase(round, next(), rand));

  // Bit flips in valid Metadata frames of every version; now and then the frame untouched.
  for (let v = 0; v <= 12; v++) {
    const frame = metadataRequest(v, next(), rand);
    if (rand() < 0.15) {
      add(`Metadata v${v} intact`, frame, { kind: 'answer' });
      continue;
    }
    const flipped = Buffer.from(frame);
    const flips = int(rand, 1, 4);
    for (let f = 0; f < flips; f++) {
      const bit = rand() < 0.9 ? int(rand, 32, flipped.length * 8 - 1) : int(rand, 0, 31);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
    }
    add(`Metadata v${v} with ${flips} bit flip(s)`, flipped, { kind: 'either' });
  }
  return cases;
}

/** One mutation of an ApiVersions v3 or Metadata v12 request. */
function flexibleCase(round: number, corr: number, rand: Rand): Case {
  const isMetadata = rand() < 0.5;
  const names = pick(rand, [[], ['fuzz-topic'], ['fuzz-a', 'fuzz-b'], [null]] as (string | null)[][]);
  const pieces = isMetadata ? metadataV12Pieces(corr, names, rand) : apiVersionsV3Pieces(corr);
  const api = isMetadata ? `Metadata v12 (${names.length} topics)` : 'ApiVersions v3';
  const varints = pieces.filter((p) => p.varint !== undefined);
  const lengths = varints.filter((p) => !p.tags);
  const tagSections = varints.filter((p) => p.tags);
  const mutation = pick(rand, ['length', 'huge-count', 'bad-varint', 'cut-varint', 'padded-varint', 'unknown-tags', 'oversized-tag', 'oversized-tag'] as const);
  const name = (what: string): string => `round ${round} ${api}: ${what}`;
  const answered: Expect = {
    kind: 'answer',
    check: ([res]) => {
      if (isMetadata) {
        const r = new Reader(res!, 4);
        skipTaggedFields(r);
        const d = decode<{ topics: unknown[] }>(MESSAGES.MetadataResponse!, 12, res!.subarray(r.pos));
        if (!d.ok) return d.error;
        return d.value.topics.length === names.length ? null : `${d.value.topics.length} topics answered for ${names.length} asked`;
      }
      const d = decode<ApiVersionsResponse>(MESSAGES.ApiVersionsResponse!, 3, res!.subarray(4));
      if (!d.ok) return d.error;
      return d.value.errorCode === 0 ? null : `ApiVersions v3 error ${d.value.errorCode}`;
    },
  };

  switch (mutation) {
    case 'length': {
      // Any value at all: too short, too long, null, or absurd.
      const p = pick(rand, lengths.length > 0 ? lengths : varints);
      const v = pick(rand, [0, 1, p.varint! + int(rand, 1, 3), Math.max(0, p.varint! - int(rand, 1, 3)), int(rand, 100, 100000), 0xffffffff, int(rand, 0, 0xffffffff)]);
      p.bytes = uvarint(v);
      return { name: name(`${p.label} = ${v}`), bytes: joinPieces(pieces), expect: { kind: 'either' } };
    }
    case 'huge-count': {
      const targets = isMetadata ? [...pieces.filter((p) => p.label === 'body.topics.count'), ...tagSections] : tagSections;
      const p = pick(rand, targets);
      const v = pick(rand, [0x7fffffff, 0xffffffff]);
      p.bytes = uvarint(v);
      return { name: name(`${p.label} = ${v.toString(16)}`), bytes: joinPieces(pieces), expect: { kind: 'close', within: SHORT_MS } };
    }
    case 'bad-varint': {
      const p = pick(rand, varints);
      const bad = pick(rand, BAD_VARINTS);
      p.bytes = bad;
      return { name: name(`${p.label} as varint ${bad.toString('hex')}`), bytes: joinPieces(pieces), expect: { kind: 'close', within: SHORT_MS } };
    }
    case 'cut-varint': {
      // The frame ends inside a varint (its size prefix says so).
      const at = pieces.indexOf(pick(rand, varints));
      const head = Buffer.concat(pieces.slice(0, at).map((p) => p.bytes));
      const partial = Buffer.from(Array.from({ length: int(rand, 1, 4) }, () => 0x80 | int(rand, 0, 0x7f)));
      return { name: name(`frame ends inside ${pieces[at]!.label}`), bytes: sized(Buffer.concat([head, partial])), expect: { kind: 'close', within: SHORT_MS } };
    }
    case 'padded-varint': {
      // Non-minimal encodings of up to five bytes are still valid varints.
      const p = pick(rand, varints);
      const len = int(rand, 2, 5);
      p.bytes = paddedUvarint(p.varint!, len);
      return { name: name(`${p.label} padded to ${len} bytes`), bytes: joinPieces(pieces), expect: answered };
    }
    case 'unknown-tags': {
      // Tags this version does not know must be skipped, in the header and in the body.
      const p = pick(rand, tagSections);
      const tags = [...new Set(Array.from({ length: int(rand, 1, 3) }, () => pick(rand, [0, 1, 5, 42, 127, 128, 1000, 70000, 0x7fffffff, 0xfffffff0])))].sort((a, b) => a - b);
      const fields = tags.map((t) => {
        const data = randomBytes(rand, int(rand, 0, 40));
        return Buffer.concat([uvarint(t), uvarint(data.length), data]);
      });
      p.bytes = Buffer.concat([uvarint(tags.length), ...fields]);
      return { name: name(`${p.label} with unknown tags ${tags.join(',')}`), bytes: joinPieces(pieces), expect: answered };
    }
    case 'oversized-tag': {
      // A tagged field whose declared size runs past the end of the frame.
      const at = pieces.indexOf(pick(rand, tagSections));
      const after = pieces.slice(at + 1).reduce((n, p) => n + p.bytes.length, 0);
      const data = randomBytes(rand, int(rand, 0, 8));
      const size = pick(rand, [after + data.length + 1, after + data.length + int(rand, 2, 5000), 0xffffffff, int(rand, 0x10000000, 0xfffffffe)]);
      pieces[at]!.bytes = Buffer.concat([uvarint(1), uvarint(int(rand, 0, 200)), uvarint(size), data]);
      return { name: name(`${pieces[at]!.label} with a tag of ${size} bytes`), bytes: joinPieces(pieces), expect: { kind: 'close', within: SHORT_MS } };
    }
  }
}

// ---------------------------------------------------------------- the broker process

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

let child: ChildProcess | undefined;
let dataDir: string | undefined;
let port = 0;
const logs: LogLine[] = [];
let stderr = '';
let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/** False once the process has exited, even before Node has reported it (a zombie has state Z). */
function alive(): boolean {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return false;
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

async function startBroker(): Promise<void> {
  if (!existsSync(ENTRY)) throw new Error(`${ENTRY} does not exist: dist/ is not built; run \`npm run build\` first`);
  dataDir = mkdtempSync(join(tmpdir(), 'gregor-fuzz-'));
  // GREGOR_* variables are configuration: keep the caller's out of this broker.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GREGOR_')));
  const args = ['bin/gregor', 'start', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--override', `socket.request.max.bytes=${MAX_REQUEST}`, '--log-level', 'info'];
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env });
  child = proc;
  exit = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  let partial = '';
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker not ready after 10 s; stderr: ${stderr}`)), 10000);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code} before it was ready; stderr: ${stderr}`));
    });
    proc.stdout!.on('data', (d: Buffer) => {
      const text = partial + d.toString();
      const lines = text.split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (line.trim() === '') continue;
        let parsed: LogLine;
        try {
          parsed = JSON.parse(line) as LogLine;
        } catch {
          continue;
        }
        logs.push(parsed);
        if (parsed.msg === 'gregor ready') {
          clearTimeout(timer);
          resolve(String(parsed.listen));
        }
      }
    });
  });
  const listen = await ready;
  port = Number(listen.slice(listen.lastIndexOf(':') + 1));
}

// ---------------------------------------------------------------- tests

describe('frame and header fuzzing against a broker process', { timeout: BUDGET_MS + 15000 }, () => {
  let witness: Peer;
  let witnessCorr = 0x40000000;

  async function checkWitness(when: string): Promise<void> {
    expect(alive(), `broker process died ${when}; ${where()}; stderr: ${stderr}`).toBe(true);
    const corr = ++witnessCorr;
    const before = witness.frames.length;
    witness.socket.write(apiVersionsV0(corr));
    const ok = await witness.until(() => witness.closed || witness.frames.length > before, SHORT_MS);
    expect(ok && !witness.closed, `witness got no answer ${when}; ${where()}`).toBe(true);
    expect(witness.frames.length, `witness got extra frames ${when}; ${where()}`).toBe(before + 1);
    expect(checkApiVersionsV0(witness.frames[before]!, corr), `witness answer ${when}; ${where()}`).toBeNull();
  }

  beforeAll(async () => {
    console.log(`fuzz seed ${SEED}: up to ${ROUNDS} rounds or ${BUDGET_MS} ms (FUZZ_SEED, FUZZ_ROUNDS, FUZZ_BUDGET_MS)`);
    await startBroker();
    witness = await Peer.open(port);
  }, 15000);

  afterAll(() => {
    witness?.socket.destroy();
    if (alive()) child!.kill('SIGKILL');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const tally: Tally = { answered: 0, closed: 0 };

  it('answers or closes every malformed frame while the witness connection keeps working', async () => {
    const rand = prng(SEED);
    const started = performance.now();
    let rounds = 0;
    for (let round = 0; round < ROUNDS && performance.now() - started < BUDGET_MS; round++, rounds++) {
      const cases = generateRound(round, rand);
      // Each case gets its own stream, so the order the cases finish in does not change what they send.
      const streams = cases.map(() => prng(Math.floor(rand() * 2 ** 32)));
      await checkWitness(`before round ${round}`);
      const queue = cases.map((c, i) => [c, streams[i]!] as const);
      const workers = Array.from({ length: 8 }, async () => {
        for (let item = queue.shift(); item; item = queue.shift()) await runCase(port, item[0], item[1], tally);
      });
      await Promise.all(workers);
      await checkWitness(`after round ${round}`);
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`fuzz seed ${SEED}: ${rounds} rounds in ${seconds} s; ${tally.answered} connections answered, ${tally.closed} closed by the broker`);
    expect(tally.answered, where()).toBeGreaterThan(0);
    expect(tally.closed, where()).toBeGreaterThan(0);
  });

  it('stays alive, within its memory bound, and logs the connections it closed', async () => {
    expect(alive(), `broker process died; ${where()}; stderr: ${stderr}`).toBe(true);
    const rss = rssMb(child!.pid!);
    console.log(`broker RSS after fuzzing: ${rss.toFixed(1)} MB`);
    expect(rss, `broker RSS ${rss.toFixed(1)} MB after fuzzing; ${where()}`).toBeLessThan(RSS_LIMIT_MB);
    // Log lines arrive through a pipe; give the last ones a moment.
    await new Promise((r) => setTimeout(r, 100));
    const closes = logs.filter((l) => l.level === 40 && l.msg === 'closing connection');
    expect(closes.length, `no warn-level "closing connection" lines; ${where()}`).toBeGreaterThan(0);
    expect(
      closes.some((l) => /socket\.request\.max\.bytes/.test(String(l.reason))),
      `no close logged for an out-of-range size prefix; ${where()}`,
    ).toBe(true);
    expect(logs.filter((l) => l.level >= 50), `error-level log lines; ${where()}`).toEqual([]);
    await checkWitness('at the end');
  });

  it('stops with exit code 0 on SIGTERM', async () => {
    expect(alive(), `broker process died; ${where()}; stderr: ${stderr}`).toBe(true);
    child!.kill('SIGTERM');
    const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 10000).unref());
    const result = await Promise.race([exit!, timeout]);
    expect(result, `broker did not exit within 10 s of SIGTERM; ${where()}`).not.toBe('timeout');
    expect(result, `${where()}; stderr: ${stderr}`).toEqual({ code: 0, signal: null });
    expect(await witness.until(() => witness.closed, SHORT_MS), 'witness connection not closed by the shutdown').toBe(true);
  });
});

/**
 * Copies the facts of Kafka's protocol definitions (Apache License 2.0) into
 * wire/gen/protocol, where the generator reads them, so that a clone of this
 * repository generates and tests on its own. Only facts are kept: each
 * message's JSON without its comments and without any "about" text, and the
 * error codes' code, name and retriability.
 *
 * Two sources are merged: a current release (authoritative for every version
 * it describes) and an older snapshot that still describes versions the
 * release removed. The merged message keeps the release's fields and widens
 * its version range down to the snapshot's oldest version, after checking that
 * the release's fields describe those old versions exactly as the snapshot does.
 *
 * Run: npm run refresh-protocol [-- CURRENT_DIR [OLDER_DIR]]. Then npm run generate.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROTOCOL_SOURCE_DIRS, parseKafkaJson } from './generate.js';

type Json = Record<string, unknown>;

/** `value` with every "about" key removed, at any depth. */
export function withoutProse(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutProse);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (k !== 'about') out[k] = withoutProse(v);
  return out;
}

/** The error-code table cut to the columns the generator reads: code, name, retriable. */
export function errorCodeFacts(tsv: string): string {
  const [header, ...rows] = tsv.trim().split('\n').map((l) => l.split('\t'));
  const at = ['code', 'name', 'retriable'].map((c) => header!.indexOf(c));
  if (at.some((i) => i < 0)) throw new Error(`error-codes.tsv lacks one of code, name, retriable (has ${header!.join(', ')})`);
  return [['code', 'name', 'retriable'], ...rows.map((r) => at.map((i) => r[i] ?? ''))].map((r) => r.join('\t')).join('\n') + '\n';
}

/** Union of two error-code tables, the current one winning on a code both have. */
export function mergeErrorCodes(current: string, older: string): string {
  const rows = new Map<number, string>();
  for (const table of [older, current]) {
    for (const line of table.trim().split('\n').slice(1)) rows.set(Number(line.split('\t')[0]), line);
  }
  return ['code\tname\tretriable', ...[...rows.entries()].sort((a, b) => a[0] - b[0]).map(([, l]) => l)].join('\n') + '\n';
}

function within(spec: unknown, v: number): boolean {
  if (typeof spec !== 'string' || spec === '' || spec === 'none') return false;
  if (spec.endsWith('+')) return v >= Number(spec.slice(0, -1));
  const dash = spec.indexOf('-');
  if (dash > 0) return v >= Number(spec.slice(0, dash)) && v <= Number(spec.slice(dash + 1));
  return v === Number(spec);
}

/** What a version of a message looks like on the wire: its fields, in order, with their types, nullability and tags. */
export function shapeAt(message: Json, v: number): string {
  const common = new Map<string, Json[]>();
  for (const s of (message.commonStructs as Json[] | undefined) ?? []) common.set(s.name as string, s.fields as Json[]);
  const walk = (fields: Json[]): string[] =>
    fields
      .filter((f) => within(f.versions, v) || within(f.taggedVersions, v))
      .map((f) => {
        const base = String(f.type).replace(/^\[\]/, '');
        const sub = (f.fields as Json[] | undefined) ?? common.get(base);
        const tag = within(f.taggedVersions, v) ? `@${String(f.tag)}` : '';
        const nullable = within(f.nullableVersions, v) ? '?' : '';
        // A default decides what a tagged field leaves off the wire, and what an absent field reads as.
        const def = f.default === undefined ? '' : `=${JSON.stringify(f.default)}`;
        return `${String(f.name)}:${String(f.type)}${nullable}${tag}${def}${sub ? `{${walk(sub).join(',')}}` : ''}`;
      });
  const flexible = within(message.flexibleVersions, v) ? 'flexible ' : '';
  return flexible + walk(message.fields as Json[]).join(',');
}

type Range = [number, number] | null;
const OPEN = 0x7fff;

function parseRange(spec: unknown): Range {
  if (typeof spec !== 'string' || spec === '' || spec === 'none') return null;
  if (spec.endsWith('+')) return [Number(spec.slice(0, -1)), OPEN];
  const dash = spec.indexOf('-');
  if (dash > 0) return [Number(spec.slice(0, dash)), Number(spec.slice(dash + 1))];
  return [Number(spec), Number(spec)];
}

function formatRange(r: [number, number]): string {
  if (r[1] === OPEN) return `${r[0]}+`;
  return r[0] === r[1] ? String(r[0]) : `${r[0]}-${r[1]}`;
}

function clip(r: Range, low: number, high: number): Range {
  if (!r) return null;
  const out: [number, number] = [Math.max(r[0], low), Math.min(r[1], high)];
  return out[0] > out[1] ? null : out;
}

/** Union of a range of old versions and a range of current ones; they must touch. */
function join2(old: Range, cur: Range, label: string): Range {
  if (!old) return cur;
  if (!cur) return old;
  if (old[1] + 1 < cur[0]) throw new Error(`${label}: versions ${formatRange(old)} and ${formatRange(cur)} leave a gap`);
  return [Math.min(old[0], cur[0]), Math.max(old[1], cur[1])];
}

const RANGE_KEYS = ['versions', 'nullableVersions', 'taggedVersions', 'flexibleVersions'] as const;

/** Fields for every version: those of `old` below `split`, those of `cur` from `split` on. */
function mergeFields(old: Json[], cur: Json[], split: number, label: string): Json[] {
  const below = (f: Json): Json | null => {
    const versions = clip(parseRange(f.versions) ?? parseRange(f.taggedVersions), 0, split - 1);
    return versions ? f : null;
  };
  const oldLive = old.filter((f) => below(f));
  const merged: Json[] = [];
  const byName = new Map<string, Json>();
  for (const f of cur) {
    const copy: Json = { ...f };
    for (const k of RANGE_KEYS) {
      const r = clip(parseRange(f[k]), split, OPEN);
      if (r) copy[k] = formatRange(r);
      else delete copy[k];
    }
    if (!copy.versions && !copy.taggedVersions) continue;
    merged.push(copy);
    byName.set(String(f.name), copy);
  }
  let cursor = -1;
  for (const f of oldLive) {
    const name = String(f.name);
    const existing = byName.get(name);
    const field: Json = existing ?? { ...f };
    if (existing && existing.type !== f.type) throw new Error(`${label}.${name}: type ${String(f.type)} became ${String(existing.type)}`);
    for (const k of RANGE_KEYS) {
      const r = join2(clip(parseRange(f[k]), 0, split - 1), existing ? parseRange(existing[k]) : null, `${label}.${name} ${k}`);
      if (r) field[k] = formatRange(r);
      else delete field[k];
    }
    const subOld = f.fields as Json[] | undefined;
    if (subOld) field.fields = mergeFields(subOld, (existing?.fields as Json[] | undefined) ?? [], split, `${label}.${name}`);
    if (existing) cursor = merged.indexOf(existing);
    else merged.splice(++cursor, 0, field);
  }
  return merged;
}

/**
 * The current definition widened to the older one's oldest version, with the
 * older definition's fields for the versions only it describes. Checked: each
 * version of the result reads exactly as the file that describes it.
 */
export function mergeMessage(current: Json, older: Json | undefined, label: string): Json {
  const cur = parseRange(current.validVersions);
  if (!cur && older) return older;
  if (!older) return current;
  const old = parseRange(older.validVersions);
  if (!cur || !old || old[0] >= cur[0]) return current;
  if (old[1] + 1 < cur[0]) throw new Error(`${label}: versions ${formatRange(old)} and ${formatRange(cur)} leave a gap`);
  const split = cur[0];
  const structs = new Map<string, Json>();
  for (const s of (current.commonStructs as Json[] | undefined) ?? []) structs.set(String(s.name), s);
  const commonStructs = [...structs.values()];
  for (const s of (older.commonStructs as Json[] | undefined) ?? []) {
    const c = structs.get(String(s.name));
    const fields = mergeFields(s.fields as Json[], (c?.fields as Json[] | undefined) ?? [], split, `${label} ${String(s.name)}`);
    const entry = { ...(c ?? s), fields };
    if (c) commonStructs[commonStructs.indexOf(c)] = entry;
    else commonStructs.push(entry);
  }
  const merged: Json = {
    ...current,
    validVersions: formatRange([old[0], cur[1]]),
    flexibleVersions: (() => {
      const r = join2(clip(parseRange(older.flexibleVersions), 0, split - 1), parseRange(current.flexibleVersions), `${label} flexibleVersions`);
      return r ? formatRange(r) : 'none';
    })(),
    fields: mergeFields(older.fields as Json[], current.fields as Json[], split, label),
  };
  if (commonStructs.length > 0) merged.commonStructs = commonStructs;
  for (let v = old[0]; v <= cur[1] && v <= Math.max(old[1], cur[1]); v++) {
    const source = v < split ? older : current;
    if (shapeAt(merged, v) !== shapeAt(source, v)) {
      throw new Error(`${label} v${v}: merged as\n  ${shapeAt(merged, v)}\nwhere its definition has\n  ${shapeAt(source, v)}`);
    }
  }
  return merged;
}

function keyOf(json: Json): string | undefined {
  return json.apiKey === undefined ? undefined : `${String(json.apiKey)}/${String(json.type)}`;
}

function readDir(dir: string): Map<string, Json> {
  const out = new Map<string, Json>();
  if (!existsSync(dir)) return out;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    out.set(file, parseKafkaJson(readFileSync(join(dir, file), 'utf8')) as unknown as Json);
  }
  return out;
}

/**
 * Writes the merged facts of `currentDir` and `olderDir` into `targetDir`. A
 * file only the older folder has is kept unless the current folder declares
 * the same API key and kind under another name (a renamed API), or, for
 * coordinator records, unless the current release no longer has it.
 */
export function refresh(currentDir: string, olderDir: string | null, targetDir: string): number {
  let files = 0;
  for (const dir of PROTOCOL_SOURCE_DIRS) {
    const current = readDir(join(currentDir, dir));
    const older = olderDir ? readDir(join(olderDir, dir)) : new Map<string, Json>();
    const currentKeys = new Set([...current.values()].map(keyOf).filter((k) => k !== undefined));
    const to = join(targetDir, dir);
    rmSync(to, { recursive: true, force: true });
    mkdirSync(to, { recursive: true });
    const names = new Set([...current.keys(), ...older.keys()]);
    for (const file of [...names].sort()) {
      const cur = current.get(file);
      const old = older.get(file);
      let merged: Json;
      if (cur && (parseRange(cur.validVersions) || old)) merged = mergeMessage(cur, old, `${dir}/${file}`);
      else if (cur) continue;
      else {
        const key = keyOf(old!);
        if (dir !== 'messages' || (key !== undefined && currentKeys.has(key))) continue;
        merged = old!;
      }
      writeFileSync(join(to, file), JSON.stringify(withoutProse(merged), null, 2) + '\n');
      files++;
    }
  }
  const errors = errorCodeFacts(readFileSync(join(currentDir, 'error-codes.tsv'), 'utf8'));
  const olderErrors = olderDir ? errorCodeFacts(readFileSync(join(olderDir, 'error-codes.tsv'), 'utf8')) : errors;
  writeFileSync(join(targetDir, 'error-codes.tsv'), mergeErrorCodes(errors, olderErrors));
  return files + 1;
}

function main(): void {
  const root = process.cwd();
  const current = resolve(process.argv[2] ?? join(root, '..', 'shared', 'kafka-protocol-4.4.0'));
  const olderArg = process.argv[3] ?? join(root, '..', 'shared', 'kafka-protocol');
  const older = existsSync(olderArg) ? resolve(olderArg) : null;
  const target = join(root, 'wire', 'gen', 'protocol');
  const n = refresh(current, older, target);
  console.log(`wrote ${n} files of protocol facts from ${current}${older ? ` and ${older}` : ''} to ${target}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();

/**
 * Produces wire/messages/*.ts and wire/errors.ts from Kafka's protocol facts in
 * wire/gen/protocol (merged from Kafka 4.4.0's definitions and an older
 * snapshot by wire/gen/refresh-protocol.ts). Only facts are carried over (names, types,
 * version ranges, nullability, tags, defaults).
 *
 * Run: npm run generate. A test regenerates in memory and compares with the
 * committed files, so the two cannot drift.
 */
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const OPEN_MAX = 0x7fff;

interface JsonField {
  name: string;
  type: string;
  versions?: string;
  nullableVersions?: string;
  taggedVersions?: string;
  tag?: number;
  flexibleVersions?: string;
  default?: string | number | boolean | null;
  fields?: JsonField[];
}

interface JsonMessage {
  apiKey?: number;
  type: string;
  name: string;
  validVersions: string;
  flexibleVersions: string;
  latestVersionUnstable?: boolean;
  fields: JsonField[];
  commonStructs?: { name: string; versions: string; fields: JsonField[] }[];
}

const PRIMITIVES = new Set([
  'bool', 'int8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'float64', 'string', 'bytes', 'records', 'uuid',
]);

/** Kafka's files carry whole-line `//` comments; nothing else needs stripping. */
export function parseKafkaJson(text: string): JsonMessage {
  const stripped = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('//'))
    .join('\n');
  return JSON.parse(stripped) as JsonMessage;
}

function range(spec: string | undefined): [number, number] | null {
  if (spec === undefined || spec === 'none' || spec === '') return null;
  if (spec.endsWith('+')) return [Number(spec.slice(0, -1)), OPEN_MAX];
  const dash = spec.indexOf('-');
  if (dash > 0) return [Number(spec.slice(0, dash)), Number(spec.slice(dash + 1))];
  const v = Number(spec);
  return [v, v];
}

function lowerCamel(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

export function kebab(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2').toLowerCase();
}

function tsRange(r: [number, number]): string {
  return `[${r[0]}, ${r[1] === OPEN_MAX ? 'OPEN_MAX' : r[1]}]`;
}

function defaultLiteral(type: string, raw: string | number | boolean): string {
  if (raw === 'null') return 'null';
  if (type === 'bool') return String(raw === true || raw === 'true');
  if (type === 'string') return JSON.stringify(String(raw));
  if (type === 'int64') return `${BigInt(String(raw))}n`;
  if (['int8', 'int16', 'uint16', 'int32', 'uint32', 'float64'].includes(type)) return String(Number(raw));
  throw new Error(`unsupported default ${String(raw)} for ${type}`);
}

interface Ctx {
  common: Map<string, JsonField[]>;
  interfaces: Map<string, string>;
  order: string[];
}

function elementType(type: string): { array: boolean; base: string } {
  return type.startsWith('[]') ? { array: true, base: type.slice(2) } : { array: false, base: type };
}

function tsType(field: JsonField, ctx: Ctx): string {
  const { array, base } = elementType(field.type);
  let t: string;
  if (PRIMITIVES.has(base)) {
    t = tsPrimitive(base);
    if (!array && field.nullableVersions) t += ' | null';
    else if (array && field.nullableVersions) return `${t}[] | null`;
    return array ? `${t}[]` : t;
  }
  declareStruct(base, field.fields ?? ctx.common.get(base), ctx);
  t = base;
  if (array) t = `${t}[]`;
  return field.nullableVersions ? `${t} | null` : t;
}

function tsPrimitive(base: string): string {
  switch (base) {
    case 'bool': return 'boolean';
    case 'int64': return 'bigint';
    case 'string': case 'uuid': return 'string';
    case 'bytes': case 'records': return 'Buffer';
    default: return 'number';
  }
}

function declareStruct(name: string, fields: JsonField[] | undefined, ctx: Ctx): void {
  if (!fields) throw new Error(`struct ${name} has no fields`);
  if (ctx.interfaces.has(name)) return;
  ctx.interfaces.set(name, '');
  const lines = fields.map((f) => `  ${lowerCamel(f.name)}: ${tsType(f, ctx)};`);
  ctx.interfaces.set(name, `export interface ${name} {\n${lines.join('\n')}\n}`);
  ctx.order.push(name);
}

function fieldDecl(field: JsonField, ctx: Ctx, indent: string): string {
  const { array, base } = elementType(field.type);
  const parts: string[] = [`name: ${JSON.stringify(lowerCamel(field.name))}`];
  const isStruct = !PRIMITIVES.has(base);
  parts.push(`type: ${JSON.stringify(isStruct ? 'struct' : base)}`);
  if (array) parts.push('array: true');
  const versions = range(field.versions) ?? range(field.taggedVersions);
  if (!versions) throw new Error(`field ${field.name} has no versions`);
  parts.push(`versions: ${tsRange(versions)}`);
  const nullable = range(field.nullableVersions);
  if (nullable) parts.push(`nullable: ${tsRange(nullable)}`);
  if (field.tag !== undefined) parts.push(`tag: ${field.tag}`);
  const tagged = range(field.taggedVersions);
  if (tagged) parts.push(`tagged: ${tsRange(tagged)}`);
  if (field.flexibleVersions !== undefined) {
    const flex = range(field.flexibleVersions);
    parts.push(`flexible: ${flex ? tsRange(flex) : 'null'}`);
  }
  const hasDefault = field.default !== undefined && (field.default !== '' || base === 'string');
  if (hasDefault && !array && !isStruct) parts.push(`default: ${defaultLiteral(base, field.default!)}`);
  // Arrays and structs can only default to null (otherwise empty); Kafka's files spell it both ways.
  else if ((array || isStruct) && (field.default === 'null' || field.default === null)) parts.push('default: null');
  if (isStruct) {
    parts.push(`structName: ${JSON.stringify(base)}`);
    const sub = field.fields ?? ctx.common.get(base);
    if (!sub) throw new Error(`unknown struct ${base}`);
    const inner = sub.map((f) => `${indent}    ${fieldDecl(f, ctx, indent + '    ')},`).join('\n');
    parts.push(`fields: [\n${inner}\n${indent}  ]`);
  }
  return `{ ${parts.join(', ')} }`;
}

export function generateMessage(json: JsonMessage, source: string): string {
  const ctx: Ctx = { common: new Map(), interfaces: new Map(), order: [] };
  for (const s of json.commonStructs ?? []) ctx.common.set(s.name, s.fields);
  const root: JsonField = { name: json.name, type: json.name, versions: '0+', fields: json.fields };
  declareStruct(json.name, root.fields, ctx);
  const versions = range(json.validVersions)!;
  const flexible = range(json.flexibleVersions);
  const kind = json.type === 'request' || json.type === 'response' || json.type === 'header' ? json.type : 'data';
  const head = [
    `// Generated by wire/gen/generate.ts from ${source}. Do not edit.`,
  ];
  const interfaces = ctx.order.map((n) => ctx.interfaces.get(n)!).join('\n\n');
  const props = [
    `name: ${JSON.stringify(json.name)}`,
    ...(json.apiKey !== undefined ? [`apiKey: ${json.apiKey}`] : []),
    `kind: ${JSON.stringify(kind)}`,
    `versions: ${tsRange(versions)}`,
    `flexible: ${flexible ? tsRange(flexible) : 'null'}`,
    ...(json.latestVersionUnstable ? ['latestUnstable: true'] : []),
  ];
  const fields = json.fields.map((f) => `    ${fieldDecl(f, ctx, '    ')},`).join('\n');
  const decl = `export const ${json.name}: MessageDecl = {\n  ${props.join(',\n  ')},\n  fields: [\n${fields}\n  ],\n};`;
  const imports = decl.includes('OPEN_MAX') ? 'OPEN_MAX, type MessageDecl' : 'type MessageDecl';
  head.push(`import { ${imports} } from '../schema.js';`, '', '');
  return `${head.join('\n')}${interfaces}\n\n${decl}\n`;
}

export function generateErrors(tsv: string): string {
  const rows = tsv.trim().split('\n').slice(1).map((l) => l.split('\t'));
  const lines = rows.map(([code, name]) => `  ${name}: ${code},`);
  const retriable = rows.filter((r) => r[2] === 'yes').map((r) => `  ${r[0]},`);
  return [
    '// Generated by wire/gen/generate.ts from error-codes.tsv. Do not edit.',
    'export const ErrorCode = {',
    ...lines,
    '} as const;',
    '',
    'export type ErrorCodeName = keyof typeof ErrorCode;',
    '',
    'export const RETRIABLE_ERRORS: ReadonlySet<number> = new Set([',
    ...retriable,
    ']);',
    '',
    'const NAMES = new Map<number, string>(Object.entries(ErrorCode).map(([n, c]) => [c, n]));',
    '',
    'export function errorName(code: number): string {',
    '  return NAMES.get(code) ?? `UNKNOWN_ERROR_${code}`;',
    '}',
    '',
  ].join('\n');
}

/** The folders of protocol facts, each of message definitions. */
export const PROTOCOL_SOURCE_DIRS = ['messages', 'group-coordinator', 'transaction-coordinator', 'share-coordinator'];

/** Every generated file, keyed by its path relative to the repository root. */
export function generateAll(protocolDir: string): Map<string, string> {
  const out = new Map<string, string>();
  const index: { file: string; name: string; apiKey?: number; kind: string }[] = [];
  for (const dir of PROTOCOL_SOURCE_DIRS) {
    const full = join(protocolDir, dir);
    for (const file of readdirSync(full).filter((f) => f.endsWith('.json')).sort()) {
      const json = parseKafkaJson(readFileSync(join(full, file), 'utf8'));
      const moduleName = kebab(json.name);
      out.set(`wire/messages/${moduleName}.ts`, generateMessage(json, `${dir}/${file}`));
      index.push({ file: moduleName, name: json.name, apiKey: json.apiKey, kind: json.type });
    }
  }
  index.sort((a, b) => a.name.localeCompare(b.name));
  const apis = new Map<number, { request?: string; response?: string }>();
  for (const m of index) {
    if (m.apiKey === undefined || (m.kind !== 'request' && m.kind !== 'response')) continue;
    const entry = apis.get(m.apiKey) ?? {};
    entry[m.kind] = m.name;
    apis.set(m.apiKey, entry);
  }
  const lines = [
    '// Generated by wire/gen/generate.ts. Do not edit.',
    `import type { MessageDecl } from '../schema.js';`,
    ...index.map((m) => `import { ${m.name} } from './${m.file}.js';`),
    '',
    ...index.map((m) => `export type { ${m.name} } from './${m.file}.js';`),
    '',
    'export interface ApiMessages {',
    '  readonly apiKey: number;',
    '  readonly name: string;',
    '  readonly request: MessageDecl;',
    '  readonly response: MessageDecl;',
    '}',
    '',
    '/** Request and response declarations of every API key, in key order. */',
    'export const API_MESSAGES: readonly ApiMessages[] = [',
    ...[...apis.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([key, e]) => `  { apiKey: ${key}, name: ${JSON.stringify(e.request!.replace(/Request$/, ''))}, request: ${e.request}, response: ${e.response} },`),
    '];',
    '',
    'export const MESSAGES: Readonly<Record<string, MessageDecl>> = {',
    ...index.map((m) => `  ${m.name},`),
    '};',
    '',
  ];
  out.set('wire/messages/index.ts', lines.join('\n'));
  out.set('wire/errors.ts', generateErrors(readFileSync(join(protocolDir, 'error-codes.tsv'), 'utf8')));
  return out;
}

export function defaultProtocolDir(root: string): string {
  return join(root, 'wire', 'gen', 'protocol');
}

function main(): void {
  const root = process.cwd();
  const protocolDir = process.argv[2] ?? defaultProtocolDir(root);
  const files = generateAll(protocolDir);
  mkdirSync(join(root, 'wire', 'messages'), { recursive: true });
  for (const [path, text] of files) writeFileSync(join(root, path), text);
  console.log(`wrote ${files.size} files from ${protocolDir}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) main();

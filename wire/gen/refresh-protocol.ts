/**
 * Copies the facts of Kafka's protocol definitions (Apache License 2.0) from
 * ../shared/kafka-protocol into wire/gen/protocol, where the generator reads
 * them, so that a clone of this repository generates and tests on its own.
 * Only facts are kept: each message's JSON without its comments and without
 * any "about" text, and the error codes' code, name and retriability.
 *
 * Run: npm run refresh-protocol [-- SOURCE_DIR]. Then npm run generate.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROTOCOL_SOURCE_DIRS, parseKafkaJson } from './generate.js';

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

export function refresh(sourceDir: string, targetDir: string): number {
  let files = 0;
  for (const dir of PROTOCOL_SOURCE_DIRS) {
    const from = join(sourceDir, dir);
    const to = join(targetDir, dir);
    rmSync(to, { recursive: true, force: true });
    mkdirSync(to, { recursive: true });
    for (const file of readdirSync(from).filter((f) => f.endsWith('.json')).sort()) {
      const facts = withoutProse(parseKafkaJson(readFileSync(join(from, file), 'utf8')));
      writeFileSync(join(to, file), JSON.stringify(facts, null, 2) + '\n');
      files++;
    }
  }
  writeFileSync(join(targetDir, 'error-codes.tsv'), errorCodeFacts(readFileSync(join(sourceDir, 'error-codes.tsv'), 'utf8')));
  return files + 1;
}

function main(): void {
  const root = process.cwd();
  const source = resolve(process.argv[2] ?? join(root, '..', 'shared', 'kafka-protocol'));
  const target = join(root, 'wire', 'gen', 'protocol');
  const n = refresh(source, target);
  console.log(`wrote ${n} files of protocol facts from ${source} to ${target}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();

/**
 * Loads dist/gregor.cjs, the CLI bundled into one CommonJS file at build time,
 * with the V8 code cache `npm run build` writes beside it (dist/gregor.cjs.cache):
 * with the cache V8 skips parsing and compiling most of the bundle, a large
 * part of start-up. A cache from another Node version is rejected by V8 and
 * the bundle is compiled from source as usual.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isAscii } from 'node:buffer';
import { Module, createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

export const bundlePath = fileURLToPath(new URL('../dist/gregor.cjs', import.meta.url));
export const codeCachePath = `${bundlePath}.cache`;

/** The bundle's exports, and the compiled script (for writing its code cache). */
export function loadBundle() {
  if (!existsSync(bundlePath)) {
    console.error('gregor: not built yet; run `npm install` (or `npm run build`) in the repository first');
    process.exit(1);
  }
  let cachedData;
  try {
    cachedData = readFileSync(codeCachePath);
  } catch {
    // No cache: compile from source.
  }
  // esbuild writes ASCII: read as latin1 it becomes a one-byte string without UTF-8 decoding.
  const bytes = readFileSync(bundlePath);
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  const script = new Script(Module.wrap(source), { filename: bundlePath, cachedData });
  const module = { exports: {} };
  script.runInThisContext().call(module.exports, module.exports, createRequire(bundlePath), module, bundlePath, dirname(bundlePath));
  return { exports: module.exports, script };
}

/**
 * Run by `npm run build` after esbuild: makes the bundle ASCII and writes its
 * code cache. esbuild leaves a few characters unescaped (one inside a regular
 * expression of a dependency); as \u escapes they mean the same in strings,
 * regular expressions and identifiers, and the bundle loads as a one-byte
 * string (about 4 ms less than decoding 800 KB of UTF-8 here).
 */
export function writeCodeCache() {
  const source = readFileSync(bundlePath, 'utf8');
  const ascii = source.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (ascii !== source) writeFileSync(bundlePath, ascii);
  const { script } = loadBundle();
  const tmp = `${codeCachePath}.tmp`;
  writeFileSync(tmp, script.createCachedData());
  renameSync(tmp, codeCachePath);
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--write-code-cache') writeCodeCache();

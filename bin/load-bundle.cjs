/**
 * Loads dist/gregor.cjs, the CLI bundled into one CommonJS file at build time,
 * with the V8 code cache `npm run build` writes beside it (dist/gregor.cjs.cache):
 * with the cache V8 skips parsing and compiling most of the bundle, a large
 * part of start-up. The cache is used only while dist/gregor.cjs.cache.json
 * still names the bundle's size and modification time (V8 itself checks no
 * more than the source's length); otherwise, and with a cache V8 rejects (from
 * another Node version), the bundle is compiled from source as usual.
 */
'use strict';
const { isAscii } = require('node:buffer');
const { readFileSync, renameSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { Module, createRequire } = require('node:module');
const { dirname, join } = require('node:path');
const { Script, constants } = require('node:vm');

const bundlePath = join(__dirname, '..', 'dist', 'gregor.cjs');
const codeCachePath = `${bundlePath}.cache`;
const stampPath = `${codeCachePath}.json`;

/** What the cache was made from: the bundle's size and modification time. */
function stampOf(stat) {
  return { size: stat.size, mtimeMs: stat.mtimeMs };
}

function compile(source, cachedData) {
  return new Script(Module.wrap(source), {
    filename: bundlePath,
    cachedData,
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
}

/** The bundle's source, and its code cache when that was made from this very file. */
function readBundle() {
  let stat;
  try {
    stat = statSync(bundlePath);
  } catch {
    console.error('gregor: not built yet; run `npm install` (or `npm run build`) in the repository first');
    process.exit(1);
  }
  let cachedData;
  try {
    const stamp = JSON.parse(readFileSync(stampPath, 'utf8'));
    const now = stampOf(stat);
    if (stamp.size === now.size && stamp.mtimeMs === now.mtimeMs) cachedData = readFileSync(codeCachePath);
  } catch {
    // No cache, or not for this bundle: compile from source.
  }
  const bytes = readFileSync(bundlePath);
  // The build makes the bundle ASCII: read as latin1 it becomes a one-byte string without UTF-8 decoding.
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  return { source, cachedData };
}

function run(script) {
  const module = { exports: {} };
  script.runInThisContext().call(module.exports, module.exports, createRequire(bundlePath), module, bundlePath, dirname(bundlePath));
  return module.exports;
}

/** The bundle's exports, and the compiled script. */
function loadBundle() {
  const { source, cachedData } = readBundle();
  const script = compile(source, cachedData);
  return { exports: run(script), script };
}

/**
 * Run by `npm run build` after esbuild: makes the bundle ASCII, then compiles
 * it from source (never from an older cache) and writes its code cache and
 * the stamp that ties the cache to this bundle. esbuild leaves a few
 * characters unescaped (one inside a regular expression of a dependency); as
 * \u escapes they mean the same in strings, regular expressions and
 * identifiers, and the bundle loads as a one-byte string. A non-ASCII
 * character after a backslash fails the build instead of being rewritten.
 */
function writeCodeCache() {
  rmSync(stampPath, { force: true });
  rmSync(codeCachePath, { force: true });
  const source = readFileSync(bundlePath, 'utf8');
  const escaped = /\\[^\x00-\x7f]/.exec(source);
  if (escaped) throw new Error(`${bundlePath}: a non-ASCII character follows a backslash at index ${escaped.index}; cannot make the bundle ASCII safely`);
  const ascii = source.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (ascii !== source) writeFileSync(bundlePath, ascii);
  const script = compile(ascii, undefined);
  run(script);
  writeFileSync(`${codeCachePath}.tmp`, script.createCachedData());
  renameSync(`${codeCachePath}.tmp`, codeCachePath);
  writeFileSync(stampPath, JSON.stringify(stampOf(statSync(bundlePath))));
}

module.exports = { bundlePath, codeCachePath, loadBundle, writeCodeCache };

if (require.main === module && process.argv[2] === '--write-code-cache') writeCodeCache();

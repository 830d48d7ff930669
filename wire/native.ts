/**
 * The native libraries (CRC-32C and the snappy, lz4 and zstd codecs), each
 * loaded the first time it is needed. Loading all four measured 35-50 ms of
 * start-up (dlopen and the napi-rs platform probes), which a broker pays
 * before its first answer; a broker that never sees snappy, lz4 or zstd never
 * pays for them. A library that fails to load fails the operation that needed
 * it with NativeLibraryError (an UNKNOWN_SERVER_ERROR for a client, never a
 * verdict on its data), and the broker warns at start when one is missing.
 */
import { createRequire } from 'node:module';

type Snappy = typeof import('snappy');
type Lz4 = typeof import('lz4-napi');
type Zstd = typeof import('@toondepauw/node-zstd');
type Crc32 = typeof import('@node-rs/crc32');

const load = createRequire(import.meta.url);

/** A native library gregor depends on could not be loaded: the installation is broken, not the data. */
export class NativeLibraryError extends Error {}

const failures = new Map<string, NativeLibraryError>();

function loadLibrary<T>(name: string): T {
  const failed = failures.get(name);
  if (failed) throw failed;
  try {
    return load(name) as T;
  } catch (err) {
    const e = new NativeLibraryError(`the ${name} library cannot be loaded (${(err as Error).message}); reinstall gregor's dependencies with npm install`);
    failures.set(name, e);
    throw e;
  }
}

/** The native libraries that are not installed, by name; each is loaded only when first needed. Example: [] on a complete installation. */
export function missingNativeLibraries(): string[] {
  return NATIVE_LIBRARIES.filter((name) => {
    try {
      load.resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

const NATIVE_LIBRARIES = ['@node-rs/crc32', 'snappy', 'lz4-napi', '@toondepauw/node-zstd'];

let snappyLib: Snappy | null = null;
let lz4Lib: Lz4 | null = null;
let zstdLib: Zstd | null = null;
let crc32Lib: Crc32 | null = null;

export const snappy = (): Snappy => (snappyLib ??= loadLibrary<Snappy>('snappy'));
export const lz4 = (): Lz4 => (lz4Lib ??= loadLibrary<Lz4>('lz4-napi'));
export const zstd = (): Zstd => (zstdLib ??= loadLibrary<Zstd>('@toondepauw/node-zstd'));
export const crc32 = (): Crc32 => (crc32Lib ??= loadLibrary<Crc32>('@node-rs/crc32'));

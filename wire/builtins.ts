/**
 * Node's own modules that gregor needs only now and then, each loaded the
 * first time it is used. Loading node:crypto, node:zlib and node:fs/promises
 * at start measured 1-4 ms each, paid before a broker's first answer even by
 * one that never gzips a batch, deletes a topic or creates an id.
 */
import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

let cryptoModule: typeof import('node:crypto') | null = null;
let zlibModule: typeof import('node:zlib') | null = null;
let fsPromisesModule: typeof import('node:fs/promises') | null = null;

export const crypto = (): typeof import('node:crypto') => (cryptoModule ??= load('node:crypto') as typeof import('node:crypto'));
export const zlib = (): typeof import('node:zlib') => (zlibModule ??= load('node:zlib') as typeof import('node:zlib'));
export const fsPromises = (): typeof import('node:fs/promises') => (fsPromisesModule ??= load('node:fs/promises') as typeof import('node:fs/promises'));

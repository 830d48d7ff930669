import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * JSON lines for machines; on a terminal, pino-pretty (loaded only then, since it
 * costs start-up time) writing synchronously so nothing is lost at exit.
 */
export function createLogger(options: { level?: string; pretty?: boolean } = {}): Logger {
  const level = options.level ?? 'info';
  const pretty = options.pretty ?? Boolean(process.stdout.isTTY);
  if (pretty) {
    const require = createRequire(import.meta.url);
    const pinoPretty = require('pino-pretty') as (opts: object) => NodeJS.WritableStream;
    return pino({ level, base: undefined }, pinoPretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  }
  return pino({ level, base: { pid: process.pid } }, pino.destination({ dest: 1, sync: true }));
}

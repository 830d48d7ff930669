/**
 * Embedding API: start a broker inside a Node process, e.g. for a test suite.
 *
 *   const broker = await startBroker({ 'log.dirs': dir, listeners: 'PLAINTEXT://127.0.0.1:0' });
 *   // ... point a client at broker.bootstrap ...
 *   await broker.stop();
 */
import { resolveConfig } from './config.js';
import { Broker } from './broker.js';
import { createLogger, type Logger } from './logger.js';

export { Broker } from './broker.js';
export { resolveConfig, CONFIG_DEFS, ConfigError, type BrokerConfig } from './config.js';

export async function startBroker(config: Record<string, string> = {}, options: { log?: Logger } = {}): Promise<Broker> {
  const resolved = resolveConfig([{ origin: 'startBroker', values: Object.entries(config) }]);
  return Broker.start(resolved, options.log ?? createLogger({ level: 'warn', pretty: false }));
}

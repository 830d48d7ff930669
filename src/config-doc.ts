/** The configuration table in README.md, built from the config registry so the two cannot drift. */
import { brokerConfigDoc, kafkaBrokerConfig, LISTED_BROKER_CONFIGS } from '../cluster/metadata/broker-config-catalog.js';
import { configDefs, isConfigKey } from '../cluster/metadata/broker-config-registry.js';

export const CONFIG_TABLE_BEGIN = '<!-- config-table:begin -->';
export const CONFIG_TABLE_END = '<!-- config-table:end -->';

const cell = (value: string | null): string => (value === null ? '(unset)' : value === '' ? '(empty)' : `\`${value}\``);

/**
 * gregor's own keys, then the broker-wide defaults of topic configs and the log manager's
 * keys (Kafka's names and defaults), each with one line of its documentation.
 */
export function configTableMarkdown(): string {
  const own = [...configDefs()].map(([key, def]) => `| \`${key}\` | ${cell(def.default)} | ${def.doc} |`);
  const kafka = LISTED_BROKER_CONFIGS.filter((name) => !isConfigKey(name)).map((name) => `| \`${name}\` | ${cell(kafkaBrokerConfig(name)?.default ?? null)} | ${brokerConfigDoc(name)} |`);
  return ['| key | default | meaning |', '| --- | --- | --- |', ...own, ...kafka].join('\n');
}

/** Replaces the marked section of a README text with the current table. */
export function withConfigTable(readme: string): string {
  const begin = readme.indexOf(CONFIG_TABLE_BEGIN);
  const end = readme.indexOf(CONFIG_TABLE_END);
  if (begin < 0 || end < begin) throw new Error('README.md has no config-table markers');
  return `${readme.slice(0, begin + CONFIG_TABLE_BEGIN.length)}\n${configTableMarkdown()}\n${readme.slice(end)}`;
}

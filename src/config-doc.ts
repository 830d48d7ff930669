/** The configuration table in README.md, built from the config registry so the two cannot drift. */
import { configDefs } from '../cluster/metadata/broker-config-registry.js';

export const CONFIG_TABLE_BEGIN = '<!-- config-table:begin -->';
export const CONFIG_TABLE_END = '<!-- config-table:end -->';

export function configTableMarkdown(): string {
  const rows = [...configDefs()].map(([key, def]) => `| \`${key}\` | ${def.default === null ? '(unset)' : `\`${def.default}\``} | ${def.doc} |`);
  return ['| key | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

/** Replaces the marked section of a README text with the current table. */
export function withConfigTable(readme: string): string {
  const begin = readme.indexOf(CONFIG_TABLE_BEGIN);
  const end = readme.indexOf(CONFIG_TABLE_END);
  if (begin < 0 || end < begin) throw new Error('README.md has no config-table markers');
  return `${readme.slice(0, begin + CONFIG_TABLE_BEGIN.length)}\n${configTableMarkdown()}\n${readme.slice(end)}`;
}

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withConfigTable } from './config-doc.js';
import { CONFIG_DEFS } from './config.js';

describe('README configuration table', () => {
  it('lists every config key with its current default (regenerate with npm run docs)', () => {
    const readme = readFileSync(resolve(import.meta.dirname, '..', 'README.md'), 'utf8');
    expect(withConfigTable(readme)).toBe(readme);
    for (const key of Object.keys(CONFIG_DEFS)) expect(readme).toContain(`| \`${key}\` |`);
  });
});

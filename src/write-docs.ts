/** npm run docs: refreshes the generated sections of README.md. */
import { readFileSync, writeFileSync } from 'node:fs';
import { withConfigTable } from './config-doc.js';

const path = new URL('../../README.md', import.meta.url);
writeFileSync(path, withConfigTable(readFileSync(path, 'utf8')));

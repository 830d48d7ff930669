import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultProtocolDir, generateAll, kebab } from './generate.js';

const root = resolve(import.meta.dirname, '..', '..');
const protocolDir = defaultProtocolDir(root);

describe('generated declarations', () => {
  it('are exactly what the generator produces from the protocol facts', () => {
    expect(existsSync(protocolDir), `protocol definitions expected at ${protocolDir}`).toBe(true);
    const files = generateAll(protocolDir);
    for (const [path, text] of files) {
      expect(readFileSync(join(root, path), 'utf8'), `${path} is stale: run npm run generate`).toBe(text);
    }
    const committed = readdirSync(join(root, 'wire', 'messages')).map((f) => `wire/messages/${f}`);
    expect(committed.sort()).toEqual([...files.keys()].filter((p) => p.startsWith('wire/messages/')).sort());
  });

  it('carry no descriptive text from the source definitions', () => {
    const text = generateAll(protocolDir).get('wire/messages/metadata-response.ts')!;
    expect(text).not.toMatch(/about|The broker ID/);
  });

  it('name modules in kebab case', () => {
    expect(kebab('OffsetForLeaderEpochRequest')).toBe('offset-for-leader-epoch-request');
    expect(kebab('ListOffsetsRequest')).toBe('list-offsets-request');
  });
});

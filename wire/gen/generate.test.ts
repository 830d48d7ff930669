import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROTOCOL_SOURCE_DIRS, defaultProtocolDir, generateAll, kebab } from './generate.js';
import { errorCodeFacts, mergeErrorCodes, mergeMessage, shapeAt, withoutProse } from './refresh-protocol.js';

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

  it('read facts kept in the repository, which hold no descriptive text', () => {
    expect(protocolDir.startsWith(root)).toBe(true);
    for (const dir of PROTOCOL_SOURCE_DIRS) {
      const files = readdirSync(join(protocolDir, dir));
      expect(files.length, dir).toBeGreaterThan(0);
      for (const f of files) expect(readFileSync(join(protocolDir, dir, f), 'utf8'), `${dir}/${f}`).not.toMatch(/"about"|^\s*\/\//m);
    }
  });

  it('are refreshed from Kafka\'s definitions without their prose', () => {
    const source = { name: 'XRequest', fields: [{ name: 'A', type: 'int32', versions: '0+', about: 'text', fields: [{ name: 'B', type: 'string', about: 'more' }] }] };
    expect(withoutProse(source)).toEqual({ name: 'XRequest', fields: [{ name: 'A', type: 'int32', versions: '0+', fields: [{ name: 'B', type: 'string' }] }] });
    expect(errorCodeFacts('code\tname\tmessage\tretriable\n0\tNONE\tfine\tno\n7\tREQUEST_TIMED_OUT\tslow\tyes\n')).toBe('code\tname\tretriable\n0\tNONE\tno\n7\tREQUEST_TIMED_OUT\tyes\n');
  });

  it('merge a release with an older snapshot: the release for its versions, the snapshot for the versions the release removed', () => {
    const older = {
      name: 'XRequest', validVersions: '0-2', flexibleVersions: '2+',
      fields: [
        { name: 'TopicName', type: 'string', versions: '0-1' },
        { name: 'Topic', type: 'string', versions: '2+' },
        { name: 'Count', type: 'int32', versions: '0+' },
      ],
    };
    const current = {
      name: 'XRequest', validVersions: '2-3', flexibleVersions: '2+',
      fields: [
        { name: 'Topic', type: 'string', versions: '2-2' },
        { name: 'TopicId', type: 'uuid', versions: '3+' },
        { name: 'Count', type: 'int32', versions: '2+' },
      ],
    };
    const merged = mergeMessage(current, older, 'XRequest');
    expect(merged.validVersions).toBe('0-3');
    for (const v of [0, 1]) expect(shapeAt(merged, v)).toBe(shapeAt(older, v));
    for (const v of [2, 3]) expect(shapeAt(merged, v)).toBe(shapeAt(current, v));
    expect(shapeAt(merged, 0)).toBe('TopicName:string,Count:int32');
    expect(shapeAt(merged, 3)).toBe('flexible TopicId:uuid,Count:int32');
    // A field whose type changed between the two cannot be merged.
    expect(() => mergeMessage({ ...current, fields: [{ name: 'Count', type: 'int64', versions: '2+' }] }, older, 'XRequest')).toThrow(/type int32 became int64/);
    // Versions neither file describes, between them, cannot be merged; nor a default that changed for old versions.
    expect(() => mergeMessage({ ...current, validVersions: '4-5' }, older, 'XRequest')).toThrow(/leave a gap/);
    const withDefault = { ...current, fields: current.fields.map((f) => (f.name === 'Count' ? { ...f, default: '7' } : f)) };
    expect(() => mergeMessage(withDefault, older, 'XRequest')).toThrow(/XRequest v0/);
    // An API the release no longer has keeps the snapshot's definition.
    expect(mergeMessage({ name: 'XRequest', validVersions: 'none' }, older, 'XRequest')).toBe(older);
    expect(mergeErrorCodes('code\tname\tretriable\n0\tNONE\tno\n129\tREBOOTSTRAP_REQUIRED\tno\n', 'code\tname\tretriable\n0\tNONE\tno\n7\tREQUEST_TIMED_OUT\tyes\n')).toBe(
      'code\tname\tretriable\n0\tNONE\tno\n7\tREQUEST_TIMED_OUT\tyes\n129\tREBOOTSTRAP_REQUIRED\tno\n',
    );
  });

  it('name modules in kebab case', () => {
    expect(kebab('OffsetForLeaderEpochRequest')).toBe('offset-for-leader-epoch-request');
    expect(kebab('ListOffsetsRequest')).toBe('list-offsets-request');
  });
});

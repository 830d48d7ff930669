/**
 * Writes wire/golden/kafka-down-convert/<case>.hex: the stored v2 batches of
 * each case in cases.ts and what Apache Kafka's own converter makes of them.
 * Needs Java 17+ and Maven: kafka-clients comes from pom.xml beside this file (4.0.2, which
 * still has MemoryRecords.downConvert; the reference broker's newer jars do not), resolved
 * into target/lib here on first use.
 *
 *   npx vite-node compat-tests/capture/down-convert/generate.ts
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { downConvertCases } from './cases.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const lib = join(here, 'target/lib');
const pom = join(here, 'pom.xml');
const pinned = /<kafka\.clients\.version>(.+)<\/kafka\.clients\.version>/.exec(readFileSync(pom, 'utf8'))![1];
if (!existsSync(join(lib, `kafka-clients-${pinned}.jar`))) {
  // A classpath left by another pinned version would mix two Kafka releases.
  rmSync(lib, { recursive: true, force: true });
  execFileSync('mvn', ['-q', '-B', '-Dstyle.color=never', '-f', pom, 'package'], { stdio: 'inherit' });
}
const classpath = readdirSync(lib).filter((f) => f.endsWith('.jar')).map((f) => join(lib, f)).join(':');
const kafkaVersion = readdirSync(lib).find((f) => /^kafka-clients-.*\.jar$/.test(f))!.replace(/^kafka-clients-|\.jar$/g, '');
const classes = mkdtempSync(join(tmpdir(), 'down-convert-'));
execFileSync('javac', ['-cp', classpath, '-d', classes, join(here, 'DownConvert.java')], { stdio: 'inherit' });
const cases = downConvertCases();
const input = cases.map((c) => `${c.name} ${c.toMagic} ${c.firstOffset} ${c.batches.toString('hex')}`).join('\n') + '\n';
const output = execFileSync('java', ['-cp', `${classes}:${classpath}`, 'DownConvert'], { input, encoding: 'utf8' });
const outDir = join(root, 'wire/golden/kafka-down-convert');
mkdirSync(outDir, { recursive: true });
const lines = (hex: string) => hex.match(/.{1,128}/g)?.join('\n') ?? '';
for (const line of output.trim().split('\n')) {
  const [name, hex = ''] = line.split(' ');
  const c = cases.find((x) => x.name === name)!;
  writeFileSync(join(outDir, `${name}.hex`), `# stored\n${lines(c.batches.toString('hex'))}\n# kafka-clients ${kafkaVersion} MemoryRecords.downConvert(${c.toMagic}, ${c.firstOffset})\n${lines(hex)}\n`);
}
console.log(`wrote ${cases.length} cases to ${outDir}`);

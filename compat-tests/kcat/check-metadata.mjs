// Reads `kcat -L -J` output on stdin and checks the metadata scenario's rules.
// Exit 0 pass, 1 fail.
import { readFileSync } from 'node:fs';

const problems = [];
const text = readFileSync(0, 'utf8').trim();

let md;
try {
  md = JSON.parse(text);
} catch (err) {
  console.log(`FAIL: kcat output is not JSON (${err.message}): ${text.slice(0, 200)}`);
  process.exit(1);
}

// kcat writes broker names as "host:port"; an IPv6 host comes bracketed.
function splitHostPort(name) {
  const m = /^\[?(.*?)\]?:(\d+)$/.exec(String(name ?? ''));
  return m ? { host: m[1], port: Number(m[2]) } : { host: '', port: 0 };
}

const brokers = Array.isArray(md.brokers) ? md.brokers : [];
if (brokers.length === 0) problems.push('no brokers returned');
const ids = new Set();
for (const b of brokers) {
  const { host, port } = splitHostPort(b.name);
  console.log(`broker id=${b.id} ${host}:${port}`);
  ids.add(b.id);
  if (!Number.isInteger(b.id)) problems.push(`broker ${JSON.stringify(b)} has no integer id`);
  if (!host) problems.push(`broker ${b.id} has an empty host (name ${JSON.stringify(b.name)})`);
  if (!(port > 0 && port < 65536)) problems.push(`broker ${b.id} has port ${port}`);
}

// librdkafka reports -1 when the broker did not say; the rule is that the
// controller must be one of the returned brokers, so -1 fails too.
if (!('controllerid' in md)) {
  console.log('controller id: not in kcat output');
} else {
  console.log(`controller id=${md.controllerid}`);
  if (!ids.has(md.controllerid)) {
    problems.push(`controller id ${md.controllerid} is not one of the brokers [${[...ids].join(', ')}]`);
  }
}

if (!Array.isArray(md.topics)) {
  problems.push('no topics array in kcat output');
} else {
  const names = md.topics.map((t) => t.topic);
  console.log(`topics (${names.length}): ${JSON.stringify(names)}`);
  // The scenario only asks that listing succeeds; a per-topic error is shown
  // but does not fail it.
  for (const t of md.topics) {
    if (t.error) console.log(`note: topic ${t.topic} reported error: ${t.error}`);
  }
}

if (problems.length > 0) {
  for (const p of problems) console.log(`FAIL: ${p}`);
  process.exit(1);
}
console.log('PASS metadata (kcat)');

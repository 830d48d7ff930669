// The kcat `roundtrip` scenario: for each codec, kcat -P writes COUNT messages with keys
// and headers to a new topic (auto-created by the producer's Metadata request), kcat -C
// reads them all back, then reads from an offset in the middle (-o N) and from a
// timestamp (-o s@TS). Usage: node roundtrip.mjs <host:port>. Exit 0 pass, 1 fail.
import { spawn } from 'node:child_process';
import { prng } from '../lib/roundtrip.mjs';

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const COUNT = 100_000;
// Falls inside a batch, so the consumer must skip that batch's first records itself.
const MIDDLE_OFFSET = 54_321;

// Per kcat run; a broker that stops answering fails a step instead of hanging it.
const PRODUCE_TIMEOUT_MS = 15_000;
const CONSUME_TIMEOUT_MS = 15_000;
const SEEK_TIMEOUT_MS = 8_000;
// A consumer that prints nothing for this long is stuck (or the broker cannot serve it).
const IDLE_TIMEOUT_MS = 6_000;
const METADATA_TIMEOUT_S = '8';

// kcat splits its input at these bytes, so no key or value contains them.
const KEY_DELIM = 0x1f;
const MSG_DELIM = 0x1e;

// -H name=value in order; a repeated name checks that order and duplicates survive.
const headerArgs = (codec) => ['compat=roundtrip', `codec=${codec}`, 'dup=1', 'dup=2', 'empty='];

// librdkafka's debug=msg line for each Produce it sends names the codec it really used:
// a producer can fall back to no compression when it thinks the broker lacks a feature.
const PRODUCE_LINE = /Produce MessageSet with (\d+) message\(s\) \((\d+) bytes, ApiVersion (\d+), MsgVersion (\d+),.*, (\w+)\)\s*$/;
const CODEC_NAMES = { none: 'uncompressed', gzip: 'gzip', snappy: 'snappy', lz4: 'lz4', zstd: 'zstd' };

class Failure extends Error {}

// Keys and values mix compressible text with arbitrary bytes (all but the two delimiters),
// cut from two pools so that making 100,000 of them costs next to nothing.
function makeMessages() {
  const rand = prng(0x5eed);
  const pick = (n) => Math.floor(rand() * n);
  const noise = Buffer.allocUnsafe(1 << 20);
  for (let i = 0; i < noise.length; i++) {
    const v = pick(254);
    noise[i] = v >= MSG_DELIM ? v + 2 : v; // skips 0x1e and 0x1f
  }
  const words = ['kafka', 'gregor', 'offset', 'batch', 'record', 'header', 'fetch', 'produce', 'segment', 'ü€✓'];
  const textParts = [];
  for (let n = 0; n < 1 << 18; n++) textParts.push(words[pick(words.length)]);
  const text = Buffer.from(textParts.join(' '));
  const slice = (pool, n) => {
    const at = pick(pool.length - n);
    return pool.subarray(at, at + n);
  };
  const messages = [];
  for (let i = 0; i < COUNT; i++) {
    const key = i % 7 === 0 ? Buffer.concat([Buffer.from(`k${i}:`), slice(noise, 4)]) : Buffer.from(`key-${i}`);
    const r = rand();
    const len = r < 0.05 ? 1 + pick(2000) : 1 + pick(120);
    const half = len >> 1;
    const value =
      r < 0.5 ? slice(text, len) : r < 0.8 ? slice(noise, len) : Buffer.concat([slice(text, half), slice(noise, len - half)]);
    messages.push({ key, value });
  }
  return messages;
}

function kcatInput(messages) {
  const parts = [];
  for (const { key, value } of messages) parts.push(key, Buffer.of(KEY_DELIM), value, Buffer.of(MSG_DELIM));
  return Buffer.concat(parts);
}

/** Runs kcat, feeding input; kills it after timeoutMs, or after idleMs without output. */
function kcat(args, { input, timeoutMs, idleMs }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('kcat', args, { stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out = [];
    let err = '';
    let killed = null;
    const kill = (why) => {
      if (killed) return;
      killed = why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => kill(`no exit within ${timeoutMs} ms`), timeoutMs);
    let idle = idleMs ? setTimeout(() => kill(`no output for ${idleMs} ms`), idleMs) : null;
    child.stdout.on('data', (c) => {
      out.push(c);
      if (idle) idle.refresh();
    });
    child.stderr.setEncoding('utf8').on('data', (c) => {
      err += c;
    });
    child.on('error', (e) => {
      err += `\nspawn kcat: ${e.message}`;
    });
    if (input) {
      child.stdin.on('error', () => {}); // kcat may exit before reading everything
      child.stdin.end(input);
    }
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (idle) clearTimeout(idle);
      idle = null;
      resolve({ code, signal, killed, stdout: Buffer.concat(out), stderr: err, ms: Date.now() - started });
    });
  });
}

// kcat's last distinct stderr lines, without librdkafka's debug output, repeats counted.
function stderrTail(r, n = 6) {
  const seen = new Map();
  for (const l of r.stderr.split('\n')) {
    if (l.trim() && !l.startsWith('%7|')) seen.set(l, (seen.get(l) ?? 0) + 1);
  }
  return [...seen]
    .slice(-n)
    .map(([l, k]) => `  kcat: ${l}${k > 1 ? ` (${k} times)` : ''}`)
    .join('\n');
}

function expectOk(r, what, note = '') {
  if (r.killed || r.code !== 0) {
    const how = r.killed ?? (r.signal ? `killed by ${r.signal}` : `exit ${r.code}`);
    throw new Failure(`${what}: ${how}${note}\n${stderrTail(r)}`);
  }
}

// Output of -f FORMAT, parsed with the lengths kcat prints: "%o\t%T\t%K\t%S\t%h\n%k%s\n".
const FORMAT = '%o\\t%T\\t%K\\t%S\\t%h\\n%k%s\\n';

function parseRecords(buf) {
  const records = [];
  let pos = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) throw new Failure(`consumer output truncated at byte ${pos}`);
    const fields = buf.toString('utf8', pos, nl).split('\t');
    if (fields.length !== 5) throw new Failure(`unexpected consumer line at byte ${pos}: ${JSON.stringify(fields)}`);
    const [offset, ts, keyLen, valueLen] = fields.slice(0, 4).map(Number);
    pos = nl + 1;
    const take = (n) => {
      if (n < 0) return null;
      const b = buf.subarray(pos, pos + n);
      pos += n;
      return b;
    };
    const key = take(keyLen);
    const value = take(valueLen);
    if (buf[pos] !== 0x0a) throw new Failure(`record at offset ${offset}: lengths do not match the bytes printed`);
    pos++;
    records.push({ offset, ts, key, value, headers: fields[4] });
  }
  return records;
}

const show = (b) => (b === null ? 'null' : `${b.length} bytes ${JSON.stringify(b.subarray(0, 24).toString('latin1'))}`);

function compare(records, messages, headers) {
  const problems = [];
  if (records.length !== messages.length) problems.push(`read back ${records.length} records, expected ${messages.length}`);
  for (let i = 0; i < Math.min(records.length, messages.length) && problems.length < 5; i++) {
    const r = records[i];
    const m = messages[i];
    if (r.offset !== i) problems.push(`record ${i} has offset ${r.offset}, expected ${i} (offsets must run 0, 1, 2, ...)`);
    else if (r.key === null || !r.key.equals(m.key)) problems.push(`offset ${i}: key ${show(r.key)}, expected ${show(m.key)}`);
    else if (r.value === null || !r.value.equals(m.value)) problems.push(`offset ${i}: value ${show(r.value)}, expected ${show(m.value)}`);
    else if (r.headers !== headers) problems.push(`offset ${i}: headers ${JSON.stringify(r.headers)}, expected ${JSON.stringify(headers)}`);
  }
  if (problems.length) throw new Failure(problems.join('\n  '));
}

// The timestamp to search for and the offset ListOffsets must answer: the first offset,
// in log order, whose timestamp is at or after it. kcat cannot set timestamps, and many
// records share librdkafka's millisecond; the target is the first change of timestamp
// past 60% of the log, so one record, inside a batch, is the right answer.
function timestampProbe(records) {
  let m = Math.floor(records.length * 0.6);
  while (m < records.length && records[m].ts <= records[m - 1].ts) m++;
  if (m >= records.length) m = Math.floor(records.length * 0.6);
  const target = records[m].ts;
  const expected = records.findIndex((r) => r.ts >= target);
  return { target, expected };
}

async function roundtrip(bootstrap, codec, stamp, messages, input) {
  const topic = `compat-roundtrip-kcat-${codec}-${stamp}`;
  const hdrs = headerArgs(codec);
  const common = ['-b', bootstrap, '-t', topic, '-p', '0', '-m', METADATA_TIMEOUT_S];

  const produced = await kcat(
    ['-P', ...common, '-z', codec, '-K', '\\x1f', '-D', '\\x1e', ...hdrs.flatMap((h) => ['-H', h]), '-X', 'debug=msg', '-X', 'linger.ms=20'],
    { input, timeoutMs: PRODUCE_TIMEOUT_MS },
  );
  const sets = produced.stderr
    .split('\n')
    .map((l) => PRODUCE_LINE.exec(l))
    .filter(Boolean)
    .map((m) => ({ count: Number(m[1]), apiVersion: Number(m[3]), msgVersion: Number(m[4]), codec: m[5] }));
  const sent = sets.reduce((n, s) => n + s.count, 0);
  const versions = [...new Set(sets.map((s) => `Produce v${s.apiVersion} magic ${s.msgVersion}`))];
  expectOk(produced, `kcat -P -z ${codec}`, versions.length ? ` (it sent ${versions.join(', ')})` : '');
  if (sent < COUNT) throw new Failure(`kcat -P logged Produce requests for ${sent} messages, expected ${COUNT}\n${stderrTail(produced)}`);
  // librdkafka sends a batch uncompressed when compressing does not make it smaller (a
  // lone small message, typically), so only most messages must travel compressed.
  const wanted = CODEC_NAMES[codec];
  const inCodec = sets.filter((s) => s.codec === wanted).reduce((n, s) => n + s.count, 0);
  const perCodec = new Map();
  for (const s of sets) perCodec.set(s.codec, (perCodec.get(s.codec) ?? 0) + 1);
  const batches = [...perCodec].map(([c, n]) => `${n} ${c}`).join(' + ');
  const foreign = sets.find((s) => s.codec !== wanted && s.codec !== 'uncompressed');
  if (foreign || inCodec < COUNT * 0.9) {
    throw new Failure(`-z ${codec}: librdkafka sent ${batches} batches, ${inCodec} of ${sent} messages as ${wanted} (${versions.join(', ')})`);
  }

  const all = await kcat(['-C', ...common, '-o', 'beginning', '-c', String(COUNT), '-e', '-f', FORMAT], {
    timeoutMs: CONSUME_TIMEOUT_MS,
    idleMs: IDLE_TIMEOUT_MS,
  });
  expectOk(all, `kcat -C -o beginning (${codec})`);
  const records = parseRecords(all.stdout);
  compare(records, messages, hdrs.join(','));

  // The two seeks are independent; run side by side they cost one consumer start-up.
  const { target, expected } = timestampProbe(records);
  const seek = (from) => kcat(['-C', ...common, '-o', from, '-c', '1', '-f', FORMAT], { timeoutMs: SEEK_TIMEOUT_MS, idleMs: IDLE_TIMEOUT_MS });
  const [mid, byTime] = await Promise.all([seek(String(MIDDLE_OFFSET)), seek(`s@${target}`)]);
  expectOk(mid, `kcat -C -o ${MIDDLE_OFFSET} (${codec})`);
  const [first] = parseRecords(mid.stdout);
  if (first?.offset !== MIDDLE_OFFSET) throw new Failure(`-o ${MIDDLE_OFFSET}: first offset ${first?.offset}`);
  if (!first.value.equals(messages[MIDDLE_OFFSET].value)) throw new Failure(`-o ${MIDDLE_OFFSET}: value differs`);
  expectOk(byTime, `kcat -C -o s@${target} (${codec})`);
  const [fromTs] = parseRecords(byTime.stdout);
  if (fromTs?.offset !== expected) throw new Failure(`-o s@${target}: first offset ${fromTs?.offset}, expected ${expected}`);

  console.log(
    `${codec}: ${COUNT} sent, ${inCodec} of them ${wanted}, in ${batches} batches (${versions.join(', ')}) in ${produced.ms} ms; ` +
      `read back in ${all.ms} ms; -o ${MIDDLE_OFFSET} -> ${first.offset}; -o s@${target} -> ${fromTs.offset}`,
  );
}

async function main() {
  const bootstrap = process.argv[2];
  if (!bootstrap) {
    console.error('usage: node roundtrip.mjs <host:port>');
    return 2;
  }
  const stamp = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  console.log(`kcat roundtrip against ${bootstrap}: ${COUNT} messages per codec (${CODECS.join(', ')}), partition 0`);
  const messages = makeMessages();
  const input = kcatInput(messages);
  // Two codecs at a time (one producing while the other consumes keeps both cores busy);
  // after the first failure no new codec starts, since a broker that cannot serve one
  // would make every later one wait out the same timeouts.
  const queue = [...CODECS];
  const failures = [];
  const lane = async () => {
    while (queue.length && !failures.length) {
      const codec = queue.shift();
      try {
        await roundtrip(bootstrap, codec, stamp, messages, input);
      } catch (err) {
        if (!(err instanceof Failure)) throw err;
        failures.push(`${codec}: ${err.message}`);
      }
    }
  };
  await Promise.all([lane(), lane()]);
  if (failures.length) {
    for (const f of failures) console.log(`FAIL: ${f}`);
    return 1;
  }
  console.log('PASS roundtrip (kcat)');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.log(`FAIL: unexpected error: ${err?.stack ?? err}`);
    process.exit(1);
  },
);

// The roundtrip scenario's data and checks, shared by the Node clients' client.mjs (the
// Python clients have the same in roundtrip.py). makeMessages() builds what a client
// produces, checkRecords() compares what it read back. Timestamps are explicit and
// TIMESTAMP_STEP_MS apart, so the offset a timestamp lookup must find is known in advance.
import { ScenarioFailure } from './scenario.mjs';

export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

// Every message gets its own timestamp, this far after the previous one.
export const TIMESTAMP_STEP_MS = 10;

// mulberry32: a small seeded generator, so a failure can be reproduced byte for byte.
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * count messages { key, value, headers, timestamp }: keys and values mix text with
 * arbitrary bytes (Buffers). Every 10th key is null, message 1 has an empty value and
 * message 2 a null one. headers is a list of [name, Buffer] with a repeated name and an
 * empty value, so order and duplicates must survive. timestamp (ms, a number) starts an
 * hour in the past and increases.
 */
export function makeMessages(count, seed) {
  const rand = prng(seed);
  const pick = (n) => Math.floor(rand() * n);
  const noise = Buffer.allocUnsafe(1 << 18);
  for (let i = 0; i < noise.length; i++) noise[i] = pick(256);
  const words = ['kafka', 'gregor', 'offset', 'batch', 'record', 'header', 'ü€✓'];
  const textParts = [];
  for (let n = 0; n < 1 << 15; n++) textParts.push(words[pick(words.length)]);
  const text = Buffer.from(textParts.join(' '));
  const slice = (pool, n) => {
    const at = pick(pool.length - n);
    return Buffer.from(pool.subarray(at, at + n));
  };
  const baseTimestamp = Date.now() - 3_600_000;
  const messages = [];
  for (let i = 0; i < count; i++) {
    const key = i % 10 === 0 ? null : i % 3 ? Buffer.from(`key-${i}`) : Buffer.concat([Buffer.from(`k${i}:`), slice(noise, 4)]);
    const r = rand();
    const len = r < 0.05 ? 1 + pick(2000) : 1 + pick(120);
    let value = r < 0.5 ? slice(text, len) : r < 0.8 ? slice(noise, len) : Buffer.concat([slice(text, len >> 1), slice(noise, len - (len >> 1))]);
    if (i === 1) value = Buffer.alloc(0);
    else if (i === 2) value = null;
    const headers = [
      ['compat', Buffer.from('roundtrip')],
      ['seq', Buffer.from(String(i))],
      ['dup', Buffer.from('1')],
      ['dup', Buffer.from('2')],
      ['empty', Buffer.alloc(0)],
    ];
    messages.push({ key, value, headers, timestamp: baseTimestamp + i * TIMESTAMP_STEP_MS });
  }
  return messages;
}

/** A timestamp between messages index-1 and index, and the offset a lookup must find. */
export function timestampProbe(messages, index) {
  return { target: messages[index].timestamp - TIMESTAMP_STEP_MS / 2, expected: index };
}

const show = (b) => (b === null || b === undefined ? String(b) : `${b.length} bytes ${JSON.stringify(b.subarray(0, 24).toString('latin1'))}`);
const sameBytes = (a, b) => (a === null || a === undefined ? b === null : b !== null && Buffer.compare(a, b) === 0);
const showHeaders = (h) => JSON.stringify(h.map(([k, v]) => [String(k), v === null ? null : v.toString('latin1')]));

/**
 * Compares records read back with the messages produced and throws a ScenarioFailure
 * listing the first problems. records are { offset, key, value, headers, timestamp } in
 * the order read; offset and timestamp may be numbers, strings or bigints, headers a
 * list of [name, Buffer]. Offsets must run 0, 1, 2, ...
 */
export function checkRecords(label, messages, records) {
  const problems = [];
  if (records.length !== messages.length) problems.push(`read back ${records.length} records, expected ${messages.length}`);
  for (let i = 0; i < Math.min(records.length, messages.length) && problems.length < 5; i++) {
    const r = records[i];
    const m = messages[i];
    const headersMatch =
      r.headers.length === m.headers.length && r.headers.every(([k, v], j) => String(k) === m.headers[j][0] && sameBytes(v, m.headers[j][1]));
    if (Number(r.offset) !== i) problems.push(`record ${i} has offset ${r.offset}, expected ${i} (offsets must run 0, 1, 2, ...)`);
    else if (!sameBytes(r.key, m.key)) problems.push(`offset ${i}: key ${show(r.key)}, expected ${show(m.key)}`);
    else if (!sameBytes(r.value, m.value)) problems.push(`offset ${i}: value ${show(r.value)}, expected ${show(m.value)}`);
    else if (!headersMatch) problems.push(`offset ${i}: headers ${showHeaders(r.headers)}, expected ${showHeaders(m.headers)}`);
    else if (Number(r.timestamp) !== m.timestamp) problems.push(`offset ${i}: timestamp ${r.timestamp}, expected ${m.timestamp}`);
  }
  if (problems.length) throw new ScenarioFailure(`${label}: ${problems.join(`\n  ${label}: `)}`);
}

/** Checks that acknowledged base offsets, in send order, cover 0..count-1 without gaps. */
export function checkAcknowledged(label, sends) {
  let next = 0;
  for (const { baseOffset, count } of sends) {
    if (Number(baseOffset) !== next) {
      throw new ScenarioFailure(`${label}: a send of ${count} messages was acknowledged at base offset ${baseOffset}, expected ${next}`);
    }
    next += count;
  }
  return next;
}

// The few Kafka requests the matrix itself sends to a cluster it started, hand-encoded in
// their oldest (non-flexible) versions so that they work against any broker without a client
// library: whether a listener serves (ApiVersions v0), which brokers a broker knows of
// (Metadata v1), a cluster-wide dynamic default (IncrementalAlterConfigs v0) and a broker's
// view of its configs (DescribeConfigs v1, the oldest Apache Kafka 4 serves).
//
//   await apiVersions({ port: 40100 })       // { errorCode: 0, apiKeys: [{ apiKey: 0, minVersion: 0, maxVersion: 11 }, ...] }
//   await metadataBrokers({ port: 40100 })   // [{ nodeId: 1, host: '127.0.0.1', port: 40100 }, ...]
//   await describeBrokerConfigs({ port: 40101 }, 2, ['min.insync.replicas'])  // Map { 'min.insync.replicas' => '2' }

import net from 'node:net';

const METADATA = 3;
const API_VERSIONS = 18;
const DESCRIBE_CONFIGS = 32;
const RESOURCE_BROKER = 4;
const MAX_RESPONSE = 64 * 1024 * 1024;

class Out {
  constructor() {
    this.parts = [];
  }
  int8(v) {
    const b = Buffer.alloc(1);
    b.writeInt8(v);
    this.parts.push(b);
    return this;
  }
  int16(v) {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    this.parts.push(b);
    return this;
  }
  int32(v) {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }
  string(v) {
    if (v === null) return this.int16(-1);
    const b = Buffer.from(v, 'utf8');
    this.int16(b.length);
    this.parts.push(b);
    return this;
  }
  bytes() {
    return Buffer.concat(this.parts);
  }
}

class In {
  constructor(buf) {
    this.buf = buf;
    this.at = 0;
  }
  need(n) {
    if (this.at + n > this.buf.length) throw new Error('response ends early');
  }
  int8() {
    this.need(1);
    return this.buf.readInt8((this.at += 1) - 1);
  }
  int16() {
    this.need(2);
    return this.buf.readInt16BE((this.at += 2) - 2);
  }
  int32() {
    this.need(4);
    return this.buf.readInt32BE((this.at += 4) - 4);
  }
  string() {
    const len = this.int16();
    if (len < 0) return null;
    this.need(len);
    const s = this.buf.toString('utf8', this.at, this.at + len);
    this.at += len;
    return s;
  }
  array(item) {
    const n = this.int32();
    const out = [];
    for (let i = 0; i < n; i++) out.push(item());
    return out;
  }
}

let nextCorrelation = 1;

/** Sends one request (header v1) on a fresh connection and resolves the response body after its correlation id. */
function request({ host = '127.0.0.1', port }, apiKey, version, body, timeoutMs = 5_000) {
  const correlationId = nextCorrelation++ & 0x7fffffff;
  const payload = new Out().int16(apiKey).int16(version).int32(correlationId).string('gregor-compat-matrix').bytes();
  const frame = Buffer.concat([new Out().int32(payload.length + body.length).bytes(), payload, body]);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (err, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`)), timeoutMs);
    socket.once('connect', () => socket.write(frame));
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(new Error(`${host}:${port} closed the connection before answering`)));
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length < 4) return;
      const size = buf.readInt32BE(0);
      if (size < 4 || size > MAX_RESPONSE) return finish(new Error(`implausible response size ${size}`));
      if (buf.length < 4 + size) return;
      const got = buf.readInt32BE(4);
      if (got !== correlationId) return finish(new Error(`correlation id ${got}, expected ${correlationId}`));
      finish(null, buf.subarray(8, 4 + size));
    });
  });
}

/** ApiVersions v0: the one request every Kafka broker answers before anything is negotiated. */
export async function apiVersions(address, timeoutMs) {
  const r = new In(await request(address, API_VERSIONS, 0, Buffer.alloc(0), timeoutMs));
  const errorCode = r.int16();
  const apiKeys = r.array(() => ({ apiKey: r.int16(), minVersion: r.int16(), maxVersion: r.int16() }));
  return { errorCode, apiKeys };
}

/** The brokers the broker at `address` lists in Metadata (v1, no topics). */
export async function metadataBrokers(address, timeoutMs) {
  const body = await request(address, METADATA, 1, new Out().int32(0).bytes(), timeoutMs);
  const r = new In(body);
  return r.array(() => {
    const nodeId = r.int32();
    const host = r.string();
    const port = r.int32();
    r.string(); // rack
    return { nodeId, host, port };
  });
}

/** The values of `names` in broker `nodeId`'s configs, as the broker at `address` describes them. */
export async function describeBrokerConfigs(address, nodeId, names, timeoutMs) {
  const out = new Out().int32(1).int8(RESOURCE_BROKER).string(String(nodeId)).int32(names.length);
  for (const name of names) out.string(name);
  out.int8(0); // include_synonyms
  // v1: Apache Kafka 4 no longer serves v0.
  const r = new In(await request(address, DESCRIBE_CONFIGS, 1, out.bytes(), timeoutMs));
  r.int32(); // throttle
  const values = new Map();
  r.array(() => {
    const errorCode = r.int16();
    const errorMessage = r.string();
    r.int8();
    r.string();
    if (errorCode !== 0) throw new Error(`DescribeConfigs of broker ${nodeId}: error ${errorCode} ${errorMessage ?? ''}`);
    r.array(() => {
      const name = r.string();
      const value = r.string();
      r.int8(); // read_only
      r.int8(); // config_source
      r.int8(); // is_sensitive
      r.array(() => [r.string(), r.string(), r.int8()]); // synonyms (none asked for)
      values.set(name, value);
    });
  });
  return values;
}

/**
 * What the broker at `address` knows of `topic` (Metadata v4, never auto-creating it):
 * { errorCode, partitions: [{ partitionIndex, errorCode, leaderId, replicas, isr }] }.
 */
export async function topicMetadata(address, topic, timeoutMs) {
  const body = await request(address, METADATA, 4, new Out().int32(1).string(topic).int8(0).bytes(), timeoutMs);
  const r = new In(body);
  r.int32(); // throttle
  r.array(() => {
    r.int32();
    r.string();
    r.int32();
    r.string();
  });
  r.string(); // cluster id
  r.int32(); // controller
  const topics = r.array(() => ({
    errorCode: r.int16(),
    name: r.string(),
    internal: r.int8(),
    partitions: r.array(() => {
      const p = { errorCode: r.int16(), partitionIndex: r.int32(), leaderId: r.int32() };
      p.replicas = r.array(() => r.int32());
      p.isr = r.array(() => r.int32());
      return p;
    }),
  }));
  const t = topics.find((x) => x.name === topic);
  return t ?? { errorCode: -1, partitions: [] };
}

/**
 * Waits until every broker of the cluster that `bootstrap` (host:port) belongs to lists
 * `topic` with `partitions` partitions, each with a leader. A topic is made by one broker
 * (or controller) and reaches the others a moment later; a scenario about something else
 * waits for that before its clients ask another broker. Throws after `timeoutMs`.
 *
 *   await waitForTopic('127.0.0.1:40100', 'orders', 3)
 */
export async function waitForTopic(bootstrap, topic, partitions, timeoutMs = 10_000) {
  const i = bootstrap.lastIndexOf(':');
  const first = { host: bootstrap.slice(0, i), port: Number(bootstrap.slice(i + 1)) };
  const deadline = Date.now() + timeoutMs;
  let brokers = [];
  let last = 'no answer';
  for (;;) {
    try {
      if (brokers.length === 0) brokers = await metadataBrokers(first, 2_000);
      const views = await Promise.all(brokers.map((b) => topicMetadata(b, topic, 2_000)));
      const behind = brokers.filter((_, k) => {
        const v = views[k];
        return v.errorCode !== 0 || v.partitions.length !== partitions || v.partitions.some((p) => p.errorCode !== 0 || p.leaderId < 0);
      });
      if (behind.length === 0) return;
      last = `broker(s) ${behind.map((b) => b.nodeId).join(', ')} do not list it yet`;
    } catch (err) {
      last = err.message;
    }
    if (Date.now() > deadline) throw new Error(`${topic} with ${partitions} partitions is not known to every broker after ${timeoutMs} ms: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

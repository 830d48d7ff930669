/**
 * The null sink: a server that speaks just enough of the Kafka protocol for
 * the throughput benchmark's generator and stores nothing, so that its rate is
 * the generator's own ceiling on this machine. It runs as its own `node`
 * process, like a broker, and also hosts a discard port for the raw loopback
 * TCP baseline.
 *
 *   node dist/bench/null-sink.js     prints "null sink listening <port> discard <port>"
 *
 * Every request frame's header is parsed (size, api key, version, correlation
 * id, client id, tagged fields). Then:
 *   - ApiVersions, Metadata, CreateTopics: decoded and answered (topics are
 *     remembered by name and partition count only);
 *   - Produce: the body is walked without touching record bytes (acks, topic
 *     names, partition indexes, record set lengths) and answered with a success
 *     answer encoded once per request shape and copied with the correlation id
 *     patched in; acks=0 gets no answer. The batch with the most records
 *     produced to a topic so far is kept (one copy) as the sample its fetches
 *     return;
 *   - Fetch: decoded and answered with a canned record set per partition (the
 *     sample batch repeated, offsets counting up from 0) cut to the request's
 *     byte limits, whatever offset was asked for.
 * The discard port counts and drops every byte; when the client ends its side,
 * it answers with the count as an int64 and closes.
 *
 * Example: const sink = await startNullSink(); ... sink.broker.port, sink.discardPort; await sink.broker.stop();
 */
import { spawn } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { codecFor, isFlexible } from '../wire/codec.js';
import type { ApiVersionsResponse } from '../wire/messages/api-versions-response.js';
import type { CreateTopicsRequest } from '../wire/messages/create-topics-request.js';
import type { CreateTopicsResponse } from '../wire/messages/create-topics-response.js';
import type { FetchRequest } from '../wire/messages/fetch-request.js';
import type { FetchResponse, PartitionData } from '../wire/messages/fetch-response.js';
import type { MetadataRequest } from '../wire/messages/metadata-request.js';
import type { MetadataResponse } from '../wire/messages/metadata-response.js';
import type { ProduceResponse } from '../wire/messages/produce-response.js';
import { finishFrame, skipTaggedFields, startResponse } from '../wire/headers.js';
import { Reader, ZERO_UUID } from '../wire/reader.js';
import { BATCH_HEADER_SIZE, BATCH_LENGTH, BASE_OFFSET, LAST_OFFSET_DELTA, LOG_OVERHEAD, RECORD_COUNT } from '../wire/record-batch.js';
import { Writer } from '../wire/writer.js';
import type { RunningBroker } from './brokers.js';
import { api, type ApiDecl } from '../cluster/inter-broker/kafka-connection.js';

const SUPPORTED: Record<number, [number, number]> = { 0: [3, 11], 1: [4, 12], 3: [0, 12], 18: [0, 3], 19: [2, 7] };
const CANNED_BYTES = 8 * 1024 * 1024;
const TOPIC_ID = Buffer.from('null-sink-topic!').toString('base64url');

interface Topic {
  readonly partitions: number;
  sample: Buffer | null;
  canned: { bytes: Buffer; batchSize: number; recordsPerBatch: number } | null;
}

const DECLS = new Map<number, ApiDecl>(['Produce', 'Fetch', 'Metadata', 'ApiVersions', 'CreateTopics'].map((n) => [api(n).apiKey, api(n)]));

class Sink {
  private readonly topics = new Map<string, Topic>();
  private readonly produceAnswers = new Map<string, Buffer>();

  constructor(
    private readonly host: string,
    private port: number,
  ) {}

  setPort(port: number): void {
    this.port = port;
  }

  serve(socket: Socket): void {
    socket.setNoDelay(true);
    let chunks: Buffer[] = [];
    let have = 0;
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      have += chunk.length;
      socket.cork();
      try {
        for (let guard = 0; guard < 1_000_000 && have >= 4; guard++) {
          const first = chunks[0]!;
          const size = first.length >= 4 ? first.readInt32BE(0) : Buffer.concat(chunks, 4).readInt32BE(0);
          if (size < 8 || size > 256 * 1024 * 1024) {
            socket.destroy();
            return;
          }
          if (have < 4 + size) break;
          let whole = first;
          if (first.length < 4 + size) {
            whole = Buffer.concat(chunks, have);
            chunks = [whole];
          }
          let answer: Buffer | Buffer[] | null | 'close';
          try {
            answer = this.handle(whole.subarray(4, 4 + size));
          } catch {
            answer = 'close';
          }
          if (answer === 'close') {
            socket.destroy();
            return;
          }
          if (Array.isArray(answer)) for (const part of answer) socket.write(part);
          else if (answer) socket.write(answer);
          const rest = whole.subarray(4 + size);
          if (rest.length > 0) chunks[0] = rest;
          else chunks.shift();
          have -= 4 + size;
        }
      } finally {
        socket.uncork();
      }
    });
  }

  /** One request frame (size prefix removed) -> the whole answer frame, null for none, 'close' for a request it cannot serve. */
  private handle(req: Buffer): Buffer | Buffer[] | null | 'close' {
    const r = new Reader(req);
    const apiKey = r.int16();
    const version = r.int16();
    const correlationId = r.int32();
    const decl = DECLS.get(apiKey);
    const range = SUPPORTED[apiKey];
    if (!decl || !range) return 'close';
    if (apiKey === 18 && (version < range[0] || version > range[1])) return this.encode(decl, 0, correlationId, { errorCode: 35, apiKeys: this.apiKeys() } satisfies Partial<ApiVersionsResponse>);
    if (version < range[0] || version > range[1]) return 'close';
    const flexible = isFlexible(decl.request, version);
    r.string();
    if (flexible) skipTaggedFields(r);
    if (r.error) return 'close';
    switch (apiKey) {
      case 0:
        return this.produce(r, version, flexible, correlationId);
      case 1:
        return this.fetch(decl, r, version, correlationId);
      case 3:
        return this.metadata(decl, r, version, correlationId);
      case 18:
        return this.encode(decl, version, correlationId, { errorCode: 0, apiKeys: this.apiKeys(), throttleTimeMs: 0 } satisfies Partial<ApiVersionsResponse>);
      default:
        return this.createTopics(decl, r, version, correlationId);
    }
  }

  private apiKeys(): { apiKey: number; minVersion: number; maxVersion: number }[] {
    return Object.entries(SUPPORTED).map(([k, [min, max]]) => ({ apiKey: Number(k), minVersion: min, maxVersion: max }));
  }

  private encode(decl: ApiDecl, version: number, correlationId: number, body: unknown): Buffer {
    const w = new Writer(256);
    const start = startResponse(w, correlationId, decl.apiKey === 18 ? 0 : isFlexible(decl.response, version) ? 1 : 0);
    codecFor(decl.response, version).encode(w, body);
    finishFrame(w, start);
    return w.finish();
  }

  private produce(r: Reader, version: number, flexible: boolean, correlationId: number): Buffer | null | 'close' {
    if (flexible) {
      const n = r.uvarint();
      if (n > 0) r.raw(n - 1);
    } else {
      const n = r.int16();
      if (n > 0) r.raw(n);
    }
    const acks = r.int16();
    r.int32();
    let key = `${version}|${acks}`;
    const shape: { name: string; partitions: number[] }[] = [];
    const topicCount = flexible ? r.uvarint() - 1 : r.int32();
    for (let t = 0; t < topicCount && !r.error; t++) {
      const name = (flexible ? r.compactString() : r.string()) ?? '';
      key += `|${name}:`;
      const partitions: number[] = [];
      const partitionCount = flexible ? r.uvarint() - 1 : r.int32();
      for (let p = 0; p < partitionCount && !r.error; p++) {
        const index = r.int32();
        const size = flexible ? r.uvarint() - 1 : r.int32();
        const records = size > 0 ? r.raw(size) : null;
        if (flexible) skipTaggedFields(r);
        partitions.push(index);
        key += `${index},`;
        const topic = this.topics.get(name);
        // The sample is the batch with the most records seen so far: one integer read per request.
        if (records && topic && records.length >= BATCH_HEADER_SIZE && (!topic.sample || records.readInt32BE(RECORD_COUNT) > topic.sample.readInt32BE(RECORD_COUNT))) {
          const first = Math.min(records.length, LOG_OVERHEAD + records.readInt32BE(BATCH_LENGTH));
          topic.sample = Buffer.from(records.subarray(0, first));
          topic.canned = null;
        }
      }
      if (flexible) skipTaggedFields(r);
      shape.push({ name, partitions });
    }
    if (flexible) skipTaggedFields(r);
    if (r.error) return 'close';
    if (acks === 0) return null;
    let canned = this.produceAnswers.get(key);
    if (!canned) {
      const body: ProduceResponse = {
        responses: shape.map((t) => ({
          name: t.name,
          topicId: this.topics.has(t.name) ? TOPIC_ID : ZERO_UUID,
          partitionResponses: t.partitions.map((index) => ({
            index,
            errorCode: this.topics.has(t.name) ? 0 : 3,
            baseOffset: 0n,
            logAppendTimeMs: -1n,
            logStartOffset: 0n,
            recordErrors: [],
            errorMessage: null,
            currentLeader: { leaderId: -1, leaderEpoch: -1 },
          })),
        })),
        throttleTimeMs: 0,
        nodeEndpoints: [],
      };
      canned = this.encode(api('Produce'), version, 0, body);
      if (this.produceAnswers.size < 100_000) this.produceAnswers.set(key, canned);
    }
    const out = Buffer.allocUnsafe(canned.length);
    canned.copy(out);
    out.writeInt32BE(correlationId, 4);
    return out;
  }

  private cannedFor(topic: Topic): Topic['canned'] {
    if (topic.canned || !topic.sample) return topic.canned;
    const sample = topic.sample;
    const recordsPerBatch = sample.readInt32BE(LAST_OFFSET_DELTA) + 1;
    const copies = Math.max(1, Math.floor(CANNED_BYTES / sample.length));
    const bytes = Buffer.allocUnsafe(copies * sample.length);
    for (let i = 0; i < copies; i++) {
      sample.copy(bytes, i * sample.length);
      bytes.writeBigInt64BE(BigInt(i * recordsPerBatch), i * sample.length + BASE_OFFSET);
    }
    topic.canned = { bytes, batchSize: sample.length, recordsPerBatch };
    return topic.canned;
  }

  private fetch(decl: ApiDecl, r: Reader, version: number, correlationId: number): Buffer | Buffer[] | 'close' {
    const req = codecFor<FetchRequest>(decl.request, version).decode(r);
    if (r.error) return 'close';
    let budget = req.maxBytes;
    const responses = req.topics.map((t) => {
      const topic = this.topics.get(t.topic);
      return {
        topic: t.topic,
        topicId: t.topicId,
        partitions: t.partitions.map((p): PartitionData => {
          const known = topic !== undefined && p.partition >= 0 && p.partition < topic.partitions;
          const canned = topic && known ? this.cannedFor(topic) : null;
          let records: Buffer | null = null;
          if (canned) {
            const limit = Math.min(p.partitionMaxBytes, Math.max(0, budget));
            const batches = Math.max(budget === req.maxBytes ? 1 : 0, Math.floor(limit / canned.batchSize));
            const n = Math.min(batches, canned.bytes.length / canned.batchSize);
            records = canned.bytes.subarray(0, n * canned.batchSize);
            budget -= records.length;
          }
          const end = canned ? BigInt((canned.bytes.length / canned.batchSize) * canned.recordsPerBatch) : 0n;
          return {
            partitionIndex: p.partition,
            errorCode: known ? 0 : 3,
            highWatermark: end,
            lastStableOffset: end,
            logStartOffset: 0n,
            divergingEpoch: { epoch: -1, endOffset: -1n },
            currentLeader: { leaderId: -1, leaderEpoch: -1 },
            snapshotId: { endOffset: -1n, epoch: -1 },
            abortedTransactions: null,
            preferredReadReplica: -1,
            records,
          };
        }),
      };
    });
    if (version === 12) return fetchV12(correlationId, responses);
    const body: FetchResponse = { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses, nodeEndpoints: [] };
    return this.encode(decl, version, correlationId, body);
  }

  private metadata(decl: ApiDecl, r: Reader, version: number, correlationId: number): Buffer | 'close' {
    const req = codecFor<MetadataRequest>(decl.request, version).decode(r);
    if (r.error) return 'close';
    const names = req.topics === null ? [...this.topics.keys()] : req.topics.map((t) => t.name ?? '');
    const body: MetadataResponse = {
      throttleTimeMs: 0,
      brokers: [{ nodeId: 0, host: this.host, port: this.port, rack: null }],
      clusterId: 'null-sink',
      controllerId: 0,
      topics: names.map((name) => {
        const t = this.topics.get(name);
        return {
          errorCode: t ? 0 : 3,
          name,
          topicId: t ? TOPIC_ID : ZERO_UUID,
          isInternal: false,
          partitions: Array.from({ length: t?.partitions ?? 0 }, (_, i) => ({
            errorCode: 0,
            partitionIndex: i,
            leaderId: 0,
            leaderEpoch: 0,
            replicaNodes: [0],
            isrNodes: [0],
            offlineReplicas: [],
          })),
          topicAuthorizedOperations: -2147483648,
        };
      }),
      clusterAuthorizedOperations: -2147483648,
      errorCode: 0,
    };
    return this.encode(decl, version, correlationId, body);
  }

  private createTopics(decl: ApiDecl, r: Reader, version: number, correlationId: number): Buffer | 'close' {
    const req = codecFor<CreateTopicsRequest>(decl.request, version).decode(r);
    if (r.error) return 'close';
    const topics = req.topics.map((t) => {
      const partitions = t.numPartitions > 0 ? t.numPartitions : 1;
      const exists = this.topics.has(t.name);
      if (!exists && !req.validateOnly) this.topics.set(t.name, { partitions, sample: null, canned: null });
      return {
        name: t.name,
        topicId: TOPIC_ID,
        errorCode: exists ? 36 : 0,
        errorMessage: null,
        topicConfigErrorCode: 0,
        numPartitions: partitions,
        replicationFactor: 1,
        configs: [],
      };
    });
    const body: CreateTopicsResponse = { throttleTimeMs: 0, topics };
    return this.encode(decl, version, correlationId, body);
  }
}

/**
 * A Fetch v12 answer as a list of buffers, the record sets referenced rather
 * than copied (the socket writes them out together), tagged fields left empty.
 */
function fetchV12(correlationId: number, responses: { topic: string; partitions: PartitionData[] }[]): Buffer[] {
  const parts: Buffer[] = [];
  let w = new Writer(256);
  w.int32(0).int32(correlationId).uvarint(0);
  w.int32(0).int16(0).int32(0).uvarint(responses.length + 1);
  for (const t of responses) {
    w.compactString(t.topic).uvarint(t.partitions.length + 1);
    for (const p of t.partitions) {
      w.int32(p.partitionIndex).int16(p.errorCode).int64(p.highWatermark).int64(p.lastStableOffset).int64(p.logStartOffset);
      w.uvarint(0).int32(p.preferredReadReplica);
      if (p.records === null) {
        w.uvarint(0).uvarint(0);
        continue;
      }
      w.uvarint(p.records.length + 1);
      parts.push(w.finish(), p.records);
      w = new Writer(64);
      w.uvarint(0);
    }
    w.uvarint(0);
  }
  w.uvarint(0);
  parts.push(w.finish());
  const size = parts.reduce((a, b) => a + b.length, 0) - 4;
  parts[0]!.writeInt32BE(size, 0);
  return parts;
}

/** Serves the null sink and the discard port on loopback; resolves with their ports. */
export async function serveNullSink(port = 0, discardPort = 0): Promise<{ port: number; discardPort: number; close(): void }> {
  const sink = new Sink('127.0.0.1', port);
  const server = createServer((s) => sink.serve(s));
  const discard = createServer((s) => {
    let count = 0;
    s.on('data', (c: Buffer) => {
      count += c.length;
    });
    s.on('error', () => s.destroy());
    s.on('end', () => {
      const out = Buffer.alloc(8);
      out.writeBigUInt64BE(BigInt(count));
      s.end(out);
    });
  });
  const listen = (srv: typeof server, p: number): Promise<number> =>
    new Promise((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(p, '127.0.0.1', () => {
        const a = srv.address();
        resolve(typeof a === 'object' && a ? a.port : p);
      });
    });
  const actual = await listen(server, port);
  sink.setPort(actual);
  const actualDiscard = await listen(discard, discardPort);
  return {
    port: actual,
    discardPort: actualDiscard,
    close: () => {
      server.close();
      discard.close();
    },
  };
}

/** The null sink as a child `node` process, like a broker. */
export async function startNullSink(timeoutMs = 10_000): Promise<{ broker: RunningBroker; discardPort: number }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', kill);
  try {
    const ports = await new Promise<[number, number]>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the null sink did not start within ${timeoutMs} ms`)), timeoutMs);
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening (\d+) discard (\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve([Number(m[1]), Number(m[2])]);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the null sink exited with ${code}`));
      });
    });
    const stop = (): Promise<void> =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    return {
      broker: { name: 'null sink', bootstrap: `127.0.0.1:${ports[0]}`, host: '127.0.0.1', port: ports[0], pid: child.pid ?? null, stop },
      discardPort: ports[1],
    };
  } catch (err) {
    kill();
    throw err;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  serveNullSink().then(
    (s) => {
      process.stdout.write(`null sink listening ${s.port} discard ${s.discardPort}\n`);
      for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => process.exit(0));
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

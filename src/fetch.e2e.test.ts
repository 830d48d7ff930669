/**
 * Fetch end to end: a real broker on 127.0.0.1, kcat (librdkafka 2.0.2, Fetch
 * v11) producing and consuming, and a parked long poll across shutdown.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from './index.js';
import { FrameClient, withTimeout } from './test-utils.js';
import { decode, encode } from '../wire/codec.js';
import { ZERO_UUID } from '../wire/uuid.js';
import { FetchRequest } from '../wire/messages/fetch-request.js';
import { FetchResponse, type FetchResponse as FetchResponseT } from '../wire/messages/fetch-response.js';
import { HANDLERS } from '../api/registry.js';

const KCAT = '/usr/bin/kcat';
const brokers: Broker[] = [];
const clients: FrameClient[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function broker(): Promise<{ broker: Broker; port: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'gregor-fetch-e2e-'));
  dirs.push(dir);
  const b = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir, 'num.partitions': '1' }, { log: pino({ level: 'silent' }) });
  brokers.push(b);
  return { broker: b, port: Number(/:(\d+)$/.exec(b.listenAddress)![1]) };
}

/** Runs kcat without blocking the event loop (the broker runs in this process). */
function kcat(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(KCAT, args, { timeout: 30_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kcat ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

function fetchFrame(correlationId: number, version: number, topic: string, fetchOffset: bigint, maxWaitMs: number): Buffer {
  const body = encode(FetchRequest, version, {
    clusterId: null,
    replicaId: -1,
    replicaState: { replicaId: -1, replicaEpoch: -1n },
    maxWaitMs,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, topicId: ZERO_UUID, partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1 << 20, replicaDirectoryId: ZERO_UUID }] }],
    forgottenTopicsData: [],
    rackId: '',
  });
  const clientId = Buffer.from('e2e');
  const header = Buffer.alloc(10 + clientId.length);
  header.writeInt16BE(1, 0);
  header.writeInt16BE(version, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(clientId.length, 8);
  clientId.copy(header, 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + body.length);
  return Buffer.concat([size, header, body]);
}

describe('Fetch end to end', () => {
  it('kcat consumes what kcat produced, keys, values and offsets intact', async () => {
    if (!existsSync(KCAT)) throw new Error('this test drives kcat: apt-get install kcat (.ci/run does)');
    const { port } = await broker();
    const bootstrap = `127.0.0.1:${port}`;
    const lines = Array.from({ length: 20 }, (_, i) => `key${i}:value ${i}`);
    await kcat(['-P', '-b', bootstrap, '-t', 'e2e', '-p', '0', '-K', ':'], lines.join('\n') + '\n');
    // "beginning" is resolved with ListOffsets; without that API kcat starts from offset 0 directly.
    const start = HANDLERS.some((h) => h.apiKey === 2) ? 'beginning' : '0';
    const out = await kcat(['-C', '-b', bootstrap, '-t', 'e2e', '-p', '0', '-o', start, '-e', '-f', '%k %s %o\n']);
    expect(out.trim().split('\n')).toEqual(lines.map((l, i) => `${l.replace(':', ' ')} ${i}`));
    // Compressed batches come back as stored.
    await kcat(['-P', '-b', bootstrap, '-t', 'e2e-lz4', '-p', '0', '-K', ':', '-z', 'lz4'], lines.join('\n') + '\n');
    const lz4 = await kcat(['-C', '-b', bootstrap, '-t', 'e2e-lz4', '-p', '0', '-o', start, '-e', '-f', '%k %s %o\n']);
    expect(lz4.trim().split('\n')).toEqual(lines.map((l, i) => `${l.replace(':', ' ')} ${i}`));
  });

  it('answers a parked long poll when the broker shuts down, without waiting out max_wait_ms', async () => {
    if (!existsSync(KCAT)) throw new Error('this test drives kcat: apt-get install kcat (.ci/run does)');
    const { broker: b, port } = await broker();
    const c = await FrameClient.connect(port);
    clients.push(c);
    // An unknown topic would be answered at once: produce one record so that the fetch at offset 1 parks.
    await kcat(['-P', '-b', `127.0.0.1:${port}`, '-t', 'parked', '-p', '0'], 'one\n');
    c.send(fetchFrame(7, 11, 'parked', 1n, 60_000));
    await new Promise((r) => setTimeout(r, 200));
    expect(c.frames.length).toBe(0);
    const started = Date.now();
    await withTimeout(b.stop(), 10_000, 'broker stop');
    expect(Date.now() - started).toBeLessThan(10_000);
    const frame = await c.nextFrame(5000);
    expect(frame.readInt32BE(0)).toBe(7);
    const res = decode<FetchResponseT>(FetchResponse, 11, frame.subarray(4));
    if (!res.ok) throw new Error(res.error);
    expect(res.value.responses[0]!.partitions[0]!.errorCode).toBe(0);
  });
});

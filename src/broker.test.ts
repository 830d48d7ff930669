import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from './index.js';
import {
  FrameClient,
  apiVersionsV0Request,
  connectError,
  metadataV0Request,
  parseApiVersionsV0Response,
  withTimeout,
} from './test-utils.js';

const brokers: Broker[] = [];
const clients: FrameClient[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type LogLine = { msg: string; [field: string]: unknown };

/** A broker on 127.0.0.1 with a port of its own; `onLog` sees every log line as it is written. */
async function broker(config: Record<string, string> = {}, onLog: (line: LogLine) => void = () => {}): Promise<{ broker: Broker; port: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'gregor-broker-'));
  dirs.push(dir);
  const log = pino({ level: 'info' }, { write: (line: string) => onLog(JSON.parse(line) as LogLine) });
  const b = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir, ...config }, { log });
  brokers.push(b);
  const port = Number(/:(\d+)$/.exec(b.listenAddress)![1]);
  expect(port).toBeGreaterThan(0);
  return { broker: b, port };
}

async function connect(port: number): Promise<FrameClient> {
  const c = await FrameClient.connect(port);
  clients.push(c);
  return c;
}

/** Sends ApiVersions v0 and checks that the answer carries the same correlation id and no error. */
async function roundTrip(c: FrameClient, correlationId: number): Promise<void> {
  c.send(apiVersionsV0Request(correlationId));
  const res = parseApiVersionsV0Response(await c.nextFrame());
  expect(res.correlationId).toBe(correlationId);
  expect(res.errorCode).toBe(0);
  expect(res.apiKeys.map((k) => k.apiKey)).toContain(18);
}

async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('max.connections', () => {
  it('closes a connection beyond the limit at once and keeps serving the others', async () => {
    const { broker: b, port } = await broker({ 'max.connections': '2' });
    const first = await connect(port);
    const second = await connect(port);
    await roundTrip(first, 1);
    await roundTrip(second, 2);

    const third = await connect(port);
    await withTimeout(third.closed, 2000, 'the third connection to be closed');
    expect(third.frames).toEqual([]);

    await roundTrip(first, 3);
    await roundTrip(second, 4);
    expect(b.connectionCount).toBe(2);
  });

  it('takes a new limit at run time, set as a dynamic broker config', async () => {
    const { broker: b, port } = await broker({ 'max.connections': '3' });
    const admin = new Kafka({ clientId: 'max-connections-test', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configEntries: [{ name: 'max.connections', value: '1' }] }] });
    } finally {
      await admin.disconnect();
    }
    // Once the admin's connections are gone, one connection is allowed, where three were.
    await until(() => b.connectionCount === 0, 'the broker to notice the admin client gone');
    const first = await connect(port);
    await roundTrip(first, 1);
    const second = await connect(port);
    await withTimeout(second.closed, 2000, 'the second connection to be closed under the new limit');
    await roundTrip(first, 2);
  });

  it('accepts a new connection once an open one has gone', async () => {
    const { broker: b, port } = await broker({ 'max.connections': '1' });
    const first = await connect(port);
    await roundTrip(first, 1);
    first.destroy();
    await until(() => b.connectionCount === 0, 'the broker to notice the closed connection');

    const next = await connect(port);
    await roundTrip(next, 2);
  });
});

describe('stop', () => {
  it('answers requests it has already read before closing their connection', async () => {
    let stopping: Promise<void> | undefined;
    // Auto-creating a topic logs while its Metadata request is being handled: stop right then.
    const { broker: b, port } = await broker({}, (line) => {
      if (line.msg === 'auto-created topic') stopping ??= b.stop();
    });
    const c = await connect(port);
    await roundTrip(c, 1);

    c.send(Buffer.concat([metadataV0Request(2, ['orders']), apiVersionsV0Request(3)]));
    await withTimeout(c.closed, 5000, 'the broker to close the connection');
    expect(stopping).toBeDefined();
    await withTimeout(stopping!, 5000, 'stop() to finish');

    expect(c.events).toEqual(['frame 1', 'frame 2', 'frame 3', 'closed']);
    expect(parseApiVersionsV0Response(c.frames[2]!).errorCode).toBe(0);
  });

  it('closes idle connections, and refuses new ones once stopped', async () => {
    const { broker: b, port } = await broker();
    const idle = await connect(port);
    await roundTrip(idle, 1);

    await withTimeout(b.stop(), 5000, 'stop() to finish');
    await withTimeout(idle.closed, 2000, 'the idle connection to be closed');
    expect(await connectError(port)).toBe('ECONNREFUSED');
  });
});

describe('data directory', () => {
  it('cannot be shared by two brokers of one process', async () => {
    const { broker: first } = await broker();
    await expect(startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': first.dataDir }, { log: pino({ level: 'silent' }) })).rejects.toThrow(/in use by another broker in this process/);
    await first.stop();
    const again = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': first.dataDir }, { log: pino({ level: 'silent' }) });
    brokers.push(again);
    expect(again.clusterId).toBe(first.clusterId);
  });
});

describe('partition logs', () => {
  it('exist as soon as their topic does, are closed cleanly by stop, and are opened again on restart', async () => {
    const { broker: b, port } = await broker({ 'num.partitions': '2' });
    const c = await connect(port);
    c.send(metadataV0Request(1, ['orders']));
    await c.nextFrame();
    expect(existsSync(join(b.dataDir, 'orders-0'))).toBe(true);
    expect(existsSync(join(b.dataDir, 'orders-1'))).toBe(true);
    await b.stop();
    expect(existsSync(join(b.dataDir, 'orders-0', '.clean-shutdown'))).toBe(true);
    expect(existsSync(join(b.dataDir, 'orders-1', '.clean-shutdown'))).toBe(true);
    const again = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': b.dataDir }, { log: pino({ level: 'silent' }) });
    brokers.push(again);
    // Opening a cleanly closed log takes its marker away, so that a crash from now on recovers.
    expect(existsSync(join(b.dataDir, 'orders-0', '.clean-shutdown'))).toBe(false);
  });
});

describe('a start that fails', () => {
  it('on unreadable metadata says so, and releases the port and the directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gregor-broker-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'gregor-metadata.json'), '{"version":1,"topics":[');
    const silent = { log: pino({ level: 'silent' }) };
    await expect(startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir }, silent)).rejects.toThrow(/gregor-metadata.json is not valid metadata/);
    expect(existsSync(join(dir, '.lock'))).toBe(false);
    rmSync(join(dir, 'gregor-metadata.json'));
    const b = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir }, silent);
    brokers.push(b);
    expect(b.clusterId.length).toBe(22);
  });
});

describe('a request of many tiny elements', () => {
  it('closes that connection instead of decoding millions of objects, and keeps serving', async () => {
    const { port } = await broker({ 'socket.request.max.bytes': String(64 << 20) });
    const witness = await connect(port);
    await roundTrip(witness, 1);
    // Metadata v1 with 8 million empty topic names: 16 MB of honest bytes.
    const count = 8_000_000;
    const head = Buffer.alloc(4 + 2 + 2 + 4 + 2 + 4);
    let o = head.writeInt32BE(head.length - 4 + count * 2, 0);
    o = head.writeInt16BE(3, o);
    o = head.writeInt16BE(1, o);
    o = head.writeInt32BE(9, o);
    o = head.writeInt16BE(-1, o);
    head.writeInt32BE(count, o);
    const hostile = await connect(port);
    hostile.send(Buffer.concat([head, Buffer.alloc(count * 2)]));
    await withTimeout(hostile.closed, 10_000, 'the broker to close the hostile connection');
    expect(hostile.frames).toEqual([]);
    await roundTrip(witness, 2);
  });
});

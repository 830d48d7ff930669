/**
 * SASL/PLAIN listeners end to end: kafkajs 2.2.4 authenticates over
 * SASL_PLAINTEXT and SASL_SSL (certificates from a throw-away CA made here
 * with openssl), kcat (Debian's librdkafka 2.0.2) and kafka-python (Debian's 2.0.2, with
 * SaslHandshake v0 and raw tokens) over SASL_SSL; a wrong
 * password, an unknown user and a client that skips authentication are
 * refused while the broker goes on serving; the users' passwords never
 * reach the log.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigResourceTypes, Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from './index.js';
import { advertisedAddress, makeTestCertificates } from './test-certs.js';
import { FrameClient, metadataV0Request, runPython, withTimeout } from './test-utils.js';

const execFileAsync = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gregor-sasl-'));
const file = (name: string): string => join(dir, name);
const brokers: Broker[] = [];
const dataDirs: string[] = [];
const closers: (() => Promise<unknown>)[] = [];

const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";';

beforeAll(() => makeTestCertificates(dir));

afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
  for (const d of dataDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

type LogLine = { level: number; msg: string; [k: string]: unknown };

/** A broker with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners on 127.0.0.1, PLAIN with JAAS's users. */
async function saslBroker(onLog: (l: LogLine) => void = () => {}, extra: Record<string, string> = {}): Promise<Record<'plain' | 'sasl' | 'saslSsl', string>> {
  const data = mkdtempSync(join(tmpdir(), 'gregor-sasl-data-'));
  dataDirs.push(data);
  const log = pino({ level: 'info' }, { write: (line: string) => onLog(JSON.parse(line) as LogLine) });
  const b = await startBroker(
    {
      listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0',
      'log.dirs': data,
      'group.initial.rebalance.delay.ms': '0',
      'sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.sasl_plaintext.plain.sasl.jaas.config': JAAS,
      'listener.name.sasl_ssl.plain.sasl.jaas.config': JAAS,
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': file('server.pem'),
      ...extra,
    },
    { log },
  );
  brokers.push(b);
  return { plain: advertisedAddress(b, 'PLAINTEXT'), sasl: advertisedAddress(b, 'SASL_PLAINTEXT'), saslSsl: advertisedAddress(b, 'SASL_SSL') };
}

function client(bootstrap: string, sasl: SASLOptions | undefined, ssl = false): Kafka {
  return new Kafka({
    clientId: 'sasl-test',
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    retry: { retries: 1, initialRetryTime: 100 },
    ...(sasl ? { sasl } : {}),
    ...(ssl ? { ssl: { ca: [readFileSync(file('ca.pem'), 'utf8')], servername: 'localhost' } } : {}),
  });
}

async function produceAndCount(kafka: Kafka, topic: string, n: number): Promise<string> {
  const admin = kafka.admin();
  await admin.connect();
  closers.push(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  closers.push(() => producer.disconnect());
  await producer.send({ topic, acks: -1, messages: Array.from({ length: n }, (_, i) => ({ value: `v${i}` })) });
  return (await admin.fetchTopicOffsets(topic))[0]!.high;
}

describe('SASL/PLAIN listeners', () => {
  it('authenticate kafkajs over SASL_PLAINTEXT and SASL_SSL, and refuse a wrong password and an unknown user while serving on', async () => {
    const lines: LogLine[] = [];
    const { sasl, saslSsl, plain } = await saslBroker((l) => lines.push(l));
    expect(await produceAndCount(client(sasl, { mechanism: 'plain', username: 'alice', password: 'alice-secret' }), 'over-sasl', 3)).toBe('3');
    expect(await produceAndCount(client(saslSsl, { mechanism: 'plain', username: 'admin', password: 'admin-secret' }, true), 'over-sasl-ssl', 2)).toBe('2');

    for (const wrong of [
      { mechanism: 'plain' as const, username: 'alice', password: 'not-hers' },
      { mechanism: 'plain' as const, username: 'mallory', password: 'alice-secret' },
    ]) {
      const admin = client(sasl, wrong).admin();
      await expect(admin.connect()).rejects.toThrow(/SASL PLAIN authentication failed: Authentication failed: Invalid username or password/);
    }
    expect(lines.filter((l) => l.msg === 'SASL authentication succeeded').map((l) => l.principal)).toEqual(expect.arrayContaining(['User:alice', 'User:admin']));
    expect(lines.some((l) => l.msg === 'closing connection' && String(l.reason).startsWith('SASL authentication failed: Authentication failed: Invalid username or password'))).toBe(true);
    // Still serving, on every listener.
    expect(await produceAndCount(client(plain, undefined), 'plain-beside', 1)).toBe('1');
    // DescribeConfigs shows the JAAS lines as sensitive, without their value, as Kafka does.
    const admin = client(plain, undefined).admin();
    await admin.connect();
    closers.push(() => admin.disconnect());
    const described = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.BROKER, name: '1' }], includeSynonyms: false });
    const jaas = described.resources[0]!.configEntries.filter((e) => e.configName.endsWith('sasl.jaas.config'));
    expect(jaas.map((e) => [e.configName, e.configValue, e.isSensitive])).toEqual([
      ['sasl.jaas.config', null, true],
      ['listener.name.sasl_plaintext.plain.sasl.jaas.config', null, true],
      ['listener.name.sasl_ssl.plain.sasl.jaas.config', null, true],
    ]);
    for (const secret of ['admin-secret', 'alice-secret']) expect(JSON.stringify(described)).not.toContain(secret);
    // No password in the log.
    const logged = JSON.stringify(lines);
    for (const secret of ['admin-secret', 'alice-secret', 'not-hers']) expect(logged).not.toContain(secret);
  });

  it('close a connection whose first request is not ApiVersions or SASL, as Kafka does', async () => {
    const { sasl } = await saslBroker();
    const [host, port] = sasl.split(':');
    const c = await FrameClient.connect(Number(port), host);
    c.send(metadataV0Request(1, ['sneaky']));
    await withTimeout(c.closed, 5000, 'the broker to close the unauthenticated connection');
    expect(c.frames).toEqual([]);
  });

  it('close a connection that sends a frame over 512 KiB before authenticating, and keep serving', async () => {
    const { sasl } = await saslBroker();
    const [host, port] = sasl.split(':');
    const c = await FrameClient.connect(Number(port), host);
    const big = Buffer.alloc(4);
    big.writeInt32BE(524289, 0);
    c.send(big);
    await withTimeout(c.closed, 5000, 'the broker to close the connection');
    expect(await produceAndCount(client(sasl, { mechanism: 'plain', username: 'alice', password: 'alice-secret' }), 'after-big', 1)).toBe('1');
  });

  it('authenticate kcat (librdkafka 2.0.2) with PLAIN over SASL_SSL', async () => {
    const { saslSsl, plain } = await saslBroker();
    expect(await produceAndCount(client(plain, undefined), 'for-kcat', 4)).toBe('4');
    const args = ['-b', saslSsl, '-X', 'security.protocol=sasl_ssl', '-X', 'sasl.mechanisms=PLAIN', '-X', 'sasl.username=alice', '-X', 'sasl.password=alice-secret', '-X', `ssl.ca.location=${file('ca.pem')}`];
    // Asynchronously: the broker runs in this process.
    const { stdout } = await execFileAsync('kcat', [...args, '-C', '-t', 'for-kcat', '-o', 'beginning', '-e', '-q'], { encoding: 'utf8', timeout: 20_000 });
    expect(stdout.trim().split('\n')).toEqual(['v0', 'v1', 'v2', 'v3']);
    const refused = await execFileAsync('kcat', [...args.map((a) => (a === 'sasl.password=alice-secret' ? 'sasl.password=wrong' : a)), '-L', '-m', '3'], { encoding: 'utf8', timeout: 20_000 }).then(
      () => 'listed',
      (err: { stderr?: string }) => err.stderr ?? '',
    );
    expect(refused).toMatch(/Authentication failed|SASL authentication error/);
  });

  it('authenticate kafka-python (Debian python3-kafka) with PLAIN over SASL_SSL', async () => {
    const { saslSsl } = await saslBroker();
    const script = [
      'import sys',
      'from kafka import KafkaProducer, KafkaConsumer',
      "opts = dict(bootstrap_servers=sys.argv[1], security_protocol='SASL_SSL', sasl_mechanism='PLAIN', sasl_plain_username='alice', sasl_plain_password=sys.argv[3], ssl_cafile=sys.argv[2])",
      "p = KafkaProducer(acks='all', **opts)",
      "for i in range(3): p.send('from-python', b'py%d' % i).get(timeout=20)",
      'p.close()',
      "c = KafkaConsumer('from-python', auto_offset_reset='earliest', consumer_timeout_ms=10000, **opts)",
      "print(','.join(m.value.decode() for m in c))",
    ].join('\n');
    const ok = await runPython(script, [saslSsl, file('ca.pem'), 'alice-secret'], 60_000);
    expect(ok.err).not.toMatch(/Traceback/);
    expect(ok).toMatchObject({ code: 0 });
    expect(ok.out.trim()).toBe('py0,py1,py2');
    const refused = await runPython(script, [saslSsl, file('ca.pem'), 'wrong'], 60_000);
    expect(refused.code).not.toBe(0);
    // SaslHandshake v0's flow has no error answer: the broker closes the connection, and kafka-python finds no broker it can use.
    expect(refused.err).toMatch(/NoBrokersAvailable/);
  });

  it.each<[Record<string, string>, string]>([
    [{ 'sasl.enabled.mechanisms': 'GSSAPI' }, 'sasl.enabled.mechanisms has GSSAPI'],
    [{ 'sasl.enabled.mechanisms': 'PLAIN', 'listener.name.sasl_plaintext.plain.sasl.jaas.config': '' }, 'PLAIN needs its users'],
    [{ 'listener.name.sasl_plaintext.plain.sasl.jaas.config': 'com.example.Other required user_a="b";' }, 'use org.apache.kafka.common.security.plain.PlainLoginModule'],
  ])('refuse to start with %j, saying what to do', async (extra, problem) => {
    await expect(saslBroker(() => {}, extra)).rejects.toThrow(problem);
  });
});

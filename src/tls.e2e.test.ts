/**
 * SSL listeners end to end, with certificates made here from a throw-away
 * CA (openssl): kafkajs 2.2.4 and kcat (librdkafka) produce and read over
 * TLS; a client certificate is asked for, checked against the truststore,
 * or required; a plaintext client on the TLS port and a client without the
 * required certificate are refused while the broker keeps serving. Keys as
 * Kafka names them: PEM keystores (a file, or inline) and PKCS12 files.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from './index.js';
import { advertisedAddress, makeTestCertificates, openssl, P12_PASSWORD } from './test-certs.js';

const execFileAsync = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'gregor-tls-'));
const file = (name: string): string => join(dir, name);
const brokers: Broker[] = [];
const dataDirs: string[] = [];
const closers: (() => Promise<unknown>)[] = [];

beforeAll(() => makeTestCertificates(dir));

afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
  for (const d of dataDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

type LogLine = { level: number; msg: string; listener?: string };

/** A broker with a PLAINTEXT and an SSL listener on 127.0.0.1; returns both addresses. */
async function tlsBroker(ssl: Record<string, string>, onLog: (l: LogLine) => void = () => {}): Promise<{ plain: string; secure: string }> {
  const data = mkdtempSync(join(tmpdir(), 'gregor-tls-data-'));
  dataDirs.push(data);
  const log = pino({ level: 'info' }, { write: (line: string) => onLog(JSON.parse(line) as LogLine) });
  const b = await startBroker(
    {
      listeners: 'PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0',
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,SSL:SSL',
      'log.dirs': data,
      'group.initial.rebalance.delay.ms': '0',
      ...ssl,
    },
    { log },
  );
  brokers.push(b);
  return { plain: advertisedAddress(b, 'PLAINTEXT'), secure: advertisedAddress(b, 'SSL') };
}

function client(bootstrap: string, ssl: object | undefined): Kafka {
  return new Kafka({ clientId: 'tls-test', brokers: [bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 2000, retry: { retries: 1, initialRetryTime: 100 }, ...(ssl ? { ssl } : {}) });
}

/** Produces `values` and reads them back through `kafka`; returns what was read. */
async function roundTrip(kafka: Kafka, topic: string, values: string[]): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  closers.push(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  closers.push(() => producer.disconnect());
  await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
  const consumer = kafka.consumer({ groupId: `${topic}-group` });
  await consumer.connect();
  closers.push(() => consumer.disconnect());
  await consumer.subscribe({ topic, fromBeginning: true });
  const read: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${read.length} of ${values.length} records`)), 20_000);
    void consumer.run({
      eachMessage: async ({ message }) => {
        read.push(message.value!.toString());
        if (read.length === values.length) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  return read;
}

const ca = (): string => readFileSync(file('ca.pem'), 'utf8');

describe('SSL listeners', () => {
  it('serve kafkajs over TLS with a PEM keystore file, and tell TLS clients the SSL addresses', async () => {
    const { secure } = await tlsBroker({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': file('server.pem') });
    const kafka = client(secure, { ca: [ca()], servername: 'localhost' });
    expect(await roundTrip(kafka, 'over-tls', ['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
    const admin = kafka.admin();
    await admin.connect();
    closers.push(() => admin.disconnect());
    const { brokers: listed } = await admin.describeCluster();
    expect(listed.map((b) => `${b.host}:${b.port}`)).toEqual([secure]);
  });

  it('take a PKCS12 keystore with its password and a required client certificate; refuse clients without one and plaintext clients, and go on serving', async () => {
    const lines: LogLine[] = [];
    const { plain, secure } = await tlsBroker(
      {
        'listener.name.ssl.ssl.keystore.type': 'PKCS12',
        'listener.name.ssl.ssl.keystore.location': file('server.p12'),
        'listener.name.ssl.ssl.keystore.password': P12_PASSWORD,
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.location': file('ca.pem'),
        'ssl.client.auth': 'required',
      },
      (l) => lines.push(l),
    );
    const withCert = { ca: [ca()], servername: 'localhost', cert: readFileSync(file('client.crt'), 'utf8'), key: readFileSync(file('client.key'), 'utf8') };
    // Without a client certificate, and in plaintext on the TLS port: no connection.
    const noCert = client(secure, { ca: [ca()], servername: 'localhost' }).admin();
    await expect(noCert.connect()).rejects.toThrow();
    const plaintextOnTls = client(secure, undefined).admin();
    await expect(plaintextOnTls.connect()).rejects.toThrow();
    expect(lines.some((l) => l.msg === 'TLS handshake failed; connection closed' && l.listener === 'SSL')).toBe(true);
    // The broker goes on serving both listeners.
    expect(await roundTrip(client(secure, withCert), 'mutual-tls', ['x', 'y'])).toEqual(['x', 'y']);
    expect(await roundTrip(client(plain, undefined), 'plain-beside', ['p'])).toEqual(['p']);
    // The keystore password never reaches the log.
    expect(JSON.stringify(lines)).not.toContain(P12_PASSWORD);
  });

  it('take a PEM keystore inline, as Kafka writes it on one line, and read with kcat (librdkafka)', async () => {
    const oneLine = (name: string): string => readFileSync(file(name), 'utf8').replace(/\n/g, ' ').trim();
    const { secure } = await tlsBroker({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.certificate.chain': oneLine('server.crt'), 'ssl.keystore.key': oneLine('server.key') });
    expect(await roundTrip(client(secure, { ca: [ca()], servername: 'localhost' }), 'inline-pem', ['1'])).toEqual(['1']);
    // Asynchronously: the broker runs in this process.
    const { stdout: out } = await execFileAsync('kcat', ['-b', secure, '-X', 'security.protocol=ssl', '-X', `ssl.ca.location=${file('ca.pem')}`, '-C', '-t', 'inline-pem', '-o', 'beginning', '-e', '-q'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(out.trim()).toBe('1');
  });

  it.each<[Record<string, string>, string]>([
    [{}, 'ssl.keystore.type is JKS'],
    [{ 'ssl.keystore.type': 'JKS', 'ssl.keystore.location': '/nowhere.jks' }, 'keytool -importkeystore'],
    [{ 'ssl.keystore.type': 'PKCS12' }, 'needs ssl.keystore.location'],
    [{ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': '/no/such/file.pem' }, 'cannot read /no/such/file.pem'],
    [{ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': '', 'ssl.client.auth': 'required' }, 'needs ssl.keystore.location'],
  ])('refuse to start with %j, saying what to do', async (ssl, problem) => {
    await expect(tlsBroker(ssl)).rejects.toThrow(problem);
  });

  it('refuse a client certificate the truststore does not vouch for when ssl.client.auth=required', async () => {
    openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'stranger.key', '-out', 'stranger.crt', '-days', '2', '-subj', '/CN=stranger');
    const { secure } = await tlsBroker({
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': file('server.pem'),
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': file('ca.pem'),
      'ssl.client.auth': 'required',
    });
    const stranger = client(secure, { ca: [ca()], servername: 'localhost', cert: readFileSync(file('stranger.crt'), 'utf8'), key: readFileSync(file('stranger.key'), 'utf8') }).admin();
    await expect(stranger.connect()).rejects.toThrow();
  });
});

/**
 * Certificates for TLS tests, made with openssl in a directory of their own:
 * a throw-away CA (ca.pem), a server certificate for 127.0.0.1 and localhost
 * (server.key, server.crt, both in server.pem, and server.p12 under
 * P12_PASSWORD), and a client certificate (client.key, client.crt), all
 * signed by the CA.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Broker } from './index.js';

export const P12_PASSWORD = 'store-secret';

/** Runs openssl in `dir`; throws with its output when it fails. */
export function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** Writes the CA, server and client files into `dir`. */
export function makeTestCertificates(dir: string): void {
  openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=gregor test CA');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const who of ['server', 'client']) {
    openssl(dir, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${who}/O=gregor tests`);
    openssl(dir, 'x509', '-req', '-in', `${who}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${who}.crt`, '-days', '2', ...(who === 'server' ? ['-extfile', 'server.ext'] : []));
  }
  writeFileSync(join(dir, 'server.pem'), readFileSync(join(dir, 'server.key'), 'utf8') + readFileSync(join(dir, 'server.crt'), 'utf8'));
  openssl(dir, 'pkcs12', '-export', '-in', 'server.crt', '-inkey', 'server.key', '-out', 'server.p12', '-passout', `pass:${P12_PASSWORD}`);
}

/** host:port that `broker` advertises on `listener`. */
export function advertisedAddress(broker: Broker, listener: string): string {
  const e = broker.advertised.find((x) => x.listener === listener);
  if (!e) throw new Error(`the broker has no listener ${listener}`);
  return `${e.host}:${e.port}`;
}

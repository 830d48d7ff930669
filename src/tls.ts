/**
 * The TLS side of an SSL listener, from Kafka's ssl.* broker keys: a key
 * and certificate chain (ssl.keystore.*), the certificates that client
 * certificates are checked against (ssl.truststore.*), and whether clients
 * must show one (ssl.client.auth). A key may be set for one listener with
 * Kafka's prefix, listener.name.<name in lower case>.ssl..., which wins over
 * the unprefixed key.
 *
 * Keystores: PEM (ssl.keystore.certificate.chain and ssl.keystore.key
 * inline, or ssl.keystore.location naming a PEM file with both; an
 * encrypted key opens with ssl.key.password) and PKCS12 files
 * (ssl.keystore.location, ssl.keystore.password). Truststores: PEM, inline
 * (ssl.truststore.certificates) or as a file. Java's JKS format is refused
 * with the command that converts it.
 */
import { readFileSync } from 'node:fs';
import type { TlsOptions } from 'node:tls';

export class TlsConfigError extends Error {}

/** A listener's value of ssl key `key`: the listener-prefixed one, else the broker-wide one. */
function sslValue(listener: string, raw: ReadonlyMap<string, string>, key: string): string | undefined {
  const v = raw.get(`listener.name.${listener.toLowerCase()}.${key}`) ?? raw.get(key);
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function readFile(path: string, key: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new TlsConfigError(`${key}: cannot read ${path}: ${(err as Error).message}`);
  }
}

/** Kafka writes inline PEM values on one line in properties files; put the line breaks back where they belong. */
function pem(value: string): string {
  return value.includes('\n') ? value : value.replace(/(-----BEGIN [A-Z ]+-----)\s*/g, '$1\n').replace(/\s*(-----END [A-Z ]+-----)/g, '\n$1').replace(/(-----END [A-Z ]+-----)\s*/g, '$1\n');
}

const JKS_HELP =
  'gregor reads PKCS12 and PEM stores, not JKS; convert it with keytool -importkeystore -srckeystore STORE.jks -destkeystore STORE.p12 -deststoretype PKCS12, and set %s=PKCS12';

/**
 * Node's TLS server options for the SSL listener `listener` (its name, as in
 * listeners=NAME://...), from the broker's config as set.
 *
 * Example: with ssl.keystore.type=PEM, ssl.keystore.location=/etc/gregor/broker.pem
 * -> { key: <that file>, cert: <that file>, requestCert: false, ... }.
 */
export function serverTlsOptions(listener: string, raw: ReadonlyMap<string, string>): TlsOptions {
  const get = (key: string): string | undefined => sslValue(listener, raw, key);
  const options: TlsOptions = { minVersion: 'TLSv1.2' };

  const keystoreType = (get('ssl.keystore.type') ?? 'JKS').toUpperCase();
  const location = get('ssl.keystore.location');
  const chain = get('ssl.keystore.certificate.chain');
  const inlineKey = get('ssl.keystore.key');
  if (keystoreType === 'JKS') throw new TlsConfigError(`listener ${listener}: ssl.keystore.type is JKS (Kafka's default); ${JKS_HELP.replace('%s', 'ssl.keystore.type')}`);
  if (keystoreType === 'PKCS12') {
    if (location === undefined) throw new TlsConfigError(`listener ${listener}: ssl.keystore.type=PKCS12 needs ssl.keystore.location, the .p12 file with the broker's key and certificate`);
    options.pfx = readFile(location, 'ssl.keystore.location');
    const password = get('ssl.keystore.password');
    if (password !== undefined) options.passphrase = password;
  } else if (keystoreType === 'PEM') {
    if (chain !== undefined || inlineKey !== undefined) {
      if (chain === undefined || inlineKey === undefined) {
        throw new TlsConfigError(`listener ${listener}: a PEM keystore given inline needs both ssl.keystore.certificate.chain and ssl.keystore.key`);
      }
      if (location !== undefined) throw new TlsConfigError(`listener ${listener}: set either ssl.keystore.location or ssl.keystore.certificate.chain and ssl.keystore.key, not both`);
      options.cert = pem(chain);
      options.key = pem(inlineKey);
    } else {
      if (location === undefined) throw new TlsConfigError(`listener ${listener}: ssl.keystore.type=PEM needs ssl.keystore.location (a PEM file with the key and certificate chain) or ssl.keystore.certificate.chain and ssl.keystore.key`);
      const text = readFile(location, 'ssl.keystore.location');
      options.cert = text;
      options.key = text;
    }
    const password = get('ssl.key.password');
    if (password !== undefined) options.passphrase = password;
  } else {
    throw new TlsConfigError(`listener ${listener}: ssl.keystore.type ${keystoreType} is not one gregor reads; use PKCS12 or PEM`);
  }

  const trustType = (get('ssl.truststore.type') ?? 'JKS').toUpperCase();
  const trustLocation = get('ssl.truststore.location');
  const trustInline = get('ssl.truststore.certificates');
  if (trustLocation !== undefined || trustInline !== undefined) {
    if (trustType === 'JKS' && trustInline === undefined) {
      throw new TlsConfigError(`listener ${listener}: ssl.truststore.type is JKS (Kafka's default); gregor reads PEM truststores: export the certificates with keytool -exportcert -rfc, and set ssl.truststore.type=PEM`);
    }
    if (trustType === 'PKCS12') {
      throw new TlsConfigError(`listener ${listener}: gregor reads PEM truststores; write the certificates out with openssl pkcs12 -in STORE.p12 -nokeys -out STORE.pem, and set ssl.truststore.type=PEM`);
    }
    options.ca = trustInline !== undefined ? pem(trustInline) : readFile(trustLocation!, 'ssl.truststore.location');
  }

  const clientAuth = (get('ssl.client.auth') ?? 'none').toLowerCase();
  if (clientAuth !== 'none' && clientAuth !== 'requested' && clientAuth !== 'required') {
    throw new TlsConfigError(`listener ${listener}: ssl.client.auth is "${clientAuth}"; use required, requested or none`);
  }
  if (clientAuth !== 'none' && options.ca === undefined) {
    throw new TlsConfigError(`listener ${listener}: ssl.client.auth=${clientAuth} needs a truststore (ssl.truststore.location or ssl.truststore.certificates) to check client certificates against`);
  }
  options.requestCert = clientAuth !== 'none';
  options.rejectUnauthorized = clientAuth === 'required';
  return options;
}

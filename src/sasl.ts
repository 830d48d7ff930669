/**
 * SASL on a listener whose security protocol is SASL_PLAINTEXT or
 * SASL_SSL, configured with Kafka's keys: the mechanisms it takes
 * (sasl.enabled.mechanisms, Kafka's default GSSAPI being refused), and for
 * PLAIN the users of its JAAS line, as Kafka writes it:
 *
 *   listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
 *     username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
 *
 * (the listener- and mechanism-prefixed key, else listener.name.<l>.sasl.jaas.config,
 * else sasl.jaas.config). Passwords never leave this module.
 */
import { timingSafeEqual } from 'node:crypto';
import type { SaslExchange } from '../api/handler.js';

export class SaslConfigError extends Error {}

/** What a SASL listener takes. */
export interface SaslListener {
  readonly mechanisms: readonly string[];
  /** PLAIN's users and their passwords. */
  readonly plainUsers: ReadonlyMap<string, string>;
}

const SERVED = ['PLAIN'];

function prefixed(listener: string, raw: ReadonlyMap<string, string>, key: string): string | undefined {
  const v = raw.get(`listener.name.${listener.toLowerCase()}.${key}`) ?? raw.get(key);
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/**
 * The options of a JAAS line's login module, e.g. 'X required a="1" b="2";'
 * -> { module: 'X', options: Map { a => 1, b => 2 } }.
 */
export function parseJaas(text: string): { module: string; options: Map<string, string> } {
  const m = /^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*([\s\S]*?);?\s*$/.exec(text);
  if (!m) throw new SaslConfigError('sasl.jaas.config: expected "<LoginModule class> required key="value" ...;"');
  const options = new Map<string, string>();
  const re = /([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))/g;
  let o: RegExpExecArray | null;
  while ((o = re.exec(m[3]!)) !== null) options.set(o[1]!, o[2] !== undefined ? o[2].replace(/\\(.)/g, '$1') : o[3]!);
  return { module: m[1]!, options };
}

/** The SASL settings of listener `listener`, from the broker's config as set; refuses what gregor cannot serve. */
export function saslListener(listener: string, raw: ReadonlyMap<string, string>): SaslListener {
  const mechanisms = (prefixed(listener, raw, 'sasl.enabled.mechanisms') ?? 'GSSAPI')
    .split(',')
    .map((s) => s.trim().toUpperCase())
    .filter((s) => s !== '');
  const unserved = mechanisms.filter((m) => !SERVED.includes(m));
  if (unserved.length > 0) {
    throw new SaslConfigError(
      `listener ${listener}: sasl.enabled.mechanisms has ${unserved.join(', ')}${prefixed(listener, raw, 'sasl.enabled.mechanisms') === undefined ? " (Kafka's default)" : ''}, which gregor does not serve; set sasl.enabled.mechanisms=PLAIN`,
    );
  }
  const plainUsers = new Map<string, string>();
  if (mechanisms.includes('PLAIN')) {
    const set = (key: string): string | undefined => (raw.get(key)?.trim() ? raw.get(key) : undefined);
    const l = listener.toLowerCase();
    const jaas = set(`listener.name.${l}.plain.sasl.jaas.config`) ?? set(`listener.name.${l}.sasl.jaas.config`) ?? set('sasl.jaas.config');
    if (jaas === undefined) {
      throw new SaslConfigError(
        `listener ${listener}: PLAIN needs its users: set listener.name.${listener.toLowerCase()}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_NAME="PASSWORD";`,
      );
    }
    const { module, options } = parseJaas(jaas);
    if (module !== 'org.apache.kafka.common.security.plain.PlainLoginModule') {
      throw new SaslConfigError(`listener ${listener}: the PLAIN JAAS line names ${module}; use org.apache.kafka.common.security.plain.PlainLoginModule`);
    }
    for (const [k, v] of options) if (k.startsWith('user_')) plainUsers.set(k.slice('user_'.length), v);
    if (plainUsers.size === 0) throw new SaslConfigError(`listener ${listener}: the PLAIN JAAS line has no user_NAME="PASSWORD" entry`);
  }
  return { mechanisms, plainUsers };
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * One connection's exchange on a SASL listener. `onDone` learns the
 * principal once authenticated ('User:NAME').
 */
export function saslExchange(listener: SaslListener, onDone: (principal: string) => void): SaslExchange {
  let mechanism: string | null = null;
  return {
    mechanisms: listener.mechanisms,
    handshake(name) {
      if (!listener.mechanisms.includes(name)) return false;
      mechanism = name;
      return true;
    },
    authenticate(token) {
      if (mechanism !== 'PLAIN') return { done: false, message: 'Unexpected SaslAuthenticate request before a SaslHandshake that picked a mechanism' };
      // authzid NUL authcid NUL password
      const parts = token.toString('utf8').split('\u0000');
      if (parts.length !== 3) return { done: false, message: 'Authentication failed: Invalid SASL/PLAIN response: expected 3 tokens, got ' + parts.length };
      const [authzid, user, password] = parts as [string, string, string];
      if (user === '') return { done: false, message: 'Authentication failed: username not specified' };
      if (password === '') return { done: false, message: 'Authentication failed: password not specified' };
      const known = listener.plainUsers.get(user);
      if (known === undefined || !sameSecret(known, password)) return { done: false, message: 'Authentication failed: Invalid username or password' };
      if (authzid !== '' && authzid !== user) return { done: false, message: 'Authentication failed: Client requested an authorization id that is different from username' };
      const principal = `User:${user}`;
      onDone(principal);
      return { done: true, principal };
    },
  };
}

import { crypto } from './builtins.js';

/** The all-zero id, meaning "no id". */
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';
/** Kafka reserves this id for its metadata topic. */
export const METADATA_TOPIC_UUID = 'AAAAAAAAAAAAAAAAAAAAAQ';

/**
 * A random version-4 UUID in Kafka's printed form (URL-safe base64, no padding).
 * As Kafka does, it skips the reserved ids and any that start with '-', which
 * command-line tools would take for an option.
 */
export function randomUuid(): string {
  for (;;) {
    const b = crypto().randomBytes(16);
    b[6] = (b[6]! & 0x0f) | 0x40;
    b[8] = (b[8]! & 0x3f) | 0x80;
    const id = b.toString('base64url');
    if (id !== ZERO_UUID && id !== METADATA_TOPIC_UUID && !id.startsWith('-')) return id;
  }
}

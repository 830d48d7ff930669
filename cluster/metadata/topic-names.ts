/** Kafka's rules for topic names, and its internal topics. */

export const MAX_TOPIC_NAME_LENGTH = 249;
export const INTERNAL_TOPICS: ReadonlySet<string> = new Set(['__consumer_offsets', '__transaction_state']);

const LEGAL = /^[a-zA-Z0-9._-]+$/;

/** Returns why a name is not a legal topic name, or null when it is. */
export function topicNameProblem(name: string): string | null {
  if (name.length === 0) return 'topic name is empty';
  if (name === '.' || name === '..') return `topic name cannot be "${name}"`;
  if (name.length > MAX_TOPIC_NAME_LENGTH) return `topic name is longer than ${MAX_TOPIC_NAME_LENGTH} characters`;
  if (!LEGAL.test(name)) return `topic name "${name}" may contain only ASCII letters, digits, '.', '_' and '-'`;
  return null;
}

/** '.' and '_' collide in metric names, so Kafka refuses topics that differ only there. */
export function collisionKey(name: string): string {
  return name.replace(/\./g, '_');
}

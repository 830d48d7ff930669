/** Kafka's rules for topic names, and its internal topics. */

export const MAX_TOPIC_NAME_LENGTH = 249;
/** The share groups' state topic (KIP-932), made when a share coordinator is first looked for. */
export const SHARE_GROUP_STATE_TOPIC = '__share_group_state';
/** Kafka 4.4's internal topics (its Topic.INTERNAL_TOPICS). */
export const INTERNAL_TOPICS: ReadonlySet<string> = new Set(['__consumer_offsets', '__transaction_state', SHARE_GROUP_STATE_TOPIC]);

/**
 * Whether Kafka 4.4 calls a topic internal when it judges by the name alone, as
 * DescribeTopicPartitions does, also for a topic that does not exist:
 * isInternalTopicName('__consumer_offsets') -> true (created or not);
 * isInternalTopicName('__share_group_state') -> true; isInternalTopicName('orders') -> false.
 */
export function isInternalTopicName(name: string): boolean {
  return INTERNAL_TOPICS.has(name);
}

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

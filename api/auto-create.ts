/**
 * Auto-creation of a topic that a client names but that does not exist, shared by
 * the handlers that may create topics (Metadata, Produce).
 */
import type { TopicImage } from '../cluster/metadata/metadata-image.js';
import { INTERNAL_TOPICS, topicNameProblem } from '../cluster/metadata/topic-names.js';
import type { BrokerServices } from './handler.js';

export type AutoCreateOutcome =
  /** The topic was created by this call: answer as if it were still unknown (clients retry). */
  | { kind: 'created' }
  /** Someone else created it first: here it is. */
  | { kind: 'exists'; topic: TopicImage }
  /** Not created: the name is illegal, creation is off or not allowed, or the store failed. */
  | { kind: 'refused'; illegalName: boolean };

/**
 * Creates `name` with the broker's num.partitions and default.replication.factor
 * when auto.create.topics.enable allows it and the name is legal and not internal.
 *
 * Example: with auto-creation on, autoCreateTopic('orders', true, services) ->
 * { kind: 'created' }, and the next image lists 'orders'.
 */
export async function autoCreateTopic(name: string, allowed: boolean, services: BrokerServices): Promise<AutoCreateOutcome> {
  if (topicNameProblem(name) !== null) return { kind: 'refused', illegalName: true };
  const { settings, metadata: store } = services;
  if (!allowed || !settings.config.bool('auto.create.topics.enable') || INTERNAL_TOPICS.has(name)) return { kind: 'refused', illegalName: false };
  try {
    await store.createTopic({
      name,
      numPartitions: settings.config.int('num.partitions'),
      replicationFactor: Math.min(settings.config.int('default.replication.factor'), store.image().brokers.size),
    });
    services.log.info({ topic: name, partitions: settings.config.int('num.partitions') }, 'auto-created topic');
    return { kind: 'created' };
  } catch (err) {
    // Lost a race with another creator: what exists now is the answer.
    const now = store.image().topics.get(name);
    if (now) return { kind: 'exists', topic: now };
    services.log.warn({ topic: name, err }, 'auto-create failed');
    return { kind: 'refused', illegalName: false };
  }
}

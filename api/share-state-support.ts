/**
 * The inter-broker share-state APIs (keys 83-87) all name partitions of one
 * group by topic id and answer per partition: this runs the share
 * coordinator for each and shapes the results alike. Kafka serves them to
 * brokers only; a partition whose key another broker coordinates is
 * answered NOT_COORDINATOR.
 */
export async function perPartition<P extends { partition: number }, R>(
  topics: readonly { topicId: string; partitions: readonly P[] }[],
  run: (topicId: string, p: P) => Promise<R>,
): Promise<{ topicId: string; partitions: R[] }[]> {
  const out: { topicId: string; partitions: R[] }[] = [];
  for (const t of topics) {
    const partitions: R[] = [];
    for (const p of t.partitions) partitions.push(await run(t.topicId, p));
    out.push({ topicId: t.topicId, partitions });
  }
  return out;
}

/** Every partition of the request answered with one error. */
export function allFailed<P extends { partition: number }>(
  topics: readonly { topicId: string; partitions: readonly P[] }[],
  errorCode: number,
  extra: object = {},
): { topicId: string; partitions: object[] }[] {
  return topics.map((t) => ({ topicId: t.topicId, partitions: t.partitions.map((p) => ({ partition: p.partition, errorCode, errorMessage: null, ...extra })) }));
}

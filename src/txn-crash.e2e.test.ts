/**
 * A transaction left open by a broker crash is aborted once its timeout
 * passes, and read_committed consumers never see its records.
 *
 * A kafkajs 2.2.4 transactional producer (InitProducerId v1, AddPartitionsToTxn
 * v1, Produce v7, EndTxn v1) commits one transaction over the three
 * partitions of a topic, then writes a second one and never ends it. The
 * `bin/gregor start` process is SIGKILLed right after those records are
 * acknowledged and started again on the same data directory. After the
 * restart the producer is gone: only the coordinator's timeout can end the
 * transaction. Records written after it by a plain producer must reach a
 * read_committed consumer (so the last stable offset moved past the open
 * transaction, which only its abort allows), the committed records too, and
 * none of the open transaction's; a read_uncommitted consumer sees all three
 * kinds, which shows the open transaction's records were really stored.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokerProcess, bundleProblem, waitUntil } from './test-utils.js';

const TOPIC = 'txn-crash';
const PARTITIONS = 3;
const PER_PARTITION = 5;
const TRANSACTION_TIMEOUT_MS = 3000;

const OVERRIDES = {
  'num.partitions': String(PARTITIONS),
  'offsets.topic.num.partitions': '3',
  'transaction.state.log.num.partitions': '3',
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': '500',
  'group.initial.rebalance.delay.ms': '0',
};

function client(bootstrap: string, clientId: string): Kafka {
  return new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 } });
}

function messages(kind: string): { partition: number; value: string }[] {
  const out: { partition: number; value: string }[] = [];
  for (let p = 0; p < PARTITIONS; p++) for (let i = 0; i < PER_PARTITION; i++) out.push({ partition: p, value: `${kind}-${p}-${i}` });
  return out;
}

/** Every value in the topic as `isolation` reads it, once `done` holds for what was read (or 20 s pass). */
async function readAll(bootstrap: string, readUncommitted: boolean, done: (values: string[]) => boolean): Promise<string[]> {
  const consumer = client(bootstrap, readUncommitted ? 'read-uncommitted' : 'read-committed').consumer({
    groupId: `txn-crash-${readUncommitted ? 'ru' : 'rc'}`,
    readUncommitted,
    maxWaitTimeInMs: 200,
  });
  const values: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value!.toString());
      },
    });
    await waitUntil(() => done(values), 20_000, `${readUncommitted ? 'read_uncommitted' : 'read_committed'} consumer to read ${TOPIC}`).catch(() => {});
    return values;
  } finally {
    await consumer.disconnect();
  }
}

describe('a transaction open when the broker is SIGKILLed', () => {
  const dirs: string[] = [];
  const live: BrokerProcess[] = [];

  beforeAll(() => {
    const problem = bundleProblem();
    if (problem) throw new Error(problem);
  });

  afterAll(async () => {
    await Promise.all(live.map((b) => b.stop('SIGKILL').catch(() => {})));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('is aborted after its timeout once the broker is back, and read_committed consumers never see it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gregor-txn-crash-'));
    dirs.push(dataDir);
    const first = new BrokerProcess(dataDir, OVERRIDES);
    live.push(first);
    const bootstrap = await first.ready();

    const admin = client(bootstrap, 'admin').admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
    await admin.disconnect();

    const producer = client(bootstrap, 'txn').producer({ transactionalId: 'crash-txn', transactionTimeout: TRANSACTION_TIMEOUT_MS, maxInFlightRequests: 1, idempotent: true });
    await producer.connect();
    const committed = await producer.transaction();
    await committed.send({ topic: TOPIC, acks: -1, messages: messages('committed') });
    await committed.commit();
    const open = await producer.transaction();
    await open.send({ topic: TOPIC, acks: -1, messages: messages('open') });
    // Acknowledged and never ended: the process dies with the transaction open.
    expect(await first.stop('SIGKILL')).toBe(null);
    await producer.disconnect().catch(() => {});

    const second = new BrokerProcess(dataDir, OVERRIDES);
    live.push(second);
    const again = await second.ready();
    const plain = client(again, 'plain').producer();
    await plain.connect();
    await plain.send({ topic: TOPIC, acks: -1, messages: messages('after') });
    await plain.disconnect();

    const expectedCommitted = [...messages('committed'), ...messages('after')].map((m) => m.value).sort();
    const readCommitted = await readAll(again, false, (v) => v.length >= expectedCommitted.length);
    expect(readCommitted.sort()).toEqual(expectedCommitted);

    const everything = [...expectedCommitted, ...messages('open').map((m) => m.value)].sort();
    const readUncommitted = await readAll(again, true, (v) => v.length >= everything.length);
    expect(readUncommitted.sort()).toEqual(everything);
    expect(await second.stop('SIGTERM'), second.output()).toBe(0);
  }, 90_000);
});

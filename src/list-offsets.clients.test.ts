/**
 * ListOffsets by time and by the special targets, asked by real clients of a
 * real broker on 127.0.0.1: kafka-python 2.0.2 (ListOffsets v1, Debian's
 * /usr/bin/python3) writes records with chosen timestamps and looks them up;
 * kcat (librdkafka 2.0.2, ListOffsets v2) looks them up with -Q; and
 * kafka-python told its broker is 0.10.0 asks the log ends with ListOffsets
 * v0 (max_num_offsets 1). Skipped when either client is not installed.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from './index.js';

const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const KCAT = '/usr/bin/kcat';

async function available(): Promise<boolean> {
  if (!existsSync(PYTHON) || !existsSync(KCAT)) return false;
  try {
    await run(PYTHON, ['-c', 'import kafka'], { timeout: 20000 });
    return true;
  } catch {
    return false;
  }
}

const haveClients = await available();
const T = 1_700_000_000_000;

const PRODUCE_AND_LOOK_UP = `
import json, sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
bootstrap, topic, t = sys.argv[1], sys.argv[2], int(sys.argv[3])
producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
for ts in (t + 100, t + 300, t + 200, t + 500):
    producer.send(topic, value=b'v', partition=0, timestamp_ms=ts).get(timeout=10)
producer.close()
consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
tp = TopicPartition(topic, 0)
found = consumer.offsets_for_times({tp: t + 150})[tp]
missing = consumer.offsets_for_times({tp: t + 501})[tp]
print(json.dumps({
    'found': [found.offset, found.timestamp],
    'missing': missing,
    'beginning': consumer.beginning_offsets([tp])[tp],
    'end': consumer.end_offsets([tp])[tp],
}))
consumer.close()
`;

// Below 0.10.1 kafka-python's consumer asks ListOffsets v0, for one offset per partition.
const LOG_ENDS_AT_V0 = `
import json, sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
bootstrap, topic = sys.argv[1], sys.argv[2]
producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
for i in range(4):
    producer.send(topic, value=b'v', partition=0).get(timeout=10)
producer.close()
consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=10000, api_version=(0, 10, 0))
tp = TopicPartition(topic, 0)
beginning, end = consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
consumer.assign([tp])
consumer.seek_to_end(tp)
at_end = consumer.position(tp)
consumer.seek_to_beginning(tp)
print(json.dumps({'beginning': beginning, 'end': end, 'at_end': at_end, 'from_start': consumer.position(tp)}))
consumer.close()
`;

describe('ListOffsets with kafka-python and kcat', () => {
  let broker: Broker;
  let dir: string;
  let bootstrap: string;

  beforeAll(async () => {
    if (!haveClients) throw new Error('this test drives kcat and kafka-python (/usr/bin/python3): install them with `apt-get install kcat python3-kafka` (.ci/run does)');
    dir = mkdtempSync(join(tmpdir(), 'gregor-list-offsets-'));
    broker = await startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0', 'log.dirs': dir }, { log: pino({ level: 'silent' }) });
    bootstrap = broker.bootstrap;
  });

  afterAll(async () => {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds records by timestamp, and the log ends', async () => {
    const { stdout } = await run(PYTHON, ['-c', PRODUCE_AND_LOOK_UP, bootstrap, 'by-time', String(T)], { timeout: 60000 });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({ found: [1, T + 300], missing: null, beginning: 0, end: 4 });

    const kcat = async (target: number): Promise<string> =>
      (await run(KCAT, ['-Q', '-b', bootstrap, '-t', `by-time:0:${target}`, '-m', '10'], { timeout: 30000 })).stdout.trim();
    expect(await kcat(T + 150)).toBe('by-time [0] offset 1');
    expect(await kcat(T + 301)).toBe('by-time [0] offset 3');
    // Nothing that late: Kafka answers offset -1, which librdkafka reports as the logical end (-1).
    expect(await kcat(T + 501)).toBe('by-time [0] offset -1');
  });

  it('answers the log ends to kafka-python asking ListOffsets v0', async () => {
    const { stdout } = await run(PYTHON, ['-c', LOG_ENDS_AT_V0, bootstrap, 'old-client'], { timeout: 60000 });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({ beginning: 0, end: 4, at_end: 4, from_start: 0 });
  });
});

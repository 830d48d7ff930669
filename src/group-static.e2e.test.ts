/**
 * Static membership end to end (KIP-345): a real broker on 127.0.0.1 and two
 * confluent-kafka-python consumers (Debian's python3-confluent-kafka,
 * librdkafka 2.0.2: JoinGroup v5 with group.instance.id, SyncGroup v3,
 * Heartbeat v3) in one group on a 4-partition topic. One is closed (a static
 * member sends no LeaveGroup) and started again with the same
 * group.instance.id well within its session timeout: it gets the partitions
 * it had, under a new member id, and reads what is produced to them; the
 * other member sees no rebalance: no assign or revoke callback, the same
 * generation and member id in its consumer group metadata, the same
 * rebalance count in librdkafka's statistics, and on the broker no
 * rebalance after the replacement. That is done for the group's leader, then
 * for the other member; last, a duplicate of a running member takes its
 * place and the running one is fenced (FENCED_INSTANCE_ID).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runPython } from './test-utils.js';
import { startBroker, type Broker } from './index.js';

const TOPIC = 'static-topic';
const GROUP = 'static-group';

const brokers: Broker[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type LogLine = { msg: string; group?: string; generation?: number; [field: string]: unknown };

async function broker(onLog: (line: LogLine) => void): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'gregor-group-static-'));
  dirs.push(dir);
  const log = pino({ level: 'info' }, { write: (line: string) => onLog(JSON.parse(line) as LogLine) });
  const b = await startBroker(
    {
      listeners: 'PLAINTEXT://127.0.0.1:0',
      'log.dirs': dir,
      'offsets.topic.num.partitions': '5',
      'offsets.topic.replication.factor': '1',
      'group.initial.rebalance.delay.ms': '0',
    },
    { log },
  );
  brokers.push(b);
  return b.bootstrap;
}

const hasConfluentKafka = await runPython('import confluent_kafka', [], 10_000).then((r) => r.code === 0, () => false);

/**
 * Both consumers are polled from one thread: librdkafka runs the group
 * protocol on its own threads, and callbacks fire inside poll(). Prints one
 * JSON line; any failed wait raises (exit code 1).
 */
const STATIC_SCRIPT = `
import json, struct, sys, time
from confluent_kafka import Consumer, Producer

bootstrap, group, topic = sys.argv[1:4]
SESSION_TIMEOUT_MS = 10000

def generation_and_member(consumer):
    # librdkafka's serialized group metadata: "CGMDv2:", the generation (native int32), then
    # NUL-terminated group id and member id.
    md = consumer.consumer_group_metadata()
    assert md[:7] == b'CGMDv2:', md
    (generation,) = struct.unpack('=i', md[7:11])
    group_id, member_id = md[11:].split(b'\\0')[:2]
    return generation, member_id.decode()

class Member:
    def __init__(self, name, instance_id):
        self.name, self.instance_id = name, instance_id
        self.events, self.assigned, self.read, self.stats = [], [], [], {}
        def on_assign(c, partitions):
            self.assigned = sorted(p.partition for p in partitions)
            self.events.append(['assign', self.assigned])
        def on_revoke(c, partitions):
            self.events.append(['revoke', sorted(p.partition for p in partitions)])
            self.assigned = []
        def on_lost(c, partitions):
            self.events.append(['lost', sorted(p.partition for p in partitions)])
        def on_stats(raw):
            self.stats = json.loads(raw).get('cgrp', {})
        self.consumer = Consumer({
            'bootstrap.servers': bootstrap, 'group.id': group, 'group.instance.id': instance_id,
            'client.id': name, 'session.timeout.ms': SESSION_TIMEOUT_MS, 'heartbeat.interval.ms': 300,
            'partition.assignment.strategy': 'range', 'auto.offset.reset': 'earliest',
            'enable.auto.commit': True, 'auto.commit.interval.ms': 200, 'fetch.wait.max.ms': 100,
            'statistics.interval.ms': 200, 'stats_cb': on_stats,
        })
        self.consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    def poll(self):
        m = self.consumer.poll(0.05)
        if m is not None and m.error() is None:
            self.read.append([m.partition(), m.value().decode()])
        elif m is not None:
            self.events.append(['error', m.error().name(), m.error().fatal(), m.error().str()])

def poll_until(members, check, seconds, what):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit('timed out waiting for ' + what + ': ' + json.dumps({m.name: [m.assigned, m.events] for m in members}))
        for m in members:
            m.poll()

def after_restart(m, round_):
    return [r for r in m.read if r[1].startswith(round_ + '-')]

def snapshot(m):
    generation, member_id = generation_and_member(m.consumer)
    return {'assigned': list(m.assigned), 'generation': generation, 'memberId': member_id,
            'events': [list(e) for e in m.events], 'rebalanceCnt': m.stats.get('rebalance_cnt')}

def restart(members, index, round_):
    """Closes members[index] (a static member sends no LeaveGroup), starts it again with its
    instance id, waits for its partitions, produces 3 messages a partition and reads them."""
    old = members[index]
    other = members[1 - index]
    before = {'restarted': snapshot(old), 'other': snapshot(other)}
    old.consumer.close()
    closed_at = time.monotonic()
    fresh = Member(old.name, old.instance_id)
    poll_until([fresh, other], lambda: len(fresh.assigned) == 2 and fresh.stats.get('join_state') == 'steady', 8, 'the restarted ' + old.name + ' to get its partitions')
    rejoined_after_s = time.monotonic() - closed_at
    producer = Producer({'bootstrap.servers': bootstrap})
    for p in range(4):
        for i in range(3):
            producer.produce(topic, value=('%s-%d-%d' % (round_, p, i)).encode(), partition=p)
    producer.flush(10)
    poll_until([fresh, other], lambda: len(after_restart(fresh, round_)) + len(after_restart(other, round_)) == 12, 10, 'the messages of ' + round_)
    # Several heartbeat intervals more: a rebalance would have reached the other member by now.
    calm = time.monotonic()
    while time.monotonic() - calm < 1.5:
        fresh.poll(); other.poll()
    after = {'restarted': snapshot(fresh), 'other': snapshot(other),
             'restartedRead': [r[0] for r in after_restart(fresh, round_)],
             'otherRead': [r[0] for r in after_restart(other, round_)]}
    members[index] = fresh
    return {'before': before, 'after': after, 'rejoinedAfterS': rejoined_after_s}

# a joins alone first and so leads the group; b joins the second generation.
a = Member('static-a', 'instance-a')
poll_until([a], lambda: len(a.assigned) == 4, 20, 'a to take every partition')
b = Member('static-b', 'instance-b')
steady = lambda m: len(m.assigned) == 2 and m.stats.get('join_state') == 'steady'
poll_until([a, b], lambda: steady(a) and steady(b), 20, 'the group to settle')
poll_until([a, b], lambda: sum(1 for m in (a, b) for r in m.read if r[1].startswith('before-')) == 8, 10, 'the first messages')
settle = time.monotonic()
while time.monotonic() - settle < 1:
    a.poll(); b.poll()
members = [a, b]
leader = restart(members, 0, 'leader')
follower = restart(members, 1, 'follower')

# A second process with a running member's instance id takes its place; the first is fenced.
fenced, other = members
before_other = snapshot(other)
duplicate = Member(fenced.name, fenced.instance_id)
poll_until([duplicate, other, fenced], lambda: steady(duplicate) and any(e[0] == 'error' and e[1] == '_FATAL' for e in fenced.events), 10, 'the duplicate to take the place and the first to be fenced')
duplicate_result = {'fencedErrors': [e for e in fenced.events if e[0] == 'error'], 'duplicate': snapshot(duplicate),
                    'otherBefore': before_other, 'otherAfter': snapshot(other)}
for m in (duplicate, other):
    m.consumer.close()
try:
    fenced.consumer.close()
except Exception:
    pass
print(json.dumps({'leader': leader, 'follower': follower, 'duplicate': duplicate_result}))
`;

describe('static membership with confluent-kafka-python (librdkafka 2.0.2)', () => {
  beforeAll(() => {
    if (!hasConfluentKafka) throw new Error('this test drives the Debian Python Kafka clients through /usr/bin/python3: apt-get install python3-kafka python3-confluent-kafka (.ci/run does)');
  });
  it('a static member restarted within its session timeout gets its partitions back and the other sees no rebalance', async () => {
    const logs: LogLine[] = [];
    const bootstrap = await broker((line) => {
      if (line.group === GROUP) logs.push(line);
    });
    const kafka = new Kafka({ clientId: 'static-test', brokers: [bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const producer = kafka.producer();
    try {
      await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 4 }], waitForLeaders: true });
      await producer.connect();
      await producer.send({ topic: TOPIC, acks: -1, messages: [0, 1, 2, 3].flatMap((partition) => [0, 1].map((i) => ({ partition, value: `before-${partition}-${i}` }))) });

      const { code, out, err } = await runPython(STATIC_SCRIPT, [bootstrap, GROUP, TOPIC], 35_000);
      expect(code, `${out}\n${err}`).toBe(0);
      const r = JSON.parse(out.trim().split('\n').at(-1)!);
      const replacements = logs.filter((l) => l.msg === 'static member rejoins; replacing its previous member id');
      expect(replacements.map((l) => l.groupInstanceId)).toEqual(['instance-a', 'instance-b', 'instance-a']);
      // a joined alone, so it led the group; the leader of the last assignment before the restarts.
      const assigned = logs.filter((l) => l.msg === 'assignment received from the group leader');
      expect(assigned.at(-1)!.leader).toBe(r.leader.before.restarted.memberId);

      for (const [round, instanceId] of [['leader', 'instance-a'], ['follower', 'instance-b']] as const) {
        const { before, after, rejoinedAfterS } = r[round];
        // The restarted member holds what it held, under a new member id, in the same generation.
        expect(after.restarted.assigned, round).toEqual(before.restarted.assigned);
        expect(after.restarted.memberId, round).not.toBe(before.restarted.memberId);
        expect(after.restarted.memberId.startsWith(`${instanceId}-`), round).toBe(true);
        expect(after.restarted.generation, round).toBe(before.restarted.generation);
        expect(after.restarted.events, round).toEqual([['assign', before.restarted.assigned]]);
        expect(rejoinedAfterS, round).toBeLessThan(5);
        // It reads what is produced to its partitions after the restart, the other member the rest.
        expect([...after.restartedRead].sort(), round).toEqual(before.restarted.assigned.flatMap((p: number) => [p, p, p]));
        expect([...after.otherRead].sort(), round).toEqual(before.other.assigned.flatMap((p: number) => [p, p, p]));
        // The other member: no callback, the same generation, member id, assignment and rebalance count.
        expect(after.other, round).toEqual(before.other);
        // The broker: the replacement named the old and new member ids, and no rebalance followed it.
        const replaced = logs.indexOf(replacements[round === 'leader' ? 0 : 1]!);
        expect(logs[replaced], round).toMatchObject({ oldMemberId: before.restarted.memberId, newMemberId: after.restarted.memberId });
        const next = logs.indexOf(replacements[round === 'leader' ? 1 : 2]!);
        const rebalances = logs.slice(replaced + 1, next).filter((l) => ['preparing to rebalance group', 'group completed its join phase', 'member left the group'].includes(l.msg));
        expect(rebalances, round).toEqual([]);
      }
      // A duplicate of a running member takes its place; the running one is fenced (FENCED_INSTANCE_ID,
      // which librdkafka raises as a fatal error), and the other member again sees nothing.
      const { fencedErrors, duplicate, otherBefore, otherAfter } = r.duplicate;
      expect(fencedErrors).toHaveLength(1);
      expect(fencedErrors[0][1]).toBe('_FATAL');
      expect(fencedErrors[0][3]).toContain('Static consumer fenced by other consumer with same group.instance.id');
      expect(duplicate.assigned).toEqual(r.follower.after.other.assigned);
      expect(duplicate.generation).toBe(r.follower.after.other.generation);
      expect(otherAfter).toEqual(otherBefore);
      expect(logs.slice(logs.indexOf(replacements[2]!) + 1).filter((l) => l.msg === 'preparing to rebalance group')).toEqual([]);
      const generations = logs.filter((l) => l.msg === 'group completed its join phase').map((l) => l.generation);
      expect(generations.at(-1)).toBe(otherAfter.generation);
    } finally {
      await producer.disconnect().catch(() => {});
      await admin.disconnect().catch(() => {});
    }
  }, 40_000);
});

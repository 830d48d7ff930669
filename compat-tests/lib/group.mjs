// The group scenario's plan and checks, shared by the Node clients (kafkajs, platformatic,
// and the kcat driver); lib/group.py has the same for the Python clients, and the Java
// and Go clients follow the same plan in their own language.
//
// The plan, against a fresh 6-partition topic and a fresh group:
//   1. Two consumers A and B subscribe. Once both hold some partitions and together all
//      six, FIRST keyed messages are produced; A and B consume them, committing as they go.
//   2. B commits and leaves; within the session timeout A holds all six partitions.
//      SECOND more messages are produced and A consumes them; then A commits and leaves.
//   3. THIRD more messages are produced; a new consumer C joins the group and must start
//      from the committed offsets: it consumes exactly those THIRD messages.
// Producing only once both members hold partitions keeps every rebalance away from
// consumption, so each message must be consumed exactly once across the whole run.
import { ScenarioFailure } from './scenario.mjs';

export const PARTITIONS = 6;
export const FIRST = 600;
export const SECOND = 120;
export const THIRD = 60;
// Kafka's group.min.session.timeout.ms is 6 s; heartbeats this often notice a rebalance soon.
export const SESSION_TIMEOUT_MS = 10_000;
export const HEARTBEAT_INTERVAL_MS = 1_000;
export const REBALANCE_TIMEOUT_MS = 20_000;
// How long the members may take to hold all partitions between them (includes
// group.initial.rebalance.delay.ms, 3 s by default), and to consume one step's messages.
export const JOIN_TIMEOUT_MS = 15_000;
export const CONSUME_TIMEOUT_MS = 10_000;
// Closing a client in cleanup, so that a broker that stops answering leaves the
// scenario's first failure as its result rather than the overall timeout.
export const CLOSE_TIMEOUT_MS = 5_000;

export const messageKey = (i) => `key-${i}`;
export const messageValue = (i) => `group-message-${i}`;
const VALUE = /^group-message-(\d+)$/;

const sorted = (set) => [...set].sort((a, b) => a - b);
const showParts = (parts) => `[${sorted(parts).join(',')}]`;

/**
 * Tracks what each member holds and what it consumed, and checks the scenario's rules.
 * Problems found inside client callbacks are kept and raised by expectNoProblems().
 */
export class GroupCheck {
  constructor() {
    this.started = Date.now();
    this.held = new Map(); // member -> Set of partitions
    this.consumedBy = new Map(); // message index -> [{ member, partition, offset }]
    this.offsets = new Map(); // partition -> Map(offset -> message index)
    this.produced = new Map(); // message index -> { partition, offset }
    this.problems = [];
  }

  log(line) {
    console.log(`  +${((Date.now() - this.started) / 1000).toFixed(2)} s ${line}`);
  }

  problem(text) {
    if (this.problems.length < 10) this.problems.push(text);
    this.log(`problem: ${text}`);
  }

  expectNoProblems() {
    if (this.problems.length) throw new ScenarioFailure(this.problems.join('\n  '));
  }

  // The member's assignment is now exactly `partitions` (an empty list after a revoke, on
  // leaving, or when it rejoins). No partition may be held by two members at once.
  assign(member, partitions, why = 'assigned') {
    const mine = new Set(partitions.map(Number));
    this.held.set(member, mine);
    this.log(`${member} ${why} ${showParts(mine)}`);
    for (const [other, theirs] of this.held) {
      if (other === member) continue;
      const both = sorted(mine).filter((p) => theirs.has(p));
      if (both.length) this.problem(`partitions [${both.join(',')}] assigned to ${member} while ${other} still holds them`);
    }
  }

  holds(member) {
    return this.held.get(member) ?? new Set();
  }

  // True when every member named holds some partitions and together they hold all.
  split(members) {
    const all = new Set();
    for (const m of members) {
      const mine = this.holds(m);
      if (mine.size === 0) return false;
      for (const p of mine) all.add(p);
    }
    return all.size === PARTITIONS;
  }

  // Where the producer's acknowledgement put message i, when the client tells.
  produce(i, partition, offset) {
    this.produced.set(i, { partition: Number(partition), offset: Number(offset) });
  }

  // One record a member received. key and value may be Buffers or strings.
  consume(member, { partition, offset, key, value }) {
    partition = Number(partition);
    offset = Number(offset);
    const text = value === null || value === undefined ? String(value) : value.toString();
    const match = VALUE.exec(text);
    if (!match) {
      this.problem(`${member} read partition ${partition} offset ${offset} with value ${JSON.stringify(text.slice(0, 40))}, not one produced here`);
      return;
    }
    const i = Number(match[1]);
    const keyText = key === null || key === undefined ? String(key) : key.toString();
    if (keyText !== messageKey(i)) this.problem(`${member} read message ${i} with key ${JSON.stringify(keyText)}, expected ${messageKey(i)}`);
    const where = this.produced.get(i);
    if (where && (where.partition !== partition || where.offset !== offset)) {
      this.problem(`${member} read message ${i} at partition ${partition} offset ${offset}; it was acknowledged at partition ${where.partition} offset ${where.offset}`);
    }
    if (!this.holds(member).has(partition)) this.problem(`${member} read partition ${partition} offset ${offset}, which it does not hold`);
    if (!this.offsets.has(partition)) this.offsets.set(partition, new Map());
    const seen = this.offsets.get(partition);
    if (seen.has(offset) && seen.get(offset) !== i) this.problem(`partition ${partition} offset ${offset} read as message ${seen.get(offset)} and as message ${i}`);
    seen.set(offset, i);
    const reads = this.consumedBy.get(i) ?? [];
    reads.push({ member, partition, offset });
    this.consumedBy.set(i, reads);
    if (reads.length === 2) {
      this.problem(`message ${i} (partition ${partition} offset ${offset}) read twice: ${reads.map((r) => `${r.member} at partition ${r.partition} offset ${r.offset}`).join(', ')}`);
    }
  }

  // How many of messages [from, to) have been read at least once.
  countRead(from, to) {
    let n = 0;
    for (let i = from; i < to; i++) if (this.consumedBy.has(i)) n++;
    return n;
  }

  /**
   * After a step: messages [from, to) were each read exactly once, by one of `members`;
   * nothing at or past `to` was read; in every partition the offsets read so far run
   * 0, 1, 2, ... without a gap. Returns { member: count } for the step.
   */
  expectStep(step, from, to, members) {
    this.expectNoProblems();
    const missing = [];
    const byMember = Object.fromEntries(members.map((m) => [m, 0]));
    for (let i = from; i < to; i++) {
      const reads = this.consumedBy.get(i);
      if (!reads) {
        missing.push(i);
        continue;
      }
      for (const r of reads) {
        if (!(r.member in byMember)) throw new ScenarioFailure(`${step}: message ${i} was read by ${r.member}, expected one of ${members.join(', ')}`);
        byMember[r.member]++;
      }
    }
    if (missing.length) {
      const where = missing.slice(0, 5).map((i) => {
        const p = this.produced.get(i);
        return p ? `${i} (partition ${p.partition} offset ${p.offset})` : String(i);
      });
      throw new ScenarioFailure(`${step}: ${missing.length} of ${to - from} messages never read, e.g. ${where.join(', ')}`);
    }
    const early = [...this.consumedBy.keys()].filter((i) => i >= to);
    if (early.length) throw new ScenarioFailure(`${step}: read messages not produced yet: ${early.slice(0, 5).join(', ')}`);
    for (const [partition, seen] of this.offsets) {
      const offsets = sorted(seen.keys());
      const gap = offsets.findIndex((o, n) => o !== n);
      if (gap >= 0) throw new ScenarioFailure(`${step}: partition ${partition} offsets read are ${offsets.slice(Math.max(0, gap - 2), gap + 3).join(', ')}..., expected 0, 1, 2, ... without a gap`);
    }
    const perPartition = [...this.offsets].sort((a, b) => a[0] - b[0]).map(([p, seen]) => `${p}:${seen.size}`);
    this.log(`${step}: messages ${from}..${to - 1} each read once (${Object.entries(byMember).map(([m, n]) => `${m} ${n}`).join(', ')}); records read per partition so far ${perPartition.join(' ')}`);
    return byMember;
  }

  // "A holds [0,1,2], B holds [3,4,5]": for failure messages.
  describe(members) {
    return members.map((m) => `${m} holds ${showParts(this.holds(m))}`).join(', ');
  }

  // Every partition must have got some of the first messages, so both members read some.
  expectSpread() {
    const used = new Set([...this.offsets.keys()]);
    if (used.size !== PARTITIONS) throw new ScenarioFailure(`the ${FIRST} keyed messages went to partitions ${showParts(used)} only, expected all ${PARTITIONS}`);
  }
}

// Runs close() for cleanup, giving up after CLOSE_TIMEOUT_MS; failures are only printed.
export async function closeQuietly(what, close) {
  let timer;
  const limit = new Promise((resolve) => {
    timer = setTimeout(() => resolve(`did not finish within ${CLOSE_TIMEOUT_MS} ms`), CLOSE_TIMEOUT_MS);
  });
  try {
    const outcome = await Promise.race([Promise.resolve().then(close).then(() => null), limit]);
    if (outcome) console.log(`  cleanup: closing ${what} ${outcome}`);
  } catch (err) {
    console.log(`  cleanup: closing ${what}: ${err?.message ?? err}`);
  } finally {
    clearTimeout(timer);
  }
}

// Waits until cond() is true, polling every 50 ms; after timeoutMs throws a ScenarioFailure
// naming `what` and, if given, state(). check.expectNoProblems() runs on every turn.
export async function waitFor(check, what, timeoutMs, cond, state) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    check.expectNoProblems();
    if (await cond()) return;
    if (Date.now() > deadline) throw new ScenarioFailure(`${what}: not within ${timeoutMs} ms${state ? ` (${state()})` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

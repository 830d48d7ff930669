"""The group scenario's plan and checks, shared by the Python clients.

The same as lib/group.mjs (which explains the plan): two consumers A and B share a
fresh 6-partition topic, B leaves and A takes everything, A leaves, and a new consumer
C resumes from the committed offsets. GroupCheck tracks what each member holds and
reads; every message must be read exactly once over the whole run. Only the standard
library is used, nothing newer than Python 3.11. Methods may be called from several
threads (kafka-python runs one consumer per thread).
"""

import re
import threading
import time

PARTITIONS = 6
FIRST = 600
SECOND = 120
THIRD = 60
# Kafka's group.min.session.timeout.ms is 6 s; heartbeats this often notice a rebalance soon.
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 1_000
REBALANCE_TIMEOUT_MS = 20_000
# How long the members may take to hold all partitions between them (includes
# group.initial.rebalance.delay.ms, 3 s by default), and to consume one step's messages.
JOIN_TIMEOUT_S = 15.0
CONSUME_TIMEOUT_S = 10.0
# group-consumer: the same plan on the consumer rebalance protocol (KIP-848). The broker
# assigns and sets the heartbeat interval (group.consumer.heartbeat.interval.ms, 5 s by
# default); a partition moves only after its holder has heard at a heartbeat that it must
# give it up, has revoked it and said so, and the new holder has heard of it at one of its
# own heartbeats: about two intervals, plus the broker's session timeout (45 s) only for a
# member that vanished, which none here does.
CONSUMER_JOIN_TIMEOUT_S = 40.0
CONSUMER_LEAVE_TIMEOUT_S = 30.0

_VALUE = re.compile(rb"^group-message-(\d+)$")


def message_key(i):
    return f"key-{i}".encode()


def message_value(i):
    return f"group-message-{i}".encode()


def _parts(parts):
    return "[" + ",".join(str(p) for p in sorted(parts)) + "]"


class Failure(Exception):
    """A check that did not hold; its text is the problem."""


class GroupCheck:
    def __init__(self):
        self.started = time.monotonic()
        self.lock = threading.RLock()
        self.held = {}  # member -> set of partitions
        self.consumed_by = {}  # message index -> [(member, partition, offset)]
        self.offsets = {}  # partition -> {offset: message index}
        self.produced = {}  # message index -> (partition, offset)
        self.problems = []

    def log(self, line):
        print(f"  +{time.monotonic() - self.started:.2f} s {line}", flush=True)

    def problem(self, text):
        with self.lock:
            if len(self.problems) < 10:
                self.problems.append(text)
        self.log(f"problem: {text}")

    def expect_no_problems(self):
        with self.lock:
            if self.problems:
                raise Failure("\n  ".join(self.problems))

    def assign(self, member, partitions, why="assigned"):
        """The member's assignment is now exactly `partitions`; no partition may be
        held by two members at once."""
        mine = {int(p) for p in partitions}
        with self.lock:
            self.held[member] = mine
            self.log(f"{member} {why} {_parts(mine)}")
            for other, theirs in self.held.items():
                both = sorted(mine & theirs) if other != member else []
                if both:
                    self.problem(f"partitions {both} assigned to {member} while {other} still holds them")

    def holds(self, member):
        with self.lock:
            return set(self.held.get(member, ()))

    def describe(self, members):
        return ", ".join(f"{m} holds {_parts(self.holds(m))}" for m in members)

    def split(self, members):
        """True when every member named holds some partitions and together they hold all."""
        held = [self.holds(m) for m in members]
        return all(held) and len(set().union(*held)) == PARTITIONS

    def produce(self, i, partition, offset):
        with self.lock:
            self.produced[i] = (int(partition), int(offset))

    def consume(self, member, partition, offset, key, value):
        partition, offset = int(partition), int(offset)
        match = _VALUE.match(value or b"")
        if not match:
            self.problem(f"{member} read partition {partition} offset {offset} with value {value!r:.60}, "
                         "not one produced here")
            return
        i = int(match.group(1))
        with self.lock:
            if key != message_key(i):
                self.problem(f"{member} read message {i} with key {key!r}, expected {message_key(i)!r}")
            where = self.produced.get(i)
            if where is not None and where != (partition, offset):
                self.problem(f"{member} read message {i} at partition {partition} offset {offset}; it was "
                             f"acknowledged at partition {where[0]} offset {where[1]}")
            if partition not in self.held.get(member, ()):
                self.problem(f"{member} read partition {partition} offset {offset}, which it does not hold")
            seen = self.offsets.setdefault(partition, {})
            if seen.get(offset, i) != i:
                self.problem(f"partition {partition} offset {offset} read as message {seen[offset]} and as message {i}")
            seen[offset] = i
            reads = self.consumed_by.setdefault(i, [])
            reads.append((member, partition, offset))
            if len(reads) == 2:
                self.problem(f"message {i} (partition {partition} offset {offset}) read twice: "
                             + ", ".join(f"{m} at partition {p} offset {o}" for m, p, o in reads))

    def count_read(self, start, end):
        with self.lock:
            return sum(1 for i in range(start, end) if i in self.consumed_by)

    def expect_step(self, step, start, end, members):
        """Messages [start, end) were each read exactly once, by one of members; nothing
        at or past end was read; in every partition the offsets read so far run 0, 1, 2,
        ... without a gap. Raises Failure otherwise."""
        self.expect_no_problems()
        with self.lock:
            by_member = dict.fromkeys(members, 0)
            missing = [i for i in range(start, end) if i not in self.consumed_by]
            for i in range(start, end):
                for member, _, _ in self.consumed_by.get(i, ()):
                    if member not in by_member:
                        raise Failure(f"{step}: message {i} was read by {member}, expected one of {', '.join(members)}")
                    by_member[member] += 1
            if missing:
                where = [f"{i} (partition {self.produced[i][0]} offset {self.produced[i][1]})"
                         if i in self.produced else str(i) for i in missing[:5]]
                raise Failure(f"{step}: {len(missing)} of {end - start} messages never read, e.g. {', '.join(where)}")
            early = sorted(i for i in self.consumed_by if i >= end)
            if early:
                raise Failure(f"{step}: read messages not produced yet: {early[:5]}")
            for partition, seen in self.offsets.items():
                offsets = sorted(seen)
                gap = next((n for n, o in enumerate(offsets) if o != n), None)
                if gap is not None:
                    raise Failure(f"{step}: partition {partition} offsets read are "
                                  f"{offsets[max(0, gap - 2):gap + 3]}..., expected 0, 1, 2, ... without a gap")
            per_partition = " ".join(f"{p}:{len(seen)}" for p, seen in sorted(self.offsets.items()))
        self.log(f"{step}: messages {start}..{end - 1} each read once ("
                 + ", ".join(f"{m} {n}" for m, n in by_member.items())
                 + f"); records read per partition so far {per_partition}")
        return by_member

    def expect_spread(self):
        with self.lock:
            used = set(self.offsets)
        if len(used) != PARTITIONS:
            raise Failure(f"the {FIRST} keyed messages went to partitions {_parts(used)} only, expected all {PARTITIONS}")


# The partition.assignment.strategy values the group scenario runs with, one run each.
ASSIGNORS = ("range", "roundrobin")


def expected_split(assignor, first, second):
    """None when two members' holdings of the PARTITIONS partitions are the split `assignor`
    gives (whichever member sorts first): range hands out contiguous halves, roundrobin
    alternates; otherwise the problem."""
    half = PARTITIONS // 2
    if assignor == "range":
        want = {frozenset(range(half)), frozenset(range(half, PARTITIONS))}
    elif assignor == "roundrobin":
        want = {frozenset(range(0, PARTITIONS, 2)), frozenset(range(1, PARTITIONS, 2))}
    else:
        return None
    got = {frozenset(first), frozenset(second)}
    if got != want:
        return (f"{assignor} split the partitions {_parts(first)} / {_parts(second)}, expected "
                + " / ".join(_parts(w) for w in sorted(want, key=min)))
    return None


def wait_for(check, what, timeout_s, cond, state=None, poll=None):
    """Calls poll() (or sleeps 50 ms) until cond() is true; raises Failure naming what,
    and state() if given, after timeout_s. check.expect_no_problems() runs every turn."""
    deadline = time.monotonic() + timeout_s
    while True:
        check.expect_no_problems()
        if cond():
            return
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not within {timeout_s * 1000:.0f} ms" + (f" ({state()})" if state else ""))
        if poll is not None:
            poll()
        else:
            time.sleep(0.05)

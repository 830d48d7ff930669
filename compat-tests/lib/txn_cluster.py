"""The txn-cluster scenario's plan and checks, shared by the Python clients (the Node
clients' are in txn-cluster.mjs, which explains the plan).

Transactions whose partition leader, transaction coordinator and group coordinator are
three different brokers: producer T commits A, aborts B and commits C on topic IN (led
by three brokers); a consumer in group G then copies IN to OUT upper-cased, one
transaction per poll, one of them aborted on purpose. Only the standard library is used,
nothing newer than Python 3.11.
"""

BROKERS = 3
PARTITIONS = 3
REPLICATION = 3
IN_CONFIG = {"min.insync.replicas": "2"}
PER_PARTITION = 5
# The transactions of step 3, in order, and whether each commits.
TXNS = (("A", True), ("B", False), ("C", True))
# How many candidate ids are tried for a transaction and a group coordinator on two brokers.
CANDIDATES = 50
# The whole scenario gives up after this; `run` kills it a little later.
BUDGET_S = 100.0
# One wait (leaders, reading a topic to its end) gives up after this.
WAIT_S = 20.0
# The copy loop gives up after this.
COPY_S = 60.0
# Records per poll in the copy loop, so that it runs several transactions.
MAX_POLL_RECORDS = 7


def value(txn, partition, k):
    """The record step 3 writes: the transaction, the partition and a sequence number."""
    return f"{txn}-p{partition}-{k}"


def transform(v):
    """What the copy loop writes to OUT for a record of IN."""
    return v.upper()


def input_values(committed_only):
    """{partition: [values]} of IN in production order: A and C, or A, B and C."""
    out = {p: [] for p in range(PARTITIONS)}
    for txn, commits in TXNS:
        if committed_only and not commits:
            continue
        for k in range(PER_PARTITION):
            for p in range(PARTITIONS):
                out[p].append(value(txn, p, k))
    return out


def java_string_hash(s):
    """Java's String.hashCode(): over UTF-16 code units, in 32-bit two's complement."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key, partitions):
    """The partition of __consumer_offsets (a group id) or __transaction_state (a
    transactional id) that owns key: Kafka's abs(hash) % partitions, abs(MIN_VALUE) = 0.

        coordinator_partition("group", 50)               # 98629247 % 50 = 47
        coordinator_partition("polygenelubricants", 50)  # its hash is -2**31: 0
    """
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def pick_ids(prefix, txn_coordinator, group_coordinator):
    """Candidate pairs (T, G) = (prefix-t<i>, prefix-g<i>) until their coordinators
    (from the given functions of an id) differ; returns (T, G, coordinator of T,
    coordinator of G), or None after CANDIDATES tries."""
    for i in range(CANDIDATES):
        t, g = f"{prefix}-t{i}", f"{prefix}-g{i}"
        ct, cg = txn_coordinator(t), group_coordinator(g)
        if ct != cg:
            return t, g, ct, cg
    return None


def led_by(leaders, broker):
    """The partitions in leaders ({partition: broker}) led by broker, as text."""
    ps = [str(p) for p, b in sorted(leaders.items()) if b == broker]
    return ",".join(ps) if ps else "none"


def compare(label, expected, got):
    """Problems for each partition whose values ({partition: [values]}) differ from the
    expected list: what was expected, what was seen, and where they first differ."""
    problems = []
    for p in range(PARTITIONS):
        want, saw = expected.get(p, []), got.get(p, [])
        if want == saw:
            continue
        i = 0
        while i < len(want) and i < len(saw) and want[i] == saw[i]:
            i += 1
        problems.append(f"{label} partition {p}: expected {len(want)} records {want}, saw {len(saw)} {saw}; "
                        f"first difference at position {i}: expected {want[i] if i < len(want) else 'nothing'}, "
                        f"saw {saw[i] if i < len(saw) else 'nothing'}")
    return problems


def count(values):
    return sum(len(v) for v in values.values())

"""The roundtrip scenario's data and checks, shared by the Python clients.

make_messages() builds the records a client produces, check_records() compares what
it read back. Both clients' scenarios produce with explicit timestamps (TIMESTAMP_STEP_MS
apart), so the offset a timestamp lookup must answer is known in advance: see
timestamp_probe(). Only the standard library is used, nothing newer than Python 3.11.
"""

import random
import time

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

# Every message gets its own timestamp, this far after the previous one.
TIMESTAMP_STEP_MS = 10


class Message:
    __slots__ = ("key", "value", "headers", "timestamp")

    def __init__(self, key, value, headers, timestamp):
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp


def make_messages(count, seed):
    """count messages: keys, values and headers mixing text and arbitrary bytes.

    Every 10th key is None, message 1 has an empty value and message 2 a None value
    (null on the wire, not empty). Headers repeat a name and include an empty value, so
    order and duplicates must survive. Timestamps are an hour in the past, increasing.
    """
    rand = random.Random(seed)
    words = [b"kafka", b"gregor", b"offset", b"batch", b"record", b"header", "\u00fc\u20ac\u2713".encode()]
    base_ts = int(time.time() * 1000) - 3_600_000
    messages = []
    for i in range(count):
        key = None if i % 10 == 0 else (f"key-{i}".encode() if i % 3 else f"k{i}:".encode() + rand.randbytes(4))
        r = rand.random()
        length = rand.randint(1, 2000) if r < 0.05 else rand.randint(1, 120)
        if r < 0.5:
            value = b" ".join(rand.choice(words) for _ in range(length // 6 + 1))[:length]
        elif r < 0.8:
            value = rand.randbytes(length)
        else:
            value = b"gregor " * (length // 14 + 1) + rand.randbytes(length // 2)
        if i == 1:
            value = b""
        elif i == 2:
            value = None
        headers = [("compat", b"roundtrip"), ("seq", str(i).encode()), ("dup", b"1"), ("dup", b"2"), ("empty", b"")]
        messages.append(Message(key, value, headers, base_ts + i * TIMESTAMP_STEP_MS))
    return messages


def timestamp_probe(messages, index):
    """A timestamp between messages index-1 and index, and the offset it must find."""
    return messages[index].timestamp - TIMESTAMP_STEP_MS // 2, index


def _show(b):
    if b is None:
        return "None"
    return f"{len(b)} bytes {bytes(b[:24])!r}"


def check_records(label, messages, records, limit=5):
    """Compares records read back with the messages produced; returns problems.

    records are (offset, key, value, headers, timestamp) tuples in the order read, with
    headers as a list of (name, bytes) pairs. Offsets must run 0, 1, 2, ...
    """
    problems = []
    if len(records) != len(messages):
        problems.append(f"{label}: read back {len(records)} records, expected {len(messages)}")
    for i, (record, m) in enumerate(zip(records, messages)):
        if len(problems) >= limit:
            break
        offset, key, value, headers, timestamp = record
        if offset != i:
            problems.append(f"{label}: record {i} has offset {offset}, expected {i} (offsets must run 0, 1, 2, ...)")
        elif key != m.key:
            problems.append(f"{label}: offset {i}: key {_show(key)}, expected {_show(m.key)}")
        elif value != m.value:
            problems.append(f"{label}: offset {i}: value {_show(value)}, expected {_show(m.value)}")
        elif list(headers) != m.headers:
            problems.append(f"{label}: offset {i}: headers {headers!r}, expected {m.headers!r}")
        elif timestamp != m.timestamp:
            problems.append(f"{label}: offset {i}: timestamp {timestamp}, expected {m.timestamp}")
    return problems

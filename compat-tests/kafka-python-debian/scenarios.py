"""Scenarios for kafka-python, run by both kafka-python folders.

The Debian package (kafka-python 2.0.2) and the PyPI release (3.x) share this
file; each folder's `run` picks the interpreter. The two differ in ways this file
absorbs: 3.x dropped `api_version_auto_timeout_ms` for `bootstrap_timeout_ms`,
and its describe_cluster sends DescribeCluster and names broker ids `broker_id`
where 2.0.2 reads Metadata and says `node_id`.

Usage: python scenarios.py <scenario> <host:port>
Exit status: 0 pass, 1 fail, 3 scenario not implemented here.
"""

import collections
import logging
import os
import sys
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

# The shared runner lives in ../lib; the scripts run with -I, which leaves this
# folder and PYTHONPATH off sys.path, so the path is found from this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
import roundtrip  # noqa: E402
import scenario_main  # noqa: E402
from scenario_main import NOT_EXPOSED, check_cluster  # noqa: E402

# Per-request bound; the caller's `run` bounds the whole process at 20 s.
REQUEST_TIMEOUT_MS = 8000
# kafka-python 2.0.2 probes the broker version in the constructor; a broker that
# misses this raises NoBrokersAvailable rather than hanging.
API_VERSION_PROBE_TIMEOUT_MS = 5000


def admin_config(bootstrap, known=KafkaAdminClient.DEFAULT_CONFIG):
    """The bootstrap and time bounds for any client class whose DEFAULT_CONFIG is known."""
    config = {
        "bootstrap_servers": bootstrap,
        "client_id": "compat-kafka-python",
        "request_timeout_ms": REQUEST_TIMEOUT_MS,
    }
    if "api_version_auto_timeout_ms" in known:
        config["api_version_auto_timeout_ms"] = API_VERSION_PROBE_TIMEOUT_MS
    if "bootstrap_timeout_ms" in known:
        config["bootstrap_timeout_ms"] = REQUEST_TIMEOUT_MS
    return config


def check_described_cluster(cluster):
    """Applies the metadata rules to a describe_cluster() dict; returns problems."""
    brokers = [(b.get("broker_id", b.get("node_id")), b.get("host"), b.get("port"))
               for b in cluster.get("brokers") or []]
    return check_cluster("describe_cluster", brokers,
                         cluster.get("controller_id", NOT_EXPOSED),
                         cluster.get("cluster_id", NOT_EXPOSED))


def scenario_metadata(bootstrap):
    try:
        admin = KafkaAdminClient(**admin_config(bootstrap))
    except Exception as err:
        return [f"KafkaAdminClient(): {type(err).__name__}: {err}"]
    problems = []
    try:
        problems += check_described_cluster(admin.describe_cluster())
        topics = sorted(admin.list_topics())
        print(f"  list_topics: topics ({len(topics)}): {topics}")
    except Exception as err:
        problems.append(f"{type(err).__name__}: {err}")
    finally:
        admin.close()
    return problems


# roundtrip: messages per codec, where the middle-offset and timestamp reads start, and
# how long reading may go without progress before the scenario fails.
ROUNDTRIP_COUNT = 2000
ROUNDTRIP_MIDDLE = 1234
ROUNDTRIP_TIMESTAMP_INDEX = 1567
READ_IDLE_S = 5.0
SEND_TIMEOUT_S = 10.0


class SentRequests(logging.Handler):
    """Counts the requests kafka-python sends, from its connection's debug log.

    The record's arguments hold the request object; the message itself is never
    formatted, since a Produce request's text would hold every record.
    """

    LOGGERS = ("kafka.conn", "kafka.net.connection")  # 2.0.2, 3.x

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.counts = collections.Counter()
        for name in self.LOGGERS:
            logger = logging.getLogger(name)
            logger.addHandler(self)
            # The debug records still reach the root logger's handlers, which print only
            # warnings and errors (see __main__).
            logger.setLevel(logging.DEBUG)

    def emit(self, record):
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) == 3 and record.msg.endswith("Request %d: %s"):
            request = args[2]
            name = type(request).__name__
            if "_v" not in name:
                name = f"{name}_v{getattr(request, 'API_VERSION', '?')}"
            self.counts[name.replace("Request_v", " v")] += 1

    def take(self):
        text = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in self.counts.items())
        self.counts.clear()
        return text


def produce_codec(bootstrap, topic, codec, messages):
    """Sends messages to partition 0 with one producer per codec; returns problems."""
    config = admin_config(bootstrap, KafkaProducer.DEFAULT_CONFIG)
    config.update(compression_type=None if codec == "none" else codec, acks="all", linger_ms=20,
                  max_block_ms=int(SEND_TIMEOUT_S * 1000), retries=2)
    if "enable_idempotence" in KafkaProducer.DEFAULT_CONFIG:
        config["enable_idempotence"] = False  # a plain producer; InitProducerId is another scenario's
    producer = KafkaProducer(**config)
    problems = []
    try:
        futures = [producer.send(topic, value=m.value, key=m.key, headers=m.headers, partition=0,
                                 timestamp_ms=m.timestamp) for m in messages]
        producer.flush(timeout=SEND_TIMEOUT_S)
        offsets = []
        for i, future in enumerate(futures):
            try:
                offsets.append(future.get(timeout=0.1).offset)
            except Exception as err:
                problems.append(f"{codec}: send {i}: {type(err).__name__}: {err}")
                break
        if not problems and offsets != list(range(len(messages))):
            wrong = next(i for i, o in enumerate(offsets) if o != i)
            problems.append(f"{codec}: send {wrong} acknowledged at offset {offsets[wrong]}, expected {wrong} "
                            "(offsets must run 0, 1, 2, ... in send order)")
    finally:
        producer.close(timeout=2)
    return problems


def read_from(consumer, starts, want, names):
    """Seeks partition 0 of each topic to its start ({TopicPartition: offset}) and polls
    until each has want records. Returns ({TopicPartition: [records]}, problems); names
    ({TopicPartition: codec}) label the partitions in problems."""
    for tp, offset in starts.items():
        consumer.seek(tp, offset)
    records = {tp: [] for tp in starts}
    pending = set(starts)
    idle_since = time.monotonic()
    while pending:
        if time.monotonic() - idle_since > READ_IDLE_S:
            where = ", ".join(f"{names[tp]} at offset {records[tp][-1].offset + 1 if records[tp] else starts[tp]}"
                              for tp in sorted(pending))
            return records, [f"nothing more read in {READ_IDLE_S:.0f} s from {where}"]
        for tp, batch in consumer.poll(timeout_ms=200, max_records=1000).items():
            if tp in pending:
                records[tp].extend(batch[:want - len(records[tp])])
                idle_since = time.monotonic()
                if len(records[tp]) >= want:
                    pending.discard(tp)
    return records, []


def consume_all(bootstrap, topics, messages):
    """assign() + seek() over every codec's topic at once: all records, from the middle,
    and from offsets_for_times. No group: group_id=None."""
    config = admin_config(bootstrap, KafkaConsumer.DEFAULT_CONFIG)
    config.update(group_id=None, enable_auto_commit=False, auto_offset_reset="none", fetch_max_wait_ms=200)
    consumer = KafkaConsumer(**config)
    codec_of = {TopicPartition(topic, 0): codec for codec, topic in topics.items()}
    try:
        consumer.assign(list(codec_of))
        records, problems = read_from(consumer, {tp: 0 for tp in codec_of}, len(messages), codec_of)
        if problems:
            return problems
        for tp, codec in codec_of.items():
            got = [(r.offset, r.key, r.value, [(k, v) for k, v in r.headers or []], r.timestamp)
                   for r in records[tp]]
            problems += roundtrip.check_records(codec, messages, got)
        if problems:
            return problems

        records, problems = read_from(consumer, {tp: ROUNDTRIP_MIDDLE for tp in codec_of}, 1, codec_of)
        for tp, got in records.items():
            if got and got[0].offset != ROUNDTRIP_MIDDLE:
                problems.append(f"{codec_of[tp]}: seek({ROUNDTRIP_MIDDLE}) read offset {got[0].offset} first")

        target, expected = roundtrip.timestamp_probe(messages, ROUNDTRIP_TIMESTAMP_INDEX)
        found = consumer.offsets_for_times({tp: target for tp in codec_of})
        for tp, codec in codec_of.items():
            at = found.get(tp)
            if at is None or at.offset != expected:
                problems.append(f"{codec}: offsets_for_times({target}) gave {at}, expected offset {expected}")
        if problems:
            return problems
        records, problems = read_from(consumer, {tp: found[tp].offset for tp in codec_of}, 1, codec_of)
        for tp, got in records.items():
            if got and got[0].offset != expected:
                problems.append(f"{codec_of[tp]}: seek to offsets_for_times' {expected} read {got[0].offset} first")
        return problems
    finally:
        consumer.close()


def scenario_roundtrip(bootstrap):
    sent = SentRequests()
    stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
    codecs = roundtrip.CODECS
    messages = roundtrip.make_messages(ROUNDTRIP_COUNT, seed=11)
    print(f"  {ROUNDTRIP_COUNT} messages per codec ({', '.join(codecs)}) to partition 0 of a new topic each"
          " (auto-created)")
    topics = {codec: f"compat-roundtrip-kafka-python-{codec}-{stamp}" for codec in codecs}
    try:
        started = time.monotonic()
        for codec in codecs:
            problems = produce_codec(bootstrap, topics[codec], codec, messages)
            if codec == codecs[0] or problems:
                print(f"  {codec} producer requests: {sent.take()}")
            if problems:
                # Later codecs would wait out the same timeouts against a broker that failed this one.
                return problems
        print(f"  produced in {time.monotonic() - started:.1f} s")
        sent.take()
        started = time.monotonic()
        problems = consume_all(bootstrap, topics, messages)
        print(f"  read back in {time.monotonic() - started:.1f} s; consumer requests: {sent.take()}")
        return problems
    except Exception as err:  # a library error or timeout is a failure, not a crash
        print(f"  requests so far: {sent.take()}")
        return [f"{type(err).__name__}: {err}"]


SCENARIOS = {"metadata": scenario_metadata, "roundtrip": scenario_roundtrip}


class FirstFew(logging.Filter):
    """Lets each distinct log message through a few times: a client retrying against
    a broker that cannot serve it repeats the same line hundreds of times."""

    def __init__(self, limit=3):
        super().__init__()
        self.limit = limit
        self.seen = collections.Counter()

    def filter(self, record):
        text = record.getMessage()
        self.seen[text] += 1
        return self.seen[text] <= self.limit


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="  kafka-python log: %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)
        handler.addFilter(FirstFew())
    sys.exit(scenario_main.main(sys.argv, SCENARIOS, "kafka-python", kafka.__version__))

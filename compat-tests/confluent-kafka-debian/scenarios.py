"""Scenarios for confluent-kafka-python, run by both confluent-kafka folders.

The Debian build (confluent-kafka 1.7.0 on librdkafka 2.0.2) and the PyPI wheel
(2.x with its bundled librdkafka) share this file; each folder's `run` picks the
interpreter, so whatever this file needs must work on both versions.

Usage: python scenarios.py <scenario> <host:port>
Exit status: 0 pass, 1 fail, 3 scenario not implemented here.
"""

import collections
import logging
import os
import re
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient

# The shared runner lives in ../lib; the scripts run with -I, which leaves this
# folder and PYTHONPATH off sys.path, so the path is found from this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
import roundtrip  # noqa: E402
import scenario_main  # noqa: E402
from scenario_main import check_cluster  # noqa: E402

# Each call gets this long; the caller's `run` bounds the whole process at 20 s.
CALL_TIMEOUT_S = 8.0


def via_list_topics(admin):
    md = admin.list_topics(timeout=CALL_TIMEOUT_S)
    brokers = [(b.id, b.host, b.port) for b in md.brokers.values()]
    problems = check_cluster("list_topics", brokers, md.controller_id, md.cluster_id)
    names = sorted(md.topics)
    print(f"  list_topics: topics ({len(names)}): {names}")
    # The scenario asks only that listing succeeds; per-topic errors are shown.
    for name, topic in md.topics.items():
        if topic.error is not None:
            print(f"  note: topic {name} reported {topic.error}")
    return problems


def via_describe_cluster(admin):
    if not hasattr(admin, "describe_cluster"):
        print(f"  describe_cluster: not in confluent-kafka {confluent_kafka.__version__}, skipped")
        return []
    future = admin.describe_cluster(request_timeout=CALL_TIMEOUT_S)
    result = future.result(timeout=CALL_TIMEOUT_S + 1)
    brokers = [(n.id, n.host, n.port) for n in result.nodes]
    controller_id = result.controller.id if result.controller is not None else None
    return check_cluster("describe_cluster", brokers, controller_id, result.cluster_id)


def scenario_metadata(bootstrap):
    admin = AdminClient({
        "bootstrap.servers": bootstrap,
        "client.id": "compat-confluent-kafka",
        "socket.timeout.ms": int(CALL_TIMEOUT_S * 1000),
    })
    problems = []
    for label, step in (("list_topics", via_list_topics), ("describe_cluster", via_describe_cluster)):
        try:
            problems += step(admin)
        except KafkaException as err:
            problems.append(f"{label}: {err.args[0] if err.args else err}")
        except Exception as err:  # a library bug or timeout is a failure, not a crash
            problems.append(f"{label}: {type(err).__name__}: {err}")
        else:
            continue
        # A broker that failed one call would likely make the next wait out its
        # whole timeout too, pushing the scenario past its bound.
        break
    return problems


# roundtrip: messages per codec, where the middle-offset and timestamp reads start, and
# how long a produce or a read may take before the codec fails.
ROUNDTRIP_COUNT = 5000
ROUNDTRIP_MIDDLE = 2345
ROUNDTRIP_TIMESTAMP_INDEX = 3456
FLUSH_TIMEOUT_S = 8.0
READ_IDLE_S = 5.0

# librdkafka's debug lines: the codec each Produce really used (it may send a batch
# uncompressed when that is smaller), and every request it sends.
PRODUCE_LINE = re.compile(r"Produce MessageSet with (\d+) message\(s\) \(\d+ bytes, ApiVersion (\d+), "
                          r"MsgVersion (\d+),.*, (\w+)\)\s*$")
SENT_LINE = re.compile(r"Sent (\w+?)Request \(v(\d+)")
CODEC_NAMES = {"none": "uncompressed", "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}


class DebugLines(logging.Handler):
    """Keeps the librdkafka debug lines a client hands to its `logger` (during poll)."""

    def __init__(self, name):
        super().__init__(logging.DEBUG)
        self.lines = []
        self.logger = logging.getLogger(name)
        self.logger.addHandler(self)
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False

    def emit(self, record):
        self.lines.append(record.getMessage())

    def requests(self):
        """'Fetch v11 x5, ...': the requests sent, in the order first seen."""
        counts = collections.Counter()
        for line in self.lines:
            m = SENT_LINE.search(line)
            if m:
                counts[f"{m.group(1)} v{m.group(2)}"] += 1
        return ", ".join(f"{name} x{n}" if n > 1 else name for name, n in counts.items())


def client_config(bootstrap, debug_lines, debug):
    return {
        "bootstrap.servers": bootstrap,
        "client.id": "compat-confluent-kafka",
        "socket.timeout.ms": int(CALL_TIMEOUT_S * 1000),
        "debug": debug,
        "logger": debug_lines.logger,
    }


class CodecProducer:
    """One producer per codec, all filling their queues at once so that the waits for
    the new topics' metadata overlap; finish() flushes and checks."""

    def __init__(self, bootstrap, topic, codec, messages):
        self.codec, self.messages = codec, messages
        self.log = DebugLines(f"producer-{codec}")
        self.producer = Producer({
            **client_config(bootstrap, self.log, "msg,protocol"),
            "compression.type": codec,
            "linger.ms": 20,
            "acks": "all",
            "enable.idempotence": False,
            "message.timeout.ms": int(FLUSH_TIMEOUT_S * 1000),
        })
        self.reports = []
        for m in messages:
            self.producer.produce(topic, value=m.value, key=m.key, partition=0, headers=m.headers,
                                  timestamp=m.timestamp, on_delivery=self.on_delivery)

    def on_delivery(self, err, msg):
        self.reports.append((err, msg.offset()))

    def finish(self):
        """Returns (problems, one line about the batches sent)."""
        codec, count = self.codec, len(self.messages)
        left = self.producer.flush(FLUSH_TIMEOUT_S + 2)
        problems = []
        if left:
            problems.append(f"{codec}: {left} messages still undelivered after {FLUSH_TIMEOUT_S + 2:.0f} s")
        errors = collections.Counter(str(err) for err, _ in self.reports if err is not None)
        for err, n in errors.most_common(3):
            problems.append(f"{codec}: delivery failed for {n} messages: {err}")
        offsets = [offset for _, offset in self.reports]
        if not problems and offsets != list(range(count)):
            wrong = next(i for i, o in enumerate(offsets + [None]) if o != i)
            problems.append(f"{codec}: delivery report {wrong} has offset "
                            f"{offsets[wrong] if wrong < len(offsets) else None}, expected {wrong} "
                            "(acknowledged offsets must run 0, 1, 2, ... in send order)")
        sets = [PRODUCE_LINE.search(line) for line in self.log.lines]
        sets = [(int(m.group(1)), f"Produce v{m.group(2)} magic {m.group(3)}", m.group(4)) for m in sets if m]
        wanted = CODEC_NAMES[codec]
        in_codec = sum(n for n, _, c in sets if c == wanted)
        batches = " + ".join(f"{n} {c}" for c, n in collections.Counter(c for _, _, c in sets).items())
        versions = ", ".join(sorted({v for _, v, _ in sets}))
        if not problems and (in_codec < 0.9 * count or any(c not in (wanted, "uncompressed") for _, _, c in sets)):
            problems.append(f"{codec}: librdkafka sent {batches} batches, {in_codec} messages as {wanted} ({versions})")
        return problems, f"{in_codec} of {count} sent as {wanted} in {batches or 'no'} batches ({versions or '-'})"


def read_from(consumer, starts, want, deadline, names):
    """Assigns partition 0 of each topic in starts ({topic: offset}) and reads until each
    has want records or its end. Returns ({topic: [(offset, key, value, headers, ts)]},
    problems); names ({topic: codec}) label the topics in problems."""
    consumer.assign([TopicPartition(topic, 0, offset) for topic, offset in starts.items()])
    records = {topic: [] for topic in starts}
    pending = set(starts)
    problems = []
    idle_since = time.monotonic()
    while pending and not problems:
        if time.monotonic() > deadline or time.monotonic() - idle_since > READ_IDLE_S:
            where = ", ".join(f"{names[t]} at offset {records[t][-1][0] + 1 if records[t] else starts[t]}"
                              for t in sorted(pending))
            problems.append(f"nothing more read in {READ_IDLE_S:.0f} s from {where}")
            break
        for msg in consumer.consume(num_messages=500, timeout=0.2):
            err, topic = msg.error(), msg.topic()
            if err is None:
                if topic in pending:
                    records[topic].append((msg.offset(), msg.key(), msg.value(), msg.headers() or [],
                                           msg.timestamp()[1]))
                    if len(records[topic]) >= want:
                        pending.discard(topic)
                idle_since = time.monotonic()
            elif err.code() == KafkaError._PARTITION_EOF:
                pending.discard(topic)
            else:
                problems.append(f"consume: {err}")
    return records, problems


def consume_all(consumer, topics, messages, deadline):
    """Reads every codec's topic back through assign(): all of it, from the middle, and by
    timestamp, all topics at once. Returns problems."""
    codec_of = {topic: codec for codec, topic in topics.items()}
    records, problems = read_from(consumer, {t: 0 for t in codec_of}, len(messages), deadline, codec_of)
    for codec, topic in topics.items():
        problems += roundtrip.check_records(codec, messages, records[topic])
    if problems:
        return problems

    records, problems = read_from(consumer, {t: ROUNDTRIP_MIDDLE for t in codec_of}, 1, deadline, codec_of)
    for topic, got in records.items():
        first = got[0][0] if got else None
        if first != ROUNDTRIP_MIDDLE:
            problems.append(f"{codec_of[topic]}: assign() at offset {ROUNDTRIP_MIDDLE} read offset {first} first")

    target, expected = roundtrip.timestamp_probe(messages, ROUNDTRIP_TIMESTAMP_INDEX)
    found = consumer.offsets_for_times([TopicPartition(t, 0, target) for t in codec_of], timeout=CALL_TIMEOUT_S)
    for tp in found:
        if tp.error is not None or tp.offset != expected:
            problems.append(f"{codec_of[tp.topic]}: offsets_for_times({target}) gave offset {tp.offset} "
                            f"(error {tp.error}), expected {expected}")
    if problems:
        return problems
    records, problems = read_from(consumer, {tp.topic: tp.offset for tp in found}, 1, deadline, codec_of)
    for topic, got in records.items():
        first = got[0][0] if got else None
        if first != expected:
            problems.append(f"{codec_of[topic]}: reading from offsets_for_times' offset {expected} started at {first}")
    return problems


def scenario_roundtrip(bootstrap):
    stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
    messages = roundtrip.make_messages(ROUNDTRIP_COUNT, seed=7)
    print(f"  {ROUNDTRIP_COUNT} messages per codec to partition 0 of a new topic each (auto-created)")
    topics = {codec: f"compat-roundtrip-confluent-{codec}-{stamp}" for codec in roundtrip.CODECS}
    started = time.monotonic()
    try:
        producers = [CodecProducer(bootstrap, topics[codec], codec, messages) for codec in roundtrip.CODECS]
        problems = []
        for p in producers:
            more, summary = p.finish()
            print(f"  {p.codec}: {summary}")
            problems += more
        print(f"  produced in {time.monotonic() - started:.1f} s; requests of the {producers[0].codec} producer: "
              f"{producers[0].log.requests()}")
        if problems:
            return problems
        log = DebugLines("consumer")
        # librdkafka wants a group.id even for assign(); nothing is committed to it.
        consumer = Consumer({
            **client_config(bootstrap, log, "protocol"),
            "group.id": f"compat-roundtrip-unused-{stamp}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        })
        started = time.monotonic()
        try:
            problems = consume_all(consumer, topics, messages, started + 15)
        finally:
            consumer.close()
        print(f"  read back in {time.monotonic() - started:.1f} s; consumer requests: {log.requests()}")
        return problems
    except KafkaException as err:
        return [f"{err.args[0] if err.args else err}"]


SCENARIOS = {"metadata": scenario_metadata, "roundtrip": scenario_roundtrip}


if __name__ == "__main__":
    sys.exit(scenario_main.main(sys.argv, SCENARIOS, "confluent-kafka", confluent_kafka.__version__,
                                detail=f"librdkafka {libversion()[0]}"))

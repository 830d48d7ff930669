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
import warnings

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewPartitions, NewTopic

# The shared runner lives in ../lib; the scripts run with -I, which leaves this
# folder and PYTHONPATH off sys.path, so the path is found from this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
import exactly_once  # noqa: E402
import group  # noqa: E402
import roundtrip  # noqa: E402
import scenario_main  # noqa: E402
import topic_ready  # noqa: E402
import txn_cluster  # noqa: E402
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


# admin: what a topic is created with, and what the checks expect back. Each step returns
# problems; the steps after a failed one are not run.
ADMIN_CONFIG = {"cleanup.policy": "compact", "retention.ms": "3600000"}
# Kafka 4.4's defaults (unchanged since 4.0), reported with source DEFAULT_CONFIG when nothing overrides them.
DEFAULT_SEGMENT_BYTES = "1073741824"
DEFAULT_RETENTION_MS = "604800000"
DEFAULT_MESSAGE_MAX_BYTES = "1048588"
# Admin changes reach the broker's view through its metadata log on Apache Kafka, so a
# read right after a change may still show the old state for a moment.
SETTLE_S = 5.0
# Timestamps of the records list_offsets searches, after a base: the largest is not the last.
ADMIN_TIMESTAMP_STEPS = (0, 10, 50, 20, 30)


def wait_result(future):
    return future.result(timeout=CALL_TIMEOUT_S + 1)


def kafka_error(err):
    """The KafkaError inside a KafkaException, or None."""
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        return err.args[0]
    return None


def expect_error(label, future, code):
    """Checks that the future fails with KafkaError code; returns problems."""
    want = KafkaError(code).name()
    try:
        got = wait_result(future)
    except KafkaException as err:
        e = kafka_error(err)
        if e is not None and e.code() == code:
            print(f"  {label}: {e.name()} as expected ({e.str()})")
            return []
        return [f"{label}: failed with {err}, expected {want}"]
    return [f"{label}: succeeded ({got!r}), expected {want}"]


def settle(what, attempt):
    """Calls attempt() (returning problems) until it returns none or SETTLE_S passes;
    returns the last problems."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            problems = attempt()
        except KafkaException as err:
            problems = [f"{what}: {err}"]
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.2)


def source_name(entry):
    return ConfigSource(entry.source).name if entry.source is not None else None


def check_configs(label, configs, expected):
    """expected: {name: (value, source name)}; returns problems."""
    problems = []
    for name, (value, source) in expected.items():
        entry = configs.get(name)
        if entry is None:
            problems.append(f"{label}: {name} missing ({len(configs)} configs described)")
            continue
        print(f"  {label}: {name}={entry.value!r} source {source_name(entry)}")
        if entry.value != value or source_name(entry) != source:
            problems.append(f"{label}: {name}={entry.value!r} source {source_name(entry)}, "
                            f"expected {value!r} source {source}")
    return problems


class AdminSteps:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
        self.topic = f"compat-admin-confluent-{stamp}"
        self.records_topic = f"compat-admin-confluent-records-{stamp}"
        self.missing = f"compat-admin-confluent-missing-{stamp}"
        self.log = DebugLines("admin")
        self.admin = AdminClient(client_config(bootstrap, self.log, "protocol"))
        self.created = []
        self.broker_id = None

    def call(self, method, *args, **kwargs):
        with warnings.catch_warnings():
            # 2.x deprecates alter_configs for incremental_alter_configs; both are checked.
            warnings.simplefilter("ignore", DeprecationWarning)
            return getattr(self.admin, method)(*args, request_timeout=CALL_TIMEOUT_S, **kwargs)

    def describe_topic(self, topic):
        resource = ConfigResource("topic", topic)
        return wait_result(self.call("describe_configs", [resource])[resource])

    def partition_count(self, topic):
        # All topics: a Metadata request naming the topic could create it (auto-create).
        md = self.admin.list_topics(timeout=CALL_TIMEOUT_S)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return None
        return len(t.partitions)

    def expect_partitions(self, topic, count):
        def attempt():
            got = self.partition_count(topic)
            return [] if got == count else [f"list_topics({topic}): {got} partitions, expected {count}"]
        problems = settle("list_topics", attempt)
        if not problems:
            print(f"  list_topics: {topic} has {count} partitions")
        return problems

    def create(self):
        futures = self.call("create_topics", [NewTopic(self.topic, num_partitions=3, replication_factor=1,
                                                        config=ADMIN_CONFIG)], operation_timeout=5)
        wait_result(futures[self.topic])
        self.created.append(self.topic)
        print(f"  create_topics: {self.topic} with 3 partitions, {ADMIN_CONFIG}")
        problems = self.expect_partitions(self.topic, 3)

        again = self.call("create_topics", [NewTopic(self.topic, num_partitions=1, replication_factor=1)],
                          operation_timeout=5)
        problems += expect_error("create_topics of an existing topic", again[self.topic],
                                 KafkaError.TOPIC_ALREADY_EXISTS)
        # One replica more than the cluster has brokers.
        replicas = len(self.admin.list_topics(timeout=CALL_TIMEOUT_S).brokers) + 1
        bad_name, too_many = f"{self.missing} bad name!", f"{self.missing}-rf{replicas}"
        futures = self.call("create_topics", [NewTopic(bad_name, num_partitions=1, replication_factor=1),
                                              NewTopic(too_many, num_partitions=1, replication_factor=replicas)],
                            operation_timeout=5)
        problems += expect_error("create_topics of an illegal name", futures[bad_name], KafkaError.TOPIC_EXCEPTION)
        problems += expect_error(f"create_topics with replication factor {replicas}, above the broker count",
                                 futures[too_many], KafkaError.INVALID_REPLICATION_FACTOR)

        futures = self.call("create_topics", [NewTopic(self.missing, num_partitions=1, replication_factor=1)],
                            validate_only=True)
        wait_result(futures[self.missing])
        if self.partition_count(self.missing) is not None:
            problems.append(f"create_topics(validate_only=True) created {self.missing}")
        else:
            print("  create_topics(validate_only=True): succeeded, nothing created")
        return problems

    def describe(self):
        def attempt():
            return check_configs("describe_configs(topic)", self.describe_topic(self.topic), {
                "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG"),
                "retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG"),
                "segment.bytes": (DEFAULT_SEGMENT_BYTES, "DEFAULT_CONFIG"),
            })
        problems = settle("describe_configs(topic)", attempt)

        md = self.admin.list_topics(timeout=CALL_TIMEOUT_S)
        self.broker_id = min(md.brokers)
        resource = ConfigResource("broker", str(self.broker_id))
        configs = wait_result(self.call("describe_configs", [resource])[resource])
        problems += check_configs(f"describe_configs(broker {self.broker_id})", configs, {
            "message.max.bytes": (DEFAULT_MESSAGE_MAX_BYTES, "DEFAULT_CONFIG"),
            "log.segment.bytes": (DEFAULT_SEGMENT_BYTES, "DEFAULT_CONFIG"),
        })

        resource = ConfigResource("topic", self.missing)
        problems += expect_error("describe_configs of a missing topic",
                                 self.call("describe_configs", [resource])[resource],
                                 KafkaError.UNKNOWN_TOPIC_OR_PART)
        return problems

    def alter(self):
        # AlterConfigs replaces the topic's whole set of overrides.
        resource = ConfigResource("topic", self.topic, set_config={"retention.ms": "7200000"})
        wait_result(self.call("alter_configs", [resource])[resource])
        print("  alter_configs: retention.ms=7200000 (and nothing else)")
        problems = settle("describe_configs after alter_configs",
                          lambda: check_configs("describe_configs(topic)", self.describe_topic(self.topic), {
                              "retention.ms": ("7200000", "DYNAMIC_TOPIC_CONFIG"),
                              "cleanup.policy": ("delete", "DEFAULT_CONFIG"),
                          }))
        resource = ConfigResource("topic", self.topic, set_config={"retention.ms": "soon"})
        problems += expect_error("alter_configs retention.ms=soon",
                                 self.call("alter_configs", [resource])[resource], KafkaError.INVALID_CONFIG)
        if problems or not hasattr(self.admin, "incremental_alter_configs"):
            if not problems:
                print(f"  incremental_alter_configs: not in confluent-kafka {confluent_kafka.__version__}, skipped")
            return problems

        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
        resource = ConfigResource("topic", self.topic, incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("max.message.bytes", "200000", incremental_operation=AlterConfigOpType.SET),
        ])
        wait_result(self.call("incremental_alter_configs", [resource])[resource])
        print("  incremental_alter_configs: APPEND cleanup.policy compact, DELETE retention.ms, "
              "SET max.message.bytes=200000")
        problems += settle("describe_configs after incremental_alter_configs",
                           lambda: check_configs("describe_configs(topic)", self.describe_topic(self.topic), {
                               "cleanup.policy": ("delete,compact", "DYNAMIC_TOPIC_CONFIG"),
                               "retention.ms": (DEFAULT_RETENTION_MS, "DEFAULT_CONFIG"),
                               "max.message.bytes": ("200000", "DYNAMIC_TOPIC_CONFIG"),
                           }))
        resource = ConfigResource("topic", self.topic, incremental_configs=[
            ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
        problems += expect_error("incremental_alter_configs SET retention.ms=soon",
                                 self.call("incremental_alter_configs", [resource])[resource],
                                 KafkaError.INVALID_CONFIG)
        return problems

    def partitions(self):
        futures = self.call("create_partitions", [NewPartitions(self.topic, 5)], operation_timeout=5)
        wait_result(futures[self.topic])
        print(f"  create_partitions: {self.topic} to 5")
        problems = self.expect_partitions(self.topic, 5)
        futures = self.call("create_partitions", [NewPartitions(self.topic, 4), NewPartitions(self.missing, 2)],
                            operation_timeout=5)
        problems += expect_error("create_partitions to fewer (4)", futures[self.topic], KafkaError.INVALID_PARTITIONS)
        problems += expect_error("create_partitions of a missing topic", futures[self.missing],
                                 KafkaError.UNKNOWN_TOPIC_OR_PART)
        return problems

    def offsets(self):
        if not hasattr(self.admin, "list_offsets"):
            print(f"  list_offsets, delete_records: not in confluent-kafka {confluent_kafka.__version__}, skipped")
            return []
        from confluent_kafka.admin import OffsetSpec
        futures = self.call("create_topics", [NewTopic(self.records_topic, num_partitions=1, replication_factor=1)],
                            operation_timeout=5)
        wait_result(futures[self.records_topic])
        self.created.append(self.records_topic)
        # In a cluster, each broker learns of the topic a moment after the one that made it.
        topic_ready.wait_for_topic(self.bootstrap, self.records_topic, 1)
        base = int(time.time() * 1000) - 60_000
        stamps = [base + step for step in ADMIN_TIMESTAMP_STEPS]
        producer = Producer({"bootstrap.servers": self.bootstrap, "client.id": "compat-confluent-kafka",
                             "enable.idempotence": False, "acks": "all", "linger.ms": 5,
                             "message.timeout.ms": int(CALL_TIMEOUT_S * 1000)})
        reports = []
        for i, ts in enumerate(stamps):
            producer.produce(self.records_topic, value=f"record {i}".encode(), partition=0, timestamp=ts,
                             on_delivery=lambda err, msg: reports.append((err, msg.offset())))
        producer.flush(CALL_TIMEOUT_S)
        if [r for r in reports if r[0] is None] != [(None, i) for i in range(len(stamps))]:
            return [f"produce to {self.records_topic}: delivery reports {reports}, expected offsets 0..4"]
        print(f"  produced {len(stamps)} records with timestamps base+{list(ADMIN_TIMESTAMP_STEPS)}")

        tp = TopicPartition(self.records_topic, 0)

        def listed(spec):
            return wait_result(self.call("list_offsets", {tp: spec})[tp])

        problems = []
        expected = [("earliest", OffsetSpec.earliest(), 0, None), ("latest", OffsetSpec.latest(), 5, None),
                    ("max_timestamp", OffsetSpec.max_timestamp(), 2, stamps[2]),
                    ("for_timestamp(base+15)", OffsetSpec.for_timestamp(base + 15), 2, stamps[2]),
                    ("for_timestamp(base+60)", OffsetSpec.for_timestamp(base + 60), -1, None)]
        for name, spec, offset, ts in expected:
            got = listed(spec)
            print(f"  list_offsets {name}: offset {got.offset} timestamp {got.timestamp}")
            if got.offset != offset or (ts is not None and got.timestamp != ts):
                problems.append(f"list_offsets {name}: offset {got.offset} timestamp {got.timestamp}, "
                                f"expected offset {offset}" + (f" timestamp {ts}" if ts is not None else ""))

        deleted = wait_result(self.call("delete_records", [TopicPartition(self.records_topic, 0, 2)])[tp])
        print(f"  delete_records before offset 2: low watermark {deleted.low_watermark}")
        if deleted.low_watermark != 2:
            problems.append(f"delete_records before offset 2: low watermark {deleted.low_watermark}, expected 2")
        got = listed(OffsetSpec.earliest())
        print(f"  list_offsets earliest after delete_records: offset {got.offset}")
        if got.offset != 2:
            problems.append(f"list_offsets earliest after delete_records: {got.offset}, expected 2")
        return problems

    def delete(self):
        futures = self.call("delete_topics", list(self.created), operation_timeout=5)
        for topic in self.created:
            wait_result(futures[topic])
        print(f"  delete_topics: {', '.join(self.created)}")
        gone = list(self.created)
        self.created.clear()
        problems = settle("list_topics after delete_topics",
                          lambda: [f"{t} still listed" for t in gone if self.partition_count(t) is not None])
        futures = self.call("delete_topics", [self.missing], operation_timeout=5)
        problems += expect_error("delete_topics of a missing topic", futures[self.missing],
                                 KafkaError.UNKNOWN_TOPIC_OR_PART)
        return problems

    def cleanup(self):
        if self.created:
            try:
                futures = self.call("delete_topics", list(self.created), operation_timeout=5)
                for f in futures.values():
                    wait_result(f)
            except Exception as err:
                print(f"  cleanup: delete_topics {self.created}: {err}")


def scenario_admin(bootstrap):
    steps = AdminSteps(bootstrap)
    order = (steps.create, steps.describe, steps.alter, steps.partitions, steps.offsets, steps.delete)
    started = time.monotonic()
    problems = []
    try:
        for step in order:
            try:
                problems = step()
            except KafkaException as err:
                problems = [f"{step.__name__}: {err.args[0] if err.args else err}"]
            except Exception as err:  # a library error or timeout is a failure, not a crash
                problems = [f"{step.__name__}: {type(err).__name__}: {err}"]
            if problems:
                break
    finally:
        steps.cleanup()
        steps.admin.poll(0)  # hands the debug lines over to the logger
        print(f"  {time.monotonic() - started:.1f} s; admin requests: {steps.log.requests()}")
    return problems


class GroupRun:
    """The group scenario (see lib/group.py) with confluent-kafka consumers in one thread,
    polled in turn; librdkafka runs the group protocol in its own threads, and the
    rebalance callbacks (on_assign, on_revoke, on_lost) run inside a member's poll.

    On the classic protocol (assignor given) the assignor is set by
    partition.assignment.strategy (group.ASSIGNORS: range, then roundrobin, one run each;
    both eager), and each callback names the member's whole assignment. With assignor None
    the same plan runs on the consumer rebalance protocol (group.protocol=consumer, KIP-848):
    the broker assigns with its default assignor and sets the session and heartbeat
    interval, and the callbacks name only the partitions added or taken away."""

    def __init__(self, bootstrap, assignor):
        self.bootstrap = bootstrap
        self.assignor = assignor
        self.consumer_protocol = assignor is None
        stamp = f"{int(time.time() * 1000)}-{os.getpid()}-{assignor or 'consumer'}"
        self.topic = f"compat-group-confluent-{stamp}"
        self.group_id = f"compat-group-confluent-{stamp}"
        self.check = group.GroupCheck()
        self.members = {}  # name -> Consumer, in the order started
        self.logs = {}  # name -> DebugLines
        self.producer = None

    def create_topic(self):
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "client.id": "compat-confluent-kafka",
                             "socket.timeout.ms": int(CALL_TIMEOUT_S * 1000)})
        futures = admin.create_topics([NewTopic(self.topic, num_partitions=group.PARTITIONS, replication_factor=1)],
                                      operation_timeout=5, request_timeout=CALL_TIMEOUT_S)
        wait_result(futures[self.topic])
        # In a cluster, each broker learns of the topic a moment after the one that made it.
        topic_ready.wait_for_topic(self.bootstrap, self.topic, group.PARTITIONS)
        self.check.log(f"topic {self.topic} with {group.PARTITIONS} partitions; group {self.group_id}")

    def produce(self, start, end):
        """Keyed messages, partitioned by librdkafka's default (consistent_random, a hash of the key)."""
        if self.producer is None:
            self.producer = Producer({"bootstrap.servers": self.bootstrap, "client.id": "compat-confluent-kafka",
                                      "enable.idempotence": False, "acks": "all", "linger.ms": 5,
                                      "message.timeout.ms": int(CALL_TIMEOUT_S * 1000)})
        failures = []

        def delivered(err, msg, i):
            if err is not None:
                failures.append(f"message {i}: {err}")
            else:
                self.check.produce(i, msg.partition(), msg.offset())

        for i in range(start, end):
            self.producer.produce(self.topic, key=group.message_key(i), value=group.message_value(i),
                                  on_delivery=lambda err, msg, i=i: delivered(err, msg, i))
        left = self.producer.flush(CALL_TIMEOUT_S)
        if failures or left:
            raise group.Failure(f"produce {start}..{end - 1}: {left} undelivered; {failures[:3]}")
        self.check.log(f"produced messages {start}..{end - 1}")

    def start(self, name):
        log = DebugLines(f"group-{name}")
        self.logs[name] = log
        if self.consumer_protocol:
            # librdkafka refuses the classic-only settings (session.timeout.ms,
            # heartbeat.interval.ms, partition.assignment.strategy) with this protocol:
            # the broker decides them.
            protocol = {"group.protocol": "consumer"}
        else:
            protocol = {
                "partition.assignment.strategy": self.assignor,
                "session.timeout.ms": group.SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": group.HEARTBEAT_INTERVAL_MS,
            }
        consumer = Consumer({
            **client_config(self.bootstrap, log, "protocol"),
            "group.id": self.group_id,
            **protocol,
            "max.poll.interval.ms": group.REBALANCE_TIMEOUT_MS,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        })
        check = self.check
        incremental = self.consumer_protocol

        def mine(partitions):
            return {tp.partition for tp in partitions if tp.topic == self.topic}

        def assigned(_, partitions):
            if incremental:
                check.assign(name, check.holds(name) | mine(partitions),
                             f"assigned {sorted(mine(partitions))}; holds")
            else:
                check.assign(name, mine(partitions))

        def taken(partitions, why):
            left = check.holds(name) - mine(partitions) if incremental else set()
            check.assign(name, left, f"{why} {[tp.partition for tp in partitions]}; holds")

        def revoked(_, partitions):
            taken(partitions, "revoked")

        def lost(_, partitions):
            taken(partitions, "lost")

        consumer.subscribe([self.topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
        self.members[name] = consumer

    def poll(self):
        """One turn: each member polls briefly and synchronously commits what it read."""
        for name, consumer in list(self.members.items()):
            last = {}
            for msg in consumer.consume(num_messages=500, timeout=0.05):
                if msg.error() is not None:
                    self.check.problem(f"{name} consume: {msg.error()}")
                    continue
                self.check.consume(name, msg.partition(), msg.offset(), msg.key(), msg.value())
                last[msg.partition()] = msg.offset()
            if last:
                try:
                    consumer.commit(offsets=[TopicPartition(self.topic, p, o + 1) for p, o in last.items()],
                                    asynchronous=False)
                except KafkaException as err:
                    self.check.problem(f"{name} commit {last}: {err}")

    def wait(self, what, timeout_s, cond, members):
        group.wait_for(self.check, what, timeout_s, cond, lambda: self.check.describe(members), self.poll)

    def consume_step(self, step, start, end, members):
        group.wait_for(self.check, f"{step}: reading messages {start}..{end - 1}", group.CONSUME_TIMEOUT_S,
                       lambda: self.check.count_read(start, end) == end - start,
                       lambda: f"{self.check.count_read(start, end)} read; {self.check.describe(members)}", self.poll)
        self.check.expect_step(step, start, end, members)

    def leave(self, name):
        # Everything read was committed in poll(); close() revokes (on_revoke) and sends LeaveGroup.
        self.members.pop(name).close()
        self.check.assign(name, [], "left the group; holds")

    def run(self):
        check = self.check
        self.create_topic()
        self.start("A")
        self.start("B")
        join_timeout_s = group.CONSUMER_JOIN_TIMEOUT_S if self.consumer_protocol else group.JOIN_TIMEOUT_S
        self.wait("A and B holding all partitions between them", join_timeout_s,
                  lambda: check.split(["A", "B"]), ["A", "B"])
        check.log(f"{self.assignor or 'broker-side assignor'}: A holds {sorted(check.holds('A'))}, "
                  f"B holds {sorted(check.holds('B'))}")
        if self.consumer_protocol:
            # The broker's default assignor (uniform) balances the partitions.
            if len(check.holds("A")) != len(check.holds("B")):
                raise group.Failure(f"the broker split the partitions unevenly: {check.describe(['A', 'B'])}")
        else:
            wrong = group.expected_split(self.assignor, check.holds("A"), check.holds("B"))
            if wrong:
                raise group.Failure(wrong)
        self.produce(0, group.FIRST)
        self.consume_step("A and B", 0, group.FIRST, ["A", "B"])
        check.expect_spread()

        left_at = time.monotonic()
        self.leave("B")
        leave_timeout_s = group.CONSUMER_LEAVE_TIMEOUT_S if self.consumer_protocol else group.SESSION_TIMEOUT_MS / 1000
        self.wait("A holding all partitions after B left", leave_timeout_s,
                  lambda: len(check.holds("A")) == group.PARTITIONS, ["A"])
        check.log(f"A holds all {group.PARTITIONS} partitions {(time.monotonic() - left_at) * 1000:.0f} ms "
                  "after B started leaving")
        self.produce(group.FIRST, group.FIRST + group.SECOND)
        self.consume_step("A alone", group.FIRST, group.FIRST + group.SECOND, ["A"])

        self.leave("A")
        end = group.FIRST + group.SECOND + group.THIRD
        self.produce(group.FIRST + group.SECOND, end)
        self.start("C")
        if self.consumer_protocol:
            # Alone in the group, C gets every partition at its first heartbeat's answer, but
            # librdkafka may take more than CONSUME_TIMEOUT_S to join and fetch the offsets.
            self.wait("C holding all partitions", join_timeout_s,
                      lambda: len(check.holds("C")) == group.PARTITIONS, ["C"])
        self.consume_step("C after the commits", group.FIRST + group.SECOND, end, ["C"])
        # A partition C wrongly read from its start would show up as old messages by now.
        settle_until = time.monotonic() + 1.0
        while time.monotonic() < settle_until:
            self.poll()
        check.expect_step("whole run", 0, end, ["A", "B", "C"])
        if len(check.holds("C")) != group.PARTITIONS:
            raise group.Failure(f"{check.describe(['C'])}, expected all {group.PARTITIONS} partitions")

    def close(self):
        for name, consumer in self.members.items():
            try:
                consumer.close()
            except Exception as err:
                print(f"  cleanup: closing {name}: {type(err).__name__}: {err}")
        if self.producer is not None:
            self.producer.flush(1)
        for name, log in self.logs.items():
            print(f"  {name} requests: {log.requests()}")


def group_once(bootstrap, assignor):
    run = GroupRun(bootstrap, assignor)
    started = time.monotonic()
    print(f"  -- partition.assignment.strategy={assignor}" if assignor else "  -- group.protocol=consumer")
    try:
        run.run()
        return []
    except group.Failure as err:
        return [str(err)]
    except KafkaException as err:
        return [f"{err.args[0] if err.args else err}"]
    except Exception as err:  # a library error or timeout is a failure, not a crash
        return [f"{type(err).__name__}: {err}"]
    finally:
        run.close()
        print(f"  {assignor or 'group.protocol=consumer'}: {time.monotonic() - started:.1f} s")


def scenario_group(bootstrap):
    """The group plan once per assignor in group.ASSIGNORS; the first failure stops it."""
    for assignor in group.ASSIGNORS:
        problems = group_once(bootstrap, assignor)
        if problems:
            return [f"{assignor}: {p}" for p in problems]
    return []


def scenario_group_consumer(bootstrap):
    """The group plan once on the consumer rebalance protocol (KIP-848), with the broker's
    default assignor."""
    return group_once(bootstrap, None)


# librdkafka's consumer protocol is generally available from 2.12.0 on; older ones (Debian's
# 2.0.2) do not have it, and the scenario is not offered there.
CONSUMER_PROTOCOL_LIBRDKAFKA = 0x020C0000


# txn and idempotent-cut: partitions of their topics; how long reading may go on after the
# expected records are in, to catch duplicates and extras arriving late.
EO_PARTITIONS = 3
EO_SETTLE_S = 1.0
EO_READ_S = 10.0


def create_topic(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "compat-confluent-kafka",
                         "socket.timeout.ms": int(CALL_TIMEOUT_S * 1000)})
    wait_result(admin.create_topics([NewTopic(topic, partitions, 1)],
                                    operation_timeout=CALL_TIMEOUT_S)[topic])
    # The new topic's leaders may take a moment to be known to every client.
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=CALL_TIMEOUT_S)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions and \
                all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{topic} has no leaders for its {partitions} partitions after {CALL_TIMEOUT_S} s")


def read_topic(bootstrap, topic, isolation, want, label):
    """Reads every partition of topic from the beginning, without a group (assign), in the
    given isolation level, until want records are in and EO_SETTLE_S passes without more.
    Returns {partition: [(offset, value)]}."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "client.id": "compat-confluent-kafka",
        "group.id": f"{topic}-{isolation}",  # required by the API; nothing is committed
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "fetch.wait.max.ms": 100,
        "socket.timeout.ms": int(CALL_TIMEOUT_S * 1000),
    })
    read = {p: [] for p in range(EO_PARTITIONS)}
    count = 0
    try:
        consumer.assign([TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(EO_PARTITIONS)])
        deadline = time.monotonic() + EO_READ_S
        last_at = time.monotonic()
        while count < want or time.monotonic() - last_at < EO_SETTLE_S:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{label}: {count} of {want} records read in {EO_READ_S:.0f} s")
            for msg in consumer.consume(num_messages=1000, timeout=0.1):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(msg.error())
                read.setdefault(msg.partition(), []).append((msg.offset(), msg.value().decode()))
                count += 1
                last_at = time.monotonic()
    finally:
        consumer.close()
    print(f"  {label}: {count} records read")
    return read


class Deliveries:
    """Delivery reports: value -> (partition, offset), and the errors."""

    def __init__(self):
        self.acked = {}
        self.errors = collections.Counter()

    def __call__(self, err, msg):
        if err is not None:
            self.errors[str(err)] += 1
        else:
            self.acked[msg.value().decode()] = (msg.partition(), msg.offset())


# txn: TXN_COUNT transactions of TXN_PER_PARTITION records to each of the 3 partitions; those
# in TXN_ABORTED are flushed (so their records are in the log) and aborted, the others committed.
TXN_COUNT = 8
TXN_PER_PARTITION = 5
TXN_ABORTED = {1, 4, 6}


def scenario_txn(bootstrap):
    """A transactional producer commits some transactions and aborts others over all 3
    partitions of a fresh topic; read_committed must then see exactly the committed records,
    read_uncommitted all of them, each once and in order per partition."""
    stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
    topic = f"compat-txn-confluent-{stamp}"
    problems = []
    try:
        create_topic(bootstrap, topic, EO_PARTITIONS)
        deliveries = Deliveries()
        producer = Producer({
            "bootstrap.servers": bootstrap,
            "client.id": "compat-confluent-kafka",
            "transactional.id": f"compat-txn-confluent-{stamp}",
            "socket.timeout.ms": int(CALL_TIMEOUT_S * 1000),
            "linger.ms": 5,
        })
        producer.init_transactions(CALL_TIMEOUT_S)
        order = {p: [] for p in range(EO_PARTITIONS)}
        committed, aborted = set(), set()
        for t in range(TXN_COUNT):
            producer.begin_transaction()
            values = []
            for k in range(TXN_PER_PARTITION):
                for p in range(EO_PARTITIONS):
                    value = f"t{t}-p{p}-{k}"
                    values.append(value)
                    order[p].append(value)
                    producer.produce(topic, value=value.encode(), partition=p, on_delivery=deliveries)
            # Flushed before an abort too, so the aborted records are really in the log.
            left = producer.flush(CALL_TIMEOUT_S)
            if left:
                return [f"transaction {t}: {left} records not delivered after {CALL_TIMEOUT_S} s"]
            if t in TXN_ABORTED:
                producer.abort_transaction(CALL_TIMEOUT_S)
                aborted.update(values)
            else:
                producer.commit_transaction(CALL_TIMEOUT_S)
                committed.update(values)
        for err, n in deliveries.errors.most_common(3):
            problems.append(f"delivery failed for {n} records: {err}")
        print(f"  {TXN_COUNT} transactions on {topic}: {len(committed)} records committed, "
              f"{len(aborted)} aborted (transactions {sorted(TXN_ABORTED)})")
        offsets = {v: o for v, (_, o) in deliveries.acked.items()}
        by_committed = read_topic(bootstrap, topic, "read_committed", len(committed), "read_committed")
        by_all = read_topic(bootstrap, topic, "read_uncommitted", len(committed) + len(aborted), "read_uncommitted")
        for p, read in sorted(by_committed.items()):
            problems += exactly_once.check_partition(f"read_committed partition {p}", order.get(p, []), committed,
                                                     read, allowed=committed, offsets=offsets)
        for p, read in sorted(by_all.items()):
            problems += exactly_once.check_partition(f"read_uncommitted partition {p}", order.get(p, []),
                                                     committed | aborted, read, offsets=offsets)
        if not problems:
            print(f"  read_committed: the {len(committed)} committed records, each once, in order; "
                  f"read_uncommitted: all {len(committed) + len(aborted)}")
    except KafkaException as err:
        problems.append(f"{err.args[0] if err.args else err}")
    except Exception as err:  # a library error or timeout is a failure, not a crash
        problems.append(f"{type(err).__name__}: {err}")
    return problems


# idempotent-cut: records produced per burst (round-robin over the partitions), the cuts
# wanted, and the most time spent producing.
CUT_BURST = 200
CUT_WANTED = 10
CUT_PRODUCE_S = 15.0
CUT_FLUSH_S = 15.0


def scenario_idempotent_cut(bootstrap):
    """An idempotent producer sends numbered records through the cut proxy
    (lib/cut-proxy.mjs), which cuts its connections while Produce requests are in flight;
    read back directly from the broker, no record may be there twice, every acknowledged
    one must be at its acknowledged offset, in production order per partition."""
    stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
    topic = f"compat-cut-confluent-{stamp}"
    problems = []
    proxy = None
    try:
        create_topic(bootstrap, topic, EO_PARTITIONS)
        proxy = exactly_once.CutProxy()
        print(f"  producing to {topic} through the cut proxy at {proxy.bootstrap}")
        deliveries = Deliveries()
        producer = Producer({
            "bootstrap.servers": proxy.bootstrap,
            "client.id": "compat-confluent-kafka-cut",
            "enable.idempotence": True,
            "linger.ms": 5,
            "socket.timeout.ms": 5000,
            "message.timeout.ms": int((CUT_PRODUCE_S + CUT_FLUSH_S) * 1000),
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
        })
        order = {p: [] for p in range(EO_PARTITIONS)}
        started = time.monotonic()
        sent = 0
        while proxy.cuts() < CUT_WANTED and time.monotonic() - started < CUT_PRODUCE_S:
            for _ in range(CUT_BURST):
                p, value = sent % EO_PARTITIONS, f"r-{sent}"
                order[p].append(value)
                producer.produce(topic, value=value.encode(), partition=p, on_delivery=deliveries)
                sent += 1
            producer.poll(0.02)
        proxy.stop_cutting()
        left = producer.flush(CUT_FLUSH_S)
        producer = None  # closes its connections before the proxy goes away
        stats = proxy.stop()
        proxy = None
        print(f"  {sent} records sent in {time.monotonic() - started:.1f} s, {len(deliveries.acked)} acknowledged; "
              f"{stats['text']}")
        if stats.get("cuts", 0) == 0:
            problems.append("no connection was cut while a Produce was in flight: the scenario tested nothing")
        if left:
            problems.append(f"{left} records still undelivered {CUT_FLUSH_S:.0f} s after producing stopped")
        for err, n in deliveries.errors.most_common(3):
            problems.append(f"delivery failed for {n} records despite idempotent retries: {err}")
        if problems:
            return problems
        acked = set(deliveries.acked)
        offsets = {v: o for v, (_, o) in deliveries.acked.items()}
        by_partition = read_topic(bootstrap, topic, "read_uncommitted", len(acked), "read back")
        for p, read in sorted(by_partition.items()):
            problems += exactly_once.check_partition(f"partition {p}", order.get(p, []), acked, read, offsets=offsets)
        if not problems:
            print(f"  each of the {len(acked)} acknowledged records exactly once, at its acknowledged offset, in order")
    except KafkaException as err:
        problems.append(f"{err.args[0] if err.args else err}")
    except Exception as err:  # a library error or timeout is a failure, not a crash
        problems.append(f"{type(err).__name__}: {err}")
    finally:
        if proxy is not None:
            proxy.stop()
    return problems


# txn-cluster: see lib/txn_cluster.py for the plan. librdkafka has no FindCoordinator call
# in the admin API of both builds, so the coordinators are computed from the leaders of the
# internal topics' partitions.


class TxnCluster:
    """One run of txn-cluster; problems and summary lines gather as it goes."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.deadline = time.monotonic() + txn_cluster.BUDGET_S
        stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
        self.prefix = f"compat-txnc-confluent-{stamp}"
        self.topic_in = f"{self.prefix}-in"
        self.topic_out = f"{self.prefix}-out"
        self.problems = []
        self.summary = []
        self.admin = AdminClient(self.config())
        # {topic: {partition: highest offset acknowledged}}
        self.last_offsets = collections.defaultdict(dict)
        self.delivery_errors = collections.Counter()

    def delivered(self, err, msg):
        """Delivery report: keeps the highest offset acknowledged per partition, and errors."""
        if err is not None:
            self.delivery_errors[str(err)] += 1
            return
        last = self.last_offsets[msg.topic()]
        last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())

    def config(self, **extra):
        conf = {"bootstrap.servers": self.bootstrap, "client.id": "compat-confluent-kafka",
                "socket.timeout.ms": int(CALL_TIMEOUT_S * 1000)}
        conf.update({k.replace("_", "."): v for k, v in extra.items()})
        return conf

    def until(self, seconds):
        """A deadline seconds from now, never past the scenario's."""
        if time.monotonic() >= self.deadline:
            raise RuntimeError(f"the scenario's budget of {txn_cluster.BUDGET_S:.0f} s is used up")
        return min(time.monotonic() + seconds, self.deadline)

    def leaders(self, topic, partitions=None):
        """{partition: leader} once every partition of topic has a leader (bounded)."""
        deadline = self.until(txn_cluster.WAIT_S)
        seen = {}
        while True:
            t = self.admin.list_topics(topic, timeout=CALL_TIMEOUT_S).topics.get(topic)
            if t is not None and t.error is None and t.partitions:
                seen = {p.id: p.leader for p in t.partitions.values()}
                if (partitions is None or len(seen) == partitions) and all(b >= 0 for b in seen.values()):
                    return dict(sorted(seen.items()))
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic}: expected a leader for each partition within {txn_cluster.WAIT_S:.0f} s, "
                                   f"saw {seen or (t.error if t is not None else 'no such topic')}")
            time.sleep(0.2)

    def run(self):
        """The whole plan; what fails goes to self.problems."""
        brokers = self.admin.list_topics(timeout=CALL_TIMEOUT_S).brokers
        if len(brokers) < txn_cluster.BROKERS:
            print(f"  n/a: the cluster has {len(brokers)} broker(s); txn-cluster needs {txn_cluster.BROKERS}")
            sys.exit(scenario_main.EXIT_NOT_IMPLEMENTED)
        print(f"  brokers: {', '.join(f'{b.id}@{b.host}:{b.port}' for b in sorted(brokers.values(), key=lambda b: b.id))}")

        # 1. The topics, and IN led by three brokers.
        futures = self.admin.create_topics(
            [NewTopic(self.topic_in, txn_cluster.PARTITIONS, txn_cluster.REPLICATION, config=txn_cluster.IN_CONFIG),
             NewTopic(self.topic_out, txn_cluster.PARTITIONS, txn_cluster.REPLICATION)],
            operation_timeout=CALL_TIMEOUT_S)
        for f in futures.values():
            wait_result(f)
        in_leaders = self.leaders(self.topic_in, txn_cluster.PARTITIONS)
        out_leaders = self.leaders(self.topic_out, txn_cluster.PARTITIONS)
        print(f"  {self.topic_in} leaders (partition: broker): {in_leaders}")
        print(f"  {self.topic_out} leaders (partition: broker): {out_leaders}")
        if len(set(in_leaders.values())) != txn_cluster.PARTITIONS:
            self.problems.append(f"{self.topic_in}: expected its {txn_cluster.PARTITIONS} partitions led by "
                                 f"{txn_cluster.PARTITIONS} different brokers, saw leaders {in_leaders}")
            return

        # 2. T and G with coordinators on two brokers.
        picked = self.pick_ids()
        if picked is None:
            return
        txn_id, group_id, txn_coordinator, group_coordinator = picked
        third = next(b for b in in_leaders.values() if b not in (txn_coordinator, group_coordinator))
        print(f"  transaction coordinator of {txn_id}: broker {txn_coordinator}")
        print(f"  group coordinator of {group_id}: broker {group_coordinator}")
        print(f"  third broker {third} leads {self.topic_in} partition {txn_cluster.led_by(in_leaders, third)} "
              f"and {self.topic_out} partition(s) {txn_cluster.led_by(out_leaders, third)}")

        # 3. A committed, B aborted, C committed.
        producer = Producer(self.config(transactional_id=txn_id, enable_idempotence=True, acks="all", linger_ms=5))
        producer.init_transactions(CALL_TIMEOUT_S)
        for txn, commits in txn_cluster.TXNS:
            producer.begin_transaction()
            for k in range(txn_cluster.PER_PARTITION):
                for p in range(txn_cluster.PARTITIONS):
                    producer.produce(self.topic_in, value=txn_cluster.value(txn, p, k).encode(), partition=p,
                                     on_delivery=self.delivered)
            # Flushed before the abort too, so B's records are really in the log.
            left = producer.flush(CALL_TIMEOUT_S)
            if left:
                self.problems.append(f"transaction {txn}: {left} records not delivered after {CALL_TIMEOUT_S} s")
                return
            if commits:
                producer.commit_transaction(CALL_TIMEOUT_S)
            else:
                producer.abort_transaction(CALL_TIMEOUT_S)
        print(f"  transactions on {self.topic_in}: A committed, B aborted, C committed "
              f"({txn_cluster.PER_PARTITION} records to each partition each)")

        # 4. IN as each isolation level sees it.
        committed_in = txn_cluster.input_values(committed_only=True)
        all_in = txn_cluster.input_values(committed_only=False)
        in_end = self.settled_end(self.topic_in)
        print(f"  {self.topic_in} end offsets: {in_end}")
        in_committed = self.read_all(self.topic_in, "read_committed", in_end)
        in_all = self.read_all(self.topic_in, "read_uncommitted", in_end)
        self.problems += txn_cluster.compare(f"{self.topic_in} read_committed", committed_in, in_committed)
        self.problems += txn_cluster.compare(f"{self.topic_in} read_uncommitted", all_in, in_all)
        self.summary.append(f"{self.topic_in} read_committed {txn_cluster.count(in_committed)}/"
                            f"{txn_cluster.count(committed_in)}, read_uncommitted {txn_cluster.count(in_all)}/"
                            f"{txn_cluster.count(all_in)}")

        # 5. Consume-transform-produce.
        copied = self.copy(producer, group_id, in_end)
        producer = None  # librdkafka's producer has no close: dropping it ends it
        if copied is None:
            return
        written, aborted_records, transactions = copied

        # 6. OUT, and the group's offsets.
        expected_out = {p: [txn_cluster.transform(v) for v in vs] for p, vs in committed_in.items()}
        out_end = self.settled_end(self.topic_out)
        out_committed = self.read_all(self.topic_out, "read_committed", out_end)
        out_all = self.read_all(self.topic_out, "read_uncommitted", out_end)
        self.problems += txn_cluster.compare(f"{self.topic_out} read_committed", expected_out, out_committed)
        self.problems += txn_cluster.compare(f"{self.topic_out} read_uncommitted (the aborted copies included)",
                                             written, out_all)
        self.summary.append(f"{self.topic_out} read_committed {txn_cluster.count(out_committed)}/"
                            f"{txn_cluster.count(expected_out)}, read_uncommitted {txn_cluster.count(out_all)}/"
                            f"{txn_cluster.count(written)} ({aborted_records} aborted copies)")
        at_end = 0
        for p, got in sorted(self.group_offsets(group_id).items()):
            print(f"  group {group_id} {self.topic_in} partition {p}: committed {got}, end offset {in_end[p]}")
            if got == in_end[p]:
                at_end += 1
            else:
                self.problems.append(f"group {group_id} partition {p} of {self.topic_in}: expected committed offset "
                                     f"{in_end[p]} (the end offset), saw {got}")
        self.summary.append(f"group offsets at the end {at_end}/{txn_cluster.PARTITIONS}")
        self.summary.append(f"{transactions} copy transactions committed, 1 aborted")
        for err, n in self.delivery_errors.most_common(3):
            self.problems.append(f"delivery failed for {n} records: {err}")

    def pick_ids(self):
        """(T, G, T's coordinator, G's coordinator), coordinators on two brokers, or None."""
        # The internal topics exist once something asked for a coordinator of their kind.
        probe = Producer(self.config(transactional_id=f"{self.prefix}-probe"))
        probe.init_transactions(CALL_TIMEOUT_S)
        probe = None
        consumer = Consumer(self.config(group_id=f"{self.prefix}-probe", enable_auto_commit=False))
        try:
            consumer.committed([TopicPartition(self.topic_in, 0)], timeout=CALL_TIMEOUT_S)
        finally:
            consumer.close()
        txn_leaders = self.leaders("__transaction_state")
        group_leaders = self.leaders("__consumer_offsets")
        print(f"  __transaction_state: {len(txn_leaders)} partitions, __consumer_offsets: {len(group_leaders)}")
        picked = txn_cluster.pick_ids(
            self.prefix,
            lambda t: txn_leaders[txn_cluster.coordinator_partition(t, len(txn_leaders))],
            lambda g: group_leaders[txn_cluster.coordinator_partition(g, len(group_leaders))])
        if picked is None:
            self.problems.append(f"none of {txn_cluster.CANDIDATES} candidate pairs of ids has its transaction and "
                                 "group coordinators on two different brokers")
        return picked

    def settled_end(self, topic):
        """{partition: end offset} of topic for a read_committed reader, once past the last
        offset acknowledged in each partition: a transaction is decided on a partition only
        once its marker is in, so before that the last stable offset stops at its first record."""
        consumer = Consumer(self.config(group_id=f"{topic}-end", isolation_level="read_committed"))
        last = self.last_offsets[topic]
        end = {}
        try:
            deadline = self.until(txn_cluster.WAIT_S)
            while True:
                end = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=CALL_TIMEOUT_S)[1]
                       for p in range(txn_cluster.PARTITIONS)}
                if all(end[p] > o for p, o in last.items()):
                    return end
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{topic}: expected the last stable offsets past the last records written "
                                       f"{dict(sorted(last.items()))} within {txn_cluster.WAIT_S:.0f} s "
                                       f"(the transactions decided), saw {end}")
                time.sleep(0.1)
        finally:
            consumer.close()

    def read_all(self, topic, isolation, end):
        """Reads every partition of topic without joining a group, in the given isolation
        level, from the beginning until the consumer's positions reach end ({partition:
        offset}); returns {partition: [values]} below those offsets."""
        consumer = Consumer(self.config(
            group_id=f"{topic}-{isolation}",  # required by the API; nothing is committed
            enable_auto_commit=False, isolation_level=isolation, fetch_wait_max_ms=100))
        values = {p: [] for p in range(txn_cluster.PARTITIONS)}
        tps = [TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(txn_cluster.PARTITIONS)]
        at = {}
        try:
            consumer.assign(tps)
            deadline = self.until(txn_cluster.WAIT_S)
            while any(at.get(p, -1) < o for p, o in end.items()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{topic} {isolation}: expected to reach end offsets {end} within "
                                       f"{txn_cluster.WAIT_S:.0f} s, stopped at {at}")
                for msg in consumer.consume(num_messages=1000, timeout=0.1):
                    if msg.error() is not None:
                        raise KafkaException(msg.error())
                    if msg.offset() < end[msg.partition()]:
                        values[msg.partition()].append(msg.value().decode())
                at = {tp.partition: tp.offset for tp in consumer.position(tps)}
        finally:
            consumer.close()
        print(f"  {topic} {isolation}: {txn_cluster.count(values)} records up to end offsets {end}")
        return values

    def copy(self, producer, group_id, in_end):
        """Step 5: a consumer of IN in group G; each poll's records go upper-cased to the same
        partition of OUT in one transaction of producer T, with the consumer's positions. The
        first transaction carrying records is aborted after its records are written and the
        consumer rewound to the offsets before that poll. Ends once the transactions committed
        IN's end offsets; returns ({partition: values written to OUT, aborted included},
        aborted records, transactions committed), or None with a problem."""
        consumer = Consumer(self.config(
            group_id=group_id, isolation_level="read_committed", enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=1000,
            max_poll_interval_ms=30000, fetch_wait_max_ms=100))
        written = {p: [] for p in range(txn_cluster.PARTITIONS)}
        committed = {}
        aborted_records = 0
        transactions = 0
        deadline = self.until(txn_cluster.COPY_S)
        try:
            consumer.subscribe([self.topic_in])
            while committed != in_end:
                if time.monotonic() > deadline:
                    self.problems.append(f"copy loop: expected group {group_id} to commit the end offsets {in_end} "
                                         f"through transactions, reached {committed} ({transactions} committed)")
                    return None
                msgs = []
                for msg in consumer.consume(num_messages=txn_cluster.MAX_POLL_RECORDS, timeout=0.2):
                    if msg.error() is not None:
                        raise KafkaException(msg.error())
                    msgs.append(msg)
                positions = {tp.partition: tp.offset for tp in consumer.position(consumer.assignment())
                             if tp.offset >= 0}
                # A poll without records may still move a position past a transaction marker.
                moved = any(o > committed.get(p, 0) for p, o in positions.items())
                if not msgs and not moved:
                    continue
                producer.begin_transaction()
                batch = {}
                first = {}
                for msg in msgs:
                    v = txn_cluster.transform(msg.value().decode())
                    producer.produce(self.topic_out, value=v.encode(), partition=msg.partition(),
                                     on_delivery=self.delivered)
                    batch.setdefault(msg.partition(), []).append(v)
                    first.setdefault(msg.partition(), msg.offset())
                producer.send_offsets_to_transaction(
                    [TopicPartition(self.topic_in, p, o) for p, o in sorted(positions.items())],
                    consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
                left = producer.flush(CALL_TIMEOUT_S)
                if left:
                    self.problems.append(f"copy loop: {left} records not delivered after {CALL_TIMEOUT_S} s")
                    return None
                for p, vs in batch.items():
                    written[p] += vs
                if msgs and aborted_records == 0:
                    producer.abort_transaction(CALL_TIMEOUT_S)
                    aborted_records = len(msgs)
                    for p, o in first.items():
                        consumer.seek(TopicPartition(self.topic_in, p, o))
                    print(f"  aborted the transaction of {len(msgs)} records ({batch}), rewound to {first}")
                    continue
                producer.commit_transaction(CALL_TIMEOUT_S)
                transactions += 1
                committed.update(positions)
                print(f"  committed {len(msgs)} records, offsets {dict(sorted(positions.items()))}")
        finally:
            consumer.close()
        return written, aborted_records, transactions

    def group_offsets(self, group_id):
        """{partition: offset} of IN that group G has committed (OffsetFetch), -1001 for none."""
        consumer = Consumer(self.config(group_id=group_id, enable_auto_commit=False))
        try:
            got = consumer.committed([TopicPartition(self.topic_in, p) for p in range(txn_cluster.PARTITIONS)],
                                     timeout=CALL_TIMEOUT_S)
        finally:
            consumer.close()
        return {tp.partition: tp.offset for tp in got}


def scenario_txn_cluster(bootstrap):
    """Transactions over a partition leader, a transaction coordinator and a group
    coordinator on three different brokers (lib/txn_cluster.py); exits 3 below 3 brokers."""
    run = TxnCluster(bootstrap)
    try:
        run.run()
    except KafkaException as err:
        run.problems.append(f"{err.args[0] if err.args else err}")
    except Exception as err:  # a library error or timeout is a failure, not a crash
        run.problems.append(f"{type(err).__name__}: {err}")
    for line in run.summary:
        print(f"  summary: {line}")
    return run.problems


SCENARIOS = {"metadata": scenario_metadata, "roundtrip": scenario_roundtrip, "admin": scenario_admin,
             "group": scenario_group, "txn": scenario_txn, "idempotent-cut": scenario_idempotent_cut}

SCENARIOS["txn-cluster"] = scenario_txn_cluster
if libversion()[1] >= CONSUMER_PROTOCOL_LIBRDKAFKA:
    SCENARIOS["group-consumer"] = scenario_group_consumer

if __name__ == "__main__":
    sys.exit(scenario_main.main(sys.argv, SCENARIOS, "confluent-kafka", confluent_kafka.__version__,
                                detail=f"librdkafka {libversion()[0]}"))

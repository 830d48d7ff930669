"""Scenarios for kafka-python, run by both kafka-python folders.

The Debian package (kafka-python 2.0.2) and the PyPI release (3.x) share this
file; each folder's `run` picks the interpreter. The two differ in ways this file
absorbs: 3.x dropped `api_version_auto_timeout_ms` for `bootstrap_timeout_ms`,
its describe_cluster sends DescribeCluster and names broker ids `broker_id`
where 2.0.2 reads Metadata and says `node_id`, and its admin calls answer dicts
(and raise fewer errors) where 2.0.2 hands back the decoded responses.

Usage: python scenarios.py <scenario> <host:port>
Exit status: 0 pass, 1 fail, 3 scenario not implemented here.
"""

import collections
import logging
import os
import sys
import threading
import time

import kafka
from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import (InvalidConfigurationError, InvalidPartitionsError, InvalidReplicationFactorError, NoError,
                          TopicAlreadyExistsError, UnknownTopicOrPartitionError, for_code)

# The shared runner lives in ../lib; the scripts run with -I, which leaves this
# folder and PYTHONPATH off sys.path, so the path is found from this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
import group  # noqa: E402
import roundtrip  # noqa: E402
import scenario_main  # noqa: E402
import topic_ready  # noqa: E402
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
    # In a cluster the partition's leader may learn of the new topic a moment after the client:
    # retries (100 ms apart) ride that out, one request in flight keeps them from putting a later
    # batch before an earlier one.
    config.update(compression_type=None if codec == "none" else codec, acks="all", linger_ms=20,
                  max_block_ms=int(SEND_TIMEOUT_S * 1000), retries=30, retry_backoff_ms=100,
                  max_in_flight_requests_per_connection=1)
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


# admin: what a topic is created with and what the checks expect back. The defaults are
# Kafka 4.4's (unchanged since 4.0), reported with source DEFAULT_CONFIG when nothing overrides them.
ADMIN_CONFIG = {"cleanup.policy": "compact", "retention.ms": "3600000"}
DEFAULT_SEGMENT_BYTES = "1073741824"
DEFAULT_RETENTION_MS = "604800000"
DEFAULT_MESSAGE_MAX_BYTES = "1048588"
# Apache Kafka applies an admin change through its metadata log, so a read right after it
# may still show the old state for a moment.
SETTLE_S = 5.0
# Timestamps of the records list_partition_offsets looks up, after a base: the largest is
# not the last.
ADMIN_TIMESTAMP_STEPS = (0, 10, 50, 20, 30)
# 3.x answers with dicts and has list_partition_offsets and delete_records; 2.0.x answers
# with the decoded responses.
MODERN = hasattr(KafkaAdminClient, "list_partition_offsets")
# Kafka's ConfigSource ids. 2.0.x decodes DescribeConfigs v1+ with v0's field names: the
# entry's fourth field, `is_default` there, holds the config_source byte.
CONFIG_SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                  4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG"}


def settle(attempt):
    """Calls attempt() (returning problems) until it returns none or SETTLE_S passes."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        problems = attempt()
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.2)


def expect_raises(label, error_class, call):
    try:
        result = call()
    except error_class as err:
        print(f"  {label}: {type(err).__name__} as expected")
        return []
    except Exception as err:
        return [f"{label}: raised {type(err).__name__}: {err}, expected {error_class.__name__}"]
    return [f"{label}: returned {result!r}, expected {error_class.__name__}"]


class KafkaPythonAdmin:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
        self.topic = f"compat-admin-kafka-python-{stamp}"
        self.records_topic = f"compat-admin-kafka-python-records-{stamp}"
        self.missing = f"compat-admin-kafka-python-missing-{stamp}"
        self.admin = KafkaAdminClient(**admin_config(bootstrap))
        self.created = []

    def partition_counts(self):
        """{topic: partition count} from a Metadata request for every topic (naming a topic
        could create it)."""
        return {t.get("name", t.get("topic")): len(t["partitions"]) for t in self.admin.describe_topics()}

    def expect_partitions(self, count):
        def attempt():
            got = self.partition_counts().get(self.topic)
            return [] if got == count else [f"describe_topics: {self.topic} has {got} partitions, expected {count}"]
        problems = settle(attempt)
        if not problems:
            print(f"  describe_topics: {self.topic} has {count} partitions")
        return problems

    def topic_configs(self):
        return self.configs_of(ConfigResource(ConfigResourceType.TOPIC, self.topic))

    def configs_of(self, resource):
        """{name: (value, source name)} of every config of the resource."""
        if MODERN:
            result = self.admin.describe_configs([resource], config_filter="all")
            configs = result[resource.resource_type.name.lower()][resource.name]
            return {name: (c["value"], c["config_source"]) for name, c in configs.items()}
        (response,) = self.admin.describe_configs([resource])
        out = {}
        for error_code, error_message, _type, _name, entries in response.resources:
            if error_code:
                raise for_code(error_code)(error_message)
            for entry in entries:
                out[entry[0]] = (entry[1], CONFIG_SOURCES.get(entry[3], f"source {entry[3]}"))
        return out

    def check_configs(self, label, configs, expected):
        problems = []
        for name, (value, source) in expected.items():
            if name not in configs:
                problems.append(f"{label}: {name} missing ({len(configs)} configs described)")
                continue
            got_value, got_source = configs[name]
            print(f"  {label}: {name}={got_value!r} source {got_source}")
            if got_value != value or got_source != source:
                problems.append(f"{label}: {name}={got_value!r} source {got_source}, expected {value!r} source {source}")
        return problems

    def create(self):
        result = self.admin.create_topics([NewTopic(self.topic, 3, 1, topic_configs=ADMIN_CONFIG)], timeout_ms=5000)
        self.created.append(self.topic)
        print(f"  create_topics: {self.topic} with 3 partitions, {ADMIN_CONFIG}")
        problems = []
        if MODERN:
            # CreateTopics v5+ answers the new topic's layout and configs.
            (answer,) = result["topics"]
            configs = answer.get("configs") or {}
            print(f"  create_topics answered num_partitions={answer.get('num_partitions')} "
                  f"replication_factor={answer.get('replication_factor')}, {len(configs)} configs")
            if answer.get("num_partitions") != 3 or answer.get("replication_factor") != 1:
                problems.append(f"create_topics answered {answer}, expected 3 partitions, replication factor 1")
            problems += self.check_configs("create_topics answer",
                                           {n: (c.get("value"), c.get("config_source")) for n, c in configs.items()},
                                           {"retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG"),
                                            "segment.bytes": (DEFAULT_SEGMENT_BYTES, "DEFAULT_CONFIG")})
        problems += self.expect_partitions(3)
        problems += expect_raises("create_topics of an existing topic", TopicAlreadyExistsError,
                                  lambda: self.admin.create_topics([NewTopic(self.topic, 1, 1)], timeout_ms=5000))
        # One replica more than the cluster has brokers.
        too_many = len(self.admin.describe_cluster()["brokers"]) + 1
        problems += expect_raises(f"create_topics with replication factor {too_many}, above the broker count",
                                  InvalidReplicationFactorError,
                                  lambda: self.admin.create_topics([NewTopic(self.missing, 1, too_many)], timeout_ms=5000))
        self.admin.create_topics([NewTopic(self.missing, 1, 1)], timeout_ms=5000, validate_only=True)
        if self.missing in self.partition_counts():
            problems.append(f"create_topics(validate_only=True) created {self.missing}")
        else:
            print("  create_topics(validate_only=True): succeeded, nothing created")
        return problems

    def describe(self):
        problems = settle(lambda: self.check_configs("describe_configs(topic)", self.topic_configs(), {
            "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG"),
            "retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG"),
            "segment.bytes": (DEFAULT_SEGMENT_BYTES, "DEFAULT_CONFIG"),
        }))
        broker_id = min(b.get("broker_id", b.get("node_id")) for b in self.admin.describe_cluster()["brokers"])
        broker = ConfigResource(ConfigResourceType.BROKER, str(broker_id))
        problems += self.check_configs(f"describe_configs(broker {broker_id})", self.configs_of(broker), {
            "message.max.bytes": (DEFAULT_MESSAGE_MAX_BYTES, "DEFAULT_CONFIG"),
            "log.segment.bytes": (DEFAULT_SEGMENT_BYTES, "DEFAULT_CONFIG"),
        })
        missing = ConfigResource(ConfigResourceType.TOPIC, self.missing)
        if not MODERN:
            problems += expect_raises("describe_configs of a missing topic", UnknownTopicOrPartitionError,
                                      lambda: self.configs_of(missing))
        else:
            # 3.x drops a resource's error code and answers no configs for it.
            got = self.configs_of(missing)
            print(f"  describe_configs of a missing topic: {len(got)} configs")
            if got:
                problems.append(f"describe_configs of a missing topic answered {len(got)} configs, expected none")
        return problems

    def alter(self):
        if not MODERN:
            return self.alter_v2()
        from kafka.admin import AlterConfigOp  # 3.x only
        resource = ConfigResource(ConfigResourceType.TOPIC, self.topic, {"retention.ms": "7200000"})
        # AlterConfigs replaces every override; 3.x sends the topic's other modified
        # configs along, so cleanup.policy stays.
        result = self.admin.alter_configs([resource], incremental=False)
        print(f"  alter_configs (AlterConfigs) retention.ms=7200000: {result}")
        problems = [] if result == {"topic": {self.topic: "OK"}} else [f"alter_configs answered {result}"]
        problems += settle(lambda: self.check_configs("describe_configs(topic)", self.topic_configs(), {
            "retention.ms": ("7200000", "DYNAMIC_TOPIC_CONFIG"),
            "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG"),
        }))
        resource = ConfigResource(ConfigResourceType.TOPIC, self.topic, {
            "cleanup.policy": (AlterConfigOp.APPEND, "delete"),
            "retention.ms": (AlterConfigOp.DELETE, None),
            "max.message.bytes": (AlterConfigOp.SET, "200000"),
        })
        result = self.admin.alter_configs([resource], incremental=True)
        print(f"  alter_configs (IncrementalAlterConfigs) APPEND cleanup.policy delete, DELETE retention.ms, "
              f"SET max.message.bytes=200000: {result}")
        if result != {"topic": {self.topic: "OK"}}:
            problems.append(f"incremental alter_configs answered {result}")
        problems += settle(lambda: self.check_configs("describe_configs(topic)", self.topic_configs(), {
            "cleanup.policy": ("compact,delete", "DYNAMIC_TOPIC_CONFIG"),
            "retention.ms": (DEFAULT_RETENTION_MS, "DEFAULT_CONFIG"),
            "max.message.bytes": ("200000", "DYNAMIC_TOPIC_CONFIG"),
        }))
        resource = ConfigResource(ConfigResourceType.TOPIC, self.topic, {"retention.ms": "soon"})
        result = self.admin.alter_configs([resource], incremental=True)
        answer = result.get("topic", {}).get(self.topic, "")
        print(f"  alter_configs retention.ms=soon: {answer}")
        if "InvalidConfigurationError" not in answer:
            problems.append(f"alter_configs retention.ms=soon answered {result}, expected InvalidConfigurationError")
        return problems

    def alter_v2(self):
        """2.0.x: AlterConfigs only, sent as is, answered with the decoded response."""
        def alter(configs):
            response = self.admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic,
                                                                     configs)])
            ((error_code, error_message, _type, _name),) = response.resources
            return for_code(error_code), error_message

        error, message = alter({"retention.ms": "7200000"})
        print(f"  alter_configs retention.ms=7200000 (and nothing else): {error.__name__}")
        problems = [] if error is NoError else [f"alter_configs answered {error.__name__}: {message}"]
        # AlterConfigs replaces the topic's whole set of overrides.
        problems += settle(lambda: self.check_configs("describe_configs(topic)", self.topic_configs(), {
            "retention.ms": ("7200000", "DYNAMIC_TOPIC_CONFIG"),
            "cleanup.policy": ("delete", "DEFAULT_CONFIG"),
        }))
        error, message = alter({"retention.ms": "soon"})
        print(f"  alter_configs retention.ms=soon: {error.__name__}: {message}")
        if error is not InvalidConfigurationError:
            problems.append(f"alter_configs retention.ms=soon answered {error.__name__}, "
                            "expected InvalidConfigurationError")
        return problems

    def partitions(self):
        self.admin.create_partitions({self.topic: NewPartitions(5)}, timeout_ms=5000)
        print(f"  create_partitions: {self.topic} to 5")
        problems = self.expect_partitions(5)
        problems += expect_raises("create_partitions to fewer (4)", InvalidPartitionsError,
                                  lambda: self.admin.create_partitions({self.topic: NewPartitions(4)}, timeout_ms=5000))
        problems += expect_raises("create_partitions of a missing topic", UnknownTopicOrPartitionError,
                                  lambda: self.admin.create_partitions({self.missing: NewPartitions(2)},
                                                                       timeout_ms=5000))
        return problems

    def offsets(self):
        if not MODERN:
            print(f"  list_partition_offsets, delete_records: not in kafka-python {kafka.__version__}, skipped")
            return []
        from kafka.admin import OffsetSpec  # 3.x only
        self.admin.create_topics([NewTopic(self.records_topic, 1, 1)], timeout_ms=5000)
        self.created.append(self.records_topic)
        topic_ready.wait_for_topic(self.bootstrap, self.records_topic, 1)
        base = int(time.time() * 1000) - 60_000
        stamps = [base + step for step in ADMIN_TIMESTAMP_STEPS]
        config = admin_config(self.bootstrap, KafkaProducer.DEFAULT_CONFIG)
        config.update(acks="all", enable_idempotence=False, max_block_ms=5000)
        producer = KafkaProducer(**config)
        try:
            futures = [producer.send(self.records_topic, value=f"record {i}".encode(), partition=0, timestamp_ms=ts)
                       for i, ts in enumerate(stamps)]
            producer.flush(timeout=5)
            offsets = [f.get(timeout=1).offset for f in futures]
        finally:
            producer.close(timeout=2)
        if offsets != list(range(len(stamps))):
            return [f"produce to {self.records_topic}: offsets {offsets}, expected 0..4"]
        print(f"  produced {len(stamps)} records with timestamps base+{list(ADMIN_TIMESTAMP_STEPS)}")
        tp = TopicPartition(self.records_topic, 0)
        problems = []
        for name, spec, offset, ts in (("EARLIEST", OffsetSpec.EARLIEST, 0, None),
                                       ("LATEST", OffsetSpec.LATEST, 5, None),
                                       ("MAX_TIMESTAMP", OffsetSpec.MAX_TIMESTAMP, 2, stamps[2]),
                                       ("timestamp base+15", base + 15, 2, stamps[2]),
                                       ("timestamp base+60", base + 60, -1, None)):
            got = self.admin.list_partition_offsets({tp: spec})[tp]
            print(f"  list_partition_offsets {name}: offset {got.offset} timestamp {got.timestamp}")
            if got.offset != offset or (ts is not None and got.timestamp != ts):
                problems.append(f"list_partition_offsets {name}: offset {got.offset} timestamp {got.timestamp}, "
                                f"expected offset {offset}" + (f" timestamp {ts}" if ts is not None else ""))
        deleted = self.admin.delete_records({tp: 2})[tp]
        print(f"  delete_records before offset 2: low watermark {deleted.get('low_watermark')}")
        if deleted.get("low_watermark") != 2:
            problems.append(f"delete_records before offset 2 answered {deleted}, expected low watermark 2")
        got = self.admin.list_partition_offsets({tp: OffsetSpec.EARLIEST})[tp]
        print(f"  list_partition_offsets EARLIEST after delete_records: offset {got.offset}")
        if got.offset != 2:
            problems.append(f"list_partition_offsets EARLIEST after delete_records: {got.offset}, expected 2")
        return problems

    def delete(self):
        self.admin.delete_topics(list(self.created), timeout_ms=5000)
        print(f"  delete_topics: {', '.join(self.created)}")
        gone, self.created = self.created, []
        problems = settle(lambda: [f"{t} still listed after delete_topics" for t in gone
                                   if t in self.partition_counts()])
        problems += expect_raises("delete_topics of a missing topic", UnknownTopicOrPartitionError,
                                  lambda: self.admin.delete_topics([self.missing], timeout_ms=5000))
        return problems

    def close(self):
        if self.created:
            try:
                self.admin.delete_topics(list(self.created), timeout_ms=5000)
            except Exception as err:
                print(f"  cleanup: delete_topics {self.created}: {type(err).__name__}: {err}")
        self.admin.close()


def scenario_admin(bootstrap):
    sent = SentRequests()
    started = time.monotonic()
    try:
        steps = KafkaPythonAdmin(bootstrap)
    except Exception as err:
        return [f"KafkaAdminClient(): {type(err).__name__}: {err}"]
    problems = []
    try:
        for step in (steps.create, steps.describe, steps.alter, steps.partitions, steps.offsets, steps.delete):
            try:
                problems = step()
            except Exception as err:  # a library error or timeout is a failure, not a crash
                problems = [f"{step.__name__}: {type(err).__name__}: {err}"]
            if problems:
                break
    finally:
        steps.close()
        print(f"  {time.monotonic() - started:.1f} s; requests: {sent.take()}")
    return problems


# group: consumers must ask for a longer request timeout than their session timeout.
GROUP_REQUEST_TIMEOUT_MS = 15_000
# How long a member's thread may take to close its consumer.
GROUP_CLOSE_TIMEOUT_S = 8.0


class GroupMember(threading.Thread):
    """One consumer in its own thread: kafka-python rejoins a group inside poll() and
    (2.0.2) waits there until the join completes, so two members polled from one thread
    would hold up each other's rebalances. It polls, records what it reads, and commits
    it (commit(), synchronously) after every poll until told to leave; then it closes,
    which sends LeaveGroup. The assignors are kafka-python's defaults (eager)."""

    def __init__(self, name, run):
        super().__init__(name=f"member-{name}", daemon=True)
        self.member, self.run_ = name, run
        self.leaving = threading.Event()
        self.closed = threading.Event()
        check, topic = run.check, run.topic

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                check.assign(name, [], f"revoked {sorted(tp.partition for tp in revoked)}; holds")

            def on_partitions_assigned(self, assigned):
                check.assign(name, [tp.partition for tp in assigned if tp.topic == topic])

        config = admin_config(run.bootstrap, KafkaConsumer.DEFAULT_CONFIG)
        config.update(group_id=run.group_id, session_timeout_ms=group.SESSION_TIMEOUT_MS,
                      heartbeat_interval_ms=group.HEARTBEAT_INTERVAL_MS,
                      max_poll_interval_ms=group.REBALANCE_TIMEOUT_MS, request_timeout_ms=GROUP_REQUEST_TIMEOUT_MS,
                      enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=100)
        self.consumer = KafkaConsumer(**config)
        # Knowing the topic's partitions before joining spares the group a second rebalance:
        # a leader without them assigns nothing, then rejoins once metadata arrives. In that
        # second round kafka-python 3.0.12 sometimes never finishes the leader's SyncGroup.
        if not self.consumer.partitions_for_topic(topic):
            raise group.Failure(f"{name}: partitions_for_topic({topic}) found no partitions")
        self.consumer.subscribe(topics=[topic], listener=Listener())
        # kafka-python 3.0.12 takes the partitions it joins with from the first metadata answer
        # after subscribe(); one joined before that answer (more likely on a cluster, where it
        # comes from another broker) joins with none and rejoins when it arrives, and then
        # sometimes never takes up its new assignment. topics() fetches that answer now.
        self.consumer.topics()

    def run(self):
        check = self.run_.check
        try:
            while not self.leaving.is_set():
                polled = self.consumer.poll(timeout_ms=100, max_records=500)
                for tp, records in polled.items():
                    for r in records:
                        check.consume(self.member, tp.partition, r.offset, r.key, r.value)
                if polled:
                    self.consumer.commit()
        except Exception as err:  # a library error is a failure of the scenario
            check.problem(f"{self.member}: {type(err).__name__}: {err}")
        finally:
            # It reads nothing more: what it held is free once LeaveGroup reaches the broker.
            check.assign(self.member, [], "leaves the group; holds")
            try:
                self.consumer.close()
            except Exception as err:
                check.problem(f"{self.member} close: {type(err).__name__}: {err}")
            self.closed.set()

    def leave(self):
        self.leaving.set()
        if not self.closed.wait(GROUP_CLOSE_TIMEOUT_S):
            raise group.Failure(f"{self.member} did not close within {GROUP_CLOSE_TIMEOUT_S:.0f} s")


class GroupRun:
    """The group scenario (see lib/group.py) with kafka-python consumers."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
        self.topic = f"compat-group-kafka-python-{stamp}"
        self.group_id = f"compat-group-kafka-python-{stamp}"
        self.check = group.GroupCheck()
        self.members = {}
        self.producer = None

    def create_topic(self):
        admin = KafkaAdminClient(**admin_config(self.bootstrap))
        try:
            result = admin.create_topics([NewTopic(self.topic, group.PARTITIONS, 1)], timeout_ms=5000)
            # 2.0.2 hands back the response, 3.x raises; either way a non-zero code is an error.
            for item in getattr(result, "topic_errors", None) or getattr(result, "topic_error_codes", None) or []:
                if item[1]:
                    raise group.Failure(f"create_topics {self.topic}: {for_code(item[1]).__name__} {item[2:]}")
        finally:
            admin.close()
        # In a cluster, each broker learns of the topic a moment after the one that made it.
        topic_ready.wait_for_topic(self.bootstrap, self.topic, group.PARTITIONS)
        self.check.log(f"topic {self.topic} with {group.PARTITIONS} partitions; group {self.group_id}")

    def produce(self, start, end):
        """Keyed messages, partitioned by kafka-python's default (murmur2 of the key, as Java's)."""
        if self.producer is None:
            config = admin_config(self.bootstrap, KafkaProducer.DEFAULT_CONFIG)
            config.update(acks="all", linger_ms=5, max_block_ms=int(SEND_TIMEOUT_S * 1000), retries=2)
            if "enable_idempotence" in KafkaProducer.DEFAULT_CONFIG:
                config["enable_idempotence"] = False
            self.producer = KafkaProducer(**config)
        futures = [(i, self.producer.send(self.topic, key=group.message_key(i), value=group.message_value(i)))
                   for i in range(start, end)]
        self.producer.flush(timeout=SEND_TIMEOUT_S)
        for i, future in futures:
            try:
                meta = future.get(timeout=0.1)
            except Exception as err:
                raise group.Failure(f"produce message {i}: {type(err).__name__}: {err}") from None
            self.check.produce(i, meta.partition, meta.offset)
        self.check.log(f"produced messages {start}..{end - 1}")

    def start(self, name):
        member = GroupMember(name, self)
        self.members[name] = member
        member.start()

    def leave(self, name):
        self.members.pop(name).leave()

    def consume_step(self, step, start, end, members):
        group.wait_for(self.check, f"{step}: reading messages {start}..{end - 1}", group.CONSUME_TIMEOUT_S,
                       lambda: self.check.count_read(start, end) == end - start,
                       lambda: f"{self.check.count_read(start, end)} read; {self.check.describe(members)}")
        self.check.expect_step(step, start, end, members)

    def run(self):
        check = self.check
        self.create_topic()
        self.start("A")
        self.start("B")
        group.wait_for(check, "A and B holding all partitions between them", group.JOIN_TIMEOUT_S,
                       lambda: check.split(["A", "B"]), lambda: check.describe(["A", "B"]))
        self.produce(0, group.FIRST)
        self.consume_step("A and B", 0, group.FIRST, ["A", "B"])
        check.expect_spread()

        left_at = time.monotonic()
        self.leave("B")
        group.wait_for(check, "A holding all partitions after B left", group.SESSION_TIMEOUT_MS / 1000,
                       lambda: len(check.holds("A")) == group.PARTITIONS, lambda: check.describe(["A"]))
        check.log(f"A holds all {group.PARTITIONS} partitions {(time.monotonic() - left_at) * 1000:.0f} ms "
                  "after B started leaving")
        self.produce(group.FIRST, group.FIRST + group.SECOND)
        self.consume_step("A alone", group.FIRST, group.FIRST + group.SECOND, ["A"])

        self.leave("A")
        end = group.FIRST + group.SECOND + group.THIRD
        self.produce(group.FIRST + group.SECOND, end)
        self.start("C")
        self.consume_step("C after the commits", group.FIRST + group.SECOND, end, ["C"])
        # A partition C wrongly read from its start would show up as old messages by now.
        time.sleep(1.0)
        check.expect_step("whole run", 0, end, ["A", "B", "C"])
        if len(check.holds("C")) != group.PARTITIONS:
            raise group.Failure(f"{check.describe(['C'])}, expected all {group.PARTITIONS} partitions")

    def close(self):
        for name, member in list(self.members.items()):
            member.leaving.set()
            if not member.closed.wait(GROUP_CLOSE_TIMEOUT_S):
                print(f"  cleanup: {name} did not close within {GROUP_CLOSE_TIMEOUT_S:.0f} s")
        if self.producer is not None:
            self.producer.close(timeout=2)


def scenario_group(bootstrap):
    sent = SentRequests()
    run = GroupRun(bootstrap)
    try:
        run.run()
        return []
    except group.Failure as err:
        return [str(err)]
    except Exception as err:  # a library error or timeout is a failure, not a crash
        return [f"{type(err).__name__}: {err}"]
    finally:
        run.close()
        print(f"  requests (all clients): {sent.take()}")


SCENARIOS = {"metadata": scenario_metadata, "roundtrip": scenario_roundtrip, "admin": scenario_admin,
             "group": scenario_group}


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

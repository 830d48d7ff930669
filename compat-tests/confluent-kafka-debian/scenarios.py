"""Scenarios for confluent-kafka-python, run by both confluent-kafka folders.

The Debian build (confluent-kafka 1.7.0 on librdkafka 2.0.2) and the PyPI wheel
(2.x with its bundled librdkafka) share this file; each folder's `run` picks the
interpreter, so whatever this file needs must work on both versions.

Usage: python scenarios.py <scenario> <host:port>
Exit status: 0 pass, 1 fail, 3 scenario not implemented here.
"""

import os
import sys

import confluent_kafka
from confluent_kafka import KafkaException, libversion
from confluent_kafka.admin import AdminClient

# The shared runner lives in ../lib; the scripts run with -I, which leaves this
# folder and PYTHONPATH off sys.path, so the path is found from this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
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


SCENARIOS = {"metadata": scenario_metadata}


if __name__ == "__main__":
    sys.exit(scenario_main.main(sys.argv, SCENARIOS, "confluent-kafka", confluent_kafka.__version__,
                                detail=f"librdkafka {libversion()[0]}"))

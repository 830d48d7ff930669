"""Scenarios for confluent-kafka-python, run by both confluent-kafka folders.

The Debian build (confluent-kafka 1.7.0 on librdkafka 2.0.2) and the PyPI wheel
(2.x with its bundled librdkafka) share this file; each folder's `run` picks the
interpreter, so whatever this file needs must work on both versions.

Usage: python scenarios.py <scenario> <host:port>
Exit status: 0 pass, 1 fail, 3 scenario not implemented here.
"""

import sys

import confluent_kafka
from confluent_kafka import KafkaException, libversion
from confluent_kafka.admin import AdminClient

# Each call gets this long; the caller's `run` bounds the whole process at 20 s.
CALL_TIMEOUT_S = 8.0

EXIT_PASS, EXIT_FAIL, EXIT_NOT_IMPLEMENTED = 0, 1, 3


def check_brokers(label, brokers, controller_id, cluster_id):
    """Applies the metadata rules to (id, host, port) triples; returns problems.

    controller_id and cluster_id are checked as given: the librdkafka API always
    exposes both, so a missing value (-1 / None) counts as a problem.
    """
    problems = []
    if not brokers:
        problems.append(f"{label}: no brokers returned")
    ids = set()
    for broker_id, host, port in brokers:
        print(f"  {label}: broker id={broker_id} {host}:{port}")
        ids.add(broker_id)
        if not host:
            problems.append(f"{label}: broker {broker_id} has an empty host")
        if not isinstance(port, int) or not 0 < port < 65536:
            problems.append(f"{label}: broker {broker_id} has port {port!r}")
    print(f"  {label}: controller id={controller_id} cluster id={cluster_id!r}")
    if controller_id not in ids:
        problems.append(
            f"{label}: controller id {controller_id} is not one of the brokers {sorted(ids)}"
        )
    if not isinstance(cluster_id, str) or not cluster_id:
        problems.append(f"{label}: cluster id is {cluster_id!r}, expected a non-empty string")
    return problems


def via_list_topics(admin):
    md = admin.list_topics(timeout=CALL_TIMEOUT_S)
    brokers = [(b.id, b.host, b.port) for b in md.brokers.values()]
    problems = check_brokers("list_topics", brokers, md.controller_id, md.cluster_id)
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
    return check_brokers("describe_cluster", brokers, controller_id, result.cluster_id)


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


def main(argv):
    if len(argv) != 3:
        print(f"usage: {argv[0]} <scenario> <host:port>", file=sys.stderr)
        return 2
    name, bootstrap = argv[1], argv[2]
    scenario = SCENARIOS.get(name)
    if scenario is None:
        print(f"confluent-kafka: scenario '{name}' not implemented")
        return EXIT_NOT_IMPLEMENTED
    print(f"confluent-kafka {confluent_kafka.__version__} (librdkafka {libversion()[0]}) "
          f"scenario {name} against {bootstrap}")
    problems = scenario(bootstrap)
    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        return EXIT_FAIL
    print(f"PASS {name} (confluent-kafka {confluent_kafka.__version__})")
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main(sys.argv))

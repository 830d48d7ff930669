"""Scenarios for kafka-python, run by both kafka-python folders.

The Debian package (kafka-python 2.0.2) and the PyPI release (3.x) share this
file; each folder's `run` picks the interpreter. The two differ in ways this file
absorbs: 3.x dropped `api_version_auto_timeout_ms` for `bootstrap_timeout_ms`,
and its describe_cluster sends DescribeCluster and names broker ids `broker_id`
where 2.0.2 reads Metadata and says `node_id`.

Usage: python scenarios.py <scenario> <host:port>
Exit status: 0 pass, 1 fail, 3 scenario not implemented here.
"""

import logging
import sys

import kafka
from kafka import KafkaAdminClient

# Per-request bound; the caller's `run` bounds the whole process at 20 s.
REQUEST_TIMEOUT_MS = 8000
# kafka-python 2.0.2 probes the broker version in the constructor; a broker that
# misses this raises NoBrokersAvailable rather than hanging.
API_VERSION_PROBE_TIMEOUT_MS = 5000

EXIT_PASS, EXIT_FAIL, EXIT_NOT_IMPLEMENTED = 0, 1, 3


def admin_config(bootstrap):
    known = KafkaAdminClient.DEFAULT_CONFIG
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


def check_cluster(cluster):
    """Applies the metadata rules to a describe_cluster() dict; returns problems."""
    problems = []
    brokers = cluster.get("brokers") or []
    if not brokers:
        problems.append("describe_cluster: no brokers returned")
    ids = set()
    for b in brokers:
        broker_id = b.get("broker_id", b.get("node_id"))
        host, port = b.get("host"), b.get("port")
        print(f"  describe_cluster: broker id={broker_id} {host}:{port}")
        ids.add(broker_id)
        if not host:
            problems.append(f"describe_cluster: broker {broker_id} has an empty host")
        if not isinstance(port, int) or not 0 < port < 65536:
            problems.append(f"describe_cluster: broker {broker_id} has port {port!r}")

    if "controller_id" in cluster:
        controller_id = cluster["controller_id"]
        print(f"  describe_cluster: controller id={controller_id}")
        if controller_id not in ids:
            problems.append(
                f"describe_cluster: controller id {controller_id} is not one of the brokers {sorted(ids)}"
            )
    else:
        print("  describe_cluster: controller id not exposed")

    if "cluster_id" in cluster:
        cluster_id = cluster["cluster_id"]
        print(f"  describe_cluster: cluster id={cluster_id!r}")
        if not isinstance(cluster_id, str) or not cluster_id:
            problems.append(f"describe_cluster: cluster id is {cluster_id!r}, expected a non-empty string")
    else:
        print("  describe_cluster: cluster id not exposed")
    return problems


def scenario_metadata(bootstrap):
    try:
        admin = KafkaAdminClient(**admin_config(bootstrap))
    except Exception as err:
        return [f"KafkaAdminClient(): {type(err).__name__}: {err}"]
    problems = []
    try:
        problems += check_cluster(admin.describe_cluster())
        topics = sorted(admin.list_topics())
        print(f"  list_topics: topics ({len(topics)}): {topics}")
    except Exception as err:
        problems.append(f"{type(err).__name__}: {err}")
    finally:
        admin.close()
    return problems


SCENARIOS = {"metadata": scenario_metadata}


def main(argv):
    if len(argv) != 3:
        print(f"usage: {argv[0]} <scenario> <host:port>", file=sys.stderr)
        return 2
    name, bootstrap = argv[1], argv[2]
    scenario = SCENARIOS.get(name)
    if scenario is None:
        print(f"kafka-python: scenario '{name}' not implemented")
        return EXIT_NOT_IMPLEMENTED
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="  kafka-python log: %(levelname)s %(name)s: %(message)s")
    print(f"kafka-python {kafka.__version__} scenario {name} against {bootstrap}")
    problems = scenario(bootstrap)
    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        return EXIT_FAIL
    print(f"PASS {name} (kafka-python {kafka.__version__})")
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main(sys.argv))

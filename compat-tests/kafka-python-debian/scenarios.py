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
import os
import sys

import kafka
from kafka import KafkaAdminClient

# The shared runner lives in ../lib; the scripts run with -I, which leaves this
# folder and PYTHONPATH off sys.path, so the path is found from this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
import scenario_main  # noqa: E402
from scenario_main import NOT_EXPOSED, check_cluster  # noqa: E402

# Per-request bound; the caller's `run` bounds the whole process at 20 s.
REQUEST_TIMEOUT_MS = 8000
# kafka-python 2.0.2 probes the broker version in the constructor; a broker that
# misses this raises NoBrokersAvailable rather than hanging.
API_VERSION_PROBE_TIMEOUT_MS = 5000


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


SCENARIOS = {"metadata": scenario_metadata}


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="  kafka-python log: %(levelname)s %(name)s: %(message)s")
    sys.exit(scenario_main.main(sys.argv, SCENARIOS, "kafka-python", kafka.__version__))

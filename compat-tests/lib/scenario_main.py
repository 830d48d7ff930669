"""The scenario runner shared by the Python clients' scenarios.py files.

Each scenarios.py adds this folder to sys.path from its own __file__ and calls
main() with its scenarios. A scenario takes the bootstrap address and returns a
list of problems; an empty list is a pass. Only the standard library is used
here, and nothing newer than Debian 12's Python 3.11.
"""

import sys

EXIT_PASS, EXIT_FAIL, EXIT_NOT_IMPLEMENTED = 0, 1, 3

# The value of a field that the client library does not report at all.
NOT_EXPOSED = object()


def check_cluster(label, brokers, controller_id=NOT_EXPOSED, cluster_id=NOT_EXPOSED):
    """Applies the metadata rules to (id, host, port) triples; returns problems.

    Prints what it checks, each line starting with label (the call the values came
    from). controller_id and cluster_id are checked when given, even as -1 or None;
    pass neither when the library does not show it.
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

    shown = []
    if controller_id is NOT_EXPOSED:
        shown.append("controller id not exposed")
    else:
        shown.append(f"controller id={controller_id}")
        if controller_id not in ids:
            problems.append(
                f"{label}: controller id {controller_id} is not one of the brokers {sorted(ids)}"
            )
    if cluster_id is NOT_EXPOSED:
        shown.append("cluster id not exposed")
    else:
        shown.append(f"cluster id={cluster_id!r}")
        if not isinstance(cluster_id, str) or not cluster_id:
            problems.append(f"{label}: cluster id is {cluster_id!r}, expected a non-empty string")
    print(f"  {label}: {', '.join(shown)}")
    return problems


def main(argv, scenarios, client, version, detail=None):
    """Runs the scenario named in argv (`<scenario> <host:port>`); returns the exit status.

    client and version name the library in the output, detail (for instance the C
    library under it) is added to the first line.
    """
    if len(argv) != 3:
        print(f"usage: {argv[0]} <scenario> <host:port>", file=sys.stderr)
        return 2
    name, bootstrap = argv[1], argv[2]
    scenario = scenarios.get(name)
    if scenario is None:
        print(f"{client}: scenario '{name}' not implemented")
        return EXIT_NOT_IMPLEMENTED
    suffix = f" ({detail})" if detail else ""
    print(f"{client} {version}{suffix} scenario {name} against {bootstrap}")
    problems = scenario(bootstrap)
    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        return EXIT_FAIL
    print(f"PASS {name} ({client} {version})")
    return EXIT_PASS

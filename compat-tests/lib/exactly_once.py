"""Checks shared by the Python clients' `txn` and `idempotent-cut` scenarios (the Node
clients' are in exactly-once.mjs), and the cut proxy of lib/cut-proxy.mjs run as a child
process. Standard library only, nothing newer than Debian 12's Python 3.11.
"""

import json
import os
import queue
import shutil
import subprocess
import threading

# How many problems one check lists before it stops.
MAX_PROBLEMS = 8
CUT_PROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cut-proxy.mjs")


def check_partition(label, order, required, read, allowed=None, offsets=None):
    """Checks one partition as read back; returns problems, [] when it is right.

    order lists every value that may have been written to the partition, in production
    order; allowed (default: all of them) those this reader may see; required those it
    must see; read is [(offset, value)] in the order read; offsets (optional) maps a value
    to the offset its produce was acknowledged with. Every value read must be allowed,
    none twice, every required one present, in production order, at its offset.

        check_partition("p0", ["a", "b"], {"a"}, [(0, "a")], allowed={"a"})  # []
    """
    problems = []

    def add(p):
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"{label}: {p}")

    index = {v: i for i, v in enumerate(order)}
    seen = {}
    last_index = -1
    last_offset = -1
    for offset, value in read:
        if offset <= last_offset:
            add(f"offset {offset} read after offset {last_offset}")
        last_offset = offset
        if value in seen:
            add(f"duplicate: {value} at offset {offset}, already at offset {seen[value]}")
            continue
        seen[value] = offset
        if value not in index:
            add(f"unexpected value {value} at offset {offset}")
            continue
        if allowed is not None and value not in allowed:
            add(f"{value} at offset {offset} must not be visible to this reader (aborted or never sent here)")
            continue
        i = index[value]
        if i < last_index:
            add(f"out of order: {value} at offset {offset} comes after {order[last_index]}")
        last_index = max(last_index, i)
        acked = offsets.get(value) if offsets else None
        if acked is not None and acked != offset:
            add(f"{value} is at offset {offset}, but its produce was acknowledged with offset {acked}")
    missing = [v for v in order if v in required and v not in seen]
    if missing:
        add(f"{len(missing)} missing, first {', '.join(missing[:3])}")
    return problems


class CutProxy:
    """lib/cut-proxy.mjs as a child process (node on PATH), reading the proxied listener
    from the environment the matrix sets (COMPAT_PROXY_LISTEN, COMPAT_PROXY_TARGET).

        proxy = CutProxy()          # raises RuntimeError when it cannot start
        ... produce through proxy.bootstrap while proxy.cuts() grows ...
        proxy.stop_cutting(); print(proxy.stop()["text"])
    """

    def __init__(self, every_ms=300, start_timeout_s=5.0):
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH: the cut proxy is lib/cut-proxy.mjs")
        self._events = queue.Queue()
        self._cuts = 0
        self._lock = threading.Lock()
        self._proc = subprocess.Popen([node, CUT_PROXY, "--every", str(every_ms)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            first = self._events.get(timeout=start_timeout_s)
        except queue.Empty:
            self._proc.kill()
            raise RuntimeError(f"cut proxy did not start within {start_timeout_s} s")
        if first.get("event") != "listening":
            self._proc.kill()
            raise RuntimeError(f"cut proxy: {first.get('message', first)}")
        self.bootstrap = first["bootstrap"]

    def _read(self):
        for line in self._proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "cut":
                with self._lock:
                    self._cuts = event["cuts"]
            else:
                self._events.put(event)
        self._events.put({"event": "exited"})

    def cuts(self):
        """Cuts made so far while a Produce was in flight."""
        with self._lock:
            return self._cuts

    def stop_cutting(self):
        self._proc.stdin.write("stop-cutting\n")
        self._proc.stdin.flush()

    def stop(self, timeout_s=5.0):
        """Closes the proxy; returns its totals (see cut-proxy.mjs), with "text" a summary."""
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        stats = {"text": "cut proxy gave no totals", "cuts": self.cuts()}
        try:
            while True:
                event = self._events.get(timeout=timeout_s)
                if event.get("event") == "stats":
                    stats = event
                if event.get("event") in ("stats", "exited"):
                    break
        except queue.Empty:
            pass
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        return stats

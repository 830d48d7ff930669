"""Waits until every broker of a cluster lists a topic: a topic is made by one broker (or
controller) and reaches the others a moment later, so a scenario about something else
waits for that before its clients ask another broker. Standard library only: Metadata v4
requests written by hand, never auto-creating the topic.

    wait_for_topic("127.0.0.1:40100", "orders", 3)   # raises RuntimeError after timeout_s
"""

import socket
import struct
import time

_METADATA = 3
_correlation = [0]


def _string(s):
    b = s.encode("utf-8")
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, buf):
        self.buf, self.at = buf, 0

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.at + size > len(self.buf):
            raise RuntimeError("Metadata answer ends early")
        (value,) = struct.unpack_from(fmt, self.buf, self.at)
        self.at += size
        return value

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.buf[self.at:self.at + n].decode("utf-8")
        self.at += n
        return s

    def array(self, item):
        return [item() for _ in range(self.take(">i"))]


def _metadata(host, port, topics, timeout_s=2.0):
    _correlation[0] += 1
    header = struct.pack(">hhi", _METADATA, 4, _correlation[0]) + _string("gregor-compat")
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    body += b"\x00"  # allow_auto_topic_creation false
    frame = header + body
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.settimeout(timeout_s)
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"{host}:{port} closed the connection before answering")
            data += chunk
    r = _Reader(data[4:4 + struct.unpack(">i", data[:4])[0]])
    if r.take(">i") != _correlation[0]:
        raise RuntimeError("Metadata answer for another request")
    r.take(">i")  # throttle
    brokers = r.array(lambda: (r.take(">i"), r.string(), r.take(">i"), r.string()))
    r.string()  # cluster id
    r.take(">i")  # controller

    def partition():
        p = (r.take(">h"), r.take(">i"), r.take(">i"))
        r.array(lambda: r.take(">i"))
        r.array(lambda: r.take(">i"))
        return p

    found = r.array(lambda: (r.take(">h"), r.string(), r.take(">b"), r.array(partition)))
    return [(b[0], b[1], b[2]) for b in brokers], {t[1]: (t[0], t[3]) for t in found}


def wait_for_topic(bootstrap, topic, partitions, timeout_s=10.0):
    """Returns once every broker lists topic with that many partitions, each with a leader."""
    host, _, port = bootstrap.rpartition(":")
    deadline = time.monotonic() + timeout_s
    brokers, last = [], "no answer"
    while True:
        try:
            if not brokers:
                brokers, _ = _metadata(host, int(port), [])
            behind = []
            for node_id, b_host, b_port in brokers:
                _, topics = _metadata(b_host, b_port, [topic])
                error, parts = topics.get(topic, (-1, []))
                if error != 0 or len(parts) != partitions or any(e != 0 or leader < 0 for e, _, leader in parts):
                    behind.append(node_id)
            if not behind:
                return
            last = f"broker(s) {', '.join(map(str, behind))} do not list it yet"
        except (OSError, RuntimeError, struct.error) as e:
            last = str(e)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic} with {partitions} partitions is not known to every broker after {timeout_s} s: {last}")
        time.sleep(0.1)

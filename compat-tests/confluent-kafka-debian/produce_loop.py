"""produce_loop.py BOOTSTRAP TOPIC SECONDS OUT_FILE

Produces one record about every 2 ms for SECONDS with confluent-kafka
(librdkafka), acks=all and idempotence on, values "confluent-0",
"confluent-1", ...; each record whose delivery report says it was
acknowledged is written to OUT_FILE as "partition offset value". For the
cluster failover tests, which kill brokers meanwhile and then look for
every acknowledged record. Run with /usr/bin/python3 (Debian's
python3-confluent-kafka).
"""

import sys
import time

from confluent_kafka import Producer


def main():
    bootstrap, topic, seconds, out_path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    counts = {"acknowledged": 0, "failed": 0}
    with open(out_path, "w", encoding="utf-8") as out:

        def delivered(err, msg):
            if err is not None:
                counts["failed"] += 1
                return
            out.write(f"{msg.partition()} {msg.offset()} {msg.value().decode()}\n")
            counts["acknowledged"] += 1

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            producer.produce(topic, value=f"confluent-{i}".encode(), on_delivery=delivered)
            i += 1
            producer.poll(0)
            time.sleep(0.002)
        left = producer.flush(60)
        if left:
            counts["failed"] += left
    print(f"confluent-kafka produce-loop: acknowledged {counts['acknowledged']} failed {counts['failed']}")


if __name__ == "__main__":
    main()

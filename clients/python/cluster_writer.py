"""Writes unique keys through redis-py's RedisCluster (Debian's
python3-redis), unchanged, while the cluster reshards and fails over.

Usage: cluster_writer.py host:port[,host:port…] prefix writes-per-second

Writes SET prefix:N N for N = 0, 1, …, and every tenth N a CL.THROTTLE on
one of eight keys prefix:rl:M. Prints one line per write: "ok KEY US" when
acknowledged at US (Unix time, µs), "err KEY US MESSAGE" when refused.
Stops when stdin closes. The test is cluster_clients_test.go.

The startup nodes stay the ones given (dynamic_startup_nodes=False):
redis-py before 4.4.0 otherwise cannot find the new topology once a node
has died (it fails to deep-copy its own connection arguments: "cannot
pickle '_thread.lock' object", redis-py issue 2354), against Redis too."""

import logging
import sys
import threading
import time

from redis.cluster import ClusterNode, RedisCluster


def main():
    nodes = [ClusterNode(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in sys.argv[1].split(",")]
    prefix, interval = sys.argv[2], 1 / float(sys.argv[3])
    logging.getLogger("redis").addHandler(logging.NullHandler())
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    rc = RedisCluster(startup_nodes=nodes, dynamic_startup_nodes=False, socket_timeout=2, socket_connect_timeout=1)
    due = time.monotonic()
    n = 0
    while not stop.is_set():
        writes = [(f"{prefix}:{n}", ("SET", f"{prefix}:{n}", n))]
        if n % 10 == 0:
            rl = f"{prefix}:rl:{n // 10 % 8}"
            writes.append((rl, ("CL.THROTTLE", rl, 1000, 1, 3600)))
        for key, cmd in writes:
            try:
                rc.execute_command(*cmd)
                print(f"ok {key} {time.time_ns() // 1000}", flush=True)
            except Exception as e:  # every refusal is reported, none ends the run
                msg = " ".join(f"{type(e).__name__}: {e}".split())
                print(f"err {key} {time.time_ns() // 1000} {msg}", flush=True)
        n += 1
        due = max(due + interval, time.monotonic() - 0.1)
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    rc.close()


if __name__ == "__main__":
    main()

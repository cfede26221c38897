"""Drives the `limits` library (Debian's python3-limits), unchanged, over
redis-py against the server at argv[1] (host:port), printing one JSON line
per step. Its Redis storage keeps the moving window in a list through Lua
scripts (LINDEX/LPUSH/LTRIM/EXPIRE, LRANGE), the fixed windows in INCRBY
and EXPIRE scripts, and clears with a KEYS/DEL script. The test is
command/script_python_test.go."""

import json
import sys
import time

from limits import parse, storage, strategies


def out(step, v):
    print(json.dumps({"step": step, "v": v}), flush=True)


def main():
    st = storage.storage_from_string(f"redis://{sys.argv[1]}")
    out("check", st.check())
    st.reset()
    item = parse("5/minute")
    for name, cls in [
        ("moving", strategies.MovingWindowRateLimiter),
        ("fixed", strategies.FixedWindowRateLimiter),
        ("elastic", strategies.FixedWindowElasticExpiryRateLimiter),
    ]:
        lim = cls(st)
        out(name + "-hits", [lim.hit(item, name, "u") for _ in range(7)])
        out(name + "-test", lim.test(item, name, "u"))
        reset, remaining = lim.get_window_stats(item, name, "u")
        out(name + "-remaining", remaining)
        out(name + "-reset-within-window", 0 < reset - time.time() <= 61)
        out(name + "-cost", [lim.hit(item, name, "c", cost=3) for _ in range(2)])
        out(name + "-cost-remaining", lim.get_window_stats(item, name, "c")[1])
        lim.clear(item, name, "u")
        out(name + "-after-clear", [lim.test(item, name, "u"), lim.hit(item, name, "u")])
    out("reset", st.reset())


main()

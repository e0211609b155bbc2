"""Claim -> complete cycles per second from Python: R threads drain one job's chunks.

Each thread loops ``client.find_next(job)`` then ``claim.complete()`` until nothing is
left, on one shared :class:`chunklock.Client` (its pool keeps one connection per
thread). ``--select token`` sends the Go benchmark's documents instead (the claim's
token only) through ``client.execute``, to tell the client's own cost from the cost of
the full claim the server resolves. Prints one JSON object: cycles, seconds, the
latencies' p50/p99 in ms, this process's CPU seconds and peak RSS in KiB
(VmHWM).

    python3 clients/python/bench/cycles.py --url http://127.0.0.1:8080 --job J --runners 16

cmd/chunklock-bench runs it with -python, beside the Go client's GraphQL figure.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

import chunklock


def peak_rss_kib() -> int:
    """This process's peak resident set (VmHWM; ru_maxrss would count the parent's before exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def percentile(sample: List[float], q: float) -> float:
    if not sample:
        return 0.0
    s = sorted(sample)
    return s[int(q * (len(s) - 1))] * 1000


def cycle_functions(client: chunklock.Client, job: str, select: str) -> Tuple[Callable[[str], Optional[str]], Callable[[str], None]]:
    """(find(executor) -> token or None, complete(token)) for the selection asked."""
    if select == "claim":
        claims: Dict[str, chunklock.Claim] = {}
        mu = threading.Lock()

        def find(executor: str) -> Optional[str]:
            c = client.find_next(job, executor)
            if c is None:
                return None
            with mu:
                claims[c.token] = c
            return c.token

        def complete(token: str) -> None:
            with mu:
                c = claims.pop(token)
            c.complete()

        return find, complete

    def find_token(executor: str) -> Optional[str]:
        data = client.execute("mutation($job: String!, $ex: String!) { findNext(job: $job, executor: $ex) { token } }",
                              {"job": job, "ex": executor}, idempotent=False)
        got = data["findNext"]
        return None if got is None else str(got["token"])

    return find_token, client.complete


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--runners", type=int, default=16)
    ap.add_argument("--select", choices=("claim", "token"), default="claim")
    args = ap.parse_args()
    client = chunklock.Client(args.url, retry_for=30)
    find, complete = cycle_functions(client, args.job, args.select)
    finds: List[List[float]] = [[] for _ in range(args.runners)]
    completes: List[List[float]] = [[] for _ in range(args.runners)]
    errors: List[BaseException] = []

    def runner(i: int) -> None:
        executor = f"py-bench-{i}"
        try:
            while True:
                t0 = time.perf_counter()
                token = find(executor)
                t1 = time.perf_counter()
                if token is None:
                    return
                complete(token)
                finds[i].append(t1 - t0)
                completes[i].append(time.perf_counter() - t1)
        except BaseException as e:  # reported below
            errors.append(e)

    cpu0 = time.process_time()
    start = time.perf_counter()
    threads = [threading.Thread(target=runner, args=(i,)) for i in range(args.runners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        print(f"cycles.py: {errors[0]!r}", file=sys.stderr)
        return 1
    all_finds = [x for f in finds for x in f]
    all_completes = [x for c in completes for x in c]
    print(json.dumps({
        "cycles": len(all_finds),
        "seconds": elapsed,
        "find_p50_ms": percentile(all_finds, 0.5),
        "find_p99_ms": percentile(all_finds, 0.99),
        "complete_p50_ms": percentile(all_completes, 0.5),
        "complete_p99_ms": percentile(all_completes, 0.99),
        "cpu_seconds": time.process_time() - cpu0,
        "maxrss_kib": peak_rss_kib(),
        "connections": client._transport.opened,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

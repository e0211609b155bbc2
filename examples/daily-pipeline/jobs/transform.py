#!/usr/bin/env python3
"""transform, in Python: orders -> orders-clean (orders and revenue per customer).

The job of transform.sh written with the chunklock Python client: instead of being run
by `chunklock run` for each chunk, it is its own worker. It claims the chunks of the
transform job one after the other, heartbeats while it works on one (`with claim:`),
reads the day's orders at the location the claim gives, and writes the day's totals
per customer to the output's location. A chunk is completed when its block ends, and
failed (retried up to the job's maxAttempts) when it raises.

    pip install ./clients/python      # once (from the repository root)
    python3 jobs/transform.py --idle-wait 5

The server's URL comes from CHUNKLOCK_URL (else ./chunklock-data/serve.url), the API
token from CHUNKLOCK_TOKEN. SIGTERM stops it after the chunk under way.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, Tuple

import chunklock


def totals(orders: str) -> Dict[str, Tuple[int, int]]:
    """Per customer, (orders, cents) of an orders chunk (CSV date,order_id,customer,amount_cents)."""
    per: Dict[str, Tuple[int, int]] = {}
    with open(orders) as f:
        for line in f:
            _, _, customer, cents = line.rstrip("\n").split(",")
            n, total = per.get(customer, (0, 0))
            per[customer] = (n + 1, total + int(cents))
    return per


def commit(claim: chunklock.Claim, tmp: str, final: str) -> None:
    """Moves a finished result into place, but only while the claim is still ours.

    A worker whose claim expired or was forced by an operator must not overwrite the
    result of the executor that holds the chunk now: the heartbeat asks the server,
    and raises chunklock.StaleClaim when the claim is no longer live.
    """
    try:
        claim.heartbeat()
    except chunklock.StaleClaim:
        os.remove(tmp)
        raise
    os.replace(tmp, final)


def main() -> int:
    parser = argparse.ArgumentParser(description="the transform job of the daily pipeline, as a Python worker")
    parser.add_argument("--idle-wait", type=float, default=0, help="seconds to wait without work for new chunks before exiting")
    args = parser.parse_args()
    client = chunklock.Client()
    print(f"transform.py: executor {client.executor}", file=sys.stderr, flush=True)
    done = 0
    for claim in client.work("transform", idle_wait=args.idle_wait):
        with claim:
            per = totals(claim.input("orders").location)
            out = claim.output.location
            os.makedirs(os.path.dirname(out), exist_ok=True)
            tmp = f"{out}.tmp.{os.getpid()}"
            with open(tmp, "w") as f:
                for customer in sorted(per):
                    n, cents = per[customer]
                    f.write(f"{claim.dataid},{customer},{n},{cents}\n")
            commit(claim, tmp, out)
        if claim.ended == "completed":
            done += 1
    print(f"transform.py: nothing left to do: {done} completed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

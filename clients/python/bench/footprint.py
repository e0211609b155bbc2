"""The client's import time and memory, each import in a fresh interpreter.

    python3 clients/python/bench/footprint.py [--runs 30]

For ``import chunklock``, and for the standard modules it imports (the floor any
client built on them pays), prints the median and quartiles over the runs of: the wall
and CPU time of the import (perf_counter and process_time around it; the CPU time
varies less on a busy machine), the resident memory it adds (VmRSS after minus before)
and what tracemalloc counts it allocating (measured in runs of their own, since tracing
slows the import down).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import List

STDLIB = ("import http.client, json, threading, logging, re, signal, secrets, traceback, select, socket, ssl, base64, "
          "hashlib, typing, datetime, urllib.parse, struct, random")

TIMED = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
{stmt}
print(json.dumps([(time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000]))
"""

TRACED = """
import json, tracemalloc
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
r0 = rss()
tracemalloc.start()
{stmt}
traced = tracemalloc.get_traced_memory()[0]
tracemalloc.stop()
print(json.dumps([rss() - r0, traced / 1024]))
"""


def run(probe: str, n: int) -> List[object]:
    out = []
    for _ in range(n):
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        out.append(json.loads(r.stdout))
    return out


def summary(values: List[float], unit: str) -> str:
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):.1f} {unit} (quartiles {q[0]:.1f}..{q[2]:.1f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {args.runs} fresh interpreters per figure")
    for name, stmt in (("import chunklock", "import chunklock"), ("its standard modules", STDLIB)):
        times = run(TIMED.format(stmt=stmt), args.runs)
        wall = [float(t[0]) for t in times]  # type: ignore[index]
        cpu = [float(t[1]) for t in times]  # type: ignore[index]
        mem = run(TRACED.format(stmt=stmt), args.runs)
        rss = [float(m[0]) for m in mem]  # type: ignore[index]
        traced = [float(m[1]) for m in mem]  # type: ignore[index]
        print(f"{name}: wall {summary(wall, 'ms')}, CPU {summary(cpu, 'ms')}; resident +{summary(rss, 'KiB')}; "
              f"allocated {summary(traced, 'KiB')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where netcfg's `ifquery -a -c -o json` spends its time: run by worker.py (mode `profile`)
with the venv's python, inside the sandbox, after `ifup -a` applied the node's files.

Each sample is a fresh interpreter (as every poll is) that times, in-process, the phases of
the command: importing the command's modules, importing the engine it calls (apply's dry
run, the kernel session, drift), compiling /etc/network/interfaces, reading the kernel and
diffing (actions.verdicts), and writing the JSON. One more interpreter runs the whole
command under `-X importtime` for the modules that cost the most. Prints JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

PHASES = r"""
import json, time
t0 = time.perf_counter()
from netcfg.ifupdown import actions, commands, query
from netcfg.ifupdown.config import load, select
t1 = time.perf_counter()
import netcfg.apply.execute, netcfg.kernel.session, netcfg.plan.drift
t2 = time.perf_counter()
ifile = load("/etc/network/interfaces")
t3 = time.perf_counter()
names = select(ifile, everything=True, names=(), classes=(), excludes=())
verdicts, _ = actions.verdicts(ifile, names)
t4 = time.perf_counter()
text = query.as_json(ifile, names, verdicts)
t5 = time.perf_counter()
print(json.dumps({"import_commands": t1 - t0, "import_engine": t2 - t1, "compile": t3 - t2,
                  "read_and_diff": t4 - t3, "json": t5 - t4}))
"""


def phases(samples: int) -> dict[str, float]:
    runs = []
    for _ in range(samples):
        out = subprocess.run([sys.executable, "-c", PHASES], capture_output=True, text=True,
                             check=True, cwd="/").stdout
        runs.append(json.loads(out))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def start_only(samples: int) -> float:
    """The interpreter's own start and exit (site, the venv's .pth hooks), nothing imported."""
    import time
    walls = []
    for _ in range(samples):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def top_imports(limit: int = 15) -> list[dict]:
    """`-X importtime` of the whole command: the modules with the largest self time, and the
    top-level packages' cumulative times."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "netcfg.ifupdown",
                           "ifquery", "-a", "-c", "-o", "json"], capture_output=True, text=True,
                          cwd="/")
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:"):].split("|")
        rows.append({"module": name.strip(), "self_ms": int(self_us) / 1000,
                     "cumulative_ms": int(cumulative_us) / 1000,
                     "depth": (len(name) - len(name.lstrip())) // 2})
    by_cumulative = sorted(rows, key=lambda r: -r["cumulative_ms"])
    return [r for r in by_cumulative if r["module"].split(".")[0] != "netcfg"
            or r["depth"] <= 2][:limit]


def main() -> int:
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    env_note = {k: os.environ.get(k) for k in ("PYTHONDONTWRITEBYTECODE",) if k in os.environ}
    print(json.dumps({"phases_median_s": phases(samples),
                      "interpreter_start_s": start_only(samples),
                      "top_imports": top_imports(), "env": env_note}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

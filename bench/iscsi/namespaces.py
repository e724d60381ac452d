#!/usr/bin/env python3
"""Does serving many tenants cost throughput? 1, 64 and 512 namespaces, each
with 10.0.0.1 on lo, its own target and portal and its own logged-in
session; the load is 4 iscsi-perf clients (4k random read, 16 in flight
each) in 4 of those namespaces (all 4 in the one namespace when there is
one). Levels are interleaved over rounds; setns calls are counted across
the load.

    sudo .venv/bin/python bench/iscsi/namespaces.py [--rounds 2] [--seconds 6]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests/dataplane"))

from iscsi_clients import login_pdu, login_status, read_pdu  # noqa: E402
from ours import load  # noqa: E402
from run import release_so, sandbox  # noqa: E402

from netcfg.kernel.ns import NetnsDir, NetnsSwitcher  # noqa: E402

IQN = "iqn.2024-01.org.netcfg.bench"
ADDR = "10.0.0.1"
INITIATOR = "iqn.2024-01.org.netcfg.bench:idle"
ACTIVE = 4


def setup(dp, netns_dir, switcher, n: int):
    names = [f"bench{i}" for i in range(n)]
    spaces = netns_dir.create_many(names)
    for name in names:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "-n", name, "addr", "add", f"{ADDR}/32", "dev", "lo"], check=True)
    socks = []
    for ns in spaces:
        dp.add_namespace(ns.name, ns.fd, ns.identity.cookie)
        dp.set_target(ns.name, f"{IQN}:{ns.name}", {0: "bench"})
        dp.add_portal(ns.name, ADDR, 3260)
        s = switcher.socket_in(ns, socket.AF_INET, socket.SOCK_STREAM)
        s.connect((ADDR, 3260))
        s.sendall(login_pdu(INITIATOR, f"{IQN}:{ns.name}"))
        if login_status(read_pdu(s)[0]) != 0:
            raise RuntimeError(f"idle session in {ns.name} did not log in")
        socks.append(s)
    return spaces, socks


def teardown(dp, netns_dir, spaces, socks):
    for s in socks:
        s.close()
    for ns in spaces:
        dp.remove_target(ns.name, f"{IQN}:{ns.name}")
        dp.remove_namespace(ns.name)
        ns.close()
    netns_dir.delete_many(ns.name for ns in spaces)


def load_run(spaces, seconds: int) -> float:
    # Spread over the namespaces (all in the one when there is one).
    chosen = [spaces[(i * len(spaces)) // ACTIVE] for i in range(ACTIVE)]
    procs = [subprocess.Popen(["ip", "netns", "exec", ns.name, "timeout", "-s", "INT", str(seconds),
                               "iscsi-perf", "-r", "-m", "16", "-b", "8",
                               f"iscsi://{ADDR}/{IQN}:{ns.name}/0"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for ns in chosen]
    total = 0.0
    for p in procs:
        out, _ = p.communicate(seconds + 30)
        found = re.findall(r"iops average (\d+)", out)
        if not found:
            raise RuntimeError(f"iscsi-perf printed no result: {out[-300:]}")
        total += float(found[-1])
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--levels", default="1,64,512")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/iscsi/namespaces.py needs root", file=sys.stderr)
        return 2
    sandbox()
    os.makedirs("/run/netns", exist_ok=True)
    dataplane = load(release_so())
    dp = dataplane.Dataplane(ping_idle=3600.0, ping_timeout=3600.0)
    backing = "/tmp/netcfg-bench-ns.img"
    with open(backing, "wb") as f:
        for _ in range(256):
            f.write(os.urandom(1 << 20))
    os.chmod(backing, 0o600)   # the data path refuses a backing others can read
    dp.add_volume("bench", backing)
    levels = [int(x) for x in a.levels.split(",")]
    results = {n: [] for n in levels}
    setns = {n: [] for n in levels}
    netns_dir = NetnsDir("/run/netns")
    with NetnsSwitcher() as switcher:
        try:
            for rnd in range(a.rounds):
                for n in (levels if rnd % 2 == 0 else levels[::-1]):
                    spaces, socks = setup(dp, netns_dir, switcher, n)
                    try:
                        before = dp.stats()["setns_calls"]
                        results[n].append(load_run(spaces, a.seconds))
                        setns[n].append(dp.stats()["setns_calls"] - before)
                        sessions = sum(t["sessions"] for t in dp.stats()["targets"])
                        assert sessions >= n, f"{sessions} sessions for {n} namespaces"
                    finally:
                        teardown(dp, netns_dir, spaces, socks)
                        time.sleep(0.5)
        finally:
            dp.shutdown()
            os.unlink(backing)
    base = statistics.median(results[levels[0]])
    print(f"# {a.rounds} interleaved rounds x {a.seconds} s, {ACTIVE} x iscsi-perf -r -m 16 -b 8, "
          f"{os.cpu_count()} CPUs")
    print(f"{'namespaces':>10} {'IOPS (median)':>14} {'vs 1':>7} {'setns during load':>18}  runs")
    for n in levels:
        med = statistics.median(results[n])
        print(f"{n:10d} {med:14.0f} {100 * (med / base - 1):+6.1f}% {max(setns[n]):18d}  "
              f"{', '.join(f'{x:.0f}' for x in results[n])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The event storm netcfgd is measured and tested with (bench/storm/run.py,
tests/kernel/test_netcfgd_faults.py): one bridge with PORTS veth ports in
namespace `storm`, then one `ip -batch` that takes every port off the bridge
and down and makes as many foreign veth pairs on a bridge of their own."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Iterable

NETNS = "storm"
PORTS = 500


def config(ports: int = PORTS) -> str:
    """br0 with veth ports p1..pN (peers q1..qN), all in namespace storm."""
    return (f"auto br0\niface br0\n    netns {NETNS}\n"
            f"    bridge-ports ${{' '.join(f'p{{i}}' for i in range(1, {ports + 1}))}}\n"
            f"    bridge-stp no\n\n"
            f"% for i in range(1, {ports + 1}):\n"
            f"auto p${{i}}\niface p${{i}}\n    netns {NETNS}\n    link-type veth\n"
            "    veth-peer-name q${i}\n% endfor\n")


def script(ports: int = PORTS, foreign: bool = True) -> str:
    """The storm as `ip -n storm -batch` lines: every port off br0 and down;
    with ``foreign``, as many veth pairs of someone else's on their own bridge."""
    numbers = range(1, ports + 1)
    lines = [f"link set p{i} nomaster" for i in numbers]
    lines += [f"link set p{i} down" for i in numbers]
    if foreign:
        lines = ["link add other type bridge", "link set other up", *lines]
        lines += [f"link add x{i} master other type veth peer name y{i}" for i in numbers]
        lines += [f"link set x{i} up" for i in numbers]
    return "\n".join(lines) + "\n"


def run(batch: Path, ports: int = PORTS, foreign: bool = True) -> None:
    """Write the storm to ``batch`` and run it (one `ip -batch`, stopping at an error)."""
    batch.write_text(script(ports, foreign))
    subprocess.run(["ip", "-n", NETNS, "-batch", str(batch)], check=True)


def converged(links: Iterable[dict[str, Any]], ports: int = PORTS) -> bool:
    """Every managed port back in br0 and up (entries of `ip -j link show`)."""
    by_name = {link["ifname"]: link for link in links}
    return all(by_name.get(f"p{i}", {}).get("master") == "br0"
               and "UP" in by_name.get(f"p{i}", {}).get("flags", ())
               for i in range(1, ports + 1))

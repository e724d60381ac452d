#!/usr/bin/env python3
"""Proxmox's status poll on a node with NICs, two netcfg trees in the same run.

    .venv/bin/python bench/ifupdown/linkmodes_poll.py --rev before=5a9f02b~1 --tree after=.
    .venv/bin/python bench/ifupdown/linkmodes_poll.py --rev before=REV --rev after=REV \\
        --polls 20 --nics 4 --vnets 100

What it answers (issue 21/25 follow-up): does `ifquery -a -c -o json` pay for
reading link modes (pyroute2's import, one LINKMODES_GET per NIC) on a node
whose file writes none? bench/ifupdown/run.py cannot see it: its eth0 is a
veth, and netcfg asks link modes only of devices without a link kind. Here
eth0 and --nics - 1 more ports (eno1..., `inet manual`, as a node with
unused NICs has them) are veths read as NICs by tests/kernel/nic_standin.py
(the read, the diff and the LINKMODES_GET a veth answers are real). The file
is sdn.py's node: vmbr0 over eth0 and --vnets vnets of a simple zone.

Everything runs in bench/common/sandbox.py's private network + mount
namespace (/sys remounted, tmpfs over /run). The node is brought up once
(`netcfg apply`), then each poll runs each tree in turn (order alternating),
a fresh process each, timed inside the sandbox: wall and CPU (user + system
of the child). A third column, the last tree without the NIC stand-ins, is
the floor (no NIC at all). Every poll must exit 0 with every entry `pass`.
Prints a table; writes bench/out/ifupdown/linkmodes_poll.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "bench", "out", "ifupdown")
STANDIN = os.path.join(REPO, "tests", "kernel", "nic_standin.py")
sys.path.insert(0, os.path.join(REPO, "bench", "common"))
sys.path.insert(0, HERE)

import sdn  # noqa: E402
from sandbox import run_in_sandbox  # noqa: E402


def node_files(workdir: str, nics: list[str], vnets: int) -> str:
    """sdn.py's node with the extra NICs declared `inet manual`; the host file's path."""
    sdn_dir = os.path.join(workdir, "interfaces.d")
    os.makedirs(sdn_dir, exist_ok=True)
    with open(os.path.join(sdn_dir, "sdn"), "w") as f:
        f.write(sdn.sdn_interfaces(sdn.vnets(vnets)))
    host = sdn.host_interfaces(source_glob=os.path.join(sdn_dir, "*"))
    extra = "".join(f"iface {name} inet manual\n\n" for name in nics if name != sdn.NIC)
    stanza = f"iface {sdn.NIC} inet manual\n"
    if stanza not in host:   # else the extra NICs would silently not be declared
        raise SystemExit(f"sdn.host_interfaces() has no '{stanza.strip()}' to add NICs after")
    path = os.path.join(workdir, "interfaces")
    with open(path, "w") as f:
        f.write(host.replace(stanza, f"{stanza}\n{extra}", 1))
    return path


def export_rev(rev: str, into: str) -> str:
    """The tree of ``rev`` (git archive), unpacked into a new directory under ``into``."""
    target = tempfile.mkdtemp(prefix="tree-", dir=into)
    archive = subprocess.run(["git", "-C", REPO, "archive", rev], check=True,
                             capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(target, filter="data")
    return target


# ---------------------------------------------------------------- inside the sandbox

def _one_poll(tree: str, nics: list[str], path: str, report: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, STANDIN, "--tree", tree, "--nics", ",".join(nics),
                           "--report", report, "--", "ifquery", "-a", "-c", "-o", "json",
                           "-i", path], capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(report) as f:
        loaded = json.load(f)
    entries = json.loads(done.stdout) if done.returncode == 0 else []
    passed = bool(entries) and all(e["status"] == "pass" for e in entries)
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime)
            + (after.ru_stime - before.ru_stime), "exit": done.returncode,
            "all_pass": passed, "entries": len(entries), "pyroute2": loaded["pyroute2"],
            "linkmodes_gets": loaded["linkmodes_gets"], "stderr": done.stderr[-500:]}


def inner(spec: dict) -> int:
    nics, path, polls = spec["nics"], spec["path"], spec["polls"]
    env_dir = tempfile.mkdtemp(prefix="linkmodes-poll-", dir="/run")
    os.environ["NETCFG_RUN_DIR"] = os.path.join(env_dir, "netcfg")
    for name in nics:
        subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name",
                        f"{name}-p"], check=True)
        subprocess.run(["ip", "link", "set", f"{name}-p", "up"], check=True)
    trees = spec["trees"]          # [[label, dir], ...]
    last_label, last_tree = trees[-1]
    boot = subprocess.run([sys.executable, STANDIN, "--tree", last_tree, "--nics",
                           ",".join(nics), "--report", os.path.join(env_dir, "boot.json"),
                           "--", "netcfg", "apply", "-c", path], capture_output=True, text=True)
    if boot.returncode != 0:
        print(f"boot failed: {boot.stderr}", file=sys.stderr)
        return 1
    runs = [(label, tree, nics) for label, tree in trees]
    runs.append((f"{last_label}, no NIC", last_tree, []))
    samples: dict[str, list[dict]] = {label: [] for label, _t, _n in runs}
    for i in range(polls):
        order = runs if i % 2 == 0 else runs[::-1]
        for label, tree, with_nics in order:
            samples[label].append(_one_poll(tree, with_nics, path,
                                            os.path.join(env_dir, "poll.json")))
    print(json.dumps(samples))
    return 0


# ---------------------------------------------------------------- outside

def summary(samples: list[dict]) -> dict:
    walls = sorted(s["wall"] for s in samples)
    cpus = sorted(s["cpu"] for s in samples)
    p95 = max(0, int(round(0.95 * len(walls))) - 1)
    return {"polls": len(samples), "wall_median": statistics.median(walls),
            "wall_p95": walls[p95], "cpu_median": statistics.median(cpus), "cpu_p95": cpus[p95],
            "all_ok": all(s["exit"] == 0 and s["all_pass"] for s in samples),
            "entries": samples[-1]["entries"],
            "pyroute2": sorted({s["pyroute2"] for s in samples}),
            "linkmodes_gets": sorted({s["linkmodes_gets"] for s in samples})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR")
    parser.add_argument("--rev", action="append", default=[], metavar="LABEL=REV")
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--nics", type=int, default=4, help="NIC stand-ins, eth0 included")
    parser.add_argument("--vnets", type=int, default=100)
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        with open(args.inner) as f:
            return inner(json.load(f))
    with tempfile.TemporaryDirectory(prefix="linkmodes-poll-") as workdir:
        trees = [[label, os.path.abspath(d)] for label, d in
                 (t.split("=", 1) for t in args.tree)]
        trees = [[label, export_rev(rev, workdir)] for label, rev in
                 (r.split("=", 1) for r in args.rev)] + trees
        if not trees:
            parser.error("give at least one --tree or --rev")
        nics = [sdn.NIC] + [f"eno{n}" for n in range(1, args.nics)]
        spec = {"nics": nics, "path": node_files(workdir, nics, args.vnets),
                "polls": args.polls, "trees": trees}
        spec_path = os.path.join(workdir, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        result = run_in_sandbox([sys.executable, os.path.abspath(__file__), "--inner",
                                 spec_path], timeout=60 + 30 * args.polls * (len(trees) + 1),
                                tmpfs_dirs=("/run",))
    if result.returncode != 0:
        print(result.stderr, file=sys.stderr)
        return 1
    samples = json.loads(result.stdout.strip().splitlines()[-1])
    out = {"args": {"polls": args.polls, "nics": args.nics, "vnets": args.vnets,
                    "trees": args.tree, "revs": args.rev},
           "load_average": os.getloadavg(), "summary": {k: summary(v) for k, v in samples.items()},
           "samples": samples}
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "linkmodes_poll.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"ifquery -a -c -o json, {args.vnets} vnets, {args.nics} NIC stand-ins, "
          f"{args.polls} polls each (load average {os.getloadavg()[0]:.1f})")
    print("| tree | wall median / p95 | CPU median / p95 | pyroute2 loaded | LINKMODES_GET "
          "per poll | all pass |")
    print("|---|---|---|---|---|---|")
    for label, s in out["summary"].items():
        print(f"| {label} | {s['wall_median']:.3f} / {s['wall_p95']:.3f} s | "
              f"{s['cpu_median']:.3f} / {s['cpu_p95']:.3f} s | {s['pyroute2']} | "
              f"{s['linkmodes_gets']} | {s['all_ok']} ({s['entries']} entries) |")
    return 0 if all(s["all_ok"] for s in out["summary"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

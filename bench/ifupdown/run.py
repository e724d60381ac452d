#!/usr/bin/env python3
"""bench/ifupdown: netcfg's ifupdown2 commands against Debian's ifupdown2, on what Proxmox runs.

    .venv/bin/python bench/ifupdown/run.py              # 100 vnets, 20 polls, 5+5 reloads, 4094 VLANs
    .venv/bin/python bench/ifupdown/run.py --quick      # 5 polls, 2+2 reloads, 400 VLANs
    .venv/bin/python bench/ifupdown/run.py --netcfgd    # netcfg's side once more beside netcfgd
    .venv/bin/python bench/ifupdown/run.py --skip-vlans # only the Proxmox SDN host

1. A Proxmox VE node with an SDN simple zone of --vnets vnets (bench/ifupdown/sdn.py writes
   /etc/network/interfaces and interfaces.d/sdn as the installer and pve-network do). Each tool
   gets a fresh sandbox per round (--rounds, order alternating; samples pooled), boots the
   host (`ifup -a`), then runs pve-network's status poll
   `ifquery -a -c -o json` --polls times (median, p95), a no-op `ifreload -a` and a reload
   after a one-line edit (--reloads times each). Both tools read the same files at the same
   paths (bound over /etc/network/interfaces and interfaces.d inside the sandbox).
2. The 4094-VLAN case of bench/compile (`vlans`: 4094 bridges x 48 ports), rendered by
   `netcfg render`: `ifquery -a -i FILE` (parse, no kernel) and `ifquery -a -c -i FILE`
   (against a kernel with the 48 ports and none of the bridges) for each tool.

Every tool runs inside bench/common/sandbox.py's private network + mount namespace, /sys
remounted, a tmpfs over /run and /var/tmp/network (ifupdown2's lock and state, netcfg's lock
and netcfgd's socket). Before, the sandbox refuses to run in the host's namespaces; after
each, run.py checks that nothing new appeared in the host's /run/netns. Times are measured
inside the sandbox, per command (fresh process each, as Proxmox starts them). Goals are
printed, never asserted: poll under 0.5 s.

Outputs in bench/out/ifupdown/: the files, `result[-quick].json` (every figure). Exit 0, or
1 when a tool failed a step (its stderr printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "bench", "out", "ifupdown")
sys.path.insert(0, os.path.join(REPO, "bench", "common"))
sys.path.insert(0, HERE)

import sdn  # noqa: E402
from sandbox import (IFUPDOWN2_CONF, SYSTEM_PATH, SYSTEM_PYTHON, SandboxError,  # noqa: E402
                     ifupdown2_conf, run_in_sandbox)

VENV_BIN = os.path.join(REPO, ".venv", "bin")
TOOLS = ("netcfg", "ifupdown2")
POLL_GOAL_S = 0.5
HOST_INTERFACES = "/etc/network/interfaces"
HOST_INTERFACES_D = "/etc/network/interfaces.d"
# /run: netcfg's lock and netcfgd's socket and ifupdown2's /run/network, private per sandbox.
SANDBOX_TMPFS = ("/run", "/var/tmp/network")


def host_netns_entries() -> set[str]:
    try:
        return set(os.listdir("/run/netns"))
    except FileNotFoundError:
        return set()


def sandboxed(argv: list[str], binds: tuple[tuple[str, str], ...], timeout: float) -> dict:
    """Run the worker in a fresh sandbox; its JSON. Refuses to go on if the host's /run/netns
    gained an entry (nothing run here may create one there)."""
    before = host_netns_entries()
    r = run_in_sandbox(argv, timeout=timeout, tmpfs_dirs=SANDBOX_TMPFS, bind_files=binds,
                       env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": "/root"})
    new = host_netns_entries() - before
    if new:
        raise SystemExit(f"run.py: the host's /run/netns gained {sorted(new)}: stopping")
    if r.returncode != 0 or r.timed_out:
        raise SandboxError(f"worker exit {r.returncode}{' (timed out)' if r.timed_out else ''}: "
                           f"{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def worker_argv(mode: str, tool: str, *extra: str, tree: str | None = None) -> list[str]:
    return [SYSTEM_PYTHON, os.path.join(HERE, "worker.py"), mode, "--tool", tool,
            "--venv-bin", VENV_BIN, "--host-netns", os.readlink("/proc/self/ns/net"),
            "--host-mntns", os.readlink("/proc/self/ns/mnt"),
            *(["--pythonpath", tree_pythonpath(tree)] if tree and tool == "netcfg" else []),
            *extra]


def tree_pythonpath(tree: str) -> str:
    """netcfg/ at the top of a snapshot, netcfgd under daemon/ (its import root) or, in
    commits before the layout of issue 25, at the top as well."""
    return f"{tree}:{os.path.join(tree, 'daemon')}"


def snapshot(rev: str) -> tuple[str, str]:
    """netcfg/, netcfgd and the data as committed at ``rev``, unpacked under bench/out/ifupdown and
    byte-compiled: netcfg's side then runs that commit (PYTHONPATH before the venv's editable
    install), not whatever the shared working tree holds mid-edit. (directory, short hash)"""
    short = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", rev], capture_output=True,
                           text=True, check=True).stdout.strip()
    tree = os.path.join(OUT, f"tree-{short}")
    if not os.path.isdir(tree):
        os.makedirs(tree + ".tmp", exist_ok=True)
        # Today's layout (daemon/netcfgd, data at the top) or an older one (netcfgd/).
        paths = [p for p in ("netcfg", "netcfgd", "daemon/netcfgd", "schemas", "templates")
                 if subprocess.run(["git", "-C", REPO, "cat-file", "-e", f"{short}:{p}"],
                                   capture_output=True).returncode == 0]
        archive = subprocess.run(["git", "-C", REPO, "archive", short, *paths],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tree + ".tmp"], input=archive, check=True)
        subprocess.run([os.path.join(VENV_BIN, "python"), "-m", "compileall", "-q",
                        tree + ".tmp"], check=True, env={**os.environ,
                                                         "PYTHONDONTWRITEBYTECODE": ""})
        os.rename(tree + ".tmp", tree)
    where = subprocess.run([os.path.join(VENV_BIN, "python"), "-c",
                            "import netcfg, netcfgd; print(netcfg.__file__, netcfgd.__file__)"],
                           env={"PYTHONPATH": tree_pythonpath(tree), "PATH": SYSTEM_PATH}, cwd="/",
                           capture_output=True, text=True, check=True).stdout.split()
    if not all(path.startswith(tree + os.sep) for path in where):
        raise SystemExit(f"run.py: the snapshot does not take precedence: {where}")
    return tree, short


def write_host(vnets: int) -> tuple[str, str, str]:
    """The node's files in bench/out/ifupdown, and ifupdown2.conf naming the usual path."""
    os.makedirs(os.path.join(OUT, "interfaces.d"), exist_ok=True)
    interfaces = os.path.join(OUT, "interfaces")
    with open(interfaces, "w") as f:
        f.write(sdn.host_interfaces())
    sdn_file = os.path.join(OUT, "interfaces.d", "sdn")
    with open(sdn_file, "w") as f:
        f.write(sdn.sdn_interfaces(sdn.vnets(vnets)))
    conf = os.path.join(OUT, "ifupdown2.conf")
    with open(conf, "w") as f:
        f.write(ifupdown2_conf(HOST_INTERFACES))
    return interfaces, sdn_file, conf


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def p95(xs: list[float]) -> float:
    """Nearest rank: with 20 samples, the 19th smallest."""
    if not xs:
        return float("nan")
    ordered = sorted(xs)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def ratio(peer: float, ours: float) -> str:
    return f"{peer / ours:.2f}x" if ours > 0 else "-"


def sdn_rows(results: dict[str, dict]) -> list[tuple[str, dict[str, tuple[float, float, str]]]]:
    """(what, {tool: (wall, cpu, extra)}) per table row."""
    rows = []

    def add(what, pick):
        cells = {}
        for tool, r in results.items():
            cells[tool] = pick(r)
        rows.append((what, cells))

    add("boot: ifup -a", lambda r: (r["boot"]["wall"], r["boot"]["cpu"], f"rc {r['boot']['rc']}"))
    add("poll: ifquery -a -c -o json, median", lambda r: (
        median([p["wall"] for p in r["polls"]]), median([p["cpu"] for p in r["polls"]]),
        "pass {}/{}".format(r["polls"][-1].get("pass"), r["polls"][-1].get("interfaces"))))
    add("poll: p95", lambda r: (p95([p["wall"] for p in r["polls"]]),
                                p95([p["cpu"] for p in r["polls"]]), ""))
    add("ifreload -a, nothing changed (median)", lambda r: (
        median([x["wall"] for x in r["reload_noop"]]), median([x["cpu"] for x in r["reload_noop"]]),
        f"wrong after: {len(r['census_noop']['wrong'])}"))
    add("ifreload -a after a one-line edit (median)", lambda r: (
        median([x["wall"] for x in r["reload_edit"]]), median([x["cpu"] for x in r["reload_edit"]]),
        "applied {}/{}".format(sum(x["applied"] for x in r["reload_edit"]), len(r["reload_edit"]))))
    return rows


def print_table(title: str, rows, tools: list[str]) -> None:
    print(f"\n{title}")
    head = f"{'':44}" + "".join(f"{t + ' wall':>16}{'cpu':>8}" for t in tools)
    if len(tools) == 2:
        head += f"{'ratio wall':>12}{'ratio cpu':>11}"
    print(head)
    for what, cells in rows:
        line = f"{what:44}" + "".join(
            f"{cells[t][0]:>14.3f} s{cells[t][1]:>7.3f}" if t in cells else f"{'-':>24}"
            for t in tools)
        failed = any(c[2].startswith("FAILED") for c in cells.values())
        if len(tools) == 2 and all(t in cells for t in tools) and not failed:
            (nw, nc, _), (pw, pc, _) = cells[tools[0]], cells[tools[1]]
            line += f"{ratio(pw, nw):>12}{ratio(pc, nc):>11}"
        elif failed:
            line += "  (no ratio: a tool failed)"
        print(line)
        notes = "; ".join(f"{t}: {cells[t][2]}" for t in tools if t in cells and cells[t][2])
        if notes:
            print(f"{'':46}{notes}")


def bench_sdn(args, binds, sdn_file, tools) -> dict[str, dict]:
    """--rounds rounds, each tool (and netcfg + netcfgd) once per round in a fresh sandbox,
    the order reversed every other round so a busy spell of the shared machine hits both."""
    columns = [(tool, []) for tool in tools]
    if args.netcfgd and "netcfg" in tools:
        columns.insert(1, ("netcfg + netcfgd", ["--netcfgd"]))
    extra = ["--sdn", sdn_file, "--vnets", str(args.vnets), "--polls", str(args.polls),
             "--reloads", str(args.reloads)]
    rounds: dict[str, list[dict]] = {name: [] for name, _ in columns}
    for number in range(args.rounds):
        order = columns if number % 2 == 0 else columns[::-1]
        for name, flags in order:
            print(f"sdn: round {number + 1}/{args.rounds}: {name}: {args.vnets} vnets, "
                  f"{args.polls} polls, {args.reloads}+{args.reloads} reloads", file=sys.stderr,
                  flush=True)
            tool = "ifupdown2" if name == "ifupdown2" else "netcfg"
            rounds[name].append(sandboxed(worker_argv("sdn", tool, *extra, *flags,
                                                      tree=args.tree), binds, timeout=900))
    return {name: merged(runs) for name, runs in rounds.items()}


def merged(runs: list[dict]) -> dict:
    """One tool's rounds as one result: samples pooled, boot the median round's, notes and
    wrong read-backs from every round; the rounds themselves kept."""
    boots = sorted((r["boot"] for r in runs), key=lambda b: b["wall"])
    wrong = sorted({name for r in runs for name in r["census_noop"]["wrong"]})
    return {
        "boot": boots[len(boots) // 2],
        "polls": [p for r in runs for p in r["polls"]],
        "reload_noop": [x for r in runs for x in r["reload_noop"]],
        "reload_edit": [x for r in runs for x in r["reload_edit"]],
        "census_noop": {"wrong": wrong},
        "notes": [n for r in runs for n in r["notes"]],
        "rounds": runs,
    }


def bench_vlans(args, tools) -> dict[str, dict]:
    path = os.path.join(OUT, f"vlans-{args.vlans}x{args.ports}.interfaces")
    rendered = subprocess.run(
        [os.path.join(VENV_BIN, "netcfg"), "render", "-c", os.path.join(REPO, "bench", "compile",
                                                                        "vlans"),
         "--set", f"vlans={args.vlans}", "--set", f"ports={args.ports}"],
        capture_output=True, text=True, check=True).stdout
    with open(path, "w") as f:
        f.write(rendered)
    conf = os.path.join(OUT, "ifupdown2-vlans.conf")
    with open(conf, "w") as f:
        f.write(ifupdown2_conf(path))
    results = {}
    for tool in tools:
        runs = args.vlan_runs if tool == "netcfg" else args.peer_vlan_runs
        print(f"vlans: {tool}: {args.vlans} x {args.ports}, {runs} run(s)", file=sys.stderr,
              flush=True)
        results[tool] = sandboxed(
            worker_argv("vlans", tool, "--file", path, "--ports", str(args.ports),
                        "--runs", str(runs), tree=args.tree),
            ((conf, IFUPDOWN2_CONF),), timeout=3600)
    return results


def vlan_rows(results: dict[str, dict]):
    rows = []
    for key, what in (("query", "ifquery -a -i FILE (no kernel), best"),
                      ("check", "ifquery -a -c -i FILE, best"),
                      ("engine", "netcfg query --check -c FILE (the engine)")):
        cells = {}
        for tool, r in results.items():
            if key not in r["runs"][0]:
                continue
            best = min((run[key] for run in r["runs"]), key=lambda x: x["wall"])
            extra = f"rc {best['rc']}"
            if key == "check":
                extra += f", [pass] {best['pass']} [fail] {best['fail']} lines"
            if key == "engine":
                extra += f", {best['drift']} drift lines"
            if best["rc"] not in (0, 1) or (key == "check" and not best["pass"] + best["fail"]):
                # No verdicts printed: the command failed; its time is not a check's time.
                extra = f"FAILED ({extra}): {best['stderr_tail'].strip()[-120:]}"
            cells[tool] = (best["wall"], best["cpu"], extra)
        rows.append((what, cells))
    return rows


def print_profile(profile: dict) -> None:
    phases = profile["phases_median_s"]
    print("\nWhere netcfg's poll goes (medians, each a fresh interpreter, in-process timers)")
    print(f"  {'interpreter start and exit (python -c pass)':46}"
          f"{profile['interpreter_start_s'] * 1000:7.1f} ms")
    for name, seconds in phases.items():
        print(f"  {name.replace('_', ' '):46}{seconds * 1000:7.1f} ms")
    print("  largest imports (-X importtime, cumulative):")
    for row in profile["top_imports"][:10]:
        print(f"    {'  ' * row['depth']}{row['module']:40}{row['cumulative_ms']:7.1f} ms")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vnets", type=int, default=100)
    p.add_argument("--polls", type=int, default=20)
    p.add_argument("--reloads", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2,
                   help="sandboxes per tool for the SDN node, order alternating (samples pooled)")
    p.add_argument("--vlans", type=int, default=4094)
    p.add_argument("--ports", type=int, default=48)
    p.add_argument("--vlan-runs", type=int, default=3, help="netcfg's runs of the vlans case")
    p.add_argument("--peer-vlan-runs", type=int, default=1, help="ifupdown2's (~30 s+ each)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--netcfgd", action="store_true",
                   help="also run netcfg's side beside a running netcfgd")
    p.add_argument("--only", action="append", choices=TOOLS)
    p.add_argument("--skip-vlans", action="store_true")
    p.add_argument("--skip-sdn", action="store_true")
    p.add_argument("--commit", metavar="REV",
                   help="run netcfg's side from REV's netcfg/, daemon/netcfgd/ and data (git archive) instead "
                        "of the working tree")
    p.add_argument("--profile", action="store_true",
                   help="also profile netcfg's poll (phases, interpreter start, imports)")
    args = p.parse_args(argv)
    if args.quick:
        args.polls, args.reloads, args.vlans, args.vlan_runs, args.rounds = 5, 2, 400, 1, 1
    if os.geteuid() != 0:
        print("run.py: needs root (the sandboxes are namespaces)", file=sys.stderr)
        return 2
    for path in (HOST_INTERFACES, HOST_INTERFACES_D, IFUPDOWN2_CONF, "/usr/sbin/ifquery"):
        if not os.path.exists(path):
            print(f"run.py: {path} missing: apt-get install ifupdown2 python3-mako "
                  f"(make bench-deps)", file=sys.stderr)
            return 2
    tools = args.only or list(TOOLS)
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    args.tree = None
    if args.commit:
        args.tree, head = snapshot(args.commit)
    else:
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "netcfg",
                                "daemon/netcfgd", "schemas", "templates"], capture_output=True, text=True).stdout.strip()
        head += " + uncommitted changes in netcfg/ or daemon/netcfgd/" if dirty else ""
    print(f"netcfg at {head}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {os.getloadavg()[0]:.2f}")
    interfaces, sdn_file, conf = write_host(args.vnets)
    binds = ((interfaces, HOST_INTERFACES), (os.path.dirname(sdn_file), HOST_INTERFACES_D),
             (conf, IFUPDOWN2_CONF))
    report: dict = {"commit": head, "args": vars(args)}
    try:
        if not args.skip_sdn:
            report["sdn"] = bench_sdn(args, binds, sdn_file, tools)
            columns = list(report["sdn"])
            print_table(f"Proxmox node, SDN simple zone, {args.vnets} vnets (goal: poll < "
                        f"{POLL_GOAL_S} s; ratio = ifupdown2 / netcfg)",
                        sdn_rows(report["sdn"]), columns[:1] + [c for c in columns[1:]
                                                                if c == "ifupdown2"])
            if "netcfg + netcfgd" in report["sdn"]:
                print_table("netcfg beside a running netcfgd (ratio = ifupdown2 / netcfg+netcfgd)",
                            sdn_rows(report["sdn"]),
                            ["netcfg + netcfgd"] + [c for c in columns if c == "ifupdown2"])
            for name, r in report["sdn"].items():
                for note in r["notes"]:
                    print(f"note: {name}: {note}")
        if args.profile:
            report["profile"] = sandboxed(worker_argv("profile", "netcfg", "--polls",
                                                      str(max(args.polls, 5)), tree=args.tree),
                                          binds, 600)
            print_profile(report["profile"])
        if not args.skip_vlans:
            report["vlans"] = bench_vlans(args, tools)
            print_table(f"{args.vlans} per-VLAN bridges x {args.ports} ports (bench/compile "
                        f"vlans; ratio = ifupdown2 / netcfg)", vlan_rows(report["vlans"]),
                        list(report["vlans"]))
    except SandboxError as e:
        print(f"run.py: {e}", file=sys.stderr)
        return 1
    finally:
        name = "result-quick.json" if args.quick else "result.json"
        with open(os.path.join(OUT, name), "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

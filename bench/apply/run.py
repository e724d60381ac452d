#!/usr/bin/env python3
"""Apply benchmark: netcfg building, re-applying, tearing down and reading veth pairs in
namespaces, against iproute2 (`ip -batch`) and Debian's ifupdown2 doing the same.

    python3 bench/apply/run.py [--quick] [--pairs N --namespaces M] [--runs R] [--profile]

The config is bench/apply/veths/ (a netcfg.tmpl and its vars.json): `pairs` veth pairs, each
from the root namespace into one of `namespaces` tenant namespaces, an address on each end, both
ends up. Every measurement runs in a fresh private mount + network namespace, a new `unshare`
each (bench/common/sandbox.py, with a tmpfs over /run for /run/netns and netcfg's lock), where
bench/apply/worker.py builds what it needs, times one thing, tears down and prints JSON. The
table shows netcfg's figure, the peer's and their ratio, all from this run:

  (a) build: `apply(model, KernelSession())` in-process, and `netcfg apply --json` end to end,
      vs `ip -batch` (namespaces) + `ip -force -batch` (root side) + `ip -n NS -batch` per
      namespace.                                                       goal: <= 1.3x ip
  (c) no-op re-apply (a second apply, 0 requests) vs the first apply.   goal: < 5 %
  (d) teardown of what (a) built: netcfg applying an empty config, `down(everything=True)`
      (`netcfg down --all`), and the bulk path (one RTM_DELLINK by group + namespace
      deletion; with ip, and with netcfg's own request), vs
      `ip -batch` of one `link del` per device and `netns del` per namespace.
                                                                        goal: >= 20x faster
  (e) reading the state: netcfg's KernelSession.read of every namespace vs `ip -d link show`
      + `ip addr show` in each: bytes of netlink received (strace for iproute2, the socket
      counters for netcfg; strace checks them).                         goal: <= 1/5 the bytes
  (b) ifupdown2 `ifup -a` on the root-namespace subset (it has no namespaces), vs netcfg
      applying that same file; and whether ifupdown2 configured everything the file asks.

(a) and (c) run in R interleaved rounds (netcfg, ip, CLI; default 3): the best time of each
counts, and the median of the rounds' own ratios is printed too. The rest run once.
--quick: 200 pairs in 10 namespaces (under a minute). Results: bench/out/apply[-quick].json,
the rendered files and, with --profile, a cProfile of one in-process apply
(bench/out/apply[-quick].profile.txt). Exits 1 when a measurement fails, 2 on bad usage; goals
are printed, never asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "bench", "out")
CONFIG = os.path.join(HERE, "veths")
WORKER = os.path.join(HERE, "worker.py")
sys.path.insert(0, os.path.join(REPO, "bench", "common"))

from sandbox import SandboxError, ifupdown2_result, run_in_sandbox  # noqa: E402

TIMEOUT = 300.0      # one measurement; the full one-by-one teardown takes ~40 s
FULL = {"pairs": 2000, "namespaces": 50}
QUICK = {"pairs": 200, "namespaces": 10}


class Failed(Exception):
    pass


def venv_python() -> str:
    python = os.path.join(REPO, ".venv", "bin", "python")
    if os.access(python, os.X_OK):
        return python
    probe = subprocess.run([sys.executable, "-c", "import netcfg"], capture_output=True)
    if probe.returncode == 0:
        return sys.executable
    raise SystemExit("run.py: no python with the netcfg package: run `make venv`")


@dataclass
class Bench:
    python: str
    size: dict[str, int]
    settle: float
    log: Any
    timeout: float = TIMEOUT

    @property
    def sets(self) -> list[str]:
        return [a for k, v in self.size.items() for a in ("--set", f"{k}={v}")]

    def worker(self, measurement: str, *extra: str, ifupdown2_file: str | None = None
               ) -> dict[str, Any]:
        """One measurement, in a fresh sandbox; the worker's JSON."""
        argv = [self.python, WORKER, measurement, "--config", CONFIG, *self.sets,
                "--settle", str(self.settle), *extra]
        self.log(f"{measurement} {' '.join(extra)}".rstrip())
        if ifupdown2_file:
            result = ifupdown2_result(argv, ifupdown2_file, timeout=self.timeout)
        else:
            # A private /run: /run/netns for the namespaces, /run/netcfg for the CLI's lock.
            result = run_in_sandbox(argv, timeout=self.timeout, tmpfs_dirs=("/run",))
        if result.timed_out:
            raise Failed(f"{measurement}: timed out after {self.timeout:.0f} s")
        if result.returncode != 0:
            raise Failed(f"{measurement} failed (exit {result.returncode}):\n"
                         f"{result.stderr.strip()[-3000:]}")
        wait_for_namespace_cleanup()
        return json.loads(result.stdout.strip().splitlines()[-1])


def live_namespaces() -> int | None:
    """Network namespaces the kernel still holds (the net_namespace slab), if readable."""
    try:
        with open("/proc/slabinfo") as f:
            for line in f:
                if line.startswith("net_namespace "):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def wait_for_namespace_cleanup(limit: float = 3.0) -> None:
    """The kernel frees a dead sandbox's namespaces later, on a workqueue, under the RTNL lock
    every measurement needs: wait (at most ``limit`` s) until the count stops falling, so one
    measurement's cleanup does not land in the next one's time."""
    deadline, last, steady = time.monotonic() + limit, live_namespaces(), 0
    if last is None:
        time.sleep(0.5)
        return
    while time.monotonic() < deadline and steady < 3:
        time.sleep(0.1)
        now = live_namespaces() or 0
        steady = steady + 1 if now >= last else 0
        last = min(last, now)


# ---- ifupdown2's file ----------------------------------------------------------------------

def compile_bench():
    """bench/compile/run.py as a module (for root_namespace_subset)."""
    spec = importlib.util.spec_from_file_location(
        "bench_compile_run", os.path.join(REPO, "bench", "compile", "run.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def ifupdown2_file(bench: Bench, stem: str) -> tuple[str, dict[str, int]]:
    """The root-namespace subset of the rendered config, for ifupdown2 (and netcfg).

    Without namespaces the peers would all be in the root namespace, where the tenants'
    `eth0`..`ethK` collide; each peer is renamed `p` + its root-side name (`v3-7` -> `pv3-7`).
    """
    netcfg = os.path.join(os.path.dirname(bench.python), "netcfg")
    rendered = subprocess.run([netcfg, "render", "-c", CONFIG, *bench.sets],
                              capture_output=True, text=True, check=True).stdout
    with open(os.path.join(OUT, f"{stem}.interfaces"), "w") as f:
        f.write(rendered)
    subset, changed = compile_bench().root_namespace_subset(rendered)
    lines, name, renamed = [], None, 0
    for line in subset.splitlines():
        words = line.split()
        if words[:1] == ["iface"]:
            name = words[1]
        elif words[:1] == ["veth-peer-name"] and name:
            line = line[:len(line) - len(line.lstrip())] + f"veth-peer-name p{name}"
            renamed += 1
        lines.append(line)
    changed["peers renamed"] = renamed
    path = os.path.join(OUT, f"{stem}.ifupdown2.interfaces")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path, changed


def best_of(rounds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The fastest round of each measurement (the no-op's own fastest for netcfg and cli), and
    each round's build ratio netcfg / ip."""
    out: dict[str, Any] = {}
    for key, runs in rounds.items():
        wall = (lambda r: r["total"]["wall"]) if key == "iproute2" else \
            (lambda r: r["first"]["time"]["wall"] if not r["first"].get("error") else 1e9)
        best = dict(min(runs, key=wall))
        if key != "iproute2":
            best["noop"] = min((r["noop"] for r in runs), key=lambda n: n["time"]["wall"])
            floors = [r["floor"] for r in runs if r.get("floor")]
            if floors:
                best["floor"] = min(floors, key=lambda f: f["time"]["wall"])
        out[key] = best
    ip = rounds.get("iproute2", [])
    for key in ("netcfg", "cli"):
        mine = rounds.get(key, [])
        out.setdefault("round_ratios", {})[key] = [
            m["first"]["time"]["wall"] / i["total"]["wall"] for m, i in zip(mine, ip)]
    return out


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


# ---- the table ------------------------------------------------------------------------------

def secs(t: dict[str, float] | float) -> str:
    wall = t["wall"] if isinstance(t, dict) else t
    return f"{wall:.3f} s" if wall < 10 else f"{wall:.1f} s"


def cpu(t: dict[str, float]) -> str:
    return f"{t['cpu']:.2f}"


def kib(n: int) -> str:
    return f"{n / 1024:,.0f} KiB"


@dataclass
class Row:
    what: str
    netcfg: str
    peer: str
    ratio: str
    goal: str = ""
    met: str = ""


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("met" if ok else "NOT met")


def rows_of(r: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    ip, nc = r.get("iproute2"), r.get("netcfg")
    ratios = r.get("round_ratios", {})

    def rounds(key: str) -> str:
        values = ratios.get(key) or []
        return f", median round {median(values):.2f}x" if len(values) > 1 else ""

    if ip and nc:
        first = nc["first"]["time"]
        ratio = first["wall"] / ip["total"]["wall"]
        failed = " FAILED (see notes)" if nc["first"].get("error") else ""
        rows.append(Row("(a) build: apply() in-process | ip -batch",
                        f"{secs(first)} (cpu {cpu(first)}){failed}",
                        f"{secs(ip['total'])} (cpu {cpu(ip['total'])})",
                        f"{ratio:.2f}x ip (cpu {first['cpu'] / ip['total']['cpu']:.2f}x"
                        f"{rounds('netcfg')})",
                        "<= 1.3x", verdict(ratio <= 1.3)))
        cli = r.get("cli")
        if cli:
            t = cli["first"]["time"]
            rows.append(Row("(a) build: netcfg apply CLI | ip -batch",
                            f"{secs(t)} (cpu {cpu(t)})", secs(ip["total"]),
                            f"{t['wall'] / ip['total']['wall']:.2f}x ip{rounds('cli')}",
                            "<= 1.3x",
                            verdict(t["wall"] / ip["total"]["wall"] <= 1.3)))
    if nc:
        noop, first = nc["noop"], nc["first"]
        share = noop["time"]["wall"] / first["time"]["wall"]
        rows.append(Row("(c) no-op re-apply, in-process | first apply",
                        f"{secs(noop['time'])}, {noop['summary']['requests']} requests",
                        secs(first["time"]), f"{100 * share:.1f} %", "< 5 %",
                        verdict(share < 0.05 and noop["summary"]["requests"] == 0)))
        floor = nc.get("floor")
        if floor:
            rows.append(Row("(c) floor: sockets + dumps of a no-op, nothing parsed | first apply",
                            f"{secs(floor['time'])} ({floor['sockets_seconds']:.3f} s sockets, "
                            f"{floor['messages']} messages)",
                            secs(first["time"]),
                            f"{100 * floor['time']['wall'] / first['time']['wall']:.1f} %"))
    cli = r.get("cli")
    if cli:
        share = cli["noop"]["time"]["wall"] / cli["first"]["time"]["wall"]
        rows.append(Row("(c) no-op re-apply, CLI | first CLI apply",
                        f"{secs(cli['noop']['time'])}, "
                        f"{cli['noop']['summary']['requests']} requests",
                        secs(cli["first"]["time"]), f"{100 * share:.1f} %", "< 5 %",
                        verdict(share < 0.05 and cli["noop"]["summary"]["requests"] == 0)))
    one = r.get("teardown-ip")
    if one:
        peer = f"{secs(one['teardown'])} ({one['lines']} lines)"
        for key, label in (("teardown-empty", "(d) teardown: apply empty config"),
                           ("teardown-down", "(d) teardown: netcfg down --all (down())"),
                           ("teardown-group-ip", "(d) teardown: ip group del + netns del"),
                           ("teardown-group-netcfg",
                            "(d) teardown: netcfg delete_group + netns del")):
            t = r.get(key)
            if not t:
                continue
            took = t["teardown"]["time"] if "time" in t["teardown"] else t["teardown"]
            speedup = one["teardown"]["wall"] / took["wall"]
            left = t["left"]
            note = (f", left {left['namespaces']} netns, {left['links']} links"
                    if left["namespaces"] or left["links"] else "")
            rows.append(Row(label + " | ip one by one", f"{secs(took)}{note}", peer,
                            f"{speedup:.1f}x faster", ">= 20x", verdict(speedup >= 20)))
    rd = r.get("read")
    if rd:
        n, i = rd["netcfg"], rd["iproute2"]
        traced = i.get("strace")
        if traced:
            share = n["netlink"]["bytes_received"] / traced["bytes"]
            rows.append(Row("(e) read all namespaces: netlink bytes | ip -d link + ip addr",
                            kib(n["netlink"]["bytes_received"]), kib(traced["bytes"]),
                            f"{share:.2f}", "<= 0.20", verdict(share <= 0.2)))
            if n.get("link_dump_bytes"):
                rows.append(Row("(e) floor: the link dumps alone | ip -d link + ip addr",
                                kib(n["link_dump_bytes"]), kib(traced["bytes"]),
                                f"{n['link_dump_bytes'] / traced['bytes']:.2f}"))
            rows.append(Row("(e) read: recv calls (ip: + MSG_PEEK calls)",
                            str(n["netlink"]["recv_calls"]),
                            f"{traced['recv_calls']} (+{traced['peek_calls']})",
                            f"{n['netlink']['recv_calls'] / traced['recv_calls']:.2f}"))
            per = i.get("strace_per_namespace", {})
            for label, key in (("root", ""), ("one tenant", None)):
                states = n.get("per_namespace", {})
                state = states.get(key) if key is not None else next(
                    (v for k, v in states.items() if k), None)
                if label in per and state:
                    rows.append(Row(f"(e) read: bytes, {label} namespace ({state['links']} links)",
                                    kib(state["bytes"]), kib(per[label]["bytes"]),
                                    f"{state['bytes'] / per[label]['bytes']:.2f}", "<= 0.20",
                                    verdict(state["bytes"] / per[label]["bytes"] <= 0.2)))
        else:
            rows.append(Row("(e) read: output bytes (no strace: ip's text output)",
                            kib(n["netlink"]["bytes_received"]), kib(i["output_bytes"]),
                            f"{n['netlink']['bytes_received'] / i['output_bytes']:.2f}"))
        rows.append(Row("(e) read: time (ip: one process per command)",
                        f"{secs(n['time'])} (again {secs(n['again'])})",
                        f"{secs(i['time'])} ({i['processes']} processes)",
                        f"{n['time']['wall'] / i['time']['wall']:.2f}x"))
    up, nf = r.get("ifupdown2"), r.get("netcfg-file")
    if up and nf:
        t = nf["first"]["time"]
        missing = (f"; NOT configured: {up['missing_devices']} devices, {up['not_up']} down, "
                   f"{up['missing_addresses']} addresses"
                   if up["missing_devices"] or up["not_up"] or up["missing_addresses"]
                   else "; all configured") + f", {up['warnings']} warnings"
        speedup = up["time"]["wall"] / t["wall"]
        rows.append(Row("(b) root subset: netcfg apply() | ifupdown2 ifup -a",
                        secs(t), f"{secs(up['time'])} (exit {up['returncode']}){missing}",
                        f"{speedup:.1f}x faster", ">= 10x", verdict(speedup >= 10)))
        floor = r.get("iproute2-file")
        if floor:
            # No tool can beat the kernel's own time for the work: the best ratio possible.
            ceiling = up["time"]["wall"] / floor["total"]["wall"]
            rows.append(Row("(b) floor: the same file through ip -batch | ifupdown2 ifup -a",
                            f"{secs(floor['total'])} ({floor['lines']} lines)"
                            + (" FAILED" if floor["errors"] else ""),
                            secs(up["time"]), f"{ceiling:.1f}x (the most any tool can be)"))
    return rows


def print_table(rows: list[Row], size: dict[str, int]) -> None:
    print(f"\napply benchmark: {size['pairs']} veth pairs in {size['namespaces']} namespaces")
    header = Row("measurement | peer", "netcfg", "peer", "ratio", "goal", "")
    widths = [max(len(getattr(r, f)) for r in [header, *rows])
              for f in ("what", "netcfg", "peer", "ratio", "goal", "met")]
    for row in [header, None, *rows]:
        if row is None:
            print("  ".join("-" * w for w in widths))
            continue
        cells = [row.what, row.netcfg, row.peer, row.ratio, row.goal, row.met]
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())


def print_notes(r: dict[str, Any]) -> None:
    nc, ip = r.get("netcfg"), r.get("iproute2")
    print(f"\nload average before / after: {r.get('load_before')} / {r.get('load_after')} "
          f"({os.cpu_count()} CPUs): on a shared machine the CPU ratio is the fairer one")
    link = ((r.get("read") or {}).get("netcfg", {}).get("dumps", {}).get("") or {}).get("link")
    if link and link.get("attribute_bytes"):
        n = link["messages"]
        top = list(link["attribute_bytes"].items())[:6]
        print(f"netcfg's link dump (root namespace): {link['bytes'] / n:.0f} B per link; "
              + ", ".join(f"{k} {v / n:.0f}" for k, v in top))
    if nc:
        first = nc["first"]
        print(f"\nnetcfg compile (render+parse+validate, in-process, not in apply's time): "
              f"{secs(nc['compile'])}")
        s = first["summary"]
        print(f"netcfg first apply: {s['operations']} operations in {s['batches']} batches, "
              f"{s['requests']} requests; reads: "
              + ", ".join(f"{x['seconds']:.3f} s" for x in first["reads"])
              + f"; netlink {first['netlink']['sendmsg_calls']} sendmsg, "
              f"{first['netlink']['recv_calls']} recv, {kib(first['netlink']['bytes_received'])}")
        print("netcfg no-op apply: reads " + ", ".join(
            f"{x['seconds']:.3f} s" for x in nc["noop"]["reads"]))
        if nc["census"] != nc["expected"]:
            print(f"WARNING: netcfg built {nc['census']}, the config asks {nc['expected']}")
    if ip:
        print(f"ip -batch: netns {secs(ip['netns'])}, root {secs(ip['root'])}, "
              f"{ip['processes'] - 2} tenant batches {secs(ip['tenants'])}; "
              f"{ip['lines']} lines")
        if ip["errors"]:
            print(f"WARNING: ip reported errors: {ip['errors'][:3]}")
        if ip["census"] != ip["expected"]:
            print(f"WARNING: ip built {ip['census']}, the config asks {ip['expected']}")
    for key in ("teardown-group-ip", "teardown-group-netcfg"):
        t = r.get(key)
        if t:
            print(f"{key}: group delete {secs(t['group'])}, {t['namespaces']} netns del "
                  f"{secs(t['netns'])}" + (f"; errors {t['errors']}" if t["errors"] else ""))
    for key in ("teardown-empty", "teardown-down"):
        t = r.get(key)
        if t:
            s = t["teardown"]["summary"]
            print(f"{key}: {s.get('operations')} operations, {s.get('requests')} requests, "
                  f"in {s.get('batches')} batches" + (f"; FAILED: {t['teardown']['error']}"
                                                      if t["teardown"]["error"] else ""))
    for key in ("netcfg", "netcfg-file"):
        for step in ("first", "noop"):
            error = (r.get(key) or {}).get(step, {}).get("error")
            if error:
                print(f"{key} {step} apply FAILED: {error[:600]}")
    for run in r.get("profile-runs", []):
        print(f"profiled apply: {secs(run['time'])}"
              + (f", FAILED: {run['error'][:600]}" if run["error"] else "")
              + f" (profile: {os.path.relpath(r['profile'], REPO)})")
    up = r.get("ifupdown2")
    if up and (up["returncode"] or up["missing_devices"] or up["not_up"]
               or up["missing_addresses"]):
        print(f"ifupdown2: {json.dumps(up['examples'])}")
        if up["stderr_tail"]:
            print("ifupdown2 stderr (end): " + up["stderr_tail"][-600:])


# ---- main -----------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 pairs in 10 namespaces")
    parser.add_argument("--pairs", type=int)
    parser.add_argument("--namespaces", type=int)
    parser.add_argument("--settle", type=float,
                        help="seconds between building and the next step (default 2, 1 quick)")
    parser.add_argument("--runs", type=int, default=3,
                        help="rounds of (a)/(c) measurements, interleaved (default 3); the "
                             "best of each counts")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile one in-process apply (its own sandbox)")
    parser.add_argument("--no-ifupdown2", action="store_true", help="skip (b)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help=f"seconds one measurement may take (default {TIMEOUT:.0f}; "
                             f"10,000 namespaces need ~900)")
    parser.add_argument("--only", action="append", metavar="MEASUREMENT",
                        help="run only these worker measurements (repeatable)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("run.py: needs root (namespaces); everything runs in private namespaces",
              file=sys.stderr)
        return 2
    size = dict(QUICK if args.quick else FULL)
    if args.pairs:
        size["pairs"] = args.pairs
    if args.namespaces:
        size["namespaces"] = args.namespaces
    stem = "apply" + ("-quick" if args.quick else "")
    os.makedirs(OUT, exist_ok=True)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    bench = Bench(venv_python(), size, args.settle if args.settle is not None
                  else (1.0 if args.quick else 2.0), log, args.timeout)
    plan: list[tuple[str, list[str]]] = [
        ("read", []),
        ("teardown-group-ip", ["--via", "ip"]), ("teardown-group-netcfg", ["--via", "netcfg"]),
        ("teardown-empty", []), ("teardown-down", []), ("teardown-ip", []),
    ]
    want_ifupdown2 = not args.no_ifupdown2 and os.path.exists("/usr/sbin/ifup")
    results: dict[str, Any] = {"size": size, "settle": bench.settle,
                               "load_before": os.getloadavg()[0]}
    try:
        # (a) and (c), in interleaved rounds: a busy machine slows all three alike.
        for round_ in range(args.runs):
            for key in ("netcfg", "iproute2", "cli"):
                if not args.only or key in args.only:
                    results.setdefault("rounds", {}).setdefault(key, []).append(
                        bench.worker(key))
        results.update(best_of(results.get("rounds", {})))
        for key, extra in plan:
            measurement = key.rsplit("-", 1)[0] if key.startswith("teardown-group") else key
            if args.only and key not in args.only and measurement not in args.only:
                continue
            results[key] = bench.worker(measurement, *extra)
        if args.profile:
            profile = os.path.join(OUT, f"{stem}.profile.txt")
            for attempt in range(2):   # see the notes: a profiled apply can fail on its own
                run = bench.worker("netcfg", "--profile", profile)
                results.setdefault("profile-runs", []).append(
                    {"time": run["first"]["time"], "error": run["first"]["error"]})
                if not run["first"]["error"]:
                    break
            results["profile"] = profile
        if want_ifupdown2 and (not args.only or "ifupdown2" in args.only):
            path, changed = ifupdown2_file(bench, stem)
            results["ifupdown2_file"] = {"path": path, "changed": changed}
            bench.settle = 0.0
            results["netcfg-file"] = bench.worker("netcfg-file", "--interfaces", path)
            results["iproute2-file"] = bench.worker("iproute2", "--interfaces", path)
            results["ifupdown2"] = bench.worker("ifupdown2", "--interfaces", path,
                                                ifupdown2_file=path)
    except (Failed, SandboxError) as e:
        print(f"run.py: {e}", file=sys.stderr)
        print_table(rows_of(results), size)
        return 1
    results["load_after"] = os.getloadavg()[0]
    rows = rows_of(results)
    print_table(rows, size)
    print_notes(results)
    if not want_ifupdown2 and not args.no_ifupdown2:
        print("(b) skipped: ifupdown2 is not installed (apt-get install ifupdown2 python3-mako)")
    if not shutil.which("strace"):
        print("(e) compares output bytes: strace is not installed (apt-get install strace)")
    results["table"] = [vars(r) for r in rows]
    path = os.path.join(OUT, f"{stem}.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(f"\nresults: {os.path.relpath(path, REPO)}; whole run {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

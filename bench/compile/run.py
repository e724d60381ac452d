#!/usr/bin/env python3
"""Compile benchmark: netcfg's full compile against Debian ifupdown2 parsing the same file.

    python3 bench/compile/run.py [--quick] [--netcfg PATH] [--runs N]

For each case directory here (vlans/, tenants/: a netcfg.tmpl and its vars.json):

1. `netcfg render -c CASE` writes the rendered stanzas to bench/out/CASE.interfaces;
2. `netcfg plan -c CASE --json` (render + parse + validate + lower + plan) and `netcfg check -c
   CASE` are timed, best wall time of N runs (3; 1 with --quick);
3. ifupdown2 parses the rendered file, `ifquery -a -i FILE`, in the same rounds (interleaved), inside a private mount+network
   namespace (bench/common/sandbox.py), timed the same way (wall and CPU time);
4. a table prints both times, their ratio and the lowering result (netdevs before/after, the
   kernel memory the lowering saves).

ifupdown2 has no network namespaces, so for cases that use them it reads the root-namespace
subset of the rendered file (bench/out/CASE.ifupdown2.interfaces), made by
`root_namespace_subset` below from the very text netcfg rendered: it does less work than netcfg
there, and the ratio is conservative.

--quick passes `--set vlans=400` / `--set tenants=100` (and gives ifupdown2 the file rendered
with them).
Exits 1 if a tool fails (and prints the end of its stderr), 2 on bad usage. The ratio is
reported, never asserted: performance goals live here, not in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "bench", "out")
sys.path.insert(0, os.path.join(REPO, "bench", "common"))

from sandbox import SandboxError, ifupdown2_result  # noqa: E402

NETCFG_TIMEOUT = 600.0
IFQUERY_TIMEOUT = 600.0  # the full vlans case takes ~30 s


@dataclass
class Case:
    name: str
    quick_vars: dict  # --set overrides of vars.json for --quick

    @property
    def directory(self) -> str:
        return os.path.join(HERE, self.name)


CASES = [
    Case("vlans", {"vlans": 400}),
    Case("tenants", {"tenants": 100}),
]


class ToolFailed(Exception):
    def __init__(self, what: str, returncode: int, stderr: str):
        super().__init__(what)
        self.what, self.returncode, self.stderr = what, returncode, stderr


@dataclass
class Timing:
    """Best wall time of the runs, and the CPU time (user + system) of that same run."""

    wall: float
    cpu: float


@dataclass
class Row:
    case: str
    size: str
    compile: Timing | None = None
    check: Timing | None = None
    ifquery: Timing | None = None
    lowering: dict = field(default_factory=dict)
    operations: int | None = None
    stanzas: int = 0
    peer_stanzas: int = 0
    peer_note: str = ""
    round_ratios: list[float] = field(default_factory=list)  # ifquery / netcfg plan, per round


# ---- ifupdown2's input ----------------------------------------------------------------------

# Attributes that only make sense with network namespaces; ifupdown2 has none.
NETNS_ONLY_ATTRIBUTES = ("netns", "veth-peer-netns")
_STANZA_START = re.compile(r"^(\S+)(?:\s+(\S+))?")


def root_namespace_subset(text: str) -> tuple[str, dict[str, int]]:
    """What ifupdown2 can read of a rendered netcfg file: the root namespace only.

    Drops `netns NAME` stanzas, every `iface` stanza with a `netns` attribute and the `auto`
    names that only such stanzas declare, and `veth-peer-netns` attributes; rewrites root-
    namespace `route PREFIX via GW ...` (netcfg's declarative routes) as ifupdown2's
    `post-up ip route replace PREFIX via GW ...`. Returns the text and what was changed.
    Works on the rendered text line by line (a stanza is a column-0 line and the indented
    lines after it), so it needs no part of netcfg.
    """
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if blocks and (not line.strip() or line[:1].isspace()):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    dropped = {"netns stanzas": 0, "netns ifaces": 0, "auto names": 0,
               "netns-only attributes": 0, "routes rewritten": 0}
    kept_blocks, root_ifaces, netns_ifaces = [], set(), set()
    for block in blocks:
        head = _STANZA_START.match(block[0])
        keyword, name = (head.group(1), head.group(2)) if head else ("", None)
        attrs = [line.split(None, 1) for line in block[1:] if line.strip()]
        if keyword == "netns":
            dropped["netns stanzas"] += 1
            continue
        if keyword == "iface":
            if any(a and a[0].replace("_", "-") == "netns" for a in attrs):
                dropped["netns ifaces"] += 1
                netns_ifaces.add(name)
                continue
            root_ifaces.add(name)
            body = [block[0]]
            for line in block[1:]:
                words = line.split(None, 1)
                attr = words[0].replace("_", "-") if words else ""
                if attr in NETNS_ONLY_ATTRIBUTES:
                    dropped["netns-only attributes"] += 1
                    continue
                if attr == "route" and len(words) > 1:
                    indent = line[:len(line) - len(line.lstrip())]
                    line = f"{indent}post-up ip route replace {_ip_route_words(words[1])}"
                    dropped["routes rewritten"] += 1
                body.append(line)
            block = body
        kept_blocks.append(block)
    out = []
    for block in kept_blocks:
        head = block[0].split()
        if head and (head[0] == "auto" or head[0].startswith("allow-")):
            names = [n for n in head[1:] if n in root_ifaces or n not in netns_ifaces]
            dropped["auto names"] += len(head) - 1 - len(names)
            if not names:
                continue
            block = [" ".join([head[0], *names])] + block[1:]
        out.extend(block)
    return "\n".join(out) + "\n", {k: v for k, v in dropped.items() if v}


def _ip_route_words(route: str) -> str:
    words = route.split()
    if words and words[0] == "default6":
        words = ["-6", "default", *words[1:]]
    return " ".join(words)


def count_stanzas(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith(("iface ", "netns ")))


# ---- running the tools ----------------------------------------------------------------------

def find_netcfg(given: str | None) -> str:
    if given:
        if not (os.access(given, os.X_OK) or shutil.which(given)):
            raise SystemExit(f"run.py: --netcfg {given}: not an executable")
        return given
    venv = os.path.join(REPO, ".venv", "bin", "netcfg")
    if os.access(venv, os.X_OK):
        return venv
    found = shutil.which("netcfg")
    if found:
        return found
    raise SystemExit("run.py: no netcfg found: run `make venv`, or pass --netcfg PATH")


def run_timed(argv: list[str], what: str, timeout: float = NETCFG_TIMEOUT) -> tuple[Timing, str]:
    """Run argv once; return its wall and CPU time and its stdout.

    Raises ToolFailed on a non-zero exit. CPU time is counted because other work on a shared
    machine stretches wall time; it is the fairer ratio when the machine is busy.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ToolFailed(what, -9, f"timed out after {timeout:.0f} s\n{e.stderr or ''}") from None
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise ToolFailed(what, proc.returncode, proc.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(seconds, cpu), proc.stdout


def case_variables(case: Case, quick: bool) -> tuple[dict, list[str]]:
    """The case's variables (vars.json, with --quick's overrides) and netcfg's --set options."""
    with open(os.path.join(case.directory, "vars.json")) as f:
        variables = json.load(f)
    if not quick:
        return variables, []
    variables = {**variables, **case.quick_vars}
    sets = [arg for k, v in case.quick_vars.items() for arg in ("--set", f"{k}={json.dumps(v)}")]
    return variables, sets


def bench_case(case: Case, netcfg: str, runs: int, peer_runs: int, quick: bool, log) -> Row:
    variables, sets = case_variables(case, quick)
    directory = case.directory
    row = Row(case.name, " ".join(f"{k}={v}" for k, v in variables.items()))
    base = os.path.join(OUT, case.name + ("-quick" if quick else ""))

    log(f"{case.name}: render")
    _, rendered = run_timed([netcfg, "render", "-c", directory, *sets],
                            f"netcfg render ({case.name})")
    with open(base + ".interfaces", "w") as f:
        f.write(rendered)
    row.stanzas = count_stanzas(rendered)
    peer_text, changes = root_namespace_subset(rendered)
    peer_file = base + ".interfaces"
    if changes:
        peer_file = base + ".ifupdown2.interfaces"
        with open(peer_file, "w") as f:
            f.write(peer_text)
        row.peer_note = "root-namespace subset: " + ", ".join(
            f"{v} {k}" for k, v in changes.items())
    row.peer_stanzas = count_stanzas(peer_text)

    # Rounds interleave netcfg and ifquery, so a slow spell of this shared machine hits both
    # sides of a round alike: best times per side, and the median of the rounds' own ratios.
    plans, checks, peers = [], [], []
    plan_text = ""
    rounds = max(runs, peer_runs)
    for number in range(1, rounds + 1):
        log(f"{case.name}: round {number}/{rounds}")
        if number <= runs:
            timing, plan_text = run_timed([netcfg, "plan", "-c", directory, "--json", *sets],
                                          f"netcfg plan ({case.name})")
            plans.append(timing)
            checks.append(run_timed([netcfg, "check", "-c", directory, *sets],
                                    f"netcfg check ({case.name})")[0])
        if number <= peer_runs:
            peers.append(ifupdown2_result(["ifquery", "-a", "-i", peer_file], peer_file,
                                          IFQUERY_TIMEOUT))
    row.compile = min(plans, key=lambda t: t.wall)
    row.check = min(checks, key=lambda t: t.wall)
    row.round_ratios = [p.seconds / t.wall for p, t in zip(peers, plans)]
    with open(base + ".plan.json", "w") as f:
        f.write(plan_text)
    try:
        plan = json.loads(plan_text)
    except ValueError as e:
        raise ToolFailed(f"netcfg plan ({case.name})", 0, f"output is not JSON: {e}") from None
    row.lowering = plan.get("lowering") or {}
    operations = plan.get("operations")
    row.operations = len(operations) if isinstance(operations, list) else operations
    peer = min(peers, key=lambda result: result.seconds)
    rc, out, err = peer.returncode, peer.stdout, peer.stderr
    with open(base + ".ifquery.out", "w") as f:
        f.write(out)
    with open(base + ".ifquery.err", "w") as f:
        f.write(err)
    if rc != 0:
        raise ToolFailed(f"ifquery -a ({case.name})", rc, err)
    row.ifquery = Timing(peer.seconds, peer.cpu_seconds or 0.0)
    messages = [line for line in err.splitlines() if line.strip()]
    if messages:
        where = os.path.relpath(base, REPO) + ".ifquery.err"
        row.peer_note += ("; " if row.peer_note else "") + \
            f"ifquery printed {len(messages)} stderr lines (see {where})"
    return row


# ---- report ---------------------------------------------------------------------------------

def _mib(n) -> str:
    if not isinstance(n, (int, float)):
        return "?"
    return f"{n / 2**20:,.1f} MiB" if n < 10 * 2**20 else f"{n / 2**20:,.0f} MiB"


def _ratio(peer: Timing | None, ours: Timing | None, attr: str) -> str:
    if peer is None or ours is None or not getattr(ours, attr):
        return "-"
    return f"{getattr(peer, attr) / getattr(ours, attr):.1f}x"


def _secs(t: Timing | None) -> str:
    return f"{t.wall:.2f} ({t.cpu:.2f})" if t is not None else "-"


def print_table(rows: list[Row], runs: int) -> None:
    header = ("case", "size", "stanzas", "netcfg plan", "netcfg check", "ifupdown2 ifquery -a",
              "ratio wall", "ratio cpu", "median round", "check ratio",
              "netdevs before -> after", "memory saved")
    table = [header]
    for r in rows:
        low = r.lowering
        table.append((
            r.case, r.size,
            f"{r.stanzas}" + (f" (peer {r.peer_stanzas})" if r.peer_stanzas != r.stanzas else ""),
            _secs(r.compile), _secs(r.check), _secs(r.ifquery),
            _ratio(r.ifquery, r.compile, "wall"), _ratio(r.ifquery, r.compile, "cpu"),
            f"{statistics.median(r.round_ratios):.1f}x" if r.round_ratios else "-",
            _ratio(r.ifquery, r.check, "wall"),
            f"{low.get('netdevs_before', '?')} -> {low.get('netdevs_after', '?')}",
            _mib(low.get("estimated_bytes_saved")),
        ))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print()
    print(f"times: wall seconds (CPU seconds, user+system), best of {runs} rounds; each round runs "
          f"netcfg plan, netcfg check and ifquery back to back.")
    print("netcfg plan = the full compile (render, parse, validate, lower, plan); netcfg check = "
          "render, parse, validate. ratio = ifquery / netcfg plan (best times); median round = "
          "the median of each round's own ratio; check ratio = ifquery / netcfg check. "
          "Goal: >= 10x on vlans.")
    for r in rows:
        if r.peer_note:
            print(f"{r.case}: {r.peer_note}")
        if r.operations is not None:
            print(f"{r.case}: plan has {r.operations} operations")
        for line in describe_lowering(r.lowering):
            print(f"{r.case}: {line}")


def describe_lowering(lowering: dict) -> list[str]:
    """One line per lowered group and a count of refusals, from the plan's `lowering`."""
    lines = []
    for group in lowering.get("lowered") or lowering.get("groups") or ():
        replaced = group.get("replaced") or []
        names = ", ".join(replaced[:2]) + (f", ... {replaced[-1]}" if len(replaced) > 2 else "")
        vlans = ",".join(group.get("vlans") or [])
        lines.append(
            f"lowered {len(replaced)} {group.get('kind', '?')}s ({names}) and "
            f"{group.get('subinterfaces', '?')} subinterfaces into {group.get('into', '?')}"
            f" (VLANs {vlans or '?'} on {len(group.get('ports') or [])} ports): "
            f"-{group.get('netdevs_removed', '?')} +{group.get('netdevs_added', '?')} netdevs, "
            f"{_mib(group.get('bytes_saved'))} saved")
    refusals = lowering.get("refusals") or []
    if refusals:
        first = refusals[0].get("reason", refusals[0])
        lines.append(f"{len(refusals)} lowering refusals, e.g. {first}")
    if isinstance(lowering.get("text"), str):
        lines.append(lowering["text"])
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small cases (vlans=400, tenants=100), one run each")
    parser.add_argument("--netcfg", metavar="PATH",
                        help="netcfg executable (default: .venv/bin/netcfg, then PATH)")
    parser.add_argument("--runs", type=int,
                        help="netcfg runs per measurement (default 3, 1 with --quick)")
    parser.add_argument("--peer-runs", type=int,
                        help="ifquery runs per case (default: as --runs; the best counts)")
    parser.add_argument("--case", action="append", choices=[c.name for c in CASES],
                        help="run only this case (repeatable)")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    peer_runs = args.peer_runs or runs
    netcfg = find_netcfg(args.netcfg)
    os.makedirs(OUT, exist_ok=True)

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    rows = []
    for case in CASES:
        if args.case and case.name not in args.case:
            continue
        try:
            rows.append(bench_case(case, netcfg, runs, peer_runs, args.quick, log))
        except ToolFailed as e:
            tail = "\n".join(e.stderr.strip().splitlines()[-20:])
            print(f"run.py: {e.what} failed (exit {e.returncode}):\n{tail}", file=sys.stderr)
            if rows:
                print_table(rows, runs)
            return 1
        except SandboxError as e:
            print(f"run.py: {e}", file=sys.stderr)
            return 1
    print(f"netcfg: {netcfg}")
    print_table(rows, runs)
    results = os.path.join(OUT, "compile" + ("-quick" if args.quick else "") + ".json")
    with open(results, "w") as f:
        json.dump([asdict(r) for r in rows], f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The differential tier's VM half: many files in one boot of Debian's 6.12 kernel.

    tests/compat/vm_differential.py [FILE...]      # default: every file recorded vm-tier
    tests/compat/vm_differential.py --subset       # the few `make test` runs
    tests/compat/vm_differential.py --check        # exit 1 on a change against expectation.json
    tests/compat/vm_differential.py --update-expectation [--doc]

The host kernel lacks dummy, 8021q, bond, vrf and bridge VLAN filtering, so
tests/compat/differential.py reports files that need them as `vm-tier`. This
boots Debian's 6.12 kernel once with virtme-ng (TCG, as `make test-vm` does)
and runs differential.py's per-file logic over those files inside it, under
`unshare --net --mount --propagation private` as on the host; each sandbox is
still differential.py's inner half (its own net + mount namespace, /sys
remounted, /run and /var/tmp tmpfs).

Where the time goes under TCG (measured, docs/compat.md "VM tier"): starting
Python and importing netcfg or ifupdown2 costs tens of seconds per process,
and the host-tier harness starts seven such processes per file. Here one
guest process imports netcfg and ifupdown2 once; each sandbox is a fork that
unshares its namespaces, and each `netcfg ...`, `ifup` or `ifquery` run is a
fork of that, calling the tool's main() with its argv, environment and
stdout/stderr captured (ifupdown2 is Debian's unpacked package, on the same
Python 3 as the venv; it needs only the standard library and mako).

The guest writes one JSON line per file into .cache/compat-vm/ on the host's
filesystem (a virtme-ng --rwdir) as it goes, so a cut run keeps what it did.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import gc
import importlib.util
import io
import json
import os
import pkgutil
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, fields
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import differential as dt  # noqa: E402

OUT_DIR = REPO / ".cache" / "compat-vm"
EXPECTATION_KEY = "differential_vm"
VM_TIMEOUT_S = 3600
# A subset: one or more files for each kind the host lacks, none waiting on DHCP
# (eni-cm_11485 waits ~60 s in ifupdown2's dhclient: the full run has it).
SUBSET = [
    "ifupdown2/scp-bond.default.interfaces",                          # bond
    "ifupdown2/examples-mgmt-vrf.interfaces",                         # vrf
    "pve-network/evpn-ebgp_loopback-host.interfaces",                 # dummy
    "ifupdown2/scp-bridge_new_attribute_igmp_mld.after.interfaces",   # VLAN-aware bridge
    "pve-docs/pve-network-L697.interfaces",                           # bond + vlan (Proxmox)
    "pve-network/vlan-bridge_vlanaware-sdn.interfaces",               # Proxmox SDN vlan zone
]


# ---- guest: warm forks ---------------------------------------------------------------------

class Warm:
    """netcfg's and ifupdown2's main(), imported once; each run is a fork."""

    def __init__(self, trace: Path | None = None) -> None:
        self.trace = trace          # one line per tool run: its seconds
        from netcfg.cli.main import main as netcfg_main
        self.netcfg_main = netcfg_main
        # netcfg's commands import most of what they run when they run (apply, the
        # kernel edge, pyroute2): import every module now, or each fork imports them again.
        import netcfg
        for mod in pkgutil.walk_packages(netcfg.__path__, "netcfg."):
            if mod.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(mod.name)
            except Exception:   # noqa: BLE001 - an optional module's dependency missing
                pass
        share = dt.IFUPDOWN2_ROOT / "usr" / "share" / "ifupdown2"
        # ifupdown2 resolves its configuration's path when imported (ifupdown/config.py):
        # beside the package, where each sandbox mounts its own ifupdown2.conf.
        conf_dir = share / "etc" / "network" / "ifupdown2"
        if not dt.INSTALLED_CONF.exists():
            dt._sh("mount", "-t", "tmpfs", "compat", str(conf_dir))
            src = dt.IFUPDOWN2_ROOT / "etc" / "network" / "ifupdown2"
            for name in ("ifupdown2.conf", "addons.conf"):
                shutil.copy(src / name, conf_dir / name)
        sys.path[1:1] = [str(share), str(dt.MAKO_PATH)]
        spec = importlib.util.spec_from_file_location("ifupdown2_cli", share / "__main__.py")
        self.ifupdown2 = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.ifupdown2)
        # What stand_alone() and ifupdownmain's addon loader import, imported now.
        import ifupdown.main  # noqa: F401
        import lib.nlcache  # noqa: F401
        addons = share / "addons"
        sys.path.insert(1, str(addons))
        conf = dt.IFUPDOWN2_ROOT / "etc" / "network" / "ifupdown2" / "addons.conf"
        for line in conf.read_text().splitlines():
            name = line.split(",")[-1].strip()
            if name and not line.startswith("#") and (addons / f"{name}.py").exists():
                try:
                    __import__(name)
                except Exception:   # noqa: BLE001 - ifupdown2 skips such an addon too
                    pass
        import mako.template  # noqa: F401
        # A plan (pure: no kernel) here, so that what netcfg builds on first use
        # (schema validators, templates) is built once.
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self.netcfg_main(["plan", "--json", "-c", str(HERE / "corpus" / "pve-docs" /
                                                          "pve-network-L697.interfaces")])
        # Out of the collector's reach: a child's collection would otherwise touch
        # (and so copy, page by page) every object the imports made.
        gc.freeze()

    def _ifupdown2(self, argv: list[str]) -> int:
        sys.argv = list(argv[1:])          # [/run/compat-bin/ifup, -a]: it acts by argv[0]
        return self.ifupdown2.main()

    def run(self, argv: list[str], env: dict | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
        """differential.run_command's contract, without a new interpreter where it can."""
        start = time.monotonic()
        if argv[:len(dt.NETCFG)] == dt.NETCFG:
            what = "netcfg " + " ".join(argv[len(dt.NETCFG):][:2])
            proc = fork_call(lambda: self.netcfg_main(argv[len(dt.NETCFG):]), argv, env, timeout)
        elif argv[0] == dt.SYSTEM_PYTHON and Path(argv[1]).name in ("ifup", "ifquery"):
            what = " ".join([Path(argv[1]).name, *argv[2:3]])
            proc = fork_call(lambda: self._ifupdown2(argv), argv, env, timeout)
        else:
            what = " ".join(argv[:3])
            proc = dt.run_command(argv, env, timeout)
        if self.trace:
            with open(self.trace, "a") as f:
                f.write(f"{time.monotonic() - start:7.1f} s  {what}\n")
        return proc

    def plan(self, path: Path) -> dict | None:
        proc = self.run(dt.netcfg_argv("plan", "--json", "-c", str(path)), None, 300)
        if "Traceback" in proc.stderr:
            raise RuntimeError("netcfg plan crashed: " + proc.stderr.strip()[-600:])
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def sandbox(self, tool: str, path: Path, ports: list[str], takeover: bool,
                by_name: list[str] | None = None, peer_tools: bool = False) -> dict:
        """differential.sandbox, as a fork that unshares instead of `unshare` + python."""
        with tempfile.TemporaryDirectory(prefix="netcfg-compat-") as work:
            spec_path = dt.write_spec(work, tool, path, ports, takeover, by_name, peer_tools)

            def body() -> int:
                unshare(CLONE_NEWNET | CLONE_NEWNS)
                return dt.inner(spec_path, self.run)
            proc = fork_call(body, ["sandbox", tool], None, dt.TIMEOUT * 3)
            result_path = os.path.join(work, "result.json")
            if not os.path.exists(result_path):
                raise RuntimeError(f"{tool} sandbox failed (exit {proc.returncode}): "
                                   f"{(proc.stdout + proc.stderr).strip()[-1500:]}")
            return json.loads(Path(result_path).read_text())


CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000     # <linux/sched.h>


def unshare(flags: int) -> None:
    """unshare(2) (os.unshare is Python 3.12's)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")


def fork_call(fn, argv: list[str], env: dict | None,
              timeout: float | None) -> subprocess.CompletedProcess:
    """fn() in a forked child with ``env`` and its stdout/stderr captured; its return
    value is the exit status. Killed (status -9) after ``timeout`` seconds."""
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                os.setpgid(0, 0)
                if env is not None:
                    os.environ.clear()
                    os.environ.update(env)
                code = fn()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:   # noqa: BLE001 - the child reports and exits, never returns
                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except Exception:   # noqa: BLE001
                        pass
                os._exit(code if isinstance(code, int) and 0 <= code < 256 else 1)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if deadline is not None and time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                rc = -9
                break
            time.sleep(0.05)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
        return subprocess.CompletedProcess(argv, rc, texts[0], texts[1])


def guest(out_dir: Path, names: list[str]) -> int:
    """Inside the VM, in a private net + mount namespace: every file, one JSON line each."""
    t0 = time.monotonic()
    dt._refuse_unless_private({"outer_net": -1, "outer_mnt": -1})
    dt._sh("mount", "--make-rprivate", "/")
    dt.prepare_outside()
    warm = Warm(out_dir / "trace.log")
    kinds = dt.host_kinds()
    log = out_dir / "outcomes.jsonl"
    with log.open("a") as f:
        f.write(json.dumps({"guest": os.uname().release, "kinds": sorted(kinds),
                            "warm_s": round(time.monotonic() - t0, 1)}) + "\n")
    jobs = max(1, int(os.environ.get("NETCFG_COMPAT_VM_JOBS", "1")))
    if jobs == 1:
        _run_names(warm, kinds, names, out_dir, log)
        return 0
    # Several files at a time: one runs mostly on one vCPU, and ifupdown2 waits idle
    # (dhclient's 60 s). Each sandbox is its own namespaces, so they do not meet; each
    # worker writes its own outcomes.N.jsonl (appends from several writers over the
    # host's shared directory are not known to stay whole).
    pids = []
    for w in range(jobs):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _run_names(warm, kinds, names[w::jobs], out_dir, out_dir / f"outcomes.{w}.jsonl")
            except BaseException:   # noqa: BLE001 - a worker reports and exits
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                os._exit(code)
        pids.append(pid)
    return int(any(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0 for pid in pids))


def _run_names(warm: "Warm", kinds: set[str], names: list[str], out_dir: Path,
               log: Path) -> None:
    for name in names:
        start = time.monotonic()
        with open(out_dir / "trace.log", "a") as f:
            f.write(f"--- {name}\n")
        if name.endswith(PEER_APPLY):   # NAME@peer-apply: peers.py --apply --vm
            name = name[:-len(PEER_APPLY)]
            import peers
            row = {"file": name}
            try:
                record = peers.load()["files"][name]
                row["digest"] = record["digest"]
                row["verdicts"] = peers.judge_apply(path_of(name), record, kinds,
                                                    start=warm.sandbox, plan_of=warm.plan,
                                                    enough=True)
            except (RuntimeError, subprocess.SubprocessError, OSError, ValueError,
                    KeyError) as e:
                row["error"] = str(e)[-1500:]
            row["wall_s"] = round(time.monotonic() - start, 1)
            with log.open("a") as f:
                f.write(json.dumps({"peer_apply": row}) + "\n")
            print(f"{name}: peers' apply in {row['wall_s']} s", flush=True)
            continue
        if ALONE in name:       # NAME@ifupdown2-only=PORT,...: a file netcfg refuses
            name, ports = name.split(ALONE, 1)
            try:
                row = {"ifupdown2_alone": dt.ifupdown2_alone(path_of(name), ports.split(","),
                                                             start=warm.sandbox)}
            except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
                row = {"ifupdown2_alone": {"file": name, "error": str(e)[-1500:]}}
            row["ifupdown2_alone"]["file"] = name
            row["wall_s"] = round(time.monotonic() - start, 1)
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{name}: ifupdown2 alone in {row['wall_s']} s", flush=True)
            continue
        try:
            out = dt.run_file(path_of(name), kinds, plan_of=warm.plan, start=warm.sandbox)
            out.file = name
        except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
            out = dt.Outcome(name, "error", str(e)[-1500:])
        row = asdict(out)
        row["wall_s"] = round(time.monotonic() - start, 1)
        with log.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{name}: {out.status} in {row['wall_s']} s", flush=True)


# ---- host: boot once, read the outcomes ----------------------------------------------------

ALONE = "@ifupdown2-only="
PEER_APPLY = "@peer-apply"


path_of = dt.path_of


def vm_tier_files() -> list[str]:
    recorded = json.loads(dt.EXPECTATION.read_text()).get("differential", {})
    return sorted(n for n, r in recorded.items() if r["status"] == "vm-tier")


def kernel() -> str:
    found = sorted(Path("/boot").glob("vmlinuz-6.12.*-amd64"),
                   key=lambda p: [int(x) if x.isdigit() else x for x in p.name.split(".")])
    if not found:
        raise SystemExit("vm_differential: no /boot/vmlinuz-6.12.*-amd64 (make vm-deps)")
    return str(found[-1])


def boot(names: list[str], timeout_s: int | None = None, jobs: int = 1,
         out_dir: Path = OUT_DIR) -> tuple[list[dt.Outcome], dict]:
    """One VM for every file; the outcomes it wrote into ``out_dir``, and its
    header line with timings. Two runs at once need two out dirs (--out-dir):
    each empties its dir's outcomes first, so a shared one would mix or lose
    them; a second run into a dir in use is refused."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = (out_dir / ".lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"vm_differential: another run is writing {out_dir}; give this "
                         f"one its own (--out-dir DIR)") from None
    with lock:
        return _boot(names, timeout_s, jobs, out_dir)


def _boot(names: list[str], timeout_s: int | None, jobs: int,
          out_dir: Path) -> tuple[list[dt.Outcome], dict]:
    log = out_dir / "outcomes.jsonl"
    log.write_text("")
    for part in out_dir.glob("outcomes.*.jsonl"):
        part.unlink()
    (out_dir / "files.txt").write_text("\n".join(names) + "\n")
    py = REPO / ".venv" / "bin" / "python"
    # PYTHONPATH: the netcfg of this tree, whichever tree the venv was installed from.
    limit = (f" NETCFG_COMPAT_TIMEOUT_S={timeout_s}" if timeout_s else "") + \
        f" NETCFG_COMPAT_VM_JOBS={jobs}"
    inner = (f"env PYTHONPATH={REPO}:{REPO / 'daemon'}{limit} unshare --net --mount --propagation private {py} -u "
             f"{Path(__file__).resolve()} --guest {out_dir}")
    # vng runs virtme-run from PATH: the venv's bin first, as `make test-vm` puts it.
    env = dict(os.environ, PATH=f"{REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '')}")
    vng = shutil.which("vng", path=env["PATH"])
    if not vng:
        raise SystemExit("vm_differential: vng missing (make vm-deps)")
    start = time.monotonic()
    with (out_dir / "vm.log").open("w") as vm_log:     # the guest's console, as it goes
        proc = subprocess.run(["timeout", str(VM_TIMEOUT_S), vng, "--run", kernel(),
                               "--disable-kvm", "--memory", "2G", "--cpus", "2",
                               f"--rwdir={out_dir}", "--exec", inner],
                              cwd=REPO, env=env, stdout=vm_log, stderr=subprocess.STDOUT)
    rows = [json.loads(ln) for path in [log, *sorted(out_dir.glob("outcomes.*.jsonl"))]
            for ln in path.read_text().splitlines() if ln.strip()]
    head = rows[0] if rows and "guest" in rows[0] else {}
    head["vm_s"] = round(time.monotonic() - start, 1)
    head["vm_rc"] = proc.returncode
    names_of = {f.name for f in fields(dt.Outcome)}
    outcomes = [dt.Outcome(**{k: v for k, v in r.items() if k in names_of})
                for r in rows if "file" in r]
    head["wall_s"] = {r["file"]: r.get("wall_s") for r in rows if "file" in r}
    head["ifupdown2_alone"] = [r["ifupdown2_alone"] for r in rows if "ifupdown2_alone" in r]
    head["peer_apply"] = [r["peer_apply"] for r in rows if "peer_apply" in r]
    return outcomes, head


def regressions(outcomes: list[dt.Outcome]) -> list[str]:
    """What test_compat checks on the host tier, against the VM tier's record."""
    recorded = json.loads(dt.EXPECTATION.read_text()).get(EXPECTATION_KEY, {})
    bad = []
    for o in outcomes:
        rec = recorded.get(o.file)
        if rec is None:
            continue
        if rec["status"] not in ("same", "differs"):
            continue
        if o.status not in ("same", "differs"):
            bad.append(f"{o.file}: {o.status} {o.detail}")
            continue
        new = sorted(set(o.differences) - set(rec["differences"]))
        if new:
            bad.append(f"{o.file}: differences not recorded:\n    " + "\n    ".join(new))
        if len(o.takeover_disruptive) > rec["takeover_disruptive"]:
            bad.append(f"{o.file}: takeover disturbs more: {o.takeover_disruptive}")
    return bad


def mark_timeouts(outcomes: list[dt.Outcome]) -> None:
    for o in outcomes:
        if -9 in (o.ifupdown2_rc, o.netcfg_rc) and o.status != "timeout":
            # Killed at the harness's time limit (TCG on a loaded host): not a result.
            o.status, o.detail = "timeout", o.detail + " (killed at the time limit)"


def update_expectation(outcomes: list[dt.Outcome]) -> None:
    expectation = json.loads(dt.EXPECTATION.read_text())
    recorded = expectation.setdefault(EXPECTATION_KEY, {})
    for o in outcomes:
        recorded[o.file] = {"status": o.status, "detail": o.detail,
                            "differences": o.differences,
                            "unexplained": dt.unexplained(o),
                            "takeover_disruptive": len(o.takeover_disruptive),
                            "query_rc": o.netcfg_query_rc}
    dt.EXPECTATION.write_text(json.dumps(expectation, indent=1, sort_keys=True) + "\n")


DOC_BEGIN = "<!-- BEGIN VM differential table: generated by tests/compat/vm_differential.py --doc -->"
DOC_END = "<!-- END VM differential table -->"


def write_doc(outcomes: list[dt.Outcome]) -> None:
    # The vm-tier files no boot has run yet are rows too, so the table says what is left.
    ran = {o.file for o in outcomes}
    outcomes = outcomes + [dt.Outcome(n, "not run", "no VM boot has run it yet")
                           for n in vm_tier_files() if n not in ran]
    text = dt.render(outcomes).replace(dt.DOC_BEGIN, DOC_BEGIN).replace(dt.DOC_END, DOC_END)
    doc = dt.DOC.read_text()
    if DOC_BEGIN not in doc or DOC_END not in doc:
        raise SystemExit(f"vm_differential: {dt.DOC} has no {DOC_BEGIN!r} section")
    head, rest = doc.split(DOC_BEGIN, 1)
    dt.DOC.write_text(head + text + rest.split(DOC_END, 1)[1])


def write_doc_rows(outcomes: list[dt.Outcome], begin: str = DOC_BEGIN,
                   end: str = DOC_END) -> None:
    """A rerun of some files (the whole set takes over an hour): their rows put in
    place of the table's rows for the same files (a file new to the tier gets a
    row in name order), and the counts line recounted from every row (a row with
    a difference left as measured is unexplained). BEGIN, END: the table's markers
    (differential.py's host table uses it too)."""
    DOC_BEGIN, DOC_END = begin, end     # noqa: N806
    fresh, legend = {}, ""
    for line in dt.render(outcomes).splitlines():
        if line.startswith("| ") and not line.startswith("| file "):
            fresh[line.split(" | ", 1)[0][2:]] = line
        elif line.startswith("`explain.explain`"):
            legend = line
    doc = dt.DOC.read_text()
    if DOC_BEGIN not in doc or DOC_END not in doc:
        raise SystemExit(f"vm_differential: {dt.DOC} has no {DOC_BEGIN!r} section")
    head, rest = doc.split(DOC_BEGIN, 1)
    table, tail = rest.split(DOC_END, 1)
    lines = [fresh.pop(ln.split(" | ", 1)[0][2:], ln) if ln.startswith("| ")
             else legend if ln.startswith("`explain.explain`") else ln
             for ln in table.splitlines()]
    # Files the table has no row for yet (newly accepted ones): in file order.
    rows = [i for i, ln in enumerate(lines) if ln.startswith("| ") and
            not ln.startswith("| file ") and not ln.startswith("|---")]
    for name, row in sorted(fresh.items()):
        after = [i for i in rows if lines[i].split(" | ", 1)[0][2:] < name]
        at = (after[-1] + 1) if after else rows[0] if rows else len(lines)
        lines.insert(at, row)
        rows = [i + (i >= at) for i in rows] + [at]
    counts: dict[str, int] = {}
    disruptive = 0
    for ln in lines:
        cells = ln.split(" | ")
        if not ln.startswith("| ") or cells[0] == "| file" or len(cells) < 5:
            continue
        status, reasons = cells[1], cells[4].rstrip(" |").split("<br>")
        if status == "differs":
            status += (" (unexplained)" if any(r.startswith(RAW_DIFFERENCE) for r in reasons)
                       else " (a netcfg bug)" if any(r.startswith("netcfg bug") for r in reasons)
                       else " (deliberate only)")
        counts[status] = counts.get(status, 0) + 1
        disruptive += cells[3].split(" / ")[0].strip().isdigit() and \
            int(cells[3].split(" / ")[0]) > 0
    lines = ["Outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
             + f"; takeover disruptive on {disruptive} file(s)." if ln.startswith("Outcomes: ")
             else ln for ln in lines]
    dt.DOC.write_text(head + DOC_BEGIN + "\n".join(lines) + "\n" + DOC_END + tail)


# How a difference left as measured starts (explained ones read "reason (count)").
RAW_DIFFERENCE = ("link ", "route ", "sysctl ", "bridge vlans ", "address ", "(and ")


def record(outcomes: list, args: argparse.Namespace) -> list[str]:
    """What --update-expectation, --doc and --check ask of a run's outcomes
    (one boot's, or several boots' read back with --from-outcomes); returns
    the regressions --check found, each printed."""
    if args.update_expectation:
        update_expectation(outcomes)
    if args.doc:
        write_doc(outcomes)
    if args.doc_rows:
        write_doc_rows(outcomes)
    bad = regressions(outcomes) if args.check else []
    for line in bad:
        print("vm_differential: " + line, file=sys.stderr)
    return bad


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--guest"]:
        out_dir = Path(argv[1])
        names = (out_dir / "files.txt").read_text().split()
        return guest(out_dir, names)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="names as in expectation.json (default: vm-tier); "
                    f"NAME{ALONE}PORT,... runs ifupdown2 alone on a file netcfg refuses")
    ap.add_argument("--subset", action="store_true", help="make test's few files")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a file changed against expectation.json's VM record")
    ap.add_argument("--update-expectation", action="store_true")
    ap.add_argument("--doc", action="store_true", help="write the table into docs/compat.md")
    ap.add_argument("--doc-rows", action="store_true",
                    help="put this run's rows in place of the same files' in docs/compat.md's "
                         "table, and recount (a rerun of some files)")
    ap.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="files run at a time in the guest (default 1; the state each "
                         "compares is its own sandboxes', so only the time changes)")
    ap.add_argument("--timeout", type=int, metavar="SECONDS",
                    help=f"each sandbox's limit in the guest (default {dt.TIMEOUT}; ifup -a "
                         "gets 30 s less): for a file killed at the limit, rerun alone")
    ap.add_argument("--out-dir", metavar="DIR", type=Path, default=OUT_DIR,
                    help=f"where the guest writes its outcomes and console (default "
                         f"{OUT_DIR.relative_to(REPO)}); one per run when several run at once")
    ap.add_argument("--from-outcomes", metavar="JSONL", type=Path, nargs="+",
                    help="boot nothing: take the outcomes earlier boots wrote (copies of "
                         f"{OUT_DIR.relative_to(REPO)}/outcomes.jsonl, one per batch) for "
                         "--doc, --update-expectation and --check")
    args = ap.parse_args(argv)
    if args.from_outcomes:
        outcomes = dt.read_outcomes(args.from_outcomes)
        mark_timeouts(outcomes)
        return 1 if record(outcomes, args) else 0
    if os.geteuid() != 0:
        print("vm_differential: needs root (namespaces)", file=sys.stderr)
        return 1
    names = args.files or (SUBSET if args.subset else vm_tier_files())
    outcomes, head = boot(names, args.timeout, args.jobs, args.out_dir.resolve())
    mark_timeouts(outcomes)
    for o in outcomes:
        print(dt.report(o))
    for alone in head["ifupdown2_alone"]:
        print(json.dumps(alone, indent=1))
    print(f"vm: {head.get('guest')} rc {head.get('vm_rc')}, {head.get('vm_s')} s in all, "
          f"warm-up {head.get('warm_s')} s; per file: {head.get('wall_s')}")
    missing = sorted({n.split(ALONE)[0].removesuffix(PEER_APPLY) for n in names}
                     - {o.file for o in outcomes} - {a["file"] for a in head["ifupdown2_alone"]}
                     - {a["file"] for a in head["peer_apply"]})
    if missing:
        print(f"vm_differential: {len(missing)} files not run (see {args.out_dir / 'vm.log'}): "
              + ", ".join(missing), file=sys.stderr)
    bad = record(outcomes, args)
    errors = [o for o in outcomes if o.status == "error"]
    return 1 if bad or missing or errors else 0


if __name__ == "__main__":
    raise SystemExit(main())

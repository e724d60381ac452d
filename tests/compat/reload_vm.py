"""The reload differential's VM half: the vm-tier pairs in one boot of Debian's 6.12 kernel.

reload_differential.py --vm calls boot(); inside the VM, `reload_differential.py
--guest OUT_DIR` calls guest(). It is vm_differential.py's way (one guest
process imports netcfg and ifupdown2 once, each sandbox and each tool run is
a fork: under TCG a fresh interpreter costs tens of seconds), with ifreload
added to the commands run warm: ifupdown2's (it acts by argv[0]) and netcfg's
ifup/ifreload (netcfg.ifupdown.main). Each pair writes one JSON line into
.cache/compat-reload-vm/ (a virtme-ng --rwdir) as it goes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, fields
from pathlib import Path

import differential as dt
import reload_differential as rd
import vm_differential as vmd

OUT_DIR = dt.REPO / ".cache" / "compat-reload-vm"
VM_TIMEOUT_S = 2400


class ReloadWarm(vmd.Warm):
    """vm_differential.Warm, with ifreload (both tools') and netcfg's ifup run warm."""

    def __init__(self, trace: Path | None = None) -> None:
        super().__init__(trace)
        from netcfg.ifupdown.main import main as ifupdown_main
        import pyroute2.netlink.rtnl  # noqa: F401  (reload_events' listener, forked)
        self.ifupdown_main = ifupdown_main

    def run(self, argv: list[str], env: dict | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
        if argv[:len(rd.IFUPDOWN)] == rd.IFUPDOWN:
            rest = argv[len(rd.IFUPDOWN):]
            return self._traced(" ".join(rest[:1] + rest[-1:]), lambda: vmd.fork_call(
                lambda: self.ifupdown_main(rest), argv, env, timeout))
        if argv[0] == dt.SYSTEM_PYTHON and Path(argv[1]).name == "ifreload":
            return self._traced("ifupdown2 ifreload", lambda: vmd.fork_call(
                lambda: self._ifupdown2(argv), argv, env, timeout))
        return super().run(argv, env, timeout)

    def _traced(self, what: str, call) -> subprocess.CompletedProcess:
        start = time.monotonic()
        proc = call()
        if self.trace:
            with open(self.trace, "a") as f:
                f.write(f"{time.monotonic() - start:7.1f} s  {what}\n")
        return proc

    def reload_sandbox(self, tool: str, pair: rd.Pair, ports: list[str]) -> dict:
        """reload_differential.sandbox, as a fork that unshares."""
        with tempfile.TemporaryDirectory(prefix="netcfg-reload-") as work:
            spec = rd.write_spec(work, tool, pair, ports)

            def body() -> int:
                vmd.unshare(vmd.CLONE_NEWNET | vmd.CLONE_NEWNS)
                return rd.inner(spec, self.run)
            proc = vmd.fork_call(body, ["sandbox", tool], None, dt.TIMEOUT * 3)
            return rd._result(work, tool, proc)


def guest(out_dir: Path) -> int:
    """Inside the VM, in a private net + mount namespace: each named pair, one line each."""
    t0 = time.monotonic()
    dt._refuse_unless_private({"outer_net": -1, "outer_mnt": -1})
    dt._sh("mount", "--make-rprivate", "/")
    dt.prepare_outside()
    warm = ReloadWarm(out_dir / "trace.log")
    kinds = dt.host_kinds()
    pairs = {p.name: p for p in rd.load_pairs()}
    log = out_dir / "outcomes.jsonl"
    with log.open("a") as f:
        f.write(json.dumps({"guest": os.uname().release, "kinds": sorted(kinds),
                            "warm_s": round(time.monotonic() - t0, 1)}) + "\n")
    for name in (out_dir / "pairs.txt").read_text().split():
        start = time.monotonic()
        with open(out_dir / "trace.log", "a") as f:
            f.write(f"--- {name}\n")
        try:
            out = rd.run_pair(pairs[name], kinds, plan_of=warm.plan, start=warm.reload_sandbox,
                              raw_dir=out_dir / "raw")
        except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
            out = rd.Outcome(name, "vm", "error", str(e)[-1500:])
        row = asdict(out)
        row["wall_s"] = round(time.monotonic() - start, 1)
        with log.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{name}: {out.status} in {row['wall_s']} s", flush=True)
    return 0


def boot(pairs: list[rd.Pair]) -> list[rd.Outcome]:
    """One VM for every pair; the outcomes it wrote (a pair it did not reach: error)."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    log = OUT_DIR / "outcomes.jsonl"
    log.write_text("")
    (OUT_DIR / "trace.log").write_text("")
    shutil.rmtree(OUT_DIR / "raw", ignore_errors=True)
    (OUT_DIR / "pairs.txt").write_text("\n".join(p.name for p in pairs) + "\n")
    py = dt.REPO / ".venv" / "bin" / "python"
    # NETCFG_PYTHONPATH: a committed snapshot's netcfg, while others edit the tree.
    # (netcfg/ and daemon/, the import root of netcfgd: SNAPSHOT:SNAPSHOT/daemon).
    pythonpath = os.environ.get("NETCFG_PYTHONPATH", f"{dt.REPO}:{dt.REPO / 'daemon'}")
    inner = (f"env PYTHONPATH={pythonpath} unshare --net --mount --propagation private "
             f"{py} -u {Path(rd.__file__).resolve()} --guest {OUT_DIR}")
    env = dict(os.environ, PATH=f"{dt.REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '')}")
    for name in ("NETCFG", "NETCFG_IFUPDOWN"):
        env.pop(name, None)         # the guest runs its warm imports, not these commands
    vng = shutil.which("vng", path=env["PATH"])
    if not vng:
        raise SystemExit("reload_vm: vng missing (make vm-deps)")
    with (OUT_DIR / "vm.log").open("w") as vm_log:
        subprocess.run(["timeout", str(VM_TIMEOUT_S), vng, "--run", vmd.kernel(),
                        "--disable-kvm", "--memory", "2G", "--cpus", "2",
                        f"--rwdir={OUT_DIR}", "--exec", inner],
                       cwd=dt.REPO, env=env, stdout=vm_log, stderr=subprocess.STDOUT)
    rd.RAW_DIR.mkdir(parents=True, exist_ok=True)
    for raw in (OUT_DIR / "raw").glob("*.json"):       # for --rejudge, beside the host's
        shutil.copy(raw, rd.RAW_DIR / raw.name)
    names = {f.name for f in fields(rd.Outcome)}
    rows = [json.loads(ln) for ln in log.read_text().splitlines() if ln.strip()]
    outcomes = [rd.Outcome(**{k: v for k, v in r.items() if k in names})
                for r in rows if "pair" in r]
    reached = {o.pair for o in outcomes}
    outcomes += [rd.Outcome(p.name, "vm", "error", f"the VM did not reach it (see {OUT_DIR}"
                            f"/vm.log)") for p in pairs if p.name not in reached]
    for o in outcomes:
        print(rd.report(o), flush=True)
    return outcomes

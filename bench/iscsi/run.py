#!/usr/bin/env python3
"""netcfgd's embedded iSCSI target against Debian's tgt, same backing file,
same clients, interleaved runs, loopback.

    sudo .venv/bin/python bench/iscsi/run.py [--rounds 3] [--seconds 8] [--syscalls] [--compare-sync]

Root only: it re-runs itself inside `unshare --net --mount` (private
loopback; tmpfs over /run so tgtd's control socket never reaches the host).
Workloads: 4k random read QD32 (libiscsi's iscsi-perf -r -m 32 -b 8), 128k
sequential read QD32 (-m 32 -b 256), and 4k random write QD32 (wperf.c here,
built against libiscsi: iscsi-perf only reads). Per run: IOPS and the
target's CPU time per I/O (/proc/PID/stat). With --syscalls, one extra short
run per target and random workload under `strace -c -f` counts syscalls per
I/O. --compare-sync adds two more targets: ours with io_uring switched off
(netcfgd-sync: every backing transfer a pread/pwrite) and ours batching
writes as well as reads (netcfgd-bw), to show what batching buys on the
same machine state. Prints a table and the ratio ours/tgt;
docs/benchmarks.md records results.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IQN = "iqn.2024-01.org.netcfg.bench"
OURS_PORT, TGT_PORT = 3260, 3261
# Variants of ours (--compare-sync): name -> (port, ours.py flags).
VARIANTS = {"netcfgd-sync": (3262, ["--no-io-uring"]), "netcfgd-bw": (3263, ["--batch-writes"])}
TICK = os.sysconf("SC_CLK_TCK")
# workload: (client, its arguments); "perf" is iscsi-perf, "wperf" wperf.c.
WORKLOADS = {"4k-randread-qd32": ("perf", ["-r", "-m", "32", "-b", "8"]),
             "128k-seqread-qd32": ("perf", ["-m", "32", "-b", "256"]),
             "4k-randwrite-qd32": ("wperf", ["-m", "32", "-b", "8"])}
WPERF = "/tmp/netcfg-bench-wperf"


def sandbox() -> None:
    """Re-exec inside a private network + mount namespace."""
    if os.environ.get("NETCFG_BENCH_SANDBOXED") != "1":
        env = dict(os.environ, NETCFG_BENCH_SANDBOXED="1")
        os.execvpe("unshare", ["unshare", "--net", "--mount", "--propagation", "private",
                               sys.executable, *sys.argv], env)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", b"/run", b"tmpfs", ctypes.c_ulong(0), b"mode=755"):
        raise OSError(ctypes.get_errno(), "mount tmpfs on /run")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime + stime (all threads)


def release_so() -> str:
    crate = ROOT / "daemon/dataplane"
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=crate, check=True,
                   env=dict(os.environ, PYO3_PYTHON=sys.executable))
    return str(crate / "target/release/lib_dataplane.so")


def build_wperf() -> None:
    """The write load generator, built against libiscsi (libiscsi-dev)."""
    subprocess.run(["cc", "-O2", "-Wall", "-o", WPERF, str(ROOT / "bench/iscsi/wperf.c"), "-liscsi"],
                   check=True)


class Ours:
    name = "netcfgd"

    def __init__(self, so: str, backing: str, threads: int | None, variant: str | None = None):
        port, flags = VARIANTS[variant] if variant else (OURS_PORT, [])
        self.name = variant or self.name
        args = [sys.executable, str(ROOT / "bench/iscsi/ours.py"), "--so", so, "--backing", backing,
                "--iqn", f"{IQN}:{self.name}", "--port", str(port), *flags]
        if threads:
            args += ["--threads", str(threads)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("netcfgd's target did not start")
        self.pid = self.proc.pid
        self.url = f"iscsi://127.0.0.1:{port}/{IQN}:{self.name}/0"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)


class Tgt:
    """tgtd in the foreground; stopped as DESIGN.md "Peers" says (it ignores SIGTERM)."""
    name = "tgt"

    def __init__(self, backing: str):
        self.proc = subprocess.Popen(["tgtd", "-f", "--iscsi", f"portal=127.0.0.1:{TGT_PORT}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while self.adm("--mode", "system", "--op", "show", check=False).returncode:
            if time.monotonic() > deadline:
                raise RuntimeError("tgtd did not start")
            time.sleep(0.1)
        self.adm("--mode", "target", "--op", "new", "--tid", "1", "--targetname", f"{IQN}:tgt")
        self.adm("--mode", "logicalunit", "--op", "new", "--tid", "1", "--lun", "1",
                 "--backing-store", backing)
        self.adm("--mode", "target", "--op", "bind", "--tid", "1", "--initiator-address", "ALL")
        self.pid = self.proc.pid
        self.url = f"iscsi://127.0.0.1:{TGT_PORT}/{IQN}:tgt/1"

    @staticmethod
    def adm(*args: str, check: bool = True):
        return subprocess.run(["tgtadm", "--lld", "iscsi", *args], capture_output=True, check=check)

    def stop(self) -> None:
        self.adm("--op", "update", "--mode", "sys", "--name", "State", "-v", "offline", check=False)
        self.adm("--op", "delete", "--mode", "target", "--tid", "1", "--force", check=False)
        self.adm("--op", "delete", "--mode", "system", check=False)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def perf(url: str, workload: tuple[str, list[str]], seconds: int) -> float:
    client, args = workload
    if client == "wperf":
        r = subprocess.run([WPERF, *args, "-t", str(seconds), url], capture_output=True, text=True)
        found = re.findall(r"^iops (\d+)", r.stdout, re.M)
    else:
        r = subprocess.run(["timeout", "-s", "INT", str(seconds), "iscsi-perf", *args, url],
                           capture_output=True, text=True)
        found = re.findall(r"iops average (\d+)", r.stdout + r.stderr)
    if not found:
        raise RuntimeError(f"{client} printed no result for {url}: {(r.stdout + r.stderr)[-500:]}")
    return float(found[-1])


def syscalls_per_io(target, workload: tuple[str, list[str]], seconds: int) -> float:
    """Count the target's syscalls under strace during one run (slower: only
    the count per I/O is used)."""
    out = Path(f"/tmp/netcfg-bench-strace-{target.name}")
    st = subprocess.Popen(["strace", "-c", "-f", "-o", str(out), "-p", str(target.pid)],
                          stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    iops = perf(target.url, workload, seconds)
    st.send_signal(signal.SIGINT)
    st.wait(10)
    total = re.search(r"^\s*100\.00\s+\S+\s+\S+\s+(\d+)", out.read_text(), re.M)
    out.unlink()
    return int(total.group(1)) / (iops * seconds) if total else float("nan")


def interleaved_rounds(targets, workloads: dict[str, tuple[str, list[str]]], rounds: int,
                       seconds: int, url_for=lambda target, workload: target.url) -> dict:
    """Warm every target up (page cache, sessions), then run each workload on
    each target ``rounds`` times, the targets' order alternating from round
    to round. {(workload, target name): {"iops": [per run], "cpu_us": [the
    target's CPU time per I/O, per run]}}. ``url_for`` may add URL arguments
    per workload (bench/dataplane/iscsi_ab.py's header digests)."""
    results = {(w, t.name): {"iops": [], "cpu_us": []} for w in workloads for t in targets}
    for t in targets:
        perf(t.url, WORKLOADS["4k-randread-qd32"], 2)
        perf(t.url, WORKLOADS["4k-randwrite-qd32"], 2)
    for rnd in range(rounds):
        for workload, spec in workloads.items():
            order = targets if rnd % 2 == 0 else targets[::-1]
            for t in order:
                before = cpu_ticks(t.pid)
                iops = perf(url_for(t, workload), spec, seconds)
                cpu = (cpu_ticks(t.pid) - before) / TICK
                r = results[(workload, t.name)]
                r["iops"].append(iops)
                r["cpu_us"].append(cpu * 1e6 / (iops * seconds))
    return results


def print_table(results: dict, targets, workloads: dict[str, tuple[str, list[str]]],
                widths: tuple[int, int], summary) -> None:
    """interleaved_rounds' results: per workload a row per target (median
    IOPS, MB/s, median CPU time per I/O, every run's IOPS), then the line
    ``summary(workload, {target name: median IOPS})`` returns. ``widths``:
    the workload and target columns'."""
    wide, tw = widths
    print(f"{'workload':{wide}} {'target':{tw}} {'IOPS (median)':>14} {'MB/s':>8} {'CPU us/IO':>10}  runs")
    for workload, (_, args) in workloads.items():
        block = int(args[args.index("-b") + 1]) * 512
        medians = {}
        for t in targets:
            r = results[(workload, t.name)]
            iops = medians[t.name] = statistics.median(r["iops"])
            print(f"{workload:{wide}} {t.name:{tw}} {iops:14.0f} {iops * block / 1e6:8.0f} "
                  f"{statistics.median(r['cpu_us']):10.1f}  {', '.join(f'{x:.0f}' for x in r['iops'])}")
        print(summary(workload, medians))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--threads", type=int, default=None, help="our event loops (default: CPUs)")
    ap.add_argument("--syscalls", action="store_true", help="also count syscalls per I/O (strace)")
    ap.add_argument("--compare-sync", action="store_true",
                    help="also run ours with io_uring off (netcfgd-sync) and with writes "
                         "batched too (netcfgd-bw)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/iscsi/run.py needs root (namespaces, tgtd)", file=sys.stderr)
        return 2
    for tool in ("iscsi-perf", "tgtd", "tgtadm", "cargo", "cc"):
        if not shutil.which(tool):
            print(f"missing {tool}: apt-get install libiscsi-bin libiscsi-dev tgt gcc "
                  "(and a Rust toolchain)", file=sys.stderr)
            return 2
    sandbox()
    so = release_so()
    build_wperf()
    backing = "/tmp/netcfg-bench.img"
    with open(backing, "wb") as f:   # real data, read once so both serve from page cache
        for _ in range(a.size_mib):
            f.write(os.urandom(1 << 20))
    os.chmod(backing, 0o600)   # the data path refuses a backing others can read
    targets = [Ours(so, backing, a.threads), Tgt(backing)]
    if a.compare_sync:
        targets += [Ours(so, backing, a.threads, v) for v in VARIANTS]
    syscalls = {}
    try:
        results = interleaved_rounds(targets, WORKLOADS, a.rounds, a.seconds)
        if a.syscalls:
            for workload in ("4k-randread-qd32", "4k-randwrite-qd32"):
                for t in targets:
                    syscalls[(workload, t.name)] = syscalls_per_io(t, WORKLOADS[workload], 3)
    finally:
        for t in targets:
            t.stop()
        os.unlink(backing)
    print(f"# {a.rounds} interleaved rounds x {a.seconds} s, loopback, {a.size_mib} MiB file, "
          f"{os.cpu_count()} CPUs")
    print_table(results, targets, WORKLOADS, (20, 12),
                lambda workload, iops: f"{workload:20} ratio netcfgd/tgt = "
                                       f"{iops['netcfgd'] / iops['tgt']:.2f}")
    for (workload, name), n in syscalls.items():
        print(f"syscalls per I/O ({workload}, {name}, under strace): {n:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

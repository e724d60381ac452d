#!/usr/bin/env python3
"""netcfgd's ublk devices against the kernel's loop device, libublk's loop
example and netcfgd's own iSCSI through open-iscsi: fio on one page-cached
file (tmpfs), the same file behind every device.

    make bench-ublk                      # boots the VM tier's kernel, runs this inside
    python bench/ublk/run.py [--seconds 8] [--rounds 2]     # inside that VM, as root

Debian's 6.12 kernel under qemu TCG on this machine (the host kernel has no
ublk): absolute numbers mean little, the ratios between devices in the same
run are the result. Workloads (fio, libaio, O_DIRECT on the device, so the
client side caches nothing): 4k random read at queue depth 1 and 32, 4k
random write at 32, 128k sequential read at 8. Devices:

- loop: the kernel's loop device (buffered: the page cache of the file), the ceiling;
- libublk-loop: libublk 0.4.8's `examples/loop.rs` (async, one queue,
  depth 64; it opens the file O_DIRECT, which tmpfs serves from memory);
- netcfgd-ublk: `netcfgd.target` serving the volume with `ublk yes`
  (one queue, depth 64);
- netcfgd-iscsi: the same process's iSCSI target on 127.0.0.1, through the
  kernel's initiator (iscsid from `make iscsi-initiator`), one event loop.

Rounds interleave the devices per workload. The extension and the example
are release builds (`make bench-ublk` builds both); results (a table, and
every run as one JSON line) go to stdout; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE_SO = ROOT / "daemon/dataplane/target/release/lib_dataplane.so"
LIBUBLK_LOOP = ROOT / ".cache/libublk-0.4.8/target/release/examples/loop"
OPEN_ISCSI = ROOT / ".cache/open-iscsi"
IQN = "iqn.2024-01.org.netcfg.bench:ublk"
FILE_MB = 128
WORKLOADS = {
    "4k-randread-qd1": ["--rw=randread", "--bs=4k", "--iodepth=1"],
    "4k-randread-qd32": ["--rw=randread", "--bs=4k", "--iodepth=32"],
    "4k-randwrite-qd32": ["--rw=randwrite", "--bs=4k", "--iodepth=32"],
    "128k-seqread-qd8": ["--rw=read", "--bs=128k", "--iodepth=8"],
}


def run(*cmd, check=True, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if check and r.returncode:
        sys.exit(f"{' '.join(map(str, cmd))} exited {r.returncode}: {r.stdout}{r.stderr}")
    return r


def wait_for(what, probe, timeout=180.0):
    deadline = time.monotonic() + timeout
    while not (found := probe()):
        if time.monotonic() > deadline:
            sys.exit(f"gave up waiting for {what}")
        time.sleep(0.3)
    return found


def use_release_build(tmp: Path) -> None:
    """Import netcfgd from a copy whose extension is the release build."""
    if not RELEASE_SO.exists():
        sys.exit(f"{RELEASE_SO} is missing: make bench-ublk builds it")
    pkg = tmp / "release" / "netcfgd"
    shutil.copytree(ROOT / "netcfgd", pkg, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(RELEASE_SO, pkg / "_dataplane.abi3.so")
    sys.path.insert(0, str(pkg.parent))
    import netcfgd._dataplane as dp
    assert Path(dp.__file__).parent == pkg, dp.__file__


def ublk_ids() -> set[int]:
    return {int(p.rsplit("ublkc", 1)[1]) for p in glob.glob("/sys/class/ublk-char/ublkc*")}


# --- the devices --------------------------------------------------------------

class Loop:
    name = "loop"

    def __init__(self, backing: Path):
        self.dev = run("losetup", "--find", "--show", backing).stdout.strip()

    def close(self):
        run("losetup", "-d", self.dev, check=False)


class LibublkLoop:
    name = "libublk-loop"

    def __init__(self, backing: Path):
        if not LIBUBLK_LOOP.exists():
            sys.exit(f"{LIBUBLK_LOOP} is missing: make bench-ublk builds it")
        before = ublk_ids()
        self.proc = subprocess.Popen([LIBUBLK_LOOP, "add", "--foreground", "-a", "-q", "1",
                                      "-d", "64", "-f", str(backing)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.id = wait_for("libublk's loop device", lambda: (ublk_ids() - before) or None).pop()
        self.dev = f"/dev/ublkb{self.id}"
        wait_for(self.dev, lambda: os.path.exists(self.dev) and
                 int(Path(f"/sys/class/block/ublkb{self.id}/size").read_text()) > 0)

    def close(self):
        run(LIBUBLK_LOOP, "del", "-n", self.id, check=False)
        self.proc.wait(timeout=60)


class Netcfgd:
    """One netcfgd.target process serving the volume both ways."""

    def __init__(self, backing: Path, tmp: Path):
        cfg = tmp / "bench.cfg"
        cfg.write_text(f"""
volume bench
    backing {backing}
    ublk yes
    ublk-queues 1
    ublk-depth 64

target {IQN}
    portal 127.0.0.1:3260
    lun 0 bench
""")
        from netcfgd.target import main
        self.err = tmp / "netcfgd.err"
        self.pid = os.fork()
        if self.pid == 0:
            code = 70
            try:
                os.dup2(os.open(self.err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
                os.dup2(os.open("/dev/null", os.O_WRONLY), 1)
                code = main(["-c", str(cfg), "--threads", "1", "--ublk-remove-on-exit"])
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        text = wait_for("netcfgd to serve", lambda: self.err.exists() and
                        "serving iqn." in self.err.read_text() and self.err.read_text())
        self.ublk_dev = next(w for w in text.split() if w.startswith("/dev/ublkb"))

    def close(self):
        os.kill(self.pid, signal.SIGTERM)
        os.waitpid(self.pid, 0)


class NetcfgdUblk:
    name = "netcfgd-ublk"

    def __init__(self, server: Netcfgd):
        self.dev = server.ublk_dev

    def close(self):
        pass


class NetcfgdIscsi:
    """open-iscsi's disk of the same volume (iscsid in this VM's namespace)."""
    name = "netcfgd-iscsi"

    def __init__(self, tmp: Path):
        env = dict(os.environ, LD_LIBRARY_PATH=str(OPEN_ISCSI / "usr/lib/x86_64-linux-gnu"))
        self.env = env
        # virtme's /etc is an overlay in the VM: this never reaches the host.
        Path("/etc/iscsi").mkdir(exist_ok=True)
        Path("/etc/iscsi/iscsid.conf").write_text("iscsid.startup = /bin/true\nnode.startup = manual\n"
                                                 "node.session.scan = auto\n")
        Path("/etc/iscsi/initiatorname.iscsi").write_text(f"InitiatorName={IQN}-initiator\n")
        os.makedirs("/run/lock/iscsi", exist_ok=True)
        self.iscsid = subprocess.Popen([OPEN_ISCSI / "sbin/iscsid", "-f"], env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
        wait_for("iscsid", lambda: self.adm("-m", "session").returncode in (0, 21))
        self.adm("-m", "discovery", "-t", "st", "-p", "127.0.0.1", check=True)
        self.adm("-m", "node", "-T", IQN, "-p", "127.0.0.1", "-l", check=True)
        disks = wait_for("the iSCSI disk", lambda: glob.glob(
            "/sys/class/iscsi_session/session*/device/target*/*/block/*"))
        self.dev = f"/dev/{os.path.basename(disks[0])}"
        wait_for(self.dev, lambda: os.path.exists(self.dev))

    def adm(self, *args, check=False):
        r = subprocess.run([OPEN_ISCSI / "sbin/iscsiadm", *args], env=self.env,
                           capture_output=True, text=True)
        if check and r.returncode:
            sys.exit(f"iscsiadm {' '.join(args)}: {r.stdout}{r.stderr}")
        return r

    def close(self):
        self.adm("-m", "node", "-u")
        os.killpg(self.iscsid.pid, signal.SIGTERM)
        self.iscsid.wait(timeout=30)


# --- measuring ----------------------------------------------------------------

def fio(dev: str, workload: str, seconds: int) -> float:
    r = run("fio", "--name=bench", f"--filename={dev}", "--direct=1", "--ioengine=libaio",
            f"--size={FILE_MB}M", f"--runtime={seconds}", "--time_based", "--ramp_time=1",
            "--output-format=json", *WORKLOADS[workload])
    job = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
    side = "write" if "write" in workload else "read"
    if job["error"]:
        sys.exit(f"fio on {dev} ({workload}): error {job['error']}")
    return job[side]["iops"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=8)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    if os.geteuid() != 0 or "virtme" not in Path("/proc/cmdline").read_text():
        sys.exit("run inside the VM tier as root: make bench-ublk")
    for module in ("ublk_drv", "loop"):
        run("modprobe", module)
    run("modprobe", "iscsi_tcp")
    run("ip", "link", "set", "lo", "up")
    tmp = Path("/tmp/netcfg-bench-ublk")
    tmp.mkdir(exist_ok=True)
    run("mount", "-t", "tmpfs", "-o", "size=512M,mode=700", "tmpfs", tmp)
    use_release_build(tmp)
    backing = tmp / "volume.img"
    # Data, not holes: every read copies real pages. 0600: netcfgd refuses others.
    with open(os.open(backing, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        for _ in range(FILE_MB):
            f.write(os.urandom(1 << 20))
    devices = []
    server = None
    try:
        devices.append(Loop(backing))
        devices.append(LibublkLoop(backing))
        server = Netcfgd(backing, tmp)
        devices.append(NetcfgdUblk(server))
        devices.append(NetcfgdIscsi(tmp))
        results: dict[str, dict[str, list[float]]] = {}
        for _ in range(args.rounds):
            for workload in WORKLOADS:
                for d in devices:
                    iops = fio(d.dev, workload, args.seconds)
                    results.setdefault(workload, {}).setdefault(d.name, []).append(iops)
                    print(f"{workload:<18} {d.name:<14} {iops:>10.0f} IOPS", flush=True)
    finally:
        for d in reversed(devices):
            d.close()
        if server is not None:
            server.close()
    table = {w: {n: statistics.median(v) for n, v in by.items()} for w, by in results.items()}
    print(f"\n{'workload':<18} " + " ".join(f"{d.name:>14}" for d in devices)
          + "   ublk/iscsi  ublk/libublk  ublk/loop")
    for w, by in table.items():
        u = by["netcfgd-ublk"]
        print(f"{w:<18} " + " ".join(f"{by[d.name]:>14.0f}" for d in devices)
              + f"   {u / by['netcfgd-iscsi']:>10.2f}  {u / by['libublk-loop']:>12.2f}"
              + f"  {u / by['loop']:>9.2f}")
    # The VM's view of the tree is read-only: the raw runs go to stdout.
    print("json:", json.dumps({"seconds": args.seconds, "rounds": args.rounds, "iops": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Two builds of netcfgd's data path (before/after a change) and Debian's tgt,
same backing file, same clients, interleaved rounds, loopback.

    sudo .venv/bin/python bench/dataplane/iscsi_ab.py --before A.so --after B.so [--rounds 5] [--seconds 6]

Build each .so with `cargo build --release` (PYO3_PYTHON set to the venv's
python) from its own tree and copy lib_dataplane.so out. The targets,
clients and sandbox are bench/iscsi/run.py's; this adds a second build of
ours and a 4k random read with CRC32C header digests (libiscsi's
`header_digest=crc32c` URL argument; libiscsi has no data digests). Rounds
alternate the targets' order; prints medians and after/before.
docs/benchmarks.md ("Hot paths on the crates") records results.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "iscsi"))
import run as iscsi  # noqa: E402  (bench/iscsi/run.py: sandbox, tgt, clients)

WORKLOADS = dict(iscsi.WORKLOADS)
WORKLOADS["4k-randread-qd32-hdigest"] = ("perf", ["-r", "-m", "32", "-b", "8"])
PORTS = {"before": 3270, "after": 3271}


class Build:
    """ours.py serving the file with one build's extension."""

    def __init__(self, name: str, so: str, backing: str, threads: int | None):
        self.name = name
        port = PORTS[name]
        args = [sys.executable, str(ROOT / "bench/iscsi/ours.py"), "--so", so, "--backing", backing,
                "--iqn", f"{iscsi.IQN}:{name}", "--port", str(port)]
        if threads:
            args += ["--threads", str(threads)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {name} build's target did not start")
        self.pid = self.proc.pid
        self.url = f"iscsi://127.0.0.1:{port}/{iscsi.IQN}:{name}/0"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)


def url_for(target, workload: str) -> str:
    return target.url + ("?header_digest=crc32c" if workload.endswith("-hdigest") else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="lib_dataplane.so of the old build")
    ap.add_argument("--after", required=True, help="lib_dataplane.so of the new build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-tgt", action="store_true", help="the two builds only")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/dataplane/iscsi_ab.py needs root (namespaces, tgtd)", file=sys.stderr)
        return 2
    for so in (a.before, a.after):
        if not os.path.isfile(so):
            print(f"no such extension: {so} (build it with cargo build --release)", file=sys.stderr)
            return 2
    for tool in ("iscsi-perf", "cc") + (() if a.no_tgt else ("tgtd", "tgtadm")):
        if not shutil.which(tool):
            print(f"missing {tool}: apt-get install libiscsi-bin libiscsi-dev tgt gcc", file=sys.stderr)
            return 2
    iscsi.sandbox()
    iscsi.build_wperf()
    backing = "/tmp/netcfg-bench-ab.img"
    with open(backing, "wb") as f:
        for _ in range(a.size_mib):
            f.write(os.urandom(1 << 20))
    os.chmod(backing, 0o600)
    targets = []
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    try:
        targets = [Build("before", a.before, backing, a.threads), Build("after", a.after, backing, a.threads)]
        if not a.no_tgt:
            targets.append(iscsi.Tgt(backing))
        results = iscsi.interleaved_rounds(targets, WORKLOADS, a.rounds, a.seconds, url_for)
    finally:
        for t in targets:
            t.stop()
        os.unlink(backing)

    def summary(workload: str, iops: dict[str, float]) -> str:
        line = f"{workload:26} after/before = {iops['after'] / iops['before']:.3f}"
        if not a.no_tgt:
            line += f", after/tgt = {iops['after'] / iops['tgt']:.2f}"
        return line

    print(f"# {a.rounds} interleaved rounds x {a.seconds} s, loopback, {a.size_mib} MiB file, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    iscsi.print_table(results, targets, WORKLOADS, (26, 8), summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""netcfg's OVSDB transaction against ovs-vsctl as ifupdown2 runs it, on the same OVS layout.

    sudo .venv/bin/python bench/ovs/run.py [--ports 200]

An OVS bridge (userspace datapath: the host kernel may lack openvswitch.ko)
with N internal ports, each with a VLAN tag, the layout of a Proxmox host
with one OVSIntPort per VLAN. Both tools start from an empty database on
freshly started daemons and end with the same rows, ovs-vswitchd having made
every device:

- netcfg: `apply` of the interfaces file (one OVSDB transaction, then the
  netlink part: the devices up);
- ifupdown2's way: what its openvswitch addons run, one ovs-vsctl per
  stanza (`--may-exist add-br`, then per port `--may-exist add-port ... --
  set Interface ... type=internal -- set Port ... tag=N`), then `ip link set
  up` per device, as ifupdown2's other addons do.

Also printed: netcfg's second apply (nothing to do) and its OVSDB read.
Runs itself in a private network + mount namespace (the daemons' files in a
temporary directory); needs `make ovs-deps`. Prints times, never asserts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def config(ports: int) -> str:
    lines = ["auto vmbr0", "iface vmbr0", "    ovs_type OVSBridge",
             "    ovs_options datapath_type=netdev",
             "    ovs_ports " + " ".join(f"vl{n}" for n in range(1, ports + 1)), ""]
    for n in range(1, ports + 1):
        lines += [f"auto vl{n}", f"iface vl{n}", "    ovs_type OVSIntPort",
                  "    ovs_bridge vmbr0", f"    ovs_options tag={n}", ""]
    return "\n".join(lines)


class _Monkey:
    """What run_openvswitch wants of pytest's monkeypatch: setenv."""

    def setenv(self, name: str, value: str) -> None:
        os.environ[name] = value


def inner(ports: int) -> None:
    from ovs_env import OVS, run_openvswitch

    from netcfg.apply.execute import apply
    from netcfg.compile.pipeline import ConfigSource, compile_config
    from netcfg.kernel.session import KernelSession

    devices = ("vmbr0", "ovs-netdev", *(f"vl{n}" for n in range(1, ports + 1)))
    with tempfile.TemporaryDirectory(prefix="netcfg-bench-ovs-") as work:
        path = Path(work) / "interfaces"
        path.write_text(config(ports))
        model = compile_config(ConfigSource(path=str(path))).model

        with run_openvswitch(Path(work) / "a", _Monkey(), devices), \
                KernelSession(str(Path(work) / "netns")) as session:
            start = time.perf_counter()
            first = apply(model, session)
            netcfg_s = time.perf_counter() - start
            start = time.perf_counter()
            second = apply(model, session)
            again_s = time.perf_counter() - start
            start = time.perf_counter()
            session.ovsdb.rows()
            read_s = time.perf_counter() - start
        assert first.verified and second.requests == 0

        env = dict(os.environ, LD_LIBRARY_PATH=str(OVS / "usr/lib/x86_64-linux-gnu"))
        with run_openvswitch(Path(work) / "b", _Monkey(), devices):
            env["OVS_RUNDIR"] = os.environ["OVS_RUNDIR"]
            vsctl = str(OVS / "usr/bin/ovs-vsctl")
            start = time.perf_counter()
            subprocess.run([vsctl, "--may-exist", "add-br", "vmbr0", "--", "set", "bridge",
                            "vmbr0", "datapath_type=netdev"], env=env, check=True)
            for n in range(1, ports + 1):
                subprocess.run([vsctl, "--may-exist", "add-port", "vmbr0", f"vl{n}", "--",
                                "set", "Interface", f"vl{n}", "type=internal", "--",
                                "set", "Port", f"vl{n}", f"tag={n}"], env=env, check=True)
            for dev in ("vmbr0", *(f"vl{n}" for n in range(1, ports + 1))):
                subprocess.run(["ip", "link", "set", dev, "up"], check=True)
            vsctl_s = time.perf_counter() - start

    print(f"OVS bridge + {ports} internal ports with tags, userspace datapath")
    print(f"  netcfg apply (one OVSDB transaction + netlink): {netcfg_s:8.3f} s "
          f"({first.requests} requests)")
    print(f"  ovs-vsctl per stanza + ip link set up (ifupdown2's way): {vsctl_s:8.3f} s")
    print(f"  ratio: {vsctl_s / netcfg_s:.1f}x")
    print(f"  netcfg second apply (nothing to do): {again_s:8.3f} s; OVSDB read: "
          f"{read_s * 1000:.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", type=int, default=200)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        inner(args.ports)
        return 0
    return subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "--",
                           sys.executable, __file__, "--inner", "--ports", str(args.ports)]
                          ).returncode


if __name__ == "__main__":
    sys.exit(main())

"""Open vSwitch on the kernel datapath (openvswitch.ko): the VM tier.

The kernel tier runs OVS on the userspace datapath (the host kernel has no
openvswitch module). Here Proxmox's OVS layout runs as Proxmox runs it: the
kernel datapath, where every OVS port's kernel master is the datapath device
``ovs-system``, which netcfg must neither compare nor release. Daemons as in
tests/ovs_env.py; a peer namespace pings the bridge's address through OVS.
"""

from __future__ import annotations

import subprocess

import pytest
from builders import compiled
from ovs_env import needs_ovs, proxmox_layout, run_openvswitch

from netcfg.apply.execute import apply

pytestmark = needs_ovs
PEER_NS = "ovspeer"
DEVICES = ("eth0", "vmbr0", "sv_myzone", "z_myzone", "ovs-system")


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def openvswitch(tmp_path, monkeypatch):
    subprocess.run(["modprobe", "openvswitch"], check=True)
    try:
        with run_openvswitch(tmp_path / "ovs", monkeypatch, DEVICES) as vsctl:
            yield vsctl
    finally:
        subprocess.run(["ip", "netns", "del", PEER_NS], capture_output=True)


def test_proxmox_layout_on_the_kernel_datapath(openvswitch, session, tmp_path):
    vsctl = openvswitch
    ip("netns", "add", PEER_NS)
    ip("link", "add", "eth0", "type", "veth", "peer", "name", "peer0", "netns", PEER_NS)
    ip("-n", PEER_NS, "addr", "add", "192.0.2.20/24", "dev", "peer0")
    ip("-n", PEER_NS, "link", "set", "peer0", "up")
    model = compiled(tmp_path, proxmox_layout()).model

    first = apply(model, session)
    assert first.verified
    assert sorted(vsctl("list-ports", "vmbr0").split()) == ["eth0", "sv_myzone"]
    assert vsctl("get", "Port", "sv_myzone", "tag") == "10"
    # The kernel datapath: OVS's ports have ovs-system as their master.
    assert "master ovs-system" in ip("link", "show", "eth0")
    assert "master z_myzone" in ip("link", "show", "sv_myzone")
    # Traffic through OVS: the peer reaches the bridge's internal port.
    subprocess.run(["ip", "netns", "exec", PEER_NS, "ping", "-c", "1", "-W", "5",
                    "192.0.2.10"], check=True, capture_output=True)

    # ovs-system is not compared: a second apply sends nothing, releases nothing.
    second = apply(model, session)
    assert second.verified and second.requests == 0 and len(second.plan) == 0
    assert "master ovs-system" in ip("link", "show", "eth0")

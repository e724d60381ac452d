"""ipvlan end to end, in the VM tier (the host kernel here has no
CONFIG_IPVLAN; Debian's 6.12 has the module).

A dummy port with three ipvlans in L3 mode on it, two of them in tenant
namespaces: check, plan, apply, traffic between the tenants through the
port's ipvlan router, the kernel's own view (iproute2), `show | apply` and a
second apply send nothing, a mode change re-creates them, and an ipvlan
deleted by hand is put back by netcfgd.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from vm_helpers import kernel_can, netcfgd, ping

from netcfg.apply.execute import apply
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.tags import NETNS_MARK


def _kernel_has_ipvlan() -> bool:
    subprocess.run(["ip", "link", "add", "ipvprobe0", "type", "dummy"], capture_output=True)
    try:
        return kernel_can("ipvprobe1", "link", "ipvprobe0", "type", "ipvlan")
    finally:
        subprocess.run(["ip", "link", "del", "ipvprobe0"], capture_output=True)


VM_TIER = pytest.mark.skipif(not _kernel_has_ipvlan(),
                             reason="VM tier: needs the ipvlan module (make test-vm)")

CONFIG = textwrap.dedent("""\
    auto eth0
    iface eth0
        link-type dummy

    % for n, tenant in enumerate(["red", "blue"], start=1):
    auto ipv0
    iface ipv0
        netns ${tenant}
        ipvlan-raw-device eth0
        ipvlan-raw-netns ""
        ipvlan-mode MODE
        address 192.0.2.${n}/24
    % endfor

    auto ipv-host
    iface ipv-host
        ipvlan-raw-device eth0
        ipvlan-mode MODE
        ipvlan-flags bridge
        address 192.0.2.10/24
    """)


def config(mode: str = "l3") -> str:
    return CONFIG.replace("MODE", mode)


def model_of(tmp_path, text: str):
    path = tmp_path / "ipvlan.tmpl"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcfg.cli.main", *args], input=stdin,
                          capture_output=True, text=True)


def info(netns: str, dev: str) -> dict:
    out = subprocess.run(["ip", *(["-n", netns] if netns else []), "-d", "-j", "link", "show",
                          "dev", dev], check=True, capture_output=True, text=True).stdout
    return json.loads(out)[0]


@VM_TIER
def test_ipvlan_check_plan_apply_show_and_recreate(session, tmp_path):
    path = tmp_path / "ipvlan.tmpl"
    path.write_text(config())
    checked = cli("check", "-c", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    planned = cli("plan", "-c", str(path))
    assert "link-add ipv-host kind=ipvlan link=eth0 mode=l3 flags=bridge" in planned.stdout, \
        planned.stdout + planned.stderr

    result = apply(model_of(tmp_path, config()), session)
    assert result.verified
    for netns, dev in (("red", "ipv0"), ("blue", "ipv0"), ("", "ipv-host")):
        data = info(netns, dev)
        assert data["linkinfo"]["info_kind"] == "ipvlan"
        assert data["linkinfo"]["info_data"]["mode"] == "l3", data
        # The lower device's MAC: ipvlans have none of their own.
        assert data["address"] == info("", "eth0")["address"]
    assert ping("red", "192.0.2.2"), "no traffic red -> blue through the L3 ipvlans"

    # show | apply, and a second apply: nothing to send.
    shown = emit_model(session.read(["", "red", "blue"]), running=True, netns_mark=NETNS_MARK)
    # ipv-host's own stanza (other tests of the tier may leave devices after it).
    host_stanza = shown.split("iface ipv-host")[1].split("\niface ")[0]
    assert "ipvlan-mode l3" in shown and "hwaddress" not in host_stanza
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]
    assert apply(model_of(tmp_path, config()), session).requests == 0

    # A mode change re-creates the three (one mode per port), and reads back.
    index = info("", "ipv-host")["ifindex"]
    changed = apply(model_of(tmp_path, config("l2")), session)
    assert changed.verified
    assert info("", "ipv-host")["linkinfo"]["info_data"]["mode"] == "l2"
    assert info("", "ipv-host")["ifindex"] != index
    assert info("red", "ipv0")["linkinfo"]["info_data"]["mode"] == "l2"
    assert apply(model_of(tmp_path, config("l2")), session).requests == 0


@VM_TIER
def test_netcfgd_puts_back_a_deleted_ipvlan(session, tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "ipvlan.tmpl").write_text(config())
    assert apply(model_of(tmp_path, config()), session).verified
    with netcfgd(tmp_path, etc) as daemon:
        subprocess.run(["ip", "-n", "red", "link", "del", "ipv0"], check=True)

        def back():
            shown = subprocess.run(["ip", "-n", "red", "-d", "link", "show", "ipv0"],
                                   capture_output=True, text=True).stdout
            return "ipvlan" in shown and "UP" in shown
        took = daemon.repairs("ipv0 (deleted)", back)
        print(f"ipv0 put back by netcfgd {took:.2f} s after its deletion")
        assert ping("red", "192.0.2.2")

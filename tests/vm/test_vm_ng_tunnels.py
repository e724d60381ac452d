"""ifupdown-ng's tunnel keys end to end, in the VM tier (the host kernel
here has no ip_gre, ipip or sit): its gre executor's gre-* lines
(tests/fixtures/gre.interfaces), its legacy `local`/`endpoint`/`mode`/`ttl`
in a stanza without a method (tests/fixtures/tunnel-legacy.interfaces),
tunnel-dev / tunnel-physdev (the underlay device, IFLA_GRE_LINK,
IFLA_IPTUN_LINK, IFLA_VTI_LINK), tunnel-local-dev, and gre-flags'
nopmtudisc and ignore-df. Checked by iproute2's view of the kernel; `show
| apply` and a second apply send nothing; a tunnel re-made by hand without
its underlay device is re-created with it.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
from vm_helpers import kernel_can

from netcfg.apply.execute import apply
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.tags import NETNS_MARK

VM_TIER = pytest.mark.skipif(not kernel_can("greprobe0", "type", "gre", "remote", "192.0.2.99"),
                             reason="VM tier: needs the ip_gre module (make test-vm)")

CONFIG = textwrap.dedent("""\
    auto eth0
    iface eth0
        link-type veth
        veth-peer-name eth0p
        address 203.0.113.2/30
        address 2001:db8:f::2/64

    auto tun0
    iface tun0
        gre-local 203.0.113.2
        gre-remote 203.0.113.1
        gre-dev eth0
        gre-ttl 255
        gre-flags nopmtudisc ignore-df
        address 203.0.113.10/30

    auto tun1
    iface tun1
        local 203.0.113.2
        endpoint 203.0.113.5
        mode ipip
        tunnel-dev eth0
        ttl 255

    auto tun2
    iface tun2
        tunnel-mode sit
        tunnel-endpoint 203.0.113.6
        tunnel-local-dev eth0
        tunnel-physdev eth0
        tunnel-pmtudisc no

    auto tun3
    iface tun3
        tunnel-mode vti
        tunnel-remote 203.0.113.7
        tunnel-local 203.0.113.2
        tunnel-dev eth0

    auto tun4
    iface tun4
        tunnel-mode ip6gre
        tunnel-remote 2001:db8:f::1
        tunnel-local-dev eth0
        tunnel-dev eth0
    """)


def model_of(tmp_path, text: str):
    path = tmp_path / "ng-tunnels.interfaces"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


def data(dev: str) -> dict:
    out = subprocess.run(["ip", "-d", "-j", "link", "show", "dev", dev], check=True,
                         capture_output=True, text=True).stdout
    link = json.loads(out)[0]
    return {"kind": link["linkinfo"]["info_kind"], "index": link["ifindex"],
            "link": link.get("link"), **link["linkinfo"]["info_data"]}


@VM_TIER
def test_ifupdown_ng_tunnel_keys_apply_read_back_show_and_repair(session, tmp_path):
    result = apply(model_of(tmp_path, CONFIG), session)
    assert result.verified
    tun0 = data("tun0")
    assert (tun0["kind"], tun0["local"], tun0["remote"], tun0["ttl"]) == \
        ("gre", "203.0.113.2", "203.0.113.1", 255), tun0
    assert tun0["link"] == "eth0", tun0   # IFLA_GRE_LINK, as `ip tunnel add ... dev eth0`
    assert tun0.get("pmtudisc") is False and tun0.get("ignore_df") is True, tun0
    tun1 = data("tun1")
    assert (tun1["kind"], tun1["remote"], tun1["ttl"], tun1["link"]) == \
        ("ipip", "203.0.113.5", 255, "eth0"), tun1
    assert tun1.get("pmtudisc") is True, tun1   # the kernel's default, not written
    tun2 = data("tun2")
    assert (tun2["kind"], tun2["local"], tun2["link"], tun2.get("pmtudisc")) == \
        ("sit", "203.0.113.2", "eth0", False), tun2
    assert (data("tun3")["kind"], data("tun3")["link"]) == ("vti", "eth0")
    tun4 = data("tun4")
    assert (tun4["kind"], tun4["local"], tun4["link"]) == ("ip6gre", "2001:db8:f::2", "eth0"), tun4

    shown = emit_model(session.read([""]), running=True, netns_mark=NETNS_MARK)
    assert "tunnel-dev eth0" in shown and "tunnel-pmtudisc no" in shown, shown
    assert "tunnel-ignore-df yes" in shown, shown
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]
    assert apply(model_of(tmp_path, CONFIG), session).requests == 0

    # Drift: tun1 made again by hand without its underlay device, and tun0
    # with path MTU discovery back on: both re-created as written.
    subprocess.run(["ip", "link", "del", "tun1"], check=True)
    subprocess.run(["ip", "link", "add", "tun1", "type", "ipip", "local", "203.0.113.2",
                    "remote", "203.0.113.5", "ttl", "255"], check=True)
    assert data("tun1").get("link") in (None, "NONE"), data("tun1")
    subprocess.run(["ip", "link", "del", "tun0"], check=True)
    subprocess.run(["ip", "link", "add", "tun0", "type", "gre", "local", "203.0.113.2",
                    "remote", "203.0.113.1", "ttl", "255", "dev", "eth0"], check=True)
    repaired = apply(model_of(tmp_path, CONFIG), session)
    assert repaired.verified and repaired.requests > 0
    assert data("tun1")["link"] == "eth0", data("tun1")
    assert data("tun0").get("pmtudisc") is False and data("tun0").get("ignore_df") is True
    assert apply(model_of(tmp_path, CONFIG), session).requests == 0


# ifupdown-ng's doc/interfaces-tunnel.scd line 124 as published (our corpus
# file): eth0 is not in the file, so gre1's local address is the one eth0 has
# when netcfg applies (apply/tunnel_local.py).
CORPUS_L124 = "../compat/corpus/ifupdown-ng/ifupdown-ng-doc-interfaces-tunnel-L124.interfaces"


@VM_TIER
def test_tunnel_local_dev_of_a_device_the_file_does_not_name(session, tmp_path):
    from pathlib import Path

    from netcfg.cli.main import main

    path = Path(__file__).parent / CORPUS_L124
    subprocess.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"],
                   check=True)
    subprocess.run(["ip", "address", "add", "198.18.0.2/24", "dev", "eth0"], check=True)
    try:
        assert main(["apply", "-c", str(path)]) == 0
        assert data("gre1")["local"] == "198.18.0.2", data("gre1")
        assert main(["query", "--check", "-c", str(path)]) == 0
        assert apply(compile_config(ConfigSource(path=str(path))).model, session).requests == 0
        # eth0 renumbered: drift on gre1, and the next apply follows it (the
        # kernel fixes a tunnel's local address at creation: re-created).
        subprocess.run(["ip", "address", "flush", "dev", "eth0"], check=True)
        subprocess.run(["ip", "address", "add", "198.18.1.2/24", "dev", "eth0"], check=True)
        assert main(["query", "--check", "-c", str(path)]) == 1
        assert main(["apply", "-c", str(path)]) == 0
        assert data("gre1")["local"] == "198.18.1.2", data("gre1")
        assert main(["query", "--check", "-c", str(path)]) == 0
    finally:
        subprocess.run(["ip", "link", "del", "gre1"], capture_output=True)
        subprocess.run(["ip", "link", "del", "eth0"], capture_output=True)

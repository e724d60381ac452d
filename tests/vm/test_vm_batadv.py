"""B.A.T.M.A.N. advanced meshes (kinds/batadv.py), in the VM tier: the host
kernel has no batman-adv; Debian's 6.12 has the module (2024.2).

ifupdown2's own example (docs/examples/batman_adv, the corpus file's bat0
stanza) and ifupdown-ng's doc example (bat-pad-cty) applied: the mesh made
(IFLA_INFO_KIND batadv), its hard interfaces enslaved, its address, its hop
penalty set over the batadv generic netlink family; read back, a second
apply and `show | apply` send nothing; a hop penalty changed by hand
(BATADV_CMD_SET_MESH, as `batctl meshif bat0 hop_penalty 50`) is put back.
ifupdown-ng's two doc examples together (L63's mesh lists vlan1234, L75 writes
vlan1234's own hop penalty, kinds/batadv_hardif.py): BATADV_CMD_SET_HARDIF after
vlan1234 joins, read back by GET_HARDIF, and put back when changed by hand.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from vm_helpers import kernel_can

from netcfg.apply.execute import apply
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.batadv import (get_hardif_hop_penalty, get_hop_penalty,
                                  set_hardif_hop_penalty, set_hop_penalty)

CORPUS = Path(__file__).parents[1] / "compat" / "corpus"
IFUPDOWN2 = CORPUS / "ifupdown2" / "examples-batman_adv-interfaces_batman.interfaces"
NG_L63 = CORPUS / "ifupdown-ng" / "ifupdown-ng-doc-interfaces-batman-L63.interfaces"
NG_L75 = CORPUS / "ifupdown-ng" / "ifupdown-ng-doc-interfaces-batman-L75.interfaces"


pytestmark = pytest.mark.skipif(not kernel_can("batprobe0", "type", "batadv"),
                                reason="VM tier: needs the batman-adv module (make test-vm)")


@pytest.fixture(autouse=True)
def _leave_nothing():
    """The tier's tests share one VM namespace: what these made by hand and
    the meshes go (another test's `show` would read them)."""
    yield
    for name in ("bat0", "bat-pad-cty", "tap0", "tap1", "dummy-pad-cty", "vlan1234"):
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def link(name: str) -> dict:
    out = subprocess.run(["ip", "-d", "-j", "link", "show", "dev", name], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)[0]


def addresses(name: str) -> list[str]:
    out = subprocess.run(["ip", "-j", "addr", "show", "dev", name], check=True,
                         capture_output=True, text=True).stdout
    return [f"{a['local']}/{a['prefixlen']}" for a in json.loads(out)[0]["addr_info"]
            if a["family"] == "inet"]


def bat0_stanza() -> str:
    """The corpus file's bat0 stanza as published (eth0's DHCP and lo left out)."""
    text = IFUPDOWN2.read_text()
    return text[text.index("auto bat0"):]


def test_ifupdown2_example_mesh_made_read_back_and_repaired(session, tmp_path):
    for port in ("tap0", "tap1"):
        subprocess.run(["ip", "link", "add", port, "type", "veth", "peer", "name", f"{port}p"],
                       check=True)
    path = tmp_path / "interfaces"
    path.write_text(bat0_stanza())
    model = compile_config(ConfigSource(path=str(path))).model
    first = apply(model, session)
    assert first.verified
    bat0 = link("bat0")
    assert bat0["linkinfo"]["info_kind"] == "batadv" and "UP" in bat0["flags"]
    assert link("tap0")["master"] == "bat0" and link("tap1")["master"] == "bat0"
    assert addresses("bat0") == ["192.0.2.42/24"]
    assert get_hop_penalty(session.genl, "", bat0["ifindex"]) == 23

    again = apply(model, session)
    assert again.verified and again.requests == 0 and len(again.plan) == 0

    shown = emit_model(session.read([""]), running=True)
    assert "batman-hop-penalty 23" in shown and "batman-ifaces tap0 tap1" in shown
    from_show = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session)
    assert from_show.verified and from_show.requests == 0

    set_hop_penalty(session.genl, "", bat0["ifindex"], 50)
    repaired = apply(model, session)
    assert [op.describe() for op in repaired.plan.operations] == [
        "~ link-set bat0 port batman-hop-penalty=23"]
    assert get_hop_penalty(session.genl, "", bat0["ifindex"]) == 23


def test_ifupdown_ng_example_mesh_with_its_mac_and_mtu(session):
    for port in ("dummy-pad-cty", "vlan1234"):
        subprocess.run(["ip", "link", "add", port, "type", "dummy"], check=True)
    model = compile_config(ConfigSource(path=str(NG_L63))).model
    assert apply(model, session).verified
    mesh = link("bat-pad-cty")
    assert mesh["address"] == "f2:00:c1:01:00:00" and mesh["mtu"] == 1500
    assert link("vlan1234")["master"] == "bat-pad-cty"
    assert get_hop_penalty(session.genl, "", mesh["ifindex"]) == 5
    again = apply(model, session)
    assert again.verified and again.requests == 0


def test_ifupdown_ng_hard_interface_hop_penalty_set_read_back_and_repaired(session, tmp_path):
    for port in ("dummy-pad-cty", "vlan1234"):
        subprocess.run(["ip", "link", "add", port, "type", "dummy"], check=True)
    path = tmp_path / "interfaces"
    path.write_text(NG_L63.read_text() + "\n" + NG_L75.read_text())
    model = compile_config(ConfigSource(path=str(path))).model
    assert apply(model, session).verified
    mesh, hard = link("bat-pad-cty"), link("vlan1234")
    assert hard["master"] == "bat-pad-cty" and hard["mtu"] == 1560
    assert get_hop_penalty(session.genl, "", mesh["ifindex"]) == 5
    assert get_hardif_hop_penalty(session.genl, "", mesh["ifindex"], hard["ifindex"]) == 10
    # The other member's is the kernel's default, read and left alone.
    other = link("dummy-pad-cty")["ifindex"]
    assert get_hardif_hop_penalty(session.genl, "", mesh["ifindex"], other) == 0
    again = apply(model, session)
    assert again.verified and again.requests == 0

    set_hardif_hop_penalty(session.genl, "", mesh["ifindex"], hard["ifindex"], 50)
    repaired = apply(model, session)
    assert [op.describe() for op in repaired.plan.operations] == [
        "~ link-set vlan1234 port batman-hop-penalty=10"]
    assert get_hardif_hop_penalty(session.genl, "", mesh["ifindex"], hard["ifindex"]) == 10

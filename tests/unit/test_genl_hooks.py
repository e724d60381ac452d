"""The generic netlink kinds' hooks (kinds/genl.py): every kind with
generic netlink state has a reader (kernel/genl_families.py) and a
configurer (apply/genl.py), and the core modules that run them name no
such kind, so a second one (batman-adv, say) adds no line to them."""

from __future__ import annotations

import ast
from pathlib import Path

import netcfg
from netcfg.apply.genl import CONFIGURERS
from netcfg.kernel.genl_families import READERS, read_genl_state, written_only
from netcfg.kernel.read import NamespaceState
from netcfg.kinds.genl import created_without_info_data, genl_attributes, genl_kinds
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, ConfigObject, Model

ROOT = Path(netcfg.__file__).parent
# The modules that dispatch to the hooks, and what they must not import.
CORE = ("kernel/session.py", "apply/execute.py", "netlink/encode.py")
PER_KIND = ("wireguard", "ethtool", "physical", "batadv")


def test_every_genl_kind_has_a_reader_and_a_configurer():
    kinds = set(genl_kinds())
    assert kinds == {"wireguard", "physical", "batadv"}
    assert {r.kind for r in READERS} == kinds
    assert set(CONFIGURERS) == kinds


def test_attributes_are_one_kinds_each():
    # apply/genl.configure picks the configurer by attribute: one owner each.
    owners = [a for k in genl_kinds().values() for a in k.genl_attributes]
    assert len(owners) == len(set(owners)) == len(genl_attributes())
    assert created_without_info_data() == {"wireguard", "batadv"}   # physical is never created


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_core_names_no_genl_kind():
    for module in CORE:
        imported = _imported(ROOT / module)
        named = {n for n in imported if n.rsplit(".", 1)[-1] in PER_KIND}
        assert not named, f"{module} imports {sorted(named)}"
        assert not any("pyroute2" in n for n in imported), module


def test_no_hand_written_generic_netlink_left():
    # The codecs netcfg carried before pyroute2 took the families over.
    for gone in ("netlink/genl.py", "netlink/wireguard.py", "netlink/ethtool.py"):
        assert not (ROOT / gone).exists(), gone
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        assert "GENLMSGHDR" not in text and "CTRL_CMD_GETFAMILY" not in text, path


def _obj(name: str, kind: str, netns: str = "", **attrs) -> ConfigObject:
    return ConfigObject(section=IFACE, name=name, kind=kind, netns=netns, attrs=attrs,
                        loc=SourceLocation("<test>", 1))


def _read(netns: str = "") -> NamespaceState:
    """A namespace as read: three NICs and a wireguard device."""
    state = NamespaceState(netns)
    for index, (name, kind) in enumerate([("eno1", "physical"), ("eno2", "physical"),
                                          ("eno3", "physical"), ("wg0", "wireguard")], 2):
        state.interfaces[name] = _obj(name, kind, netns)
        state.ifindex[name] = index
    return state


def test_link_modes_are_asked_only_where_a_config_writes_them():
    # Proxmox's poll: a read compared with a config asks NICs' link modes
    # only on the ports it writes link-* on; wireguard keys always (a revert
    # re-creating a dropped device needs them).
    marked = {r.kind for r in READERS if getattr(r, "only_where_written", False)}
    assert marked == {"physical"}
    state = _read("tenant")
    desired = Model(interfaces={
        ("tenant", "eno1"): _obj("eno1", "physical", "tenant", **{"link-speed": 1000}),
        ("tenant", "eno2"): _obj("eno2", "physical", "tenant", mtu=9000),
        ("", "eno3"): _obj("eno3", "physical", "", **{"link-duplex": "full"}),  # not here
    })
    scoped = written_only(state, desired, "physical")
    assert list(scoped.interfaces) == ["eno1"]
    assert scoped.interfaces["eno1"] is state.interfaces["eno1"]   # read lands in the state
    assert scoped.ifindex is state.ifindex and len(state.interfaces) == 4


def test_a_config_without_link_modes_asks_no_nic():
    # No reader runs that would open a socket: the genl handle is never used.
    state = _read()
    del state.interfaces["wg0"]
    desired = Model(interfaces={("", "eno1"): _obj("eno1", "physical", mtu=9000)})
    assert read_genl_state(None, state, desired) == 0

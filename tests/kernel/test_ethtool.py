"""ethtool link modes against the real kernel (sandboxed), as far as a
sandbox can go: neither this host's kernel nor Debian's 6.12 has netdevsim,
and a veth has link settings to read but none to change.

Proved here: LINKMODES_GET through the "ethtool" generic netlink family
(pyroute2, on a socket made inside the session's namespace) reads a veth's
modes as `ethtool` prints them (10000 Mb/s, full, autoneg off), in the root
namespace and in a named one, and a LINKMODES_SET the driver refuses fails
the apply at the attribute's line.
Not proved (no device that takes a change): that a SET is read back changed.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from netcfg.apply import ethtool as apply_ethtool
from netcfg.apply.refusal import Refused, explain
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.ethtool import LinkModesReader
from netcfg.kernel.read import NamespaceState
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, ConfigObject
from netcfg.plan.ops import LINK_SET, Operation


@pytest.fixture
def veth():
    subprocess.run(["ip", "link", "add", "eth30", "type", "veth", "peer", "name", "eth30p"],
                   check=True)
    subprocess.run(["ip", "link", "set", "eth30", "up"], check=True)
    yield "eth30"
    subprocess.run(["ip", "link", "del", "eth30"], capture_output=True)


def _as_physical(session, name: str) -> NamespaceState:
    """The namespace read with the veth standing in for a NIC (a veth reads
    as kind veth, whose link modes netcfg does not ask)."""
    session.read([""])
    state = session.states[""]
    ifindex = state.ifindex[name]
    state.interfaces[name] = ConfigObject(section=IFACE, name=name, kind="physical", netns="",
                                          attrs={}, loc=SourceLocation("<kernel>", ifindex))
    return state


def test_linkmodes_get_reads_what_ethtool_prints(session, veth):
    state = _as_physical(session, veth)
    assert LinkModesReader().read(session.genl, state) == 1
    attrs = state.interfaces[veth].attrs
    assert attrs == {"link-speed": 10000, "link-duplex": "full", "link-autoneg": False}


def test_a_port_in_a_namespace_is_asked_there(session, netns_dir):
    """The socket is opened inside the port's namespace: eth31 exists only
    there, so a socket anywhere else could not read it (ENODEV) or set it."""
    netns_dir.create("ethns").close()
    try:
        subprocess.run(["nsenter", f"--net={netns_dir.path}/ethns", "ip", "link", "add",
                        "eth31", "type", "veth", "peer", "name", "eth31p"], check=True)
        session.read(["ethns"])
        state = session.states["ethns"]
        ifindex = state.ifindex["eth31"]
        state.interfaces["eth31"] = ConfigObject(section=IFACE, name="eth31", kind="physical",
                                                 netns="ethns", attrs={},
                                                 loc=SourceLocation("<kernel>", ifindex))
        assert LinkModesReader().read(session.genl, state) == 1
        assert state.interfaces["eth31"].attrs["link-speed"] == 10000
        op = Operation(LINK_SET, "ethns", "eth31", params={"link-speed": 1000})
        with pytest.raises(Refused, match="EOPNOTSUPP|not supported"):
            apply_ethtool.configure(op, session)
    finally:
        session.forget("ethns")


def test_a_refused_set_fails_at_the_attributes_line(session, veth, tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent("""\
        auto eth30
        iface eth30
            link-speed 1000
        """))
    wanted = compile_config(ConfigSource(path=str(path))).model
    op = Operation(LINK_SET, "", veth, params={"link-speed": 1000, "link-autoneg": False})
    with pytest.raises(Refused) as refused:
        apply_ethtool.configure(op, session)
    message = explain(refused.value, wanted)
    assert message.startswith(f"{path}:3: error: eth30: "), message
    assert "EOPNOTSUPP" in message or "not supported" in message, message

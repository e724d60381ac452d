"""The kernel's fallback tunnel devices (gre0, sit0, tunl0...) are the
kernel's, as lo is: kernel/read.py leaves them out of the model (so `show`
never prints them and a purge never deletes them), by name, kind and the
absence of any endpoint. A tunnel of the config is read whatever its name.
The VM tier (tests/vm/test_vm_tunnels.py) checks the same on a kernel that
makes them."""

from __future__ import annotations

import pytest

from netcfg.kernel.read import NamespaceState, build_interfaces
from netcfg.kinds.tunnel_kinds import FALLBACK_DEVICES
from netcfg.model.tags import NETCFG_GROUP
from netcfg.netlink.read_parse import Link


def read(*links: Link) -> NamespaceState:
    state = NamespaceState("")
    build_interfaces(state, list(links), {})
    return state


def link(index: int, name: str, kind: str | None, group: int = 0, **attrs) -> Link:
    return Link(index=index, name=name, flags=0, group=group, info_kind=kind,
                attrs={k.replace("_", "-"): v for k, v in attrs.items()})


@pytest.mark.parametrize("name,kind", sorted(FALLBACK_DEVICES.items()))
def test_fallback_device_is_not_read(name, kind):
    state = read(link(1, "lo", None), link(2, name, kind, tunnel_mode="x"))
    assert name not in state.interfaces
    assert state.kernel_devices == {name}
    # Its ifindex stays known: a device netcfg makes must not be given it.
    assert state.ifindex[name] == 2 and state.names[2] == name


def test_tunnels_that_are_not_fallback_devices_are_read():
    state = read(
        link(3, "gre0", "gre", tunnel_endpoint="192.0.2.2"),      # a remote: someone's
        link(4, "sit0", "gre"),                                   # not sit's kind
        link(5, "gre1", "gre"),                                   # not a fallback name
        link(6, "tunl0", "ipip", group=NETCFG_GROUP),             # netcfg's own
        link(7, "ip6tnl0", "ip6tnl", tunnel_local="2001:db8::1"))
    assert set(state.interfaces) == {"gre0", "sit0", "gre1", "tunl0", "ip6tnl0"}
    assert state.kernel_devices == set()
    assert state.interfaces["gre0"].kind == "gre"

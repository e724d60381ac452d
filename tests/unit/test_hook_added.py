"""What up lines added stays (apply/hooks.py hook_added, plan/addresses.py):
which addresses a line names, and when the diff keeps them."""

from __future__ import annotations

import pytest

from netcfg.apply.hooks import named_addresses
from netcfg.model.model import ConfigObject
from netcfg.plan.addresses import HOOK_ADDED, address_operations


@pytest.mark.parametrize("line, named", [
    ("/sbin/ip address add fdc4:d762:2143::0a0b:9002/64 dev $IFACE",
     ["fdc4:d762:2143::a0b:9002/64"]),
    ("ip -6 a a 2001:db8::5/64 dev vmbr0 || true", ["2001:db8::5/64"]),
    ("ip -f inet6 addr replace local 2001:db8::9/64 dev ${IFACE}", ["2001:db8::9/64"]),
    ("ip addr add 10.0.0.1/24 brd + dev $IFACE label vmbr0:1; echo hi", ["10.0.0.1/24"]),
    ("ip addr add 192.0.2.7 dev $IFACE", ["192.0.2.7/32"]),
    ("ip addr add 192.0.2.7/32 dev eth0", []),              # another device's
    ("ip addr del 192.0.2.7/32 dev $IFACE", []),
    ("ip route add 192.0.2.0/24 dev $IFACE", []),
    ("ip addr add $ADDR dev $IFACE", []),
    ("ifconfig $IFACE add 2001:db8::1/64", []),
    ("ip addr add 'unclosed dev $IFACE", []),
])
def test_the_plain_form_of_an_address_add_is_named(line, named):
    assert named_addresses([line], "vmbr0") == named


def _bridge(addresses, up=True, **attrs):
    return ConfigObject("iface", "vmbr0", "bridge", attrs={"address": addresses, **attrs},
                        auto=up)


def test_hook_added_addresses_are_kept_while_the_interface_is_up():
    want = _bridge(["10.0.0.1/24"], **{HOOK_ADDED: ("2001:db8::5/64",)})
    had = ["10.0.0.1/24", "2001:db8::5/64", "10.0.0.99/24"]
    ops = address_operations(want, _bridge(had), cycled=False)
    assert [op.describe() for op in ops] == ["- addr-del vmbr0 10.0.0.99/24"]
    # Down (the plan brings it up, its lines run again), or cycled: removed.
    for cur, cycled in ((_bridge(had, up=False), False), (_bridge(had), True)):
        ops = address_operations(want, cur, cycled=cycled)
        assert "- addr-del vmbr0 2001:db8::5/64" in [op.describe() for op in ops]

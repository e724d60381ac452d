"""`inet dhcp`: which DHCP clients a config asks for, and the diff leaving
the client's addresses alone (netcfg/apply/dhcp.py, plan/diff.py). The client
itself runs in the kernel tier (tests/kernel/test_dhcp.py)."""

from __future__ import annotations

import textwrap

from netcfg.apply.dhcp import Lease, wanted_leases
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.plan.diff import diff
from netcfg.plan.ops import ADDR_ADD, ADDR_DEL


def compiled(tmp_path, text: str):
    path = tmp_path / "net.tmpl"
    path.write_text(textwrap.dedent(text))
    return compile_config(ConfigSource(path=str(path))).model


def test_up_dhcp_interfaces_want_a_client_per_family(tmp_path):
    model = compiled(tmp_path, """\
        netns t1
        auto eth0
        iface eth0 inet dhcp
        iface eth0 inet6 dhcp
        auto eth1
        iface eth1 inet dhcp
            netns t1
        iface eth2 inet dhcp
        auto eth3
        iface eth3 inet static
            address 10.0.0.1/24
        """)
    # eth2 has no auto line (down): no client; eth3 is static.
    assert wanted_leases(model) == {Lease("", "eth0", "4"), Lease("", "eth0", "6"),
                                    Lease("t1", "eth1", "4")}


def test_diff_leaves_the_dhcp_family_addresses_to_the_client(tmp_path):
    desired = compiled(tmp_path, """\
        auto eth0
        iface eth0 inet dhcp
        """)
    current = compiled(tmp_path, """\
        auto eth0
        iface eth0
            address 10.0.0.57/24
            address 2001:db8::5/64
        """)
    ops = diff(desired, current)
    # The IPv4 lease stays; the IPv6 address is nobody's and goes.
    assert [(op.action, op.subject) for op in ops if op.action in (ADDR_ADD, ADDR_DEL)] == \
        [(ADDR_DEL, "2001:db8::5/64")]


def test_a_static_interface_owns_its_addresses_again(tmp_path):
    desired = compiled(tmp_path, """\
        auto eth0
        iface eth0 inet static
            address 10.0.0.9/24
        """)
    current = compiled(tmp_path, """\
        auto eth0
        iface eth0
            address 10.0.0.57/24
        """)
    assert sorted((op.action, op.subject) for op in diff(desired, current)
                  if op.action in (ADDR_ADD, ADDR_DEL)) == \
        [(ADDR_ADD, "10.0.0.9/24"), (ADDR_DEL, "10.0.0.57/24")]

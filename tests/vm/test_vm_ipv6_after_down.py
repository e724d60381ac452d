"""Devices a plan (or the kernel, on the plan's behalf) takes down keep what
the config wants on them, in the VM tier (the host kernel here has neither
bonding nor vrf). The kernel tier's tests/kernel/test_ipv6_after_down.py has
the stanza without `auto` and `link-down yes`; here:

- a bond closes the device it releases (__bond_release_one: dev_close), also
  when the bond is deleted: a device the config wants up on its own is
  brought up again, with its IPv6 address and its route;
- enslaving an up device to a VRF cycles it; with keep_addr_on_down=1 the
  kernel keeps its IPv6 addresses, and putting them back (`ip addr replace`)
  is no EEXIST.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest
from vm_helpers import kernel_can

from netcfg.apply.execute import apply
from netcfg.compile.pipeline import ConfigSource, compile_config

VM_TIER = pytest.mark.skipif(
    not (kernel_can("bondprobe0", "type", "bond") and kernel_can("vrfprobe0", "type", "vrf",
                                                                    "table", "4000")),
    reason="VM tier: needs bonding and vrf (make test-vm)")

V6 = "2001:db8:7::1/64"
BONDED = textwrap.dedent("""\
    auto dm1
    iface dm1
        link-type dummy

    auto bond1
    iface bond1
        bond-slaves dm1
        bond-miimon 100
    """)
ALONE = textwrap.dedent(f"""\
    auto dm1
    iface dm1
        link-type dummy
        address 10.7.0.1/24
        address {V6}
        route 10.8.0.0/16 via 10.7.0.8
    """)
BOND_EMPTY = "\nauto bond1\niface bond1\n    bond-slaves none\n    bond-miimon 100\n"


def model_of(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


def ip_text(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


@VM_TIER
@pytest.mark.parametrize("after", ["bond-kept", "bond-deleted"])
def test_a_device_released_from_a_bond_comes_back_up(session, tmp_path, after):
    assert apply(model_of(tmp_path, BONDED), session).verified
    assert "master bond1" in ip_text("link", "show", "dm1")
    wanted = model_of(tmp_path, ALONE + (BOND_EMPTY if after == "bond-kept" else ""))
    result = apply(wanted, session)
    assert result.verified
    link = ip_text("link", "show", "dm1")
    assert "master" not in link and ",UP" in link
    assert V6 in ip_text("-6", "addr", "show", "dm1")
    assert "10.8.0.0/16 via 10.7.0.8" in ip_text("route", "show", "dev", "dm1")
    assert apply(wanted, session).requests == 0


VRF = textwrap.dedent(f"""\
    auto mgmt
    iface mgmt
        vrf-table 1001

    auto dm3
    iface dm3
        link-type dummy
        address {V6}
    """)


@VM_TIER
@pytest.mark.parametrize("keep", [0, 1])
def test_an_up_device_moved_into_a_vrf_keeps_its_ipv6_address(session, tmp_path, keep):
    subprocess.run(["sysctl", "-q", f"net.ipv6.conf.default.keep_addr_on_down={keep}"],
                   check=True)
    assert apply(model_of(tmp_path, VRF), session).verified
    wanted = model_of(tmp_path, VRF + "    vrf mgmt\n")
    assert apply(wanted, session).verified
    assert "master mgmt" in ip_text("link", "show", "dm3")
    assert V6 in ip_text("-6", "addr", "show", "dm3")
    assert apply(wanted, session).requests == 0

"""ifupdown2's bond-use-carrier and vrf-default-route, in the VM tier (the
host kernel here has neither bonding nor vrf; Debian's 6.12 has both).

bond-use-carrier: ifupdown2's value forms reach IFLA_BOND_USE_CARRIER and
read back (iproute2's view and netcfg's), a second apply sends nothing, a
change is one link-set. vrf-default-route no: accepted, and the VRF's table
holds no default route, as with Debian's ifupdown2 (which has no such
attribute and installs none).
"""

from __future__ import annotations

import json
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

CONFIG = textwrap.dedent("""\
    auto dm1
    iface dm1
        link-type dummy
    auto dm2
    iface dm2
        link-type dummy

    auto bond1
    iface bond1
        bond-slaves dm1 dm2
        bond-miimon 100
        bond-use-carrier CARRIER

    auto mgmt
    iface mgmt
        address 127.0.0.1/8
        vrf-table 1001
        vrf-default-route no

    auto dm3
    iface dm3
        link-type dummy
        vrf mgmt
        address 192.0.2.1/24
    """)


def model_of(tmp_path, carrier: str):
    path = tmp_path / "bond.interfaces"
    path.write_text(CONFIG.replace("CARRIER", carrier))
    return compile_config(ConfigSource(path=str(path))).model


def use_carrier(dev: str) -> int:
    out = subprocess.run(["ip", "-d", "-j", "link", "show", "dev", dev], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)[0]["linkinfo"]["info_data"]["use_carrier"]


@VM_TIER
def test_bond_use_carrier_forms_apply_and_read_back(session, tmp_path):
    result = apply(model_of(tmp_path, "no"), session)
    assert result.verified
    assert use_carrier("bond1") == 0
    current = session.read([""]).interfaces[("", "bond1")]
    assert current.attrs["bond-use-carrier"] is False
    assert apply(model_of(tmp_path, "0"), session).requests == 0

    changed = apply(model_of(tmp_path, "yes"), session)
    assert changed.verified
    sets = [op.describe() for op in changed.plan.operations]
    assert sets == ["~ link-set bond1 bond-use-carrier=yes"], sets
    assert use_carrier("bond1") == 1
    assert apply(model_of(tmp_path, "1"), session).requests == 0


@VM_TIER
def test_vrf_default_route_no_leaves_the_table_without_a_default(session, tmp_path):
    assert apply(model_of(tmp_path, "yes"), session).verified
    routes = json.loads(subprocess.run(["ip", "-j", "route", "show", "table", "1001"],
                                       check=True, capture_output=True, text=True).stdout)
    assert routes, "the vrf's table has dm3's prefix route"
    assert not [r for r in routes if r["dst"] == "default"], routes
    routes6 = json.loads(subprocess.run(["ip", "-6", "-j", "route", "show", "table", "1001"],
                                        check=True, capture_output=True, text=True).stdout)
    assert not [r for r in routes6 if r["dst"] == "default"], routes6

"""A revert restores exactly what was there (issue 23 H1): a gateway outside
the address's prefix (Hetzner's routed layout) is reached `onlink`, and a
revert that adds the default route back without the flag is refused by the
kernel (ENETUNREACH), leaving the host with no default route. Inside the
sandbox (conftest.py); state read back with iproute2."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from netcfg.apply.execute import ApplyFailed, apply, revert
from netcfg.compile.pipeline import ConfigSource, compile_config

HETZNER = textwrap.dedent("""\
    auto eno1
    iface eno1
        link-type veth
        veth-peer-name eno1-peer

    auto vmbr0
    iface vmbr0 inet static
        address 203.0.113.10/32
        gateway 203.0.113.1
        bridge-ports eno1
        bridge-stp off
        bridge-fd 0
    """)


def model_of(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


def default_routes() -> list[dict]:
    out = subprocess.run(["ip", "-j", "route", "show", "default"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def test_a_revert_puts_an_onlink_default_route_back(session, tmp_path):
    assert apply(model_of(tmp_path, HETZNER), session).verified
    [route] = default_routes()
    assert route["gateway"] == "203.0.113.1" and "onlink" in route["flags"]
    # The change nobody confirms: a second address and the gateway gone.
    changed = HETZNER.replace("    gateway 203.0.113.1\n", "    address 203.0.113.11/32\n")
    result = apply(model_of(tmp_path, changed), session)
    assert default_routes() == []
    with pytest.raises(ApplyFailed, match="previous state was restored"):
        revert(result, "no confirmation (test)")
    [route] = default_routes()
    assert route["gateway"] == "203.0.113.1" and "onlink" in route["flags"]
    # Read back with its flag, the route is still what the config asks: nothing to do.
    assert not apply(model_of(tmp_path, HETZNER), session, dry_run=True).plan.operations

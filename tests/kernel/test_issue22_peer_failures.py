"""Refusals issue 22 keeps because Debian's ifupdown2 fails on the file too,
checked against ifupdown2 itself (tests/compat/differential.py's sandbox:
fresh network and mount namespaces, the file's ports as veths)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

COMPAT = Path(__file__).parents[1] / "compat"
sys.path.insert(0, str(COMPAT))
import differential  # noqa: E402

from netcfg.compile.pipeline import ConfigSource, compile_config  # noqa: E402
from netcfg.model.errors import ConfigInvalid  # noqa: E402

VRF_L42 = COMPAT / "corpus" / "ifupdown-ng" / "ifupdown-ng-doc-interfaces-vrf-L42.interfaces"


@pytest.mark.skipif(shutil.which("ifup") is None or not Path("/usr/share/ifupdown2").is_dir(),
                    reason="Debian's ifupdown2 is not installed")
def test_a_vrf_without_a_stanza_fails_in_ifupdown2_and_is_refused_at_its_line():
    """`vrf vrf_external` and no `iface vrf_external`: ifupdown2's vrf addon
    makes no VRF (addons/vrf.py, _up_vrf_slave: 'vrf master ifaceobj ... not
    found'), its gateway into the VRF's table fails, ifup exits 1."""
    result = differential.ifupdown2_alone(VRF_L42, ["eth0"])
    assert result["rc"] == 1
    assert "vrf master ifaceobj vrf_external not found" in result["log"]
    assert "vrf_external" not in result["links"]
    assert not [r for r in result["routes"] if r.get("dst") == "default"]
    with pytest.raises(ConfigInvalid) as refused:
        compile_config(ConfigSource(path=str(VRF_L42)))
    (error,) = [d for d in refused.value.diagnostics if d.severity == "error"]
    assert error.loc.line == 8 and "ifupdown2 fails on it too" in error.message

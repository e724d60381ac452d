"""Debian ifupdown's tests/linux/testcase.8 as written (alias stanzas
eth1:1 and, on a VLAN, eth2.2:3, each with its hooks), in the VM tier
(the host kernel has no 8021q nor dummy: eth1 and eth2 are dummies here,
declared in stanzas of their own that netcfg merges with the file's).
Applied; each alias's address is on its base device with its label, as
`ip addr add A dev eth2.2:3 label eth2.2:3` makes it; the hooks ran in
the file's order; `show | apply` sends nothing; a label lost by hand comes
back.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from vm_helpers import kernel_can

from netcfg.apply.execute import apply
from netcfg.apply.hooks import HookSettings
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config

VM_TIER = pytest.mark.skipif(not kernel_can("vlanprobe0", "type", "dummy"),
                             reason="VM tier: needs dummy (make test-vm)")
CORPUS = Path(__file__).parents[1] / "compat" / "corpus" / "debian-ifupdown"
TESTCASE = CORPUS / "os-ifupdown-tests-linux-testcase.8.interfaces"
DUMMIES = "\niface eth1\n    link-type dummy\n\niface eth2\n    link-type dummy\n"


def labelled() -> dict[str, tuple[str, str]]:
    """label -> (device, address/prefix) of every IPv4 address."""
    out = subprocess.run(["ip", "-4", "-j", "addr", "show"], check=True, capture_output=True,
                         text=True).stdout
    return {a["label"]: (link["ifname"], f"{a['local']}/{a['prefixlen']}")
            for link in json.loads(out) for a in link.get("addr_info", ()) if "label" in a}


@VM_TIER
def test_ifupdown_testcase_8_aliases_are_labelled_addresses(session, tmp_path):
    log = tmp_path / "hooks.log"
    text = re.sub(r"(?m)^(\s*(?:post-)?up echo \w+)$", rf"\1 >> {log}",
                  TESTCASE.read_text()) + DUMMIES
    path = tmp_path / "interfaces"
    path.write_text(text)
    hooks = HookSettings(record=str(tmp_path / "run" / "hooks.json"))
    assert apply(compile_config(ConfigSource(path=str(path))).model, session,
                 hooks=hooks).verified
    found = labelled()
    assert found["eth1:1"] == ("eth1", "1.5.3.4/24"), found
    assert found["eth1"] == ("eth1", "1.2.3.4/24"), found
    assert found["eth2.2:3"] == ("eth2.2", "3.4.5.6/23"), found
    assert found["eth2.2"] == ("eth2.2", "2.3.4.5/24"), found
    assert log.read_text().split() == ["hi", "hihi", "hello", "hellolo"]

    shown = emit_model(session.read([""]), running=True)
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session,
                  hooks=hooks)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]

    subprocess.run(["ip", "addr", "del", "3.4.5.6/23", "dev", "eth2.2"], check=True)
    subprocess.run(["ip", "addr", "add", "3.4.5.6/23", "dev", "eth2.2"], check=True)
    assert "eth2.2:3" not in labelled()
    model = compile_config(ConfigSource(path=str(path))).model
    assert apply(model, session, hooks=hooks).verified
    assert labelled()["eth2.2:3"] == ("eth2.2", "3.4.5.6/23")
    assert apply(model, session, hooks=hooks).requests == 0

"""ifupdown's patterns and mappings chosen when netcfg compiles, against this
sandbox's links (compile/runtime_choice.py: the names from if_nameindex, a MAC
and a type from SIOCGIFHWADDR, in the namespace netcfg runs in), then applied
and read back with iproute2. Sandboxed (conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import textwrap

from netcfg.apply.execute import apply
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.compile.runtime_choice import ThisHost


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def inet(dev: str) -> list[str]:
    return [f"{a['local']}/{a['prefixlen']}"
            for a in json.loads(ip("-j", "addr", "show", "dev", dev))[0]["addr_info"]
            if a["family"] == "inet"]


def test_patterns_and_a_mapping_choose_from_this_namespaces_links(session, tmp_path):
    made = ["eth0", "eth1", "eth2"]
    ip("link", "add", "eth0", "type", "veth", "peer", "name", "peer0")
    ip("link", "add", "eth1", "address", "02:aa:00:00:00:01", "type", "veth",
       "peer", "name", "peer1")
    ip("link", "add", "eth2", "type", "veth", "peer", "name", "peer2")
    try:
        host = ThisHost()
        assert {"eth0", "eth1", "eth2"} <= set(host.links())
        assert host.lines("eth1", "address") == ["02:aa:00:00:00:01"]
        assert host.lines("eth1", "type") == ["1"] and host.lines("eth1", "wireless") is None
        script = tmp_path / "map.sh"
        script.write_text("#!/bin/sh\nwhile read name stanza; do [ \"$name\" = \"$1\" ] && "
                          "echo \"$stanza\"; done; exit 0\n")
        script.chmod(0o755)
        path = tmp_path / "interfaces"
        path.write_text(textwrap.dedent(f"""\
            auto mac/02:aa:00:00:00:01/=uplink
            iface uplink inet static
              address 192.0.2.1/24
            auto eth0 /eth?/3
            mapping eth2
              script {script}
              map eth0 nothing
              map eth2 lab
            iface eth0 inet static
              address 198.51.100.1/24
            iface lab inet static
              address 203.0.113.1/24
            """))
        compiled = compile_config(ConfigSource(path=str(path)))
        said = [w.message for w in compiled.warnings]
        assert any("brings up eth1, configured by stanza uplink" in m for m in said), said
        assert any("chose stanza 'lab' for eth2" in m for m in said), said
        assert apply(compiled.model, session).verified
        assert (inet("eth0"), inet("eth1"), inet("eth2")) == (
            ["198.51.100.1/24"], ["192.0.2.1/24"], ["203.0.113.1/24"])
        assert all("UP" in json.loads(ip("-j", "link", "show", n))[0]["flags"] for n in made)
        assert len(apply(compiled.model, session).plan) == 0
    finally:
        for name in made:
            subprocess.run(["ip", "link", "del", name], capture_output=True)


def test_ifup_name_runs_the_mapping_of_that_name(session, tmp_path, monkeypatch):
    """The drop-in's `ifup eth0` (netcfg/ifupdown/): no auto line names eth0,
    so only `ifup eth0` runs its mapping, as ifupdown's does."""
    from netcfg.ifupdown.main import main
    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    ip("link", "add", "eth0", "type", "veth", "peer", "name", "peer0")
    try:
        script = tmp_path / "map.sh"
        script.write_text("#!/bin/sh\necho office\n")
        script.chmod(0o755)
        path = tmp_path / "interfaces"
        path.write_text(f"mapping eth*\n  script {script}\n"
                        "iface office inet static\n  address 192.0.2.7/24\n")
        monkeypatch.setenv("NETCFG_INTERFACES", str(path))
        assert main(["ifup", "-a"]) == 0
        assert inet("eth0") == []
        assert main(["ifup", "eth0"]) == 0
        assert inet("eth0") == ["192.0.2.7/24"]
    finally:
        subprocess.run(["ip", "link", "del", "eth0"], capture_output=True)

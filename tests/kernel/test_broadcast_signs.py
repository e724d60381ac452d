"""`broadcast +` and `broadcast -` (iproute2's `brd +` / `brd -`, Debian
ifupdown's testcase.1): each IPv4 address gets its own broadcast, its host bits
set or reset, none for a /31; read back with iproute2. Sandboxed (conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import textwrap

from netcfg.apply.execute import apply
from netcfg.compile.pipeline import ConfigSource, compile_config


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def test_broadcast_plus_and_minus(session, tmp_path):
    for name in ("eth0", "eth1"):
        ip("link", "add", name, "type", "veth", "peer", "name", f"{name}-peer")
    try:
        path = tmp_path / "interfaces"
        path.write_text(textwrap.dedent("""\
            auto eth0 eth1
            iface eth0 inet static
              address 10.1.2.3/14
              address 192.0.2.5/31
              broadcast +
            iface eth1 inet static
              address 1.2.3.4/24
              address 1.2.3.4/30
              broadcast -
            """))
        model = compile_config(ConfigSource(path=str(path))).model
        assert apply(model, session).verified
        brd = {(a["local"], a["prefixlen"]): a.get("broadcast")
               for dev in ("eth0", "eth1")
               for a in json.loads(ip("-j", "addr", "show", "dev", dev))[0]["addr_info"]
               if a["family"] == "inet"}
        assert brd == {("10.1.2.3", 14): "10.3.255.255", ("192.0.2.5", 31): None,
                       ("1.2.3.4", 24): "1.2.3.0", ("1.2.3.4", 30): "1.2.3.4"}
        assert len(apply(model, session).plan) == 0
    finally:
        for name in ("eth0", "eth1"):
            subprocess.run(["ip", "link", "del", name], capture_output=True)

"""ifupdown's alias stanzas (`iface v1:1 inet static`) against the real
kernel (issue 22; Debian ifupdown's tests/linux/testcase.8): the alias's
address goes to the base device with the alias's name as its label
(IFA_LABEL, as `ip addr add A dev v1:1 label v1:1`), so `ip addr show
label v1:1` finds it; the alias's hook lines run with the base's, in the
file's order; `show | apply` sends nothing; a label changed by hand is
put back.
"""

from __future__ import annotations

import subprocess
import textwrap

from builders import compiled

from netcfg.apply.execute import apply
from netcfg.apply.hooks import HookSettings
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config


def config(log) -> str:
    return textwrap.dedent(f"""\
        auto v1 v1:1 v1p
        iface v1 inet static
            link-type veth
            veth-peer-name v1p
            address 192.0.2.4
            netmask 255.255.255.0
            up echo hi >> {log}
            post-up echo hello >> {log}

        iface v1:1 inet static
            address 198.51.100.4
            netmask 255.255.255.0
            up echo hihi >> {log}
            post-up echo hellolo >> {log}

        iface v1p
        """)


def labelled(ip_json, label: str) -> list[tuple[str, str]]:
    """(device, address/prefix) of each IPv4 address labelled LABEL, as
    `ip addr show label LABEL` selects them (its JSON lacks the device)."""
    return [(link["ifname"], f"{a['local']}/{a['prefixlen']}")
            for link in ip_json("-4", "addr", "show")
            for a in link.get("addr_info", ()) if a.get("label") == label]


def test_alias_stanza_is_a_labelled_address_with_its_hooks(session, tmp_path, ip_json):
    log = tmp_path / "hooks.log"
    hooks = HookSettings(record=str(tmp_path / "run" / "hooks.json"))
    text = config(log)
    result = apply(compiled(tmp_path, text).model, session, hooks=hooks)
    assert result.verified
    assert labelled(ip_json, "v1:1") == [("v1", "198.51.100.4/24")]
    assert labelled(ip_json, "v1") == [("v1", "192.0.2.4/24")]
    assert log.read_text().split() == ["hi", "hihi", "hello", "hellolo"]

    shown = emit_model(session.read([""]), running=True)
    assert "address-label v1:1 198.51.100.4/24" in shown, shown
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session,
                  hooks=hooks)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]
    assert apply(compiled(tmp_path, text).model, session, hooks=hooks).requests == 0

    # Drift: the alias's address re-added by hand without its label.
    subprocess.run(["ip", "addr", "del", "198.51.100.4/24", "dev", "v1"], check=True)
    subprocess.run(["ip", "addr", "add", "198.51.100.4/24", "dev", "v1"], check=True)
    assert labelled(ip_json, "v1:1") == []
    repaired = apply(compiled(tmp_path, text).model, session, hooks=hooks)
    assert repaired.verified and repaired.requests > 0
    assert labelled(ip_json, "v1:1") == [("v1", "198.51.100.4/24")]
    assert apply(compiled(tmp_path, text).model, session, hooks=hooks).requests == 0

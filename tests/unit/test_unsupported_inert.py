"""Lines of other programs (issue 22): accepted with a warning at the line when
they do nothing here or are left to another package's hook, refused under
--strict; typos and settings ifupdown2 applies stay refused."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat

from netcfg.cli.main import main
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.compile.unsupported import hook_lines
from netcfg.compile.jsonform import model_to_json


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "interfaces"
    path.write_text(text)
    return str(path)


CUMULUS = """\
auto br0
iface br0
    bridge-ports swp1
    mstpctl-treeprio 4096
    clagd-peer-ip 10.0.0.2

auto bond0
iface bond0
    bond-slaves swp2
    clag-id 1
    bond-lacp-bypass-allow yes
"""


def test_daemon_lines_are_warnings_at_their_line_with_a_summary(tmp_path):
    code, out, err = _run(["check", "-c", _write(tmp_path, CUMULUS)])
    assert code == 0, err
    lines = err.splitlines()
    assert any(line.endswith(":4: warning: br0: mstpctl-treeprio does nothing here: it is "
                             "mstpd's (Debian package mstpd, not installed with ifupdown2), "
                             "which netcfg does not drive: ifupdown2 hands mstpctl-* to mstpctl "
                             "only while mstpd runs and does nothing with them without it; the "
                             "bridge keeps the kernel's STP (bridge-stp); for the kernel's STP "
                             "write bridge-bridgeprio") for line in lines), err
    assert any(":5: warning: br0: clagd-peer-ip does nothing here: it is Cumulus Linux's MLAG"
               in line for line in lines)
    assert any(":10: warning: bond0: clag-id does nothing here" in line for line in lines)
    assert any(":11: warning: bond0: bond-lacp-bypass-allow does nothing here: LACP bypass is a "
               "Cumulus Linux kernel patch" in line for line in lines)
    assert "netcfg: 4 lines do nothing here or only through another package's hook " \
           "(warnings above); --strict refuses them" in lines
    assert out.startswith("ok: ")
    code, out, _ = _run(["check", "--json", "-c", _write(tmp_path, CUMULUS)])
    result = json.loads(out)
    assert (code, result["lines_doing_nothing_here"]) == (0, 4)
    assert [w["line"] for w in result["warnings"]] == [4, 5, 10, 11]


def test_strict_refuses_them_on_check_and_plan(tmp_path):
    path = _write(tmp_path, CUMULUS)
    for command in ("check", "plan"):
        code, out, err = _run([command, "--strict", "-c", path])
        assert code == 1
        assert out == ""
        assert ":4: error: br0: mstpctl-treeprio does nothing here" in err
        assert "(refused: --strict)" in err
        assert err.splitlines()[-1] == "netcfg: 4 errors; nothing was changed"


def test_strict_keeps_the_other_errors_and_refuses_the_inert_lines_with_them(tmp_path):
    path = _write(tmp_path, CUMULUS + "    bond-miimn 100\n")
    code, _, err = _run(["check", "--strict", "-c", path])
    assert code == 1
    assert ":12: error: bond0: unknown attribute 'bond-miimn' (did you mean 'bond-miimon'?)" \
        in err
    assert err.splitlines()[-1] == "netcfg: 5 errors; nothing was changed"
    code, _, err = _run(["check", "-c", path])
    assert code == 1
    assert err.splitlines()[-1] == "netcfg: 1 error; nothing was changed"


def test_inert_lines_never_reach_the_model(tmp_path):
    model = compile_config(ConfigSource(path=_write(tmp_path, CUMULUS))).model
    text = str(model_to_json(model))
    for word in ("mstpctl", "clag", "lacp-bypass"):
        assert word not in text


def test_typos_and_settings_ifupdown2_applies_stay_errors(tmp_path):
    text = ("auto br0\niface br0\n    bridge-ports swp1\n    bridge-prots swp1\n"
            "    batman-gw-mode client\n    bridge-mcfoo 1\n    ovs-extra set x\n")
    code, _, err = _run(["check", "-c", _write(tmp_path, text)])
    assert code == 1
    assert ":4: error: br0: unknown attribute 'bridge-prots' (did you mean 'bridge-ports'?)" in err
    assert ":5: error: br0: batman-gw-mode is not supported: a setting of batctl" in err
    assert ":6: error: br0: bridge-mcfoo is not supported: the kernel has it" in err
    assert ":7: error: br0: ovs-extra is not supported" in err


def test_ifupdown_ng_use_is_inert_for_executors_netcfg_does_not_run(tmp_path):
    """Issue 22's rule, reversed from refusing: `use dhcp` is inet dhcp
    (tests/unit/test_ng_dialect.py); an executor netcfg infers or does not
    run is a warning at its line, and --strict refuses it."""
    text = "auto bond0\niface bond0\n    use bond\n    bond-slaves eth0\n" \
           "auto eth1\niface eth1\n    use cake\n    cake-bandwidth 1Gbit\n"
    path = _write(tmp_path, text)
    code, _, err = _run(["check", "-c", path])
    assert code == 0, err
    assert ":3: warning: bond0: use does nothing here: it is ifupdown-ng's executor selection" \
        in err
    assert ":7: warning: eth1: use does nothing here: ifupdown-ng's cake executor sets a CAKE " \
           "queueing discipline" in err
    assert "ifupdown2 ignores the line too" in err
    assert ":8: warning: eth1: cake-bandwidth does nothing here" in err
    code, _, err = _run(["check", "--strict", "-c", path])
    assert code == 1
    assert ":7: error: eth1: use does nothing here" in err and "(refused: --strict)" in err


def test_hook_package_lines_name_the_package_and_whether_its_hook_is_there(tmp_path,
                                                                           monkeypatch):
    network = tmp_path / "network"
    (network / "if-pre-up.d").mkdir(parents=True)
    hook = network / "if-pre-up.d" / "wpasupplicant"
    hook.write_text("#!/bin/sh\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("NETCFG_NETWORK_DIR", str(network))
    text = ("auto wlan0\niface wlan0 inet dhcp\n    wpa-ssid Home Net\n    wpa-psk secret\n"
            "    dns-sortlist 10.0.0.0/8\n    offload-tso off\n    hostapd /etc/hostapd.conf\n")
    path = _write(tmp_path, text)
    code, _, err = _run(["check", "-c", path])
    assert code == 0, err
    assert (f":3: warning: wlan0: wpa-ssid is left to the wpasupplicant package's ifupdown hook, "
            f"which starts wpa_supplicant for the interface, as under ifupdown and ifupdown2 "
            f"(netcfg does not apply it itself): {hook} is present and gets it as IF_<KEY>"
            in err), err
    assert (f":5: warning: wlan0: dns-sortlist is left to the resolvconf package's ifupdown "
            f"hook" in err)
    assert (f"{os.path.join(str(network), 'if-up.d', '000resolvconf')} is not there (is "
            f"resolvconf installed?), so nothing reads the line" in err)
    # Debian's ethtool hook is one ifupdown2 never runs (its ethtool addon replaces it).
    assert ":6: warning: wlan0: offload-tso is read only by Debian's ethtool package" in err
    assert "the line does nothing here" in err
    assert ":7: warning: wlan0: hostapd is left to the hostapd package's" in err
    assert "netcfg: 5 lines do nothing here" in err
    compiled = compile_config(ConfigSource(path=path))
    assert hook_lines(compiled.parsed) == {("", "wlan0"): {
        "wpa-ssid": "Home Net", "wpa-psk": "secret", "dns-sortlist": "10.0.0.0/8",
        "hostapd": "/etc/hostapd.conf"}}
    assert "wpa" not in str(model_to_json(compiled.model))


def test_inet_ppp_is_left_to_pon_and_its_device_out_of_the_model(tmp_path):
    text = ("auto dsl0\niface dsl0 inet manual\n\nauto ppp0\niface ppp0 inet ppp\n"
            "    pre-up /bin/ip link set dsl0 up\n    provider dsl-provider\n")
    path = _write(tmp_path, text)
    code, _, err = _run(["check", "-c", path])
    assert code == 0, err
    assert (":5: warning: ppp0: inet ppp is left to the ppp package: ifupdown's ppp method runs "
            "'pon dsl-provider' and 'poff dsl-provider', and pppd makes ppp0; netcfg runs "
            "neither and leaves ppp0 alone") in err
    model = compile_config(ConfigSource(path=path)).model
    assert sorted(name for _, name in model.interfaces) == ["dsl0"]
    code, _, err = _run(["check", "--strict", "-c", path])
    assert code == 1
    assert ":5: error: ppp0: inet ppp is left to the ppp package" in err


def test_strict_errors_refuses_the_parsers_and_the_builders_inert_lines():
    """What the pipeline's --strict does with a compile's diagnostics."""
    from netcfg.compile.build import build_objects
    from netcfg.compile.parser import parse
    from netcfg.compile.render import RenderedSource
    from netcfg.compile.unsupported import strict_errors
    from netcfg.model.errors import Report

    report = Report()
    text = CUMULUS + "\nvlan br0.10\n    bridge-igmp-querier-src 10.0.0.1\n"
    parsed = parse([RenderedSource("interfaces", text, None)], lambda p, loc: [], report)
    build_objects(parsed, report)
    assert [(d.severity, d.loc.line) for d in report.diagnostics] == [
        ("warning", 13), ("warning", 4), ("warning", 5), ("warning", 10), ("warning", 11)]
    refused = strict_errors(report.diagnostics)
    assert [(d.severity, d.loc.line) for d in refused] == [
        ("error", 13), ("error", 4), ("error", 5), ("error", 10), ("error", 11)]
    assert all(d.message.endswith("(refused: --strict)") for d in refused)
    assert refused[0].message.startswith("vlan br0.10 does nothing here: a 'vlan' stanza's")


def test_config_source_strict_refuses_them_in_every_command(tmp_path):
    """ConfigSource.strict: apply, netcfgd and the ifupdown commands' compile
    path refuse the lines that do nothing here, as check --strict does."""
    import pytest
    from netcfg.model.errors import ConfigInvalid

    path = _write(tmp_path, CUMULUS + "\nvlan br0.10\n    bridge-igmp-querier-src 10.0.0.1\n")
    assert len(compile_config(ConfigSource(path=path)).warnings) == 5
    with pytest.raises(ConfigInvalid) as refused:
        compile_config(ConfigSource(path=path, strict=True))
    assert [(d.severity, d.loc.line) for d in refused.value.diagnostics] == [
        ("error", 4), ("error", 5), ("error", 10), ("error", 11), ("error", 13)]
    code, _, err = _run(["apply", "--strict", "--dry-run", "-c", path])
    assert code == 1 and ":4: error: br0: mstpctl-treeprio does nothing here" in err

"""ifupdown2's command lines, selection and ifquery's formats (netcfg/ifupdown/),
without a kernel: what Proxmox and networking.service rely on."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from netcfg.ifupdown import query
from netcfg.ifupdown.actions import downed
from netcfg.ifupdown.argv import EXIT_USAGE, UsageError, parse_args
from netcfg.ifupdown.config import load, select
from netcfg.ifupdown.main import main, version_line
from netcfg.model.location import SourceLocation

FILE = textwrap.dedent("""\
    auto lo
    iface lo inet loopback

    allow-hotplug eno2
    iface eno2 inet manual

    allow-mgmt eno1
    iface eno1 inet manual

    auto vmbr0
    iface vmbr0 inet static
        address 192.0.2.10/24
        address 192.0.2.11/24
        gateway 192.0.2.1
        bridge-ports eno1
        bridge-stp off
        bridge-fd 0

    auto vmbr0.5
    iface vmbr0.5 inet manual

    iface vmbr9 inet manual
        bridge-ports none
    """)


@pytest.fixture
def ifile(tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(FILE)
    return load(str(path))


def proxmox_accepts(first_line: str) -> bool:
    """pve-manager PVE/API2/Network.pm ifupdown2_version + assert_ifupdown2_installed,
    in Python: `split(/\\.|-/, $v)`, major*100000 + minor*1000 + extra*10 >= 1.2.8,
    and the 4th field matches /(pve|pmx|proxmox)/."""
    m = re.match(r"^\s*ifupdown2:(\S+)\s*$", first_line)
    if not m:
        return False
    fields = re.split(r"\.|-", m.group(1))
    major, minor, extra = (int(re.match(r"\d*", f).group() or 0) for f in fields[:3])
    pve = fields[3] if len(fields) > 3 else None
    return (major * 100000 + minor * 1000 + extra * 10 >= 1 * 100000 + 2 * 1000 + 8 * 10
            and pve is not None and re.search("(pve|pmx|proxmox)", pve) is not None)


def test_version_passes_proxmoxs_check_and_says_it_is_netcfg(capsys):
    assert proxmox_accepts(version_line())
    assert "netcfg" in version_line()
    # The check can fail: Debian's own ifupdown2 is refused by Proxmox.
    assert not proxmox_accepts("ifupdown2:3.0.0-1.1")
    assert main(["ifreload", "-V"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == version_line()


@pytest.mark.parametrize("command, argv", [
    ("ifup", []),                        # neither -a nor a name
    ("ifreload", []),                    # -a, -c or --allow required
    ("ifup", ["-a", "eth0"]),            # exclusive
    ("ifdown", ["--allow", "auto", "-a"]),
    ("ifquery", ["-r", "-c", "-a"]),     # one query mode
    ("ifup", ["--bogus"]),
])
def test_usage_errors_exit_90(command, argv, capsys):
    with pytest.raises(UsageError):
        parse_args(command, argv)
    assert main([command, *argv]) == EXIT_USAGE
    assert capsys.readouterr().err.startswith("error: ")


def test_the_command_is_argv0s_basename_or_the_first_argument(capsys):
    assert main(["/sbin/ifquery", "-V"]) == 0
    assert main(["netcfg.ifupdown", "ifquery", "-V"]) == 0
    assert main(["/usr/share/ifupdown2/ifupdown2", "-V"]) == EXIT_USAGE


def test_selection_as_ifupdown2_picks(ifile):
    everything = dict(everything=True, names=(), classes=(), excludes=())
    # -a is the auto lines; allow-hotplug is its own class (ifquery -l lists no eno2).
    assert select(ifile, **everything) == ["lo", "vmbr0", "vmbr0.5"]
    assert select(ifile, **{**everything, "excludes": ["^vmbr"]}) == ["lo"]
    assert select(ifile, everything=False, names=(), classes=["hotplug"], excludes=()) == \
        ["eno2"]
    assert select(ifile, everything=False, names=(), classes=["mgmt"], excludes=()) == ["eno1"]
    # ifup@.service: `ifup --allow=hotplug eno2`; a name of another class is skipped.
    assert select(ifile, everything=False, names=["eno2", "eno1"], classes=["hotplug"],
                  excludes=()) == ["eno2"]
    assert select(ifile, everything=False, names=(), classes=["auto"], excludes=()) == \
        ["lo", "vmbr0", "vmbr0.5"]


def test_json_is_ifupdown2s_objects_and_an_empty_list_when_nothing_matches(ifile):
    assert json.loads(query.as_json(ifile, [])) == []
    [vmbr0] = json.loads(query.as_json(ifile, ["vmbr0"]))
    assert vmbr0 == {"name": "vmbr0", "addr_method": "static", "addr_family": "inet",
                     "auto": True,
                     "config": {"address": ["192.0.2.10/24", "192.0.2.11/24"],
                                "gateway": "192.0.2.1", "bridge-ports": "eno1",
                                "bridge-stp": "off", "bridge-fd": "0"}}


def test_check_verdicts_mark_the_lines_and_the_interface(ifile):
    address = ifile.attributes("vmbr0")[1].loc      # the second address line
    verdicts = query.Verdicts()
    verdicts.fail("vmbr0", address, "address 192.0.2.11/24 is configured but not on the device")
    [vmbr0, lo] = json.loads(query.as_json(ifile, ["vmbr0", "lo"], verdicts))
    assert vmbr0["status"] == "fail" and lo["status"] == "pass"
    assert vmbr0["config_status"]["address"] == ["pass", "fail"]
    assert vmbr0["config_status"]["gateway"] == "pass"
    native = query.as_native(ifile, ["vmbr0"], verdicts).splitlines()
    assert native[0] == "auto vmbr0"
    assert native[1].startswith("iface vmbr0 inet static") and native[1].endswith("[fail]")
    assert [ln.split()[-1] for ln in native[2:4]] == ["[pass]", "[fail]"]


def test_ifdown_deletes_what_netcfg_creates_with_what_sits_on_it_and_stops_a_port(ifile):
    model = downed(ifile.model, ["vmbr0", "eno2"])
    names = {name for _, name in model.interfaces}
    assert "vmbr0" not in names and "vmbr0.5" not in names   # the VLAN goes with its bridge
    eno2 = model.iface("", "eno2")
    assert eno2 is not None and not eno2.auto
    assert ("", "eno1") not in model.masters
    # Untouched interfaces stay as compiled.
    assert model.iface("", "lo") is ifile.model.iface("", "lo")


def test_a_config_error_names_the_interface_file_and_line(tmp_path, capsys):
    path = tmp_path / "interfaces"
    path.write_text("auto br0\niface br0\n    bridge-ports eth0\n    bridge-sttp on\n")
    assert main(["ifquery", "-a", "-i", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"error: br0: {path}:4: " in err
    assert "bridge-sttp" in err
    assert "Traceback" not in err


def test_diagnostics_fall_back_to_the_file_outside_stanzas(ifile):
    from netcfg.ifupdown.config import diagnostic_line
    from netcfg.model.errors import Diagnostic

    line = diagnostic_line(ifile, Diagnostic(SourceLocation("/elsewhere", 3), "odd"))
    assert line == "error: /elsewhere:3: odd"


def test_t_json_on_a_file_netcfg_would_read_as_stanzas_is_refused(tmp_path, capsys):
    path = tmp_path / "interfaces"
    path.write_text(FILE)
    assert main(["ifquery", "-a", "-t", "json", "-i", str(path)]) == 1
    assert "error: -t json: " in capsys.readouterr().err
    model = tmp_path / "model.json"
    model.write_text('{"version": 1, "interfaces": [{"name": "lo", "kind": "loopback", '
                     '"auto": true}]}')
    capsys.readouterr()
    assert main(["ifquery", "-a", "-l", "-t", "json", "-i", str(model)]) == 0
    assert capsys.readouterr().out == "lo\n"

"""ifupdown's mappings and patterns, chosen when netcfg compiles
(compile/runtime_choice.py). The host's links are a stand-in here (the kernel
tier's tests/kernel/test_runtime_choice.py uses a namespace's); the mapping
scripts are real programs run as ifupdown runs them."""

from __future__ import annotations

import os
import textwrap

import pytest

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.compile.runtime_choice import ThisHost
from netcfg.model.errors import ConfigInvalid

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mapping scripts run from root's files")


class Links(ThisHost):
    """Links and their sysfs values as given; scripts run for real."""

    def __init__(self, links: dict[str, dict[str, list[str]]]):
        super().__init__()
        self.values = links

    def links(self):
        return list(self.values)

    def lines(self, name, variable):
        return self.values[name].get(variable)


HOST = Links({"lo": {"type": ["772"], "address": ["00:00:00:00:00:00"]},
              "eth0": {"type": ["1"], "address": ["02:00:00:00:00:01"]},
              "wlan0": {"type": ["1"], "address": ["02:00:00:00:00:02"], "wireless": []},
              "eth1": {"type": ["1"], "address": ["01:23:45:67:89:ad"]},
              "wlan1": {"type": ["1"], "address": ["02:00:00:00:00:04"], "wireless": []}})


def compiled(tmp_path, text, monkeypatch, host=HOST, brought_up=()):
    import netcfg.compile.runtime_choice as rc
    monkeypatch.setattr(rc, "ThisHost", lambda: host)
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent(text))
    return compile_config(ConfigSource(path=str(path), brought_up=brought_up))


def refused(tmp_path, text, monkeypatch, **kw) -> list[str]:
    with pytest.raises(ConfigInvalid) as e:
        compiled(tmp_path, text, monkeypatch, **kw)
    return [f"{d.loc.line}: {d.message}" for d in e.value.diagnostics if d.severity == "error"]


def script(tmp_path, body: str, name="map.sh") -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


def addresses(c, name):
    return c.model.iface("", name).attrs.get("address") if c.model.iface(
        "", name) else None


def test_patterns_as_ifupdown_expands_them(tmp_path, monkeypatch):
    c = compiled(tmp_path, """\
        auto /eth*
        iface eth0 inet static
          address 192.0.2.1/24
        auto /eth*/=foo mac/01:23:45:67:89:ad/=foo
        iface foo inet static
          address 192.0.2.9/24
        auto type/1/3=bar
        iface bar inet static
          address 198.51.100.3/24
        auto wireless/*/2=baz
        iface baz inet static
          address 203.0.113.2/24
        """, monkeypatch)
    up = {o.name for o in c.model.interfaces.values() if o.auto}
    # eth1: named first by `/eth*`, which has no stanza for it (not brought up, as
    # ifupdown's "unknown interface"); then not foo's nor bar's: configured once.
    assert up == {"eth0", "wlan1"}
    assert addresses(c, "eth0") == ["192.0.2.1/24"]       # named first: its own stanza
    assert c.model.iface("", "eth1") is None
    assert c.model.iface("", "foo") is None        # a logical stanza only
    assert c.model.iface("", "wlan1").attrs["address"] == ["203.0.113.2/24"]
    said = [w.message for w in c.warnings if w.attribute == "auto"]
    assert any("eth1 (brought up by an earlier line" in m for m in said)
    assert any("inverts '*'" in m for m in said)


def test_a_pattern_that_matches_nothing_brings_nothing_up(tmp_path, monkeypatch):
    c = compiled(tmp_path, """\
        auto /ens*
        iface ens3 inet static
          address 192.0.2.1/24
        """, monkeypatch)
    assert not any(o.auto for o in c.model.interfaces.values())
    assert any("matches no interface present now" in w.message for w in c.warnings)


def test_a_mapping_script_chooses_the_stanza(tmp_path, monkeypatch):
    s = script(tmp_path, """\
        read first; read second
        [ "$1" = eth0 ] && [ "$first" = "02:00:00:00:00:01 home" ] && echo home
        """)
    c = compiled(tmp_path, f"""\
        auto eth0
        mapping eth*
          script {s}
          map 02:00:00:00:00:01 home
          map 02:00:00:00:00:02 work
        iface eth0 inet static
          address 192.0.2.1/24
        iface home inet static
          address 198.51.100.1/24
        iface work inet static
          address 203.0.113.1/24
        """, monkeypatch)
    assert addresses(c, "eth0") == ["198.51.100.1/24"]
    assert c.model.iface("", "home") is None
    assert any("chose stanza 'home' for eth0" in w.message for w in c.warnings)


def test_ifup_of_a_name_runs_its_mapping(tmp_path, monkeypatch):
    s = script(tmp_path, "echo home\n")
    text = f"""\
        mapping eth0
          script {s}
        iface home inet static
          address 198.51.100.1/24
        """
    assert compiled(tmp_path, text, monkeypatch).model.iface("", "eth0") is None
    c = compiled(tmp_path, text, monkeypatch, brought_up=("eth0",))
    assert addresses(c, "eth0") == ["198.51.100.1/24"]


@pytest.mark.parametrize("body, message", [
    ("exit 0\n", "printed nothing for eth0"),
    ("echo home; exit 3\n", "failed on eth0 (exit status 3)")])
def test_a_mapping_that_chooses_nothing_is_refused_at_its_script_line(tmp_path, monkeypatch,
                                                                        body, message):
    s = script(tmp_path, body)
    errors = refused(tmp_path, f"""\
        auto eth0
        mapping eth0
          script {s}
        iface home inet static
          address 198.51.100.1/24
        """, monkeypatch)
    assert len(errors) == 1 and errors[0].startswith("3: ") and message in errors[0]


def test_a_mapping_script_that_is_not_there(tmp_path, monkeypatch):
    errors = refused(tmp_path, """\
        auto eth0
        mapping eth0
          script /nonexistent/map.sh
        """, monkeypatch)
    assert errors == ["3: mapping eth0: script /nonexistent/map.sh is not there (ifupdown runs "
                      "it for eth0 and its ifup fails: No such file or directory); give the "
                      "path of an executable"]


def test_a_stanza_no_one_wrote_leaves_the_interface_unconfigured(tmp_path, monkeypatch):
    s = script(tmp_path, "echo nosuch\n")
    c = compiled(tmp_path, f"""\
        auto eth0
        mapping eth0
          script {s}
        iface eth0 inet static
          address 192.0.2.1/24
        """, monkeypatch)
    assert c.model.iface("", "eth0") is None
    assert any("ignoring unknown interface eth0=nosuch" in w.message for w in c.warnings)


def test_a_script_others_can_write_is_not_run(tmp_path, monkeypatch):
    s = script(tmp_path, "echo home\n")
    os.chmod(s, 0o777)
    errors = refused(tmp_path, f"""\
        auto eth0
        mapping eth0
          script {s}
        iface home inet static
          address 198.51.100.1/24
        """, monkeypatch)
    assert len(errors) == 1 and "is not run for eth0" in errors[0] and "chmod go-w" in errors[0]


def test_a_mapping_nothing_brings_up_is_not_run(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    s = script(tmp_path, f"touch {marker}; echo home\n")
    c = compiled(tmp_path, f"""\
        auto eth1
        mapping eth0
          script {s}
        """, monkeypatch)
    assert not marker.exists()
    assert any("its script is not run" in w.message for w in c.warnings)

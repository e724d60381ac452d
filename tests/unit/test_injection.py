"""Issue 24, no injection: template variables (M11), names (L5), the native
form of `show` (M12) and volume names (M8) cannot add config lines, hide
what a name is, or escape into paths. Each test failed on 8f56453."""

from __future__ import annotations

import json
import textwrap
import unicodedata

import pytest

from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid
from netcfg.model.model import ConfigObject, Model

BRIDGE_WITH_ALIAS = """\
auto br0
iface br0
    bridge-ports none
    alias ${name}
"""
INJECTED = "tenant\n    post-up id > /tmp/pwned"


def config_dir(tmp_path, text: str, variables: dict | None = None):
    directory = tmp_path / "config"
    directory.mkdir()
    (directory / "main.tmpl").write_text(textwrap.dedent(text))
    if variables is not None:
        (directory / "vars.json").write_text(json.dumps(variables, indent=2) + "\n")
    return directory


def errors_of(source: ConfigSource) -> list[str]:
    with pytest.raises(ConfigInvalid) as info:
        compile_config(source)
    return [d.format() for d in info.value.diagnostics]


# M11: variables ------------------------------------------------------------

def test_newline_in_vars_json_is_refused_with_the_variable_name(tmp_path):
    directory = config_dir(tmp_path, BRIDGE_WITH_ALIAS, {"mtu": 1500, "name": INJECTED})
    [error] = errors_of(ConfigSource(path=str(directory)))
    assert error.startswith(f"{directory}/vars.json:3: error: template variable name:")
    assert "U+000A" in error and "control character" in error


def test_newline_in_set_is_refused(tmp_path):
    directory = config_dir(tmp_path, BRIDGE_WITH_ALIAS, {"name": "fine"})
    [error] = errors_of(ConfigSource(path=str(directory), variables={"name": INJECTED}))
    assert "template variable name:" in error and "U+000A" in error


@pytest.mark.parametrize("value", [
    "a\rpost-up x", "a\x1b[2J", "a\x00b", "a\u2028post-up x", "a\x85b", "a\tb",
])
def test_every_line_breaking_or_control_character_is_refused(tmp_path, value):
    directory = config_dir(tmp_path, BRIDGE_WITH_ALIAS)
    [error] = errors_of(ConfigSource(path=str(directory), variables={"name": value}))
    assert "template variable name" in error


def test_nested_values_and_keys_are_checked(tmp_path):
    text = "% for n in nets:\nauto ${n['br']}\niface ${n['br']}\n    bridge-ports none\n% endfor\n"
    directory = config_dir(tmp_path, text, {"nets": [{"br": "br0"}, {"br": "br1\npost-up x"}]})
    [error] = errors_of(ConfigSource(path=str(directory)))
    assert 'template variable nets[1]["br"]' in error


def test_ordinary_variables_still_render(tmp_path):
    directory = config_dir(tmp_path, BRIDGE_WITH_ALIAS, {"name": "tenant one — ünïcode"})
    compiled = compile_config(ConfigSource(path=str(directory)))
    assert compiled.model.interfaces[("", "br0")].attrs.get("alias") == "tenant one — ünïcode"


# L5: names -----------------------------------------------------------------

def interfaces_with(tmp_path, name: str) -> ConfigSource:
    path = tmp_path / "interfaces"
    path.write_text(f"auto {name}\niface {name}\n    bridge-ports none\n", encoding="utf-8")
    return ConfigSource(path=str(path))


def test_nfd_spelling_of_a_name_is_refused_naming_its_nfc_twin(tmp_path):
    nfd = unicodedata.normalize("NFD", "brü")
    [error] = errors_of(interfaces_with(tmp_path, nfd))
    assert "not in Unicode NFC form" in error and repr("brü") in error


def test_nfc_spelling_is_accepted(tmp_path):
    compiled = compile_config(interfaces_with(tmp_path, unicodedata.normalize("NFC", "brü")))
    assert ("", "brü") in compiled.model.interfaces


@pytest.mark.parametrize("char, said", [
    ("\u202e", "bidirectional-text control character (U+202E)"),
    ("\u2066", "bidirectional-text control character (U+2066)"),
    ("\u200d", "invisible formatting character (U+200D)"),
    ("\x1b", "control character (U+001B)"),
    ("\x7f", "control character (U+007F)"),
])
def test_names_with_bidi_format_or_control_characters_are_refused(tmp_path, char, said):
    [error] = errors_of(interfaces_with(tmp_path, f"br{char}1"))
    assert "not a valid interface name" in error and said in error


# M12: the native form of running state -------------------------------------

def running_bridge(**attrs) -> ConfigObject:
    return ConfigObject("interface", attrs.pop("name", "br1"), "bridge", attrs.pop("netns", ""),
                        {"bridge-ports": [], **attrs}, auto=True)


def snapshot_of(*objects: ConfigObject) -> str:
    model = Model()
    for obj in objects:
        model.interfaces[(obj.netns, obj.name)] = obj
    return emit_model(model, running=True)


def compile_snapshot(tmp_path, text: str, name: str = "snap.tmpl"):
    path = tmp_path / name
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path)))


def stanza_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_a_tenants_alias_with_newlines_adds_no_line_to_the_snapshot(tmp_path):
    text = snapshot_of(running_bridge(alias=INJECTED + "\n#"), running_bridge(name="br2"))
    assert all(not line.startswith("post-up") for line in stanza_lines(text))
    assert "\x0a    post-up" not in text and r"\x0a    post-up id" in text
    compiled = compile_snapshot(tmp_path, text)
    br1 = compiled.model.interfaces[("", "br1")]
    assert "alias" not in br1.attrs and not compiled.warnings
    assert ("", "br2") in compiled.model.interfaces


@pytest.mark.parametrize("alias", [
    "${__import__('os').system('id')}", "<%import os%>", "x \\", "a # b", "a\x1b]0;t\x07",
])
def test_values_that_would_not_read_back_are_left_out_with_a_comment(tmp_path, alias):
    text = snapshot_of(running_bridge(alias=alias, mtu=9000))
    assert "# alias left out:" in text and "\x1b" not in text and "${" not in text
    compiled = compile_snapshot(tmp_path, text)
    assert compiled.model.interfaces[("", "br1")].attrs == {"bridge-ports": [], "mtu": 9000}


def test_a_foreign_name_with_esc_never_reaches_the_output_raw():
    text = snapshot_of(running_bridge(name="br\x1b[2J"), running_bridge(name="br2", netns="ns\x1b"))
    assert "\x1b" not in text
    assert r"# interface 'br\x1b[2J' left out" in text
    assert r"in namespace 'ns\x1b' left out" in text


def test_plain_values_still_round_trip(tmp_path):
    text = snapshot_of(running_bridge(alias="tenant one (VM 100)", mtu=9000))
    assert "left out" not in text
    br1 = compile_snapshot(tmp_path, text, "snap").model.interfaces[("", "br1")]
    assert br1.attrs["alias"] == "tenant one (VM 100)"


def ansible_module_function(name: str):
    """A function of fleet/ansible's netcfg_apply module, taken from its source
    (the module imports ansible, which this tier does not install; the
    function itself uses nothing of it)."""
    import ast
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "fleet/ansible/plugins/modules/netcfg_apply.py"
    if not path.exists():   # the Debian package's autopkgtest copies no fleet/
        pytest.skip(f"{path} is not in this copy of the source")
    tree = ast.parse(path.read_text())
    [node] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    namespace: dict = {}
    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
    return namespace[name]


def test_the_ansible_module_refuses_control_characters_in_vars_before_staging():
    check = ansible_module_function("control_character_in")
    assert check("tenant\n    post-up id", "name") == ("name", "U+000A")
    assert check({"nets": [{"br": "ok"}, {"br": "a\u2028b"}]}, "site") == \
        ("site['nets'][1]['br']", "U+2028")
    assert check({"k\x1b": 1}, "v") == ("v (a key)", "U+001B")
    assert check({"name": "tenant one — ü", "mtu": 9000, "on": True}, "v") is None

"""Issue 24, no injection: template variables (M11), names (L5), the native
form of `show` (M12) and volume names (M8) cannot add config lines, hide
what a name is, or escape into paths. Each test failed on 8f56453."""

from __future__ import annotations

import json
import textwrap
import unicodedata

import pytest

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid

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


def hooks_of(compiled) -> list[str]:
    return [line for obj in compiled.model.interfaces.values()
            for line in (getattr(obj, "hooks", None) or [])]


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

"""Shipped examples compile, and their JSON form is valid and round-trips.

Docs run as tests: every file in templates/examples/ is compiled here (and
applied in the sandbox by the kernel tier once `netcfg apply` exists).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from netcfg.data import templates_dir
from netcfg.compile.emit import emit_model
from netcfg.compile.jsonform import model_to_json
from netcfg.compile.jsonform import document_schema
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.model import Model
from netcfg.plan import make_plan

EXAMPLES = sorted((templates_dir() / "examples").glob("*.tmpl"))
# `make test` unpacks them from Debian's ifupdown2 package (without installing it).
IFUPDOWN2_EXAMPLES = Path(os.environ.get("NETCFG_IFUPDOWN2_EXAMPLES",
                                         "/usr/share/doc/ifupdown2/examples"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_compiles_and_plans(path):
    model = compile_config(ConfigSource(path=str(path))).model
    assert model.interfaces
    plan = make_plan(model, Model())
    assert len(plan) > 0


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_json_form_is_schema_valid_and_round_trips(path):
    model = compile_config(ConfigSource(path=str(path))).model
    doc = model_to_json(model)
    jsonschema.Draft202012Validator(document_schema()).validate(doc)
    text = json.dumps(doc)
    again = compile_config(ConfigSource(path="-", stdin_text=text)).model
    assert model_to_json(again) == doc


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_stanza_form_round_trips(path):
    model = compile_config(ConfigSource(path=str(path))).model
    stanzas = emit_model(model)
    again = compile_config(ConfigSource(path="-", stdin_text=stanzas)).model
    assert model_to_json(again) == model_to_json(model)


@pytest.mark.skipif(not IFUPDOWN2_EXAMPLES.exists() and "NETCFG_IFUPDOWN2_EXAMPLES" not in os.environ,
                    reason="ifupdown2's examples not available (make test provides them)")
def test_ifupdown2_example_with_supported_attributes_compiles_unchanged():
    path = IFUPDOWN2_EXAMPLES / "vlan_aware_bridges" / "interfaces.basic"
    model = compile_config(ConfigSource(path=str(path))).model
    bridge = model.interfaces[("", "bridge")]
    assert bridge.kind == "bridge" and bridge.attrs["bridge-vlan-aware"] is True
    assert len(bridge.attrs["bridge-ports"]) > 40


# ifupdown2's examples that are not interfaces files: a lib of Mako defs meant
# to be copied into ifupdown2's template directory.
NOT_INTERFACES = {"interfaces_bridge_template_func"}


def _ifupdown2_example_files():
    if not IFUPDOWN2_EXAMPLES.exists():
        return []
    return sorted(p for p in IFUPDOWN2_EXAMPLES.rglob("interfaces*")
                  if p.is_file() and p.name not in NOT_INTERFACES)


@pytest.mark.parametrize("path", _ifupdown2_example_files(), ids=lambda p: p.name)
def test_ifupdown2_examples_fail_only_on_what_netcfg_refuses_on_purpose(path):
    """Each error on ifupdown2's own examples is an explained refusal of a
    feature netcfg does not support (or one real conflict in its sample
    file): the rest of every file parses and validates."""
    from netcfg.model.errors import ConfigInvalid

    try:
        compile_config(ConfigSource(path=str(path)))
    except ConfigInvalid as e:
        unexplained = [d.format() for d in e.diagnostics
                       if d.severity == "error"     # a warning refuses nothing
                       and " is not supported" not in d.message
                       and "stanzas (per-VLAN bridge settings) are not supported" not in d.message
                       and not (path.name == "interfaces" and "address 12.0.0." in d.message
                                or "address 2000:1000:1000:1000:3::5" in d.message)]
        assert unexplained == []

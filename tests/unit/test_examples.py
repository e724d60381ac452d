"""Shipped examples compile, and their JSON form is valid and round-trips.

Docs run as tests: every file in templates/examples/ is compiled here (and
applied in the sandbox by the kernel tier once `netcfg apply` exists).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from netcfg.compile import ConfigSource, compile_config
from netcfg.compile.emit import emit_model
from netcfg.compile.jsonform import model_to_json
from netcfg.plan import make_plan
from netcfg.compile.model import Model
from netcfg.schema import document_schema

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "templates" / "examples").glob("*.tmpl"))
IFUPDOWN2_EXAMPLES = Path("/usr/share/doc/ifupdown2/examples")


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


@pytest.mark.skipif(not IFUPDOWN2_EXAMPLES.exists(), reason="Debian's ifupdown2 not installed")
def test_ifupdown2_example_with_supported_attributes_compiles_unchanged():
    path = IFUPDOWN2_EXAMPLES / "vlan_aware_bridges" / "interfaces.basic"
    model = compile_config(ConfigSource(path=str(path))).model
    bridge = model.interfaces[("", "bridge")]
    assert bridge.kind == "bridge" and bridge.attrs["bridge-vlan-aware"] is True
    assert len(bridge.attrs["bridge-ports"]) > 40

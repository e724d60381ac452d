"""The compiled fast checks in netcfg.spec agree with jsonschema."""

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netcfg.compile.jsonform import document_schema
from netcfg.kinds import registry
from netcfg import spec as schema

ATTRIBUTES = [(g, a) for g in schema.all_groups() for a in schema.group_attributes(g)]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 70000) | st.sampled_from(
        ["", "yes", "swp1", "swp1.100", "a/b", "10.0.0.1/24", "802.3ad", "x" * 20, "eui64",
         "100-200", "02:00:00:00:00:01", "auto", "enforce", "/srv/v.img"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["to", "via", "dev", "table", "metric", "lun", "volume", "x"]), inner,
        max_size=4),
    max_leaves=8)


@pytest.mark.parametrize("group,attribute", ATTRIBUTES)
@settings(max_examples=60, deadline=None)
@given(value=json_values)
def test_fast_checker_agrees_with_jsonschema(group, attribute, value):
    spec = schema.group_attributes(group)[attribute].schema
    expected = jsonschema.Draft202012Validator(spec).is_valid(value)
    assert (schema.value_checker(group, attribute)(value) == []) == expected


def test_every_attribute_is_described():
    for group, attribute in ATTRIBUTES:
        assert schema.group_attributes(group)[attribute].description, (group, attribute)


def test_document_schema_is_a_valid_schema():
    doc = document_schema()
    jsonschema.Draft202012Validator.check_schema(doc)
    kinds = doc["$defs"]["interface"]["properties"]["kind"]["enum"]
    assert sorted(kinds) == sorted(k.name for k in registry.interface_kinds())


def test_document_schema_rejects_attribute_of_another_kind():
    validator = jsonschema.Draft202012Validator(document_schema())
    good = {"version": 1, "interfaces": [{"name": "br0", "kind": "bridge",
                                          "bridge-ports": ["swp1"]}]}
    bad = json.loads(json.dumps(good))
    bad["interfaces"][0]["bond-miimon"] = 100
    assert validator.is_valid(good)
    assert not validator.is_valid(bad)

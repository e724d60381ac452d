"""`netcfg syntax-help`: the stanza language, generated from the schemas.

Text comes only from schemas/kinds/*.json, so help can never disagree with
what the validator accepts.
"""

from __future__ import annotations

import textwrap

from netcfg.kinds import registry
from netcfg.model.errors import UsageError, did_you_mean
from netcfg.spec import AttributeSpec, group_attributes, group_schema

WIDTH = 78


def _value_form(spec: AttributeSpec) -> str:
    schema = spec.schema
    if "enum" in schema:
        return "|".join(str(v) for v in schema["enum"])
    if spec.type == "boolean":
        return "yes|no"
    if spec.type == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        return f"N ({low}-{high})" if low is not None and high is not None else "N"
    if spec.type == "array":
        return "VALUE..." + (" (repeatable)" if spec.repeatable else "")
    return "VALUE"


def _users(group: str) -> list[str]:
    """Kinds that accept a group's attributes."""
    return [k.name for k in registry.kinds() if group in k.attribute_groups()]


def describe_attribute(name: str) -> str:
    owner = registry.attribute_owner().get(name.replace("_", "-"))
    if owner is None:
        raise UsageError(f"no attribute '{name}'{did_you_mean(name, registry.attribute_owner())}; "
                         f"run 'netcfg syntax-help' for the list")
    spec = group_attributes(owner)[name.replace("_", "-")]
    users = ", ".join(_users(owner))
    body = textwrap.fill(spec.description, WIDTH - 4, initial_indent="    ",
                         subsequent_indent="    ")
    return f"{spec.name} {_value_form(spec)}\n    on: {users}\n{body}"


def describe_all() -> str:
    out = []
    groups = [k.name for k in registry.kinds()] + ["common", "bridge-port"]
    for group in groups:
        attrs = group_attributes(group)
        heading = f"{group}: " + group_schema(group).get("description", "")
        out.append(textwrap.fill(heading, WIDTH))
        if not attrs:
            out.append("    (no attributes of its own)")
        for spec in attrs.values():
            line = f"  {spec.name} {_value_form(spec)}"
            out.append(line)
            out.append(textwrap.fill(spec.description, WIDTH, initial_indent="      ",
                                     subsequent_indent="      "))
        out.append("")
    return "\n".join(out)

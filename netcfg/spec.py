"""JSON Schemas: the single source of truth for every attribute.

schemas/kinds/<name>.json (found through netcfg.data) holds one attribute group each (a kind's own
attributes, or a trait such as ``common`` shared by all interfaces).
This module loads them and answers "which attributes exist and what are
they"; netcfg.compile.jsonform assembles the schema of the whole JSON
document for export (it needs the kinds, which import this module).

Keywords starting with ``x-netcfg-`` are ours; jsonschema ignores them:
  x-netcfg-repeat   true: the attribute may be written several times in a stanza;
                    the values accumulate into the array
  x-netcfg-syntax   name of a value parser in netcfg.compile.values for values
                    that are not plain words (routes, vlan lists, portals)
  x-netcfg-aliases  {"written": "canonical"}: accepted spellings
  x-netcfg-kernel   how the value reaches the kernel and is read back (KernelMapping):
                    {"place": "link"|"info"|"port"|"sysctl", "nla": "IFLA_BR_STP_STATE",
                     "codec": "bool32", "default": false, "mutable": false, ...};
                    netcfg.netlink.attrs derives its tables from these
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from netcfg.data import schemas_dir
from netcfg.model.errors import quote


@dataclass(frozen=True, slots=True)
class AttributeSpec:
    """One attribute: its schema and the group (kind or trait) it belongs to."""

    name: str
    group: str
    schema: dict[str, Any]

    @property
    def description(self) -> str:
        return self.schema.get("description", "")

    @property
    def type(self) -> str:
        return self.schema.get("type", "string")

    @property
    def repeatable(self) -> bool:
        return bool(self.schema.get("x-netcfg-repeat"))

    @property
    def syntax(self) -> str | None:
        return self.schema.get("x-netcfg-syntax")

    @property
    def aliases(self) -> dict[str, str]:
        return self.schema.get("x-netcfg-aliases", {})

    @property
    def kernel(self) -> "KernelMapping | None":
        return kernel_mapping(self.group, self.name)


# Places an attribute reaches the kernel by: an IFLA_* of the link, an
# attribute of the kind's IFLA_INFO_DATA, a bridge port option
# (IFLA_PROTINFO / IFLA_INFO_SLAVE_DATA), or a /proc/sys file.
LINK, INFO, PORT, SYSCTL = "link", "info", "port", "sysctl"
_MAPPING_KEYS = frozenset({"place", "nla", "nla6", "codec", "choices", "width", "bit", "default",
                           "reset", "mutable", "at_create", "param", "path", "omit_false",
                           "devconf"})


@dataclass(frozen=True, slots=True)
class KernelMapping:
    """An attribute's ``x-netcfg-kernel``: the one place it is tied to the kernel.

    ``nla``/``nla6``: the attribute's kernel name (by address family for
    ``nla6``); ``codec``: how its value is written and read
    (netcfg/netlink/codecs.py; ``choices``/``width``/``bit`` parametrise
    it); ``default``: what a new device has (``show`` leaves it out; a
    link-set of a removed attribute sends it back, unless ``reset`` says
    otherwise or there is no default); ``mutable`` false: a change re-creates
    the device; ``at_create`` false: a create request does not carry it (it
    goes right after); ``param``: its key in a link-add's params (iproute2's
    word, what `plan` prints); ``path``: a sysctl's path with IF for the
    device; ``omit_false``: not sent when false (the kernel may not know it).
    """

    attribute: str
    group: str
    place: str
    nla: str | None = None
    nla6: str | None = None
    codec: str = "u32"
    choices: tuple[tuple[str, int], ...] = ()
    width: str = "u32"
    bit: int = 0
    default: Any = None
    has_default: bool = False
    reset: Any = None
    has_reset: bool = False
    mutable: bool = True
    at_create: bool = True
    param: str = ""
    path: str = ""
    omit_false: bool = False
    devconf: str = ""


@cache
def kernel_mapping(group: str, attribute: str) -> KernelMapping | None:
    raw = group_schema(group).get("properties", {}).get(attribute, {}).get("x-netcfg-kernel")
    if raw is None:
        return None
    unknown = set(raw) - _MAPPING_KEYS
    if unknown or raw.get("place") not in (LINK, INFO, PORT, SYSCTL):
        what = f"unknown keys {', '.join(sorted(unknown))}" if unknown else "no valid place"
        raise ValueError(f"{group}.json {attribute}: x-netcfg-kernel has {what}")
    return KernelMapping(
        attribute, group, raw["place"], raw.get("nla"), raw.get("nla6"), raw.get("codec", "u32"),
        tuple(raw.get("choices", {}).items()), raw.get("width", "u32"), raw.get("bit", 0),
        raw.get("default"), "default" in raw, raw.get("reset"), "reset" in raw,
        raw.get("mutable", True), raw.get("at_create", True), raw.get("param", attribute),
        raw.get("path", ""), raw.get("omit_false", False), raw.get("devconf", ""))


@cache
def kernel_defaults() -> dict[str, Any]:
    """Attribute -> what the kernel gives every new device (declared ``default``)."""
    return {m.attribute: m.default for group in all_groups() for m in kernel_mappings(group)
            if m.has_default}


@cache
def kernel_mappings(group: str) -> tuple[KernelMapping, ...]:
    """The declared mappings of a group's attributes, in schema order."""
    return tuple(m for m in (kernel_mapping(group, a) for a in group_attributes(group)) if m)


@cache
def group_schema(group: str) -> dict[str, Any]:
    """The schema file of one attribute group (``bridge``, ``common``, ...)."""
    path = schemas_dir() / "kinds" / f"{group}.json"
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def group_attributes(group: str) -> dict[str, AttributeSpec]:
    props = group_schema(group).get("properties", {})
    return {name: AttributeSpec(name, group, sub) for name, sub in props.items()}


def all_groups() -> list[str]:
    return sorted(p.name[:-5] for p in (schemas_dir() / "kinds").iterdir()
                  if p.name.endswith(".json"))


# --- Fast value checks --------------------------------------------------------
#
# jsonschema walks its validator tree for every value: ~30 us per 48-item
# bridge-ports list, 1.5 s for a 4094-bridge config. Attribute schemas use a
# small subset of keywords, so we compile that subset into plain closures and
# hand anything else to jsonschema. tests/unit/test_schema.py checks that both
# give the same verdict on generated values.

_SIMPLE_KEYWORDS = frozenset({
    "type", "enum", "const", "pattern", "minimum", "maximum", "minLength", "maxLength",
    "items", "properties", "required", "additionalProperties", "description",
    "x-netcfg-repeat", "x-netcfg-syntax", "x-netcfg-aliases", "x-netcfg-kernel", "title",
    "default",
})

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def compile_checker(schema: dict[str, Any]):
    """A function value -> list of error messages ([] when valid)."""
    if not set(schema) <= _SIMPLE_KEYWORDS or isinstance(schema.get("type"), list) \
            or isinstance(schema.get("additionalProperties"), dict):
        import jsonschema  # only for keywords the fast path does not know; slow to import

        validator = jsonschema.Draft202012Validator(schema)
        return lambda value: [e.message for e in validator.iter_errors(value)]
    import re

    checks = []
    if "type" in schema:
        type_name = schema["type"]
        is_type = _TYPES[type_name]
        checks.append(lambda v: None if is_type(v) else f"{quote(v)} is not of type '{type_name}'")
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: None if v == const else f"{quote(const)} was expected")
    if "enum" in schema:
        enum = schema["enum"]
        checks.append(lambda v: None if v in enum and not isinstance(v, bool)
                      else f"{quote(v)} is not one of {quote(enum)}")
    if "pattern" in schema:
        pattern = schema["pattern"]
        search = re.compile(pattern).search
        checks.append(lambda v: None if not isinstance(v, str) or search(v)
                      else f"{quote(v)} does not match {quote(pattern)}")
    for key, test, words in (("minLength", lambda v, n: len(v) >= n, "is too short"),
                             ("maxLength", lambda v, n: len(v) <= n, "is too long")):
        if key in schema:
            bound = schema[key]
            checks.append(lambda v, bound=bound, test=test, words=words:
                          None if not isinstance(v, str) or test(v, bound)
                          else f"{quote(v)} {words}")
    if "minimum" in schema:
        low = schema["minimum"]
        checks.append(lambda v: None if not _TYPES["integer"](v) or v >= low
                      else f"{v} is less than the minimum of {low}")
    if "maximum" in schema:
        high = schema["maximum"]
        checks.append(lambda v: None if not _TYPES["integer"](v) or v <= high
                      else f"{v} is greater than the maximum of {high}")
    item_checker = compile_checker(schema["items"]) if "items" in schema else None
    props = {k: compile_checker(s) for k, s in schema.get("properties", {}).items()}
    required = schema.get("required", ())
    closed = schema.get("additionalProperties") is False

    ok = _compile_predicate(schema)

    def check(value: Any) -> list[str]:
        if ok(value):
            return []  # the common case: no messages to build
        errors = [m for m in (c(value) for c in checks) if m]
        if errors:
            return errors
        if item_checker is not None and isinstance(value, list):
            for item in value:
                errors += item_checker(item)
        if isinstance(value, dict) and (props or required or closed):
            errors += [f"{quote(k)} is a required property" for k in required if k not in value]
            for k, v in value.items():
                if k in props:
                    errors += props[k](v)
                elif closed:
                    errors.append(f"Additional properties are not allowed ({quote(k)} was "
                                  f"unexpected)")
        return errors

    return check


def _compile_predicate(schema: dict[str, Any]):
    """value -> bool for the simple keyword subset: the fast path of a check."""
    import re

    tests = []
    type_name = schema.get("type")
    if type_name:
        tests.append(_TYPES[type_name])
    if "const" in schema:
        const = schema["const"]
        tests.append(lambda v: v == const)
    if "enum" in schema:
        enum = schema["enum"]
        tests.append(lambda v: v in enum and not isinstance(v, bool))
    if "pattern" in schema:
        search = re.compile(schema["pattern"]).search
        tests.append(lambda v: not isinstance(v, str) or search(v) is not None)
    if "minLength" in schema or "maxLength" in schema:
        low, high = schema.get("minLength", 0), schema.get("maxLength", float("inf"))
        tests.append(lambda v: not isinstance(v, str) or low <= len(v) <= high)
    if "minimum" in schema or "maximum" in schema:
        low, high = schema.get("minimum", float("-inf")), schema.get("maximum", float("inf"))
        tests.append(lambda v: not _TYPES["integer"](v) or low <= v <= high)
    if "items" in schema:
        item_ok = _compile_predicate(schema["items"])
        tests.append(lambda v: not isinstance(v, list) or all(map(item_ok, v)))
    if "properties" in schema or "required" in schema or schema.get("additionalProperties") is False:
        props = {k: _compile_predicate(sub) for k, sub in schema.get("properties", {}).items()}
        required = schema.get("required", ())
        closed = schema.get("additionalProperties") is False

        def object_ok(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            if any(k not in v for k in required):
                return False
            for k, item in v.items():
                test = props.get(k)
                if test is None:
                    if closed:
                        return False
                elif not test(item):
                    return False
            return True
        tests.append(object_ok)
    # Chained `and`, not all(generator): this runs once per list item, 200k
    # times for a big config's bridge-ports.
    combined = tests[0] if tests else (lambda v: True)
    for test in tests[1:]:
        combined = (lambda first, second: lambda v: first(v) and second(v))(combined, test)
    return combined


@cache
def value_checker(group: str, attribute: str):
    """Compiled check of one attribute's value against its schema."""
    return compile_checker(group_attributes(group)[attribute].schema)

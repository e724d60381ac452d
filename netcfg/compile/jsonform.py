"""The JSON form of the model (schemas/netcfg.schema.json), both ways.

``netcfg show -o json`` prints it and every command that takes a config
accepts it, so state can be saved, edited and fed back. Input goes through
the same per-attribute checks as stanzas; locations point at the line of the
object's name in the JSON text.
"""

from __future__ import annotations

import json
from functools import cache
import re
import sys
from typing import Any

from netcfg.data import schemas_dir
from netcfg.kinds import registry
from netcfg.model.errors import Report, did_you_mean
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, NETNS, TARGET, VOLUME, ConfigObject, Model
from netcfg.spec import (all_groups, group_attributes, group_schema,
                         value_checker)

FORMAT_VERSION = 1
# How deeply a JSON config (a model, vars.json) may nest. Python's reader
# gives up near 1000 levels with a RecursionError, and the checks after it
# recurse too; nothing a config means needs more than a few levels.
MAX_JSON_DEPTH = 64
# Interface members that are not attributes.
_IFACE_FIELDS = ("name", "kind", "netns", "auto", "inet", "inet6")
_SECTIONS = {"netns": NETNS, "volumes": VOLUME, "targets": TARGET}


def model_to_json(model: Model) -> dict[str, Any]:
    doc: dict[str, Any] = {"version": FORMAT_VERSION}
    if model.namespaces:
        doc["netns"] = {n: dict(o.attrs) for n, o in sorted(model.namespaces.items())}
    doc["interfaces"] = [_iface_to_json(o) for _, o in sorted(model.interfaces.items())]
    for key, section in (("volumes", VOLUME), ("targets", TARGET)):
        objs = model.section(section)
        if objs:
            doc[key] = {n: _with_netns(o) for n, o in sorted(objs.items())}
    return doc


def _iface_to_json(obj: ConfigObject) -> dict[str, Any]:
    out: dict[str, Any] = {"name": obj.name, "kind": obj.kind}
    if obj.netns:
        out["netns"] = obj.netns
    if obj.auto:
        out["auto"] = True
    out.update(obj.attrs)
    return out


def _with_netns(obj: ConfigObject) -> dict[str, Any]:
    out = dict(obj.attrs)
    if obj.netns:
        out["netns"] = obj.netns
    return out


def model_from_json(text: str, filename: str, report: Report) -> Model:
    """Objects from a JSON document; cross-object checks come later."""
    model = Model()
    doc = load_json(text, filename, report)
    if doc is None:
        return model
    lines = _NameLines(text, filename)
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
        report.error(SourceLocation(filename, 1),
                     f"expected a JSON object with \"version\": {FORMAT_VERSION}")
        return model
    unknown = set(doc) - {"version", "interfaces", *_SECTIONS}
    for key in sorted(unknown):
        report.error(lines.find(key), f"unknown top-level key '{key}'"
                     f"{did_you_mean(key, ['interfaces', *_SECTIONS])}", key)
    interfaces = doc.get("interfaces", [])
    if not isinstance(interfaces, list):
        report.error(lines.find("interfaces"), '"interfaces" must be a list', "interfaces")
        interfaces = []
    for item in interfaces:
        obj = _iface_from_json(item, lines, report)
        if obj is not None:
            model.interfaces[obj.key] = obj
    for key, section in _SECTIONS.items():
        objects = doc.get(key) or {}
        if not isinstance(objects, dict):
            report.error(lines.find(key), f'"{key}" must be an object of NAME: {{...}}', key)
            continue
        for name, attrs in objects.items():
            attrs = dict(attrs) if isinstance(attrs, dict) else {}
            netns = attrs.pop("netns", "") if section == TARGET else ""
            if not isinstance(netns, str):
                report.error(lines.find(name), f"{name}: netns must be a name", "netns")
                continue
            obj = ConfigObject(section=section, name=name, kind=section, netns=netns,
                               loc=lines.find(name))
            _set_attributes(obj, attrs, report)
            model.section(section)[name] = obj
    return model


def load_json(text: str, filename: str, report: Report) -> Any:
    """The value of a JSON config text, or None with a located error: not
    JSON, nested past MAX_JSON_DEPTH, or a number too long to read."""
    too_deep = False
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        report.error(SourceLocation(filename, e.lineno), f"not valid JSON: {e.msg}")
        return None
    except RecursionError:
        too_deep = True           # deeper than Python's reader goes: located below
    except ValueError:            # an integer past sys.get_int_max_str_digits()
        report.error(SourceLocation(filename, _long_number_line(text)),
                     f"a number with more than {sys.get_int_max_str_digits()} digits; "
                     f"no value in a config needs one")
        return None
    if too_deep or json_depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        report.error(SourceLocation(filename, _too_deep_line(text, MAX_JSON_DEPTH)),
                     f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects")
        return None
    return value


def json_depth(value: Any, limit: int) -> int:
    """How deeply ``value`` nests (a scalar: 0), counted up to ``limit + 1``.
    Iterative: a value nested too deep for recursion is what it looks for."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _too_deep_line(text: str, limit: int) -> int:
    """The line where ``text`` first opens its ``limit + 1``-th level (1 if
    it never does: then the reader stopped for another reason)."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, match.start()) + 1
        elif token in "]}":
            depth -= 1
    return 1


def _long_number_line(text: str) -> int:
    match = re.search(r"[0-9]{%d}" % max(sys.get_int_max_str_digits(), 1), text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def _iface_from_json(item: Any, lines: "_NameLines", report: Report) -> ConfigObject | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) \
            or not isinstance(item.get("kind"), str):
        report.error(lines.find("interfaces"), "each interface needs \"name\" and \"kind\"")
        return None
    loc = lines.find(item["name"])
    kinds = {k.name for k in registry.interface_kinds()}
    if item["kind"] not in kinds:
        report.error(loc, f"{item['name']}: kind '{item['kind']}' is not one of "
                     f"{', '.join(sorted(kinds))}", "kind")
        return None
    if not isinstance(item.get("netns", ""), str):
        report.error(loc, f"{item['name']}: netns must be a name", "netns")
        return None
    obj = ConfigObject(section=IFACE, name=item["name"], kind=item["kind"],
                       netns=item.get("netns", ""), loc=loc, auto=bool(item.get("auto")))
    for family in ("inet", "inet6"):
        if family in item:
            obj.attrs[family] = item[family]
    _set_attributes(obj, {k: v for k, v in item.items() if k not in _IFACE_FIELDS}, report)
    return obj


def _set_attributes(obj: ConfigObject, attrs: dict[str, Any], report: Report) -> None:
    specs = {}
    for group in registry.kind(obj.kind).attribute_groups():
        specs.update(group_attributes(group))
    for name, value in attrs.items():
        spec = specs.get(name)
        if spec is None:
            report.error(obj.loc, f"{obj.label()}: unknown attribute '{name}' for a {obj.kind}"
                         f"{did_you_mean(name, specs)}", name)
            continue
        messages = value_checker(spec.group, name)(value)
        if messages:
            report.error(obj.loc, f"{obj.label()}: {name}: {messages[0]}", name)
            continue
        obj.attrs[name] = value
        obj.locs[name] = obj.loc


class _NameLines:
    """Where each JSON string first appears, for locations.

    One pass over the text up front: looking each name up with str.find()
    from the start was quadratic, minutes for `show -o json` of a big host.
    """

    _STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')

    def __init__(self, text: str, filename: str):
        self.filename = filename
        self.first_line: dict[str, int] = {}
        line, counted = 1, 0
        for match in self._STRING.finditer(text):
            line += text.count("\n", counted, match.start())
            counted = match.start()
            self.first_line.setdefault(match.group(), line)

    def find(self, name: str) -> SourceLocation:
        return SourceLocation(self.filename, self.first_line.get(json.dumps(name), 1))


@cache
def document_schema() -> dict[str, Any]:
    """The schema of the JSON form of a whole model (what `show -o json` prints).

    Assembled from the group files so that each attribute is described once.
    """
    top = json.loads((schemas_dir() / "netcfg.schema.json").read_text(encoding="utf-8"))
    defs = top.setdefault("$defs", {})
    for group in all_groups():
        defs[group] = {k: v for k, v in group_schema(group).items()
                       if k not in ("$schema", "$id")}
    branches = []
    for kind in registry.interface_kinds():
        props: dict[str, Any] = {}
        for group in kind.attribute_groups():
            props.update(group_schema(group).get("properties", {}))
        branches.append({
            "if": {"properties": {"kind": {"const": kind.name}}},
            "then": {"properties": props},
        })
    kinds = [k.name for k in registry.interface_kinds()]
    iface = defs["interface"] = {
        "type": "object",
        "description": "One network interface; `kind` selects which attributes apply.",
        "required": ["name", "kind"],
        "properties": {
            "name": {"type": "string", "description": "Interface name (at most 15 bytes)."},
            "kind": {"enum": kinds, "description": "What sort of device this is."},
            "netns": {"type": "string", "description": "Network namespace; absent for the host's."},
            "auto": {"type": "boolean", "description": "Brought up by apply (an `auto` line)."},
            "inet": {"enum": ["static", "manual", "loopback", "dhcp"],
                     "description": "IPv4 method from `iface NAME inet METHOD`."},
            "inet6": {"enum": ["static", "manual", "loopback", "dhcp", "auto"],
                      "description": "IPv6 method from `iface NAME inet6 METHOD`."},
        },
        "allOf": branches,
        "unevaluatedProperties": False,
    }
    del iface  # assembled in place
    return top

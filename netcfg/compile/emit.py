"""Print a model as stanzas in the input language.

``netcfg show`` uses this for running state, and the round-trip tests check
that parsing the output gives back the same model. Objects are printed so
that their kind is inferred again on reading: a bridge without ports gets
``bridge-ports none``, a dummy gets ``link-type dummy``.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from netcfg.compile.values import format_value
from netcfg.kinds import registry
from netcfg.model.model import ConfigObject, Model
from netcfg.schemas.spec import AttributeSpec, group_attributes, kernel_defaults

INDENT = "    "
# Interface fields printed on the iface line rather than as attributes.
_METHOD_FIELDS = ("inet", "inet6")


# What the kernel gives every new device, left out of `netcfg show` (running
# state reports them all): the diff manages only what a config writes, so
# leaving them out changes nothing that `show | apply` does.
# Declared in the schemas ("x-netcfg-kernel": {"default": ...}).
KERNEL_DEFAULTS = kernel_defaults()
# A new device's MTU by kind; kinds not listed (vxlan: 1500 less its
# headers, which depend on the underlay) always show theirs.
DEFAULT_MTU = {"loopback": 65536, "vrf": 65575, "bridge": 1500, "veth": 1500,
               "macvlan": 1500, "dummy": 1500, "bond": 1500, "vlan": 1500}


def without_kernel_defaults(obj: ConfigObject, hidden_alias: str | None = None) -> ConfigObject:
    """``obj`` (read from the kernel) less the attributes every new device of
    its kind has anyway, and less ``hidden_alias`` on a loopback (netcfg's
    own namespace mark)."""
    attrs = {a: v for a, v in obj.attrs.items()
             if not (a in KERNEL_DEFAULTS and KERNEL_DEFAULTS[a] == v)
             and not (a == "mtu" and DEFAULT_MTU.get(obj.kind) == v)
             and not (a == "alias" and obj.kind == "loopback" and v == hidden_alias)}
    return obj if len(attrs) == len(obj.attrs) else dataclasses.replace(obj, attrs=attrs)


def emit_model(model: Model, *, running: bool = False, netns_mark: str | None = None) -> str:
    """Stanzas for ``model``. ``running``: the model is kernel state, printed
    without the kernel's defaults (and without ``netns_mark``, the alias
    netcfg puts on the loopback of namespaces it made)."""
    chunks: list[str] = []
    for name, obj in sorted(model.namespaces.items()):
        if obj.attrs or not obj.implicit:
            chunks.append(_emit_plain("netns", obj))
    # `auto NAME` brings up NAME in every namespace (compile/build.py), so a
    # down interface whose name is up elsewhere (a tenant's lo) says so.
    up_somewhere = {obj.name for obj in model.interfaces.values() if obj.auto}
    for _, obj in sorted(model.interfaces.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if running:
            obj = without_kernel_defaults(obj, netns_mark)
        if not obj.auto and obj.name in up_somewhere and "link-down" not in obj.attrs:
            obj = dataclasses.replace(obj, attrs={**obj.attrs, "link-down": True})
        chunks.append(emit_interface(obj))
    for obj in (*model.volumes.values(), *model.targets.values()):
        chunks.append(_emit_plain(obj.section, obj))
    return "\n".join(chunks)


def emit_interface(obj: ConfigObject) -> str:
    lines = []
    if obj.auto:
        lines.append(f"auto {obj.name}")
    families = [f for f in _METHOD_FIELDS if f in obj.attrs]
    head = f"iface {obj.name}"
    if families:
        head += f" {families[0]} {obj.attrs[families[0]]}"
    lines.append(head)
    if obj.netns:
        lines.append(f"{INDENT}netns {obj.netns}")
    lines += _kind_marker(obj)
    lines += _attribute_lines(obj)
    for family in families[1:]:
        lines.append(f"iface {obj.name} {family} {obj.attrs[family]}")
        if obj.netns:
            lines.append(f"{INDENT}netns {obj.netns}")
    return "\n".join(lines) + "\n"


def _kind_marker(obj: ConfigObject) -> list[str]:
    """A line that makes the parser infer this kind again, when none does."""
    kind = registry.kind(obj.kind)
    if any(a in obj.attrs for a in kind.defining_attributes) or kind.claims_name(obj.name):
        return []
    if kind.link_type:
        return [f"{INDENT}link-type {kind.link_type}"]
    if kind.defining_attributes:
        # A list-valued defining attribute written as 'none' (bridge-ports none).
        return [f"{INDENT}{kind.defining_attributes[0]} none"]
    return []


def _attribute_lines(obj: ConfigObject) -> list[str]:
    specs = _specs(obj.kind)
    lines = []
    for name, spec in specs.items():
        if name in obj.attrs and name not in _METHOD_FIELDS:
            for text in format_value(spec, obj.attrs[name]):
                lines.append(f"{INDENT}{name} {text}")
    return lines


def _emit_plain(keyword: str, obj: ConfigObject) -> str:
    lines = [f"{keyword} {obj.name}"]
    if keyword == "target" and obj.netns:
        lines.append(f"{INDENT}netns {obj.netns}")
    lines += _attribute_lines(obj)
    return "\n".join(lines) + "\n"


@cache
def _specs(kind_name: str) -> dict[str, AttributeSpec]:
    """Attribute specs of a kind in print order: its own first, then traits."""
    specs: dict[str, AttributeSpec] = {}
    for group in registry.kind(kind_name).attribute_groups():
        for name, spec in group_attributes(group).items():
            specs.setdefault(name, spec)
    return specs

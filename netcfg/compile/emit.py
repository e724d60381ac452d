"""Print a model as stanzas in the input language.

``netcfg show`` uses this for running state, and the round-trip tests check
that parsing the output gives back the same model. Objects are printed so
that their kind is inferred again on reading: a bridge without ports gets
``bridge-ports none``, a dummy gets ``link-type dummy``.

Running state is not the operator's: a tenant with CAP_NET_ADMIN in its
namespace sets aliases and names, and a snapshot of `show` is meant to be
applied, as root (issue 24, M12). The input language has no escapes, so a
name or value that would not read back as it is (a newline or another
control character would start a line of the tenant's choosing, such as a
`post-up`; Mako's `${`/`<%` would run in a snapshot saved as *.tmpl; a
trailing backslash joins the next line; ' #' starts a comment) is left out,
and a comment says what and why, with the text escaped: no raw ESC reaches
the terminal either.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from functools import cache

from netcfg.compile.values import format_value
from netcfg.kinds import registry
from netcfg.model.model import ConfigObject, Model
from netcfg.spec import AttributeSpec, group_attributes, kernel_defaults

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


# Mako's markup (render.uses_mako), a trailing backslash (a continuation line)
# and an inline comment (parser.strip_inline_comment).
_DOES_NOT_READ_BACK = re.compile(r"\$\{|</?%|\\\Z|(?:^|\s)#")
# Unicode categories of characters no line of a config may hold.
_CONTROL_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))


def unsafe_text(text: str, *, name: bool = False) -> str | None:
    """Why ``text`` cannot be written into a stanza line as it is, or None.
    ``name``: it is a name, where '[', ']' and white space change its meaning
    (ranges, lists) too."""
    if not text.isprintable():   # Cc, Cf, Zl, Zp, and spaces other than ' '
        return "it holds a control, formatting or line-separating character"
    if _DOES_NOT_READ_BACK.search(text):
        return "it holds template markup, a comment or a line continuation"
    if name and (not text or any(c in text for c in "[] \t")):
        return "it holds a range, a space or nothing"
    return None


def escaped(text: str) -> str:
    """``text`` printable on one line, and inert to Mako in a comment:
    control characters, '$', '<' and '\\' as Python escapes."""
    out = []
    for char in text:
        if char in "$<\\" or not char.isprintable() or \
                unicodedata.category(char) in _CONTROL_CATEGORIES:
            out.append(char.encode("unicode_escape").decode("ascii") if char == "\\"
                       else f"\\x{ord(char):02x}" if ord(char) < 0x100
                       else f"\\u{ord(char):04x}" if ord(char) < 0x10000
                       else f"\\U{ord(char):08x}")
        else:
            out.append(char)
    return "'" + "".join(out) + "'"


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
    for what, text in (("name", obj.name), ("namespace's name", obj.netns)):
        why = text and unsafe_text(text, name=True)
        if why:
            where = f" in namespace {escaped(obj.netns)}" if obj.netns else ""
            return (f"# interface {escaped(obj.name)}{where} left out: its {what} cannot be "
                    f"written here as it is ({why})\n")
    lines = []
    if obj.auto:
        lines.append(f"auto {obj.name}")
    families = [f for f in _METHOD_FIELDS if f in obj.attrs]
    head = f"iface {obj.name}"
    if families:
        head += f" {families[0]} {obj.attrs[families[0]]}"
    lines.append(head)
    if families and unsafe_text(str(obj.attrs[families[0]])):
        lines[-1] = f"iface {obj.name}"
    if obj.netns:
        lines.append(f"{INDENT}netns {obj.netns}")
    lines += _kind_marker(obj)
    lines += _attribute_lines(obj)
    for family in families[1:]:
        if unsafe_text(str(obj.attrs[family])):
            continue
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
                why = unsafe_text(text)
                if why:
                    lines.append(f"{INDENT}# {name} left out: {escaped(text)} cannot be "
                                 f"written here as it is ({why})")
                else:
                    lines.append(f"{INDENT}{name} {text}")
    return lines


def _emit_plain(keyword: str, obj: ConfigObject) -> str:
    why = unsafe_text(obj.name, name=True) or (obj.netns and unsafe_text(obj.netns, name=True))
    if why:
        return (f"# {keyword} {escaped(obj.name)} left out: cannot be written here as it is "
                f"({why})\n")
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

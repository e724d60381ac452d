"""The parsed form of interfaces(5) text: stanzas and raw attributes.

This is what the parser produces and what the model builder consumes: still
strings, not yet typed or validated, but every piece located.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netcfg.model.location import SourceLocation

# Stanza keywords that open an object. `netns` opens a stanza only at column 0;
# indented inside an `iface` it is the iface's namespace attribute.
OBJECT_KEYWORDS = ("iface", "netns", "volume", "target")


@dataclass(slots=True)
class RawAttribute:
    """``name value`` as written; name already normalised (``_`` -> ``-``)."""

    name: str
    value: str
    loc: SourceLocation


@dataclass(slots=True)
class Stanza:
    """One ``iface``/``netns``/``volume``/``target`` block."""

    keyword: str
    name: str
    loc: SourceLocation
    family: str | None = None  # iface only: "inet" | "inet6"
    method: str | None = None  # iface only: "static" | "manual" | "loopback" | "dhcp"
    attributes: list[RawAttribute] = field(default_factory=list)


@dataclass(slots=True)
class ParsedConfig:
    """Everything the parser found, in file order."""

    stanzas: list[Stanza] = field(default_factory=list)
    # Interface names listed on `auto` / `allow-auto` / `allow-hotplug` lines, with
    # where they were listed; `allow-CLASS` classes are kept per name.
    auto: dict[str, SourceLocation] = field(default_factory=dict)
    allow: dict[str, list[tuple[str, SourceLocation]]] = field(default_factory=dict)
    # Debian ifupdown's `no-scripts NAME...`: the if-*.d scripts are not run for
    # these (their pre-up ... post-down lines still are), with where named.
    no_scripts: dict[str, SourceLocation] = field(default_factory=dict)
    # ifupdown's `mapping GLOB...` stanzas (their `script` and `map` lines as
    # attributes) and the `auto`/`allow-CLASS` words that are patterns
    # (`auto /eth*`): (keyword, word, where), chosen at compile time
    # (compile/runtime_choice.py).
    mappings: list[Stanza] = field(default_factory=list)
    patterns: list[tuple[str, str, SourceLocation]] = field(default_factory=list)
    # Files that turned lowering off with a `# netcfg: lower=off` pragma.
    lower_off_files: set[str] = field(default_factory=set)

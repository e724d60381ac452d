"""`inherits NAME`: a stanza that starts from another stanza's lines.

Two peers have it, with different spellings and slightly different rules
(docs/compat.md, "inherits"):

- Debian's ifupdown 0.8: ``iface eth1 inet static inherits eth0`` (the family
  and method may be left out: ``iface eth3 inet inherits eth0``, ``iface eth4
  inherits eth0``, and are then eth0's). The stanza takes the options of eth0's
  stanza of the same family first; for an option both write, ifupdown uses the
  first value (eth0's).
- ifupdown-ng: the same on the iface line, or an ``inherit NAME`` line. Its
  addresses add up; other options are taken when the stanza has no such line.

netcfg: the named interface's stanzas of the same family (all of them when
none has that family, as in ifupdown-ng's family-less stanzas) give their
lines first; addresses, gateways, routes, hook lines and every other repeatable
attribute add up; an attribute the stanza writes itself replaces the inherited
one (what a template is for: ifupdown 0.8 keeps the template's instead, which
a file that relies on it would not write). The named stanza stays an interface
of its own when an auto or allow-CLASS line names it, else only a template
(resolve_inherits). A name no stanza declares and a cycle are errors at the
line. A bare ``inherits`` on the iface line (no name) is a warning at the line:
ifupdown2 ignores the word, ifupdown 0.8 refuses the file.

Runs on the parsed stanzas before they are merged per interface
(compile/build.py), so an inherited line is checked as if it were written in
the stanza, and located where it is written (the template's line).
"""

from __future__ import annotations

from netcfg.compile.syntax import ParsedConfig, RawAttribute, Stanza
from netcfg.compile.unsupported import inert_warning
from netcfg.model.errors import Report
from netcfg.model.model import IFACE
from netcfg.spec import all_groups, group_attributes

# The iface line's `inherits NAME` (the parser makes it this line) and
# ifupdown-ng's `inherit NAME` line.
INHERIT_LINES = ("inherits", "inherit")


def _repeatable_attributes() -> frozenset[str]:
    return frozenset(name for group in all_groups()
                     for name, spec in group_attributes(group).items() if spec.repeatable)


def resolve_inherits(parsed: ParsedConfig, report: Report) -> list[Stanza]:
    """The stanzas to build: each with an inherits line given its template's
    lines (in place), without the templates themselves. A stanza inherited
    from that no auto or allow-CLASS line names is only a template, as
    ifupdown-ng makes it (implicit_template_conversion, its default) and as
    ifupdown 0.8's `ifup -a` leaves it (not configured): netcfg does not make
    it an interface. One that is named there is an interface too (testcase.15
    of Debian ifupdown: eth0)."""
    stanzas = parsed.stanzas
    if not any(a.name in INHERIT_LINES for s in stanzas for a in s.attributes):
        return stanzas
    by_name: dict[str, list[Stanza]] = {}
    for stanza in stanzas:
        if stanza.keyword == IFACE:
            by_name.setdefault(stanza.name, []).append(stanza)
    resolver = _Resolver(by_name, report, _repeatable_attributes())
    for stanza in stanzas:
        resolver.resolve(stanza, ())
    templates = resolver.inherited - set(parsed.auto) - set(parsed.allow)
    return [s for s in stanzas if s.keyword != IFACE or s.name not in templates]


class _Resolver:
    """Per-run state: the stanzas by name and those already resolved."""

    def __init__(self, by_name: dict[str, list[Stanza]], report: Report,
                 repeatable: frozenset[str]):
        self.by_name = by_name
        self.report = report
        self.repeatable = repeatable
        self.done: set[int] = set()
        self.inherited: set[str] = set()   # names some stanza inherits from

    def resolve(self, stanza: Stanza, chain: tuple[Stanza, ...]) -> None:
        if id(stanza) in self.done:
            return
        lines = [a for a in stanza.attributes if a.name in INHERIT_LINES]
        if not lines:
            self.done.add(id(stanza))
            return
        own = [a for a in stanza.attributes if a.name not in INHERIT_LINES]
        inherited: list[RawAttribute] = []
        for line in lines:
            inherited += self._template_lines(stanza, line, chain)
        written = {a.name for a in own}
        inherited = [a for a in inherited if a.name in self.repeatable or a.name not in written]
        stanza.attributes = inherited + own
        self.done.add(id(stanza))

    def _template_lines(self, stanza: Stanza, line: RawAttribute,
                        chain: tuple[Stanza, ...]) -> list[RawAttribute]:
        name = line.value.strip()
        if not name and line.name == "inherits":
            # `iface eth3 inet static inherits` (Debian ifupdown's testcase.15):
            # ifupdown2 ignores the bare word and applies the stanza as written;
            # ifupdown 0.8 refuses the file. netcfg does as ifupdown2 does.
            self.report.diagnostics.append(inert_warning(
                line.loc, f"{stanza.name}: 'inherits' names no stanza, so nothing is "
                f"inherited: {stanza.name} is configured from its own lines, as ifupdown2 "
                f"does (it ignores the bare word); Debian's ifupdown 0.8 refuses the file "
                f"('inherits' keyword is missing a parameter). Name the stanza to take "
                f"lines from (inherits eth0), or remove the word", "inherits"))
            return []
        if not name or len(name.split()) != 1:
            self.report.error(line.loc, f"{stanza.name}: {line.name} needs the name of one "
                              f"iface stanza to take lines from, as in 'iface {stanza.name} "
                              f"inet static inherits eth0'", "inherits")
            return []
        if name == stanza.name:
            self.report.error(line.loc, f"{stanza.name}: inherits its own name: a stanza "
                              f"takes lines from another iface stanza; name that one, or "
                              f"remove the line", "inherits")
            return []
        templates = self.by_name.get(name, [])
        if not templates:
            self.report.error(line.loc, f"{stanza.name}: inherits {name}, but no 'iface "
                              f"{name}' stanza declares it; declare it with the lines to "
                              f"share, or remove the inherits", "inherits")
            return []
        self.inherited.add(name)
        if stanza.family:
            same = [t for t in templates if t.family == stanza.family]
            templates = same or [t for t in templates if t.family is None] or templates
        lines: list[RawAttribute] = []
        for template in templates:
            if any(template is s for s in chain):
                path = " -> ".join([s.name for s in chain] + [stanza.name, name])
                self.report.error(line.loc, f"{stanza.name}: inherits {name}, and the stanzas "
                                  f"inherit in a cycle ({path}); break it at one of them",
                                  "inherits")
                return []
            self.resolve(template, chain + (stanza,))
            lines += [RawAttribute(a.name, a.value, a.loc) for a in template.attributes
                      if a.name not in INHERIT_LINES]
        first = templates[0]
        if stanza.family is None and first.family:
            stanza.family, stanza.method = first.family, first.method
        elif stanza.method is None and first.family == stanza.family:
            stanza.method = first.method
        return lines

"""The interfaces file as the four commands see it: compiled once by netcfg's
compiler, with what ifupdown2 selects by (`auto`, `allow-CLASS`, names, `-X`)
and the stanzas as written (what ifquery prints).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from netcfg.compile.pipeline import STDIN, Compiled, ConfigSource, compile_config, read_stdin
from netcfg.compile.renderlimit import render_timeout_from_env
from netcfg.compile.syntax import RawAttribute, Stanza
from netcfg.model.errors import Diagnostic, NetcfgError
from netcfg.model.location import SourceLocation


@dataclass
class InterfacesFile:
    """One compiled interfaces file."""

    compiled: Compiled

    @property
    def model(self):
        return self.compiled.model

    def stanzas(self) -> list[Stanza]:
        parsed = self.compiled.parsed
        return [s for s in parsed.stanzas if s.keyword == "iface"] if parsed else []

    def names(self) -> list[str]:
        """Every interface a stanza declares, in file order, once (a JSON
        model's declared interfaces, for `-t json`)."""
        if self.compiled.parsed is None:
            return list(dict.fromkeys(o.name for o in self.model.interfaces.values()
                                      if not o.implicit))
        return list(dict.fromkeys(s.name for s in self.stanzas()))

    def auto_names(self) -> list[str]:
        """Names on `auto` and `allow-auto` lines that a stanza declares, as
        ifupdown2's `-a` takes them. (netcfg's compiler files `allow-hotplug`
        with auto, as networking.service brings both up at boot; ifquery and
        `ifdown -a` keep them apart, as ifupdown2 does.)"""
        parsed = self.compiled.parsed
        if parsed is None:
            listed = {o.name for o in self.model.interfaces.values() if o.auto}
        else:
            listed = set(parsed.auto) - self.hotplug_only()
        return [n for n in self.names() if n in listed]

    def class_names(self, cls: str) -> list[str]:
        """Names of `allow-CLASS` lines (`auto` for the auto lines), in file order."""
        parsed = self.compiled.parsed
        if parsed is None:
            return []
        if cls == "auto":
            return self.auto_names()
        listed = {n for n, classes in parsed.allow.items() if any(c == cls for c, _ in classes)}
        return [n for n in self.names() if n in listed]

    def hotplug_only(self) -> set[str]:
        """Names brought up by `allow-hotplug` and no `auto` line (the parser
        files allow-hotplug with auto, remembering the first line that did)."""
        parsed = self.compiled.parsed
        if parsed is None:
            return set()
        return {name for name, classes in parsed.allow.items()
                for cls, loc in classes if cls == "hotplug" and parsed.auto.get(name) == loc}

    def attributes(self, name: str) -> list[RawAttribute]:
        """The lines of every stanza of ``name`` (ifupdown2 merges them), as written."""
        return [a for s in self.stanzas() if s.name == name for a in s.attributes]

    def method(self, name: str) -> tuple[list[str], list[str]]:
        """(families, methods) of ``name``'s stanzas, e.g. (["inet"], ["static"])."""
        families, methods = [], []
        for s in self.stanzas():
            if s.name == name and s.family:
                families.append(s.family)
                methods.append(s.method or "")
        return families, methods

    def stanza_of(self, loc: SourceLocation) -> str | None:
        """The interface whose stanza holds the line ``loc`` (for `error: IFACE: ...`)."""
        best = None
        for s in self.stanzas():
            if s.loc.file == loc.file and s.loc.line <= loc.line and \
                    (best is None or s.loc.line > best.loc.line):
                best = s
        return best.name if best is not None else None


def load(path: str, interfaces_format: str = "native",
         brought_up: tuple[str, ...] = ()) -> InterfacesFile:
    """Compile ``path`` (``-`` for stdin); ConfigInvalid lists every error.
    netcfg knows a JSON model (`-t json`) by its content on stdin and by the
    .json name of a file: `-t json` on another file would be read as stanzas,
    so it is refused rather than ignored. ``brought_up``: `ifup NAME...`'s names,
    whose ifupdown mappings run as the auto ones' do (compile/runtime_choice.py)."""
    if interfaces_format == "json" and path != STDIN and not path.endswith(".json"):
        raise NetcfgError(f"-t json: netcfg reads a JSON model from a file named *.json or "
                          f"from stdin (-i -), not {path}")
    stdin_text = read_stdin() if path == STDIN else None
    source = ConfigSource(path=path, stdin_text=stdin_text,
                          render_timeout=render_timeout_from_env(), brought_up=brought_up)
    return InterfacesFile(compile_config(source))


def select(ifile: InterfacesFile, *, everything: bool, names: Iterable[str],
           classes: Iterable[str], excludes: Iterable[str]) -> list[str]:
    """The interfaces a command acts on, as ifupdown2 picks them: `-a` the
    auto ones, `--allow CLASS` those of its lines (with a name list: those of
    the list that are of the class), then `-X` patterns (regular expressions
    searched in the name, as ifupdown2 does) left out."""
    classes = list(classes)
    names = list(dict.fromkeys(names))
    if classes:
        allowed = {n for cls in classes for n in ifile.class_names(cls)}
        picked = [n for n in names if n in allowed] if names else \
            [n for n in ifile.names() if n in allowed]
    elif everything:
        picked = ifile.auto_names()
    else:
        picked = names
    patterns = [re.compile(p) for p in excludes]
    return [n for n in picked if not any(p.search(n) for p in patterns)]


def _iface_above(loc: SourceLocation) -> str | None:
    """The name on the last `iface` line at or above ``loc`` in its file: which
    interface an error is about when the file did not compile."""
    try:
        with open(loc.file, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()[:loc.line]
    except OSError:
        return None
    for line in reversed(lines):
        words = line.split()
        if len(words) > 1 and words[0] == "iface" and not line[:1].isspace():
            return words[1]
    return None


def diagnostic_line(ifile: InterfacesFile | None, diagnostic: Diagnostic) -> str:
    """A diagnostic as ifupdown2 logs it, `error: IFACE: ...` (what Proxmox's
    task log keeps: /(warning|error): (\\S+):/), with the file and line."""
    loc = diagnostic.loc
    iface = ifile.stanza_of(loc) if ifile is not None else \
        (_iface_above(loc) if loc.line else None)
    where = f"{diagnostic.loc}: " if diagnostic.loc.line else f"{diagnostic.loc.file}: "
    subject = f"{iface}: " if iface else ""
    return f"{diagnostic.severity}: {subject}{where}{diagnostic.message}"

"""Parse rendered interfaces(5) text, in ifupdown2's dialect, into located stanzas.

The grammar follows ifupdown2 (ifupdown/networkinterfaces.py) so that a file
written for it parses unchanged: ``auto``/``allow-CLASS`` name lists,
``iface NAME [FAMILY [METHOD]]`` stanzas whose attribute lines need not be
indented, ``source``/``source-directory`` includes, ``\\`` continuation lines,
``_`` equal to ``-`` in attribute names and ``swp[1-4]`` name ranges. The
netcfg extensions open stanzas the same way: ``volume NAME``, ``target IQN``
and, at column 0 only, ``netns NAME`` (indented inside an ``iface`` it is that
interface's namespace attribute).

Nothing is interpreted here beyond names: values stay strings, each with the
template location it was written at, for the model builder to type-check.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Callable

from netcfg.compile.render import RenderedSource
from netcfg.compile.syntax import ParsedConfig, RawAttribute, Stanza
from netcfg.compile.unsupported import inert_warning
from netcfg.model.errors import ConfigInvalid, Report, did_you_mean
from netcfg.model.gcpause import gc_paused
from netcfg.model.location import SourceLocation
from netcfg.plan.hooks import PHASES as COMMAND_ATTRIBUTES

Loader = Callable[[str, SourceLocation], list[RenderedSource]]

FAMILIES = ("inet", "inet6")
METHODS = ("dhcp", "loopback", "manual", "static")
# One `[a-b]` range, or a product of them in one name, may not expand to more
# than this many names: a typo like swp[1-100000] should be an error, not a hang.
MAX_RANGE = 65536
# Attribute names ifupdown2 takes for others ("aliases" in its addons).
ATTRIBUTE_ALIASES = {"bridge-trunk": "bridge-vids"}
# Includes nested deeper than this are surely a loop through symlinks.
MAX_SOURCE_DEPTH = 32

# ifupdown2's source-directory reads only files named like this (run-parts style),
# so editor backups and dpkg leftovers in the directory are ignored.
_SOURCE_DIRECTORY_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
_RANGE = re.compile(r"\[(\d+)-(\d+)\]")
# ifupdown2's older glob form: `glob swp1-6.100` is swp1.100 .. swp6.100.
_GLOB = re.compile(r"^(.*?)(\d+)-(\d+)(.*)$")
_PRAGMA_VALUES = {"lower=off": True, "lower=auto": False}
# An inline comment: '#' at the start of the value or after white space
# (`address 198.51.100.10/32   # Main IP`, as hosting providers' guides write).
_INLINE_COMMENT = re.compile(r"(?:^|\s)#")


def strip_inline_comment(text: str) -> str:
    """``text`` without an inline comment. ifupdown ran such lines through the
    shell, which took the comment out; ifupdown2 keeps it in the value and
    fails on it half-way (docs/compat.md). A '#' inside a word (a passphrase's
    ``abc#1``) is kept."""
    match = _INLINE_COMMENT.search(text)
    return text if match is None else text[:match.start()].rstrip()


def expand_names(text: str) -> list[str]:
    """Interface names in a whitespace-separated list, with ranges expanded.

    ``swp[1-3].100`` gives swp1.100 swp2.100 swp3.100 (bounds inclusive; several
    ranges in one word give their product, in order); ``glob swp1-3.100`` is
    ifupdown2's spelling of the same. Raises ValueError saying what is wrong
    with a range, for the caller to locate.
    """
    words = text.split()
    if "[" not in text and "]" not in text and "glob" not in words and "regex" not in words:
        return words
    names: list[str] = []
    glob_next = False
    for word in words:
        if word == "glob":
            glob_next = True
            continue
        if word in ("noglob", "noregex"):
            continue  # ifupdown2 accepts these as no-ops
        if word == "regex":
            raise ValueError(
                "'regex' port expressions are not supported; list the names, "
                "or use a range like swp[1-4]"
            )
        if glob_next:
            glob_next = False
            if "[" not in word:
                names.extend(_expand_glob(word))
                continue
        names.extend(_expand_ranges(word))
    if glob_next:
        raise ValueError("'glob' must be followed by a pattern like swp1-4.100")
    return names


def _expand_glob(word: str) -> list[str]:
    match = _GLOB.match(word)
    if match is None:
        raise ValueError(f"bad glob '{word}': expected PREFIX FIRST-LAST SUFFIX, like swp1-4.100")
    prefix, first, last, suffix = match.groups()
    return [f"{prefix}{i}{suffix}" for i in _bounds(word, first, last)]


def _expand_ranges(word: str) -> list[str]:
    if "[" not in word and "]" not in word:
        return [word]
    pieces = _RANGE.split(word)  # text, first, last, text, first, last, ..., text
    literal = pieces[::3]
    if any("[" in p or "]" in p for p in literal):
        raise ValueError(f"bad range in '{word}': expected NAME[FIRST-LAST], like swp[1-4]")
    names = [literal[0]]
    for k in range(1, len(pieces), 3):
        numbers = _bounds(word, pieces[k], pieces[k + 1])
        if len(names) * len(numbers) > MAX_RANGE:
            raise ValueError(f"range '{word}' gives more than {MAX_RANGE} names")
        suffix = pieces[k + 2]
        names = [f"{name}{i}{suffix}" for name in names for i in numbers]
    return names


def _bounds(word: str, first: str, last: str) -> range:
    low, high = int(first), int(last)
    if low > high:
        raise ValueError(f"bad range in '{word}': {low} is greater than {high}")
    if high - low >= MAX_RANGE:
        raise ValueError(f"range '{word}' gives more than {MAX_RANGE} names")
    return range(low, high + 1)


def parse(sources: list[RenderedSource], load: Loader, report: Report) -> ParsedConfig:
    """Parse the rendered files, in order, following their includes.

    ``load(pattern, loc)`` renders the files matching a glob (``loc`` is the
    ``source`` line, for its errors) and returns them sorted; it may raise
    ConfigInvalid, whose diagnostics are kept and parsing goes on. Every
    problem found is added to ``report``.
    """
    parser = _Parser(load, report)
    with gc_paused():
        for source in sources:
            parser.parse_source(source)
    return parser.config


def _join_continued(line: str, numbered) -> str:
    """``line`` (ending in a backslash) joined with its continuation lines.

    ifupdown2 joins with one space, whatever the next line holds (even a
    comment or nothing); the location stays that of the first line.
    """
    parts = [line[:-1]]
    for _, raw in numbered:
        nxt = raw.strip()
        if nxt.endswith("\\"):
            parts.append(nxt[:-1])
            continue
        parts.append(nxt)
        break
    return " ".join(parts).strip()


# Keywords that end the current stanza and are handled by _Parser._keyword();
# `allow-*` and column-0 `netns` are recognised in the loop.
_KEYWORDS = frozenset(
    ("auto", "iface", "source", "source-directory", "volume", "target", "mapping", "vlan",
     "no-scripts")
)


class _Parser:
    """State of one parse: what was found, and the chain of files being read."""

    def __init__(self, load: Loader, report: Report):
        self.load = load
        self.report = report
        self.config = ParsedConfig()
        self.including: list[str] = []  # normalised paths of the files being read

    def parse_source(self, source: RenderedSource) -> None:
        key = os.path.normpath(os.path.abspath(source.name))
        self.including.append(key)
        try:
            self._parse_lines(source)
        finally:
            self.including.pop()

    def _parse_lines(self, source: RenderedSource) -> None:
        # The hot loop of a compile (200k-line configs exist): str methods only,
        # and no function call for a plain attribute line beyond building it.
        lines = source.text.split("\n")
        if "\0" in source.text:
            self._nul_bytes(source, lines)
        origins = source.origins
        n_origins = len(origins) if origins is not None else 0
        name = source.name
        keywords = _KEYWORDS
        new_tuple = tuple.__new__  # NamedTuple's own __new__ is slow Python code
        # The Stanza(s) the attribute lines belong to: one per name of an
        # `iface swp[1-4]`; an empty list swallows the body of a bad stanza
        # so that one mistake gives one error; None means no stanza is open.
        current: list[Stanza] | None = None
        attributes = None  # current[0].attributes when there is exactly one
        numbered = enumerate(lines, 1)
        for lineno, raw in numbered:
            line = raw.strip()
            if not line:
                continue
            if line[0] == "#":
                if "netcfg" in line:
                    self._pragma(line, source.location(lineno))
                continue
            if line[-1] == "\\":
                line = _join_continued(line, numbered)
                if not line:
                    continue
            if origins is None:
                loc = new_tuple(SourceLocation, (name, lineno))
            elif lineno <= n_origins:
                loc = origins[lineno - 1]
            else:
                loc = source.location(lineno)
            head, _, rest = line.partition(" ")
            if "\t" in head:
                head, _, more = head.partition("\t")
                # `key<TAB>value` alone on its line: no space for a trailing blank.
                rest = f"{more} {rest}" if rest else more
            if "#" in rest and head.replace("_", "-") not in COMMAND_ATTRIBUTES:
                # Hook lines keep theirs: the shell decides what is a comment there.
                rest = strip_inline_comment(rest)
            if (
                head in keywords
                # Column 0 only: indented, these are attributes (a target's
                # allow-initiator, an iface's netns).
                or (raw[0] not in " \t" and (head[:6] == "allow-" or head == "netns"))
            ):
                current = self._keyword(head, rest.split(), loc, source)
                attributes = current[0].attributes if current and len(current) == 1 else None
                continue
            attr = head.replace("_", "-") if "_" in head else head
            attr = ATTRIBUTE_ALIASES.get(attr, attr)
            if attr in COMMAND_ATTRIBUTES:
                rest = rest.strip()  # a shell command: its spacing is the shell's
            elif "  " in rest or "\t" in rest:
                rest = " ".join(rest.split())
            else:
                rest = rest.lstrip()
            if attributes is not None:
                attributes.append(RawAttribute(attr, rest, loc))
            elif current:
                for stanza in current:
                    stanza.attributes.append(RawAttribute(attr, rest, loc))
            elif current is None:
                self.report.error(
                    loc,
                    f"attribute '{head}' outside of a stanza: put it after an "
                    "'iface NAME' line (or another stanza keyword)",
                    attr,
                )

    def _nul_bytes(self, source: RenderedSource, lines: list[str]) -> None:
        """No value can hold a NUL: netlink and the kernel's strings end at
        the first one, so what was written after it would be dropped silently."""
        for lineno, line in enumerate(lines, 1):
            if "\0" in line:
                self.report.error(source.location(lineno), "a NUL byte in the config: no "
                                  "name or value can contain one (the kernel would cut it "
                                  "there); remove it")

    def _keyword(
        self, keyword: str, words: list[str], loc: SourceLocation, source: RenderedSource
    ) -> list[Stanza] | None:
        """Handle a keyword line; return the stanzas its following lines belong to."""
        if keyword == "iface":
            return self._iface(words, loc)
        if keyword in ("netns", "volume", "target"):
            return self._named_stanza(keyword, words, loc)
        if keyword == "auto" or keyword.startswith("allow-"):
            self._auto(keyword, words, loc)
        elif keyword == "no-scripts":
            # ifupdown 0.8: no /etc/network/if-*.d scripts for these interfaces
            # (apply/hooks.py HookSettings.no_scripts).
            for name in self._names(" ".join(words), loc, keyword):
                self.config.no_scripts.setdefault(name, loc)
        elif keyword == "source":
            self._source(" ".join(words), loc, source)
        elif keyword == "source-directory":
            self._source_directory(" ".join(words), loc, source)
        elif keyword == "mapping":
            # ifupdown's mapping: its `script` and `map` lines are the stanza's;
            # the script runs when netcfg compiles (compile/runtime_choice.py).
            stanza = Stanza("mapping", " ".join(words), loc)
            self.config.mappings.append(stanza)
            return [stanza]
        elif keyword == "vlan":
            # ifupdown2's `vlan BRIDGE.VID` stanza has one attribute,
            # bridge-igmp-querier-src (addons/bridgevlan.py), which it sets with
            # `brctl setmcqv4src`: Cumulus Linux's brctl and kernel only (Debian's
            # bridge-utils has no such command, upstream no per-VLAN querier
            # source). It does nothing on this host: accepted with a warning
            # (docs/compat.md, "Lines that do nothing here"), its body swallowed.
            self.report.diagnostics.append(inert_warning(
                loc,
                f"vlan {' '.join(words)} does nothing here: a 'vlan' stanza's one setting, "
                "bridge-igmp-querier-src, is Cumulus Linux's (ifupdown2 runs 'brctl "
                "setmcqv4src', which Debian's brctl and upstream Linux lack); VLANs of a "
                "VLAN-aware bridge are set with bridge-vids and bridge-access",
                "vlan",
            ))
            return []
        return None

    def _unsupported(self, loc: SourceLocation, what: str, word: str,
                     supported: tuple[str, ...]) -> None:
        """An iface line's family or method that netcfg does not know."""
        self.report.error(loc, f"unsupported {what} '{word}' (supported: {', '.join(supported)})"
                          + did_you_mean(word, supported), "iface")

    def _names(self, text: str, loc: SourceLocation, keyword: str) -> list[str]:
        try:
            names = expand_names(text)
        except ValueError as e:
            self.report.error(loc, f"{keyword}: {e}", keyword)
            return []
        if not names:
            self.report.error(loc, f"'{keyword}' needs at least one interface name", keyword)
        return names

    def _auto(self, keyword: str, words: list[str], loc: SourceLocation) -> None:
        patterns = [w for w in words if "/" in w]
        if patterns:
            # ifupdown 0.8's `auto /eth*`, `auto mac/01:23:.../=foo`: matched against
            # the interfaces present when netcfg compiles (compile/runtime_choice.py).
            self.config.patterns.extend((keyword, w, loc) for w in patterns)
            words = [w for w in words if "/" not in w]
            if not words:
                return
        names = self._names(" ".join(words), loc, keyword)
        config = self.config
        if keyword in ("auto", "allow-auto"):
            for name in names:
                config.auto.setdefault(name, loc)
            return
        cls = keyword[len("allow-"):]
        if not cls:
            self.report.error(loc, "'allow-' needs a class, as in 'allow-hotplug NAME'", keyword)
            return
        for name in names:
            config.allow.setdefault(name, []).append((cls, loc))
            if cls == "hotplug":
                config.auto.setdefault(name, loc)

    def _iface(self, words: list[str], loc: SourceLocation) -> list[Stanza]:
        report = self.report
        if words[:1] == ["glob"]:
            words = [" ".join(words[:2])] + words[2:]
        if not words:
            report.error(
                loc, "'iface' needs an interface name: iface NAME [inet|inet6 METHOD]", "iface"
            )
            return []
        inherits = None
        if "inherits" in words[1:]:
            # ifupdown 0.8's and ifupdown-ng's `iface NAME [FAMILY [METHOD]] inherits
            # TEMPLATE`: a line of the stanza for compile/inherits.py.
            at = words.index("inherits", 1)
            inherits, words = " ".join(words[at + 1:]), words[:at]
        if len(words) > 3:
            report.error(
                loc,
                f"unexpected '{' '.join(words[3:])}' after 'iface {' '.join(words[:3])}': "
                "expected iface NAME [inet|inet6 METHOD]",
                "iface",
            )
            return []
        family = words[1] if len(words) > 1 else None
        method = words[2] if len(words) > 2 else None
        if family is not None and family not in FAMILIES:
            self._unsupported(loc, "address family", family, FAMILIES)
            return []
        if method == "auto" and family == "inet6":
            pass  # SLAAC: the kernel's accept_ra/autoconf defaults (docs/compat.md)
        elif method == "tunnel" or (method in ("v4tunnel", "6to4") and family == "inet6"):
            pass  # ifupdown's tunnel methods: a tunnel kind (compile/legacy_tunnel.py)
        elif method == "ppp" and family == "inet":
            pass  # ifupdown's pon/poff: left to the ppp package (compile/build.py)
        elif method is not None and method not in METHODS:
            self._unsupported(loc, "method", method, METHODS)
            return []
        names = self._names(words[0], loc, "iface")
        stanzas = [Stanza("iface", n, loc, family, method) for n in names]
        if inherits is not None:
            for stanza in stanzas:
                stanza.attributes.append(RawAttribute("inherits", inherits, loc))
        self.config.stanzas.extend(stanzas)
        return stanzas

    def _named_stanza(self, keyword: str, words: list[str], loc: SourceLocation) -> list[Stanza]:
        what = "IQN" if keyword == "target" else "NAME"
        if len(words) != 1:
            problem = "needs a name" if not words else f"takes one name, got '{' '.join(words)}'"
            self.report.error(loc, f"'{keyword}' {problem}: expected '{keyword} {what}'", keyword)
            return []
        stanza = Stanza(keyword, words[0], loc)
        self.config.stanzas.append(stanza)
        return [stanza]

    def _pragma(self, line: str, loc: SourceLocation) -> None:
        body = line.lstrip("#").strip()
        if not body.startswith("netcfg:"):
            return
        setting = "".join(body[len("netcfg:"):].split())
        if setting not in _PRAGMA_VALUES:
            self.report.error(
                loc,
                f"unknown netcfg pragma '{setting}': expected 'lower=off' or 'lower=auto'",
            )
        elif _PRAGMA_VALUES[setting]:
            self.config.lower_off_files.add(loc.file)
        else:
            self.config.lower_off_files.discard(loc.file)

    def _source(self, pattern: str, loc: SourceLocation, source: RenderedSource) -> None:
        if not pattern:
            self.report.error(loc, "'source' needs a file name or glob", "source")
            return
        if not os.path.isabs(pattern):
            # Relative to the including file, as in ifupdown2; the directory is
            # escaped so only the operator's pattern is a glob.
            base = os.path.dirname(source.name)
            if base:
                pattern = os.path.join(glob.escape(base), pattern)
        self._include(pattern, loc)

    def _source_directory(
        self, directory: str, loc: SourceLocation, source: RenderedSource
    ) -> None:
        if not directory:
            self.report.error(loc, "'source-directory' needs a directory", "source-directory")
            return
        if not os.path.isabs(directory):
            directory = os.path.join(os.path.dirname(source.name), directory)
        try:
            entries = sorted(os.listdir(directory))
        except OSError as e:
            self.report.error(
                loc,
                f"source-directory {directory}: {e.strerror or e}",
                "source-directory",
            )
            return
        # Listed here rather than by the loader so that files ifupdown2 skips
        # are never even rendered. The names hold no glob characters.
        for entry in entries:
            if _SOURCE_DIRECTORY_NAME.match(entry):
                path = os.path.join(directory, entry)
                if not os.path.isdir(path):   # a FIFO or dangling link: the loader refuses it
                    self._include(os.path.join(glob.escape(directory), entry), loc)

    def _include(self, pattern: str, loc: SourceLocation) -> None:
        try:
            sources = self.load(pattern, loc)
        except ConfigInvalid as e:
            self.report.diagnostics.extend(e.diagnostics)
            return
        for sub in sources:
            key = os.path.normpath(os.path.abspath(sub.name))
            if key in self.including:
                chain = " -> ".join(_shown(path) for path in
                                    self.including[self.including.index(key):] + [key])
                self.report.error(loc, f"source loop: {chain}", "source")
                continue
            if len(self.including) >= MAX_SOURCE_DEPTH:
                self.report.error(
                    loc, f"sources nested more than {MAX_SOURCE_DEPTH} deep at {sub.name}", "source"
                )
                continue
            self.parse_source(sub)


def _shown(path: str) -> str:
    """A path as messages show it: relative when under the working directory,
    like the locations the operator gave with -c."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative

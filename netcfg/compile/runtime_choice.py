"""ifupdown 0.8's run-time choices, made when netcfg compiles: mappings and patterns.

Debian's ifupdown chooses two things when `ifup` runs, on the host it configures:

- ``auto PATTERN`` (and ``allow-CLASS PATTERN``): a word with a ``/`` is a
  pattern, ``[VARIABLE]/GLOB[/[N][=LOGICAL]]``, matched against the interfaces
  present (main.c expand_matches): without VARIABLE the glob matches the name;
  with one, a line of /sys/class/net/NAME/VARIABLE (``mac`` is ``address``;
  ``*`` asks only whether the file is there). N picks the Nth match; ``=LOGICAL``
  configures the matched interface with the stanza named LOGICAL.
- ``mapping GLOB...`` with ``script PATH`` and ``map ...`` lines: for an
  interface brought up whose name matches, ifupdown runs ``PATH NAME`` with the
  map lines on stdin; the first line it prints names the stanza that configures
  the interface (execute.c run_mapping). No output, or a failed script: the
  interface is not configured and ifup fails. A name no stanza has: ifup says
  "ignoring unknown interface" and configures nothing there.

netcfg compiles on the host it applies to, so it makes the same choices at
compile time, as `ifup -n` does (ifupdown runs mapping scripts even then), and
says at the line what it chose. The physical interface is then built from the
chosen stanza's lines (copied under its name, located where they are written);
a stanza used only as such a choice is not an interface of its own. A pattern
that matches nothing brings nothing up, as in ifupdown (a warning says so).

Where netcfg differs, on purpose (docs/compat.md):

- ``VARIABLE/*``: ifupdown 0.8.41 inverts the test (variable_match returns
  access()'s 0 as false), so ``wireless/*`` matches the interfaces that are *not*
  wireless. netcfg matches those that have the file, as interfaces(5) says.
- The Nth match counts in ifindex order; ifupdown counts in getifaddrs() order,
  which puts an interface that has addresses after those that have none.
- A mapping script runs only from a file root owns and no one else can write,
  the script itself the same (compile/trust.py's rule, whoever runs netcfg):
  `check` of someone else's file never runs their program.

The host is asked through ``Host`` (the links of the namespace netcfg runs in,
their sysfs values, running a script), so the choice logic is testable alone.
"""

from __future__ import annotations

import fcntl
import fnmatch
import os
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass
from typing import Protocol

from netcfg.compile.syntax import ParsedConfig, RawAttribute, Stanza
from netcfg.compile.trust import not_trusted
from netcfg.model.errors import Report
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE

MAPPING = "mapping"
SCRIPT, MAP = "script", "map"
# Seconds a mapping script may take (ifupdown waits for ever; a compile must end).
SCRIPT_TIMEOUT_S = 10.0
# ifupdown reads the answer into an 80-byte buffer (fgets).
ANSWER_MAX = 79
SIOCGIFHWADDR = 0x8927
SIOCGIWNAME = 0x8B01


@dataclass
class ScriptResult:
    returncode: int
    stdout: str
    problem: str = ""          # could not run it at all (not there, timeout)


class Host(Protocol):
    def links(self) -> list[str]:
        """The interfaces present, in ifindex order."""

    def lines(self, name: str, variable: str) -> list[str] | None:
        """The lines of /sys/class/net/NAME/VARIABLE; None when it is not there."""

    def run(self, argv: list[str], stdin: str) -> ScriptResult:
        """``argv`` run as the caller, ``stdin`` its input."""


class ThisHost:
    """The namespace netcfg runs in. Names and, for ``mac``/``address``, ``type``
    and ``wireless``, the values come from the kernel through this namespace's
    sockets (if_nameindex, SIOCGIFHWADDR, SIOCGIWNAME), not from /sys: a sandbox
    made with `unshare --net` still shows its parent's /sys/class/net. Other
    variables are read from /sys/class/net when its ifindex file agrees."""

    def __init__(self) -> None:
        self._index: dict[str, int] | None = None

    def links(self) -> list[str]:
        return list(self._indexes())

    def _indexes(self) -> dict[str, int]:
        if self._index is None:
            self._index = {name: index for index, name in sorted(socket.if_nameindex())}
        return self._index

    def lines(self, name: str, variable: str) -> list[str] | None:
        if variable in ("address", "type"):
            hwaddr = _ioctl(name, SIOCGIFHWADDR)
            if hwaddr is None:
                return None
            family = struct.unpack_from("H", hwaddr, 16)[0]
            if variable == "type":
                return [str(family)]
            length = 6 if family in (1, 772) else 0   # ARPHRD_ETHER, ARPHRD_LOOPBACK
            if not length:
                return _sysfs(name, variable, self._indexes().get(name))
            return [":".join(f"{b:02x}" for b in hwaddr[18:18 + length])]
        if variable == "wireless":
            return [] if _ioctl(name, SIOCGIWNAME) is not None else None
        return _sysfs(name, variable, self._indexes().get(name))

    def run(self, argv: list[str], stdin: str) -> ScriptResult:
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                                  timeout=SCRIPT_TIMEOUT_S, errors="replace")
        except FileNotFoundError:
            return ScriptResult(127, "", "no such file")
        except PermissionError:
            return ScriptResult(126, "", "not executable")
        except subprocess.TimeoutExpired:
            return ScriptResult(-1, "", f"still running after {SCRIPT_TIMEOUT_S:g} s: stopped")
        except OSError as e:
            return ScriptResult(126, "", e.strerror or str(e))
        return ScriptResult(done.returncode, done.stdout)


def _ioctl(name: str, request: int) -> bytes | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            return fcntl.ioctl(s.fileno(), request, struct.pack("16s16x", name.encode()[:15]))
    except OSError:
        return None


def _sysfs(name: str, variable: str, index: int | None) -> list[str] | None:
    base = os.path.join("/sys/class/net", name)
    try:
        with open(os.path.join(base, "ifindex")) as f:
            if index is None or int(f.read()) != index:
                return None    # /sys of another namespace
        with open(os.path.join(base, variable), errors="replace") as f:
            return f.read().splitlines()
    except (OSError, ValueError):
        return None


@dataclass
class _Choice:
    logical: str
    loc: SourceLocation
    why: str


def choose_at_compile(parsed: ParsedConfig, report: Report, host: Host | None = None,
                      brought_up: tuple[str, ...] = ()) -> None:
    """Expand ``parsed``'s patterns into the names they bring up and run the
    mappings of the interfaces brought up (the auto and allow-CLASS names, and
    ``brought_up``: `ifup NAME`'s), then configure each chosen interface from
    its chosen stanza. Changes ``parsed`` in place."""
    if not parsed.patterns and not parsed.mappings:
        return
    host = host or ThisHost()
    chosen: dict[str, _Choice] = {}
    logical_only: set[str] = set()    # stanzas named as a choice, not interfaces
    for keyword, word, loc in parsed.patterns:
        logical = _expand(parsed, keyword, word, loc, host, chosen, report)
        if logical:
            logical_only.add(logical)
    mappings = [m for m in parsed.mappings if _mapping_ok(m, report)]
    names = list(dict.fromkeys([*parsed.auto, *parsed.allow, *brought_up]))
    ran: set[int] = set()
    for name in names:
        logical = chosen[name].logical if name in chosen else name
        for mapping in mappings:
            if any(fnmatch.fnmatchcase(logical, glob) for glob in mapping.name.split()):
                ran.add(id(mapping))
                answer = _run_mapping(mapping, name, parsed, host, report)
                if answer is not None:
                    chosen[name] = _Choice(answer, mapping.loc,
                                           f"mapping {mapping.name} (script {_script(mapping)})")
                    logical_only.add(answer)
                else:
                    chosen[name] = _Choice("", mapping.loc, "")   # not configured
                break
    for mapping in mappings:
        if id(mapping) not in ran:
            _not_run(mapping, report)
    _configure_chosen(parsed, chosen, logical_only, report)


# ---- patterns ----------------------------------------------------------------------------

def _expand(parsed: ParsedConfig, keyword: str, word: str, loc: SourceLocation, host: Host,
            chosen: dict[str, _Choice], report: Report) -> str | None:
    """One ``auto``/``allow-CLASS`` pattern word, as main.c expand_matches reads it;
    returns its ``=LOGICAL``, if any."""
    variable, _, rest = word.partition("/")
    pattern, slash, options = rest.partition("/")
    logical = None
    if "=" in (options if slash else pattern):
        if slash:
            options, _, logical = options.partition("=")
        else:
            pattern, _, logical = pattern.partition("=")
    try:
        nth = int(options) if options else 0
    except ValueError:
        nth = 0                         # atoi: not a number is 0, every match
    variable = "address" if variable.lower() == "mac" else variable
    matched: list[str] = []
    count = 0
    for name in host.links():
        if variable:
            values = host.lines(name, variable)
            if values is None or (pattern != "*" and
                                  not any(fnmatch.fnmatchcase(v, pattern) for v in values)):
                continue
        elif not fnmatch.fnmatchcase(name, pattern):
            continue
        count += 1
        if nth and nth != count:
            continue
        matched.append(name)
    if not matched:
        report.warning(loc, f"'{keyword} {word}' matches no interface present now, so it brings "
                       f"nothing up, as ifupdown's ifup does; netcfg matches it when it compiles "
                       f"on this host (`netcfg check` and `apply` here)", keyword)
        return logical
    earlier = _names_before(parsed, loc)
    said = []
    for name in matched:
        if logical and logical != name:
            if name in chosen or name in earlier:
                said.append(f"{name} (brought up by an earlier line: configured as that "
                            f"line says, as ifupdown configures an interface once)")
            else:
                chosen[name] = _Choice(logical, loc, f"'{keyword} {word}'")
                said.append(f"{name}, configured by stanza {logical}")
        else:
            said.append(name)
        _bring_up(parsed, keyword, name, loc)
    inverted = (" (ifupdown 0.8.41 inverts '*', matching the interfaces that lack the file: "
                "netcfg matches those that have it, as interfaces(5) says)"
                if variable and pattern == "*" else "")
    report.warning(loc, f"'{keyword} {word}' matches the interfaces present now{inverted}: "
                   f"brings up {'; '.join(said)}", keyword)
    return logical


def _names_before(parsed: ParsedConfig, loc: SourceLocation) -> set[str]:
    """Names an earlier line of the same file brings up by name: ifupdown
    configures an interface once, the first time the list names it."""
    return {n for n, at in parsed.auto.items() if at.file == loc.file and at.line < loc.line} | \
        {n for n, lines in parsed.allow.items()
         for _, at in lines if at.file == loc.file and at.line < loc.line}


def _bring_up(parsed: ParsedConfig, keyword: str, name: str, loc: SourceLocation) -> None:
    """As parser._auto records a name (allow-hotplug is auto too)."""
    if keyword in ("auto", "allow-auto"):
        parsed.auto.setdefault(name, loc)
        return
    cls = keyword[len("allow-"):]
    parsed.allow.setdefault(name, []).append((cls, loc))
    if cls == "hotplug":
        parsed.auto.setdefault(name, loc)


# ---- mappings ----------------------------------------------------------------------------

def _script(mapping: Stanza) -> str:
    return next((a.value for a in mapping.attributes if a.name == SCRIPT), "")


def _mapping_ok(mapping: Stanza, report: Report) -> bool:
    ok = True
    if not mapping.name:
        report.error(mapping.loc, "'mapping' needs the interface names (globs) it maps, as in "
                     "'mapping eth0'", MAPPING)
        ok = False
    scripts = [a for a in mapping.attributes if a.name == SCRIPT]
    for a in mapping.attributes:
        if a.name not in (SCRIPT, MAP):
            report.error(a.loc, f"'{a.name}' in a mapping stanza: it takes 'script PATH' and "
                         f"'map ...' lines only", a.name)
            ok = False
    if not scripts or not scripts[0].value:
        report.error((scripts[0].loc if scripts else mapping.loc),
                     f"mapping {mapping.name}: needs a 'script PATH' line, the program whose "
                     f"output names the stanza", SCRIPT)
        ok = False
    elif len(scripts) > 1:
        report.error(scripts[1].loc, f"mapping {mapping.name}: script is given twice (first at "
                     f"line {scripts[0].loc.line}); write it once", SCRIPT)
        ok = False
    return ok


def _resolve_script(path: str) -> str | None:
    """Where ``path`` is, as execvp finds it (a name without '/' on PATH)."""
    if "/" in path:
        return path if os.path.exists(path) else None
    return shutil.which(path)


def _run_mapping(mapping: Stanza, name: str, parsed: ParsedConfig, host: Host,
                 report: Report) -> str | None:
    """The stanza the mapping's script chooses for ``name``; None after an error."""
    line = next(a for a in mapping.attributes if a.name == SCRIPT)
    script = line.value
    found = _resolve_script(script)
    if found is None:
        report.error(line.loc, f"mapping {mapping.name}: script {script} is not there (ifupdown "
                     f"runs it for {name} and its ifup fails: No such file or directory); "
                     f"give the path of an executable", SCRIPT)
        return None
    why = _untrusted(line.loc.file, found)
    if why:
        report.error(line.loc, f"mapping {mapping.name}: script {script} is not run for {name}: "
                     f"{why}", SCRIPT)
        return None
    stdin = "".join(a.value + "\n" for a in mapping.attributes if a.name == MAP)
    result = host.run([found if "/" not in script else script, name], stdin)
    if result.problem or result.returncode != 0:
        what = result.problem or f"exit status {result.returncode}"
        report.error(line.loc, f"mapping {mapping.name}: script {script} failed on {name} "
                     f"({what}); ifupdown's ifup fails there too and leaves {name} "
                     f"unconfigured", SCRIPT)
        return None
    if not result.stdout:
        report.error(line.loc, f"mapping {mapping.name}: script {script} printed nothing for "
                     f"{name}, so no stanza is chosen (ifupdown: 'no output from mapping "
                     f"script', its ifup fails); make it print a stanza's name", SCRIPT)
        return None
    answer = result.stdout.split("\n", 1)[0][:ANSWER_MAX].rstrip()
    report.warning(mapping.loc, f"mapping {mapping.name}: script {script} chose stanza "
                   f"'{answer}' for {name}", MAPPING)
    return answer


def _untrusted(config_file: str, script: str) -> str | None:
    """Why a mapping script must not run: the config that names it or the script
    is not root's alone (compile/trust.py, whoever runs netcfg)."""
    if not os.path.isfile(config_file):
        return f"a mapping script runs only from a file root owns, and {config_file} is none"
    for path in (config_file, script):
        why = not_trusted(path, always=True)
        if why:
            return why
    return None


def _not_run(mapping: Stanza, report: Report) -> None:
    """A mapping no interface brought up matches: ifupdown does not run it either."""
    line = next(a for a in mapping.attributes if a.name == SCRIPT)
    missing = "" if _resolve_script(line.value) else \
        f"; its script {line.value} is not there, so `ifup` of such an interface would fail"
    report.warning(mapping.loc, f"mapping {mapping.name}: no interface this file brings up "
                   f"matches it, so its script is not run (as ifupdown's ifup -a){missing}",
                   MAPPING)


# ---- the chosen stanzas ------------------------------------------------------------------

def _configure_chosen(parsed: ParsedConfig, chosen: dict[str, _Choice], logical_only: set[str],
                      report: Report) -> None:
    by_name: dict[str, list[Stanza]] = {}
    for stanza in parsed.stanzas:
        if stanza.keyword == IFACE:
            by_name.setdefault(stanza.name, []).append(stanza)
    copies: dict[str, list[Stanza]] = {}
    replaced: set[str] = set()
    for name, choice in chosen.items():
        if choice.logical == name:
            continue
        replaced.add(name)
        if not choice.logical:
            _not_brought_up(parsed, name)     # the mapping failed: said at its line
            continue
        logical = by_name.get(choice.logical)
        if not logical:
            report.warning(choice.loc, f"{choice.why} chose stanza '{choice.logical}' for "
                           f"{name}, and no 'iface {choice.logical}' stanza is there: {name} "
                           f"is not configured (ifupdown: ignoring unknown interface "
                           f"{name}={choice.logical})", MAPPING)
            _not_brought_up(parsed, name)
            continue
        copies[name] = [Stanza(IFACE, name, s.loc, s.family, s.method,
                               [RawAttribute(a.name, a.value, a.loc) for a in s.attributes])
                        for s in logical]
    kept_logical = set(parsed.auto) | set(parsed.allow)
    out: list[Stanza] = []
    for stanza in parsed.stanzas:
        if stanza.keyword == IFACE and (stanza.name in replaced or
                                        (stanza.name in logical_only
                                         and stanza.name not in kept_logical)):
            continue
        out.append(stanza)
    for stanzas in copies.values():
        out.extend(stanzas)
    parsed.stanzas = out


def _not_brought_up(parsed: ParsedConfig, name: str) -> None:
    parsed.auto.pop(name, None)
    parsed.allow.pop(name, None)

"""Errors for the operator: diagnostics about the config, and exit codes.

A config is checked as a whole and every problem is reported in one run,
sorted by file and line, as ``FILE:LINE: error: MESSAGE``. Nothing here ever
prints a traceback; the CLI turns these into text and an exit code.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Iterable

from netcfg.model.location import NOWHERE, SourceLocation

# Documented exit codes (README "Exit codes", netcfg --help).
EXIT_OK = 0
EXIT_INVALID_CONFIG = 1
EXIT_USAGE = 2
EXIT_APPLY_FAILED_REVERTED = 3
EXIT_REVERT_FAILED = 4
EXIT_STORAGE_FAILED = 5     # the network applied; netcfgd could not serve some storage


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in the config, located where the operator wrote it."""

    loc: SourceLocation
    message: str
    attribute: str | None = None
    severity: str = "error"

    def format(self) -> str:
        return f"{self.loc}: {self.severity}: {self.message}"

    def to_json(self) -> dict:
        return {
            "file": self.loc.file,
            "line": self.loc.line,
            "severity": self.severity,
            "attribute": self.attribute,
            "message": self.message,
        }


@dataclass
class Report:
    """Collects diagnostics while a config is compiled, so all are shown at once."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def error(self, loc: SourceLocation | None, message: str, attribute: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(loc or NOWHERE, message, attribute))

    def warning(self, loc: SourceLocation | None, message: str, attribute: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(loc or NOWHERE, message, attribute, "warning"))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def sorted(self) -> list[Diagnostic]:
        # Stable on equal locations, so messages about one line keep the order
        # in which the checks found them.
        return sorted(self.diagnostics, key=lambda d: (d.loc.file, d.loc.line))

    def raise_if_errors(self) -> None:
        if self.errors:
            raise ConfigInvalid(self.sorted())


class NetcfgError(Exception):
    """Base of every error the CLI reports without a traceback."""

    exit_code = EXIT_INVALID_CONFIG


class ConfigInvalid(NetcfgError):
    """The config has errors; nothing was (or will be) changed."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.format() for d in self.diagnostics))


class UnknownDevice(NetcfgError):
    """A device the kernel, as last read, does not have in that namespace (its
    ifindex is unknown). Its own class, not KeyError: a KeyError from a bug
    must not be reported, and reverted, as "no such device"."""

    exit_code = EXIT_APPLY_FAILED_REVERTED
    retryable = False

    def __init__(self, netns: str, name: str):
        self.netns = netns
        self.name = name
        where = f"netns {netns}" if netns else "the host namespace"
        super().__init__(f"no such device in the kernel: {name} ({where})")


class UsageError(NetcfgError):
    """The command line itself is wrong (exit 2)."""

    exit_code = EXIT_USAGE


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """' (did you mean X?)' for the closest candidate, or '' when none is close."""
    # 0.75: one wrong character in a short name (vol1 for vol0) and a typo in
    # a long one (bridge-prots, adress: ~0.9) still match; 0.6 also offered
    # unrelated words (bridge-hashel -> bridge-stp at 0.70).
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


def quote(value: object) -> str:
    """A value as messages for the operator show it (STYLE.md 13), never as a
    Python repr: a string as 'x' (control characters escaped), a number or a
    name as written, yes/no, bytes in hex, a list as 'a', 'b' (nothing when
    empty), a mapping as key=value pairs."""
    if isinstance(value, str):
        shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                        for c in value)
        return f"'{shown}'"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "nothing"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex() or "no bytes"
    if isinstance(value, dict):
        return ", ".join(f"{k if isinstance(k, str) else quote(k)}={quote(v)}"
                         for k, v in value.items()) or "nothing"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(quote(v) for v in items) or "nothing"
    return str(value)

"""What ifquery prints, in ifupdown2's formats (ifupdown/iface.py
`_dump_pretty`, `ifaceJsonEncoder`, `ifaceJsonEncoderWithStatus`).

Pure: an interfaces file and, for `-c`, the drift netcfg found. The check's
verdicts come from the same repairing operations `netcfg query --check`
prints (plan/drift.py), so the two never disagree: an attribute fails when an
operation repairing it points at its line, an interface fails when any
operation concerns it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from netcfg.ifupdown.config import InterfacesFile
from netcfg.model.location import SourceLocation

PASS, FAIL = "pass", "fail"   # ifupdown2.conf's ifquery_check_success_str / _error_str


@dataclass
class Verdicts:
    """Which interfaces and which lines (file, line) the kernel does not match."""

    interfaces: set[str] = field(default_factory=set)
    lines: set[tuple[str, int]] = field(default_factory=set)
    reasons: dict[str, list[str]] = field(default_factory=dict)

    def fail(self, name: str, loc: SourceLocation, reason: str) -> None:
        self.interfaces.add(name)
        if loc.line:
            self.lines.add((loc.file, loc.line))
        self.reasons.setdefault(name, []).append(reason)


def _config(ifile: InterfacesFile, name: str) -> dict[str, list[tuple[str, SourceLocation]]]:
    config: dict[str, list[tuple[str, SourceLocation]]] = {}
    for attr in ifile.attributes(name):
        config.setdefault(attr.name, []).append((attr.value, attr.loc))
    return config


def _one_or_list(values: list) -> Any:
    return values[0] if len(values) == 1 else values


def iface_json(ifile: InterfacesFile, name: str, auto: bool,
               verdicts: Verdicts | None = None) -> dict[str, Any]:
    """One interface as ifupdown2's JSON encoders write it (with status when checked)."""
    families, methods = ifile.method(name)
    out: dict[str, Any] = {"name": name}
    if methods and methods[0]:
        out["addr_method"] = methods[0]
    if families:
        out["addr_family"] = families[0] if len(families) == 1 else families
    out["auto"] = auto
    config = _config(ifile, name)
    out["config"] = {k: _one_or_list([v for v, _ in values]) for k, values in config.items()}
    if verdicts is not None:
        out["config_status"] = {
            k: _one_or_list([FAIL if (loc.file, loc.line) in verdicts.lines else PASS
                             for _, loc in values])
            for k, values in config.items()}
        out["status"] = FAIL if name in verdicts.interfaces else PASS
    return out


def as_json(ifile: InterfacesFile, names: list[str], verdicts: Verdicts | None = None) -> str:
    """The JSON array (`[]` when nothing matches: Proxmox's poller dies on empty output)."""
    auto = set(ifile.auto_names())
    return json.dumps([iface_json(ifile, n, n in auto, verdicts) for n in names], indent=4)


def as_native(ifile: InterfacesFile, names: list[str], verdicts: Verdicts | None = None) -> str:
    """The stanzas as ifupdown2 prints them; with verdicts, `[pass]`/`[fail]`
    at the end of each line as `ifquery -c` does."""
    auto = set(ifile.auto_names())
    blocks = []
    for name in names:
        families, methods = ifile.method(name)
        lines = [f"auto {name}"] if name in auto else []
        heads = [" ".join(w for w in ("iface", name, f, m) if w)
                 for f, m in zip(families, methods)] or [f"iface {name}"]
        status = None
        if verdicts is not None:
            status = FAIL if name in verdicts.interfaces else PASS
            lines.append("{0:65} {1:>8}".format(heads[0], f"[{status}]"))
        else:
            lines.append(heads[0])
        for attr, values in _config(ifile, name).items():
            for value, loc in values:
                if verdicts is None:
                    lines.append(f"\t{attr} {value}")
                    continue
                mark = FAIL if (loc.file, loc.line) in verdicts.lines else PASS
                lines.append("\t{0:55} {1:>10}".format(f"{attr} {value}", f"[{mark}]"))
        for head in heads[1:]:     # more families: an empty stanza each, as ifupdown2
            lines += ["", *([f"auto {name}"] if name in auto else []), head]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)

"""What netcfg brought up with imperative lines, kept so that their down
lines can run later (issue 21 deliverable 2; issue 23 M3).

The kernel does not remember hook lines: once a reload's new config drops a
stanza, or changes its lines, the old `post-down iptables -D ...` is gone
from the config, and ifupdown2 never runs it (ifupdown2 #248: Proxmox SDN's
SNAT rules pile up). So each apply that brings an interface up records, per
(netns, interface):

- ``fingerprint``: a hash of its up lines and of the settings the hook
  environment exports (IF_*, ADDRFAM, METHOD). The same fingerprint on the
  next apply means its up lines and scripts would see nothing new: they do
  not run again (ifupdown2 #192: re-run up lines duplicate `ip rule`s). An
  empty fingerprint means the up lines have not (all) run yet: a failed
  pre-up, or a revert that ran the down lines; the next apply that wants the
  interface up runs them.
- ``down``: its pre-down, down and post-down lines, and ``families`` /
  ``settings`` / ``locs``: the environment and the locations they run with,
  so they run as the stanza said even after the stanza is gone.
- ``added``: the addresses that appeared on the interface while its up and
  post-up lines ran (`up ip address add ... dev $IFACE`). While the
  fingerprint holds and the interface stays up, later applies keep them and
  do not call them drift (apply/hooks.py hook_added; plan/addresses.py):
  the lines do not run again to put them back.

The file is versioned JSON (never pickle: STYLE.md 8), written atomically
(a temporary file in the same directory, then rename) with mode 0600 in a
0700 directory: it holds command lines root runs. Callers hold netcfg's
apply lock while they read and write it. An unreadable or foreign file is
reported and treated as empty (interfaces up are then adopted as they are,
their lines not re-run).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable

VERSION = 1
FILE_NAME = "hooks.json"
Key = tuple[str, str]
# Environment entries that are the down lines themselves: changing a
# post-down line changes nothing an up line or script saw, so the new down
# lines are recorded without re-running anything.
_DOWN_KEYS = frozenset({"IF_PRE_DOWN", "IF_DOWN", "IF_POST_DOWN"})
PENDING = ""


def default_path(run_dir: str) -> str:
    return os.path.join(run_dir, FILE_NAME)


def fingerprint(up: Iterable[tuple[str, str]], families: Iterable[tuple[str, str]],
                settings: dict[str, str]) -> str:
    """What an interface's up lines and scripts see, hashed."""
    # repr of tuples of strings: deterministic, and cheaper than JSON for
    # the thousands of stanzas of a VLAN-heavy host, on every apply.
    seen = (tuple(up), tuple(families),
            tuple((k, v) for k, v in sorted(settings.items()) if k not in _DOWN_KEYS))
    return hashlib.sha256(repr(seen).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Entry:
    """One interface whose up lines (and scripts) ran, or are due."""

    netns: str
    name: str
    label: str                                      # how messages name it
    fingerprint: str                                # PENDING: up lines not run
    down: tuple[tuple[str, str], ...] = ()          # (phase, command)
    families: tuple[tuple[str, str], ...] = ()      # (inet|inet6, method)
    settings: dict[str, str] = field(default_factory=dict)   # IF_* values
    locs: dict[str, str] = field(default_factory=dict)       # phase -> "file:line"
    added: tuple[str, ...] = ()                     # addresses its up lines added

    @property
    def key(self) -> Key:
        return (self.netns, self.name)

    def pending(self) -> "Entry":
        """This interface with its down lines run and its up lines not (yet):
        what they added is theirs no more (the next apply removes it, and
        the lines, run again, add it again)."""
        return Entry(self.netns, self.name, self.label, PENDING, (), self.families,
                     self.settings, self.locs)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"netns": self.netns, "name": self.name,
                               "fingerprint": self.fingerprint}
        # Left out when empty or plain: a host's thousands of VLANs mostly
        # have no lines, and the record is read on every apply.
        if self.label != self.name:
            out["label"] = self.label
        for name, value in (("down", [list(d) for d in self.down]),
                            ("families", [list(f) for f in self.families]),
                            ("settings", self.settings), ("locs", self.locs),
                            ("added", list(self.added))):
            if value:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Entry":
        def pairs(value: Any) -> tuple[tuple[str, str], ...]:
            return tuple((str(a), str(b)) for a, b in value)

        def texts(value: Any) -> dict[str, str]:
            return {str(k): str(v) for k, v in dict(value).items()}

        return cls(str(data["netns"]), str(data["name"]), str(data.get("label") or data["name"]),
                   str(data["fingerprint"]), pairs(data.get("down", ())),
                   pairs(data.get("families", ())), texts(data.get("settings", {})),
                   texts(data.get("locs", {})), tuple(str(a) for a in data.get("added", ())))


class RecordError(Exception):
    """The record file cannot be read or written (said as a hook warning)."""


@dataclass
class Record:
    """The entries, in the order their interfaces came up (downs run in reverse)."""

    entries: dict[Key, Entry] = field(default_factory=dict)
    changed: bool = False            # since loaded: save() writes only then

    def put(self, entry: Entry) -> None:
        if self.entries.get(entry.key) == entry:
            return                          # adopted again, or unchanged: keeps its place
        self.entries.pop(entry.key, None)   # moved to the end: it came up last
        self.entries[entry.key] = entry
        self.changed = True

    def drop(self, key: Key) -> None:
        if self.entries.pop(key, None) is not None:
            self.changed = True

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "interfaces": [e.to_json() for e in self.entries.values()]}


def load(path: str) -> Record:
    """The record at ``path``; empty when there is none (first apply since boot:
    /run is a tmpfs). Raises RecordError for a file that is there but unusable."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return Record()
    except (OSError, ValueError) as error:
        raise RecordError(f"{path}: cannot read the hook record: {error}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise RecordError(f"{path}: not a version {VERSION} hook record")
    try:
        entries = [Entry.from_json(e) for e in data.get("interfaces", ())]
    except (KeyError, TypeError, ValueError) as error:
        raise RecordError(f"{path}: a malformed hook record entry: {error!r}") from None
    return Record({e.key: e for e in entries})


def save(path: str, record: Record) -> None:
    """Write ``record`` atomically, mode 0600 (its directory made 0700)."""
    directory = os.path.dirname(path) or "."
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".hooks.", dir=directory)   # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                # One line per interface: readable, and the C encoder (indent= is Python's).
                f.write('{"version": %d, "interfaces": [\n' % VERSION)
                f.write(",\n".join(json.dumps(e.to_json()) for e in record.entries.values()))
                f.write("\n]}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        raise RecordError(f"{path}: cannot write the hook record: {error.strerror or error}") \
            from None

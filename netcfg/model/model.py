"""The model: typed, validated configuration objects.

Desired state (compiled from templates) and current state (read from the
kernel) use these same types, so the two can be diffed and so ``netcfg show``
prints what ``netcfg apply`` accepts.

Attributes are kept in a plain dict keyed by their ifupdown2 spelling
(``bridge-ports``, ``mtu``) with typed values; schemas/ says which attributes
exist and what their values are. Kinds (netcfg/kinds) give them meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from netcfg.model.errors import quote
from netcfg.model.location import NOWHERE, SourceLocation

ROOT_NETNS = ""  # the host's own namespace; printed without a `netns` attribute

# Sections of the model, named after the stanza keyword that declares them.
IFACE, NETNS, VOLUME, TARGET = "iface", "netns", "volume", "target"


@dataclass(slots=True, eq=False)
class ConfigObject:
    """An interface, namespace, volume or target, with where it came from."""

    section: str
    name: str
    kind: str
    netns: str = ROOT_NETNS
    attrs: dict[str, Any] = field(default_factory=dict)
    locs: dict[str, SourceLocation] = field(default_factory=dict)
    loc: SourceLocation = NOWHERE
    auto: bool = False
    # Derived rather than declared: a vlan named in bridge-ports, a veth peer,
    # a physical port referenced but not declared.
    implicit: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.netns, self.name)

    def where(self, attribute: str | None = None) -> SourceLocation:
        """Location of an attribute, falling back to the object's stanza."""
        if attribute is not None and attribute in self.locs:
            return self.locs[attribute]
        return self.loc

    def label(self) -> str:
        """How messages name this object: ``br0``, ``br0 (netns t1)``."""
        # A name read from the kernel may hold what a config may not (ESC):
        # never printed raw (docs/security.md).
        name = self.name if self.name.isprintable() else quote(self.name)
        if self.section == IFACE and self.netns:
            return f"{name} (netns {self.netns})"
        return name


@dataclass
class Model:
    """A whole configuration. Interfaces are keyed by (netns, name)."""

    interfaces: dict[tuple[str, str], ConfigObject] = field(default_factory=dict)
    namespaces: dict[str, ConfigObject] = field(default_factory=dict)
    volumes: dict[str, ConfigObject] = field(default_factory=dict)
    targets: dict[str, ConfigObject] = field(default_factory=dict)
    # Files whose objects must not be lowered (`# netcfg: lower=off`).
    lower_off_files: set[str] = field(default_factory=set)
    # Derived index, filled by validation: interface key -> key of its master
    # (the bridge, bond or VRF it is enslaved to).
    masters: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    # Read back only: a VLAN-aware bridge's own VLANs (`bridge vlan show`
    # self entries), spelled as a port's (bridge-vids, bridge-pvid). Not
    # config: no file writes them; a compiled model's follow from its VLAN
    # devices (plan/diff.py bridge_own_vlans).
    bridge_vlans: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def master_of(self, obj: ConfigObject) -> ConfigObject | None:
        key = self.masters.get(obj.key)
        return self.interfaces.get(key) if key else None

    def section(self, name: str) -> dict:
        return {IFACE: self.interfaces, NETNS: self.namespaces,
                VOLUME: self.volumes, TARGET: self.targets}[name]

    def objects(self) -> Iterator[ConfigObject]:
        yield from self.namespaces.values()
        yield from self.interfaces.values()
        yield from self.volumes.values()
        yield from self.targets.values()

    def iface(self, netns: str, name: str) -> ConfigObject | None:
        return self.interfaces.get((netns, name))

    def netns_names(self) -> list[str]:
        """Every namespace the model uses, root first, then sorted."""
        names = set(self.namespaces)
        names.update(ns for ns, _ in self.interfaces)
        names.discard(ROOT_NETNS)
        return [ROOT_NETNS, *sorted(names)]

"""Finds kinds and traits by name, and infers an interface's kind.

Adding a kind means adding a module in netcfg/kinds and its schema file,
then naming the module in KIND_MODULES; nothing else changes.
"""

from __future__ import annotations

import importlib
from functools import cache

from netcfg.compile.model import IFACE
from netcfg.kinds.base import Kind, Trait

KIND_MODULES = (
    "loopback", "physical", "dummy", "veth", "vlan", "bridge", "bond", "vxlan",
    "vrf", "macvlan", "netns", "volume", "target",
)
TRAIT_MODULES = ("common", "bridge_port")


@cache
def _load() -> tuple[dict[str, Kind], dict[str, Trait]]:
    kinds: dict[str, Kind] = {}
    for module in KIND_MODULES:
        kind = importlib.import_module(f"netcfg.kinds.{module}").KIND
        kinds[kind.name] = kind
    traits: dict[str, Trait] = {}
    for module in TRAIT_MODULES:
        trait = importlib.import_module(f"netcfg.kinds.{module}").TRAIT
        traits[trait.name] = trait
    return kinds, traits


def kind(name: str) -> Kind:
    return _load()[0][name]


def kinds() -> list[Kind]:
    return list(_load()[0].values())


def interface_kinds() -> list[Kind]:
    return [k for k in kinds() if k.section == IFACE]


def trait(name: str) -> Trait:
    return _load()[1][name]


def hooks_for(kind_name: str) -> list[Trait]:
    """The kind itself followed by its traits: everything whose hooks run for it."""
    k = kind(kind_name)
    return [k, *(trait(t) for t in k.traits)]


@cache
def attribute_owner() -> dict[str, str]:
    """Attribute name -> the group (kind or trait) that defines it."""
    from netcfg.schema import group_attributes

    owner: dict[str, str] = {}
    for group in [*(k.name for k in kinds()), *(t.name for t in _load()[1].values())]:
        for attribute in group_attributes(group):
            owner.setdefault(attribute, group)
    return owner


def kinds_by_link_type() -> dict[str, Kind]:
    return {k.link_type: k for k in interface_kinds() if k.link_type}


def kinds_by_defining_attribute() -> dict[str, Kind]:
    return {a: k for k in interface_kinds() for a in k.defining_attributes}


def kind_claiming_name(name: str) -> Kind | None:
    for k in interface_kinds():
        if k.claims_name(name):
            return k
    return None

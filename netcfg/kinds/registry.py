"""Finds kinds and traits by name, and infers an interface's kind.

Adding a kind means adding a module in netcfg/kinds and its schema file,
then naming the module in KIND_MODULES; nothing else changes.
"""

from __future__ import annotations

import importlib
from functools import cache

from netcfg.kinds.base import Kind, Trait, declared_immutables
from netcfg.model.model import IFACE
from netcfg.spec import group_attributes

KIND_MODULES = (
    "loopback", "physical", "dummy", "veth", "vlan", "bridge", "bond", "vxlan",
    "vrf", "macvlan", "ipvlan", "netns", "volume", "target", "wireguard", "ovs",
    "tunnel", "tunnel_gre", "tunnel_gretap", "tunnel_ipip", "tunnel_sit", "tunnel_vti",
    "tunnel_ip6gre", "tunnel_ip6gretap", "tunnel_ip6tnl", "tunnel_vti6", "batadv",
)
TRAIT_MODULES = ("common", "bridge_port", "batadv_hardif")


@cache
def _load() -> tuple[dict[str, Kind], dict[str, Trait]]:
    kinds: dict[str, Kind] = {}
    for module in KIND_MODULES:
        kind = importlib.import_module(f"netcfg.kinds.{module}").KIND
        declared = declared_immutables(kind.name) if kind.section == IFACE else frozenset()
        if not declared <= kind.immutable_attributes:
            kind.immutable_attributes = kind.immutable_attributes | declared
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
def hooks_overriding(kind_name: str, method: str) -> tuple[Trait, ...]:
    """hooks_for(kind_name), less those that keep Trait's do-nothing `method`.

    The compiler calls hooks once per object; at 200k objects, skipping the
    no-op calls is a large part of its time.
    """
    default = getattr(Trait, method)
    return tuple(h for h in hooks_for(kind_name) if getattr(type(h), method) is not default)


@cache
def attribute_owner() -> dict[str, str]:
    """Attribute name -> the group (kind or trait) that defines it."""
    owner: dict[str, str] = {}
    for group in [*(k.name for k in kinds()), *(t.name for t in _load()[1].values())]:
        for attribute in group_attributes(group):
            owner.setdefault(attribute, group)
    return owner


def kinds_by_link_type() -> dict[str, Kind]:
    return {k.link_type: k for k in interface_kinds() if k.link_type}


def kinds_by_defining_attribute() -> dict[str, Kind]:
    return {a: k for k in interface_kinds() for a in k.defining_attributes}


@cache
def _name_claimers() -> tuple[Kind, ...]:
    """Kinds that override claims_name: asked for every undeclared port name."""
    return tuple(k for k in interface_kinds() if type(k).claims_name is not Kind.claims_name)


def kind_claiming_name(name: str) -> Kind | None:
    for k in _name_claimers():
        if k.claims_name(name):
            return k
    return None


def implied_by_name(name: str, netns: str, loc, auto: bool):
    """The implied object of the kind that claims this name, or None."""
    for k in _name_claimers():
        obj = k.implied_by_name(name, netns, loc, auto)
        if obj is not None:
            return obj
    return None

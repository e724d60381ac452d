"""The interface every object kind implements (STYLE.md 4).

A kind owns its attributes (a schema file under schemas/kinds/), how it is
recognised in a stanza, what it refers to, its semantic checks, and what
the planner needs to create it. The compiler and planner only ever call
these hooks through the registry; they never test for a particular kind.

Traits are attribute groups shared by several kinds (``common``: addresses,
mtu, routes...; ``bridge-port``: per-port VLAN settings). They implement the
same hooks and run for every object whose kind lists them.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Iterator, NamedTuple

from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.spec import INFO, kernel_mappings

if TYPE_CHECKING:
    from netcfg.model.errors import Report

# Roles of a reference. Structural roles define which device sits on which;
# they are the edges of the dependency graph and of cycle detection.
LOWER = "lower"      # vlan-raw-device, macvlan lower: referent must exist first
PORT = "port"        # bridge-ports: referent becomes a port of this bridge
SLAVE = "slave"      # bond-slaves: referent becomes a slave of this bond
MASTER = "master"    # `vrf NAME` on a member: this object's master is the referent
PEER = "peer"        # veth peer
ROUTE_DEV = "route-dev"
REQUIRES = "requires"  # ifupdown-ng's `requires`: brought up first, not enslaved
VOLUME_REF = "volume"
NETNS_REF = "netns"

# A device enslaved through one of these roles gets the referrer as its master.
ENSLAVING_ROLES = (PORT, SLAVE)
STRUCTURAL_ROLES = (LOWER, PORT, SLAVE, MASTER)


class Reference(NamedTuple):
    """``obj.attribute`` names another object (section, netns, name).

    A NamedTuple rather than a frozen dataclass: a big switch config makes
    ~600k of these, and tuples are several times cheaper to build.
    """

    attribute: str
    role: str
    section: str
    netns: str
    name: str
    loc: SourceLocation


class Trait:
    """Hooks shared by kinds and traits. Every hook has a do-nothing default."""

    name: str = ""

    def complete(self, obj: ConfigObject, report: "Report") -> None:
        """Fill attributes derived from others (e.g. vlan id from ``swp1.100``)."""

    def references(self, obj: ConfigObject) -> Iterable[Reference]:
        """Objects this one names; the compiler checks they exist."""
        return ()

    def implied(self, obj: ConfigObject, model: Model) -> Iterable[ConfigObject]:
        """Objects this one brings into being when not declared (a veth peer)."""
        return ()

    def check(self, obj: ConfigObject, model: Model, report: "Report") -> None:
        """Semantic checks beyond what the schema can say, of a declared object.

        Implied objects (a VLAN named in bridge-ports, a veth peer) are made
        from declared ones and are not passed here; a kind that must look at
        them does so in check_model."""

    def complete_model(self, model: Model, report: "Report") -> None:
        """Once per kind/trait, after every object's complete(): work that needs
        all objects of the kind at once (allocating VRF tables)."""

    def check_model(self, model: Model, report: "Report") -> None:
        """Once per kind/trait, after per-object checks: checks across objects
        (the same address on two interfaces)."""


class Kind(Trait):
    """An object kind: an interface kind, or netns/volume/target."""

    section: str = IFACE
    # Value of `link-type` that selects this kind (ifupdown2: dummy, veth).
    link_type: str | None = None
    # Attributes whose presence selects this kind (bridge-ports -> bridge).
    defining_attributes: tuple[str, ...] = ()
    # Trait groups accepted besides the kind's own schema file.
    traits: tuple[str, ...] = ("common", "bridge-port", "batadv-hardif")
    # False for devices netcfg configures but never creates or deletes.
    creatable: bool = True
    # Up though no auto line names it: the loopback, which systemd brings up at
    # boot and ifupdown2 never takes down ("cannot bring loopback interface down").
    up_without_auto: bool = False
    # A change to one of these means delete and re-create the device; the
    # registry adds those the schema declares "mutable": false.
    immutable_attributes: frozenset[str] = frozenset()
    # Netlink IFLA_INFO_KIND, for reading back (netcfg/kernel).
    info_kind: str | None = None
    # The kernel module that registers the kind, when loading it makes
    # devices of its own (a tunnel module's fallback device in every
    # namespace, dummy's dummy0, bonding's bond0): apply loads it before it
    # reads the kernel (netcfg/kernel/modules.py), not in the middle of a batch.
    module_with_devices: str | None = None
    # The attributes naming the device the kernel's IFLA_LINK points to and
    # its namespace (a veth's peer, a vlan's lower device), for reading back.
    link_attributes: tuple[str, str] | None = None
    # Rough kernel memory of one device of this kind in bytes, from the slab
    # measurements in DESIGN.md; used to report what lowering saves.
    kernel_bytes: int = 40_000

    def attribute_groups(self) -> tuple[str, ...]:
        return (self.name, *self.traits)

    def claims_name(self, name: str) -> bool:
        """True when the name alone says it is this kind (``lo``, ``swp1.100``)."""
        return False

    def implied_by_name(self, name: str, netns: str, loc: SourceLocation,
                        auto: bool) -> ConfigObject | None:
        """The object an undeclared name stands for when a bridge, bond or
        VLAN names it (ifupdown2 creates ``swp1.100`` from bridge-ports), or
        None when this kind does not claim the name. Returned complete:
        kinds whose complete() derives attributes from the name fill them in
        here, once, for what may be 200k objects."""
        if not self.claims_name(name):
            return None
        return self.make_implied(name, netns, loc, auto)

    def make_implied(self, name: str, netns: str, loc: SourceLocation, auto: bool) -> ConfigObject:
        return ConfigObject(section=self.section, name=name, kind=self.name, netns=netns,
                            loc=loc, auto=auto, implicit=True)

    def create_params(self, obj: ConfigObject) -> dict[str, Any]:
        """What the planner puts into this device's create operation: by
        default the kind's declared IFLA_INFO_DATA attributes the config
        writes (declared_params)."""
        return declared_params(obj, self.name)

    def read_back(self, attrs: dict[str, Any], notes: list[str], name: str) -> None:
        """Adjust the attributes of one device read from the kernel (decoded
        by the schema's declarations, netcfg/netlink/read_parse.py) where no
        table can say: drop what has no meaning, note what has no spelling."""


def declared_params(obj: ConfigObject, group: str, skip: Iterable[str] = ()) -> dict[str, Any]:
    """{param: value} of the group's declared IFLA_INFO_DATA attributes that
    ``obj`` writes and a create request carries, in schema order."""
    attrs = obj.attrs
    return {param: attrs[attribute] for attribute, param in _create_mappings(group)
            if attribute in attrs and attribute not in skip}


@cache
def _create_mappings(group: str) -> tuple[tuple[str, str], ...]:
    # Once per kind: a big config creates 4094 bridges.
    return tuple((m.attribute, m.param) for m in kernel_mappings(group)
                 if m.place == INFO and m.at_create)


def declared_immutables(group: str) -> frozenset[str]:
    """The group's attributes declared ``"mutable": false`` (a change re-creates)."""
    return frozenset(m.attribute for m in kernel_mappings(group) if not m.mutable)


def drop_own_netns(obj: ConfigObject, attribute: str) -> None:
    """Canonical form of veth-peer-netns / vlan-raw-netns / macvlan-raw-netns:
    left out when it names the device's own namespace. Read-back state leaves
    it out there too, so the two compare equal whichever way it was written."""
    if attribute in obj.attrs and obj.attrs[attribute] == obj.netns:
        del obj.attrs[attribute]
        obj.locs.pop(attribute, None)


def repeated(objects: Iterable[ConfigObject], key: Callable[[ConfigObject], Hashable]
             ) -> Iterator[tuple[ConfigObject, ConfigObject]]:
    """(object, first) for each object whose ``key`` an object written before
    it has already (the same nsid, backing file or ublk id): the error goes
    on the later one, naming the first."""
    seen: dict[Hashable, ConfigObject] = {}
    for obj in sorted(objects, key=lambda o: o.loc):
        first = seen.setdefault(key(obj), obj)
        if first is not obj:
            yield obj, first


def iter_names(value: Any) -> Iterator[str]:
    """Names in a list attribute, tolerating a missing one."""
    if value:
        yield from value

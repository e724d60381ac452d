"""Planner: order operations into batches (STYLE.md 5: ordering is data).

``build_plan(ops)`` drops removals that a bigger removal implies, links each
operation to the ones it needs first (ADDITION_RULES and REMOVAL_RULES
below), and lays the graph out in layers: every operation of a batch can be
sent at once, and a batch only needs the batches before it. Removals come in batches of their
own before any addition, so a re-created device is first deleted, an
address moved between devices first removed, and so on.

Pure data in, pure data out; linear in the number of operations apart from
sorting each batch (every relation is a dict lookup).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from netcfg.model.model import ROOT_NETNS, Model
from netcfg.plan.diff import (LOWER_NETNS_PARAM, LOWER_PARAM, PEER_NETNS_PARAM, PEER_PARAM,
                              PORT_SUBJECT)
from netcfg.plan.graph import CycleError, layered_order
from netcfg.plan.ops import FDB_ADD, FDB_DEL
from netcfg.plan.ops import (ACTIONS, ADDR_ADD, ADDR_DEL, LINK_ADD, LINK_DEL, LINK_DOWN, LINK_SET,
                             LINK_UP, MASTER_SET, MASTER_UNSET, NETNS_ADD, NETNS_DEL, OVS_ADD,
                             OVS_DEL, OVS_SET, REMOVALS, is_removal,
                             ROUTE_ADD, ROUTE_DEL, VLAN_ADD, VLAN_DEL, VLAN_TUNNEL_ADD,
                             VLAN_TUNNEL_DEL, VNI_ADD, VNI_DEL, Operation)

Key = tuple[str, str]
Relation = Callable[[Operation], Iterable[Key]]

ACTION_INDEX = {action: i for i, action in enumerate(ACTIONS)}
ADDITIONS = tuple(a for a in ACTIONS if a not in REMOVALS)


# ---------------------------------------------------------------- relations
# Each maps an operation to the devices (netns, name) it relates to. A
# namespace is the device (ROOT_NETNS, name), as its netns-add/-del names it.

def same_device(op: Operation) -> Iterable[Key]:
    return ((op.netns, op.name),)


def own_namespace(op: Operation) -> Iterable[Key]:
    return ((ROOT_NETNS, op.netns),) if op.netns != ROOT_NETNS else ()


def peer_namespace(op: Operation) -> Iterable[Key]:
    netns = op.params.get(PEER_NETNS_PARAM)
    return ((ROOT_NETNS, netns),) if netns and netns != op.netns else ()


def lower_device(op: Operation) -> Iterable[Key]:
    lower = op.params.get(LOWER_PARAM)
    return ((op.params.get(LOWER_NETNS_PARAM, op.netns), lower),) if lower else ()


def master_device(op: Operation) -> Iterable[Key]:
    master = op.params.get("master")
    return ((op.netns, master),) if master else ()


def vrf_device(op: Operation) -> Iterable[Key]:
    vrf = op.params.get("vrf")
    return ((op.netns, vrf),) if vrf else ()


def gateway_device(op: Operation) -> Iterable[Key]:
    """A route through a gateway: the device it goes out of, whose routes
    without a gateway may be what reaches the gateway."""
    return same_device(op) if op.params.get("via") else ()


def is_device_route(op: Operation) -> bool:
    return not op.params.get("via")


def link_settings(op: Operation) -> Iterable[Key]:
    """A link-set of link attributes (mtu, addr-gen-mode...): set them before
    the device is enslaved."""
    return same_device(op) if op.subject != PORT_SUBJECT else ()


def port_settings(op: Operation) -> Iterable[Key]:
    """A link-set of bridge-port attributes: only possible once enslaved."""
    return same_device(op) if op.subject == PORT_SUBJECT else ()


# ---------------------------------------------------------------- the rules

AFTER, BEFORE = "after", "before"


@dataclass(frozen=True, slots=True)
class Rule:
    """``dependent`` operations come after ``prerequisite`` operations on the
    devices that ``relation`` names. With ``applies_to`` AFTER the relation is
    applied to the dependent (what does it need?); with BEFORE it is applied
    to the prerequisite (what must wait for it?)."""

    dependent: str
    prerequisite: str
    relation: Relation
    applies_to: str = AFTER
    # Only prerequisites this accepts count (None: all of the action's).
    only: Callable[[Operation], bool] | None = None


def _rules(dependents: Iterable[str], prerequisites: Iterable[str], relation: Relation,
           applies_to: str = AFTER) -> list[Rule]:
    return [Rule(d, p, relation, applies_to) for d in dependents for p in prerequisites]


ADDITION_RULES: tuple[Rule, ...] = (
    # Everything in a namespace after the namespace; a veth also after the
    # namespace its peer is created straight into.
    *_rules([a for a in ADDITIONS if a != NETNS_ADD], [NETNS_ADD], own_namespace),
    Rule(LINK_ADD, NETNS_ADD, peer_namespace),
    # A vlan or macvlan after the device it sits on.
    Rule(LINK_ADD, LINK_ADD, lower_device),
    # Link attributes before enslaving; port attributes after.
    Rule(LINK_SET, LINK_ADD, same_device),
    Rule(MASTER_SET, LINK_SET, link_settings, BEFORE),
    Rule(LINK_SET, MASTER_SET, port_settings),
    # A master's link attributes once its members are in: a bridge's MTU
    # written before would be replaced by its smallest port's (the kernel's
    # br_mtu_auto_adjust), one written after is kept.
    Rule(LINK_SET, MASTER_SET, master_device, BEFORE),
    # A vlan or macvlan may not be bigger than its lower device (EINVAL):
    # the lower device's new MTU first.
    Rule(LINK_ADD, LINK_SET, lower_device),
    # Enslave once both exist.
    Rule(MASTER_SET, LINK_ADD, same_device),
    Rule(MASTER_SET, LINK_ADD, master_device),
    # Port VLANs once it is a port; VNIs once the vxlan exists.
    *_rules([VLAN_ADD], [LINK_ADD, MASTER_SET], same_device),
    # What a port got by joining, taken away once it has joined (ops.JOINING).
    *_rules([VLAN_DEL], [LINK_ADD, MASTER_SET], same_device),
    Rule(VNI_ADD, LINK_ADD, same_device),
    # A VLAN-to-VNI mapping needs its VLAN on the port (the kernel answers
    # EINVAL otherwise), the port's vlan_tunnel flag (a port link-set; EINVAL
    # too), and its VNI in the vnifilter (else the mapped traffic is dropped).
    *_rules([VLAN_TUNNEL_ADD], [LINK_ADD, MASTER_SET, VLAN_ADD, VNI_ADD], same_device),
    Rule(VLAN_TUNNEL_ADD, LINK_SET, port_settings),
    # A vxlan's remotes once it exists, with its svcnodeip (link-set).
    *_rules([FDB_ADD], [LINK_ADD, LINK_SET], same_device),
    # Enslaving to a VRF cycles the device: addresses after it.
    *_rules([ADDR_ADD], [LINK_ADD, MASTER_SET], same_device),
    # Up last: addr-gen-mode and ports' VLANs must be in place first
    # (IPv6 autoconf on hundreds of ports floods the bridge, DESIGN.md).
    *_rules([LINK_UP], [LINK_ADD, LINK_SET, MASTER_SET, VLAN_ADD, VLAN_DEL, VNI_ADD,
                        VLAN_TUNNEL_ADD],
            same_device),
    # The kernel refuses a gateway that is not reachable on an up link.
    *_rules([ROUTE_ADD], [LINK_ADD, MASTER_SET, ADDR_ADD, LINK_UP], same_device),
    *_rules([ROUTE_ADD], [LINK_ADD, LINK_UP], vrf_device),
    # A gateway the kernel reaches through a route without one (`route
    # 10.7.0.0/24 dev eth0` for `via 10.7.0.1`): that route first.
    Rule(ROUTE_ADD, ROUTE_ADD, gateway_device, only=is_device_route),
    # ovs-vswitchd makes an OVS bridge's or internal port's device once its
    # row is in: what netlink does to that device comes after (an OVSPort's
    # device is there already; its rtnetlink ops may wait all the same).
    *_rules([LINK_SET, MASTER_SET, VLAN_ADD, ADDR_ADD, LINK_UP, ROUTE_ADD], [OVS_ADD, OVS_SET],
            same_device),
)

REMOVAL_RULES: tuple[Rule, ...] = (
    # Routes first: an address or an up link may be what makes the gateway
    # reachable; the kernel flushes routes itself when the link goes down.
    Rule(ADDR_DEL, ROUTE_DEL, same_device),
    # A VLAN-to-VNI mapping before its VLAN and its VNI: the reverse of adding.
    *_rules([VLAN_DEL, VNI_DEL], [VLAN_TUNNEL_DEL], same_device),
    # Releasing from a VRF cycles the device.
    *_rules([MASTER_UNSET], [ROUTE_DEL, ADDR_DEL, VLAN_TUNNEL_DEL, VLAN_DEL], same_device),
    *_rules([LINK_DOWN], [ROUTE_DEL, ADDR_DEL, VLAN_TUNNEL_DEL, VLAN_DEL, VNI_DEL, MASTER_UNSET],
            same_device),
    # A master after its ports are released, a VRF after its routes, a lower
    # device after the devices on it.
    Rule(LINK_DEL, MASTER_UNSET, master_device, BEFORE),
    Rule(LINK_DEL, ROUTE_DEL, vrf_device, BEFORE),
    Rule(LINK_DEL, LINK_DEL, lower_device, BEFORE),
    # An OVS row last of what happens to its device: removing an internal
    # port's row removes the device.
    *_rules([OVS_DEL], [ROUTE_DEL, ADDR_DEL, VLAN_DEL, MASTER_UNSET, LINK_DOWN], same_device),
    # A device netcfg deletes leaves OVS first (ovs-vswitchd would keep its row).
    Rule(LINK_DEL, OVS_DEL, same_device),
    # A namespace last; deleting it would take a veth's other end with it.
    Rule(NETNS_DEL, LINK_DEL, peer_namespace, BEFORE),
    *_rules([NETNS_DEL], [a for a in REMOVALS if a != NETNS_DEL], own_namespace, BEFORE),
)

# Removals the kernel does by itself when it deletes the device.
IMPLIED_BY_LINK_DEL = frozenset({ROUTE_DEL, ADDR_DEL, FDB_DEL, VLAN_TUNNEL_DEL, VLAN_DEL,
                                 VNI_DEL,
                                 MASTER_UNSET, LINK_DOWN})


# ---------------------------------------------------------------- the plan

@dataclass
class Plan:
    """Batches of operations: each batch only needs the ones before it."""

    batches: list[list[Operation]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Filled by the lowering report (plan/lowering.py): what lowering did.
    lowering: Any = None
    # Each batch sequence (removals, additions) with its (prerequisite,
    # dependent) index pairs; see dependencies().
    graphs: list[tuple[list[Operation], list[tuple[int, int]]]] = field(
        default_factory=list, repr=False)

    @property
    def operations(self) -> list[Operation]:
        return [op for batch in self.batches for op in batch]

    def dependencies(self) -> list[tuple[Operation, Operation]]:
        """(prerequisite, dependent) pairs: why each operation sits where it does."""
        return sorted(((ops[b], ops[a]) for ops, edges in self.graphs for b, a in edges),
                      key=lambda pair: (sort_key(pair[0]), sort_key(pair[1])))

    def __len__(self) -> int:
        return sum(len(batch) for batch in self.batches)

    def to_text(self) -> str:
        lines: list[str] = [f"plan: {len(self)} operations in {len(self.batches)} batches"]
        if self.lowering is not None:
            lines.extend(self.lowering.to_text())
        for number, batch in enumerate(self.batches, 1):
            lines.append(f"batch {number} ({len(batch)} ops):")
            lines.extend(f"  {op.describe()}" for op in batch)
        if not self.batches:
            lines.append("nothing to do")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "batches": [[op.to_json() for op in batch] for batch in self.batches],
            "operations": len(self),
            "notes": list(self.notes),
        }
        if self.lowering is not None:
            out["lowering"] = (self.lowering.to_json() if hasattr(self.lowering, "to_json")
                               else self.lowering)
        return out

    def to_dot(self) -> str:
        """Graphviz: operations, their dependencies, one rank per batch."""
        # "/" is in neither interface nor namespace names: ids cannot clash.
        ids = {op.key: _dot_quote(f"{op.action} {op.netns}/{op.name}"
                                  + (f" {op.subject}" if op.subject else ""))
               for op in self.operations}
        lines = ["digraph plan {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
        for number, batch in enumerate(self.batches, 1):
            lines.append(f"  subgraph {_dot_quote(f'batch {number}')} {{")
            lines.append("    rank=same;")
            for op in batch:
                lines.append(f"    {ids[op.key]} [label={_dot_quote(op.describe())}];")
            lines.append("  }")
        for before, after in self.dependencies():
            lines.append(f"  {ids[before.key]} -> {ids[after.key]};")
        lines.append("}")
        return "\n".join(lines) + "\n"


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sort_key(op: Operation) -> tuple[int, str, str, str]:
    """Order inside a batch: by action (ops.ACTIONS), then object, then subject."""
    return (ACTION_INDEX[op.action], op.netns, op.name, op.subject)


def requires_order(model: Model) -> dict[Key, list[Key]]:
    """{interface: the interfaces it requires} of ``model``: ifupdown-ng's
    `requires` lines (schemas/kinds/common.json), in the interface's namespace."""
    return {key: [(key[0], name) for name in obj.attrs["requires"]]
            for key, obj in model.interfaces.items() if obj.attrs.get("requires")}


# ifupdown-ng brings what an interface requires up (create, pre-up, up) before
# the interface itself (libifupdown/lifecycle.c). The same in a plan: a device
# is created after the devices it requires are created, and set up after they
# are set up. Not "created after they are up": a bridge that requires its
# port (ifupdown-ng's `use bridge` + `requires bond0`) must exist before the
# port joins it, and a port joins before it is set up.
REQUIRES_ACTIONS = (LINK_ADD, LINK_UP)


def _requires_edges(ops: list[Operation], requires: Mapping[Key, list[Key]]
                    ) -> list[tuple[int, int]]:
    """(prerequisite, dependent) index pairs that ``requires`` gives over ``ops``."""
    at: dict[tuple[str, str, str], list[int]] = {}
    for i, op in enumerate(ops):
        if op.action in REQUIRES_ACTIONS:
            at.setdefault((op.action, op.netns, op.name), []).append(i)
    edges = []
    for (action, netns, name), dependents in at.items():
        for needed in requires.get((netns, name), ()):
            for j in at.get((action, *needed), ()):
                edges.extend((j, i) for i in dependents if i != j)
    return edges


def build_plan(ops: Iterable[Operation], requires: Mapping[Key, list[Key]] | None = None
               ) -> Plan:
    """Order ``ops`` into batches: removals first, then additions.
    ``requires``: requires_order() of the wanted model (ifupdown-ng's
    `requires`), which orders additions besides the rules."""
    unique = list({op.key: op for op in ops}.values())
    kept = drop_implied(unique)
    notes = []
    if len(kept) < len(unique):
        notes.append(f"{len(unique) - len(kept)} removals left to the kernel: it does them "
                     f"when it deletes the device or namespace")
    removals = [op for op in kept if is_removal(op)]
    additions = [op for op in kept if not is_removal(op)]
    plan = Plan(notes=notes)
    for group, rules in ((removals, REMOVAL_RULES), (additions, ADDITION_RULES)):
        edges = dependencies(group, rules)
        if requires and group is additions:
            edges = list({*edges, *_requires_edges(group, requires)})
        deps: dict[int, list[int]] = {}
        for before, after in edges:
            deps.setdefault(after, []).append(before)
        keys = [sort_key(op) for op in group]
        try:
            layers = layered_order(range(len(group)), deps, key=keys.__getitem__)
        except CycleError as error:
            raise CycleError([group[i] for i in error.cycle]) from None
        for layer in layers:
            plan.batches.append([group[i] for i in layer])
        plan.graphs.append((group, edges))
    return plan


def drop_implied(ops: list[Operation]) -> list[Operation]:
    """Leave out removals that deleting a device or namespace already does."""
    deleted_links = set()
    for op in ops:
        if op.action == LINK_DEL:
            deleted_links.add((op.netns, op.name))
            if op.params.get(PEER_PARAM):  # a veth takes its other end with it
                deleted_links.add((op.params.get(PEER_NETNS_PARAM, op.netns),
                                   op.params[PEER_PARAM]))
    deleted_netns = {op.name for op in ops if op.action == NETNS_DEL}
    if not deleted_links and not deleted_netns:
        return ops
    return [op for op in ops if not (
        op.action in REMOVALS and op.action != NETNS_DEL and op.netns in deleted_netns
        or op.action in IMPLIED_BY_LINK_DEL and (op.netns, op.name) in deleted_links)]


def dependencies(ops: list[Operation], rules: Iterable[Rule]) -> list[tuple[int, int]]:
    """(prerequisite, dependent) index pairs that ``rules`` give over ``ops``."""
    by_action: dict[str, list[int]] = {}
    on_device: dict[tuple[str, str, str], list[int]] = {}
    for i, op in enumerate(ops):
        by_action.setdefault(op.action, []).append(i)
        on_device.setdefault((op.action, op.netns, op.name), []).append(i)
        # One link-add creates both ends of a veth: the far end's operations
        # wait for it as they would for their own link-add.
        peer = op.params.get(PEER_PARAM) if op.action in (LINK_ADD, LINK_DEL) else None
        if peer:
            far = (op.action, op.params.get(PEER_NETNS_PARAM, op.netns), peer)
            on_device.setdefault(far, []).append(i)
    edges: set[tuple[int, int]] = set()
    for rule in rules:
        if rule.dependent not in by_action or rule.prerequisite not in by_action:
            continue
        after = rule.applies_to == AFTER
        # The relation runs on `source` operations and names devices whose
        # `target` operations are on the other end of the edge.
        source, target = ((rule.dependent, rule.prerequisite) if after
                          else (rule.prerequisite, rule.dependent))
        only = rule.only
        for i in by_action.get(source, ()):
            if only is not None and not after and not only(ops[i]):
                continue
            for netns, name in rule.relation(ops[i]):
                for j in on_device.get((target, netns, name), ()):
                    if i != j and (only is None or not after or only(ops[j])):
                        edges.add((j, i) if after else (i, j))
    return list(edges)

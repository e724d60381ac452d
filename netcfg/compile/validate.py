"""Semantic validation: the checks that need more than one object at a time.

Runs after the builder has typed every attribute (schema checks are done by
then). In order: each kind completes its objects (derived attributes), kinds
add the objects they imply (veth peers), references are resolved (creating
the VLAN subinterfaces and physical ports that ifupdown2 files name without
declaring), the master index is built, cycles are found, then every kind and
trait runs its checks. The same function finishes models read from JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from netcfg.compile.build import PerPort
from netcfg.compile.ng_dialect import requires_loops
from netcfg.kinds import registry
from netcfg.kinds.bridge_port import PORT_OPTIONS
from netcfg.kinds.base import (ENSLAVING_ROLES, LOWER, MASTER, REQUIRES, STRUCTURAL_ROLES,
                               Reference)
from netcfg.model.errors import Report, did_you_mean
from netcfg.model.model import IFACE, NETNS, ROOT_NETNS, VOLUME, ConfigObject, Model
from netcfg.plan.graph import find_cycle
from netcfg.plan.hooks import PHASES

PHYSICAL = "physical"  # what an undeclared, unclaimed port name in the host namespace is
# Roles under which an undeclared interface may be implied rather than an error
# (ifupdown-ng's `requires` of a name with no stanza: its link executor brings
# that device up).
_IMPLYING_ROLES = (LOWER, *ENSLAVING_ROLES, REQUIRES)


def finish_model(model: Model, report: Report, *, requests: bool = True) -> Model:
    """``requests=False`` for a model of state (`plan --current FILE`, as
    `show -o json` printed it): what the kernel has is not a request it could
    refuse, so the kinds' checks (what `check` refuses) do not run; the
    model is completed and its references and masters resolved as always."""
    hooks = registry.hooks_overriding
    for obj in list(model.objects()):
        _complete(obj, report)
    for trait in _used_hooks(model):
        trait.complete_model(model, report)
    for obj in list(model.objects()):
        for hook in hooks(obj.kind, "implied"):
            for implied in hook.implied(obj, model):
                if implied.key not in model.interfaces:
                    _complete(implied, report)
                    model.interfaces[implied.key] = implied
    _imply_namespaces(model)
    edges, needs = _resolve_references(model, report)
    _report_cycles(model, edges, report)
    requires_loops(model, report)
    found = _Inventory.of(model)
    _bridge_port_forms(model, found, report)
    if not requests:
        return model
    _no_address_on_a_port(model, report)
    _bring_up_dependencies(model, needs, found.declared, report)
    _say_imperative_lines(found.declared, report)
    for obj in found.declared:
        # Implied objects are derived from declared ones: kinds check those
        # (check_model).
        for hook in hooks(obj.kind, "check"):
            hook.check(obj, model, report)
    for trait in _used_hooks(model, found.kinds):
        trait.check_model(model, report)
    return model


# Masters whose ports' own addresses ifupdown2 ignores (VRF slaves keep theirs).
_PORT_MASTERS = ("bridge", "bond")


def _no_address_on_a_port(model: Model, report: Report) -> None:
    """A bridge port's or a bond slave's own `address`, `gateway` and DHCP are
    ignored, with a warning at the line, as ifupdown2 ignores them
    (ifupdown/utils.py is_addr_ip_allowed_on: "ignoring ip address. Assigning
    an IP address is not allowed on enslaved interfaces", for its address and
    dhcp addons): frames for the port's addresses reach its master, not the
    port, and a DHCP client on the port would route the host out of the port
    beside its bridge (a Proxmox host's `iface eno1 inet dhcp` under vmbr0)."""
    for key, master_key in model.masters.items():
        master = model.interfaces.get(master_key)
        obj = model.interfaces.get(key)
        if master is None or obj is None or obj.implicit or master.kind not in _PORT_MASTERS \
                or not master.auto:
            continue    # (a master no auto line brings up: ifupdown 0.8 leaves the port alone)
        role = "port" if master.kind == "bridge" else "slave"
        why = (f"{obj.label()} is a {role} of {master.label()}: frames for its own addresses "
               f"reach {master.label()}, not it (ifupdown2 ignores it too: 'Assigning an IP "
               f"address is not allowed on enslaved interfaces'); give {master.label()} the "
               f"address")
        for attr in ("address", "gateway"):
            if obj.attrs.get(attr):
                report.warning(obj.where(attr), f"{attr} {' '.join(map(str, obj.attrs[attr]))} "
                               f"ignored: {why}", attr)
                del obj.attrs[attr]
        for family in ("inet", "inet6"):
            if obj.attrs.get(family) == "dhcp":
                report.warning(obj.where(family), f"{family} dhcp ignored (no DHCP client runs "
                               f"on it): {why}", family)
                obj.attrs[family] = "manual"


@dataclass
class _Inventory:
    """What the passes after reference resolution look for, found in one
    walk over every object: a 4094-VLAN switch has 200k, and each further
    walk over them costs ~8 ms. Nothing after the walk adds an object or
    changes one's kind or implicitness."""

    declared: list[ConfigObject]   # not implicit, in model.objects() order
    bridges: list[ConfigObject]
    vxlans: list[ConfigObject]
    kinds: set[str]

    @classmethod
    def of(cls, model: Model) -> _Inventory:
        found = cls([], [], [], set())
        declared, kinds = found.declared, found.kinds
        for obj in model.objects():
            kind = obj.kind
            if kind not in kinds:
                kinds.add(kind)
            if not obj.implicit:
                declared.append(obj)
            if kind == "bridge":
                found.bridges.append(obj)
            elif kind == "vxlan":
                found.vxlans.append(obj)
        return found


def _bridge_port_forms(model: Model, found: _Inventory, report: Report) -> None:
    """A port option written on the bridge sets it on the ports, as ifupdown2
    does (addons/bridge.py _apply_bridge_port_settings_all): `bridge-learning
    off` on the bridge for every port that does not write its own, `bridge-
    learning swp1=off` (the builder's PerPort) for the ports named. After
    this the ports hold the values exactly as if their stanzas wrote them
    (one model: the same checks, diff and read-back), and the bridge none."""
    for bridge in found.bridges:
        written = [a for a in PORT_OPTIONS if a in bridge.attrs]
        if not written:
            continue
        ports = [model.interfaces.get((bridge.netns, name))
                 for name in bridge.attrs.get("bridge-ports", ())]
        for attribute in written:
            value, loc = bridge.attrs.pop(attribute), bridge.locs.pop(attribute, bridge.loc)
            if not isinstance(value, PerPort):
                for port in ports:
                    if port is not None and attribute not in port.attrs:
                        port.attrs[attribute], port.locs[attribute] = value, loc
                continue
            by_name = {p.name: p for p in ports if p is not None}
            for name, port_value in value.items():
                port = by_name.get(name)
                if port is None and name in bridge.attrs.get("bridge-ports", ()):
                    continue   # a port that does not resolve: reported as dangling
                if port is None:
                    listed = " ".join(bridge.attrs.get("bridge-ports", ())) or "none"
                    report.error(loc, f"{bridge.label()}: {attribute} names {name}, which is not "
                                 f"a port of {bridge.name} (bridge-ports: {listed})", attribute)
                    continue
                own = port.attrs.get(attribute)
                if attribute in port.attrs and own != port_value:
                    report.error(loc, f"{bridge.label()}: {attribute} {name}={_text(port_value)} "
                                 f"contradicts {port.name}'s own {attribute} {_text(own)} at "
                                 f"{port.where(attribute)}; give it once", attribute)
                    continue
                if attribute not in port.attrs:
                    port.attrs[attribute], port.locs[attribute] = port_value, loc
    _vxlan_learning_follows_port(model, found.vxlans)
    _vxlan_port_mcrouter(model, found.vxlans)


def _vxlan_learning_follows_port(model: Model, vxlans: list[ConfigObject]) -> None:
    """A VXLAN port's own learning follows its bridge-learning unless the
    file writes vxlan-learning (ifupdown2 addons/bridge.py
    sync_bridge_learning_to_vxlan_brport): `bridge-learning off` on an EVPN
    port also stops the vxlan learning remotes from the data plane.
    ``vxlans``: the model's vxlan interfaces, a few where masters has 200k."""
    for port in vxlans:
        if "bridge-learning" not in port.attrs or VXLAN_LEARNING in port.attrs:
            continue
        master = model.master_of(port)
        if master is not None and master.kind == "bridge":
            port.attrs[VXLAN_LEARNING] = port.attrs["bridge-learning"]
            port.locs[VXLAN_LEARNING] = port.where("bridge-learning")


VXLAN_LEARNING = "vxlan-learning"
PORT_MCROUTER = "bridge-portmcrouter"


def _vxlan_port_mcrouter(model: Model, vxlans: list[ConfigObject]) -> None:
    """A VXLAN port of a snooping bridge is a multicast router port (2,
    always) unless the file writes its bridge-portmcrouter (on the port or
    the bridge), as ifupdown2 sets it (addons/bridge.py, policy
    vxlan_bridge_igmp_snooping_enable_port_mcrouter, on by default): remote
    hosts' IGMP/MLD reports do not cross the tunnel, so snooping would stop
    their groups' traffic at this end. Shared by the vxlans lowering merges
    (plan/lower/common.VXLAN_SHARED)."""
    for port in vxlans:
        if PORT_MCROUTER in port.attrs:
            continue
        master = model.master_of(port)
        if master is not None and master.kind == "bridge" \
                and master.attrs.get("bridge-mcsnoop", True):
            port.attrs[PORT_MCROUTER] = 2


def _text(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def _bring_up_dependencies(model: Model, needs: dict, declared: list[ConfigObject],
                           report: Report) -> None:
    """What an up device needs comes up with it, as ifupdown2's `ifup -a`
    brings up an auto interface's dependencies (its ports, slaves and lower
    device) whether or not they are on an auto line. Proxmox's installer
    writes `iface eno1 inet manual` without `auto eno1` under `auto vmbr0`
    with `bridge-ports eno1`: left down, eno1 cut the host off while apply
    succeeded. A dependency with `link-down yes` stays down, with a warning:
    the operator asked for it, and the device it serves carries nothing.

    ``needs`` is what _resolve_references found while it resolved each
    reference once (interface -> [(reference, target)], the targets that
    were not up then): asking the kinds for 600k references a second time
    cost a fifth of a 4094-VLAN compile. Nothing between the two sets
    `auto`, so a target up then is up now and would be skipped here.
    ``declared``: the model's objects that are not implicit."""
    work = [obj for obj in needs if obj.auto and not obj.attrs.get("link-down")
            and model.interfaces.get(obj.key) is obj]
    if len(work) > 1:
        # In the model's order, as the warnings of one line were always
        # found; needs is mostly empty, so the walk is mostly skipped.
        starting = set(work)
        work = [obj for obj in model.interfaces.values() if obj in starting]
    while work:
        obj = work.pop()
        for ref, target in needs.get(obj, ()):
            down = target.attrs.get("link-down")
            if down and obj.kind == "vlan" and ref.role == LOWER:
                # vlan_dev_open: -ENETDOWN while the real device is down
                # (ifupdown2's `ip link set up` fails on it too).
                report.error(target.where("link-down"),
                             f"{target.label()}: 'link-down yes' keeps it down, and the "
                             f"kernel refuses to bring up a VLAN on a down device (Network "
                             f"is down): {obj.name} ({ref.attribute}, {ref.loc}) is up. Remove "
                             f"'link-down yes', or give {obj.name} 'link-down yes' too",
                             "link-down")
                continue
            if target.auto:
                continue
            if down:
                report.warning(target.where("link-down"),
                               f"{target.label()}: 'link-down yes' keeps it down, and "
                               f"{obj.name} ({ref.attribute}, {ref.loc}) needs it up: "
                               f"{obj.name} will carry no traffic through it",
                               "link-down")
                continue
            target.auto = True
            work.append(target)
    for obj in declared:
        if obj.section == IFACE and not obj.auto and "address" in obj.attrs \
                and not obj.attrs.get("link-down"):
            report.warning(obj.where("address"),
                           f"{obj.label()}: its addresses are set but it stays down: no "
                           f"'auto {obj.name}' line brings it up and no up device needs it. "
                           f"Add 'auto {obj.name}' (ifupdown2's ifup -a would not configure "
                           f"it at all)", "address")


# How the note on imperative lines starts: the ifupdown commands leave it out
# (running them is what ifupdown2's users expect; netcfg/ifupdown/commands.py).
IMPERATIVE_NOTE = "the config has imperative lines"


def _say_imperative_lines(declared: list[ConfigObject], report: Report) -> None:
    """Once per config, not per line: what these lines do, check cannot know.
    Only stanzas hold these lines (the parser's COMMAND_ATTRIBUTES): the
    objects kinds imply carry the attributes their names or declaring
    objects give, so ``declared`` (the objects not implicit) holds every one."""
    lines = sorted((obj.where(phase), obj.name, phase)
                   for obj in declared
                   if obj.section == IFACE and not PHASES.isdisjoint(obj.attrs)
                   for phase in PHASES if phase in obj.attrs)
    if lines:
        names = sorted({name for _, name, _ in lines})
        report.warning(lines[0][0],
                       f"{IMPERATIVE_NOTE} (pre-up, up, post-up, pre-down, down, "
                       f"post-down) on {len(names)} interface(s), first {lines[0][1]}'s "
                       f"{lines[0][2]}: apply runs them as ifupdown2 does, but check cannot "
                       f"know what they do and a revert cannot undo it",
                       lines[0][2])


def _complete(obj: ConfigObject, report: Report) -> None:
    for hook in registry.hooks_overriding(obj.kind, "complete"):
        hook.complete(obj, report)


def _used_hooks(model: Model, kinds: set[str] | None = None) -> list:
    """Every kind and trait used by some object, each once, in a stable order.
    ``kinds``: the kinds of the model's objects, where already known."""
    seen: dict[int, object] = {}
    if kinds is None:
        kinds = {obj.kind for obj in model.objects()}
    for kind in sorted(kinds):
        for hook in registry.hooks_for(kind):
            seen.setdefault(id(hook), hook)
    return list(seen.values())


def _imply_namespaces(model: Model) -> None:
    """Namespaces used by interfaces but not declared get default settings."""
    for obj in list(model.interfaces.values()):
        if obj.netns != ROOT_NETNS and obj.netns not in model.namespaces:
            model.namespaces[obj.netns] = ConfigObject(
                section=NETNS, name=obj.netns, kind=NETNS, loc=obj.where("netns"), implicit=True)


def _resolve_references(model: Model, report: Report) -> tuple[dict, dict]:
    """Check every reference, imply what ifupdown2 would create, build masters.

    Returns the structural edges (object -> objects it sits on or contains)
    for cycle detection, and what _bring_up_dependencies needs: object ->
    [(reference, target)] for each interface it sits on or enslaves that is
    not up (`auto`) yet. Few in a big switch, where the implied ports and
    subinterfaces come up with their bridge; recorded here so that no kind
    is asked for its references twice.
    """
    # The hot loop of a big compile (600k references in a 4094-VLAN switch):
    # locals, no per-reference helper calls on the common paths.
    edges: dict[ConfigObject, list[ConfigObject]] = {}
    needs: dict[ConfigObject, list[tuple[Reference, ConfigObject]]] = {}
    elsewhere: dict[str, list[ConfigObject]] | None = None  # built on first need
    interfaces = model.interfaces
    masters = model.masters
    hooks_of: dict[str, tuple] = {}   # kind -> its references hooks, without a call each
    work = list(model.objects())
    while work:
        obj = work.pop()
        obj_key = (obj.netns, obj.name)   # obj.key without the property call
        out: list[ConfigObject] | None = None
        hooks = hooks_of.get(obj.kind)
        if hooks is None:
            hooks = hooks_of[obj.kind] = registry.hooks_overriding(obj.kind, "references")
        for hook in hooks:
            for ref in hook.references(obj):
                _, role, section, netns, name, _ = ref  # one unpack, not six lookups
                if section == IFACE:
                    key = (netns, name)
                    target = interfaces.get(key)
                else:
                    key = None   # namespaces, volumes, targets: keyed by name, never implied
                    target = model.section(section).get(name)
                if target is None:
                    if elsewhere is None:
                        elsewhere = _tenant_names(model)
                    target = _imply(model, obj, ref, elsewhere, key)
                    if target is None:
                        _report_dangling(model, obj, ref, report, elsewhere)
                        continue
                    work.append(target)
                if section == IFACE and role in _IMPLYING_ROLES and (
                        not target.auto or target.attrs.get("link-down")):
                    needs.setdefault(obj, []).append((ref, target))
                if role not in STRUCTURAL_ROLES:
                    continue
                if out is None:
                    out = edges[obj] = []
                out.append(target)
                if role in ENSLAVING_ROLES:
                    # `key` is the enslaved device's; first master wins, a second is an error.
                    if masters.setdefault(key, obj_key) != obj_key:
                        _report_two_masters(model, target, obj, ref, report)
                elif role == MASTER:
                    if masters.setdefault(obj_key, target.key) != target.key:
                        _report_two_masters(model, obj, target, ref, report)
    return edges, needs


def _tenant_names(model: Model) -> dict[str, list[ConfigObject]]:
    """Interface name -> the objects of that name outside the host namespace."""
    names: dict[str, list[ConfigObject]] = {}
    if model.namespaces:
        for (netns, name), obj in model.interfaces.items():
            if netns != ROOT_NETNS:
                names.setdefault(name, []).append(obj)
    return names


def _imply(model: Model, obj: ConfigObject, ref: Reference,
           elsewhere: dict[str, list[ConfigObject]],
           key: tuple[str, str] | None) -> ConfigObject | None:
    """An undeclared port or lower device: a VLAN subinterface if the name says
    so, a physical port in the host namespace, else nothing (dangling).

    ``key`` is the (ref.netns, ref.name) the caller looked up, and records
    in masters: the implied object is filed under that same tuple, one per
    port instead of two (200k fewer objects for the collector to walk once
    compiling ends, in a 4094-VLAN switch)."""
    if ref.section != IFACE or ref.role not in _IMPLYING_ROLES:
        return None
    implied = registry.implied_by_name(ref.name, ref.netns, ref.loc, obj.auto)
    if implied is None:
        if ref.netns != ROOT_NETNS:
            return None  # tenant namespaces have no physical ports to assume
        if ref.name in elsewhere:
            # The config makes (or configures) a device of that name in another
            # namespace: assuming a host port of the same name hid a config
            # that the kernel refuses at apply ("No such device"). Declaring
            # the host port (`iface NAME`) says it exists.
            return None
        implied = registry.kind(PHYSICAL).make_implied(ref.name, ref.netns, ref.loc, obj.auto)
    model.interfaces[key] = implied
    return implied


def _report_dangling(model: Model, obj: ConfigObject, ref: Reference, report: Report,
                     elsewhere: dict[str, list[ConfigObject]]) -> None:
    if ref.section == IFACE:
        where = f"namespace {ref.netns}" if ref.netns else "the host namespace"
        others = [o for o in elsewhere.get(ref.name, ()) if o.netns != ref.netns]
        host = model.interfaces.get((ROOT_NETNS, ref.name))
        if host is not None and ref.netns != ROOT_NETNS:
            others = [host, *others]
        if others:
            hint = _other_namespace_hint(obj, ref, others)
        else:
            names = [n for ns, n in model.interfaces if ns == ref.netns]
            hint = did_you_mean(ref.name, names)
            if ref.attribute == "vrf" and not hint:
                # ifupdown2 (addons/vrf.py, _up_vrf_slave) makes no VRF that
                # has no stanza: it logs "vrf master ifaceobj NAME not found",
                # its routes into the VRF fail, and ifup exits 1 (issue 22).
                hint = (f"; ifupdown2 fails on it too: it makes no VRF without a stanza "
                        f"('vrf master ifaceobj {ref.name} not found', exit 1). Declare it: "
                        f"'auto {ref.name}', 'iface {ref.name}', 'vrf-table auto'")
        report.error(ref.loc, f"{obj.label()}: {ref.attribute} names {ref.name}, which is not "
                     f"declared in {where}{hint}", ref.attribute)
    else:
        names = list(model.section(ref.section))
        what = "volume" if ref.section == VOLUME else ref.section
        report.error(ref.loc, f"{obj.label()}: {ref.attribute} names {ref.name}, which is not a "
                     f"declared {what}{did_you_mean(ref.name, names)}", ref.attribute)


def _other_namespace_hint(obj: ConfigObject, ref: Reference,
                          others: list[ConfigObject]) -> str:
    """What to write when the name is declared, but in another namespace."""
    first = others[0]
    where = f"namespace {first.netns}" if first.netns else "the host namespace"
    text = f"; {ref.name} is declared in {where} ({first.loc})"
    if ref.role == LOWER and ref.attribute.endswith("-raw-device"):
        attribute = ref.attribute[:-len("device")] + "netns"
        return text + (f": if that is the device meant, write '{attribute} "
                       f"{first.netns or chr(34) * 2}' on {obj.name}")
    if ref.role in ENSLAVING_ROLES or ref.role == MASTER:
        text += ", and a master and its members must share a namespace: move one of them"
    else:
        text += ", and the two must be in one namespace"
    if ref.netns == ROOT_NETNS and ref.role in _IMPLYING_ROLES:
        text += f"; if {ref.name} is a physical port of this host, declare it: 'iface {ref.name}'"
    return text


def _report_two_masters(model: Model, device: ConfigObject, master: ConfigObject,
                        ref: Reference, report: Report) -> None:
    first = model.interfaces[model.masters[device.key]]
    report.error(ref.loc, f"{device.label()} is enslaved to both {first.name} "
                 f"({first.loc}) and {master.name} ({ref.loc}); a device has one master",
                 ref.attribute)


def _report_cycles(model: Model, edges: dict, report: Report) -> None:
    cycle = find_cycle(edges)
    if cycle:
        path = " -> ".join(obj.name for obj in cycle)
        report.error(cycle[0].loc, f"dependency cycle: {path}; a device cannot "
                     f"sit on top of itself")

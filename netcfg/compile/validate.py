"""Semantic validation: the checks that need more than one object at a time.

Runs after the builder has typed every attribute (schema checks are done by
then). In order: each kind completes its objects (derived attributes), kinds
add the objects they imply (veth peers), references are resolved (creating
the VLAN subinterfaces and physical ports that ifupdown2 files name without
declaring), the master index is built, cycles are found, then every kind and
trait runs its checks. The same function finishes models read from JSON.
"""

from __future__ import annotations

from collections import defaultdict

from netcfg.compile.model import IFACE, NETNS, ROOT_NETNS, VOLUME, ConfigObject, Model
from netcfg.errors import Report, did_you_mean
from netcfg.kinds import registry
from netcfg.kinds.base import ENSLAVING_ROLES, LOWER, MASTER, STRUCTURAL_ROLES, Reference
from netcfg.plan.graph import find_cycle

# Roles under which an undeclared interface may be implied rather than an error.
_IMPLYING_ROLES = (LOWER, *ENSLAVING_ROLES)


def finish_model(model: Model, report: Report) -> Model:
    hooks = _HookCache()
    for obj in list(model.objects()):
        hooks.complete(obj, report)
    for trait in hooks.all_used(model):
        trait.complete_model(model, report)
    for obj in list(model.objects()):
        for hook in hooks.of(obj):
            for implied in hook.implied(obj, model):
                if implied.key not in model.interfaces:
                    hooks.complete(implied, report)
                    model.interfaces[implied.key] = implied
    _imply_namespaces(model)
    edges = _resolve_references(model, report, hooks)
    _report_cycles(model, edges, report)
    for obj in model.objects():
        for hook in hooks.of(obj):
            hook.check(obj, model, report)
    for trait in hooks.all_used(model):
        trait.check_model(model, report)
    return model


class _HookCache:
    """The kind and traits whose hooks run for each kind name, looked up once."""

    def __init__(self):
        self._by_kind: dict[str, list] = {}

    def of(self, obj: ConfigObject) -> list:
        hooks = self._by_kind.get(obj.kind)
        if hooks is None:
            hooks = self._by_kind[obj.kind] = registry.hooks_for(obj.kind)
        return hooks

    def complete(self, obj: ConfigObject, report: Report) -> None:
        for hook in self.of(obj):
            hook.complete(obj, report)

    def all_used(self, model: Model) -> list:
        seen: dict[int, object] = {}
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


def _resolve_references(model: Model, report: Report, hooks: _HookCache) -> dict:
    """Check every reference, imply what ifupdown2 would create, build masters.

    Returns the structural edges (object key -> keys it sits on or contains)
    for cycle detection.
    """
    edges: dict[tuple, list[tuple]] = defaultdict(list)
    work = list(model.objects())
    while work:
        obj = work.pop()
        for hook in hooks.of(obj):
            for ref in hook.references(obj):
                target = _lookup(model, ref)
                if target is None:
                    target = _imply(model, obj, ref)
                    if target is None:
                        _report_dangling(model, obj, ref, report)
                        continue
                    hooks.complete(target, report)
                    work.append(target)
                if ref.role in STRUCTURAL_ROLES:
                    edges[_node(obj)].append(_node(target))
                    _record_master(model, obj, target, ref, report)
    return edges


def _node(obj: ConfigObject) -> tuple:
    return (obj.section, obj.netns, obj.name)


def _lookup(model: Model, ref: Reference) -> ConfigObject | None:
    if ref.section == IFACE:
        return model.interfaces.get((ref.netns, ref.name))
    return model.section(ref.section).get(ref.name)


def _imply(model: Model, obj: ConfigObject, ref: Reference) -> ConfigObject | None:
    """An undeclared port or lower device: a VLAN subinterface if the name says
    so, a physical port in the host namespace, else nothing (dangling)."""
    if ref.section != IFACE or ref.role not in _IMPLYING_ROLES:
        return None
    claimed = registry.kind_claiming_name(ref.name)
    if claimed is None and ref.netns != ROOT_NETNS:
        return None  # tenant namespaces have no physical ports to assume
    implied = ConfigObject(section=IFACE, name=ref.name, kind=claimed.name if claimed else "physical",
                           netns=ref.netns, loc=ref.loc, auto=obj.auto, implicit=True)
    model.interfaces[implied.key] = implied
    return implied


def _report_dangling(model: Model, obj: ConfigObject, ref: Reference, report: Report) -> None:
    if ref.section == IFACE:
        names = [n for ns, n in model.interfaces if ns == ref.netns]
        where = f"namespace {ref.netns}" if ref.netns else "the host namespace"
        report.error(ref.loc, f"{obj.label()}: {ref.attribute} names {ref.name}, which is not "
                     f"declared in {where}{did_you_mean(ref.name, names)}", ref.attribute)
    else:
        names = list(model.section(ref.section))
        what = "volume" if ref.section == VOLUME else ref.section
        report.error(ref.loc, f"{obj.label()}: {ref.attribute} names {ref.name}, which is not a "
                     f"declared {what}{did_you_mean(ref.name, names)}", ref.attribute)


def _record_master(model: Model, obj: ConfigObject, target: ConfigObject, ref: Reference,
                   report: Report) -> None:
    if ref.role in ENSLAVING_ROLES:
        device, master = target, obj
    elif ref.role == MASTER:
        device, master = obj, target
    else:
        return
    earlier = model.masters.get(device.key)
    if earlier is None:
        model.masters[device.key] = master.key
    elif earlier != master.key:
        first = model.interfaces[earlier]
        report.error(ref.loc, f"{device.label()} is enslaved to both {first.name} "
                     f"({first.loc}) and {master.name} ({ref.loc}); a device has one master",
                     ref.attribute)


def _report_cycles(model: Model, edges: dict, report: Report) -> None:
    cycle = find_cycle(edges)
    if cycle:
        first = model.interfaces.get((cycle[0][1], cycle[0][2]))
        path = " -> ".join(name for _, _, name in cycle)
        report.error(first.loc if first else None, f"dependency cycle: {path}; a device cannot "
                     f"sit on top of itself")

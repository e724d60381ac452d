"""A VRF: a routing table of its own for the interfaces that join it.

    auto red
    iface red
        vrf-table 1001        # or `auto`: netcfg picks a free table id
        vrf-default-route no  # accepted: no implicit route in the table

    iface swp3
        vrf red
        address 10.3.0.1/24

Members name their VRF with the common `vrf` attribute. `vrf-table auto`
is resolved by allocate_tables(), which the model builder calls once after
complete() (the complete_model hook), so that every check and the planner
see a number.
"""

from __future__ import annotations

from collections import defaultdict

from netcfg.kinds.base import Kind
from netcfg.model.model import ConfigObject, Model

TABLE = "vrf-table"
# Cumulus's vrf-helper adds an unreachable default route unless this says no;
# Debian's ifupdown2 3.0.0 has no such attribute (it warns and ignores it) and
# adds none, nor does netcfg: `no` states what is done and is accepted.
DEFAULT_ROUTE = "vrf-default-route"
AUTO = "auto"
FIRST_AUTO_TABLE = 1001  # ifupdown2's vrf-table auto range starts here too
MAX_TABLE = 4294967295
# default (253), main (254), local (255): the kernel's own tables.
RESERVED = {253: "default", 254: "main", 255: "local"}


def allocate_tables(model: Model) -> None:
    """Give every ``vrf-table auto`` a table id, per namespace.

    Deterministic: VRFs are numbered in name order from 1001 upward,
    skipping ids written explicitly on a VRF or in a route's `table` in
    that namespace. Adding a VRF whose name sorts earlier renumbers the
    later ones, which re-creates them; write explicit ids where that matters.
    """
    used: dict[str, set[int]] = defaultdict(set)
    auto: dict[str, list[ConfigObject]] = defaultdict(list)
    for obj in model.interfaces.values():
        for route in obj.attrs.get("route", ()):
            if "table" in route:
                used[obj.netns].add(route["table"])
        if obj.kind != "vrf":
            continue
        table = obj.attrs.get(TABLE)
        if table == AUTO:
            auto[obj.netns].append(obj)
        elif isinstance(table, int):
            used[obj.netns].add(table)
    for netns, vrfs in auto.items():
        table = FIRST_AUTO_TABLE
        for vrf in sorted(vrfs, key=lambda o: o.name):
            while table in used[netns]:
                table += 1
            vrf.attrs[TABLE] = table
            used[netns].add(table)


class Vrf(Kind):
    name = "vrf"
    defining_attributes = (TABLE,)
    # A VRF is an L3 master device, never a bridge port.
    traits = ("common",)
    info_kind = "vrf"
    # vrf-table is declared immutable in the schema: the kernel has no way to
    # move a VRF device to another table.
    max_mtu = 65575  # IP6_MAX_MTU

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        table = obj.attrs.get(TABLE)
        if table is None and TABLE not in obj.locs:
            report.error(obj.loc, f"{obj.label()}: a vrf needs '{TABLE} N' or "
                                  f"'{TABLE} {AUTO}'", TABLE)
        elif table in RESERVED:
            report.error(obj.where(TABLE),
                         f"{obj.label()}: {TABLE} {table} is the kernel's {RESERVED[table]} "
                         f"table; give the vrf a table of its own (e.g. {FIRST_AUTO_TABLE}) "
                         f"or write '{TABLE} {AUTO}'", TABLE)
        if obj.attrs.get(DEFAULT_ROUTE):
            report.error(obj.where(DEFAULT_ROUTE),
                         f"{obj.label()}: {DEFAULT_ROUTE} yes asks for an unreachable default "
                         f"route in the vrf's table, which Cumulus Linux's vrf-helper adds; "
                         f"Debian's ifupdown2 adds none and netcfg has no unreachable routes: "
                         f"remove the line (or write '{DEFAULT_ROUTE} no', what both do), or "
                         f"route the vrf's default with 'route default via GW vrf "
                         f"{obj.name}'", DEFAULT_ROUTE)
        if "vrf" in obj.attrs:
            report.error(obj.where("vrf"),
                         f"{obj.label()}: a vrf cannot be a member of another vrf; remove "
                         f"'vrf {obj.attrs['vrf']}' from {obj.name}", "vrf")

    def complete(self, obj: ConfigObject, report) -> None:
        # `no` is the only value check lets through, and it adds nothing.
        if obj.attrs.get(DEFAULT_ROUTE) is False:
            del obj.attrs[DEFAULT_ROUTE]

    def complete_model(self, model: Model, report) -> None:
        allocate_tables(model)

    def check_model(self, model: Model, report) -> None:
        _check_tables(self.name, model, report)

    def create_params(self, obj: ConfigObject) -> dict:
        return {"table": obj.attrs.get(TABLE)}


def _check_tables(kind: str, model: Model, report) -> None:
    """Two VRFs of one namespace sharing a table would share their routes."""
    seen: dict[tuple[str, int], ConfigObject] = {}
    vrfs = [o for o in model.interfaces.values()
            if o.kind == kind and isinstance(o.attrs.get(TABLE), int)]
    for vrf in sorted(vrfs, key=lambda o: o.loc):
        first = seen.setdefault((vrf.netns, vrf.attrs[TABLE]), vrf)
        if first is not vrf:
            report.error(vrf.where(TABLE),
                         f"{vrf.label()}: {TABLE} {vrf.attrs[TABLE]} is already the table of "
                         f"vrf {first.name} (at {first.loc}); give each vrf its own table, or "
                         f"write '{TABLE} {AUTO}'", TABLE)


KIND = Vrf()

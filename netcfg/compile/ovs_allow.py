"""`allow-ovs NAME` with no `ovs_type` on NAME's stanza, when an OVS port's
`ovs_bridge` names NAME: taken as an OVSBridge, with a warning (issue 22).

Debian's openvswitch-switch hook (debian/ifupdown.sh in Open vSwitch's
source, /etc/network/if-pre-up.d/openvswitch) acts on IF_OVS_TYPE only:
without it, it does nothing for the stanza, and `allow-ovs` only puts NAME in
the class its init script brings up (`ifup --allow=ovs`) once ovs-vswitchd
runs. A port's `ovs-vsctl --may-exist add-port NAME PORT` then works only if
NAME is already in Open vSwitch's database, made by hand once (the database
outlives reboots); on a fresh host it fails and the hook exits 0 anyway.
ifupdown2's openvswitch addons also act on `ovs-type` only. The file means
an OVS bridge (a port names it, the ovs class lists it); netcfg makes it one,
and says so at the `allow-ovs` line, since the file does not write it.
"""

from __future__ import annotations

from netcfg.compile.syntax import ParsedConfig, RawAttribute
from netcfg.kinds import registry
from netcfg.kinds.ovs import BRIDGE, OVS_ATTRIBUTES, OVS_BRIDGE, PORTS, TYPE
from netcfg.model.errors import Report
from netcfg.model.model import IFACE, ROOT_NETNS

OVS_CLASS = "ovs"
# What says a stanza's kind or OVS role: no guess is made then.
_DECIDING = ("link-type", TYPE, BRIDGE, PORTS)


def allow_ovs_bridges(parsed: ParsedConfig, pending: dict, report: Report) -> None:
    """Add ``ovs-type OVSBridge`` (located at the `allow-ovs` line) to each
    such stanza in ``pending`` (build.py's stanzas merged per interface)."""
    named = {}
    for p in pending.values():
        if p.section == IFACE and p.netns == ROOT_NETNS:
            for raw in p.raws:
                if raw.name == BRIDGE:
                    named.setdefault(raw.value, (p.name, raw))
    if not named:
        return
    defining = registry.kinds_by_defining_attribute()
    for name, classes in parsed.allow.items():
        ovs = [loc for cls, loc in classes if cls == OVS_CLASS]
        p = pending.get((IFACE, ROOT_NETNS, name))
        if not ovs or p is None or name not in named:
            continue
        if any(raw.name in _DECIDING or (raw.name in defining and raw.name not in OVS_ATTRIBUTES)
               for raw in p.raws):
            continue   # its kind or OVS role is written (ovs_options alone says neither)
        port, raw = named[name]
        where = f"line {raw.loc.line}" if raw.loc.file == ovs[0].file else str(raw.loc)
        p.raws.append(RawAttribute(TYPE, OVS_BRIDGE, ovs[0]))
        report.warning(ovs[0], f"{name}: taken as an Open vSwitch bridge (ovs_type OVSBridge): "
                               f"{port}'s ovs_bridge names it ({where}) and this line puts it in "
                               f"the ovs class, but its stanza has no ovs_type. Debian's "
                               f"openvswitch hook does nothing without one, and {port}'s "
                               f"add-port there works only if {name} is already in Open "
                               f"vSwitch's database; netcfg makes it. Write 'ovs_type "
                               f"OVSBridge' in its stanza to say so", TYPE)

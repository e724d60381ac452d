"""Per-port VLAN settings of an interface enslaved to a VLAN-aware bridge.

    iface swp1
        bridge-vids 100-200
        bridge-pvid 1
    iface swp2
        bridge-access 300

These only mean something on a port of a VLAN-aware bridge, so the check
looks up the interface's master; under a bridge that is not VLAN-aware they
are a warning and set nothing, as ifupdown2 ignores them there. Port options
(bridge-learning, bridge-pathcosts, ...) written on the bridge are moved onto
its ports by compile/validate.py before these checks.
"""

from __future__ import annotations

from netcfg.kinds.base import Trait
from netcfg.model.model import ConfigObject, Model
from netcfg.spec import PORT, kernel_mappings

# VLAN settings need a VLAN-aware bridge; port options (the schema's
# declared IFLA_BRPORT_* attributes) any bridge.
VLAN_ATTRIBUTES = ("bridge-vids", "bridge-pvid", "bridge-access", "bridge-allow-untagged")
PORT_OPTIONS = tuple(m.attribute for m in kernel_mappings("bridge-port") if m.place == PORT)
PORT_ATTRIBUTES = (*VLAN_ATTRIBUTES, *PORT_OPTIONS)
L2PROTOCOL_TUNNEL = "bridge-l2protocol-tunnel"
MAC_PAUSE = 0x2   # BR_GROUPFWD_MACPAUSE: a port's group_fwd_mask may not have it


class BridgePort(Trait):
    name = "bridge-port"

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        if obj.kind == "bridge":
            return  # on a bridge they are the ports' defaults; see kinds/bridge.py
        if "bridge-access" in obj.attrs and ("bridge-vids" in obj.attrs or "bridge-pvid" in obj.attrs):
            report.error(obj.where("bridge-access"),
                         f"{obj.label()}: bridge-access makes an access port; it cannot be "
                         f"combined with bridge-vids or bridge-pvid", "bridge-access")
        written = [a for a in PORT_ATTRIBUTES if a in obj.attrs]
        if not written:
            return
        if obj.attrs.get(L2PROTOCOL_TUNNEL, 0) & MAC_PAUSE:
            report.error(obj.where(L2PROTOCOL_TUNNEL),
                         f"{obj.label()}: {L2PROTOCOL_TUNNEL} mask "
                         f"{obj.attrs[L2PROTOCOL_TUNNEL]:#06x} has bit 1 (01:80:C2:00:00:01, "
                         f"MAC pause frames), which the kernel never forwards (br_setport: "
                         f"EINVAL)", L2PROTOCOL_TUNNEL)
        master = model.master_of(obj)
        if master is None or master.kind != "bridge":
            report.error(obj.where(written[0]),
                         f"{obj.label()}: {written[0]} applies to bridge ports, but no bridge "
                         f"lists {obj.name} in bridge-ports", written[0])
        elif not master.attrs.get("bridge-vlan-aware"):
            for attribute in written:
                if attribute in VLAN_ATTRIBUTES:
                    warn_not_vlan_aware(obj, attribute, master.name, report)


def warn_not_vlan_aware(obj: ConfigObject, attribute: str, bridge: str, report) -> None:
    """ifupdown2 ignores VLAN settings under a bridge that is not VLAN-aware
    (its bridge addon applies them only with bridge-vlan-aware yes), and
    files written for it carry such lines: they pass, said at their line,
    and netcfg sets nothing for them (plan/diff.py port_vlans)."""
    report.warning(obj.where(attribute),
                   f"{obj.label()}: {attribute} does nothing: bridge {bridge} is not VLAN-aware "
                   f"(no bridge-vlan-aware yes), so no VLAN is set, as ifupdown2 ignores it "
                   f"too; remove the line, or make the bridge VLAN-aware", attribute)


TRAIT = BridgePort()

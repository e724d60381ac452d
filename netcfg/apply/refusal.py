"""A kernel refusal said in the operator's terms: the config line that asked.

The kernel answers a request with an errno and, often, an extended-ack text;
the request was built from an Operation, and the operation from an object
the operator wrote. ``explain`` walks that chain back, so an apply that the
kernel refused reads

    site.tmpl:12: error: vt1 (netns tenant1): master-set master=br0: No such device (ENODEV)

instead of naming netlink messages and batch positions. Anything that is not
a refusal of one operation (a socket error, a failed verify) is said as it is.
"""

from __future__ import annotations

import errno

from netcfg.kernel.nl import NetlinkError
from netcfg.kinds import registry
from netcfg.model.errors import EXIT_APPLY_FAILED_REVERTED, NetcfgError
from netcfg.model.model import ConfigObject, Model
from netcfg.plan.ops import (ADDR_ADD, LINK_ADD, LINK_SET, MASTER_SET, ROUTE_ADD, VLAN_ADD,
                             VLAN_DEL, VNI_ADD, Operation)

# The attribute whose line asked for an action, where it is not a param name.
_ASKED_BY = {ADDR_ADD: "address", ROUTE_ADD: "route", VLAN_ADD: "bridge-vids",
             VNI_ADD: "bridge-vlan-vni-map"}
# Device kinds whose kernel module is not named after them.
_MODULE_OF_KIND = {"vlan": "8021q"}   # the others: their name, or the kind says (bond)


class Refused(NetcfgError):
    """The kernel refused ``op`` (``error``); ``suffix`` says more (a hint,
    how many others were refused in the same batch). Its text names the
    operation; ``explain`` names the config line too, when it has the model."""

    exit_code = EXIT_APPLY_FAILED_REVERTED

    def __init__(self, op: Operation, error: NetlinkError, suffix: str = ""):
        self.op, self.error, self.suffix = op, error, suffix
        super().__init__(f"{op.describe()}: {error.errno_text()}{suffix}")


def explain(failure: Exception, wanted: Model) -> str:
    """``failure`` located at the config line of the object it was about, when
    it is a kernel refusal of an operation on an object ``wanted`` holds."""
    if not isinstance(failure, Refused):
        # An error about one operation that is not netlink's (ovs-vswitchd's
        # Interface.error, kernel/ovsdb.py): located at its stanza.
        op = getattr(failure, "op", None)
        obj = wanted.interfaces.get((op.netns, op.name)) if op is not None else None
        return f"{obj.loc}: error: {obj.label()}: {failure}" if obj is not None else str(failure)
    op = failure.op
    obj = wanted.interfaces.get((op.netns, op.name))
    if obj is None:
        return str(failure)
    where = _asking_line(op, obj, wanted)
    return (f"{where}: error: {obj.label()}: {_asked(op)}: {failure.error.errno_text()}"
            f"{_hint(op, failure.error)}{failure.suffix}")


def _asked(op: Operation) -> str:
    """What was asked, without the plan's sigil and the device it names."""
    text = op.describe()[2:]
    where = f" (netns {op.netns})" if op.netns else ""
    return text.replace(f" {op.name}{where}", "", 1)


def _asking_line(op: Operation, obj: ConfigObject, wanted: Model):
    if op.action == MASTER_SET:
        # The port joined because its master's stanza lists it.
        master = wanted.interfaces.get((op.netns, str(op.params.get("master", ""))))
        if master is not None:
            listing = next((a for a in ("bridge-ports", "bond-slaves") if a in master.locs),
                           None)
            return master.where(listing)
    if op.action == LINK_ADD:
        return obj.loc   # the stanza that declares the device
    attribute = _ASKED_BY.get(op.action) or next(
        (p for p in op.params if p in obj.locs), None)
    return obj.where(attribute)


def _hint(op: Operation, failure: NetlinkError) -> str:
    kind = op.params.get("kind")
    if failure.errno == errno.EOPNOTSUPP and _turns_on_vlan_filtering(op) and \
            "Unknown device type" not in (failure.kernel_message or ""):
        # The kernel has bridges (else: 'Unknown device type') but answers a
        # VLAN-aware one with EOPNOTSUPP: it was built without VLAN filtering
        # (issue 24: this said "the running kernel has no bridge devices").
        return ("; the running kernel has no bridge VLAN filtering "
                "(CONFIG_BRIDGE_VLAN_FILTERING): bridges work, VLAN-aware ones do not; "
                "use a kernel built with it, or remove bridge-vlan-aware")
    if op.action == LINK_ADD and kind and failure.errno == errno.EOPNOTSUPP:
        # A tunnel kind's module is not its name (gretap: ip_gre).
        module = (_MODULE_OF_KIND.get(str(kind))
                  or registry.kind(str(kind)).module_with_devices or str(kind))
        return (f"; the running kernel has no {kind} devices: load its module "
                f"(modprobe {module}) or use a kernel built with it")
    if op.action in (VLAN_ADD, VLAN_DEL) and failure.errno == errno.EOPNOTSUPP:
        # A bridge's own VLANs and its ports' go through the bridge's VLAN
        # filtering: a kernel built without it, or a device that is no Linux
        # bridge or port of one (an Open vSwitch port of that name), refuses.
        return ("; the device is not a Linux bridge with VLAN filtering or a port of one, or "
                "the kernel has no bridge VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING)")
    return ""


def _turns_on_vlan_filtering(op: Operation) -> bool:
    """A bridge made or changed VLAN-aware (the param on a link-add, the
    attribute on an in-place link-set)."""
    return op.action in (LINK_ADD, LINK_SET) and any(
        op.params.get(key) not in (None, False, 0, "no")
        for key in ("vlan_filtering", "bridge-vlan-aware"))

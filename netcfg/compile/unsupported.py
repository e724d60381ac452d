"""ifupdown2 attributes netcfg knows of but refuses, and why.

An unsupported attribute is always an error (never silently ignored), and
its message says which of the reasons it is, so an operator knows whether
anything could ever make the line work:

- DAEMON: the setting is a userspace program's (mstpd, clagd, batctl,
  ovs-vswitchd), which ifupdown2 drives and netcfg does not run;
- KERNEL: a feature the Linux kernel does not have (a vendor kernel's);
- NOT_YET: the kernel has it and netcfg does not configure it yet.
"""

from __future__ import annotations

DAEMON = "a setting of {daemon}, a userspace program netcfg does not run"
KERNEL = "a feature the Linux kernel lacks"
NOT_YET = "the kernel has it; netcfg does not configure it yet"

# mstpctl-* with the kernel STP's own spelling, where the kernel bridge has the
# knob. ifupdown2's mstpctl addon hands every mstpctl-* to mstpctl, only while
# mstpd runs (addons/mstpctl.py: `if self.mstpd_running and stp`); on a host
# without mstpd (Debian's default) they do nothing, so netcfg maps none of them:
# the kernel's STP is configured with its own attributes.
_MSTP_KERNEL_SPELLING = {
    "mstpctl-treeprio": "bridge-bridgeprio",
    "mstpctl-fdelay": "bridge-fd",
    "mstpctl-maxage": "bridge-maxage",
    "mstpctl-hello": "bridge-hello",
    "mstpctl-ageing": "bridge-ageing",
    "mstpctl-portpathcost": "bridge-pathcosts",
    "mstpctl-treeportcost": "bridge-pathcosts",
    "mstpctl-treeportprio": "bridge-portprios",
    "mstpctl-stp": "bridge-stp",
}

EXPLANATIONS = {
    "bond-lacp-bypass-allow": (
        f"{KERNEL}: LACP bypass is a Cumulus Linux kernel patch (IFLA_BOND_AD_LACP_BYPASS, "
        "attribute 60, Cumulus's private range); no upstream Linux bond has it, and "
        "Debian's ifupdown2 sends it to a kernel that ignores it. Remove the line"),
}


# Families of ifupdown2 attributes, by prefix. Valid netcfg attributes with the
# same prefix (bridge-mcsnoop) never get here: only unknown names are explained.
PREFIXES = (
    ("mstpctl-", DAEMON.format(daemon="mstpd (the MSTP daemon)")
     + "; ifupdown2 passes mstpctl-* to mstpctl only while mstpd runs and does nothing "
       "with them without it"),
    ("bridge-mc", f"{NOT_YET}: this IGMP/MLD snooping tunable; bridge-mcsnoop turns "
                  "snooping on or off and bridge-mcast-vlan-snooping keeps it per VLAN"),
    ("bridge-portmc", f"{NOT_YET}: this per-port multicast setting"),
    ("batman-", DAEMON.format(daemon="batctl (B.A.T.M.A.N. mesh setup)")
     + "; ifupdown2's batman_adv addon configures the mesh through it"),
    ("clag", DAEMON.format(daemon="clagd (Cumulus's MLAG daemon)")),
    ("ovs-", "netcfg writes Open vSwitch's database with ovs-type, ovs-bridge, ovs-ports, "
             "ovs-options and ovs-mtu only (docs/ovs.md); ovs-extra (ovs-vsctl commands), "
             "ovs-bonds and tunnel or patch settings are not supported"),
)


def explain(attribute: str) -> str | None:
    for prefix, reason in PREFIXES:
        if attribute.startswith(prefix):
            spelling = _MSTP_KERNEL_SPELLING.get(attribute)
            if spelling:
                reason += f"; for the kernel's STP write {spelling}"
            return reason
    return EXPLANATIONS.get(attribute)

"""A bond (link aggregation).

    auto bond0
    iface bond0
        bond-slaves swp1 swp2
        bond-mode 802.3ad
        bond-miimon 100
        bond-lacp-rate fast
        bond-min-links 1
        bond-xmit-hash-policy layer3+4

ifupdown2's spellings are accepted: numeric modes (4 = 802.3ad), numeric
lacp rates (1 = fast), and bond-xmit_hash_policy (the parser maps _ to -).
"""

from __future__ import annotations

from netcfg.kinds.base import SLAVE, Kind, Reference, iter_names
from netcfg.model.model import IFACE, ConfigObject, Model

SLAVES = "bond-slaves"
DEFAULT_MODE = "balance-rr"  # the kernel's default, and ifupdown2's
LACP = "802.3ad"
# Attribute -> kernel bond option name (IFLA_BOND_* as `ip link` spells them).
OPTIONS = {"bond-mode": "mode", "bond-miimon": "miimon", "bond-lacp-rate": "lacp_rate",
           "bond-min-links": "min_links", "bond-xmit-hash-policy": "xmit_hash_policy"}


class Bond(Kind):
    name = "bond"
    defining_attributes = (SLAVES,)
    info_kind = "bond"
    takes_rx_handler = True  # as a bridge: no macvlan on a slave (EBUSY)
    default_mtu = 1500  # ether_setup; slaves take the bond's
    # The kernel refuses a mode change while the bond has slaves or is up.
    immutable_attributes = frozenset({"bond-mode"})

    def complete(self, obj: ConfigObject, report) -> None:
        # ifupdown2 writes `bond-slaves none` for a bond without slaves.
        if obj.attrs.get(SLAVES) == ["none"]:
            obj.attrs[SLAVES] = []

    def references(self, obj: ConfigObject):
        loc = obj.where(SLAVES)
        for slave in iter_names(obj.attrs.get(SLAVES)):
            yield Reference(SLAVES, SLAVE, IFACE, obj.netns, slave, loc)

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        mode = obj.attrs.get("bond-mode", DEFAULT_MODE)
        if "bond-lacp-rate" in obj.attrs and mode != LACP:
            report.error(obj.where("bond-lacp-rate"),
                         f"{obj.label()}: bond-lacp-rate applies to LACP bonds, but bond-mode "
                         f"is {mode}; write 'bond-mode {LACP}' or remove bond-lacp-rate",
                         "bond-lacp-rate")
        seen: set[str] = set()
        for slave in iter_names(obj.attrs.get(SLAVES)):
            if slave in seen:
                report.error(obj.where(SLAVES),
                             f"{obj.label()}: {SLAVES} lists {slave} twice; list each slave "
                             f"once", SLAVES)
            seen.add(slave)

    def create_params(self, obj: ConfigObject) -> dict:
        params = {"mode": DEFAULT_MODE}
        params.update({key: obj.attrs[a] for a, key in OPTIONS.items() if a in obj.attrs})
        return params


KIND = Bond()

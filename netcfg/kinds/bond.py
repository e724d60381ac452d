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

Debian ifenslave's form is too: the bond declared by its settings alone, its
slaves naming it with `bond-master` (compile/build.py turns those into
bond-slaves), and ifupdown's legacy `slaves` for bond-slaves:

    iface bond0 inet manual
        bond-mode active-backup
    iface eth0 inet manual
        bond-master bond0
"""

from __future__ import annotations

from netcfg.kinds.base import SLAVE, Kind, Reference, declared_params, iter_names
from netcfg.model.model import IFACE, ConfigObject, Model

SLAVES = "bond-slaves"
DEFAULT_MODE = "balance-rr"  # the kernel's default, and ifupdown2's
LACP = "802.3ad"
GRAT_ARP, UNSOL_NA = "bond-num-grat-arp", "bond-num-unsol-na"
USE_CARRIER = "bond-use-carrier"


class Bond(Kind):
    name = "bond"
    # A bond whose slaves name it by bond-master (ifenslave's form) writes
    # no bond-slaves line: compile/build.py writes it from theirs.
    defining_attributes = (SLAVES,)
    info_kind = "bond"
    module_with_devices = "bonding"   # bond0 in the host's namespace (max_bonds=1)
    takes_rx_handler = True  # as a bridge: no macvlan on a slave (EBUSY)
    default_mtu = 1500  # ether_setup; slaves take the bond's
    # bond-mode is declared immutable in the schema: the kernel refuses a
    # mode change while the bond has slaves or is up.

    def complete(self, obj: ConfigObject, report) -> None:
        # ifupdown2 writes `bond-slaves none` for a bond without slaves.
        if obj.attrs.get(SLAVES) == ["none"]:
            obj.attrs[SLAVES] = []
        if not obj.attrs.get("bond-miimon"):
            # ifupdown2's tests write `bond-updelay 0` with `bond-miimon 0`:
            # the kernel refuses any delay without MII monitoring (EPERM),
            # even 0, which is what such a bond has; ifupdown2 sends only
            # what differs from the running value. Nothing to send.
            for delay in ("bond-updelay", "bond-downdelay"):
                if obj.attrs.get(delay) == 0:
                    del obj.attrs[delay]
                    obj.locs.pop(delay, None)
        # Two ifupdown2 names of one kernel setting (num_peer_notif).
        if UNSOL_NA in obj.attrs:
            value = obj.attrs.pop(UNSOL_NA)
            loc = obj.locs.pop(UNSOL_NA, obj.loc)
            if obj.attrs.setdefault(GRAT_ARP, value) != value:
                report.error(loc, f"{obj.label()}: {UNSOL_NA} {value} and {GRAT_ARP} "
                                  f"{obj.attrs[GRAT_ARP]} are one kernel setting "
                                  f"(num_peer_notif); write one", UNSOL_NA)
            obj.locs.setdefault(GRAT_ARP, loc)

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
        miimon = obj.attrs.get("bond-miimon", 0)
        for delay in ("bond-updelay", "bond-downdelay"):
            value = obj.attrs.get(delay)
            if not value:
                continue
            if not miimon:
                # bond_option_updelay_set: EPERM without MII monitoring.
                report.error(obj.where(delay), f"{obj.label()}: {delay} needs bond-miimon "
                                               f"(the kernel refuses it without)", delay)
            elif value % miimon:
                # The kernel rounds it down to a multiple, which would read back different.
                report.error(obj.where(delay), f"{obj.label()}: {delay} {value} is not a "
                                               f"multiple of bond-miimon {miimon}; the kernel "
                                               f"would round it down to "
                                               f"{value - value % miimon}", delay)
        if obj.attrs.get(USE_CARRIER) is False:
            # Sent and read back like any other knob; only the running kernel
            # knows whether it still has the driver-polling mode.
            report.warning(obj.where(USE_CARRIER),
                           f"{obj.label()}: {USE_CARRIER} no polls the slaves' drivers "
                           f"(ethtool, MII ioctls); kernels that removed that mode refuse it "
                           f"and the apply fails here (Debian's 6.12 has it)", USE_CARRIER)
        seen: set[str] = set()
        for slave in iter_names(obj.attrs.get(SLAVES)):
            if slave in seen:
                report.error(obj.where(SLAVES),
                             f"{obj.label()}: {SLAVES} lists {slave} twice; list each slave "
                             f"once", SLAVES)
            seen.add(slave)

    def create_params(self, obj: ConfigObject) -> dict:
        return {"mode": DEFAULT_MODE, **declared_params(obj, self.name)}

    def read_back(self, attrs: dict, notes: list[str], name: str) -> None:
        attrs.setdefault("bond-mode", DEFAULT_MODE)   # IFLA_BOND_MODE 0 may be left out
        if attrs["bond-mode"] != LACP:
            attrs.pop("bond-lacp-rate", None)   # valid in a config only with 802.3ad


KIND = Bond()

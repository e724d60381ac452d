"""IPv4 address labels (IFA_LABEL): what ifupdown's alias stanzas make.

    auto eth1 eth1:1
    iface eth1 inet static
        address 192.0.2.4/24
    iface eth1:1 inet static            # ifupdown: ip addr add 198.51.100.4/24
        address 198.51.100.4/24         #   dev eth1:1 label eth1:1
        up echo hihi

is, in netcfg's model (compile/build.py folds the alias stanza into eth1's,
its lines with it), and as `show` prints it::

    iface eth1
        address 192.0.2.4/24
        address 198.51.100.4/24
        address-label eth1:1 198.51.100.4/24
        up echo hihi

The label is kernel state of the address: `ip addr show label eth1:1`,
ifconfig and old scripts find the address by it. An address whose label
differs from the config's (unwritten: the device's name) is deleted and
added again (plan/addresses.py): the kernel cannot relabel an address.
"""

from __future__ import annotations

import ipaddress

from netcfg.model.model import ConfigObject

ADDRESS_LABEL = "address-label"


def complete_labels(obj: ConfigObject, report) -> None:
    """``address-label LABEL ADDRESS`` lines checked against the interface
    (its name, its addresses; each line's own syntax was checked at it),
    the address as the interface's address lines hold it (with its prefix);
    a bad one is an error, and dropped."""
    items = obj.attrs.get(ADDRESS_LABEL)
    if not items:
        return
    where = obj.where(ADDRESS_LABEL)
    own = {ipaddress.ip_interface(a).ip: a for a in obj.attrs.get("address", ())}
    labelled: dict[str, str] = {}
    for item in items:
        label, word = item.split()   # values.parse_address_label checked each line
        address = ipaddress.ip_interface(word).ip
        if not label.startswith(obj.name):
            report.error(where, f"{obj.label()}: address-label {label}: a label begins with "
                         f"the interface's name ({obj.name}:1, say), as iproute2 requires",
                         ADDRESS_LABEL)
        elif address not in own:
            report.error(where, f"{obj.label()}: address-label {label} names {address}, "
                         f"which is not one of {obj.name}'s addresses; add 'address "
                         f"{word}' or remove the label", ADDRESS_LABEL)
        elif labelled.get(own[address], label) != label:
            report.error(where, f"{obj.label()}: {own[address]} has two labels, "
                         f"{labelled[own[address]]} and {label}; keep one", ADDRESS_LABEL)
        else:
            labelled[own[address]] = label
    if labelled:
        obj.attrs[ADDRESS_LABEL] = [f"{label} {address}" for address, label in labelled.items()]
    else:
        del obj.attrs[ADDRESS_LABEL]


def labels(obj: ConfigObject) -> dict[str, str]:
    """address -> its label, for the addresses that have one besides the
    device's name."""
    return {address: label for label, address in
            (item.split() for item in obj.attrs.get(ADDRESS_LABEL, ())) if label != obj.name}

"""A Proxmox VE host with an SDN simple zone of N vnets, written as Proxmox writes it.

Two files, as on a PVE node:

* `/etc/network/interfaces`, as the installer writes it (pve-installer
  `Proxmox/Install.pm`): `lo`, the NIC `inet manual`, `vmbr0` with the host's
  address and gateway over the NIC (`bridge-ports`, `bridge-stp off`,
  `bridge-fd 0`), and `source /etc/network/interfaces.d/*` last;
* `/etc/network/interfaces.d/sdn`, as pve-network writes it for a simple zone
  whose vnets each have one subnet with a gateway (`#version:N` first,
  `auto X` / `iface X` without a method, tab-indented options, vnets in sorted
  order; the shape of pve-network's src/test/zones/simple/ipv4 expected file,
  tests/compat/corpus/pve-network/simple-ipv4-sdn.interfaces).

A simple zone because its devices are bridges with addresses, which the host
kernel can make (it lacks 8021q and bridge VLAN filtering, so a VLAN zone and
a VLAN-aware vmbr0 need the VM tier). Pure: text in, text out.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

NIC = "eth0"
HOST_ADDRESS = "192.0.2.10/24"   # TEST-NET-1: never routed anywhere
HOST_GATEWAY = "192.0.2.1"


@dataclass(frozen=True)
class Vnet:
    name: str
    gateway: ipaddress.IPv4Interface   # the vnet's address: its subnet's gateway


def vnets(count: int) -> list[Vnet]:
    """vnet1..vnetN, subnet 10.X.Y.0/24 each (X.Y from N), in the file's (sorted) order."""
    out = []
    for n in range(1, count + 1):
        out.append(Vnet(f"vnet{n}", ipaddress.IPv4Interface(f"10.{100 + n // 256}.{n % 256}.1/24")))
    return sorted(out, key=lambda v: v.name)


def host_interfaces(source_glob: str = "/etc/network/interfaces.d/*") -> str:
    """The installer's /etc/network/interfaces of a node with one NIC."""
    return (
        "auto lo\n"
        "iface lo inet loopback\n"
        "\n"
        f"iface {NIC} inet manual\n"
        "\n"
        "auto vmbr0\n"
        "iface vmbr0 inet static\n"
        f"\taddress {HOST_ADDRESS}\n"
        f"\tgateway {HOST_GATEWAY}\n"
        f"\tbridge-ports {NIC}\n"
        "\tbridge-stp off\n"
        "\tbridge-fd 0\n"
        "\n"
        "\n"
        f"source {source_glob}\n"
    )


def sdn_interfaces(nets: list[Vnet], version: int = 1) -> str:
    """pve-network's interfaces.d/sdn for a simple zone (Zones.pm, SimplePlugin.pm)."""
    blocks = [f"#version:{version}\n"]
    for v in nets:
        blocks.append(
            f"auto {v.name}\n"
            f"iface {v.name}\n"
            f"\taddress {v.gateway.with_prefixlen}\n"
            "\tbridge_ports none\n"
            "\tbridge_stp off\n"
            "\tbridge_fd 0\n"
            "\tip-forward on\n")
    return "\n".join(blocks)


def edited_address(v: Vnet, flip: bool) -> ipaddress.IPv4Interface:
    """The one-line edit: the vnet's gateway moved to .254 of its subnet (or back)."""
    if not flip:
        return v.gateway
    return ipaddress.IPv4Interface(f"{v.gateway.network.network_address + 254}/"
                                   f"{v.gateway.network.prefixlen}")


def with_one_line_edited(text: str, v: Vnet, flip: bool) -> str:
    """``text`` (an sdn file) with ``v``'s address line changed, nothing else; the
    `#version` line is left as it is (pve-network bumps it on every SDN apply,
    which is one more line: an edit by hand is one)."""
    old = f"\taddress {v.gateway.with_prefixlen}\n"
    new = f"\taddress {edited_address(v, flip).with_prefixlen}\n"
    if text.count(old) != 1:
        raise ValueError(f"{v.name}: its address line is not in the file exactly once")
    return text.replace(old, new)

"""ifupdown-ng's `tunnel-local-dev DEV`, where the config gives DEV no address:
the tunnel's local address is read from the kernel when netcfg applies.

    iface gre1                        # ifupdown-ng's doc/interfaces-tunnel.scd
        tunnel-mode gre
        tunnel-remote 198.51.100.1
        tunnel-local-dev eth0         # eth0: DHCP, or another program's

ifupdown-ng's tunnel executor reads DEV's address at ifup (`ip -4 -brief addr
show dev DEV`: the first IPv4 address; for the IPv6 modes the first address
that is not a privacy extension's temporary one) and exits 1 when there is
none. The compiler turns the line into tunnel-local itself when the config
gives DEV a static address (compile/legacy_tunnel.py); otherwise the line
reaches here, and ``resolve`` reads DEV's addresses in the tunnel's namespace
before the diff, as that executor does at ifup. So apply, `query --check` and
netcfgd compare the tunnel with the address DEV has now: when it changed, the
tunnel is re-created with the new one (its local address is fixed at
creation), where ifupdown-ng keeps the old until the next ifup.

Nothing is written when DEV or its address is missing: the apply is refused
at the line, as a config error (LocalDeviceUnresolved, naming each such
tunnel). netcfgd leaves those tunnels as the kernel has them instead (not
made, not re-created, not downed), and repairs the rest
(daemon/netcfgd/reconcile.py).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket

from netcfg.kernel.session import KernelSession
from netcfg.kinds.tunnel import LOCAL, LOCAL_DEV, MODE, MODES
from netcfg.model.errors import ConfigInvalid, Diagnostic
from netcfg.model.model import ConfigObject, Model
from netcfg.netlink.nlmsg import (IFA_ADDRESS, IFA_FLAGS, IFA_LOCAL, IFADDRMSG, attr_u32,
                                  parse_attrs)

# A privacy extension's address (RFC 8981), which ifupdown-ng skips
# (`ip -6 addr show -temporary`): it changes daily, a tunnel's end must not.
IFA_F_TEMPORARY = 0x01
_FAMILIES = {4: socket.AF_INET, 6: socket.AF_INET6}

Key = tuple[str, str]


class LocalDeviceUnresolved(ConfigInvalid):
    """tunnel-local-dev lines whose device or address is missing now; nothing
    was written. ``tunnels``: each such tunnel's (netns, name) and its located
    message. The CLI refuses the apply (exit 1); netcfgd leaves those tunnels
    as the kernel has them and repairs the rest, as it does for a wireguard
    device whose key file cannot be used (issue 23 M2)."""

    def __init__(self, diagnostics: list[Diagnostic], tunnels: dict[Key, str]):
        super().__init__(diagnostics)
        self.tunnels = tunnels


def resolve(model: Model, session: KernelSession) -> Model:
    """``model`` with each tunnel-local-dev replaced by the tunnel-local it
    means now (located at the tunnel-local-dev line). The caller's model is
    not changed (netcfgd keeps it between passes). Raises
    LocalDeviceUnresolved, with every such line that cannot be resolved,
    before anything is written."""
    tunnels = [o for o in model.interfaces.values() if LOCAL_DEV in o.attrs]
    if not tunnels:
        return model
    interfaces = dict(model.interfaces)
    problems: dict[Key, Diagnostic] = {}
    existing = session.existing_namespaces()
    for obj in tunnels:
        address, problem = _address_of_device(obj, session, existing)
        if problem:
            problems[obj.key] = Diagnostic(obj.where(LOCAL_DEV), problem, LOCAL_DEV)
            continue
        attrs = {a: v for a, v in obj.attrs.items() if a != LOCAL_DEV}
        attrs[LOCAL] = address
        interfaces[obj.key] = dataclasses.replace(
            obj, attrs=attrs, locs={**obj.locs, LOCAL: obj.where(LOCAL_DEV)})
    if problems:
        raise LocalDeviceUnresolved(list(problems.values()),
                                    {k: d.format() for k, d in problems.items()})
    return dataclasses.replace(model, interfaces=interfaces)


def _address_of_device(obj: ConfigObject, session: KernelSession,
                       existing: set[str]) -> tuple[str, str]:
    """(address, "") or ("", why there is none)."""
    device = obj.attrs[LOCAL_DEV]
    version = MODES[obj.attrs[MODE]][1] if obj.attrs.get(MODE) in MODES else 4
    where = f"netns {obj.netns}" if obj.netns else "the host namespace"
    start = f"{obj.label()}: {LOCAL_DEV} {device}: "
    if obj.netns and obj.netns not in existing:
        return "", (f"{start}netns {obj.netns} does not exist yet, so {device} has no "
                    f"address to take the tunnel's local address from; write "
                    f"'tunnel-local ADDRESS'")
    link = session.link_now(obj.netns, device)
    if link is None:
        return "", (f"{start}there is no device {device} in {where} to take the tunnel's "
                    f"local address from (ifupdown-ng's executor fails on it too); write "
                    f"'tunnel-local ADDRESS' or name a device that has one")
    address = first_address(session, obj.netns, link[0], version)
    if address is None:
        return "", (f"{start}{device} has no IPv{version} address now"
                    f"{' that is not temporary' if version == 6 else ''}, and the tunnel "
                    f"takes its local address from it when netcfg applies (ifupdown-ng's "
                    f"executor fails on it too); give {device} an address first (a DHCP "
                    f"lease, its own stanza) or write 'tunnel-local ADDRESS'")
    return address, ""


def first_address(session: KernelSession, netns: str, index: int, version: int) -> str | None:
    """The device's first address of this IP version in the kernel's order,
    as `ip -4 addr show dev DEV` lists them; for IPv6 the first that is not
    temporary. Equivalent to ifupdown-ng's `ip -4 -brief addr show dev DEV` /
    `ip -6 addr show dev DEV -temporary | head -n1`."""
    for payload in session.addresses_now(netns, index, _FAMILIES[version]):
        _family, _prefix, flags, _scope, _index = IFADDRMSG.unpack_from(payload)
        attrs = parse_attrs(payload, IFADDRMSG.size, {IFA_ADDRESS, IFA_LOCAL, IFA_FLAGS})
        if IFA_FLAGS in attrs:   # the 32-bit flags, when the kernel sends them
            flags = attr_u32(attrs[IFA_FLAGS])
        if version == 6 and flags & IFA_F_TEMPORARY:
            continue
        raw = attrs.get(IFA_LOCAL, attrs.get(IFA_ADDRESS))
        if raw is not None:
            return str(ipaddress.ip_address(bytes(raw)))
    return None

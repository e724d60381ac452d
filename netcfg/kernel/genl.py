"""Generic netlink sockets, and WireGuard devices read back through them.

A NETLINK_GENERIC socket is opened inside its namespace on the setns helper
thread, as the rtnetlink ones are (KernelSession.genl_socket): a wireguard
device is known to the family only in its own namespace. It reuses
RtnlSocket's batching, ACK barrier and dumps; what differs is the message
type, the family's id, which the controller tells once per socket.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass, field
from typing import Iterable

from netcfg.kernel.nl import NetlinkError, RtnlSocket
from netcfg.model.errors import EXIT_APPLY_FAILED_REVERTED, NetcfgError
from netcfg.netlink.genl import GENL_ID_CTRL, family_id, getfamily
from netcfg.netlink.nlmsg import NLM_F_DUMP, Request
from netcfg.kinds.wireguard import key_text
from netcfg.kernel.read import NamespaceState
from netcfg.netlink.wireguard import WG_GENL_NAME, device_attributes, get_device, parse_device

NETLINK_GENERIC = 16
WIREGUARD_KIND = "wireguard"


class FamilyMissing(NetcfgError):
    """The kernel has no such generic netlink family (its module is not loaded)."""

    exit_code = EXIT_APPLY_FAILED_REVERTED
    retryable = False


class GenlSocket:
    """A NETLINK_GENERIC socket and the family ids it has resolved."""

    def __init__(self, sock: socket.socket):
        # A few KiB per device dumped; rtnetlink's 32 MiB would be waste.
        self.nl = RtnlSocket(sock, rcvbuf=1 << 20, sndbuf=256 << 10)
        self._families: dict[str, int] = {}

    def close(self) -> None:
        self.nl.close()

    def family(self, name: str) -> int:
        """The family's id (CTRL_CMD_GETFAMILY), asked once.

        Equivalent to: `genl ctrl get name NAME`."""
        if name not in self._families:
            try:
                _t, _f, payload = self.nl.get(GENL_ID_CTRL, getfamily(name))
            except NetlinkError as e:
                if e.errno == errno.ENOENT:
                    raise FamilyMissing(f"the kernel has no '{name}' generic netlink family; "
                                        f"load its module (modprobe {name})") from None
                raise
            self._families[name] = family_id(payload)[1]
        return self._families[name]

    def dump(self, family: str, payload: bytes) -> list[bytes]:
        """A dump's messages, their payloads copied (the receive buffer is reused)."""
        return [bytes(p) for _t, _f, p in self.nl.dump(self.family(family), payload,
                                                        flags=NLM_F_DUMP)]

    def transact(self, family: str, payloads: Iterable[bytes], tag=None) -> None:
        """Send each payload as one request, in order, then one ACKed barrier;
        raises the first error, naming ``tag``."""
        number = self.family(family)
        result = self.nl.transact([Request(number, 0, p, tag=tag) for p in payloads])
        for error in result.errors:
            if error is not None:
                raise error


@dataclass
class WireguardKeys:
    """What the applier knows about keys and endpoints, per session.

    ``private``: public key text -> private key, from key files read
    (apply/wireguard.resolve) and from devices read back (a revert sets
    the key a device had). ``endpointless``: per (netns, device), the peers
    the config gives no endpoint, whose read-back endpoint (learned from
    their handshakes) is not compared."""

    private: dict[str, bytes] = field(default_factory=dict)
    endpointless: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)


def has_wireguard(state: NamespaceState) -> bool:
    return any(o.kind == WIREGUARD_KIND for o in state.interfaces.values())


def read_wireguard(sock: GenlSocket, state: NamespaceState, keys: WireguardKeys) -> int:
    """Fill the wireguard devices of one namespace's read with their public
    key, port, fwmark and peers; returns the GET_DEVICE dumps made (one per
    device).

    Equivalent to: `wg showconf DEV` for each wireguard device."""
    dumps = 0
    for name, obj in state.interfaces.items():
        if obj.kind != WIREGUARD_KIND:
            continue
        try:
            device = parse_device(sock.dump(WG_GENL_NAME, get_device(state.ifindex[name])))
        except NetlinkError as e:
            if e.errno == errno.ENODEV:
                continue   # deleted since the link dump
            raise
        dumps += 1
        if device.private_key is not None and device.public_key is not None:
            keys.private[key_text(device.public_key)] = device.private_key
        obj.attrs.update(device_attributes(device, keys.endpointless.get((state.netns, name), ())))
    return dumps

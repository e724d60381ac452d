"""WireGuard's generic netlink family, the pure part (linux/wireguard.h).

WG_CMD_SET_DEVICE payloads from the model's attributes, and WG_CMD_GET_DEVICE
dumps back into them. Numbers keep the header's spellings so they can be
grepped against it. What the kernel taught us (tests/vm/test_vm_wireguard.py):

- GET_DEVICE is a dump (NLM_F_DUMP) naming one device; a device with many
  peers answers in several messages, and a peer whose allowed IPs do not fit
  one message goes on in the next, named again by its public key.
- The kernel clamps the private key it is given (curve25519) and hands the
  clamped key back; the public key is what netcfg compares and prints.
- Peer and allowed-IP arrays are nests of nests whose own types are only
  indexes; wg(8) sends them with NLA_F_NESTED, and so do we.
- A peer's endpoint, when the config gives none, is learned from the
  handshakes it sends (roaming), so it is read back though nobody set it.

Also here: X25519 (RFC 7748), the public key of a private key, so that the
applier can compare the key in a file with the device's without sending it.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass, field
from typing import Iterable

from netcfg.kinds.wireguard import (FWMARK, LISTEN_PORT, PEER, PUBLIC_KEY, Peer,
                                    format_endpoint, key_bytes, key_text, parse_endpoint,
                                    sorted_networks)
from netcfg.netlink.genl import genlmsg, iter_attrs
from netcfg.netlink.nlmsg import NLA_F_NESTED, attr_str, rtattr, rtattr_str, rtattr_u32

WG_GENL_NAME, WG_GENL_VERSION = "wireguard", 1
WG_KEY_LEN = 32
WG_CMD_GET_DEVICE, WG_CMD_SET_DEVICE = 0, 1
WGDEVICE_F_REPLACE_PEERS = 1 << 0
(WGDEVICE_A_UNSPEC, WGDEVICE_A_IFINDEX, WGDEVICE_A_IFNAME, WGDEVICE_A_PRIVATE_KEY,
 WGDEVICE_A_PUBLIC_KEY, WGDEVICE_A_FLAGS, WGDEVICE_A_LISTEN_PORT, WGDEVICE_A_FWMARK,
 WGDEVICE_A_PEERS) = range(9)
WGPEER_F_REMOVE_ME, WGPEER_F_REPLACE_ALLOWEDIPS, WGPEER_F_UPDATE_ONLY = 1, 2, 4
(WGPEER_A_UNSPEC, WGPEER_A_PUBLIC_KEY, WGPEER_A_PRESHARED_KEY, WGPEER_A_FLAGS,
 WGPEER_A_ENDPOINT, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, WGPEER_A_LAST_HANDSHAKE_TIME,
 WGPEER_A_RX_BYTES, WGPEER_A_TX_BYTES, WGPEER_A_ALLOWEDIPS, WGPEER_A_PROTOCOL_VERSION) = range(11)
WGALLOWEDIP_A_UNSPEC, WGALLOWEDIP_A_FAMILY, WGALLOWEDIP_A_IPADDR, WGALLOWEDIP_A_CIDR_MASK = range(4)

SOCKADDR_IN = struct.Struct("=H2s4s8x")          # family, port (be), address
SOCKADDR_IN6 = struct.Struct("=H2sI16sI")        # family, port (be), flowinfo, address, scope
# A SET_DEVICE message is cut before it grows past this: netlink_sendmsg
# refuses a datagram over the socket's send buffer, and wg(8) cuts too.
MAX_MESSAGE = 32 << 10


# ---------------------------------------------------------------- X25519

_P = 2 ** 255 - 19
_A24 = 121665


def public_key(private: bytes) -> bytes:
    """The X25519 public key of a 32-byte private key (RFC 7748 5, the
    Montgomery ladder on u = 9), as `wg pubkey` computes it. Not constant
    time: it runs on the applier's own key, on the machine that holds it."""
    if len(private) != WG_KEY_LEN:
        raise ValueError(f"a private key is {WG_KEY_LEN} bytes, not {len(private)}")
    k = bytearray(private)
    k[0] &= 248
    k[31] = (k[31] & 127) | 64
    scalar = int.from_bytes(k, "little")
    x1, x2, z2, x3, z3, swap = 9, 1, 0, 9, 1, 0
    for t in range(254, -1, -1):
        bit = (scalar >> t) & 1
        if swap ^ bit:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b, c, d = x2 + z2, x2 - z2, x3 + z3, x3 - z3
        aa, bb, da, cb = a * a % _P, b * b % _P, d * a % _P, c * b % _P
        e = (aa - bb) % _P
        x3, z3 = (da + cb) ** 2 % _P, x1 * (da - cb) ** 2 % _P
        x2, z2 = aa * bb % _P, e * (aa + _A24 * e) % _P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, _P - 2, _P) % _P).to_bytes(32, "little")


# ---------------------------------------------------------------- SET_DEVICE

@dataclass
class DeviceConfig:
    """What one SET_DEVICE says; None leaves a setting as the kernel has it."""

    ifname: str
    private_key: bytes | None = None
    listen_port: int | None = None
    fwmark: int | None = None
    peers: list[Peer] | None = None          # None: peers untouched; []: none at all


def _sockaddr(endpoint: str) -> bytes:
    address, port = parse_endpoint(endpoint)
    ip = ipaddress.ip_address(address)
    be_port = struct.pack("!H", port)
    if ip.version == 4:
        return SOCKADDR_IN.pack(socket.AF_INET, be_port, ip.packed)
    return SOCKADDR_IN6.pack(socket.AF_INET6, be_port, 0, ip.packed, 0)


def _allowed_ip(prefix: str) -> bytes:
    net = ipaddress.ip_network(prefix)
    family = socket.AF_INET if net.version == 4 else socket.AF_INET6
    return rtattr(NLA_F_NESTED, b"".join((
        rtattr(WGALLOWEDIP_A_FAMILY, struct.pack("=H", family)),
        rtattr(WGALLOWEDIP_A_IPADDR, net.network_address.packed),
        rtattr(WGALLOWEDIP_A_CIDR_MASK, struct.pack("=B", net.prefixlen)))))


def _peer(peer: Peer) -> bytes:
    """One peer, replacing its allowed IPs; keepalive sent even when 0 (off)."""
    attrs = [rtattr(WGPEER_A_PUBLIC_KEY, key_bytes(peer.public_key)),
             rtattr_u32(WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS),
             rtattr(WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, struct.pack("=H", peer.keepalive))]
    if peer.endpoint:
        attrs.append(rtattr(WGPEER_A_ENDPOINT, _sockaddr(peer.endpoint)))
    attrs.append(rtattr(WGPEER_A_ALLOWEDIPS | NLA_F_NESTED,
                        b"".join(_allowed_ip(p) for p in peer.allowed_ips)))
    return rtattr(NLA_F_NESTED, b"".join(attrs))


def set_device(config: DeviceConfig) -> list[bytes]:
    """WG_CMD_SET_DEVICE payloads (genl header and attributes) for ``config``,
    to be sent in order. The first carries the device's settings and, when
    peers are given, WGDEVICE_F_REPLACE_PEERS (the kernel removes the peers
    it has, then adds these); peers that do not fit go in further messages
    without the flag, which add to the set.

    Equivalent to: `wg set IFNAME private-key FILE listen-port N fwmark M
    peer KEY allowed-ips ... endpoint ... persistent-keepalive S` (wg syncconf
    for the whole peer set)."""
    head = [rtattr_str(WGDEVICE_A_IFNAME, config.ifname)]
    if config.private_key is not None:
        if len(config.private_key) != WG_KEY_LEN:
            raise ValueError(f"a private key is {WG_KEY_LEN} bytes")
        head.append(rtattr(WGDEVICE_A_PRIVATE_KEY, config.private_key))
    if config.listen_port is not None:
        head.append(rtattr(WGDEVICE_A_LISTEN_PORT, struct.pack("=H", config.listen_port)))
    if config.fwmark is not None:
        head.append(rtattr_u32(WGDEVICE_A_FWMARK, config.fwmark))
    if config.peers is None:
        return [genlmsg(WG_CMD_SET_DEVICE, WG_GENL_VERSION, b"".join(head))]
    head.append(rtattr_u32(WGDEVICE_A_FLAGS, WGDEVICE_F_REPLACE_PEERS))
    messages: list[bytes] = []
    current, size = list(head), sum(map(len, head))
    batch: list[bytes] = []
    for peer in (_peer(p) for p in config.peers):
        if batch and size + len(peer) > MAX_MESSAGE:
            current.append(rtattr(WGDEVICE_A_PEERS | NLA_F_NESTED, b"".join(batch)))
            messages.append(genlmsg(WG_CMD_SET_DEVICE, WG_GENL_VERSION, b"".join(current)))
            current = [rtattr_str(WGDEVICE_A_IFNAME, config.ifname)]
            size, batch = len(current[0]), []
        batch.append(peer)
        size += len(peer)
    current.append(rtattr(WGDEVICE_A_PEERS | NLA_F_NESTED, b"".join(batch)))
    messages.append(genlmsg(WG_CMD_SET_DEVICE, WG_GENL_VERSION, b"".join(current)))
    return messages


def remove_peer(ifname: str, key: bytes) -> bytes:
    """A SET_DEVICE that removes one peer (what the drift tests do by hand).

    Equivalent to: `wg set IFNAME peer KEY remove`."""
    peer = rtattr(NLA_F_NESTED, rtattr(WGPEER_A_PUBLIC_KEY, key)
                  + rtattr_u32(WGPEER_A_FLAGS, WGPEER_F_REMOVE_ME))
    return genlmsg(WG_CMD_SET_DEVICE, WG_GENL_VERSION, rtattr_str(WGDEVICE_A_IFNAME, ifname)
                   + rtattr(WGDEVICE_A_PEERS | NLA_F_NESTED, peer))


def get_device(ifindex: int) -> bytes:
    """The WG_CMD_GET_DEVICE payload for one device; send it as a dump.

    Equivalent to: `wg showconf IFNAME` (with the private key)."""
    return genlmsg(WG_CMD_GET_DEVICE, WG_GENL_VERSION, rtattr_u32(WGDEVICE_A_IFINDEX, ifindex))


# ---------------------------------------------------------------- GET_DEVICE

@dataclass
class Device:
    """One device as GET_DEVICE dumps it (the private key stays here, never in a model)."""

    ifindex: int = 0
    ifname: str = ""
    private_key: bytes | None = None
    public_key: bytes | None = None
    listen_port: int = 0
    fwmark: int = 0
    peers: list[Peer] = field(default_factory=list)


def _endpoint(raw: memoryview) -> str | None:
    family = struct.unpack_from("=H", raw)[0] if len(raw) >= 2 else 0
    if family == socket.AF_INET and len(raw) >= SOCKADDR_IN.size:
        _f, port, address = SOCKADDR_IN.unpack_from(raw)
        return format_endpoint(str(ipaddress.IPv4Address(address)), struct.unpack("!H", port)[0])
    if family == socket.AF_INET6 and len(raw) >= SOCKADDR_IN6.size:
        _f, port, _flow, address, _scope = SOCKADDR_IN6.unpack_from(raw)
        return format_endpoint(str(ipaddress.IPv6Address(address)), struct.unpack("!H", port)[0])
    return None


def _prefixes(raw: memoryview) -> list[str]:
    out = []
    for _index, entry in iter_attrs(raw):
        attrs = dict(iter_attrs(entry))
        address = bytes(attrs.get(WGALLOWEDIP_A_IPADDR, b""))
        length = attrs.get(WGALLOWEDIP_A_CIDR_MASK)
        if len(address) not in (4, 16) or length is None:
            continue
        out.append(str(ipaddress.ip_network((address, length[0]), strict=False)))
    return out


def parse_device(payloads: Iterable[bytes | memoryview]) -> Device:
    """A GET_DEVICE dump's messages (their payloads, genl header first) as one Device."""
    device = Device()
    peers: dict[bytes, dict] = {}
    for payload in payloads:
        for attr, value in iter_attrs(payload, 4):
            if attr == WGDEVICE_A_IFINDEX:
                device.ifindex = struct.unpack_from("=I", value)[0]
            elif attr == WGDEVICE_A_IFNAME:
                device.ifname = attr_str(value)
            elif attr == WGDEVICE_A_PRIVATE_KEY:
                device.private_key = bytes(value)
            elif attr == WGDEVICE_A_PUBLIC_KEY:
                device.public_key = bytes(value)
            elif attr == WGDEVICE_A_LISTEN_PORT:
                device.listen_port = struct.unpack_from("=H", value)[0]
            elif attr == WGDEVICE_A_FWMARK:
                device.fwmark = struct.unpack_from("=I", value)[0]
            elif attr == WGDEVICE_A_PEERS:
                for _index, entry in iter_attrs(value):
                    _merge_peer(peers, dict(iter_attrs(entry)))
    device.peers = [Peer(key_text(key), sorted_networks(p["allowed"]), p["endpoint"],
                         p["keepalive"]) for key, p in peers.items()]
    return device


def _merge_peer(peers: dict[bytes, dict], attrs: dict[int, memoryview]) -> None:
    """A peer entry; a peer continued from the previous message adds allowed IPs."""
    key = bytes(attrs.get(WGPEER_A_PUBLIC_KEY, b""))
    if len(key) != WG_KEY_LEN:
        return
    peer = peers.setdefault(key, {"allowed": [], "endpoint": None, "keepalive": 0})
    if WGPEER_A_ENDPOINT in attrs:
        peer["endpoint"] = _endpoint(attrs[WGPEER_A_ENDPOINT]) or peer["endpoint"]
    if WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL in attrs:
        interval = attrs[WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL]
        peer["keepalive"] = struct.unpack_from("=H", interval)[0]
    if WGPEER_A_ALLOWEDIPS in attrs:
        peer["allowed"].extend(_prefixes(attrs[WGPEER_A_ALLOWEDIPS]))


def device_attributes(device: Device, endpoints_unmanaged: Iterable[str] = ()) -> dict:
    """The model's attributes of a device read back. Peers named in
    ``endpoints_unmanaged`` (public keys of peers the config gives no
    endpoint) are read without theirs: it was learned from their handshakes,
    not set, and comparing it would undo roaming on every apply."""
    unmanaged = set(endpoints_unmanaged)
    attrs: dict = {LISTEN_PORT: device.listen_port, FWMARK: device.fwmark}
    if device.public_key is not None and any(device.public_key):
        attrs[PUBLIC_KEY] = key_text(device.public_key)
    texts = []
    for peer in device.peers:
        if peer.public_key in unmanaged:
            peer = peer._replace(endpoint=None)
        texts.append(peer.text())
    attrs[PEER] = sorted(texts)
    return attrs

"""WireGuard devices over pyroute2's "wireguard" generic netlink family:
read back (WG_CMD_GET_DEVICE) into the model's attributes, and configured
(WG_CMD_SET_DEVICE). pyroute2's ``wgmsg`` encodes and decodes; this module
says what to put in it (linux/wireguard.h). What the kernel taught us
(tests/vm/test_vm_wireguard.py):

- GET_DEVICE is a dump naming one device; a device with many peers
  answers in several messages, and a peer whose allowed IPs do not fit one
  message goes on in the next, named again by its public key.
- The kernel clamps the private key it is given (curve25519) and hands the
  clamped key back; the public key is what netcfg compares and prints.
- A peer's endpoint, when the config gives none, is learned from the
  handshakes it sends (roaming), so it is read back though nobody set it.

pyroute2's own ``WireGuard.set`` sends one peer per message and cannot
replace the peer set (WGDEVICE_F_REPLACE_PEERS), which a declarative apply
needs: a peer dropped from the config must go. So the messages are built
here, from pyroute2's message class.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Iterable

from netcfg.kernel.genl import GenlSockets, each_device
from netcfg.kernel.read import NamespaceState
from netcfg.kinds.wireguard import (FWMARK, LISTEN_PORT, PEER, PUBLIC_KEY, Peer, format_endpoint,
                                    key_bytes, key_text, parse_endpoint, sorted_networks)

WIREGUARD = "wireguard"     # the kind, and its generic netlink family
WG_GENL_VERSION = 1
WG_CMD_GET_DEVICE, WG_CMD_SET_DEVICE = 0, 1
WGDEVICE_F_REPLACE_PEERS = 1 << 0
WGPEER_F_REMOVE_ME, WGPEER_F_REPLACE_ALLOWEDIPS = 1 << 0, 1 << 1
# A SET_DEVICE message is cut before it grows past this (wg(8) cuts too):
# netlink_sendmsg refuses a datagram over the socket's send buffer.
MAX_MESSAGE = 32 << 10
# Encoded size of a peer, over-estimated: key, flags, keepalive, an IPv6
# endpoint and the nests (~100 bytes), then ~40 per allowed IP.
_PEER_BYTES, _ALLOWED_IP_BYTES = 112, 40


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


def keys(genl: GenlSockets) -> WireguardKeys:
    return genl.memo(WIREGUARD, WireguardKeys)


def _wgmsg() -> type:
    from pyroute2.netlink.generic.wireguard import wgmsg
    return wgmsg


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


def get_device(genl: GenlSockets, netns: str, ifindex: int) -> Device:
    """One device's settings and peers (a GET_DEVICE dump).

    Equivalent to: `ip netns exec NETNS wg showconf IFNAME`."""
    wgmsg = _wgmsg()
    msg = wgmsg()
    msg["cmd"], msg["version"] = WG_CMD_GET_DEVICE, WG_GENL_VERSION
    msg["attrs"].append(["WGDEVICE_A_IFINDEX", ifindex])
    return parse_device(genl.request(netns, WIREGUARD, wgmsg, msg, dump=True))


def _key(value: Any) -> bytes | None:
    # pyroute2 hands keys as base64; an all-zero key is "none set".
    raw = key_bytes(value.decode() if isinstance(value, bytes) else value) if value else None
    return raw if raw and any(raw) else None


def _endpoint(value: Any) -> str | None:
    if not value or not value.get("addr"):
        return None
    return format_endpoint(str(ipaddress.ip_address(value["addr"])), value["port"])


def parse_device(messages: Iterable[Any]) -> Device:
    """A GET_DEVICE dump's messages (pyroute2's decoded ``wgmsg``) as one Device."""
    device = Device()
    peers: dict[str, dict] = {}
    for msg in messages:
        device.ifindex = msg.get_attr("WGDEVICE_A_IFINDEX") or device.ifindex
        device.ifname = msg.get_attr("WGDEVICE_A_IFNAME") or device.ifname
        device.private_key = _key(msg.get_attr("WGDEVICE_A_PRIVATE_KEY")) or device.private_key
        device.public_key = _key(msg.get_attr("WGDEVICE_A_PUBLIC_KEY")) or device.public_key
        device.listen_port = msg.get_attr("WGDEVICE_A_LISTEN_PORT") or device.listen_port
        device.fwmark = msg.get_attr("WGDEVICE_A_FWMARK") or device.fwmark
        for entry in msg.get_attr("WGDEVICE_A_PEERS") or ():
            public = _key(entry.get_attr("WGPEER_A_PUBLIC_KEY"))
            if public is None:
                continue
            # A peer continued from the previous message adds allowed IPs.
            peer = peers.setdefault(key_text(public),
                                    {"allowed": [], "endpoint": None, "keepalive": 0})
            peer["endpoint"] = _endpoint(entry.get_attr("WGPEER_A_ENDPOINT")) or peer["endpoint"]
            keepalive = entry.get_attr("WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL")
            if keepalive is not None:
                peer["keepalive"] = keepalive
            peer["allowed"] += [a["addr"] for a in entry.get_attr("WGPEER_A_ALLOWEDIPS") or ()
                                if a.get("addr")]
    device.peers = [Peer(key, sorted_networks(p["allowed"]), p["endpoint"], p["keepalive"])
                    for key, p in peers.items()]
    return device


def device_attributes(device: Device, endpoints_unmanaged: Iterable[str] = ()) -> dict:
    """The model's attributes of a device read back. Peers named in
    ``endpoints_unmanaged`` (public keys of peers the config gives no
    endpoint) are read without theirs: it was learned from their handshakes,
    not set, and comparing it would undo roaming on every apply."""
    unmanaged = set(endpoints_unmanaged)
    attrs: dict = {LISTEN_PORT: device.listen_port, FWMARK: device.fwmark}
    if device.public_key is not None:
        attrs[PUBLIC_KEY] = key_text(device.public_key)
    texts = []
    for peer in device.peers:
        if peer.public_key in unmanaged:
            peer = peer._replace(endpoint=None)
        texts.append(peer.text())
    attrs[PEER] = sorted(texts)
    return attrs


class WireguardReader:
    """The wireguard kind's read-back (kernel/genl_families.py lists it)."""

    kind = WIREGUARD
    # A revert that re-creates a device the config dropped needs its keys.
    only_where_written = False

    def read(self, genl: GenlSockets, state: NamespaceState) -> int:
        """Fill the wireguard devices of one namespace's read with their
        public key, port, fwmark and peers; returns the GET_DEVICE dumps
        made (one per device)."""
        known = keys(genl)
        dumps = 0
        for obj, device in each_device(
                state, WIREGUARD, lambda index: get_device(genl, state.netns, index)):
            dumps += 1
            if device.private_key is not None and device.public_key is not None:
                known.private[key_text(device.public_key)] = device.private_key
            obj.attrs.update(device_attributes(device,
                                               known.endpointless.get((state.netns, obj.name), ())))
        return dumps


# ---------------------------------------------------------------- SET_DEVICE

@dataclass
class DeviceConfig:
    """What one SET_DEVICE says; None leaves a setting as the kernel has it."""

    ifname: str
    private_key: bytes | None = None
    listen_port: int | None = None
    fwmark: int | None = None
    peers: list[Peer] | None = None          # None: peers untouched; []: none at all


def _peer(peer: Peer) -> dict:
    """One peer, replacing its allowed IPs; keepalive sent even when 0 (off)."""
    attrs: list = [["WGPEER_A_PUBLIC_KEY", peer.public_key],
                   ["WGPEER_A_FLAGS", WGPEER_F_REPLACE_ALLOWEDIPS],
                   ["WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL", peer.keepalive]]
    if peer.endpoint:
        address, port = parse_endpoint(peer.endpoint)
        attrs.append(["WGPEER_A_ENDPOINT", {"addr": address, "port": port}])
    allowed = []
    for prefix in peer.allowed_ips:
        net = ipaddress.ip_network(prefix)
        allowed.append({"attrs": [["WGALLOWEDIP_A_FAMILY", 2 if net.version == 4 else 10],
                                  ["WGALLOWEDIP_A_IPADDR", net.network_address.packed],
                                  ["WGALLOWEDIP_A_CIDR_MASK", net.prefixlen]]})
    attrs.append(["WGPEER_A_ALLOWEDIPS", allowed])
    return {"attrs": attrs}


def set_device_messages(config: DeviceConfig) -> list[Any]:
    """WG_CMD_SET_DEVICE messages (pyroute2 ``wgmsg``) for ``config``, to be
    sent in order. The first carries the device's settings and, when peers
    are given, WGDEVICE_F_REPLACE_PEERS (the kernel removes the peers it
    has, then adds these); peers that do not fit go in further messages
    without the flag, which add to the set.

    Equivalent to: `wg set IFNAME private-key FILE listen-port N fwmark M
    peer KEY allowed-ips ... endpoint ... persistent-keepalive S` (wg syncconf
    for the whole peer set)."""
    wgmsg = _wgmsg()

    def message(attrs: list) -> Any:
        msg = wgmsg()
        msg["cmd"], msg["version"] = WG_CMD_SET_DEVICE, WG_GENL_VERSION
        msg["attrs"] = [["WGDEVICE_A_IFNAME", config.ifname], *attrs]
        return msg

    head: list = []
    if config.private_key is not None:
        head.append(["WGDEVICE_A_PRIVATE_KEY", key_text(config.private_key)])
    if config.listen_port is not None:
        head.append(["WGDEVICE_A_LISTEN_PORT", config.listen_port])
    if config.fwmark is not None:
        head.append(["WGDEVICE_A_FWMARK", config.fwmark])
    if config.peers is None:
        return [message(head)]
    head.append(["WGDEVICE_A_FLAGS", WGDEVICE_F_REPLACE_PEERS])
    messages, batch, size = [], [], 0
    for peer in config.peers:
        cost = _PEER_BYTES + _ALLOWED_IP_BYTES * len(peer.allowed_ips)
        if batch and size + cost > MAX_MESSAGE:
            messages.append(message([*head, ["WGDEVICE_A_PEERS", batch]]))
            head, batch, size = [], [], 0
        batch.append(_peer(peer))
        size += cost
    messages.append(message([*head, ["WGDEVICE_A_PEERS", batch]]))
    return messages


def set_device(genl: GenlSockets, netns: str, config: DeviceConfig, tag: Any = None) -> int:
    """Send ``config`` in ``netns``; returns the requests sent, raises the
    kernel's refusal (NetlinkError naming ``tag``)."""
    return genl.send_all(netns, WIREGUARD, _wgmsg(), set_device_messages(config), tag=tag)


def remove_peer(genl: GenlSockets, netns: str, ifname: str, public_key: str) -> int:
    """Remove one peer (what the drift tests do by hand).

    Equivalent to: `wg set IFNAME peer KEY remove`."""
    wgmsg = _wgmsg()
    msg = wgmsg()
    msg["cmd"], msg["version"] = WG_CMD_SET_DEVICE, WG_GENL_VERSION
    msg["attrs"] = [["WGDEVICE_A_IFNAME", ifname],
                    ["WGDEVICE_A_PEERS", [{"attrs": [["WGPEER_A_PUBLIC_KEY", public_key],
                                                     ["WGPEER_A_FLAGS", WGPEER_F_REMOVE_ME]]}]]]
    return genl.send_all(netns, WIREGUARD, wgmsg, [msg])

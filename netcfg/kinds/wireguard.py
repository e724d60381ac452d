"""A WireGuard tunnel device: keys and peers over generic netlink.

    auto wg0
    iface wg0
        wireguard-private-key-file /etc/netcfg/wg0.key   # root-owned, mode 0600
        wireguard-listen-port 51820
        wireguard-fwmark 81
        wireguard-peer xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg= allowed-ips 10.9.0.2/32,fd09::2/128 endpoint 192.0.2.2:51820 persistent-keepalive 25
        wireguard-peer TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0= allowed-ips 10.9.1.0/24
        address 10.9.0.1/24

One repeatable ``wireguard-peer`` line per peer, not a ``wireguard-peer NAME``
stanza: a peer has no name of its own in the kernel (its public key is its
identity), it belongs to exactly one device, and ifupdown2's dialect says
"many of a thing on one interface" with repeated lines (``address``,
``post-up``), which also keeps a peer whole on one line for grep and diff.
Words after the key, any order: ``allowed-ips P[,P...]`` (prefixes, host bits
clear), ``endpoint IP:PORT`` or ``[IPv6]:PORT`` (a literal address: apply
never waits on DNS), ``persistent-keepalive SECONDS`` (0-65535, 0 = off).

The private key never enters the model, a plan or ``show``: the config names
a file (checked at apply as CHAP secret files are: a regular file owned by
root, readable by nobody else), the applier reads it, and what is compared
and printed is its public key, ``wireguard-public-key`` (``show`` prints it;
written in a config without a key file it asserts which key the device has).
Preshared keys are not supported yet (an error names the word).

Created by rtnetlink (``ip link add wg0 type wireguard``), configured by
WG_CMD_SET_DEVICE through pyroute2 (kernel/wireguard.py, sent by
apply/wireguard.py); read back by WG_CMD_GET_DEVICE. A changed peer set is
sent whole with WGDEVICE_F_REPLACE_PEERS.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from typing import NamedTuple

from netcfg.kinds.base import Kind
from netcfg.kinds.genl import GenlState
from netcfg.model.model import ConfigObject, Model

PRIVATE_KEY_FILE = "wireguard-private-key-file"
PUBLIC_KEY = "wireguard-public-key"
LISTEN_PORT = "wireguard-listen-port"
FWMARK = "wireguard-fwmark"
PEER = "wireguard-peer"
# ifupdown-ng's: a `wg setconf` file, read at apply into the others (wireguard_conf.py).
CONFIG_PATH = "wireguard-config-path"
# The attributes set over generic netlink (apply/wireguard.py), not rtnetlink.
GENL_ATTRIBUTES = (PRIVATE_KEY_FILE, PUBLIC_KEY, LISTEN_PORT, FWMARK, PEER, CONFIG_PATH)
KEY_LEN = 32

ALLOWED_IPS, ENDPOINT, KEEPALIVE = "allowed-ips", "endpoint", "persistent-keepalive"
PEER_WORDS = (ALLOWED_IPS, ENDPOINT, KEEPALIVE)


class Peer(NamedTuple):
    """One peer, canonical: allowed IPs sorted (IPv4 first), no duplicates."""

    public_key: str
    allowed_ips: tuple[str, ...] = ()
    endpoint: str | None = None      # "192.0.2.1:51820", "[2001:db8::1]:51820"
    keepalive: int = 0

    def text(self) -> str:
        """The canonical ``wireguard-peer`` line (without the attribute name)."""
        words = [self.public_key]
        if self.allowed_ips:
            words += [ALLOWED_IPS, ",".join(self.allowed_ips)]
        if self.endpoint:
            words += [ENDPOINT, self.endpoint]
        if self.keepalive:
            words += [KEEPALIVE, str(self.keepalive)]
        return " ".join(words)


def key_bytes(text: str) -> bytes:
    """A WireGuard key as written (base64 of 32 bytes); ValueError otherwise."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"'{text}' is not base64 (as `wg genkey` / `wg pubkey` print keys)") \
            from None
    if len(raw) != KEY_LEN or base64.b64encode(raw).decode() != text:
        raise ValueError(f"'{text}' is not a WireGuard key: 44 characters of base64 encoding "
                         f"32 bytes, ending in '='")
    return raw


def key_text(raw: bytes) -> str:
    return base64.b64encode(bytes(raw)).decode()


_P = 2 ** 255 - 19
_A24 = 121665


def public_key(private: bytes) -> bytes:
    """The X25519 public key of a 32-byte private key (RFC 7748 5, the
    Montgomery ladder on u = 9), as `wg pubkey` computes it: the applier
    compares the key in a file with the device's without sending it. Not
    constant time: it runs on the applier's own key, on the machine that
    holds it."""
    if len(private) != KEY_LEN:
        raise ValueError(f"a private key is {KEY_LEN} bytes, not {len(private)}")
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


def sorted_networks(prefixes) -> tuple[str, ...]:
    """Canonical order of allowed IPs (as the kernel's trie gives them back in
    its own order, both sides are sorted): IPv4 first, by address then length."""
    nets = {ipaddress.ip_network(p) for p in prefixes}
    return tuple(str(n) for n in sorted(nets, key=lambda n: (n.version, n.network_address,
                                                           n.prefixlen)))


def format_endpoint(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def parse_endpoint(text: str) -> tuple[str, int]:
    """``IP:PORT`` or ``[IPv6]:PORT``, literal addresses only."""
    if text.startswith("["):
        host, sep, port = text[1:].partition("]:")
    else:
        host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"endpoint '{text}' is not ADDRESS:PORT (192.0.2.1:51820, "
                         f"[2001:db8::1]:51820; port 1-65535)")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"endpoint '{text}': '{host}' is not an IP address; write the address, "
                         f"not a host name (apply never waits on DNS)") from None
    if text.startswith("[") != (address.version == 6):
        raise ValueError(f"endpoint '{text}': write an IPv6 address in brackets "
                         f"([2001:db8::1]:51820), an IPv4 one without")
    return str(address), int(port)


def parse_peer(text: str) -> Peer:
    """A ``wireguard-peer`` line to its canonical Peer; ValueError saying what is wrong."""
    words = text.split()
    if not words:
        raise ValueError("names no peer; write 'wireguard-peer PUBLIC-KEY allowed-ips PREFIXES'")
    key_bytes(words[0])
    fields: dict[str, str] = {}
    rest = words[1:]
    if len(rest) % 2:
        raise ValueError(f"'{rest[-1]}' has no value; words after the key go in pairs "
                         f"({', '.join(PEER_WORDS)})")
    for word, value in zip(rest[::2], rest[1::2]):
        if word == "preshared-key-file":
            raise ValueError("preshared-key-file is not supported yet; remove it (the "
                             "tunnel is still authenticated and encrypted by the key pairs)")
        if word not in PEER_WORDS:
            raise ValueError(f"'{word}' is not a peer setting (expected "
                             f"{', '.join(PEER_WORDS)})")
        if word in fields:
            raise ValueError(f"{word} is given twice")
        fields[word] = value
    allowed: tuple[str, ...] = ()
    if ALLOWED_IPS in fields:
        prefixes = [p for p in fields[ALLOWED_IPS].split(",") if p]
        for prefix in prefixes:
            try:
                ipaddress.ip_network(prefix)
            except ValueError as e:
                raise ValueError(f"allowed-ips '{prefix}': {e} (write a prefix such as "
                                 f"10.0.0.0/24 or fd00::/64, host bits clear)") from None
        allowed = sorted_networks(prefixes)
    endpoint = None
    if ENDPOINT in fields:
        endpoint = format_endpoint(*parse_endpoint(fields[ENDPOINT]))
    keepalive = 0
    if KEEPALIVE in fields:
        value = fields[KEEPALIVE]
        if not value.isdigit() or int(value) > 65535:
            raise ValueError(f"persistent-keepalive '{value}' is not 0-65535 seconds")
        keepalive = int(value)
    return Peer(words[0], allowed, endpoint, keepalive)


def peers(obj: ConfigObject) -> list[Peer]:
    """The peers of a canonical object (after complete())."""
    return [parse_peer(text) for text in obj.attrs.get(PEER, ())]


class Wireguard(GenlState, Kind):
    name = "wireguard"
    genl_attributes = GENL_ATTRIBUTES
    link_type = "wireguard"
    defining_attributes = (PRIVATE_KEY_FILE, PEER, CONFIG_PATH)
    info_kind = "wireguard"
    # A layer-3 device (no Ethernet header): never a bridge port.
    traits = ("common",)
    default_mtu = 1420   # the kernel's: 1500 less the IPv6 + UDP + WireGuard overhead

    def complete(self, obj: ConfigObject, report) -> None:
        for attribute in (PUBLIC_KEY,):
            if attribute in obj.attrs:
                try:
                    key_bytes(obj.attrs[attribute])
                except ValueError as e:
                    report.error(obj.where(attribute), f"{obj.label()}: {attribute}: {e}",
                                 attribute)
                    del obj.attrs[attribute]
        for attribute, what, example in (
                (PRIVATE_KEY_FILE, "key file", f"/etc/netcfg/{obj.name}.key"),
                (CONFIG_PATH, "config file", f"/etc/wireguard/{obj.name}.conf")):
            path = obj.attrs.get(attribute)
            if path is not None and not path.startswith("/"):
                report.error(obj.where(attribute),
                             f"{obj.label()}: {attribute} '{path}' is not an absolute path; "
                             f"write the {what}'s full path ({example})", attribute)
                del obj.attrs[attribute]
        if CONFIG_PATH in obj.attrs:
            for attribute in (PRIVATE_KEY_FILE, PUBLIC_KEY, LISTEN_PORT, FWMARK, PEER):
                if attribute in obj.attrs:
                    # `wg setconf` replaces the device's whole configuration.
                    report.error(obj.where(attribute),
                                 f"{obj.label()}: {attribute} and {CONFIG_PATH} "
                                 f"({obj.where(CONFIG_PATH)}) both configure the device; the "
                                 f"file replaces all of it, as `wg setconf` does. Write it in "
                                 f"the file or remove {CONFIG_PATH}", attribute)
                    del obj.attrs[attribute]
        if PEER in obj.attrs:
            self._complete_peers(obj, report)

    def _complete_peers(self, obj: ConfigObject, report) -> None:
        canonical: dict[str, Peer] = {}
        owner: dict[str, str] = {}
        where = obj.where(PEER)
        for text in obj.attrs[PEER]:
            try:
                peer = parse_peer(text)
            except ValueError as e:
                report.error(where, f"{obj.label()}: {PEER} '{_short(text)}': {e}", PEER)
                continue
            if peer.public_key in canonical:
                report.error(where, f"{obj.label()}: {PEER} {peer.public_key} is given twice; "
                                    f"write each peer once, all its allowed-ips on one line",
                             PEER)
                continue
            for prefix in peer.allowed_ips:
                # The kernel keeps one peer per prefix: the later would take it over.
                other = owner.setdefault(prefix, peer.public_key)
                if other != peer.public_key:
                    report.error(where, f"{obj.label()}: allowed-ips {prefix} is given to two "
                                        f"peers ({other} and {peer.public_key}); a prefix "
                                        f"routes to one peer. Remove it from one", PEER)
            canonical[peer.public_key] = peer
        # Sorted by key: the kernel lists peers in the order they were added.
        obj.attrs[PEER] = [canonical[k].text() for k in sorted(canonical)]
        own = obj.attrs.get(PUBLIC_KEY)
        if own in canonical:
            # The kernel silently drops such a peer when the key is set.
            report.error(where, f"{obj.label()}: {PEER} {own} is this device's own "
                                f"{PUBLIC_KEY}; a device cannot be its own peer", PEER)

    def check_model(self, model: Model, report) -> None:
        ports: dict[tuple[str, int], ConfigObject] = {}
        for obj in model.interfaces.values():
            port = obj.attrs.get(LISTEN_PORT) if obj.kind == self.name else None
            if not port:
                continue
            first = ports.setdefault((obj.netns, port), obj)
            if first is not obj:
                report.error(obj.where(LISTEN_PORT),
                             f"{obj.label()}: {LISTEN_PORT} {port} is already {first.name}'s "
                             f"(at {first.loc}); two devices cannot listen on one UDP port in a "
                             f"namespace. Choose another port", LISTEN_PORT)

    def create_params(self, obj: ConfigObject) -> dict:
        # Sent over generic netlink once the device exists (apply/wireguard.py).
        # At apply the key file has become the public key of the key read
        # from it (apply/wireguard.py resolve()).
        return {a: obj.attrs[a] for a in GENL_ATTRIBUTES if a in obj.attrs}


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


KIND = Wireguard()

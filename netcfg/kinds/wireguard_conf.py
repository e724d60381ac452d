"""A `wg setconf` file (wg(8) CONFIGURATION FILE FORMAT), read into the
wireguard kind's settings: ifupdown-ng's ``wireguard-config-path``.

    auto wg-foo                                  # ifupdown-ng: ip link add wg-foo
    iface wg-foo                                 #   type wireguard; wg setconf
        wireguard-config-path /etc/wireguard/foo.conf   # wg-foo /etc/wireguard/foo.conf
        address 192.0.2.23/24

    [Interface]                                  # /etc/wireguard/foo.conf
    PrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=
    ListenPort = 51820

    [Peer]
    PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
    AllowedIPs = 10.192.122.3/32, 10.192.124.1/24
    Endpoint = 192.95.5.67:1234

The file holds the private key, so it is read where key files are, by the
applier (apply/wireguard.py resolve()), never at check, and what it says
becomes the device's public key, listen port, fwmark and wireguard-peer
lines, compared with the kernel's like written ones. As `wg setconf` does,
the peers are exactly the file's; a ListenPort the file leaves out is the
kernel's choice, as an unwritten wireguard-listen-port is (setconf sends 0,
a new random port, on every run; netcfg leaves a port the device has). Errors name the file and line. Not taken, each refused at its line:
wg-quick's keys (Address, DNS, MTU, Table, Pre/PostUp...: `wg setconf`
refuses them too), PresharedKey (netcfg does not set preshared keys yet)
and an Endpoint by host name (apply never waits on DNS).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netcfg.kinds.wireguard import (Peer, format_endpoint, key_bytes, parse_endpoint,
                                    sorted_networks)

INTERFACE, PEER_SECTION = "interface", "peer"
# wg-quick(8)'s own keys: `wg setconf` stops at them ("Line unrecognized").
WG_QUICK_KEYS = frozenset({"address", "dns", "mtu", "table", "preup", "postup", "predown",
                           "postdown", "saveconfig"})


class ConfError(ValueError):
    """A line of the file netcfg cannot take; the message names PATH:LINE."""


@dataclass
class WgConf:
    """What a setconf file says: the private key (bytes, never printed), the
    port and mark (None when not written), the peers."""

    private_key: bytes | None = None
    listen_port: int | None = None
    fwmark: int | None = None
    peers: list[Peer] = field(default_factory=list)


def parse_conf(text: str, path: str) -> WgConf:
    conf = WgConf()
    section = None
    peer: dict | None = None
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        where = f"{path}:{number}"
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            if section not in (INTERFACE, PEER_SECTION):
                raise ConfError(f"{where}: [{line[1:-1]}] is not a section of a wg config "
                                f"([Interface] or [Peer])")
            if peer is not None:
                conf.peers.append(_peer(peer, path, seen))
            peer = {"line": number} if section == PEER_SECTION else None
            continue
        key, equals, value = line.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not equals or section is None:
            raise ConfError(f"{where}: '{raw.strip()}' is not 'Key = value' in an [Interface] "
                            f"or [Peer] section")
        if key in WG_QUICK_KEYS:
            raise ConfError(f"{where}: {key_name(raw)} is wg-quick's, not `wg setconf`'s (which "
                            f"ifupdown-ng runs, and which refuses the line too); write it in "
                            f"the stanza (address, mtu, up lines) and remove it here")
        try:
            if section == INTERFACE:
                _interface(conf, key, value)
            else:
                _peer_line(peer, key, value, number)
        except ValueError as e:
            raise ConfError(f"{where}: {key_name(raw)}: {e}") from None
    if peer is not None:
        conf.peers.append(_peer(peer, path, seen))
    return conf


def key_name(raw: str) -> str:
    return raw.split("=", 1)[0].strip()


def _interface(conf: WgConf, key: str, value: str) -> None:
    if key == "privatekey":
        conf.private_key = key_bytes(value)
    elif key == "listenport":
        conf.listen_port = _number(value, 65535, "a UDP port")
    elif key == "fwmark":
        conf.fwmark = 0 if value.lower() == "off" else _number(value, 2 ** 32 - 1, "a mark")
    else:
        raise ValueError("not an [Interface] key (PrivateKey, ListenPort, FwMark)")


def _peer_line(peer: dict, key: str, value: str, number: int) -> None:
    if key in peer:
        raise ValueError("given twice for this peer")
    if key == "publickey":
        key_bytes(value)
    elif key == "allowedips":
        prefixes = [p.strip() for p in value.split(",") if p.strip()]
        sorted_networks(prefixes)   # ValueError for a prefix with host bits set
        value = ",".join(prefixes)
    elif key == "endpoint":
        value = format_endpoint(*parse_endpoint(value))
    elif key == "persistentkeepalive":
        value = str(0 if value.lower() == "off" else _number(value, 65535, "seconds"))
    elif key == "presharedkey":
        raise ValueError("preshared keys are not supported yet; remove the line (the "
                         "tunnel is still authenticated and encrypted by the key pairs)")
    else:
        raise ValueError("not a [Peer] key (PublicKey, AllowedIPs, Endpoint, "
                         "PersistentKeepalive)")
    peer[key] = value


def _peer(peer: dict, path: str, seen: set[str]) -> Peer:
    where = f"{path}:{peer['line']}"
    if "publickey" not in peer:
        raise ConfError(f"{where}: a [Peer] without PublicKey")
    if peer["publickey"] in seen:
        raise ConfError(f"{where}: peer {peer['publickey']} is given twice")
    seen.add(peer["publickey"])
    allowed = peer.get("allowedips", "")
    return Peer(peer["publickey"],
                sorted_networks(allowed.split(",")) if allowed else (),
                peer.get("endpoint"), int(peer.get("persistentkeepalive", 0)))


def _number(value: str, largest: int, what: str) -> int:
    try:
        number = int(value, 0)
    except ValueError:
        raise ValueError(f"'{value}' is not {what} (a number)") from None
    if not 0 <= number <= largest:
        raise ValueError(f"{number} is not {what} (0-{largest})")
    return number
